"""Every pod the stack installs can be scheduled on a node the stack creates (pure, no Pulumi).

For each cluster the stack builds (the EKS cluster of ``hybridgpu:cloud``, the kubeadm cluster of
``hybridgpu:onprem``) this module lists

* the node groups: the EKS system node group (label ``hybridgpu.io/role=system``, taint
  ``CriticalAddonsOnly=true:NoSchedule`` unless ``criticalAddonsOnly: false``), each Karpenter
  NodePool (its template labels, requirements and taints; GPU nodes also carry the labels NFD and
  the GPU Operator put on them, :data:`~hybridgpu.render.charts.GPU_NODE_DISCOVERED_LABELS`),
  and the on-prem hosts grouped by shape (kubeadm's labels and taints: the control-plane taint,
  ``nvidia.com/gpu=true:NoSchedule`` on GPU workers, ``node.kubernetes.io/unschedulable`` on
  cordoned hosts);
* the workloads: every Helm release the program installs there (Karpenter, Cilium, the NVIDIA
  layer, Kueue, the storage CSI drivers: aws-fsx-csi-driver on EKS, csi-driver-nfs on-prem; OpenCost on each cluster with
  ``hybridgpu:economics.showback.opencost``), as chart defaults merged with the values we render
  (:func:`hybridgpu.render.charts.chart_placements`).

Rules (kube-scheduler semantics in :mod:`hybridgpu.render.scheduling`):

* a controller (Deployment, hook Job) must fit a non-GPU node group ("controllers run on the
  system nodes"), on enough nodes when a required hostname anti-affinity spreads its replicas;
* a GPU agent DaemonSet (device plugin, GFD, DCGM exporter, the operator's operands, the NFD
  worker) must fit every GPU node group;
* a device-plugin DaemonSet (the EFA device plugin, installed when a NodePool's EC2NodeClass has EFA; on-prem the
  NVIDIA Network Operator's RDMA shared device plugin and DOCA driver, created from the NicClusterPolicy when some
  host is on an RDMA fabric, :mod:`hybridgpu.render.network_operator`) must fit every node group with its device
  and no other (``device-plugin-elsewhere``);
* any other DaemonSet (the CNI agent) must fit every node group.

A failure names the workload, every node group considered with why each is refused, and the
fix. EKS managed add-ons (CoreDNS, ...) are installed and placed by AWS and are not listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from hybridgpu.burst.frameworks import charts_for
from hybridgpu.burst.kueue import kueue_helm_values
from hybridgpu.burst.plan import BurstPlan
from hybridgpu.catalog import Catalog
from hybridgpu.config.models import CloudConfig, StackConfig
from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.economics.opencost import opencost_values
from hybridgpu.errors import Issue
from hybridgpu.inventory.models import Inventory
from hybridgpu.k8s import (
    ARCH_LABEL,
    CONTROL_PLANE_TAINT,
    CRITICAL_ADDONS_TAINT,
    EFA_LABEL,
    EFA_RESOURCE,
    INSTANCE_TYPE_LABEL,
    KARPENTER_NODEPOOL_LABEL,
    OS_LABEL,
    ROLE_LABEL,
    SYSTEM_ROLE,
    taint_object,
)
from hybridgpu.onprem import OnPremPlan, node_spec, plan_onprem
from hybridgpu.render.charts import GPU_NODE_DISCOVERED_LABELS, chart_placements
from hybridgpu.render.frameworks import framework_chart_values
from hybridgpu.render.efa import EFA_DEVICE_PLUGIN_CHART, efa_device_plugin_values, efa_node_classes, efa_nodepool_labels
from hybridgpu.render.cilium import cilium_helm_values
from hybridgpu.render.network_operator import (
    NETWORK_OPERATOR_CHART,
    RDMA_NODE_DISCOVERED_LABELS,
    network_operator_values,
    nic_cluster_policy,
    nic_policy_placements,
    rdma_devices,
    rdma_plan,
)
from hybridgpu.render.karpenter import karpenter_helm_values, render_nodepool
from hybridgpu.render.kubeadm import node_labels, node_taints
from hybridgpu.render.nvidia import device_plugin_values, gfd_values, gpu_operator_values, nodepool_labels
from hybridgpu.render.harbor import HARBOR_RELEASE, harbor_values
from hybridgpu.render.jupyterhub import JUPYTERHUB_CHART, jupyterhub_values
from hybridgpu.render.mlflow import MLFLOW_RELEASE, mlflow_values
from hybridgpu.render.scheduling import NodeGroup, PodPlacement, placement_problems
from hybridgpu.render.storage import fsx_csi_values, nfs_csi_values

__all__ = ["ClusterWorkloads", "UNSCHEDULABLE_TAINT", "cluster_workloads", "scheduling_issues", "unschedulable"]

#: Taint the node controller puts on a cordoned node (``spec.unschedulable``); kubernetes/kubernetes
#: ``pkg/controller/nodelifecycle`` with ``TaintNodeUnschedulable`` (labels-annotations-taints, v1.35 docs, read 2026-11-24).
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Workload:
    """A pod template to place, with the stack key whose values decide it (named in issues)."""

    placement: PodPlacement
    key: str


@dataclass(frozen=True)
class ClusterWorkloads:
    """One cluster of the stack: its node groups (with the stack key each comes from) and its workloads."""

    cluster: str
    groups: tuple[tuple[NodeGroup, str], ...]
    workloads: tuple[Workload, ...]


def _eks_groups(cloud: CloudConfig, catalog: Catalog, nvidia: NvidiaConfig | None) -> list[tuple[NodeGroup, str]]:
    sng = cloud.system_node_group
    system = NodeGroup(
        name=f"EKS system node group {cloud.cluster.name}-system",
        labels={ROLE_LABEL: (SYSTEM_ROLE,), OS_LABEL: ("linux",), ARCH_LABEL: ("amd64",), INSTANCE_TYPE_LABEL: tuple(sng.instance_types)},
        taints=(taint_object(*CRITICAL_ADDONS_TAINT),) if sng.critical_addons_only else (),
        nodes=sng.desired_size,
    )
    groups = [(system, "hybridgpu:cloud.systemNodeGroup")]
    for i, pool in enumerate(cloud.node_pools):
        extra = {**(nodepool_labels(nvidia, pool.name) if nvidia else {}), **efa_nodepool_labels(pool, cloud)}
        manifest = render_nodepool(pool, catalog, extra_labels=extra)
        template = manifest["spec"]["template"]
        labels: dict[str, tuple[str, ...]] = {k: (v,) for k, v in template["metadata"]["labels"].items()}
        for req in template["spec"]["requirements"]:
            if req["operator"] == "In":
                labels[req["key"]] = tuple(req["values"])
        labels[KARPENTER_NODEPOOL_LABEL] = (pool.name,)
        labels.update({k: (v,) for k, v in GPU_NODE_DISCOVERED_LABELS.items()})
        groups.append(
            (
                NodeGroup(
                    name=f"Karpenter NodePool {pool.name}",
                    labels=labels,
                    taints=tuple(template["spec"].get("taints", [])),
                    gpu=True,
                    devices=(EFA_RESOURCE,) if pool.node_class in efa_node_classes(cloud) else (),
                ),
                f"hybridgpu:cloud.nodePools[{i}].taints",
            )
        )
    return groups


def unschedulable(taints: list[dict[str, str]], cordoned: bool) -> list[dict[str, str]]:
    """``taints`` plus :data:`UNSCHEDULABLE_TAINT` for a cordoned host."""
    return [*taints, UNSCHEDULABLE_TAINT] if cordoned else taints


def _onprem_groups(inventory: Inventory, mig_configs: dict[str, str | None]) -> list[tuple[NodeGroup, str]]:
    shapes: dict[tuple, list[str]] = {}
    built: dict[tuple, NodeGroup] = {}
    for host in inventory.hosts:
        if host.state == "absent":
            continue
        spec = node_spec(host, mig_configs.get(host.hostname))
        taints = node_taints(spec)
        if taints is None:  # kubeadm's default for a control plane without extra taints
            taints = [taint_object(*CONTROL_PLANE_TAINT)]
        taints = unschedulable(taints, host.state == "cordoned")
        labels = {k: (v,) for k, v in node_labels(spec).items()}
        labels[OS_LABEL] = ("linux",)
        gpu = host.role == "gpu-worker"
        if gpu:
            labels.update({k: (v,) for k, v in GPU_NODE_DISCOVERED_LABELS.items()})
        devices = rdma_devices(host)
        if devices:  # NFD's NodeFeatureRule and the Network Operator label hosts with a ConnectX port
            labels.update({k: (v,) for k, v in RDMA_NODE_DISCOVERED_LABELS.items()})
        shape = (host.role, host.state, tuple(sorted(labels.items())), tuple(tuple(sorted(t.items())) for t in taints), devices)
        shapes.setdefault(shape, []).append(host.hostname)
        built[shape] = NodeGroup(name="", labels=labels, taints=tuple(taints), gpu=gpu, devices=devices)
    groups = []
    for shape, hosts in shapes.items():
        g = built[shape]
        state = "" if shape[1] == "active" else f" ({shape[1]})"
        name = f"on-prem {shape[0]} host{'s' if len(hosts) > 1 else ''} {', '.join(hosts)}{state}"
        groups.append((NodeGroup(name=name, labels=g.labels, taints=g.taints, gpu=g.gpu, nodes=len(hosts), devices=g.devices), "hybridgpu:onprem.inventory"))
    return groups


def _nvidia_workloads(nvidia: NvidiaConfig) -> list[Workload]:
    key = "hybridgpu:nvidia"
    if nvidia.install == "gpu-operator":
        return [Workload(p, key) for p in chart_placements("gpu-operator", gpu_operator_values(nvidia), "gpu-operator")]
    return [
        *(Workload(p, key) for p in chart_placements("nvidia-device-plugin", device_plugin_values(nvidia), "nvidia-device-plugin")),
        *(Workload(p, key) for p in chart_placements("nvidia-device-plugin", gfd_values(nvidia), "gpu-feature-discovery")),
    ]


def _network_operator_workloads(config: StackConfig, inventory: Inventory) -> list[Workload]:
    """The Network Operator (chart) and the operands of its NicClusterPolicy, when some host is on an RDMA fabric."""
    rdma = rdma_plan(inventory)
    if rdma is None:
        return []
    key = "hybridgpu:onprem.inventory"
    nfd_ours = config.nvidia is not None and config.nvidia.install == "gpu-operator"
    values = network_operator_values(nfd_from_gpu_operator=nfd_ours)
    return [
        *(Workload(p, key) for p in chart_placements(NETWORK_OPERATOR_CHART, values, NETWORK_OPERATOR_CHART)),
        *(Workload(p, key) for p in nic_policy_placements(nic_cluster_policy(rdma))),
    ]


def _opencost_workloads(config: StackConfig, side: Literal["onprem", "eks"], cluster_name: str) -> list[Workload]:
    """OpenCost's Deployment on a cluster when ``hybridgpu:economics.showback.opencost`` is on (prices do not move pods)."""
    if config.economics is None or not config.economics.showback.opencost:
        return []
    values = opencost_values(config.economics.showback, side, cluster_name, None)
    return [Workload(p, "hybridgpu:economics.showback") for p in chart_placements("opencost", values, "opencost")]


