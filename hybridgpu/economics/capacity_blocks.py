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

The offers file of ``hybridgpu cost plan --capacity-blocks FILE`` (:func:`read_offers_file`) holds
EC2's ``CapacityBlockOffering`` objects as ``DescribeCapacityBlockOfferings`` returns them (EC2 API
Reference, ``API_CapacityBlockOffering``, read 2026-11-27: ``capacityBlockOfferingId``, ``instanceType``,
``availabilityZone``, ``instanceCount``, ``startDate``, ``endDate``, ``capacityBlockDurationHours``,
``capacityBlockDurationMinutes``, ``upfrontFee`` (a decimal string), ``currencyCode``, ``tenancy``,
``ultraserverType``, ``ultraserverCount``): a list of them, a mapping ``capacityBlockOfferings: [...]``,
or the AWS CLI's JSON output as it is (``CapacityBlockOfferings`` with PascalCase keys).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import yaml
from pydantic import Field, StringConstraints, ValidationError, field_validator, model_validator

from hybridgpu.catalog import Catalog
from hybridgpu.config.base import Model
from hybridgpu.config.capacity_blocks import CAPACITY_BLOCK_EXPIRY_LEAD, MAX_BLOCK_DAYS, MAX_BLOCK_INSTANCES, iso_utc
from hybridgpu.config.models import NodePoolConfig
from hybridgpu.datafile import DataFileError, describe_yaml_error, load_unique_yaml
from hybridgpu.economics.demand import DemandProfile
from hybridgpu.economics.planner import CapacityPrices, Plan, PlanConstraints, PlanError, solve_plan
from hybridgpu.errors import FieldError, Issue, issues_from_validation

__all__ = [
    "BlockOffer",
    "BlockPlan",
    "CapacityBlockOffering",
    "MAX_OFFER_CHOICES",
    "OfferFileError",
    "block_capacity",
    "bought_blocks",
    "normalized",
    "offer_comparison",
    "plan_with_blocks",
    "read_offers_file",
    "residual_demand",
]

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
        One :class:`BlockOffer` per block (``bought=True``; fee ``upfrontFeeUsd``, 0 when unset; the whole hours of
        :func:`usable_hours`, as for an offer), in pool order; a block with no whole usable hour is left out.

    Raises:
        PlanError: a block of an instance type the catalog does not know (validation reports it first).
    """
    known = {t.name: t.gpu_count for t in catalog.instance_types}
    out = []
    for pool in pools:
        for block in pool.capacity_blocks:
            if block.instance_type not in known:
                raise PlanError(f"capacity block {block.id}: instance type {block.instance_type!r} is not in the GPU catalog")
            first, hours = usable_hours(block.start, block.end, profile_start)
            if hours < 1:  # shorter than one whole usable hour: serves nothing, and its fee is paid in every choice alike
                continue
            out.append(BlockOffer(block.id, first, hours, block.instance_count * known[block.instance_type],
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
        baseline: the plan with the bought blocks only (none of the offers), or None when that is
            infeasible; its alternatives are the simple choices without the offers.
    """

    blocks: tuple[BlockOffer, ...]
    plan: Plan
    block_usd: float
    total_usd: float
    exact: bool
    candidates: tuple[tuple[tuple[str, ...], float | None], ...]
    baseline: Plan | None = None


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
    baseline: Plan | None = None
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
            if not subset:
                baseline = plan
            tried.append((tuple(o.name for o in chosen), total))
            if best is None or total < best[0] - 1e-6:
                best = (total, len(subset), chosen, plan)
    if best is None:
        raise PlanError("no feasible plan with or without the capacity blocks; raise the On-Demand or spot cap, or allow a longer maximum wait")
    total, _, chosen, plan = best
    return BlockPlan(chosen, plan, sum(o.upfront_usd for o in chosen), total, constraints.max_wait_hours == 0, tuple(tried), baseline)


# --------------------------------------------------------------------------- the offers file of `cost plan --capacity-blocks`

#: What documents the offers file (named in fixes).
OFFERS_REFERENCE = "docs/economics.md#capacity-blocks-in-the-plan"
#: Key of the offers list, as the EC2 API names the DescribeCapacityBlockOfferings result.
OFFERS_KEY = "capacityBlockOfferings"


