"""The charts hybridgpu installs: their scheduling defaults and the CRDs they ship, read from the pinned sources (pure data).

Where a Helm chart's pods run is decided by its ``values.yaml`` defaults (tolerations,
``nodeSelector``, ``affinity``) merged with the values we render. This module records, per
pinned chart, the scheduling-relevant subset of those defaults (:data:`CHARTS`, each with its
source: repository, file, version, commit and the date it was read), which workloads the
chart's templates create from which values, and which custom resource kinds the chart
installs. :func:`chart_placements` merges our values over the defaults the way Helm does
(:func:`helm_merge`) and returns a :class:`~hybridgpu.render.scheduling.PodPlacement` per
enabled workload, for :mod:`hybridgpu.stack.scheduling` to place on the stack's nodes.

Facts recorded (all read 2026-11-24):

* Kueue ``charts/kueue`` v0.19.2 (kubernetes-sigs/kueue 8eab6877): ``controllerManager.
  tolerations: []``, ``nodeSelector: {}``, no affinity (``templates/manager/manager.yaml``);
  CRDs under ``templates/crd/`` (installed and upgraded with the release).
* NVIDIA GPU Operator ``deployments/gpu-operator`` v26.7.0 (NVIDIA/gpu-operator 10ee5b36):
  ``operator.tolerations`` only ``node-role.kubernetes.io/control-plane`` (Equal "",
  NoSchedule), ``operator.nodeSelector: {kubernetes.io/os: linux}``, a *preferred* control-plane
  affinity; the ``pre-upgrade`` CRD Job (``templates/upgrade_crd.yaml``, ``operator.upgradeCRD:
  true``) uses the same tolerations and nodeSelector; operands take ``daemonsets.tolerations``
  (``nvidia.com/gpu`` Exists NoSchedule) and a ``nvidia.com/gpu.deploy.<operand>=true``
  nodeSelector (``assets/state-*/0500_daemonset.yaml``) that the operator sets on nodes with an
  NVIDIA PCI device (``controllers/state_manager.go`` ``gpuStateLabels``, ``gpuNodeLabels``
  ``feature.node.kubernetes.io/pci-10de.present``); the NFD subchart (node-feature-discovery
  0.19.0, ``charts/node-feature-discovery/values.yaml``) under ``node-feature-discovery``:
  master tolerates only the control-plane taint, gc tolerates nothing, the worker tolerates the
  control-plane taint and ``nvidia.com/gpu`` Exists (overridden in the parent values).
  The operator creates the DCGM ``ServiceMonitor`` itself and skips it while the
  ``servicemonitors.monitoring.coreos.com`` CRD is missing (``controllers/object_controls.go``
  ``ServiceMonitor``), so that object cannot fail a ``pulumi up``.
* NVIDIA device plugin ``deployments/helm/nvidia-device-plugin`` v0.20.0 (NVIDIA/k8s-device-plugin
  1b826acc): ``tolerations`` ``CriticalAddonsOnly`` Exists and ``nvidia.com/gpu`` Exists
  NoSchedule; required node affinity ``feature.node.kubernetes.io/pci-10de.present In [true]`` OR
  ``feature.node.kubernetes.io/cpu-model.vendor_id In [NVIDIA]`` OR ``nvidia.com/gpu.present In
  [true]``; the device-plugin and GFD DaemonSets both read these top-level values; its NFD
  subchart (alias ``nfd``, condition ``nfd.enabled,gfd.enabled``) worker tolerates only
  ``nvidia.com/gpu=present:NoSchedule`` (Equal), not our ``nvidia.com/gpu=true`` taint.
* Karpenter ``charts/karpenter`` v1.14.1 (aws/karpenter-provider-aws bde00654): ``tolerations``
  ``CriticalAddonsOnly`` Exists, ``nodeSelector {kubernetes.io/os: linux}``, required affinity
  ``karpenter.sh/nodepool DoesNotExist``, required pod anti-affinity on ``kubernetes.io/hostname``,
  ``replicas: 2``; ``charts/karpenter-crd/templates`` ships NodePool, NodeClaim, NodeOverlay,
  EC2NodeClass (and CapacityBuffer).
* OpenCost ``charts/opencost`` 2.5.17 (opencost/opencost-helm-chart 725bb939, app 1.120.1): one
  Deployment with ``opencost.tolerations: []``, ``opencost.nodeSelector: {}``, ``opencost.affinity: {}``
  (``templates/deployment.yaml``); no CRDs.
* AWS EFA device plugin ``stable/aws-efa-k8s-device-plugin`` v0.5.30 (aws/eks-charts bfe91c4b):
  ``tolerations: []`` after a template-fixed ``CriticalAddonsOnly`` toleration, ``nodeSelector: {}``, a
  required affinity built from ``supportedInstanceLabels`` (every EFA instance type) plus
  ``eks.amazonaws.com/compute-type NotIn [auto]`` (:data:`EFA_CHARTS`); a device plugin of
  ``vpc.amazonaws.com/efa``, so it must run on the EFA nodes and nowhere else.
* Cilium: ``tolerations`` and ``operator.tolerations`` ``[{operator: Exists}]``, operator
  ``replicas: 2`` with a required hostname anti-affinity. Source: cilium/cilium
  ``Documentation/helm-values.rst`` (the generated values table; the 1.20.0 checkout could not be
  mirrored here, so the version of the stored table is not pinned: re-read at 1.20.0).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hybridgpu.k8s import (
    CONTROL_PLANE_TAINT,
    CRITICAL_ADDONS_TAINT,
    EFA_RESOURCE,
    EKS_COMPUTE_TYPE_LABEL,
    FSX_AGENT_NOT_READY_TAINT_KEY,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER_NODEPOOL_LABEL,
    KUEUE_GROUP,
    OS_LABEL,
)
from hybridgpu.render.scheduling import PodPlacement

__all__ = [
    "CHARTS",
    "ChartFacts",
    "ChartSource",
    "ChartWorkload",
    "GPU_NODE_DISCOVERED_LABELS",
    "chart_placements",
    "control_plane_toleration",
    "controller_tolerations",
    "critical_addons_toleration",
    "gpu_exists_toleration",
    "helm_merge",
]

#: Read date of every chart fact in this module.
READ = "2026-11-24"

#: NFD's label for a node with an NVIDIA PCI device (vendor 10de); the GPU Operator's ``gpuNodeLabels``.
PCI_NVIDIA_LABEL = "feature.node.kubernetes.io/pci-10de.present"
#: Prefix of the per-operand labels the GPU Operator puts on GPU nodes (``gpuStateLabels``).
GPU_DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."

#: Operands of the GPU Operator: (values key that enables it, its ``nvidia.com/gpu.deploy.*`` label suffix).
GPU_OPERATOR_OPERANDS = (
    ("driver", "driver"),
    ("toolkit", "container-toolkit"),
    ("devicePlugin", "device-plugin"),
    ("dcgm", "dcgm"),
    ("dcgmExporter", "dcgm-exporter"),
    ("gfd", "gpu-feature-discovery"),
    ("migManager", "mig-manager"),
    ("nodeStatusExporter", "node-status-exporter"),
    ("validator", "operator-validator"),
)

#: Labels a GPU node carries once NFD's worker has run on it and the GPU Operator has labelled it
#: (sources above). The NFD worker itself is checked as a GPU agent, so these hold only if it can run there.
GPU_NODE_DISCOVERED_LABELS: dict[str, str] = {
    PCI_NVIDIA_LABEL: "true",
    GPU_PRESENT_LABEL: "true",
    **{GPU_DEPLOY_LABEL_PREFIX + suffix: "true" for _, suffix in GPU_OPERATOR_OPERANDS},
}


def critical_addons_toleration() -> dict[str, str]:
    """A toleration of the EKS system node group's taint (:data:`hybridgpu.k8s.CRITICAL_ADDONS_TAINT`), any value and effect."""
    return {"key": CRITICAL_ADDONS_TAINT.key, "operator": "Exists"}


