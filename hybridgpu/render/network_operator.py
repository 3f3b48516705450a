"""Render the NVIDIA Network Operator and its ``NicClusterPolicy`` from an on-prem inventory (pure, no Pulumi).

Creates plain dicts, ready for Helm values or a Pulumi ``kubernetes`` resource:

* :func:`rdma_plan`: which hosts are on which RDMA fabric, the NICs that carry it and the extended
  resource pods request (:data:`hybridgpu.k8s.RDMA_IB_RESOURCE`, :data:`hybridgpu.k8s.RDMA_ROCE_RESOURCE`);
  ``None`` when no host has a fabric (then nothing of this module is installed);
* :func:`network_operator_values`: the ``network-operator`` chart values (operator on the
  system/control-plane nodes; NFD left to the GPU Operator when it runs one);
* :func:`nic_cluster_policy`: the ``mellanox.com/v1alpha1`` ``NicClusterPolicy`` named
  ``nic-cluster-policy``: the RDMA shared device plugin with one resource per fabric selecting the
  fabric NICs by interface name and link type, its operands tolerating the GPU taint and limited to the
  fabric hosts (``hybridgpu.io/fabric`` label), and the DOCA driver container when the inventory says
  ``ofed: operator``;
* :func:`rdma_device_plugin_config`: the device plugin's ``configList`` JSON;
* :func:`nic_policy_placements`: the operands' pod placement, for :mod:`hybridgpu.stack.scheduling`;
* :func:`gpu_operator_rdma_values`: the GPU Operator's ``driver.rdma`` values (GPUDirect RDMA);
* :func:`host_fabric_labels`: the ``hybridgpu.io/fabric`` node label of a host.

Upstream (read 2026-11-24):

* Mellanox/network-operator tag v26.4.1 (commit 85afd6d9, 2026-07-24; the newest non-rc tag of the
  mirror, 26.7.0 is at rc.2): ``deployment/network-operator/Chart.yaml`` (chart ``network-operator``
  26.4.1, repository https://helm.ngc.nvidia.com/nvidia); ``values.yaml`` (``operator.tolerations``:
  ``node-role.kubernetes.io/master`` and ``/control-plane`` Equal "" NoSchedule, ``nodeSelector: {}``,
  a *preferred* control-plane affinity; ``nfd.enabled: true``, ``nfd.deployNodeFeatureRules: true``;
  ``upgradeCRDs: true``; ``sriovNetworkOperator.enabled: false``); ``templates/operator.yaml``,
  ``upgrade-crd-hook.yaml`` and ``keep-ncp-hook.yaml`` (the operator Deployment and both hook Jobs
  take ``operator.nodeSelector/affinity/tolerations``); ``templates/nodefeaturerules.yaml`` (a
  NodeFeatureRule labelling nodes with a PCI device of vendor 15b3, class 0200/0207,
  ``feature.node.kubernetes.io/pci-15b3.present=true``); ``crds/mellanox.com_nicclusterpolicies.yaml``
  (copied to ``tests/fixtures/crds/``: the NicClusterPolicy is validated against it in tests);
  ``hack/release.yaml`` (image versions of the release: ``k8s-rdma-shared-dev-plugin``
  ``network-operator-v26.4.1``, ``doca-driver`` ``doca3.4.1-26.04-1.1.0.0-1``, both from
  ``nvcr.io/nvidia/mellanox``); ``controllers/nicclusterpolicy_controller.go`` (only the policy named
  ``nic-cluster-policy`` is reconciled; without ``ofedDriver`` the operator labels every node with a
  Mellanox NIC ``network.nvidia.com/operator.mofed.wait=false``, ``handleWaitLabelsNoConfig``);
  ``api/v1alpha1/nicclusterpolicy_types.go`` (``spec.tolerations`` and ``spec.nodeAffinity`` are
  injected into every operand DaemonSet; ``GetTolerations`` returns ``spec.tolerations`` only: no
  default toleration); ``manifests/state-rdma-shared-device-plugin/0060_rdma-shared-dev-plugin-ds.yaml``
  (fixed nodeSelector ``feature.node.kubernetes.io/pci-15b3.present: "true"`` and
  ``network.nvidia.com/operator.mofed.wait: "false"``); ``api/v1alpha1/validator/nicpolicy_webhook.go``
  and ``webhook-schemas/rdma_shared_device_plugin.json`` (the config JSON schema and resource-name
  pattern ``^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$``, copied to test data).
* Mellanox/k8s-rdma-shared-dev-plugin ``pkg/types/types.go`` (410b0f3): ``configList[] {resourceName,
  resourcePrefix (default rdma), rdmaHcaMax, devices, selectors {vendors, deviceIDs, drivers, ifNames,
  linkTypes}}``; ``linkTypes`` values are the netdev link types ``infiniband`` and ``ether``. Shared mode:
  every pod granted one unit of the resource sees all selected HCAs; ``rdmaHcaMax`` bounds how many pods
  share them (63 in the upstream example NicClusterPolicy).
* NVIDIA/gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml``: ``driver.rdma.enabled: false``,
  ``driver.rdma.useHostMofed: false``; GPU Operator docs "GPUDirect RDMA and GPUDirect Storage" (latest,
  read 2026-11-24): the driver container loads nvidia-peermem with ``driver.rdma.enabled``, and
  ``useHostMofed`` when MOFED/DOCA-OFED is installed on the host instead of by the Network Operator;
  DMA-BUF (open kernel modules) is the recommended path and needs neither.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hybridgpu.inventory.models import Host, Inventory
from hybridgpu.k8s import (
    FABRIC_LABEL,
    MOFED_WAIT_LABEL,
    PCI_MELLANOX_LABEL,
    RDMA_IB_RESOURCE,
    RDMA_ROCE_RESOURCE,
    managed_by_labels,
)
from hybridgpu.render.charts import CHARTS, controller_tolerations, gpu_exists_toleration
from hybridgpu.render.scheduling import PodPlacement

__all__ = [
    "FabricPlan",
    "NETWORK_OPERATOR_CHART",
    "NETWORK_OPERATOR_NAMESPACE",
    "NETWORK_OPERATOR_REPO",
    "NETWORK_OPERATOR_VERSION",
    "NIC_CLUSTER_POLICY",
    "NIC_POLICY_API",
    "RdmaPlan",
    "gpu_operator_rdma_values",
    "host_fabric_labels",
    "network_operator_values",
    "nic_cluster_policy",
    "nic_policy_placements",
    "rdma_device_plugin_config",
    "rdma_devices",
    "rdma_plan",
    "RDMA_NODE_DISCOVERED_LABELS",
    "RDMA_SHARED_DEVICES",
]

NETWORK_OPERATOR_CHART = "network-operator"
#: NVIDIA's Helm repository (``Chart.yaml`` ``home``/docs: ``helm repo add nvidia https://helm.ngc.nvidia.com/nvidia``).
NETWORK_OPERATOR_REPO = "https://helm.ngc.nvidia.com/nvidia"
#: Pinned chart version (``deployment/network-operator/Chart.yaml`` at tag v26.4.1).
NETWORK_OPERATOR_VERSION = "26.4.1"
#: Namespace of the release and of the operands (the operator deploys them in its own namespace).
NETWORK_OPERATOR_NAMESPACE = "nvidia-network-operator"
NIC_POLICY_API = "mellanox.com/v1alpha1"
#: The only NicClusterPolicy name the operator reconciles (``consts.NicClusterPolicyResourceName``).
NIC_CLUSTER_POLICY = "nic-cluster-policy"
#: Images of release v26.4.1 (``hack/release.yaml``): (repository, image, version).
RDMA_SHARED_DP_IMAGE = ("nvcr.io/nvidia/mellanox", "k8s-rdma-shared-dev-plugin", "network-operator-v26.4.1")
DOCA_DRIVER_IMAGE = ("nvcr.io/nvidia/mellanox", "doca-driver", "doca3.4.1-26.04-1.1.0.0-1")
#: Pods that may share the HCAs of one node through one resource (the upstream example's value).
RDMA_HCA_MAX = 63

Fabric = Literal["infiniband", "roce"]
#: fabric -> (extended resource, device plugin ``linkTypes`` value: the netdev link type of its ports).
_FABRIC_RESOURCES: dict[str, tuple[str, str]] = {
    "infiniband": (RDMA_IB_RESOURCE, "infiniband"),
    "roce": (RDMA_ROCE_RESOURCE, "ether"),
}


@dataclass(frozen=True)
class FabricPlan:
    """One RDMA fabric of the site.

    Attributes:
        fabric: ``infiniband`` or ``roce``.
        resource: the extended resource pods request for it (``rdma/rdma_shared_device_ib``), 1 per pod.
        hosts: hostnames on this fabric (hosts not ``absent``), in inventory order.
        if_names: interface names of the NICs that carry it, over all its hosts, sorted.
        rdma_devices: RDMA device names of those NICs where the inventory gives them (NCCL_IB_HCA), sorted.
    """

    fabric: Fabric
    resource: str
    hosts: tuple[str, ...]
    if_names: tuple[str, ...]
    rdma_devices: tuple[str, ...]


@dataclass(frozen=True)
class RdmaPlan:
    """The site's RDMA fabrics and where the NIC driver stack comes from.

    Attributes:
        fabrics: one :class:`FabricPlan` per fabric in use (infiniband first).
        ofed: ``preinstalled`` (host DOCA-OFED/MLNX_OFED, e.g. DGX OS) or ``operator`` (DOCA driver container);
            one value per site (inventory rule ``ofed-mixed``).
    """

    fabrics: tuple[FabricPlan, ...]
    ofed: Literal["preinstalled", "operator"]

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every fabric host, in fabric order."""
        return tuple(h for f in self.fabrics for h in f.hosts)

    def fabric(self, name: str) -> FabricPlan | None:
        """The plan of fabric ``name``, or None."""
        return next((f for f in self.fabrics if f.fabric == name), None)


