"""EC2 Capacity Blocks for ML as a NodePool's capacity: the block's reservation, size and window.

A Capacity Block is an EC2 capacity reservation bought for a fixed window (AWS: 1 to 14 days in
1-day steps, or up to 182 days in 7-day steps; it starts and ends at 11:30 UTC). A NodePool with
``capacityBlocks`` launches only into those reservations: hybridgpu renders the NodePool with
``karpenter.sh/capacity-type: reserved`` and ``karpenter.k8s.aws/capacity-reservation-type:
capacity-block`` and the reservation ids, and adds the ids to the ``capacityReservationSelectorTerms``
of the pool's EC2NodeClass (:mod:`hybridgpu.render.karpenter`).

Upstream behaviour relied on (aws/karpenter-provider-aws v1.14.1, read 2026-11-27):

* ``pkg/providers/capacityreservation/types.go``: Karpenter lists only reservations in EC2 state
  ``active``, so a block before its start (state ``scheduled``) or after its end (``expired``)
  offers nothing: the pool launches no node there.
* ``pkg/providers/instancetype/types.go``: a reserved offering carries the labels
  ``karpenter.k8s.aws/capacity-reservation-id`` and ``karpenter.k8s.aws/capacity-reservation-type``
  (``default`` or ``capacity-block``); both are well-known labels (``pkg/apis/v1/labels.go``), so a
  NodePool may require them.
* ``pkg/apis/v1/ec2nodeclass_status.go`` and ``pkg/controllers/capacityreservation/expiration``: 40
  minutes before a block's end Karpenter marks it ``expiring`` and deletes the NodeClaims launched
  into it (10 minutes before EC2 starts reclaiming the instances).

The shape of an offer (what to copy into a block entry after buying) is that of pulumi-aws 7.51.1
``aws.ec2.get_capacity_block_offering``: arguments ``instance_type``, ``instance_count``,
``capacity_duration_hours``, ``start_date_range``/``end_date_range``; result ``upfront_fee``,
``currency_code``, ``availability_zone``, ``capacity_block_offering_id``.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.config.base import Model
from hybridgpu.errors import FieldError

__all__ = ["CAPACITY_BLOCK_EXPIRY_LEAD", "CapacityBlock", "MAX_BLOCK_DAYS", "NOW_ENV", "parse_utc_time", "utc_now"]

#: Longest Capacity Block AWS sells, in days (182 days in 7-day steps; EC2 User Guide, "Capacity
#: Blocks for ML", read 2026-11-27).
MAX_BLOCK_DAYS = 182
#: Most instances in one Capacity Block (EC2 User Guide, "Capacity Blocks for ML": 1 to 64).
MAX_BLOCK_INSTANCES = 64
#: How long before a block's end Karpenter deletes the nodes in it (v1.14.1
#: ``capacityReservationExpirationPeriod``, ``pkg/apis/v1/ec2nodeclass_status.go``).
CAPACITY_BLOCK_EXPIRY_LEAD = timedelta(minutes=40)
#: Environment variable that sets "now" for the capacity-block window checks (ISO 8601 UTC,
#: e.g. ``2026-12-01T00:00:00Z``): a clock seam for tests and for validating a stack as of a date.
NOW_ENV = "HYBRIDGPU_NOW"


def utc_now() -> datetime:
    """The current time in UTC, or the time in ``$HYBRIDGPU_NOW`` when set (:data:`NOW_ENV`).

    Returns:
        A timezone-aware UTC datetime.

    Raises:
        ValueError: ``$HYBRIDGPU_NOW`` is set but is not an ISO 8601 time with a UTC offset.
    """
    raw = os.environ.get(NOW_ENV, "").strip()
    if not raw:
        return datetime.now(UTC)
    return parse_utc_time(raw, f"${NOW_ENV}={raw!r}", f"{NOW_ENV}=2026-12-01T00:00:00Z")


def parse_utc_time(raw: str, what: str, example: str) -> datetime:
    """An ISO 8601 time with a UTC offset (``Z`` or ``+hh:mm``), as given on the command line or in the environment.

    Args:
        raw: the text, e.g. ``2026-12-01T00:00:00Z``.
        what: how the user wrote it, for the error (``--start '2026-12-01'``).
        example: the same setting written right, for the fix (``--start 2026-12-01T11:30:00Z``).

    Returns:
        A timezone-aware UTC datetime.

    Raises:
        ValueError: not an ISO 8601 time, or one without a UTC offset (naming ``what`` and ``example``).
    """
    try:
        value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{what} is not an ISO 8601 time; use e.g. {example}") from None
    if value.tzinfo is None:
        raise ValueError(f"{what} has no UTC offset; use e.g. {example}")
    return value.astimezone(UTC)


class CapacityBlock(Model):
    """One EC2 Capacity Block for ML a NodePool launches into (as bought: its reservation id, size and window)."""

    id: Annotated[str, StringConstraints(pattern=r"^cr-[0-9a-f]{8,17}$")] = Field(
        description="Capacity reservation id of the block (`cr-...`, from `aws ec2 describe-capacity-reservations`). Required."
    )
    instance_type: str = Field(description="EC2 instance type of the block, e.g. `p5.48xlarge`; one of the pool's instance types. Required.")
    instance_count: int = Field(ge=1, le=MAX_BLOCK_INSTANCES, description="Instances in the block, 1..64. Required.")
    start: datetime = Field(description="Start of the block in UTC, ISO 8601 with `Z`, e.g. `2026-12-01T11:30:00Z`. Required.")
    end: datetime = Field(description="End of the block in UTC, ISO 8601 with `Z`, e.g. `2026-12-08T11:30:00Z`; after `start`. Required.")
    upfront_fee_usd: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="What the block cost, USD (the offering's `upfrontFee`), for the capacity plan and cost figures. Default: none (unpriced).",
    )

    @field_validator("start", "end")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        offset = value.utcoffset()
        if offset is None:
            raise ValueError(f"{value.isoformat()} has no time zone; write the block's time in UTC with `Z`, as EC2 shows it, e.g. 2026-12-01T11:30:00Z")
        if offset != timedelta(0):
            raise ValueError(f"{value.isoformat()} is not in UTC; write the block's time in UTC with `Z`, as EC2 shows it, e.g. 2026-12-01T11:30:00Z")
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _window(self) -> CapacityBlock:
        if self.end <= self.start:
            raise FieldError("end", f"{_iso(self.end)} is not after start {_iso(self.start)}", "copy the block's end date from EC2 (it is after its start)")
        if self.end - self.start > timedelta(days=MAX_BLOCK_DAYS):
            days = (self.end - self.start).days
            raise FieldError(
                "end",
                f"the window is {days} days; EC2 sells Capacity Blocks of at most {MAX_BLOCK_DAYS} days",
                "copy start and end from the block as EC2 lists it (describe-capacity-reservations)",
            )
        return self

    def gpus(self, gpus_per_instance: int) -> int:
        """GPUs the block holds: ``instance_count x gpus_per_instance`` (count)."""
        return self.instance_count * gpus_per_instance

    def expired(self, now: datetime) -> bool:
        """True when the block has ended at ``now`` (``end <= now``): EC2 has reclaimed its instances."""
        return self.end <= now

    def future(self, now: datetime) -> bool:
        """True when the block has not started at ``now`` (``start > now``): it offers no capacity yet."""
        return self.start > now

    def active_at(self, now: datetime) -> bool:
        """True when the block holds capacity at ``now`` (``start <= now < end``)."""
        return self.start <= now < self.end


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_utc(value: datetime) -> str:
    """``value`` as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC), the spelling the stack files use."""
    return _iso(value)