def control_plane_toleration() -> dict[str, str]:
    """A toleration of kubeadm's control-plane taint (:data:`hybridgpu.k8s.CONTROL_PLANE_TAINT`), spelt as the charts spell it (Equal "")."""
    return {"key": CONTROL_PLANE_TAINT.key, "operator": "Equal", "value": "", "effect": CONTROL_PLANE_TAINT.effect}


def controller_tolerations() -> list[dict[str, str]]:
    """Tolerations hybridgpu gives every controller it installs (GPU Operator, its CRD hook Job, NFD master and gc, Kueue).

    kubeadm's control-plane taint (the GPU Operator's and NFD's chart default; lets a small
    on-prem cluster without CPU workers run them) and the EKS system node group's
    ``CriticalAddonsOnly``: without it they stay Pending on EKS, where every node the toolkit
    creates is tainted. Never the GPU taint: controllers run on the system nodes.
    """
    return [control_plane_toleration(), critical_addons_toleration()]


def gpu_exists_toleration() -> dict[str, str]:
    """A toleration of the GPU taint (:data:`hybridgpu.k8s.GPU_TAINT`), any value."""
    return {"key": GPU_TAINT.key, "operator": "Exists", "effect": GPU_TAINT.effect}


@dataclass(frozen=True)
class ChartSource:
    """Where a chart's facts were read: repository, file, chart version, commit, date (YYYY-MM-DD)."""

    repo: str
    file: str
    version: str
    commit: str
    read: str = READ

    def __str__(self) -> str:
        return f"{self.repo} {self.file} {self.version} ({self.commit[:8] or 'commit not pinned'}, read {self.read})"


@dataclass(frozen=True)
class ChartWorkload:
    """A pod-creating object of a chart and the values its scheduling fields come from.

    Attributes:
        name: the object's name as the chart renders it (``<release>`` prefixes are left out).
        kind: ``Deployment``, ``DaemonSet`` or ``Job`` (a Helm hook).
        values: dotted path of the values block holding ``tolerations`` / ``nodeSelector`` /
            ``affinity`` (``""`` for top-level values).
        tolerations_from: dotted path of the tolerations if they live elsewhere (GPU Operator operands).
        enabled_when: dotted paths; the workload exists if any is truthy (empty: always).
        fixed_selector: a nodeSelector the template (or the operator) sets regardless of values.
        gpu_agent: a DaemonSet that must run on every GPU node.
        replicas: dotted path of the replica count when a required hostname anti-affinity spreads them.
        fixed_tolerations: tolerations the template adds to those from values.
        tolerate_all_when: dotted path of a flag that makes the template tolerate every taint instead
            (``tolerations: [{operator: Exists}]``), e.g. aws-fsx-csi-driver's ``node.tolerateAllTaints``.
        instance_label_affinity: dotted path of a ``{keys, values}`` block from which the template builds its
            required node affinity (one term per key, ``key In values``), e.g. the EFA device plugin's
            ``supportedInstanceLabels``; ``fixed_expressions`` are ANDed into the last term, as the template does.
        fixed_expressions: node selector requirements the template always adds (to the last term).
        device: the extended resource a device-plugin DaemonSet advertises (``vpc.amazonaws.com/efa``): it must
            run on every node group that has the device and on no other (:mod:`hybridgpu.stack.scheduling`).
    """

    name: str
    kind: str
    values: str
    tolerations_from: str | None = None
    enabled_when: tuple[str, ...] = ()
    fixed_selector: tuple[tuple[str, str], ...] = ()
    gpu_agent: bool = False
    replicas: str | None = None
    fixed_tolerations: tuple[Mapping[str, Any], ...] = ()
    tolerate_all_when: str | None = None
    instance_label_affinity: str | None = None
    fixed_expressions: tuple[Mapping[str, Any], ...] = ()
    device: str | None = None


