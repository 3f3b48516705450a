"""Every policy end to end through the pack's real gRPC analyzer, started as the Pulumi CLI starts it
(``python -m pulumi.policy <engine> policies``), plus fail-closed behaviour on unknown values."""

from __future__ import annotations

import pytest
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE

from hybridgpu.shell.policy.analyzer import Analyzer, AnalyzerResource
from hybridgpu.policy.base import PolicyResource
from hybridgpu.shell.policy.check import load_policy_config
from hybridgpu.policy.registry import BY_NAME, PACK_NAME, POLICIES
from tests.helpers.policy_cases import CASES, Case, nodepool, res
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def analyzer():
    with Analyzer(ROOT / "policies", project="hybridgpu", stack="dev") as running:
        yield running


def to_analyzer(r: PolicyResource) -> AnalyzerResource:
    provider = None
    if r.provider_props is not None:
        provider = AnalyzerResource(type="pulumi:providers:aws", name="aws", urn="urn:pulumi:dev::hybridgpu::pulumi:providers:aws::aws", properties=dict(r.provider_props))
    return AnalyzerResource(type=r.type, name=r.name, urn=r.urn, properties=dict(r.props), provider=provider)


def configure(analyzer: Analyzer, policy: str | None = None, settings: dict | None = None) -> None:
    config = load_policy_config(None)
    if policy is not None:
        config[policy] = (config[policy][0], settings or {})
    analyzer.configure(config)


def findings(analyzer: Analyzer, case: Case, resources: list[PolicyResource]) -> list[tuple[str, str, str]]:
    """``(resource name, level, message)`` of the case's policy only."""
    configure(analyzer, case.policy, case.settings)
    analyzer.configure_stack(project="hybridgpu", stack="dev")
    items = [to_analyzer(r) for r in resources]
    by_urn = {i.urn: i for i in items}
    if BY_NAME[case.policy].kind == "resource":
        diags = [d for i in items for d in analyzer.analyze(i)]
    else:
        diags = analyzer.analyze_stack(items)
    for d in diags:  # the analyzer attributes each violation to the resource sent with its URN
        sent = by_urn.get(d.urn)
        assert (d.stack, d.type, d.name) == ("dev", sent.type if sent else "", sent.name if sent else "")
    return [(d.name, d.level, d.message) for d in diags if d.policy == case.policy]


def test_pack_describes_every_policy(analyzer):
    info = analyzer.info()
    assert info.name == PACK_NAME
    assert sorted(p.name for p in info.policies) == sorted(p.name for p in POLICIES)
    for p in info.policies:
        assert p.description == BY_NAME[p.name].description
        assert "exemptResources" in p.configSchema.properties


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_compliant_passes_through_the_analyzer(analyzer, case: Case):
    assert findings(analyzer, case, case.good) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_non_compliant_is_a_mandatory_violation_through_the_analyzer(analyzer, case: Case):
    found = findings(analyzer, case, case.bad)
    assert sorted({name for name, _, _ in found}) == sorted(set(case.bad_names))
    assert {level for _, level, _ in found} == {BY_NAME[case.policy].enforcement}  # mandatory, except the advisory gpu-repair-coverage
    for name, _, message in found:
        # pulumi_policy sends ``description + "\n" + message`` (pulumi-policy 1.21 policy.py,
        # _create_report_violation); the Violation holds the validator's message alone.
        assert not message.startswith(BY_NAME[case.policy].description)
        assert "Fix:" in message
        if name:
            assert f'"{name}"' in message


def test_enforcement_level_from_the_config_is_honoured(analyzer):
    config = load_policy_config(None)
    config["nodepool-gpu-limit"] = ("advisory", {})
    analyzer.configure(config)
    diags = [d for d in analyzer.analyze(to_analyzer(nodepool("loose", limit=None))) if d.policy == "nodepool-gpu-limit"]
    assert [d.level for d in diags] == ["advisory"]
    config["nodepool-gpu-limit"] = ("disabled", {})
    analyzer.configure(config)
    assert not [d for d in analyzer.analyze(to_analyzer(nodepool("loose", limit=None))) if d.policy == "nodepool-gpu-limit"]