class OfferFileError(DataFileError):
    """The Capacity Block offers file is invalid; every issue names the file, the offer's key path and the fix."""

    what = "Capacity Block offers"


class CapacityBlockOffering(Model):
    """One EC2 ``CapacityBlockOffering`` (DescribeCapacityBlockOfferings; EC2 API Reference, read 2026-11-27)."""

    capacity_block_offering_id: Annotated[str, StringConstraints(pattern=r"^cb-[0-9a-f]{8,17}$")] = Field(
        description="The offering's id (`cb-...`). Required."
    )
    instance_type: str = Field(description="EC2 instance type of the block, e.g. `p5.48xlarge`. Required.")
    availability_zone: str | None = Field(default=None, description="Availability Zone of the block. Default: none (not used by the plan).")
    instance_count: int = Field(ge=1, le=MAX_BLOCK_INSTANCES, description="Instances in the block, 1..64. Required.")
    start_date: datetime = Field(description="Start of the block, ISO 8601 with a UTC offset, e.g. `2026-12-03T11:30:00Z`. Required.")
    end_date: datetime | None = Field(default=None, description="End of the block; must equal start + duration when given. Default: start + duration.")
    capacity_block_duration_hours: int = Field(ge=1, le=MAX_BLOCK_DAYS * 24, description="Whole hours of the block (1..4368). Required.")
    capacity_block_duration_minutes: int = Field(default=0, ge=0, le=59, description="Minutes besides the hours, 0..59. Default: 0.")
    upfront_fee: float = Field(ge=0, allow_inf_nan=False, description="Total price paid up front (EC2 gives a decimal string), in `currencyCode`. Required.")
    currency_code: Literal["USD"] = Field(default="USD", description="Currency of the fee; the plan is in USD. Default: `USD`.")
    tenancy: Literal["default", "dedicated"] | None = Field(default=None, description="Tenancy of the block. Default: none.")
    ultraserver_type: str | None = Field(default=None, description="EC2 UltraServer type of an UltraServer block. Default: none.")
    ultraserver_count: int | None = Field(default=None, description="UltraServers in an UltraServer block. Default: none.")

    @field_validator("start_date", "end_date")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.utcoffset() is None:
            raise ValueError(f"{value.isoformat()} has no time zone; copy the time as EC2 prints it, in UTC, e.g. 2026-12-03T11:30:00Z")
        return None if value is None else value.astimezone(UTC)

    @model_validator(mode="after")
    def _end(self) -> CapacityBlockOffering:
        if self.end_date is not None and self.end_date != self.start_date + self.duration:
            raise FieldError(
                "endDate",
                f"{iso_utc(self.end_date)} is not startDate + capacityBlockDurationHours/Minutes ({iso_utc(self.start_date + self.duration)})",
                "copy startDate, endDate and the duration of the same offering from EC2's output",
            )
        return self

    @property
    def duration(self) -> timedelta:
        """The block's length (``capacityBlockDurationHours`` + ``capacityBlockDurationMinutes``)."""
        return timedelta(hours=self.capacity_block_duration_hours, minutes=self.capacity_block_duration_minutes)

    @property
    def end(self) -> datetime:
        """The block's end (UTC)."""
        return self.start_date + self.duration


class CapacityBlockOfferings(Model):
    """The offers file: ``capacityBlockOfferings: [...]`` (a bare list is read as that list)."""

    capacity_block_offerings: list[CapacityBlockOffering] = Field(min_length=1, description="The offers to choose among (at most 6). Required.")


def _camel_keys(value: Any) -> Any:
    """The AWS CLI's PascalCase keys (``InstanceType``) as the API's member names (``instanceType``)."""
    if isinstance(value, Mapping):
        return {(k[:1].lower() + k[1:] if isinstance(k, str) else k): _camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_keys(v) for v in value]
    return value


def normalized(data: Any) -> Any:
    """An offers file's data as :class:`CapacityBlockOfferings` reads it: the AWS CLI's output (``CapacityBlockOfferings``,
    PascalCase keys) with the API's member names, a bare list as ``capacityBlockOfferings``; anything else unchanged."""
    if isinstance(data, Mapping) and "CapacityBlockOfferings" in data:
        data = _camel_keys(data)
    if isinstance(data, list):
        data = {OFFERS_KEY: data}
    return data


