"""EFA component: what EFA NodePools need besides their EC2NodeClass (created only when a NodePool has EFA).

Creates:

* an egress rule on the node security group (the EKS cluster security group, which every EC2NodeClass
  selects by the ``karpenter.sh/discovery`` tag): all traffic to the security group itself. The EFA user
  guide requires an EFA security group to "allow all inbound and outbound traffic to and from the security
  group itself" (EC2 User Guide, "Get started with EFA and NCCL", step "Prepare an EFA-enabled security
  group", read 2026-11-24). The EKS cluster security group comes with the inbound half (all traffic from
  itself) and an outbound rule to ``0.0.0.0/0`` only (EKS User Guide, "Amazon EKS security group
  requirements", default rules, read 2026-11-24); a second identical inbound rule would fail with
  ``InvalidPermission.Duplicate``, so only the outbound self rule is added;
* the ``aws-efa-k8s-device-plugin`` Helm release (aws/eks-charts, pinned in
  :data:`hybridgpu.render.efa.EFA_DEVICE_PLUGIN_VERSION`) with the values of
  :func:`hybridgpu.render.efa.efa_device_plugin_values`: it runs on the EFA NodePools' nodes only and
  advertises ``vpc.amazonaws.com/efa`` there.

:class:`EfaQueues` creates, on an EKS cluster that runs Kueue as the burst plan's cloud worker, the Kueue
Topology ``eks`` and each EFA pool's TAS ResourceFlavor, ClusterQueue and LocalQueues
(:func:`hybridgpu.burst.eks_tas.efa_tas_manifests`), after the Kueue release and the plan's namespaces.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from hybridgpu.burst.eks_tas import efa_tas_manifests
from hybridgpu.catalog import Catalog
from hybridgpu.config.models import CloudConfig
from hybridgpu.render.efa import (
    EFA_DEVICE_PLUGIN_CHART,
    EFA_DEVICE_PLUGIN_NAMESPACE,
    EFA_DEVICE_PLUGIN_REPO,
    EFA_DEVICE_PLUGIN_VERSION,
    efa_device_plugin_values,
)


class Efa(pulumi.ComponentResource):
    """The EFA security-group rule and device plugin of an EKS cluster with EFA NodePools.

    Args:
        name: logical name prefix of the children.
        config: the validated cloud section (at least one NodePool on a node class with EFA).
        catalog: the instance catalog (the EFA pools' instance types).
        node_security_group_id: the security group Karpenter's nodes join (the EKS cluster security group).
        provider: Kubernetes provider of the cluster.
        depends_on: resources the release waits for (the Karpenter release: nodes exist only after it).
        opts: resource options (pass the AWS provider through ``providers``).

    Attributes:
        release: the device plugin's Helm release.

    Raises:
        ValueError: no NodePool has EFA (the program creates the component only when one has).
    """

    def __init__(
        self,
        name: str,
        config: CloudConfig,
        catalog: Catalog,
        node_security_group_id: pulumi.Input[str],
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("hybridgpu:cloud:Efa", name, None, opts)
        values = efa_device_plugin_values(config, catalog)
        if values is None:
            raise ValueError("the Efa component needs a NodePool whose node class has `efa.enabled: true`")
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-sg-egress-self",
            security_group_id=node_security_group_id,
            referenced_security_group_id=node_security_group_id,
            ip_protocol="-1",
            description="EFA: all traffic to the node security group itself (EFA user guide)",
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-device-plugin",
            name=EFA_DEVICE_PLUGIN_CHART,
            chart=EFA_DEVICE_PLUGIN_CHART,
            version=EFA_DEVICE_PLUGIN_VERSION,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=EFA_DEVICE_PLUGIN_REPO),
            namespace=EFA_DEVICE_PLUGIN_NAMESPACE,
            values=values,
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or [])),
        )
        self.register_outputs({"release": self.release.name})


class EfaQueues(pulumi.ComponentResource):
    """Kueue topology-aware queues of the EFA NodePools (see the module docstring).

    Args:
        name: logical name prefix of the children.
        config: the validated cloud section.
        catalog: the instance catalog.
        namespaces: namespaces of the LocalQueues (the burst cluster plan's; created by the Kueue component).
        prefix: the burst plan's Kueue name prefix.
        provider: Kubernetes provider of the cluster.
        depends_on: the Kueue component (its release installs the CRDs; its namespaces hold the LocalQueues).
        opts: resource options.

    Attributes:
        objects: the created Kueue objects by ``<kind>/<namespace/>name``.
    """

    def __init__(
        self,
        name: str,
        config: CloudConfig,
        catalog: Catalog,
        namespaces: tuple[str, ...],
        prefix: str,
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("hybridgpu:cloud:EfaQueues", name, None, opts)
        self.objects: dict[str, k8s.apiextensions.CustomResource] = {}
        for doc in efa_tas_manifests(config, catalog, namespaces, prefix):
            meta = doc["metadata"]
            key = f"{doc['kind']}/{meta['namespace'] + '/' if 'namespace' in meta else ''}{meta['name']}"
            # Topology before the flavors that name it, flavors before the queues (pulumi-kubernetes applies in any order otherwise).
            deps = [*(depends_on or []), *self.objects.values()] if doc["kind"] != "Topology" else list(depends_on or [])
            self.objects[key] = k8s.apiextensions.CustomResource(
                f"{name}-{doc['kind'].lower()}-{key.split('/', 1)[1].replace('/', '-')}",
                api_version=doc["apiVersion"],
                kind=doc["kind"],
                metadata=meta,
                spec=doc["spec"],
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=deps),
            )
        self.register_outputs({"objects": sorted(self.objects)})
