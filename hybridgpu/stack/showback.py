"""What `hybridgpu cost showback --stack` takes from the stacks of a site: prices, teams file, Kueue flavors (pure).

Reads several sections and files (the cost report, ``hybridgpu:teams``, the burst plan), so it
lives in the stack layer (docs/architecture.md, rule 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hybridgpu.catalog import load_catalog
from hybridgpu.economics.showback import ShowbackPrices
from hybridgpu.k8s import INSTANCE_GPU_NAME_LABEL
from hybridgpu.stack.load import load_stack
from hybridgpu.teams.models import TeamsFile, read_teams_file

__all__ = ["IN_CLUSTER", "ShowbackInputs", "showback_inputs"]

#: Host states whose GPUs the owned fleet counts (the host is in the cluster; ``absent`` is not).
IN_CLUSTER = ("active", "cordoned")


@dataclass
class ShowbackInputs:
    """Prices, teams file and Kueue ResourceFlavor map of one or more stacks.

    Attributes:
        prices: USD per GPU-hour by capacity type (each stack's cost report, merged).
        teams: the first stack's teams file (``hybridgpu:teams.file``), or None.
        flavors: ResourceFlavor name -> (capacity type, GPU model or None) from the burst plans:
            ``onprem-<model>`` and ``onprem-<model>-mig`` are ``owned`` (with their GPU model, for
            MIG fractions and the price per model), ``eks-spot`` / ``eks-on-demand`` their capacity
            type and, when the NodePool has one GPU model, that model (showback's price per model).
    """

    prices: ShowbackPrices = field(default_factory=lambda: ShowbackPrices({}))
    teams: TeamsFile | None = None
    flavors: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    #: GPUs of the owned fleet: every GPU of the stacks' inventories on a host in the cluster (state
    #: ``active`` or ``cordoned``; ``absent`` hosts are not); None when no stack has an inventory.
    owned_gpus: int | None = None
    #: The stacks :attr:`owned_gpus` comes from, e.g. ``["onprem"]``.
    owned_from: list[str] = field(default_factory=list)


def _flavor_gpu_model(labels: Mapping[str, str]) -> str | None:
    """The GPU catalog key an EKS ResourceFlavor's nodes have: its ``karpenter.k8s.aws/instance-gpu-name``
    label (set by the burst plan when the NodePool has one GPU model) through the catalog; None for a pool
    of several models (its usage is then priced at the blended rate, and showback says so)."""
    name = labels.get(INSTANCE_GPU_NAME_LABEL)
    if name is None:
        return None
    models = [g.name for g in load_catalog().gpu_models if g.karpenter_gpu_name == name]
    return models[0] if len(models) == 1 else None  # `a100` names two memory sizes: no one model


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
        clash = sorted({k for k, v in prices.usd_per_gpu_hour.items() if out.prices.usd_per_gpu_hour.get(k, v) != v}
                       | {k for (k, m), v in prices.by_model.items() if out.prices.by_model.get((k, m), v) != v})
        if clash:
            raise ValueError(f"stacks {', '.join(stacks)} price {', '.join(clash)} GPU-hours differently: give one of them, or --price")
        out.prices = out.prices.merged(prices)
        section = loaded.config.teams
        if out.teams is None and section is not None:
            out.teams = read_teams_file(loaded.root / section.file, section.file)
        if loaded.inventory is not None:
            owned = sum(h.gpu_count for h in loaded.inventory.hosts if h.state in IN_CLUSTER)
            out.owned_gpus = (out.owned_gpus or 0) + owned
            out.owned_from.append(name)
        plan = loaded.burst_plan
        if plan is not None:
            for model, flavor in plan.onprem.flavors.items():
                out.flavors[flavor.name] = ("owned", model)
            for model, flavor in plan.onprem.mig_flavors.items():
                out.flavors[flavor.name] = ("owned", model)
            for capacity in plan.cloud.values():
                out.flavors[capacity.flavor.name] = (capacity.capacity_type, _flavor_gpu_model(capacity.flavor.node_labels))
    return out
