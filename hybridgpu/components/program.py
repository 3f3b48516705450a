"""The Pulumi program: read the stack config into typed models, then build the components.

Runs unchanged under ``pulumi up`` (the CLI supplies the config) and under the offline
preview (``hybridgpu preview``, which supplies the same config through Pulumi's runtime and
mocks the providers). Configuration errors stop the program with a message that names the
stack file, the key path and the fix, before any resource is registered.

Burst outputs (stacks with ``hybridgpu:burst``): ``burst_role``, and on workers
``burst_worker_kubeconfig`` (secret, exec-free; the manager reads it through a StackReference).
On-prem outputs: ``onprem_kubeconfig`` (secret), ``onprem_hosts``, ``onprem_skipped_hosts``,
``onprem_gpus``. Cloud outputs (flat, prefixed names): ``cluster_name``, ``cluster_endpoint``, ``kubeconfig``
(secret), ``vpc_id``, ``private_subnet_ids``, ``karpenter_queue_url``,
``karpenter_node_role_arn``, ``karpenter_controller_role_arn``, ``nodepools`` (per pool: GPU
limit, capacity types, weight, instance types, most instances, USD/hour ceiling); with
``hybridgpu:cloud.storage``: ``fsx_file_system_id``, ``fsx_dns_name``.
"""

from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi.runtime import config as runtime_config

from hybridgpu.catalog import load_catalog
from hybridgpu.config.aws_names import CloudNames
from hybridgpu.errors import StackConfigError
from hybridgpu.components.base import as_input
from hybridgpu.components.efa import Efa, EfaArgs, EfaQueues, EfaQueuesArgs
from hybridgpu.components.eks import EksCluster, EksClusterArgs
from hybridgpu.components.karpenter import Karpenter, KarpenterArgs
from hybridgpu.components.kueue import WORKER_KUBECONFIG_OUTPUT, KueueCluster, KueueClusterArgs
from hybridgpu.components.network import Network, NetworkArgs
from hybridgpu.components.nodepools import GpuNodePools, GpuNodePoolsArgs
from hybridgpu.components.nvidia import NvidiaLayer, NvidiaLayerArgs
from hybridgpu.components.network_operator import NetworkOperator, NetworkOperatorArgs
from hybridgpu.render.network_operator import gpu_operator_rdma_values, rdma_plan
from hybridgpu.render.gpu_health import gpu_operator_dcgm_values
from hybridgpu.render.charts import helm_merge
from hybridgpu.render.upgrade import gpu_operator_driver_upgrade_values
from hybridgpu.components.opencost import build_opencost
from hybridgpu.components.onprem import OnPremCluster, OnPremClusterArgs, chart_mirror_transformation
from hybridgpu.components.platform import PlatformTarget, build_platform
from hybridgpu.components.storage import FsxLustre, FsxLustreArgs, TrainingData, TrainingDataArgs
from hybridgpu.render.storage import FSX_CSI_CHART, FSX_CSI_REPO, NFS_CSI_CHART, NFS_CSI_REPO, fsx_csi_values, fsx_volume, nfs_csi_values, nfs_volume
from hybridgpu.stack.storage import storage_namespaces
from hybridgpu.stack.load import Stack, runtime_stack
from hybridgpu.render.efa import efa_pools
from hybridgpu.render.karpenter import resolve_instance_types, summarize_nodepool
from hybridgpu.render.nvidia import node_overlays
from hybridgpu.k8s import STACK_TAG


def runtime_values() -> dict[str, Any]:
    """Every config value the Pulumi runtime holds for this stack (``ns:key`` -> value string).

    The Python language host passes the stack's config as the ``PULUMI_CONFIG`` JSON bag; values
    set in-process (mocks, the offline preview) take precedence.
    """
    values: dict[str, Any] = dict(runtime_config.get_config_env())
    values.update(runtime_config.CONFIG.get())
    return values