def _jupyterhub_workloads(config: StackConfig) -> list[Workload]:
    """The hub, proxy and user scheduler of ``hybridgpu:platform.jupyterhub`` (issue 30; the profiles do not move them)."""
    hub = config.platform.jupyterhub if config.platform is not None else None
    if hub is None or not hub.enabled or hub.auth is None or hub.image is None:
        return []
    values = jupyterhub_values(hub, [])
    return [Workload(p, "hybridgpu:platform.jupyterhub") for p in chart_placements(JUPYTERHUB_CHART, values, JUPYTERHUB_CHART)]


def _platform_service_workloads(config: StackConfig, side: Literal["onprem", "eks"]) -> list[Workload]:
    """MLflow's server and Harbor's components (``hybridgpu:platform.mlflow`` / ``.harbor``; Harbor only
    on-prem). Storage names do not move pods, so placeholders stand in for the bucket and storage class."""
    platform = config.platform
    if platform is None:
        return []
    found: list[Workload] = []
    if platform.mlflow is not None and platform.mlflow.enabled:
        values = mlflow_values(platform.mlflow, side, bucket="placeholder", storage_class="placeholder")
        found += [Workload(p, "hybridgpu:platform.mlflow") for p in chart_placements("mlflow", values, MLFLOW_RELEASE)]
    if side == "onprem" and platform.harbor is not None and platform.harbor.enabled:
        values = harbor_values(platform.harbor, "placeholder")
        found += [Workload(p, "hybridgpu:platform.harbor") for p in chart_placements("harbor", values, HARBOR_RELEASE)]
    return found


