"""GPU failures in the burst simulator (`simulate(..., failures=GpuFailures(...))`): off by default, on-prem and cloud.

The expected wall time of a job under exponential failures is the exact expectation of Herault &
Robert (eds.), "Fault-Tolerance Techniques for High-Performance Computing", Springer 2015, ch. 1
section 1.3 (per period of work tau with downtime D and no checkpoint cost: (M + D)(e^{tau/M} - 1)),
the same formula :func:`hybridgpu.economics.failure.exact_goodput` implements.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from hybridgpu.burst.simulate import FailureStrategyResult, GpuFailures, SimulationParams, StrategyResult, comparison_rows, simulate
from hybridgpu.burst.trace import Job
from hybridgpu.economics.failure import exact_goodput


def _one(gpus: int = 8, hours: float = 10, checkpoint_s: float | None = 3600, burst: str = "none") -> list[Job]:
    return [Job(0.0, gpus, hours * 3600, checkpoint_s, burst)]


def test_off_by_default_keeps_the_result_type_and_fields():
    result = simulate(_one(), SimulationParams(onprem_gpus=8), "spot")
    assert type(result) is StrategyResult
    assert result.makespan_s == 36000
    assert not any(label.startswith("GPU failures") for label, _ in comparison_rows([result]))


@pytest.mark.parametrize("restart_s", [0.0, 600.0])
def test_onprem_job_ends_late_by_the_redone_work_and_the_restarts(restart_s):
    # job MTBF 5 h on a 10 h job: a few failures; it holds its 8 GPUs throughout
    failures = GpuFailures(failures_per_gpu_hour=1 / 40, restart_s=restart_s, seed=3)
    r = simulate(_one(), SimulationParams(onprem_gpus=8), "onprem-only", failures=failures)
    assert isinstance(r, FailureStrategyResult) and r.gpu_failures >= 1
    per_gpu_lost_s = r.failure_lost_gpu_hours * 3600 / 8
    assert r.makespan_s == pytest.approx(36000 + per_gpu_lost_s + r.gpu_failures * restart_s)
    assert r.failure_restart_gpu_hours == pytest.approx(8 * r.gpu_failures * restart_s / 3600)
    assert r.onprem_utilization == pytest.approx(1.0)  # busy the whole time: work, redone work, restarts
    assert per_gpu_lost_s < r.gpu_failures * 3600  # never more than a checkpoint interval per failure


def test_cloud_node_is_billed_through_the_failures():
    failures = GpuFailures(failures_per_gpu_hour=1 / 40, restart_s=600, seed=5)
    params = SimulationParams(onprem_gpus=0, on_demand_gpus=8, on_demand_usd_per_gpu_hour=2.0)
    r = simulate(_one(burst="on-demand"), params, "spot", failures=failures)
    assert r.gpu_failures >= 1
    wall_h = (36000 + r.failure_lost_gpu_hours * 3600 / 8 + r.gpu_failures * 600) / 3600
    assert r.gpu_hours["on-demand"] == pytest.approx(8 * wall_h)
    assert r.cost_usd["on-demand"] == pytest.approx(16 * wall_h)


def test_mean_job_time_matches_the_exact_expectation():
    # 2,000 one-GPU jobs of 20 h, checkpoint every 2 h (free), MTBF 20 h, restart 30 min:
    # E = 10 x (20 + 0.5)(e^{0.1} - 1) = 21.560 h per job (goodput 20 / 21.560)
    jobs = [Job(0.0, 1, 20 * 3600, 7200, "none") for _ in range(2000)]
    r = simulate(jobs, SimulationParams(onprem_gpus=2000), "onprem-only", failures=GpuFailures(1 / 20, restart_s=1800, seed=11))
    busy_h = r.onprem_utilization * 2000 * r.makespan_s / 3600
    assert busy_h / 2000 == pytest.approx(21.560, rel=0.01)
    assert 20 / (busy_h / 2000) == pytest.approx(exact_goodput(2.0, 0.0, 0.5, 0.0, 20.0), rel=0.01)


def test_same_seed_same_result_and_rows():
    jobs = [Job(i * 600.0, 4, 5 * 3600, 1800, "spot") for i in range(40)]
    params = SimulationParams(onprem_gpus=16, spot_gpus=32, spot_usd_per_gpu_hour=2.0, interruptions_per_instance_hour=0.05)
    a = simulate(jobs, params, "spot", failures=GpuFailures(1e-3, 900, seed=2))
    b = simulate(jobs, params, "spot", failures=GpuFailures(1e-3, 900, seed=2))
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    labels = [label for label, _ in comparison_rows([a])]
    assert labels[-3:] == ["GPU failures (jobs hit)", "GPU-hours redone after failures", "GPU-hours held restarting"]


@pytest.mark.parametrize(("rate", "restart", "field"), [(0.0, 0.0, "failures_per_gpu_hour"), (-1e-5, 0.0, "failures_per_gpu_hour"),
                                                        (math.nan, 0.0, "failures_per_gpu_hour"), (1e-5, -1.0, "restart_s")])
def test_bad_failure_inputs_name_the_field(rate, restart, field):
    with pytest.raises(ValueError, match=field):
        GpuFailures(rate, restart)
