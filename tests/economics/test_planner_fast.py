"""The planner's fast path with queueing (hybridgpu.economics.planner_fast): the same optimum as the MILP.

The MILP (``solve_plan(..., method="milp")``, the model of the planner's module docstring solved
by HiGHS) is the reference: on random small instances the fast path's total must equal its
optimum (relative 1e-7), its dispatch must pass ``check_dispatch`` and cost what the plan says,
and infeasible inputs must give the same PlanError. The proof the fast path rests on is in
hybridgpu/economics/planner_fast.py and docs/economics.md ("Queueing, fast").
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.economics import planner_fast
from hybridgpu.economics.demand import DemandProfile, load_demand_csv
from hybridgpu.economics.planner import CapacityPrices, Plan, PlanConstraints, PlanError, check_dispatch, dispatch_cost, solve_plan
from hybridgpu.economics.prices import load_economics_data
from hybridgpu.economics.report import plan_prices


def both(demand: DemandProfile, prices: CapacityPrices, constraints: PlanConstraints) -> list[Plan | str]:
    """``[fast plan or its PlanError message, MILP plan or its PlanError message]``."""
    out: list[Plan | str] = []
    for method in ("fast", "milp"):
        try:
            out.append(solve_plan(demand, prices, constraints, method=method))
        except PlanError as exc:
            out.append(str(exc))
    return out


def assert_same_optimum(demand: DemandProfile, prices: CapacityPrices, constraints: PlanConstraints) -> None:
    fast, milp = both(demand, prices, constraints)
    if isinstance(milp, str) or isinstance(fast, str):
        assert fast == milp  # the same PlanError (message included) from both
        return
    assert fast.method == "fast" and milp.method == "milp"
    assert check_dispatch(demand, prices, constraints, fast.dispatch) == []
    assert fast.cost == dispatch_cost(prices, fast.dispatch)
    assert fast.cost["total"] == pytest.approx(fast.objective, rel=1e-9, abs=1e-9)
    assert fast.cost["total"] == pytest.approx(milp.cost["total"], rel=1e-7, abs=1e-6)


@st.composite
def problems(draw):
    hours = draw(st.integers(min_value=24, max_value=200))
    gpus = np.array(draw(st.lists(st.integers(min_value=0, max_value=40), min_size=hours, max_size=hours)), dtype=float)
    frac = np.array(draw(st.lists(st.floats(min_value=0, max_value=1), min_size=hours, max_size=hours)))
    ckpt = gpus * frac if draw(st.booleans()) else np.floor(gpus * frac)  # fractional GPUs too
    od = draw(st.floats(min_value=0.5, max_value=10))
    spot = draw(st.one_of(st.none(), st.floats(min_value=0.05, max_value=1.3)))
    commitments = draw(st.lists(st.floats(min_value=0.1, max_value=1.0), max_size=2))
    onprem = draw(st.one_of(st.none(), st.floats(min_value=0.05, max_value=1.2)))
    prices = CapacityPrices(
        on_demand_usd_per_gpu_hour=od,
        spot_usd_per_productive_gpu_hour=None if spot is None else spot * od,
        commitments=tuple((name, f * od) for name, f in zip(("reserved-1y", "reserved-3y"), commitments, strict=False)),
        onprem_fixed_usd_per_gpu_hour=None if onprem is None else onprem * od,
        onprem_usd_per_used_gpu_hour=draw(st.floats(min_value=0, max_value=1)) * od,  # the precondition: v <= On-Demand
        onprem_unit_gpus=draw(st.sampled_from([1, 2, 4, 8])),
        commitment_unit_gpus=draw(st.sampled_from([1, 4, 8])),
    )
    cap = st.one_of(st.none(), st.integers(min_value=0, max_value=40).map(float))
    constraints = PlanConstraints(
        max_wait_hours=draw(st.integers(min_value=1, max_value=24)),
        spot_max_gpus=draw(cap), on_demand_max_gpus=draw(cap), onprem_max_gpus=draw(cap),
    )
    return DemandProfile(gpus, ckpt), prices, constraints


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_fast_path_has_the_milps_optimum(problem):
    assert_same_optimum(*problem)


def _instance(seed: int, hours: int = 72) -> DemandProfile:
    rng = np.random.default_rng(seed)
    gpus = rng.integers(0, 30, hours).astype(float)
    return DemandProfile(gpus, np.floor(gpus * rng.uniform(0.3, 1.0, hours)))


FULL = CapacityPrices(6.88, 3.82, (("reserved-1y", 4.51), ("reserved-3y", 2.94)), 2.77, 0.091, onprem_unit_gpus=8, commitment_unit_gpus=8)


@pytest.mark.parametrize(
    "prices",
    [
        FULL,
        CapacityPrices(6.88, None, (("reserved-3y", 2.94),), 2.77, 0.091),  # no spot
        CapacityPrices(6.88, 3.82, (("reserved-3y", 2.94),), None),  # no on-prem
        CapacityPrices(6.88, 3.82, (), 2.77, 0.091, onprem_unit_gpus=4),  # no commitments
        CapacityPrices(6.88),  # On-Demand only
        CapacityPrices(3.0, 4.0, (("reserved-3y", 1.0),), 1.5, 3.0, onprem_unit_gpus=1),  # spot dearer than On-Demand, v = On-Demand
    ],
    ids=["all-options", "no-spot", "no-onprem", "no-commitments", "on-demand-only", "spot-dearer"],
)
def test_edge_prices_have_the_milps_optimum(prices):
    assert_same_optimum(_instance(1), prices, PlanConstraints(max_wait_hours=3, spot_max_gpus=10.0))


@pytest.mark.parametrize("wait", [71, 72, 500])
def test_a_wait_as_long_as_the_profile_has_the_milps_optimum(wait):
    """W >= H: every arrival may wait until the last hour (the model's ``b_{H-1} = 0`` still holds)."""
    assert_same_optimum(_instance(2), FULL, PlanConstraints(max_wait_hours=wait, on_demand_max_gpus=12.0))


@pytest.mark.parametrize(
    "constraints",
    [
        PlanConstraints(max_wait_hours=2, on_demand_max_gpus=0.0, onprem_max_gpus=0.0),  # nothing for work that does not checkpoint
        PlanConstraints(max_wait_hours=2, on_demand_max_gpus=3.0, spot_max_gpus=0.0, onprem_max_gpus=8.0),  # too little everywhere
    ],
)
def test_infeasible_caps_give_the_milps_error(constraints):
    prices = CapacityPrices(6.88, 3.82, (), 2.77, 0.091)
    fast, milp = both(_instance(3, 48), prices, constraints)
    assert isinstance(fast, str) and fast == milp and "no feasible plan" in fast


def test_waiting_makes_infeasible_caps_feasible_as_in_the_milp():
    """A spike of checkpointing work above every cap: infeasible without waiting, served later with W = 3."""
    gpus = np.array([4.0] * 10 + [20.0] + [4.0] * 13)
    demand = DemandProfile(gpus, gpus - 2.0)
    prices = CapacityPrices(6.88, 3.82, (), 2.77, 0.091, onprem_unit_gpus=1)
    def tight(wait: int) -> PlanConstraints:
        return PlanConstraints(max_wait_hours=wait, spot_max_gpus=4.0, on_demand_max_gpus=4.0, onprem_max_gpus=2.0)

    with pytest.raises(PlanError, match="no feasible plan"):
        solve_plan(demand, prices, tight(0))
    assert_same_optimum(demand, prices, tight(3))
    plan = solve_plan(demand, prices, tight(3))
    assert plan.dispatch.backlog.max() > 0


def test_sample_year_has_the_milps_optimum(root):
    """The benchmark's case: a year (8,760 h) with 4 h of waiting. Reference: the MILP's optimum on
    2026-11-27 (method="milp", HiGHS 1.16.0: 1,294,058.20 USD, 40 on-prem GPUs; benchmarks/README.md)."""
    demand = load_demand_csv(root / "examples" / "demand" / "sample.csv")
    prices, _, _ = plan_prices(load_economics_data(), "p5.48xlarge", "H100-80GB")
    constraints = PlanConstraints(max_wait_hours=4)
    plan = solve_plan(demand, prices, constraints)
    assert plan.method == "fast"
    assert plan.cost["total"] == pytest.approx(1_294_058.1994, rel=1e-7)
    assert plan.dispatch.onprem_gpus == 40.0
    assert check_dispatch(demand, prices, constraints, plan.dispatch) == []


def test_preconditions_choose_the_milp_or_refuse_the_fast_path():
    demand = _instance(4, 30)
    dear_onprem = CapacityPrices(2.0, 1.0, (), 1.0, 2.5)  # running an owned GPU costs more than On-Demand
    assert solve_plan(demand, dear_onprem, PlanConstraints(max_wait_hours=2)).method == "milp"
    assert solve_plan(demand, FULL, PlanConstraints(max_wait_hours=2, integer=False)).method == "milp"
    assert solve_plan(demand, FULL, PlanConstraints(max_wait_hours=0)).method == "milp"
    assert solve_plan(demand, FULL, PlanConstraints(max_wait_hours=2)).method == "fast"
    with pytest.raises(PlanError, match=r"fast path does not apply \(on-prem running price above On-Demand\)"):
        solve_plan(demand, dear_onprem, PlanConstraints(max_wait_hours=2), method="fast")
    with pytest.raises(PlanError, match=r"fast path does not apply \(no queueing\)"):
        solve_plan(demand, FULL, PlanConstraints(), method="fast")
    with pytest.raises(PlanError, match="method must be"):
        solve_plan(demand, FULL, PlanConstraints(max_wait_hours=2), method="simplex")


def _max_flow_lp(ckpt: np.ndarray, capacity: np.ndarray, wait: int) -> float:
    """Most work servable in its window ``j .. min(j+wait, H-1)`` under per-hour capacity: the transportation LP, by HiGHS."""
    import highspy

    from hybridgpu.highs import quiet_highs

    hours = ckpt.size
    arcs = [(j, t) for j in range(hours) for t in range(j, min(j + wait, hours - 1) + 1)]
    h = quiet_highs()
    h.addVars(len(arcs), np.zeros(len(arcs)), np.full(len(arcs), highspy.kHighsInf))
    h.changeColsCost(len(arcs), np.arange(len(arcs), dtype=np.int32), -np.ones(len(arcs)))
    for side, limit in ((0, ckpt), (1, capacity)):
        for node in range(hours):
            idx = np.array([i for i, a in enumerate(arcs) if a[side] == node], dtype=np.int32)
            h.addRow(0.0, float(limit[node]), idx.size, idx, np.ones(idx.size))
    h.run()
    return -h.getInfo().objective_function_value


def test_deficiency_is_the_work_a_maximum_flow_leaves_unserved():
    """Step 5 of the proof on its own: Hall's deficiency by the lagged DP = total work - maximum flow (an LP)."""
    rng = np.random.default_rng(5)
    for hours, wait in itertools.product((1, 5, 13), (1, 2, 4, 20)):
        ckpt = rng.integers(0, 6, hours).astype(float)
        capacity = rng.integers(0, 6, (3, hours)).astype(float)
        got = planner_fast.deficiencies(ckpt, capacity, wait)
        for lane in range(3):
            assert got[lane] == pytest.approx(ckpt.sum() - _max_flow_lp(ckpt, capacity[lane], wait), abs=1e-7), (hours, wait, lane)


def test_path_max_flow_reroutes_earlier_work():
    """Hours 0..2, one unit arriving in hours 0 and 1, W = 1; hour 1 already serves the unit of hour 0.
    Adding capacity in hour 0 only helps if that unit moves back to hour 0 (residual arc): flow 1, not 0."""
    # State after the first tier: hour 0's unit waits one hour (backlog 1 on edge 0) and is served in hour 1.
    used_supply, used_sink, flow = planner_fast.path_max_flow([0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0], [1.0, 0.0])
    assert used_sink == [1.0, 0.0, 0.0] and used_supply == [0.0, 1.0, 0.0] and flow == [-1.0, 0.0]
