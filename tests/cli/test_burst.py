"""`hybridgpu burst plan | simulate | trace` (typer's CliRunner, in-process)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan

runner = CliRunner(env={"COLUMNS": "220"})
SMALL = str(ROOT / "examples" / "traces" / "small.csv")


def test_plan_json_holds_every_quota_and_the_invariant(scratch_project):
    # The burst plan alone (the scratch copies of the stacks drop `hybridgpu:teams`); with teams: below.
    root = scratch_project(plan=example_plan())
    result = runner.invoke(app, ["burst", "plan", "hybrid", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["topology"] == "spillover" and data["nodePoolLimits"] == {"h100-spot": 64, "h100-on-demand": 16}
    assert data["workersTotal"] == {"nvidia.com/gpu": 104, "nvidia.com/mig-3g.40gb": 16}
    # Each manager class holds on-prem + its own ceiling and no workload can exceed one worker flavor.
    for entry in data["managerClasses"].values():
        assert entry["totals"] == entry["expected"]
    assert data["managerClasses"]["hybridgpu-on-demand"]["largestWorkloadGpus"] == 24
    rows = {(r["stack"], r["clusterQueue"], r["resource"]): r for r in data["rows"]}
    assert rows[("onprem", "hybridgpu-onprem", "nvidia.com/gpu")]["nominalQuota"] == 24
    assert rows[("prod", "hybridgpu-eks-spot", "nvidia.com/gpu")]["nominalQuota"] == 64
    assert rows[("hybrid", "hybridgpu-on-demand", "nvidia.com/gpu")]["borrowingLimit"] is None


def test_plan_table(scratch_project):
    root = scratch_project(plan=example_plan())
    result = runner.invoke(app, ["burst", "plan", "prod", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "hybridgpu-eks-on-demand" in result.output and "NodePool h100-spot limit" in result.output
    assert "manager hybridgpu-on-demand: quota" in result.output and "= on-prem + its own ceiling" in result.output
    assert "!=" not in result.output


def test_plan_prints_the_team_quotas():
    """The example stacks name stacks/teams/site-a.yaml: the team ClusterQueues replace the class queues (issue 19)."""
    result = runner.invoke(app, ["burst", "plan", "hybrid", "--root", str(ROOT), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["managerClasses"] == {}  # no class queue on the manager: one queue per team
    research = {(r["stack"], r["flavor"]): r for r in data["teams"]["ml-research"]["rows"] if r["resource"] == "nvidia.com/gpu"}
    assert research[("hybrid", "multikueue-onprem-h100-80gb")] == {
        "stack": "hybrid", "clusterQueue": "hybridgpu-team-ml-research", "team": "ml-research", "flavor": "multikueue-onprem-h100-80gb",
        "resource": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 8, "lendingLimit": 8, "cohortCapacity": 24,
    }
    assert research[("prod", "eks-spot")]["nominalQuota"] == 48 and research[("prod", "eks-spot")]["cohortCapacity"] == 48
    table = runner.invoke(app, ["burst", "plan", "hybrid", "--root", str(ROOT)])
    assert table.exit_code == 0 and "team quotas" in table.output and "hybridgpu-team-ml-platform" in table.output


def test_plan_of_a_stack_without_burst_exits_2():
    result = runner.invoke(app, ["burst", "plan", "dev", "--root", str(ROOT)])
    assert result.exit_code == 2 and "no `hybridgpu:burst` section" in result.output


def test_simulate_small_trace_matches_the_hand_computed_answer():
    args = ["burst", "simulate", "--trace", SMALL, "--onprem-gpus", "4", "--spot-gpus", "8", "--on-demand-gpus", "8"]
    args += ["--spot-price", "1", "--on-demand-price", "2", "--launch-seconds", "120", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    by = {r["strategy"]: r for r in json.loads(result.output)["results"]}
    assert by["onprem-only"]["wait_p90_s"] == 3600 and by["spot"]["wait_p50_s"] == 420
    # The whole 8-GPU instance is billed, not the job's 2 GPUs (issue 15: per-GPU billing understated it).
    assert abs(by["on-demand"]["totalCostUsd"] - 2 * 8 * 3720 / 3600) < 1e-9


def test_simulate_with_the_stack_plan_prints_the_side_by_side_table():
    result = runner.invoke(app, ["burst", "simulate", "--trace", str(ROOT / "examples/traces/site-a-month.csv"), "--stack", "hybrid", "--root", str(ROOT)])
    assert result.exit_code == 0, result.output
    for words in ("onprem-only", "spot", "on-demand", "queue wait p90", "cloud cost (USD)", "on-prem 24 GPUs, spot <= 64, on-demand <= 16"):
        assert words in result.output


def test_simulate_bad_trace_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("submit_s,gpus,duration_s\n0,two,60\n")
    result = runner.invoke(app, ["burst", "simulate", "--trace", str(bad), "--onprem-gpus", "4"])
    assert result.exit_code == 2
    assert "bad.csv" in result.output and "line 2" in result.output and "gpus" in result.output


def test_simulate_needs_a_stack_or_capacities():
    result = runner.invoke(app, ["burst", "simulate", "--trace", SMALL])
    assert result.exit_code == 2 and "--onprem-gpus" in result.output


def test_trace_command_is_reproducible(tmp_path):
    for name in ("a.csv", "b.csv"):
        result = runner.invoke(app, ["burst", "trace", "--out", str(tmp_path / name), "--jobs", "50", "--days", "2", "--seed", "3"])
        assert result.exit_code == 0, result.output
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
