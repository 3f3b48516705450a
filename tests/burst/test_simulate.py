"""The burst simulator on small traces whose answers are worked out by hand."""

from __future__ import annotations

import pytest

from hybridgpu.stack.burst import load_burst_plan
from hybridgpu.burst.simulate import STRATEGIES, SimulationParams, compare, params_from_plan, percentile, simulate
from hybridgpu.burst.trace import Job, generate_trace, load_trace
from tests.helpers import ROOT


class FixedInterruptions:
    """A stand-in for random.Random: the given times to the next interruption, then never."""

    def __init__(self, *times: float):
        self.times = list(times)
        self.rates: list[float] = []

    def expovariate(self, rate: float) -> float:
        self.rates.append(rate)
        return self.times.pop(0) if self.times else 1e12


def test_small_sample_trace_by_hand():
    """examples/traces/small.csv on 4 on-prem GPUs, dispatch delay 300 s, launch 120 s.

    A (4 GPUs, 1 h, no checkpoint) and B (2 GPUs, 1 h, checkpoints) arrive at 0, C (2 GPUs,
    30 min, on-prem only) at 600 s.

    * on-prem only: A runs 0-3600; B and C both start at 3600 (2 + 2 GPUs), B ends at 7200.
      Waits 0, 3600, 3000 -> p50 3000, p90 3600, mean 2200. Busy 4x3600 + 2x3600 + 2x1800 =
      25,200 GPU-s over 4 GPUs x 7200 s = 0.875.
    * spot: B reserves manager quota at 0 and is nominated to on-prem (full); EKS is nominated
      one round later, at 300 s; B is admitted to spot, its node (8 GPUs, the default instance)
      works from 420 s, B ends at 4020 s; the whole instance is billed: 8 GPUs x 3720 s =
      8.2667 GPU-hours at 1 USD (issue 15: per-GPU billing understated it 4x). C still waits for A (3600 -> 5400).
      Waits 0, 420, 3000 -> p50 420, p90 3000, mean 1140; on-prem 18,000 GPU-s / (4 x 5400).
    * on-demand: the same on on-demand at 2 USD: 16.5333 USD.
    """
    jobs = load_trace(ROOT / "examples" / "traces" / "small.csv")
    params = SimulationParams(
        onprem_gpus=4, spot_gpus=8, on_demand_gpus=8, spot_usd_per_gpu_hour=1.0, on_demand_usd_per_gpu_hour=2.0, dispatch_delay_s=300, launch_s=120
    )
    only, spot, od = compare(jobs, params)
    assert (only.wait_p50_s, only.wait_p90_s, only.wait_mean_s) == (3000, 3600, 2200)
    assert only.onprem_utilization == pytest.approx(0.875)
    assert only.makespan_s == 7200 and only.burst_jobs == 0 and only.total_cost_usd == 0
    assert (spot.wait_p50_s, spot.wait_p90_s, spot.wait_mean_s) == (420, 3000, 1140)
    assert spot.gpu_hours == pytest.approx({"spot": 8 * 3720 / 3600, "on-demand": 0.0})
    assert spot.total_cost_usd == pytest.approx(8 * 3720 / 3600)
    assert spot.onprem_utilization == pytest.approx(18000 / (4 * 5400))
    assert od.gpu_hours == pytest.approx({"spot": 0.0, "on-demand": 8 * 3720 / 3600})
    assert od.total_cost_usd == pytest.approx(2 * 8 * 3720 / 3600)
    assert [r.nodes_launched for r in (only, spot, od)] == [0, 1, 1]
    assert [r.burst_jobs for r in (only, spot, od)] == [0, 1, 1]


