"""The on-prem Kueue Topology, its flavors and the node labels it reads (hybridgpu.render.topology, burst plan, kubeadm).

* the Topology validates against the Kueue v0.19.2 CRD (copy in tests/fixtures/crds/, strict) and its CEL
  rules (encoded in TopologySpec: levels unique, hostname last), and the burst schema accepts it;
* its levels are exactly the label keys the kubelet of each GPU worker registers with (kubeadm
  ``--node-labels``), and those keys are ones the NodeRestriction plugin lets a kubelet set;
* every on-prem ResourceFlavor names it and carries the nodeLabels the CRD requires with a topology;
* hosts without a level label are no domain (Kueue ``NodeMatchesFlavor``).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridgpu.burst.kueue import cluster_manifests
from hybridgpu.burst.schema import kueue_errors
from hybridgpu.catalog import load_catalog
from hybridgpu.burst.plan import onprem_capacity
from hybridgpu.inventory import load_inventory
from hybridgpu.k8s import HOSTNAME_LABEL, TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL, is_kubelet_settable_label
from hybridgpu.onprem import plan_onprem
from hybridgpu.render.topology import (
    ONPREM_TOPOLOGY,
    onprem_topology_levels,
    topology_domains,
    topology_errors,
    topology_manifest,
)
from hybridgpu.stack.load import load_stack
from tests.helpers import ROOT

CRD = yaml.safe_load((ROOT / "tests" / "fixtures" / "crds" / "kueue.x-k8s.io_topologies-v0.19.2.yaml").read_text())
SCHEMA = next(v for v in CRD["spec"]["versions"] if v["name"] == "v1beta2")["schema"]["openAPIV3Schema"]
SITE_A = load_inventory([ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"])
PASS = ROOT / "tests" / "fixtures" / "inventory_cli" / "pass"


def _crd_errors(doc: dict[str, Any]) -> list[str]:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["metadata"] = {"type": "object"}
    schema["additionalProperties"] = False
    schema["properties"]["spec"]["additionalProperties"] = False
    schema["properties"]["spec"]["properties"]["levels"]["items"]["additionalProperties"] = False
    return [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]


def test_site_a_topology_is_block_rack_host_and_valid():
    levels = onprem_topology_levels(SITE_A.hosts)
    assert levels == (TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL)
    doc = topology_manifest(ONPREM_TOPOLOGY, levels)
    assert [lv["nodeLabel"] for lv in doc["spec"]["levels"]] == [TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL, HOSTNAME_LABEL]
    assert _crd_errors(doc) == [] and topology_errors(doc) == [] and kueue_errors(doc) == []


@pytest.mark.parametrize(
    "levels, why",
    [
        ([TOPOLOGY_RACK_LABEL, TOPOLOGY_RACK_LABEL], "must be unique"),
        ([HOSTNAME_LABEL, TOPOLOGY_RACK_LABEL], "must be unique"),  # hostname is appended again
        (["rack name"], "string should match pattern"),
        (["example.com/rack-"], "string should match pattern"),
        ([f"example.com/level-{i}" for i in range(16)], "at most 16"),
    ],
)
def test_topologies_the_crd_refuses_are_refused(levels, why):
    with pytest.raises(ValueError) as exc:
        topology_manifest("bad", levels)
    assert why in str(exc.value).lower()


def test_hostname_only_as_the_lowest_level():
    doc = topology_manifest("ok", [TOPOLOGY_RACK_LABEL])
    doc["spec"]["levels"] = [{"nodeLabel": HOSTNAME_LABEL}, {"nodeLabel": TOPOLOGY_RACK_LABEL}]
    assert any("only be used at the lowest level" in e for e in topology_errors(doc))
    assert any("only be used at the lowest level" in e for e in kueue_errors(doc))


def test_the_crd_schema_agrees_with_our_model_on_the_schema_rules():
    """The OpenAPI part of the CRD (pattern, lengths, item counts) refuses what TopologySpec refuses; CEL is ours alone."""
    doc = topology_manifest("ok", [TOPOLOGY_RACK_LABEL])
    for mutate in (
        lambda d: d["spec"].__setitem__("levels", []),
        lambda d: d["spec"]["levels"][0].__setitem__("nodeLabel", "rack name"),
        lambda d: d["spec"]["levels"][0].__setitem__("label", "x"),
        lambda d: d["spec"].__setitem__("levels", [{"nodeLabel": f"example.com/l{i}"} for i in range(17)]),
    ):
        bad = copy.deepcopy(doc)
        mutate(bad)
        assert _crd_errors(bad) and topology_errors(bad), bad


def test_topology_levels_are_the_labels_each_gpu_worker_registers_with():
    plan = plan_onprem(SITE_A, nvidia_toolkit=True)
    levels = onprem_topology_levels(SITE_A.hosts)
    for step in plan.steps:
        host = SITE_A.host(step.hostname)
        config = yaml.safe_load_all(step.kubeadm_config)
        join = next(d for d in config if d and d.get("kind") in ("JoinConfiguration", "InitConfiguration"))
        args = {a["name"]: a["value"] for a in join["nodeRegistration"]["kubeletExtraArgs"]}
        labels = dict(pair.split("=", 1) for pair in args["node-labels"].split(","))
        assert all(is_kubelet_settable_label(k) for k in labels), labels
        if host.role == "gpu-worker":
            assert {k: labels[k] for k in levels} == {TOPOLOGY_BLOCK_LABEL: host.block, TOPOLOGY_RACK_LABEL: host.rack}


def test_onprem_flavors_name_the_topology_and_the_manifests_validate():
    stack = load_stack("onprem", ROOT)
    cluster = stack.burst_plan.clusters["onprem"]
    assert cluster.topologies == {ONPREM_TOPOLOGY: (TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL)}
    docs = cluster_manifests(cluster, stack.burst_plan.source)
    kinds = [d["kind"] for d in docs]
    assert kinds.index("Topology") < kinds.index("ResourceFlavor")
    flavors = [d for d in docs if d["kind"] == "ResourceFlavor"]
    assert flavors and all(f["spec"]["topologyName"] == ONPREM_TOPOLOGY and f["spec"]["nodeLabels"] for f in flavors)
    assert [e for d in docs if d["apiVersion"].startswith("kueue") for e in kueue_errors(d)] == []


def test_no_rack_no_topology():
    inventory = load_inventory([PASS / "minimal.yaml"])
    assert onprem_topology_levels(inventory.hosts) == ()
    capacity = onprem_capacity(inventory, load_catalog())
    assert capacity.topology_levels == () and all(f.topology_name is None for f in capacity.flavors.values())


def test_a_flavor_with_topology_but_no_node_labels_is_refused():
    """Kueue's CEL on ResourceFlavor: a topologyName needs at least one nodeLabel."""
    errors = kueue_errors({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {"topologyName": "onprem"}})
    assert any("nodeLabel is required" in e for e in errors)


