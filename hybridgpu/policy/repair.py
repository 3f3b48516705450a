"""Policy ``gpu-repair-coverage``: GPU capacity has health detection and repair (pure validator; advisory by default).

A GPU that falls off the bus (Xid 79) or fails its memory is marked unhealthy by the device plugin,
but nothing drains or replaces its node unless something detects it and acts (issue 26). What
counts as covered, per kind of GPU capacity in a stack:

* a Karpenter **NodePool** whose ``spec.limits["nvidia.com/gpu"]`` is above 0: the stack has the EKS
  node monitoring agent (``aws:eks/addon:Addon`` with ``addonName: eks-node-monitoring-agent``: it
  sets ``AcceleratedHardwareReady`` and the other conditions Karpenter's repair reads) **and** a
  Karpenter Helm release with ``values.settings.featureGates.nodeRepair: true`` (chart value
  ``settings.featureGates.nodeRepair``; without the gate Karpenter never repairs);
* an EKS managed **node group** with a GPU instance type: the agent add-on and the node group's
  ``nodeRepairConfig.enabled: true`` (EKS node auto repair);
* an **on-prem host** (``hybridgpu:index:OnPremHost``) with ``gpuCount`` above 0: a GPU health
  detector installed by a Helm release whose chart or name is one of :data:`DETECTOR_CHARTS`
  (NVIDIA NVSentinel, node-problem-detector with a GPU health source).

Each uncovered resource gets one finding naming what is missing and how to add it. Unknown values
(a first preview) count as set: the policy reports only what it can see is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from hybridgpu.k8s import GPU_RESOURCE, QuantityError, device_count
from hybridgpu.policy.base import NODEPOOL_TYPES, ONPREM_HOST_TYPES, PolicyResource, PolicySettings, StackFindings, Unknown, fix_for, known
from hybridgpu.policy.capacity import is_gpu_type, static_nodepool_gpus
from hybridgpu.render.node_repair import NODE_MONITORING_AGENT_ADDON

__all__ = ["DETECTOR_CHARTS", "NODE_MONITORING_AGENT", "RepairSettings", "gpu_repair_coverage"]

#: The EKS add-on that reports GPU and node health as node conditions.
NODE_MONITORING_AGENT = NODE_MONITORING_AGENT_ADDON  # one home: hybridgpu.render.node_repair
ADDON = "aws:eks/addon:Addon"
NODEGROUP = "aws:eks/nodeGroup:NodeGroup"
HELM_TYPES = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart")
#: Charts (or release names) of on-prem GPU health detectors; extend with ``detectorCharts``.
DETECTOR_CHARTS: tuple[str, ...] = ("nvsentinel", "node-problem-detector")


class RepairSettings(PolicySettings):
    """Settings of ``gpu-repair-coverage``."""

    detector_charts: list[str] = Field(
        default_factory=lambda: list(DETECTOR_CHARTS),
        min_length=1,
        description="Helm chart or release names that count as an on-prem GPU health detector (matched as the last path segment of `chart`, or the release `name`). Default: `[nvsentinel, node-problem-detector]`.",
    )


def _unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


def _set(value: Any) -> bool:
    """True for a switch that is on, or unknown during preview (counted as set)."""
    return value is True or value == "true" or _unknown(value)


def _chart_name(res: PolicyResource) -> str:
    chart = str(res.props.get("chart") or "")
    return chart.rstrip("/").rsplit("/", 1)[-1].split(":", 1)[0].lower()


def _gpu_limit(res: PolicyResource) -> int | None:
    static = static_nodepool_gpus(res.props)  # a static pool (spec.replicas) has no GPU limit
    if static is not None:
        return int(static)
    raw = known(res.props, "spec", "limits", GPU_RESOURCE)
    if raw is None or _unknown(raw):
        return None
    try:
        return device_count(raw)
    except QuantityError:
        return None


def _is_karpenter_release(res: PolicyResource) -> bool:
    return res.type in HELM_TYPES and "karpenter" in _chart_name(res) and "crd" not in _chart_name(res)


def gpu_repair_coverage(resources: Sequence[PolicyResource], cfg: RepairSettings) -> StackFindings:
    """Findings ``(resource, message)`` for GPU capacity in the stack without health detection and repair (see the module docstring).

    Args:
        resources: every resource of the stack.
        cfg: the policy's settings.

    Returns:
        An iterator of findings, one per uncovered GPU NodePool, node group or on-prem host, in input order.
    """
    agent = any(r.type == ADDON and (known(r.props, "addonName") == NODE_MONITORING_AGENT or _unknown(known(r.props, "addonName"))) for r in resources)
    releases = [r for r in resources if _is_karpenter_release(r)]
    gate = any(_set(known(r.props, "values", "settings", "featureGates", "nodeRepair")) for r in releases)
    detectors = {c.lower() for c in cfg.detector_charts}
    detector = any(r.type in HELM_TYPES and (_chart_name(r) in detectors or str(r.props.get("name") or "").lower() in detectors) for r in resources)
    agent_fix = f"add the EKS add-on `{NODE_MONITORING_AGENT}` (aws.eks.Addon with addon_name={NODE_MONITORING_AGENT!r})"
    for res in resources:
        if cfg.exempt(res):
            continue
        if res.type in NODEPOOL_TYPES:
            limit = _gpu_limit(res)
            if not limit:
                continue
            missing = []
            if not agent:
                missing.append(f"no `{NODE_MONITORING_AGENT}` add-on, so no node reports a failed GPU")
            if not gate:
                missing.append("Karpenter's `settings.featureGates.nodeRepair` is not true, so Karpenter never replaces an unhealthy node")
            if missing:
                theirs = ([agent_fix] if not agent else []) + (["set `settings.featureGates.nodeRepair: true` in the Karpenter chart values"] if not gate else [])
                ours = ["set `hybridgpu:cloud.karpenter.nodeRepair.enabled: true` in the stack (it installs the add-on and sets the gate; docs/cloud.md, Node repair)"]
                yield res, f"{res.label} can launch {limit} GPUs without repair: {'; '.join(missing)}. Fix: {fix_for(res, '; '.join(ours), '; '.join(theirs))}."
        elif res.type == NODEGROUP:
            types = res.props.get("instanceTypes") or []
            if not any(isinstance(t, str) and is_gpu_type(t) for t in types):
                continue
            missing = []
            if not agent:
                missing.append(f"no `{NODE_MONITORING_AGENT}` add-on")
            if not _set(known(res.props, "nodeRepairConfig", "enabled")):
                missing.append("`nodeRepairConfig.enabled` is not true")
            if missing:
                fixes = ([agent_fix] if not agent else []) + (["set `node_repair_config={'enabled': True}` on the node group"] if "`nodeRepairConfig.enabled` is not true" in missing else [])
                yield res, f"{res.label} runs GPU instances ({', '.join(t for t in types if isinstance(t, str))}) without node repair: {'; '.join(missing)}. Fix: {'; '.join(fixes)}."
        elif res.type in ONPREM_HOST_TYPES:
            gpus = res.props.get("gpuCount")
            # numbers reach analyzers as protobuf doubles: 8 arrives as 8.0
            if not isinstance(gpus, int | float) or isinstance(gpus, bool) or gpus <= 0 or detector:
                continue
            gpus = int(gpus) if float(gpus).is_integer() else gpus
            yield res, (
                f"{res.label} (host {res.props.get('hostname', res.name)}) has {gpus} GPUs and the stack installs no GPU health detector "
                f"({', '.join(cfg.detector_charts)}): a failed GPU is neither reported nor drained. Fix: set the inventory's remediation "
                "policy so hybridgpu installs the detector, or add its Helm release (or list your detector's chart in `detectorCharts`)."
            )
