"""Every policy, called directly: the compliant example passes, each non-compliant one is reported
with a message that names the resource and the fix."""

from __future__ import annotations

import pytest

from hybridgpu.policy.base import Exemption, PolicyResource, for_stack, parse_quantity, stack_of_urn
from hybridgpu.policy.registry import BY_NAME, POLICIES, PolicyConfigError
from hybridgpu.burst.kueue import kubeconfig_problems
from hybridgpu.policy.workloads import pod_templates
from tests.helpers.policy_cases import CASES, Case, job, kubeconfig, nodepool, res


def run(case: Case, resources: list[PolicyResource]) -> list[tuple[str, str]]:
    """``(resource name or '' for the stack, message)`` for each finding."""
    spec = BY_NAME[case.policy]
    settings = spec.parse_settings(case.settings)
    if spec.kind == "resource":
        return [(r.name, m) for r in resources for m in spec.run_resource(r, settings)]
    return [(r.name if r is not None else "", m) for r, m in spec.run_stack(resources, settings)]


def test_every_policy_has_a_case():
    assert sorted(c.policy for c in CASES) == sorted(p.name for p in POLICIES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_compliant_passes(case: Case):
    assert run(case, case.good) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_non_compliant_is_reported_with_resource_and_fix(case: Case):
    findings = run(case, case.bad)
    assert sorted({name for name, _ in findings}) == sorted(set(case.bad_names))
    for name, message in findings:
        assert "Fix:" in message
        if name:
            assert f'"{name}"' in message  # the message names the resource
    assert any(case.expect in m for _, m in findings), findings


def test_exemption_waives_only_the_named_resource_with_a_reason():
    spec = BY_NAME["nodepool-gpu-limit"]
    settings = spec.parse_settings({"exemptResources": [{"resource": "legacy-*", "reason": "migrating to hybridgpu in Q1"}]})
    assert spec.run_resource(nodepool("legacy-pool", limit=None), settings) == []
    assert spec.run_resource(nodepool("new-pool", limit=None), settings) != []
    with pytest.raises(PolicyConfigError, match="reason"):
        spec.parse_settings({"exemptResources": [{"resource": "x", "reason": "no"}]})


def test_exemption_can_be_limited_to_stacks():
    waiver = Exemption(resource="*", reason="dev sandbox only", stacks=["dev"])
    assert waiver.covers(nodepool("p", stack="dev"))
    assert not waiver.covers(nodepool("p", stack="prod"))


def test_per_stack_settings_pick_the_longest_matching_pattern():
    value = {"default": 64, "prod-*": 32, "prod-eu": 16}
    assert for_stack(value, "prod-eu") == 16
    assert for_stack(value, "prod-us") == 32
    assert for_stack(value, "dev") == 64
    assert for_stack(8, "anything") == 8


def test_per_stack_mapping_without_default_is_refused():
    with pytest.raises(PolicyConfigError, match="default"):
        BY_NAME["nodepool-gpu-limit"].parse_settings({"maxGpusPerNodePool": {"prod": 8}})


def test_unknown_setting_is_refused_with_its_name():
    with pytest.raises(PolicyConfigError, match="maxGpuPerNodePool"):
        BY_NAME["nodepool-gpu-limit"].parse_settings({"maxGpuPerNodePool": 8})


def test_per_stack_limit_applies_by_urn():
    spec = BY_NAME["nodepool-gpu-limit"]
    settings = spec.parse_settings({"maxGpusPerNodePool": {"default": 64, "dev": 8}})
    assert spec.run_resource(nodepool("p", limit="16", stack="prod"), settings) == []
    assert spec.run_resource(nodepool("p", limit="16", stack="dev"), settings) != []


@pytest.mark.parametrize(
    ("text", "value"),
    [("8", 8), (8, 8), ("1k", 1000), ("2Ki", 2048), ("500m", 0.5), ("1.5", 1.5), ("eight", None), (True, None), ("", None)],
)
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


def test_stack_of_urn():
    assert stack_of_urn("urn:pulumi:prod-eu::hybridgpu::aws:ec2/vpc:Vpc::v") == "prod-eu"
    assert stack_of_urn("not-a-urn") == ""


def test_pod_templates_count_replicas_and_init_containers():
    deployment = {
        "spec": {
            "replicas": 3,
            "template": {
                "metadata": {"labels": {"team": "a"}},
                "spec": {
                    "initContainers": [{"name": "i", "resources": {"limits": {"nvidia.com/gpu": "4"}}}],
                    "containers": [
                        {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                        {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                    ],
                },
            },
        }
    }
    [template] = pod_templates(deployment)
    assert template.replicas == 3
    assert template.path == "spec.template"
    assert template.gpu_limits() == {"nvidia.com/gpu": 4}  # max(init 4, app 1 + 2)


def test_pod_templates_find_custom_resource_replica_specs():
    pytorchjob = {
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}},
                "Worker": {"replicas": 8, "template": {"spec": {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}},
            }
        }
    }
    templates = pod_templates(pytorchjob)
    assert sorted(t.replicas for t in templates) == [1, 8]
    spec = BY_NAME["gpu-workload-requests"]
    findings = spec.run_resource(res("kubernetes:kubeflow.org/v1:PyTorchJob", "pt", pytorchjob), spec.parse_settings({}))
    assert [m for m in findings if "72 GPUs" in m and "above 64" in m]  # 8 x (1 + 8) = 72 > 64 per workload


