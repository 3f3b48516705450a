"""The offline check end to end: example stacks pass, the bad fixture stack fails with exactly the
expected violations, config files are validated, and the output formats."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.stack.files import list_stacks
from hybridgpu.shell.policy.check import PolicyConfigFileError, check_stacks, load_policy_config, to_github, to_json
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

BAD = ROOT / "tests" / "fixtures" / "policy-bad"
BAD_CONFIG = BAD / "policy-config.json"

#: (policy, resource name; '' for the stack) the bad fixture must produce, and nothing else.
EXPECTED_BAD = sorted(
    [
        ("required-cost-tags", "legacy-trainer"),
        ("gpu-instance-size", "legacy-trainer"),
        ("imdsv2-required", "legacy-trainer"),
        ("encrypted-volumes", "legacy-trainer"),
        ("required-cost-tags", "shadow-cluster"),
        ("eks-endpoint-private", "shadow-cluster"),
        ("gpu-workload-cost-labels", "big-train"),
        ("gpu-workload-requests", "big-train"),  # requests != limits
        ("gpu-workload-requests", "big-train"),  # 16 GPUs per pod > 8
        ("nodepool-gpu-limit", "unbounded"),
        ("nodepool-instance-bounds", "unbounded"),
        ("burst-budget", "unbounded"),
        ("nodepool-gpu-limit", "gpu-bad-gpu-nodepool-too-big"),
        ("stack-gpu-ceiling", ""),
        ("burst-budget", ""),
        ("ec2nodeclass-cost-tags", "floating"),
        ("imdsv2-required", "floating"),
        ("encrypted-volumes", "floating"),
        ("ami-alias-pinned", "floating"),
        ("mig-profiles", "whole-gpu-mig"),
        ("kubeadm-ca-verification", "rogue-join"),
        ("onprem-host-owner", "rogue-host"),
        ("multikueue-kubeconfig", "worker-kubeconfig"),
    ]
)


@pytest.fixture(scope="module")
def bad_reports():
    return check_stacks(["prod-bad"], BAD, pack_dir=ROOT / "policies", config_file=BAD_CONFIG)


@pytest.fixture(scope="module")
def example_reports():
    return check_stacks(list_stacks(ROOT), ROOT)


#: GPU capacity of the example stacks without repair or health detection: node repair (`hybridgpu:cloud.karpenter.nodeRepair`)
#: and the on-prem detector (inventory `remediation`) are off in the examples, so the advisory `gpu-repair-coverage` reports them.
EXPECTED_REPAIR_ADVISORIES = {
    "dev": ["gpu-dev-gpu-nodepool-spot-g5-g6"],
    "onprem": [f"site-a-onprem-{h}" for h in ("a100-01", "a100-02", "dgx-h100-01", "dgx-h100-02", "dgx-h100-03")],
    # prod turns node repair on (hybridgpu:cloud.karpenter.nodeRepair): no advisory there.
}


def _blocking_or_unexpected(report):
    """The violations of an example stack other than its expected advisory repair findings."""
    expected = set(EXPECTED_REPAIR_ADVISORIES.get(report.stack, ()))
    return [(v.policy, v.name, v.level) for v in report.violations if not (v.policy == "gpu-repair-coverage" and v.level == "advisory" and v.name in expected)]


def test_example_stacks_pass(example_reports):
    assert [r.stack for r in example_reports] == list_stacks(ROOT)
    for report in example_reports:
        assert report.resources > 0
        assert _blocking_or_unexpected(report) == [], [(v.policy, v.name, v.message) for v in report.violations]
        assert sorted(v.name for v in report.violations) == sorted(EXPECTED_REPAIR_ADVISORIES.get(report.stack, []))


def test_bad_stack_fails_with_exactly_the_expected_violations(bad_reports):
    [report] = bad_reports
    got = sorted((v.policy, v.name) for v in report.violations)
    assert got == EXPECTED_BAD
    assert len(report.mandatory) == len(EXPECTED_BAD)
    for v in report.violations:
        assert "Fix:" in v.message
        assert v.stack == "prod-bad"


def test_bad_stack_without_its_policy_config_misses_the_stack_specific_limits():
    """The per-stack limits come from the policy config: without it, the 24-GPU pool and p5 are fine."""
    [report] = check_stacks(["prod-bad"], BAD, pack_dir=ROOT / "policies")
    got = {(v.policy, v.name) for v in report.violations}
    assert ("nodepool-gpu-limit", "gpu-bad-gpu-nodepool-too-big") not in got
    assert ("gpu-instance-size", "legacy-trainer") not in got
    assert ("stack-gpu-ceiling", "") not in got
    assert ("nodepool-gpu-limit", "unbounded") in got


def test_json_output(bad_reports):
    doc = json.loads(to_json(bad_reports))
    assert doc["pack"] == "hybridgpu"
    [stack] = doc["stacks"]
    assert stack["mandatory"] == len(EXPECTED_BAD)
    assert {"stack", "policy", "level", "message", "urn", "type", "name"} <= set(stack["violations"][0])


def test_github_annotations(bad_reports, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(ROOT))  # paths relative to the checkout (test_project_layout.py)
    lines = to_github(bad_reports).splitlines()
    assert len(lines) == len(EXPECTED_BAD)
    # A resource the fixture's own program registers: its line; one hybridgpu's components register: the stack file.
    assert all(re.match(r"::error file=tests/fixtures/policy-bad/(__main__\.py,line=\d+|stacks/Pulumi\.prod-bad\.yaml(,line=\d+)?),title=hybridgpu/", line) for line in lines)
    assert any(re.match(r"::error file=tests/fixtures/policy-bad/stacks/Pulumi.prod-bad.yaml,line=\d+,title=hybridgpu/stack-gpu-ceiling \(stack\)", line) for line in lines)
    assert all("\n" not in line for line in lines)
    assert any("ami-alias-pinned (kubernetes%3Akarpenter.k8s.aws/v1%3AEC2NodeClass floating)" in line for line in lines)


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_violations_of_stack_file_resources_name_the_key_path_and_line(bad_reports, monkeypatch):
    """A violation on a resource hybridgpu's components made from the stack file is fixed in the stack
    file: JSON names the key path (refined to the field the policy checks) and its line, the GitHub
    annotation carries ``line=``, the table says where the fix goes. Resources the fixture's own
    program registers keep their program line and no key."""
    monkeypatch.setenv("GITHUB_WORKSPACE", str(ROOT))
    stack_file = BAD / "stacks" / "Pulumi.prod-bad.yaml"
    doc = json.loads(to_json(bad_reports))
    by = {(v["policy"], v["name"]): v for v in doc["stacks"][0]["violations"]}
    pool = by[("nodepool-gpu-limit", "gpu-bad-gpu-nodepool-too-big")]
    assert pool["key"] == "hybridgpu:cloud.nodePools[0].gpuLimit"
    assert pool["line"] == _line_of(stack_file, "gpuLimit: 24")
    assert pool["file"] == "tests/fixtures/policy-bad/stacks/Pulumi.prod-bad.yaml"
    ceiling = by[("stack-gpu-ceiling", "")]
    assert (ceiling["key"], ceiling["line"]) == ("hybridgpu:cloud.nodePools", _line_of(stack_file, "nodePools:"))
    own = by[("nodepool-gpu-limit", "unbounded")]  # registered by the fixture's __main__.py
    assert own["key"] is None and own["file"].endswith("__main__.py") and own["line"] > 0
    lines = to_github(bad_reports).splitlines()
    assert any(f"Pulumi.prod-bad.yaml,line={pool['line']},title=hybridgpu/nodepool-gpu-limit" in line for line in lines)
    assert any(f"Pulumi.prod-bad.yaml,line={ceiling['line']},title=hybridgpu/stack-gpu-ceiling" in line for line in lines)
    result = CliRunner(env={"COLUMNS": "400"}).invoke(
        app, ["check", "prod-bad", "--root", str(BAD), "--pack", str(ROOT / "policies"), "--policy-pack-config", str(BAD_CONFIG)]
    )
    assert result.exit_code == 1
    assert f"fix at Pulumi.prod-bad.yaml:{pool['line']}" in result.output and "hybridgpu:cloud.nodePools[0].gpuLimit" in result.output


def test_cli_exit_codes_and_formats(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app, ["check", "prod-bad", "--root", str(BAD), "--pack", str(ROOT / "policies"), "--policy-pack-config", str(BAD_CONFIG), "--format", "github"]
    )
    assert result.exit_code == 1, result.output
    assert result.output.count("::error ") == len(EXPECTED_BAD)
    bad_config = tmp_path / "cfg.json"
    bad_config.write_text(json.dumps({"nodepool-gpu-limt": {}}))
    result = runner.invoke(app, ["check", "dev", "--root", str(ROOT), "--policy-pack-config", str(bad_config)])
    assert result.exit_code == 2
    assert "nodepool-gpu-limt" in result.output and "no such policy" in result.output


def test_policy_config_file_errors_name_file_policy_and_field(tmp_path: Path):
    cfg = tmp_path / "policy.json"
    cfg.write_text(json.dumps({"burst-budget": {"monthlyBudgetUsd": "lots"}, "imdsv2-required": "strict", "all": "mandatory"}))
    with pytest.raises(PolicyConfigFileError) as err:
        load_policy_config(cfg)
    text = str(err.value)
    assert str(cfg) in text and "burst-budget" in text and "monthlyBudgetUsd" in text and "imdsv2-required" in text
    cfg.write_text("{not json")
    with pytest.raises(PolicyConfigFileError, match="cannot read"):
        load_policy_config(cfg)


def test_policy_config_levels():
    config = load_policy_config(None)
    assert {level for level, _ in config.values()} == {"mandatory", "advisory"}
    assert [name for name, (level, _) in config.items() if level == "advisory"] == ["gpu-repair-coverage"]  # issue 26: advisory by default


def test_example_policy_config_is_valid():
    load_policy_config(ROOT / "policies" / "config.example.json")


def test_example_stacks_pass_a_first_preview_where_computed_values_are_unknown():
    """What a first `pulumi preview` sends: ids, ARNs, endpoints and generated secrets unknown.
    Fail-closed policies must not block the example stacks there (they read literals only)."""
    from google.protobuf import json_format
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    from hybridgpu.shell.preview import run_preview

    preview = run_preview("onprem", ROOT, first_preview=True)
    with_unknowns = [r for r in preview.records if r.wire is not None and UNKNOWN_STRING_VALUE in json.dumps(json_format.MessageToDict(r.wire))]
    assert len(with_unknowns) >= 10  # the join commands' stdin (token), the provider's kubeconfig...
    reports = check_stacks(list_stacks(ROOT), ROOT, config_file=ROOT / "policies" / "config.example.json", first_preview=True)
    for report in reports:
        assert _blocking_or_unexpected(report) == [], [(v.policy, v.name, v.message) for v in report.violations]