@dataclass(frozen=True)
class ChartFacts:
    """One pinned chart: its source, the scheduling subset of its defaults, its workloads and the CRD kinds it installs.

    ``crds`` are ``(apiVersion group, kind)`` pairs; a chart whose CRDs live in ``crds/`` or
    ``templates/`` is listed the same way (both are installed before the release's other objects).
    ``subcharts`` maps a values key to the subchart's facts (key, condition paths).
    """

    chart: str
    source: ChartSource
    defaults: Mapping[str, Any]
    workloads: tuple[ChartWorkload, ...] = ()
    crds: tuple[tuple[str, str], ...] = ()
    subcharts: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


#: The CSI drivers of shared dataset storage (hybridgpu.render.storage); read 2026-11-24.
#: aws-fsx-csi-driver ``charts/aws-fsx-csi-driver/values.yaml`` 1.17.0: ``controller.tolerations``
#: ``CriticalAddonsOnly`` Exists and NoExecute Exists (300 s), ``replicaCount: 2`` without a required
#: anti-affinity, a *preferred* non-Fargate affinity; ``node.tolerateAllTaints: true`` (the template then
#: writes ``tolerations: [{operator: Exists}]``, else ``node.tolerations`` plus ``fsx.csi.aws.com/agent-not-ready``),
#: a *required* non-Fargate node affinity; both templates fix ``nodeSelector: {kubernetes.io/os: linux}``
#: (``templates/controller-deployment.yaml``, ``templates/node-daemonset.yaml``).
#: csi-driver-nfs ``charts/v4.13.4/csi-driver-nfs/values.yaml``: ``controller.tolerations`` the
#: ``node-role.kubernetes.io/master``, ``/controlplane``, ``/control-plane`` and ``CriticalAddonsOnly``
#: NoSchedule taints (Exists), ``controller.affinity: {}`` (``runOnControlPlane: false``), ``replicas: 1``;
#: ``node.tolerations: [{operator: Exists}]``; both templates fix ``nodeSelector: {kubernetes.io/os: linux}``.
_NOT_FARGATE = {"key": EKS_COMPUTE_TYPE_LABEL, "operator": "NotIn", "values": ["fargate"]}
STORAGE_CHARTS: dict[str, ChartFacts] = {
    "aws-fsx-csi-driver": ChartFacts(
        chart="aws-fsx-csi-driver",
        source=ChartSource("kubernetes-sigs/aws-fsx-csi-driver", "charts/aws-fsx-csi-driver/values.yaml", "1.17.0", "5b227125add708cd0b87c76abe1a4c074e71dfc5"),
        defaults={
            "controller": {
                "replicaCount": 2,
                "nodeSelector": {},
                "tolerations": [critical_addons_toleration(), {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                "affinity": {
                    "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [_NOT_FARGATE]}}]}
                },
            },
            "node": {
                "nodeSelector": {},
                "tolerateAllTaints": True,
                "tolerations": [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [_NOT_FARGATE]}]}}},
            },
            "nodeComponentOnly": False,
        },
        workloads=(
            ChartWorkload("fsx-csi-controller", "Deployment", "controller", fixed_selector=((OS_LABEL, "linux"),)),
            ChartWorkload(
                "fsx-csi-node",
                "DaemonSet",
                "node",
                fixed_selector=((OS_LABEL, "linux"),),
                gpu_agent=True,
                fixed_tolerations=({"key": FSX_AGENT_NOT_READY_TAINT_KEY, "operator": "Exists"},),
                tolerate_all_when="node.tolerateAllTaints",
            ),
        ),
    ),
    "csi-driver-nfs": ChartFacts(
        chart="csi-driver-nfs",
        source=ChartSource("kubernetes-csi/csi-driver-nfs", "charts/v4.13.4/csi-driver-nfs/values.yaml", "4.13.4", "d3b27c00743a5317325107c1d2fb8fd4cf057a16"),
        defaults={
            "controller": {
                "replicas": 1,
                "nodeSelector": {},
                "affinity": {},
                "tolerations": [
                    {"key": key, "operator": "Exists", "effect": "NoSchedule"}
                    for key in ("node-role.kubernetes.io/master", "node-role.kubernetes.io/controlplane", CONTROL_PLANE_TAINT.key, CRITICAL_ADDONS_TAINT.key)
                ],
                "enableSnapshotter": True,
            },
            "node": {"nodeSelector": {}, "affinity": {}, "tolerations": [{"operator": "Exists"}]},
        },
        workloads=(
            ChartWorkload("csi-nfs-controller", "Deployment", "controller", fixed_selector=((OS_LABEL, "linux"),)),
            ChartWorkload("csi-nfs-node", "DaemonSet", "node", fixed_selector=((OS_LABEL, "linux"),), gpu_agent=True),
        ),
    ),
}

