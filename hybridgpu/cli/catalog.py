"""``hybridgpu catalog [--family F ...] [--json]``: the GPU instance catalog with prices and sources.

Exit codes: 0 the table was printed; 2 a ``--family`` is not in the catalog (the error lists the
known families and close matches; nothing is printed on stdout).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from hybridgpu.catalog import load_catalog
from hybridgpu.cli.common import Col, console, fail, print_table
from hybridgpu.errors import HybridGpuError


def catalog(
    family: Annotated[list[str] | None, typer.Option(help="Only these instance families (repeat the option).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document instead of the table.")] = False,
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
    types = [t for t in cat.instance_types if not family or t.family in family]
    if as_json:
        rows = [
            {"type": t.name, "family": t.family, "gpuModel": t.gpu_model, "gpus": t.gpu_count, "gpuMemoryGiB": t.gpu_memory_gib, "vcpu": t.vcpu,
             "memoryGiB": t.memory_gib, "efaInterfaces": t.max_efa_interfaces if t.efa_supported else None,
             "onDemandUsdPerHour": t.on_demand_usd_per_hour, "sourceDate": t.source_date}
            for t in types
        ]
        console().print_json(json.dumps({"priced": "on-demand list price, Linux, us-east-1", "instanceTypes": rows}))
        return
    print_table(
        console(),
        "GPU instance types (on-demand list price, Linux, us-east-1)",
        ["type", "GPU", Col("GPUs", True), Col("GPU mem GiB", True), Col("vCPU", True), Col("mem GiB", True), Col("EFA", True), Col("USD/h", True), "source date"],
        [
            [
                t.name,
                t.gpu_model,
                str(t.gpu_count),
                f"{t.gpu_memory_gib:g}",
                str(t.vcpu),
                f"{t.memory_gib:g}",
                str(t.max_efa_interfaces) if t.efa_supported else "-",
                f"{t.on_demand_usd_per_hour:.4f}" if t.on_demand_usd_per_hour is not None else "n/a",
                t.source_date,
            ]
            for t in types
        ],
    )
