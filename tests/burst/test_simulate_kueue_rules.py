"""The simulator follows Kueue v0.19's rules (issue 15, point 4); answers worked out by hand.

Upstream: kubernetes-sigs/kueue tag v0.19.2 (commit 8eab6877):
``pkg/controller/workloaddispatcher/incrementaldispatcher.go`` (``Reconcile`` returns early while the
workload has no quota reservation; ``nominateWorkers`` records the round start when it nominates;
``incrementalDispatcherRoundTimeout = 5 * time.Minute``), and the manager's per-class flavors
derived by :func:`hybridgpu.burst.plan.assemble_plan` (a pod set takes one flavor).
"""

from __future__ import annotations

import math

import pytest

from hybridgpu.burst.simulate import SimulationParams, compare, comparison_rows, simulate
from hybridgpu.burst.trace import Job, TraceError, parse_trace


def _spot(submit: float, gpus: int, duration: float, queue: str = "local") -> Job:
    return Job(submit, gpus, duration, 600.0, "spot", queue)


def test_a_freed_cloud_slot_is_used_one_round_after_the_reservation():
    """On-prem 8 and spot 8 GPUs, four 8-GPU spot jobs at 0 (1000 s each), rounds of 300 s, no launch time.

    The manager's spot class has two flavors (on-prem 8, spot 8): J1 and J2 reserve at 0, J3 and
    J4 wait at the manager. J1 runs on-prem 0-1000. J2 is nominated to on-prem (full), to EKS at
    300, runs 300-1300. At 1000 J1's quota frees: J3 reserves, is nominated to on-prem, now free:
    1000-2000. At 1300 J2's quota frees: J4 reserves, on-prem is busy, EKS is nominated one round
    later, at 1600 (not at 1300: the round starts at the reservation, not at submission).
    Waits 0, 300, 1000, 1600.
    """
    jobs = [_spot(0.0, 8, 1000.0) for _ in range(4)]
    params = SimulationParams(onprem_gpus=8, spot_gpus=8, dispatch_delay_s=300, launch_s=0, gpus_per_instance=8)
    r = simulate(jobs, params, "spot")
    assert (r.wait_p50_s, r.wait_p90_s, r.wait_mean_s) == (300, 1600, (0 + 300 + 1000 + 1600) / 4)
    assert r.makespan_s == 2600 and r.burst_jobs == 2 and r.admitted == 4
    # The spot node: 300-1300 and 1600-2600, 8 GPUs.
    assert r.gpu_hours["spot"] == pytest.approx(2 * 1000 * 8 / 3600)


def test_a_job_larger_than_every_flavor_reserves_nothing_and_blocks_nobody():
    """On-demand class: on-prem 24, on-demand 16. A 32-GPU job fits no single flavor (it would fit
    24 + 16 = 40 under the old cohort): never admitted; the 16-GPU job behind it runs at once."""
    jobs = [Job(0.0, 32, 3600.0, None, "on-demand"), Job(1.0, 16, 3600.0, None, "on-demand")]
    r = simulate(jobs, SimulationParams(onprem_gpus=24, on_demand_gpus=16), "spot")
    assert r.never_admitted == 1 and r.admitted == 1 and r.wait_p50_s == 0


def test_split_queues_the_queue_decides_where_a_job_runs():
    """Split-queues, on-prem 8, spot 8, launch 60 s. A `burst` job never runs on-prem, even when
    on-prem is idle; a `local` job never bursts, even when on-prem is full.

    B1 (burst, 8 GPUs) at 0: dispatched at reservation (AllAtOnce to its one worker, no round),
    node ready at 60. L1 (local, 8) at 0 runs on-prem at once; L2 (local, 8) at 0 waits for L1
    (3600) although the spot pool is idle after B1 ends.
    """
    jobs = [_spot(0.0, 8, 600.0, "burst"), _spot(0.0, 8, 3600.0), _spot(0.0, 8, 3600.0)]
    params = SimulationParams(onprem_gpus=8, spot_gpus=16, dispatch_delay_s=300, launch_s=60, topology="split-queues")
    r = simulate(jobs, params, "spot")
    assert r.burst_jobs == 1
    assert sorted([r.wait_p50_s, r.wait_p90_s]) == [60, 3600]
    assert r.onprem_utilization == pytest.approx(2 * 8 * 3600 / (8 * 7200))
    # Spillover with the same trace: the `queue` column is ignored, the dispatcher decides (L2 bursts).
    spill = simulate(jobs, SimulationParams(onprem_gpus=8, spot_gpus=16, dispatch_delay_s=300, launch_s=60), "spot")
    assert spill.burst_jobs == 2
    # On-prem only: a burst job has nowhere to go.
    assert simulate(jobs, params, "onprem-only").never_admitted == 0  # onprem-only routes every job to its local queue


