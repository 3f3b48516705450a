"""``hybridgpu burst``: the derived burst quotas, the burst simulator and trace generation.

* ``hybridgpu burst plan hybrid [--json]``: every quota the stack's burst plan derives, in one
  table (on-prem from the inventory, EKS from the ceilings, manager = sum of workers).
* ``hybridgpu burst simulate --trace examples/traces/site-a-month.csv --stack hybrid [--json]``:
  replay a demand trace under on-prem only, burst to spot and burst to on-demand, side by side; the
  Capacity Blocks of the plan's EKS stack are placed on the trace from ``--start`` (default: the first
  block's start) and used inside their windows.
* ``hybridgpu burst trace --jobs 900 --days 30 --seed 7 --out FILE``: write a synthetic trace; with
  ``--job-file F`` (repeatable) one row per job of those files instead, shaped by Kueue's pod sets.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from hybridgpu.burst.models import INCREMENTAL_DISPATCH_SECONDS
from hybridgpu.burst.plan import BurstPlan, describe_roles, quota_changes
from hybridgpu.config.capacity_blocks import NOW_ENV, iso_utc, parse_utc_time
from hybridgpu.burst.teams import cohort_capacity, team_quota_rows
from hybridgpu.config.models import CloudConfig
from hybridgpu.stack.load import load_stack
from hybridgpu.errors import HybridGpuError
from hybridgpu.k8s import GPU_RESOURCE

burst_app = typer.Typer(no_args_is_help=True, help="Bursting with Kueue MultiKueue: derived quotas, simulator, traces.")


from hybridgpu.cli.common import Col, print_heading, print_table, print_wrapped, progress
from hybridgpu.cli.common import console as _console
from hybridgpu.cli.common import fail as _fail


def _load_plan(stack: str, root: Path | None) -> BurstPlan:
    """The burst plan of ``stack``, as validating it derived it."""
    return _load_plan_and_cloud(stack, root)[0]


def _load_plan_and_cloud(stack: str, root: Path | None) -> tuple[BurstPlan, CloudConfig | None]:
    """The burst plan of ``stack`` and the validated cloud section of the plan's EKS stack (its NodePools' Capacity Blocks)."""
    loaded = load_stack(stack, root)
    if loaded.burst_plan is None:
        raise ValueError(f"stack {stack!r} has no `hybridgpu:burst` section; run `hybridgpu burst plan` on a stack that takes part")
    plan = loaded.burst_plan
    cloud_stack = plan.source.cloud.stack
    cloud = loaded.config.cloud if cloud_stack == loaded.config.stack else load_stack(cloud_stack, loaded.root).config.cloud
    return plan, cloud


def _trace_start(start: str | None, cloud: CloudConfig | None) -> tuple[datetime | None, str]:
    """The trace's start time (UTC) from ``--start``, else the first Capacity Block's start, and how it was chosen.

    Returns:
        ``(None, "")`` when neither is given (the trace then stays on its own axis).

    Raises:
        ValueError: ``--start`` is not an ISO 8601 time with a UTC offset.
    """
    if start is not None:
        return parse_utc_time(start, f"--start {start!r}", "--start 2026-12-01T11:30:00Z"), "--start"
    firsts = [b.start for p in (cloud.node_pools if cloud else []) for b in p.capacity_blocks]
    if not firsts:
        return None, ""
    return min(firsts), "the first Capacity Block's start; set --start to move it"


def plan_rows(plan) -> list[dict]:
    """One row per (cluster, ClusterQueue, flavor, resource): the quota table of ``burst plan``."""
    rows = []
    for stack, role in describe_roles(plan):
        cluster = plan.clusters[stack]
        for cq in cluster.cluster_queues:
            for group in cq.groups:
                for fq in group.flavors:
                    for res in group.covered:
                        rows.append(
                            {
                                "stack": stack,
                                "role": role,
                                "clusterQueue": cq.name,
                                "flavor": fq.flavor,
                                "resource": res,
                                "nominalQuota": fq.nominal.get(res, 0),
                                "borrowingLimit": fq.borrowing_limit.get(res) if cq.cohort else None,
                                "lendingLimit": fq.lending_limit.get(res) if cq.cohort else None,
                                "cohort": cq.cohort,
                                "admissionCheck": cq.admission_check,
                            }
                        )
    return rows


def plan_summary(plan) -> dict:
    """Everything ``burst plan --json`` prints: capacities, quota rows, totals per cluster and the invariant checks."""
    clusters = {s: {"role": c.role, "totals": c.quota_totals(), "burstTotals": c.quota_totals(burst_only=True)} for s, c in plan.clusters.items()}
    worker_sum: dict[str, int] = {}
    for c in plan.clusters.values():
        if c.worker_access:
            for res, n in c.quota_totals().items():
                worker_sum[res] = worker_sum.get(res, 0) + n
    manager = next(c for c in plan.clusters.values() if c.multikueue is not None)
    onprem_total = plan.onprem.totals()
    classes = {}
    blocks = sum(r.gpus for r in plan.reserved)
    holder = True  # split-queues: the first burst queue holds the blocks' GPUs, the others borrow them (plan.with_reserved)
    for cq in manager.cluster_queues:
        if cq.admission_check is None or cq.team is not None:  # a team's queue holds its shares, not a class's capacity
            continue
        want = dict(onprem_total) if plan.source.topology == "spillover" else {}
        if cq.burst_class in plan.cloud:
            held = blocks if plan.source.topology == "spillover" or holder else 0
            holder = False
            want[GPU_RESOURCE] = want.get(GPU_RESOURCE, 0) + plan.cloud[cq.burst_class].gpus + held
        largest = max((n for g in cq.groups for fq in g.flavors for r, n in fq.nominal.items() if r == GPU_RESOURCE), default=0)
        classes[cq.name] = {"class": cq.burst_class, "totals": cq.nominal_totals(), "expected": want, "largestWorkloadGpus": largest}
    return {
        "plan": plan.file,
        "topology": plan.source.topology,
        "onprem": {"gpus": dict(plan.onprem.gpus), "mig": {m: dict(r) for m, r in plan.onprem.mig.items()}},
        "cloud": {
            c: {"nodePool": cap.node_pool, "gpus": cap.gpus, "from": cap.ceiling_from, "usdPerGpuHour": cap.usd_per_gpu_hour, "priceSource": cap.price_source}
            for c, cap in plan.cloud.items()
        },
        "nodePoolLimits": plan.nodepool_limits(),
        "clusters": clusters,
        "workersTotal": worker_sum,
        "managerMultiKueueTotal": manager.quota_totals(burst_only=True),
        "managerClasses": classes,
        "rows": plan_rows(plan),
        "teams": team_summary(plan),
        **({"capacityBlocks": reserved} if (reserved := reserved_summary(plan)) is not None else {}),
    }


def reserved_summary(plan: BurstPlan) -> dict | None:
    """The Capacity Block quotas of ``plan`` and the time they were judged at, or None without blocks.

    The reserved flavors' quotas are the GPUs of the blocks usable at :attr:`BurstPlan.judged_at` (``$HYBRIDGPU_NOW`` or
    the clock), so the rendering goes stale at the next block start or usable end: ``nextChange`` (and every later one
    in ``changes``) says when to run ``pulumi up`` again. Times are ISO 8601 UTC strings.
    """
    if plan.judged_at is None:
        return None
    now = plan.judged_at

    def change(c) -> dict:
        return {"at": iso_utc(c.at), "nodePool": c.node_pool, "block": c.block, "event": c.event, "gpus": c.gpus}

    changes = [change(c) for c in quota_changes(plan.reserved, now)]
    return {
        "judgedAt": iso_utc(now),
        "pools": [
            {
                "nodePool": r.node_pool,
                "flavor": r.flavor.name,
                "gpus": r.gpus,
                "blockGpus": r.block_gpus,
                "blocks": [{"id": b, "gpus": g, "start": iso_utc(start), "usableUntil": iso_utc(until), "active": start <= now < until} for b, g, start, until in r.windows],
            }
            for r in plan.reserved
        ],
        "nextChange": changes[0] if changes else None,
        "changes": changes,
    }


def team_summary(plan) -> dict:
    """Per team (when the stack names a teams file): its ClusterQueues per cluster and, per flavor and resource,
    nominal quota, borrowing and lending limits against the cohort's capacity (empty without teams)."""
    teams: dict[str, dict] = {}
    capacity = {stack: cohort_capacity(cluster, cq.cohort) for stack, cluster in plan.clusters.items() for cq in cluster.cluster_queues if cq.team and cq.cohort}
    for row in team_quota_rows(plan):
        entry = teams.setdefault(row["team"], {"rows": []})
        entry["rows"].append({**row, "cohortCapacity": capacity.get(row["stack"], {}).get((row["flavor"], row["resource"]), 0)})
    return teams


