"""Can a pod be scheduled on a node? kube-scheduler's TaintToleration and NodeAffinity filters (pure).

The toolkit installs controllers (Deployments) and node agents (DaemonSets) through Helm charts
and its own manifests; each must find a node the toolkit creates whose taints it tolerates and
whose labels match its ``nodeSelector`` and required node affinity, or it stays Pending (and a
Helm release with ``atomic``/wait times out). This module answers that question for a
:class:`PodPlacement` (a workload's scheduling fields) against a :class:`NodeGroup` (a node
template: the EKS system node group, a Karpenter NodePool, an on-prem host role).

Semantics, read 2026-11-24 from kubernetes/kubernetes (v1.35 line):

* Taints: ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`` ``Filter``
  rejects a node with a taint of effect ``NoSchedule`` or ``NoExecute`` that no toleration
  tolerates (``FindMatchingUntoleratedTaint`` in ``staging/src/k8s.io/component-helpers/
  scheduling/corev1/helpers.go``); ``PreferNoSchedule`` is only a score.
* Toleration matching: ``staging/src/k8s.io/api/core/v1/toleration.go`` ``ToleratesTaint``:
  an empty toleration effect matches every effect, otherwise the effects must be equal; an
  empty key matches every key (the API only allows it with ``Exists``), otherwise the keys
  must be equal; operator ``Exists`` matches any value, ``Equal`` (or empty) needs equal values;
  ``Lt``/``Gt`` compare integers only with the alpha gate ``TaintTolerationComparisonOperators``
  (off by default, so here they never match).
* Node affinity: ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`` ``Filter``
  with ``staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go``:
  every ``nodeSelector`` pair must equal a node label; ``requiredDuringScheduling...
  nodeSelectorTerms`` are ORed, the expressions of a term ANDed, a term without expressions
  matches nothing; ``In`` (value in the list), ``NotIn`` (label absent or value not in the
  list), ``Exists``, ``DoesNotExist``, ``Gt``/``Lt`` (label and the single value parsed as
  integers; an absent or non-integer label does not match). ``preferred...`` terms only score.

Node groups are templates, so a label may take one of several values (a Karpenter NodePool's
``node.kubernetes.io/instance-type`` is one of its instance types). An expression matches a
group when some allowed value satisfies it; expressions on different keys are independent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BLOCKING_EFFECTS",
    "DAEMONSET_DEFAULT_TOLERATIONS",
    "NodeGroup",
    "PodPlacement",
    "expression_matches",
    "label_mismatches",
    "placement_problems",
    "tolerates",
    "untolerated_taints",
]

#: Taint effects the TaintToleration filter enforces (taint_toleration.go ``Filter``).
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")

#: Tolerations the DaemonSet controller adds to every daemon pod, so node agents keep running on
#: cordoned and pressured nodes: kubernetes/kubernetes ``pkg/controller/daemon/util/daemonset_util.go``
#: ``AddOrUpdateDaemonPodTolerations`` (v1.35 line, read 2026-11-24). ``network-unavailable`` is
#: added only for host-network pods and is left out here.
DAEMONSET_DEFAULT_TOLERATIONS: tuple[Mapping[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


@dataclass(frozen=True)
class NodeGroup:
    """A node template the toolkit creates.

    Attributes:
        name: how a user knows it, e.g. ``EKS system node group gpu-prod-system``,
            ``Karpenter NodePool h100-spot``, ``on-prem gpu-worker hosts dgx-h100-01..03``.
        labels: label key -> the values a node of the group may carry (one value for a fixed
            label; several for a Karpenter requirement such as the instance type).
        taints: ``{key, value?, effect}`` dicts as in ``Node.spec.taints``.
        gpu: True for nodes with NVIDIA GPUs (node agents of the GPU stack must run there).
        nodes: how many nodes exist at least (``minSize`` of a node group, hosts of a role);
            ``None`` when the group scales on demand (a Karpenter NodePool).
        devices: extended resources of devices its nodes carry besides GPUs, served by a device
            plugin (``vpc.amazonaws.com/efa`` on the nodes of an EFA NodePool).
    """

    name: str
    labels: Mapping[str, tuple[str, ...]]
    taints: tuple[Mapping[str, str], ...] = ()
    gpu: bool = False
    nodes: int | None = None
    devices: tuple[str, ...] = ()


@dataclass(frozen=True)
class PodPlacement:
    """The scheduling fields of one workload's pod template, after Helm merged chart defaults and overrides.

    Attributes:
        name: ``<release>/<workload>`` as a user finds it, e.g. ``kueue/kueue-controller-manager``.
        kind: ``Deployment`` or ``DaemonSet``.
        tolerations: ``PodSpec.tolerations`` dicts.
        node_selector: ``PodSpec.nodeSelector``.
        required_terms: ``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``
            (``None`` when the pod has no required node affinity).
        gpu_agent: a DaemonSet that must run on every GPU node (device plugin, GFD, DCGM exporter,
            the operator's operands, the NFD worker that labels GPU nodes).
        replicas_on_distinct_nodes: replicas a required pod anti-affinity on
            ``kubernetes.io/hostname`` spreads over distinct nodes (0: no such rule).
        source: where the scheduling fields come from (chart file and version, or our renderer).
        device: for a device-plugin DaemonSet, the extended resource it advertises: it must run on
            every node group with that device (:attr:`NodeGroup.devices`) and on no other.
    """

    name: str
    kind: str
    tolerations: tuple[Mapping[str, Any], ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[Mapping[str, Any], ...] | None = None
    gpu_agent: bool = False
    replicas_on_distinct_nodes: int = 0
    source: str = ""
    device: str | None = None


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """True if ``toleration`` tolerates ``taint`` (k8s.io/api core/v1 ``Toleration.ToleratesTaint``, gate off)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return False  # Lt/Gt: alpha TaintTolerationComparisonOperators, off by default; anything else never matches


def untolerated_taints(tolerations: Sequence[Mapping[str, Any]], taints: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ``NoSchedule``/``NoExecute`` taints no toleration tolerates (TaintToleration ``Filter``)."""
    return [t for t in taints if t.get("effect") in BLOCKING_EFFECTS and not any(tolerates(tol, t) for tol in tolerations)]


def _int(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def expression_matches(expression: Mapping[str, Any], labels: Mapping[str, tuple[str, ...]]) -> bool:
    """True if some allowed value of the group's labels satisfies one ``NodeSelectorRequirement``.

    Raises:
        ValueError: an unknown operator (the API server refuses it too).
    """
    key, operator = expression.get("key"), expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    present = labels.get(key) if key is not None else None
    if operator == "In":
        return present is not None and any(v in values for v in present)
    if operator == "NotIn":
        return not present or any(v not in values for v in present)
    if operator == "Exists":
        return present is not None
    if operator == "DoesNotExist":
        return present is None
    if operator in ("Gt", "Lt"):
        bound = _int(values[0]) if len(values) == 1 else None
        if not present or bound is None:
            return False
        numbers = [n for n in (_int(v) for v in present) if n is not None]
        return any(n > bound if operator == "Gt" else n < bound for n in numbers)
    raise ValueError(f"unknown node selector operator {operator!r}")


def _show(expression: Mapping[str, Any]) -> str:
    values = expression.get("values") or []
    return f"{expression.get('key')} {expression.get('operator')}" + (f" {list(values)}" if values else "")


def label_mismatches(pod: PodPlacement, group: NodeGroup) -> list[str]:
    """Why the group's labels do not match the pod's ``nodeSelector`` / required node affinity (empty: they match)."""
    problems = []
    for key, value in sorted(pod.node_selector.items()):
        have = group.labels.get(key)
        if not have or str(value) not in have:
            problems.append(f"nodeSelector {key}={value} (nodes have {key}={'|'.join(have) if have else '<unset>'})")
    if pod.required_terms is not None:
        def term_ok(term: Mapping[str, Any]) -> bool:
            expressions = term.get("matchExpressions") or []
            return bool(expressions) and all(expression_matches(e, group.labels) for e in expressions)

        if not any(term_ok(t) for t in pod.required_terms):
            shown = " OR ".join("(" + " AND ".join(_show(e) for e in t.get("matchExpressions") or []) + ")" for t in pod.required_terms)
            problems.append(f"required node affinity {shown or '(no terms)'}")
    return problems


def _show_taint(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key')}{'=' + str(value) if value else ''}:{taint.get('effect')}"


def placement_problems(pod: PodPlacement, group: NodeGroup) -> list[str]:
    """Every reason the pod cannot run on a node of ``group``: untolerated taints, then label mismatches (empty: it fits)."""
    tolerations = (*pod.tolerations, *DAEMONSET_DEFAULT_TOLERATIONS) if pod.kind == "DaemonSet" else pod.tolerations
    missing = [f"no toleration for taint {_show_taint(t)}" for t in untolerated_taints(tolerations, group.taints)]
    return missing + label_mismatches(pod, group)