def test_small_jobs_share_a_node_and_a_lone_small_job_pays_for_the_whole_instance():
    """No on-prem, on-demand ceiling 16 (two 8-GPU instances), 1 USD per GPU-hour, launch 100 s.

    A (1 GPU, 1 h) alone: one node billed 8 GPUs x (100 + 3600) s. Then B and C (1 GPU each, 1 h)
    at 10,000 s together: one node shared, billed once: 8 x 3700 s. Per-GPU billing would have
    said 1 x 3700 x 3 GPU-seconds: 3.08 GPU-hours instead of 16.44.
    """
    jobs = [Job(0.0, 1, 3600.0, None, "on-demand"), Job(10_000.0, 1, 3600.0, None, "on-demand"), Job(10_000.0, 1, 3600.0, None, "on-demand")]
    params = SimulationParams(onprem_gpus=0, on_demand_gpus=16, on_demand_usd_per_gpu_hour=1.0, dispatch_delay_s=0, launch_s=100)
    r = simulate(jobs, params, "spot")
    assert r.nodes_launched == 2
    assert r.gpu_hours["on-demand"] == pytest.approx(2 * 8 * 3700 / 3600)
    assert r.total_cost_usd == pytest.approx(2 * 8 * 3700 / 3600)


def test_the_nodepool_limit_counts_whole_instances():
    """On-demand ceiling 8 = one 8-GPU instance: two 1-GPU jobs share it; a 12-GPU job (two
    instances, 16 GPUs of the limit) fits no pool of ceiling 8 and, with no on-prem, is never admitted."""
    jobs = [Job(0.0, 1, 100.0, None, "on-demand"), Job(0.0, 1, 100.0, None, "on-demand"), Job(0.0, 12, 100.0, None, "on-demand")]
    r = simulate(jobs, SimulationParams(onprem_gpus=0, on_demand_gpus=8, dispatch_delay_s=0), "spot")
    assert r.nodes_launched == 1 and r.never_admitted == 1


def test_the_table_has_never_admitted_and_says_which_jobs_percentiles_cover():
    jobs = [Job(0.0, 64, 60.0, None, "none"), Job(0.0, 1, 60.0, None, "none")]
    rows = dict(comparison_rows(compare(jobs, SimulationParams(onprem_gpus=8))))
    assert rows["never admitted"] == ["1", "1", "1"]
    assert rows["jobs admitted / in the trace"] == ["1 / 2"] * 3
    assert "queue wait p90 (admitted jobs)" in rows and "queue wait p90" not in rows


@pytest.mark.parametrize(
    "field,value",
    [
        ("launch_s", math.inf),
        ("launch_s", -1.0),
        ("spot_usd_per_gpu_hour", math.inf),
        ("on_demand_usd_per_gpu_hour", math.nan),
        ("interruptions_per_instance_hour", math.inf),
        ("dispatch_delay_s", -300.0),
        ("spot_gpus", -8),
        ("gpus_per_instance", 0),
    ],
)
def test_non_finite_or_negative_params_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        SimulationParams(onprem_gpus=8, **{field: value})


def test_header_only_trace_is_refused():
    with pytest.raises(TraceError, match="header but no job"):
        parse_trace("submit_s,gpus,duration_s\n# nothing yet\n", "empty.csv")


@pytest.mark.parametrize(
    "row,words",
    [("0,1,60,,none,burst", "no `-burst` queue"), ("0,1,60,,on-demand,cloud", "not a queue target")],
)
def test_queue_column_errors(row, words):
    with pytest.raises(TraceError, match=words.replace("`", ".")):
        parse_trace(f"submit_s,gpus,duration_s,checkpoint_s,burst,queue\n{row}\n", "t.csv")
