"""Burst simulator: replay a demand trace through a topology, no cluster (pure Python).

Discrete-event simulation (``heapq``) of what Kueue v0.19 MultiKueue and Karpenter do with a
trace (kubernetes-sigs/kueue tag v0.19.2, commit 8eab6877, read 2026-11-24):

* **Manager reservation** (spillover): each queue class has its ClusterQueue on the manager whose
  flavors mirror the worker flavors (:func:`hybridgpu.burst.plan.assemble_plan`): on-prem
  (``onprem_gpus``) and, for a class that bursts, its capacity type (the ceiling). A job reserves
  quota in the first flavor with room (a pod set takes one flavor); a job larger than every
  flavor is never admitted. BestEffortFIFO, Kueue's default: the earliest-submitted waiting job
  that fits goes first; a large one at the head does not block smaller ones behind it.
* **Incremental dispatch** (spillover): the round starts when the manager reserves quota and
  nominates the first worker (``pkg/controller/workloaddispatcher/incrementaldispatcher.go``:
  the dispatcher returns early while the workload has no quota reservation, and records the round
  start when it nominates). On-prem is nominated at reservation, EKS ``dispatch_delay_s`` (one
  round, ``incrementalDispatcherRoundTimeout`` = 5 min) later if on-prem has not admitted the job;
  then the first worker that admits it wins. Under a backlog, a freed cloud slot therefore waits
  a full round after the reservation it allows.
* **Split-queues**: the user's queue decides. ``queue: local`` jobs run on-prem only (the on-prem
  ClusterQueue); ``queue: burst`` jobs (``<queue>-burst``) run in EKS only, dispatched at
  reservation (AllAtOnce, one worker): no round.
* **Cloud nodes** (node granularity, as Karpenter launches them): a pool launches whole instances
  of ``gpus_per_instance`` GPUs; its ceiling (the NodePool ``nvidia.com/gpu`` limit) counts the
  instances' GPUs. A job smaller than an instance takes the fullest running node with room
  (best fit; it starts when that node is ready) or launches one; a larger job launches
  ceil(GPUs / instance) nodes of its own. A node is billed for all its GPUs from launch until its
  last job leaves (terminated at once: ``consolidateAfter`` is not modelled, so a pool's idle
  tail is under-billed by at most ``consolidateAfter`` per node). Kueue's GPU quota (the ceiling)
  is checked too.
* **Spot interruptions**: each spot node is reclaimed after an exponential time at
  ``interruptions_per_instance_hour``; every job on it loses the work since its last checkpoint,
  keeps its Kueue admission (its pods are recreated, e.g. a Job with a ``podFailurePolicy`` that
  ignores ``DisruptionTarget``), and resumes when a replacement node is ready.

Strategies (:data:`STRATEGIES`): ``onprem-only`` (nothing bursts), ``spot`` (jobs that
checkpoint burst to spot, the others to on-demand), ``on-demand`` (every burstable job bursts to
on-demand, with the spot and on-demand ceilings added together so that both burst strategies
have the same cloud capacity). Jobs of class ``none`` never burst.

**Capacity Blocks** (optional: ``simulate(..., blocks=[ReservedBlock(...)])``, from the NodePools'
``capacityBlocks`` through :func:`reserved_blocks`): a block's instances exist only inside
``[start, end - 40 min)`` on the trace's axis (Karpenter offers only ``active`` reservations and deletes
a block's NodeClaims 40 minutes before its end; aws/karpenter-provider-aws v1.14.1
``pkg/providers/capacityreservation/types.go``, ``pkg/apis/v1/ec2nodeclass_status.go``, read
2026-11-27). Under both burst strategies every job that may burst tries the blocks first (prepaid,
0 marginal cost): a flavor ``reserved`` after on-prem on the manager whose quota is the GPUs of the
blocks active at the time, and on the EKS worker the block's nodes (whole instances launched on demand,
``launch_s``, at most the block's instance count; a job's GPUs stay in one block). At the usable end
every job on the block is evicted: it loses the work since its last checkpoint, gives its GPUs back
and is requeued (dispatched again, one round in spillover). The block's upfront fee is a fixed cost of
every strategy (bought whatever the jobs do); the result lists per block its used and idle GPU-hours
(:class:`BlockUse`). Without blocks nothing of this runs and results are unchanged.

**Pod sets** (trace columns ``pods`` and ``gpus_per_pod``): a shaped job is a gang of ``pods`` pods,
all admitted or none (Kueue admits a workload's pod sets whole); in the cloud each pod runs on one node,
so an instance of ``G`` GPUs holds ``G // gpus_per_pod`` of its pods, and a pod larger than the instance
never runs there. On-prem capacity stays a GPU count (host sizes are not simulated).

The random stream (spot interruptions only) comes from ``random.Random(seed)``: a run is
reproducible.

**GPU failures** (optional, off by default: ``simulate(..., failures=GpuFailures(...))``): every
running job fails after an exponential time at ``failures_per_gpu_hour x its GPUs`` (any GPU
stops a synchronous job; the rate of :mod:`hybridgpu.economics.failure`). It loses the work since
its last checkpoint (``checkpoint_s``; all of it without), keeps its GPUs and its admission (the
node is repaired or replaced in place) and resumes after ``restart_s``, holding its GPUs
meanwhile. The failure draws come from their own stream, ``random.Random(f"gpu-failures-{seed}")``,
and nothing is drawn without failures, so such runs are unchanged; with failures the result is a
:class:`FailureStrategyResult`.
"""

from __future__ import annotations

import heapq
import math
from functools import reduce
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime

