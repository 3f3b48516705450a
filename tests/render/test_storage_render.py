"""What hybridgpu renders for shared dataset storage (hybridgpu.render.storage), checked against what the consumers do.

* Every object validates strictly against the Kubernetes 1.35 schema (kubernetes-validate).
* Binding (kubernetes/kubernetes ``pkg/controller/volume/persistentvolume/pv_controller.go``,
  ``syncUnboundClaim`` / ``findMatchingVolume``, v1.35 line, read 2026-11-24): a claim with
  ``volumeName`` binds exactly that PV when the PV's ``claimRef`` names the claim, the storage
  classes are equal, the PV's access modes include the claim's and its capacity is at least the
  request. Each training namespace gets its own PV.
* The FSx PV carries what aws-fsx-csi-driver's ``NodePublishVolume`` reads (``pkg/driver/node.go``
  1.9.0: ``dnsname`` required, ``mountname``); the NFS PV what csi-driver-nfs reads
  (``pkg/nfs/nodeserver.go`` 4.13.4: ``server``, ``share``), with a handle unique per PV.
* The Lustre security-group rules open TCP 988 and 1018-1023 among the file servers and with the nodes.
* Where the CSI pods run: the chart defaults recorded in hybridgpu.render.charts merged with our values,
  placed with kube-scheduler's rules on the node groups the toolkit creates.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.utils import parse_quantity

from hybridgpu.k8s import CRITICAL_ADDONS_TAINT, CONTROL_PLANE_TAINT, GPU_TAINT, OS_LABEL, TRAINING_DATA_CLAIM
from hybridgpu.render.charts import chart_placements
from hybridgpu.render.scheduling import NodeGroup, placement_problems
from hybridgpu.render.storage import (
    FSX_CSI_DRIVER,
    NFS_CSI_DRIVER,
    fsx_csi_values,
    fsx_security_group_rules,
    fsx_volume,
    nfs_csi_values,
    nfs_volume,
    storage_manifests,
)
from hybridgpu.render import dump_yaml_all
from hybridgpu.schemas import validate_core
from tests.helpers import GOLDEN, examples

FSX = fsx_volume("fs-0199e5a63bd90f796", "fs-0199e5a63bd90f796.fsx.us-east-1.amazonaws.com", "abcdefgh")
NFS = nfs_volume("datasets.site-a.example.internal", "/exports/datasets", ["nfsvers=4.1", "nconnect=16"])
NAMESPACES = ["ml-research", "ml-platform"]


def _taint(spec) -> dict[str, str]:
    return {"key": spec.key, **({"value": spec.value} if spec.value else {}), "effect": spec.effect}


SYSTEM = NodeGroup(name="system", labels={OS_LABEL: ("linux",)}, taints=(_taint(CRITICAL_ADDONS_TAINT),), nodes=2)
GPU = NodeGroup(name="gpu", labels={OS_LABEL: ("linux",)}, taints=(_taint(GPU_TAINT),), gpu=True)
CONTROL = NodeGroup(name="control-plane", labels={OS_LABEL: ("linux",)}, taints=(_taint(CONTROL_PLANE_TAINT),), nodes=3)


@pytest.mark.parametrize("source", [FSX, NFS], ids=["fsx", "nfs"])
def test_manifests_validate_strictly(source):
    docs = storage_manifests("site-a", source, NAMESPACES, 40800)
    findings = validate_core(docs, "1.35")
    assert [f.errors for f in findings if not f.ok] == []
    assert [d["kind"] for d in docs] == ["StorageClass", *["PersistentVolume", "PersistentVolumeClaim"] * len(NAMESPACES)]


@pytest.mark.parametrize("source", [FSX, NFS], ids=["fsx", "nfs"])
def test_each_claim_binds_its_own_volume(source):
    docs = storage_manifests("site-a", source, NAMESPACES, 2400)
    pvs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "PersistentVolume"}
    claims = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    assert sorted(c["metadata"]["namespace"] for c in claims) == sorted(NAMESPACES)
    assert len({c["spec"]["volumeName"] for c in claims}) == len(claims)  # a PV binds one claim
    for claim in claims:
        assert claim["metadata"]["name"] == TRAINING_DATA_CLAIM
        pv = pvs[claim["spec"]["volumeName"]]
        assert pv["spec"]["claimRef"] == {"namespace": claim["metadata"]["namespace"], "name": TRAINING_DATA_CLAIM}
        assert pv["spec"]["storageClassName"] == claim["spec"]["storageClassName"]
        assert set(claim["spec"]["accessModes"]) <= set(pv["spec"]["accessModes"])
        assert parse_quantity(pv["spec"]["capacity"]["storage"]) >= parse_quantity(claim["spec"]["resources"]["requests"]["storage"])
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"  # deleting a claim never deletes the dataset


def test_storage_class_provisions_nothing():
    sc = storage_manifests("x", FSX, ["a"], 1200)[0]
    assert sc["provisioner"] == "kubernetes.io/no-provisioner" and sc["reclaimPolicy"] == "Retain"


def test_fsx_volume_is_what_the_node_plugin_mounts():
    pv = storage_manifests("gpu-prod", FSX, ["ml-research"], 1200)[1]["spec"]
    assert pv["csi"]["driver"] == FSX_CSI_DRIVER == "fsx.csi.aws.com"
    assert pv["csi"]["volumeHandle"] == "fs-0199e5a63bd90f796"
    # node.go: source = "<dnsname>@tcp:/<mountname>"
    attrs = pv["csi"]["volumeAttributes"]
    assert f"{attrs['dnsname']}@tcp:/{attrs['mountname']}" == "fs-0199e5a63bd90f796.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh"
    assert pv["mountOptions"] == ["flock"]


def test_nfs_volume_is_what_the_node_plugin_mounts_with_unique_handles():
    docs = storage_manifests("site-a", NFS, NAMESPACES, 1024)
    pvs = [d["spec"] for d in docs if d["kind"] == "PersistentVolume"]
    assert all(p["csi"]["driver"] == NFS_CSI_DRIVER == "nfs.csi.k8s.io" for p in pvs)
    # nodeserver.go: source = "<server>:<share>"
    assert {f"{p['csi']['volumeAttributes']['server']}:{p['csi']['volumeAttributes']['share']}" for p in pvs} == {
        "datasets.site-a.example.internal:/exports/datasets"
    }
    assert len({p["csi"]["volumeHandle"] for p in pvs}) == len(pvs)
    assert pvs[0]["mountOptions"] == ["nfsvers=4.1", "nconnect=16"]


def test_lustre_rules_cover_both_port_ranges_both_ways():
    rules = fsx_security_group_rules()
    ranges = {(r.from_port, r.to_port) for r in rules}
    assert ranges == {(988, 988), (1018, 1023)}
    for low, high in ranges:
        found = {(r.group, r.direction, r.peer) for r in rules if (r.from_port, r.to_port) == (low, high)}
        assert found == {
            ("fsx", "ingress", "fsx"),
            ("fsx", "ingress", "nodes"),
            ("fsx", "egress", "fsx"),
            ("fsx", "egress", "nodes"),
            ("nodes", "ingress", "fsx"),
        }
    assert len({r.role for r in rules}) == len(rules)  # unique logical names


def _by_name(placements):
    return {p.name.split("/")[-1]: p for p in placements}


def test_fsx_controller_runs_on_system_nodes_and_node_plugin_on_gpu_nodes():
    pods = _by_name(chart_placements("aws-fsx-csi-driver", fsx_csi_values("us-east-1"), "aws-fsx-csi-driver"))
    assert placement_problems(pods["fsx-csi-controller"], SYSTEM) == []
    assert placement_problems(pods["fsx-csi-node"], GPU) == []
    assert placement_problems(pods["fsx-csi-node"], SYSTEM) != []  # tolerateAllTaints off: not on the system nodes
    assert fsx_csi_values("us-east-1")["controller"]["region"] == "us-east-1"  # AWS_REGION: pods cannot reach IMDS (hop limit 1)


def test_fsx_chart_defaults_tolerate_every_taint():
    # values.yaml 1.17.0: node.tolerateAllTaints: true -> `tolerations: [{operator: Exists}]` in node-daemonset.yaml.
    pods = _by_name(chart_placements("aws-fsx-csi-driver", {}, "aws-fsx-csi-driver"))
    assert pods["fsx-csi-node"].tolerations == ({"operator": "Exists"},)
    assert placement_problems(pods["fsx-csi-node"], SYSTEM) == []


def test_nfs_controller_fits_a_control_plane_and_node_plugin_the_gpu_workers():
    pods = _by_name(chart_placements("csi-driver-nfs", nfs_csi_values(), "csi-driver-nfs"))
    assert placement_problems(pods["csi-nfs-controller"], CONTROL) == []
    assert placement_problems(pods["csi-nfs-node"], GPU) == []
    assert nfs_csi_values()["controller"]["enableSnapshotter"] is False  # no snapshot CRDs are installed


def test_a_foreign_gpu_taint_refuses_both_node_plugins():
    tainted = NodeGroup(name="gpu", labels={OS_LABEL: ("linux",)}, taints=(_taint(GPU_TAINT), {"key": "dedicated", "value": "training", "effect": "NoSchedule"}), gpu=True)
    for chart, values in (("aws-fsx-csi-driver", fsx_csi_values("us-east-1")), ("csi-driver-nfs", nfs_csi_values())):
        node = [p for p in chart_placements(chart, values, chart) if p.kind == "DaemonSet"][0]
        assert any("dedicated" in problem for problem in placement_problems(node, tainted)), chart


@pytest.mark.parametrize(("source", "name"), [(FSX, "fsx"), (NFS, "nfs")])
def test_rendered_objects_match_golden(assert_golden, source, name):
    values = fsx_csi_values("us-east-1") if source is FSX else nfs_csi_values()
    text = dump_yaml_all([{"helmValues": values}, *storage_manifests("site-a", source, NAMESPACES, 2400)])
    assert_golden(text, GOLDEN / "storage" / f"{name}.yaml", f"{name} storage objects")


_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"


@settings(max_examples=examples(100), deadline=None)
@given(
    prefix=st.from_regex(r"\A[a-z][a-z0-9-]{0,36}[a-z0-9]\Z"),
    namespaces=st.lists(st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z"), min_size=1, max_size=6, unique=True),
)
def test_pv_names_are_unique_valid_object_names(prefix, namespaces):
    # A PersistentVolume name is a DNS-1123 subdomain of at most 253 characters (Kubernetes "Object Names and IDs").
    docs = storage_manifests(prefix, NFS, namespaces, 100)
    names = [d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolume"]
    assert len(set(names)) == len(namespaces)
    assert all(len(n) <= 253 and re.fullmatch(_DNS_SUBDOMAIN, n) for n in names)
    assert len({d["spec"]["csi"]["volumeHandle"] for d in docs if d["kind"] == "PersistentVolume"}) == len(namespaces)
