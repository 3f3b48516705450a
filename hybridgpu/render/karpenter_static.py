"""Static capacity and warm buffers of Karpenter NodePools (pure, no Pulumi).

Creates (as plain dicts):

* the static form of a rendered ``karpenter.sh/v1`` NodePool (:func:`static_nodepool`): ``spec.replicas``
  set, ``weight`` and ``limits`` left out;
* per NodePool with ``capacityBuffer``, a ``v1`` PodTemplate (one chunk: every GPU of one node of the pool)
  and the ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer that keeps ``replicas`` such chunks provisioned
  (:func:`capacity_buffer_manifests`);
* the two feature gates of the ``karpenter`` chart (:func:`static_feature_gates`).

Upstream facts (read 2026-11-27): Karpenter v1.14.1, aws/karpenter-provider-aws tag v1.14.1 (commit 1d927085)
and kubernetes-sigs/karpenter tag v1.14.1 (commit 6e7eab7a). The tags are the newest of both snapshots
(no v1.15.x exists there).

* Gates: ``charts/karpenter/values.yaml`` ``settings.featureGates.staticCapacity`` and ``.capacityBuffer``,
  both alpha and false by default; ``templates/deployment.yaml`` passes them as ``FEATURE_GATES``
  ``StaticCapacity=...,CapacityBuffer=...``. ``pkg/controllers/controllers.go`` registers the static
  provisioning/deprovisioning controllers only with StaticCapacity, the CapacityBuffer controller only
  with CapacityBuffer: with the gate off the fields are accepted by the API server and silently do nothing.
* ``spec.replicas`` (``charts/karpenter-crd/templates/karpenter.sh_nodepools.yaml``): int64, minimum 0; CEL
  rules "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning
  modes", "only 'limits.nodes' is supported on static NodePools", "'weight' is not supported on static
  NodePools"; consolidationPolicy/consolidateAfter are ignored. ``pkg/controllers/static/provisioning/
  controller.go`` creates NodeClaims until running + pending-disruption nodes reach ``replicas`` (capped by
  ``limits.nodes``), with no pod asking for them; ``pkg/controllers/provisioning/provisioner.go``
  ``NewScheduler`` drops static pools, so pending pods never grow them; ``disruption/emptiness.go`` and
  ``consolidation.go`` skip their nodes. ``disruption/staticdrift.go`` reserves replacements for drifted
  nodes against ``limits.nodes``: so no node limit is rendered (``replicas`` bounds the pool; a limit equal
  to it would block replace-before-delete).
* CapacityBuffer (``charts/karpenter-crd/templates/autoscaling.x-k8s.io_capacitybuffers.yaml``, v1beta1,
  namespaced): ``podTemplateRef.name`` (a PodTemplate in the same namespace) or ``scalableRef``, not both;
  with ``podTemplateRef``, ``replicas`` or ``limits`` is required (CEL). ``pkg/controllers/capacitybuffer``
  turns it into ``replicas`` virtual pods of the template's shape; the provisioner launches nodes for them
  (``provisioning/buffers.go``), and a node holding virtual pods is not empty
  (``disruption/emptiness.go``), so the nodes stay idle and ready. Only dynamic pools serve virtual pods
  (``NewScheduler`` drops static ones).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hybridgpu.config.models import KarpenterConfig, NodePoolConfig
from hybridgpu.k8s import GPU_RESOURCE, KARPENTER_NODEPOOL_LABEL, LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN, managed_by_labels, toleration_for

__all__ = [
    "BUFFER_IMAGE",
    "CAPACITY_BUFFER_API",
    "buffer_name",
    "capacity_buffer_manifests",
    "static_feature_gates",
    "static_nodepool",
    "warm_nodes",
]

#: API version of Karpenter v1.14.1's CapacityBuffer CRD (``autoscaling.x-k8s.io_capacitybuffers.yaml``).
CAPACITY_BUFFER_API = "autoscaling.x-k8s.io/v1beta1"
#: The container image of the buffer's PodTemplate. Its pods are virtual (Karpenter's scheduling simulation
#: only, never created), but the core API requires an image on a PodTemplate's containers.
BUFFER_IMAGE = "registry.k8s.io/pause:3.10"


def static_feature_gates(config: KarpenterConfig) -> dict[str, bool]:
    """``settings.featureGates`` entries of the ``karpenter`` chart for static capacity and buffers.

    Returns:
        ``{"staticCapacity": bool, "capacityBuffer": bool}`` (the chart's own key names, v1.14.1).
    """
    return {"staticCapacity": config.static_capacity, "capacityBuffer": config.capacity_buffer}


def static_nodepool(manifest: dict[str, Any], pool: NodePoolConfig) -> dict[str, Any]:
    """The NodePool ``manifest`` (from :func:`hybridgpu.render.karpenter.render_nodepool`) in its static form.

    Args:
        manifest: the rendered NodePool; not modified.
        pool: its config; a pool without ``replicas`` returns the manifest unchanged.

    Returns:
        A new manifest with ``spec.replicas`` (nodes) and without ``spec.weight`` and ``spec.limits`` (the CRD's CEL
        rules refuse weight and every limit but ``nodes`` on a static pool; see the module docstring for why
        ``nodes`` is not set either).
    """
    if pool.replicas is None:
        return manifest
    spec = {k: v for k, v in manifest["spec"].items() if k not in ("weight", "limits")}
    spec["replicas"] = pool.replicas
    return {**manifest, "spec": spec}


def buffer_name(pool: NodePoolConfig) -> str:
    """Name of a pool's PodTemplate and CapacityBuffer: ``<pool>-buffer`` (DNS-1123, at most 63 + 7 characters)."""
    return f"{pool.name}-buffer"


def capacity_buffer_manifests(
    pool: NodePoolConfig, *, namespace: str, gpus_per_node: int, cost_labels: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """The PodTemplate and CapacityBuffer of a pool's warm buffer (empty when the pool has none).

    One chunk asks for ``gpus_per_node`` ``nvidia.com/gpu`` and selects the pool (``karpenter.sh/nodepool``)
    with its taints tolerated, so each chunk is one whole idle node of this pool.

    Args:
        pool: the validated pool (its GPU counts checked to be one size).
        namespace: where both objects live (the Karpenter namespace).
        gpus_per_node: GPUs of one node of the pool (the catalog's count of its instance size).
        cost_labels: the stack's cost tags; those that are valid label keys and values label both objects and
            the chunk's pods (the policy ``gpu-workload-cost-labels`` asks them of every GPU pod template).

    Returns:
        ``[PodTemplate, CapacityBuffer]`` or ``[]``.

    Raises:
        ValueError: ``gpus_per_node`` below 1.
    """
    if pool.capacity_buffer is None:
        return []
    if gpus_per_node < 1:
        raise ValueError(f"a buffer chunk of NodePool {pool.name!r} needs at least 1 GPU, got {gpus_per_node}")
    name = buffer_name(pool)
    valid = {k: v for k, v in (cost_labels or {}).items() if re.match(LABEL_KEY_PATTERN, k) and re.match(LABEL_VALUE_PATTERN, v)}
    labels = {**valid, **managed_by_labels()}
    gpus = str(gpus_per_node)
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "template": {
            "metadata": {"labels": {**labels, KARPENTER_NODEPOOL_LABEL: pool.name}},
            "spec": {
                "nodeSelector": {KARPENTER_NODEPOOL_LABEL: pool.name},
                "tolerations": [toleration_for(t.key, t.value, t.effect.value) for t in pool.taints],
                "containers": [
                    {
                        "name": "buffer",
                        "image": BUFFER_IMAGE,
                        "resources": {"requests": {GPU_RESOURCE: gpus}, "limits": {GPU_RESOURCE: gpus}},
                    }
                ],
            },
        },
    }
    buffer = {
        "apiVersion": CAPACITY_BUFFER_API,
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"podTemplateRef": {"name": name}, "replicas": pool.capacity_buffer.replicas},
    }
    return [template, buffer]


def warm_nodes(pool: NodePoolConfig) -> int:
    """Nodes of the pool that exist with no pod asking for them: ``replicas`` (static) or the buffer's ``replicas``; else 0.

    These are the only nodes a topology-aware Kueue flavor over the pool can place a cold workload on
    (:mod:`hybridgpu.burst.eks_tas`).
    """
    if pool.replicas is not None:
        return pool.replicas
    return pool.capacity_buffer.replicas if pool.capacity_buffer is not None else 0