from hybridgpu.burst.models import INCREMENTAL_DISPATCH_SECONDS
from hybridgpu.burst.trace import Job
from hybridgpu.catalog import Catalog
from hybridgpu.config.capacity_blocks import CAPACITY_BLOCK_EXPIRY_LEAD
from hybridgpu.config.models import CloudConfig

STRATEGIES = ("onprem-only", "spot", "on-demand")
TOPOLOGIES = ("spillover", "split-queues")

#: What the cost figures are, printed with the table.
COST_MODEL = (
    "cloud cost: whole instances billed from Karpenter launch until their last job leaves (jobs share a node when "
    "they fit; consolidateAfter not modelled)"
)

_ARRIVE, _FINISH_ONPREM, _FINISH_CLOUD, _ELIGIBLE, _RECLAIM, _GPU_FAIL, _BLOCK_START, _BLOCK_END = range(8)

#: Seconds before a Capacity Block's end when Karpenter deletes its nodes (40 minutes, v1.14.1).
BLOCK_EXPIRY_LEAD_S = CAPACITY_BLOCK_EXPIRY_LEAD.total_seconds()


@dataclass(frozen=True)
class ReservedBlock:
    """One EC2 Capacity Block on the trace's time axis.

    Attributes:
        id: the capacity reservation id (``cr-...``).
        node_pool: the NodePool that launches into it.
        start_s: the block's start, seconds from the trace start (may be negative: it began earlier).
        end_s: the block's end, seconds from the trace start; its nodes go at ``end_s - 2400``.
        instances: instances in the block.
        gpus_per_instance: GPUs per instance of the block's type (catalog).
        upfront_fee_usd: what the block cost, USD (None: unpriced, counted 0).

    Raises:
        ValueError: ``end_s <= start_s``, fewer than 1 instance or GPU, a negative or non-finite fee.
    """

    id: str
    node_pool: str
    start_s: float
    end_s: float
    instances: int
    gpus_per_instance: int
    upfront_fee_usd: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start_s) and math.isfinite(self.end_s)) or self.end_s <= self.start_s:
            raise ValueError(f"Capacity Block {self.id}: end {self.end_s} s must be after start {self.start_s} s")
        if self.instances < 1 or self.gpus_per_instance < 1:
            raise ValueError(f"Capacity Block {self.id}: needs >= 1 instance of >= 1 GPU ({self.instances} x {self.gpus_per_instance})")
        if self.upfront_fee_usd is not None and (not math.isfinite(self.upfront_fee_usd) or self.upfront_fee_usd < 0):
            raise ValueError(f"Capacity Block {self.id}: upfront fee {self.upfront_fee_usd} must be a finite number >= 0")

    @property
    def gpus(self) -> int:
        """GPUs in the block (instances x GPUs per instance)."""
        return self.instances * self.gpus_per_instance

    @property
    def usable_end_s(self) -> float:
        """When Karpenter deletes the block's nodes: 40 minutes before its end (seconds on the trace's axis)."""
        return self.end_s - BLOCK_EXPIRY_LEAD_S


@dataclass
class BlockUse:
    """What a strategy did with one Capacity Block.

    Attributes:
        id, node_pool, gpus: the block, its NodePool and its GPUs.
        window_gpu_hours: GPUs x hours of the paid window on the trace's axis (from the later of its
            start and the trace start to its end, the unusable last 40 minutes included).
        used_gpu_hours: GPU-hours held by jobs on its nodes (placed to released).
        idle_gpu_hours: ``window_gpu_hours - used_gpu_hours``.
        evictions: jobs evicted at its usable end.
        lost_gpu_hours: GPU-hours of work those evictions lost (since the last checkpoint).
        fee_usd: its upfront fee, USD (0 when unpriced).
    """

    id: str
    node_pool: str
    gpus: int
    window_gpu_hours: float
    used_gpu_hours: float
    idle_gpu_hours: float
    evictions: int
    lost_gpu_hours: float
    fee_usd: float


def reserved_blocks(cloud: CloudConfig | None, catalog: Catalog, start: datetime) -> list[ReservedBlock]:
    """The Capacity Blocks of ``cloud``'s NodePools on a trace that starts at ``start`` (UTC).

    Blocks that end (40-minute lead included) at or before ``start`` are left out: they hold nothing in
    the simulated time. A block of a type the catalog does not know is left out too (validation refuses it).

    Returns:
        The blocks in NodePool and list order.
    """
    if cloud is None:
        return []
    known = {t.name: t.gpu_count for t in catalog.instance_types}
    out = []
    for pool in cloud.node_pools:
        for block in pool.capacity_blocks:
            per = known.get(block.instance_type, 0)
            b = ReservedBlock(
                block.id, pool.name, (block.start - start).total_seconds(), (block.end - start).total_seconds(),
                block.instance_count, max(per, 1), block.upfront_fee_usd,
            )
            if per >= 1 and b.usable_end_s > 0:
                out.append(b)
    return out


@dataclass(frozen=True)
class GpuFailures:
    """GPU failures to simulate (see the module docstring).

    Attributes:
        failures_per_gpu_hour: failures per GPU-hour (> 0; the packaged default is
            :func:`hybridgpu.economics.failure.failure_source`'s).
        restart_s: seconds from a failure until the job works again (detect, repair or replace
            the node, restore the checkpoint), GPUs held.
        seed: seed of the failure stream.

    Raises:
        ValueError: a rate that is not a finite number > 0, or a negative or non-finite restart (names the field).
    """

    failures_per_gpu_hour: float
    restart_s: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        rate, restart = self.failures_per_gpu_hour, self.restart_s
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
            raise ValueError(f"failures_per_gpu_hour: {rate!r} must be a finite number > 0 (failures per GPU-hour, e.g. 2e-5)")
        if isinstance(restart, bool) or not isinstance(restart, (int, float)) or not math.isfinite(restart) or restart < 0:
            raise ValueError(f"restart_s: {restart!r} must be a finite number of seconds >= 0")


