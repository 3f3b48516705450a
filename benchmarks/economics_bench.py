"""Benchmark of the GPU economics capacity planner (HiGHS).

Prints figures; asserts nothing. Run from the project root::

    .venv/bin/python benchmarks/economics_bench.py [--repeat R] [--profile examples/demand/sample.csv]

Sections:

1. Plan solve time for a year of hourly demand (8,760 points, the committed sample profile
   ``examples/demand/sample.csv``), wall time of ``solve_plan`` (model building, HiGHS,
   reading the solution, pricing the alternatives; ``time.perf_counter``), median and min of R
   runs after one untimed warm-up, for:
   a. the default model (no queueing, whole servers/instances): identical hours merged (exact);
   b. the same model with one block per hour (``aggregate=False``), for scale;
   c. queueing allowed (max wait 4 h and 24 h), the MILP (``method="milp"``): one block per
      hour, linked by the backlog;
   d. the same queueing cases by the default fast path (``hybridgpu.economics.planner_fast``:
      exact grid search over on-prem servers x committed instances, path flows for the hours),
      with the relative difference of its total from the MILP's (must be ~0).
2. Savings of the optimal plan against each simple alternative on the sample profile (default
   model), with the plan itself.

Prices: the packaged data (p5.48xlarge On-Demand from the GPU catalog, p5 purchase options,
H100-80GB on-prem costs), the same as ``hybridgpu cost plan --demand examples/demand/sample.csv``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hybridgpu.economics.demand import DemandProfile, load_demand_csv  # noqa: E402
from hybridgpu.economics.planner import PlanConstraints, quiet_highs, solve_plan  # noqa: E402
from hybridgpu.economics.prices import load_economics_data  # noqa: E402
from hybridgpu.economics.report import plan_prices  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, repeat: int) -> tuple[float, float, object]:
    fn()  # warm-up
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", type=Path, default=ROOT / "examples" / "demand" / "sample.csv")
    parser.add_argument("--hours", type=int, default=0, help="use only the profile's first N hours (default 0: all)")
    parser.add_argument("--smoke", action="store_true", help="one repeat, small sizes: checks the script still runs (tests/test_benchmarks.py); figures come from full runs")
    args = parser.parse_args()
    if args.smoke:
        args.repeat, args.hours = 1, 24 * 14

    demand = load_demand_csv(args.profile)
    if args.hours:
        demand = DemandProfile(demand.gpus[: args.hours], demand.checkpointable[: args.hours], f"{demand.source} (first {args.hours} h)")
    prices, _, _ = plan_prices(load_economics_data(), "p5.48xlarge", "H100-80GB")
    print(f"python {platform.python_version()}, highspy {quiet_highs().version()}, {platform.machine()}")
    print(f"profile {args.profile.relative_to(ROOT) if args.profile.is_relative_to(ROOT) else args.profile}: {demand.hours} h, "
          f"{demand.gpu_hours:,.0f} GPU-hours, peak {demand.peak:g}, floor {demand.floor:g} GPUs")
    print()
    print("1. plan solve time (s), median / min of", args.repeat, "runs")
    cases = [
        ("a. no queueing, identical hours merged (default)", PlanConstraints(), True, "auto"),
        ("b. no queueing, one block per hour", PlanConstraints(), False, "auto"),
        ("c. max wait 4 h, MILP, one block per hour", PlanConstraints(max_wait_hours=4), True, "milp"),
        ("c. max wait 24 h, MILP, one block per hour", PlanConstraints(max_wait_hours=24), True, "milp"),
        ("d. max wait 4 h, fast path (default)", PlanConstraints(max_wait_hours=4), True, "auto"),
        ("d. max wait 24 h, fast path (default)", PlanConstraints(max_wait_hours=24), True, "auto"),
    ]
    plans = {}
    for label, constraints, aggregate, method in cases:
        repeat = max(1, args.repeat // 2) if method == "milp" else args.repeat
        med, best, plan = timed(lambda c=constraints, a=aggregate, m=method: solve_plan(demand, prices, c, aggregate=a, method=m), repeat)
        plans[label] = plan
        if plan.method == "fast":
            milp = plans[label.replace("d.", "c.", 1).replace("fast path (default)", "MILP, one block per hour")]
            size = (f"exact grid of {plan.variables:,} capacity combinations, "
                    f"rel. diff. from the MILP {abs(plan.cost['total'] - milp.cost['total']) / milp.cost['total']:.1e}")
        else:
            size = f"{plan.variables:,} variables, {plan.rows:,} rows"
        print(f"   {label:<50} {med:7.3f} / {best:7.3f}   ({size}, total {plan.cost['total']:,.0f} USD)")
    print()
    plan = plans[cases[0][0]]
    d = plan.dispatch
    commits = ", ".join(f"{v:g} GPUs {k}" for k, v in d.commitment_gpus.items() if v) or "no commitments"
    print(f"2. savings on the sample profile (default model): plan = {d.onprem_gpus:g} on-prem H100 GPUs, {commits}, "
          f"spot {d.spot.sum():,.0f} GPU-h, On-Demand {d.on_demand.sum():,.0f} GPU-h")
    print(f"   {'choice':<26} {'total USD':>14} {'plan saves':>11}")
    print(f"   {'optimal plan':<26} {plan.cost['total']:>14,.0f}")
    savings = plan.savings()
    for alt in plan.alternatives:
        total = "infeasible" if alt.total is None else f"{alt.total:,.0f}"
        s = savings[alt.name]
        print(f"   {alt.name:<26} {total:>14} {'' if s is None else f'{s:.1%}':>11}   ({alt.description})")
    for label in (cases[4][0], cases[5][0]):
        p = plans[label]
        print(f"   with {label.split(',')[0][3:]}: {p.cost['total']:,.0f} USD ({1 - p.cost['total'] / plan.cost['total']:.1%} below no queueing)")


if __name__ == "__main__":
    main()
