"""The offline check sends what the real engine sends: URNs of the engine's form (checked against the
Pulumi SDK's own URN construction), default providers built from the stack config, property
dependencies, and YAML manifests expanded as pulumi-kubernetes expands them."""

from __future__ import annotations

import json
import runpy

import pulumi
import pytest
from pulumi.runtime.sync_await import _sync_await

from hybridgpu.shell.policy.check import _analyzer_resources, default_provider, load_policy_config
from hybridgpu.shell.preview import decode_manifests, engine_urn, kubernetes_type, run_preview
from hybridgpu.stack.files import read_stack_file
from tests.helpers import ROOT

CASES = ROOT / "tests" / "fixtures" / "policy-cases"


def _sdk_urn(name: str, type_: str, parent: str | None, project: str, stack: str) -> str:
    """``pulumi.resource.create_urn`` (pulumi 3.272 ``runtime/resource.py``): the SDK's URN rule."""
    out = pulumi.resource.create_urn(name, type_, parent=parent, project=project, stack=stack)
    return _sync_await(out.future())


@pytest.mark.parametrize(
    ("parent", "type_", "name"),
    [
        ("", "aws:ec2/vpc:Vpc", "main"),
        ("urn:pulumi:dev::proj::hybridgpu:cloud:Eks::gpu", "aws:eks/cluster:Cluster", "gpu-cluster"),
        ("urn:pulumi:dev::proj::hybridgpu:cloud:Eks$hybridgpu:cloud:Karpenter::k", "kubernetes:karpenter.sh/v1:NodePool", "gpu"),
    ],
)
def test_urns_match_the_sdk_and_top_level_resources_carry_no_stack_type(parent, type_, name):
    ours = engine_urn("dev", "proj", parent, type_, name)
    assert ours == _sdk_urn(name, type_, parent or None, "proj", "dev")
    # The root stack is never part of the type chain (pulumi/pulumi deployment.go generateURN).
    assert engine_urn("dev", "proj", "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev", type_, name) == _sdk_urn(name, type_, None, "proj", "dev")


def test_recorded_urns_have_the_engine_form():
    case = CASES / "oversized-pass-asg-gpu-small"
    raw = read_stack_file(case / "Pulumi.dev.yaml", root=case)
    preview = run_preview("dev", case, program=lambda: runpy.run_path(str(case / "__main__.py")), raw=raw, project="oversized-pass-asg-gpu-small")
    urns = sorted(r.urn for r in preview.records)
    assert urns == [
        "urn:pulumi:dev::oversized-pass-asg-gpu-small::aws:autoscaling/group:Group::inference",
        "urn:pulumi:dev::oversized-pass-asg-gpu-small::aws:ec2/launchTemplate:LaunchTemplate::g6-template",
    ]
    [asg] = [r for r in preview.records if r.type == "aws:autoscaling/group:Group"]
    assert asg.property_dependencies["launchTemplate"] == [urns[1]]
    resources = _analyzer_resources(preview.records, preview)
    [sent] = [r for r in resources if r.name == "inference"]
    assert sent.property_dependencies == {"launchTemplate": (urns[1],)}
    # No explicit provider: the engine's default provider, inputs from the stack's aws: config.
    assert sent.provider is not None and sent.provider.urn == "urn:pulumi:dev::oversized-pass-asg-gpu-small::pulumi:providers:aws::default"
    assert json.loads(sent.provider.properties["defaultTags"]) == {"tags": {"team": "ml", "project": "llm", "cost-center": "cc-1"}}
    assert sent.provider.properties["region"] == "us-east-1"


def test_default_provider_takes_only_its_namespace_as_strings():
    p = default_provider("aws", "prod", "proj", {"aws:region": "eu-west-1", "aws:defaultTags": {"tags": {"team": "a"}}, "kubernetes:context": "x", "proj:size": 3})
    assert p.properties == {"region": "eu-west-1", "defaultTags": '{"tags": {"team": "a"}}'}
    assert p.type == "pulumi:providers:aws" and p.urn == "urn:pulumi:prod::proj::pulumi:providers:aws::default"


def test_yaml_decode_answers_like_the_provider():
    docs = decode_manifests("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}\n")
    assert [kubernetes_type(d) for d in docs] == ["kubernetes:core/v1:ConfigMap", "kubernetes:apps/v1:Deployment"]
    with pytest.raises(ValueError, match="document 0"):
        decode_manifests("- just\n- a list\n")


def test_configgroup_v2_children_are_recorded_under_the_component():
    case = CASES / "untagged-pass-configgroup-v2-labeled"
    raw = read_stack_file(case / "Pulumi.dev.yaml", root=case)
    preview = run_preview("dev", case, program=lambda: runpy.run_path(str(case / "__main__.py")), raw=raw, project="p")
    child = [r for r in preview.records if r.type == "kubernetes:apps/v1:Deployment"]
    assert [c.name for c in child] == ["serving:ml/embed"]
    assert child[0].urn == "urn:pulumi:dev::p::kubernetes:yaml/v2:ConfigGroup$kubernetes:apps/v1:Deployment::serving:ml/embed"


def test_misspelled_policy_name_gets_a_close_match(tmp_path):
    from hybridgpu.shell.policy.check import PolicyConfigFileError

    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"gpu-instance-sizes": "advisory"}))
    with pytest.raises(PolicyConfigFileError, match="did you mean 'gpu-instance-size'"):
        load_policy_config(cfg)
