"""Inventory rules for the RDMA fabric (NIC records, fabric per pool, RoCE settings) and the rack/block topology (pure).

Each function takes the host records of one inventory and returns :class:`~hybridgpu.errors.Issue`
objects (file, host, field, message, fix, code); :mod:`hybridgpu.inventory.checks` runs them as
rules ``check_fabric`` and ``check_topology``.

=============================  ==============================================================
code                           refused
=============================  ==============================================================
``nic-duplicate``              two NICs of a host with the same name, PCI address or RDMA device, or a NIC
                               at a GPU's PCI address
``nic-gpu-index``              a NIC paired (``gpu``) with a GPU the host does not have
``rdma-nic-missing``           a gpu-worker on a multi-node fabric (infiniband/roce) without a
                               compute RDMA NIC of the fabric's link type
``rdma-nic-name``              a NIC that carries the fabric without an interface ``name``
``fabric-mixed-pool``          gpu-workers of one pool on different fabrics
``roce-lossless``              ``fabric: roce`` without ``network.roce`` declaring PFC or ECN
``roce-settings-unused``       ``network.roce`` on a host whose fabric is not RoCE
``ofed-mixed``                 fabric hosts disagreeing on ``network.ofed`` (one NicClusterPolicy)
``roce-mixed-pool``            active RoCE hosts of one pool, or under the same switches (one ``block``, else one
                               ``rack``), declaring different ``network.roce.priority`` or ``pfc``
``topology-label-value``       a ``rack``/``block`` that is not a Kubernetes label value
``topology-block-without-rack`` a ``block`` without a ``rack``
``topology-rack-in-two-blocks`` one rack name under two blocks
``topology-incomplete``        an active gpu-worker without the rack/block the others declare
``generated-label``            a host's ``labels`` setting a label hybridgpu derives (topology levels,
                               fabric): the Topology's level and the node's label would differ
=============================  ==============================================================

**Pool.** The active gpu-workers with the same GPU model: the on-prem Kueue ResourceFlavor
``onprem-<model>`` selects exactly them (:func:`hybridgpu.burst.plan.onprem_capacity`, node label
``nvidia.com/gpu.product``), so the pods of one multi-node job can land on any of them. NCCL
cannot join an InfiniBand rank and a RoCE rank over RDMA (different link layers, no common
subnet), and a host without a fabric drags the whole ring down to TCP sockets: a pool must be
one fabric.

**RoCE settings per pool and per switch.** ``network.roce`` is declared per host, but the hosts of one pool
exchange one job's RDMA traffic, so they must agree on the 802.1p priority RoCE uses and on
whether PFC protects it: PFC pauses one priority only (NVIDIA Cumulus Linux 5.14 user guide,
"RDMA over Converged Ethernet - RoCE", read 2026-11-24: lossless mode enables PFC on the RoCE
priority, 3 by default), so traffic a host sends on priority 4 into ports that protect 3 is
dropped under congestion instead of paused, and NCCL sets one traffic class for every rank of a
job (``NCCL_IB_TC``, NCCL user guide "Environment Variables", read 2026-11-26). The hosts under the
same switches (one ``block``, else one ``rack``) must agree too, whatever their pool: a switch runs
one RoCE mode with one RoCE priority for all its ports (NVIDIA Onyx User Manual v3.10.4100, "RoCE
Commands": ``roce [lossy | semi-lossless | lossless]`` "Configures the switch to RoCE mode", one
application priority, 3; Cumulus ``nv set qos roce mode``; read 2026-11-26).

**RDMA shared device plugin selectors.** Mellanox/k8s-rdma-shared-dev-plugin ``pkg/types/types.go``
(master 410b0f3, 2026-04-07, read 2026-11-24): ``selectors`` are ``vendors``, ``deviceIDs``,
``drivers``, ``ifNames``, ``linkTypes``; there is no PCI-address selector, hence ``rdma-nic-name``.

**Topology.** Kueue's TAS considers only nodes carrying every level label of the Topology
(kubernetes-sigs/kueue v0.19.2 ``pkg/util/tas/node.go`` ``NodeMatchesFlavor``), so a GPU worker
missing ``rack`` while others have it is invisible to every job of its flavor: ``topology-incomplete``.
Domains are identified by the values of all levels above them, so one rack name under two blocks
is two racks to Kueue but one in the operator's head: ``topology-rack-in-two-blocks``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from hybridgpu.errors import Issue
from hybridgpu.inventory.models import HostRecord
from hybridgpu.k8s import FABRIC_LABEL, LABEL_NAME_FMT, TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL

__all__ = ["fabric_issues", "topology_issues", "pools"]

#: A Kubernetes label value (Kubernetes docs "Labels and Selectors", read 2026-11-22).
_LABEL_VALUE = re.compile(f"^{LABEL_NAME_FMT}$")  # a non-empty label value
_LINK = {"infiniband": "infiniband", "roce": "ethernet"}


def _pci(text: str) -> str:
    """A PCI address normalised for comparison: lower case, domain as 4 digits (nvidia-smi prints 8)."""
    domain, _, rest = text.lower().partition(":")
    return f"{domain[-4:]}:{rest}"


def pools(records: Sequence[HostRecord]) -> dict[str, list[HostRecord]]:
    """GPU model -> the active gpu-workers of that model, in file order (one on-prem ResourceFlavor each)."""
    found: dict[str, list[HostRecord]] = {}
    for record in records:
        host = record.host
        if host.role == "gpu-worker" and host.state == "active" and host.gpu is not None:
            found.setdefault(host.gpu.model, []).append(record)
    return found


def fabric_issues(records: Sequence[HostRecord]) -> list[Issue]:
    """Issues of the hosts' NIC records and fabrics (codes in the module docstring), in host order, then per pool."""
    issues: list[Issue] = []
    ofed: Counter[str] = Counter()
    any_roce = False
    pool_fabrics: dict[str, set[str]] = {}  # the fabrics of each pool (pools()), to skip the pool rules when all agree
    for record in records:
        host, net = record.host, record.host.network
        if host.role == "gpu-worker" and host.state == "active" and host.gpu is not None:
            pool_fabrics.setdefault(host.gpu.model, set()).add(net.fabric)
        if not net.nics and net.fabric == "none" and net.roce is None:
            continue  # none of the per-host rules below has anything to look at (most hosts of a large site)
        file, name = record.file, host.hostname
        if net.fabric != "none":
            ofed[net.ofed] += 1
            any_roce = any_roce or net.fabric == "roce"
        seen: dict[str, int] = {}
        gpu_pci: set[str] | None = None  # the GPUs' PCI addresses, normalised when a NIC has one to compare
        count = host.gpu_count
        simple = all(n.name and n.pci_address is None and n.rdma_device is None and (n.gpu is None or n.gpu < count) for n in net.nics)
        # NICs known by distinct names only, each paired with an existing GPU (if at all): no NIC issue to look for.
        for i, nic in enumerate(net.nics if not simple or len({n.name for n in net.nics}) != len(net.nics) else ()):
            for key in (
                f"name {nic.name}" if nic.name else None,
                f"pciAddress {_pci(nic.pci_address)}" if nic.pci_address else None,
                f"rdmaDevice {nic.rdma_device}" if nic.rdma_device else None,
            ):
                if key is None:
                    continue
                if key in seen:
                    issues.append(
                        Issue.on_host(file, name, f"network.nics[{i}]", f"{key} is also network.nics[{seen[key]}]", "give each NIC port its own entry", "nic-duplicate")
                    )
                seen.setdefault(key, i)
            if nic.pci_address and gpu_pci is None:
                gpu_pci = {_pci(p) for p in (host.gpu.pci_ids if host.gpu else ())}
            if nic.pci_address and gpu_pci is not None and _pci(nic.pci_address) in gpu_pci:
                issues.append(
                    Issue.on_host(
                        file, name, f"network.nics[{i}].pciAddress", f"{nic.pci_address} is the PCI address of a GPU of this host (gpu.pciIds)",
                        "use the adapter's own address (`lspci -D -d 15b3:` lists NVIDIA/Mellanox adapters)", "nic-duplicate",
                    )
                )
            if nic.gpu is not None and nic.gpu >= host.gpu_count:
                have = f"{host.gpu_count} GPU(s)" if host.gpu_count else "no GPU"
                issues.append(
                    Issue.on_host(
                        file, name, f"network.nics[{i}].gpu", f"NIC {nic.label} is paired with GPU {nic.gpu} but the host has {have}",
                        "use the index `nvidia-smi topo -m` shows next to the NIC (from 0), or remove `gpu`", "nic-gpu-index",
                    )
                )
        if net.fabric != "none":
            carriers = net.fabric_nics()
            if host.role == "gpu-worker" and not carriers:
                link = _LINK[net.fabric]
                issues.append(
                    Issue.on_host(
                        file, name, "network.nics",
                        f"the host is on fabric {net.fabric} but lists no compute NIC with linkType {link} that is RDMA-capable, so no pod on it "
                        "can use the fabric (NCCL falls back to TCP sockets)",
                        f"list its adapter ports under network.nics, e.g. `{{name: ibp24s0, linkType: {link}, speedGbps: 400"
                        + (", rdma: true" if link == "ethernet" else "") + "}`, or set `fabric: none`",
                        "rdma-nic-missing",
                    )
                )
            carrier_ids = {id(n) for n in carriers if n.name is None}  # identity, not pydantic equality (8 NICs x 1,000 hosts)
            for i, nic in enumerate(net.nics if carrier_ids else ()):
                if id(nic) in carrier_ids:
                    issues.append(
                        Issue.on_host(
                            file, name, f"network.nics[{i}].name",
                            f"NIC {nic.label} carries the {net.fabric} fabric but has no interface name; the RDMA shared device plugin "
                            "selects devices by interface name (ifNames), not by PCI address",
                            "add `name:` as `ip link` (or `ibdev2netdev`) shows it, e.g. ibp24s0", "rdma-nic-name",
                        )
                    )
        if net.fabric == "roce" and (net.roce is None or not (net.roce.pfc or net.roce.ecn)):
            issues.append(
                Issue.on_host(
                    file, name, "network.roce",
                    "RoCE needs a lossless or congestion-controlled Ethernet (PFC on the RoCE priority, or ECN/DCQCN) configured on the "
                    "switches and NICs; Kubernetes and the Network Operator do not configure switches"
                    + ("" if net.roce is None else " (pfc and ecn are both false)"),
                    "configure PFC/ECN on the switches (docs/multi-node.md, \"Outside Kubernetes\") and declare it: "
                    "`network.roce: {pfc: true, ecn: true, priority: 3}`",
                    "roce-lossless",
                )
            )
        if net.roce is not None and net.fabric != "roce":
            issues.append(
                Issue.on_host(file, name, "network.roce", f"RoCE settings on a host whose fabric is {net.fabric}", "remove `network.roce`, or set `fabric: roce`", "roce-settings-unused")
            )
    if len(ofed) > 1:
        main = ofed.most_common(1)[0][0]
        for r in records:
            if r.host.network.fabric != "none" and r.host.network.ofed != main:
                issues.append(
                    Issue.on_host(
                        r.file, r.host.hostname, "network.ofed",
                        f"ofed is {r.host.network.ofed} here but {main} on most fabric hosts; the one NicClusterPolicy either deploys the "
                        "DOCA driver container on every fabric host or on none",
                        f"set `ofed: {main}` (or change the others)", "ofed-mixed",
                    )
                )
    flagged: set[tuple[str, str]] = set()
    mixed = any(len(fabrics) > 1 for fabrics in pool_fabrics.values())
    for model, members in (pools(records) if any_roce or mixed else {}).items():
        if any_roce:  # without a RoCE host no group has anything to compare
            issues += _roce_group_issues(f"{model} GPU workers", "pool", members, flagged)
        fabrics = Counter(r.host.network.fabric for r in members)
        if len(fabrics) < 2:
            continue
        main_fabric, _ = fabrics.most_common(1)[0]
        summary = ", ".join(f"{count} on {fabric}" for fabric, count in sorted(fabrics.items()))
        for r in members:
            if r.host.network.fabric != main_fabric:
                issues.append(
                    Issue.on_host(
                        r.file, r.host.hostname, "network.fabric",
                        f"the {model} GPU workers form one pool (one Kueue ResourceFlavor, so one job's pods land on any of them) but use "
                        f"different fabrics ({summary}); a multi-node job across them cannot use RDMA between all ranks",
                        f"put every {model} worker on one fabric (most use {main_fabric}), or mark this host `state: cordoned` until it is",
                        "fabric-mixed-pool",
                    )
                )
    for domain, members in (_switch_domains(records) if any_roce else {}).items():
        issues += _roce_group_issues(f"RoCE hosts of {domain}", "switches", members, flagged)
    return issues