def usable_hours(start: datetime, end: datetime, profile_start: datetime) -> tuple[int, int]:
    """``(first hour, hours)`` of the demand profile's whole hours a block can serve.

    The usable window is ``[start, end - 40 min)``: Karpenter deletes a block's nodes 40 minutes before its end
    (:data:`~hybridgpu.config.capacity_blocks.CAPACITY_BLOCK_EXPIRY_LEAD`); only hours wholly inside it count, so
    a block starting at 11:30 serves from hour 12. ``hours`` may be 0 or negative for a window shorter than one hour.
    """
    zero = profile_start.astimezone(UTC)
    first = math.ceil((start - zero).total_seconds() / 3600)
    last = math.floor((end - CAPACITY_BLOCK_EXPIRY_LEAD - zero).total_seconds() / 3600)
    return first, last - first


def read_offers_file(path: Path, shown: str, *, catalog: Catalog, gpu_model: str, profile_start: datetime, profile_hours: int) -> list[BlockOffer]:
    """Read and check a Capacity Block offers file; the offers on the demand profile's hour axis.

    Args:
        path: the file (YAML or JSON).
        shown: the file as the user knows it, named in every issue.
        catalog: the instance catalog (GPUs per instance, GPU model).
        gpu_model: the GPU model the plan's cloud capacity has (an offer of another model cannot serve the demand).
        profile_start: UTC time of the demand profile's hour 0.
        profile_hours: hours of the demand profile.

    Returns:
        One :class:`BlockOffer` per offering (``name`` the offering id, the usable whole hours of
        :func:`usable_hours`, ``gpus`` instances x GPUs per instance, ``upfront_usd`` the fee), in file order.

    Raises:
        OfferFileError: a missing or unreadable file, YAML errors, schema errors, an instance type the catalog does not
            know or cannot provision, an UltraServer block, another GPU model than the plan's, a repeated offering, a
            window that serves no hour of the profile, or more than :data:`MAX_OFFER_CHOICES` offers; every problem at
            once, each with the key path (``capacityBlockOfferings[i].field``) and the fix.
    """
    text: str | None = None
    try:
        text = path.read_text()
        data = load_unique_yaml(text)
    except FileNotFoundError:
        raise OfferFileError([Issue(shown, None, "no such Capacity Block offers file", "give --capacity-blocks the path of a YAML or JSON file of offers "
                                    "(e.g. `aws ec2 describe-capacity-block-offerings ... --output json > offers.json`)", "file")]) from None
    except Exception as exc:  # noqa: BLE001 - YAML and OS errors alike become one issue
        detail = describe_yaml_error(exc, text) if isinstance(exc, yaml.YAMLError) else str(exc)
        raise OfferFileError([Issue(shown, None, f"not readable as YAML or JSON: {detail}", "correct the syntax at the position shown", "yaml")]) from None
    try:
        offers = CapacityBlockOfferings.model_validate(normalized(data))
    except ValidationError as exc:
        raise OfferFileError(issues_from_validation(exc, file=shown, root=CapacityBlockOfferings, reference=OFFERS_REFERENCE)) from None
    issues: list[Issue] = []
    seen: dict[str, int] = {}
    known = {t.name: t for t in catalog.instance_types}
    out: list[BlockOffer] = []
    zero = profile_start.astimezone(UTC)
    for i, offer in enumerate(offers.capacity_block_offerings):
        key = f"{OFFERS_KEY}[{i}]"
        oid = offer.capacity_block_offering_id
        if oid in seen:
            issues.append(Issue(shown, f"{key}.capacityBlockOfferingId", f"offering {oid} is already listed at {OFFERS_KEY}[{seen[oid]}]", "list each offering once"))
        seen.setdefault(oid, i)
        if offer.ultraserver_type is not None or offer.ultraserver_count is not None:
            issues.append(Issue(shown, f"{key}.ultraserverType", f"offering {oid} is an UltraServer block ({offer.ultraserver_type or 'UltraServer'}): "
                                "hybridgpu does not provision UltraServer topologies", "drop the offer, or ask EC2 for instance offerings (without --ultraserver-type)"))
        itype = known.get(offer.instance_type)
        if itype is None:
            refused = catalog.unsupported_family(offer.instance_type)
            if refused is not None:
                issues.append(Issue(shown, f"{key}.instanceType", f"instance type {offer.instance_type!r} cannot be provisioned: {refused.consequence}", refused.instead))
            else:
                issues.append(Issue(shown, f"{key}.instanceType", f"instance type {offer.instance_type!r} is not in the GPU catalog",
                                    "copy the offering's instance type from EC2 (`hybridgpu catalog` lists the GPU types hybridgpu provisions)"))
            continue
        if itype.gpu_model != gpu_model:
            issues.append(Issue(shown, f"{key}.instanceType", f"{offer.instance_type} has {itype.gpu_model} GPUs, but the plan's cloud capacity is {gpu_model}: "
                                "the demand is counted in GPUs of one model", f"plan with --instance-type {offer.instance_type} (or a type of the same GPU), or drop the offer"))
            continue
        first, hours = usable_hours(offer.start_date, offer.end, zero)
        lo, hi = max(first, 0), min(first + hours, profile_hours)
        if hours < 1 or lo >= hi:
            issues.append(Issue(
                shown, f"{key}.startDate",
                f"offering {oid} ({iso_utc(offer.start_date)} to {iso_utc(offer.end)}, usable until 40 minutes before its end) covers no whole hour of "
                f"the demand profile (hour 0 = {iso_utc(zero)}, {profile_hours} h)",
                "check --demand-start (the UTC time of the demand's hour 0), or drop the offer",
            ))
            continue
        out.append(BlockOffer(oid, first, hours, offer.instance_count * itype.gpu_count, float(offer.upfront_fee)))
    if len(offers.capacity_block_offerings) > MAX_OFFER_CHOICES:
        issues.append(Issue(shown, OFFERS_KEY, f"{len(offers.capacity_block_offerings)} offers; the plan chooses among at most {MAX_OFFER_CHOICES} "
                            f"(it solves one plan per subset: 2**{MAX_OFFER_CHOICES})", f"keep the {MAX_OFFER_CHOICES} offers cheapest per GPU-hour"))
    if issues:
        raise OfferFileError(issues)
    return out