#: The EFA device plugin (hybridgpu.render.efa), aws/eks-charts ``stable/aws-efa-k8s-device-plugin`` v0.5.30
#: (appVersion v0.5.20; Chart.yaml at bfe91c4b 2026-07-21, read 2026-11-24): ``values.yaml`` ``nodeSelector: {}``,
#: ``tolerations: []``, ``supportedInstanceLabels {keys: [node.kubernetes.io/instance-type], values: <304 EFA
#: instance types>}``; ``templates/daemonset.yaml`` always tolerates ``CriticalAddonsOnly`` (Exists) before the
#: values' tolerations and builds a *required* node affinity with one term per key (``key In values``), the last
#: term also requiring ``eks.amazonaws.com/compute-type NotIn [auto]``. The default list is recorded here for the
#: GPU instance types of hybridgpu's catalog (it also names CPU, Trainium and Inferentia types hybridgpu never launches).
EFA_DEVICE_PLUGIN_DEFAULT_GPU_TYPES = (
    "g4dn.12xlarge", "g4dn.16xlarge", "g4dn.8xlarge", "g4dn.metal",
    "g5.12xlarge", "g5.16xlarge", "g5.24xlarge", "g5.48xlarge", "g5.8xlarge",
    "g6.12xlarge", "g6.16xlarge", "g6.24xlarge", "g6.48xlarge", "g6.8xlarge",
    "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge", "g6e.8xlarge",
    "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5.4xlarge", "p5e.48xlarge", "p5en.48xlarge",
    "g7e.12xlarge", "g7e.24xlarge", "g7e.48xlarge", "g7e.8xlarge", "gr6.8xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge",
)
EFA_CHARTS: dict[str, ChartFacts] = {
    "aws-efa-k8s-device-plugin": ChartFacts(
        chart="aws-efa-k8s-device-plugin",
        source=ChartSource("aws/eks-charts", "stable/aws-efa-k8s-device-plugin/values.yaml", "v0.5.30", "bfe91c4b9257c80f754ad4b3d6a9a3c239b2b8ec"),
        defaults={
            "nodeSelector": {},
            "tolerations": [],
            "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": list(EFA_DEVICE_PLUGIN_DEFAULT_GPU_TYPES)},
        },
        workloads=(
            ChartWorkload(
                "aws-efa-k8s-device-plugin",
                "DaemonSet",
                "",
                fixed_tolerations=(critical_addons_toleration(),),
                instance_label_affinity="supportedInstanceLabels",
                fixed_expressions=({"key": EKS_COMPUTE_TYPE_LABEL, "operator": "NotIn", "values": ["auto"]},),
                device=EFA_RESOURCE,
            ),
        ),
    ),
}

_NFD = ChartFacts(
    chart="node-feature-discovery",
    source=ChartSource("NVIDIA/gpu-operator", "deployments/gpu-operator/charts/node-feature-discovery/values.yaml", "0.19.0", "10ee5b3638b89e11e949412aafa5ba99279c3721"),
    defaults={
        "master": {
            "enable": True,
            "nodeSelector": {},
            "tolerations": [control_plane_toleration()],
            # Only a preferred control-plane affinity: it scores, it does not filter.
        },
        "worker": {"enable": True, "nodeSelector": {}, "tolerations": [], "affinity": {}},
        "gc": {"enable": True, "nodeSelector": {}, "tolerations": []},
    },
    workloads=(
        ChartWorkload("nfd-master", "Deployment", "master", enabled_when=("master.enable",)),
        ChartWorkload("nfd-worker", "DaemonSet", "worker", enabled_when=("worker.enable",), gpu_agent=True),
        ChartWorkload("nfd-gc", "Deployment", "gc", enabled_when=("gc.enable",)),
    ),
    crds=(("nfd.k8s-sigs.io", "NodeFeature"), ("nfd.k8s-sigs.io", "NodeFeatureRule"), ("nfd.k8s-sigs.io", "NodeFeatureGroup")),
)

