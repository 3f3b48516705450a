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

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.k8s import POD_SECURITY_AUDIT_LABEL, POD_SECURITY_ENFORCE_LABEL, POD_SECURITY_WARN_LABEL, managed_by_labels
from hybridgpu.render.network_operator import (
    NETWORK_OPERATOR_CHART,
    NETWORK_OPERATOR_NAMESPACE,
    NETWORK_OPERATOR_REPO,
    NETWORK_OPERATOR_VERSION,
    RdmaPlan,
    network_operator_values,
    nic_cluster_policy,
)


class NetworkOperator(pulumi.ComponentResource):
    """The NVIDIA Network Operator and the NicClusterPolicy of an on-prem site.

    Args:
        name: logical name prefix of the children (``<site>-onprem-network``).
        plan: the site's RDMA plan (fabrics, their NICs and resources, OFED source).
        provider: Kubernetes provider of the on-prem cluster.
        nfd_from_gpu_operator: the GPU Operator runs NFD: ours stays off and the release waits for it
            (``depends_on`` must then hold the GPU Operator's release: it installs the NodeFeatureRule CRD).
        depends_on: resources to wait for (the CNI release; the GPU Operator release).
        opts: resource options.

    Attributes:
        release: the Helm release.
        policy: the NicClusterPolicy custom resource.
    """

    def __init__(
        self,
        name: str,
        plan: RdmaPlan,
        provider: k8s.Provider,
        *,
        nfd_from_gpu_operator: bool,
        depends_on: list[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("hybridgpu:onprem:NetworkOperator", name, None, opts)
        deps = list(depends_on or [])
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
