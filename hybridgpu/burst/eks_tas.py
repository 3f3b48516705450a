"""Kueue Topology Aware Scheduling for the EFA NodePools of an EKS cluster that runs Kueue (pure, no Pulumi).

Creates, for a cluster whose burst role runs Kueue on EKS (the cloud worker) and whose ``hybridgpu:cloud``
has NodePools on an EC2NodeClass with EFA:

* the ``kueue.x-k8s.io/v1beta2`` Topology ``eks``: ``topology.k8s.aws/network-node-layer-1..3`` then
  ``kubernetes.io/hostname`` (:mod:`hybridgpu.render.eks_topology`; the labels the AWS cloud controller
  manager puts on p4d/p5 nodes);
* per EFA pool whose every instance type carries those labels, a TAS ResourceFlavor ``eks-efa-<pool>``:
  ``nodeLabels`` ``karpenter.sh/nodepool=<pool>`` and ``hybridgpu.io/efa=true`` (Kueue injects them as a
  nodeSelector, which also satisfies the ``efa-workload-requests`` policy), the pool's taints as
  ``tolerations``, ``topologyName: eks`` (the CRD requires at least one nodeLabel with a topologyName:
  ``kueue.x-k8s.io_resourceflavors.yaml`` v0.19.2 CEL "at least one nodeLabel is required when topology is set");
* per such pool a ClusterQueue ``<prefix>-eks-efa-<pool>`` covering ``nvidia.com/gpu`` (quota: the pool's
  ``gpuLimit``) and ``vpc.amazonaws.com/efa`` (quota: the most nodes x the interfaces per node). The EFA
  resource must be declared: the Kueue configuration uses ``quotaCheckStrategy: BlockUndeclared``
  (:func:`hybridgpu.burst.kueue.kueue_configuration`), which never admits a workload asking for an
  undeclared resource; the burst ClusterQueues declare only GPUs, so an EFA job goes through these queues;
* per such pool a LocalQueue named after the pool in every namespace of the cluster plan.

These queues admit jobs submitted on the EKS cluster itself (not dispatched by a MultiKueue manager):
on a manager, Kueue v0.19.2 needs a TAS flavor in the ClusterQueue too (``pkg/scheduler/flavorassigner/
tas_flavorassigner.go`` ``podSetTopologyRequest`` returns ``ErrNoTASCacheInformation`` without one) and only
then delays the topology to the worker (``DelayedTopologyRequestStatePending``; the MultiKueue workload
controller copies the worker's assignment back, ``pkg/controller/admissionchecks/multikueue/workload.go``
``needsDelayedTopologyUpdate``). The burst plan's manager flavors are not TAS flavors (docs/multi-node.md).

Admission from cold: Kueue TAS places a workload only on nodes that exist ("no topology domains at level",
kubernetes-sigs/kueue v0.19.2 commit 8eab6877 ``pkg/cache/scheduler/tas_flavor_snapshot.go``) and scales a
cluster only through a ProvisioningRequest admission check (``site/content/en/docs/concepts/
topology_aware_scheduling.md``, "ClusterAutoscaler support"), which Karpenter does not implement. A ClusterQueue
whose only flavor is a TAS flavor treats every workload as a topology request (``tas_flavorassigner.go``
``isTASImplied``). So an EFA queue admits only gangs that fit the pool's nodes that exist with no pod asking for
them: its static ``replicas`` or its warm buffer (:func:`hybridgpu.render.karpenter_static.warm_nodes`, carried
as :attr:`EfaQueue.warm_nodes`); an empty pool admits nothing and Karpenter never launches a node
(checked by :func:`hybridgpu.stack.eks_topology.eks_tas_cold_issues` and ``hybridgpu job check``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hybridgpu.burst.kueue import cluster_queue, local_queue, resource_flavor
from hybridgpu.burst.plan import ClusterQueuePlan, Flavor, FlavorQuota, LocalQueuePlan, ResourceGroup
from hybridgpu.catalog import Catalog
from hybridgpu.config.models import CloudConfig
from hybridgpu.k8s import EFA_LABEL, EFA_RESOURCE, GPU_RESOURCE, KARPENTER_NODEPOOL_LABEL, toleration_for
from hybridgpu.render.efa import derived_efa_interfaces, efa_node_classes, efa_pools
from hybridgpu.render.eks_topology import EKS_TOPOLOGY, eks_topology_levels, eks_topology_manifest
from hybridgpu.render.karpenter import resolve_instance_types
from hybridgpu.render.karpenter_static import warm_nodes

__all__ = ["EfaQueue", "efa_queues", "efa_tas_manifests"]


@dataclass(frozen=True)
class EfaQueue:
    """One EFA pool's Kueue objects: its TAS flavor, ClusterQueue and LocalQueues, the topology levels its nodes carry and their EFA devices.

    ``warm_nodes``: the pool's nodes that exist from cold (static ``replicas`` or buffer), the most nodes a gang
    admitted through the TAS flavor may span while no other node is running.
    """

    pool: str
    flavor: Flavor
    cluster_queue: ClusterQueuePlan
    local_queues: tuple[LocalQueuePlan, ...]
    levels: tuple[str, ...]
    efa_per_node: int
    gpus_per_node: int
    warm_nodes: int = 0


def efa_queues(cloud: CloudConfig, catalog: Catalog, namespaces: Sequence[str], prefix: str) -> list[EfaQueue]:
    """The TAS queues of the EFA pools whose instance types all carry the instance topology labels (config order).

    Args:
        cloud: the validated cloud section (EFA checked: one interface count per EFA class).
        catalog: the instance catalog.
        namespaces: namespaces of the LocalQueues (the cluster plan's).
        prefix: the burst plan's Kueue name prefix.

    Returns:
        One :class:`EfaQueue` per EFA pool with topology labels; pools of g5/g6e types (no labels) are skipped.
    """
    classes = efa_node_classes(cloud)
    found = []
    for pool in efa_pools(cloud):
        types = resolve_instance_types(pool, catalog)
        levels = eks_topology_levels(t.name for t in types)
        count = derived_efa_interfaces(classes[pool.node_class], cloud, catalog)
        if not levels or not types or count is None:
            continue
        nodes = (pool.gpu_limit or 0) // min(t.gpu_count for t in types)
        flavor = Flavor(
            f"eks-efa-{pool.name}",
            {KARPENTER_NODEPOOL_LABEL: pool.name, EFA_LABEL: "true"},
            tuple(toleration_for(t.key, t.value, t.effect.value) for t in pool.taints),
            EKS_TOPOLOGY,
        )
        group = ResourceGroup((GPU_RESOURCE, EFA_RESOURCE), (FlavorQuota(flavor.name, {GPU_RESOURCE: pool.gpu_limit or 0, EFA_RESOURCE: nodes * count}),))
        cq = ClusterQueuePlan(f"{prefix}-eks-efa-{pool.name}", (group,), namespaces=tuple(namespaces))
        lqs = tuple(LocalQueuePlan(ns, pool.name, cq.name) for ns in namespaces)
        found.append(EfaQueue(pool.name, flavor, cq, lqs, levels, count, min(t.gpu_count for t in types), warm_nodes(pool)))
    return found


def efa_tas_manifests(cloud: CloudConfig, catalog: Catalog, namespaces: Sequence[str], prefix: str) -> list[dict[str, Any]]:
    """The Topology, then each EFA pool's ResourceFlavor, ClusterQueue and LocalQueues, as manifests (empty: no such pool).

    The Topology's levels are those every TAS pool's nodes carry (the shortest list: 3 layers when a
    p5 pool and a p6-b200 pool share it).
    """
    queues = efa_queues(cloud, catalog, namespaces, prefix)
    if not queues:
        return []
    levels = min((q.levels for q in queues), key=len)
    docs: list[dict[str, Any]] = [eks_topology_manifest(levels)]
    for q in queues:
        docs.append(resource_flavor(q.flavor))
        docs.append(cluster_queue(q.cluster_queue, tuple(namespaces)))
        docs += [local_queue(lq) for lq in q.local_queues]
    return docs
