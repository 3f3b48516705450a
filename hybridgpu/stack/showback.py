"""What `hybridgpu cost showback --stack` takes from the stacks of a site: prices, teams file, Kueue flavors (pure).

Reads several sections and files (the cost report, ``hybridgpu:teams``, the burst plan), so it
lives in the stack layer (docs/architecture.md, rule 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hybridgpu.economics.showback import ShowbackPrices
from hybridgpu.stack.load import load_stack
from hybridgpu.teams.models import TeamsFile, read_teams_file

__all__ = ["ShowbackInputs", "showback_inputs"]


@dataclass
class ShowbackInputs:
    """Prices, teams file and Kueue ResourceFlavor map of one or more stacks.

    Attributes:
        prices: USD per GPU-hour by capacity type (each stack's cost report, merged).
        teams: the first stack's teams file (``hybridgpu:teams.file``), or None.
        flavors: ResourceFlavor name -> (capacity type, GPU model or None) from the burst plans:
            ``onprem-<model>`` and ``onprem-<model>-mig`` are ``owned`` (with their GPU model, for
            MIG fractions), ``eks-spot`` / ``eks-on-demand`` their capacity type.
    """

    prices: ShowbackPrices = field(default_factory=lambda: ShowbackPrices({}))
    teams: TeamsFile | None = None
    flavors: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def showback_inputs(stacks: list[str], root: Path | None = None) -> ShowbackInputs:
    """Load and validate each stack and collect its showback inputs.

    Raises:
        StackFileError, StackConfigError, TeamsError: a stack (or its teams file) is missing or invalid.
        ValueError: two stacks price a capacity type differently (give one of them, or ``--price``).
    """
    out = ShowbackInputs()
    for name in stacks:
        loaded = load_stack(name, root)
        prices = ShowbackPrices.from_report(loaded.report())
        clash = sorted(k for k, v in prices.usd_per_gpu_hour.items() if out.prices.usd_per_gpu_hour.get(k, v) != v)
        if clash:
            raise ValueError(f"stacks {', '.join(stacks)} price {', '.join(clash)} GPU-hours differently: give one of them, or --price")
        out.prices = out.prices.merged(prices)
        section = loaded.config.teams
        if out.teams is None and section is not None:
            out.teams = read_teams_file(loaded.root / section.file, section.file)
        plan = loaded.burst_plan
        if plan is not None:
            for model, flavor in plan.onprem.flavors.items():
                out.flavors[flavor.name] = ("owned", model)
            for model, flavor in plan.onprem.mig_flavors.items():
                out.flavors[flavor.name] = ("owned", model)
            for capacity in plan.cloud.values():
                out.flavors[capacity.flavor.name] = (capacity.capacity_type, None)
    return out
