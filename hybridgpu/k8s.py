"""Kubernetes names and grammar: the one place hybridgpu spells them.

Label, taint, resource, annotation and tag names; the Kueue API version; the DNS-1123 name
patterns and their validators; the quantity grammar and parser (:func:`quantity`,
:func:`parse_quantity`, :func:`device_count`); the taint and toleration objects as the API
writes them (:func:`taint_object`, :func:`toleration_for`).

Every renderer, check, policy and component imports the names from here, so a name cannot
drift between, say, the label the kubeadm renderer puts on a node and the one a policy
looks for. ``tests/test_k8s_names.py`` fails when a module under ``hybridgpu/`` other than
this one spells one of these names as a string literal, and checks that the project's
defaults (Pulumi.yaml, the config models, the policy pack) name the same cost keys.

Upstream names carry their source and the date it was read; the ``hybridgpu.io/*`` names
are this project's own. The module is pure and imports nothing from hybridgpu (import
contract layer ``modelbase | k8s | collector`` in pyproject.toml), so every layer may use it.
Other API groups and versions (``karpenter.sh/v1``, ...) stay with their one renderer; the Kueue
API, which the burst, teams and topology renderers and checks all write, is here.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, NamedTuple

from pydantic import BeforeValidator, StringConstraints

__all__ = [
    "ARCH_LABEL",
    "CAPACITY_TYPE_LABEL",
    "CLUSTER_TAG_PREFIX",
    "CONTROL_PLANE_TAINT",
    "CORDONED_BY_ANNOTATION",
    "CRITICAL_ADDONS_TAINT",
    "DNS1123_LABEL_FMT",
    "DNS1123_LABEL_MAX",
    "DNS1123_LABEL_PATTERN",
    "DNS1123_SUBDOMAIN_MAX",
    "DNS1123_SUBDOMAIN_PATTERN",
    "Dns1123Name",
    "Dns1123Subdomain",
    "DEFAULT_COST_KEYS",
    "DEVICE_PLUGIN_CONFIG_LABEL",
    "DISCOVERY_TAG",
    "EC2NODECLASS_TAG",
    "EFA_LABEL",
    "EFA_RESOURCE",
    "ELB_TAG",
    "GPU_COUNT_LABEL",
    "GPU_MODEL_LABEL",
    "GPU_PRESENT_LABEL",
    "GPU_PRODUCT_LABEL",
    "GPU_RESOURCE",
    "GPU_TAINT",
    "HOSTNAME_LABEL",
    "INSTANCE_FAMILY_LABEL",
    "INSTANCE_GPU_COUNT_LABEL",
    "INSTANCE_GPU_NAME_LABEL",
    "INSTANCE_TYPE_LABEL",
    "INTERNAL_ELB_TAG",
    "KUEUE_API",
    "HOSTNAME_FMT",
    "HOSTNAME_PATTERN",
    "HostName",
    "LABEL_KEY_MAX",
    "LABEL_KEY_PATTERN",
    "LABEL_NAME_FMT",
    "LABEL_VALUE_PATTERN",
    "LabelKey",
    "LabelValue",
    "KUEUE_GROUP",
    "KUEUE_PRIORITY_CLASS_LABEL",
    "KUEUE_QUEUE_NAME_LABEL",
    "KARPENTER_NODEPOOL_LABEL",
    "KUBELET_ALLOWED_LABELS",
    "KUBELET_ALLOWED_LABEL_NAMESPACES",
    "KUBELET_RESTRICTED_LABEL_NAMESPACES",
    "MANAGED_BY",
    "MANAGED_BY_LABEL",
    "MIG_CONFIG_LABEL",
    "MIG_RESOURCE_PREFIX",
    "MIG_STRATEGY_LABEL",
    "NAMESPACE_NAME_LABEL",
    "NETWORK_NODE_LAYER_PREFIX",
    "NODECLAIM_TAG",
    "NODEPOOL_LABEL",
    "NODE_RESTRICTION_NAMESPACE",
    "OS_LABEL",
    "POD_SECURITY_AUDIT_LABEL",
    "POD_SECURITY_ENFORCE_LABEL",
    "POD_SECURITY_WARN_LABEL",
    "QUANTITY_PATTERN",
    "QuantityError",
    "REGION_LABEL",
    "RESERVED_TAG_PREFIXES",
    "ROLE_LABEL",
    "SERVICE_ACCOUNT_NAME_ANNOTATION",
    "SERVICE_ACCOUNT_TOKEN_SECRET_TYPE",
    "STACK_TAG",
    "SYSTEM_ROLE",
    "TaintSpec",
    "ZONE_LABEL",
    "TOPOLOGY_BLOCK_LABEL",
    "TOPOLOGY_RACK_LABEL",
    "RDMA_IB_RESOURCE",
    "RDMA_ROCE_RESOURCE",
    "PCI_MELLANOX_LABEL",
    "MOFED_WAIT_LABEL",
    "FABRIC_LABEL",
    "cluster_tag",
    "device_count",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_hostname",
    "is_kubelet_settable_label",
    "managed_by_labels",
    "mig_resource_name",
    "network_node_layer_label",
    "parse_quantity",
    "quantity",
    "taint_object",
    "toleration_for",
]


class TaintSpec(NamedTuple):
    """A node taint as Kubernetes spells it: ``key[=value]:effect`` (effect ``NoSchedule``, ...)."""

    key: str
    value: str | None
    effect: str


# --------------------------------------------------------------------------- NVIDIA
# Resources, node labels and the taint of the NVIDIA device plugin, GPU feature discovery
# (GFD), the GPU Operator and its mig-manager.

#: Resource of whole GPUs (and, under ``migStrategy: single``, of MIG devices); NVIDIA/k8s-device-plugin v0.20.0 README (read 2026-11-22).
GPU_RESOURCE = "nvidia.com/gpu"
#: Prefix of MIG device resources under ``migStrategy: mixed``; NVIDIA/k8s-device-plugin v0.20.0 ``internal/rm/rm.go`` (read 2026-11-22).
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
#: Node label the mig-manager reads to pick a mig-parted config; NVIDIA/mig-parted ``cmd/nvidia-mig-manager/main.go`` ``MigConfigLabel`` at bd7160f4 (2026-08-21).
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
#: Node label that selects a device-plugin config (its config-manager reads it); NVIDIA/k8s-device-plugin v0.20.0 (2026-08-19, read 2026-11-22).
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
#: Node label the GPU Operator's operands select GPU nodes by (set by NFD, or by kubeadm here); NVIDIA/gpu-operator (no source was recorded with the old constant; not re-read).
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
#: GFD node label with the GPU product; NVIDIA/k8s-device-plugin v0.20.0 ``docs/gpu-feature-discovery`` README, "Generated Labels" (read 2026-11-22).
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
#: GFD node label with the node's MIG strategy (``none``/``single``/``mixed``); same source as :data:`GPU_PRODUCT_LABEL` (read 2026-11-22).
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
#: Taint every GPU node carries, so only pods that tolerate it (GPU workloads) land there; the key is the
#: resource name, which the NVIDIA charts tolerate by default (as the old kubeadm constant said; not re-read).
GPU_TAINT = TaintSpec(GPU_RESOURCE, "true", "NoSchedule")


def mig_resource_name(profile: str) -> str:
    """Kubernetes resource name of a MIG profile under the ``mixed`` strategy.

    ``"1g.10gb"`` -> ``"nvidia.com/mig-1g.10gb"``; ``"1g.10gb+me"`` ->
    ``"nvidia.com/mig-1g.10gb.me"`` (the device plugin replaces ``+`` with ``.``:
    NVIDIA/k8s-device-plugin v0.20.0 ``internal/rm/rm.go``, read 2026-11-22).
    """
    return MIG_RESOURCE_PREFIX + profile.replace("+", ".")


# --------------------------------------------------------------------------- Karpenter
# Well-known labels: Karpenter v1.14 ``website/content/en/v1.14/concepts/scheduling.md``,
# "Well-Known Labels" (aws/karpenter-provider-aws at 1d927085, read 2026-11-22). Tags: the
# reference controller policy, ``getting-started-with-karpenter/cloudformation.yaml`` v1.14
# (read 2026-11-22), and ``concepts/nodeclasses.md`` "spec.tags" (read 2026-11-22).

#: NodePool that launched a node (a label), also the tag Karpenter puts on its instances (Karpenter v1.14 scheduling.md / cloudformation.yaml, read 2026-11-22).
KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"
#: ``spot``, ``on-demand`` or ``reserved`` (Karpenter v1.14 scheduling.md, read 2026-11-22).
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
#: EC2 instance family, e.g. ``p5`` (Karpenter v1.14 scheduling.md, read 2026-11-22).
INSTANCE_FAMILY_LABEL = "karpenter.k8s.aws/instance-family"
#: GPU name of the instance type, e.g. ``h100`` (Karpenter v1.14 scheduling.md, read 2026-11-22).
INSTANCE_GPU_NAME_LABEL = "karpenter.k8s.aws/instance-gpu-name"
#: GPUs per instance (Karpenter v1.14 scheduling.md, read 2026-11-22).
INSTANCE_GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
#: Tag that EC2NodeClass selectors use to find subnets and security groups (Karpenter v1.14 nodeclasses.md, read 2026-11-22).
DISCOVERY_TAG = "karpenter.sh/discovery"
#: Tag naming the NodeClaim of an instance (Karpenter v1.14 cloudformation.yaml, AllowScopedResourceTagging; read 2026-11-22).
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
#: Tag naming the EC2NodeClass of an instance profile (Karpenter v1.14 cloudformation.yaml, instance-profile statements; read 2026-11-22).
EC2NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
#: Tag keys Karpenter reserves and refuses in ``EC2NodeClass.spec.tags`` (Karpenter v1.14 nodeclasses.md, "spec.tags"; read 2026-11-22).
RESERVED_TAG_PREFIXES = ("kubernetes.io/cluster", "karpenter.sh/", "karpenter.k8s.aws/")


# --------------------------------------------------------------------------- Kubernetes
# Well-known names: kubernetes.io/docs/reference/labels-annotations-taints (v1.35 docs,
# read 2026-11-24) unless a line says otherwise.

#: Node name label, set by the kubelet (labels-annotations-taints, v1.35 docs, read 2026-11-24).
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: Node operating system (labels-annotations-taints, v1.35 docs, read 2026-11-24).
OS_LABEL = "kubernetes.io/os"
#: Node CPU architecture (labels-annotations-taints, v1.35 docs, read 2026-11-24).
ARCH_LABEL = "kubernetes.io/arch"
#: Instance type of a node; Karpenter selects on it too (labels-annotations-taints, v1.35 docs, read 2026-11-24).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: Zone of a node (labels-annotations-taints, v1.35 docs, read 2026-11-24).
ZONE_LABEL = "topology.kubernetes.io/zone"
#: Region of a node; Karpenter also tags instance profiles with it (labels-annotations-taints v1.35, read 2026-11-24; Karpenter v1.14 cloudformation.yaml).
REGION_LABEL = "topology.kubernetes.io/region"
#: Namespace label holding the namespace's own name, set by the API server (labels-annotations-taints, v1.35 docs, read 2026-11-24).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: Recommended label naming the tool that manages an object (labels-annotations-taints, v1.35 docs, read 2026-11-24).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
#: Value of :data:`MANAGED_BY_LABEL` on every object hybridgpu renders (this project's own).
MANAGED_BY = "hybridgpu"
#: Pod Security admission namespace labels, one per mode (labels-annotations-taints and "Enforce Pod Security Standards with Namespace Labels", v1.35 docs, read 2026-11-24).
POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_AUDIT_LABEL = "pod-security.kubernetes.io/audit"
POD_SECURITY_WARN_LABEL = "pod-security.kubernetes.io/warn"
#: Secret type the token controller fills with a service account token (Kubernetes docs, "Secrets"; not re-read).
SERVICE_ACCOUNT_TOKEN_SECRET_TYPE = "kubernetes.io/service-account-token"
#: Annotation naming the service account of such a Secret (labels-annotations-taints, v1.35 docs, read 2026-11-24).
SERVICE_ACCOUNT_NAME_ANNOTATION = "kubernetes.io/service-account.name"
#: kubeadm's default control-plane taint (kubeadm v1beta4 ``nodeRegistration.taints`` default; hybridgpu/render/kubeadm.py API facts, read 2026-11-22).
CONTROL_PLANE_TAINT = TaintSpec("node-role.kubernetes.io/control-plane", None, "NoSchedule")
#: Taint of the EKS system node group: only pods tolerating it run there. The key is the Kubernetes add-on
#: convention: the upstream CoreDNS manifest tolerates it (kubernetes/kubernetes
#: ``cluster/addons/dns/coredns/coredns.yaml.base`` @008b3652: ``tolerations: [{key: CriticalAddonsOnly,
#: operator: Exists}]``, read 2026-11-24); every controller hybridgpu installs tolerates it
#: (:func:`hybridgpu.render.charts.controller_tolerations`, checked by ``hybridgpu.stack.scheduling``).
CRITICAL_ADDONS_TAINT = TaintSpec("CriticalAddonsOnly", "true", "NoSchedule")


def managed_by_labels() -> dict[str, str]:
    """A fresh ``{MANAGED_BY_LABEL: MANAGED_BY}`` dict for an object's ``metadata.labels``."""
    return {MANAGED_BY_LABEL: MANAGED_BY}


