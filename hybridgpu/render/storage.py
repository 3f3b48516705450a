"""Shared dataset storage, rendered (pure): the CSI drivers' Helm values, the FSx security-group rules, and the
StorageClass / PersistentVolume / PersistentVolumeClaim that training pods mount.

Both sides end the same way: every training namespace gets a PersistentVolumeClaim named
:data:`hybridgpu.k8s.TRAINING_DATA_CLAIM` (``training-data``), bound to a static
PersistentVolume of its own (a PV binds one claim) that points at the shared file system, in the
StorageClass :data:`hybridgpu.k8s.TRAINING_DATA_STORAGE_CLASS` (``kubernetes.io/no-provisioner``:
nothing is provisioned on demand, so a claim that names the class without a PV stays Pending
instead of creating a file system). A job mounts it as ``persistentVolumeClaim: {claimName:
training-data}``.

EKS (FSx for Lustre, kubernetes-sigs/aws-fsx-csi-driver chart 1.17.0, driver 1.9.0 at 5b227125,
read 2026-11-24):

* the PV follows ``examples/kubernetes/static_provisioning/specs/pv.yaml``: ``csi.driver:
  fsx.csi.aws.com``, ``volumeHandle`` = the file system id, ``volumeAttributes`` ``dnsname`` and
  ``mountname``, ``mountOptions: [flock]``, ReadWriteMany. ``pkg/driver/node.go``
  ``NodePublishVolume`` mounts ``<dnsname>@tcp:/<mountname>`` (``dnsname`` required,
  ``mountname`` defaulting to ``fsx``), so the two attributes are what a mount needs.
* several PVs may carry the same ``volumeHandle``: the driver's node service has no
  STAGE_UNSTAGE capability (``nodeCaps`` is empty) and its CSIDriver has ``attachRequired:
  false`` (``templates/csidriver.yaml``), so kubelet mounts each pod's volume on its own.
* static provisioning calls no AWS API from the controller (``CreateVolume``/``DeleteVolume``
  are the only cloud calls on that path, ``pkg/driver/controller.go``), so the controller gets
  no IAM role. It still builds an AWS client at start-up and needs the region: from
  ``AWS_REGION`` (chart value ``controller.region``) or the instance metadata service, which
  our nodes keep away from pods (IMDSv2 hop limit 1), so :func:`fsx_csi_values` sets the region.
* chart scheduling defaults (``values.yaml``): the controller tolerates ``CriticalAddonsOnly``
  (runs on the system nodes); the node DaemonSet has ``tolerateAllTaints: true``. We set it to
  false and tolerate the GPU taint: the node plugin runs on the GPU nodes where training pods
  mount the volume (the template then adds the ``fsx.csi.aws.com/agent-not-ready`` toleration).

On-prem (NFS, kubernetes-csi/csi-driver-nfs chart 4.13.4 at d3b27c00, ``charts/v4.13.4``, read
2026-11-24): the PV follows ``deploy/example/pv-nfs-csi.yaml`` (``csi.driver: nfs.csi.k8s.io``,
``volumeAttributes`` ``server`` and ``share``, a ``volumeHandle`` unique in the cluster);
``pkg/nfs/nodeserver.go`` mounts ``<server>:<share>`` with the PV's mount options. The controller
tolerates the control-plane and ``CriticalAddonsOnly`` taints by default; its ``csi-snapshotter``
sidecar is on by default while the snapshot CRDs are not installed (``externalSnapshotter.enabled:
false``), so :func:`nfs_csi_values` turns the sidecar off (hybridgpu takes no snapshots). The node
DaemonSet tolerates every taint by default; we narrow it to the GPU taint, like FSx's.

FSx security group (:func:`fsx_security_group_rules`): Lustre uses TCP 988 and 1018-1023
between the file servers and from clients (FSx for Lustre User Guide, "File system access control
with Amazon VPC", docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html:
inbound 988 and 1018-1023 from the file system's own security group and from the clients'; not
re-read here, the page was not in the stored corpus; every public Terraform configuration read
for this, e.g. the EKS FSx modules found with ``find_string "from_port   = 1018"``, opens the same
ports). The clients are the cluster's nodes: every node hybridgpu creates is in the EKS cluster
security group (Karpenter selects it, :mod:`hybridgpu.components.eks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hybridgpu.k8s import (
    NO_PROVISIONER,
    TRAINING_DATA_CLAIM,
    TRAINING_DATA_STORAGE_CLASS,
    managed_by_labels,
)
from hybridgpu.render.charts import gpu_exists_toleration

__all__ = [
    "CSI_NAMESPACE",
    "FSX_CSI_CHART",
    "FSX_CSI_DRIVER",
    "FSX_CSI_REPO",
    "LUSTRE_PORTS",
    "NFS_CSI_CHART",
    "NFS_CSI_DRIVER",
    "NFS_CSI_REPO",
    "SecurityGroupRule",
    "fsx_csi_values",
    "fsx_security_group_rules",
    "fsx_volume",
    "nfs_csi_values",
    "nfs_volume",
    "storage_manifests",
    "training_pv_name",
]

#: The FSx for Lustre CSI driver's chart, Helm repository and driver name (docs/install.md; templates/csidriver.yaml).
FSX_CSI_CHART = "aws-fsx-csi-driver"
FSX_CSI_REPO = "https://kubernetes-sigs.github.io/aws-fsx-csi-driver"
FSX_CSI_DRIVER = "fsx.csi.aws.com"
#: csi-driver-nfs: chart, repository (charts/README.md: "helm repo add csi-driver-nfs
#: https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts") and driver name
#: (values.yaml ``driver.name``); the pinned version is :data:`hybridgpu.config.storage.NFS_CSI_CHART_VERSION`.
NFS_CSI_CHART = "csi-driver-nfs"
NFS_CSI_REPO = "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts"
NFS_CSI_DRIVER = "nfs.csi.k8s.io"
#: Namespace both CSI drivers are installed in (their docs install them in kube-system).
CSI_NAMESPACE = "kube-system"

#: Lustre's TCP ports: (from, to) ranges (FSx for Lustre User Guide, see the module docstring).
LUSTRE_PORTS: tuple[tuple[int, int], ...] = ((988, 988), (1018, 1023))


def fsx_csi_values(region: str) -> dict[str, Any]:
    """Helm values of the aws-fsx-csi-driver release: the controller's region, the node plugin on GPU nodes only.

    Args:
        region: the AWS region (``aws:region``), written to the controller's ``AWS_REGION``.

    Returns:
        The values dict (merged over the chart defaults by Helm; :data:`hybridgpu.render.charts.CHARTS`
        ``aws-fsx-csi-driver`` records those defaults).
    """
    return {
        "controller": {"region": region},
        "node": {
            "tolerateAllTaints": False,
            # The chart default's NoExecute toleration, kept: the node plugin stays 300 s on a node being drained.
            "tolerations": [gpu_exists_toleration(), {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        },
    }


def nfs_csi_values() -> dict[str, Any]:
    """Helm values of the csi-driver-nfs release: no snapshotter sidecar, the node plugin on GPU workers (and untainted workers)."""
    return {
        "controller": {"enableSnapshotter": False},
        "node": {"tolerations": [gpu_exists_toleration()]},
    }


@dataclass(frozen=True)
class SecurityGroupRule:
    """One Lustre rule: on the FSx security group, or on the nodes' (EKS cluster) security group.

    Attributes:
        group: the security group the rule belongs to: ``fsx`` or ``nodes``.
        direction: ``ingress`` or ``egress`` (of ``group``).
        peer: the other side: ``fsx`` (the FSx security group; for ``group: fsx`` that is the group itself) or ``nodes``.
        from_port, to_port: the TCP port range.
    """

    group: Literal["fsx", "nodes"]
    direction: Literal["ingress", "egress"]
    peer: Literal["fsx", "nodes"]
    from_port: int
    to_port: int

    @property
    def ports(self) -> str:
        """``988`` or ``1018-1023``."""
        return str(self.from_port) if self.from_port == self.to_port else f"{self.from_port}-{self.to_port}"

    @property
    def role(self) -> str:
        """Logical-name suffix: ``fsx-in-fsx-988``, ``fsx-out-nodes-1018-1023``, ``nodes-in-fsx-988``."""
        return f"{self.group}-{'in' if self.direction == 'ingress' else 'out'}-{self.peer}-{self.ports}"

    @property
    def description(self) -> str:
        """What the rule is for, in AWS's description field."""
        names = {"fsx": "the FSx for Lustre file servers", "nodes": "the cluster's nodes"}
        return f"Lustre TCP {self.ports} {'from' if self.direction == 'ingress' else 'to'} {names[self.peer]}"


