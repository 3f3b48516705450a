"""The pack's packaging: docs current, pure validators, the pack files, and the pull-request workflow."""

from __future__ import annotations

import yaml

from hybridgpu.policy import docs
from tests.helpers import ROOT, import_fresh


def test_policy_reference_is_current():
    assert docs.main(["--check"]) == 0, "run: python -m hybridgpu.policy.docs"


def test_validators_import_no_pulumi():
    result = import_fresh("hybridgpu.policy.untagged", "hybridgpu.policy.oversized", "hybridgpu.policy.safety", "hybridgpu.policy.efa", "hybridgpu.policy.registry", "hybridgpu.policy.workloads", "hybridgpu.policy.base")
    assert result.returncode == 0, result.stdout + result.stderr


def test_pack_files_are_what_the_pulumi_cli_expects():
    spec = yaml.safe_load((ROOT / "policies" / "PulumiPolicy.yaml").read_text())
    assert spec["runtime"]["name"] == "python"
    assert (ROOT / "policies" / spec["runtime"]["options"]["virtualenv"]).resolve() == (ROOT / ".venv").resolve()
    assert (ROOT / "policies" / "__main__.py").is_file()
    assert "-e .." in (ROOT / "policies" / "requirements.txt").read_text().splitlines()


def test_pull_request_workflow_runs_tests_and_the_offline_check_without_secrets():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yml").read_text())
    assert "pull_request" in wf[True]  # YAML 1.1 reads the key `on` as True
    jobs = wf["jobs"]
    tests = " ".join(s.get("run", "") for s in jobs["tests"]["steps"])
    assert "make test" in tests
    check = [s.get("run", "") for s in jobs["policy-check"]["steps"]]
    assert any("hybridgpu check" in r and "--format github" in r for r in check)
    assert "secrets." not in yaml.safe_dump(jobs["policy-check"]) and "secrets." not in yaml.safe_dump(jobs["tests"])
    preview = jobs["pulumi-preview"]
    assert "AWS_PREVIEW_ROLE_ARN" in preview["if"]
    assert any("--policy-pack policies" in s.get("run", "") for s in preview["steps"])
