"""A value the kubeadm renderers refuse is an issue on the inventory file, host and field (issue 24, section 3).

The inventory rules are meant to refuse everything the renderers refuse (``test_render_rules.py``
proves it for what an operator can write), so these cases step past validation: each takes the
validated sample inventory and swaps one value in with ``model_copy``, as a rule that missed it
would let through. The renderers name the spec field they refuse
(:class:`hybridgpu.render.kubeadm_specs.SpecError`) and :func:`hybridgpu.onprem.plan_onprem` puts
it where the inventory wrote the value. These are the cases the message regex of
``deployment_issues`` (``^node '<host>'``) used to turn back into issues, with the host only.
Kubelet and kubeadm rules cited in hybridgpu/render/kubeadm_specs.py and kubeadm.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from hybridgpu.inventory import InventoryError, load_inventory
from hybridgpu.inventory.models import Inventory, NodeTaint
from hybridgpu.onprem import deployment_issues, plan_onprem
from hybridgpu.render.kubeadm_specs import ClusterSpec, NodeSpec, SpecError
from tests.helpers import ROOT

SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"
FILE = str(SAMPLE)  # the inventory names its files as they were given


def _sample() -> Inventory:
    return load_inventory([SAMPLE])


def _with_host(inventory: Inventory, hostname: str, **update: Any) -> Inventory:
    """The inventory with ``update`` applied to one host, unvalidated (as a missed rule would leave it)."""
    records = tuple(dataclasses.replace(r, host=r.host.model_copy(update=update)) if r.host.hostname == hostname else r for r in inventory.records)
    return dataclasses.replace(inventory, records=records)


def _with_cluster(inventory: Inventory, **update: Any) -> Inventory:
    site = inventory.site.model_copy(update={"cluster": inventory.site.cluster.model_copy(update=update)})
    return dataclasses.replace(inventory, site=site)


def _render_issue(inventory: Inventory):
    plan, issues = deployment_issues(inventory)
    assert plan is None
    (issue,) = [i for i in issues if i.code == "render"]
    with pytest.raises(InventoryError) as info:
        plan_onprem(inventory)
    assert info.value.issues == [issue]
    return issue


def test_the_sample_renders_without_issues():
    plan, issues = deployment_issues(_sample())
    assert issues == [] and plan is not None


def test_a_label_the_kubelet_may_not_set_is_on_the_host_and_label():
    inventory = _sample()
    a100 = inventory.host("a100-01")
    issue = _render_issue(_with_host(inventory, "a100-01", labels={**a100.labels, "node-role.kubernetes.io/worker": ""}))
    assert (issue.file, issue.host, issue.field) == (FILE, "a100-01", 'labels["node-role.kubernetes.io/worker"]')
    assert "cannot be self-set by the kubelet" in issue.message and "validation should have caught it" in issue.fix


def test_a_bad_taint_effect_is_on_the_host_and_taint():
    inventory = _sample()
    host = inventory.host("dgx-h100-01")
    bad = NodeTaint.model_construct(key="example.com/reserved", value=None, effect="NoRun")
    issue = _render_issue(_with_host(inventory, "dgx-h100-01", taints=(*host.taints, bad)))
    assert (issue.file, issue.host, issue.field) == (FILE, "dgx-h100-01", f"taints[{len(host.taints)}]")
    assert "NoRun" in issue.message


def test_an_address_inside_the_pod_subnet_is_on_the_host_and_management_address():
    inventory = _sample()
    host = inventory.host("cp-02")  # rendered on its own (workers of one shape share a template)
    addresses = host.addresses.model_copy(update={"management": "10.244.0.7"})
    issue = _render_issue(_with_host(inventory, host.hostname, addresses=addresses))
    assert (issue.file, issue.host, issue.field) == (FILE, host.hostname, "addresses.management")
    assert "pod_subnet" in issue.message


def test_a_cluster_value_is_on_the_site_file_and_cluster_key():
    issue = _render_issue(_with_cluster(_sample(), kubernetes_version="1.35"))
    assert (issue.file, issue.host, issue.field) == (FILE, None, "cluster.kubernetesVersion")
    assert "must look like 1.35.2" in issue.message


def test_the_specs_name_their_field_without_an_inventory():
    with pytest.raises(SpecError) as info:
        NodeSpec("n-1", "10.0.3.1", "cpu-worker", taints=[("k", None, "NoStart")])
    (issue,) = info.value.issues
    assert (info.value.spec, issue.host, issue.field, issue.code) == ("node", "n-1", "taints[0]", "render")
    with pytest.raises(ValueError, match="overlaps service_subnet"):  # still a ValueError for direct callers
        ClusterSpec(name="c", pod_subnet="10.96.0.0/16", service_subnet="10.96.0.0/12")