def fsx_security_group_rules() -> list[SecurityGroupRule]:
    """Every Lustre rule: on the FSx group, in and out among the file servers and with the nodes; on the nodes' group, in from the servers.

    A Pulumi-created security group starts with no egress rule, so the FSx group needs explicit
    egress rules (to itself and to the nodes). The EKS cluster security group keeps its default
    allow-all egress but admits only its own members, so it gets ingress from the file servers on
    the same ports (Lustre servers also open connections to clients).
    """
    rules: list[SecurityGroupRule] = []
    for direction in ("ingress", "egress"):
        for peer in ("fsx", "nodes"):
            rules += [SecurityGroupRule("fsx", direction, peer, low, high) for low, high in LUSTRE_PORTS]
    rules += [SecurityGroupRule("nodes", "ingress", "fsx", low, high) for low, high in LUSTRE_PORTS]
    return rules


def training_pv_name(prefix: str, namespace: str) -> str:
    """Name of the PersistentVolume bound to the claim of ``namespace``: ``<prefix>-training-data-<namespace>``."""
    return f"{prefix}-{TRAINING_DATA_CLAIM}-{namespace}"


@dataclass(frozen=True)
class VolumeSource:
    """The CSI part of the training PVs: driver, handle per namespace, attributes, mount options.

    ``volume_handle`` and the attribute values are strings, or Pulumi Outputs in the program (the
    FSx id and DNS name are known only after the file system exists): the renderer only places them.
    """

    driver: str
    volume_handle: Any
    attributes: dict[str, Any]
    mount_options: tuple[str, ...]
    unique_handles: bool = False

    def handle_for(self, pv_name: str) -> Any:
        """The PV's ``volumeHandle``: the shared handle, or ``<handle>#<pv name>`` when handles must be unique (NFS)."""
        return f"{self.volume_handle}#{pv_name}" if self.unique_handles else self.volume_handle


