"""Offline validation rules of a site inventory: one function per rule, each returning issues.

The pydantic models (:mod:`hybridgpu.inventory.models`) check the shape of each document;
these rules need several hosts, the site's networks, the GPU catalog or the MIG geometry.
Every rule takes a :class:`CheckInput` (the parts that validated, with the file of each
host) and returns :class:`~hybridgpu.errors.Issue` records (:meth:`~hybridgpu.errors.Issue.on_host`) naming the
file, the host (or the site section) and the field, with a fix. :func:`run_checks` runs
them all; :func:`hybridgpu.inventory.load_inventory` calls it before anything else happens.

=============================  ==========================================================
rule (function)                issue codes
=============================  ==========================================================
:func:`check_networks`         ``duplicate-network``, ``network-overlap``
:func:`check_unique_hostnames` ``duplicate-hostname``
:func:`check_unique_addresses` ``duplicate-address``
:func:`check_addresses_in_networks` ``address-outside-network``, ``address-reserved``,
                               ``missing-network``
:func:`check_cidr_overlaps`    ``cidr-overlap``
:func:`check_control_plane_count` ``no-control-plane``, ``even-control-planes``,
                               ``no-active-control-plane``
:func:`check_control_plane_endpoint` ``endpoint-missing``, ``endpoint-is-host``
:func:`check_cluster_range_addresses` ``endpoint-in-cluster-range``, ``storage-in-cluster-range``
:func:`check_ssh_key_files`    ``ssh-public-key``
:func:`check_gpu_roles`        ``gpu-role``
:func:`check_gpu_models`       ``unknown-gpu-model``
:func:`check_pci_ids`          ``pci-ids``
:func:`check_mig_layouts`      ``mig-unsupported-model``, ``mig-unknown-profile``,
                               ``mig-unplaceable``, ``mig-gpu-index``, ``mig-gpu-overlap``
:func:`check_ip_family`        ``ip-family``
:func:`check_node_labels`      ``kubelet-label``
:func:`check_taints`           ``duplicate-taint``, ``gpu-taint``
:func:`check_storage`          ``storage-unsupported``, ``storage-endpoint``,
                               ``storage-throughput``
:func:`check_fabric`           ``nic-duplicate``, ``nic-gpu-index``, ``rdma-nic-missing``,
                               ``rdma-nic-name``, ``fabric-mixed-pool``, ``roce-lossless``,
                               ``roce-settings-unused``, ``ofed-mixed``, ``roce-mixed-pool``
                               (:mod:`hybridgpu.inventory.fabric`)
:func:`check_topology`         ``topology-label-value``, ``topology-block-without-rack``,
                               ``topology-rack-in-two-blocks``, ``topology-incomplete``, ``generated-label``
:func:`check_rack_power`       ``rack-power-unknown``, ``rack-power-budget`` (:mod:`hybridgpu.inventory.power`)
=============================  ==========================================================

Speed: every rule is linear in the number of hosts (dict/set lookups; addresses and
networks are :mod:`ipaddress` objects parsed once by the models; each distinct MIG layout
is checked once per GPU model and cached). A large site's hosts do not fit in the processor's
caches, so walking them once per rule costs as much as the rules' own work: the per-host rules
report on the hosts one shared pass found something on (:func:`_scan`), and the address rules
decide the common case, no issue, on integers computed once (:attr:`CheckInput.address_values`);
the messages and their order are those of the full walk, which runs only when something is wrong.
Measured figures: ``benchmarks/inventory_bench.py`` (``benchmarks/README.md``).

Sources (read 2026-11-22):

* etcd FAQ, "Why an odd number of cluster members?" (etcd.io/docs/v3.6/faq/): a cluster of
  N members needs a quorum of N/2+1 (integer division), so 4 members tolerate 1 failure,
  like 3, and 6 tolerate 2, like 5; an even member count adds a machine and no tolerance.
* Kubernetes docs, "Options for Highly Available Topology" and "Creating Highly Available
  Clusters with kubeadm" (kubernetes.io/docs/setup/production-environment/tools/kubeadm/):
  in the stacked topology every control-plane node runs an etcd member; HA needs three or
  more control-plane machines, an odd number; the API server is reached through a load
  balancer given to ``kubeadm init --control-plane-endpoint``.
* kubeadm configuration API v1beta4, ``ClusterConfiguration.controlPlaneEndpoint``: "a stable
  IP address or DNS name for the control plane ... In a cluster with more than one control
  plane instances, this field should be assigned the address of the external load balancer";
  ``kubeadm join --control-plane`` refuses a cluster without one ("unable to add a new control
  plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address").
"""

from __future__ import annotations

import functools
import ipaddress
from pathlib import Path
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from hybridgpu.catalog import Catalog, UnknownGpuModelError, load_catalog
from hybridgpu.errors import Issue
from hybridgpu.inventory.models import PUBLIC_KEY_PREFIXES, Cluster, HostRecord, Inventory, Network
from hybridgpu.inventory.storage import SiteStorage, storage_issues
from hybridgpu.inventory.power import RackSpec, rack_power_issues
from hybridgpu.inventory.fabric import fabric_issues, topology_issues
from hybridgpu.k8s import (
    GPU_TAINT,
    KUBELET_ALLOWED_LABEL_NAMESPACES,
    KUBELET_RESTRICTED_LABEL_NAMESPACES,
    ROLE_LABEL,
    ZONE_LABEL,
    is_kubelet_settable_label,
)
from hybridgpu.mig import (
    InvalidMigCountError,
    UnknownMigModelError,
    UnknownMigProfileError,
    check_layout,
    mig_gpu,
)

__all__ = [
    "CheckInput",
    "check_addresses_in_networks",
    "check_cidr_overlaps",
    "check_cluster_range_addresses",
    "check_control_plane_count",
    "check_control_plane_endpoint",
    "check_gpu_models",
    "check_gpu_roles",
    "check_inventory",
    "check_ip_family",
    "check_mig_layouts",
    "check_networks",
    "check_node_labels",
    "check_pci_ids",
    "check_ssh_key_files",
    "check_taints",
    "check_storage",
    "check_fabric",
    "check_topology",
    "check_unique_addresses",
    "check_unique_hostnames",
    "run_checks",
]

IpNet = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Private IPv4 blocks (RFC 1918) searched for a free range to suggest in fixes.
_PRIVATE_BLOCKS = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
#: At most this many candidate ranges are tried per block when suggesting a free range.
_SUGGEST_TRIES = 4096
#: Hosts named in a message that is about many hosts at once.
_NAMED_HOSTS = 5


@dataclass(frozen=True)
class CheckInput:
    """What the rules look at: the parts of the inventory that passed schema validation.

    Attributes:
        site_file: file holding the ``Site`` document (named in site-level issues).
        cluster: the ``cluster`` section, or None if it failed validation (rules that need
            it are skipped; its schema errors are reported already).
        networks: the ``networks`` section, or None if it failed validation.
        records: every host that validated, with its file, in file order.
        hosts_complete: False if some host (or a whole HostList) failed validation; the
            rules that count hosts (odd number of control planes) then stay silent rather
            than report a count that is wrong because of hosts they cannot see.
        cluster_complete: False if ``cluster`` is a partial cluster (the section failed
            validation): it holds only the CIDRs that validated on their own, possibly None,
            for :func:`check_cidr_overlaps`; the other rules treat it as absent.
        storage: the site's ``storage`` section, or None (absent, or it failed validation).
        racks: the site's ``racks`` section, or None (absent, or it failed validation).
    """

    site_file: str
    cluster: Cluster | None
    networks: tuple[Network, ...] | None
    records: tuple[HostRecord, ...]
    hosts_complete: bool = True
    cluster_complete: bool = True
    storage: SiteStorage | None = None
    racks: Mapping[str, RackSpec] | None = None

    @property
    def control_planes(self) -> list[HostRecord]:
        """The control-plane hosts, in host order (computed once, by :func:`_scan`; two rules count them)."""
        return _scan(self).control_planes

    @property
    def address_values(self) -> dict[str, list[int]]:
        """Slot (``management``, ``data``, ``bmc``) -> :func:`_address_key` of every host address in that slot, in host order.

        Computed once, by :func:`_scan` (the address rules share it): the common case, no issue, is then
        decided by set and bit operations over integers, without the per-address loop that names a
        culprit (which runs only when something is wrong).
        """
        return _scan(self).addresses


