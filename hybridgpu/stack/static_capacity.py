"""Static NodePools and warm buffers of ``hybridgpu:cloud`` checked before anything is created (pure).

The checks resolve each pool's instance types from the catalog (:func:`hybridgpu.render.karpenter.resolve_instance_types`),
so they live in the stack layer. Upstream facts: Karpenter v1.14.1 (see :mod:`hybridgpu.render.karpenter_static`).

A pool with ``replicas`` (static):

* ``karpenter.staticCapacity`` must be on: without the gate Karpenter v1.14.1 registers no static controller
  (``pkg/controllers/controllers.go``) and, as the dynamic provisioner skips static pools
  (``provisioning/provisioner.go`` ``NewScheduler``), the pool never gets a node;
* Karpenter 1.7.0 or later (the first release with ``spec.replicas``);
* no ``weight`` (CRD CEL rule "'weight' is not supported on static NodePools");
* one GPU count across its instance types, and ``gpuLimit`` = replicas x that count: the CRD refuses an
  ``nvidia.com/gpu`` limit on a static pool ("only 'limits.nodes' is supported"), so ``gpuLimit`` is not
  rendered, but the Kueue quotas, the burst plan and the cost report read it;
* no ``capacityBuffer`` (virtual buffer pods are served by dynamic pools only).

A pool with ``capacityBuffer``:

* ``karpenter.capacityBuffer`` on, and Karpenter 1.14.0 or later (the first chart with the CapacityBuffer CRD);
* one GPU count (a chunk is one whole node), and ``replicas`` x that count within ``gpuLimit`` (the
  provisioner never launches past the pool's limits, so a larger buffer is never complete).
"""

from __future__ import annotations

from hybridgpu.catalog import Catalog
from hybridgpu.config.models import CloudConfig, NodePoolConfig
from hybridgpu.errors import Issue
from hybridgpu.render.karpenter import resolve_instance_types

__all__ = ["CAPACITY_BUFFER_MIN_KARPENTER", "STATIC_CAPACITY_MIN_KARPENTER", "gpus_per_node", "static_capacity_issues"]

#: First Karpenter release with ``NodePool.spec.replicas`` (StaticCapacity gate): v1.7.0 (its release notes
#: and the ``staticCapacity`` gate in ``charts/karpenter/values.yaml`` from that tag).
STATIC_CAPACITY_MIN_KARPENTER = (1, 7, 0)
#: First Karpenter release whose CRD chart ships ``autoscaling.x-k8s.io`` CapacityBuffer (and the
#: ``capacityBuffer`` gate): v1.14.0.
CAPACITY_BUFFER_MIN_KARPENTER = (1, 14, 0)


