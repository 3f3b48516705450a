"""Benchmark of the burst simulator, and the cost/wait table of the sample trace.

Prints figures; asserts nothing. Run from the project root::

    .venv/bin/python benchmarks/burst_bench.py [--jobs 100000] [--repeat 3] [--seed 1]

Sections:

1. A year of demand: ``generate_trace(jobs=N, days=365, seed)`` (about N jobs, the generator's
   default mix: 1-32 GPUs, log-normal durations with a 2 h median, 70% checkpointing). The
   site is scaled to the demand so that queues stay realistic: on-prem GPUs = the mean GPU
   demand rounded, spot ceiling = the same, on-demand = a quarter (the prices and latencies of
   the example plan ``stacks/burst/site-a.yaml``). Wall time (``time.perf_counter``, median and
   min of R runs, trace generation and loading timed apart) of ``simulate`` per strategy and of
   all three; the goal is under 10 s for the three.
2. The sample trace ``examples/traces/site-a-month.csv`` through the example plan
   (``params_from_plan``, seed 0): the side-by-side table of ``hybridgpu burst simulate``.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hybridgpu.stack.burst import load_burst_plan  # noqa: E402
from hybridgpu.burst.simulate import STRATEGIES, compare, comparison_rows, format_hours, params_from_plan, simulate  # noqa: E402
from hybridgpu.burst.trace import generate_trace, load_trace, write_trace  # noqa: E402


def year(jobs_wanted: int, repeat: int, seed: int) -> None:
    t0 = time.perf_counter()
    jobs = generate_trace(jobs=jobs_wanted, days=365, seed=seed)
    gen = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "year.csv"
        write_trace(jobs, path)
        t0 = time.perf_counter()
        loaded = load_trace(path)
        load = time.perf_counter() - t0
    assert loaded == jobs
    demand = sum(j.gpus * j.duration_s for j in jobs) / (365 * 86400)
    onprem = max(1, round(demand))
    # Prices, latencies and instance size of the example plan; capacities scaled to the demand.
    example = params_from_plan(load_burst_plan("stacks/burst/site-a.yaml", ROOT))
    params = dataclasses.replace(example, onprem_gpus=onprem, spot_gpus=onprem, on_demand_gpus=max(8, onprem // 4), seed=seed)
    print(f"## 1. A year of demand: {len(jobs):,} jobs (generate_trace(jobs={jobs_wanted}, days=365, seed={seed}))")
    print(f"mean GPU demand {demand:.1f} GPUs -> on-prem {params.onprem_gpus}, spot <= {params.spot_gpus}, on-demand <= {params.on_demand_gpus}")
    print(f"trace generation {gen:.2f} s, CSV load {load:.2f} s ({len(jobs) / load:,.0f} rows/s)")
    totals = []
    for strategy in STRATEGIES:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = simulate(jobs, params, strategy)
            times.append(time.perf_counter() - t0)
        totals.append(times)
        print(
            f"  {strategy:<12} median {statistics.median(times):.2f} s, min {min(times):.2f} s "
            f"(wait p90 {format_hours(result.wait_p90_s)}, on-prem {result.onprem_utilization:.1%}, cloud {result.total_cost_usd:,.0f} USD)"
        )
    sums = [sum(t[i] for t in totals) for i in range(repeat)]
    print(f"  all three    median {statistics.median(sums):.2f} s, min {min(sums):.2f} s (goal: under 10 s)")


def sample() -> None:
    trace = ROOT / "examples" / "traces" / "site-a-month.csv"
    jobs = load_trace(trace)
    params = params_from_plan(load_burst_plan("stacks/burst/site-a.yaml", ROOT))
    results = compare(jobs, params)
    print(f"\n## 2. {trace.relative_to(ROOT)} ({len(jobs)} jobs) through stacks/burst/site-a.yaml")
    print(
        f"on-prem {params.onprem_gpus} GPUs; spot <= {params.spot_gpus} at {params.spot_usd_per_gpu_hour} USD/GPU-h; "
        f"on-demand <= {params.on_demand_gpus} at {params.on_demand_usd_per_gpu_hour:.2f} USD/GPU-h; "
        f"dispatch delay {params.dispatch_delay_s:.0f} s; launch {params.launch_s:.0f} s; "
        f"{params.interruptions_per_instance_hour} interruptions/instance-h"
    )
    rows = comparison_rows(results)
    print("| | " + " | ".join(r.strategy for r in results) + " |")
    print("|---|" + "---|" * len(results))
    for label, values in rows:
        print(f"| {label} | " + " | ".join(values) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="about how many jobs in the year (default 100,000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per strategy (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="trace and interruption seed (default 1)")
    parser.add_argument("--smoke", action="store_true", help="one repeat, small sizes: checks the script still runs (tests/test_benchmarks.py); figures come from full runs")
    args = parser.parse_args()
    if args.smoke:
        args.jobs, args.repeat = 1_000, 1
    print(f"# burst_bench.py on {platform.python_implementation()} {platform.python_version()}, {platform.machine()}")
    year(args.jobs, args.repeat, args.seed)
    sample()


if __name__ == "__main__":
    main()
