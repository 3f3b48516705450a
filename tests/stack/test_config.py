"""Stack configuration: loading like the Pulumi CLI, and one test per kind of bad config.

Every bad-config test checks that the error names the stack file, the key path and a fix.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from hybridgpu.stack.files import SECRET_PLACEHOLDER, pulumi_config_strings, read_stack_file
from hybridgpu.stack.load import config_from_pulumi_values, load_stack_config
from hybridgpu.config.models import Environment
from hybridgpu.errors import StackConfigError, StackFileError
from tests.helpers.scratch import example_stack, write_stack


def _error(project: Path, data: dict, stack: str = "bad") -> StackConfigError:
    write_stack(project, stack, data)
    with pytest.raises(StackConfigError) as info:
        load_stack_config(stack, project)
    return info.value


def _issue(err: StackConfigError, key: str):
    matches = [i for i in err.issues if i.key == key]
    assert matches, f"no issue at {key}; got {err.keys}"
    issue = matches[0]
    assert issue.file == "stacks/Pulumi.bad.yaml"
    assert issue.fix
    assert "stacks/Pulumi.bad.yaml" in str(err) and key in str(err)
    return issue


def _dev_pool_with_types(types: list[str]) -> tuple[dict, dict]:
    """The dev stack with its first NodePool listing ``instanceTypes`` instead of ``instanceFamilies``."""
    data = example_stack("dev")
    pool = data["config"]["hybridgpu:cloud"]["nodePools"][0]
    pool.pop("instanceFamilies")
    pool["instanceTypes"] = types
    return data, pool


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_example_stacks_load(root, stack):
    config, values = load_stack_config(stack, root)
    assert config.stack == stack
    assert config.cloud is not None and config.cloud.node_pools
    assert values.file == f"stacks/Pulumi.{stack}.yaml"


def test_project_defaults_apply(root):
    config, _ = load_stack_config("dev", root)
    assert config.required_tag_keys == ["team", "project", "cost-center"]
    assert config.environment is Environment.development


def test_unknown_top_level_key(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:clodu"] = {"x": 1}
    issue = _issue(_error(project, data), "hybridgpu:clodu")
    assert "hybridgpu:cloud" in issue.fix


def test_unknown_nested_key_suggests_spelling(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["nodePools"][0]["gpuLimt"] = 4
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].gpuLimt")
    assert "gpuLimit" in issue.fix


@pytest.mark.parametrize("weight", [0, 101])
def test_weight_out_of_range(project, weight):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["nodePools"][0]["weight"] = weight
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].weight")
    assert str(weight) in issue.message


def test_gpu_pool_without_limit(project):
    data = example_stack("dev")
    del data["config"]["hybridgpu:cloud"]["nodePools"][0]["gpuLimit"]
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].gpuLimit")
    assert "without a GPU limit" in issue.message


def test_negative_limit(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["nodePools"][0]["gpuLimit"] = -4
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].gpuLimit")
    assert "-4" in issue.message


def test_instance_type_missing_from_catalog(project):
    data, _pool = _dev_pool_with_types(["g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge", "g5.16xlarg"])
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].instanceTypes[4]")
    assert "g5.16xlarge" in issue.message  # the close match is suggested


def test_latest_ami_alias_refused_in_production(project):
    data = example_stack("prod")
    data["config"]["hybridgpu:cloud"]["nodeClasses"][1]["amiAlias"] = "al2023@latest"
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodeClasses[1].amiAlias")
    assert "pin" in issue.fix


def test_latest_ami_alias_allowed_in_development(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["nodeClasses"][0]["amiAlias"] = "al2023@latest"
    write_stack(project, "ok", data)
    config, _ = load_stack_config("ok", project)
    assert config.cloud.node_classes[0].ami_version == "latest"


def test_spot_pool_with_too_few_instance_types(project):
    data, _pool = _dev_pool_with_types(["g5.xlarge", "g5.2xlarge"])
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].instanceTypes")
    assert "only 2 instance type" in issue.message
    assert "narrowSpotReason" in issue.fix


def test_narrow_spot_pool_accepted_with_reason(project):
    data, pool = _dev_pool_with_types(["g5.xlarge", "g5.2xlarge"])
    pool["narrowSpotReason"] = "dev only"
    write_stack(project, "ok", data)
    config, _ = load_stack_config("ok", project)
    assert config.cloud.node_pools[0].narrow_spot_reason == "dev only"


def test_missing_cost_tag(project):
    data = example_stack("dev")
    del data["config"]["hybridgpu:tags"]["cost-center"]
    issue = _issue(_error(project, data), "hybridgpu:tags")
    assert "cost-center" in issue.message


def test_unknown_node_class_reference(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["nodePools"][0]["nodeClass"] = "gpus"
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].nodeClass")
    assert "gpu" in issue.message


def test_reserved_without_capacity_reservation(project):
    data = example_stack("dev")
    pool = data["config"]["hybridgpu:cloud"]["nodePools"][0]
    pool["capacityTypes"] = ["reserved"]
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].capacityTypes")
    assert "capacityReservationIds" in issue.fix


def test_efa_class_on_types_without_efa(project):
    # Issue 18: the pool (g5/g6 families: small sizes without EFA, large ones with 1) is refused at the key that
    # chose the types (was `nodeClass`), as a mix of EFA and non-EFA types (hybridgpu.stack.efa).
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["nodeClasses"][0]["efa"] = {"enabled": True, "interfaces": 1}
    issue = _issue(_error(project, data), "hybridgpu:cloud.nodePools[0].instanceFamilies")
    assert "g5.xlarge" in issue.message and issue.code == "efa-mixed"


def test_public_endpoint_open_to_world_refused(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["cluster"]["endpoint"]["publicAccessCidrs"] = ["0.0.0.0/0"]
    _issue(_error(project, data), "hybridgpu:cloud.cluster.endpoint.publicAccessCidrs")


def test_zone_outside_region(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["network"]["new"]["availabilityZones"][2] = "us-east-1a"
    _issue(_error(project, data), "hybridgpu:cloud.network.new.availabilityZones[2]")


@pytest.mark.parametrize(
    "cidr,ok",
    [
        # AWS CreateVpc allows /16 to /28 (Amazon VPC User Guide, "VPC CIDR blocks"); ours stops at /20 (pod addresses).
        ("10.0.0.0/8", False), ("10.0.0.0/15", False), ("172.16.0.0/12", False), ("10.64.0.0/21", False), ("10.64.0.0/16", True), ("10.64.0.0/17", True),
    ],
)
def test_vpc_cidr_within_what_aws_creates(project, cidr, ok):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["network"]["new"]["cidr"] = cidr
    if ok:
        write_stack(project, "dev", data)
        load_stack_config("dev", project)
    else:
        issue = _issue(_error(project, data), "hybridgpu:cloud.network.new.cidr")
        assert ("/16 to /28" in issue.message) == (int(cidr.split("/")[1]) < 16)


def test_all_problems_reported_at_once(project):
    data = example_stack("dev")
    pool = data["config"]["hybridgpu:cloud"]["nodePools"][0]
    pool["weight"] = 101
    pool["gpuLimit"] = -1
    err = _error(project, data)
    assert {"hybridgpu:cloud.nodePools[0].weight", "hybridgpu:cloud.nodePools[0].gpuLimit"} <= set(err.keys)


def test_unnamespaced_key(project):
    data = example_stack("dev")
    data["config"]["cloud"] = data["config"].pop("hybridgpu:cloud")
    issue = _issue(_error(project, data), "cloud")
    assert "hybridgpu:cloud" in issue.fix


def test_secure_values_are_opaque(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:tags"]["owner-email"] = {"secure": "v1:c2VjcmV0LWNpcGhlcnRleHQ="}
    path = write_stack(project, "sec", data)
    values = read_stack_file(path, root=project)
    assert values.values["hybridgpu:tags"]["owner-email"] == SECRET_PLACEHOLDER
    assert "hybridgpu:tags" in values.secret_keys
    assert "c2VjcmV0" not in json.dumps(values.values)


def test_values_as_pulumi_runtime_strings(root):
    config, values = load_stack_config("prod", root)
    strings = pulumi_config_strings(values.values)
    assert all(isinstance(v, str) for v in strings.values())
    again = config_from_pulumi_values(strings, stack="prod", file=values.file)
    assert again == config


def test_missing_stack_file(root):
    with pytest.raises(StackFileError, match="no such stack file"):
        load_stack_config("nope", root)


def test_not_yaml(project):
    (project / "stacks" / "Pulumi.broken.yaml").write_text("config: [unclosed\n")
    with pytest.raises(StackFileError, match="Pulumi.broken.yaml"):
        load_stack_config("broken", project)


def test_config_is_frozen(root):
    config, _ = load_stack_config("dev", root)
    with pytest.raises(ValidationError, match="frozen"):
        config.cloud.node_pools[0].gpu_limit = 1000  # type: ignore[misc]
    assert copy.deepcopy(config) == config


def test_mig_layout_for_other_gpu_model_than_the_pool(project):
    data = example_stack("prod")
    pools = data["config"]["hybridgpu:cloud"]["nodePools"]
    mig_pool = next(p for p in pools if p["name"] == "h100-mig")
    mig_pool["instanceTypes"] = ["p4d.24xlarge"]
    issue = _issue(_error(project, data), "hybridgpu:nvidia.nodePools.h100-mig.migConfig")
    assert "p4d.24xlarge" in issue.message and "H100-80GB" in issue.message


def test_bottlerocket_pool_with_gpu_operator(project):
    data = example_stack("prod")
    data["config"]["hybridgpu:cloud"]["nodeClasses"][1]["amiAlias"] = "bottlerocket@v1.50.0"
    issue = _issue(_error(project, data), "hybridgpu:nvidia.nodePools.h100-mig")
    assert "device plugin" in issue.message


def test_unplaceable_mig_layout_in_stack(project):
    data = example_stack("prod")
    data["config"]["hybridgpu:nvidia"]["migLayouts"][0]["devices"][1]["layout"] = {"3g.40gb": 2, "1g.10gb": 2}
    err = _error(project, data)
    issue = [i for i in err.issues if i.key.startswith("hybridgpu:nvidia.migLayouts[0]")][0]
    assert issue.file == "stacks/Pulumi.bad.yaml" and "compute" in issue.message


def test_nvidia_section_unknown_nodepool(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:nvidia"]["nodePools"]["spot-g5"] = data["config"]["hybridgpu:nvidia"]["nodePools"].pop("spot-g5-g6")
    err = _error(project, data)
    assert any(i.key.startswith("hybridgpu:nvidia.nodePools") and "spot-g5" in i.key for i in err.issues), err.keys


def test_mixed_mig_pool_needs_node_overlays(project):
    data = example_stack("prod")
    data["config"]["hybridgpu:cloud"]["karpenter"]["nodeOverlay"] = False
    issue = _issue(_error(project, data), "hybridgpu:nvidia.nodePools.h100-mig.migConfig")
    assert "nodeOverlay" in issue.fix


def test_single_strategy_needs_mig_on_every_gpu_of_the_node(project):
    data = example_stack("prod")
    nvidia = data["config"]["hybridgpu:nvidia"]
    nvidia["migStrategy"] = "single"
    nvidia["migLayouts"][0]["devices"] = [{"gpus": [0, 1, 2, 3], "layout": {"1g.10gb": 7}}]
    issue = _issue(_error(project, data), "hybridgpu:nvidia.nodePools.h100-mig.migConfig")
    assert "[4, 5, 6, 7]" in issue.message


def test_idle_alert_needs_the_gpu_operator(project):
    data = example_stack("prod")
    nvidia = data["config"]["hybridgpu:nvidia"]
    nvidia["install"] = "device-plugin"
    nvidia.pop("migLayouts")
    nvidia["nodePools"] = {}
    nvidia["migStrategy"] = "none"
    issue = _issue(_error(project, data), "hybridgpu:nvidia.dcgm")
    assert "DCGM exporter" in issue.message


@pytest.mark.parametrize(
    ("economics", "key", "words"),
    [
        ({"onDemandUsdPerHour": {"g9.xlarge": 1.0}}, "hybridgpu:economics.onDemandUsdPerHour", "g9.xlarge"),
        ({"cloud": {"zz9": {"spotPriceFraction": 0.5}}}, "hybridgpu:economics.cloud.zz9", "not a family"),
        ({"onPrem": {"gpuModel": "Z100"}}, "hybridgpu:economics.onPrem.gpuModel", "not a GPU catalog key"),
    ],
)
def test_economics_overrides_are_checked_by_validate(root, project, economics, key, words):
    """What `hybridgpu cost` would refuse is refused before any resource: by validate, preview and pulumi up."""
    from hybridgpu.stack.load import load_stack_config

    src = (root / "stacks" / "Pulumi.dev.yaml").read_text() + f"  hybridgpu:economics: {json.dumps(economics)}\n"
    (project / "stacks" / "Pulumi.dev.yaml").write_text(src)
    with pytest.raises(StackConfigError) as err:
        load_stack_config("dev", project)
    text = str(err.value)
    assert key in text and words in text and "stacks/Pulumi.dev.yaml" in text
