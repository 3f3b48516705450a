"""The component package: the schema Pulumi infers from the public components, and Construct through it.

``ComponentProvider`` is the pinned SDK's (``pulumi/provider/experimental/component.py``): it infers the
schema with ``analyzer.py`` and, on ``Construct``, maps the schema's camelCase inputs to the Python names
(``map_inputs``) and calls the component with ``(name, args, opts)``. These tests drive it the way the
engine does for a TypeScript or YAML program, under the offline preview's mocks.
"""

import json
import re
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest
import yaml
from pulumi.errors import InputPropertyError
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ComponentInitError

import hybridgpu
from hybridgpu.components import gen_inputs
from hybridgpu.components.base import PACKAGE
from hybridgpu.components.public import PUBLIC_COMPONENTS
from hybridgpu.render.nvidia import node_overlays
from hybridgpu.render.karpenter import resolve_instance_types
from hybridgpu.catalog import load_catalog
from hybridgpu.shell.preview import RecordingMonitor, run_preview
from hybridgpu.stack.load import load_stack
from tests.helpers import GOLDEN, ROOT

#: The token each component had before ``index`` tokens: its alias (docs/components.md, "Tokens and aliases").
OLD_TOKENS = {
    "Network": "hybridgpu:cloud:Network",
    "EksCluster": "hybridgpu:cloud:EksCluster",
    "Karpenter": "hybridgpu:cloud:Karpenter",
    "GpuNodePools": "hybridgpu:cloud:GpuNodePools",
    "Efa": "hybridgpu:cloud:Efa",
    "EfaQueues": "hybridgpu:cloud:EfaQueues",
    "FsxLustre": "hybridgpu:cloud:FsxLustre",
    "NvidiaLayer": "hybridgpu:nvidia:NvidiaLayer",
    "KueueCluster": "hybridgpu:burst:KueueCluster",
    "OnPremCluster": "hybridgpu:onprem:OnPremCluster",
    "NetworkOperator": "hybridgpu:onprem:NetworkOperator",
    "OnPremHost": "hybridgpu:onprem:Host",
    "OpenCost": "hybridgpu:showback:OpenCost",
    "TrainingData": "hybridgpu:storage:TrainingData",
}

#: Free-form inputs typed ``Any`` on purpose (rendered Kubernetes objects, Helm values, a value that is one of
#: several shapes, Outputs placed as they are): every other input has a type.
ANY_ALLOWED = {
    "/resources/hybridgpu:index:NvidiaLayer/inputProperties/nodeOverlays/items/additionalProperties",
    "/resources/hybridgpu:index:NvidiaLayer/inputProperties/gpuOperatorExtra/additionalProperties",
    "/resources/hybridgpu:index:TrainingData/inputProperties/values/additionalProperties",
    "/types/hybridgpu:index:NodePoolConfigArgs/properties/expireAfter",
    "/types/hybridgpu:index:DisruptionArgs/properties/consolidateAfter",
    "/types/hybridgpu:index:VolumeSourceArgs/properties/volumeHandle",
    "/types/hybridgpu:index:VolumeSourceArgs/properties/attributes/additionalProperties",
    "/types/hybridgpu:index:ClusterPlanArgs/properties/extraManifests/items/additionalProperties",
    "/types/hybridgpu:index:ClusterPlanArgs/properties/configuration/additionalProperties",
    "/types/hybridgpu:index:ClusterQueuePlanArgs/properties/preemption/additionalProperties",
}


@pytest.fixture(scope="module")
def provider() -> ComponentProvider:
    return ComponentProvider(list(PUBLIC_COMPONENTS), PACKAGE, version=hybridgpu.__version__)


@pytest.fixture(scope="module")
def schema(provider) -> dict[str, Any]:
    return json.loads(provider.schema)


def test_inputs_module_is_generated_from_the_models():
    assert gen_inputs.main(["--check"]) == 0, "run `python -m hybridgpu.components.gen_inputs`"


def test_schema_matches_golden(schema, assert_golden):
    text = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    assert_golden(text, GOLDEN / "components-schema.json", "component schema")