def offer_comparison(offers: Sequence[BlockOffer], chosen: Sequence[BlockOffer], demand: DemandProfile, prices: CapacityPrices) -> list[dict[str, Any]]:
    """Each block against On-Demand and spot GPUs for the same hours, and what the chosen ones serve.

    Args:
        offers: every block of the plan (bought and offered), in order.
        chosen: the blocks the optimum holds (:attr:`BlockPlan.blocks`); they serve the demand in this order.
        demand: the hourly demand.
        prices: the plan's prices.

    Returns:
        Per block a dict: ``name``, ``alreadyBought``, ``chosen``, ``startHour``, ``hours`` (within the profile),
        ``gpus``, ``upfrontUsd``, ``usdPerGpuHour`` (the fee over its GPU-hours in the profile), ``onDemandUsd`` and
        ``spotUsd`` (its GPUs for the same hours at those prices; spot None when unpriced) and ``servedGpuHours``
        (demand it serves in the plan; 0 when not chosen).
    """
    left = demand.gpus.copy()
    served: dict[str, float] = {}
    for block in chosen:
        cap = block.capacity(demand.hours)
        take = np.minimum(left, cap)
        served[block.name] = float(take.sum())
        left -= take
    names = {b.name for b in chosen}
    rows = []
    for o in offers:
        gpu_hours = float(o.capacity(demand.hours).sum())
        spot = prices.spot_usd_per_productive_gpu_hour
        rows.append({
            "name": o.name, "alreadyBought": o.bought, "chosen": o.name in names, "startHour": o.start_hour,
            "hours": int(gpu_hours // o.gpus), "gpus": o.gpus, "upfrontUsd": o.upfront_usd,
            "usdPerGpuHour": o.upfront_usd / gpu_hours if gpu_hours else None,
            "onDemandUsd": gpu_hours * prices.on_demand_usd_per_gpu_hour, "spotUsd": None if spot is None else gpu_hours * spot,
            "servedGpuHours": served.get(o.name, 0.0),
        })
    return rows