def test_unknown_value_fails_closed_as_a_mandatory_violation(analyzer):
    """pulumi_policy alone would turn this into an advisory 'can't run policy during preview' note."""
    configure(analyzer)
    pool = nodepool("computed", limit=UNKNOWN_STRING_VALUE)
    diags = [d for d in analyzer.analyze(to_analyzer(pool)) if d.policy == "nodepool-gpu-limit"]
    assert len(diags) == 1
    assert diags[0].level == "mandatory"
    assert "cannot be verified" in diags[0].message and "fails closed" in diags[0].message
    assert '"computed"' in diags[0].message


def test_unknown_tags_fail_closed(analyzer):
    configure(analyzer)
    vpc = res("aws:ec2/vpc:Vpc", "computed-tags", {"cidrBlock": "10.0.0.0/16", "tags": UNKNOWN_OBJECT_VALUE})
    diags = [d for d in analyzer.analyze(to_analyzer(vpc)) if d.policy == "required-cost-tags"]
    assert [d.level for d in diags] == ["mandatory"]
    assert "tags" in diags[0].message


def test_unknown_value_in_a_stack_policy_fails_closed(analyzer):
    configure(analyzer)
    resources = [to_analyzer(nodepool("a", limit="8")), to_analyzer(nodepool("b", limit=UNKNOWN_STRING_VALUE))]
    diags = [d for d in analyzer.analyze_stack(resources) if d.policy == "stack-gpu-ceiling"]
    assert [d.level for d in diags] == ["mandatory"]
    assert "cannot be verified" in diags[0].message


def test_invalid_policy_config_is_reported_not_crashed(analyzer):
    config = load_policy_config(None)
    config["nodepool-gpu-limit"] = ("mandatory", {"maxGpusPerNodePool": "many"})
    analyzer.configure(config)
    diags = [d for d in analyzer.analyze(to_analyzer(nodepool("p"))) if d.policy == "nodepool-gpu-limit"]
    assert diags and "policy config" in diags[0].message


def test_secret_marked_inputs_are_read(analyzer):
    """Pulumi sends secrets wrapped in its secret signature; the pack still checks their content."""
    from google.protobuf import struct_pb2

    configure(analyzer)
    props = struct_pb2.Struct()
    props.update(
        {
            "stdin": {
                "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
                "value": "kubeadm join x --discovery-token-unsafe-skip-ca-verification",
            }
        }
    )
    cmd = AnalyzerResource(type="command:remote:Command", name="secret-join", urn="urn:pulumi:dev::hybridgpu::command:remote:Command::secret-join", properties=props)
    assert [d.policy for d in analyzer.analyze(cmd)] == ["kubeadm-ca-verification"]


def test_command_text_scan_steps_over_unknown_stdin_but_host_config_fails_closed(analyzer):
    """A first preview of an on-prem stack has the join commands' stdin unknown (it holds the
    token): the best-effort command scan must not block on that, while the Host record's
    kubeadm config, which the policy must see, fails closed when unknown."""
    configure(analyzer)
    cmd = res("command:remote:Command", "join", {"create": "sudo bash -s", "stdin": UNKNOWN_STRING_VALUE})
    assert not [d for d in analyzer.analyze(to_analyzer(cmd)) if d.policy == "kubeadm-ca-verification"]
    flagged = res("command:remote:Command", "join-2", {"create": "kubeadm join --discovery-token-unsafe-skip-ca-verification", "stdin": UNKNOWN_STRING_VALUE})
    assert [d.level for d in analyzer.analyze(to_analyzer(flagged)) if d.policy == "kubeadm-ca-verification"] == ["mandatory"]
    host = res("hybridgpu:index:OnPremHost", "h", {"hostname": "h", "owner": "ml", "kubeadmConfig": UNKNOWN_STRING_VALUE})
    diags = [d for d in analyzer.analyze(to_analyzer(host)) if d.policy == "kubeadm-ca-verification"]
    assert [d.level for d in diags] == ["mandatory"] and "cannot be verified" in diags[0].message
