"""On-prem site inventory: the hosts of a hybrid GPU cluster and its cluster settings, validated offline.

An inventory is YAML (``apiVersion: hybridgpu.io/v1alpha1``): one ``Site`` document (cluster
settings: Kubernetes version, control-plane endpoint, pod/service subnets, CNI, container
runtime; and the site's networks) and ``HostList`` documents (hosts: hostname, addresses,
role, SSH access with the key as a secret reference, rack, labels, taints, lifecycle state,
GPUs with PCI ids and per-GPU MIG layouts, fabric notes), in one file per site or split over
several files. ``stacks/inventory/onprem-site-a.yaml`` is the annotated sample.

Example::

    from hybridgpu.inventory import InventoryError, load_inventory

    try:
        inventory = load_inventory("stacks/inventory/onprem-site-a.yaml")   # or the directory
    except InventoryError as exc:
        for issue in exc.issues:          # file, host, field, message, fix, code
            print(issue)
        raise SystemExit(1)
    inventory.first_control_plane.hostname   # where kubeadm init runs
    [h.hostname for h in inventory.gpu_workers]

Modules:

* :mod:`hybridgpu.inventory.models` - the pydantic models, :class:`Inventory`,
  :class:`InventoryError` (whose issues are :class:`hybridgpu.errors.Issue` records).
* :mod:`hybridgpu.inventory.loader` - :func:`load_inventory`, :func:`inventory_from_documents`,
  :data:`RENAMED_FIELDS`.
* :mod:`hybridgpu.inventory.checks` - one function per validation rule, :func:`run_checks`.
* :mod:`hybridgpu.inventory.remediation` - the ``remediation`` policy for hosts whose GPUs fail.
* :mod:`hybridgpu.inventory.lifecycle` - :func:`~hybridgpu.inventory.lifecycle.set_host_state`: a host's
  ``state`` rewritten in its file (``hybridgpu inventory cordon|retire|restore``).

Nothing here imports Pulumi.
"""

from __future__ import annotations

from hybridgpu.inventory.checks import CheckInput, check_inventory, run_checks
from hybridgpu.inventory.loader import INLINE_SECRET_KEYS, RENAMED_FIELDS, inventory_from_documents, load_inventory
from hybridgpu.inventory.models import (
    API_VERSION,
    Cluster,
    Host,
    HostAddresses,
    HostGpu,
    HostNetwork,
    HostRecord,
    Inventory,
    InventoryError,
    MigLayoutSpec,
    Network,
    NodeTaint,
    SecretRef,
    Site,
    SshAccess,
)

__all__ = [
    "API_VERSION",
    "INLINE_SECRET_KEYS",
    "RENAMED_FIELDS",
    "CheckInput",
    "Cluster",
    "Host",
    "HostAddresses",
    "HostGpu",
    "HostNetwork",
    "HostRecord",
    "Inventory",
    "InventoryError",
    "MigLayoutSpec",
    "Network",
    "NodeTaint",
    "SecretRef",
    "Site",
    "SshAccess",
    "check_inventory",
    "inventory_from_documents",
    "load_inventory",
    "run_checks",
]