#: Labels a host with a ConnectX port carries once NFD evaluated the chart's NodeFeatureRule (``pci-15b3.present``) and,
#: with a preinstalled DOCA-OFED (or once the driver container is ready), the operator set ``mofed.wait=false``.
RDMA_NODE_DISCOVERED_LABELS: dict[str, str] = {PCI_MELLANOX_LABEL: "true", MOFED_WAIT_LABEL: "false"}


#: The device family of the RDMA shared device plugin for the scheduling check: ONE DaemonSet (``rdma-shared-dp-ds``)
#: serves every ``rdma/*`` resource of the config, each node advertising those whose selectors match its ports; so it
#: must run on every host with fabric NICs and on no other (:mod:`hybridgpu.stack.scheduling`, ``device-plugin-elsewhere``).
RDMA_SHARED_DEVICES = "rdma/rdma_shared_device_*"


def rdma_devices(host: Host) -> tuple[str, ...]:
    """Devices a host offers to the RDMA shared device plugin: ``(RDMA_SHARED_DEVICES, <its fabric's resource>)`` with fabric NICs, else ``()``."""
    if host.network.fabric == "none" or not host.network.fabric_nics():
        return ()
    return (RDMA_SHARED_DEVICES, _FABRIC_RESOURCES[host.network.fabric][0])


