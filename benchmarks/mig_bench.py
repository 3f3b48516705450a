"""Benchmark of the MIG layout planner and the placement checker.

Prints figures; asserts nothing. Run from the project root::

    .venv/bin/python benchmarks/mig_bench.py [--demands N] [--seed S] [--repeat R]

Sections:

1. ``plan_mig`` on N (default 100) seeded random demands over H100-80GB, A100-40GB and
   A30-24GB (1..all profiles, counts up to 1..600, so 1..~700 GPUs): how many plans use
   exactly the optimum of an independent HiGHS integer program (one variable per valid
   layout; needs ``highspy``), and the distribution of the planner's wall time
   (``time.perf_counter``; the per-model caches of ``valid_layouts`` are warmed first,
   their one-off cost is printed separately). HiGHS's own time is shown for scale.
2. A demand needing ~500 H100-80GB GPUs: median and min of R runs, GPUs used, the LP
   bound and the HiGHS optimum.
3. ``check_layout`` latency per layout: for every valid layout of each model, the mean
   of 200 cached calls, and one uncached call (the LRU cache cleared before it; best of
   3); median, p90 and max over the layouts, in microseconds.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hybridgpu.mig import placement  # noqa: E402
from hybridgpu.mig.placement import check_layout, valid_layouts  # noqa: E402
from hybridgpu.mig.planner import GpuPool, MigDemand, plan_mig  # noqa: E402
from hybridgpu.mig.profiles import mig_gpu, mig_models  # noqa: E402

MODELS = ("H100-80GB", "A100-40GB", "A30-24GB")
BIG_DEMAND = {"1g.10gb": 900, "1g.20gb": 300, "2g.20gb": 350, "3g.40gb": 250, "4g.40gb": 120, "7g.80gb": 60}


def random_demand(rng: random.Random, model: str) -> dict[str, int]:
    names = mig_gpu(model).profile_names
    scale = rng.choice([1, 3, 10, 40, 150, 600])
    chosen = rng.sample(names, rng.randint(1, len(names)))
    demand = {n: rng.randint(0, scale) for n in chosen}
    if not any(demand.values()):
        demand[chosen[0]] = 1
    return demand


def highs_optimum():
    """A function (model, demand) -> (optimal GPU count, seconds), or None without highspy."""
    try:
        import highspy  # noqa: F401 - only to see whether the reference solver can run
    except ImportError:
        return None

    from tests.helpers.mig_reference import ilp_min_mig_gpus  # the test suite's reference ILP

    def solve(model: str, demand: dict[str, int]) -> tuple[int, float]:
        start = time.perf_counter()
        gpus = ilp_min_mig_gpus(model, demand)
        return gpus, time.perf_counter() - start

    return solve


def quantiles(values: list[float]) -> str:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return (
        f"min {ordered[0]:.2f}  median {statistics.median(ordered):.2f}  p90 {at(0.9):.2f}  "
        f"p99 {at(0.99):.2f}  max {ordered[-1]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demands", type=int, default=100, help="random demands in section 1 (default 100)")
    parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    parser.add_argument("--repeat", type=int, default=20, help="runs of the ~500-GPU demand (default 20)")
    parser.add_argument("--smoke", action="store_true", help="one repeat, small sizes: checks the script still runs (tests/test_benchmarks.py); figures come from full runs")
    args = parser.parse_args()
    if args.smoke:
        args.demands, args.repeat = 5, 1
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.system()})")

    # Warm the per-model caches (valid_layouts / maximal_layouts), timing the one-off cost.
    for model in MODELS:
        start = time.perf_counter()
        valid_layouts(model)
        plan_mig(MigDemand(model, {mig_gpu(model).profile_names[0]: 1}), [GpuPool("warm", model, 8)])
        print(f"one-off cache warm-up {model}: {1000 * (time.perf_counter() - start):.1f} ms")

    highs = highs_optimum()
    pools = {model: [GpuPool("pool", model, 8, nodes=1000)] for model in MODELS}

    print(f"\n1. plan_mig on {args.demands} random demands (seed {args.seed})")
    rng = random.Random(args.seed)
    times, highs_times, gpus, equal, compared, lp_tight = [], [], [], 0, 0, 0
    for i in range(args.demands):
        model = MODELS[i % len(MODELS)]
        demand = random_demand(rng, model)
        start = time.perf_counter()
        plan = plan_mig(MigDemand(model, demand), pools[model])
        times.append(1000 * (time.perf_counter() - start))
        gpus.append(plan.mig_gpus)
        lp_tight += plan.lower_bound == plan.mig_gpus
        if highs is not None:
            optimum, seconds = highs(model, demand)
            highs_times.append(1000 * seconds)
            compared += 1
            equal += plan.mig_gpus == optimum
            if plan.mig_gpus != optimum:
                print(f"   MISMATCH {model} {demand}: planner {plan.mig_gpus}, HiGHS {optimum}")
    print(f"   GPUs per plan: {min(gpus)}..{max(gpus)} (median {statistics.median(gpus):.0f})")
    if highs is None:
        print("   HiGHS comparison skipped: highspy is not installed")
    else:
        print(f"   equal to the HiGHS optimum: {equal}/{compared}")
    print(f"   optimum = proven lower bound: {lp_tight}/{args.demands}")
    print(f"   planner ms: {quantiles(times)}")
    if highs_times:
        print(f"   HiGHS ms:   {quantiles(highs_times)}")

    print("\n2. a demand needing ~500 GPUs (H100-80GB)")
    print(f"   demand: {BIG_DEMAND}")
    runs = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        plan = plan_mig(MigDemand("H100-80GB", BIG_DEMAND), pools["H100-80GB"])
        runs.append(1000 * (time.perf_counter() - start))
    line = f"   GPUs {plan.mig_gpus} (proven bound {plan.lower_bound}, {len(plan.layouts)} distinct layouts)"
    if highs is not None:
        optimum, seconds = highs("H100-80GB", BIG_DEMAND)
        line += f"; HiGHS optimum {optimum} in {1000 * seconds:.1f} ms"
    print(line)
    print(f"   planner ms over {args.repeat} runs: median {statistics.median(runs):.2f}  min {min(runs):.2f}")

    print("\n3. check_layout latency per layout (microseconds; median / p90 / max over the valid layouts)")
    for model in mig_models():
        layouts = [layout.as_dict() for layout in valid_layouts(model)]
        warm, cold = [], []
        for layout in layouts:
            check_layout(model, layout)
            start = time.perf_counter_ns()
            for _ in range(200):
                check_layout(model, layout)
            warm.append((time.perf_counter_ns() - start) / 200 / 1000)
            best = float("inf")
            for _ in range(3):
                placement._check_vector.cache_clear()  # private: uncached timing only
                start = time.perf_counter_ns()
                check_layout(model, layout)
                best = min(best, (time.perf_counter_ns() - start) / 1000)
            cold.append(best)

        def summary(values: list[float]) -> str:
            ordered = sorted(values)
            p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
            return f"{statistics.median(ordered):6.2f} / {p90:6.2f} / {ordered[-1]:7.2f}"

        print(f"   {model:<11} {len(layouts):4d} layouts  cached {summary(warm)}   uncached {summary(cold)}")


if __name__ == "__main__":
    main()
