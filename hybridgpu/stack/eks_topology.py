"""EKS jobs against the EFA pools' Kueue queues and Topology (pure): the check a job manifest gets before it is submitted.

It reads a job manifest and the stack (``hybridgpu:cloud`` and the burst plan's namespaces and prefix),
so it lives in the stack layer (docs/architecture.md, rule 1). Rules, for a job submitted to an EFA pool's
LocalQueue (:mod:`hybridgpu.burst.eks_tas`) or asking for a topology on EKS:

* ``topology-level-mismatch``: a pod set's ``kueue.x-k8s.io/podset-required-topology`` or
  ``-preferred-topology`` names a label that is not a level of the EKS Topology (the instance topology
  labels of the pool's nodes, :func:`hybridgpu.render.eks_topology.eks_topology_levels`, then
  ``kubernetes.io/hostname``): Kueue skips a flavor whose Topology lacks the requested level ("Flavor ...
  does not contain the requested level", kubernetes-sigs/kueue v0.19.2
  ``pkg/scheduler/flavorassigner/tas_flavorassigner.go`` ``checkPodSetAndFlavorMatchForTAS``) and never
  admits the job. ``topology.k8s.aws/network-node-layer-4`` on a p5 pool is such a label (p5 nodes get 3
  layers), and so are the on-prem levels (``hybridgpu.io/topology-rack``);
* ``no-topology``: the job asks for a topology but names no LocalQueue, or a queue without a topology flavor
  (a burst queue, or an EFA pool whose instance types get no instance topology labels, e.g. g6e.48xlarge):
  Kueue v0.19.2 never admits a topology request to a ClusterQueue without a TAS flavor
  (``tas_flavorassigner.go`` ``podSetTopologyRequest``, ``ErrNoTASCacheInformation``);
* ``topology-too-large``: ``kubernetes.io/hostname`` is required (every pod of the pod set on one node) but the
  pod set asks for more GPUs than one node of the pool has;
* ``quota-too-small``: the job's pods together ask for more ``nvidia.com/gpu`` or ``vpc.amazonaws.com/efa``
  than the EFA queue's nominal quota: without a cohort to borrow from, Kueue never admits it;
* ``efa-per-node``: a pod asks for more EFA devices than the pool's nodes have;
* ``tas-cold-start``: the job's gang needs more nodes than the queue's pool has from cold (static ``replicas`` or
  warm buffer; :mod:`hybridgpu.burst.eks_tas`, "Admission from cold"): Kueue TAS places only on existing nodes,
  Karpenter launches nodes only for pods, and the job's pods stay suspended, so neither ever moves.

:func:`eks_tas_cold_issues` is the same rule for the stack itself (``hybridgpu validate``): an EFA queue whose
quota admits gangs larger than its pool's warm nodes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hybridgpu.burst.eks_tas import efa_queues
from hybridgpu.catalog import Catalog
from hybridgpu.config.models import CloudConfig
from hybridgpu.errors import Issue
from hybridgpu.k8s import EFA_RESOURCE, GPU_RESOURCE, HOSTNAME_LABEL, KUEUE_QUEUE_NAME_LABEL
from hybridgpu.policy.workloads import pod_templates
from hybridgpu.render.topology import PREFERRED_TOPOLOGY_ANNOTATION, REQUIRED_TOPOLOGY_ANNOTATION

__all__ = ["TAS_COLD_SOURCE", "eks_job_issues", "eks_tas_cold_issues", "gpus_of", "manifest_at"]

#: Where the rule "TAS admits only onto existing nodes" comes from, quoted in the messages.
TAS_COLD_SOURCE = (
    "Kueue v0.19.2 topology-aware scheduling places workloads only on existing nodes and scales only through "
    "ProvisioningRequest, which Karpenter does not implement"
)


def eks_tas_cold_issues(cloud: CloudConfig, catalog: Catalog, file: str, *, namespaces: Sequence[str], prefix: str) -> list[Issue]:
    """EFA queues whose quota admits gangs larger than their pool's nodes from cold (``tas-cold-start``; module docstring).

    Args:
        cloud: the validated cloud section.
        catalog: the instance catalog.
        file: the stack file to name.
        namespaces: the namespaces of the EKS worker's LocalQueues (the burst plan's).
        prefix: the burst plan's Kueue name prefix.

    Returns:
        One issue per such pool, keyed ``hybridgpu:cloud.nodePools[i]``.
    """
    index = {p.name: i for i, p in enumerate(cloud.node_pools)}
    issues: list[Issue] = []
    for q in efa_queues(cloud, catalog, namespaces, prefix):
        quota = int(dict(q.cluster_queue.groups[0].flavors[0].nominal)[GPU_RESOURCE])
        need = math.ceil(quota / q.gpus_per_node)
        if q.warm_nodes >= need:
            continue
        if q.warm_nodes:
            start, outcome = f"keeps only {q.warm_nodes} node(s) from cold", f"a job needing more than {q.warm_nodes} node(s) is never admitted"
            lower = f", or lower `gpuLimit` to {q.warm_nodes * q.gpus_per_node} (what exists from cold)"
        else:
            start, outcome, lower = "starts with no nodes", "its jobs are never admitted", ""
        issues.append(
            Issue(
                file, f"hybridgpu:cloud.nodePools[{index[q.pool]}]",
                f"NodePool {q.pool!r} is the only capacity of the topology-aware Kueue flavor {q.flavor.name!r} (ClusterQueue "
                f"{q.cluster_queue.name!r}, quota {quota} GPUs = {need} nodes) but {start}: {TAS_COLD_SOURCE}, so {outcome} "
                "and Karpenter never launches a node for it",
                f"make the pool static (`replicas: {need}`, `karpenter.staticCapacity: true`, no `weight`), or keep {need} nodes warm "
                f"(`capacityBuffer: {{replicas: {need}}}`, `karpenter.capacityBuffer: true`){lower}",
                code="tas-cold-start",
            )
        )
    return issues



def eks_job_issues(
    manifest: Mapping[str, Any], cloud: CloudConfig, catalog: Catalog, *, namespaces: Sequence[str], prefix: str, file: str
) -> list[Issue]:
    """What Kueue and the EFA pools would refuse about a job manifest on the EKS cluster (see the module docstring).

    Args:
        manifest: the job (``batch/v1`` Job, JobSet, PyTorchJob, ...).
        cloud: the stack's validated cloud section.
        catalog: the instance catalog.
        namespaces: the namespaces of the burst plan's EKS cluster (where the EFA LocalQueues are).
        prefix: the burst plan's Kueue name prefix.
        file: the job file as the user knows it.

    Returns:
        Issues keyed by the pod template path (``spec.template.metadata.annotations[...]``) or ``metadata.labels``.
    """
    queues = efa_queues(cloud, catalog, namespaces, prefix)
    namespace = (manifest.get("metadata") or {}).get("namespace") or "default"
    queue_name = ((manifest.get("metadata") or {}).get("labels") or {}).get(KUEUE_QUEUE_NAME_LABEL)
    mine = next((q for q in queues if queue_name == q.pool and any(lq.namespace == namespace for lq in q.local_queues)), None)
    levels = mine.levels if mine is not None else ()
    efa_queue_names = ", ".join(sorted({q.pool for q in queues})) or "none: no EFA NodePool with p4d/p5 instance types"
    issues: list[Issue] = []
    total = {GPU_RESOURCE: 0.0, EFA_RESOURCE: 0.0}
    for template in pod_templates(manifest):
        where = f"{template.path}.metadata.annotations" if template.path else "metadata.annotations"
        annotations = template.annotations
        for annotation in (REQUIRED_TOPOLOGY_ANNOTATION, PREFERRED_TOPOLOGY_ANNOTATION):
            level = annotations.get(annotation)
            if level is None:
                continue
            allowed = (*levels, HOSTNAME_LABEL)
            if queue_name is None:
                issues.append(
                    Issue(
                        file, f"{where}[{annotation}]",
                        f"the job asks for topology {level!r} but names no Kueue LocalQueue ({KUEUE_QUEUE_NAME_LABEL}): Kueue does not manage it "
                        "and the annotation places nothing",
                        f"label the job `{KUEUE_QUEUE_NAME_LABEL}: <EFA pool's LocalQueue>` (on this cluster: {efa_queue_names})",
                        code="no-topology",
                    )
                )
            elif mine is None:
                issues.append(
                    Issue(
                        file, f"{where}[{annotation}]",
                        f"the job asks for topology {level!r} but its queue {namespace}/{queue_name} has no topology flavor: Kueue v0.19.2 "
                        "never admits a pod set with a topology request to a ClusterQueue without one (ErrNoTASCacheInformation)",
                        f"submit it to an EFA pool's LocalQueue in {namespace} ({efa_queue_names}), or drop the annotation",
                        code="no-topology",
                    )
                )
            elif annotation == REQUIRED_TOPOLOGY_ANNOTATION and level == HOSTNAME_LABEL and gpus_of(template) * template.replicas > mine.gpus_per_node:
                issues.append(
                    Issue(
                        file, f"{where}[{annotation}]",
                        f"the pod set needs {template.replicas} x {gpus_of(template):g} = {gpus_of(template) * template.replicas:g} GPUs on one node "
                        f"({HOSTNAME_LABEL} required) but the nodes of NodePool {mine.pool!r} have {mine.gpus_per_node}: Kueue never admits it",
                        f"require a network layer ({', '.join(levels)}) instead, or use {PREFERRED_TOPOLOGY_ANNOTATION}",
                        code="topology-too-large",
                    )
                )
            elif level not in allowed:
                issues.append(
                    Issue(
                        file, f"{where}[{annotation}]",
                        f"{level!r} is not a level of the EKS Topology ({', '.join(allowed)}): Kueue skips every flavor whose Topology "
                        "lacks the requested level and never admits the job",
                        f"use one of {', '.join(allowed)} (the labels the AWS cloud controller manager puts on the pool's nodes)",
                        code="topology-level-mismatch",
                    )
                )
        gpus = template.gpu_limits().get(GPU_RESOURCE, 0.0)
        efa = template.efa_devices()
        total[GPU_RESOURCE] += gpus * template.replicas
        total[EFA_RESOURCE] += efa * template.replicas
        if mine is not None and efa > mine.efa_per_node:
            issues.append(
                Issue(
                    file, f"{template.path or 'spec'}.spec.containers",
                    f"a pod asks for {efa:g} {EFA_RESOURCE} but the nodes of NodePool {mine.pool!r} have {mine.efa_per_node}",
                    f"ask for at most {mine.efa_per_node} (one per EFA interface of the node)",
                    code="efa-per-node",
                )
            )
    if mine is not None and total[GPU_RESOURCE] > mine.warm_nodes * mine.gpus_per_node:
        need = math.ceil(total[GPU_RESOURCE] / mine.gpus_per_node)
        issues.append(
            Issue(
                file, f"metadata.labels[{KUEUE_QUEUE_NAME_LABEL}]",
                f"the job's pods need {total[GPU_RESOURCE]:g} GPUs ({need} node(s) of NodePool {mine.pool!r}) but the pool has "
                f"{mine.warm_nodes} node(s) from cold: {TAS_COLD_SOURCE}; the job waits suspended, never admitted, and no node is launched",
                f"make NodePool {mine.pool!r} static with `replicas: {need}` or more (or `capacityBuffer: {{replicas: {need}}}`) in the stack, "
                "or submit the job to a queue without a topology flavor",
                code="tas-cold-start",
            )
        )
    if mine is not None:
        quota = dict(mine.cluster_queue.groups[0].flavors[0].nominal)
        for resource, asked in total.items():
            if asked > quota[resource]:
                issues.append(
                    Issue(
                        file, f"metadata.labels[{KUEUE_QUEUE_NAME_LABEL}]",
                        f"the job's pods ask for {asked:g} {resource} together, more than ClusterQueue {mine.cluster_queue.name!r} "
                        f"holds ({quota[resource]}): Kueue never admits it",
                        f"lower the pods or their requests, or raise `gpuLimit` of NodePool {mine.pool!r}",
                        code="quota-too-small",
                    )
                )
    return issues


def gpus_of(template: Any) -> float:
    """``nvidia.com/gpu`` of one pod of a :class:`~hybridgpu.policy.workloads.PodTemplate`."""
    return template.gpu_limits().get(GPU_RESOURCE, 0.0)


def manifest_at(manifest: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The mapping at a dotted path such as ``spec.template`` (``spec.replicatedJobs[0].template``); ``{}`` when absent."""
    node: Any = manifest
    for part in [p for p in path.replace("]", "").replace("[", ".").split(".") if p]:
        node = node[int(part)] if part.isdigit() and isinstance(node, list) else (node or {}).get(part) if isinstance(node, Mapping) else None
        if node is None:
            return {}
    return node if isinstance(node, Mapping) else {}