def host_fabric_labels(host: Host) -> dict[str, str]:
    """``{hybridgpu.io/fabric: <fabric>}`` for a host on an RDMA fabric, else ``{}`` (a kubelet-settable label)."""
    return {FABRIC_LABEL: host.network.fabric} if host.network.fabric != "none" else {}


def rdma_plan(inventory: Inventory | Iterable[Host]) -> RdmaPlan | None:
    """The RDMA fabrics of an inventory's hosts that are not ``absent``; None when none has a fabric.

    Args:
        inventory: a validated inventory (or its hosts); the NIC rules of
            :mod:`hybridgpu.inventory.fabric` have passed, so every fabric NIC has a name.
    """
    hosts = inventory.hosts if isinstance(inventory, Inventory) else tuple(inventory)
    on: dict[str, list[Host]] = {}
    for host in hosts:
        if host.state != "absent" and host.network.fabric != "none":
            on.setdefault(host.network.fabric, []).append(host)
    if not on:
        return None
    fabrics = []
    for fabric in ("infiniband", "roce"):
        members = on.get(fabric)
        if not members:
            continue
        nics = [n for h in members for n in h.network.fabric_nics()]
        fabrics.append(
            FabricPlan(
                fabric=fabric,
                resource=_FABRIC_RESOURCES[fabric][0],
                hosts=tuple(h.hostname for h in members),
                if_names=tuple(sorted({n.name for n in nics if n.name})),
                rdma_devices=tuple(sorted({n.rdma_device for n in nics if n.rdma_device})),
            )
        )
    ofed = "operator" if any(h.network.ofed == "operator" for m in on.values() for h in m) else "preinstalled"
    return RdmaPlan(tuple(fabrics), ofed)  # type: ignore[arg-type]


