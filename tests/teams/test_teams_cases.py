"""Every rule of the teams file, one case each (tests/teams/cases.yaml): the verdict, the file, the key and a fix.

The single-file rules (schema, unique names and namespaces, priority classes defined, lendingLimit
within nominalQuota) come from :func:`hybridgpu.teams.models.read_teams_file`; the rules that read
the inventory, the burst plan and the cost keys from :func:`hybridgpu.stack.teams.teams_file_issues`.
"""

from __future__ import annotations

import pytest

from hybridgpu.k8s import DEFAULT_COST_KEYS
from hybridgpu.stack.teams import teams_file_issues
from hybridgpu.teams.models import TeamsError, read_teams_file
from tests.helpers.teams import TEAMS, edited, example_plan, example_teams, load_cases, write

CASES = load_cases()


def _issues(tmp_path, changes):
    path = write(tmp_path / TEAMS, edited(example_teams(), changes))
    try:
        teams = read_teams_file(path, TEAMS)
    except TeamsError as exc:
        return exc.issues
    return teams_file_issues(example_plan(), teams, TEAMS, list(DEFAULT_COST_KEYS))


def test_enough_cases():
    assert len(CASES["fail"]) >= 10 and len(CASES["pass"]) >= 10
    codes = {c["code"] for c in CASES["fail"]}
    # one case per rule of hybridgpu.stack.teams and the model's own rules
    assert codes == {"schema", "onprem-flavor", "onprem-capacity", "borrowing-capacity", "cloud-capacity", "cloud-type", "team-budget", "plan-budget", "cost-labels", "queue-owner", "gang-timeout"}


@pytest.mark.parametrize("case", CASES["fail"], ids=lambda c: c["name"])
def test_refused_with_file_key_and_fix(tmp_path, case):
    issues = _issues(tmp_path, case["set"])
    assert issues, f"{case['name']} was accepted"
    match = [i for i in issues if i.key == case["key"]]
    assert match, [(i.key, i.code, i.message) for i in issues]
    issue = match[0]
    assert issue.file == TEAMS
    assert issue.code == case["code"], (issue.code, issue.message)
    assert issue.fix.strip() and issue.message.strip()


@pytest.mark.parametrize("case", CASES["pass"], ids=lambda c: c["name"])
def test_accepted(tmp_path, case):
    assert _issues(tmp_path, case["set"]) == []


def test_messages_name_the_figures(tmp_path):
    """The budget and capacity messages carry the numbers a user needs to fix them."""
    (budget,) = [i for i in _issues(tmp_path, {"teams[0].monthlyCloudBudgetUsd": 100000}) if i.code == "team-budget"]
    assert "160,716.80 USD" in budget.message and "48 spot GPUs x 3.44" in budget.message and "8 on-demand GPUs x 6.88" in budget.message
    assert "at least 160,716.80" in budget.fix
    (over,) = [i for i in _issues(tmp_path, {"teams[0].onprem[0].nominalQuota": 20}) if i.code == "onprem-capacity"]
    assert "add up to 28" in over.message and "have 24" in over.message and "by 4" in over.fix


def test_missing_file_names_the_stack_key(tmp_path):
    with pytest.raises(TeamsError) as exc:
        read_teams_file(tmp_path / "nope.yaml", "stacks/teams/nope.yaml")
    assert exc.value.issues[0].file == "stacks/teams/nope.yaml" and "hybridgpu:teams.file" in exc.value.issues[0].fix
