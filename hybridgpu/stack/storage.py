"""Shared dataset storage of a stack: the read-rate sizing of FSx for Lustre, where it lives, and which namespaces
get the ``training-data`` claim (pure, no Pulumi).

Stack-layer checks (docs/architecture.md rule 1): the FSx sizing reads the cloud section *and* the
GPU catalog (a NodePool's instance types give its node count); the claim namespaces read the
burst plan file. The on-prem sizing rule reads only the inventory and lives with it
(:func:`hybridgpu.inventory.checks.check_storage`).

* :func:`cloud_storage_issues`: ``hybridgpu:cloud.storage``: the target NodePool exists and the
  file system's baseline throughput (capacity x throughput per unit,
  :func:`hybridgpu.config.storage.fsx_throughput_gbps`) reaches the target; the zone or subnet
  is one of the cluster's. A refusal names the key and the capacities that would reach the
  target at each throughput tier.
* :func:`storage_namespaces` / :func:`namespace_issues`: the namespaces whose pods mount the
  dataset: the declared ones, else the burst plan's queue namespaces on that cluster (where
  training jobs run: every LocalQueue lives in one); a stack with storage and neither is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from hybridgpu.burst.plan import BurstPlan
from hybridgpu.catalog import Catalog
from hybridgpu.config.models import CloudConfig, StackConfig
from hybridgpu.config.storage import CloudStorageConfig, fsx_options_for
from hybridgpu.errors import Issue, suggest
from hybridgpu.inventory import Inventory
from hybridgpu.render.karpenter import resolve_instance_types

__all__ = ["StorageNamespaces", "cloud_storage_issues", "cloud_target_gbps", "namespace_issues", "storage_namespaces"]

STORAGE = "hybridgpu:cloud.storage"


def cloud_target_gbps(storage: CloudStorageConfig, cloud: CloudConfig, catalog: Catalog) -> tuple[float, str] | None:
    """The read rate the FSx file system must reach, GB/s, and how it was derived; None when the NodePool is unknown.

    ``target.readGBps`` as given, or ``readGBpsPerNode`` x the most nodes ``target.nodePool`` can run:
    its ``gpuLimit`` over the fewest GPUs per instance of its resolved instance types.
    """
    target = storage.target
    if target.read_gbps is not None:
        return target.read_gbps, f"target.readGBps {target.read_gbps:g} GB/s"
    pool = next((p for p in cloud.node_pools if p.name == target.node_pool), None)
    if pool is None or pool.gpu_limit is None:
        return None
    resolved = resolve_instance_types(pool, catalog)
    if not resolved:
        return None
    fewest = min(t.gpu_count for t in resolved)
    nodes = pool.gpu_limit // fewest
    return (
        target.read_gbps_per_node * nodes,
        f"{target.read_gbps_per_node:g} GB/s per node x {nodes} node(s) of NodePool {pool.name!r} "
        f"(gpuLimit {pool.gpu_limit} / {fewest} GPUs per instance) = {target.read_gbps_per_node * nodes:g} GB/s",
    )


def cloud_storage_issues(config: StackConfig, file: str, catalog: Catalog) -> list[Issue]:
    """Problems of ``hybridgpu:cloud.storage`` (empty without it): target NodePool, throughput, zone/subnet.

    Returns:
        Issues with codes ``storage-target``, ``storage-throughput``, ``storage-placement``.
    """
    cloud = config.cloud
    if cloud is None or cloud.storage is None:
        return []
    storage, fsx = cloud.storage, cloud.storage.fsx_lustre
    issues: list[Issue] = []
    pools = [p.name for p in cloud.node_pools]
    if storage.target.node_pool is not None and storage.target.node_pool not in pools:
        issues.append(
            Issue(
                file,
                f"{STORAGE}.target.nodePool",
                f"no NodePool named {storage.target.node_pool!r}{suggest(storage.target.node_pool, pools)}",
                f"name the pool whose nodes train on this data (one of: {', '.join(pools) or 'none defined'}), or give `readGBps`",
                code="storage-target",
            )
        )
    else:
        derived = cloud_target_gbps(storage, cloud, catalog)
        if derived is not None:
            target, how = derived
            have = fsx.throughput_gbps
            if have + 1e-9 < target:
                options = fsx_options_for(target)
                issues.append(
                    Issue(
                        file,
                        f"{STORAGE}.fsxLustre.storageCapacityGib",
                        f"FSx for Lustre reads {have:g} GB/s ({fsx.storage_capacity_gib} GiB = {fsx.storage_capacity_gib / 1000:g} TiB x "
                        f"{fsx.per_unit_storage_throughput} MB/s/TiB), below the target {how}",
                        "raise the capacity or the tier; the smallest that reach it: " + "; or ".join(str(o) for o in options)
                        + " (or lower `target` if your jobs read less)",
                        code="storage-throughput",
                    )
                )
    return issues + _placement_issues(cloud, file)


def _placement_issues(cloud: CloudConfig, file: str) -> list[Issue]:
    """Where the FSx file system of ``cloud.storage`` lives: with a VPC the stack builds, a zone of it (no
    subnet); with an existing VPC, one of its private subnets (no zone). Issues have code ``storage-placement``
    (none without ``cloud.storage``)."""
    if cloud.storage is None:
        return []
    fsx, net = cloud.storage.fsx_lustre, cloud.network

    def issue(field: str, message: str, fix: str) -> Issue:
        return Issue(file, f"{STORAGE}.fsxLustre.{field}", message, fix, code="storage-placement")

    issues: list[Issue] = []
    if net.new is not None:
        if fsx.subnet_id is not None:
            issues.append(
                issue(
                    "subnetId",
                    "`subnetId` picks a subnet of an existing VPC, but this stack builds its VPC (`network.new`)",
                    "remove `subnetId`; choose the zone with `availabilityZone`",
                )
            )
        zones = list(net.new.availability_zones)
        if fsx.availability_zone is not None and fsx.availability_zone not in zones:
            issues.append(
                issue(
                    "availabilityZone",
                    f"{fsx.availability_zone!r} is not a zone of the cluster's VPC ({', '.join(zones)}){suggest(fsx.availability_zone, zones)}",
                    "use one of `network.new.availabilityZones` (where the training nodes run)",
                )
            )
    elif net.existing is not None:
        if fsx.availability_zone is not None:
            issues.append(
                issue(
                    "availabilityZone",
                    "with an existing VPC the zone comes from the subnet: hybridgpu does not know which zone each subnet is in",
                    "remove `availabilityZone` and give `subnetId` (one of `network.existing.privateSubnetIds`)",
                )
            )
        subnets = list(net.existing.private_subnet_ids)
        if fsx.subnet_id is not None and fsx.subnet_id not in subnets:
            issues.append(
                issue(
                    "subnetId",
                    f"{fsx.subnet_id} is not one of the cluster's private subnets ({', '.join(subnets)}): the nodes might not reach it",
                    "use one of `network.existing.privateSubnetIds`",
                )
            )
    return issues


@dataclass(frozen=True)
class StorageNamespaces:
    """The namespaces of one cluster that get the ``training-data`` claim.

    Attributes:
        namespaces: every namespace, in order (declared ones first, as declared; else the burst plan's).
        create: those the storage component creates itself (no burst queue on that cluster creates them).
        key: the config key they come from (named in issues).
    """

    namespaces: tuple[str, ...]
    create: tuple[str, ...]
    key: str


#: Namespaces every cluster starts with: never created by hybridgpu.
_BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def storage_namespaces(config: StackConfig, side: str, burst_plan: BurstPlan | None) -> StorageNamespaces:
    """The claim namespaces of ``side`` (``eks`` or ``onprem``): declared, else the burst plan's queue namespaces there.

    The burst plan's namespaces are created by the Kueue component of the cluster the stack's
    burst role targets (on-prem roles on the kubeadm cluster, else EKS); the storage component
    creates the others.
    """
    if side == "eks":
        declared = list(config.cloud.storage.namespaces) if config.cloud and config.cloud.storage else []
        key = f"{STORAGE}.namespaces"
    else:
        declared = list(config.onprem.storage.namespaces) if config.onprem else []
        key = "hybridgpu:onprem.storage.namespaces"
    from_plan: tuple[str, ...] = ()
    if burst_plan is not None and config.stack in burst_plan.clusters:
        cluster = burst_plan.clusters[config.stack]
        target = "onprem" if cluster.role in ("onprem-worker", "onprem-manager") or config.cloud is None else "eks"
        if target == side:
            from_plan = tuple(cluster.namespaces)
    namespaces = tuple(declared) if declared else from_plan
    create = tuple(ns for ns in namespaces if ns not in from_plan and ns not in _BUILTIN_NAMESPACES)
    return StorageNamespaces(namespaces, create, key)


def namespace_issues(config: StackConfig, file: str, burst_plan: BurstPlan | None, inventory: Inventory | None) -> list[Issue]:
    """A stack with storage on a side must have namespaces for its claim there (declared, or from the burst plan)."""
    issues = []
    sides = []
    if config.cloud is not None and config.cloud.storage is not None:
        sides.append("eks")
    if config.onprem is not None and inventory is not None and inventory.site.storage is not None:
        sides.append("onprem")
    for side in sides:
        found = storage_namespaces(config, side, burst_plan)
        if not found.namespaces:
            issues.append(
                Issue(
                    file,
                    found.key,
                    f"the {'EKS' if side == 'eks' else 'on-prem'} cluster gets shared storage but no namespace for its `training-data` claim: "
                    "none is declared and no burst queue runs there",
                    f"list the namespaces your training jobs run in under `{found.key}`",
                    code="storage-namespaces",
                )
            )
    return issues
