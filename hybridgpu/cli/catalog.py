"""``hybridgpu catalog``: the GPU instance catalog with prices and sources.

Exit codes: 0 the table was printed; 2 a ``--family`` is not in the catalog (the error lists the
known families and close matches; nothing is printed on stdout).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from hybridgpu.catalog import load_catalog
from hybridgpu.cli.common import console, fail
from hybridgpu.errors import HybridGpuError


def catalog(
    family: Annotated[list[str] | None, typer.Option(help="Only these instance families.")] = None,
) -> None:
    """List the GPU instance catalog (GPUs, memory, EFA, on-demand USD/hour, source date)."""
    cat = load_catalog()
    # An unknown filter is an error, not an empty table (issue 14): ``Catalog.family`` raises
    # with the known families and close matches.
    try:
        for name in family or ():
            cat.family(name)
    except HybridGpuError as exc:
        fail(exc)
    table = Table(title="GPU instance types (on-demand list price, Linux, us-east-1)")
    for col in ("type", "GPU", "GPUs", "GPU mem GiB", "vCPU", "mem GiB", "EFA", "USD/h", "source date"):
        table.add_column(col, overflow="fold")
    for t in cat.instance_types:
        if family and t.family not in family:
            continue
        table.add_row(
            t.name,
            t.gpu_model,
            str(t.gpu_count),
            f"{t.gpu_memory_gib:g}",
            str(t.vcpu),
            f"{t.memory_gib:g}",
            str(t.max_efa_interfaces) if t.efa_supported else "-",
            f"{t.on_demand_usd_per_hour:.4f}" if t.on_demand_usd_per_hour is not None else "n/a",
            t.source_date,
        )
    console().print(table)


