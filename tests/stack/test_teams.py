"""A stack's `hybridgpu:teams` end to end: `hybridgpu validate` on scratch projects, every case of tests/teams/cases.yaml.

Each refused case names the stack file and key (`hybridgpu:teams.file`), then the teams file, the key
in it and the fix; each accepted case validates every stack of the plan and previews the manager.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers.scratch import example_plan
from tests.helpers.teams import TEAMS, edited, example_teams, load_cases

runner = CliRunner(env={"COLUMNS": "400"})
CASES = load_cases()


def _project(scratch_project, changes, stack_edits=None):
    return scratch_project(plan=example_plan(), teams=edited(example_teams(), changes), stack_edits=stack_edits)


@pytest.mark.parametrize("case", CASES["fail"], ids=lambda c: c["name"])
def test_validate_refuses_naming_stack_teams_file_key_and_fix(scratch_project, case):
    root = _project(scratch_project, case["set"])
    result = runner.invoke(app, ["validate", "hybrid", "--root", str(root)])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "stacks/Pulumi.hybrid.yaml: hybridgpu:teams.file:" in out
    assert f"{TEAMS}: {case['key']}:" in out, out
    assert "fix:" in out
    assert "Traceback" not in result.output


@pytest.mark.parametrize("case", CASES["pass"], ids=lambda c: c["name"])
def test_validate_accepts(scratch_project, case):
    root = _project(scratch_project, case["set"])
    for stack in ("hybrid", "prod"):
        result = runner.invoke(app, ["validate", stack, "--root", str(root)])
        assert result.exit_code == 0, result.output


def test_teams_need_a_burst_plan(scratch_project):
    def drop_burst(config):
        config.pop("hybridgpu:burst")

    root = _project(scratch_project, {}, stack_edits={"onprem": drop_burst})
    result = runner.invoke(app, ["validate", "onprem", "--root", str(root)])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert "hybridgpu:teams.file: teams share the GPUs through Kueue" in out and "add `hybridgpu:burst: {plan:" in out


def test_every_stack_of_the_plan_names_the_same_teams_file(scratch_project):
    def other(config):
        config["hybridgpu:teams"] = {"file": "stacks/teams/other.yaml"}

    root = _project(scratch_project, {}, stack_edits={"prod": other})
    result = runner.invoke(app, ["validate", "hybrid", "--root", str(root)])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert "stack 'prod' (stacks/Pulumi.prod.yaml) of the burst plan stacks/burst/site-a.yaml names 'stacks/teams/other.yaml'" in out
    assert "set `hybridgpu:teams: {file: stacks/teams/site-a.yaml}` in stacks/Pulumi.prod.yaml" in out


def test_missing_teams_file(scratch_project):
    def missing(config):
        config["hybridgpu:teams"] = {"file": "stacks/teams/nope.yaml"}

    root = _project(scratch_project, {}, stack_edits={"hybrid": missing})
    result = runner.invoke(app, ["validate", "hybrid", "--root", str(root)])
    assert result.exit_code == 2 and "stacks/teams/nope.yaml: no such teams file" in " ".join(result.output.split())


def test_policy_pack_cost_keys_of_the_stack_decide(scratch_project):
    """`hybridgpu:requiredTagKeys` of the stack is the set the teams' costLabels must match."""

    def keys(config):
        config["hybridgpu:requiredTagKeys"] = ["team", "project", "cost-center", "owner"]
        config["hybridgpu:tags"]["owner"] = "platform"

    root = _project(scratch_project, {}, stack_edits={"hybrid": keys})
    result = runner.invoke(app, ["validate", "hybrid", "--root", str(root)])
    assert result.exit_code == 2
    assert "misses owner" in " ".join(result.output.split())


def test_split_queues_with_teams_previews_the_team_queues_on_the_onprem_manager(scratch_project, tmp_path):
    from hybridgpu.shell.preview import run_preview

    plan = example_plan()
    plan["topology"] = "split-queues"
    plan["manager"].pop("stack")
    allow = {"prod": lambda c: c["hybridgpu:cloud"]["cluster"]["endpoint"]["privateAccessCidrs"].append("10.20.0.0/22")}
    root = scratch_project(plan=plan, teams=example_teams(), stack_edits=allow)
    for stack in ("onprem", "prod"):
        result = runner.invoke(app, ["validate", stack, "--root", str(root)])
        assert result.exit_code == 0, result.output
    run = run_preview("onprem", root)
    queues = {r.inputs["metadata"]["name"] for r in run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")}
    assert queues == {"hybridgpu-team-ml-research", "hybridgpu-team-ml-research-burst", "hybridgpu-team-ml-platform"}
    assert {r.inputs["metadata"]["namespace"] for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")} == {"ml-research", "ml-platform"}