def cluster_workloads(
    config: StackConfig,
    catalog: Catalog,
    *,
    inventory: Inventory | None = None,
    burst_plan: BurstPlan | None = None,
    onprem_plan: OnPremPlan | None = None,
) -> list[ClusterWorkloads]:
    """The clusters of a checked stack, each with its node groups and the workloads the program installs there.

    ``onprem_plan`` is the inventory's rendered plan when the caller has it (the stack checks
    do); without it the plan is rendered here.

    Mirrors :func:`hybridgpu.components.program.main`: Karpenter and the NVIDIA layer on
    EKS; Cilium and the NVIDIA layer (with the inventory's MIG layouts) on-prem; Kueue on the
    cluster the burst plan's role targets (on-prem roles on the kubeadm cluster, else EKS).
    """
    burst_target = None
    kueue: list[Workload] = []
    if config.burst is not None and burst_plan is not None and config.stack in burst_plan.clusters:
        cluster_plan = burst_plan.clusters[config.stack]
        on_prem_role = cluster_plan.role in ("onprem-worker", "onprem-manager") or config.cloud is None
        burst_target = "onprem" if on_prem_role else "eks"
        values = kueue_helm_values(cluster_plan, burst_plan.source)
        kueue = [Workload(p, "hybridgpu:burst.plan") for p in chart_placements("kueue", values, "kueue")]
        kueue += [  # the job-framework charts the plan installs before Kueue (hybridgpu.components.frameworks)
            Workload(p, "hybridgpu:burst.plan")
            for c in charts_for(burst_plan.source.kueue.frameworks)
            for p in chart_placements(c.key, framework_chart_values(c.key), c.release)
        ]
    clusters = []
    if config.onprem is not None and inventory is not None:
        plan = onprem_plan if onprem_plan is not None else plan_onprem(inventory, nvidia_toolkit=config.onprem.nvidia_toolkit)
        mig = {step.hostname: step.mig_config for step in plan.steps}
        workloads = [Workload(p, "hybridgpu:onprem") for p in chart_placements("cilium", cilium_helm_values(str(plan.cluster.pod_subnet)), "cilium")]
        if config.nvidia is not None:
            onprem_nvidia = config.nvidia.model_copy(update={"mig_layouts": [*config.nvidia.mig_layouts, *plan.mig_layouts], "node_pools": {}})
            workloads += _nvidia_workloads(onprem_nvidia)
        if burst_target == "onprem":
            workloads += kueue
        if inventory.site.storage is not None:
            workloads += [Workload(p, "hybridgpu:onprem.storage") for p in chart_placements("csi-driver-nfs", nfs_csi_values(), "csi-driver-nfs")]
        workloads += _network_operator_workloads(config, inventory)
        workloads += _opencost_workloads(config, "onprem", inventory.site.name)
        if config.cloud is None:  # the platform releases go to the EKS cluster when there is one
            workloads += _jupyterhub_workloads(config) + _platform_service_workloads(config, "onprem")
        clusters.append(ClusterWorkloads(f"on-prem cluster {inventory.site.name}", tuple(_onprem_groups(inventory, mig)), tuple(workloads)))
    if config.cloud is not None:
        cloud = config.cloud
        values = karpenter_helm_values(cloud.karpenter, cluster_name=cloud.cluster.name, interruption_queue=cloud.cluster.name)
        workloads = [Workload(p, "hybridgpu:cloud.karpenter") for p in chart_placements("karpenter", values, "karpenter")]
        if config.nvidia is not None:
            workloads += _nvidia_workloads(config.nvidia)
        if burst_target == "eks":
            workloads += kueue
        efa_values = efa_device_plugin_values(cloud, catalog)
        if efa_values is not None:
            workloads += [Workload(p, "hybridgpu:cloud.nodeClasses") for p in chart_placements(EFA_DEVICE_PLUGIN_CHART, efa_values, EFA_DEVICE_PLUGIN_CHART)]
        if cloud.storage is not None and config.region is not None:
            values = fsx_csi_values(config.region)
            workloads += [Workload(p, "hybridgpu:cloud.storage") for p in chart_placements("aws-fsx-csi-driver", values, "aws-fsx-csi-driver")]
        workloads += _opencost_workloads(config, "eks", cloud.cluster.name)
        workloads += _jupyterhub_workloads(config) + _platform_service_workloads(config, "eks")
        clusters.append(ClusterWorkloads(f"EKS cluster {cloud.cluster.name}", tuple(_eks_groups(cloud, catalog, config.nvidia)), tuple(workloads)))
    return clusters