def test_schema_lists_every_public_component_with_typed_inputs(schema):
    assert schema["name"] == "hybridgpu"
    assert sorted(schema["resources"]) == sorted(f"hybridgpu:index:{c.__name__}" for c in PUBLIC_COMPONENTS)
    for token, resource in schema["resources"].items():
        assert resource["isComponent"] is True
        assert resource["inputProperties"], token
        assert resource.get("requiredInputs"), token
        for name, prop in resource["inputProperties"].items():
            assert prop.get("description"), f"{token}.{name} has no description"
    anys: list[str] = []

    def walk(path: str, node: Any) -> None:
        if isinstance(node, dict):
            if node.get("$ref") == "pulumi.json#/Any":
                anys.append(path)
            for key, value in node.items():
                walk(f"{path}/{key}", value)

    walk("", schema)
    assert set(anys) == ANY_ALLOWED
    # Live objects are references to the kubernetes package's resources, not copies.
    eks = schema["resources"]["hybridgpu:index:EksCluster"]
    assert "kubernetes:index%2Fprovider" in json.dumps(eks["properties"]["provider"]) or "pulumi:providers:kubernetes" in json.dumps(
        eks["properties"]["provider"]
    )
    assert [d["name"] for d in schema.get("dependencies", [])] == ["kubernetes"]


def test_provider_refuses_a_wrong_module_token(provider):
    with pytest.raises(ValueError, match="invalid modle 'cloud'|invalid module 'cloud'"):
        provider.construct("gpu-prod", "hybridgpu:cloud:EksCluster", {}, None)


def test_provider_refuses_a_missing_required_input(provider):
    with pytest.raises(InputPropertyError, match="Missing required input 'cluster' on 'EksCluster'"):
        provider.construct("gpu-prod", "hybridgpu:index:EksCluster", {"region": "us-east-1", "subnetIds": ["subnet-1"]}, None)


def test_a_bad_section_from_another_language_gets_the_stack_file_kind_of_error(provider):
    inputs = {"cluster": {"name": "gpu-prod", "logRetentionDays": 2}, "region": "us-east-1", "subnetIds": ["subnet-1"]}
    with pytest.raises(ComponentInitError) as info:
        provider.construct("gpu-prod", "hybridgpu:index:EksCluster", inputs, None)
    message = str(info.value)
    assert "input `cluster` of EksCluster 'gpu-prod'" in message
    assert "log_retention_days" in message or "logRetentionDays" in message


def _subtree(records, root_type: str, root_name: str) -> list[tuple[str, str, str]]:
    """(urn, type, parent urn) of a component and everything under it."""
    by_urn = {r.urn: r for r in records}
    top = [r for r in records if r.type == root_type and r.name == root_name]
    assert len(top) == 1, (root_type, root_name)
    keep = []
    for r in records:
        node = r
        while node is not None and node.urn != top[0].urn:
            node = by_urn.get(node.parent)
        if node is not None:
            keep.append(r)
    return sorted((r.urn, r.type, r.parent) for r in keep)


def test_construct_eks_cluster_registers_what_the_python_program_registers(provider, previews):
    """EksCluster from camelCase inputs (the stack file's section, as a TypeScript program sends it)."""
    stack = load_stack("prod", ROOT)
    cloud = stack.values.values["hybridgpu:cloud"]
    state: dict[str, Any] = {}

    def program() -> None:
        aws_provider = aws.Provider("aws", region=stack.config.region)
        inputs = {
            "cluster": cloud["cluster"],
            "systemNodeGroup": cloud.get("systemNodeGroup", {}),
            "subnetIds": ["subnet-a", "subnet-b", "subnet-c"],
            "region": stack.config.region,
            "costTags": {**stack.config.tags, "hybridgpu:stack": "prod"},
            "nodeRepair": cloud["karpenter"]["nodeRepair"],
        }
        result = provider.construct("gpu-prod", "hybridgpu:index:EksCluster", inputs, pulumi.ResourceOptions(providers={"aws": aws_provider}))
        state.update(result.state)

    constructed = run_preview("prod", ROOT, program=program, loaded=stack)
    ours = _subtree(constructed.records, "hybridgpu:index:EksCluster", "gpu-prod")
    python = _subtree(previews["prod"].records, "hybridgpu:index:EksCluster", "gpu-prod")
    assert ours == python
    assert len(ours) > 20
    assert {"clusterName", "endpoint", "kubeconfig", "provider"} <= set(state)


def test_construct_nvidia_layer_registers_the_same_children_with_the_same_inputs(provider, previews):
    stack = load_stack("prod", ROOT)
    nvidia = stack.values.values["hybridgpu:nvidia"]
    config = stack.config
    assert config.cloud is not None and config.nvidia is not None
    catalog = load_catalog()
    pools = {p.name: [(t.name, t.gpu_count) for t in resolve_instance_types(p, catalog)] for p in config.cloud.node_pools}
    overlays = node_overlays(config.nvidia, pools)

    def program() -> None:
        k8s_provider = k8s.Provider("gpu-prod-k8s", kubeconfig="{}")
        inputs = {"nvidia": nvidia, "provider": k8s_provider, "nodeOverlays": overlays}
        provider.construct("gpu-prod-nvidia", "hybridgpu:index:NvidiaLayer", inputs, None)

    constructed = run_preview("prod", ROOT, program=program, loaded=stack)
    python_records = previews["prod"].records
    ours = _subtree(constructed.records, "hybridgpu:index:NvidiaLayer", "gpu-prod-nvidia")
    python = _subtree(python_records, "hybridgpu:index:NvidiaLayer", "gpu-prod-nvidia")
    assert ours == python
    urns = {u for u, _, _ in ours}
    assert {r.urn: r.inputs for r in constructed.records if r.urn in urns} == {r.urn: r.inputs for r in python_records if r.urn in urns}