#: The NVIDIA Network Operator (hybridgpu.render.network_operator), Mellanox/network-operator tag v26.4.1 (85afd6d9,
#: read 2026-11-24): ``deployment/network-operator/values.yaml`` ``operator.tolerations`` ``node-role.kubernetes.io/master``
#: and ``/control-plane`` (Equal "", NoSchedule), ``operator.nodeSelector: {}``, only a *preferred* control-plane affinity;
#: ``templates/operator.yaml`` (Deployment, 1 replica), ``upgrade-crd-hook.yaml`` (pre-install/pre-upgrade Job when
#: ``upgradeCRDs``) and ``keep-ncp-hook.yaml`` (pre-install/pre-upgrade Job, always) all take the ``operator`` block;
#: ``crds/`` ships NicClusterPolicy, NicNodePolicy, HostDeviceNetwork, IPoIBNetwork, MacvlanNetwork and
#: NetworkAttachmentDefinition. Its NFD subchart (``charts/node-feature-discovery``, condition ``nfd.enabled``): master
#: tolerates only the control-plane taint, gc and worker nothing in the subchart, the parent sets the worker's
#: tolerations (master, control-plane, ``nvidia.com/gpu`` Exists). The operands (RDMA shared device plugin, DOCA driver)
#: are created by the operator from the NicClusterPolicy: ``network_operator.nic_policy_placements`` places them.
_NETWORK_OPERATOR_NFD = ChartFacts(
    chart="node-feature-discovery",
    source=ChartSource("Mellanox/network-operator", "deployment/network-operator/charts/node-feature-discovery/values.yaml", "0.2.1 (network-operator v26.4.1)", "85afd6d9c6978eb871a3292b9897f49746cc43cd"),
    defaults={
        "master": {"enable": True, "nodeSelector": {}, "tolerations": [control_plane_toleration()]},
        "worker": {"enable": True, "nodeSelector": {}, "tolerations": [], "affinity": {}},
        "gc": {"enable": True, "nodeSelector": {}, "tolerations": []},
    },
    workloads=_NFD.workloads,
    crds=_NFD.crds,
)
NETWORK_OPERATOR_CHARTS: dict[str, ChartFacts] = {
    "network-operator": ChartFacts(
        chart="network-operator",
        source=ChartSource("Mellanox/network-operator", "deployment/network-operator/values.yaml", "26.4.1", "85afd6d9c6978eb871a3292b9897f49746cc43cd"),
        defaults={
            "nfd": {"enabled": True, "deployNodeFeatureRules": True},
            "upgradeCRDs": True,
            "sriovNetworkOperator": {"enabled": False},
            "operator": {
                "nodeSelector": {},
                "tolerations": [
                    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
                    control_plane_toleration(),
                ],
            },
            "node-feature-discovery": {
                "worker": {
                    "tolerations": [
                        {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
                        {"key": CONTROL_PLANE_TAINT.key, "operator": "Exists", "effect": "NoSchedule"},
                        gpu_exists_toleration(),
                    ]
                }
            },
        },
        workloads=(
            ChartWorkload("network-operator", "Deployment", "operator"),
            ChartWorkload("network-operator-upgrade-crd (pre-install/pre-upgrade hook)", "Job", "operator", enabled_when=("upgradeCRDs",)),
            ChartWorkload("network-operator-keep-ncp (pre-install/pre-upgrade hook)", "Job", "operator"),
        ),
        crds=(
            ("mellanox.com", "NicClusterPolicy"),
            ("mellanox.com", "NicNodePolicy"),
            ("mellanox.com", "HostDeviceNetwork"),
            ("mellanox.com", "IPoIBNetwork"),
            ("mellanox.com", "MacvlanNetwork"),
            ("k8s.cni.cncf.io", "NetworkAttachmentDefinition"),
        ),
        subcharts=(("node-feature-discovery", "node-feature-discovery", ("nfd.enabled",)),),
    ),
    "network-operator/node-feature-discovery": _NETWORK_OPERATOR_NFD,
}

CHARTS: dict[str, ChartFacts] = {
    "kueue": ChartFacts(
        chart="kueue",
        source=ChartSource("kubernetes-sigs/kueue", "charts/kueue/values.yaml", "0.19.2", "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb"),
        defaults={"controllerManager": {"nodeSelector": {}, "tolerations": []}, "enableKueueViz": False},
        workloads=(ChartWorkload("kueue-controller-manager", "Deployment", "controllerManager"),),
        crds=tuple(
            (KUEUE_GROUP, kind)
            for kind in (
                "AdmissionCheck", "ClusterQueue", "Cohort", "LocalQueue", "MultiKueueCluster", "MultiKueueConfig",
                "ProvisioningRequestConfig", "ResourceFlavor", "Topology", "WorkloadPriorityClass", "Workload",
            )
        ),
    ),
    "gpu-operator": ChartFacts(
        chart="gpu-operator",
        source=ChartSource("NVIDIA/gpu-operator", "deployments/gpu-operator/values.yaml", "v26.7.0", "10ee5b3638b89e11e949412aafa5ba99279c3721"),
        defaults={
            "nfd": {"enabled": True},
            "daemonsets": {"tolerations": [gpu_exists_toleration()]},
            "operator": {
                "nodeSelector": {OS_LABEL: "linux"},
                "tolerations": [control_plane_toleration()],
                "upgradeCRD": True,
            },
            "driver": {"enabled": True},
            "toolkit": {"enabled": True},
            "devicePlugin": {"enabled": True},
            "dcgm": {"enabled": False},
            "dcgmExporter": {"enabled": True},
            "gfd": {"enabled": True},
            "migManager": {"enabled": True},
            "nodeStatusExporter": {"enabled": False},
            "validator": {},
            "node-feature-discovery": {
                "worker": {"tolerations": [control_plane_toleration(), gpu_exists_toleration()]},
            },
        },
        workloads=(
            ChartWorkload("gpu-operator", "Deployment", "operator"),
            ChartWorkload("gpu-operator-upgrade-crd (pre-upgrade hook)", "Job", "operator", enabled_when=("operator.upgradeCRD",)),
            *(
                ChartWorkload(
                    f"nvidia-{suffix}-daemonset",
                    "DaemonSet",
                    key,
                    tolerations_from="daemonsets",
                    enabled_when=() if key == "validator" else (f"{key}.enabled",),
                    fixed_selector=((GPU_DEPLOY_LABEL_PREFIX + suffix, "true"),),
                    gpu_agent=True,
                )
                for key, suffix in GPU_OPERATOR_OPERANDS
            ),
        ),
        crds=(("nvidia.com", "ClusterPolicy"), ("nvidia.com", "NVIDIADriver"), ("nvidia.com", "GPUCluster")),
        subcharts=(("node-feature-discovery", "node-feature-discovery", ("nfd.enabled",)),),
    ),
    "nvidia-device-plugin": ChartFacts(
        chart="nvidia-device-plugin",
        source=ChartSource("NVIDIA/k8s-device-plugin", "deployments/helm/nvidia-device-plugin/values.yaml", "v0.20.0", "1b826acc6af3079d8923bac395c3124b8861a9a6"),
        defaults={
            "nodeSelector": {},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": PCI_NVIDIA_LABEL, "operator": "In", "values": ["true"]}]},
                            {"matchExpressions": [{"key": "feature.node.kubernetes.io/cpu-model.vendor_id", "operator": "In", "values": ["NVIDIA"]}]},
                            {"matchExpressions": [{"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]}]},
                        ]
                    }
                }
            },
            "tolerations": [critical_addons_toleration(), gpu_exists_toleration()],
            "devicePlugin": {"enabled": True},
            "gfd": {"enabled": False},
            "nfd": {
                "worker": {
                    "tolerations": [
                        {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
                        {"key": GPU_RESOURCE, "operator": "Equal", "value": "present", "effect": "NoSchedule"},
                    ]
                }
            },
        },
        workloads=(
            ChartWorkload("nvidia-device-plugin", "DaemonSet", "", enabled_when=("devicePlugin.enabled",), gpu_agent=True),
            ChartWorkload("gpu-feature-discovery", "DaemonSet", "", enabled_when=("gfd.enabled",), gpu_agent=True),
        ),
        subcharts=(("nfd", "node-feature-discovery", ("nfd.enabled", "gfd.enabled")),),
    ),
    "karpenter": ChartFacts(
        chart="karpenter",
        source=ChartSource("aws/karpenter-provider-aws", "charts/karpenter/values.yaml", "1.14.1", "bde00654cd316fddb3dccfba3f5ac07039865429"),
        defaults={
            "replicas": 2,
            "nodeSelector": {OS_LABEL: "linux"},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": KARPENTER_NODEPOOL_LABEL, "operator": "DoesNotExist"}]}]
                    }
                },
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": HOSTNAME_LABEL}]},
            },
            "tolerations": [critical_addons_toleration()],
        },
        workloads=(ChartWorkload("karpenter", "Deployment", "", replicas="replicas"),),
    ),
    "karpenter-crd": ChartFacts(
        chart="karpenter-crd",
        source=ChartSource("aws/karpenter-provider-aws", "charts/karpenter-crd/templates/", "1.14.1", "bde00654cd316fddb3dccfba3f5ac07039865429"),
        defaults={},
        crds=(
            ("karpenter.sh", "NodePool"),
            ("karpenter.sh", "NodeClaim"),
            ("karpenter.sh", "NodeOverlay"),
            ("karpenter.k8s.aws", "EC2NodeClass"),
            ("autoscaling.x-k8s.io", "CapacityBuffer"),
        ),
    ),
    "cilium": ChartFacts(
        chart="cilium",
        source=ChartSource("cilium/cilium", "Documentation/helm-values.rst", "version of the stored table not pinned", ""),
        defaults={
            "tolerations": [{"operator": "Exists"}],
            "operator": {"replicas": 2, "tolerations": [{"operator": "Exists"}], "nodeSelector": {OS_LABEL: "linux"}},
            "nodeSelector": {OS_LABEL: "linux"},
        },
        workloads=(
            ChartWorkload("cilium", "DaemonSet", ""),
            ChartWorkload("cilium-operator", "Deployment", "operator", replicas="operator.replicas"),
        ),
        crds=(("cilium.io", "CiliumNetworkPolicy"), ("cilium.io", "CiliumClusterwideNetworkPolicy")),
    ),
    "prometheus-operator-crds": ChartFacts(
        chart="prometheus-operator-crds",
        source=ChartSource("prometheus-community/helm-charts", "charts/prometheus-operator-crds/charts/crds/templates/", "see PROMETHEUS_OPERATOR_CRDS_VERSION", ""),
        defaults={},
        crds=tuple(
            ("monitoring.coreos.com", kind)
            for kind in ("Alertmanager", "AlertmanagerConfig", "PodMonitor", "Probe", "Prometheus", "PrometheusAgent", "PrometheusRule", "ScrapeConfig", "ServiceMonitor", "ThanosRuler")
        ),
    ),
    # opencost/opencost-helm-chart charts/opencost/values.yaml 2.5.17 (app 1.120.1): the Deployment
    # (templates/deployment.yaml) takes opencost.tolerations [] / nodeSelector {} / affinity {}, one replica.
    "opencost": ChartFacts(
        chart="opencost",
        source=ChartSource("opencost/opencost-helm-chart", "charts/opencost/values.yaml", "2.5.17", "725bb939d6a631a7b679cef38fe42a3d872efe64"),
        defaults={"opencost": {"tolerations": [], "nodeSelector": {}, "affinity": {}}},
        workloads=(ChartWorkload("opencost", "Deployment", "opencost"),),
    ),
}
# -- job framework charts (issue 30, H1) --
# JobSet charts/jobset 0.12.0, Kubeflow Trainer charts/kubeflow-trainer 2.2.1, KubeRay helm-chart/kuberay-operator
# 1.6.2 (pins and sources: hybridgpu.burst.frameworks; values: hybridgpu.render.frameworks; read 2026-11-27): one
# controller Deployment each with `tolerations: []`, `nodeSelector: {}`, `affinity: {}` in values; CRDs in `crds/`.
CHARTS.update(
    {
        "jobset": ChartFacts(
            chart="jobset",
            source=ChartSource("kubernetes-sigs/jobset", "charts/jobset/values.yaml", "0.12.0", "f22e565ac3cc3265c7c45ef67ecffdc689af5d77", "2026-11-27"),
            defaults={"controller": {"replicas": 1, "nodeSelector": {}, "affinity": {}, "tolerations": []}},
            workloads=(ChartWorkload("jobset-controller", "Deployment", "controller"),),
            crds=(("jobset.x-k8s.io", "JobSet"),),
        ),
        "kubeflow-trainer": ChartFacts(
            chart="kubeflow-trainer",
            source=ChartSource("kubeflow/trainer", "charts/kubeflow-trainer/values.yaml", "2.2.1", "c505fc7ccec98bb326cee56144bc5ee92be5048d", "2026-11-27"),
            defaults={"jobset": {"install": True}, "manager": {"replicas": 1, "nodeSelector": {}, "affinity": {}, "tolerations": []}},
            workloads=(ChartWorkload("kubeflow-trainer-controller-manager", "Deployment", "manager"),),
            crds=tuple(("trainer.kubeflow.org", k) for k in ("ClusterTrainingRuntime", "TrainingRuntime", "TrainJob")),
            subcharts=(("jobset", "jobset", ("jobset.install",)),),
        ),
        # The Trainer's JobSet subchart (Chart.yaml dependency 0.11.0, condition jobset.install; its values.yaml at
        # kubernetes-sigs/jobset v0.11.0 f7035a42 has the same controller.{replicas,nodeSelector,affinity,tolerations}).
        "kubeflow-trainer/jobset": ChartFacts(
            chart="jobset",
            source=ChartSource("kubernetes-sigs/jobset", "charts/jobset/values.yaml", "0.11.0", "f7035a420bb6ebfe7f05494ce2fdff12ade319bf", "2026-11-27"),
            defaults={"controller": {"replicas": 1, "nodeSelector": {}, "affinity": {}, "tolerations": []}},
            workloads=(ChartWorkload("jobset-controller", "Deployment", "controller"),),
            crds=(("jobset.x-k8s.io", "JobSet"),),
        ),
        "kuberay-operator": ChartFacts(
            chart="kuberay-operator",
            source=ChartSource("ray-project/kuberay", "helm-chart/kuberay-operator/values.yaml", "1.6.2", "598eb66aa077c55ae04fa87b192238a3ec184e88", "2026-11-27"),
            defaults={"replicas": 1, "nodeSelector": {}, "affinity": {}, "tolerations": []},
            workloads=(ChartWorkload("kuberay-operator", "Deployment", ""),),
            crds=tuple(("ray.io", k) for k in ("RayCluster", "RayCronJob", "RayJob", "RayService")),
        ),
    }
)
# -- platform charts: jupyterhub (issue 30, H3) --
# jupyterhub/zero-to-jupyterhub-k8s jupyterhub/values.yaml 4.4.0 (read 2026-11-27): hub, proxy (chp), user-scheduler
# and autohttps take `<block>.nodeSelector` and `scheduling.corePods.tolerations` (hub.jupyter.org/dedicated=core,
# also spelt hub.jupyter.org_dedicated) concatenated with `<block>.tolerations` [] (templates/hub/deployment.yaml,
# proxy/deployment.yaml, scheduling/user-scheduler/deployment.yaml, proxy/autohttps/deployment.yaml), and only a
# *preferred* node-purpose=core affinity (corePods.nodeAffinity.matchNodePurpose: prefer); user-scheduler
# replicas 2 without anti-affinity; the hook-image-awaiter Job takes prePuller.hook; the image-puller DaemonSets
# take singleuser.nodeSelector and scheduling.userPods.tolerations (+ singleuser.extraTolerations and
# prePuller.extraTolerations, both [] by default) (templates/image-puller/_helpers-daemonset.tpl).
_Z2JH_CORE = tuple(
    {"key": key, "operator": "Equal", "value": "core", "effect": "NoSchedule"} for key in ("hub.jupyter.org/dedicated", "hub.jupyter.org_dedicated")
)
CHARTS["jupyterhub"] = ChartFacts(
    chart="jupyterhub",
    source=ChartSource("jupyterhub/zero-to-jupyterhub-k8s", "jupyterhub/values.yaml", "4.4.0", "5c5f5df751588a68a7781ead01d0f62e88e2e72f", "2026-11-27"),
    defaults={
        "hub": {"nodeSelector": {}, "tolerations": []},
        "proxy": {"chp": {"nodeSelector": {}, "tolerations": []}, "traefik": {"nodeSelector": {}, "tolerations": []}, "https": {"enabled": False}},
        "singleuser": {"nodeSelector": {}},
        "scheduling": {
            "userScheduler": {"enabled": True, "replicas": 2, "nodeSelector": {}, "tolerations": []},
            "userPods": {"tolerations": [{**t, "value": "user"} for t in _Z2JH_CORE]},
        },
        "prePuller": {"hook": {"enabled": True, "nodeSelector": {}, "tolerations": []}, "continuous": {"enabled": True}},
    },
    workloads=(
        ChartWorkload("hub", "Deployment", "hub", fixed_tolerations=_Z2JH_CORE),
        ChartWorkload("proxy", "Deployment", "proxy.chp", fixed_tolerations=_Z2JH_CORE),
        ChartWorkload("autohttps", "Deployment", "proxy.traefik", enabled_when=("proxy.https.enabled",), fixed_tolerations=_Z2JH_CORE),
        ChartWorkload("user-scheduler", "Deployment", "scheduling.userScheduler", enabled_when=("scheduling.userScheduler.enabled",), fixed_tolerations=_Z2JH_CORE),
        ChartWorkload("hook-image-awaiter (pre-install/pre-upgrade hook)", "Job", "prePuller.hook", enabled_when=("prePuller.hook.enabled",), fixed_tolerations=_Z2JH_CORE),
        ChartWorkload("hook-image-puller (pre-install/pre-upgrade hook)", "DaemonSet", "singleuser", tolerations_from="scheduling.userPods", enabled_when=("prePuller.hook.enabled",)),
        ChartWorkload("continuous-image-puller", "DaemonSet", "singleuser", tolerations_from="scheduling.userPods", enabled_when=("prePuller.continuous.enabled",)),
    ),
)
# -- platform charts: mlflow, harbor (issues 30 and 27, H4) --
# mlflow/mlflow charts/ 0.1.0 (Chart.yaml ed375243, values.yaml 9e068576, read 2026-11-27): one Deployment taking the
# top-level tolerations [] / nodeSelector {} / affinity {}. goharbor/harbor-helm v1.19.1 (ae011519, read 2026-11-27):
# every component has tolerations [] / nodeSelector {} / affinity {}; nginx only when expose.type is not ingress,
# trivy with trivy.enabled, database/redis internal (StatefulSets), exporter with metrics.enabled.
CHARTS["mlflow"] = ChartFacts(
    chart="mlflow",
    source=ChartSource("mlflow/mlflow", "charts/values.yaml", "0.1.0", "9e068576c4665f66c6e8eafe65b28be1314210ff", read="2026-11-27"),
    defaults={"replicaCount": 1, "tolerations": [], "nodeSelector": {}, "affinity": {}},
    workloads=(ChartWorkload("mlflow", "Deployment", ""),),
)
CHARTS["harbor"] = ChartFacts(
    chart="harbor",
    source=ChartSource("goharbor/harbor-helm", "values.yaml", "1.19.1", "ae011519ef17a47478a3639d7680902c6adcb0a5", read="2026-11-27"),
    defaults={
        "expose": {"type": "ingress"},
        "trivy": {"enabled": True, "tolerations": [], "nodeSelector": {}, "affinity": {}},
        "metrics": {"enabled": False},
        "database": {"type": "internal", "internal": {"tolerations": [], "nodeSelector": {}, "affinity": {}}},
        "redis": {"type": "internal", "internal": {"tolerations": [], "nodeSelector": {}, "affinity": {}}},
        **{c: {"tolerations": [], "nodeSelector": {}, "affinity": {}} for c in ("nginx", "portal", "core", "jobservice", "registry", "exporter")},
    },
    workloads=(
        # nginx exists unless expose.type is ingress; listed always (it takes the same scheduling values as the rest).
        ChartWorkload("harbor-nginx", "Deployment", "nginx"),
        ChartWorkload("harbor-portal", "Deployment", "portal"),
        ChartWorkload("harbor-core", "Deployment", "core"),
        ChartWorkload("harbor-jobservice", "Deployment", "jobservice"),
        ChartWorkload("harbor-registry", "Deployment", "registry"),
        ChartWorkload("harbor-trivy", "StatefulSet", "trivy", enabled_when=("trivy.enabled",)),
        ChartWorkload("harbor-database", "StatefulSet", "database.internal"),
        ChartWorkload("harbor-redis", "StatefulSet", "redis.internal"),
        ChartWorkload("harbor-exporter", "Deployment", "exporter", enabled_when=("metrics.enabled",)),
    ),
)
CHARTS.update(STORAGE_CHARTS)
CHARTS.update(EFA_CHARTS)
CHARTS.update(NETWORK_OPERATOR_CHARTS)
CHARTS["gpu-operator/node-feature-discovery"] = _NFD
CHARTS["nvidia-device-plugin/nfd"] = _NFD


