"""EC2 Capacity Blocks for ML as a purchase option of the capacity plan: fixed windows, paid upfront.

A Capacity Block gives ``gpus`` GPUs during a fixed window of the demand profile (hours
``[start_hour, start_hour + hours)``) for an upfront fee; outside the window it gives nothing. The
planner (:func:`hybridgpu.economics.planner.solve_plan`) knows on-prem GPUs, commitments, spot and
On-Demand; :func:`plan_with_blocks` adds blocks on top of it: for every subset of the offered blocks
(the ones already bought always in), the blocks serve first in their windows, the plan is solved for
what is left, and the cheapest total (plan + upfront fees) wins.

Exactness. With no queueing (``max_wait_hours == 0``) this is the optimum of the joint problem: once
a block is bought its GPUs cost nothing more per hour, so serving as much as possible with them is
optimal in every hour for any on-prem and commitment sizes; and serving the work that does not
checkpoint first is optimal too (it is the work with fewer alternatives: anything spot or a backlog
could take, the block could take instead, not the reverse). Hours are independent given the
capacities, so the residual problem's optimum plus the fees is the joint optimum for that subset, and
the enumeration covers every subset. With queueing, the residual plan is a feasible plan (an upper
bound): checkpointing work queued from before a window could move into it in the joint model.
:attr:`BlockPlan.exact` says which.

The offer shape follows pulumi-aws 7.51.1 ``aws.ec2.get_capacity_block_offering`` (read 2026-11-27):
arguments ``instance_type``, ``instance_count``, ``capacity_duration_hours``, ``start_date_range``,
``end_date_range``; result ``upfront_fee`` (a decimal string), ``currency_code``,
``capacity_block_offering_id`` and the same fields back. Nothing here imports Pulumi.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from hybridgpu.catalog import Catalog
from hybridgpu.config.models import NodePoolConfig
from hybridgpu.economics.demand import DemandProfile
from hybridgpu.economics.planner import CapacityPrices, Plan, PlanConstraints, PlanError, solve_plan

__all__ = ["BlockOffer", "BlockPlan", "MAX_OFFER_CHOICES", "block_capacity", "bought_blocks", "plan_with_blocks", "residual_demand"]

#: Most offers :func:`plan_with_blocks` chooses among (it solves one plan per subset: 2**6 = 64 plans).
MAX_OFFER_CHOICES = 6


@dataclass(frozen=True)
class BlockOffer:
    """One Capacity Block, offered or bought, on the demand profile's hour axis.

    Attributes:
        name: the offering or reservation id (``cb-...``/``cr-...``), for reports.
        start_hour: first hour of the window, as an index into the demand profile (may be < 0 or
            beyond the profile: only the overlap counts).
        hours: window length in hours (> 0).
        gpus: GPUs the block holds (instances x GPUs per instance, > 0).
        upfront_usd: the fee, USD, paid whether the GPUs are used or not (>= 0).
        bought: True for a block already bought (always part of the plan; its fee is counted).

    Raises:
        PlanError: a window of no hours, no GPUs, or a negative or non-finite fee.
    """

    name: str
    start_hour: int
    hours: int
    gpus: int
    upfront_usd: float
    bought: bool = False

    def __post_init__(self) -> None:
        if self.hours <= 0 or self.gpus <= 0:
            raise PlanError(f"capacity block {self.name}: needs hours > 0 and GPUs > 0, got {self.hours} h and {self.gpus} GPUs")
        if not math.isfinite(self.upfront_usd) or self.upfront_usd < 0:
            raise PlanError(f"capacity block {self.name}: upfront fee must be a finite number >= 0 USD, got {self.upfront_usd}")

    @property
    def usd_per_gpu_hour(self) -> float:
        """The fee per GPU-hour of the window (USD), comparable with On-Demand prices."""
        return self.upfront_usd / (self.gpus * self.hours)

    def capacity(self, horizon: int) -> np.ndarray:
        """GPUs the block holds in each hour of a ``horizon``-hour profile (0 outside the window)."""
        out = np.zeros(horizon)
        lo, hi = max(self.start_hour, 0), min(self.start_hour + self.hours, horizon)
        if lo < hi:
            out[lo:hi] = self.gpus
        return out

    @classmethod
    def from_offering(cls, offering: Mapping[str, Any] | Any, *, gpus_per_instance: int, profile_start: datetime, bought: bool = False) -> BlockOffer:
        """A block from a ``get_capacity_block_offering`` result (an object with its attributes, or a mapping).

        Args:
            offering: reads ``capacity_block_offering_id``, ``instance_count``, ``capacity_duration_hours``,
                ``start_date_range`` (ISO 8601, the block's start), ``upfront_fee`` and ``currency_code``.
            gpus_per_instance: GPUs of the offering's instance type (from the catalog).
            profile_start: UTC time of the demand profile's hour 0.
            bought: whether the block is already bought.

        Raises:
            PlanError: a currency other than USD, or a missing or malformed field (named).
        """

        def get(key: str) -> Any:
            value = offering.get(key) if isinstance(offering, Mapping) else getattr(offering, key, None)
            if value is None:
                raise PlanError(f"capacity block offering: {key} is missing")
            return value

        currency = str(get("currency_code"))
        if currency != "USD":
            raise PlanError(f"capacity block offering {get('capacity_block_offering_id')}: fee in {currency}; the plan is in USD")
        try:
            start = datetime.fromisoformat(str(get("start_date_range")).replace("Z", "+00:00"))
            fee = float(get("upfront_fee"))
            count, hours = int(get("instance_count")), int(get("capacity_duration_hours"))
        except ValueError as exc:
            raise PlanError(f"capacity block offering: {exc}") from None
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        offset = (start - profile_start.astimezone(UTC)).total_seconds() / 3600
        return cls(str(get("capacity_block_offering_id")), math.floor(offset), hours, count * gpus_per_instance, fee, bought)


def bought_blocks(pools: Sequence[NodePoolConfig], catalog: Catalog, profile_start: datetime) -> list[BlockOffer]:
    """The Capacity Blocks a stack's NodePools declare (``capacityBlocks``), as bought offers on the profile's hour axis.

    Args:
        pools: the stack's NodePools (``hybridgpu:cloud.nodePools``).
        catalog: the instance catalog (GPUs per instance of each block's type).
        profile_start: UTC time of the demand profile's hour 0.

    Returns:
        One :class:`BlockOffer` per block (``bought=True``; fee ``upfrontFeeUsd``, 0 when unset), in pool order.

    Raises:
        PlanError: a block of an instance type the catalog does not know (validation reports it first).
    """
    known = {t.name: t.gpu_count for t in catalog.instance_types}
    out = []
    for pool in pools:
        for block in pool.capacity_blocks:
            if block.instance_type not in known:
                raise PlanError(f"capacity block {block.id}: instance type {block.instance_type!r} is not in the GPU catalog")
            start = (block.start - profile_start.astimezone(UTC)).total_seconds() / 3600
            hours = math.ceil((block.end - block.start).total_seconds() / 3600)
            out.append(BlockOffer(block.id, math.floor(start), hours, block.instance_count * known[block.instance_type],
                                  float(block.upfront_fee_usd or 0.0), bought=True))
    return out


def block_capacity(offers: Sequence[BlockOffer], horizon: int) -> np.ndarray:
    """GPUs all ``offers`` hold together in each hour of a ``horizon``-hour profile."""
    total = np.zeros(horizon)
    for offer in offers:
        total += offer.capacity(horizon)
    return total


def residual_demand(demand: DemandProfile, capacity: np.ndarray) -> DemandProfile:
    """What is left of ``demand`` after ``capacity`` GPUs serve each hour, the work that does not checkpoint first.

    Returns:
        A :class:`DemandProfile` of the same length (``source`` says blocks were subtracted).
    """
    d, c = demand.gpus, demand.checkpointable
    n = d - c
    left_n = np.maximum(n - capacity, 0.0)
    left_c = np.maximum(c - np.maximum(capacity - n, 0.0), 0.0)
    return DemandProfile(left_n + left_c, left_c, source=f"{demand.source} less capacity blocks".strip())


@dataclass(frozen=True)
class BlockPlan:
    """The cheapest plan with Capacity Blocks.

    Attributes:
        blocks: the blocks in the plan (the bought ones and the chosen offers).
        plan: the plan of the demand the blocks leave (:func:`~hybridgpu.economics.planner.solve_plan`).
        block_usd: the blocks' upfront fees (USD).
        total_usd: ``plan.cost["total"] + block_usd`` (USD).
        exact: True when this is the joint optimum (no queueing); False: a feasible upper bound.
        candidates: ``(names of the blocks, total USD or None when infeasible)`` for every subset tried.
    """

    blocks: tuple[BlockOffer, ...]
    plan: Plan
    block_usd: float
    total_usd: float
    exact: bool
    candidates: tuple[tuple[tuple[str, ...], float | None], ...]


def plan_with_blocks(demand: DemandProfile, prices: CapacityPrices, constraints: PlanConstraints | None = None,
                     offers: Sequence[BlockOffer] = (), *, time_limit_seconds: float = 60.0) -> BlockPlan:
    """The cheapest plan over every subset of the offered blocks (bought blocks always in), see the module docstring.

    Args:
        demand: hourly demand.
        prices: prices of the other capacity kinds.
        constraints: the plan's limits (default: none).
        offers: blocks on the profile's hour axis, bought or offered; at most :data:`MAX_OFFER_CHOICES` not bought.
        time_limit_seconds: HiGHS time limit per plan (s).

    Returns:
        The :class:`BlockPlan`; on ties the subset with fewer blocks, then the first tried.

    Raises:
        PlanError: more than :data:`MAX_OFFER_CHOICES` offers to choose among, repeated names, or no subset
            gives a feasible plan.
    """
    constraints = constraints or PlanConstraints()
    names = [o.name for o in offers]
    if len(set(names)) != len(names):
        raise PlanError(f"capacity blocks repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
    bought = [o for o in offers if o.bought]
    choices = [o for o in offers if not o.bought]
    if len(choices) > MAX_OFFER_CHOICES:
        raise PlanError(f"{len(choices)} capacity block offers to choose among; at most {MAX_OFFER_CHOICES} (one plan per subset)")
    best: tuple[float, int, tuple[BlockOffer, ...], Plan] | None = None
    tried: list[tuple[tuple[str, ...], float | None]] = []
    for size in range(len(choices) + 1):
        for subset in itertools.combinations(choices, size):
            chosen = (*bought, *subset)
            fees = sum(o.upfront_usd for o in chosen)
            try:
                plan = solve_plan(residual_demand(demand, block_capacity(chosen, demand.hours)), prices, constraints,
                                  time_limit_seconds=time_limit_seconds)
            except PlanError:
                tried.append((tuple(o.name for o in chosen), None))
                continue
            total = plan.cost["total"] + fees
            tried.append((tuple(o.name for o in chosen), total))
            if best is None or total < best[0] - 1e-6:
                best = (total, len(subset), chosen, plan)
    if best is None:
        raise PlanError("no feasible plan with or without the capacity blocks; raise the On-Demand or spot cap, or allow a longer maximum wait")
    total, _, chosen, plan = best
    return BlockPlan(chosen, plan, sum(o.upfront_usd for o in chosen), total, constraints.max_wait_hours == 0, tuple(tried))