@dataclass(frozen=True)
class SimulationParams:
    """Topology and environment of a simulation.

    Attributes:
        onprem_gpus: GPUs on-prem (whole GPUs the on-prem ClusterQueue admits).
        spot_gpus: spot ceiling in GPUs (NodePool limit = EKS ClusterQueue quota).
        on_demand_gpus: on-demand ceiling in GPUs.
        spot_usd_per_gpu_hour: spot price, USD per GPU-hour.
        on_demand_usd_per_gpu_hour: on-demand price, USD per GPU-hour.
        dispatch_delay_s: seconds from the manager's reservation to the nomination of EKS
            (spillover; :data:`~hybridgpu.burst.models.INCREMENTAL_DISPATCH_SECONDS`, Kueue's
            Incremental round). Ignored for split-queues (AllAtOnce to one worker).
        launch_s: seconds from a Karpenter launch to a working node.
        interruptions_per_instance_hour: spot interruption rate per instance-hour.
        gpus_per_instance: GPUs per cloud instance.
        seed: seed of the interruption random stream.
        topology: ``spillover`` or ``split-queues``.

    Raises:
        ValueError: a negative or non-finite number, an unknown topology, or ``gpus_per_instance`` < 1
            (the message names the field).
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
    topology: str = "spillover"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("seed", "topology"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{f.name}: {value!r} is not a number")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{f.name}: {value!r} must be a finite number >= 0")
        if self.gpus_per_instance < 1:
            raise ValueError(f"gpus_per_instance: {self.gpus_per_instance} must be >= 1")
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"topology: {self.topology!r}; use one of {', '.join(TOPOLOGIES)}")


@dataclass
class StrategyResult:
    """What one strategy did with the trace.

    Attributes:
        strategy: ``onprem-only``, ``spot`` or ``on-demand``.
        jobs: jobs in the trace.
        never_admitted: jobs larger than every place they may run (they reserve nothing).
        admitted: jobs that started (the set the wait percentiles cover).
        wait_p50_s, wait_p90_s, wait_p99_s, wait_mean_s: queue wait (submission to first work:
            on-prem start, or cloud node ready), seconds, over the admitted jobs.
        onprem_utilization: busy on-prem GPU-seconds / (on-prem GPUs x makespan), 0..1.
        makespan_s: first submission to last completion, seconds.
        burst_jobs: jobs that ran in the cloud at least once.
        gpu_hours: capacity type (``spot``/``on-demand``) -> billed cloud GPU-hours (whole instances, launch included).
        cost_usd: capacity type -> USD.
        interruptions: spot node reclaims that hit at least one job.
        lost_gpu_hours: GPU-hours of work lost to interruptions (since the last checkpoint).
        nodes_launched: cloud instances launched.
        blocks: per Capacity Block given to :func:`simulate`, what the strategy did with it (empty without blocks).
        unfinished: jobs that never finished although admissible when submitted (waiting for, or evicted from,
            a block that ended); 0 without blocks.
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
    admitted: int = 0
    nodes_launched: int = 0
    blocks: list[BlockUse] = field(default_factory=list)
    unfinished: int = 0

    @property
    def total_cost_usd(self) -> float:
        """Cloud cost over both capacity types, USD."""
        return sum(self.cost_usd.values())


@dataclass
class FailureStrategyResult(StrategyResult):
    """A :class:`StrategyResult` of a run with :class:`GpuFailures` (a separate type, so runs without keep their fields and output).

    Attributes:
        gpu_failures: job failures (one per failed job, whatever its GPUs).
        failure_lost_gpu_hours: GPU-hours of work redone after failures (since the last checkpoint).
        failure_restart_gpu_hours: GPU-hours held while failed jobs restarted.
    """

    gpu_failures: int = 0
    failure_lost_gpu_hours: float = 0.0
    failure_restart_gpu_hours: float = 0.0


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


class _Node:
    """A cloud instance: pool, launch/ready times, free GPUs, the jobs on it (job -> GPUs)."""

    __slots__ = ("pool", "launched", "ready", "free", "jobs", "alive", "block")

    def __init__(self, pool: str, launched: float, ready: float, free: int, block: int = -1):
        self.pool = pool
        self.launched = launched
        self.ready = ready
        self.free = free
        self.jobs: dict[int, int] = {}
        self.alive = True
        self.block = block  # index of its Capacity Block, -1 for a spot or on-demand node


class _Buckets:
    """Waiting jobs by size: per GPU count a deque of ``(order, job, ready_at)`` whose order and
    ready times both increase, so only the heads matter (BestEffortFIFO in O(sizes) per pass)."""

    __slots__ = ("by_size",)

    def __init__(self) -> None:
        self.by_size: dict[int, deque[tuple[int, int, float]]] = {}

    def push(self, gpus: int, order: int, job: int, ready_at: float) -> None:
        self.by_size.setdefault(gpus, deque()).append((order, job, ready_at))


