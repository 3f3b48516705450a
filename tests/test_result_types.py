"""One issue type for bad input, one violation type for policy results (issue 24, section 2).

Bad input (a stack file, an inventory, a job file, a policy config ...) is reported as
:class:`hybridgpu.errors.Issue` (file, key path, message, fix); a policy result is a
:class:`hybridgpu.shell.policy.analyzer.Violation` (stack, policy, level, message, resource).
These tests read every class under ``hybridgpu/`` (with :mod:`ast`, without importing it) so a
second class of either shape cannot come back unnoticed.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

from hybridgpu.errors import Issue
from hybridgpu.shell.policy import analyzer, check
from hybridgpu.shell.policy.analyzer import Violation
from tests.helpers import ROOT

PACKAGE = ROOT / "hybridgpu"

#: Result classes whose names look like problem types but are neither: why each one stays.
NOT_ISSUES_OR_VIOLATIONS = {
    # The verdict on one rendered manifest (ok, skipped or failed, with the schema's messages);
    # it reports on the toolkit's own output, and `hybridgpu job check` turns a failed verdict
    # of a user's job file into an Issue (hybridgpu/stack/jobs.py).
    "hybridgpu/schemas.py:SchemaFinding",
    # parliament's own finding (its issue code and detail) on an IAM document the toolkit
    # renders, matched against the justifications in hybridgpu/render/iam.py: a third-party
    # linter's vocabulary, neither a user's bad input nor a policy-pack result.
    "hybridgpu/security/iam_lint.py:LintFinding",
}
_PROBLEM_NAME = re.compile(r"(Issue|Violation|Diagnostic|Finding|Problem)s?$")
_WHERE = {"fix", "key", "field", "path", "file"}


def _classes() -> list[tuple[str, str, set[str], list[str]]]:
    """``(file, class name, own annotated fields, base names)`` of every class under hybridgpu/."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
                bases = [ast.unparse(b) for b in node.bases]
                found.append((path.relative_to(ROOT).as_posix(), node.name, fields, bases))
    return found


CLASSES = _classes()


def _is_exception(name: str, bases: list[str]) -> bool:
    return name.endswith("Error") or any(b.endswith(("Error", "Exception")) for b in bases)


def test_one_issue_class():
    """Only errors.Issue pairs a message with a place or a fix (file, key, field, path, fix)."""
    shaped = sorted(f"{file}:{name}" for file, name, fields, bases in CLASSES if "message" in fields and fields & _WHERE and not _is_exception(name, bases))
    assert shaped == ["hybridgpu/errors.py:Issue"]


def test_one_violation_class():
    """Only analyzer.Violation carries a policy with a level or a message."""
    shaped = sorted(f"{file}:{name}" for file, name, fields, _ in CLASSES if "policy" in fields and fields & {"level", "message"})
    assert shaped == ["hybridgpu/shell/policy/analyzer.py:Violation"]


def test_no_other_problem_type_by_name():
    """No third class named like a problem type (``...Diagnostic``, ``...Finding``), except the ones explained above."""
    named = {f"{file}:{name}" for file, name, _, bases in CLASSES if _PROBLEM_NAME.search(name) and not _is_exception(name, bases)}
    assert named == {"hybridgpu/errors.py:Issue", "hybridgpu/shell/policy/analyzer.py:Violation"} | NOT_ISSUES_OR_VIOLATIONS


def test_check_reports_the_analyzers_violations():
    """`hybridgpu check` reports the analyzer's Violation itself, not a copy in another class."""
    assert check.Violation is analyzer.Violation
    assert check.StackReport.__dataclass_fields__["violations"].type == "tuple[Violation, ...]"


def test_violation_json_fields_in_order():
    """``hybridgpu check --format json`` writes each violation as ``asdict``: these keys, in this order."""
    v = Violation(stack="prod", policy="imdsv2-required", level="mandatory", message="m. Fix: f", urn="urn:x", type="aws:ec2/instance:Instance", name="i")
    assert list(json.loads(json.dumps(dataclasses.asdict(v)))) == ["stack", "policy", "level", "message", "urn", "type", "name"]
    assert v.mandatory and not dataclasses.replace(v, level="advisory").mandatory


def test_validator_message_drops_the_description_pulumi_policy_puts_first():
    """pulumi-policy 1.21 ``policy.py`` ``_create_report_violation``: ``message = description``, then
    ``+= "\\n" + message`` when the validator gave one; the diagnostic's ``description`` holds it alone."""
    assert analyzer._validator_message("Desc.\nThe message. Fix: x", "Desc.") == "The message. Fix: x"
    assert analyzer._validator_message("Desc.", "Desc.") == "Desc."  # a validator that reported no message
    assert analyzer._validator_message("Other.\nmessage", "Desc.") == "Other.\nmessage"
    assert analyzer._validator_message("Desc.\nmessage", "") == "Desc.\nmessage"