# --------------------------------------------------------------------------- AWS tags read by Kubernetes components

#: Prefix of the cluster-ownership tag ``kubernetes.io/cluster/<name>`` (``owned`` or ``shared``); Karpenter v1.14 cloudformation.yaml (read 2026-11-22) and the AWS Load Balancer Controller's subnet discovery.
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
#: Subnet tag marking subnets for internal load balancers (AWS Load Balancer Controller subnet discovery; no date was recorded with the old literal).
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
#: Subnet tag marking subnets for internet-facing load balancers (same source as :data:`INTERNAL_ELB_TAG`).
ELB_TAG = "kubernetes.io/role/elb"


def cluster_tag(cluster_name: str) -> str:
    """The cluster-ownership tag key of ``cluster_name``: ``kubernetes.io/cluster/<name>``."""
    return CLUSTER_TAG_PREFIX + cluster_name


# --------------------------------------------------------------------------- kubelet self-labelling
# Which labels a kubelet may put on its own Node (``--node-labels``): the kubelet refuses to
# start, and the NodeRestriction admission plugin refuses the update, for any other key in
# the ``kubernetes.io`` / ``k8s.io`` namespaces. Source: kubernetes/kubernetes
# ``staging/src/k8s.io/kubelet/pkg/apis/well_known_labels.go`` (``kubeletLabels``,
# ``kubeletLabelNamespaces``) and ``plugin/pkg/admission/noderestriction`` (read 2026-11-22).

