"""Burst simulator: replay a demand trace through a topology, no cluster (pure Python).

Discrete-event simulation (``heapq``) of what Kueue MultiKueue and Karpenter do with a trace:

* **Queueing**: BestEffortFIFO, Kueue's default: at every event the earliest-submitted waiting
  job that can start now is started, then the next, until none can (a large job at the head
  does not block smaller ones behind it).
* **On-prem first**: a job starts on-prem as soon as ``onprem_gpus`` has room for it.
* **Spill-over**: a job that is still waiting ``dispatch_delay_s`` after it (re)entered the
  queue may also start in the cloud (Kueue's Incremental dispatcher nominates the next worker
  after 5 minutes), if its class may burst and the pool's ceiling has room. Cloud GPUs count
  against the ceiling from admission; the job starts working ``launch_s`` later (Karpenter
  launching a node) and is billed from admission to its end.
* **Spot interruptions**: while a job runs on spot, interruptions arrive as a Poisson process
  with ``interruptions_per_instance_hour`` x instances the job spans (ceil(GPUs /
  ``gpus_per_instance``)); an interruption loses the work since the last checkpoint. The job's
  Kueue workload stays admitted on the EKS worker (its pods are recreated, e.g. a Job with a
  ``podFailurePolicy`` that ignores ``DisruptionTarget``), so it keeps its quota, waits
  ``launch_s`` for Karpenter's replacement node and resumes from the checkpoint; billing runs
  on from the first admission to the end.

Strategies (:data:`STRATEGIES`): ``onprem-only`` (nothing bursts), ``spot`` (jobs that
checkpoint burst to spot, the others to on-demand), ``on-demand`` (every burstable job bursts to
on-demand, with the spot and on-demand ceilings added together so that both burst strategies
have the same cloud capacity). Jobs of class ``none`` never burst. A job larger than every
place it may run is reported as never admitted.

The random stream (spot interruptions only) comes from ``random.Random(seed)``: a run is
reproducible.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from hybridgpu.burst.models import INCREMENTAL_DISPATCH_SECONDS
from hybridgpu.burst.trace import Job

STRATEGIES = ("onprem-only", "spot", "on-demand")

_ARRIVE, _FINISH_ONPREM, _FINISH_CLOUD, _ELIGIBLE, _INTERRUPT = range(5)


@dataclass(frozen=True)
class SimulationParams:
    """Topology and environment of a simulation.

    Attributes:
        onprem_gpus: GPUs on-prem (whole GPUs the on-prem ClusterQueue admits).
        spot_gpus: spot ceiling in GPUs (NodePool limit).
        on_demand_gpus: on-demand ceiling in GPUs.
        spot_usd_per_gpu_hour: spot price, USD per GPU-hour.
        on_demand_usd_per_gpu_hour: on-demand price, USD per GPU-hour.
        dispatch_delay_s: seconds a job waits for on-prem before it may go to the cloud (:data:`~hybridgpu.burst.models.INCREMENTAL_DISPATCH_SECONDS`: Kueue's Incremental dispatcher round).
        launch_s: seconds from cloud admission to a working node (Karpenter launch and boot).
        interruptions_per_instance_hour: spot interruption rate per instance-hour.
        gpus_per_instance: GPUs per cloud instance.
        seed: seed of the interruption random stream.
    """

    onprem_gpus: int
    spot_gpus: int = 0
    on_demand_gpus: int = 0
    spot_usd_per_gpu_hour: float = 0.0
    on_demand_usd_per_gpu_hour: float = 0.0
    dispatch_delay_s: float = float(INCREMENTAL_DISPATCH_SECONDS)
    launch_s: float = 0.0
    interruptions_per_instance_hour: float = 0.0
    gpus_per_instance: int = 8
    seed: int = 0


@dataclass
class StrategyResult:
    """What one strategy did with the trace.

    Attributes:
        strategy: ``onprem-only``, ``spot`` or ``on-demand``.
        jobs: jobs in the trace.
        never_admitted: jobs larger than every place they may run.
        wait_p50_s, wait_p90_s, wait_p99_s, wait_mean_s: queue wait (submission to first work:
            on-prem start, or cloud admission plus launch), seconds, over admitted jobs.
        onprem_utilization: busy on-prem GPU-seconds / (on-prem GPUs x makespan), 0..1.
        makespan_s: first submission to last completion, seconds.
        burst_jobs: jobs that ran in the cloud at least once.
        gpu_hours: capacity type (``spot``/``on-demand``) -> billed cloud GPU-hours (launch included).
        cost_usd: capacity type -> USD.
        interruptions: spot interruptions.
        lost_gpu_hours: GPU-hours of work lost to interruptions (since the last checkpoint).
    """

    strategy: str
    jobs: int
    never_admitted: int
    wait_p50_s: float
    wait_p90_s: float
    wait_p99_s: float
    wait_mean_s: float
    onprem_utilization: float
    makespan_s: float
    burst_jobs: int
    gpu_hours: dict[str, float] = field(default_factory=dict)
    cost_usd: dict[str, float] = field(default_factory=dict)
    interruptions: int = 0
    lost_gpu_hours: float = 0.0

    @property
    def total_cost_usd(self) -> float:
        """Cloud cost over both capacity types, USD."""
        return sum(self.cost_usd.values())


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` (0..100) percentile of ascending ``sorted_values`` (nearest rank); 0.0 for no values."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return float(sorted_values[rank - 1])


def _pool_of(job: Job, strategy: str) -> str | None:
    if strategy == "onprem-only" or job.burst == "none":
        return None
    if strategy == "on-demand":
        return "on-demand"
    return "spot" if job.burst == "spot" and job.checkpoint_s is not None else "on-demand"


def simulate(jobs: Sequence[Job], params: SimulationParams, strategy: str, *, rng: random.Random | None = None) -> StrategyResult:
    """Replay ``jobs`` under ``strategy``.

    Args:
        jobs: the trace, sorted by submission time (as :func:`~hybridgpu.burst.trace.load_trace` returns it).
        params: topology and environment.
        strategy: one of :data:`STRATEGIES`.
        rng: random stream for spot interruptions (default ``random.Random(params.seed)``);
            anything with ``expovariate(rate)``.

    Returns:
        The :class:`StrategyResult`.

    Raises:
        ValueError: unknown strategy.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    rng = rng or random.Random(params.seed)
    if strategy == "on-demand":
        ceilings = {"spot": 0, "on-demand": params.on_demand_gpus + params.spot_gpus}
    elif strategy == "spot":
        ceilings = {"spot": params.spot_gpus, "on-demand": params.on_demand_gpus}
    else:
        ceilings = {"spot": 0, "on-demand": 0}
    prices = {"spot": params.spot_usd_per_gpu_hour, "on-demand": params.on_demand_usd_per_gpu_hour}
    free_cloud = dict(ceilings)
    free_onprem = params.onprem_gpus
    delay, launch = params.dispatch_delay_s, params.launch_s
    rate_s = params.interruptions_per_instance_hour / 3600.0

    n = len(jobs)
    remaining = [j.duration_s for j in jobs]
    pool = [_pool_of(j, strategy) for j in jobs]
    first_start: list[float | None] = [None] * n
    burst_flag = [False] * n
    # Per running cloud job: (pool, admitted_at, work_start, generation) to tell stale events apart.
    generation = [0] * n
    running_cloud: dict[int, tuple[str, float, float]] = {}
    # Waiting jobs in buckets (gpus, pool) of deques of (order, job, eligible_at): within a bucket
    # both the queue order and the cloud eligibility time increase, so only heads matter.
    buckets: dict[tuple[int, str | None], deque[tuple[int, int, float]]] = {}
    order = 0
    events: list[tuple[float, int, int, int, int]] = []
    seq = 0
    for i, j in enumerate(jobs):
        events.append((j.submit_s, seq, _ARRIVE, i, 0))
        seq += 1
    heapq.heapify(events)
    onprem_busy = 0.0
    gpu_seconds = {"spot": 0.0, "on-demand": 0.0}
    interruptions = 0
    lost = 0.0
    never = 0
    last_end = jobs[0].submit_s if jobs else 0.0

    def enqueue(i: int, now: float) -> None:
        nonlocal order, seq
        p = pool[i]
        eligible = now + delay
        buckets.setdefault((jobs[i].gpus, p), deque()).append((order, i, eligible))
        order += 1
        if p is not None and ceilings[p] >= jobs[i].gpus:
            heapq.heappush(events, (eligible, seq, _ELIGIBLE, i, 0))
            seq += 1

    def start_cloud(i: int, p: str, now: float, admitted: float | None = None) -> None:
        nonlocal seq
        if admitted is None:  # a new admission (not a relaunch after an interruption)
            free_cloud[p] -= jobs[i].gpus
            admitted = now
        burst_flag[i] = True
        work_start = now + launch
        if first_start[i] is None:
            first_start[i] = work_start
        generation[i] += 1
        running_cloud[i] = (p, admitted, work_start)
        end = work_start + remaining[i]
        if p == "spot" and rate_s > 0:
            instances = math.ceil(jobs[i].gpus / params.gpus_per_instance)
            t_int = rng.expovariate(rate_s * instances)
            if t_int < remaining[i]:
                heapq.heappush(events, (work_start + t_int, seq, _INTERRUPT, i, generation[i]))
                seq += 1
                return
        heapq.heappush(events, (end, seq, _FINISH_CLOUD, i, generation[i]))
        seq += 1

    def schedule(now: float) -> None:
        nonlocal free_onprem, onprem_busy, seq
        while True:
            best: tuple[int, tuple[int, str | None], str] | None = None
            for key, dq in buckets.items():
                if not dq:
                    continue
                o, i, eligible = dq[0]
                if best is not None and o >= best[0]:
                    continue
                gpus, p = key
                if gpus <= free_onprem:
                    best = (o, key, "onprem")
                elif p is not None and eligible <= now and gpus <= free_cloud[p]:
                    best = (o, key, p)
            if best is None:
                return
            _, key, where = best
            _, i, _ = buckets[key].popleft()
            if where == "onprem":
                free_onprem -= jobs[i].gpus
                if first_start[i] is None:
                    first_start[i] = now
                onprem_busy += jobs[i].gpus * remaining[i]
                heapq.heappush(events, (now + remaining[i], seq, _FINISH_ONPREM, i, 0))
                seq += 1
            else:
                start_cloud(i, where, now)

    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, _, kind, i, gen = heapq.heappop(events)
            if kind == _ARRIVE:
                p = pool[i]
                fits = jobs[i].gpus <= params.onprem_gpus or (p is not None and jobs[i].gpus <= ceilings[p])
                if not fits:
                    never += 1
                    continue
                enqueue(i, now)
            elif kind == _FINISH_ONPREM:
                free_onprem += jobs[i].gpus
                remaining[i] = 0.0
                last_end = max(last_end, now)
            elif kind in (_FINISH_CLOUD, _INTERRUPT):
                if gen != generation[i]:
                    continue
                p, admitted, work_start = running_cloud.pop(i)
                if kind == _FINISH_CLOUD:
                    free_cloud[p] += jobs[i].gpus
                    gpu_seconds[p] += jobs[i].gpus * (now - admitted)
                    remaining[i] = 0.0
                    last_end = max(last_end, now)
                else:
                    interruptions += 1
                    worked = now - work_start
                    ckpt = jobs[i].checkpoint_s or math.inf
                    saved = math.floor(worked / ckpt) * ckpt if math.isfinite(ckpt) else 0.0
                    lost += jobs[i].gpus * (worked - saved)
                    remaining[i] -= saved
                    start_cloud(i, p, now, admitted)
            # _ELIGIBLE only triggers the scheduling pass below.
        schedule(now)

    waits = sorted(fs - j.submit_s for fs, j in zip(first_start, jobs) if fs is not None)
    makespan = (last_end - jobs[0].submit_s) if jobs else 0.0
    hours = {p: s / 3600.0 for p, s in gpu_seconds.items()}
    return StrategyResult(
        strategy=strategy,
        jobs=n,
        never_admitted=never,
        wait_p50_s=percentile(waits, 50),
        wait_p90_s=percentile(waits, 90),
        wait_p99_s=percentile(waits, 99),
        wait_mean_s=(sum(waits) / len(waits)) if waits else 0.0,
        onprem_utilization=(onprem_busy / (params.onprem_gpus * makespan)) if makespan > 0 and params.onprem_gpus else 0.0,
        makespan_s=makespan,
        burst_jobs=sum(burst_flag),
        gpu_hours=hours,
        cost_usd={p: hours[p] * prices[p] for p in hours},
        interruptions=interruptions,
        lost_gpu_hours=lost / 3600.0,
    )


def compare(jobs: Sequence[Job], params: SimulationParams) -> list[StrategyResult]:
    """Run every strategy of :data:`STRATEGIES` on the same trace (each with its own ``Random(params.seed)``)."""
    return [simulate(jobs, params, s) for s in STRATEGIES]


def params_from_plan(plan, *, seed: int = 0) -> SimulationParams:
    """Simulation parameters from a derived :class:`~hybridgpu.burst.plan.BurstPlan` and its ``simulation`` section.

    On-prem GPUs are the whole GPUs of the on-prem ClusterQueue (MIG instances are not simulated).

    Raises:
        ValueError: the plan has no ``simulation`` section.
    """
    sim = plan.source.simulation
    if sim is None:
        raise ValueError(f"{plan.file} has no `simulation` section (karpenterLaunchSeconds, spotInterruptionsPerInstanceHour, gpusPerInstance, source)")
    spot = plan.cloud.get("spot")
    od = plan.cloud.get("on-demand")
    delay = INCREMENTAL_DISPATCH_SECONDS if plan.source.topology == "spillover" else 0.0
    return SimulationParams(
        onprem_gpus=sum(plan.onprem.gpus.values()),
        spot_gpus=spot.gpus if spot else 0,
        on_demand_gpus=od.gpus if od else 0,
        spot_usd_per_gpu_hour=spot.usd_per_gpu_hour if spot else 0.0,
        on_demand_usd_per_gpu_hour=od.usd_per_gpu_hour if od else 0.0,
        dispatch_delay_s=float(delay),
        launch_s=sim.karpenter_launch_seconds,
        interruptions_per_instance_hour=sim.spot_interruptions_per_instance_hour,
        gpus_per_instance=sim.gpus_per_instance,
        seed=seed,
    )


def format_hours(seconds: float) -> str:
    """Seconds as hours with two decimals, e.g. ``0.17 h``."""
    return f"{seconds / 3600:.2f} h"


def comparison_rows(results: Sequence[StrategyResult]) -> list[tuple[str, list[str]]]:
    """The side-by-side table of :func:`compare`'s results: ``(row label, one value per strategy)``.

    Rows: queue-wait percentiles and mean (hours), on-prem utilization, jobs that burst and that
    were never admitted, cloud GPU-hours by capacity type, spot interruptions and the GPU-hours
    they lost, cloud cost (USD) and makespan (hours). Used by ``hybridgpu burst simulate`` and
    ``benchmarks/burst_bench.py``.
    """
    return [
        ("queue wait p50", [format_hours(r.wait_p50_s) for r in results]),
        ("queue wait p90", [format_hours(r.wait_p90_s) for r in results]),
        ("queue wait p99", [format_hours(r.wait_p99_s) for r in results]),
        ("queue wait mean", [format_hours(r.wait_mean_s) for r in results]),
        ("on-prem utilization", [f"{r.onprem_utilization:.1%}" for r in results]),
        ("jobs that burst", [str(r.burst_jobs) for r in results]),
        ("never admitted", [str(r.never_admitted) for r in results]),
        ("spot GPU-hours", [f"{r.gpu_hours['spot']:,.0f}" for r in results]),
        ("on-demand GPU-hours", [f"{r.gpu_hours['on-demand']:,.0f}" for r in results]),
        ("spot interruptions", [str(r.interruptions) for r in results]),
        ("GPU-hours lost to interruptions", [f"{r.lost_gpu_hours:,.1f}" for r in results]),
        ("cloud cost (USD)", [f"{r.total_cost_usd:,.0f}" for r in results]),
        ("makespan", [format_hours(r.makespan_s) for r in results]),
    ]
