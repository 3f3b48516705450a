"""The cost of failure: `hybridgpu cost checkpoint`, its formulas against a Monte-Carlo run, and `cost report --failure-rate`.

Upstream behaviour relied on (cited where tested):
* Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974:
  work between checkpoints ``sqrt(2CM)``.
* Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", Future
  Generation Computer Systems 22(3), 2006, eq. 37: ``sqrt(2CM)[1 + sqrt(C/2M)/3 + C/18M] - C``
  for C < 2M; first order ``sqrt(2CM) - C``.
* Herault & Robert (eds.), "Fault-Tolerance Techniques for High-Performance Computing", Springer
  2015, ch. 1 section 1.3: first-order waste ``1 - (1 - C/T)(1 - (D + R + T/2)/M)`` and the exact
  expected time of a period under exponential failures ``e^{R/M}(M + D)(e^{T/M} - 1)``.
* Meta, "The Llama 3 Herd of Models", arXiv:2407.21783 (2024), section 3.3.4 and table 5: 419
  unexpected interruptions in 54 days on 16,384 H100s, 58.7% GPU-related.

The Monte-Carlo run draws exponential failures (numpy, seeded) during work, checkpoint writes and
restores (none during the restart downtime), as the exact model assumes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli.main import app
from hybridgpu.economics.failure import (
    CheckpointInputs,
    FailureInputError,
    FailureRatesError,
    daly_interval_hours,
    exact_goodput,
    first_order_goodput,
    load_failure_rates,
    plan_checkpoint,
    young_interval_hours,
)

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "fixtures" / "checkpoint"
CASES = yaml.safe_load((HERE / "cases.yaml").read_text())
runner = CliRunner()


# ---- the packaged rate ------------------------------------------------------------------------


def test_default_rate_is_llama3_unexpected_interruptions_per_gpu_hour():
    rates = load_failure_rates()
    (default,) = [r for r in rates.values() if r.default]
    # 419 / (16,384 x 54 d x 24 h) = 419 / 21,233,664 GPU-hours
    assert default.failures_per_gpu_hour == pytest.approx(1.97328e-5, rel=1e-5)
    # the paper's "one interruption every three hours" for the whole 16,384-GPU job
    assert 1 / (default.failures_per_gpu_hour * 16384) == pytest.approx(3.093, abs=1e-3)
    assert rates["llama3-405b-gpu"].failures_per_gpu_hour == pytest.approx(0.587 * 1.97328e-5, rel=1e-5)


def test_rate_file_without_one_default_is_refused(tmp_path):
    text = (ROOT / "hybridgpu/economics/data/failure_rates.yaml").read_text().replace("default: true", "default: false")
    bad = tmp_path / "failure_rates.yaml"
    bad.write_text(text)
    with pytest.raises(FailureRatesError, match="default"):
        load_failure_rates(bad)


# ---- formulas ---------------------------------------------------------------------------------


def test_young_and_daly_by_hand():
    assert young_interval_hours(0.1, 20) == pytest.approx(2.0)
    assert daly_interval_hours(0.1, 20) == pytest.approx(1.9)
    with pytest.raises(FailureInputError, match="C < 2M"):
        daly_interval_hours(2.0, 1.0)


def test_daly_maximises_the_first_order_goodput_without_restart():
    # d/dT of (1 - C/T)(1 - T/2M) is zero at T = sqrt(2CM): the period, so the work is sqrt(2CM) - C
    c, m = 0.1, 20.0
    tau = daly_interval_hours(c, m)
    grid = np.linspace(0.5 * tau, 1.5 * tau, 2001)
    best = grid[np.argmax([first_order_goodput(t, c, 0, 0, m) for t in grid])]
    assert best == pytest.approx(tau, rel=1e-3)


def _simulate_goodput(tau: float, c: float, d: float, r: float, m: float, periods: int, seed: int) -> float:
    """Work done / wall time for ``periods`` periods of ``tau`` work + ``c`` checkpoint, with exponential failures of mean ``m``.

    A failure loses the period so far, then costs ``d`` (no failures) and ``r`` (a failure during
    the restore starts the restart again); the period is then redone from its start.
    """
    rng = np.random.default_rng(seed)
    length = tau + c
    total = np.zeros(periods)
    active = np.arange(periods)
    while active.size:
        x = rng.exponential(m, active.size)
        ok = x >= length
        total[active[ok]] += length
        failed, total_lost = active[~ok], x[~ok]
        total[failed] += total_lost
        pending = failed
        while pending.size:
            total[pending] += d
            y = rng.exponential(m, pending.size)
            done = y >= r
            total[pending[done]] += r
            total[pending[~done]] += y[~done]
            pending = pending[~done]
        active = failed
    return periods * tau / total.sum()


# (gpus, MTBF per GPU h, checkpoint min, restore min, restart min): a mid job, a 16k job at the
# packaged Llama 3 rate with fast checkpoints, a slow-checkpoint job with long restarts
SCENARIOS = [(500, 10_000, 6, 6, 12), (16_384, 50_677.0, 1, 2, 5), (64, 5_000, 10, 10, 30)]


@pytest.mark.parametrize(("gpus", "mtbf", "c_min", "r_min", "d_min"), SCENARIOS)
def test_first_order_goodput_matches_monte_carlo(gpus, mtbf, c_min, r_min, d_min):
    inputs = CheckpointInputs(gpus=gpus, failures_per_gpu_hour=1 / mtbf, checkpoint_minutes=c_min, restore_minutes=r_min, restart_minutes=d_min)
    plan = plan_checkpoint(inputs, rate_source="test")
    c, r, d, m = c_min / 60, r_min / 60, d_min / 60, plan.job_mtbf_hours
    simulated = _simulate_goodput(plan.daly_interval_hours, c, d, r, m, 100_000, seed=26)
    # the exact expectation is what the simulation estimates (standard error ~ 1e-3)
    assert simulated == pytest.approx(exact_goodput(plan.daly_interval_hours, c, d, r, m), abs=3e-3)
    # the first-order model the command prints is within a percentage point of it
    assert plan.goodput == pytest.approx(simulated, abs=0.01)


def test_daly_interval_is_within_a_few_percent_of_the_simulated_best():
    c, d, r, m = 0.1, 0.2, 0.1, 20.0  # C/M = 0.005: Daly's higher-order terms add ~2.4% (eq. 37)
    tau = daly_interval_hours(c, m)
    s = np.linspace(-0.5, 0.5, 11)  # log(interval / Daly's): the goodput curve is symmetric in it to first order
    simulated = np.array([_simulate_goodput(tau * math.exp(x), c, d, r, m, 150_000, seed=7) for x in s])
    best_on_grid = tau * math.exp(s[np.argmax(simulated)])
    a, b, _ = np.polyfit(s, simulated, 2)
    best = tau * math.exp(-b / (2 * a))
    assert a < 0
    assert best == pytest.approx(tau, rel=0.05)
    assert best_on_grid == pytest.approx(tau, rel=0.11)  # the grid step is 10%
    # and the higher-order estimate (Daly 2006 eq. 37) is closer still
    higher = math.sqrt(2 * c * m) * (1 + math.sqrt(c / (2 * m)) / 3 + c / (18 * m)) - c
    assert abs(best - higher) <= abs(best - tau) + 0.02 * tau


# ---- the command ------------------------------------------------------------------------------


def _run(args: list[str]):
    extra = ["--root", str(ROOT)] if "--stack" in args else []
    return runner.invoke(app, ["cost", "checkpoint", *args, *extra], env={"COLUMNS": "200"})


def test_enough_cases():
    assert len(CASES["pass"]) >= 10 and len(CASES["fail"]) >= 10


@pytest.mark.parametrize("name", sorted(CASES["pass"]))
def test_good_input(name):
    case = CASES["pass"][name]
    result = _run([*case["args"], "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["dalyIntervalHours"] * 60 == pytest.approx(case["daly"], abs=0.01)
    assert out["youngIntervalHours"] * 60 == pytest.approx(case["young"], abs=0.01)
    assert out["goodput"] == pytest.approx(case["goodput"], abs=1e-4)
    if "goodputAtInterval" in case:
        assert out["goodputAtInterval"] == pytest.approx(case["goodputAtInterval"], abs=1e-6)
    if "lostGpuHours" in case:
        assert out["lostGpuHoursPerMonth"] == pytest.approx(case["lostGpuHours"], rel=1e-9)
        assert out["lostUsdPerMonth"] == pytest.approx(case["lostUsd"], abs=0.01)
    text = _run(case["args"])
    assert text.exit_code == 0 and f"{case['goodput']:.2%}"[:4] in text.output


@pytest.mark.parametrize("name", sorted(CASES["fail"]))
def test_bad_input(name):
    case = CASES["fail"][name]
    result = _run(case["args"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert case["error"] in lines[0]


def test_same_input_same_output():
    args = ["--gpus", "1024", "--checkpoint-minutes", "5", "--restore-minutes", "5", "--restart-minutes", "10", "--price", "3.1"]
    assert _run(args).output == _run(args).output


# ---- cost report --job-gpus ... : lost work in the report -------------------------------------

FAILURE_ARGS = ["--job-gpus", "500", "--gpu-mtbf-hours", "10000", "--checkpoint-minutes", "6"]  # goodput 0.9025 (by hand above)


def _report(*args: str):
    return runner.invoke(app, ["cost", "report", "prod", "--root", str(ROOT), *args], env={"COLUMNS": "200"})


def test_report_prices_lost_work_and_keeps_break_even():
    base = _report("--json")
    assert base.exit_code == 0, base.output
    before = json.loads(base.output)
    assert "failure" not in before  # off by default: the report is unchanged
    result = _report("--json", *FAILURE_ARGS)
    assert result.exit_code == 0, result.output
    after = json.loads(result.output)
    g = 0.9025
    for b, a in zip(before["capacity"], after["capacity"]):
        assert a["monthly_usd"] == b["monthly_usd"]  # the same held hours cost the same
        for k, v in b["usd_per_productive_gpu_hour"].items():
            assert a["usd_per_productive_gpu_hour"][k] == pytest.approx(v / g)
    for b, a in zip(before["break_even"], after["break_even"]):
        assert a["utilization"] == b["utilization"]  # F/(8760 u g) + v/g = p/g has the same root
        assert a["usd_per_productive_gpu_hour"] == pytest.approx(b["usd_per_productive_gpu_hour"] / g)
    failure = after["failure"]
    assert failure["plan"]["goodput"] == pytest.approx(g)
    reserved = next(line for line in failure["lines"] if line["name"] == "h100-reserved")
    assert reserved["lostGpuHoursPerMonth"]["0.5"] == pytest.approx(32 * 0.5 * 730 * 0.0975)  # 1,138.8
    total = sum(line["monthly_usd"]["0.5"] for line in before["capacity"])
    assert failure["lostUsdPerMonth"]["0.5"] == pytest.approx(total * 0.0975)
    text = _report(*FAILURE_ARGS)
    assert text.exit_code == 0 and "lost to failures" in text.output and "goodput 90.25%" in text.output


@pytest.mark.parametrize(("args", "error"), [
    (["--failure-rate", "1e-5"], "needs --job-gpus"),
    (["--restart-minutes", "5"], "needs --job-gpus"),
    (["--job-gpus", "8"], "--checkpoint-minutes"),
    (["--job-gpus", "0", "--checkpoint-minutes", "5"], "--job-gpus:"),
    (["--job-gpus", "8", "--checkpoint-minutes", "5", "--failure-rate", "-1"], "--failure-rate"),
    (["--job-gpus", "16384", "--checkpoint-minutes", "200"], "is >= the job MTBF"),
])
def test_report_refuses_bad_failure_options(args, error):
    result = _report(*args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and error in lines[0], result.output


# ---- burst simulate --failure-rate ------------------------------------------------------------

TRACE = str(ROOT / "examples" / "traces" / "site-a-month.csv")


def _simulate(*args: str):
    return runner.invoke(app, ["burst", "simulate", "--trace", TRACE, "--onprem-gpus", "64", "--spot-gpus", "32", "--json", *args])


def test_burst_simulate_failures_off_by_default_and_on_with_a_rate():
    off = json.loads(_simulate().output)
    assert "failures" not in off and all("gpu_failures" not in r for r in off["results"])
    on = _simulate("--failure-rate", "1e-3", "--failure-restart-seconds", "1800")
    assert on.exit_code == 0, on.output
    data = json.loads(on.output)
    assert data["failures"] == {"failures_per_gpu_hour": 1e-3, "restart_s": 1800.0, "seed": 0}
    assert all(r["gpu_failures"] > 0 and r["failure_lost_gpu_hours"] > 0 for r in data["results"])


@pytest.mark.parametrize("args", [["--failure-rate", "-1"], ["--failure-rate", "0"], ["--failure-restart-seconds", "60"],
                                  ["--failure-rate", "1e-4", "--failure-restart-seconds", "-5"]])
def test_burst_simulate_refuses_bad_failure_options(args):
    result = _simulate(*args)
    assert result.exit_code == 2 and "Traceback" not in result.output and "--failure-rate" in result.output


def test_docs_worked_example():
    # docs/economics.md "The cost of failure", worked example (prod's reserved price 2.93776 USD/GPU-h)
    args = ["--gpus", "1024", "--checkpoint-minutes", "5", "--restore-minutes", "5", "--interval-minutes", "60", "--price", "2.93776"]
    fast = json.loads(_run([*args, "--restart-minutes", "10", "--json"]).output)
    assert (round(fast["jobMtbfHours"], 1), round(fast["dalyIntervalHours"] * 60), round(fast["youngIntervalHours"] * 60)) == (49.5, 167, 172)
    assert (round(fast["goodput"], 3), round(fast["lostGpuHoursPerMonth"]), round(fast["lostUsdPerMonth"])) == (0.938, 46417, 136363)
    assert (round(fast["goodputAtInterval"], 3), round(fast["lostUsdPerMonthAtInterval"])) == (0.908, 201353)
    slow = json.loads(_run([*args, "--restart-minutes", "240", "--json"]).output)
    assert (round(slow["goodput"], 3), round(slow["lostUsdPerMonth"])) == (0.863, 301528)