def simulate(jobs: Sequence[Job], params: SimulationParams, strategy: str, *, rng: random.Random | None = None,
             failures: GpuFailures | None = None, starts: list[float | None] | None = None,
             blocks: Sequence[ReservedBlock] = ()) -> StrategyResult:
    """Replay ``jobs`` under ``strategy``.

    Args:
        jobs: the trace, sorted by submission time (as :func:`~hybridgpu.burst.trace.load_trace` returns it).
        params: topology and environment.
        strategy: one of :data:`STRATEGIES`.
        rng: random stream for spot interruptions (default ``random.Random(params.seed)``);
            anything with ``expovariate(rate)``.
        failures: GPU failures to simulate (None: none, the default).
        starts: when given, extended with each job's first start (seconds; None: never admitted), in
            the order of ``jobs``, for per-queue figures (``hybridgpu cost plan --apply``).
        blocks: Capacity Blocks on the trace's axis (:func:`reserved_blocks`); used by the burst strategies.

    Returns:
        The :class:`StrategyResult` (a :class:`FailureStrategyResult` with ``failures``).

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
    split = params.topology == "split-queues"
    gpi = params.gpus_per_instance
    onprem_cap = params.onprem_gpus
    delay = 0.0 if split else params.dispatch_delay_s
    launch = params.launch_s
    reclaim_rate_s = params.interruptions_per_instance_hour / 3600.0
    fail_rate_s = failures.failures_per_gpu_hour / 3600.0 if failures is not None else 0.0
    fail_rng = random.Random(f"gpu-failures-{failures.seed}") if failures is not None else None
    use_blocks = bool(blocks) and strategy != "onprem-only"
    nblocks = len(blocks)
    bnodes: list[list[_Node]] = [[] for _ in blocks]  # live nodes of each block
    b_alloc = [0] * nblocks  # GPUs held by jobs on each block now
    b_t = [0.0] * nblocks
    b_used = [0.0] * nblocks  # GPU-seconds held
    b_evict = [0] * nblocks
    b_lost = [0.0] * nblocks

    n = len(jobs)
    gpus = [j.gpus for j in jobs]
    pods = [j.pods for j in jobs]
    per_pod = [j.gpus_per_pod for j in jobs]
    on_block = [-1] * n  # the block a job's GPUs are on, -1 for none
    remaining = [j.duration_s for j in jobs]
    pool: list[str | None] = [_pool_of(j, strategy) for j in jobs]
    if split:  # the queue decides: local jobs never burst, burst jobs never run on-prem
        pool = [p if j.queue == "burst" else None for p, j in zip(pool, jobs)]
    onprem_ok = [not (split and j.queue == "burst" and pool[i] is not None) for i, j in enumerate(jobs)]
    # The manager ClusterQueue a job reserves in: per queue class (spillover), or the on-prem
    # local queue / the burst queue of its capacity type (split-queues).
    manager_key: list[str] = []
    for j, p, ok in zip(jobs, pool, onprem_ok):
        if not split:
            manager_key.append(j.burst)
        else:  # a job barred from on-prem has a pool (onprem_ok above)
            manager_key.append("local" if ok or p is None else "burst-" + p)
    first_start: list[float | None] = [None] * n
    burst_flag = [False] * n
    started = [False] * n  # admitted by a worker
    generation = [0] * n
    manager_flavor: list[str | None] = [None] * n  # "onprem" or the pool name: which manager flavor holds its quota
    placement: dict[int, dict[_Node, int]] = {}
    work_start = [0.0] * n

    def own_nodes(i: int, size: int) -> float:
        """Instances of ``size`` GPUs job ``i`` launches on its own (inf: one of its pods is larger than the instance)."""
        shape_pods, shape_gpus = pods[i], per_pod[i]
        if shape_pods is None or shape_gpus is None:
            return math.ceil(gpus[i] / size)
        per_node = size // shape_gpus
        return math.ceil(shape_pods / per_node) if per_node else math.inf

    def per_node_gpus(i: int, size: int) -> int:
        """Most GPUs of job ``i`` one instance of ``size`` GPUs holds (its whole pods only, for a shaped job)."""
        shape_gpus = per_pod[i]
        return size if shape_gpus is None else (size // shape_gpus) * shape_gpus

    def nodes_for(i: int) -> float:
        """GPUs of the instances job ``i`` launches on its own (counts against the NodePool limit; >= its GPUs)."""
        return own_nodes(i, gpi) * gpi

    # Manager usage per class (pool key) and flavor.
    manager_used: dict[str, dict[str, int]] = {}  # manager ClusterQueue -> flavor -> GPUs reserved
    cloud_quota_used = {"spot": 0, "on-demand": 0}
    node_gpus = {"spot": 0, "on-demand": 0}  # GPUs of live nodes (NodePool limit)
    live_nodes: dict[str, list[_Node]] = {"spot": [], "on-demand": []}
    free_onprem = onprem_cap

    manager_q: dict[str, _Buckets] = {}
    onprem_q = _Buckets()
    cloud_q: dict[str, _Buckets] = {"spot": _Buckets(), "on-demand": _Buckets()}
    order = 0
    events: list[tuple[float, int, int, int, int]] = []
    seq = 0
    for i, j in enumerate(jobs):
        events.append((j.submit_s, seq, _ARRIVE, i, 0))
        seq += 1
    heapq.heapify(events)
    node_events: dict[int, _Node] = {}
    onprem_busy = 0.0
    billed_s = {"spot": 0.0, "on-demand": 0.0}
    interruptions = 0
    lost = 0.0
    failed_jobs = 0
    fail_lost = 0.0
    fail_restart = 0.0
    never = 0
    launched_count = 0
    last_end = jobs[0].submit_s if jobs else 0.0

    def push(t: float, kind: int, i: int, gen: int = 0) -> None:
        nonlocal seq
        heapq.heappush(events, (t, seq, kind, i, gen))
        seq += 1

    if use_blocks:
        for b, bl in enumerate(blocks):
            push(max(bl.start_s, 0.0), _BLOCK_START, b)
            push(bl.usable_end_s, _BLOCK_END, b)

    def manager_flavors(i: int) -> tuple[tuple[str, int], ...]:
        """The flavors of job ``i``'s manager ClusterQueue, in order: on-prem, then its capacity type."""
        p = pool[i]
        out: list[tuple[str, int]] = []
        if onprem_ok[i]:
            out.append(("onprem", onprem_cap))
        if use_blocks and p is not None:
            out.append(("reserved", -1))  # quota: the GPUs of the blocks active at the time
        if p is not None:
            out.append((p, ceilings[p]))
        return tuple(out)

    flavors_of = [manager_flavors(i) for i in range(n)]

    def block_ever(i: int, now: float) -> bool:
        """A block usable now or later could hold job ``i`` on its own nodes."""
        return use_blocks and pool[i] is not None and any(
            b.usable_end_s > now and own_nodes(i, b.gpus_per_instance) <= b.instances for b in blocks
        )

    def admissible(i: int, now: float) -> bool:
        """Fits at least one place it may run: a manager flavor and that worker."""
        g, p = gpus[i], pool[i]
        if onprem_ok[i] and g <= onprem_cap:
            return True
        return p is not None and (nodes_for(i) <= ceilings[p] or block_ever(i, now))

    def reserved_cap(now: float) -> int:
        return sum(b.gpus for b in blocks if b.start_s <= now < b.usable_end_s)

    def touch(b: int, now: float) -> None:
        b_used[b] += b_alloc[b] * (now - b_t[b])
        b_t[b] = now

    def block_for(i: int, now: float) -> int | None:
        """The first block active at ``now`` with room for job ``i`` (a shared node, or free instances), or None."""
        if not use_blocks or pool[i] is None:
            return None
        g = gpus[i]
        for b, bl in enumerate(blocks):
            if not bl.start_s <= now < bl.usable_end_s:
                continue
            if g < bl.gpus_per_instance and any(nd.free >= g for nd in bnodes[b]):
                return b
            if own_nodes(i, bl.gpus_per_instance) <= bl.instances - len(bnodes[b]):
                return b
        return None

    def spread_on_new_nodes(i: int, g: int, per: int, parts: dict[_Node, int], launch_node: Callable[[], _Node], now: float) -> float:
        """Put ``g`` GPUs of job ``i`` on nodes ``launch_node`` starts, ``per`` GPUs each (the last takes the rest);
        returns when the last is ready (``now`` for ``g`` = 0)."""
        ready, left = now, g
        while left > 0:
            nd = launch_node()
            take = min(per, left)
            nd.free -= take
            nd.jobs[i] = take
            parts[nd] = take
            left -= take
            ready = nd.ready
        return ready

    def place_block(i: int, b: int, now: float) -> float:
        """Put job ``i`` on block ``b``'s nodes (a shared node, else instances of its own); returns when they are ready."""
        size, g = blocks[b].gpus_per_instance, gpus[i]
        parts = placement.setdefault(i, {})
        touch(b, now)
        b_alloc[b] += g
        on_block[i] = b
        if g < size:
            fits = [nd for nd in bnodes[b] if nd.free >= g]
            if fits:
                nd = min(fits, key=lambda x: (x.free, x.ready))
                nd.free -= g
                nd.jobs[i] = g
                parts[nd] = g
                return max(nd.ready, now)
        return spread_on_new_nodes(i, g, per_node_gpus(i, size), parts, lambda: launch_block_node(b, size, now), now)

    def launch_block_node(b: int, size: int, now: float) -> _Node:
        nonlocal launched_count
        nd = _Node("reserved", now, now + launch, size, b)
        bnodes[b].append(nd)
        launched_count += 1
        return nd

    def terminate(node: _Node, now: float) -> None:
        if node.block >= 0:  # a block's node: prepaid, nothing billed per hour
            node.alive = False
            bnodes[node.block].remove(node)
            return
        node.alive = False
        live_nodes[node.pool].remove(node)
        node_gpus[node.pool] -= gpi
        billed_s[node.pool] += gpi * (now - node.launched)

    def new_node(p: str, now: float) -> _Node:
        nonlocal launched_count
        node = _Node(p, now, now + launch, gpi)
        live_nodes[p].append(node)
        node_gpus[p] += gpi
        launched_count += 1
        if p == "spot" and reclaim_rate_s > 0:
            key = id(node)
            node_events[key] = node
            push(now + rng.expovariate(reclaim_rate_s), _RECLAIM, key)
        return node

    def can_place(p: str, i: int) -> bool:
        g = gpus[i]
        if g < gpi and any(nd.free >= g for nd in live_nodes[p]):
            return True
        return node_gpus[p] + nodes_for(i) <= ceilings[p]

    def place(i: int, p: str, g: int, now: float) -> float:
        """Put ``g`` GPUs of job ``i`` on pool ``p``'s nodes; returns when they are all ready."""
        parts = placement.setdefault(i, {})
        if g < gpi:
            fits = [nd for nd in live_nodes[p] if nd.free >= g]
            if fits:
                nd = min(fits, key=lambda x: (x.free, x.ready))
                nd.free -= g
                nd.jobs[i] = nd.jobs.get(i, 0) + g
                parts[nd] = parts.get(nd, 0) + g
                return max(nd.ready, now)
        return spread_on_new_nodes(i, g, per_node_gpus(i, gpi), parts, lambda: new_node(p, now), now)

    def release(i: int, now: float) -> None:
        b = on_block[i]
        if b >= 0:
            touch(b, now)
            b_alloc[b] -= gpus[i]
            on_block[i] = -1
        for nd, g in placement.pop(i, {}).items():
            if not nd.alive:
                continue
            nd.free += g
            del nd.jobs[i]
            if not nd.jobs:
                terminate(nd, now)

    def unreserve(i: int) -> None:
        """Give back finished job ``i``'s manager quota (a job runs only once reserved, step 1)."""
        flavor = manager_flavor[i]
        assert flavor is not None, f"job {i} finished without a manager reservation"
        manager_used[manager_key[i]][flavor] -= gpus[i]

    def draw_failure(i: int, start: float) -> None:
        """With failures on: schedule job ``i``'s next failure if it comes before its finish (memoryless: drawn at each (re)start)."""
        if fail_rng is None:
            return
        ttf = fail_rng.expovariate(fail_rate_s * gpus[i])
        if ttf < remaining[i]:
            push(start + ttf, _GPU_FAIL, i, generation[i])

    def run_cloud(i: int, ready: float) -> None:
        generation[i] += 1
        work_start[i] = ready
        if first_start[i] is None:
            first_start[i] = ready
        push(ready + remaining[i], _FINISH_CLOUD, i, generation[i])
        draw_failure(i, ready)

    dirty = {"manager": False, "onprem": False, "cloud": False}

    def schedule(now: float) -> None:
        # One pass suffices: reservations (1) only feed the workers' queues (2, 3), and admissions
        # free nothing; capacity frees only at events. A step runs only when an event (or an
        # earlier step) may have changed its answer.
        nonlocal free_onprem, onprem_busy, order
        # 1. Manager reservations, per class, BestEffortFIFO across sizes.
        rcap = reserved_cap(now) if use_blocks else 0
        for key, q in manager_q.items() if dirty["manager"] else ():
            used = manager_used[key]
            while True:
                best = None
                for g, dq in q.by_size.items():
                    if not dq or (best is not None and dq[0][0] >= best[0]):
                        continue
                    for flavor, cap in flavors_of[dq[0][1]]:
                        if used[flavor] + g <= (cap if cap >= 0 else rcap):
                            best = (dq[0][0], g, flavor)
                            break
                if best is None:
                    break
                _, g, flavor = best
                _, i, _ = q.by_size[g].popleft()
                used[flavor] += g
                manager_flavor[i] = flavor
                dirty["onprem"] = dirty["cloud"] = True
                if onprem_ok[i]:
                    onprem_q.push(g, order, i, now)
                p = pool[i]
                if p is not None and (nodes_for(i) <= ceilings[p] or block_ever(i, now)):
                    cloud_q[p].push(g, order, i, now + delay)
                    if delay > 0:
                        push(now + delay, _ELIGIBLE, i)
                order += 1
        # 2. On-prem worker admission (BestEffortFIFO over nominated jobs).
        while dirty["onprem"] and free_onprem:
            pick: tuple[int, int] | None = None  # (arrival order, size) of the oldest head that fits
            for g, dq in onprem_q.by_size.items():
                while dq and started[dq[0][1]]:
                    dq.popleft()
                if dq and g <= free_onprem and (pick is None or dq[0][0] < pick[0]):
                    pick = (dq[0][0], g)
            if pick is None:
                break
            _, i, _ = onprem_q.by_size[pick[1]].popleft()
            started[i] = True
            free_onprem -= gpus[i]
            if first_start[i] is None:
                first_start[i] = now
            onprem_busy += gpus[i] * remaining[i]
            work_start[i] = now
            push(now + remaining[i], _FINISH_ONPREM, i, generation[i])
            draw_failure(i, now)
        # 3. EKS worker admission per pool: Kueue quota and room for Karpenter nodes.
        for p, q in cloud_q.items() if dirty["cloud"] else ():
            while ceilings[p] or use_blocks:
                pick = None
                for g, dq in q.by_size.items():
                    while dq and started[dq[0][1]]:
                        dq.popleft()
                    if not dq or dq[0][2] > now or (pick is not None and dq[0][0] >= pick[0]):
                        continue
                    if (cloud_quota_used[p] + g <= ceilings[p] and can_place(p, dq[0][1])) or block_for(dq[0][1], now) is not None:
                        pick = (dq[0][0], g)
                if pick is None:
                    break
                _, i, _ = q.by_size[pick[1]].popleft()
                started[i] = True
                burst_flag[i] = True
                b = block_for(i, now)  # prepaid blocks first
                if b is not None:
                    run_cloud(i, place_block(i, b, now))
                    continue
                cloud_quota_used[p] += gpus[i]
                run_cloud(i, place(i, p, gpus[i], now))
        dirty["manager"] = dirty["onprem"] = dirty["cloud"] = False

    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, _, kind, i, gen = heapq.heappop(events)
            if kind == _ARRIVE:
                if not admissible(i, now):
                    never += 1
                    continue
                manager_q.setdefault(manager_key[i], _Buckets()).push(gpus[i], i, i, now)
                manager_used.setdefault(manager_key[i], {"onprem": 0, "reserved": 0, "spot": 0, "on-demand": 0})
                dirty["manager"] = True
            elif kind == _FINISH_ONPREM:
                if gen != generation[i]:
                    continue
                free_onprem += gpus[i]
                remaining[i] = 0.0
                unreserve(i)
                last_end = max(last_end, now)
                dirty["manager"] = dirty["onprem"] = True
            elif kind == _FINISH_CLOUD:
                if gen != generation[i]:
                    continue
                p = pool[i]
                assert p is not None
                if on_block[i] < 0:
                    cloud_quota_used[p] -= gpus[i]
                release(i, now)
                remaining[i] = 0.0
                unreserve(i)
                last_end = max(last_end, now)
                dirty["manager"] = dirty["cloud"] = True
            elif kind == _RECLAIM:
                node = node_events.pop(i, None)
                if node is None or not node.alive:
                    continue
                hit = list(node.jobs.items())
                terminate(node, now)
                if hit:
                    interruptions += 1
                for k, g in hit:
                    generation[k] += 1  # cancels its finish event
                    worked = max(0.0, now - work_start[k])
                    ckpt = jobs[k].checkpoint_s or math.inf
                    saved = math.floor(worked / ckpt) * ckpt if math.isfinite(ckpt) else 0.0
                    lost += gpus[k] * (worked - saved)
                    remaining[k] -= saved
                    del placement[k][node]
                    # The workload stays admitted (quota kept); Karpenter replaces the node.
                    ready = max([place(k, node.pool, g, now), *(nd.ready for nd in placement[k])])
                    run_cloud(k, max(ready, now))
                dirty["cloud"] = True
            elif kind == _GPU_FAIL:
                if gen != generation[i]:
                    continue  # the job finished, or a spot reclaim restarted it first
                failed_jobs += 1
                generation[i] += 1  # cancels its finish event
                worked = max(0.0, now - work_start[i])
                ckpt = jobs[i].checkpoint_s or math.inf
                saved = math.floor(worked / ckpt) * ckpt if math.isfinite(ckpt) else 0.0
                fail_lost += gpus[i] * (worked - saved)
                fail_restart += gpus[i] * failures.restart_s  # type: ignore[union-attr]  # set when failure events exist
                old_remaining = remaining[i]
                remaining[i] -= saved
                restart_at = now + failures.restart_s  # type: ignore[union-attr]
                if pool[i] is not None and i in placement:  # in the cloud: same nodes, repaired in place
                    run_cloud(i, restart_at)
                else:  # on-prem: GPUs held; busy = worked + restart + the rest again
                    onprem_busy += gpus[i] * (now - work_start[i] - old_remaining + failures.restart_s + remaining[i])  # type: ignore[union-attr]
                    generation[i] += 1
                    work_start[i] = restart_at
                    push(restart_at + remaining[i], _FINISH_ONPREM, i, generation[i])
                    draw_failure(i, restart_at)
            elif kind == _BLOCK_START:
                dirty["manager"] = dirty["cloud"] = True
            elif kind == _BLOCK_END:  # Karpenter deletes the block's nodes: evict and requeue their jobs
                for k in sorted({k for nd in bnodes[i] for k in nd.jobs}):
                    generation[k] += 1  # cancels its finish and failure events
                    worked = max(0.0, now - work_start[k])
                    ckpt = jobs[k].checkpoint_s or math.inf
                    saved = math.floor(worked / ckpt) * ckpt if math.isfinite(ckpt) else 0.0
                    b_lost[i] += gpus[k] * (worked - saved)
                    b_evict[i] += 1
                    remaining[k] -= saved
                    release(k, now)
                    started[k] = False
                    if onprem_ok[k]:
                        onprem_q.push(gpus[k], order, k, now)
                    kp = pool[k]
                    assert kp is not None
                    cloud_q[kp].push(gpus[k], order, k, now + delay)
                    if delay > 0:
                        push(now + delay, _ELIGIBLE, k)
                    order += 1
                dirty["manager"] = dirty["onprem"] = dirty["cloud"] = True
            else:  # _ELIGIBLE: EKS is nominated for a waiting workload
                dirty["cloud"] = True
        schedule(now)

    for nodes in live_nodes.values():  # nothing should be left; bill defensively
        for nd in list(nodes):
            terminate(nd, last_end)
    if starts is not None:
        starts.extend(first_start)
    waits = sorted(fs - j.submit_s for fs, j in zip(first_start, jobs) if fs is not None)
    makespan = (last_end - jobs[0].submit_s) if jobs else 0.0
    hours = {p: s / 3600.0 for p, s in billed_s.items()}
    cost = {p: hours[p] * prices[p] for p in hours}
    uses = []
    for b, bl in enumerate(blocks):
        window = bl.gpus * (bl.end_s - max(bl.start_s, 0.0)) / 3600.0
        used_h = b_used[b] / 3600.0
        uses.append(BlockUse(bl.id, bl.node_pool, bl.gpus, window, used_h, window - used_h, b_evict[b], b_lost[b] / 3600.0, bl.upfront_fee_usd or 0.0))
    if blocks:
        hours["reserved"] = sum(u.used_gpu_hours for u in uses)
        cost["reserved"] = sum(u.fee_usd for u in uses)
    unfinished = sum(1 for r in remaining if r > 0) - never if blocks else 0
    extra: dict = {} if failures is None else {"gpu_failures": failed_jobs, "failure_lost_gpu_hours": fail_lost / 3600.0, "failure_restart_gpu_hours": fail_restart / 3600.0}
    return (StrategyResult if failures is None else FailureStrategyResult)(
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
        cost_usd=cost,
        interruptions=interruptions,
        lost_gpu_hours=lost / 3600.0,
        admitted=len(waits),
        nodes_launched=launched_count,
        blocks=uses,
        unfinished=unfinished,
        **extra,
    )


