"""EFA as the program registers it (offline preview under Pulumi's mocks).

* The EFA device plugin release and the security-group self rule exist only when a NodePool's node
  class has EFA (prod's h100-efa), never in dev; the rule is all traffic from the node security group
  (the EKS cluster security group, the one EC2NodeClasses select by the discovery tag) to itself.
* The release is the pinned aws/eks-charts chart in kube-system; its values put it on the EFA pool's
  instance types and label only, tolerating the GPU taint.
* The EC2NodeClass interface count follows the catalog per instance type (p5.48xlarge 32,
  p5en.48xlarge 16, p4d.24xlarge 4), and only the EFA pools carry the EFA label.
"""

from __future__ import annotations

from typing import Any

import pytest

from hybridgpu.catalog import load_catalog
from hybridgpu.k8s import DISCOVERY_TAG, EFA_LABEL, GPU_TAINT, INSTANCE_TYPE_LABEL
from hybridgpu.render.efa import EFA_DEVICE_PLUGIN_CHART, EFA_DEVICE_PLUGIN_REPO, EFA_DEVICE_PLUGIN_VERSION
from hybridgpu.shell.preview import run_preview
from tests.helpers import one_record
from tests.helpers.scratch import example_plan

EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"


def _efa_releases(result) -> list[Any]:
    return [r for r in result.of_type(RELEASE) if r.inputs.get("chart") == EFA_DEVICE_PLUGIN_CHART]


def _efa_rules(result) -> list[Any]:
    return [r for r in result.of_type(EGRESS) if r.inputs.get("ipProtocol") == "-1"]


def test_dev_has_no_efa_pool_and_gets_no_plugin_and_no_rule(previews):
    dev = previews["dev"]
    assert _efa_releases(dev) == []
    assert _efa_rules(dev) == []
    assert [r for r in dev.records if r.type == "hybridgpu:index:Efa"] == []
    for nodeclass in dev.of_type(NODECLASS):
        assert "networkInterfaces" not in nodeclass.inputs["spec"]


def test_prod_self_rule_on_the_node_security_group(previews):
    prod = previews["prod"]
    node_sg = one_record(prod, "aws:ec2/tag:Tag", "cluster-sg-discovery")
    assert node_sg.inputs["key"] == DISCOVERY_TAG
    (rule,) = _efa_rules(prod)
    assert rule.inputs["securityGroupId"] == node_sg.inputs["resourceId"]
    assert rule.inputs["referencedSecurityGroupId"] == node_sg.inputs["resourceId"]
    assert "cidrIpv4" not in rule.inputs and "fromPort" not in rule.inputs


def test_prod_installs_the_pinned_plugin_on_efa_nodes_only(previews):
    prod = previews["prod"]
    (release,) = _efa_releases(prod)
    assert (release.inputs["version"], release.inputs["namespace"]) == (EFA_DEVICE_PLUGIN_VERSION, "kube-system")
    assert release.inputs["repositoryOpts"]["repo"] == EFA_DEVICE_PLUGIN_REPO
    values = release.inputs["values"]
    assert values["nodeSelector"] == {EFA_LABEL: "true"}
    assert values["supportedInstanceLabels"] == {"keys": [INSTANCE_TYPE_LABEL], "values": ["p5.48xlarge"]}
    assert {"key": GPU_TAINT.key, "operator": "Exists", "effect": GPU_TAINT.effect} in values["tolerations"]
    # The plugin waits for Karpenter (no EFA node exists before it).
    karpenter = [r for r in prod.of_type(RELEASE) if r.inputs.get("name") == "karpenter"]
    assert karpenter and karpenter[0].urn in release.dependencies


def test_prod_efa_label_only_on_pools_of_the_efa_class(previews):
    pools = {r.inputs["metadata"]["name"]: r.inputs["spec"]["template"]["metadata"]["labels"] for r in previews["prod"].of_type(NODEPOOL)}
    assert {name for name, labels in pools.items() if labels.get(EFA_LABEL) == "true"} == {"h100-reserved"}


def test_prod_nodeclass_has_one_efa_device_per_network_card(previews):
    classes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in previews["prod"].of_type(NODECLASS)}
    nics = classes["h100-efa"]["networkInterfaces"]
    assert sum(n["interfaceType"] == "efa-only" for n in nics) == 32  # p5.48xlarge maxEfaInterfaces
    assert sorted({n["networkCardIndex"] for n in nics}) == list(range(32))
    assert "networkInterfaces" not in classes["h100"]


@pytest.mark.parametrize("instance_type", ["p5en.48xlarge", "p4d.24xlarge", "g6e.48xlarge", "g5.48xlarge"])
def test_interface_count_follows_the_catalog_per_type(scratch_project, instance_type):
    def edit(config: dict[str, Any]) -> None:
        config["hybridgpu:cloud"]["nodePools"][0]["instanceTypes"] = [instance_type]

    root = scratch_project(stacks=["prod"], plan=example_plan(), stack_edits={"prod": edit})
    result = run_preview("prod", root)
    want = load_catalog().instance_type(instance_type).max_efa_interfaces
    spec = next(r.inputs["spec"] for r in result.of_type(NODECLASS) if r.inputs["metadata"]["name"] == "h100-efa")
    assert sum(n["interfaceType"] == "efa-only" for n in spec["networkInterfaces"]) == want
    (release,) = _efa_releases(result)
    assert release.inputs["values"]["supportedInstanceLabels"]["values"] == [instance_type]