#: Why the hosts of a group must agree on ``network.roce``, by kind of group.
_ROCE_WHY = {
    "pool": "one job's ranks land on any host of the pool, and PFC protects one priority only, so RDMA traffic between these "
    "hosts would be dropped under congestion instead of paused",
    "switches": "a switch runs one RoCE mode with one RoCE priority for all its ports (NVIDIA Onyx `roce <mode>`, Cumulus "
    "`nv set qos roce`), so these hosts cannot all match the switches they share",
}


def _roce_group_issues(group: str, kind: str, members: Sequence[HostRecord], flagged: set[tuple[str, str]]) -> list[Issue]:
    """``roce-mixed-pool`` issues: the RoCE hosts of ``members`` whose ``priority`` or ``pfc`` differs from the group's most common one.

    Args:
        group: what the members are, for the message, e.g. ``H100-80GB GPU workers`` or ``RoCE hosts of block b1``.
        kind: ``pool`` or ``switches`` (:data:`_ROCE_WHY`).
        members: the group's hosts (those not on RoCE, or without ``network.roce``, are ignored).
        flagged: ``(hostname, key)`` already reported (by another group); updated.
    """
    roce = [r for r in members if r.host.network.fabric == "roce" and r.host.network.roce is not None]
    issues: list[Issue] = []
    for key in ("priority", "pfc"):
        values = Counter(_yaml(getattr(r.host.network.roce, key)) for r in roce)
        if len(values) < 2:
            continue
        main, _ = values.most_common(1)[0]
        example = next(r.host.hostname for r in roce if _yaml(getattr(r.host.network.roce, key)) == main)
        summary = ", ".join(f"{count} with {key} {value}" for value, count in sorted(values.items()))
        for r in roce:
            value = _yaml(getattr(r.host.network.roce, key))
            if value == main or (r.host.hostname, key) in flagged:
                continue
            flagged.add((r.host.hostname, key))
            issues.append(
                Issue.on_host(
                    r.file, r.host.hostname, f"network.roce.{key}",
                    f"network.roce.{key} is {value} here but {main} on most {group} ({summary}); {_ROCE_WHY[kind]}",
                    f"configure the switches and NICs of these hosts alike and declare it: `{key}: {main}` (as on {example}), "
                    "or mark this host `state: cordoned` until it is",
                    "roce-mixed-pool",
                )
            )
    return issues