def _address_key(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> int:
    """An address as one integer, unique across families: the IPv4 value (>= 0), or -1 - the IPv6 value."""
    return int(address) if type(address) is ipaddress.IPv4Address else -1 - int(address)


@dataclass(frozen=True)
class _Scan:
    """What one pass over the hosts finds for the per-host rules: the hosts each rule must look at, in host order.

    The rules below used to walk every host each; a 10,000-host inventory's hosts do not fit in the
    processor's caches, so each walk cost about as much in memory traffic as in work (60 ms for
    eight rules against 21 ms in one pass, measured 2026-11-27). The scan decides, per host, whether
    a rule can have anything to say about it (the same conditions the rules test); each rule then
    reports on those hosts only, with its own messages, so its issues are the same.

    Attributes:
        distinct_hostnames: no hostname repeats (:func:`check_unique_hostnames` has nothing to report).
        gpu_roles: hosts whose role and ``gpu`` section disagree (:func:`check_gpu_roles`).
        gpu_models: hosts whose ``gpu.model`` is not in the catalog (:func:`check_gpu_models`).
        pci_ids: hosts with ``gpu.pciIds`` not found right (:func:`check_pci_ids`).
        mig_layouts: hosts with ``gpu.migLayouts`` and their issues ``(field, message, fix, code)`` (:func:`check_mig_layouts`).
        node_labels: hosts with a label the kubelet may not set (:func:`check_node_labels`).
        taints: hosts with two taints or more, or a GPU taint with effect NoExecute (:func:`check_taints`).
        key_files: ``ssh.keySecret.file`` -> the hosts naming it (:func:`check_ssh_key_files`).
        active_gpu_workers: active hosts of role ``gpu-worker`` (:func:`check_storage`).
        addresses: :attr:`CheckInput.address_values`.
        control_planes: :attr:`CheckInput.control_planes`.
    """

    distinct_hostnames: bool
    gpu_roles: tuple[HostRecord, ...]
    gpu_models: tuple[HostRecord, ...]
    pci_ids: tuple[HostRecord, ...]
    mig_layouts: tuple[tuple[HostRecord, tuple[tuple[str, str, str, str], ...]], ...]
    node_labels: tuple[HostRecord, ...]
    taints: tuple[HostRecord, ...]
    key_files: Mapping[str, list[HostRecord]]
    active_gpu_workers: int
    addresses: dict[str, list[int]]
    control_planes: list[HostRecord]


def _scan(data: CheckInput, known: frozenset[str] | None = None) -> _Scan:
    """The :class:`_Scan` of ``data``'s hosts against the catalog's GPU models ``known`` (cached on ``data``).

    Args:
        data: the hosts.
        known: the catalog's GPU model names (:func:`_known_models`); None: any scan already made
            (the rules that do not read the catalog), else the packaged catalog's.
    """
    scans: dict[frozenset[str], _Scan] = data.__dict__.setdefault("_scans", {})
    if known is None:
        if scans:
            return next(iter(scans.values()))
        known = _known_models(load_catalog())
    found = scans.get(known)
    if found is not None:
        return found
    names: set[str] = set()
    roles: list[HostRecord] = []
    models: list[HostRecord] = []
    pci: list[HostRecord] = []
    mig: list[tuple[HostRecord, tuple[tuple[str, str, str, str], ...]]] = []
    labels: list[HostRecord] = []
    taints: list[HostRecord] = []
    key_files: dict[str, list[HostRecord]] = {}
    workers = 0
    sound_pci: set[tuple[int, tuple[str, ...]]] = set()  # (count, pciIds) found right: hosts of one model share them
    settable: dict[str, bool] = {}
    addresses: dict[str, list[int]] = {"management": [], "data": [], "bmc": []}
    management, data_net, bmc = addresses["management"], addresses["data"], addresses["bmc"]
    v4 = ipaddress.IPv4Address
    planes: list[HostRecord] = []
    for record in data.records:
        host = record.host
        names.add(host.hostname)
        own = host.addresses  # as _address_key, inline: three per host
        management.append(int(own.management) if type(own.management) is v4 else -1 - int(own.management))
        if own.data is not None:
            data_net.append(int(own.data) if type(own.data) is v4 else -1 - int(own.data))
        if own.bmc is not None:
            bmc.append(int(own.bmc) if type(own.bmc) is v4 else -1 - int(own.bmc))
        gpu, role = host.gpu, host.role
        if (role == "gpu-worker") != (gpu is not None):
            roles.append(record)
        if role == "control-plane":
            planes.append(record)
        if role == "gpu-worker" and host.state == "active":
            workers += 1
        if gpu is not None:
            if gpu.model not in known:
                models.append(record)
            elif gpu.mig_layouts:
                key = tuple([(spec.gpus, tuple(spec.layout.items())) for spec in gpu.mig_layouts])
                verdict = _host_mig_verdict(gpu.model, gpu.count, key)
                if verdict:
                    mig.append((record, verdict))
            ids = gpu.pci_ids
            if ids and (gpu.count, ids) not in sound_pci:
                if len(ids) == gpu.count and len({_bus_key(b) for b in ids}) == gpu.count:
                    sound_pci.add((gpu.count, ids))
                else:
                    pci.append(record)
        for label in host.labels:
            ok = settable.get(label)
            if ok is None:
                ok = settable[label] = is_kubelet_settable_label(label)
            if not ok:
                labels.append(record)
                break
        host_taints = host.taints
        if len(host_taints) > 1 or (host_taints and host_taints[0].key == GPU_TAINT.key and str(host_taints[0].effect) == "NoExecute"):
            taints.append(record)
        file = host.ssh.key_secret.file
        if file is not None:
            key_files.setdefault(file, []).append(record)
    scan = _Scan(
        distinct_hostnames=len(names) == len(data.records),
        gpu_roles=tuple(roles),
        gpu_models=tuple(models),
        pci_ids=tuple(pci),
        mig_layouts=tuple(mig),
        node_labels=tuple(labels),
        taints=tuple(taints),
        key_files=key_files,
        active_gpu_workers=workers,
        addresses=addresses,
        control_planes=planes,
    )
    scans[known] = scan
    return scan


def _names(records: Iterable[HostRecord]) -> str:
    names = [r.host.hostname for r in records]
    shown = ", ".join(names[:_NAMED_HOSTS])
    return shown + (f" and {len(names) - _NAMED_HOSTS} more" if len(names) > _NAMED_HOSTS else "")


def _overlaps(a: IpNet, b: IpNet) -> bool:
    return a.version == b.version and a.overlaps(b)


def _free_range(prefixlen: int, version: int, taken: Sequence[IpNet]) -> IpNet | None:
    """A private IPv4 range of ``prefixlen`` overlapping nothing in ``taken`` (None if not found / IPv6)."""
    if version != 4:
        return None
    same = [t for t in taken if t.version == 4]
    for block in _PRIVATE_BLOCKS:
        if prefixlen < block.prefixlen:
            continue
        for tries, candidate in enumerate(block.subnets(new_prefix=prefixlen)):
            if tries >= _SUGGEST_TRIES:
                break
            if not any(candidate.overlaps(t) for t in same):
                return candidate
    return None


# --------------------------------------------------------------------------- networks


def check_networks(data: CheckInput) -> list[Issue]:
    """Network names are unique, and no two declared networks overlap.

    Returns:
        ``duplicate-network`` and ``network-overlap`` issues on ``networks[<i>]``.
    """
    if data.networks is None:
        return []
    issues: list[Issue] = []
    seen: dict[str, int] = {}
    for i, net in enumerate(data.networks):
        if net.name in seen:
            issues.append(
                Issue.on_host(
                    data.site_file,
                    None,
                    f"networks[{i}].name",
                    f"network name {net.name!r} is already used by networks[{seen[net.name]}]",
                    "give every network its own name",
                    "duplicate-network",
                )
            )
        seen.setdefault(net.name, i)
    # Sweep over the networks sorted by first address: O(n log n) instead of all pairs.
    for version in (4, 6):
        ordered = sorted(
            ((n.cidr, i) for i, n in enumerate(data.networks) if n.cidr.version == version),
            key=lambda item: (item[0].network_address, item[0].prefixlen),
        )
        widest: tuple[IpNet, int] | None = None
        for cidr, i in ordered:
            # Compared as integers: one address family per sweep, which the type checker cannot see.
            if widest is not None and int(cidr.network_address) <= int(widest[0].broadcast_address):
                other = data.networks[widest[1]]
                issues.append(
                    Issue.on_host(
                        data.site_file,
                        None,
                        f"networks[{i}].cidr",
                        f"network {data.networks[i].name} ({cidr}) overlaps network {other.name} ({other.cidr})",
                        "declare each network once with its real range; networks of the site must not overlap",
                        "network-overlap",
                    )
                )
            if widest is None or int(cidr.broadcast_address) > int(widest[0].broadcast_address):
                widest = (cidr, i)
    return issues


# --------------------------------------------------------------------------- hosts: uniqueness


def check_unique_hostnames(data: CheckInput) -> list[Issue]:
    """Every hostname appears once in the site (across all files).

    Returns:
        ``duplicate-hostname`` issues on the second and later occurrences, naming the first.
    """
    if _scan(data).distinct_hostnames:
        return []  # the common case, found by the scan
    issues: list[Issue] = []
    first: dict[str, HostRecord] = {}
    for record in data.records:
        name = record.host.hostname
        earlier = first.get(name)
        if earlier is None:
            first[name] = record
            continue
        issues.append(
            Issue.on_host(
                record.file,
                name,
                "hostname",
                f"hostname {name!r} is declared twice (hosts[{record.index}] here, hosts[{earlier.index}] in {earlier.file})",
                "give every host its own hostname (it becomes the Kubernetes node name), or delete the duplicate",
                "duplicate-hostname",
            )
        )
    return issues


def check_unique_addresses(data: CheckInput) -> list[Issue]:
    """Every address (management, data, BMC) is used once in the whole site.

    A host that sends data traffic over its management address leaves ``addresses.data``
    out rather than repeating the address.

    Returns:
        ``duplicate-address`` issues on the later use, naming the first.
    """
    every = [key for keys in data.address_values.values() for key in keys]
    if len(set(every)) == len(every):
        return []  # all distinct
    issues: list[Issue] = []
    # Keyed by (version, integer): hashing ipaddress objects is several times slower.
    owner: dict[tuple[int, int], tuple[HostRecord, str]] = {}
    for record in data.records:
        for slot, address in record.host.addresses.items():
            key = (address.version, int(address))
            earlier = owner.get(key)
            if earlier is None:
                owner[key] = (record, slot)
                continue
            who = "this host's" if earlier[0] is record else f"{earlier[0].host.hostname}'s"
            issues.append(
                Issue.on_host(
                    record.file,
                    record.host.hostname,
                    f"addresses.{slot}",
                    f"address {address} is already {who} addresses.{earlier[1]} ({earlier[0].file})",
                    "give every interface its own address (leave `data` out when data traffic uses the management address)",
                    "duplicate-address",
                )
            )
    return issues


def check_addresses_in_networks(data: CheckInput) -> list[Issue]:
    """Each host address lies in a declared network of the same purpose, and is not that
    network's network or broadcast address.

    ``addresses.management`` must be in a ``purpose: management`` network, ``data`` in a
    ``data`` network, ``bmc`` in a ``bmc`` network. When no network of a needed purpose is
    declared, one ``missing-network`` issue (on ``networks``) names the hosts concerned.

    Returns:
        ``address-outside-network``, ``address-reserved`` and ``missing-network`` issues.
    """
    if data.networks is None:
        return []
    # (version, network as integer, netmask as integer, network) per purpose: a bit test per
    # address instead of ipaddress's slower ``in``.
    by_purpose: dict[str, list[tuple[int, int, int, Network]]] = {}
    for net in data.networks:
        by_purpose.setdefault(net.purpose, []).append(
            (net.cidr.version, int(net.cidr.network_address), int(net.cidr.netmask), net)
        )
    if all(_all_at_home(keys, by_purpose.get(slot)) for slot, keys in data.address_values.items()):
        return []
    issues: list[Issue] = []
    homeless: dict[str, list[HostRecord]] = {}
    for record in data.records:
        for slot, address in record.host.addresses.items():
            nets = by_purpose.get(slot)
            if not nets:
                homeless.setdefault(slot, []).append(record)
                continue
            version, value = address.version, int(address)
            home = None
            for v, base, mask, net in nets:
                if v == version and value & mask == base:
                    home = net
                    break
            if home is None:
                nets_of_slot = [n for _, _, _, n in nets]
                listed = ", ".join(f"{n.name} {n.cidr}" for n in nets_of_slot)
                issues.append(
                    Issue.on_host(
                        record.file,
                        record.host.hostname,
                        f"addresses.{slot}",
                        f"address {address} is in no {slot} network (declared: {listed})",
                        f"use an address inside a `purpose: {slot}` network, or declare the network it belongs to under `networks`",
                        "address-outside-network",
                    )
                )
                continue
            cidr = home.cidr
            reserved = value == int(cidr.network_address) or (
                version == 4 and cidr.prefixlen <= 30 and value == int(cidr.broadcast_address)
            )
            if reserved:
                what = "network" if value == int(cidr.network_address) else "broadcast"
                issues.append(
                    Issue.on_host(
                        record.file,
                        record.host.hostname,
                        f"addresses.{slot}",
                        f"address {address} is the {what} address of network {home.name} ({cidr})",
                        "use a host address inside the network",
                        "address-reserved",
                    )
                )
    for slot, records in homeless.items():
        issues.append(
            Issue.on_host(
                data.site_file,
                None,
                "networks",
                f"{len(records)} host(s) have an addresses.{slot} ({_names(records)}) but no network has purpose {slot}",
                f"declare the {slot} network under `networks` (name, cidr, purpose: {slot})",
                "missing-network",
            )
        )
    return issues


def _all_at_home(keys: list[int], nets: list[tuple[int, int, int, Network]] | None) -> bool:
    """True when every address of ``keys`` (:func:`_address_key`) lies in the one IPv4 network of ``nets`` and is neither
    its network nor (up to /30) its broadcast address: the common case of :func:`check_addresses_in_networks`, decided
    without naming anyone. False (let the full check run) for several networks of the purpose, IPv6, or any doubt."""
    if not keys:
        return True
    if nets is None or len(nets) != 1 or nets[0][0] != 4:
        return False
    _, base, mask, net = nets[0]
    broadcast = int(net.cidr.broadcast_address) if net.cidr.prefixlen <= 30 else -1
    return all(k >= 0 and k & mask == base and k != base and k != broadcast for k in keys)


# --------------------------------------------------------------------------- cluster CIDRs


def check_cidr_overlaps(data: CheckInput) -> list[Issue]:
    """Pod and service subnets overlap neither each other, the site's networks, nor the linked
    cloud VPC; the site's networks do not overlap the linked cloud VPC either.

    Overlaps break routing: a pod or ClusterIP that equals a node, BMC or VPC address is
    unreachable (or reaches the wrong machine) once the site is linked to the cloud.

    Also runs on a partial cluster (another cluster field invalid) with the CIDRs it has.

    Returns:
        ``cidr-overlap`` issues on ``cluster.podSubnet``, ``cluster.serviceSubnet`` or
        ``cluster.linkedCloudVpcCidr``; the fix suggests a free private range when one exists.
    """
    cluster = data.cluster
    if cluster is None:
        return []
    networks = data.networks or ()
    candidates: list[tuple[str, str, IpNet | None]] = [
        ("cluster.podSubnet", "podSubnet", cluster.pod_subnet),
        ("cluster.serviceSubnet", "serviceSubnet", cluster.service_subnet),
    ]
    ranges = [(key, name, cidr) for key, name, cidr in candidates if cidr is not None]
    vpc = cluster.linked_cloud_vpc_cidr
    everything = [r[2] for r in ranges] + [n.cidr for n in networks] + ([vpc] if vpc is not None else [])
    issues: list[Issue] = []

    def report(key: str, name: str, cidr: IpNet, other_name: str, other: IpNet) -> None:
        free = _free_range(cidr.prefixlen, cidr.version, everything)
        hint = f", e.g. {free}" if free is not None else ""
        issues.append(
            Issue.on_host(
                data.site_file,
                None,
                key,
                f"{name} {cidr} overlaps {other_name} {other}",
                f"choose a {name} range that overlaps none of the pod, service, host and VPC ranges{hint}",
                "cidr-overlap",
            )
        )

    pod, service = cluster.pod_subnet, cluster.service_subnet
    if pod is not None and service is not None and _overlaps(pod, service):
        report("cluster.serviceSubnet", "serviceSubnet", service, "podSubnet", pod)
    for key, name, cidr in ranges:
        for net in networks:
            if _overlaps(cidr, net.cidr):
                report(key, name, cidr, f"network {net.name} ({net.purpose})", net.cidr)
        if vpc is not None and _overlaps(cidr, vpc):
            report(key, name, cidr, "the linked cloud VPC (linkedCloudVpcCidr)", vpc)
    if vpc is not None:
        for net in networks:
            if _overlaps(net.cidr, vpc):
                issues.append(
                    Issue.on_host(
                        data.site_file,
                        None,
                        "cluster.linkedCloudVpcCidr",
                        f"the linked cloud VPC {vpc} overlaps network {net.name} ({net.cidr}); "
                        "traffic between the site and the VPC cannot be routed",
                        "renumber the site network or choose a non-overlapping VPC CIDR in the cloud stack",
                        "cidr-overlap",
                    )
                )
    return issues


# --------------------------------------------------------------------------- control plane


def check_control_plane_count(data: CheckInput) -> list[Issue]:
    """There is at least one control-plane host, an odd number of them, and one is active.

    Every control-plane host counts, whatever its ``state``: in kubeadm's stacked topology
    each runs an etcd member, and a host out for repair stays a member until it is removed.
    An etcd cluster of N members needs N/2+1 for quorum, so an even N tolerates no more
    failures than N-1 (sources in the module docstring). Skipped while some hosts failed
    validation (their roles are unknown).

    Returns:
        ``no-control-plane``, ``even-control-planes`` (on the last control-plane host's
        ``role``) and ``no-active-control-plane`` issues.
    """
    if not data.hosts_complete:
        return []
    planes = data.control_planes
    if not planes:
        return [
            Issue.on_host(
                data.site_file,
                None,
                "hosts",
                "no host has role control-plane; the cluster needs at least one (kubeadm init runs there)",
                "give 1, 3 or 5 hosts `role: control-plane` (3 or 5 for a highly available etcd)",
                "no-control-plane",
            )
        ]
    issues: list[Issue] = []
    count = len(planes)
    if count % 2 == 0:
        last = planes[-1]
        tolerated = (count - 1) // 2
        issues.append(
            Issue.on_host(
                last.file,
                last.host.hostname,
                "role",
                f"{count} control-plane hosts ({_names(planes)}): each runs an etcd member, and {count} members need "
                f"a quorum of {count // 2 + 1}, tolerating {tolerated} failure(s), no more than {count - 1} members would",
                f"use an odd number of control-plane hosts: add one (to {count + 1}) or give one, e.g. "
                f"{last.host.hostname}, another role (to {count - 1})",
                "even-control-planes",
            )
        )
    if not any(r.host.state == "active" for r in planes):
        issues.append(
            Issue.on_host(
                data.site_file,
                None,
                "hosts",
                f"no control-plane host is active ({_names(planes)} are cordoned or absent); kubeadm init needs one",
                "set `state: active` on at least one control-plane host",
                "no-active-control-plane",
            )
        )
    return issues


def check_control_plane_endpoint(data: CheckInput) -> list[Issue]:
    """With more than one control-plane host, ``cluster.controlPlaneEndpoint`` is set and is
    not one of the hosts' own addresses.

    kubeadm joins further control-plane nodes only to a cluster created with a stable
    ``controlPlaneEndpoint`` (a load balancer or virtual IP in front of every API server);
    an endpoint that is one node's address stops working when that node does.

    Returns:
        ``endpoint-missing`` and ``endpoint-is-host`` issues on ``cluster.controlPlaneEndpoint``.
    """
    cluster = data.cluster
    if cluster is None or not data.cluster_complete:
        return []
    planes = data.control_planes
    if len(planes) <= 1:
        return []
    if cluster.control_plane_endpoint is None:
        return [
            Issue.on_host(
                data.site_file,
                None,
                "cluster.controlPlaneEndpoint",
                f"{len(planes)} control-plane hosts ({_names(planes)}) but no controlPlaneEndpoint",
                "set `controlPlaneEndpoint` to the load balancer or virtual IP in front of all API servers, "
                "e.g. `k8s-api.<site>.example.internal:6443`",
                "endpoint-missing",
            )
        ]
    host = cluster.endpoint_host
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return []
    if all(_address_key(address) not in keys for keys in map(set, data.address_values.values())):
        return []
    for record in data.records:
        for slot, own in record.host.addresses.items():
            if own == address:
                return [
                    Issue.on_host(
                        data.site_file,
                        None,
                        "cluster.controlPlaneEndpoint",
                        f"controlPlaneEndpoint {cluster.control_plane_endpoint} is {record.host.hostname}'s own addresses.{slot}; "
                        f"with {len(planes)} control-plane hosts the API becomes unreachable when that host is down",
                        "point it at a load balancer or virtual IP (e.g. kube-vip, keepalived) in front of every control-plane host",
                        "endpoint-is-host",
                    )
                ]
    return []


# --------------------------------------------------------------------------- addresses the cluster's own ranges swallow


def _cluster_range_of(address: ipaddress.IPv4Address | ipaddress.IPv6Address, cluster: Cluster) -> tuple[str, IpNet] | None:
    """``("podSubnet"|"serviceSubnet", range)`` when ``address`` lies in the cluster's pod or service range, else None."""
    for name, cidr in (("podSubnet", cluster.pod_subnet), ("serviceSubnet", cluster.service_subnet)):
        if cidr is not None and cidr.version == address.version and address in cidr:
            return name, cidr
    return None


#: Why an address outside the cluster inside its pod or service range is unreachable from the cluster.
_RANGE_REASON = {
    "serviceSubnet": "every node and pod treats the service range as ClusterIPs: kube-proxy (nftables mode) drops new "
    "connections to an unallocated ClusterIP (\"Drop traffic to unallocated ClusterIPs\") and DNATs an allocated one to "
    "that Service's pods, and the API server may hand this very address to a Service",
    "podSubnet": "the CNI routes the pod range to pods (Cilium's cluster-pool hands it out per node), so traffic from nodes "
    "and pods to this address goes to a pod, or nowhere, instead of to the machine",
}


def check_cluster_range_addresses(data: CheckInput) -> list[Issue]:
    """Machines outside the cluster are not addressed inside the cluster's pod or service range.

    * ``cluster.controlPlaneEndpoint`` given as an IP address (the load balancer or virtual IP in
      front of the API servers) must lie outside ``podSubnet`` and ``serviceSubnet``;
    * so must the NFS ``storage.endpoint`` and every ``storage.servers[].address`` given as an IP
      address (the CSI node plugin mounts from the host's network namespace). DNS names are not
      resolved offline.

    Sources (read 2026-11-26): kube-proxy's nftables proxier adds ``ip daddr { <service CIDRs> }
    drop`` ("Drop traffic to unallocated ClusterIPs") to chain ``cluster-ips-check``, jumped to from
    ``filter-forward`` and ``filter-output-post-dnat`` for new connections (kubernetes/kubernetes
    ``pkg/proxy/nftables/proxier.go`` ``setupNFTables``, stored snapshot at commit b0f823e6);
    Cilium's install guide, "conflicting node CIDRs" (cilium/cilium PR #20208): when the node
    network lies in the pod range "you will lose connectivity to other nodes. All egress traffic
    will be assumed to target pods on a given node rather than other nodes".

    Returns:
        ``endpoint-in-cluster-range`` issues on ``cluster.controlPlaneEndpoint`` and
        ``storage-in-cluster-range`` issues on ``storage.endpoint`` / ``storage.servers[<i>].address``.
    """
    cluster = data.cluster
    if cluster is None:
        return []
    issues: list[Issue] = []
    if data.cluster_complete and cluster.control_plane_endpoint is not None:
        try:
            endpoint = ipaddress.ip_address(cluster.endpoint_host or "")
        except ValueError:
            endpoint = None
        found = _cluster_range_of(endpoint, cluster) if endpoint is not None else None
        if endpoint is not None and found is not None:
            name, cidr = found
            issues.append(
                Issue.on_host(
                    data.site_file,
                    None,
                    "cluster.controlPlaneEndpoint",
                    f"endpoint address {endpoint} lies in the cluster's {name} {cidr}: {_RANGE_REASON[name]}; kubelets, kubeadm join "
                    "and every in-cluster client would lose the API server",
                    f"give the load balancer or virtual IP an address of the management network, outside {cluster.pod_subnet} and "
                    f"{cluster.service_subnet} (or use its DNS name), or move `{name}` to a free range",
                    "endpoint-in-cluster-range",
                )
            )
    storage = data.storage
    if storage is not None:
        places = ([("storage.endpoint", storage.endpoint)] if storage.endpoint is not None else []) + [
            (f"storage.servers[{i}].address", server.address) for i, server in enumerate(storage.servers)
        ]
        for key, text in places:
            try:
                address = ipaddress.ip_address(text)
            except ValueError:
                continue
            found = _cluster_range_of(address, cluster)
            if found is None:
                continue
            name, cidr = found
            issues.append(
                Issue.on_host(
                    data.site_file,
                    None,
                    key,
                    f"storage address {address} lies in the cluster's {name} {cidr}: {_RANGE_REASON[name]}; the NFS mount of "
                    "every training pod would hang",
                    f"use the server's address on the data or management network, outside {cluster.pod_subnet} and "
                    f"{cluster.service_subnet}, or move `{name}` to a free range",
                    "storage-in-cluster-range",
                )
            )
    return issues


# --------------------------------------------------------------------------- SSH keys

#: Bytes read from the head of a ``keySecret.file`` to tell a public key from a private one.
_KEY_HEAD_BYTES = 64


def _is_public_key_file(name: str) -> bool:
    """True when the file ``name`` (``~`` expanded, relative to the working directory) exists and starts like a public key.

    Reads at most :data:`_KEY_HEAD_BYTES` bytes; a missing, unreadable or non-regular file is not judged (False).
    """
    path = Path(name).expanduser()
    try:
        if not path.is_file():
            return False
        with path.open("rb") as handle:
            head = handle.read(_KEY_HEAD_BYTES)
    except OSError:
        return False
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    return text.startswith(PUBLIC_KEY_PREFIXES)


def check_ssh_key_files(data: CheckInput) -> list[Issue]:
    """A ``ssh.keySecret.file`` that exists on this machine holds a private key, not a public one.

    hybridgpu hands the file's content to pulumi-command's remote connection as ``privateKey``,
    which parses it with ``ssh.ParsePrivateKey`` (pulumi/pulumi-command
    ``provider/pkg/provider/remote/connection.go``, stored snapshot at commit e1fd5afe, read
    2026-11-26); a public key line (``ssh-ed25519 AAAA... comment``) is no PEM block, so every
    command on the host fails with "ssh: no key found" (golang.org/x/crypto ``ssh/keys.go``
    ``ParseRawPrivateKey``), and ``ssh -i`` refuses it too. Files that do not exist here (the key is
    on the deploy machine only) are not judged; a ``.pub`` name is refused by the model already.
    Each distinct file is read once (its first :data:`_KEY_HEAD_BYTES` bytes); its content never
    appears in an issue.

    Returns:
        ``ssh-public-key`` issues on ``ssh.keySecret.file``: one per file, on the first host naming
        it, listing the other hosts that name it.
    """
    issues: list[Issue] = []
    for name, records in _scan(data).key_files.items():
        if not _is_public_key_file(name):
            continue
        first, others = records[0], records[1:]
        also = f" (also named by {len(others)} more host(s): {_names(others)})" if others else ""
        issues.append(
            Issue.on_host(
                first.file,
                first.host.hostname,
                "ssh.keySecret.file",
                f"{name} holds a public key (the half that goes into the host's authorized_keys){also}; the SSH connection "
                "needs the private key and would fail with \"ssh: no key found\" (the content is not shown)",
                "name the private key file of the pair (usually the same path without .pub, as `ssh-keygen -y -f <private>` "
                "prints this public key)",
                "ssh-public-key",
            )
        )
    return issues


# --------------------------------------------------------------------------- GPUs


def check_gpu_roles(data: CheckInput) -> list[Issue]:
    """A ``gpu-worker`` declares its GPUs; a ``cpu-worker`` and a ``control-plane`` declare none.

    The renderers give GPU labels, the GPU taint, the NVIDIA toolkit and MIG configs to
    gpu-workers only (:class:`hybridgpu.render.kubeadm_specs.NodeSpec` refuses GPUs on other roles), so a
    control plane with a ``gpu`` section used to pass validation and then fail in ``preview``
    (found by ``tests/inventory/test_render_rules.py``'s property test, issue 17).

    Returns:
        ``gpu-role`` issues on ``gpu`` (or ``role``).
    """
    issues: list[Issue] = []
    for record in _scan(data).gpu_roles:
        host = record.host
        if host.role == "gpu-worker" and host.gpu is None:
            issues.append(
                Issue.on_host(
                    record.file,
                    host.hostname,
                    "gpu",
                    "a gpu-worker needs a `gpu` section (model, count)",
                    "add `gpu: {model: <catalog key>, count: <n>}`, or change the role to cpu-worker",
                    "gpu-role",
                )
            )
        elif host.role == "cpu-worker" and host.gpu is not None:
            issues.append(
                Issue.on_host(
                    record.file,
                    host.hostname,
                    "role",
                    f"a cpu-worker has a `gpu` section ({host.gpu.count} x {host.gpu.model})",
                    "set `role: gpu-worker`, or remove the `gpu` section",
                    "gpu-role",
                )
            )
        elif host.role == "control-plane" and host.gpu is not None:
            issues.append(
                Issue.on_host(
                    record.file,
                    host.hostname,
                    "gpu",
                    f"a control-plane host has a `gpu` section ({host.gpu.count} x {host.gpu.model}); hybridgpu sets up GPUs "
                    "(labels, taint, container toolkit, MIG) on gpu-workers only, so these GPUs would never be usable",
                    "remove the `gpu` section from the control plane (its GPUs stay idle), or run the GPUs on a gpu-worker host",
                    "gpu-role",
                )
            )
    return issues


def _known_models(catalog: Catalog) -> frozenset[str]:
    return frozenset(m.name for m in catalog.gpu_models)


def check_gpu_models(data: CheckInput, catalog: Catalog | None = None) -> list[Issue]:
    """Every ``gpu.model`` is a GPU catalog key (``hybridgpu.catalog``), e.g. ``H100-80GB``.

    Args:
        data: the hosts.
        catalog: GPU catalog (default: the packaged one).

    Returns:
        ``unknown-gpu-model`` issues on ``gpu.model``, with close matches.
    """
    catalog = catalog or load_catalog()
    known = _known_models(catalog)
    issues: list[Issue] = []
    messages: dict[str, tuple[str, str]] = {}
    for record in _scan(data, known).gpu_models:
        gpu = record.host.gpu
        if gpu is None or gpu.model in known:
            continue
        if gpu.model not in messages:
            try:
                catalog.gpu_model(gpu.model)
            except UnknownGpuModelError as exc:
                hint = f"use {' or '.join(map(repr, exc.suggestions))}" if exc.suggestions else "use a catalog key"
                messages[gpu.model] = (exc.message, f"{hint} (known: {', '.join(sorted(known))})")
        message, fix = messages[gpu.model]
        issues.append(Issue.on_host(record.file, record.host.hostname, "gpu.model", message, fix, "unknown-gpu-model"))
    return issues


def _bus_key(bus_id: str) -> tuple[int, str]:
    domain, rest = bus_id.split(":", 1)
    return int(domain, 16), rest.lower()


def check_pci_ids(data: CheckInput) -> list[Issue]:
    """``gpu.pciIds`` lists either nothing or one distinct bus id per GPU.

    Returns:
        ``pci-ids`` issues on ``gpu.pciIds``.
    """
    issues: list[Issue] = []
    for record in _scan(data).pci_ids:
        gpu = record.host.gpu
        if gpu is None or not gpu.pci_ids:
            continue
        if len(gpu.pci_ids) != gpu.count:
            issues.append(
                Issue.on_host(
                    record.file,
                    record.host.hostname,
                    "gpu.pciIds",
                    f"{len(gpu.pci_ids)} PCI bus id(s) for {gpu.count} GPU(s)",
                    "list one bus id per GPU in index order (`nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader`), or none",
                    "pci-ids",
                )
            )
        seen: set[tuple[int, str]] = set()
        repeated = []
        for bus_id in gpu.pci_ids:
            key = _bus_key(bus_id)
            if key in seen:
                repeated.append(bus_id)
            seen.add(key)
        if repeated:
            issues.append(
                Issue.on_host(
                    record.file,
                    record.host.hostname,
                    "gpu.pciIds",
                    f"PCI bus id(s) listed more than once: {', '.join(repeated)}",
                    "list each GPU's bus id once",
                    "pci-ids",
                )
            )
    return issues


def _profile_field(name: str) -> str:
    return f'layout["{name}"]'


@functools.lru_cache(maxsize=4096)
def _mig_verdict(model: str, items: tuple[tuple[str, int], ...]) -> tuple[tuple[str, str, str, str], ...]:
    """Issues ``(field suffix, message, fix, code)`` of one layout on one GPU model (cached).

    The inventory repeats the same few layouts on many hosts; each distinct one is checked once.
    """
    try:
        gpu = mig_gpu(model)
    except UnknownMigModelError as exc:
        return (("", exc.message, "remove `migLayouts` (this GPU has no MIG) or correct `gpu.model`", "mig-unsupported-model"),)
    unknown = [name for name, _ in items if not gpu.has_profile(name)]
    if unknown:
        out = []
        for name in unknown:
            err = UnknownMigProfileError(gpu.name, name, gpu.profile_names)
            hint = f"use {' or '.join(map(repr, err.suggestions))}" if err.suggestions else "use a profile of the model"
            out.append(
                (
                    "." + _profile_field(name),
                    err.message,
                    f"{hint} (profiles of {gpu.name}: {', '.join(gpu.profile_names)})",
                    "mig-unknown-profile",
                )
            )
        return tuple(out)
    try:
        placement = check_layout(gpu.name, dict(items))
    except InvalidMigCountError as exc:  # the models only let whole numbers >= 0 through
        return ((".layout", str(exc), "use whole numbers >= 0", "mig-unplaceable"),)
    if placement.ok:
        return ()
    mix = ", ".join(f"{n} x {p}" for p, n in items if n) or "(empty)"
    command = " ".join(f"{p}={n}" for p, n in items)
    return (
        (
            ".layout",
            f"MIG layout {mix} cannot be placed on one {gpu.name}: {placement.reason}",
            f"remove or shrink instances until it fits on one GPU (`hybridgpu mig check {gpu.name} {command}` shows why; "
            f"`hybridgpu mig profiles {gpu.name}` lists the profiles)",
            "mig-unplaceable",
        ),
    )


MigKey = tuple[tuple[object, tuple[tuple[str, int], ...]], ...]


@functools.lru_cache(maxsize=4096)
def _host_mig_verdict(model: str, count: int, layouts: MigKey) -> tuple[tuple[str, str, str, str], ...]:
    """Issues ``(field, message, fix, code)`` of a host's ``migLayouts`` (cached).

    Args:
        model: the GPU model (a catalog key).
        count: the host's GPU count.
        layouts: per entry ``(gpus, layout items)``, ``gpus`` being ``"all"`` or a tuple of indices.

    Hosts of one kind share model, count and layouts, so a site with thousands of hosts
    checks each distinct combination once.
    """
    try:
        mig_gpu(model)
    except UnknownMigModelError as exc:
        fix = f"remove `migLayouts` ({model} has no MIG), or correct `gpu.model`"
        return (("gpu.migLayouts", exc.message, fix, "mig-unsupported-model"),)
    out: list[tuple[str, str, str, str]] = []
    covered: dict[int, int] = {}
    for j, (gpus, items) in enumerate(layouts):
        key = f"gpu.migLayouts[{j}]"
        out += [(key + suffix, message, fix, code) for suffix, message, fix, code in _mig_verdict(model, items)]
        indices: tuple[int, ...] = tuple(range(count)) if gpus == "all" else gpus  # type: ignore[assignment]
        out_of_range = sorted({g for g in indices if g >= count})
        if out_of_range:
            out.append(
                (
                    f"{key}.gpus",
                    f"GPU index(es) {out_of_range} out of range: the host has {count} GPU(s), indices 0-{count - 1}",
                    f"use indices 0-{count - 1} (nvidia-smi's index), or correct `gpu.count`",
                    "mig-gpu-index",
                )
            )
        repeated = sorted({g for g in indices if indices.count(g) > 1})
        if repeated:
            out.append((f"{key}.gpus", f"GPU index(es) {repeated} listed more than once", "list each GPU once", "mig-gpu-index"))
        overlap = sorted({g for g in indices if g in covered and g < count})
        if overlap:
            where = ", ".join(f"GPU {g} in migLayouts[{covered[g]}]" for g in overlap)
            out.append(
                (
                    f"{key}.gpus",
                    f"GPU index(es) {overlap} already have a layout ({where}); a GPU has one MIG layout",
                    "give every GPU index to exactly one migLayouts entry (`all` covers every GPU)",
                    "mig-gpu-overlap",
                )
            )
        for g in indices:
            covered.setdefault(g, j)
    return tuple(out)


def check_mig_layouts(data: CheckInput, catalog: Catalog | None = None) -> list[Issue]:
    """Every ``gpu.migLayouts`` entry is valid for the host's GPUs.

    * the GPU model has MIG (:func:`hybridgpu.mig.mig_gpu`);
    * every profile is one of the model's (the issue names the close match);
    * the mix fits on ONE GPU (:func:`hybridgpu.mig.check_layout`; the issue carries the
      checker's reason);
    * GPU indices are below ``gpu.count``, listed once, and no GPU is covered by two entries
      (``"all"`` covers every GPU). GPUs in no entry keep MIG disabled.

    Hosts whose model is not in the catalog are skipped (:func:`check_gpu_models` reports
    them). Each distinct (model, count, layouts) combination is checked once and cached.

    Returns:
        ``mig-unsupported-model``, ``mig-unknown-profile``, ``mig-unplaceable``,
        ``mig-gpu-index`` and ``mig-gpu-overlap`` issues on ``gpu.migLayouts[<i>]...``.
    """
    catalog = catalog or load_catalog()
    known = _known_models(catalog)
    issues: list[Issue] = []
    for record, verdict in _scan(data, known).mig_layouts:
        for field_path, message, fix, code in verdict:
            issues.append(Issue.on_host(record.file, record.host.hostname, field_path, message, fix, code))
    return issues


# --------------------------------------------------------------------------- what rendering relies on


#: Why the Kubernetes-facing ranges must be IPv4 (the one family hybridgpu deploys).
_IPV4_ONLY = (
    "hybridgpu builds single-stack IPv4 clusters (Cilium gets an IPv4 cluster-pool, kubeadm one podSubnet and "
    "serviceSubnet, kubelet one --node-ip)"
)


def check_ip_family(data: CheckInput) -> list[Issue]:
    """The Kubernetes-facing addresses are all IPv4: ``podSubnet``, ``serviceSubnet``, every
    host's ``addresses.management`` and an IP ``controlPlaneEndpoint``.

    Mixed families break the cluster at start: kube-apiserver refuses a service range whose
    family differs from its advertise address ("service IP family %q must match public address
    family %q", kubernetes/kubernetes ``cmd/kube-apiserver/app/options/validation.go``, read
    2026-11-24), and an IPv6 ``podSubnet`` would be written into Cilium's IPv4 cluster-pool
    (``ipam.operator.clusterPoolIPv4PodCIDRList``). Dual-stack end to end (two pod and service
    ranges, two node IPs, Cilium ``ipv6.enabled``) is not built, so the rule is "IPv4 only"
    rather than "one family": a single-stack IPv6 site is refused too, with the reason.
    ``data``, ``bmc`` and ``infiniband`` addresses may be IPv6 (Kubernetes never sees them).

    Returns:
        ``ip-family`` issues on ``cluster.*`` and ``addresses.management``.
    """
    issues: list[Issue] = []
    cluster = data.cluster
    if cluster is not None:
        for key, net in (("cluster.podSubnet", cluster.pod_subnet), ("cluster.serviceSubnet", cluster.service_subnet)):
            if net is not None and net.version != 4:
                issues.append(
                    Issue.on_host(
                        data.site_file,
                        None,
                        key,
                        f"{net} is IPv6; {_IPV4_ONLY}",
                        "use a private IPv4 range, e.g. 10.244.0.0/16 for pods and 10.96.0.0/12 for services",
                        "ip-family",
                    )
                )
        if data.cluster_complete and cluster.control_plane_endpoint is not None:
            try:
                endpoint = ipaddress.ip_address(cluster.endpoint_host or "")
            except ValueError:
                endpoint = None
            if endpoint is not None and endpoint.version != 4:
                issues.append(
                    Issue.on_host(
                        data.site_file,
                        None,
                        "cluster.controlPlaneEndpoint",
                        f"endpoint address {endpoint} is IPv6; {_IPV4_ONLY}",
                        "use the IPv4 address (or a DNS name resolving to it) of the load balancer in front of the API servers",
                        "ip-family",
                    )
                )
    if all(key >= 0 for key in data.address_values["management"]):
        return issues
    for record in data.records:
        address = record.host.addresses.management
        if address.version != 4:
            issues.append(
                Issue.on_host(
                    record.file,
                    record.host.hostname,
                    "addresses.management",
                    f"management address {address} is IPv6 in an IPv4 cluster: it becomes the kubelet's --node-ip and the API "
                    "server's advertise address, and kube-apiserver refuses to start when that family differs from the service "
                    "range's (hybridgpu builds single-stack IPv4 clusters)",
                    "use the host's IPv4 management address (an IPv6 one can go under `addresses.data`)",
                    "ip-family",
                )
            )
    return issues


def check_node_labels(data: CheckInput) -> list[Issue]:
    """Every ``labels`` key is one the kubelet may set on its own Node.

    The labels go into kubelet ``--node-labels``; the kubelet refuses to start with a label in
    the ``kubernetes.io``/``k8s.io`` namespaces outside its allow-list, and the NodeRestriction
    admission plugin refuses ``node-restriction.kubernetes.io/*`` (rules and sources in
    :func:`hybridgpu.k8s.is_kubelet_settable_label`). ``node-role.kubernetes.io/worker`` is the
    usual victim.

    Returns:
        ``kubelet-label`` issues on ``labels["<key>"]``.
    """
    issues: list[Issue] = []
    verdict: dict[str, bool] = {}
    for record in _scan(data).node_labels:
        for key in record.host.labels:
            ok = verdict.get(key)
            if ok is None:
                ok = verdict[key] = is_kubelet_settable_label(key)
            if ok:
                continue
            namespaces = "/".join(KUBELET_RESTRICTED_LABEL_NAMESPACES)
            allowed = ", ".join(ns + "/*" for ns in KUBELET_ALLOWED_LABEL_NAMESPACES)
            issues.append(
                Issue.on_host(
                    record.file,
                    record.host.hostname,
                    f'labels["{key}"]',
                    f"the kubelet may not set label {key!r} on its own Node ({namespaces} labels are limited to {allowed} and a "
                    f"short allow-list such as {ZONE_LABEL}; node-restriction.kubernetes.io/* never), so the kubelet would refuse to start",
                    f"use a label of your own prefix, e.g. `{ROLE_LABEL}` (set by hybridgpu to the host's role) or "
                    "`example.com/<name>`, or set it after the join with `kubectl label node`",
                    "kubelet-label",
                )
            )
    return issues


def check_taints(data: CheckInput) -> list[Issue]:
    """Taints are unique per (key, effect), and a GPU taint does not evict the NVIDIA operands.

    * The API server refuses a Node whose taints repeat a (key, effect) pair ("taints must be
      unique by key and effect pair", kubernetes/kubernetes ``pkg/apis/core/validation``
      ``validateNodeTaints``), so the node would never register.
    * The operator's ``nvidia.com/gpu`` taint is rendered as written (value and effect). Its
      effect may not be ``NoExecute``: the GPU Operator's operands (driver, toolkit, device
      plugin, mig-manager) and its NFD worker tolerate ``nvidia.com/gpu`` only with effect
      ``NoSchedule`` (NVIDIA/gpu-operator ``deployments/gpu-operator/values.yaml``,
      ``daemonsets.tolerations``, v26.7.0, commit a22dbf67, read 2026-11-24), so a NoExecute
      taint evicts them and the node never advertises a GPU.

    Returns:
        ``duplicate-taint`` and ``gpu-taint`` issues on ``taints[<i>]``.
    """
    issues: list[Issue] = []
    # The scan's hosts: one taint repeats nothing, and only a GPU taint's effect matters.
    for record in _scan(data).taints:
        seen: dict[tuple[str, str], int] = {}
        for i, taint in enumerate(record.host.taints):
            effect = str(taint.effect)
            pair = (taint.key, effect)
            if pair in seen:
                issues.append(
                    Issue.on_host(
                        record.file,
                        record.host.hostname,
                        f"taints[{i}]",
                        f"taint {taint.key}:{effect} is already taints[{seen[pair]}]; the API server refuses a Node whose taints "
                        "repeat a key and effect",
                        "keep one taint per key and effect",
                        "duplicate-taint",
                    )
                )
            seen.setdefault(pair, i)
            if taint.key == GPU_TAINT.key and effect == "NoExecute":
                issues.append(
                    Issue.on_host(
                        record.file,
                        record.host.hostname,
                        f"taints[{i}].effect",
                        f"a {GPU_TAINT.key} taint with effect NoExecute evicts the GPU Operator's own pods (driver, toolkit, "
                        f"device plugin, mig-manager tolerate {GPU_TAINT.key} only with effect NoSchedule), so the node would "
                        "never advertise its GPUs",
                        f"use `effect: NoSchedule` (keeps every pod without a {GPU_TAINT.key} toleration off the node), "
                        "or PreferNoSchedule",
                        "gpu-taint",
                    )
                )
    return issues


def check_storage(data: CheckInput) -> list[Issue]:
    """The site's dataset storage: supported backend, an NFS endpoint for several servers, read rate for the GPU workers.

    Counts the active GPU workers (the training nodes) and stays silent while some host failed
    validation (the count would be wrong). Rules: :func:`hybridgpu.inventory.storage.storage_issues`.

    Returns:
        ``storage-unsupported`` (``beegfs``/``lustre``), ``storage-endpoint`` (several NFS servers, no
        endpoint) and ``storage-throughput`` (the servers' read rates below the target) issues on ``storage.*``.
    """
    if data.storage is None or not data.hosts_complete:
        return []
    return storage_issues(data.storage, data.site_file, _scan(data).active_gpu_workers)


def check_fabric(data: CheckInput) -> list[Issue]:
    """NIC records, the fabric of each GPU pool, and RoCE's lossless settings.

    Rules: :func:`hybridgpu.inventory.fabric.fabric_issues`. Silent while some host failed
    validation (pools would be incomplete). A pool is the active
    gpu-workers of one GPU model: the hosts one on-prem Kueue ResourceFlavor selects.

    Returns:
        ``nic-duplicate``, ``nic-gpu-index``, ``rdma-nic-missing``, ``rdma-nic-name``, ``roce-lossless``,
        ``roce-settings-unused``, ``ofed-mixed``, ``roce-mixed-pool`` and ``fabric-mixed-pool`` issues on the host's
        ``network`` fields.
    """
    return fabric_issues(data.records) if data.hosts_complete else []


def check_topology(data: CheckInput) -> list[Issue]:
    """``rack``/``block`` usable as Kueue topology levels, and no hand-set label where hybridgpu derives one.

    Rules: :func:`hybridgpu.inventory.fabric.topology_issues`. Silent while some host failed validation.

    Returns:
        ``generated-label``, ``topology-label-value``, ``topology-block-without-rack``,
        ``topology-rack-in-two-blocks`` and ``topology-incomplete`` issues on the host's ``rack``, ``block`` or ``labels``.
    """
    return topology_issues(data.records) if data.hosts_complete else []


# --------------------------------------------------------------------------- all rules

#: The rules in the order they run (and report).
def check_rack_power(data: CheckInput, catalog: Catalog | None = None) -> list[Issue]:
    """Rack power: the active and cordoned hosts of each declared rack draw no more than its ``powerKw`` at full load.

    A host's draw is its ``powerKw``, else its GPUs' board power plus the catalog platform's draw; hosts
    of racks not declared under ``racks`` are not checked. Rules: :func:`hybridgpu.inventory.power.rack_power_issues`.

    Returns:
        ``rack-power-unknown`` (a counted host without a draw, on its ``powerKw``) and ``rack-power-budget``
        (a rack over its budget, on ``racks.<name>.powerKw``, naming the hosts and the margin) issues.
    """
    return rack_power_issues(data.racks, data.records, data.site_file, catalog or load_catalog(), hosts_complete=data.hosts_complete)


RULES: tuple[Callable[..., list[Issue]], ...] = (
    check_networks,
    check_unique_hostnames,
    check_unique_addresses,
    check_addresses_in_networks,
    check_cidr_overlaps,
    check_control_plane_count,
    check_control_plane_endpoint,
    check_cluster_range_addresses,
    check_ssh_key_files,
    check_gpu_roles,
    check_gpu_models,
    check_pci_ids,
    check_mig_layouts,
    check_ip_family,
    check_node_labels,
    check_taints,
    check_storage,
    check_fabric,
    check_topology,
    check_rack_power,
)


def run_checks(data: CheckInput, catalog: Catalog | None = None) -> list[Issue]:
    """Run every rule of this module.

    Args:
        data: the validated parts of the inventory.
        catalog: GPU catalog (default: the packaged one).

    Returns:
        All issues, rule by rule in :data:`RULES` order; empty when the inventory is sound.
    """
    catalog = catalog or load_catalog()
    issues: list[Issue] = []
    for rule in RULES:
        if rule in (check_gpu_models, check_mig_layouts, check_rack_power):
            issues += rule(data, catalog)
        else:
            issues += rule(data)
    return issues


def check_inventory(inventory: Inventory, catalog: Catalog | None = None) -> list[Issue]:
    """Run every rule on an already built :class:`~hybridgpu.inventory.models.Inventory`.

    Useful after building or changing an inventory in code; :func:`load_inventory` has
    already run them on what it returns.

    Returns:
        All issues; empty when the inventory is sound.
    """
    data = CheckInput(
        site_file=inventory.site_file,
        cluster=inventory.site.cluster,
        networks=inventory.site.networks,
        records=inventory.records,
        storage=inventory.site.storage,
        racks=inventory.site.racks,
    )
    return run_checks(data, catalog)