def read_stack() -> Stack:
    """The validated current stack, from the config the Pulumi runtime holds.

    Pulumi runs the program in the project directory, so relative paths (inventories, burst
    plans) start there. Validated once: the offline preview hands over the stack it validated.

    Raises:
        pulumi.RunError: the configuration is invalid (message lists every problem).
    """
    stack = pulumi.get_stack()
    file = f"stacks/Pulumi.{stack}.yaml"
    try:
        return runtime_stack(runtime_values(), stack=stack, file=file)
    except StackConfigError as exc:
        raise pulumi.RunError(str(exc)) from None


def build_onprem(stack: Stack):
    """The on-prem cluster of the stack: kubeadm over SSH, Cilium, and the NVIDIA layer; returns the OnPremCluster."""
    config, inventory, plan = stack.config, stack.inventory, stack.onprem_plan
    # Validation rendered the plan (kubeadm configs and scripts); it is not rendered again here.
    assert config.onprem is not None and inventory is not None and plan is not None
    site = inventory.site.name
    if inventory.site.mirrors is not None and inventory.site.mirrors.charts:  # every release after this from the site's chart mirrors
        pulumi.runtime.register_stack_transformation(chart_mirror_transformation(inventory.site.mirrors))
    cluster = OnPremCluster(f"{site}-onprem", OnPremClusterArgs(plan=as_input(plan), cilium_version=config.onprem.cilium_version))
    rdma = rdma_plan(inventory)
    nvidia_layer = None
    if config.nvidia is not None:
        nvidia = config.nvidia.model_copy(update={"mig_layouts": [*config.nvidia.mig_layouts, *plan.mig_layouts], "node_pools": {}})
        gpudirect = gpu_operator_rdma_values(rdma, driver=nvidia.driver) if nvidia.install == "gpu-operator" else {}
        if nvidia.install == "gpu-operator":  # the standalone DCGM the GPU health detector reads (hybridgpu.render.gpu_health)
            gpudirect = {**gpudirect, **gpu_operator_dcgm_values(inventory.site.remediation)}
        if nvidia.install == "gpu-operator" and nvidia.driver == "operator":  # driver.upgradePolicy (inventory upgrades.gpuDriver)
            gpudirect = helm_merge(gpudirect, gpu_operator_driver_upgrade_values(inventory.site.upgrades))
        nvidia_layer = NvidiaLayer(
            f"{site}-onprem-nvidia",
            NvidiaLayerArgs(nvidia=as_input(nvidia), provider=cluster.provider, gpu_operator_extra=gpudirect),
            pulumi.ResourceOptions(depends_on=[cluster.cni]),
        )
        build_gpu_health(site, inventory.site.remediation, nvidia, nvidia_layer, cluster.provider)
    if rdma is not None:
        nfd_ours = nvidia_layer is not None and config.nvidia is not None and config.nvidia.install == "gpu-operator"
        NetworkOperator(
            f"{site}-onprem-network",
            NetworkOperatorArgs(plan=as_input(rdma), provider=cluster.provider, nfd_from_gpu_operator=nfd_ours),
            pulumi.ResourceOptions(depends_on=[cluster.cni, *(nvidia_layer.releases.values() if nvidia_layer is not None else ())]),
        )
    build_opencost(stack, "onprem", site, cluster.provider, depends_on=[cluster.cni])
    pulumi.export("onprem_kubeconfig", cluster.kubeconfig)
    pulumi.export("onprem_hosts", [step.hostname for step in plan.steps])
    pulumi.export("onprem_skipped_hosts", list(plan.skipped))
    pulumi.export("onprem_gpus", plan.gpus)
    return cluster


