"""GPU NodePools component: Karpenter EC2NodeClasses and NodePools from config.

Creates one ``kubernetes:karpenter.k8s.aws/v1:EC2NodeClass`` per node class and one
``kubernetes:karpenter.sh/v1:NodePool`` per pool, rendered by
:mod:`hybridgpu.render.karpenter`, after the Karpenter Helm release (whose CRD chart defines
these kinds). EFA node classes get ``networkInterfaces`` with the interface count derived from the
catalog and their pools the ``hybridgpu.io/efa`` template label (:mod:`hybridgpu.render.efa`).
A pool with ``replicas`` is rendered static (``spec.replicas``, no weight or limits); a pool with
``capacityBuffer`` also gets a ``v1`` PodTemplate and an ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer in the
Karpenter namespace, after its NodePool (:mod:`hybridgpu.render.karpenter_static`).
"""

from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.catalog import load_catalog
from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import CloudConfigArgs, NvidiaConfigArgs
from hybridgpu.config.models import CloudConfig, NodeClassConfig
from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.render.efa import derived_efa_interfaces, efa_nodepool_labels
from hybridgpu.render.karpenter import capacity_block_ids, render_ec2_nodeclass, render_nodepool, resolve_instance_types
from hybridgpu.render.karpenter_static import capacity_buffer_manifests
from hybridgpu.render.nvidia import nodepool_extra_limits, nodepool_labels


class GpuNodePoolsArgs(TypedDict):
    """Inputs of :class:`GpuNodePools`."""

    cloud: CloudConfigArgs
    """The ``hybridgpu:cloud`` section (its ``nodeClasses`` and ``nodePools``; instance families resolve through the packaged GPU catalog)."""
    cluster_name: str
    """EKS cluster name (the ``karpenter.sh/discovery`` tag value the node classes select)."""
    node_role_name: pulumi.Input[str]
    """Name of the Karpenter node role (the Karpenter component's ``nodeRoleName``)."""
    cost_tags: NotRequired[dict[str, str]]
    """Cost tags merged into every EC2NodeClass's ``spec.tags``. Default: none."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    nvidia: NotRequired[NvidiaConfigArgs]
    """The ``hybridgpu:nvidia`` section: adds the ``nvidia.com/mig.config`` / ``device-plugin.config`` template labels and, with NodeOverlays on, limits on the advertised MIG/shared resources. Default: none."""


class GpuNodePools(pulumi.ComponentResource):
    """Karpenter GPU capacity of the cloud cluster (``hybridgpu:index:GpuNodePools``).

    Args:
        name: logical name prefix of the children.
        args: :class:`GpuNodePoolsArgs`.
        opts: resource options. ``depends_on``: what every object waits for (the Karpenter
            component or its release: its CRD chart defines these kinds).

    Attributes:
        node_classes: ``{name: CustomResource}``; node_pools: ``{name: CustomResource}``;
        buffers: ``{pool name: CustomResource}`` (the CapacityBuffers).
    """

    def __init__(self, name: str, args: GpuNodePoolsArgs, opts: pulumi.ResourceOptions | None = None):
        config = section(CloudConfig, args["cloud"], component="GpuNodePools", name=name, field="cloud")
        raw_nvidia = args.get("nvidia")
        nvidia = section(NvidiaConfig, raw_nvidia, component="GpuNodePools", name=name, field="nvidia") if raw_nvidia is not None else None
        cluster_name, node_role_name, provider = args["cluster_name"], args["node_role_name"], args["provider"]
        cost_tags = dict(args.get("cost_tags") or {})
        catalog = load_catalog()
        own, waits = component_options("hybridgpu:cloud:GpuNodePools", opts)
        super().__init__(type_token("GpuNodePools"), name, None, own)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(waits))
        self.node_classes: dict[str, k8s.apiextensions.CustomResource] = {}
        for node_class in config.node_classes:
            efa_count = derived_efa_interfaces(node_class, config, catalog)

            def nodeclass_doc(role: str, nc: NodeClassConfig = node_class, n: int | None = efa_count) -> dict[str, Any]:
                return render_ec2_nodeclass(
                    nc, cluster_name=cluster_name, node_role_name=role, cost_tags=cost_tags, efa_interfaces=n,
                    capacity_block_ids=capacity_block_ids(nc.name, config.node_pools),
                )

            manifest = pulumi.Output.from_input(node_role_name).apply(nodeclass_doc)
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
            pool_doc = render_nodepool(pool, catalog, extra_labels=labels, extra_limits=limits)
            self.node_pools[pool.name] = k8s.apiextensions.CustomResource(
                f"{name}-nodepool-{pool.name}",
                api_version=pool_doc["apiVersion"],
                kind=pool_doc["kind"],
                metadata=pool_doc["metadata"],
                spec=pool_doc["spec"],
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=provider,
                    depends_on=[*waits, self.node_classes[pool.node_class]],
                ),
            )
        self.buffers: dict[str, k8s.apiextensions.CustomResource] = {}
        for pool in config.node_pools:
            per_node = min((t.gpu_count for t in resolve_instance_types(pool, catalog)), default=0)
            docs = capacity_buffer_manifests(
                pool, namespace=config.karpenter.namespace, gpus_per_node=per_node, cost_labels=cost_tags
            ) if pool.capacity_buffer else []
            if not docs:
                continue
            template_doc, buffer_doc = docs
            template = k8s.core.v1.PodTemplate(
                f"{name}-buffer-template-{pool.name}",
                metadata=template_doc["metadata"],
                template=template_doc["template"],
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(waits)),
            )
            self.buffers[pool.name] = k8s.apiextensions.CustomResource(
                f"{name}-buffer-{pool.name}",
                api_version=buffer_doc["apiVersion"],
                kind=buffer_doc["kind"],
                metadata=buffer_doc["metadata"],
                spec=buffer_doc["spec"],
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*waits, template, self.node_pools[pool.name]]),
            )
        self.register_outputs({"node_classes": sorted(self.node_classes), "node_pools": sorted(self.node_pools), "buffers": sorted(self.buffers)})