def _switch_domains(records: Sequence[HostRecord]) -> dict[str, list[HostRecord]]:
    """``"block b1"``/``"rack r12"`` -> the active RoCE hosts under those switches: by ``block``, else by ``rack`` (hosts with neither: none)."""
    found: dict[str, list[HostRecord]] = {}
    for record in records:
        host = record.host
        if host.state != "active" or host.network.fabric != "roce" or host.network.roce is None:
            continue
        domain = f"block {host.block}" if host.block is not None else f"rack {host.rack}" if host.rack is not None else None
        if domain is not None:
            found.setdefault(domain, []).append(record)
    return found


def _yaml(value: bool | int) -> str:
    """A setting as YAML writes it (``true``, ``3``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


#: Node labels hybridgpu derives from host fields: a host's own ``labels`` must not set them (``generated-label``).
GENERATED_LABELS: dict[str, str] = {TOPOLOGY_BLOCK_LABEL: "block", TOPOLOGY_RACK_LABEL: "rack", FABRIC_LABEL: "network.fabric"}


def topology_issues(records: Sequence[HostRecord]) -> list[Issue]:
    """Issues of the hosts' ``rack``/``block`` as Kueue topology levels (codes in the module docstring)."""
    issues: list[Issue] = []
    block_of_rack: dict[str, tuple[str | None, str]] = {}
    label_value: dict[str, bool] = {}  # rack and block values: few distinct ones
    workers = having_block = having_rack = 0
    for record in records:
        host, file, name = record.host, record.file, record.host.hostname
        if host.role == "gpu-worker" and host.state == "active":
            workers += 1
            having_block += host.block is not None
            having_rack += host.rack is not None
        for key in host.labels if not GENERATED_LABELS.keys().isdisjoint(host.labels) else ():
            if key in GENERATED_LABELS:
                issues.append(
                    Issue.on_host(
                        file, name, f'labels["{key}"]',
                        f"{key} is set by hybridgpu from the host's `{GENERATED_LABELS[key]}`; a hand-set value would override it and the node "
                        "would leave the Kueue Topology level (or the Network Operator's fabric hosts) it belongs to",
                        f"remove the label and set `{GENERATED_LABELS[key]}` on the host", "generated-label",
                    )
                )
        for key, value in (("block", host.block), ("rack", host.rack)):
            if value is None:
                continue
            valid = label_value.get(value)
            if valid is None:
                valid = label_value[value] = bool(_LABEL_VALUE.match(value))
            if not valid:
                issues.append(
                    Issue.on_host(
                        file, name, key, f"{key} {value!r} becomes the value of node label hybridgpu.io/topology-{key} and is not a label value",
                        "use at most 63 letters, digits, `-`, `_` or `.`, beginning and ending with a letter or digit, e.g. `r12`",
                        "topology-label-value",
                    )
                )
        if host.block is not None and host.rack is None:
            issues.append(
                Issue.on_host(file, name, "block", "a block without a rack: Kueue's topology levels nest (block > rack > host)", "add the host's `rack`", "topology-block-without-rack")
            )
        if host.rack is not None:
            first = block_of_rack.get(host.rack)
            if first is None:
                block_of_rack[host.rack] = (host.block, name)
            elif first[0] != host.block:
                issues.append(
                    Issue.on_host(
                        file, name, "block",
                        f"rack {host.rack} is in block {host.block or '(none)'} here but in block {first[0] or '(none)'} on {first[1]}",
                        "give the rack's hosts the same `block`, or name the racks apart", "topology-rack-in-two-blocks",
                    )
                )
    for key, count in (("block", having_block), ("rack", having_rack)):
        if not count or count == workers:
            continue
        active = [r for r in records if r.host.role == "gpu-worker" and r.host.state == "active"]
        having = [r for r in active if getattr(r.host, key) is not None]
        for r in active:
            if getattr(r.host, key) is None:
                issues.append(
                    Issue.on_host(
                        r.file, r.host.hostname, key,
                        f"{len(having)} of {workers} active GPU workers declare a {key}, this one does not: Kueue's topology-aware "
                        "scheduling ignores nodes without every level label, so no job of its flavor would run here",
                        f"add `{key}:` to this host (as on {having[0].host.hostname}: {getattr(having[0].host, key)})",
                        "topology-incomplete",
                    )
                )
    return issues