def build_gpu_health(site: str, policy: Any, nvidia: Any, nvidia_layer: NvidiaLayer, provider: Any) -> None:
    """NVIDIA NVSentinel on the on-prem cluster for ``remediation.detector: nvsentinel`` (a child of the NVIDIA layer); nothing otherwise."""
    if policy is None or policy.detector != "nvsentinel" or nvidia.install != "gpu-operator":
        return
    import pulumi_kubernetes as k8s

    from hybridgpu.render.gpu_health import NVSENTINEL_CHART, NVSENTINEL_NAMESPACE, NVSENTINEL_VERSION, nvsentinel_values

    k8s.helm.v3.Release(
        f"{site}-onprem-nvsentinel",
        name="nvsentinel",
        chart=NVSENTINEL_CHART,
        version=NVSENTINEL_VERSION,
        namespace=NVSENTINEL_NAMESPACE,
        create_namespace=True,
        values=nvsentinel_values(policy, gpu_operator_namespace=nvidia.namespace),
        atomic=True,
        opts=pulumi.ResourceOptions(parent=nvidia_layer, provider=provider, depends_on=list(nvidia_layer.releases.values())),
    )


def main() -> None:
    """Build the stack: validate config first, then network, EKS, Karpenter and GPU NodePools."""
    stack = read_stack()
    config = stack.config
    catalog = load_catalog()
    pulumi.export("environment", config.environment.value)
    onprem_cluster = build_onprem(stack) if config.onprem is not None else None
    if config.cloud is None:
        kueue = build_burst(stack, onprem=onprem_cluster) if config.burst is not None else None
        build_onprem_storage(stack, onprem_cluster, kueue)
        if onprem_cluster is not None and stack.inventory is not None:
            deps = [onprem_cluster.cni, *([kueue] if kueue is not None else [])]
            build_platform(stack, PlatformTarget("onprem", stack.inventory.site.name, onprem_cluster.provider, deps))
        return
    cloud = config.cloud
    assert config.region is not None  # checked by the config checks
    cluster_name = cloud.cluster.name
    # Cost tags plus the stack name: on every AWS resource (provider default tags) and on the
    # instances and volumes that node groups and Karpenter launch (default tags don't reach those).
    cost_tags = {**config.tags, STACK_TAG: config.stack}

    provider = aws.Provider("aws", region=config.region, default_tags=aws.ProviderDefaultTagsArgs(tags=cost_tags))
    aws_opts = pulumi.ResourceOptions(providers={"aws": provider})
    names = CloudNames(cluster_name)
    network = Network(names.network, NetworkArgs(network=as_input(cloud.network), cluster_name=cluster_name), opts=aws_opts)
    eks = EksCluster(
        names.eks,
        EksClusterArgs(
            cluster=as_input(cloud.cluster),
            system_node_group=as_input(cloud.system_node_group),
            node_repair=as_input(cloud.karpenter.node_repair),
            subnet_ids=network.private_subnet_ids,
            region=config.region,
            cost_tags=cost_tags,
        ),
        opts=aws_opts,
    )
    karpenter = Karpenter(
        names.karpenter,
        KarpenterArgs(karpenter=as_input(cloud.karpenter), cluster_name=cluster_name, region=config.region, provider=eks.provider),
        opts=pulumi.ResourceOptions.merge(aws_opts, pulumi.ResourceOptions(depends_on=eks.access_ready)),
    )
    after_karpenter = pulumi.ResourceOptions(depends_on=[karpenter.release])
    pools_args = GpuNodePoolsArgs(
        cloud=as_input(cloud), cluster_name=cluster_name, node_role_name=karpenter.node_role_name, cost_tags=cost_tags, provider=eks.provider
    )
    if config.nvidia is not None:
        pools_args["nvidia"] = as_input(config.nvidia)
    GpuNodePools(f"{cluster_name}-gpu", pools_args, after_karpenter)
    if efa_pools(cloud):
        Efa(
            names.efa,
            EfaArgs(cloud=as_input(cloud), node_security_group_id=eks.cluster_security_group_id, provider=eks.provider),
            opts=pulumi.ResourceOptions.merge(aws_opts, after_karpenter),
        )
    if config.nvidia is not None:
        overlays = []
        if cloud.karpenter.node_overlay:
            pools = {p.name: [(t.name, t.gpu_count) for t in resolve_instance_types(p, catalog)] for p in cloud.node_pools}
            overlays = node_overlays(config.nvidia, pools)
        NvidiaLayer(
            f"{cluster_name}-nvidia", NvidiaLayerArgs(nvidia=as_input(config.nvidia), provider=eks.provider, node_overlays=overlays), after_karpenter
        )
    build_opencost(stack, "eks", cluster_name, eks.provider, depends_on=[karpenter.release])

    pulumi.export("cluster_name", eks.cluster_name)
    pulumi.export("cluster_endpoint", eks.endpoint)
    pulumi.export("kubeconfig", eks.kubeconfig)
    pulumi.export("vpc_id", network.vpc_id)
    pulumi.export("private_subnet_ids", network.private_subnet_ids)
    pulumi.export("karpenter_queue_url", karpenter.queue_url)
    pulumi.export("karpenter_node_role_arn", karpenter.node_role_arn)
    pulumi.export("karpenter_controller_role_arn", karpenter.controller_role_arn)
    # Flat fields and tuples of names: the tuples become lists, as a stack output holds them.
    summaries = (vars(summarize_nodepool(p, catalog)) for p in cloud.node_pools)
    pulumi.export("nodepools", {s["name"]: {k: list(v) if isinstance(v, tuple) else v for k, v in s.items()} for s in summaries})
    kueue = build_burst(stack, eks=eks, onprem=onprem_cluster, depends_on=[karpenter.release]) if config.burst is not None else None
    if kueue is not None and stack.burst_plan is not None and stack.burst_plan.clusters[config.stack].role == "cloud-worker" and efa_pools(cloud):
        worker = stack.burst_plan.clusters[config.stack]
        EfaQueues(
            f"{names.efa}-queues",
            EfaQueuesArgs(cloud=as_input(cloud), namespaces=list(worker.namespaces), prefix=stack.burst_plan.source.kueue.prefix, provider=eks.provider),
            pulumi.ResourceOptions(depends_on=[kueue]),
        )
    build_onprem_storage(stack, onprem_cluster, kueue)
    if cloud.storage is not None:
        build_cloud_storage(stack, network, eks, karpenter.release, kueue, aws_opts)
    build_platform(
        stack, PlatformTarget("eks", cluster_name, eks.provider, [karpenter.release, *([kueue] if kueue is not None else [])], aws_opts=aws_opts, eks=eks)
    )