def test_spot_interruption_loses_work_since_the_last_checkpoint():
    """One 8-GPU job, 3 h of work, checkpoint every hour; no on-prem GPU; spot ceiling 8.

    Reserved at 0, EKS nominated at 300 s (one round), its node launched at 300 s works from
    900 s (launch 600 s). The node is reclaimed 6000 s after its launch (at 6300 s, 5400 s of
    work): 1 h saved, 30 min x 8 GPUs = 4 GPU-hours lost, 2 h left. The workload stays admitted
    on EKS: the replacement node is ready at 6900 s, the job ends at 14,100 s. Billed per node
    from launch to the job's end: 6000 s + 7800 s = 13,800 s x 8 GPUs = 30.667 GPU-hours. Wait =
    900 s (first work). Reclaims: 0.5 per instance-hour, sampled at each node's launch.
    """
    jobs = [Job(0.0, 8, 3 * 3600.0, 3600.0, "spot")]
    params = SimulationParams(onprem_gpus=0, spot_gpus=8, spot_usd_per_gpu_hour=3.0, dispatch_delay_s=300, launch_s=600, interruptions_per_instance_hour=0.5)
    rng = FixedInterruptions(6000.0)
    result = simulate(jobs, params, "spot", rng=rng)
    assert result.interruptions == 1
    assert result.lost_gpu_hours == pytest.approx(4.0)
    assert result.gpu_hours["spot"] == pytest.approx(13800 * 8 / 3600)
    assert result.total_cost_usd == pytest.approx(13800 * 8 / 3600 * 3.0)
    assert result.wait_p50_s == 900 and result.makespan_s == 14100
    assert rng.rates == [pytest.approx(0.5 / 3600)] * 2
    # A 16-GPU job spans two 8-GPU instances: each node has its own reclaim clock.
    rng2 = FixedInterruptions()
    simulate([Job(0.0, 16, 60.0, 30.0, "spot")], SimulationParams(onprem_gpus=0, spot_gpus=16, interruptions_per_instance_hour=0.5), "spot", rng=rng2)
    assert rng2.rates == [pytest.approx(0.5 / 3600)] * 2


def test_interrupted_job_without_checkpoint_restarts_from_zero_on_on_demand_only():
    """Jobs that never checkpoint go to on-demand under the spot strategy, so nothing is lost."""
    jobs = [Job(0.0, 8, 3600.0, None, "on-demand")]
    params = SimulationParams(onprem_gpus=0, spot_gpus=8, on_demand_gpus=8, interruptions_per_instance_hour=100.0)
    result = simulate(jobs, params, "spot", rng=FixedInterruptions(1.0))
    # Admitted at 300 s (dispatch delay), no launch time: billed 8 GPUs x 3600 s.
    assert result.interruptions == 0 and result.gpu_hours["on-demand"] == pytest.approx(8.0) and result.wait_p50_s == 300


def test_best_effort_fifo_lets_small_jobs_pass_a_large_one():
    """4 GPUs on-prem. A (2 GPUs, 1 h) at 0; B (4 GPUs) at 10 cannot start; C (2 GPUs) at 20 starts at once."""
    jobs = [Job(0.0, 2, 3600.0, None, "none"), Job(10.0, 4, 600.0, None, "none"), Job(20.0, 2, 600.0, None, "none")]
    result = simulate(jobs, SimulationParams(onprem_gpus=4), "onprem-only")
    # C: wait 0. B: starts when A and C are both done, at 3600. Waits 0, 3590, 0.
    assert result.wait_p50_s == 0 and result.wait_p90_s == 3590 and result.makespan_s == 4200


def test_jobs_that_fit_nowhere_are_never_admitted():
    jobs = [Job(0.0, 16, 60.0, 30.0, "spot"), Job(0.0, 16, 60.0, None, "none"), Job(0.0, 2, 60.0, None, "on-demand")]
    params = SimulationParams(onprem_gpus=8, spot_gpus=16, on_demand_gpus=0)
    assert [r.never_admitted for r in compare(jobs, params)] == [2, 1, 1]
    # on-demand strategy pools the ceilings: 16 GPUs of on-demand for the spot-class job.


def test_percentile_nearest_rank():
    assert percentile([], 50) == 0.0
    assert percentile([1, 2, 3, 4], 50) == 2 and percentile([1, 2, 3, 4], 90) == 4 and percentile([5], 99) == 5


def test_unknown_strategy():
    with pytest.raises(ValueError, match="unknown strategy"):
        simulate([], SimulationParams(onprem_gpus=1), "cheapest")