def test_issue_carries_file_key_message_and_fix():
    """The bad-input type names the file, the key path, what is wrong and the fix (required)."""
    issue = Issue("stacks/Pulumi.dev.yaml", "hybridgpu:cloud.nodePools[0].weight", "must be <= 100 (got 101)", "use a value <= 100")
    assert str(issue) == "stacks/Pulumi.dev.yaml: hybridgpu:cloud.nodePools[0].weight: must be <= 100 (got 101)\n    fix: use a value <= 100"
    assert {f.name for f in dataclasses.fields(Issue)} >= {"file", "key", "message", "fix"}


def test_scanner_sees_the_known_types():
    """The scan above reads real classes (a broken walk would make the assertions vacuous)."""
    names = {f"{file}:{name}" for file, name, _, _ in CLASSES}
    assert {"hybridgpu/errors.py:Issue", "hybridgpu/shell/policy/analyzer.py:Violation", "hybridgpu/shell/policy/check.py:StackReport"} <= names
    assert len(CLASSES) > 100
    assert all(Path(ROOT / file).is_file() for file, *_ in CLASSES[:5])


def test_policy_config_problems_are_issues(tmp_path):
    """Every problem of a ``--policy-pack-config`` file is an Issue naming the file, the policy (and field) and the fix."""
    cfg = tmp_path / "policy.json"
    cfg.write_text(json.dumps({"gpu-instance-sise": {}, "imdsv2-required": "strict", "burst-budget": {"monthlyBudgetUsd": "lots"}}))
    with pytest.raises(check.PolicyConfigFileError) as err:
        check.load_policy_config(cfg)
    issues = err.value.issues
    assert all(isinstance(i, Issue) and i.file == str(cfg) and i.fix for i in issues)
    assert sorted((i.key or "", i.code) for i in issues) == [
        ("burst-budget.monthlyBudgetUsd", "config"), ("gpu-instance-sise", "config"), ("imdsv2-required.enforcementLevel", "config")
    ]
    assert str(err.value).startswith(f"{cfg}: gpu-instance-sise: no such policy; did you mean 'gpu-instance-size'?")
    assert str(err.value).endswith(". Fix: see docs/policies.md for each policy's settings.")
    cfg.write_text("{not json")
    with pytest.raises(check.PolicyConfigFileError) as err:
        check.load_policy_config(cfg)
    assert [(i.file, i.key, i.code) for i in err.value.issues] == [(str(cfg), None, "file")]
    assert str(err.value).startswith(f"{cfg}: cannot read the policy config: ")


def test_validator_findings_have_one_home():
    """What validators yield (``Findings``, ``StackFindings``) is defined once, in hybridgpu/policy/base.py."""
    defined = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            defined += [(path.relative_to(ROOT).as_posix(), t.id) for t in targets if isinstance(t, ast.Name) and t.id.endswith("Findings")]
    assert sorted(defined) == [("hybridgpu/policy/base.py", "Findings"), ("hybridgpu/policy/base.py", "StackFindings")]


class _RecordingAnalyzer:
    """Stands in for a running pack: records the resources sent, reports one violation per resource."""

    def __init__(self) -> None:
        self.sent: list[list[str]] = []
        self.stack = ""

    def configure(self, config):
        pass

    def configure_stack(self, *, project, stack, tags=None):
        self.stack = stack

    def analyze_each(self, resources):
        self.sent.append([r.urn for r in resources])
        return [Violation(stack=self.stack, policy="p", level="mandatory", message="m", urn=r.urn, type=r.type, name=r.name) for r in resources]

    def analyze_stack(self, resources):
        return []


def test_check_report_order_does_not_follow_registration_order():
    """The mocks record registrations in a thread-dependent order; two runs of `hybridgpu check` on the same
    stack must still print the same report (it was observed to differ on tests/fixtures/policy-bad)."""
    from hybridgpu.shell.preview import PreviewResult, ResourceRecord

    def record(name: str) -> ResourceRecord:
        return ResourceRecord(f"urn:pulumi:dev::p::aws:s3/bucket:Bucket::{name}", "aws:s3/bucket:Bucket", name, "", True, {})

    reports = []
    for names in (["b", "a", "c"], ["c", "b", "a"]):
        preview = PreviewResult(stack="dev", config=None, records=[record(n) for n in names], outputs={}, project="p")
        stub = _RecordingAnalyzer()
        [report] = check.check_previews([preview], {}, stub)  # type: ignore[arg-type]
        reports.append(check.to_json([report]))
    assert reports[0] == reports[1]
    assert [v["name"] for v in json.loads(reports[0])["stacks"][0]["violations"]] == ["a", "b", "c"]
