"""Find every IAM policy document the program registers and lint it with ``parliament``.

``parliament`` (Duo Labs, PyPI ``parliament``) lints identity policies: it checks actions,
resources against each action's ARN formats, condition keys and types, principals, and with
its community auditors flags permissions-management, privilege-escalation and
credentials-exposure actions. It has no resource-policy mode, so :func:`lint_policy` applies
one rule of its own: in a role trust policy (a resource policy whose statements name a
``Principal`` and only ``sts:`` actions) the ``Resource`` element is not allowed (IAM User
Guide, "IAM JSON policy elements: Resource": "role trust policies ... do not include a
Resource element"), so parliament's MALFORMED "neither Resource nor NotResource" finding does
not apply there and is counted as not applicable. Everything else it reports is a finding.

Each statement is linted on its own (as a one-statement policy) so a finding names its
statement's ``Sid``; the whole document is linted too, and a finding of the whole document
that no single statement shows (e.g. a duplicate Sid) is reported with ``sid=None``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: parliament's detail text of a statement without Resource (parliament/statement.py).
_NO_RESOURCE = "Statement contains neither Resource nor NotResource"


@dataclass(frozen=True)
class PolicyDocument:
    """One IAM policy document found in the program.

    Attributes:
        origin: where it came from, e.g. ``prod: aws:iam/rolePolicy:RolePolicy gpu-prod-x .policy``.
        document: the parsed JSON document (``Version``, ``Statement``...).
    """

    origin: str
    document: dict[str, Any]

    @property
    def statements(self) -> list[dict[str, Any]]:
        """The statements as a list (a single statement object becomes a one-item list)."""
        statements = self.document.get("Statement", [])
        return statements if isinstance(statements, list) else [statements]


@dataclass(frozen=True)
class LintFinding:
    """One parliament finding.

    Neither bad input (:class:`hybridgpu.errors.Issue`) nor a policy result
    (:class:`hybridgpu.shell.policy.analyzer.Violation`): the documents are ones the toolkit
    renders, not a user's file, and the finding is in parliament's own vocabulary (its issue
    code and detail), matched against the justifications kept with the renderer
    (``hybridgpu.render.iam.PARLIAMENT_JUSTIFICATIONS``, :func:`unjustified`) rather than shown
    to a user with a fix.

    Attributes:
        origin: the policy's origin (see :class:`PolicyDocument`).
        sid: the statement's Sid; ``None`` for a finding about the whole document or a statement without Sid.
        statement: 0-based index of the statement (``None`` for the whole document).
        issue: parliament's issue code, e.g. ``RESOURCE_MISMATCH``.
        detail: parliament's detail, as JSON text.
    """

    origin: str
    sid: str | None
    statement: int | None
    issue: str
    detail: str

    def __str__(self) -> str:
        where = f"statement {self.statement} (Sid {self.sid})" if self.statement is not None else "whole document"
        return f"{self.origin}: {where}: {self.issue}: {self.detail}"


@dataclass
class LintReport:
    """parliament's findings over a set of policies.

    Attributes:
        policies: number of documents linted.
        statements: number of statements linted.
        findings: every finding that applies (to be fixed or justified).
        not_applicable: findings of rules that do not apply to the document's kind (see module doc).
    """

    policies: int = 0
    statements: int = 0
    findings: list[LintFinding] = field(default_factory=list)
    not_applicable: list[LintFinding] = field(default_factory=list)


def _as_policy(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str) and "Statement" in value:
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if isinstance(value, dict) and "Statement" in value and "Version" in value:
        return value
    return None


def find_policies(value: Any, origin: str) -> list[PolicyDocument]:
    """Every IAM policy document (a mapping, or JSON text, with ``Version`` and ``Statement``) inside ``value``.

    Args:
        value: resource inputs (nested dicts/lists/strings).
        origin: prefix of the origin; the key path is appended (``.policy``, ``.inlinePolicies[0].policy``).
    """
    policy = _as_policy(value)
    if policy is not None:
        return [PolicyDocument(origin, policy)]
    found: list[PolicyDocument] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            found += find_policies(item, f"{origin}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += find_policies(item, f"{origin}[{index}]")
    return found


def policies_of_records(stack: str, records: Iterable[Any]) -> list[PolicyDocument]:
    """The policy documents in the inputs of a preview's resource records (see ``hybridgpu.shell.preview.ResourceRecord``)."""
    found: list[PolicyDocument] = []
    for record in records:
        found += find_policies(record.inputs, f"{stack}: {record.type} {record.name} ")
    return found


