"""Validation matches what rendering needs (issue 17, section 5).

* The rules the renderers and the program rely on: one address family (IPv4) for everything
  Kubernetes sees, kubelet-settable labels, taints unique per key and effect, a GPU taint that does
  not evict the GPU Operator; each issue names the file, host and field.
* The operator's GPU taint is rendered as written (it used to be rewritten to ``true:NoSchedule``).
* The NVIDIA container toolkit version is pinned from the inventory into the bootstrap script.
* Property (hypothesis): whatever a careless or clever operator writes for labels, taints,
  addresses, roles and states, if validation passes then rendering the whole plan
  (:func:`hybridgpu.onprem.deployment_issues`, which runs :func:`plan_onprem`) raises nothing
  and reports no ``render`` issue: nothing can pass validation and then fail in ``preview``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.inventory import InventoryError, inventory_from_documents, load_inventory
from hybridgpu.inventory.models import NVIDIA_CONTAINER_TOOLKIT_VERSION
from hybridgpu.onprem import deployment_issues, plan_onprem
from tests.helpers import ROOT, examples

SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"
SAMPLE_DOCS = list(yaml.safe_load_all(SAMPLE.read_text()))
FILE = "site.yaml"


def _docs() -> tuple[dict[str, Any], dict[str, Any]]:
    site, hosts = copy.deepcopy(SAMPLE_DOCS)
    return site, hosts


def _host(hosts: dict[str, Any], name: str) -> dict[str, Any]:
    return next(h for h in hosts["hosts"] if h["hostname"] == name)


def _issues(site: dict[str, Any], hosts: dict[str, Any]) -> list:
    with pytest.raises(InventoryError) as info:
        inventory_from_documents([(FILE, [site, hosts])])
    return info.value.issues


def _one(issues: list, code: str):
    found = [i for i in issues if i.code == code]
    assert len(found) == 1, [str(i) for i in issues]
    return found[0]


# --------------------------------------------------------------------------- address family


def test_ipv6_pod_subnet_is_refused():
    site, hosts = _docs()
    site["cluster"]["podSubnet"] = "fd00:10:244::/56"
    issue = _one(_issues(site, hosts), "ip-family")
    assert (issue.file, issue.host, issue.field) == (FILE, None, "cluster.podSubnet")
    assert "IPv6" in issue.message and "Cilium" in issue.message


def test_ipv6_control_plane_address_in_ipv4_cluster_is_refused():
    site, hosts = _docs()
    site["networks"].append({"name": "mgmt6", "cidr": "fd00:20::/64", "purpose": "management"})
    _host(hosts, "cp-02")["addresses"]["management"] = "fd00:20::12"
    issue = _one(_issues(site, hosts), "ip-family")
    assert (issue.host, issue.field) == ("cp-02", "addresses.management")
    assert "must match" not in issue.fix and "kube-apiserver refuses to start" in issue.message


def test_ipv6_data_address_is_fine():
    site, hosts = _docs()
    site["networks"].append({"name": "data6", "cidr": "fd00:21::/64", "purpose": "data"})
    _host(hosts, "dgx-h100-01")["addresses"]["data"] = "fd00:21::1"
    plan, issues = deployment_issues(inventory_from_documents([(FILE, [site, hosts])]))
    assert issues == [] and plan is not None


# --------------------------------------------------------------------------- labels and taints


@pytest.mark.parametrize(
    "label",
    ["node-role.kubernetes.io/worker", "node-role.kubernetes.io/gpu", "kubernetes.io/role", "node-restriction.kubernetes.io/pool", "k8s.io/team"],
)
def test_labels_the_kubelet_may_not_set_are_refused(label):
    site, hosts = _docs()
    _host(hosts, "a100-01")["labels"] = {label: ""}
    issue = _one(_issues(site, hosts), "kubelet-label")
    assert (issue.file, issue.host, issue.field) == (FILE, "a100-01", f'labels["{label}"]')


@pytest.mark.parametrize(
    "label", ["topology.kubernetes.io/zone", "node.kubernetes.io/exclude-from-external-load-balancers", "kubelet.kubernetes.io/x", "example.com/team"]
)
def test_labels_the_kubelet_may_set_render(label):
    site, hosts = _docs()
    _host(hosts, "a100-01")["labels"] = {label: "x"}
    plan = plan_onprem(inventory_from_documents([(FILE, [site, hosts])]))
    step = next(s for s in plan.steps if s.hostname == "a100-01")
    assert f"{label}=x" in step.kubeadm_config


def test_gpu_taint_is_rendered_as_written():
    """The operator wrote present:NoSchedule; it used to become true:NoSchedule."""
    site, hosts = _docs()
    _host(hosts, "dgx-h100-01")["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    plan = plan_onprem(inventory_from_documents([(FILE, [site, hosts])]))
    step = next(s for s in plan.steps if s.hostname == "dgx-h100-01")
    (join,) = [d for d in yaml.safe_load_all(step.kubeadm_config) if d["kind"] == "JoinConfiguration"]
    assert join["nodeRegistration"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def test_gpu_worker_without_a_gpu_taint_gets_the_default():
    site, hosts = _docs()
    _host(hosts, "dgx-h100-01")["taints"] = [{"key": "example.com/reserved", "effect": "NoSchedule"}]
    plan = plan_onprem(inventory_from_documents([(FILE, [site, hosts])]))
    step = next(s for s in plan.steps if s.hostname == "dgx-h100-01")
    (join,) = [d for d in yaml.safe_load_all(step.kubeadm_config) if d["kind"] == "JoinConfiguration"]
    assert join["nodeRegistration"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "example.com/reserved", "effect": "NoSchedule"},
    ]


def test_gpu_taint_noexecute_is_refused_with_the_reason():
    site, hosts = _docs()
    _host(hosts, "dgx-h100-01")["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoExecute"}]
    issue = _one(_issues(site, hosts), "gpu-taint")
    assert (issue.host, issue.field) == ("dgx-h100-01", "taints[0].effect")
    assert "GPU Operator" in issue.message and "NoSchedule" in issue.fix


def test_duplicate_taint_is_refused():
    site, hosts = _docs()
    _host(hosts, "cpu-01")["taints"] = [{"key": "a", "value": "1", "effect": "NoSchedule"}, {"key": "a", "value": "2", "effect": "NoSchedule"}]
    issue = _one(_issues(site, hosts), "duplicate-taint")
    assert (issue.host, issue.field) == ("cpu-01", "taints[1]")


def test_control_plane_with_gpus_is_refused_before_rendering():
    """Found by the property below: validation accepted it, NodeSpec refused it in preview."""
    site, hosts = _docs()
    _host(hosts, "cp-01")["gpu"] = {"model": "L4", "count": 1}
    issue = _one(_issues(site, hosts), "gpu-role")
    assert (issue.host, issue.field) == ("cp-01", "gpu")


# --------------------------------------------------------------------------- toolkit pin


def test_toolkit_version_is_pinned_from_the_inventory():
    site, hosts = _docs()
    default = plan_onprem(inventory_from_documents([(FILE, [site, hosts])]))
    gpu = next(s for s in default.steps if s.role == "gpu-worker")
    assert f"readonly NVIDIA_TOOLKIT_VERSION={NVIDIA_CONTAINER_TOOLKIT_VERSION}" in gpu.bootstrap
    assert '"nvidia-container-toolkit=${NVIDIA_TOOLKIT_VERSION}"' in gpu.bootstrap
    assert all("NVIDIA_TOOLKIT_VERSION" not in s.bootstrap for s in default.steps if s.role != "gpu-worker")
    site["cluster"]["nvidiaContainerToolkitVersion"] = "1.17.8-1"
    pinned = plan_onprem(inventory_from_documents([(FILE, [site, hosts])]))
    assert "readonly NVIDIA_TOOLKIT_VERSION=1.17.8-1" in next(s for s in pinned.steps if s.role == "gpu-worker").bootstrap


@pytest.mark.parametrize("version", ["latest", "v1.18.2", "1.18.2; rm -rf /", "", 1.18, "*"])
def test_malformed_or_floating_toolkit_versions_are_refused(version):
    """A floating version (`latest`, `*`), a tag instead of a package version, shell text, or a
    YAML float (unquoted 1.18) is refused on the field; a pin must be a Debian package version."""
    site, hosts = _docs()
    site["cluster"]["nvidiaContainerToolkitVersion"] = version
    assert any(i.field == "cluster.nvidiaContainerToolkitVersion" for i in _issues(site, hosts))


# --------------------------------------------------------------------------- property


LABEL_KEYS = st.sampled_from(
    [
        "hybridgpu.io/pool",
        "example.com/team",
        "node-role.kubernetes.io/worker",
        "kubernetes.io/hostname",
        "kubernetes.io/role",
        "topology.kubernetes.io/zone",
        "node.kubernetes.io/instance-type",
        "node-restriction.kubernetes.io/x",
        "k8s.io/x",
        "sub.kubernetes.io/x",
        "kubelet.kubernetes.io/x",
        "nvidia.com/gpu.present",
        "nvidia.com/mig.config",
        "hybridgpu.io/role",
    ]
)
TAINTS = st.fixed_dictionaries(
    {"key": st.sampled_from(["nvidia.com/gpu", "dedicated", "node-role.kubernetes.io/control-plane", "example.com/x"])},
    optional={"value": st.sampled_from(["true", "present", "", "infra"]), "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])},
)
ADDRESSES = st.sampled_from(["10.20.0.99", "10.20.3.250", "fd00:20::9", "10.244.0.5", "10.96.0.10", "10.20.0.0", "10.20.3.255"])


@st.composite
def mutated(draw) -> list[dict[str, Any]]:
    site, hosts = _docs()
    if draw(st.booleans()):
        site["networks"].append({"name": "mgmt6", "cidr": "fd00:20::/64", "purpose": "management"})
    site["cluster"]["podSubnet"] = draw(st.sampled_from(["10.244.0.0/16", "fd00:10:244::/56", "10.20.0.0/24"]))
    site["cluster"]["controlPlaneEndpoint"] = draw(
        st.sampled_from(["k8s-api.site-a.example.internal:6443", "10.20.0.10:6443", "[fd00:20::10]:6443", "10.20.0.11:6443"])
    )
    for entry in hosts["hosts"]:
        if draw(st.booleans()):
            entry["labels"] = draw(st.dictionaries(LABEL_KEYS, st.sampled_from(["", "x", "true"]), max_size=3))
        if draw(st.booleans()):
            entry["taints"] = draw(st.lists(TAINTS, max_size=3))
        if draw(st.integers(0, 5)) == 0:
            entry["addresses"] = {"management": draw(ADDRESSES)}
        if draw(st.integers(0, 5)) == 0:
            entry["state"] = draw(st.sampled_from(["active", "cordoned", "absent"]))
        if draw(st.integers(0, 8)) == 0:
            entry["role"] = draw(st.sampled_from(["control-plane", "gpu-worker", "cpu-worker"]))
        if draw(st.integers(0, 8)) == 0:
            entry["gpu"] = {"model": draw(st.sampled_from(["L4", "A100-80GB"])), "count": 1}
    if draw(st.booleans()):  # keep the control-plane count odd whatever the roles became
        planes = [h for h in hosts["hosts"] if h["role"] == "control-plane"]
        if len(planes) % 2 == 0 and planes:
            planes[-1]["role"] = "cpu-worker"
            planes[-1].pop("gpu", None)
    return [site, hosts]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_whatever_validates_also_renders(docs):
    try:
        inventory = inventory_from_documents([(FILE, docs)])
    except InventoryError as exc:
        assert all(issue.fix for issue in exc.issues)
        return
    plan, issues = deployment_issues(inventory)
    assert [i for i in issues if i.code == "render"] == [], [str(i) for i in issues]
    assert plan is not None and len(plan.steps) == sum(h.state != "absent" for h in inventory.hosts)


def test_sample_loads_unchanged():
    assert deployment_issues(load_inventory(SAMPLE))[1] == []