#: Label keys the kubelet may set on its own Node although they are in the kubernetes.io namespace (``kubeletLabels``, read 2026-11-22).
KUBELET_ALLOWED_LABELS: frozenset[str] = frozenset(
    {
        HOSTNAME_LABEL,
        ZONE_LABEL,
        REGION_LABEL,
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        INSTANCE_TYPE_LABEL,
        OS_LABEL,
        ARCH_LABEL,
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    }
)
#: Label namespaces (and their subdomains) the kubelet may set (``kubeletLabelNamespaces``, read 2026-11-22).
KUBELET_ALLOWED_LABEL_NAMESPACES: tuple[str, ...] = ("kubelet.kubernetes.io", "node.kubernetes.io")
#: Label namespaces (and their subdomains) reserved to Kubernetes: a kubelet may set only the allowed keys in them (well_known_labels.go, read 2026-11-22).
KUBELET_RESTRICTED_LABEL_NAMESPACES: tuple[str, ...] = ("kubernetes.io", "k8s.io")
#: Namespace NodeRestriction forbids kubelets to set at all (noderestriction admission plugin, read 2026-11-22).
NODE_RESTRICTION_NAMESPACE = "node-restriction.kubernetes.io"


def _in_namespace(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_kubelet_settable_label(key: str) -> bool:
    """True if a kubelet may set ``key`` on its own Node (``--node-labels`` and NodeRestriction).

    Keys outside the ``kubernetes.io`` / ``k8s.io`` namespaces are free, except
    ``node-restriction.kubernetes.io``; inside them only :data:`KUBELET_ALLOWED_LABELS` and the
    ``kubelet.kubernetes.io`` / ``node.kubernetes.io`` namespaces (with subdomains) pass.
    """
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if _in_namespace(namespace, NODE_RESTRICTION_NAMESPACE):
        return False
    is_k8s = any(_in_namespace(namespace, d) for d in KUBELET_RESTRICTED_LABEL_NAMESPACES)
    if not is_k8s or key in KUBELET_ALLOWED_LABELS:
        return True
    return any(_in_namespace(namespace, ns) for ns in KUBELET_ALLOWED_LABEL_NAMESPACES)


# --------------------------------------------------------------------------- Kueue
# Job labels Kueue reads: kubernetes-sigs/kueue v0.19.2 ``pkg/controller/constants/constants.go``
# (``QueueLabel``, ``WorkloadPriorityClassLabel``), read 2026-11-24.

#: Job label naming the LocalQueue (of the Job's namespace) the Job is submitted to.
KUEUE_QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
#: Job label naming the Kueue WorkloadPriorityClass of the Job's workload.
KUEUE_PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


# --------------------------------------------------------------------------- hybridgpu's own names

#: Node role (``control-plane``, ``gpu-worker``, ... on-prem; :data:`SYSTEM_ROLE` on the EKS system nodes); kubelet-settable.
ROLE_LABEL = "hybridgpu.io/role"
#: Value of :data:`ROLE_LABEL` on the EKS system node group, where Karpenter runs.
SYSTEM_ROLE = "system"
#: Name of the hybridgpu NodePool config a cloud node comes from (NodePool template label).
NODEPOOL_LABEL = "hybridgpu.io/nodepool"
#: GPU model of an on-prem node, as a label value (e.g. ``H100-80GB``).
GPU_MODEL_LABEL = "hybridgpu.io/gpu-model"
#: GPUs of an on-prem node (count, as a string).
GPU_COUNT_LABEL = "hybridgpu.io/gpu-count"
#: Tag naming the Pulumi stack that owns an AWS resource.
STACK_TAG = "hybridgpu.io/stack"

#: Default cost-attribution keys: tags on every AWS resource and GPU instance, labels on GPU pods.
#: The same keys are the default of ``requiredTagKeys`` in Pulumi.yaml and of
#: ``policies/config.example.json`` (tests/test_k8s_names.py checks they agree).
DEFAULT_COST_KEYS: tuple[str, ...] = ("team", "project", "cost-center")

#: Name of the dataset PersistentVolumeClaim hybridgpu creates in every training namespace (FSx for Lustre on EKS,
#: the inventory's NFS storage on-prem; hybridgpu.render.storage): job examples mount ``claimName: training-data``.
TRAINING_DATA_CLAIM = "training-data"
#: StorageClass of the training-data volumes (static: ``kubernetes.io/no-provisioner``, nothing is provisioned on demand).
TRAINING_DATA_STORAGE_CLASS = "training-data"
#: The in-tree "provisioner" of StorageClasses whose volumes are created by hand (static PersistentVolumes only;
#: Kubernetes docs "Storage Classes", Local, read 2026-11-24).
NO_PROVISIONER = "kubernetes.io/no-provisioner"
#: Label EKS puts on Fargate nodes; the aws-fsx-csi-driver chart keeps its pods off them (values.yaml 1.17.0 affinity).
EKS_COMPUTE_TYPE_LABEL = "eks.amazonaws.com/compute-type"
#: Startup taint the FSx CSI node plugin removes once ready (kubernetes-sigs/aws-fsx-csi-driver docs/install.md,
#: "Configure node startup taint"; the chart tolerates it when ``node.tolerateAllTaints`` is false, 1.17.0).
FSX_AGENT_NOT_READY_TAINT_KEY = "fsx.csi.aws.com/agent-not-ready"

# --------------------------------------------------------------------------- EFA and EKS instance topology (H1)
#: Extended resource of EFA devices, advertised by the AWS EFA device plugin and counted by Karpenter
#: (aws/karpenter-provider-aws v1.14.1 ``pkg/apis/v1/labels.go`` ``ResourceEFA``; the plugin's README, read 2026-11-24).
EFA_RESOURCE = "vpc.amazonaws.com/efa"
#: Template label of every NodePool whose EC2NodeClass attaches EFA interfaces (this project's own): the EFA device
#: plugin selects nodes by it, EFA workloads select it, the TAS ResourceFlavors of EFA pools carry it.
EFA_LABEL = "hybridgpu.io/efa"
#: Prefix of the instance topology labels the AWS cloud controller manager puts on nodes from EC2
#: DescribeInstanceTopology, layer 1 (top, farthest from the instance) to 3 (the network node the instance is
#: attached to) on p4d/p4de/p5/p5e/p5en (4 layers on p6-b200): kubernetes/cloud-provider-aws v1.35.2
#: ``pkg/providers/v1/well_known_labels.go`` ``LabelNetworkNodePrefix`` and ``instances_v2.go``
#: ``getAdditionalLabels`` (read 2026-11-24).
NETWORK_NODE_LAYER_PREFIX = "topology.k8s.aws/network-node-layer-"


def network_node_layer_label(layer: int) -> str:
    """The instance topology label of ``layer`` (1 = top of the hierarchy): ``topology.k8s.aws/network-node-layer-<layer>``."""
    return f"{NETWORK_NODE_LAYER_PREFIX}{layer}"

#: Topology levels of an on-prem host (inventory ``block`` and ``rack``), set through kubelet ``--node-labels``; the
#: project's own prefix because NodeRestriction lets a kubelet set only an allow-list of kubernetes.io labels
#: (:func:`is_kubelet_settable_label`). The Kueue Topology's levels (hybridgpu.render.topology).
TOPOLOGY_BLOCK_LABEL = "hybridgpu.io/topology-block"
TOPOLOGY_RACK_LABEL = "hybridgpu.io/topology-rack"
#: Extended resources of the RDMA shared device plugin (Mellanox/k8s-rdma-shared-dev-plugin ``pkg/types/types.go``:
#: ``resourcePrefix`` default ``rdma``), one per fabric, as hybridgpu configures it in the NicClusterPolicy
#: (hybridgpu.render.network_operator).
RDMA_IB_RESOURCE = "rdma/rdma_shared_device_ib"
RDMA_ROCE_RESOURCE = "rdma/rdma_shared_device_roce"
#: NFD label of a node with an NVIDIA (Mellanox) network device, PCI vendor 15b3 (Mellanox/network-operator v26.4.1
#: ``deployment/network-operator/templates/nodefeaturerules.yaml``): the operands' nodeSelector.
PCI_MELLANOX_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
#: Label the Network Operator sets to ``false`` on nodes with a Mellanox NIC when it deploys no OFED driver
#: (``controllers/nicclusterpolicy_controller.go`` ``handleWaitLabelsNoConfig``, v26.4.1); its operands select it.
MOFED_WAIT_LABEL = "network.nvidia.com/operator.mofed.wait"
#: The host's RDMA fabric (``infiniband`` or ``roce``; unset without one), set through kubelet ``--node-labels``: the
#: NicClusterPolicy's operands select it (hybridgpu.render.network_operator), and jobs may too.
FABRIC_LABEL = "hybridgpu.io/fabric"
#: Node annotation an on-prem upgrade sets in the same API write that cordons the node (value ``upgrade-<id>``,
#: hybridgpu.render.upgrade); the upgrade uncordons only a node that carries it, so a node cordoned by anyone else stays so.
CORDONED_BY_ANNOTATION = "hybridgpu.io/cordoned-by"


# --------------------------------------------------------------------------- API groups and versions
# The Kueue API every renderer writes and every check reads: kubernetes-sigs/kueue v0.19.2
# ``apis/kueue/v1beta2/groupversion_info.go`` (read 2026-11-24).

#: API group of Kueue's objects (ResourceFlavor, ClusterQueue, ..., Topology) and of RBAC rules over them.
KUEUE_GROUP = "kueue.x-k8s.io"
#: ``apiVersion`` of every Kueue object hybridgpu renders.
KUEUE_API = f"{KUEUE_GROUP}/v1beta2"


# --------------------------------------------------------------------------- object names (DNS-1123)
# kubernetes/apimachinery ``pkg/util/validation/validation.go`` (``dns1123LabelFmt``,
# ``DNS1123LabelMaxLength``, ``dns1123SubdomainFmt``, ``DNS1123SubdomainMaxLength``; master at 2026-07, read
# 2026-11-26). The patterns are anchored with ``^...$`` (pydantic's ``pattern=`` and ``re.match`` alike).

#: One DNS-1123 label, unanchored: lowercase alphanumerics and ``-``, starting and ending alphanumeric.
DNS1123_LABEL_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#: A DNS-1123 label (namespaces, most object names, ``hybridgpu.io/*`` values that name objects); at most 63 characters.
DNS1123_LABEL_PATTERN = f"^{DNS1123_LABEL_FMT}$"
DNS1123_LABEL_MAX = 63
#: A DNS-1123 subdomain (cluster-scoped object names, API groups, host names): labels joined by ``.``; at most 253 characters.
DNS1123_SUBDOMAIN_PATTERN = rf"^{DNS1123_LABEL_FMT}(\.{DNS1123_LABEL_FMT})*$"
DNS1123_SUBDOMAIN_MAX = 253

#: A host name (RFC 1123), unanchored: a DNS-1123 subdomain whose labels are at most 63 characters each, as DNS
#: allows (apimachinery checks only the total length of a subdomain). Node names, NFS servers, endpoints.
HOSTNAME_FMT = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*"
#: A host name, anchored (at most 253 characters, checked apart).
HOSTNAME_PATTERN = f"^{HOSTNAME_FMT}$"
#: The name part of a label key, and a label value when not empty (``qualifiedNameFmt`` and ``labelValueFmt``, same
#: file): alphanumerics, ``-``, ``_`` and ``.``, starting and ending alphanumeric, at most 63 characters (in the pattern).
LABEL_NAME_FMT = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
#: A label (or taint) key, anchored: ``[<DNS-1123 subdomain>/]<name>``; the whole at most 317 characters (253 + 1 + 63).
LABEL_KEY_PATTERN = rf"^({DNS1123_LABEL_FMT}(\.{DNS1123_LABEL_FMT})*/)?{LABEL_NAME_FMT}$"
LABEL_KEY_MAX = 317
#: A label value, anchored: empty, or like a label key's name.
LABEL_VALUE_PATTERN = f"^({LABEL_NAME_FMT})?$"

_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_PATTERN)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_PATTERN)