def helm_merge(defaults: Any, overrides: Any) -> Any:
    """Helm's value coalescing: maps merge key by key, anything else (lists included) is replaced; ``None`` deletes a default.

    Source: helm/helm ``pkg/chart/v2/util/coalesce.go`` (``coalesceTablesFullKey``: a user
    value replaces a default unless both are tables; a ``nil`` user value removes the key).
    Returns a new structure; the inputs are not changed.
    """
    if not isinstance(defaults, Mapping) or not isinstance(overrides, Mapping):
        return copy.deepcopy(overrides)
    merged = {k: copy.deepcopy(v) for k, v in defaults.items()}
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif key in merged:
            merged[key] = helm_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _get(values: Mapping[str, Any], path: str) -> Any:
    node: Any = values
    for part in [p for p in path.split(".") if p]:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _placements(facts: ChartFacts, values: Mapping[str, Any], release: str) -> list[PodPlacement]:
    found = []
    for w in facts.workloads:
        if w.enabled_when and not any(bool(_get(values, p)) for p in w.enabled_when):
            continue
        block = _get(values, w.values) or {}
        tolerations = _get(values, w.tolerations_from + ".tolerations") if w.tolerations_from else block.get("tolerations")
        if w.tolerate_all_when and _get(values, w.tolerate_all_when):
            tolerations = [{"operator": "Exists"}]
        else:
            tolerations = [*(tolerations or ()), *w.fixed_tolerations]
        affinity = block.get("affinity") or {}
        required = ((affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
        if w.instance_label_affinity:
            labels = _get(values, w.instance_label_affinity) or {}
            required = [{"matchExpressions": [{"key": k, "operator": "In", "values": list(labels.get("values") or [])}]} for k in labels.get("keys") or []]
            if required:
                required[-1]["matchExpressions"] += [dict(e) for e in w.fixed_expressions]
        anti = (affinity.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
        spread = any(term.get("topologyKey") == HOSTNAME_LABEL for term in anti)
        replicas = int(_get(values, w.replicas) or 1) if w.replicas else 1
        found.append(
            PodPlacement(
                name=f"{release}/{w.name}",
                kind=w.kind,
                tolerations=tuple(tolerations or ()),
                node_selector={**{str(k): str(v) for k, v in (block.get("nodeSelector") or {}).items()}, **dict(w.fixed_selector)},
                required_terms=tuple(required) if required is not None else None,
                gpu_agent=w.gpu_agent,
                replicas_on_distinct_nodes=replicas if spread else 0,
                source=str(facts.source),
                device=w.device,
            )
        )
    return found


def chart_placements(chart: str, values: Mapping[str, Any], release: str) -> list[PodPlacement]:
    """The pods a release of ``chart`` creates, with their scheduling fields after Helm merged ``values`` over the defaults.

    Args:
        chart: a key of :data:`CHARTS` (``kueue``, ``gpu-operator``, ``nvidia-device-plugin``, ``karpenter``, ``cilium``,
            ``aws-fsx-csi-driver``, ``csi-driver-nfs``, ...).
        values: the values we pass to the release (what the component renders).
        release: the Helm release name (prefixes the workload names).

    Returns:
        One :class:`PodPlacement` per enabled workload, subcharts included.

    Raises:
        KeyError: an unknown chart.
    """
    facts = CHARTS[chart]
    merged = helm_merge(facts.defaults, values)
    found = _placements(facts, merged, release)
    for key, sub, conditions in facts.subcharts:
        if any(bool(_get(merged, c)) for c in conditions):
            sub_facts = CHARTS[f"{chart}/{sub if key == sub else key}"]
            found += _placements(sub_facts, helm_merge(sub_facts.defaults, merged.get(key) or {}), f"{release}/{sub}")
    return found
