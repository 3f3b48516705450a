"""GPU node repair on EKS (issue 26, EKS): Karpenter's repair decision, the NodeRepair gate, the node
monitoring agent add-on's configuration, and the `nodeRepair` switch through `hybridgpu validate`.

Upstream sources (read 2026-11-26):

* aws/karpenter-provider-aws v1.14.1 (bde00654) ``pkg/cloudprovider/cloudprovider.go`` ``RepairPolicies``;
  ``charts/karpenter/values.yaml`` ``settings.featureGates.nodeRepair`` (default false) and
  ``templates/deployment.yaml`` ``FEATURE_GATES=...NodeRepair={{ .Values.settings.featureGates.nodeRepair }}``.
* kubernetes-sigs/karpenter 6e7eab7a (the commit v1.14.1 pins) ``pkg/controllers/node/health/controller.go``:
  ``findUnhealthyConditions``, ``Now().Before(terminationTime)``, ``allowedUnhealthyPercent = 20%`` rounded up.
* aws/eks-node-monitoring-agent v1.7.0 (c399089d) ``charts/configuration.schema.json`` (copied to
  tests/fixtures/node_repair/) and ``charts/eks-node-monitoring-agent/values.yaml`` (``dcgmAgent.tolerations: []``,
  ``dcgmAgent.affinity`` instance types, copied to tests/fixtures/node_repair/).
* NVIDIA/gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml``: ``dcgm.enabled: false`` ("disabled by
  default to use embedded nv-hostengine by exporter").
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import jsonschema
import pytest
import yaml

from hybridgpu.catalog import load_catalog
from hybridgpu.config.models import KarpenterConfig, NodeRepairConfig
from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.k8s import GPU_TAINT, taint_object
from hybridgpu.render.karpenter import karpenter_helm_values
from hybridgpu.render.node_repair import (
    REPAIR_POLICIES,
    Condition,
    due_repair,
    node_monitoring_agent_configuration,
    node_monitoring_agent_configuration_json,
    repair_due,
    unhealthy_threshold,
)
from hybridgpu.render.nvidia import gpu_operator_values
from hybridgpu.render.scheduling import untolerated_taints
from tests.helpers import ROOT
from tests.helpers.cases import apply_set, assert_fixture_counts, assert_verdict, case_ids, load_cases, validate_edited

FIXTURES = ROOT / "tests/fixtures/node_repair"
T0 = datetime(2026, 11, 26, 12, 0, 0)
HEALTHY = {"Ready": Condition("True", T0), "AcceleratedHardwareReady": Condition("True", T0)}


def gpu_failed(since: datetime = T0) -> dict[str, Condition]:
    return {**HEALTHY, "AcceleratedHardwareReady": Condition("False", since)}


# ------------------------------------------------------------------ Karpenter's repair decision


def test_policies_are_karpenters():
    """aws/karpenter-provider-aws v1.14.1 RepairPolicies: the GPU condition is tolerated 10 minutes, the rest 30."""
    assert [(p.condition, p.status, p.toleration) for p in REPAIR_POLICIES] == [
        ("Ready", "False", timedelta(minutes=30)),
        ("Ready", "Unknown", timedelta(minutes=30)),
        ("AcceleratedHardwareReady", "False", timedelta(minutes=10)),
        ("StorageReady", "False", timedelta(minutes=30)),
        ("NetworkingReady", "False", timedelta(minutes=30)),
        ("KernelReady", "False", timedelta(minutes=30)),
        ("ContainerRuntimeReady", "False", timedelta(minutes=30)),
    ]


@pytest.mark.parametrize(
    "conditions,after,repaired",
    [
        (gpu_failed(), timedelta(minutes=9, seconds=59), False),  # still tolerated
        (gpu_failed(), timedelta(minutes=10), True),  # not Before(due): repaired at due time
        ({**HEALTHY, "AcceleratedHardwareReady": Condition("Unknown", T0)}, timedelta(hours=5), False),  # only False is a policy
        ({**HEALTHY, "Ready": Condition("Unknown", T0)}, timedelta(minutes=29), False),
        ({**HEALTHY, "Ready": Condition("Unknown", T0)}, timedelta(minutes=30), True),
        ({**HEALTHY, "KernelReady": Condition("False", T0)}, timedelta(minutes=30), True),
        ({**HEALTHY, "NeuronReady": Condition("False", T0)}, timedelta(days=1), False),  # not a policy
        (HEALTHY, timedelta(days=1), False),
    ],
)
def test_repair_after_toleration(conditions, after, repaired):
    assert repair_due(conditions, [conditions], T0 + after) is repaired


def test_the_policy_due_first_wins():
    """findUnhealthyConditions keeps the matching policy whose termination time comes first."""
    node = {"Ready": Condition("False", T0), "AcceleratedHardwareReady": Condition("False", T0 + timedelta(minutes=15))}
    policy, due = due_repair(node)
    assert (policy.condition, due) == ("AcceleratedHardwareReady", T0 + timedelta(minutes=25))


@pytest.mark.parametrize("nodes,threshold", [(1, 1), (2, 1), (5, 1), (6, 2), (10, 2), (11, 3), (100, 20)])
def test_unhealthy_cap_rounds_up(nodes, threshold):
    assert unhealthy_threshold(nodes) == threshold


@pytest.mark.parametrize(
    "pool_size,unhealthy,repaired",
    [
        (1, 1, True),  # a lone failed node is repaired: ceil(20% of 1) = 1
        (5, 1, True),
        (5, 2, False),  # 2 > ceil(1.0): the NodePool is "unhealthy", repair blocked (NodeRepairBlocked event)
        (10, 2, True),
        (10, 3, False),
    ],
)
def test_cap_on_unhealthy_nodes_per_pool(pool_size, unhealthy, repaired):
    """Counted nodes match a policy whatever its age: a node failed a minute ago counts against the cap."""
    failed = gpu_failed()
    young = gpu_failed(T0 + timedelta(minutes=19))
    pool = [failed] + [young] * (unhealthy - 1) + [HEALTHY] * (pool_size - unhealthy)
    assert repair_due(failed, pool, T0 + timedelta(minutes=20)) is repaired


# ------------------------------------------------------------------ what we render


def test_gate_follows_the_switch():
    off = karpenter_helm_values(KarpenterConfig(), cluster_name="c1", interruption_queue="c1")
    on = karpenter_helm_values(KarpenterConfig(nodeRepair={"enabled": True}), cluster_name="c1", interruption_queue="c1")
    assert off["settings"]["featureGates"]["nodeRepair"] is False
    assert on["settings"]["featureGates"]["nodeRepair"] is True
    # the other gates are untouched
    assert {k: v for k, v in on["settings"]["featureGates"].items() if k != "nodeRepair"} == {
        k: v for k, v in off["settings"]["featureGates"].items() if k != "nodeRepair"
    }


def test_safe_default_is_off():
    assert NodeRepairConfig().enabled is False and KarpenterConfig().node_repair.enabled is False


def test_agent_configuration_is_valid_for_the_addon_schema():
    schema = json.loads((FIXTURES / "eks-node-monitoring-agent-v1.7.0.schema.json").read_text())
    jsonschema.validate(node_monitoring_agent_configuration(), schema)
    # PR #205's keys are not in v1.7.0: the managed add-on refuses them (additionalProperties: false)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"nodeAgent": {"dcgmAddress": "nvidia-dcgm:5555"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"dcgmAgent": {"enabled": False}}, schema)


def test_agent_configuration_is_byte_stable():
    text = node_monitoring_agent_configuration_json()
    assert text == '{"dcgmAgent":{"tolerations":[{"operator":"Exists"}]}}'
    assert json.loads(text) == node_monitoring_agent_configuration()


def test_dcgm_server_runs_on_tainted_gpu_nodes():
    """Chart default dcgmAgent.tolerations is []: dcgm-server would skip our GPU nodes, the agent could not reach
    DCGM (DCGMError) and Karpenter would replace healthy nodes. Ours tolerate the GPU taint and any other."""
    tolerations = node_monitoring_agent_configuration()["dcgmAgent"]["tolerations"]
    taints = [taint_object(*GPU_TAINT), {"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    assert untolerated_taints(tolerations, taints) == []
    assert untolerated_taints([], taints) == taints  # the chart default


def test_dcgm_server_affinity_covers_every_catalog_gpu_type():
    """dcgm-server's node affinity lists instance types; a GPU type missing from it would have no host engine."""
    listed = set(yaml.safe_load((FIXTURES / "dcgm-server-instance-types-v1.7.0.yaml").read_text()))
    assert {t.name for t in load_catalog().gpu_instance_types()} - listed == set()


