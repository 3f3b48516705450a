"""Checks of NodePools that launch into EC2 Capacity Blocks for ML (pure, no Pulumi).

:func:`capacity_block_issues` (errors, run by :func:`hybridgpu.stack.checks.check_stack`) and
:func:`capacity_block_warnings` (printed by ``hybridgpu validate``). "Now" is
:func:`hybridgpu.config.capacity_blocks.utc_now` (``$HYBRIDGPU_NOW`` sets it) unless given.

Upstream behaviour (aws/karpenter-provider-aws v1.14.1, read 2026-11-27): Karpenter offers reserved
capacity only from ``active`` reservations its EC2NodeClass selects
(``pkg/providers/capacityreservation/types.go`` filters on ``state=active``); 40 minutes before a
block's end it marks the block ``expiring`` and deletes the NodeClaims in it
(``pkg/apis/v1/ec2nodeclass_status.go``, ``pkg/controllers/capacityreservation/expiration``).
"""

from __future__ import annotations

from datetime import datetime

from hybridgpu.catalog import Catalog
from hybridgpu.config.capacity_blocks import CAPACITY_BLOCK_EXPIRY_LEAD, NOW_ENV, iso_utc, utc_now
from hybridgpu.config.models import CapacityType, CloudConfig, NodePoolConfig, StackConfig
from hybridgpu.errors import Issue
from hybridgpu.render.karpenter import resolve_instance_types

__all__ = ["block_gpus", "capacity_block_issues", "capacity_block_warnings"]

CLOUD = "hybridgpu:cloud"


def block_gpus(pool: NodePoolConfig, catalog: Catalog) -> int | None:
    """GPUs the pool's Capacity Blocks hold together (count), or None for a pool without blocks.

    A block whose instance type the catalog does not know counts 0 (the checks report it).
    """
    if not pool.capacity_blocks:
        return None
    known = {t.name: t.gpu_count for t in catalog.instance_types}
    return sum(b.instance_count * known.get(b.instance_type, 0) for b in pool.capacity_blocks)


def capacity_block_issues(cloud: CloudConfig, file: str, catalog: Catalog, now: datetime | None = None) -> list[Issue]:
    """Problems of the NodePools with ``capacityBlocks``.

    Rules: such a pool has ``capacityTypes: [reserved]`` only; each block's instance type is a catalog
    type the pool may launch; a reservation id appears once in the stack; ``gpuLimit`` is at most the
    blocks' GPUs (instances x GPUs per instance), so NodePool limits, budgets and the policy pack count
    what the blocks hold; and no block has ended or is in its last 40 minutes (Karpenter has deleted or
    is deleting its nodes).

    Args:
        cloud: the schema-valid cloud section.
        file: the stack file, named in every issue.
        catalog: the instance catalog.
        now: the time to judge the windows at (UTC); None: :func:`~hybridgpu.config.capacity_blocks.utc_now`.

    Returns:
        Issues with key paths ``hybridgpu:cloud.nodePools[i]...``; empty when every block is sound.
    """
    issues: list[Issue] = []
    if not any(p.capacity_blocks for p in cloud.node_pools):
        return issues
    if now is None:
        try:
            now = utc_now()
        except ValueError as exc:
            return [Issue(file, CLOUD, f"the capacity-block windows cannot be checked: {exc}", f"unset ${NOW_ENV} or give an ISO 8601 UTC time")]
    seen: dict[str, str] = {}
    type_names = {t.name for t in catalog.instance_types}
    for i, pool in enumerate(cloud.node_pools):
        if not pool.capacity_blocks:
            continue
        key = f"{CLOUD}.nodePools[{i}]"
        if pool.capacity_types != [CapacityType.reserved]:
            issues.append(Issue(
                file, f"{key}.capacityTypes",
                f"NodePool {pool.name!r} launches into Capacity Blocks, so it may use reserved capacity only, but it lists "
                f"{', '.join(c.value for c in pool.capacity_types)}",
                "set `capacityTypes: [reserved]`, and put spot or on-demand capacity in a NodePool of its own (lower `weight`)",
            ))
        resolved = {t.name for t in resolve_instance_types(pool, catalog)}
        for j, block in enumerate(pool.capacity_blocks):
            bkey = f"{key}.capacityBlocks[{j}]"
            if block.id in seen:
                issues.append(Issue(file, f"{bkey}.id", f"Capacity Block {block.id} is already used at {seen[block.id]}", "list each block once, in one NodePool"))
            seen.setdefault(block.id, bkey)
            refused = catalog.unsupported_family(block.instance_type) if block.instance_type not in type_names else None
            if refused is not None:
                issues.append(Issue(file, f"{bkey}.instanceType", f"instance type {block.instance_type!r} cannot be provisioned: {refused.consequence}", refused.instead))
            elif block.instance_type not in type_names:
                issues.append(Issue(
                    file, f"{bkey}.instanceType", f"instance type {block.instance_type!r} is not in the GPU catalog",
                    "copy the block's instance type from EC2 (`hybridgpu catalog` lists the GPU types hybridgpu provisions)",
                ))
            elif resolved and block.instance_type not in resolved:
                issues.append(Issue(
                    file, f"{bkey}.instanceType",
                    f"NodePool {pool.name!r} may not launch {block.instance_type} (its types: {', '.join(sorted(resolved))}), so the block would go unused",
                    f"add {block.instance_type} to the pool's `instanceTypes` (or its family to `instanceFamilies`)",
                ))
            if block.end - CAPACITY_BLOCK_EXPIRY_LEAD <= now:
                state = "ended" if block.expired(now) else "is in its last 40 minutes"
                issues.append(Issue(
                    file, f"{bkey}.end",
                    f"Capacity Block {block.id} {state} (end {iso_utc(block.end)}, now {iso_utc(now)}): EC2 reclaims its instances and "
                    f"Karpenter deletes the nodes in it 40 minutes before the end, so NodePool {pool.name!r} depends on capacity that is gone",
                    "remove the block from `capacityBlocks` (and the pool if it has no other block), or buy a new block and list it",
                ))
        total = block_gpus(pool, catalog) or 0
        if pool.gpu_limit is not None and total and pool.gpu_limit > total:
            issues.append(Issue(
                file, f"{key}.gpuLimit",
                f"limit {pool.gpu_limit} is above the {total} GPUs its Capacity Blocks hold, so budgets and GPU ceilings would count GPUs that cannot launch",
                f"set `gpuLimit: {total}` (the blocks' instances x GPUs per instance)",
            ))
    return issues


def capacity_block_warnings(config: StackConfig, now: datetime | None = None) -> list[str]:
    """Warnings for Capacity Blocks that have not started: the pool launches nothing until their start.

    Args:
        config: a schema-valid stack configuration.
        now: the time to judge at (UTC); None: :func:`~hybridgpu.config.capacity_blocks.utc_now`
            (an invalid ``$HYBRIDGPU_NOW`` gives no warning here: the checks report it).

    Returns:
        One message per future block, naming the pool, the block and its window; empty otherwise.
    """
    if config.cloud is None:
        return []
    if now is None:
        try:
            now = utc_now()
        except ValueError:
            return []
    out = []
    for i, pool in enumerate(config.cloud.node_pools):
        for j, block in enumerate(pool.capacity_blocks):
            if block.future(now):
                out.append(
                    f"{CLOUD}.nodePools[{i}].capacityBlocks[{j}]: Capacity Block {block.id} of NodePool {pool.name!r} starts at "
                    f"{iso_utc(block.start)} (now {iso_utc(now)}); until then EC2 lists it as scheduled and Karpenter launches nothing into it"
                )
    return out