def rdma_device_plugin_config(plan: RdmaPlan) -> dict[str, Any]:
    """The RDMA shared device plugin's config: one ``configList`` entry per fabric.

    Each resource (``rdma_shared_device_ib``, prefix ``rdma`` by default) selects the fabric's
    NICs by interface name AND link type (selectors are ANDed), so an InfiniBand resource never
    picks up a RoCE port of the same name on another host.
    """
    entries = []
    for f in plan.fabrics:
        resource, link = _FABRIC_RESOURCES[f.fabric]
        prefix, _, name = resource.partition("/")
        entries.append(
            {
                "resourceName": name,
                "resourcePrefix": prefix,
                "rdmaHcaMax": RDMA_HCA_MAX,
                "selectors": {"ifNames": list(f.if_names), "linkTypes": [link]},
            }
        )
    return {"configList": entries}


def _fabric_affinity(plan: RdmaPlan) -> dict[str, Any]:
    fabrics = [f.fabric for f in plan.fabrics]
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": FABRIC_LABEL, "operator": "In", "values": fabrics}]}]
        }
    }


def operand_tolerations() -> list[dict[str, str]]:
    """``spec.tolerations`` of the NicClusterPolicy: the GPU taint (fabric hosts are GPU workers tainted ``nvidia.com/gpu``).

    The operator adds no toleration of its own (``GetTolerations`` returns the spec's), so without
    this the device plugin never runs on a tainted GPU host and no pod can request the RDMA resource.
    """
    return [gpu_exists_toleration()]


def nic_cluster_policy(plan: RdmaPlan) -> dict[str, Any]:
    """The ``NicClusterPolicy`` (``mellanox.com/v1alpha1``, cluster-scoped, named ``nic-cluster-policy``).

    ``spec.nodeAffinity`` limits every operand DaemonSet to the fabric hosts (label
    ``hybridgpu.io/fabric``); ``spec.tolerations`` tolerates the GPU taint; ``rdmaSharedDevicePlugin``
    carries :func:`rdma_device_plugin_config` as a JSON string; ``ofedDriver`` (the DOCA driver
    container) only when the inventory says ``ofed: operator`` (with ``preinstalled`` the host's
    DOCA-OFED is used and the operator marks the nodes ``mofed.wait=false`` itself).
    """
    repo, image, version = RDMA_SHARED_DP_IMAGE
    spec: dict[str, Any] = {
        "nodeAffinity": _fabric_affinity(plan),
        "tolerations": operand_tolerations(),
        "rdmaSharedDevicePlugin": {
            "repository": repo,
            "image": image,
            "version": version,
            "config": json.dumps(rdma_device_plugin_config(plan), sort_keys=True),
        },
    }
    if plan.ofed == "operator":
        drepo, dimage, dversion = DOCA_DRIVER_IMAGE
        spec["ofedDriver"] = {
            "repository": drepo,
            "image": dimage,
            "version": dversion,
            "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1, "drain": {"enable": True, "force": True, "deleteEmptyDir": True, "timeoutSeconds": 300}},
        }
    return {"apiVersion": NIC_POLICY_API, "kind": "NicClusterPolicy", "metadata": {"name": NIC_CLUSTER_POLICY, "labels": managed_by_labels()}, "spec": spec}