def test_one_host_engine_per_node():
    """The agent's dcgm-server binds hostPort 5555; the GPU Operator's standalone DCGM (also a host engine) stays
    off, so its dcgm-exporter keeps the embedded engine and nothing else claims the port."""
    values: dict[str, Any] = gpu_operator_values(NvidiaConfig())
    assert values.get("dcgm", {}).get("enabled", False) is False  # chart default false (v26.7.0 values.yaml)


# ------------------------------------------------------------------ the switch through the CLI

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/node_repair/cases.yaml")


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_validate_verdict(scratch_project, case):
    assert_verdict(validate_edited(scratch_project, case["stack"], lambda config: apply_set(config, case)), case)


def test_fixture_counts():
    assert_fixture_counts(CASES)


# ------------------------------------------------------------------ the program under Pulumi's mocks


def test_addon_created_only_when_on(project):
    """Off (the example dev stack): no agent add-on. On: the add-on with our configuration, and the gate on."""
    from hybridgpu.shell.preview import run_preview
    from tests.helpers.scratch import example_stack, write_stack

    data = example_stack("dev")
    write_stack(project, "off", data)
    data["config"]["hybridgpu:cloud"].setdefault("karpenter", {})["nodeRepair"] = {"enabled": True, "agentVersion": "v1.7.0-eksbuild.1"}
    write_stack(project, "on", data)
    for stack, expected in (("off", []), ("on", [("v1.7.0-eksbuild.1", node_monitoring_agent_configuration_json())])):
        result = run_preview(stack, project)
        addons = [r.inputs for r in result.of_type("aws:eks/addon:Addon") if r.inputs["addonName"] == "eks-node-monitoring-agent"]
        assert [(a["addonVersion"], a["configurationValues"]) for a in addons] == expected
        karpenter = next(r.inputs for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "karpenter")
        gates = karpenter["values"]["settings"]["featureGates"]
        assert gates["nodeRepair"] is (stack == "on")
