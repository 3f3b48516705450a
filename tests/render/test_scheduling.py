"""kube-scheduler's TaintToleration and NodeAffinity filters as hybridgpu models them (hybridgpu/render/scheduling.py).

Expected answers follow kubernetes/kubernetes (v1.35 line, read 2026-11-24):
``staging/src/k8s.io/api/core/v1/toleration.go`` ``ToleratesTaint`` and its table test
``toleration_test.go``; ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``
(only NoSchedule/NoExecute filter); ``staging/src/k8s.io/component-helpers/scheduling/corev1/
nodeaffinity/nodeaffinity.go`` (terms ORed, expressions ANDed, empty term matches nothing, Gt/Lt
integers); ``pkg/controller/daemon/util/daemonset_util.go`` (daemon pods' default tolerations).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hybridgpu.render.scheduling import (
    NodeGroup,
    PodPlacement,
    expression_matches,
    label_mismatches,
    placement_problems,
    tolerates,
    untolerated_taints,
)

GPU = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
CRITICAL = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}
CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    "toleration,taint,expected",
    [
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, {**GPU, "effect": "NoExecute"}, True),  # empty effect: all effects
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, {**GPU, "effect": "NoExecute"}, False),
        ({"operator": "Exists"}, CRITICAL, True),  # empty key + Exists: every taint
        ({"operator": "Exists", "effect": "NoExecute"}, CRITICAL, False),
        ({"key": "CriticalAddonsOnly", "operator": "Exists"}, CRITICAL, True),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}, GPU, False),  # the device-plugin chart's NFD worker
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}, GPU, True),  # empty operator means Equal
        ({"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"}, CONTROL_PLANE, True),
        ({"key": "nvidia.com/gpu", "operator": "Gt", "value": "0"}, {**GPU, "value": "1"}, False),  # alpha gate off
        ({"key": "other", "operator": "Exists"}, GPU, False),
    ],
)
def test_tolerates(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_prefer_no_schedule_is_not_a_filter():
    soft = {"key": "dedicated", "value": "x", "effect": "PreferNoSchedule"}
    assert untolerated_taints([], [soft]) == []
    assert untolerated_taints([], [soft, GPU]) == [GPU]


LABELS = {"hybridgpu.io/role": ("system",), "node.kubernetes.io/instance-type": ("m7i.large", "m6i.large"), "gpus": ("8",)}


@pytest.mark.parametrize(
    "expression,expected",
    [
        ({"key": "hybridgpu.io/role", "operator": "In", "values": ["system"]}, True),
        ({"key": "hybridgpu.io/role", "operator": "In", "values": ["gpu"]}, False),
        ({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.large"]}, True),  # one allowed value suffices
        ({"key": "hybridgpu.io/role", "operator": "NotIn", "values": ["gpu"]}, True),
        ({"key": "absent", "operator": "NotIn", "values": ["x"]}, True),  # NotIn matches an absent label
        ({"key": "hybridgpu.io/role", "operator": "NotIn", "values": ["system"]}, False),
        ({"key": "hybridgpu.io/role", "operator": "Exists"}, True),
        ({"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}, True),
        ({"key": "hybridgpu.io/role", "operator": "DoesNotExist"}, False),
        ({"key": "gpus", "operator": "Gt", "values": ["4"]}, True),
        ({"key": "gpus", "operator": "Lt", "values": ["4"]}, False),
        ({"key": "absent", "operator": "Gt", "values": ["4"]}, False),
        ({"key": "hybridgpu.io/role", "operator": "Gt", "values": ["1"]}, False),  # not an integer
    ],
)
def test_expression_matches(expression, expected):
    assert expression_matches(expression, LABELS) is expected


def test_unknown_operator_is_refused():
    with pytest.raises(ValueError, match="Between"):
        expression_matches({"key": "a", "operator": "Between", "values": ["1"]}, LABELS)


def test_terms_are_ored_and_expressions_anded():
    group = NodeGroup("g", LABELS)
    either = ({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, {"matchExpressions": [{"key": "hybridgpu.io/role", "operator": "Exists"}]})
    assert label_mismatches(PodPlacement("p", "Deployment", required_terms=either), group) == []
    both = ({"matchExpressions": [{"key": "x", "operator": "Exists"}, {"key": "hybridgpu.io/role", "operator": "Exists"}]},)
    assert label_mismatches(PodPlacement("p", "Deployment", required_terms=both), group) != []
    # An empty term matches nothing; no required affinity at all matches everything.
    assert label_mismatches(PodPlacement("p", "Deployment", required_terms=({},)), group) != []
    assert label_mismatches(PodPlacement("p", "Deployment"), group) == []


def test_node_selector_needs_every_pair():
    group = NodeGroup("system", LABELS)
    assert label_mismatches(PodPlacement("p", "Deployment", node_selector={"hybridgpu.io/role": "system"}), group) == []
    problems = label_mismatches(PodPlacement("p", "Deployment", node_selector={"hybridgpu.io/role": "system", "kubernetes.io/os": "linux"}), group)
    assert problems == ["nodeSelector kubernetes.io/os=linux (nodes have kubernetes.io/os=<unset>)"]


def test_daemon_pods_tolerate_cordoned_nodes_and_deployments_do_not():
    cordoned = NodeGroup("cordoned", {}, taints=({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},))
    assert placement_problems(PodPlacement("ds", "DaemonSet"), cordoned) == []
    assert placement_problems(PodPlacement("deploy", "Deployment"), cordoned) == ["no toleration for taint node.kubernetes.io/unschedulable:NoSchedule"]


def test_problems_name_every_taint_and_label():
    group = NodeGroup("NodePool gpu", {"hybridgpu.io/role": ("gpu",)}, taints=(GPU, CRITICAL))
    pod = PodPlacement("kueue/kueue-controller-manager", "Deployment", node_selector={"hybridgpu.io/role": "system"})
    assert placement_problems(pod, group) == [
        "no toleration for taint nvidia.com/gpu=true:NoSchedule",
        "no toleration for taint CriticalAddonsOnly=true:NoSchedule",
        "nodeSelector hybridgpu.io/role=system (nodes have hybridgpu.io/role=gpu)",
    ]


# Properties of ToleratesTaint (k8s.io/api core/v1 toleration.go) over generated taints.
_keys = st.sampled_from(["nvidia.com/gpu", "CriticalAddonsOnly", "dedicated", "node-role.kubernetes.io/control-plane"])
_taints = st.fixed_dictionaries({"key": _keys, "value": st.sampled_from(["", "true", "present", "x"]), "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])})


@given(_taints)
def test_empty_key_exists_tolerates_everything(taint):
    assert tolerates({"operator": "Exists"}, taint)


@given(_taints, _keys)
def test_key_exists_without_effect_tolerates_exactly_that_key(taint, key):
    assert tolerates({"key": key, "operator": "Exists"}, taint) is (taint["key"] == key)


@given(_taints)
def test_equal_needs_the_same_value_and_effect(taint):
    exact = {"key": taint["key"], "operator": "Equal", "value": taint["value"], "effect": taint["effect"]}
    assert tolerates(exact, taint)
    assert not tolerates({**exact, "value": taint["value"] + "-other"}, taint)