def compare(jobs: Sequence[Job], params: SimulationParams, failures: GpuFailures | None = None, blocks: Sequence[ReservedBlock] = ()) -> list[StrategyResult]:
    """Run every strategy of :data:`STRATEGIES` on the same trace (each with its own ``Random(params.seed)``; ``failures``, ``blocks``: see :func:`simulate`)."""
    return [simulate(jobs, params, s, failures=failures, blocks=blocks) for s in STRATEGIES]


def params_from_plan(plan, *, seed: int = 0, require_simulation: bool = True) -> SimulationParams:
    """Simulation parameters from a derived :class:`~hybridgpu.burst.plan.BurstPlan` and its ``simulation`` section.

    On-prem GPUs are the whole GPUs of the on-prem ClusterQueue (MIG instances are not simulated).
    With ``require_simulation=False`` a plan without the section gets no launch latency, no spot
    interruptions and, as GPUs per instance, the greatest common divisor of its pools' instance sizes
    (8 when unknown).

    Raises:
        ValueError: the plan has no ``simulation`` section (and ``require_simulation``), or a figure in
            it is negative or not finite.
    """
    sim = plan.source.simulation
    if sim is None and require_simulation:
        raise ValueError(f"{plan.file} has no `simulation` section (karpenterLaunchSeconds, spotInterruptionsPerInstanceHour, gpusPerInstance, source)")
    spot = plan.cloud.get("spot")
    od = plan.cloud.get("on-demand")
    delay = INCREMENTAL_DISPATCH_SECONDS if plan.source.topology == "spillover" else 0.0
    counts = sorted({n for c in plan.cloud.values() for n in c.instance_gpu_counts})
    return SimulationParams(
        topology=plan.source.topology,
        onprem_gpus=sum(plan.onprem.gpus.values()),
        spot_gpus=spot.gpus if spot else 0,
        on_demand_gpus=od.gpus if od else 0,
        spot_usd_per_gpu_hour=spot.usd_per_gpu_hour if spot else 0.0,
        on_demand_usd_per_gpu_hour=od.usd_per_gpu_hour if od else 0.0,
        dispatch_delay_s=float(delay),
        launch_s=sim.karpenter_launch_seconds if sim else 0.0,
        interruptions_per_instance_hour=sim.spot_interruptions_per_instance_hour if sim else 0.0,
        gpus_per_instance=sim.gpus_per_instance if sim else (reduce(math.gcd, counts) if counts else 8),
        seed=seed,
    )