def _refusals(pod: PodPlacement, groups: Sequence[tuple[NodeGroup, str]]) -> list[str]:
    return [f"{g.name}: {'; '.join(placement_problems(pod, g))}" for g, _ in groups if placement_problems(pod, g)]


def _show_tolerations(pod: PodPlacement) -> str:
    shown = [
        f"{t.get('key') or '<any key>'} {t.get('operator') or 'Equal'}{' ' + str(t.get('value')) if t.get('value') else ''}"
        f"{' ' + str(t.get('effect')) if t.get('effect') else ''}"
        for t in pod.tolerations
    ]
    return "; ".join(shown) or "none"


def _fix(pod: PodPlacement) -> str:
    return (
        f"remove or change the taints and labels that refuse it (a NodePool's `taints`/`labels`, an inventory host's `taints`, "
        f"`systemNodeGroup`), or make a taint PreferNoSchedule; {pod.name} tolerates only: {_show_tolerations(pod)} "
        f"(chart defaults {pod.source}, merged with the values hybridgpu renders)"
    )


def _device_plugin_issues(cluster: ClusterWorkloads, pod: PodPlacement, key: str, file: str) -> list[Issue]:
    """A device plugin must run on every node group with its device and on no other (a plugin pod on a node
    without the device advertises nothing and holds a privileged host-network pod there; one missing from a
    node with the device leaves every pod requesting the resource Pending)."""
    issues: list[Issue] = []
    for group, group_key in cluster.groups:
        problems = placement_problems(pod, group)
        if pod.device in group.devices and problems:
            issues.append(
                Issue(
                    file,
                    group_key,
                    f"{cluster.cluster}: DaemonSet {pod.name} (the device plugin of {pod.device}) cannot run on {group.name}, whose nodes "
                    f"have the device: {'; '.join(problems)}; pods requesting {pod.device} stay Pending there",
                    _fix(pod),
                    code="unschedulable",
                )
            )
        elif pod.device not in group.devices and not problems:
            issues.append(
                Issue(
                    file,
                    group_key,
                    f"{cluster.cluster}: DaemonSet {pod.name} (the device plugin of {pod.device}) would run on {group.name}, whose nodes "
                    f"have no {pod.device} device (its nodeSelector/affinity match them and it tolerates their taints)",
                    f"keep device labels off node groups without the device (a NodePool's `labels` must not set the EFA pool label "
                    f"`{EFA_LABEL}`), or give the pool a node class with `efa.enabled: true`"
                    if pod.device == EFA_RESOURCE
                    else "give the hosts their fabric NICs in the inventory (`network.nics`), or take them off the fabric (`network.fabric: none`)",
                    code="device-plugin-elsewhere",
                )
            )
    return issues