def test_every_component_carries_the_alias_of_its_old_token(monkeypatch):
    aliases: dict[str, list[str]] = {}
    original = RecordingMonitor.RegisterResource

    def spy(self, request):  # noqa: ANN001
        if request.type.startswith("hybridgpu:"):
            aliases.setdefault(request.type, []).extend(a.spec.type for a in request.aliases)
        return original(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", spy)
    run_preview("prod", ROOT)
    run_preview("onprem", ROOT)
    seen = {token.rsplit(":", 1)[1] for token in aliases}
    assert seen == set(OLD_TOKENS), seen ^ set(OLD_TOKENS)
    for token, found in aliases.items():
        assert OLD_TOKENS[token.rsplit(":", 1)[1]] in found, token


def _ts_examples(text: str) -> list[str]:
    return re.findall(r"```typescript\n(.*?)```", text, re.S)


def _yaml_examples(text: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if "hybridgpu:index:" in block]


def _names_under(schema: dict[str, Any], token: str) -> set[str]:
    """Every property name reachable from a component's inputs (nested types included)."""
    names: set[str] = set()
    todo = [schema["resources"][token]["inputProperties"]]
    seen: set[str] = set()
    while todo:
        props = todo.pop()
        for name, prop in props.items():
            names.add(name)
            for node in (prop, prop.get("items") or {}, prop.get("additionalProperties") or {}):
                ref = node.get("$ref", "")
                if ref.startswith("#/types/") and ref not in seen:
                    seen.add(ref)
                    todo.append(schema["types"][ref[len("#/types/") :]].get("properties", {}))
    return names


def _check_yaml_properties(schema: dict[str, Any], props: dict[str, Any], token: str) -> None:
    allowed = _names_under(schema, token)
    top = schema["resources"][token]
    missing = set(top.get("requiredInputs", [])) - set(props)
    assert not missing, (token, missing)

    def walk(value: Any, free: bool) -> None:
        if isinstance(value, dict) and not free:
            for key, inner in value.items():
                assert key in allowed, (token, key)
                walk(inner, key in ("nodeOverlays", "gpuOperatorExtra", "values", "costTags", "tags"))
        elif isinstance(value, list):
            for item in value:
                walk(item, free)

    walk(props, False)


def test_docs_examples_use_only_components_and_inputs_of_the_schema(schema):
    text = (ROOT / "docs" / "components.md").read_text()
    ts = _ts_examples(text)
    assert ts, "docs/components.md has no TypeScript example"
    used = 0
    for block in ts:
        for match in re.finditer(r"new hybridgpu\.(\w+)\(\"[^\"]+\", \{(.*?)\n\}", block, re.S):
            token = f"hybridgpu:index:{match.group(1)}"
            assert token in schema["resources"], token
            allowed = _names_under(schema, token)
            for key in re.findall(r"^\s+(\w+):", match.group(2), re.M):
                assert key in allowed, (token, key)
            used += 1
    assert used >= 3
    docs = _yaml_examples(text)
    assert docs, "docs/components.md has no Pulumi YAML example"
    for doc in docs:
        for resource in doc["resources"].values():
            if resource["type"].startswith("hybridgpu:"):
                assert resource["type"] in schema["resources"], resource["type"]
                _check_yaml_properties(schema, resource.get("properties", {}), resource["type"])


def test_components_directory_is_a_python_component_package():
    """``pulumi package add ./components`` needs PulumiPlugin.yaml (runtime python) and a __main__ that hosts the components."""
    import runpy

    plugin = yaml.safe_load((ROOT / "components" / "PulumiPlugin.yaml").read_text())
    assert plugin["runtime"]["name"] == "python"
    assert plugin["runtime"]["options"]["virtualenv"] == "../.venv"
    assert (ROOT / "components" / "requirements.txt").read_text().strip() == "-e .."
    # Imported, not run: the host starts only under `__main__`.
    namespace = runpy.run_path(str(ROOT / "components" / "__main__.py"), run_name="components_main")
    assert namespace["PUBLIC_COMPONENTS"] == PUBLIC_COMPONENTS
    assert namespace["PACKAGE"] == "hybridgpu"