@burst_app.command("plan")
def plan_command(
    stack: Annotated[str, typer.Argument(help="A stack that takes part in a burst plan (manager or worker).")],
    root: Annotated[Path | None, typer.Option(help="Project root (default: found from the working directory).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Print every quota the stack's burst plan derives (ClusterQueues of every cluster, NodePool limits)."""
    try:
        plan = _load_plan(stack, root)
    except (HybridGpuError, ValueError) as exc:
        _fail(str(exc))
    summary = plan_summary(plan)
    if as_json:
        _console().print_json(json.dumps(summary))
        return
    console = _console()
    print_heading(console, f"burst plan {plan.file}", f"({plan.source.topology})")
    caps = [["on-prem inventory", f"{GPU_RESOURCE} ({model})", str(n), "active gpu-worker hosts"] for model, n in plan.onprem.gpus.items()]
    caps += [["on-prem inventory", f"{res} ({model})", str(n), "MIG layouts of active hosts"] for model, per in plan.onprem.mig.items() for res, n in per.items()]
    caps += [
        [f"EKS {ctype}", GPU_RESOURCE, str(cap.gpus), f"{cap.ceiling_from}; NodePool {cap.node_pool} limit; {cap.usd_per_gpu_hour:.2f} USD/GPU-hour"]
        for ctype, cap in plan.cloud.items()
    ]
    blocks: dict = summary.get("capacityBlocks") or {}
    for pool in blocks.get("pools", []):
        active = sum(1 for b in pool["blocks"] if b["active"])
        caps.append([f"EKS reserved {pool['nodePool']}", GPU_RESOURCE, str(pool["gpus"]),
                     f"{active} of {len(pool['blocks'])} Capacity Block(s) usable at {blocks['judgedAt']} ({pool['blockGpus']} GPUs in all)"])
    print_table(console, "capacities", ["source", "resource", Col("quantity", True), "derived from"], caps)
    if blocks:
        nxt = blocks["nextChange"]
        when = (f"next change {nxt['at']}: block {nxt['block']} of {nxt['nodePool']} {nxt['event']} ({'+' if nxt['event'] == 'starts' else '-'}{nxt['gpus']} GPUs); "
                f"run `pulumi up` on {plan.source.cloud.stack} and {plan.source.manager_stack if plan.source.topology == 'spillover' else plan.source.onprem.stack} then"
                if nxt else "no later change: every block's usable window has passed")
        print_wrapped(console, f"Capacity Block quotas judged at {blocks['judgedAt']} (${NOW_ENV} or the clock); {when}")
    for ctype, cap in plan.cloud.items():  # where each price comes from, and the cost report's when it differs (docs/economics.md)
        print_wrapped(console, f"EKS {ctype} price {cap.usd_per_gpu_hour:.2f} USD/GPU-hour: {cap.price_source}")
    # One table per cluster and per team (their name in the title, not in a column), so the tables fit wider terminals.
    clusters: dict[tuple[str, str], list[dict]] = {}
    for row in summary["rows"]:
        clusters.setdefault((row["stack"], row["role"]), []).append(row)
    for (name, role), rows in clusters.items():
        print_table(
            console,
            f"stack {name} ({role}): ClusterQueues",
            ["ClusterQueue", "flavor", "resource", Col("nominal", True), Col("borrow", True), Col("lend", True), "cohort", "admission check"],
            [
                [
                    row["clusterQueue"],
                    row["flavor"],
                    row["resource"],
                    str(row["nominalQuota"]),
                    "" if row["borrowingLimit"] is None else str(row["borrowingLimit"]),
                    "" if row["lendingLimit"] is None else str(row["lendingLimit"]),
                    row["cohort"] or "",
                    row["admissionCheck"] or "",
                ]
                for row in rows
            ],
        )
    if summary["teams"]:
        print_heading(console, "team quotas", "(borrow/lend '-': no limit)")
        for team, entry in summary["teams"].items():
            print_table(
                console,
                f"team {team}",
                ["stack", "ClusterQueue", "flavor", "resource", Col("nominal (guaranteed)", True), Col("borrow", True), Col("lend", True), Col("cohort capacity", True)],
                [
                    [
                        row["stack"],
                        row["clusterQueue"],
                        row["flavor"],
                        row["resource"],
                        str(row["nominalQuota"]),
                        "-" if row["borrowingLimit"] is None else str(row["borrowingLimit"]),
                        "-" if row["lendingLimit"] is None else str(row["lendingLimit"]),
                        str(row["cohortCapacity"]),
                    ]
                    for row in entry["rows"]
                ],
            )
    for name, entry in summary["managerClasses"].items():
        ok = entry["totals"] == entry["expected"]
        console.print(
            f"manager {name}: quota {entry['totals']} {'=' if ok else '!='} "
            f"{'on-prem + ' if plan.source.topology == 'spillover' else ''}its own ceiling{' (+ Capacity Blocks)' if plan.reserved else ''} {entry['expected']}; "
            f"largest workload {entry['largestWorkloadGpus']} GPUs (one worker flavor)",
            markup=False,
            highlight=False,
        )


@burst_app.command("simulate")
def simulate_command(
    trace: Annotated[Path, typer.Option("--trace", help="Demand trace CSV, columns submit_s, gpus, duration_s and optional checkpoint_s, burst, queue, pods, gpus_per_pod.")],
    stack: Annotated[str | None, typer.Option(help="Take capacities, prices and latencies from this stack's burst plan.")] = None,
    root: Annotated[Path | None, typer.Option(help="Project root (default: found from the working directory).")] = None,
    onprem_gpus: Annotated[int | None, typer.Option(min=0, help="On-prem GPUs (overrides the plan).")] = None,
    spot_gpus: Annotated[int | None, typer.Option(min=0, help="Spot ceiling in GPUs (overrides the plan).")] = None,
    on_demand_gpus: Annotated[int | None, typer.Option(min=0, help="On-demand ceiling in GPUs (overrides the plan).")] = None,
    spot_price: Annotated[float | None, typer.Option(min=0, help="Spot USD per GPU-hour (overrides the plan).")] = None,
    on_demand_price: Annotated[float | None, typer.Option(min=0, help="On-demand USD per GPU-hour (overrides the plan).")] = None,
    launch_seconds: Annotated[float | None, typer.Option(min=0, help="Karpenter launch latency in seconds (overrides the plan).")] = None,
    dispatch_delay: Annotated[float | None, typer.Option(min=0, help=f"Seconds before a waiting job may go to the cloud (default: {INCREMENTAL_DISPATCH_SECONDS}, Kueue's Incremental round).")] = None,
    interruptions: Annotated[float | None, typer.Option(min=0, help="Spot interruptions per instance-hour (overrides the plan).")] = None,
    gpus_per_instance: Annotated[int | None, typer.Option(min=1, help="GPUs per cloud instance (overrides the plan).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the spot interruption stream.")] = 0,
    failure_rate: Annotated[float | None, typer.Option(help="Simulate GPU failures: failures per GPU-hour (e.g. 1.97e-5, `hybridgpu cost checkpoint`'s default). Default: off.")] = None,
    failure_restart_seconds: Annotated[float, typer.Option(metavar="SECONDS", help="With --failure-rate: seconds from a failure until the job works again.")] = 0.0,
    start: Annotated[str | None, typer.Option(metavar="TIME", help="UTC time of the trace's second 0, e.g. 2026-12-01T11:30:00Z, to place the stack's Capacity Blocks on it. Default: the first block's start.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Replay a demand trace: on-prem only, burst to spot, burst to on-demand, side by side."""
    from hybridgpu.burst.simulate import COST_MODEL, GpuFailures, ReservedBlock, SimulationParams, compare, params_from_plan, reserved_blocks
    from hybridgpu.burst.trace import load_trace
    from hybridgpu.catalog import load_catalog

    blocks: list[ReservedBlock] = []
    t0: datetime | None = None
    t0_from = ""
    try:
        jobs = load_trace(trace)
        if stack is not None:
            plan, cloud = _load_plan_and_cloud(stack, root)
            params = params_from_plan(plan, seed=seed)
            t0, t0_from = _trace_start(start, cloud)
            if t0 is not None:
                blocks = reserved_blocks(cloud, load_catalog(), t0)
        else:
            if start is not None:
                raise ValueError("--start places the stack's Capacity Blocks on the trace: give --stack too")
            if onprem_gpus is None:
                raise ValueError("give --stack (a stack with a burst plan) or at least --onprem-gpus")
            params = SimulationParams(onprem_gpus=onprem_gpus, seed=seed)
    except (HybridGpuError, ValueError) as exc:
        _fail(str(exc))
    overrides = {
        "onprem_gpus": onprem_gpus,
        "spot_gpus": spot_gpus,
        "on_demand_gpus": on_demand_gpus,
        "spot_usd_per_gpu_hour": spot_price,
        "on_demand_usd_per_gpu_hour": on_demand_price,
        "launch_s": launch_seconds,
        "dispatch_delay_s": dispatch_delay,
        "interruptions_per_instance_hour": interruptions,
        "gpus_per_instance": gpus_per_instance,
    }
    options = {
        "onprem_gpus": "--onprem-gpus",
        "spot_gpus": "--spot-gpus",
        "on_demand_gpus": "--on-demand-gpus",
        "spot_usd_per_gpu_hour": "--spot-price",
        "on_demand_usd_per_gpu_hour": "--on-demand-price",
        "launch_s": "--launch-seconds",
        "dispatch_delay_s": "--dispatch-delay",
        "interruptions_per_instance_hour": "--interruptions",
        "gpus_per_instance": "--gpus-per-instance",
    }
    for key, value in overrides.items():
        if value is not None and not math.isfinite(value):
            _fail(f"{options[key]} {value}: must be a finite number (a duration, price or rate), e.g. {options[key]} 300")
    try:
        params = SimulationParams(**{**asdict(params), **{k: v for k, v in overrides.items() if v is not None}})
    except ValueError as exc:
        _fail(f"{exc} (fix the option or the plan's `simulation` section)")
    failures = None
    if failure_rate is not None or failure_restart_seconds:
        try:
            if failure_rate is None:
                raise ValueError("--failure-restart-seconds needs --failure-rate (failures per GPU-hour)")
            failures = GpuFailures(failure_rate, failure_restart_seconds, seed)
        except ValueError as exc:
            _fail(f"{exc} (--failure-rate / --failure-restart-seconds)")
    with progress(f"simulating {len(jobs)} jobs under 3 strategies"):
        results = compare(jobs, params, failures, blocks)
    dropped = () if t0 is not None else ("blocks", "unfinished")  # the output of a run without blocks is unchanged
    if as_json:
        payload = {
            "trace": str(trace),
            "params": asdict(params),
            "costModel": COST_MODEL,
            "results": [{**{k: v for k, v in asdict(r).items() if k not in dropped}, "totalCostUsd": r.total_cost_usd} for r in results],
        }
        if t0 is not None:
            payload["start"] = t0.strftime("%Y-%m-%dT%H:%M:%SZ")
            payload["startFrom"] = t0_from
            payload["blocks"] = [asdict(b) for b in blocks]
        if failures is not None:
            payload["failures"] = asdict(failures)
        _console().print_json(json.dumps(payload))
        return
    console = _console()
    print_heading(
        console,
        f"{trace}:",
        f"{len(jobs)} jobs; {params.topology}; on-prem {params.onprem_gpus} GPUs, spot <= {params.spot_gpus}, on-demand <= {params.on_demand_gpus}",
    )
    from hybridgpu.burst.simulate import comparison_rows

    if t0 is not None:
        console.print(
            f"trace second 0 = {t0.strftime('%Y-%m-%dT%H:%M:%SZ')} ({t0_from}); {len(blocks)} Capacity Block(s) on the trace "
            "(usable until 40 minutes before their end; their fees are in every strategy's cost)",
            markup=False,
            highlight=False,
        )
    print_table(console, None, ["", *(Col(r.strategy, True) for r in results)], [[label, *values] for label, values in comparison_rows(results)])
    console.print(f"{COST_MODEL}; {params.gpus_per_instance} GPUs per instance", markup=False, highlight=False)


@burst_app.command("trace")
def trace_command(
    out: Annotated[Path, typer.Option(help="CSV file to write.")],
    jobs: Annotated[int, typer.Option(min=1, help="About how many jobs.")] = 900,
    days: Annotated[float, typer.Option(min=0.01, help="Length of the trace in days.")] = 30.0,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same trace).")] = 0,
    median_hours: Annotated[float, typer.Option(min=0.01, help="Median job duration in hours.")] = 2.0,
    job_file: Annotated[
        list[Path] | None,
        typer.Option(help="Instead: one row per job in this Kubernetes job file (repeatable), its shape from Kueue's pod sets; submitted at 0, --median-hours long, on-demand. Edit the times after."),
    ] = None,
) -> None:
    """Write a reproducible synthetic demand trace: the same options and seed give the same file."""
    from hybridgpu.burst.trace import Job, generate_trace, job_file_shapes, write_trace

    if job_file:
        rows: list[Job] = []
        try:
            for path in job_file:
                rows += [Job(0.0, pods * per_pod, median_hours * 3600.0, None, "on-demand", "local", pods, per_pod) for _, pods, per_pod in job_file_shapes(path)]
        except HybridGpuError as exc:
            _fail(str(exc))
        write_trace(rows, out)
        _console().print(f"{len(rows)} jobs from {len(job_file)} job file(s) written to {out} (submit_s 0 and duration_s {median_hours * 3600:.0f}: edit them)")
        return
    generated = generate_trace(jobs=jobs, days=days, seed=seed, median_hours=median_hours)
    write_trace(generated, out)
    _console().print(f"{len(generated)} jobs written to {out}")
