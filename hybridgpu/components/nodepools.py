"""GPU NodePools component: Karpenter EC2NodeClasses and NodePools from config.

Creates one ``kubernetes:karpenter.k8s.aws/v1:EC2NodeClass`` per node class and one
``kubernetes:karpenter.sh/v1:NodePool`` per pool, rendered by
:mod:`hybridgpu.render.karpenter`, after the Karpenter Helm release (whose CRD chart defines
these kinds). EFA node classes get ``networkInterfaces`` with the interface count derived from the
catalog and their pools the ``hybridgpu.io/efa`` template label (:mod:`hybridgpu.render.efa`).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.catalog import Catalog
from hybridgpu.config.models import CloudConfig
from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.render.efa import derived_efa_interfaces, efa_nodepool_labels
from hybridgpu.render.karpenter import render_ec2_nodeclass, render_nodepool, resolve_instance_types
from hybridgpu.render.nvidia import nodepool_extra_limits, nodepool_labels


class GpuNodePools(pulumi.ComponentResource):
    """Karpenter GPU capacity of the cloud cluster.

    Args:
        name: logical name prefix of the children.
        config: validated cloud config (its ``nodeClasses`` and ``nodePools``).
        catalog: GPU instance catalog (resolves families to explicit instance types).
        cluster_name: EKS cluster name (discovery tag value).
        node_role_name: ``Output[str]`` name of the Karpenter node role.
        cost_tags: the stack's cost tags, merged into every EC2NodeClass's ``spec.tags``.
        provider: Kubernetes provider of the cluster.
        karpenter_release: the Karpenter Helm release the objects wait for.
        nvidia: the NVIDIA section (adds `nvidia.com/mig.config` / `device-plugin.config` template
            labels, and with NodeOverlays on, limits on the advertised MIG/shared resources).
        opts: resource options.

    Attributes:
        node_classes: ``{name: CustomResource}``; node_pools: ``{name: CustomResource}``.
    """

    def __init__(
        self,
        name: str,
        config: CloudConfig,
        catalog: Catalog,
        cluster_name: str,
        node_role_name: pulumi.Input[str],
        cost_tags: dict[str, str],
        provider: k8s.Provider,
        karpenter_release: pulumi.Resource,
        nvidia: NvidiaConfig | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("hybridgpu:cloud:GpuNodePools", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[karpenter_release])
        self.node_classes: dict[str, k8s.apiextensions.CustomResource] = {}
        for node_class in config.node_classes:
            efa_count = derived_efa_interfaces(node_class, config, catalog)
            manifest = pulumi.Output.from_input(node_role_name).apply(
                lambda role, nc=node_class, n=efa_count: render_ec2_nodeclass(
                    nc, cluster_name=cluster_name, node_role_name=role, cost_tags=cost_tags, efa_interfaces=n
                )
            )
            self.node_classes[node_class.name] = k8s.apiextensions.CustomResource(
                f"{name}-nodeclass-{node_class.name}",
                api_version="karpenter.k8s.aws/v1",
                kind="EC2NodeClass",
                metadata=manifest.apply(lambda m: m["metadata"]),
                spec=manifest.apply(lambda m: m["spec"]),
                opts=k8s_opts,
            )
        self.node_pools: dict[str, k8s.apiextensions.CustomResource] = {}
        for pool in config.node_pools:
            labels = {**(nodepool_labels(nvidia, pool.name) if nvidia else {}), **efa_nodepool_labels(pool, config)}
            limits = {}
            if nvidia and config.karpenter.node_overlay:
                gpus = [t.gpu_count for t in resolve_instance_types(pool, catalog)]
                limits = nodepool_extra_limits(nvidia, pool.name, pool.gpu_limit or 0, gpus)
            manifest = render_nodepool(pool, catalog, extra_labels=labels, extra_limits=limits)
            self.node_pools[pool.name] = k8s.apiextensions.CustomResource(
                f"{name}-nodepool-{pool.name}",
                api_version=manifest["apiVersion"],
                kind=manifest["kind"],
                metadata=manifest["metadata"],
                spec=manifest["spec"],
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=provider,
                    depends_on=[karpenter_release, self.node_classes[pool.node_class]],
                ),
            )
        self.register_outputs({"node_classes": sorted(self.node_classes), "node_pools": sorted(self.node_pools)})
