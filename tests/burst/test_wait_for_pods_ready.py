"""Kueue ``waitForPodsReady`` with a requeuing strategy (issue 26): what Kueue does, what we render, what we refuse.

Upstream: kubernetes-sigs/kueue tag v0.19.2 (commit 8eab6877, read 2026-11-26):
``apis/config/v1beta2/configuration_types.go`` (``WaitForPodsReady``, ``RequeuingStrategy``),
``apis/config/v1beta2/defaults.go`` (timeout 30m, recoveryTimeout = timeout, Eviction, base 60,
max 3600), ``pkg/config/validation.go`` ``validateWaitForPodsReady``,
``pkg/controller/core/workload_controller.go`` ``reconcileNotReadyTimeout`` / ``triggerDeactivation``
/ ``admittedNotReadyWorkload``, ``pkg/workload/workload.go`` ``UpdateRequeueState``,
``pkg/util/wait/backoff.go`` ``NewBackoff`` / ``WaitTime`` over k8s.io/apimachinery v0.36.2
``pkg/util/wait/backoff.go`` ``delay`` (step n returns base*2^(n-1), the next capped at max).
"""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.burst.kueue import kueue_configuration
from hybridgpu.burst.teams import apply_teams, configuration_keys, requeue_schedule
from hybridgpu.cli import app
from hybridgpu.teams.models import RequeuingStrategySpec, TeamsError, TeamsFile, read_teams_file
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan as scratch_plan
from tests.helpers.teams import TEAMS, edited, example_plan, example_teams, write

CASES = yaml.safe_load((ROOT / "tests" / "burst" / "wait_for_pods_ready_cases.yaml").read_text())
runner = CliRunner(env={"COLUMNS": "400"})


def _strategy(**kw) -> RequeuingStrategySpec:
    return RequeuingStrategySpec.model_validate(kw)


# ---- Kueue's requeue semantics (workload.go UpdateRequeueState, workload_controller.go triggerDeactivation)


def test_kueue_defaults_double_from_60_s_and_cap_at_an_hour_for_ever():
    """defaults.go: base 60, max 3600, no limit; the comment in configuration_types.go: "(60s, 120s, 240s, ...)"."""
    s = requeue_schedule(None, 9)
    assert s.delays == (60, 120, 240, 480, 960, 1920, 3600, 3600, 3600)
    assert s.deactivated_after is None


def test_limit_deactivates_at_the_eviction_after_the_last_requeue():
    """triggerDeactivation: count + 1 > backoffLimitCount deactivates instead of evicting with a backoff."""
    s = requeue_schedule(_strategy(backoffLimitCount=3, backoffBaseSeconds=30, backoffMaxSeconds=100), 10)
    assert s.delays == (30, 60, 100) and s.deactivated_after == 4


def test_limit_zero_never_requeues():
    assert requeue_schedule(_strategy(backoffLimitCount=0), 3) == requeue_schedule(_strategy(backoffLimitCount=0), 1)
    assert requeue_schedule(_strategy(backoffLimitCount=0), 1).delays == () and requeue_schedule(_strategy(backoffLimitCount=0), 1).deactivated_after == 1


def test_negative_evictions_are_refused():
    with pytest.raises(ValueError, match="evictions must be >= 0"):
        requeue_schedule(None, -1)


# ---- rendering


def test_strategy_rendered_into_every_clusters_configuration():
    teams = TeamsFile.model_validate(edited(example_teams(), {"waitForPodsReady": {"timeout": "10m", "recoveryTimeout": "5m",
                                                                                  "requeuingStrategy": {"backoffLimitCount": 4, "backoffMaxSeconds": 1800}}}))
    plan = apply_teams(example_plan(), teams)
    assert len(plan.clusters) == 3  # spillover: manager, on-prem worker, EKS worker
    for cluster in plan.clusters.values():
        wait = kueue_configuration(cluster, plan.source)["waitForPodsReady"]
        assert wait == {"timeout": "10m", "blockAdmission": False, "recoveryTimeout": "5m",
                        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800, "backoffLimitCount": 4}}


def test_without_strategy_the_configuration_is_unchanged():
    """No requeuingStrategy key: Kueue's defaults apply and existing outputs stay byte-identical."""
    assert configuration_keys(TeamsFile.model_validate(example_teams()))["waitForPodsReady"] == {"timeout": "10m", "blockAdmission": False}


def test_no_limit_is_not_rendered_as_null():
    """``backoffLimitCount: null`` means "for ever" in Kueue; leaving it out says the same without a null."""
    keys = configuration_keys(TeamsFile.model_validate(edited(example_teams(), {"waitForPodsReady.requeuingStrategy": {}})))
    assert "backoffLimitCount" not in keys["waitForPodsReady"]["requeuingStrategy"]


# ---- the cases: pure, then through the CLI


def _pure_issues(tmp_path, changes):
    path = write(tmp_path / TEAMS, edited(example_teams(), changes))
    try:
        read_teams_file(path, TEAMS)
    except TeamsError as exc:
        return exc.issues
    return []


def test_enough_cases():
    assert len(CASES["fail"]) >= 10 and len(CASES["pass"]) >= 10


@pytest.mark.parametrize("case", CASES["fail"], ids=lambda c: c["name"])
def test_refused_with_key_and_fix(tmp_path, case):
    issues = _pure_issues(tmp_path, case["set"])
    match = [i for i in issues if i.key == case["key"]]
    assert match, [(i.key, i.message) for i in issues]
    assert match[0].file == TEAMS and match[0].fix.strip()


@pytest.mark.parametrize("case", CASES["pass"], ids=lambda c: c["name"])
def test_accepted(tmp_path, case):
    assert _pure_issues(tmp_path, case["set"]) == []


def _validate(scratch_project, changes):
    root = scratch_project(plan=scratch_plan(), teams=edited(example_teams(), changes))
    return runner.invoke(app, ["validate", "hybrid", "--root", str(root)])


@pytest.mark.parametrize("case", CASES["fail"], ids=lambda c: c["name"])
def test_cli_refuses(scratch_project, case):
    result = _validate(scratch_project, case["set"])
    out = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert f"{TEAMS}: {case['key']}:" in out and "fix:" in out and "Traceback" not in result.output


@pytest.mark.parametrize("case", CASES["pass"], ids=lambda c: c["name"])
def test_cli_accepts(scratch_project, case):
    result = _validate(scratch_project, case["set"])
    assert result.exit_code == 0, result.output
