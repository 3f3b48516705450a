"""OpenCost component: showback of the cluster's GPU-hours, priced from the stack's cost report.

Creates, through the cluster's Kubernetes provider, when ``hybridgpu:economics.showback.opencost``
is on:

* the namespace (``showback.namespace``, default ``opencost``);
* the ``opencost`` Helm release (pinned :data:`~hybridgpu.economics.opencost.OPENCOST_CHART_VERSION`)
  with the values of :func:`hybridgpu.economics.opencost.opencost_values`: on-prem the owned cost
  per GPU-hour that ``hybridgpu cost report`` prints, on EKS AWS prices by
  ``karpenter.sh/capacity-type``; it runs on the system nodes.
"""

from typing import Literal, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.components.base import as_input, component_options, section, type_token
from hybridgpu.components.inputs import ShowbackConfigArgs
from hybridgpu.config.economics import ShowbackConfig
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


class OpenCostArgs(TypedDict):
    """Inputs of :class:`OpenCost`."""

    showback: NotRequired[ShowbackConfigArgs]
    """The ``hybridgpu:economics.showback`` section (namespace, OpenCost settings). Default: its defaults."""
    side: str
    """``onprem`` (custom pricing: the owned cost per GPU-hour) or ``eks`` (AWS prices by ``karpenter.sh/capacity-type``)."""
    cluster_name: str
    """The cluster's name (OpenCost's ``clusterName`` and default cluster ID)."""
    gpu_usd_per_hour: NotRequired[float]
    """Price of one GPU-hour in USD (``hybridgpu cost report``). Default: none (OpenCost's own)."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class OpenCost(pulumi.ComponentResource):
    """OpenCost on one cluster (``hybridgpu:index:OpenCost``).

    Args:
        name: logical name prefix (children ``<name>-namespace``, ``<name>-release``).
        args: :class:`OpenCostArgs` (values from :func:`hybridgpu.economics.opencost.opencost_values`).
        opts: resource options. ``depends_on``: what must exist first (the CNI on-prem, Karpenter on EKS).

    Raises:
        ValueError: ``side`` is neither ``onprem`` nor ``eks``.
    """

    release: k8s.helm.v3.Release
    """The Helm release."""

    def __init__(self, name: str, args: OpenCostArgs, opts: pulumi.ResourceOptions | None = None):
        showback = section(ShowbackConfig, args.get("showback", {}), component="OpenCost", name=name, field="showback")
        side = args["side"]
        if side not in ("onprem", "eks"):
            raise ValueError(f"OpenCost {name!r}: input `side` is {side!r}; use `onprem` or `eks`")
        values = opencost_values(showback, "onprem" if side == "onprem" else "eks", args["cluster_name"], args.get("gpu_usd_per_hour"))
        namespace, provider = showback.namespace, args["provider"]
        own, depends_on = component_options("hybridgpu:showback:OpenCost", opts)
        super().__init__(type_token("OpenCost"), name, None, own)
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


def build_opencost(stack: Stack, side: Literal["onprem", "eks"], cluster_name: str, provider: k8s.Provider,
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
    args = OpenCostArgs(showback=as_input(economics.showback), side=side, cluster_name=cluster_name, provider=provider)
    if price is not None:
        args["gpu_usd_per_hour"] = price
    return OpenCost(f"{cluster_name}-opencost", args, pulumi.ResourceOptions(depends_on=depends_on))