def build_cloud_storage(
    stack: Stack, network: Network, eks: EksCluster, karpenter_release: pulumi.Resource, kueue: Any, aws_opts: pulumi.ResourceOptions
) -> None:
    """FSx for Lustre in the cluster's VPC, its CSI driver and the training claims (``hybridgpu:cloud.storage``).

    The file system goes into the private subnet of ``availabilityZone`` (new VPC; default the
    first zone) or ``subnetId`` (existing VPC; default the first private subnet). Outputs
    ``fsx_file_system_id`` and ``fsx_dns_name``.
    """
    config = stack.config
    assert config.cloud is not None and config.cloud.storage is not None and config.region is not None
    cloud, storage = config.cloud, config.cloud.storage
    fsx = storage.fsx_lustre
    if cloud.network.new is not None:
        zones = list(cloud.network.new.availability_zones)
        index = zones.index(fsx.availability_zone) if fsx.availability_zone else 0
        subnet: Any = network.private_subnet_ids.apply(lambda ids: ids[index])
    else:
        assert cloud.network.existing is not None
        subnet = fsx.subnet_id or cloud.network.existing.private_subnet_ids[0]
    names = CloudNames(cloud.cluster.name, fsx=True)
    name = names.cluster
    file_system = FsxLustre(
        names.fsx_component,
        FsxLustreArgs(fsx_lustre=as_input(fsx), vpc_id=network.vpc_id, subnet_id=subnet, node_security_group_id=eks.cluster_security_group_id),
        opts=aws_opts,
    )
    namespaces = storage_namespaces(config, "eks", stack.burst_plan)
    TrainingData(
        f"{name}-training-data",
        TrainingDataArgs(
            chart=FSX_CSI_CHART,
            repo=FSX_CSI_REPO,
            version=storage.csi_driver_version,
            values=fsx_csi_values(config.region),
            source=as_input(fsx_volume(file_system.file_system_id, file_system.dns_name, file_system.mount_name)),
            namespaces=list(namespaces.namespaces),
            create_namespaces=list(namespaces.create),
            capacity_gib=fsx.storage_capacity_gib,
            pv_prefix=name,
            provider=eks.provider,
        ),
        pulumi.ResourceOptions(depends_on=[karpenter_release, *([kueue] if kueue is not None else [])]),
    )
    pulumi.export("fsx_file_system_id", file_system.file_system_id)
    pulumi.export("fsx_dns_name", file_system.dns_name)


