"""NVIDIA Network Operator component: RDMA for pods on the on-prem fabric hosts.

Creates, through the on-prem cluster's Kubernetes provider, when some inventory host is on an
RDMA fabric (:func:`hybridgpu.render.network_operator.rdma_plan` is not None):

* the namespace ``nvidia-network-operator`` (Pod Security ``privileged``: the RDMA shared device
  plugin and the DOCA driver container need host access);
* the ``network-operator`` Helm release (pinned chart, values from
  :func:`~hybridgpu.render.network_operator.network_operator_values`); its ``crds/`` install the
  NicClusterPolicy CRD;
* the ``NicClusterPolicy`` ``nic-cluster-policy``
  (:func:`~hybridgpu.render.network_operator.nic_cluster_policy`), after the release: the CRD must
  exist before the custom resource (pulumi-kubernetes ``provider/pkg/await/await.go`` retries "no
  matches for kind" a few times and fails; checked by :mod:`hybridgpu.shell.crds`).

Everything is rendered by the pure core; this component only turns it into resources.
"""

from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

import hybridgpu.render.network_operator as rdma_render
from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import RdmaPlanArgs
from hybridgpu.k8s import POD_SECURITY_AUDIT_LABEL, POD_SECURITY_ENFORCE_LABEL, POD_SECURITY_WARN_LABEL, managed_by_labels
from hybridgpu.render.network_operator import (
    NETWORK_OPERATOR_CHART,
    NETWORK_OPERATOR_NAMESPACE,
    NETWORK_OPERATOR_REPO,
    NETWORK_OPERATOR_VERSION,
    network_operator_values,
    nic_cluster_policy,
)


class NetworkOperatorArgs(TypedDict):
    """Inputs of :class:`NetworkOperator`."""

    plan: RdmaPlanArgs
    """The site's RDMA plan: fabrics, their NICs and extended resources, where OFED comes from (``hybridgpu.render.network_operator.rdma_plan`` of the inventory)."""
    provider: k8s.Provider
    """Kubernetes provider of the on-prem cluster."""
    nfd_from_gpu_operator: NotRequired[bool]
    """The GPU Operator runs NFD: ours stays off (``dependsOn`` must then hold the GPU Operator: it installs the NodeFeatureRule CRD). Default: false."""


class NetworkOperator(pulumi.ComponentResource):
    """The NVIDIA Network Operator and the NicClusterPolicy of an on-prem site (``hybridgpu:index:NetworkOperator``).

    Args:
        name: logical name prefix of the children (``<site>-onprem-network``).
        args: :class:`NetworkOperatorArgs`.
        opts: resource options. ``depends_on``: what the namespace and release wait for (the CNI
            release; the GPU Operator release).

    Attributes:
        release: the Helm release.
        policy: the NicClusterPolicy custom resource.
    """

    def __init__(self, name: str, args: NetworkOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        plan = section(rdma_render.RdmaPlan, args["plan"], component="NetworkOperator", name=name, field="plan")
        provider, nfd_from_gpu_operator = args["provider"], bool(args.get("nfd_from_gpu_operator", False))
        own, deps = component_options("hybridgpu:onprem:NetworkOperator", opts)
        super().__init__(type_token("NetworkOperator"), name, None, own)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": NETWORK_OPERATOR_NAMESPACE,
                "labels": {
                    **managed_by_labels(),
                    POD_SECURITY_ENFORCE_LABEL: "privileged",
                    POD_SECURITY_AUDIT_LABEL: "privileged",
                    POD_SECURITY_WARN_LABEL: "privileged",
                },
            },
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=deps),
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-operator",
            name=NETWORK_OPERATOR_CHART,
            chart=NETWORK_OPERATOR_CHART,
            version=NETWORK_OPERATOR_VERSION,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=NETWORK_OPERATOR_REPO),
            namespace=NETWORK_OPERATOR_NAMESPACE,
            values=network_operator_values(nfd_from_gpu_operator=nfd_from_gpu_operator),
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace, *deps]),
        )
        doc = nic_cluster_policy(plan)
        self.policy = k8s.apiextensions.CustomResource(
            f"{name}-nic-cluster-policy",
            api_version=doc["apiVersion"],
            kind=doc["kind"],
            metadata=doc["metadata"],
            spec=doc["spec"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.release]),
        )
        self.register_outputs({"fabrics": [f.fabric for f in plan.fabrics], "resources": [f.resource for f in plan.fabrics]})