def fsx_volume(file_system_id: Any, dns_name: Any, mount_name: Any) -> VolumeSource:
    """The FSx for Lustre source of the training PVs (static provisioning, see the module docstring)."""
    return VolumeSource(FSX_CSI_DRIVER, file_system_id, {"dnsname": dns_name, "mountname": mount_name}, ("flock",))


def nfs_volume(server: str, share: str, mount_options: Sequence[str]) -> VolumeSource:
    """The NFS source of the training PVs: ``server``:``share`` mounted with ``mount_options``.

    The handle follows csi-driver-nfs's ``{server}/{share}#{subdir}#...`` form with the PV name
    last, unique per PV as its example asks ("make sure this value is unique for every share in the cluster").
    """
    return VolumeSource(NFS_CSI_DRIVER, f"{server}{share}#", {"server": server, "share": share}, tuple(mount_options), unique_handles=True)


def storage_manifests(prefix: str, source: VolumeSource, namespaces: Sequence[str], capacity_gib: int) -> list[dict[str, Any]]:
    """The StorageClass, and per namespace a PersistentVolume pre-bound to the ``training-data`` claim, and that claim.

    Args:
        prefix: distinguishes this cluster's PVs (PV names are cluster-scoped), e.g. the cluster or site name.
        source: the shared file system (:func:`fsx_volume`, :func:`nfs_volume`).
        namespaces: the training namespaces (each must exist before its claim).
        capacity_gib: the capacity written on PV and claim, GiB (a claim binds a PV of at least its request).

    Returns:
        ``[StorageClass, PV, PVC, PV, PVC, ...]`` as plain dicts (``storage.k8s.io/v1``, ``v1``), in namespace order.
    """
    labels = managed_by_labels()
    size = f"{capacity_gib}Gi"
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": TRAINING_DATA_STORAGE_CLASS, "labels": labels},
            "provisioner": NO_PROVISIONER,
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "Immediate",
        }
    ]
    for namespace in namespaces:
        pv = training_pv_name(prefix, namespace)
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv, "labels": labels},
                "spec": {
                    "capacity": {"storage": size},
                    "volumeMode": "Filesystem",
                    "accessModes": ["ReadWriteMany"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": TRAINING_DATA_STORAGE_CLASS,
                    "mountOptions": list(source.mount_options),
                    # Pre-bound: only this namespace's claim may take this PV.
                    "claimRef": {"namespace": namespace, "name": TRAINING_DATA_CLAIM},
                    "csi": {"driver": source.driver, "volumeHandle": source.handle_for(pv), "volumeAttributes": dict(source.attributes)},
                },
            }
        )
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": TRAINING_DATA_CLAIM, "namespace": namespace, "labels": labels},
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": TRAINING_DATA_STORAGE_CLASS,
                    "volumeName": pv,
                    "resources": {"requests": {"storage": size}},
                },
            }
        )
    return docs