#: A pydantic field type of a DNS-1123 label (at most 63 characters).
Dns1123Name = Annotated[str, StringConstraints(pattern=DNS1123_LABEL_PATTERN, max_length=DNS1123_LABEL_MAX)]
#: A pydantic field type of a DNS-1123 subdomain (at most 253 characters).
Dns1123Subdomain = Annotated[str, StringConstraints(pattern=DNS1123_SUBDOMAIN_PATTERN, max_length=DNS1123_SUBDOMAIN_MAX)]
#: A pydantic field type of a host name (:data:`HOSTNAME_PATTERN`, at most 253 characters).
HostName = Annotated[str, StringConstraints(pattern=HOSTNAME_PATTERN, max_length=DNS1123_SUBDOMAIN_MAX)]
#: A pydantic field type of a label or taint key (:data:`LABEL_KEY_PATTERN`).
LabelKey = Annotated[str, StringConstraints(pattern=LABEL_KEY_PATTERN, max_length=LABEL_KEY_MAX)]
#: A pydantic field type of a label value (:data:`LABEL_VALUE_PATTERN`: at most 63 characters).
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE_PATTERN)]
_HOSTNAME_RE = re.compile(HOSTNAME_PATTERN)


def is_dns1123_label(value: object) -> bool:
    """True if ``value`` is a string that is a DNS-1123 label (``[a-z0-9]([-a-z0-9]*[a-z0-9])?``, 1 to 63 characters)."""
    return isinstance(value, str) and len(value) <= DNS1123_LABEL_MAX and _DNS1123_LABEL_RE.fullmatch(value) is not None