def workload_issues(cluster: ClusterWorkloads, file: str) -> list[Issue]:
    """The placement problems of one cluster's workloads, as issues naming the workload, the node groups considered and why each refuses it."""
    issues: list[Issue] = []
    groups = list(cluster.groups)
    gpu_groups = [(g, k) for g, k in groups if g.gpu]
    plain = [(g, k) for g, k in groups if not g.gpu]
    considered = "; ".join(g.name for g, _ in groups)
    for w in cluster.workloads:
        pod = w.placement
        if pod.kind == "DaemonSet" and pod.device is not None:
            issues += _device_plugin_issues(cluster, pod, w.key, file)
            continue
        if pod.kind == "DaemonSet":
            targets = gpu_groups if pod.gpu_agent else groups
            for group, key in targets:
                problems = placement_problems(pod, group)
                if problems:
                    what = "a GPU agent, must run on every GPU node" if pod.gpu_agent else "a node agent, must run on every node"
                    issues.append(
                        Issue(
                            file,
                            key,  # the node group's key: its taints/labels refuse the agent
                            f"{cluster.cluster}: DaemonSet {pod.name} ({what}) cannot run on {group.name}: {'; '.join(problems)}",
                            _fix(pod),
                            code="unschedulable",
                        )
                    )
            continue
        fits = [(g, k) for g, k in plain if not placement_problems(pod, g)]
        if not fits:
            on_gpu = [g.name for g, _ in gpu_groups if not placement_problems(pod, g)]
            tail = f" (it would fit only GPU nodes: {', '.join(on_gpu)}; controllers run on the system nodes)" if on_gpu else ""
            issues.append(
                Issue(
                    file,
                    w.key,
                    f"{cluster.cluster}: {pod.kind} {pod.name} stays Pending: no node group it fits (considered: {considered}). "
                    f"{' | '.join(_refusals(pod, groups))}{'' if plain else ' | no non-GPU node group'}{tail}",
                    _fix(pod),
                    code="unschedulable",
                )
            )
            continue
        # Replicas spread by a required hostname anti-affinity may use every node they fit, GPU nodes included.
        need = pod.replicas_on_distinct_nodes
        if need <= 1:
            continue
        anywhere = [g for g, _ in groups if not placement_problems(pod, g)]
        counts = [g.nodes for g in anywhere]
        if all(n is not None for n in counts) and sum(n or 0 for n in counts) < need:
            have = sum(n or 0 for n in counts)
            issues.append(
                Issue(
                    file,
                    "hybridgpu:cloud.systemNodeGroup.desiredSize" if any(g is plain[0][0] for g in anywhere) and w.key.startswith("hybridgpu:cloud") else w.key,
                    f"{cluster.cluster}: {pod.kind} {pod.name} spreads {need} replicas over distinct nodes (required hostname anti-affinity) "
                    f"but only {have} node(s) fit ({', '.join(g.name for g in anywhere)}): {need - have} replica(s) stay Pending",
                    f"run at least {need} nodes it fits (e.g. `desiredSize`/`minSize` of the system node group, or another host), or lower its replicas",
                    code="unschedulable",
                )
            )
    return issues


def scheduling_issues(
    config: StackConfig,
    file: str,
    catalog: Catalog,
    *,
    inventory: Inventory | None = None,
    burst_plan: BurstPlan | None = None,
    onprem_plan: OnPremPlan | None = None,
) -> list[Issue]:
    """Every workload of the stack that no node the stack creates can run (see the module docstring); empty when all fit.

    ``onprem_plan``: the inventory's rendered plan, when the caller has it (else it is rendered again).
    """
    issues: list[Issue] = []
    for cluster in cluster_workloads(config, catalog, inventory=inventory, burst_plan=burst_plan, onprem_plan=onprem_plan):
        issues += workload_issues(cluster, file)
    return issues
