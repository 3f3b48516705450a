"""OpenCost component: showback of the cluster's GPU-hours, priced from the stack's cost report.

Creates, through the cluster's Kubernetes provider, when ``hybridgpu:economics.showback.opencost``
is on:

* the namespace (``showback.namespace``, default ``opencost``);
* the ``opencost`` Helm release (pinned :data:`~hybridgpu.economics.opencost.OPENCOST_CHART_VERSION`)
  with the values of :func:`hybridgpu.economics.opencost.opencost_values`: on-prem the owned cost
  per GPU-hour that ``hybridgpu cost report`` prints, on EKS AWS prices by
  ``karpenter.sh/capacity-type``; it runs on the system nodes.
"""

from __future__ import annotations

from typing import Any, Literal

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.economics.opencost import (
    OPENCOST_CHART,
    OPENCOST_CHART_VERSION,
    OPENCOST_REPO,
    eks_gpu_usd_per_hour,
    onprem_gpu_usd_per_hour,
    opencost_values,
)
from hybridgpu.k8s import managed_by_labels
from hybridgpu.stack.load import Stack


class OpenCost(pulumi.ComponentResource):
    """OpenCost on one cluster (type token ``hybridgpu:showback:OpenCost``).

    Args:
        name: logical name prefix (children ``<name>-namespace``, ``<name>-release``).
        values: the chart values (:func:`hybridgpu.economics.opencost.opencost_values`).
        namespace: the release's namespace.
        provider: the cluster's Kubernetes provider.
        depends_on: what must exist first (the CNI on-prem, Karpenter on EKS).

    Attributes:
        release: the Helm release.
    """

    release: k8s.helm.v3.Release

    def __init__(self, name: str, values: dict[str, Any], namespace: str, provider: pulumi.ProviderResource,
                 depends_on: list[pulumi.Resource] | None = None, opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybridgpu:showback:OpenCost", name, None, opts)
        base = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or []))
        ns = k8s.core.v1.Namespace(f"{name}-namespace", metadata={"name": namespace, "labels": managed_by_labels()}, opts=base)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="opencost",
            chart=OPENCOST_CHART,
            version=OPENCOST_CHART_VERSION,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=OPENCOST_REPO),
            namespace=namespace,
            values=values,
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[ns, *(depends_on or [])]),
        )
        self.register_outputs({"release": self.release.status})


def build_opencost(stack: Stack, side: Literal["onprem", "eks"], cluster_name: str, provider: pulumi.ProviderResource,
                   depends_on: list[pulumi.Resource] | None = None) -> OpenCost | None:
    """OpenCost on one cluster of the stack, or None when ``showback.opencost`` is off.

    The GPU price comes from the cost report validation built (:meth:`Stack.report`); validation
    already refused a stack whose report has no price for the cluster's GPUs.
    """
    economics = stack.config.economics
    if economics is None or not economics.showback.opencost:
        return None
    report = stack.report()
    price = onprem_gpu_usd_per_hour(report) if side == "onprem" else eks_gpu_usd_per_hour(report)
    values = opencost_values(economics.showback, side, cluster_name, price)
    return OpenCost(f"{cluster_name}-opencost", values, economics.showback.namespace, provider, depends_on)