def renderer_policies() -> list[PolicyDocument]:
    """Every document :mod:`hybridgpu.render.iam` builds, for each AWS partition (``aws``, ``aws-cn``, ``aws-us-gov``).

    Placeholder account, cluster and region; linted next to the program's documents by the
    security tests and ``python -m hybridgpu.security``.
    """
    from hybridgpu.render import iam

    docs = []
    for partition, region in (("aws", "us-west-2"), ("aws-cn", "cn-north-1"), ("aws-us-gov", "us-gov-west-1")):
        account, cluster = "111122223333", "gpu-lint"
        queue = f"arn:{partition}:sqs:{region}:{account}:{cluster}-interruption"
        node_role = f"arn:{partition}:iam::{account}:role/{cluster}-karpenter-node"
        for name, doc in iam.karpenter_controller_policies(
            partition=partition, region=region, account_id=account, cluster_name=cluster, node_role_arn=node_role, queue_arn=queue
        ).items():
            docs.append(PolicyDocument(f"render {partition}: karpenter_controller_policies[{name}]", doc))
        docs.append(PolicyDocument(f"render {partition}: interruption_queue_policy", iam.interruption_queue_policy(queue)))
    docs.append(PolicyDocument("render: service_trust_policy", iam.service_trust_policy("ec2.amazonaws.com")))
    docs.append(PolicyDocument("render: eks_cluster_trust_policy", iam.eks_cluster_trust_policy()))
    docs.append(
        PolicyDocument(
            "render: pod_identity_trust_policy",
            iam.pod_identity_trust_policy(account_id="111122223333", cluster_name="gpu-lint", namespace="kube-system", service_account="karpenter"),
        )
    )
    return docs


def _is_trust_statement(statement: Mapping[str, Any]) -> bool:
    actions = statement.get("Action", [])
    actions = [actions] if isinstance(actions, str) else list(actions)
    return "Principal" in statement and bool(actions) and all(str(a).startswith("sts:") for a in actions)


def _findings(document: dict[str, Any]) -> list[Any]:
    from parliament import analyze_policy_string

    policy = analyze_policy_string(json.dumps(document), include_community_auditors=True)
    return list(policy.findings)


def _detail(finding: Any) -> str:
    return json.dumps(finding.detail, sort_keys=True, default=str) if not isinstance(finding.detail, str) else finding.detail


def lint_policy(policy: PolicyDocument) -> LintReport:
    """Lint one document with parliament (every severity, community auditors on).

    Returns:
        A report with ``policies=1``.

    Raises:
        ModuleNotFoundError: parliament is not installed (``pip install -e '.[test]'``).
    """
    report = LintReport(policies=1, statements=len(policy.statements))
    version = policy.document.get("Version", "2012-10-17")
    seen: set[str] = set()
    for index, statement in enumerate(policy.statements):
        sid = statement.get("Sid") if isinstance(statement, Mapping) else None
        for finding in _findings({"Version": version, "Statement": [statement]}):
            seen.add(finding.issue)
            item = LintFinding(policy.origin, sid, index, finding.issue, _detail(finding))
            if finding.issue == "MALFORMED" and finding.detail == _NO_RESOURCE and _is_trust_statement(statement):
                report.not_applicable.append(item)
            else:
                report.findings.append(item)
    for finding in _findings(policy.document):
        if finding.issue not in seen:
            report.findings.append(LintFinding(policy.origin, None, None, finding.issue, _detail(finding)))
    return report


def lint_policies(policies: Iterable[PolicyDocument]) -> LintReport:
    """Lint every document; the reports summed."""
    total = LintReport()
    for policy in policies:
        report = lint_policy(policy)
        total.policies += report.policies
        total.statements += report.statements
        total.findings += report.findings
        total.not_applicable += report.not_applicable
    return total


def unjustified(report: LintReport, justifications: Mapping[tuple[str, str], str]) -> tuple[list[LintFinding], list[tuple[str, str]]]:
    """Split a report against ``(Sid, issue) -> reason`` justifications.

    Returns:
        ``(findings without a justification, justifications no finding uses)``; both must
        be empty. A finding without Sid can never be justified: give the statement a Sid.
    """
    used: set[tuple[str, str]] = set()
    missing: list[LintFinding] = []
    for finding in report.findings:
        key = (finding.sid or "", finding.issue)
        if finding.sid and key in justifications and justifications[key].strip():
            used.add(key)
        else:
            missing.append(finding)
    stale = sorted(set(justifications) - used)
    return missing, stale
