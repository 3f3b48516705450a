"""IAM: every policy document the toolkit generates, linted with parliament (issue 8, item 1).

Documents come from the inputs of every resource every example stack registers (role trust
policies, inline role policies, the SQS queue policy, and any policy a new component adds),
and from the renderer (hybridgpu.render.iam) in every AWS partition. Findings that stay must be
justified in ``hybridgpu.render.iam.PARLIAMENT_JUSTIFICATIONS`` next to the statements; a
stale justification fails too.
"""

from __future__ import annotations

import json

import pytest

from hybridgpu.render import iam
from hybridgpu.security.iam_lint import PolicyDocument, lint_policies, lint_policy, policies_of_records, renderer_policies, unjustified

pytest.importorskip("parliament", reason="parliament is a test dependency: pip install -e '.[test]'")


@pytest.fixture(scope="module")
def program_policies(all_previews) -> list[PolicyDocument]:
    docs = []
    for stack, result in all_previews.items():
        docs += policies_of_records(stack, result.records)
    return docs


def test_program_registers_the_expected_policy_kinds(program_policies, all_previews):
    """The collector sees every policy-carrying resource type the AWS stacks register."""
    origins = " ".join(p.origin for p in program_policies)
    for typ in ("aws:iam/role:Role", "aws:iam/rolePolicy:RolePolicy", "aws:sqs/queuePolicy:QueuePolicy"):
        if any(r.type == typ for result in all_previews.values() for r in result.records):
            assert typ in origins, typ
    # Every Role and RolePolicy record carries exactly one document.
    for result in all_previews.values():
        for record in result.records:
            if record.type in ("aws:iam/role:Role", "aws:iam/rolePolicy:RolePolicy", "aws:sqs/queuePolicy:QueuePolicy"):
                assert len(policies_of_records("x", [record])) == 1, record.name


def test_every_generated_policy_is_clean_or_justified(program_policies):
    docs = program_policies + renderer_policies()
    report = lint_policies(docs)
    assert report.policies == len(docs) and report.statements >= len(docs)
    missing, stale = unjustified(report, iam.PARLIAMENT_JUSTIFICATIONS)
    assert not missing, "parliament findings without a justification (fix the statement, or justify it in hybridgpu/render/iam.py):\n" + "\n".join(map(str, missing))
    assert not stale, f"justifications no finding uses any more (remove them): {stale}"


def test_not_applicable_is_only_trust_policy_resource(program_policies):
    """The one rule set aside is 'no Resource' in role trust policies, where Resource is not allowed."""
    report = lint_policies(program_policies + renderer_policies())
    assert report.not_applicable, "expected the trust policies to be linted"
    for finding in report.not_applicable:
        assert finding.issue == "MALFORMED" and "Resource" in finding.detail
        assert "assumeRolePolicy" in finding.origin or "trust_policy" in finding.origin, finding


def test_resource_mismatch_justification_holds(program_policies):
    """The RunInstances/CreateFleet split: every ARN format parliament asks of one statement is granted by a sibling."""
    from parliament import is_arn_match

    checked = 0
    for policy in program_policies + renderer_policies():
        report = lint_policy(policy)
        for finding in report.findings:
            if finding.issue != "RESOURCE_MISMATCH" or finding.sid == "AllowSSMReadActions":
                continue
            for need in json.loads(finding.detail):
                action, fmt = need["action"], need["required_format"]
                granted = False
                for statement in policy.statements:
                    actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
                    if action in actions and any(is_arn_match(fmt.split(":")[5].split("/")[0], fmt, r) for r in resources):
                        granted = True
                assert granted, f"{policy.origin}: {action} needs {fmt} and no statement grants it"
                checked += 1
    assert checked > 0


def test_parliament_catches_a_bad_policy():
    """Planted positive: the linter and the justification check do flag a wildcard admin policy and a typo."""
    bad = PolicyDocument(
        "planted",
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "Admin", "Effect": "Allow", "Action": "iam:*", "Resource": "*"},
                {"Sid": "Typo", "Effect": "Allow", "Action": "ec2:DescribeInstancez", "Resource": "*"},
            ],
        },
    )
    report = lint_policy(bad)
    issues = {(f.sid, f.issue) for f in report.findings}
    assert ("Typo", "UNKNOWN_ACTION") in issues
    assert any(sid == "Admin" for sid, _ in issues)
    missing, stale = unjustified(report, {("Gone", "RESOURCE_MISMATCH"): "no longer applies"})
    assert len(missing) == len(report.findings) and stale == [("Gone", "RESOURCE_MISMATCH")]
