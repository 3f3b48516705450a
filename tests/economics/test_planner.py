"""The capacity planner: optimality against the simple alternatives, feasibility, exact aggregation, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.economics.demand import DemandProfile, generate_demand
from hybridgpu.economics.planner import (
    CapacityPrices,
    Dispatch,
    PlanConstraints,
    PlanError,
    alternatives,
    check_dispatch,
    dispatch_cost,
    dispatch_for_capacity,
    solve_plan,
)
from hybridgpu.economics.prices import load_economics_data
from hybridgpu.economics.report import plan_prices


def packaged_prices(onprem: bool = True) -> CapacityPrices:
    data = load_economics_data()
    prices, _, _ = plan_prices(data, "p5.48xlarge", "H100-80GB" if onprem else None)
    return prices


@st.composite
def problems(draw):
    hours = draw(st.integers(min_value=1, max_value=60))
    gpus = np.array(draw(st.lists(st.integers(min_value=0, max_value=40), min_size=hours, max_size=hours)), dtype=float)
    frac = np.array(draw(st.lists(st.floats(min_value=0, max_value=1), min_size=hours, max_size=hours)))
    demand = DemandProfile(gpus, np.floor(gpus * frac))
    od = draw(st.floats(min_value=0.5, max_value=10))
    spot = draw(st.one_of(st.none(), st.floats(min_value=0.05, max_value=1.2)))
    commitments = draw(st.lists(st.floats(min_value=0.2, max_value=1.0), max_size=2))
    onprem = draw(st.one_of(st.none(), st.floats(min_value=0.1, max_value=1.2)))
    prices = CapacityPrices(
        on_demand_usd_per_gpu_hour=od,
        spot_usd_per_productive_gpu_hour=None if spot is None else spot * od,
        commitments=tuple((name, f * od) for name, f in zip(("reserved-1y", "reserved-3y"), commitments)),
        onprem_fixed_usd_per_gpu_hour=None if onprem is None else onprem * od,
        onprem_usd_per_used_gpu_hour=draw(st.floats(min_value=0, max_value=0.2)),
        onprem_unit_gpus=draw(st.sampled_from([1, 4, 8])),
        commitment_unit_gpus=draw(st.sampled_from([1, 8])),
    )
    constraints = PlanConstraints(
        max_wait_hours=draw(st.sampled_from([0, 0, 2, 5])),
        spot_max_gpus=draw(st.one_of(st.none(), st.integers(min_value=0, max_value=30).map(float))),
        integer=draw(st.booleans()),
    )
    return demand, prices, constraints


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_plan_never_costs_more_than_any_simple_alternative(problem):
    demand, prices, constraints = problem
    plan = solve_plan(demand, prices, constraints)
    assert check_dispatch(demand, prices, constraints, plan.dispatch) == []
    assert plan.cost["total"] == pytest.approx(plan.objective, rel=1e-6, abs=1e-4)
    feasible = [a for a in plan.alternatives if a.dispatch is not None]
    assert feasible  # all On-Demand is always feasible without an On-Demand cap
    for alt in feasible:
        assert check_dispatch(demand, prices, constraints, alt.dispatch) == [], alt.name
        assert alt.cost == dispatch_cost(prices, alt.dispatch)
        assert plan.cost["total"] <= alt.total * (1 + 1e-7) + 1e-4, (alt.name, plan.cost, alt.cost)


@settings(max_examples=30, deadline=None)
@given(problems())
def test_merging_identical_hours_is_exact(problem):
    demand, prices, constraints = problem
    constraints = PlanConstraints(spot_max_gpus=constraints.spot_max_gpus, integer=constraints.integer)
    merged = solve_plan(demand, prices, constraints, aggregate=True)
    hourly = solve_plan(demand, prices, constraints, aggregate=False)
    assert merged.aggregated and not hourly.aggregated
    assert merged.cost["total"] == pytest.approx(hourly.cost["total"], rel=1e-7, abs=1e-4)
    assert merged.variables <= hourly.variables


def test_waiting_never_costs_more_and_shifts_work():
    demand = generate_demand(hours=24 * 14, base_gpus=20, seed=3)
    prices = packaged_prices()
    costs = [solve_plan(demand, prices, PlanConstraints(max_wait_hours=w)).cost["total"] for w in (0, 4, 24)]
    assert costs[0] >= costs[1] >= costs[2]
    assert costs[2] < costs[0]  # a day of slack lets checkpointing work fill the owned GPUs at night
    plan = solve_plan(demand, prices, PlanConstraints(max_wait_hours=24))
    assert plan.dispatch.backlog.max() > 0
    assert check_dispatch(demand, prices, PlanConstraints(max_wait_hours=24), plan.dispatch) == []


def test_plan_on_the_sample_profile_beats_every_alternative(root):
    from hybridgpu.economics.demand import load_demand_csv

    demand = load_demand_csv(root / "examples" / "demand" / "sample.csv")
    assert demand.hours == 8760
    plan = solve_plan(demand, packaged_prices(), PlanConstraints())
    savings = plan.savings()
    assert set(savings) == {"all On-Demand", "all committed at peak", "on-prem sized to peak", "reserve the floor"}
    assert all(s is not None and s > 0 for s in savings.values()), savings
    # Spot only ever serves checkpointing work.
    assert (plan.dispatch.spot <= demand.checkpointable + 1e-6).all()


def test_only_the_cheapest_commitment_is_bought():
    demand = DemandProfile(np.full(48, 16.0), np.zeros(48))
    prices = CapacityPrices(10.0, None, (("reserved-1y", 7.0), ("reserved-3y", 4.0)), None, commitment_unit_gpus=8)
    plan = solve_plan(demand, prices)
    assert plan.dispatch.commitment_gpus == {"reserved-1y": 0.0, "reserved-3y": 16.0}
    assert plan.cost["total"] == pytest.approx(16 * 4.0 * 48)


def test_spot_serves_only_checkpointing_work():
    # 10 GPUs of which 4 checkpoint; spot is cheap, so exactly the 4 go to spot.
    demand = DemandProfile(np.full(5, 10.0), np.full(5, 4.0))
    prices = CapacityPrices(10.0, 2.0)
    plan = solve_plan(demand, prices)
    assert plan.dispatch.spot.tolist() == [4.0] * 5
    assert plan.dispatch.on_demand.tolist() == [6.0] * 5


def test_checker_rejects_a_dispatch_that_puts_other_work_on_spot():
    demand = DemandProfile(np.full(3, 10.0), np.full(3, 4.0))
    prices = CapacityPrices(10.0, 2.0)
    bad = Dispatch(0.0, {}, np.zeros(3), np.zeros(3), np.zeros(3), np.full(3, 10.0), np.zeros(3))
    problems_found = check_dispatch(demand, prices, PlanConstraints(), bad)
    assert any("does not checkpoint" in p for p in problems_found)


def test_checker_rejects_waiting_longer_than_allowed():
    demand = DemandProfile(np.array([4.0, 0.0, 0.0, 0.0]), np.array([4.0, 0.0, 0.0, 0.0]))
    prices = CapacityPrices(10.0, 2.0)
    late = Dispatch(0.0, {}, np.zeros(4), np.zeros(4), np.array([0, 0, 0, 4.0]), np.zeros(4), np.array([4.0, 4.0, 4.0, 0.0]))
    assert check_dispatch(demand, prices, PlanConstraints(max_wait_hours=3), late) == []
    assert any("longer than 2 h" in p for p in check_dispatch(demand, prices, PlanConstraints(max_wait_hours=2), late))


def test_on_demand_cap_makes_the_plan_buy_capacity_or_fail():
    demand = DemandProfile(np.array([8.0, 24.0, 8.0]), np.zeros(3))
    prices = CapacityPrices(10.0, None, (("reserved-3y", 6.0),), None, commitment_unit_gpus=8)
    plan = solve_plan(demand, prices, PlanConstraints(on_demand_max_gpus=10))
    assert plan.dispatch.commitment_gpus["reserved-3y"] == 16.0
    alt = {a.name: a for a in plan.alternatives}
    assert alt["all On-Demand"].dispatch is None and alt["all On-Demand"].total is None
    no_commitments = CapacityPrices(10.0)
    with pytest.raises(PlanError, match="no feasible plan"):
        solve_plan(demand, no_commitments, PlanConstraints(on_demand_max_gpus=10))


def test_dispatch_for_capacity_fills_commitments_then_onprem_then_cloud():
    demand = DemandProfile(np.array([0.0, 5.0, 20.0]), np.array([0.0, 5.0, 10.0]))
    prices = CapacityPrices(10.0, 3.0, (("reserved-3y", 5.0),), 4.0, 0.1, onprem_unit_gpus=4, commitment_unit_gpus=4)
    d = dispatch_for_capacity(demand, prices, PlanConstraints(), 4.0, {"reserved-3y": 4.0})
    assert d.committed_used.tolist() == [0, 4, 4]
    assert d.onprem_used.tolist() == [0, 1, 4]
    assert d.spot.tolist() == [0, 0, 10]  # the 10 checkpointing GPUs above the owned 8
    assert d.on_demand.tolist() == [0, 0, 2]
    assert [a.name for a in alternatives(demand, prices, PlanConstraints())] == [
        "all On-Demand", "all committed at peak", "on-prem sized to peak", "reserve the floor"]


@pytest.mark.parametrize(
    "kwargs, match",
    [({"on_demand_usd_per_gpu_hour": -1.0}, "finite numbers >= 0"), ({"on_demand_usd_per_gpu_hour": 1.0, "onprem_unit_gpus": 0}, "units")],
)
def test_bad_prices_are_refused(kwargs, match):
    with pytest.raises(PlanError, match=match):
        CapacityPrices(**kwargs)


def test_bad_constraints_are_refused():
    with pytest.raises(PlanError, match="max_wait_hours"):
        PlanConstraints(max_wait_hours=-1)
    with pytest.raises(PlanError, match="spot_max_gpus"):
        PlanConstraints(spot_max_gpus=float("nan"))


def test_subnormal_price_does_not_stall_the_solver():
    # Found by the property test: a 5e-324 USD busy-power price made HiGHS hit its time limit on
    # a 41-hour model; coefficients below 1e-9 USD are now dropped before solving.
    g = np.array([26, 0, 27, 21, 28, 26, 36, 26, 15, 23, 0, 26, 0, 0, 6, 19, 33, 27, 35, 15, 9, 17, 34, 11, 16, 29, 16, 6, 16, 38, 35,
                  32, 39, 35, 28, 31, 8, 19, 37, 23, 10], dtype=float)
    c = np.array([24, 0, 13, 0, 22, 11, 16, 21, 8, 12, 0, 25, 0, 0, 0, 2, 31, 13, 28, 6, 8, 0, 7, 0, 0, 3, 0, 0, 3, 5, 11, 13, 27, 23, 1,
                  0, 4, 18, 0, 20, 9], dtype=float)
    prices = CapacityPrices(5.596739003299503, None, (("reserved-1y", 1.7052212582514983), ("reserved-3y", 4.496509252574077)),
                            4.541085005006774, 5e-324, onprem_unit_gpus=1, commitment_unit_gpus=1)
    constraints = PlanConstraints(max_wait_hours=2, spot_max_gpus=28.0)
    plan = solve_plan(DemandProfile(g, c), prices, constraints, time_limit_seconds=20)
    assert check_dispatch(DemandProfile(g, c), prices, constraints, plan.dispatch) == []
    assert plan.dispatch.commitment_gpus == {"reserved-1y": 23.0, "reserved-3y": 0.0}
