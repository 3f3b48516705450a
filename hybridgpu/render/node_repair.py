"""GPU node repair on EKS: Karpenter's repair rules and the node monitoring agent add-on's values (pure, no Pulumi).

Creates (as plain data):

* the ``configurationValues`` of the ``eks-node-monitoring-agent`` EKS add-on
  (:func:`node_monitoring_agent_configuration`), which sets the node conditions Karpenter repairs on;
* the Karpenter repair decision, as its controller takes it (:func:`repair_due`), for docs and tests.

Upstream facts (read 2026-11-26):

* aws/karpenter-provider-aws v1.14.1 (commit bde00654) ``pkg/cloudprovider/cloudprovider.go``
  ``RepairPolicies``: the conditions and toleration durations of :data:`REPAIR_POLICIES`.
* kubernetes-sigs/karpenter at the commit v1.14.1 of the provider pins (6e7eab7a, ``go.mod``
  ``v1.14.1-0.20260819221709-6e7eab7a0f48``) ``pkg/controllers/node/health/controller.go``: a node is
  repaired once a matching condition has held for its toleration (``findUnhealthyConditions`` picks the
  policy that falls due first; ``Now().Before(terminationTime)`` waits), only while at most
  ``allowedUnhealthyPercent = 20%`` of the NodePool's nodes (rounded up, ``GetScaledValueFromIntOrPercent``
  with ``roundUp=true``) match a policy; then the NodeClaim gets the termination-timestamp annotation
  (no drain wait) and is deleted. kubernetes-sigs/karpenter#3311 (repair as a voluntary disruption with
  a ``Repair`` budget reason) is an open pull request: not in this version.
* aws/eks-node-monitoring-agent v1.7.0 (commit c399089d): ``charts/configuration.schema.json`` (the keys
  the managed add-on accepts: no ``dcgmAgent.enabled``, no ``nodeAgent.dcgmAddress``; those come with
  PR #205, not in v1.7.0), ``charts/eks-node-monitoring-agent/values.yaml`` (``dcgmAgent.tolerations: []``,
  the ``dcgm-server`` DaemonSet on ``hostPort: 5555``), ``monitors/nvidia/dcgm/dcgm_client.go`` (the agent
  connects to ``localhost:5555``; a failed connection sets ``AcceleratedHardwareReady=False``, reason
  ``DCGMError``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

#: The EKS add-on that sets the repair conditions.
NODE_MONITORING_AGENT_ADDON = "eks-node-monitoring-agent"
#: The node condition the agent sets from DCGM health on NVIDIA nodes.
GPU_CONDITION = "AcceleratedHardwareReady"
#: Share of a NodePool's nodes that may match a repair policy before Karpenter stops repairing it (rounded up).
ALLOWED_UNHEALTHY_PERCENT = 20


@dataclass(frozen=True)
class RepairPolicy:
    """One of Karpenter's repair policies: a node condition type, the status that is unhealthy, and how long it is tolerated."""

    condition: str
    status: str
    toleration: timedelta


#: ``RepairPolicies`` of aws/karpenter-provider-aws v1.14.1, in source order.
REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", timedelta(minutes=30)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=30)),
    RepairPolicy(GPU_CONDITION, "False", timedelta(minutes=10)),
    RepairPolicy("StorageReady", "False", timedelta(minutes=30)),
    RepairPolicy("NetworkingReady", "False", timedelta(minutes=30)),
    RepairPolicy("KernelReady", "False", timedelta(minutes=30)),
    RepairPolicy("ContainerRuntimeReady", "False", timedelta(minutes=30)),
)


@dataclass(frozen=True)
class Condition:
    """A node condition as the health controller reads it: status and ``lastTransitionTime``."""

    status: str
    since: datetime


#: A node's conditions by type.
NodeConditions = Mapping[str, Condition]


def due_repair(node: NodeConditions) -> tuple[RepairPolicy, datetime] | None:
    """The repair policy a node matches that falls due first, and when, or None for a healthy node.

    Args:
        node: the node's conditions by type.

    Returns:
        ``(policy, due)``: ``due`` is the condition's ``lastTransitionTime`` plus the policy's toleration.
    """
    best: tuple[RepairPolicy, datetime] | None = None
    for policy in REPAIR_POLICIES:
        cond = node.get(policy.condition)
        if cond is not None and cond.status == policy.status:
            due = cond.since + policy.toleration
            if best is None or due < best[1]:
                best = (policy, due)
    return best


def unhealthy_threshold(nodes: int) -> int:
    """How many of ``nodes`` may match a repair policy with repair still allowed: 20%, rounded up."""
    return math.ceil(nodes * ALLOWED_UNHEALTHY_PERCENT / 100)


def repair_due(node: NodeConditions, pool: Iterable[NodeConditions], now: datetime) -> bool:
    """Whether Karpenter's health controller deletes (repairs) ``node`` at ``now``.

    Args:
        node: the node's conditions.
        pool: the conditions of every node of its NodePool, ``node`` included.
        now: the time of the reconcile.

    Returns:
        True when a policy's toleration has run out and at most 20% (rounded up) of the pool matches a policy
        (of any age).
    """
    found = due_repair(node)
    if found is None or now < found[1]:
        return False
    nodes = list(pool)
    unhealthy = sum(1 for n in nodes if due_repair(n) is not None)
    return unhealthy <= unhealthy_threshold(len(nodes))


def node_monitoring_agent_configuration() -> dict[str, Any]:
    """The ``configurationValues`` of the ``eks-node-monitoring-agent`` add-on, as a dict.

    The agent's own ``dcgm-server`` serves DCGM (the add-on v1.7.0 schema cannot disable it nor point the agent
    elsewhere), so the GPU Operator's standalone DCGM stays off (its chart default, which
    :func:`hybridgpu.render.nvidia.gpu_operator_values` keeps) and its dcgm-exporter keeps its embedded
    host engine: one host engine on port 5555 per node. ``dcgm-server`` tolerates every taint, as the agent
    itself does (chart default), so it runs on GPU nodes tainted ``nvidia.com/gpu``; without it the agent
    cannot reach DCGM, sets ``AcceleratedHardwareReady=False`` and Karpenter replaces a healthy node.
    """
    return {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}


def node_monitoring_agent_configuration_json() -> str:
    """:func:`node_monitoring_agent_configuration` as the JSON string the EKS API takes (sorted keys, stable)."""
    return json.dumps(node_monitoring_agent_configuration(), sort_keys=True, separators=(",", ":"))