def is_hostname(value: object) -> bool:
    """True if ``value`` is a string that is a host name (:data:`HOSTNAME_PATTERN`, 1 to 253 characters)."""
    return isinstance(value, str) and len(value) <= DNS1123_SUBDOMAIN_MAX and _HOSTNAME_RE.fullmatch(value) is not None


def is_dns1123_subdomain(value: object) -> bool:
    """True if ``value`` is a string that is a DNS-1123 subdomain (labels joined by ``.``, 1 to 253 characters)."""
    return isinstance(value, str) and len(value) <= DNS1123_SUBDOMAIN_MAX and _DNS1123_SUBDOMAIN_RE.fullmatch(value) is not None


# --------------------------------------------------------------------------- quantities
# ``resource.Quantity``: kubernetes/apimachinery ``pkg/api/resource/quantity.go`` (the grammar in the
# type's comment: a signed decimal number, then a binary-SI suffix ``Ki``..``Ei``, a decimal-SI suffix
# ``n u m k M G T P E`` or a decimal exponent ``e<n>``/``E<n>``). The anchored pattern is the one
# controller-gen writes into every CRD field of type Quantity (kubernetes-sigs/controller-tools
# ``pkg/crd/known_types.go``, as in Kueue v0.19.2's ``kueue.x-k8s.io_clusterqueues.yaml``, read 2026-11-24).
# The value is computed by the Kubernetes Python client's ``kubernetes.utils.quantity.parse_quantity``
# (kubernetes 36.0.3), which alone is more lenient than the grammar (``"Infinity"``, ``"1_000"``).