def build_onprem_storage(stack: Stack, cluster: Any, kueue: Any) -> None:
    """The inventory's NFS storage on the kubeadm cluster: csi-driver-nfs and the training claims (nothing without ``storage``)."""
    config, inventory = stack.config, stack.inventory
    if cluster is None or inventory is None or inventory.site.storage is None or config.onprem is None:
        return
    site_storage = inventory.site.storage
    site = inventory.site.name
    namespaces = storage_namespaces(config, "onprem", stack.burst_plan)
    TrainingData(
        f"{site}-onprem-training-data",
        TrainingDataArgs(
            chart=NFS_CSI_CHART,
            repo=NFS_CSI_REPO,
            version=config.onprem.storage.csi_driver_version,
            values=nfs_csi_values(),
            source=as_input(nfs_volume(site_storage.mount_address, site_storage.export_path, site_storage.mount_options)),
            namespaces=list(namespaces.namespaces),
            create_namespaces=list(namespaces.create),
            capacity_gib=site_storage.capacity_gib,
            pv_prefix=site,
            provider=cluster.provider,
        ),
        pulumi.ResourceOptions(depends_on=[cluster.cni, *([kueue] if kueue is not None else [])]),
    )


def build_burst(stack: Stack, *, eks: Any = None, onprem: Any = None, depends_on: list[pulumi.Resource] | None = None) -> KueueCluster:
    """Kueue and the burst queues on this stack's cluster, as the burst plan says (docs/bursting.md).

    Workers export ``burst_worker_kubeconfig`` (secret, exec-free); the manager reads each
    worker's through ``pulumi.StackReference`` and stores it as a Secret for its MultiKueueCluster.
    Output ``burst_role``: the stack's role in the plan.
    """
    config, plan = stack.config, stack.burst_plan
    assert config.burst is not None and plan is not None  # validation derived the plan
    cluster = plan.clusters[config.stack]
    # The on-prem roles run on the kubeadm cluster; the spillover manager and the cloud worker on EKS.
    target = onprem if cluster.role in ("onprem-worker", "onprem-manager") or eks is None else eks
    kubeconfigs: dict[str, pulumi.Input[str]] | None = None
    if cluster.multikueue is not None:
        kubeconfigs = {
            w.name: pulumi.StackReference(w.stack_reference).require_output(WORKER_KUBECONFIG_OUTPUT) for w in cluster.multikueue.workers
        }
    deps = list(depends_on or []) + ([onprem.cni] if target is onprem else [])
    kueue_args = KueueClusterArgs(plan=as_input(cluster), source=as_input(plan.source), provider=target.provider, kubeconfig=target.kubeconfig)
    if kubeconfigs is not None:
        kueue_args["worker_kubeconfigs"] = kubeconfigs
    kueue = KueueCluster(f"{config.stack}-burst", kueue_args, pulumi.ResourceOptions(depends_on=deps))
    pulumi.export("burst_role", cluster.role)
    if kueue.worker_kubeconfig is not None:
        pulumi.export(WORKER_KUBECONFIG_OUTPUT, kueue.worker_kubeconfig)
    return kueue