def network_operator_values(*, nfd_from_gpu_operator: bool) -> dict[str, Any]:
    """Values of the ``network-operator`` chart.

    Args:
        nfd_from_gpu_operator: True when the stack's GPU Operator runs NFD (``install: gpu-operator``,
            its NFD subchart on): then the Network Operator's own NFD is off (two NFD masters would
            fight over the same labels) and only its NodeFeatureRule is installed, which the GPU
            Operator's NFD master evaluates (``feature.node.kubernetes.io/pci-15b3.present``). The GPU
            Operator's NFD worker labels the same key by itself: its ``sources.pci.deviceClassWhitelist``
            includes the network classes ``02``, ``0200``, ``0207`` with ``deviceLabelFields: [vendor]``
            (NVIDIA/gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml``). The release must
            then wait for the GPU Operator's (its NodeFeatureRule CRD).

    Scheduling: the operator and both hook Jobs tolerate the control-plane and ``CriticalAddonsOnly``
    taints (:func:`~hybridgpu.render.charts.controller_tolerations`), never the GPU taint. NFD, when
    ours, gets the same controller tolerations for master/gc and the GPU taint for the worker.
    """
    values: dict[str, Any] = {
        "operator": {"tolerations": controller_tolerations()},
        "nfd": {"enabled": not nfd_from_gpu_operator, "deployNodeFeatureRules": True},
        "sriovNetworkOperator": {"enabled": False},
    }
    if not nfd_from_gpu_operator:
        values["node-feature-discovery"] = {
            "master": {"tolerations": controller_tolerations()},
            "gc": {"tolerations": controller_tolerations()},
            # The chart's worker tolerations (master, control-plane, nvidia.com/gpu Exists) are kept.
        }
    return values


def nic_policy_placements(policy: Mapping[str, Any]) -> list[PodPlacement]:
    """The operand DaemonSets the operator creates from ``policy``, with their scheduling fields.

    ``rdma-shared-dp-ds`` (the RDMA shared device plugin: one DaemonSet for every resource of the config,
    a device plugin of :data:`RDMA_SHARED_DEVICES`) and ``mofed`` (the DOCA driver container) when
    ``ofedDriver`` is set. Fixed nodeSelector from the operand manifests, tolerations and node
    affinity from the policy spec (sources in the module docstring).
    """
    spec = policy.get("spec") or {}
    affinity = spec.get("nodeAffinity") or {}
    required = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    tolerations = tuple(spec.get("tolerations") or ())
    source = str(CHARTS[NETWORK_OPERATOR_CHART].source)
    placements = []
    dp = spec.get("rdmaSharedDevicePlugin")
    if dp is not None:
        config = json.loads(dp.get("config") or "{}")
        resources = ", ".join(f"{e.get('resourcePrefix') or 'rdma'}/{e['resourceName']}" for e in config.get("configList", []))
        placements.append(
            PodPlacement(
                name=f"{NETWORK_OPERATOR_CHART}/rdma-shared-dp-ds ({resources})",
                kind="DaemonSet",
                tolerations=tolerations,
                node_selector={PCI_MELLANOX_LABEL: "true", MOFED_WAIT_LABEL: "false"},
                required_terms=tuple(required) if required is not None else None,
                source=source + ", manifests/state-rdma-shared-device-plugin/0060_rdma-shared-dev-plugin-ds.yaml",
                device=RDMA_SHARED_DEVICES,
            )
        )
    if spec.get("ofedDriver") is not None:
        placements.append(
            PodPlacement(
                name=f"{NETWORK_OPERATOR_CHART}/mofed (DOCA driver)",
                kind="DaemonSet",
                # The template adds nvidia.com/gpu Exists NoSchedule after the spec's tolerations.
                tolerations=(*tolerations, gpu_exists_toleration()),
                node_selector={PCI_MELLANOX_LABEL: "true"},
                required_terms=tuple(required) if required is not None else None,
                source=source + ", manifests/state-ofed-driver/0050_ofed-driver-ds.yaml",
                # Not a device plugin, but bound the same way: on every host with fabric NICs and on no other.
                device=RDMA_SHARED_DEVICES,
            )
        )
    return placements


def gpu_operator_rdma_values(plan: RdmaPlan | None, *, driver: str) -> dict[str, Any]:
    """The GPU Operator values for GPUDirect RDMA: ``{"driver": {"rdma": {...}}}``, or ``{}``.

    Only when the stack has a fabric and the GPU Operator manages the driver (``driver: operator``):
    ``rdma.enabled`` (the driver container loads nvidia-peermem) and ``useHostMofed`` (the
    DOCA-OFED is on the host, not from the Network Operator). With ``driver: preinstalled`` the
    host provides GPUDirect RDMA itself (DMA-BUF with the open kernel modules, or nvidia-peermem
    loaded at boot): docs/multi-node.md says how to check it.
    """
    if plan is None or driver != "operator":
        return {}
    return {"driver": {"rdma": {"enabled": True, "useHostMofed": plan.ofed == "preinstalled"}}}
