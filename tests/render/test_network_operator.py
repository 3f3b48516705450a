"""The NVIDIA Network Operator and its NicClusterPolicy, rendered from inventories (hybridgpu.render.network_operator).

Behaviour checked against the upstream consumers (Mellanox/network-operator v26.4.1, 85afd6d9, read 2026-11-24):

* the NicClusterPolicy validates against the CRD of the pinned release (copy in tools/schemas/crds/, made
  strict by hybridgpu.schemas.crd_json_schema: an unknown field is an error, as with server-side field
  validation; the same check runs in hybridgpu.schemas.validate_all), and its name is the only one
  the operator reconciles (``controllers/nicclusterpolicy_controller.go``: ``req.Name != NicClusterPolicyResourceName``);
* the device plugin config is valid for the operator's webhook schema (``webhook-schemas/rdma_shared_device_plugin.json``)
  and resource-name pattern (``api/v1alpha1/validator/nicpolicy_webhook.go``), and selects exactly the fabric NICs;
* the operands tolerate the GPU taint (``GetTolerations`` adds none) and run only where there are fabric NICs;
* nothing is rendered without a fabric; GPUDirect RDMA values only where the GPU Operator manages the driver.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from hybridgpu.inventory import load_inventory
from hybridgpu.k8s import FABRIC_LABEL, GPU_TAINT, MOFED_WAIT_LABEL, PCI_MELLANOX_LABEL, RDMA_IB_RESOURCE, RDMA_ROCE_RESOURCE
from hybridgpu.render.charts import CHARTS, chart_placements
from hybridgpu.render.network_operator import (
    NIC_CLUSTER_POLICY,
    RDMA_SHARED_DEVICES,
    gpu_operator_rdma_values,
    network_operator_values,
    nic_cluster_policy,
    nic_policy_placements,
    rdma_device_plugin_config,
    rdma_devices,
    rdma_plan,
)
from hybridgpu.render.scheduling import NodeGroup, placement_problems
from hybridgpu.schemas import CRD_FILES, crd_json_schema, validate_all
from tests.helpers import ROOT

CRDS = ROOT / "tests" / "fixtures" / "crds"
FIXTURES = ROOT / "tests" / "fixtures" / "inventory_cli" / "pass"
SITE_A = load_inventory([ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"])


NCP_SCHEMA = crd_json_schema(yaml.safe_load((ROOT / "tools" / "schemas" / "crds" / CRD_FILES[("mellanox.com", "NicClusterPolicy")]).read_text()))
DP_SCHEMA = json.loads((CRDS / "network-operator-v26.4.1-rdma_shared_device_plugin.schema.json").read_text())
#: api/v1alpha1/validator/nicpolicy_webhook.go rdmaResourceNameRegex (v26.4.1).
RDMA_RESOURCE_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _errors(doc: dict[str, Any]) -> list[str]:
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in jsonschema.Draft7Validator(NCP_SCHEMA).iter_errors(doc)]


def _policy(path: Path) -> dict[str, Any]:
    plan = rdma_plan(load_inventory([path]))
    assert plan is not None
    return nic_cluster_policy(plan)


POLICY_FIXTURES = ["fabric-dgx-infiniband", "fabric-roce-lossless", "fabric-two-pools", "fabric-ofed-operator", "fabric-cpu-worker-on-ib"]


@pytest.mark.parametrize("fixture", POLICY_FIXTURES)
def test_policy_validates_against_the_pinned_crd(fixture):
    doc = _policy(FIXTURES / f"{fixture}.yaml")
    assert _errors(doc) == []
    assert [(f.ok, f.skipped) for f in validate_all([doc])] == [(True, False)]
    assert doc["metadata"]["name"] == NIC_CLUSTER_POLICY == "nic-cluster-policy"
    config = json.loads(doc["spec"]["rdmaSharedDevicePlugin"]["config"])
    jsonschema.validate(config, DP_SCHEMA)
    assert all(RDMA_RESOURCE_NAME.match(e["resourceName"]) for e in config["configList"])


def test_the_strict_crd_schema_catches_what_the_api_server_refuses():
    """The validator is not vacuous: typos, wrong types and a missing required image all fail."""
    good = nic_cluster_policy(rdma_plan(SITE_A))
    for mutate, where in (
        (lambda d: d["spec"].__setitem__("rdmaSharedDevicePlugins", {}), "spec"),
        (lambda d: d["spec"]["rdmaSharedDevicePlugin"].pop("image"), "spec.rdmaSharedDevicePlugin"),
        (lambda d: d["spec"]["tolerations"][0].__setitem__("tolerationSeconds", "300"), "spec.tolerations.0.tolerationSeconds"),
        (lambda d: d["spec"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"].pop("nodeSelectorTerms"), "spec.nodeAffinity"),
    ):
        bad = copy.deepcopy(good)
        mutate(bad)
        errors = _errors(bad)
        assert errors and any(e.startswith(where) for e in errors), errors


def test_site_a_has_one_resource_per_fabric_selecting_its_ports():
    plan = rdma_plan(SITE_A)
    assert [f.fabric for f in plan.fabrics] == ["infiniband", "roce"]
    ib, roce = plan.fabrics
    assert ib.resource == RDMA_IB_RESOURCE and roce.resource == RDMA_ROCE_RESOURCE
    assert ib.hosts == ("dgx-h100-01", "dgx-h100-02", "dgx-h100-03")  # dgx-h100-04 is absent
    assert ib.if_names == ("ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0", "ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0")
    assert ib.rdma_devices == ("mlx5_0", "mlx5_10", "mlx5_11", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9")
    config = rdma_device_plugin_config(plan)
    by_name = {e["resourceName"]: e for e in config["configList"]}
    assert set(by_name) == {"rdma_shared_device_ib", "rdma_shared_device_roce"}
    # Selectors are ANDed by the plugin: the IB resource never takes an Ethernet port of the same name.
    assert by_name["rdma_shared_device_ib"]["selectors"] == {"ifNames": list(ib.if_names), "linkTypes": ["infiniband"]}
    assert by_name["rdma_shared_device_roce"]["selectors"] == {"ifNames": ["enp65s0f0np0", "enp65s0f1np1"], "linkTypes": ["ether"]}
    assert all(e["resourcePrefix"] + "/" + e["resourceName"] in (RDMA_IB_RESOURCE, RDMA_ROCE_RESOURCE) for e in config["configList"])


def test_storage_ports_are_not_offered_to_jobs():
    plan = rdma_plan(load_inventory([FIXTURES / "fabric-ib-with-storage-port.yaml"]))
    assert plan.fabrics[0].if_names == ("ibp24s0",)


def test_no_fabric_no_plan():
    assert rdma_plan(load_inventory([FIXTURES / "minimal.yaml"])) is None
    assert rdma_plan(load_inventory([FIXTURES / "fabric-none-with-storage-nics.yaml"])) is None
    assert gpu_operator_rdma_values(None, driver="operator") == {}


def test_ofed_container_only_when_the_inventory_says_operator():
    assert "ofedDriver" not in nic_cluster_policy(rdma_plan(SITE_A))
    doc = _policy(FIXTURES / "fabric-ofed-operator.yaml")
    ofed = doc["spec"]["ofedDriver"]
    assert (ofed["repository"], ofed["image"], ofed["version"]) == ("nvcr.io/nvidia/mellanox", "doca-driver", "doca3.4.1-26.04-1.1.0.0-1")


def test_gpudirect_rdma_values_follow_the_driver_and_ofed_source():
    host_mofed = rdma_plan(SITE_A)
    assert gpu_operator_rdma_values(host_mofed, driver="operator") == {"driver": {"rdma": {"enabled": True, "useHostMofed": True}}}
    assert gpu_operator_rdma_values(host_mofed, driver="preinstalled") == {}
    container = rdma_plan(load_inventory([FIXTURES / "fabric-ofed-operator.yaml"]))
    assert gpu_operator_rdma_values(container, driver="operator") == {"driver": {"rdma": {"enabled": True, "useHostMofed": False}}}
    gpu_operator = CHARTS["gpu-operator"]
    assert gpu_operator.source.version == "v26.7.0"  # driver.rdma.{enabled,useHostMofed} read in that values.yaml


def _host_group(hostname: str, *, tainted: bool = True) -> NodeGroup:
    """A node of site A as the scheduler sees it once NFD and the operator labelled it."""
    host = SITE_A.host(hostname)
    labels = {FABRIC_LABEL: (host.network.fabric,)} if host.network.fabric != "none" else {}
    if rdma_devices(host):
        labels |= {PCI_MELLANOX_LABEL: ("true",), MOFED_WAIT_LABEL: ("false",)}
    taints = ({"key": GPU_TAINT.key, "value": "true", "effect": "NoSchedule"},) if tainted else ()
    return NodeGroup(name=hostname, labels=labels, taints=taints, gpu=host.role == "gpu-worker", devices=rdma_devices(host))


def test_operands_run_on_the_tainted_fabric_hosts_and_nowhere_else():
    (dp,) = nic_policy_placements(nic_cluster_policy(rdma_plan(SITE_A)))
    assert dp.device == RDMA_SHARED_DEVICES and dp.kind == "DaemonSet"
    for host in ("dgx-h100-01", "a100-01"):
        assert placement_problems(dp, _host_group(host)) == [], host
    assert placement_problems(dp, _host_group("cpu-01", tainted=False))  # no fabric label, no Mellanox label


def test_without_the_gpu_toleration_the_device_plugin_never_reaches_a_gpu_host():
    """The operator injects exactly spec.tolerations: drop ours and the plugin is refused by the GPU taint."""
    doc = nic_cluster_policy(rdma_plan(SITE_A))
    doc["spec"].pop("tolerations")
    (dp,) = nic_policy_placements(doc)
    assert any("nvidia.com/gpu" in p for p in placement_problems(dp, _host_group("dgx-h100-01")))


def test_operator_and_hooks_stay_on_system_nodes():
    for nfd_ours in (True, False):
        placements = chart_placements("network-operator", network_operator_values(nfd_from_gpu_operator=nfd_ours), "network-operator")
        controllers = [p for p in placements if p.kind in ("Deployment", "Job")]
        assert {p.name.split("/")[1].split(" ")[0] for p in controllers} >= {"network-operator", "network-operator-upgrade-crd", "network-operator-keep-ncp"}
        for p in controllers:
            assert not any(t.get("key") == GPU_TAINT.key for t in p.tolerations), p.name
            assert any(t.get("key") == "CriticalAddonsOnly" for t in p.tolerations), p.name
        assert any("nfd-worker" in p.name for p in placements) is (not nfd_ours)


def test_chart_defaults_alone_leave_the_operator_off_critical_addons_nodes():
    """Why we set operator.tolerations: the chart's defaults tolerate only the master/control-plane taints."""
    (operator, *_) = chart_placements("network-operator", {}, "network-operator")
    system = NodeGroup(name="system", labels={}, taints=({"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"},))
    assert placement_problems(operator, system)