#: The serialized form of a Kubernetes quantity, anchored.
QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
_QUANTITY_RE = re.compile(QUANTITY_PATTERN)


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity, or not one the field allows (a fraction of a device, negative).

    Args:
        problem: what is wrong with the value as written.
        fix: how to write it.

    Attributes:
        problem, fix: as given; ``str(exc)`` is ``"<problem>; <fix>"``.
    """

    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


_QUANTITY_FIX = 'write a number with an optional suffix, such as 8, "500m", "64Gi" or "2e3"'


@functools.cache
def _client_parse_quantity() -> Callable[[Any], Decimal]:
    """``parse_quantity`` of the Kubernetes Python client (``kubernetes/utils/quantity.py``).

    ``import kubernetes.utils.quantity`` runs the package's ``__init__``, which imports the whole
    generated API client: 0.27 s of the start-up of ``hybridgpu check`` and of the policy pack's
    process (``python -X importtime``, 2026-11-24), for a module that needs only ``decimal``. So
    the same file of the installed package is loaded on its own (it imports nothing from the
    package), on first use; when ``kubernetes`` is already imported, its module is used.

    Raises:
        ImportError: the kubernetes package (a hybridgpu dependency) is not installed.
    """
    loaded = sys.modules.get("kubernetes.utils.quantity")
    if loaded is not None:
        return loaded.parse_quantity
    package = importlib.util.find_spec("kubernetes")  # finds the package without importing it
    if package is None or package.origin is None:
        raise ImportError("the kubernetes package (a hybridgpu dependency) is not installed")
    spec = importlib.util.spec_from_file_location("hybridgpu._kubernetes_quantity", Path(package.origin).parent / "utils" / "quantity.py")
    if spec is None or spec.loader is None:
        raise ImportError("the kubernetes package has no utils/quantity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_quantity


def quantity(value: Any) -> Decimal:
    """The exact value of a Kubernetes quantity: ``8``, ``8.0``, ``"8"``, ``"8e0"``, ``"1k"`` (1000), ``"500m"`` (0.5), ``"1Ki"`` (1024).

    Integers and finite floats are quantities too (YAML ``8.0`` reads as a float). Negative
    quantities are returned as they are: the caller decides whether the field allows them.

    Raises:
        QuantityError: ``value`` is not a quantity (a bool, None, a list, NaN or infinity, text
            outside the grammar such as ``"8 GPUs"``, ``" 8"`` or ``"1e"``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity", _QUANTITY_FIX)
    if isinstance(value, str):
        if not _QUANTITY_RE.match(value) or value != value.strip():
            raise QuantityError(f"{value!r} is not a Kubernetes quantity", _QUANTITY_FIX)
        return _client_parse_quantity()(value)
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite():
        raise QuantityError(f"{value!r} is not a Kubernetes quantity (not a finite number)", _QUANTITY_FIX)
    return number


def parse_quantity(value: Any) -> float | None:
    """:func:`quantity` as a float, or None when ``value`` is not a quantity (callers decide what a None means).

    >>> [parse_quantity(v) for v in (8, 8.0, "8", "8e0", "1k", "500m", "8 GPUs")]
    [8.0, 8.0, 8.0, 8.0, 1000.0, 0.5, None]
    """
    try:
        return float(quantity(value))
    except QuantityError:
        return None


def device_count(value: Any, resource: str = GPU_RESOURCE) -> int:
    """A count of devices of an extended resource (``nvidia.com/gpu``, MIG devices, EFA, RDMA) as an int.

    ``8``, ``8.0``, ``"8"``, ``"8e0"`` are all 8 and ``"1k"`` is 1000. Kubernetes counts extended
    resources in whole units and refuses a fraction (kubernetes/kubernetes
    ``pkg/apis/core/validation/validation.go`` ``ValidateResourceQuantityValue``: an integer resource,
    ``helper.IsIntegerResourceName``, must be an integer; read 2026-11-26).

    Args:
        value: the quantity as written (a request or limit).
        resource: the resource name, for the message.

    Raises:
        QuantityError: not a quantity, negative, or not a whole number (``"0.5"``, ``"500m"``), with
            the one message every path reports.
    """
    try:
        number = quantity(value)
    except QuantityError:
        number = Decimal(-1)
    if number < 0 or number != number.to_integral_value():
        raise QuantityError(
            f"{resource} {value!r} is not a whole number of devices (Kubernetes counts extended resources in whole units)",
            'write a count such as 8 (8, 8.0, "8" and "8e0" are all 8)',
        )
    return int(number)



def _as_device_count(value: Any) -> Any:
    """``value`` as a whole count when written as a quantity (``"8e0"``, ``8.0``, ``"1k"``); anything else as it is, for the int field to judge."""
    if isinstance(value, (str, float, Decimal)) and not isinstance(value, bool):
        return device_count(value, "the count")
    return value


#: A whole number of devices in a config model (Kueue quotas of the teams file): the quantity
#: grammar of :func:`device_count`, so ``8``, ``8.0``, ``"8"`` and ``"8e0"`` are 8 on this path too,
#: and a fraction gets the one message.
DeviceCount = Annotated[int, BeforeValidator(_as_device_count)]

# --------------------------------------------------------------------------- taints and tolerations
# kube-scheduler's matching: kubernetes/api ``core/v1/toleration.go`` ``Toleration.ToleratesTaint`` (master
# at 10b39a39, 2026-07-24, read 2026-11-26): an empty effect matches every effect, ``Exists`` matches every
# value, an empty operator means ``Equal``, which matches when the values are equal (an absent value is
# ``""``, so ``Equal`` with value ``""`` tolerates a taint without a value). The API refuses a value with
# ``Exists`` (``pkg/apis/core/validation`` ``validateTolerations``: "value must be empty when `operator` is 'Exists'").


def taint_object(key: str, value: str | None, effect: str) -> dict[str, str]:
    """A taint as the API writes it (``key``, ``value`` when not empty, ``effect``): the kubeadm
    ``nodeRegistration.taints``, the Karpenter NodePool and the scheduling checks use this form."""
    taint = {"key": key}
    if value:
        taint["value"] = value
    taint["effect"] = effect
    return taint


def toleration_for(key: str, value: str | None, effect: str) -> dict[str, str]:
    """The toleration of exactly the taint ``key[=value]:effect``, as kube-scheduler matches it.

    A taint written with a value (``""`` included) gets ``operator: Equal`` with that value: an
    ``Equal`` toleration with value ``""`` tolerates a taint with an empty or absent value and no
    other. A taint with no value (None) gets ``operator: Exists`` (without ``value``, which the
    API refuses with ``Exists``), tolerating the key whatever value a node gives it.
    """
    if value is None:
        return {"key": key, "operator": "Exists", "effect": effect}
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}
