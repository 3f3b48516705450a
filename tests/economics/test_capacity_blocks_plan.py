"""Capacity Blocks as a purchase option of the capacity plan (hybridgpu.economics.capacity_blocks).

The offer's shape is pulumi-aws 7.51.1 ``aws.ec2.get_capacity_block_offering`` (``pulumi_aws/ec2/
get_capacity_block_offering.py``, GetCapacityBlockOfferingResult, read 2026-11-27): checked against the installed SDK.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import numpy as np
import pytest

from hybridgpu.economics.capacity_blocks import BlockOffer, block_capacity, plan_with_blocks, residual_demand
from hybridgpu.economics.demand import DemandProfile
from hybridgpu.economics.planner import CapacityPrices, PlanConstraints, PlanError

PRICES = CapacityPrices(on_demand_usd_per_gpu_hour=10.0)
LP = PlanConstraints(integer=False)


def _demand() -> DemandProfile:
    d = np.zeros(10)
    d[2:6] = 16  # 64 GPU-hours, 640 USD On-Demand
    return DemandProfile(d, np.zeros(10))


def test_block_serves_work_that_does_not_checkpoint_first():
    demand = DemandProfile(np.array([10.0, 10.0]), np.array([4.0, 4.0]))
    left = residual_demand(demand, np.array([8.0, 3.0]))
    assert left.gpus.tolist() == [2.0, 7.0]
    assert left.checkpointable.tolist() == [2.0, 4.0]  # hour 0: the 6 that do not checkpoint, then 2 that do


def test_window_is_clipped_to_the_profile():
    assert block_capacity([BlockOffer("a", -2, 4, 8, 0.0), BlockOffer("b", 9, 5, 8, 0.0)], 10).tolist() == [8, 8] + [0] * 7 + [8]


def test_buys_the_block_only_when_cheaper_than_on_demand_in_its_window():
    cheap, dear = BlockOffer("cb-cheap", 2, 4, 16, 500.0), BlockOffer("cb-dear", 2, 4, 16, 700.0)
    result = plan_with_blocks(_demand(), PRICES, LP, [cheap, dear])
    assert [b.name for b in result.blocks] == ["cb-cheap"]
    assert result.total_usd == pytest.approx(500.0) and result.exact
    assert dict(result.candidates)[()] == pytest.approx(640.0)
    assert plan_with_blocks(_demand(), PRICES, LP, [dear]).blocks == ()


def test_a_block_outside_the_demand_is_not_bought_but_a_bought_one_is_paid():
    late = BlockOffer("cb-late", 6, 4, 16, 100.0)
    assert plan_with_blocks(_demand(), PRICES, LP, [late]).total_usd == pytest.approx(640.0)
    paid = plan_with_blocks(_demand(), PRICES, LP, [BlockOffer("cr-late", 6, 4, 16, 100.0, bought=True)])
    assert paid.total_usd == pytest.approx(740.0) and paid.block_usd == 100.0


def test_with_queueing_the_plan_is_an_upper_bound():
    result = plan_with_blocks(_demand(), PRICES, PlanConstraints(integer=False, max_wait_hours=2), [BlockOffer("cb", 2, 4, 16, 500.0)])
    assert not result.exact and result.total_usd == pytest.approx(500.0)


def test_offer_from_the_data_source_result():
    from pulumi_aws.ec2 import GetCapacityBlockOfferingResult

    fields = {"capacity_block_offering_id", "instance_count", "capacity_duration_hours", "start_date_range", "upfront_fee", "currency_code"}
    assert fields <= {name for name in dir(GetCapacityBlockOfferingResult) if not name.startswith("_")}
    result = SimpleNamespace(capacity_block_offering_id="cb-0123456789abcdef0", instance_count=2, capacity_duration_hours=24,
                             start_date_range="2026-12-01T11:30:00Z", upfront_fee="1234.56", currency_code="USD")
    offer = BlockOffer.from_offering(result, gpus_per_instance=8, profile_start=datetime(2026, 12, 1, tzinfo=UTC))
    assert (offer.start_hour, offer.hours, offer.gpus, offer.upfront_usd) == (11, 24, 16, 1234.56)
    assert offer.usd_per_gpu_hour == pytest.approx(1234.56 / 384)
    with pytest.raises(PlanError, match="EUR"):
        BlockOffer.from_offering({**vars(result), "currency_code": "EUR"}, gpus_per_instance=8, profile_start=datetime(2026, 12, 1, tzinfo=UTC))
    with pytest.raises(PlanError, match="repeat"):
        plan_with_blocks(_demand(), PRICES, LP, [offer, offer])


def test_blocks_declared_in_the_stack_are_bought_offers():
    from hybridgpu.catalog import load_catalog
    from hybridgpu.config.models import NodePoolConfig
    from hybridgpu.economics.capacity_blocks import bought_blocks

    pool = NodePoolConfig.model_validate({"name": "b", "capacityTypes": ["reserved"], "instanceTypes": ["p5.48xlarge"], "gpuLimit": 16,
                                          "capacityBlocks": [{"id": "cr-0123456789abcdef0", "instanceType": "p5.48xlarge", "instanceCount": 2,
                                                              "start": "2026-12-01T11:30:00Z", "end": "2026-12-02T11:30:00Z", "upfrontFeeUsd": 900.0}]})
    (offer,) = bought_blocks([pool], load_catalog(), datetime(2026, 12, 1, tzinfo=UTC))
    # whole hours inside [11:30, 11:30 next day - 40 min): 12:00 to 10:00, as for an offer (usable_hours)
    assert (offer.name, offer.start_hour, offer.hours, offer.gpus, offer.upfront_usd, offer.bought) == ("cr-0123456789abcdef0", 12, 22, 16, 900.0, True)