def test_cronjob_pods_are_found():
    cron = {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}}}
    spec = BY_NAME["gpu-workload-cost-labels"]
    assert spec.run_resource(res("kubernetes:batch/v1:CronJob", "nightly", cron), spec.parse_settings({}))


def test_kubeconfig_problems_cover_the_multikueue_rules():
    assert kubeconfig_problems(kubeconfig({"token": "t"})) == []
    assert any("exec" in p for p in kubeconfig_problems(kubeconfig({"exec": {"command": "aws"}})))
    assert any("tokenFile" in p for p in kubeconfig_problems(kubeconfig({"tokenFile": "/var/run/token"})))
    assert any("certificate-authority" in p for p in kubeconfig_problems(kubeconfig({"token": "t"}, {"certificate-authority": "/ca.crt"})))
    assert any("client-key" in p for p in kubeconfig_problems(kubeconfig({"token": "t", "client-key": "/key.pem"})))
    assert kubeconfig_problems(kubeconfig({"client-certificate-data": "Q0VSVA==", "client-key-data": "S0VZ"})) == []
    for junk in ("::: not yaml", "[]", "clusters: 3", "clusters: [1, {name: a}]\nusers: [x]"):
        assert kubeconfig_problems(junk)  # problems, never an exception


def test_messages_never_quote_kubeconfig_or_command_text():
    from tests.helpers.policy_cases import multikueue

    spec = BY_NAME["multikueue-kubeconfig"]
    findings = spec.run_stack(multikueue(kubeconfig({"exec": {"command": "aws"}, "token": "SUPERSECRET-TOKEN"})), spec.parse_settings({}))
    assert findings and all("SUPERSECRET" not in m for _, m in findings)
    cmd = res("command:remote:Command", "j", {"stdin": "kubeadm join --token abcdef.0123456789abcdef --discovery-token-unsafe-skip-ca-verification"})
    ca = BY_NAME["kubeadm-ca-verification"]
    messages = ca.run_resource(cmd, ca.parse_settings({}))
    assert messages and all("0123456789abcdef" not in m for m in messages)


def test_job_helper_produces_gpu_requests():
    assert pod_templates(job("x", limits={"nvidia.com/gpu": "1"}).props)[0].gpu_limits() == {"nvidia.com/gpu": 1}


def test_config_schemas_have_no_refs_and_describe_every_setting():
    import json

    for spec in POLICIES:
        schema = spec.config_schema()
        assert "$ref" not in json.dumps(schema)
        assert "exemptResources" in schema
        for name, prop in schema.items():
            assert prop.get("description"), (spec.name, name)


def test_type_filters_never_hide_a_finding():
    """The pack skips resources outside a policy's ``types``; the validators must agree."""
    from tests.helpers.policy_cases import CASES as ALL

    resources = [r for case in ALL for r in case.good + case.bad]
    for spec in POLICIES:
        if spec.kind != "resource":
            continue
        settings = spec.parse_settings({})
        for r in resources:
            if not spec.applies(r.type):
                assert spec.run_resource(r, settings) == [], (spec.name, r.type)
        assert any(spec.applies(r.type) for r in resources), spec.name
