"""The StorageClass the platform releases (MLflow, Harbor) claim their volumes from on-prem: the site's NFS storage (pure).

The training data is mounted through static PersistentVolumes (:mod:`hybridgpu.render.storage`); the platform
releases instead create their own claims (the charts' ``storageClass`` values), so they get a dynamically
provisioned class of csi-driver-nfs (the driver the site's storage already installs): provisioner
``nfs.csi.k8s.io`` with ``server`` and ``share`` parameters, and ``subDir`` as a template of the claim's
namespace and name, so each claim gets its own directory under the export (kubernetes-csi/csi-driver-nfs
4.13.4 ``docs/driver-parameters.md``, StorageClass parameters ``server``, ``share``, ``subDir`` with
``${pvc.metadata.namespace}`` / ``${pvc.metadata.name}``; read 2026-11-27 in stored examples of that form).
``reclaimPolicy: Retain`` keeps registry images and artifacts when a claim is deleted.
"""

from __future__ import annotations

from typing import Any

from hybridgpu.inventory.storage import SiteStorage
from hybridgpu.k8s import managed_by_labels
from hybridgpu.render.storage import NFS_CSI_DRIVER

__all__ = ["NFS_PROVISIONER", "platform_storage_class", "platform_storage_class_name"]

#: csi-driver-nfs's provisioner name (its CSI driver name).
NFS_PROVISIONER = NFS_CSI_DRIVER


def platform_storage_class_name(service: str) -> str:
    """``hybridgpu-<service>-nfs``: the class of one platform release's claims."""
    return f"hybridgpu-{service}-nfs"


def platform_storage_class(service: str, storage: SiteStorage) -> dict[str, Any]:
    """The StorageClass (``storage.k8s.io/v1``) whose claims are directories ``hybridgpu/<service>/<namespace>-<claim>`` on the site's NFS export.

    Raises:
        ValueError: the storage is not NFS (the inventory check refuses other types first).
    """
    if storage.type != "nfs":
        raise ValueError(f"platform_storage_class: storage type {storage.type!r} is not served by csi-driver-nfs")
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": platform_storage_class_name(service), "labels": managed_by_labels()},
        "provisioner": NFS_PROVISIONER,
        "parameters": {
            "server": storage.mount_address,
            "share": storage.export_path,
            "subDir": f"hybridgpu/{service}/${{pvc.metadata.namespace}}-${{pvc.metadata.name}}",
        },
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "Immediate",
        "mountOptions": list(storage.mount_options),
    }