def test_seeded_runs_are_reproducible_and_sane():
    jobs = generate_trace(jobs=2000, days=30, seed=11, median_hours=1.0)
    params = SimulationParams(onprem_gpus=24, spot_gpus=32, on_demand_gpus=16, spot_usd_per_gpu_hour=3.0, on_demand_usd_per_gpu_hour=7.0, launch_s=300, interruptions_per_instance_hour=0.05, seed=5)
    first = compare(jobs, params)
    assert first == compare(jobs, params)
    only, spot, od = first
    assert only.total_cost_usd == 0 and spot.interruptions > 0 and od.interruptions == 0
    assert spot.wait_p90_s <= only.wait_p90_s and od.wait_p90_s <= only.wait_p90_s
    # The bursting strategies bill cloud GPU-hours, on-prem only none (the exact bound: the next test).
    assert not any(only.gpu_hours.values()) and sum(spot.gpu_hours.values()) > 0 and sum(od.gpu_hours.values()) > 0
    assert all(0 <= r.onprem_utilization <= 1 for r in first)


def test_cloud_gpu_hours_cover_the_work_that_ran_there():
    """Billed cloud GPU-hours are at least the work that ran there, the work redone after interruptions
    and one launch per burst job (billing runs from admission). Jobs of at most 16 GPUs fit every
    place, so nothing is left unadmitted and the cloud's work is the trace's minus on-prem's.
    """
    jobs = [j for j in generate_trace(jobs=2000, days=30, seed=11, median_hours=1.0) if j.gpus <= 16]
    params = SimulationParams(onprem_gpus=24, spot_gpus=32, on_demand_gpus=16, spot_usd_per_gpu_hour=3.0, on_demand_usd_per_gpu_hour=7.0, launch_s=300, interruptions_per_instance_hour=0.05, seed=5)
    total = sum(j.gpus * j.duration_s for j in jobs) / 3600.0
    for r in compare(jobs, params):
        assert r.never_admitted == 0, r.strategy
        cloud_work = total - r.onprem_utilization * params.onprem_gpus * r.makespan_s / 3600.0
        billed = sum(r.gpu_hours.values())
        if r.strategy == "onprem-only":
            assert billed == 0 and cloud_work == pytest.approx(0, abs=1e-6)
        else:
            assert r.burst_jobs > 0 and cloud_work > 0
            assert billed >= cloud_work + r.lost_gpu_hours + r.burst_jobs * params.launch_s / 3600.0 - 1e-6, r.strategy


def test_params_from_the_example_plan():
    plan = load_burst_plan("stacks/burst/site-a.yaml", ROOT)
    params = params_from_plan(plan, seed=9)
    assert (params.onprem_gpus, params.spot_gpus, params.on_demand_gpus) == (24, 64, 16)
    assert params.dispatch_delay_s == 300 and params.launch_s == 300 and params.gpus_per_instance == 8
    assert params.on_demand_usd_per_gpu_hour == pytest.approx(6.88) and params.spot_usd_per_gpu_hour == 3.44
    assert params.seed == 9 and STRATEGIES == ("onprem-only", "spot", "on-demand")


def test_an_interrupted_job_keeps_its_cloud_quota_while_karpenter_relaunches():
    """Spot ceiling 8, no on-prem: B (8 GPUs) cannot take A's quota while A's node is replaced.

    A: admitted 0 (no delay), works 60-3660 but its node is reclaimed at 1060 (1000 s in,
    checkpoint every 500 s: nothing lost), relaunched, works 1120-3720. B waits for A: admitted
    at 3720, works from 3780. Waits 60 and 3780.
    """
    jobs = [Job(0.0, 8, 3600.0, 500.0, "spot"), Job(0.0, 8, 600.0, 500.0, "spot")]
    params = SimulationParams(onprem_gpus=0, spot_gpus=8, dispatch_delay_s=0, launch_s=60, interruptions_per_instance_hour=1.0)
    result = simulate(jobs, params, "spot", rng=FixedInterruptions(1060.0))
    assert result.interruptions == 1 and result.lost_gpu_hours == 0
    assert (result.wait_p50_s, result.wait_p90_s) == (60, 3780)
    assert result.makespan_s == 3780 + 600
    assert result.gpu_hours["spot"] == pytest.approx(8 * (3720 + (4380 - 3720)) / 3600)