def gpus_per_node(pool: NodePoolConfig, catalog: Catalog) -> int | None:
    """The one GPU count of the pool's resolved instance types; None when they differ or none resolve."""
    counts = {t.gpu_count for t in resolve_instance_types(pool, catalog)}
    return counts.pop() if len(counts) == 1 else None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def static_capacity_issues(cloud: CloudConfig, file: str, catalog: Catalog) -> list[Issue]:
    """What Karpenter would refuse or ignore about the static pools and buffers of ``cloud`` (see the module docstring).

    Args:
        cloud: the schema-valid cloud section.
        file: the stack file to name.
        catalog: the instance catalog.

    Returns:
        Issues keyed ``hybridgpu:cloud.nodePools[i].<field>`` or ``hybridgpu:cloud.karpenter.version``.
    """
    issues: list[Issue] = []
    karpenter = cloud.karpenter
    version = _version(karpenter.version)
    for i, pool in enumerate(cloud.node_pools):
        key = f"hybridgpu:cloud.nodePools[{i}]"
        if pool.replicas is None and pool.capacity_buffer is None:
            continue
        gpn = gpus_per_node(pool, catalog)
        counts = sorted({t.gpu_count for t in resolve_instance_types(pool, catalog)})
        field = "replicas" if pool.replicas is not None else "capacityBuffer"
        if gpn is None and counts:
            issues.append(
                Issue(
                    file, f"{key}.{field}",
                    f"NodePool {pool.name!r} mixes instance sizes with {', '.join(map(str, counts))} GPUs: a static pool or a buffer "
                    "counts whole nodes, so their GPUs would be unknown",
                    "pin one size (`instanceTypes: [<one type>]` or `gpuCounts: [<n>]`)",
                )
            )
        if pool.replicas is not None:
            if not karpenter.static_capacity:
                issues.append(
                    Issue(
                        file, f"{key}.replicas",
                        f"NodePool {pool.name!r} is static but the Karpenter feature gate StaticCapacity is off: Karpenter runs no static "
                        "provisioner and its dynamic provisioner skips static pools, so the pool never gets a node",
                        "set `karpenter.staticCapacity: true` in hybridgpu:cloud",
                    )
                )
            if version < STATIC_CAPACITY_MIN_KARPENTER:
                issues.append(
                    Issue(
                        file, "hybridgpu:cloud.karpenter.version",
                        f"Karpenter {karpenter.version} has no static NodePools (spec.replicas, from 1.7.0); NodePool {pool.name!r} sets `replicas`",
                        "use the pinned Karpenter version (default), or remove `replicas`",
                    )
                )
            if pool.weight is not None:
                issues.append(
                    Issue(
                        file, f"{key}.weight",
                        f"NodePool {pool.name!r} is static (replicas) and has weight {pool.weight}: the Karpenter CRD refuses it "
                        "('weight' is not supported on static NodePools)",
                        "remove `weight` (a static pool is not chosen among pools: its nodes always exist)",
                    )
                )
            if pool.capacity_buffer is not None:
                issues.append(
                    Issue(
                        file, f"{key}.capacityBuffer",
                        f"NodePool {pool.name!r} is static and has a buffer: Karpenter provisions buffer pods on dynamic pools only, "
                        "so the buffer never gets a node",
                        "raise `replicas` instead, or put the buffer on a dynamic pool",
                    )
                )
            if gpn is not None and pool.gpu_limit != pool.replicas * gpn:
                issues.append(
                    Issue(
                        file, f"{key}.gpuLimit",
                        f"is {pool.gpu_limit} but static NodePool {pool.name!r} runs exactly {pool.replicas} x {gpn} = {pool.replicas * gpn} GPUs: "
                        "the Kueue quotas, burst plan and cost report read gpuLimit",
                        f"set `gpuLimit: {pool.replicas * gpn}`",
                    )
                )
        if pool.capacity_buffer is not None:
            if not karpenter.capacity_buffer:
                issues.append(
                    Issue(
                        file, f"{key}.capacityBuffer",
                        f"NodePool {pool.name!r} has a buffer but the Karpenter feature gate CapacityBuffer is off: the CapacityBuffer "
                        "object would be created and ignored",
                        "set `karpenter.capacityBuffer: true` in hybridgpu:cloud",
                    )
                )
            if version < CAPACITY_BUFFER_MIN_KARPENTER:
                issues.append(
                    Issue(
                        file, "hybridgpu:cloud.karpenter.version",
                        f"Karpenter {karpenter.version} has no CapacityBuffer (from 1.14.0); NodePool {pool.name!r} sets `capacityBuffer`",
                        "use the pinned Karpenter version (default), or remove `capacityBuffer`",
                    )
                )
            wanted = pool.capacity_buffer.replicas * (gpn or 0)
            if gpn is not None and wanted > (pool.gpu_limit or 0):
                issues.append(
                    Issue(
                        file, f"{key}.capacityBuffer.replicas",
                        f"a buffer of {pool.capacity_buffer.replicas} nodes holds {wanted} GPUs, more than NodePool {pool.name!r} may run "
                        f"(gpuLimit {pool.gpu_limit}): Karpenter stops at the limit and the buffer is never complete",
                        f"lower `capacityBuffer.replicas` to at most {(pool.gpu_limit or 0) // gpn}, or raise `gpuLimit`",
                    )
                )
    return issues
