"""``gpu-repair-coverage`` (issue 26), called directly: what counts as repair and health detection, and what is reported.

The repair signals it looks for are the ones the other parts of issue 26 render: the EKS add-on
``eks-node-monitoring-agent`` (hybridgpu/components/eks.py), Karpenter's chart value
``settings.featureGates.nodeRepair`` (hybridgpu/render/karpenter.py; karpenter-provider-aws chart
values, the gate that turns on ``pkg/controllers/node/health``), EKS managed node groups'
``nodeRepairConfig.enabled`` (pulumi-aws ``eks.NodeGroup`` ``node_repair_config``), and on-prem the
NVSentinel release (hybridgpu/render/gpu_health.py, release name ``nvsentinel``). The end-to-end
cases through the analyzer are tests/fixtures/policy-cases/safety-{fail,pass}-repair-*.
"""

from __future__ import annotations

import dataclasses

import pytest

from hybridgpu.policy import base
from hybridgpu.policy.registry import BY_NAME, PolicyConfigError
from tests.helpers.policy_cases import nodepool, res

SPEC = BY_NAME["gpu-repair-coverage"]
AGENT = res("aws:eks/addon:Addon", "agent", {"clusterName": "ml", "addonName": "eks-node-monitoring-agent"})


def karpenter(gate, chart="oci://public.ecr.aws/karpenter/karpenter"):
    values = {"settings": {"clusterName": "ml"}} if gate is None else {"settings": {"featureGates": {"nodeRepair": gate}}}
    return res("kubernetes:helm.sh/v3:Release", "karpenter", {"chart": chart, "values": values})


def host(name="h100-01", gpus=8.0):
    return res("hybridgpu:index:OnPremHost", name, {"hostname": name, "gpuCount": gpus})


def findings(resources, settings=None):
    return [(r.name if r else "", m) for r, m in SPEC.run_stack(resources, SPEC.parse_settings(settings))]


def test_advisory_by_default_and_a_stack_policy():
    assert SPEC.enforcement == "advisory" and SPEC.kind == "stack" and SPEC.group == "safety"


def test_gpu_nodepool_needs_both_the_agent_and_the_gate():
    [(name, msg)] = findings([nodepool("gpu", limit="16")])
    assert name == "gpu" and "can launch 16 GPUs without repair" in msg
    assert "no `eks-node-monitoring-agent` add-on" in msg and "`settings.featureGates.nodeRepair` is not true" in msg
    # In a hybridgpu project the fix is the stack's switch, which installs the add-on and sets the gate.
    assert "Fix: set `hybridgpu:cloud.karpenter.nodeRepair.enabled: true`" in msg
    # In any other project: what is missing, in the program's own terms.
    foreign = [_foreign(r) for r in (AGENT, karpenter(None), nodepool("gpu"))]
    [(_, only_gate)] = findings(foreign)
    assert "add-on" not in only_gate.split("Fix:")[0] and "nodeRepair" in only_gate
    [(_, only_agent)] = findings([_foreign(karpenter(True)), _foreign(nodepool("gpu"))])
    assert "Fix: add the EKS add-on `eks-node-monitoring-agent`" in only_agent and "featureGates" not in only_agent.split("Fix:")[1]
    assert findings([AGENT, karpenter(True), nodepool("gpu")]) == []


def _foreign(r):
    """The same resource in another team's project (``acme``)."""
    return dataclasses.replace(r, urn=r.urn.replace("::hybridgpu::", "::acme::"))


def test_gate_written_false_or_on_the_crd_chart_does_not_count():
    assert findings([AGENT, karpenter(False), nodepool("gpu")]) != []
    assert findings([AGENT, karpenter(True, chart="oci://public.ecr.aws/karpenter/karpenter-crd"), nodepool("gpu")]) != []
    assert findings([AGENT, karpenter("true"), nodepool("gpu")]) == []  # a string in values YAML is still on


def test_only_gpu_capacity_is_reported():
    assert findings([nodepool("cpu", limit="0")]) == []
    assert findings([nodepool("nolimit", limit=None)]) == []  # nodepool-gpu-limit reports the missing limit
    assert [n for n, _ in findings([nodepool("exp", limit="2e1")])] == ["exp"]
    assert findings([host("cpu-01", 0.0)]) == []
    assert findings([res("aws:eks/nodeGroup:NodeGroup", "cpu-group", {"instanceTypes": ["m7i.xlarge"]})]) == []


def test_node_group_needs_agent_and_node_repair_config():
    group = {"instanceTypes": ["p5.48xlarge"]}
    [(_, msg)] = findings([AGENT, res("aws:eks/nodeGroup:NodeGroup", "g", group)])
    assert "runs GPU instances (p5.48xlarge) without node repair" in msg and "node_repair_config" in msg
    assert findings([AGENT, res("aws:eks/nodeGroup:NodeGroup", "g", {**group, "nodeRepairConfig": {"enabled": True}})]) == []


def test_onprem_host_needs_a_detector_and_the_list_can_be_extended():
    [(name, msg)] = findings([host()])
    assert name == "h100-01" and "has 8 GPUs and the stack installs no GPU health detector (nvsentinel, node-problem-detector)" in msg
    nvsentinel = res("kubernetes:helm.sh/v3:Release", "site-a-onprem-nvsentinel", {"chart": "oci://ghcr.io/nvidia/nvsentinel", "name": "nvsentinel"})
    assert findings([nvsentinel, host()]) == []
    npd = res("kubernetes:helm.sh/v3:Release", "npd", {"chart": "node-problem-detector", "repositoryOpts": {"repo": "https://charts.deliveryhero.io/"}})
    assert findings([npd, host()]) == []
    own = res("kubernetes:helm.sh/v3:Release", "doctor", {"chart": "gpu-doctor"})
    assert findings([own, host()]) != []
    assert findings([own, host()], {"detectorCharts": ["gpu-doctor"]}) == []


def test_exemption_waives_one_resource():
    waiver = {"exemptResources": [{"resource": "lab-*", "reason": "lab pool, repaired by hand by the on-call team"}]}
    assert [n for n, _ in findings([nodepool("lab-pool"), nodepool("prod-pool")], waiver)] == ["prod-pool"]


class _Unknown(Exception):
    """Stands for pulumi_policy's UnknownValueError (what the pack registers in base.UNKNOWN_ERRORS)."""


class _Computed(dict):
    def __getitem__(self, key):
        raise _Unknown(key)


def test_values_unknown_in_a_first_preview_count_as_set(monkeypatch):
    """Fail open on unknowns: a computed add-on name or chart values may well be the right ones."""
    monkeypatch.setattr(base, "UNKNOWN_ERRORS", [_Unknown])
    agent = res("aws:eks/addon:Addon", "agent", _Computed(addonName="?"))
    release = res("kubernetes:helm.sh/v3:Release", "karpenter", {"chart": "karpenter", "values": _Computed(settings={})})
    assert findings([agent, release, nodepool("gpu")]) == []


@pytest.mark.parametrize("bad", [{"detectorCharts": []}, {"detectorCharts": "nvsentinel"}, {"detectorChart": ["x"]}, {"exemptResources": [{"resource": "x"}]}])
def test_bad_settings_name_the_policy_and_field(bad):
    with pytest.raises(PolicyConfigError) as err:
        SPEC.parse_settings(bad)
    assert "gpu-repair-coverage" in str(err.value)
