"""``hybridgpu mig``: check MIG layouts and plan them for a demand, in the terminal.

* ``hybridgpu mig check H100-80GB 3g.40gb=1 2g.20gb=2`` says whether the mix fits on one GPU,
  why not when it does not, and draws the slots.
* ``hybridgpu mig profiles H100-80GB`` lists the model's profiles and their placement rules.
* ``hybridgpu mig plan H100-80GB 1g.10gb=20 3g.40gb=6 --whole 3 [--pool dgx:8x4] [--yaml]``
  plans per-GPU layouts with the fewest GPUs and prints them, the node labels, or the
  mig-parted config.

Each command takes ``--json`` (one JSON document on stdout). The slot diagrams stay within 80
columns (a label of 7 or 8 characters, then 8 memory slices of 8 characters each).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from hybridgpu.errors import HybridGpuError
from hybridgpu.k8s import MIG_CONFIG_LABEL

mig_app = typer.Typer(no_args_is_help=True, help="MIG layouts: exact placement check, profiles, planning.")


from hybridgpu.cli.common import Col, print_table
from hybridgpu.cli.common import console as _console
from hybridgpu.cli.common import fail as _fail

#: ``--json`` on every ``mig`` command.
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of the text.")]


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
    as_json: JsonOption = False,
) -> None:
    """Does this MIG mix fit on ONE GPU? Prints the placement (start slot per instance) or the reason; exit 1 when it does not fit."""
    from hybridgpu.mig import check_layout, slot_diagram, slot_header

    try:
        counts = parse_counts(profiles)
        result = check_layout(model, counts)
    except (ValueError, HybridGpuError) as exc:
        _fail(str(exc))
    console = _console()
    if as_json:
        console.print_json(json.dumps(placement_summary(result)))
        if not result.ok:
            raise typer.Exit(code=1)
        return
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


def placement_summary(result: Any) -> dict[str, Any]:
    """What ``mig check --json`` prints for a :class:`~hybridgpu.mig.placement.Placement`: the model, the mix,
    whether it fits (and why not), the slices used of the GPU's, and each instance's start memory slice."""
    gpu = result.gpu
    return {
        "model": result.model,
        "counts": dict(result.counts),
        "fits": result.ok,
        "reason": result.reason,
        "memorySlicesUsed": result.memory_slots_used,
        "memorySlices": gpu.memory_slots,
        "computeSlicesUsed": result.compute_slices_used,
        "computeSlices": gpu.compute_slices,
        "placements": [{"profile": p, "start": start} for p, start in result.placements],
    }


@mig_app.command("profiles")
def list_profiles(model: Annotated[str, typer.Argument(help="GPU model, e.g. H100-80GB.")], as_json: JsonOption = False) -> None:
    """List a GPU model's MIG profiles: memory/compute slices, max instances, allowed starts."""
    from hybridgpu.mig import mig_gpu

    try:
        gpu = mig_gpu(model)
    except HybridGpuError as exc:
        _fail(str(exc))
    if as_json:
        profiles = [
            {"profile": p.name, "memorySlices": p.memory_slots, "computeSlices": p.compute_slices, "maxPerGpu": p.max_instances,
             "startSlots": list(p.starts), "memoryGB": p.memory_gb}
            for p in gpu.profiles
        ]
        _console().print_json(json.dumps({"model": gpu.name, "memorySlices": gpu.memory_slots, "computeSlices": gpu.compute_slices, "profiles": profiles}))
        return
    print_table(
        _console(),
        f"MIG profiles of {gpu.name} ({gpu.memory_slots} memory slices, {gpu.compute_slices} compute slices)",
        ["profile", Col("memory slices", True), Col("compute slices", True), Col("max per GPU", True), "start slots", Col("memory GB", True)],
        [[p.name, str(p.memory_slots), str(p.compute_slices), str(p.max_instances), ",".join(map(str, p.starts)), str(p.memory_gb)] for p in gpu.profiles],
    )


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
    as_json: JsonOption = False,
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
    if as_yaml and as_json:
        _fail("--yaml and --json both choose the output: give one")
    console = _console()
    if as_yaml:
        console.print(dump_yaml(result.mig_parted_document()), end="", markup=False)
        return
    labels = {node: node_labels.get(MIG_CONFIG_LABEL, "-") for node, node_labels in result.node_labels().items()}
    if as_json:
        layouts = [{"gpus": count, "instances": dict(layout), "placements": placement_summary(check_layout(model, layout))["placements"]}
                   for layout, count in result.layouts]
        console.print_json(json.dumps({"model": model, "gpusUsed": result.gpus_used, "migGpus": result.mig_gpus, "wholeGpus": result.whole_gpus,
                                       "lowerBound": result.lower_bound, "layouts": layouts, "nodeLabels": {MIG_CONFIG_LABEL: labels}}))
        return
    console.print(
        f"[bold]{result.gpus_used} x {model}[/]: {result.mig_gpus} with MIG + {result.whole_gpus} whole "
        f"(no plan can use fewer than {result.lower_bound} MIG GPUs: optimal)",
    )
    # Labels as short as `mig check`'s, so the diagram is 7 + 65 columns at most and fits 80.
    names = [f"{count} GPU{'s' if count != 1 else ''}" for _, count in result.layouts]
    pad = max(len(n) for n in ["slot", *names]) + 1
    console.print("slot".ljust(pad) + slot_header(model), soft_wrap=True, markup=False)
    for name, (layout, _) in zip(names, result.layouts):
        console.print(name.ljust(pad) + slot_diagram(check_layout(model, layout))[0], soft_wrap=True, markup=False)
    if result.whole_gpus:
        console.print(f"{result.whole_gpus} GPU{'s' if result.whole_gpus != 1 else ''} whole (MIG disabled)", markup=False)
    print_table(console, f"Node labels ({MIG_CONFIG_LABEL})", ["node", "mig-parted config"], [[node, label] for node, label in labels.items()])
