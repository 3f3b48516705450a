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

from typing import TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from hybridgpu.burst.eks_tas import efa_tas_manifests
from hybridgpu.catalog import load_catalog
from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import CloudConfigArgs
from hybridgpu.config.models import CloudConfig
from hybridgpu.render.efa import (
    EFA_DEVICE_PLUGIN_CHART,
    EFA_DEVICE_PLUGIN_NAMESPACE,
    EFA_DEVICE_PLUGIN_REPO,
    EFA_DEVICE_PLUGIN_VERSION,
    efa_device_plugin_values,
)


class EfaArgs(TypedDict):
    """Inputs of :class:`Efa`."""

    cloud: CloudConfigArgs
    """The ``hybridgpu:cloud`` section, with at least one NodePool on a node class with ``efa.enabled``."""
    node_security_group_id: pulumi.Input[str]
    """The security group Karpenter's nodes join (the EksCluster's ``clusterSecurityGroupId``)."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class Efa(pulumi.ComponentResource):
    """The EFA security-group rule and device plugin of an EKS cluster with EFA NodePools (``hybridgpu:index:Efa``).

    Args:
        name: logical name prefix of the children.
        args: :class:`EfaArgs`.
        opts: resource options (pass the AWS provider through ``providers``). ``depends_on``: what
            the device plugin's release waits for (Karpenter: nodes exist only after it).

    Attributes:
        release: the device plugin's Helm release.

    Raises:
        ValueError: no NodePool has EFA (the program creates the component only when one has).
    """

    def __init__(self, name: str, args: EfaArgs, opts: pulumi.ResourceOptions | None = None):
        config = section(CloudConfig, args["cloud"], component="Efa", name=name, field="cloud")
        node_security_group_id, provider = args["node_security_group_id"], args["provider"]
        values = efa_device_plugin_values(config, load_catalog())
        if values is None:
            raise ValueError(f"Efa {name!r}: input `cloud` has no NodePool whose node class has `efa.enabled: true`; add one or leave the Efa component out")
        own, depends_on = component_options("hybridgpu:cloud:Efa", opts)
        super().__init__(type_token("Efa"), name, None, own)
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


class EfaQueuesArgs(TypedDict):
    """Inputs of :class:`EfaQueues`."""

    cloud: CloudConfigArgs
    """The ``hybridgpu:cloud`` section (its EFA NodePools)."""
    namespaces: list[str]
    """Namespaces of the LocalQueues (the burst plan's for this cluster; created by the KueueCluster)."""
    prefix: str
    """The burst plan's Kueue name prefix."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class EfaQueues(pulumi.ComponentResource):
    """Kueue topology-aware queues of the EFA NodePools (``hybridgpu:index:EfaQueues``; see the module docstring).

    Args:
        name: logical name prefix of the children.
        args: :class:`EfaQueuesArgs`.
        opts: resource options. ``depends_on``: what every object waits for (the KueueCluster: its
            release installs the CRDs; its namespaces hold the LocalQueues).

    Attributes:
        objects: the created Kueue objects by ``<kind>/<namespace/>name``.
    """

    def __init__(self, name: str, args: EfaQueuesArgs, opts: pulumi.ResourceOptions | None = None):
        config = section(CloudConfig, args["cloud"], component="EfaQueues", name=name, field="cloud")
        namespaces, prefix, provider = tuple(args["namespaces"]), args["prefix"], args["provider"]
        own, depends_on = component_options("hybridgpu:cloud:EfaQueues", opts)
        super().__init__(type_token("EfaQueues"), name, None, own)
        self.objects: dict[str, k8s.apiextensions.CustomResource] = {}
        for doc in efa_tas_manifests(config, load_catalog(), namespaces, prefix):
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