def format_hours(seconds: float) -> str:
    """Seconds as hours with two decimals, e.g. ``0.17 h``."""
    return f"{seconds / 3600:.2f} h"


def comparison_rows(results: Sequence[StrategyResult]) -> list[tuple[str, list[str]]]:
    """The side-by-side table of :func:`compare`'s results: ``(row label, one value per strategy)``.

    Rows: jobs admitted and never admitted, queue-wait percentiles and mean over the admitted jobs
    (hours), on-prem utilization, jobs that burst, cloud nodes launched, billed cloud GPU-hours by
    capacity type (whole instances, :data:`COST_MODEL`), spot interruptions and the GPU-hours they
    lost, cloud cost (USD) and makespan (hours); with GPU failures (:class:`FailureStrategyResult`) also
    the failures, the GPU-hours redone and those held restarting. Used by ``hybridgpu burst simulate`` and
    ``benchmarks/burst_bench.py``. With Capacity Blocks also the jobs left unfinished and, per block, its
    used, window and idle GPU-hours, the jobs evicted at its end and the work they lost (the cost row
    includes the blocks' upfront fees).
    """
    rows = [
        ("jobs admitted / in the trace", [f"{r.admitted} / {r.jobs}" for r in results]),
        ("never admitted", [str(r.never_admitted) for r in results]),
        ("queue wait p50 (admitted jobs)", [format_hours(r.wait_p50_s) for r in results]),
        ("queue wait p90 (admitted jobs)", [format_hours(r.wait_p90_s) for r in results]),
        ("queue wait p99 (admitted jobs)", [format_hours(r.wait_p99_s) for r in results]),
        ("queue wait mean (admitted jobs)", [format_hours(r.wait_mean_s) for r in results]),
        ("on-prem utilization", [f"{r.onprem_utilization:.1%}" for r in results]),
        ("jobs that burst", [str(r.burst_jobs) for r in results]),
        ("cloud nodes launched", [str(r.nodes_launched) for r in results]),
        ("spot GPU-hours", [f"{r.gpu_hours['spot']:,.0f}" for r in results]),
        ("on-demand GPU-hours", [f"{r.gpu_hours['on-demand']:,.0f}" for r in results]),
        ("spot interruptions", [str(r.interruptions) for r in results]),
        ("GPU-hours lost to interruptions", [f"{r.lost_gpu_hours:,.1f}" for r in results]),
        ("cloud cost (USD)", [f"{r.total_cost_usd:,.0f}" for r in results]),
        ("makespan", [format_hours(r.makespan_s) for r in results]),
    ]
    if all(isinstance(r, FailureStrategyResult) for r in results) and results:
        failed = [r for r in results if isinstance(r, FailureStrategyResult)]
        rows += [
            ("GPU failures (jobs hit)", [str(r.gpu_failures) for r in failed]),
            ("GPU-hours redone after failures", [f"{r.failure_lost_gpu_hours:,.1f}" for r in failed]),
            ("GPU-hours held restarting", [f"{r.failure_restart_gpu_hours:,.1f}" for r in failed]),
        ]
    if results and results[0].blocks:
        rows.append(("jobs unfinished (a block ended)", [str(r.unfinished) for r in results]))
        for k, use in enumerate(results[0].blocks):
            name = f"block {use.id} ({use.gpus} GPUs)"
            rows += [
                (f"{name}: GPU-hours used / window", [f"{r.blocks[k].used_gpu_hours:,.0f} / {r.blocks[k].window_gpu_hours:,.0f}" for r in results]),
                (f"{name}: idle GPU-hours", [f"{r.blocks[k].idle_gpu_hours:,.0f}" for r in results]),
                (f"{name}: jobs evicted at its end", [str(r.blocks[k].evictions) for r in results]),
                (f"{name}: GPU-hours lost at its end", [f"{r.blocks[k].lost_gpu_hours:,.1f}" for r in results]),
            ]
    return rows