def test_domains_count_active_gpu_workers_with_the_label():
    assert topology_domains(SITE_A.hosts, TOPOLOGY_RACK_LABEL) == {"r12": 16, "r13": 8, "r20": 8}  # dgx-h100-04 absent, a100-02 cordoned
    assert topology_domains(SITE_A.hosts, TOPOLOGY_BLOCK_LABEL, "H100-80GB") == {"b1": 24}
    assert topology_domains(SITE_A.hosts, HOSTNAME_LABEL, "H100-80GB") == {"dgx-h100-01": 8, "dgx-h100-02": 8, "dgx-h100-03": 8}
    absent = load_inventory([PASS / "topology-absent-host-without-rack.yaml"])
    assert topology_domains(absent.hosts, TOPOLOGY_RACK_LABEL) == {"r1": 8}


def test_kubespray_export_registers_the_same_labels_as_kubeadm():
    """`inventory export --format kubespray` writes the node labels hybridgpu's kubeadm plan registers, topology and fabric included."""
    from hybridgpu.render.kubespray import kubespray_files

    files = kubespray_files(SITE_A)
    host_vars = yaml.safe_load(next(text for name, text in files.items() if name.endswith("host_vars/dgx-h100-01.yml")))
    labels = host_vars["node_labels"]
    assert labels[TOPOLOGY_BLOCK_LABEL] == "b1" and labels[TOPOLOGY_RACK_LABEL] == "r12" and labels["hybridgpu.io/fabric"] == "infiniband"


_LABEL_VALUE = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?"


@settings(max_examples=60, deadline=None)
@given(racks=st.lists(st.from_regex(_LABEL_VALUE, fullmatch=True), min_size=1, max_size=6), with_blocks=st.booleans())
def test_property_levels_are_exactly_the_labels_gpu_workers_carry(racks, with_blocks):
    """For any racks (label values) with or without blocks: the inventory accepts them, the Topology validates,
    every level is a label every GPU worker carries, each label is kubelet-settable, and the rack domains hold every GPU."""
    from hybridgpu.inventory.fabric import topology_issues
    from hybridgpu.inventory.models import HostRecord
    from hybridgpu.render.topology import host_node_labels

    base = SITE_A.host("dgx-h100-01")
    records = tuple(
        # one block per rack length: a rack name always sits in the same block
        HostRecord(base.model_copy(update={"hostname": f"gpu-{i}", "rack": rack, "block": f"b{len(rack)}" if with_blocks else None}), "inv.yaml", i)
        for i, rack in enumerate(racks)
    )
    hosts = [r.host for r in records]
    assert topology_issues(records) == []
    levels = onprem_topology_levels(hosts)
    doc = topology_manifest(ONPREM_TOPOLOGY, levels)
    assert _crd_errors(doc) == [] and kueue_errors(doc) == []
    for host in hosts:
        labels = host_node_labels(host)
        assert all(level in labels for level in levels)
        assert all(is_kubelet_settable_label(k) for k in labels)
    rack_domains = topology_domains(hosts, TOPOLOGY_RACK_LABEL)
    assert sum(rack_domains.values()) == 8 * len(hosts)
