"""Benchmark of ``hybridgpu cost showback`` over a generated month of workloads (issue 19: goal under 5 s for 100,000).

Prints figures; asserts nothing. Run from the project root::

    .venv/bin/python benchmarks/showback_bench.py [--workloads N] [--seed S] [--repeat R] [--smoke]

The month: N allocations (default 100,000) over 30 days, seeded; 12 teams with 3 projects each,
one namespace per team plus unlabelled namespaces (about 3% unattributed); capacity types owned
55%, spot 25%, on-demand 15%, reserved 5%; a third of the owned allocations are MIG instances
(H100-80GB 1g.10gb / 2g.20gb / 3g.40gb, A100-80GB 3g.40gb), the rest 1-8 whole GPUs; hours 0.05 + exponential (mean 2 h), at most 48;
80% carry a GPU utilization; idle rows per capacity type; the owned fleet is 1,024 GPUs. The teams
file is generated too, so attribution goes through namespaces and cost labels.

Sections (wall time, ``time.perf_counter``, best and median of R):

1. parse the usage CSV (:func:`hybridgpu.economics.usage.load_usage`);
2. attribute, price and share idle cost (:func:`~hybridgpu.economics.showback.compute_showback`) and
   build the JSON dict;
3. the whole command in a fresh interpreter: ``hybridgpu cost showback FILE --price ... --teams ...
   --onprem-gpus 1024 --window-hours 720 --json`` (start-up included), the figure the goal is about,
   with its CPU time (``getrusage`` of the child), which a busy machine disturbs less than wall time.

``--smoke`` (CI, tests/test_benchmarks.py): 2,000 workloads, one repeat.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from hybridgpu.economics.showback import ShowbackPrices, compute_showback  # noqa: E402
from hybridgpu.economics.usage import CSV_COLUMNS, load_usage  # noqa: E402
from hybridgpu.teams.models import read_teams_file  # noqa: E402

PRICES = "owned=2.2472,reserved=2.94,spot=3.44,on-demand=6.88"
MIG = [("H100-80GB", "1g.10gb"), ("H100-80GB", "2g.20gb"), ("H100-80GB", "3g.40gb"), ("A100-80GB", "3g.40gb")]


def generate(path: Path, teams_path: Path, n: int, seed: int) -> None:
    """Write N allocations of a 30-day month to ``path`` and the teams file to ``teams_path``."""
    rng = random.Random(seed)
    teams = [f"team-{i:02d}" for i in range(12)]
    doc = {"apiVersion": "hybridgpu.io/v1alpha1", "kind": "Teams", "priorityClasses": [{"name": "research", "value": 100}],
           "teams": [{"name": t, "namespaces": [t], "groups": [t], "priorityClasses": ["research"],
                      "costLabels": {"team": t, "project": f"{t}-p0", "cost-center": f"cc-{i}"}} for i, t in enumerate(teams)]}
    teams_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    kinds = ["owned"] * 55 + ["spot"] * 25 + ["on-demand"] * 15 + ["reserved"] * 5
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for i in range(n):
            day = rng.randrange(30)
            if rng.random() < 0.03:
                ns, labels = f"sandbox-{rng.randrange(20)}", ""
            else:
                team = rng.choice(teams)
                ns, labels = team, f"team={team};project={team}-p{rng.randrange(3)}"
            kind = rng.choice(kinds)
            model, profile, gpus = "H100-80GB", "", rng.choice((1, 1, 2, 4, 8))
            if kind == "owned" and rng.random() < 1 / 3:
                model, profile = rng.choice(MIG)
                gpus = rng.randint(1, 3)
            util = f"{rng.random():.3f}" if rng.random() < 0.8 else ""
            w.writerow(["allocation", f"2026-11-{day + 1:02d}T{rng.randrange(24):02d}:00:00Z", ns, f"job-{i}", labels, kind, model, profile,
                        gpus, f"{min(48.0, 0.05 + rng.expovariate(1 / 2)):.2f}", util])
        for kind in ("spot", "on-demand", "reserved"):
            w.writerow(["idle", "2026-11-01T00:00:00Z", "", "", "", kind, "H100-80GB", "", 8, f"{rng.uniform(10, 200):.2f}", ""])


def timed(fn, repeat: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return times, out


def show(label: str, times: list[float]) -> None:
    print(f"  {label:<52} best {min(times):7.3f} s   median {statistics.median(times):7.3f} s   (n={len(times)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="2,000 workloads, one repeat (CI)")
    args = ap.parse_args()
    if args.smoke:
        args.workloads, args.repeat = 2_000, 1
    print(f"showback benchmark: {args.workloads:,} workloads, seed {args.seed}, {args.repeat} repeat(s); "
          f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="hybridgpu-showback-bench-") as tmp:
        usage, teams_file = Path(tmp) / "usage.csv", Path(tmp) / "teams.yaml"
        t = time.perf_counter()
        generate(usage, teams_file, args.workloads, args.seed)
        print(f"  generated {usage.stat().st_size / 1e6:.1f} MB of CSV in {time.perf_counter() - t:.2f} s")
        prices = ShowbackPrices.parse(PRICES)
        teams = read_teams_file(teams_file, "teams.yaml")
        parse_times, records = timed(lambda: load_usage(usage), args.repeat)
        show("1. parse the usage CSV", parse_times)
        compute_times, result = timed(
            lambda: compute_showback(records, prices, teams=teams, onprem_gpus=1024, window_hours=720).to_dict(), args.repeat)  # type: ignore[arg-type]
        show("2. attribute, price, share idle, JSON dict", compute_times)
        exe = [sys.executable, "-m", "hybridgpu"] if not (ROOT / ".venv/bin/hybridgpu").exists() else [str(ROOT / ".venv/bin/hybridgpu")]
        cmd = [*exe, "cost", "showback", str(usage), "--price", PRICES, "--teams", str(teams_file), "--onprem-gpus", "1024", "--window-hours", "720", "--json"]
        cli_times, cpu_times = [], []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
            cli_times.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if proc.returncode != 0:
                print(proc.stderr[-2000:])
                return 1
        show("3. `hybridgpu cost showback --json` (fresh process)", cli_times)
        show("   its CPU time (user + system; steadier on a shared machine)", cpu_times)
        print(f"  load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        out = result  # type: ignore[assignment]
        print(f"  rows {len(out['rows'])}, teams {len(out['teams'])}, total {out['totalUsd']:,.2f} USD, "
              f"idle {sum(v['usd'] for v in out['idle'].values()):,.2f} USD")
    return 0


if __name__ == "__main__":
    sys.exit(main())
