"""Policy ``efa-workload-requests``: pods that request EFA devices can be placed and fed (pure validator).

A pod asks for EFA with ``resources.limits["vpc.amazonaws.com/efa"]``. It then runs only where the AWS EFA
device plugin advertises the resource, and hybridgpu installs that plugin on the nodes of EFA NodePools
only (the nodes labelled ``hybridgpu.io/efa=true``, :mod:`hybridgpu.render.efa`). Karpenter does not know
that: for a pending pod that requests EFA it may launch an EFA-capable instance type from *any* NodePool,
attaching EFA interfaces when the pool's EC2NodeClass has none (aws/karpenter-provider-aws v1.14.1
``pkg/providers/instance/instance.go`` ``getEFACountForInstance`` and ``launchtemplate.go``
``generateNetworkInterfaces``, read 2026-11-24). On such a node no device plugin runs, the pod stays Pending
and the (p5: 55 USD/hour) node idles. So a pod requesting EFA must select the EFA nodes itself.

Rules, per pod template:

* the EFA quantity is a whole, non-negative Kubernetes quantity;
* requests, when given, equal limits (extended resources cannot be overcommitted: Kubernetes
  "Resource Management for Pods and Containers", extended resources, 1.35);
* at most ``maxEfaPerPod`` devices (default: the largest ``maxEfaInterfaces`` of the catalog, 32 on
  p5.48xlarge/p5e.48xlarge): no node offers more;
* a ``nodeSelector`` ``hybridgpu.io/efa: "true"``, or a required node affinity whose every term requires
  ``hybridgpu.io/efa In [true]``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from hybridgpu.catalog import load_catalog
from hybridgpu.k8s import EFA_LABEL, EFA_RESOURCE, QuantityError, device_count
from hybridgpu.policy.base import KUBERNETES_BUNDLES, Findings, PolicyResource, PolicySettings, dig, fix_for, parse_quantity
from hybridgpu.policy.workloads import PodTemplate, pod_templates

__all__ = ["EfaWorkloadSettings", "efa_workload_requests", "selects_efa_nodes"]


@functools.cache
def _catalog_max_efa() -> int:
    return max(t.max_efa_interfaces for t in load_catalog().instance_types)


class EfaWorkloadSettings(PolicySettings):
    """Settings of ``efa-workload-requests``."""

    max_efa_per_pod: int = Field(
        default_factory=_catalog_max_efa,
        ge=1,
        description="Most EFA devices one pod may request. Default: the catalog's largest `maxEfaInterfaces` (32, p5.48xlarge).",
    )


def selects_efa_nodes(spec: Mapping[str, Any]) -> bool:
    """True when a pod spec can only land on EFA pool nodes: ``nodeSelector`` ``hybridgpu.io/efa: "true"``,
    or ``requiredDuringSchedulingIgnoredDuringExecution`` terms that each require ``hybridgpu.io/efa In [true]``."""
    if str((spec.get("nodeSelector") or {}).get(EFA_LABEL)) == "true":
        return True
    terms = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms") or []
    if not terms:
        return False
    return all(
        any(e.get("key") == EFA_LABEL and e.get("operator") == "In" and list(e.get("values") or []) == ["true"] for e in (t.get("matchExpressions") or []))
        for t in terms
    )


def _template_findings(res: PolicyResource, template: PodTemplate, most: int) -> Findings:
    label = res.label
    where = template.path or "the pod"
    asked = False
    for path, c in template.containers():
        requests = dig(c, "resources", "requests") or {}
        limits = dig(c, "resources", "limits") or {}
        if EFA_RESOURCE not in requests and EFA_RESOURCE not in limits:
            continue
        asked = True
        req, lim = parse_quantity(requests.get(EFA_RESOURCE)), parse_quantity(limits.get(EFA_RESOURCE))
        bad = []
        for section, given in (("requests", requests), ("limits", limits)):
            if given.get(EFA_RESOURCE) is not None:
                try:
                    device_count(given[EFA_RESOURCE], EFA_RESOURCE)
                except QuantityError as exc:
                    bad.append(exc)
                    yield f"{label} {path}.resources.{section}: {exc.problem}. Fix: {exc.fix}, one per EFA interface of the node."
        if bad:
            continue
        if EFA_RESOURCE not in limits or (EFA_RESOURCE in requests and req != lim):
            yield (
                f"{label} {path} requests {EFA_RESOURCE} {requests.get(EFA_RESOURCE)!r} with limit {limits.get(EFA_RESOURCE)!r}. "
                "Fix: set resources.limits to the EFA devices wanted (requests may be omitted or equal)."
            )
    if not asked:
        return
    devices = template.efa_devices()
    if devices > most:
        yield (
            f"{label} asks for {devices:g} {EFA_RESOURCE} per pod at {where}, more than any node has ({most}). "
            "Fix: request at most the node's EFA interfaces (p5.48xlarge: 32, p5en.48xlarge: 16, p4d.24xlarge: 4), or raise maxEfaPerPod."
        )
    if devices > 0 and not selects_efa_nodes(template.spec):
        yield (
            f"{label} asks for {EFA_RESOURCE} at {where} but does not select EFA nodes: Karpenter may launch it on a NodePool "
            "without EFA, where no EFA device plugin runs and the pod stays Pending. "
            f"Fix: add `nodeSelector: {{{EFA_LABEL}: \"true\"}}` to the pod template "
            + fix_for(res, "(the label of hybridgpu's EFA NodePools).", "and the same label to your EFA NodePools' spec.template.metadata.labels.")
        )


def efa_workload_requests(res: PolicyResource, cfg: EfaWorkloadSettings) -> Findings:
    """Messages for every pod template of ``res`` that asks for EFA devices it cannot get (see the module docstring)."""
    if not res.type.startswith("kubernetes:") or res.type in KUBERNETES_BUNDLES:
        return
    for template in pod_templates(res.props):
        yield from _template_findings(res, template, cfg.max_efa_per_pod)
