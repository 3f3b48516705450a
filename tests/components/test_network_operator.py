"""On-prem RDMA and topology under Pulumi's mocks: the Network Operator per fabric, none without one, topology labels per host.

* the onprem example stack: one ``network-operator`` release (pinned chart, NFD left to the GPU Operator, after
  the GPU Operator release whose NFD installs the NodeFeatureRule CRD), one ``NicClusterPolicy`` after it
  (its CRD ships in the chart's ``crds/``), with one RDMA resource per fabric of the inventory;
* an inventory with one fabric: one resource; an inventory without fabric: no release, no policy, no namespace;
* each host's kubeadm config (what the join command writes) registers the kubelet with its rack and block labels
  and its fabric label; the Kueue Topology and the flavors are created on the cluster.
"""

from __future__ import annotations

import json

import pytest
import yaml

from hybridgpu.k8s import FABRIC_LABEL, RDMA_IB_RESOURCE, RDMA_ROCE_RESOURCE, TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL
from hybridgpu.render.network_operator import NETWORK_OPERATOR_VERSION
from hybridgpu.shell.crds import HELM_RELEASE
from hybridgpu.shell.preview import run_preview
from hybridgpu.stack.load import load_stack

NCP = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
FIXTURES = "tests/fixtures/inventory_cli/pass"


def _release(result, chart):
    return [r for r in result.of_type(HELM_RELEASE) if r.inputs.get("chart") == chart]


def _resources(policy) -> list[str]:
    config = json.loads(policy.inputs["spec"]["rdmaSharedDevicePlugin"]["config"])
    return [f"{e['resourcePrefix']}/{e['resourceName']}" for e in config["configList"]]


def test_onprem_installs_the_operator_then_the_policy(all_previews):
    onprem = all_previews["onprem"]
    (release,) = _release(onprem, "network-operator")
    assert release.inputs["version"] == NETWORK_OPERATOR_VERSION and release.inputs["namespace"] == "nvidia-network-operator"
    assert release.inputs["values"]["nfd"] == {"enabled": False, "deployNodeFeatureRules": True}
    (gpu_operator,) = _release(onprem, "gpu-operator")
    assert gpu_operator.urn in release.dependencies  # its NFD installs the NodeFeatureRule CRD our chart renders
    (policy,) = onprem.of_type(NCP)
    assert release.urn in policy.dependencies
    assert policy.inputs["metadata"]["name"] == "nic-cluster-policy"
    assert _resources(policy) == [RDMA_IB_RESOURCE, RDMA_ROCE_RESOURCE]
    # drivers preinstalled (DGX OS): no DOCA driver container, no driver.rdma on the GPU Operator
    assert "ofedDriver" not in policy.inputs["spec"] and "rdma" not in (gpu_operator.inputs["values"].get("driver") or {})


def test_cloud_stacks_have_no_network_operator(all_previews):
    for name in ("dev", "prod", "hybrid"):
        assert not all_previews[name].of_type(NCP) and not _release(all_previews[name], "network-operator"), name


def _preview_with(scratch_project, root, inventory: str, driver: str | None = None):
    def edit(config):
        config["hybridgpu:onprem"]["inventory"] = [str(root / inventory)]
        config["hybridgpu:onprem"].pop("gangs", None)
        config.pop("hybridgpu:burst", None)
        config.pop("hybridgpu:economics", None)
        if driver:
            config["hybridgpu:nvidia"]["driver"] = driver

    project = scratch_project(stacks=["onprem"], stack_edits={"onprem": edit})
    return run_preview("onprem", project)


def test_one_fabric_one_resource_and_gpudirect_on_operator_drivers(scratch_project, root):
    result = _preview_with(scratch_project, root, f"{FIXTURES}/fabric-dgx-infiniband.yaml", driver="operator")
    (policy,) = result.of_type(NCP)
    assert _resources(policy) == [RDMA_IB_RESOURCE]
    (gpu_operator,) = _release(result, "gpu-operator")
    assert gpu_operator.inputs["values"]["driver"]["rdma"] == {"enabled": True, "useHostMofed": True}


@pytest.mark.parametrize("inventory", ["minimal.yaml", "fabric-none-with-storage-nics.yaml"])
def test_no_fabric_no_operator(scratch_project, root, inventory):
    result = _preview_with(scratch_project, root, f"{FIXTURES}/{inventory}")
    assert not result.of_type(NCP) and not _release(result, "network-operator")
    assert not [r for r in result.records if r.type == "hybridgpu:index:NetworkOperator"]
    assert _release(result, "gpu-operator")  # the rest of the NVIDIA layer is unchanged


def _node_labels(command) -> dict[str, str]:
    docs = [d for d in yaml.safe_load_all(command.inputs["stdin"]) if d and d.get("kind") in ("InitConfiguration", "JoinConfiguration")]
    args = {a["name"]: a["value"] for a in docs[0]["nodeRegistration"]["kubeletExtraArgs"]}
    return dict(pair.split("=", 1) for pair in args["node-labels"].split(","))


def test_topology_and_fabric_labels_per_host(all_previews, root):
    onprem = all_previews["onprem"]
    inventory = load_stack("onprem", root).inventory
    seen = 0
    for record in onprem.of_type("command:remote:Command"):
        if not record.name.endswith("-kubeadm-config"):
            continue
        host = inventory.host(record.name.removesuffix("-kubeadm-config").split("-onprem-", 1)[-1])
        labels = _node_labels(record)
        assert labels.get(TOPOLOGY_RACK_LABEL) == host.rack and labels.get(TOPOLOGY_BLOCK_LABEL) == host.block, host.hostname
        assert labels.get(FABRIC_LABEL) == (host.network.fabric if host.network.fabric != "none" else None), host.hostname
        seen += 1
    assert seen == 9  # every host but the absent dgx-h100-04
    kinds = {(r.type.rsplit(":", 1)[-1], r.inputs.get("metadata", {}).get("name")) for r in onprem.records if r.type.startswith("kubernetes:kueue")}
    assert ("Topology", "onprem") in kinds and ("ResourceFlavor", "onprem-h100-80gb") in kinds
