"""Derive every burst quota from one place (pure, no Pulumi).

:func:`plan_burst` takes the burst plan file, the on-prem inventory and the cloud stack's
``hybridgpu:cloud`` section and returns a :class:`BurstPlan`: per cluster the ResourceFlavors,
ClusterQueues (with nominal quotas and cohort limits), LocalQueues and MultiKueue objects. It
is the only place quotas are computed, so:

* the on-prem ClusterQueue quota is the GPUs of the inventory's ``active`` GPU workers (whole
  GPUs per model, and MIG instances per profile for GPUs with a MIG layout);
* each cloud capacity type's ceiling (``gpuCeiling``, or ``monthlyBudgetUsd`` / (USD per
  GPU-hour x hours per month), rounded down to whole instances) is at once the EKS worker
  ClusterQueue quota and the required ``nvidia.com/gpu`` limit of its Karpenter NodePool
  (:func:`hybridgpu.stack.burst.burst_issues` refuses a stack whose ``gpuLimit`` differs, naming file, key and fix);
* the spillover manager has one ClusterQueue per queue class whose flavors mirror the worker
  flavors it may dispatch to (on-prem ones, plus its own EKS capacity type), with no cohort;
  the split-queues manager's burst queues equal the EKS worker's ceilings.

:func:`read_plan_file` reads and validates the plan file itself; reading the stacks it names and
checking a stack's ``hybridgpu:burst`` against the plan is the stack layer's work
(:mod:`hybridgpu.stack.burst`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import reduce
from pathlib import Path
from typing import Any, Literal

from hybridgpu.burst.models import BurstClass, BurstPlanFile, CapacitySpec
from hybridgpu.catalog import Catalog
from hybridgpu.config.capacity_blocks import CAPACITY_BLOCK_EXPIRY_LEAD, utc_now
from hybridgpu.config.models import CloudConfig
from hybridgpu.datafile import DataFileError, read_model_file
from hybridgpu.errors import Issue
from hybridgpu.inventory.models import Inventory
from hybridgpu.k8s import (
    CAPACITY_TYPE_LABEL,
    GPU_PRODUCT_LABEL,
    GPU_RESOURCE,
    INSTANCE_GPU_NAME_LABEL,
    KARPENTER_NODEPOOL_LABEL,
    MIG_STRATEGY_LABEL,
    mig_resource_name,
    toleration_for,
)
from hybridgpu.render.karpenter import CAPACITY_BLOCK, CAPACITY_RESERVATION_TYPE_LABEL, resolve_instance_types
from hybridgpu.render.topology import ONPREM_TOPOLOGY, onprem_topology_levels

Role = Literal["manager", "onprem-worker", "cloud-worker", "onprem-manager"]


#: What documents every key of a burst plan file (named in fix hints).
PLAN_REFERENCE = "docs/burst-plan-reference.md"


class BurstPlanError(DataFileError):
    """The burst plan file (or what it points at) is invalid; every issue names file, field and fix."""

    what = "burst plan"


# --------------------------------------------------------------------------- plan objects


@dataclass(frozen=True)
class Flavor:
    """A Kueue ResourceFlavor to create on a cluster.

    Attributes:
        name: ResourceFlavor name (DNS-1123).
        node_labels: ``spec.nodeLabels`` (Kueue injects them as a nodeSelector); empty on the manager.
        tolerations: ``spec.tolerations`` (added to admitted pods), Kubernetes toleration dicts.
        topology_name: ``spec.topologyName`` (a Topology of the same cluster, :attr:`ClusterPlan.topologies`), or None.
    """

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, str], ...] = ()
    topology_name: str | None = None


@dataclass(frozen=True)
class FlavorQuota:
    """One ``flavors[]`` entry of a ClusterQueue resource group, in whole units (GPUs, MIG instances).

    Attributes:
        flavor: ResourceFlavor name.
        nominal: resource -> ``nominalQuota`` (every covered resource, 0 allowed).
        borrowing_limit: resource -> ``borrowingLimit`` (only inside a cohort); empty: unlimited.
        lending_limit: resource -> ``lendingLimit`` (only inside a cohort); empty: unlimited.
    """

    flavor: str
    nominal: Mapping[str, int]
    borrowing_limit: Mapping[str, int] = field(default_factory=dict)
    lending_limit: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ResourceGroup:
    """A ClusterQueue ``resourceGroups[]`` entry: covered resources and their flavors in order of preference."""

    covered: tuple[str, ...]
    flavors: tuple[FlavorQuota, ...]


@dataclass(frozen=True)
class ClusterQueuePlan:
    """A ClusterQueue.

    Attributes:
        name: ClusterQueue name.
        groups: resource groups.
        cohort: ``cohortName`` or None.
        admission_check: name of the MultiKueue AdmissionCheck (manager queues) or None.
        burst_class: the queue class it serves (``spot``, ``on-demand``, ``none``) or None for all.
        namespaces: namespaces its ``namespaceSelector`` admits; None: every namespace of the cluster
            plan (a team's ClusterQueue admits only the team's namespaces).
        preemption: ``spec.preemption`` (Kueue field names), or None (Kueue's defaults: no preemption).
        fair_sharing_weight: ``spec.fairSharing.weight`` as a Kubernetes quantity string, or None.
        team: the team it serves (:mod:`hybridgpu.burst.teams`), or None.
    """

    name: str
    groups: tuple[ResourceGroup, ...]
    cohort: str | None = None
    admission_check: str | None = None
    burst_class: BurstClass | None = None
    namespaces: tuple[str, ...] | None = None
    preemption: Mapping[str, Any] | None = None
    fair_sharing_weight: str | None = None
    team: str | None = None

    def nominal_totals(self) -> dict[str, int]:
        """Resource -> sum of nominal quotas over every flavor."""
        totals: dict[str, int] = {}
        for group in self.groups:
            for fq in group.flavors:
                for res, n in fq.nominal.items():
                    totals[res] = totals.get(res, 0) + n
        return totals


@dataclass(frozen=True)
class LocalQueuePlan:
    """A LocalQueue: ``namespace/name`` pointing at ``cluster_queue``."""

    namespace: str
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class WorkerRef:
    """A worker cluster as the manager sees it.

    Attributes:
        name: MultiKueueCluster name.
        secret: name of the Secret (key ``kubeconfig``) in the Kueue namespace of the manager.
        stack: stack that builds the worker (and exports its kubeconfig).
        stack_reference: ``org/project/stack`` to read that export from.
    """

    name: str
    secret: str
    stack: str
    stack_reference: str


@dataclass(frozen=True)
class MultiKueuePlan:
    """The manager's MultiKueue objects.

    Attributes:
        workers: MultiKueueClusters, by name.
        configs: MultiKueueConfig name -> worker names in dispatch order.
        checks: AdmissionCheck name -> MultiKueueConfig name.
        dispatcher: Kueue dispatcher name for the manager Configuration.
    """

    workers: tuple[WorkerRef, ...]
    configs: Mapping[str, tuple[str, ...]]
    checks: Mapping[str, str]
    dispatcher: str


@dataclass(frozen=True)
class ClusterPlan:
    """Everything Kueue-related on one cluster.

    Attributes:
        stack: stack that builds the cluster.
        role: ``manager`` (spillover manager), ``onprem-worker``, ``cloud-worker`` or
            ``onprem-manager`` (split-queues: the on-prem cluster runs local jobs and manages EKS).
        flavors, cluster_queues, local_queues: the Kueue objects.
        namespaces: namespaces of the LocalQueues (created on the cluster).
        multikueue: manager objects, or None on a worker.
        worker_access: True when the cluster is a worker (ServiceAccount, RBAC and token for the manager).
        namespace_labels: namespace -> extra labels of its Namespace (a team's cost labels).
        extra_manifests: further objects rendered after the LocalQueues (teams: WorkloadPriorityClasses,
            Roles, RoleBindings, ValidatingAdmissionPolicies; :mod:`hybridgpu.burst.teams`).
        configuration: extra top-level keys of the Kueue ``Configuration`` (teams: ``fairSharing``,
            ``waitForPodsReady``).
        topologies: Kueue Topology name -> node label keys of its levels, broadest first (rendered by
            :func:`hybridgpu.render.topology.topology_manifest`, hostname appended); flavors refer to them.
    """

    stack: str
    role: Role
    flavors: tuple[Flavor, ...]
    cluster_queues: tuple[ClusterQueuePlan, ...]
    local_queues: tuple[LocalQueuePlan, ...]
    namespaces: tuple[str, ...]
    multikueue: MultiKueuePlan | None = None
    worker_access: bool = False
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    extra_manifests: tuple[Mapping[str, Any], ...] = ()
    configuration: Mapping[str, Any] = field(default_factory=dict)
    topologies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def quota_totals(self, *, burst_only: bool = False) -> dict[str, int]:
        """Resource -> sum of nominal quotas over the cluster's ClusterQueues (only MultiKueue queues if ``burst_only``)."""
        totals: dict[str, int] = {}
        for cq in self.cluster_queues:
            if burst_only and cq.admission_check is None:
                continue
            for res, n in cq.nominal_totals().items():
                totals[res] = totals.get(res, 0) + n
        return totals


@dataclass(frozen=True)
class CloudCapacity:
    """Cloud GPUs of one capacity type, derived from the plan.

    Attributes:
        capacity_type: ``spot`` or ``on-demand``.
        node_pool: the Karpenter NodePool.
        gpus: the ceiling in GPUs: NodePool ``nvidia.com/gpu`` limit = EKS ClusterQueue quota.
        usd_per_gpu_hour: price used for budgets and the simulator, USD per GPU-hour.
        price_source: where the price comes from.
        ceiling_from: what decided ``gpus`` (``gpuCeiling`` or ``monthlyBudgetUsd``).
        instance_gpu_counts: GPUs per instance of the pool's instance types.
        flavor: the EKS ResourceFlavor.
    """

    capacity_type: Literal["spot", "on-demand"]
    node_pool: str
    gpus: int
    usd_per_gpu_hour: float
    price_source: str
    ceiling_from: str
    instance_gpu_counts: tuple[int, ...]
    flavor: Flavor


@dataclass(frozen=True)
class ReservedCapacity:
    """The GPUs of one NodePool that launches into EC2 Capacity Blocks, as a Kueue flavor of the EKS worker.

    Attributes:
        node_pool: the NodePool (``capacityBlocks``).
        gpus: GPUs of its blocks active at the plan's time (start <= now < end - 40 min): the flavor's quota.
        block_gpus: GPUs of all its blocks (instances x GPUs per instance), active or not.
        flavor: the ResourceFlavor (``eks-reserved-<pool>``; see :func:`reserved_capacity`).
        windows: per block, in the pool's order: (reservation id, GPUs, start, usable until = end - 40 min), UTC.
    """

    node_pool: str
    gpus: int
    block_gpus: int
    flavor: Flavor
    windows: tuple[tuple[str, int, datetime, datetime], ...] = ()


@dataclass(frozen=True)
class QuotaChange:
    """A time at which the reserved flavor's quota changes, so the rendered quotas go stale (``pulumi up`` again).

    Attributes:
        at: when (UTC): a block's start, or 40 minutes before its end (Karpenter deletes its nodes then).
        node_pool: the Capacity Block NodePool.
        block: the reservation id.
        event: ``starts`` (its GPUs join the quota) or ``ends`` (they leave it).
        gpus: the block's GPUs.
    """

    at: datetime
    node_pool: str
    block: str
    event: Literal["starts", "ends"]
    gpus: int


@dataclass(frozen=True)
class OnPremCapacity:
    """Schedulable on-prem GPU capacity (hosts in state ``active``), derived from the inventory.

    Attributes:
        gpus: GPU model -> whole GPUs (GPUs without a MIG layout).
        mig: GPU model -> MIG resource name -> instances.
        flavors: model -> ResourceFlavor (whole GPUs).
        mig_flavors: model -> ResourceFlavor (MIG devices).
        topology_levels: node label keys of the on-prem Topology's levels above the host, broadest first
            (:func:`hybridgpu.render.topology.onprem_topology_levels`); empty: no Topology, flavors without ``topologyName``.
    """

    gpus: Mapping[str, int]
    mig: Mapping[str, Mapping[str, int]]
    flavors: Mapping[str, Flavor]
    mig_flavors: Mapping[str, Flavor]
    topology_levels: tuple[str, ...] = ()

    def totals(self) -> dict[str, int]:
        """Resource -> total on-prem capacity (``nvidia.com/gpu`` and each MIG resource)."""
        totals = {GPU_RESOURCE: sum(self.gpus.values())} if self.gpus else {}
        for per_res in self.mig.values():
            for res, n in per_res.items():
                totals[res] = totals.get(res, 0) + n
        return totals


@dataclass(frozen=True)
class BurstPlan:
    """The derived burst plan: capacities and every cluster's Kueue objects.

    Attributes:
        source: the plan file model.
        file: the plan file path as the user knows it.
        onprem: on-prem capacity.
        cloud: capacity type -> cloud capacity (only the types configured).
        clusters: stack name -> cluster plan (2 entries for split-queues, 3 for spillover).
        reserved: the cloud stack's Capacity Block NodePools, tried first in the cloud (:func:`reserved_capacity`).
        judged_at: the time (UTC) the reserved quotas were judged at (``$HYBRIDGPU_NOW`` or the clock); None when
            the cloud stack has no Capacity Block, so no quota depends on time.
    """

    source: BurstPlanFile
    file: str
    onprem: OnPremCapacity
    cloud: Mapping[str, CloudCapacity]
    clusters: Mapping[str, ClusterPlan]
    reserved: tuple[ReservedCapacity, ...] = ()
    judged_at: datetime | None = None

    def role_of(self, stack: str) -> Role | None:
        """The role of ``stack`` in the plan, or None when it takes no part."""
        cluster = self.clusters.get(stack)
        return cluster.role if cluster else None

    def nodepool_limits(self) -> dict[str, int]:
        """NodePool name -> required ``nvidia.com/gpu`` limit in GPUs."""
        return {c.node_pool: c.gpus for c in self.cloud.values()}


# --------------------------------------------------------------------------- derivation


def _slug(text: str) -> str:
    out = "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")
    while "--" in out:
        out = out.replace("--", "-")
    return out


def onprem_capacity(inventory: Inventory, catalog: Catalog) -> OnPremCapacity:
    """Schedulable GPU capacity of the on-prem cluster, from its inventory.

    Only hosts in state ``active`` count (``cordoned`` hosts are unschedulable, ``absent`` ones
    are out for repair). GPUs covered by a MIG layout count as MIG instances of each profile
    (resource ``nvidia.com/mig-<profile>``, mixed strategy), the others as whole GPUs.

    Args:
        inventory: the validated inventory.
        catalog: GPU catalog (GFD product label of each model).

    Returns:
        The capacity and one ResourceFlavor per GPU model (label ``nvidia.com/gpu.product``), plus
        one per model with MIG devices (labels ``nvidia.com/gpu.product`` and ``nvidia.com/mig.strategy: mixed``).
        Tolerations are the taints every host of the model carries.
    """
    gpus: dict[str, int] = {}
    mig: dict[str, dict[str, int]] = {}
    taints: dict[str, list[set[tuple[str, str | None, str]]]] = {}
    for host in inventory.hosts:
        if host.state != "active" or host.gpu is None:
            continue
        model = host.gpu.model
        covered: set[int] = set()
        for spec in host.gpu.mig_layouts:
            indices = spec.indices(host.gpu.count)
            covered.update(indices)
            for profile, per_gpu in spec.layout.items():
                res = mig_resource_name(profile)
                mig.setdefault(model, {})
                mig[model][res] = mig[model].get(res, 0) + per_gpu * len(indices)
        whole = host.gpu.count - len(covered)
        if whole:
            gpus[model] = gpus.get(model, 0) + whole
        taints.setdefault(model, []).append({(t.key, t.value, t.effect) for t in host.taints})

    def tolerations(model: str) -> tuple[dict[str, str], ...]:
        common = reduce(lambda a, b: a & b, taints.get(model, [set()]))
        out = []
        for key, value, effect in sorted(common, key=lambda t: (t[0], t[1] or "", t[2])):
            out.append(toleration_for(key, value, effect))
        return tuple(out)

    # Every on-prem flavor refers to the Topology when the inventory has one: a ClusterQueue whose
    # flavors are all TAS flavors implies TAS for every job (kueue v0.19.2 tas_flavorassigner.go
    # isTASImplied), while a mix refuses non-TAS jobs on the TAS flavors.
    levels = onprem_topology_levels(inventory.hosts)
    topology = ONPREM_TOPOLOGY if levels else None
    flavors = {
        m: Flavor(f"onprem-{_slug(m)}", {GPU_PRODUCT_LABEL: catalog.gpu_model(m).product_label}, tolerations(m), topology) for m in sorted(gpus)
    }
    mig_flavors = {
        m: Flavor(f"onprem-{_slug(m)}-mig", {GPU_PRODUCT_LABEL: catalog.gpu_model(m).product_label, MIG_STRATEGY_LABEL: "mixed"}, tolerations(m), topology)
        for m in sorted(mig)
    }
    return OnPremCapacity(
        gpus=dict(sorted(gpus.items())),
        mig={m: dict(sorted(r.items())) for m, r in sorted(mig.items())},
        flavors=flavors,
        mig_flavors=mig_flavors,
        topology_levels=levels,
    )


def cloud_capacity(
    capacity_type: Literal["spot", "on-demand"], spec: CapacitySpec, cloud: CloudConfig, catalog: Catalog, hours_per_month: float, file: str
) -> CloudCapacity:
    """The ceiling, price and ResourceFlavor of one cloud capacity type.

    The ceiling is ``gpuCeiling``, or with a budget ``floor(budget / (USD per GPU-hour x
    hours_per_month))`` rounded down to a multiple of the GCD of the pool's GPUs per instance
    (whole instances), whichever is lower. The price is ``usdPerGpuHour`` or, for on-demand, the
    highest catalog per-GPU price among the pool's instance types (so a budget is never exceeded).

    Raises:
        BurstPlanError: the NodePool does not exist, does not allow this capacity type, or the
            price is unknown.
    """
    key = "spot" if capacity_type == "spot" else "onDemand"
    pool = next((p for p in cloud.node_pools if p.name == spec.node_pool), None)
    if pool is None:
        pools = ", ".join(p.name for p in cloud.node_pools) or "none"
        message = f"no NodePool {spec.node_pool!r} in the cloud stack (pools: {pools})"
        raise BurstPlanError([Issue.in_entry(file, f"cloud.{key}", "nodePool", message, f"set `nodePool` to one of the cloud stack's NodePools: {pools}", "unknown-nodepool")])
    if capacity_type not in {c.value for c in pool.capacity_types}:
        raise BurstPlanError(
            [
                Issue.in_entry(
                    file,
                    f"cloud.{key}",
                    "nodePool",
                    f"NodePool {pool.name!r} does not launch {capacity_type} capacity",
                    f"pick a NodePool whose `capacityTypes` include {capacity_type}, or add {capacity_type} to {pool.name!r}'s `capacityTypes`",
                    "capacity-type",
                )
            ]
        )
    types = resolve_instance_types(pool, catalog)
    counts = tuple(sorted({t.gpu_count for t in types}))
    price = spec.usd_per_gpu_hour
    source = spec.price_source or ""
    if price is None:
        prices = [t.usd_per_gpu_hour for t in types if t.usd_per_gpu_hour is not None]
        if capacity_type == "spot" or not prices:
            raise BurstPlanError(
                [
                    Issue.in_entry(
                        file,
                        f"cloud.{key}",
                        "usdPerGpuHour",
                        f"no catalog price for {capacity_type} in NodePool {pool.name!r}",
                        "set `usdPerGpuHour` and `priceSource` (where the price comes from)",
                        "no-price",
                    )
                ]
            )
        price = max(prices)
        best = max((t for t in types if t.usd_per_gpu_hour is not None), key=lambda t: t.usd_per_gpu_hour or 0)
        source = f"catalog on-demand price of {best.name} ({best.price_region}, {best.source_date})"
    step = reduce(math.gcd, counts) if counts else 1
    gpus = spec.gpu_ceiling
    ceiling_from = "gpuCeiling"
    if spec.monthly_budget_usd is not None:
        by_budget = int(spec.monthly_budget_usd / (price * hours_per_month))
        by_budget -= by_budget % step
        if gpus is None or by_budget < gpus:
            gpus, ceiling_from = by_budget, "monthlyBudgetUsd"
    assert gpus is not None
    names = sorted({(catalog.gpu_model(t.gpu_model).karpenter_gpu_name or "") for t in types} - {""})
    labels = {CAPACITY_TYPE_LABEL: capacity_type, KARPENTER_NODEPOOL_LABEL: pool.name}
    if len(names) == 1:
        labels[INSTANCE_GPU_NAME_LABEL] = names[0]
    tolerations = tuple(toleration_for(t.key, t.value, t.effect.value) for t in pool.taints)
    flavor = Flavor(f"eks-{capacity_type}", labels, tolerations)
    return CloudCapacity(capacity_type, pool.name, gpus, float(price), source, ceiling_from, counts, flavor)


def reserved_capacity(cloud: CloudConfig, catalog: Catalog, now: datetime | None = None) -> tuple[ReservedCapacity, ...]:
    """The Capacity Block NodePools of the cloud stack as Kueue flavors, in NodePool order.

    The ResourceFlavor ``eks-reserved-<pool>`` selects the nodes Karpenter launches into the pool's blocks with the labels
    it sets on every reserved node (aws/karpenter-provider-aws v1.14.1 ``pkg/cloudprovider/cloudprovider.go``
    ``instanceToNodeClaim``: ``karpenter.sh/capacity-type: reserved`` and ``karpenter.k8s.aws/capacity-reservation-type``
    = the reservation's type, ``capacity-block`` for a block, ``pkg/apis/v1/ec2nodeclass_status.go``), plus
    ``karpenter.sh/nodepool`` and, for one GPU model, ``karpenter.k8s.aws/instance-gpu-name`` as the other EKS flavors;
    its tolerations are the pool's taints.

    Quota. Kueue quotas have no time, and Karpenter launches into a block only while EC2 lists it ``active``
    (``pkg/providers/capacityreservation/types.go``) and deletes its nodes 40 minutes before its end: a workload admitted
    on the flavor outside that window would wait for a node that cannot come. So the quota is the GPUs of the blocks
    active at ``now`` (the rendering's time), 0 before the first starts: run ``pulumi up`` again when a block starts
    (validation refuses a block that has ended).

    Args:
        cloud: the cloud stack's ``hybridgpu:cloud`` section.
        catalog: the instance catalog (GPUs per instance, Karpenter GPU names).
        now: the time to judge the windows at (UTC); None: :func:`~hybridgpu.config.capacity_blocks.utc_now`
            (``$HYBRIDGPU_NOW`` sets it).

    Returns:
        One :class:`ReservedCapacity` per NodePool with ``capacityBlocks``; empty without.
    """
    pools = [p for p in cloud.node_pools if p.capacity_blocks]
    if not pools:
        return ()
    now = now or utc_now()
    known = {t.name: t for t in catalog.instance_types}
    out = []
    for pool in pools:
        per = {b.id: b.instance_count * (known[b.instance_type].gpu_count if b.instance_type in known else 0) for b in pool.capacity_blocks}
        active = sum(per[b.id] for b in pool.capacity_blocks if b.start <= now < b.end - CAPACITY_BLOCK_EXPIRY_LEAD)
        windows = tuple((b.id, per[b.id], b.start, b.end - CAPACITY_BLOCK_EXPIRY_LEAD) for b in pool.capacity_blocks)
        labels = {CAPACITY_TYPE_LABEL: "reserved", CAPACITY_RESERVATION_TYPE_LABEL: CAPACITY_BLOCK, KARPENTER_NODEPOOL_LABEL: pool.name}
        names = sorted({catalog.gpu_model(known[b.instance_type].gpu_model).karpenter_gpu_name or "" for b in pool.capacity_blocks if b.instance_type in known} - {""})
        if len(names) == 1:
            labels[INSTANCE_GPU_NAME_LABEL] = names[0]
        tolerations = tuple(toleration_for(t.key, t.value, t.effect.value) for t in pool.taints)
        out.append(ReservedCapacity(pool.name, active, sum(per.values()), Flavor(f"eks-reserved-{pool.name}", labels, tolerations), windows))
    return tuple(out)


def quota_changes(reserved: Sequence[ReservedCapacity], now: datetime) -> list[QuotaChange]:
    """The times after ``now`` at which a reserved flavor's quota changes, earliest first.

    The quota rendered at ``now`` (:func:`reserved_capacity`) counts a block from its start until 40 minutes before
    its end; each of those two instants after ``now`` makes it stale, so they are when to run ``pulumi up`` again on
    the cloud and admission stacks.

    Args:
        reserved: the plan's Capacity Block NodePools (:attr:`BurstPlan.reserved`).
        now: the time the quotas were judged at (UTC, :attr:`BurstPlan.judged_at`).

    Returns:
        One :class:`QuotaChange` per block start and usable end strictly after ``now``, sorted by time, pool and block.
    """
    changes = []
    for r in reserved:
        for block, gpus, start, until in r.windows:
            if start > now:
                changes.append(QuotaChange(start, r.node_pool, block, "starts", gpus))
            if until > now and until > start:
                changes.append(QuotaChange(until, r.node_pool, block, "ends", gpus))
    return sorted(changes, key=lambda c: (c.at, c.node_pool, c.block, c.event))


def with_reserved(cqs: Sequence[ClusterQueuePlan], reserved: Sequence[ReservedCapacity], cohort: str, flavor_name: Callable[[str], str] = lambda n: n,
                  *, held_by_cohort: bool = False) -> tuple[ClusterQueuePlan, ...]:
    """``cqs`` with the reserved flavors first in their ``nvidia.com/gpu`` group, sharing one quota through a cohort.

    Kueue tries a resource group's flavors in order and takes the first that fits (kueue v0.19.2
    ``pkg/scheduler/flavorassigner/flavorassigner.go`` ``findFlavorForPodSets``), so prepaid block GPUs go before spot and
    On-Demand. The first ClusterQueue holds the block's GPUs as ``nominalQuota``; the others have 0 and borrow it in the
    cohort ``cohort``: fitting by borrowing still stops the search there under the default ``whenCanBorrow: MayStopSearch``
    (``apis/kueue/v1beta2/clusterqueue_types.go``). Each queue lists only its own spot or On-Demand flavor, so nothing
    else can be borrowed; the default ``reclaimWithinCohort: Never`` shares the blocks first come, first served.

    With ``held_by_cohort`` every queue gets 0 and the caller renders a Kueue ``Cohort`` object ``cohort`` that holds
    the GPUs (:func:`hybridgpu.burst.teams.reserved_cohort`): no queue owns the block, so none can reclaim it.
    """
    if not reserved or not cqs:
        return tuple(cqs)
    out = []
    for i, cq in enumerate(cqs):
        groups = []
        for group in cq.groups:
            if GPU_RESOURCE in group.covered:
                extra = tuple(FlavorQuota(flavor_name(r.flavor.name), {res: (r.gpus if res == GPU_RESOURCE and i == 0 and not held_by_cohort else 0) for res in group.covered}) for r in reserved)
                group = ResourceGroup(group.covered, (*extra, *group.flavors))
            groups.append(group)
        out.append(replace(cq, groups=tuple(groups), cohort=cohort))
    return tuple(out)


def _single_group(flavor: str, quotas: Mapping[str, int], borrowing: Mapping[str, int] | None = None, lending: Mapping[str, int] | None = None) -> ResourceGroup:
    resources = tuple(sorted(quotas))
    return ResourceGroup(resources, (FlavorQuota(flavor, dict(quotas), dict(borrowing or {}), dict(lending or {})),))


def _onprem_groups(onprem: OnPremCapacity) -> tuple[ResourceGroup, ...]:
    groups = []
    if onprem.gpus:
        groups.append(ResourceGroup((GPU_RESOURCE,), tuple(FlavorQuota(onprem.flavors[m].name, {GPU_RESOURCE: n}) for m, n in onprem.gpus.items())))
    if onprem.mig:
        covered = tuple(sorted({res for per in onprem.mig.values() for res in per}))
        flavors = tuple(FlavorQuota(onprem.mig_flavors[m].name, {res: per.get(res, 0) for res in covered}) for m, per in onprem.mig.items())
        groups.append(ResourceGroup(covered, flavors))
    return tuple(groups)


def _classes(source: BurstPlanFile) -> list[BurstClass]:
    order: list[BurstClass] = ["spot", "on-demand", "none"]
    present = {q.burst for q in source.queues}
    return [c for c in order if c in present]


def plan_burst(source: BurstPlanFile, inventory: Inventory, cloud: CloudConfig, catalog: Catalog, *, file: str = "<burst plan>", now: datetime | None = None) -> BurstPlan:
    """Derive every cluster's Kueue objects and quotas from the plan file.

    Args:
        source: the validated plan file.
        inventory: the on-prem stack's inventory.
        cloud: the cloud stack's ``hybridgpu:cloud`` section.
        catalog: instance/GPU catalog (prices, GPU names, product labels).
        file: the plan file as the user knows it (named in errors).
        now: the time the Capacity Block quotas are judged at (:func:`reserved_capacity`); None: now.

    Returns:
        The :class:`BurstPlan`. Invariants (property-tested in ``tests/burst/test_quota_properties.py``,
        stated in ``docs/bursting.md``): each spillover manager class owns on-prem + its own
        ceiling and shares nothing (no cohort); every manager flavor's quota equals one worker
        flavor's, so no workload reserves more than the largest single worker can run; every
        resource a manager queue covers is covered on every worker its MultiKueueConfig lists
        (quota 0 where the worker offers none); the split-queues manager's MultiKueue queues sum
        to the EKS worker's GPU quota; the EKS worker's GPU quota per capacity type equals that
        NodePool's ceiling; the on-prem quota equals the inventory's schedulable GPUs. With Capacity Blocks, each reserved
        flavor's quota is the GPUs of its blocks usable at ``now`` (at most the blocks' GPUs), held by exactly one EKS
        queue, first in every EKS queue (after on-prem on the spillover manager); ``judged_at`` records ``now``.

    Raises:
        BurstPlanError: a queue needs a capacity type the plan does not configure, a configured
            capacity type no queue uses, an unknown NodePool, or a missing price.
    """
    issues: list[Issue] = []
    onprem = onprem_capacity(inventory, catalog)
    caps: dict[str, CloudCapacity] = {}
    for ctype, spec in (("spot", source.cloud.spot), ("on-demand", source.cloud.on_demand)):
        if spec is None:
            continue
        try:
            caps[ctype] = cloud_capacity(ctype, spec, cloud, catalog, source.cloud.hours_per_month, file)  # type: ignore[arg-type]
        except BurstPlanError as exc:
            issues += exc.issues
    if issues:
        raise BurstPlanError(issues)
    # One "now" for every block, recorded on the plan (``burst plan`` prints it and the next change): the quotas depend on it.
    judged_at = (now or utc_now()) if any(p.capacity_blocks for p in cloud.node_pools) else None
    plan = assemble_plan(source, onprem, caps, file=file, reserved=reserved_capacity(cloud, catalog, judged_at))
    return replace(plan, judged_at=judged_at)


def assemble_plan(source: BurstPlanFile, onprem: OnPremCapacity, caps: Mapping[str, CloudCapacity], *, file: str = "<burst plan>",
                  reserved: Sequence[ReservedCapacity] = ()) -> BurstPlan:
    """Build every cluster's Kueue objects from derived capacities (the second half of :func:`plan_burst`).

    Args:
        source: the plan file.
        onprem: on-prem capacity (:func:`onprem_capacity`).
        caps: capacity type -> cloud capacity (:func:`cloud_capacity`).
        file: the plan file as the user knows it.
        reserved: the Capacity Block NodePools (:func:`reserved_capacity`): their flavors come first on the EKS worker's
            queues (one quota shared in the cohort ``<prefix>-eks``, :func:`with_reserved`), after on-prem on the
            spillover manager's classes that burst, and first on the split-queues manager's burst queues (cohort ``<prefix>-burst``).

    Raises:
        BurstPlanError: a queue bursts to an unconfigured capacity type, a configured type has no
            queue, or on-prem has no schedulable GPU.
    """
    issues: list[Issue] = []
    classes = _classes(source)
    for ctype, key in (("spot", "spot"), ("on-demand", "onDemand")):
        spec = source.cloud.spot if ctype == "spot" else source.cloud.on_demand
        if ctype in classes and spec is None:
            message = f"a queue bursts to {ctype} but `cloud.{key}` is not configured"
            issues.append(Issue.in_entry(file, "queues", "burst", message, f"add `cloud.{key}`, or change the queue's `burst`", "unused-capacity"))
        if spec is not None and ctype not in classes:
            fix = f"remove `cloud.{key}`, or set `burst: {ctype}` on a queue"
            issues.append(Issue.in_entry(file, f"cloud.{key}", None, f"no queue bursts to {ctype}", fix, "unused-capacity"))
    if not onprem.totals():
        message = "the on-prem inventory has no schedulable GPU (no active gpu-worker)"
        fix = "give at least one inventory host `role: gpu-worker` and `state: active`, or name another on-prem stack in `onprem.stack`"
        issues.append(Issue.in_entry(file, "onprem", "stack", message, fix, "no-gpu"))
    if issues:
        raise BurstPlanError(issues)

    prefix = source.kueue.prefix
    namespaces = tuple(sorted({q.namespace for q in source.queues}))
    onprem_cq_name = f"{prefix}-onprem"
    onprem_cq = ClusterQueuePlan(onprem_cq_name, _onprem_groups(onprem))
    onprem_flavors = (*onprem.flavors.values(), *onprem.mig_flavors.values())
    onprem_topologies = {ONPREM_TOPOLOGY: onprem.topology_levels} if onprem.topology_levels else {}
    # Every resource a manager queue can admit is declared on the EKS worker: GPUs with the
    # ceiling, each on-prem MIG resource with 0 (no burst pool offers MIG), so that under
    # BlockUndeclared a MIG workload is never admitted in EKS without quota.
    mig_resources = sorted({res for per in onprem.mig.values() for res in per})
    eks_cqs = {
        c: ClusterQueuePlan(f"{prefix}-eks-{c}", (_single_group(cap.flavor.name, {GPU_RESOURCE: cap.gpus, **{r: 0 for r in mig_resources}}),), burst_class=c)  # type: ignore[arg-type]
        for c, cap in caps.items()
    }
    reserved = tuple(reserved)
    eks_cqs = dict(zip(eks_cqs, with_reserved(tuple(eks_cqs.values()), reserved, f"{prefix}-eks")))
    eks_flavors = (*(r.flavor for r in reserved), *(cap.flavor for cap in caps.values()))
    split = source.topology == "split-queues"
    suffix = "-burst" if split else ""
    eks_lqs = tuple(
        LocalQueuePlan(q.namespace, q.name + suffix, eks_cqs[q.burst].name) for q in source.queues if q.burst != "none"
    )
    eks_namespaces = tuple(sorted({lq.namespace for lq in eks_lqs}))
    eks = ClusterPlan(source.cloud.stack, "cloud-worker", eks_flavors, tuple(eks_cqs.values()), eks_lqs, eks_namespaces, worker_access=True)
    eks_ref = WorkerRef(source.cloud.cluster_name, f"{prefix}-{source.cloud.cluster_name}-kubeconfig", source.cloud.stack, source.cloud.stack_reference)
    clusters: dict[str, ClusterPlan] = {eks.stack: eks}

    if split:
        manager_flavors = tuple(Flavor(f"multikueue-{c}") for c in caps)
        check = f"{prefix}-multikueue-{source.cloud.cluster_name}"
        burst_cqs = tuple(
            ClusterQueuePlan(f"{prefix}-burst-{c}", (_single_group(f"multikueue-{c}", {GPU_RESOURCE: cap.gpus}),), admission_check=check, burst_class=c)  # type: ignore[arg-type]
            for c, cap in caps.items()
        )
        burst_cqs = with_reserved(burst_cqs, reserved, f"{prefix}-burst", lambda n: f"multikueue-{n}")
        manager_flavors = (*(Flavor(f"multikueue-{r.flavor.name}") for r in reserved if caps), *manager_flavors)
        by_class = {cq.burst_class: cq.name for cq in burst_cqs}
        manager_lqs = [LocalQueuePlan(q.namespace, q.name, onprem_cq_name) for q in source.queues]
        manager_lqs += [LocalQueuePlan(q.namespace, q.name + "-burst", by_class[q.burst]) for q in source.queues if q.burst != "none"]
        mk = MultiKueuePlan(
            workers=(eks_ref,),
            configs={f"{prefix}-{source.cloud.cluster_name}": (eks_ref.name,)},
            checks={check: f"{prefix}-{source.cloud.cluster_name}"},
            dispatcher="kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
        )
        clusters[source.onprem.stack] = ClusterPlan(
            source.onprem.stack, "onprem-manager", (*onprem_flavors, *manager_flavors), (onprem_cq, *burst_cqs), tuple(manager_lqs), namespaces, mk,
            topologies=onprem_topologies,
        )
        return BurstPlan(source, file, onprem, caps, clusters, reserved)

    onprem_lqs = tuple(LocalQueuePlan(q.namespace, q.name, onprem_cq_name) for q in source.queues)
    clusters[source.onprem.stack] = ClusterPlan(
        source.onprem.stack, "onprem-worker", onprem_flavors, (onprem_cq,), onprem_lqs, namespaces, worker_access=True, topologies=onprem_topologies
    )
    onprem_ref = WorkerRef(source.onprem.cluster_name, f"{prefix}-{source.onprem.cluster_name}-kubeconfig", source.onprem.stack, source.onprem.stack_reference)

    # Manager: one ClusterQueue per queue class, no cohort. Each class mirrors the flavors of the
    # workers it dispatches to: one manager flavor per on-prem worker flavor (same quota) and, for a
    # class that bursts, one for its EKS capacity type (quota = its ceiling). So
    # * a class's capacity is on-prem + its own ceiling whatever the other classes hold: nothing is
    #   lent, so no class can reserve another class's ceiling (a cohort would let the spot class
    #   take the on-prem share while on-demand jobs running on-prem use up the on-demand class's
    #   own nominal, leaving the on-demand pool idle);
    # * Kueue assigns one flavor per resource group to a pod set, so a workload reserves at most
    #   the largest single flavor: the largest thing one worker can run. A larger one stays
    #   pending with reason ExceedsMaxQuota ("... > maximum capacity"), holding nothing.
    # The sum over classes exceeds the workers' total: the manager's quota is a gate per class,
    # the workers' quotas decide placement.
    checks: dict[str, str] = {}
    configs: dict[str, tuple[str, ...]] = {}
    cqs = []
    manager_flavor_names: dict[str, None] = {}

    def mirrored(flavor: str) -> str:
        name = f"multikueue-{flavor}"
        manager_flavor_names[name] = None
        return name

    for cls in classes:
        groups = []
        for group in onprem_cq.groups:
            flavors = [FlavorQuota(mirrored(fq.flavor), dict(fq.nominal)) for fq in group.flavors]
            if cls in caps and GPU_RESOURCE in group.covered:  # owned, then prepaid blocks, then the class's capacity type
                flavors += [FlavorQuota(mirrored(r.flavor.name), {GPU_RESOURCE: r.gpus}) for r in reserved]
                flavors.append(FlavorQuota(mirrored(caps[cls].flavor.name), {GPU_RESOURCE: caps[cls].gpus}))
            groups.append(ResourceGroup(group.covered, tuple(flavors)))
        if not any(GPU_RESOURCE in g.covered for g in groups) and cls in caps:
            only = (*(FlavorQuota(mirrored(r.flavor.name), {GPU_RESOURCE: r.gpus}) for r in reserved),
                    FlavorQuota(mirrored(caps[cls].flavor.name), {GPU_RESOURCE: caps[cls].gpus}))
            groups.insert(0, ResourceGroup((GPU_RESOURCE,), only))
        workers: tuple[str, ...]
        if cls == "none":
            config_name, workers = f"{prefix}-onprem-only", (onprem_ref.name,)
        else:
            config_name, workers = f"{prefix}-spillover", (onprem_ref.name, eks_ref.name)
        configs[config_name] = workers
        checks[config_name] = config_name
        cqs.append(
            ClusterQueuePlan(
                f"{prefix}-{'onprem-only' if cls == 'none' else cls}",
                tuple(groups),
                admission_check=config_name,
                burst_class=cls,
            )
        )
    by_class = {cq.burst_class: cq.name for cq in cqs}
    lqs = tuple(LocalQueuePlan(q.namespace, q.name, by_class[q.burst]) for q in source.queues)
    mk = MultiKueuePlan(
        workers=(onprem_ref, eks_ref),
        configs=configs,
        checks=checks,
        dispatcher="kueue.x-k8s.io/multikueue-dispatcher-incremental",
    )
    manager_flavors = tuple(Flavor(n) for n in manager_flavor_names)
    clusters[source.manager_stack] = ClusterPlan(source.manager_stack, "manager", manager_flavors, tuple(cqs), lqs, namespaces, mk)
    return BurstPlan(source, file, onprem, caps, clusters, reserved)


# --------------------------------------------------------------------------- loading


def read_plan_file(path: Path, shown: str) -> BurstPlanFile:
    """Read and validate a burst plan file.

    Args:
        path: the file to read.
        shown: the file as the user knows it (relative to the project root), named in issues.

    Returns:
        The validated plan file.

    Raises:
        BurstPlanError: missing/unreadable file, YAML errors, duplicate keys, schema errors
            (each issue names the file, the field path, the problem and a fix; unknown keys
            get the close match and the allowed keys, from :func:`~hybridgpu.errors.issues_from_validation`).
    """
    return read_model_file(
        path,
        shown,
        BurstPlanFile,
        BurstPlanError,
        what="burst plan file",
        missing_fix="fix `hybridgpu:burst.plan`: a plan file path relative to the project root",
        reference=PLAN_REFERENCE,
        entry_kind="entry",
    )


def describe_roles(plan: BurstPlan) -> Iterable[tuple[str, str]]:
    """(stack, role) pairs in a stable order: manager first, then on-prem, then cloud."""
    order = {"manager": 0, "onprem-manager": 0, "onprem-worker": 1, "cloud-worker": 2}
    return sorted(((s, c.role) for s, c in plan.clusters.items()), key=lambda t: (order[t[1]], t[0]))
