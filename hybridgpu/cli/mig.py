"""``hybridgpu mig``: check MIG layouts and plan them for a demand, in the terminal.

* ``hybridgpu mig check H100-80GB 3g.40gb=1 2g.20gb=2`` says whether the mix fits on one GPU,
  why not when it does not, and draws the slots.
* ``hybridgpu mig profiles H100-80GB`` lists the model's profiles and their placement rules.
* ``hybridgpu mig plan H100-80GB 1g.10gb=20 3g.40gb=6 --whole 3 [--pool dgx:8x4] [--yaml]``
  plans per-GPU layouts with the fewest GPUs and prints them, the node labels, or the
  mig-parted config.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from hybridgpu.errors import HybridGpuError
from hybridgpu.k8s import MIG_CONFIG_LABEL

mig_app = typer.Typer(no_args_is_help=True, help="MIG layouts: exact placement check, profiles, planning.")


from hybridgpu.cli.common import console as _console
from hybridgpu.cli.common import fail as _fail


def parse_counts(items: list[str]) -> dict[str, int]:
    """Parse ``profile=count`` arguments (``3g.40gb=2``; a bare ``3g.40gb`` means 1).

    Raises:
        ValueError: a malformed item or a count that is not a non-negative integer.
    """
    counts: dict[str, int] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not name:
            raise ValueError(f"{item!r}: expected <profile>=<count>, e.g. 3g.40gb=2")
        if not sep:
            raw = "1"
        try:
            count = int(raw)
        except ValueError:
            raise ValueError(f"{item!r}: count {raw!r} is not an integer") from None
        if count < 0:
            raise ValueError(f"{item!r}: count must be 0 or more")
        counts[name] = counts.get(name, 0) + count
    return counts


@mig_app.command()
def check(
    model: Annotated[str, typer.Argument(help="GPU model, e.g. H100-80GB, A100-40GB, A30-24GB.")],
    profiles: Annotated[list[str], typer.Argument(help="Instances as <profile>=<count>, e.g. 3g.40gb=1 2g.20gb=2.")],
) -> None:
    """Does this MIG mix fit on ONE GPU? Prints the placement (start slot per instance) or the reason."""
    from hybridgpu.mig import check_layout, slot_diagram, slot_header

    try:
        counts = parse_counts(profiles)
        result = check_layout(model, counts)
    except (ValueError, HybridGpuError) as exc:
        _fail(str(exc))
    console = _console()
    mix = ", ".join(f"{n} x {p}" for p, n in result.counts.items()) or "(empty)"
    gpu = result.gpu
    usage = f"memory slices {result.memory_slots_used}/{gpu.memory_slots}, compute slices {result.compute_slices_used}/{gpu.compute_slices}"
    if not result.ok:
        console.print(f"[bold red]does not fit[/] on one {model}: {mix}")
        console.print(f"reason: {result.reason}")
        console.print(usage)
        raise typer.Exit(code=1)
    console.print(f"[bold green]fits[/] on one {model}: {mix}")
    console.print(usage)
    console.print("slot   " + slot_header(model))
    console.print("layout " + slot_diagram(result)[0])
    console.print("starts: " + ", ".join(f"{p}@{s}" for p, s in result.placements))


@mig_app.command("profiles")
def list_profiles(model: Annotated[str, typer.Argument(help="GPU model, e.g. H100-80GB.")]) -> None:
    """List a GPU model's MIG profiles: memory/compute slices, max instances, allowed starts."""
    from hybridgpu.mig import mig_gpu

    try:
        gpu = mig_gpu(model)
    except HybridGpuError as exc:
        _fail(str(exc))
    table = Table(title=f"MIG profiles of {gpu.name} ({gpu.memory_slots} memory slices, {gpu.compute_slices} compute slices)")
    for col in ("profile", "memory slices", "compute slices", "max per GPU", "start slots", "memory GB"):
        table.add_column(col)
    for p in gpu.profiles:
        table.add_row(p.name, str(p.memory_slots), str(p.compute_slices), str(p.max_instances), ",".join(map(str, p.starts)), str(p.memory_gb))
    _console().print(table)


def parse_pool(spec: str, model: str):
    """Parse ``NAME:GPUS[xNODES]`` (e.g. ``dgx:8x4``: 4 nodes of 8 GPUs) into a :class:`GpuPool` of ``model``.

    Raises:
        ValueError: a malformed spec.
    """
    from hybridgpu.mig.planner import GpuPool

    name, sep, size = spec.partition(":")
    if not name or not sep:
        raise ValueError(f"pool {spec!r}: expected NAME:GPUS[xNODES], e.g. dgx:8x4")
    gpus, _, nodes = size.partition("x")
    try:
        return GpuPool(name=name, model=model, count=int(gpus), nodes=int(nodes or 1))
    except ValueError as exc:
        raise ValueError(f"pool {spec!r}: {exc}") from None


@mig_app.command()
def plan(
    model: Annotated[str, typer.Argument(help="GPU model of the demand and the pools, e.g. H100-80GB.")],
    profiles: Annotated[list[str], typer.Argument(help="MIG instances wanted as <profile>=<count>, e.g. 1g.10gb=20 3g.40gb=6.")],
    whole: Annotated[int, typer.Option(help="Whole GPUs (MIG disabled) wanted as well.")] = 0,
    pool: Annotated[list[str] | None, typer.Option(help="GPU pool NAME:GPUS\\[xNODES], repeatable, filled in order (default: as many 8-GPU nodes as needed).")] = None,
    as_yaml: Annotated[bool, typer.Option("--yaml", help="Print the mig-parted config (version: v1) instead of the tables.")] = False,
) -> None:
    """Plan per-GPU MIG layouts that meet a demand with the fewest GPUs (exact)."""
    from hybridgpu.mig import check_layout, slot_diagram, slot_header
    from hybridgpu.mig.planner import GpuPool, MigDemand, plan_mig
    from hybridgpu.render import dump_yaml

    try:
        demand = MigDemand(model=model, instances=parse_counts(profiles), whole_gpus=whole)
        if pool:
            pools = [parse_pool(spec, model) for spec in pool]
        else:
            # Size an unconstrained pool from the lower bound: plenty of 8-GPU nodes.
            bound = demand.total_instances + whole
            pools = [GpuPool(name="node", model=model, count=8, nodes=max(1, -(-bound // 8)))]
        result = plan_mig(demand, pools)
    except (ValueError, HybridGpuError) as exc:
        _fail(str(exc))
    console = _console()
    if as_yaml:
        console.print(dump_yaml(result.mig_parted_document()), end="", markup=False)
        return
    console.print(
        f"[bold]{result.gpus_used} x {model}[/]: {result.mig_gpus} with MIG + {result.whole_gpus} whole "
        f"(no plan can use fewer than {result.lower_bound} MIG GPUs: optimal)",
        soft_wrap=True,
    )
    console.print("slot                " + slot_header(model), soft_wrap=True)
    for layout, count in result.layouts:
        line = slot_diagram(check_layout(model, layout))[0]
        console.print(f"{count:>3} GPU(s) x layout {line}", soft_wrap=True)
    if result.whole_gpus:
        console.print(f"{result.whole_gpus:>3} GPU(s) whole (MIG disabled)")
    table = Table(title=f"Node labels ({MIG_CONFIG_LABEL})")
    table.add_column("node")
    table.add_column("mig-parted config")
    for node, labels in result.node_labels().items():
        table.add_row(node, labels.get(MIG_CONFIG_LABEL, "-"))
    console.print(table)
