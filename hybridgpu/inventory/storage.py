"""Shared dataset storage of an on-prem site (the ``storage`` section of the ``Site`` document) and its sizing rule.

The storage servers are the operator's: hybridgpu does not install or tune them (docs/multi-node.md,
"The operator's job outside Kubernetes"). The inventory declares what the cluster mounts and how
fast each server reads, and hybridgpu installs the CSI driver and a PersistentVolume + claim per
training namespace (:mod:`hybridgpu.render.storage`).

Backends:

* ``nfs``: mounted with kubernetes-csi/csi-driver-nfs (pinned Helm chart). An NFS volume names
  one server address (``server`` in the PV's ``volumeAttributes``; csi-driver-nfs
  ``pkg/nfs/nodeserver.go`` mounts ``<server>:<share>``), so several servers need an ``endpoint``
  that spreads clients over them (a scale-out NAS's DNS name or virtual IP).
* ``beegfs``, ``lustre``: refused as *not supported yet*. ThinkParQ's beegfs-csi-driver ships
  kustomize overlays (``deploy/k8s/overlays``) and no Helm chart, needs the BeeGFS client kernel
  module and a ``csi-beegfs-config`` per cluster; an on-prem Lustre CSI needs the Lustre client
  on every host. Neither is rendered yet.

Sizing (:func:`storage_issues`): the servers' declared read rates add up (clients spread over
them) and must reach the target: ``readGBps``, or ``readGBpsPerNode`` (default 10 GB/s, the
seeds' figure: :data:`hybridgpu.config.storage.DEFAULT_READ_GBPS_PER_NODE`) x the active GPU
workers. Pure: imports no other inventory module (the models import this one).
"""

from __future__ import annotations

import ipaddress
import math
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.errors import FieldError, Issue
from hybridgpu.k8s import is_hostname
from hybridgpu.modelbase import Model

__all__ = ["NFS_MAX_CONNECTIONS", "SiteStorage", "StorageServer", "StorageTarget", "storage_issues"]

#: Read rate per training node the seeds ask of training storage, GB/s (shared/seeds/002_7053834bc9f222ec.txt,
#: "at least 10 GB/s aggregate read throughput per training node"); the same figure as
#: :data:`hybridgpu.config.storage.DEFAULT_READ_GBPS_PER_NODE` (not imported: the inventory sits below the config layer).
DEFAULT_READ_GBPS_PER_NODE = 10.0

#: Most TCP connections one NFS mount may open (``nconnect=``): the Linux NFS client refuses a value outside
#: 1..NFS_MAX_CONNECTIONS with "NFS: Value for 'nconnect' out of range" and the mount fails (torvalds/linux
#: ``fs/nfs/fs_context.c``, ``#define NFS_MAX_CONNECTIONS 16`` and ``case Opt_nconnect``, stored snapshot at commit
#: 0961f0c0, read 2026-11-26). The value is an unsigned 32-bit number (``fsparam_u32``).
NFS_MAX_CONNECTIONS = 16


def _address(value: str) -> str:
    """An IP address or a lower-case DNS name, as a client mounts it."""
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    if not is_hostname(value):
        raise ValueError(f"{value!r} is neither an IP address nor a lower-case DNS name")
    return value


class StorageServer(Model):
    """One storage server (or scale-out node) and the read rate it delivers to clients."""

    address: str = Field(description="IP address or DNS name of the server, outside the cluster's pod and service ranges. Required.")
    read_gbps: float = Field(
        alias="readGBps",
        gt=0,
        le=10000,
        description=(
            "Sustained read rate the server delivers to clients over the network, in GB/s, as measured (fio/ior from a "
            "GPU host) or from the vendor's sheet; bounded by its NICs (100 GbE = 12.5 GB/s). Required."
        ),
    )

    @field_validator("address")
    @classmethod
    def _valid_address(cls, value: str) -> str:
        return _address(value)


class StorageTarget(Model):
    """The aggregate read rate the storage must reach: ``readGBps``, or ``readGBpsPerNode`` x the active GPU workers."""

    read_gbps: float | None = Field(
        default=None, alias="readGBps", gt=0, le=100000, description="Aggregate read rate, in GB/s. Default: none (per node x GPU workers)."
    )
    read_gbps_per_node: float = Field(
        default=DEFAULT_READ_GBPS_PER_NODE,
        alias="readGBpsPerNode",
        gt=0,
        le=1000,
        description="Read rate per active GPU worker, in GB/s (used without `readGBps`). Default: 10 (the seeds' figure).",
    )


class SiteStorage(Model):
    """The dataset storage the cluster mounts (``storage`` of the ``Site`` document)."""

    type: Literal["nfs", "beegfs", "lustre"] = Field(
        description="File system: `nfs` (installed through csi-driver-nfs); `beegfs` and `lustre` are not supported yet. Required."
    )
    endpoint: str | None = Field(
        default=None,
        description=(
            "Address clients mount (NFS `server`): a DNS name or virtual IP that spreads clients over `servers`. "
            "Default: the only server's address (required with more than one server)."
        ),
    )
    export_path: Annotated[str, StringConstraints(pattern=r"^/[^\s#]*$", max_length=4096)] = Field(
        description="Exported directory (NFS `share`), e.g. `/exports/datasets`. Required."
    )
    servers: list[StorageServer] = Field(min_length=1, description="The servers behind the endpoint with their read rates. Required.")
    mount_options: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.=-]+$")]] = Field(
        default_factory=lambda: ["nfsvers=4.1"],
        description="Mount options of the PersistentVolume, e.g. `[nfsvers=4.1, nconnect=16]`; `nconnect` 1-16 (the Linux NFS "
        "client's NFS_MAX_CONNECTIONS). Default: `[nfsvers=4.1]`.",
    )
    capacity_gib: int = Field(default=1024, ge=1, description="Capacity written on the PersistentVolume and claim, in GiB (NFS does not enforce it). Default: 1024.")
    target: StorageTarget = Field(default_factory=StorageTarget, description="Read rate to reach (checked). Default: 10 GB/s per active GPU worker.")

    @field_validator("endpoint")
    @classmethod
    def _valid_endpoint(cls, value: str | None) -> str | None:
        return None if value is None else _address(value)

    @field_validator("mount_options")
    @classmethod
    def _nconnect_in_range(cls, value: list[str]) -> list[str]:
        for i, option in enumerate(value):
            name, eq, number = option.partition("=")
            if name != "nconnect":
                continue
            if eq and number.isdigit() and 1 <= int(number) <= NFS_MAX_CONNECTIONS:
                continue
            got = f"nconnect={number}" if eq else "nconnect without a value"
            raise FieldError(
                f"[{i}]",
                f"{got}: the Linux NFS client accepts nconnect=1 to {NFS_MAX_CONNECTIONS} (NFS_MAX_CONNECTIONS) and refuses the "
                "mount otherwise (\"NFS: Value for 'nconnect' out of range\"), so no pod could mount the dataset",
                f"write `nconnect=<1-{NFS_MAX_CONNECTIONS}>`, e.g. `nconnect={NFS_MAX_CONNECTIONS}` (more connections per mount help "
                "only up to the server's NIC count), or remove it (one connection)",
            )
        return value

    @model_validator(mode="after")
    def _unique_servers(self) -> SiteStorage:
        seen = [s.address for s in self.servers]
        if len(set(seen)) != len(seen):
            raise ValueError("a server address repeats: list each storage server once")
        return self

    @property
    def mount_address(self) -> str:
        """The address clients mount: ``endpoint``, else the first server's."""
        return self.endpoint or self.servers[0].address

    @property
    def read_gbps(self) -> float:
        """The servers' aggregate read rate, GB/s."""
        return sum(s.read_gbps for s in self.servers)


def storage_target_gbps(storage: SiteStorage, gpu_workers: int) -> float:
    """The read rate ``storage`` must reach, GB/s: ``target.readGBps``, else ``readGBpsPerNode`` x ``gpu_workers``."""
    return storage.target.read_gbps if storage.target.read_gbps is not None else storage.target.read_gbps_per_node * gpu_workers


def storage_issues(storage: SiteStorage, site_file: str, gpu_workers: int) -> list[Issue]:
    """Problems of the site's storage: unsupported backends, several NFS servers without an endpoint, too slow for the target.

    Args:
        storage: the ``storage`` section of the Site document.
        site_file: the file holding the Site document (named in the issues).
        gpu_workers: active GPU workers of the site (the training nodes that read the dataset).

    Returns:
        Issues at ``storage.<field>`` (codes ``storage-unsupported``, ``storage-endpoint``,
        ``storage-throughput``), each with the fix; empty when the storage is sound.
    """
    issues: list[Issue] = []
    if storage.type != "nfs":
        issues.append(
            Issue.on_host(
                site_file,
                None,
                "storage.type",
                f"`{storage.type}` storage is not supported yet: hybridgpu installs csi-driver-nfs only (the {storage.type} CSI "
                "driver has no pinned Helm chart and needs its client kernel module on every host)",
                "serve the dataset over NFS (`type: nfs`), or mount the file system on the hosts yourself and remove `storage`",
                "storage-unsupported",
            )
        )
        return issues
    if len(storage.servers) > 1 and storage.endpoint is None:
        issues.append(
            Issue.on_host(
                site_file,
                None,
                "storage.endpoint",
                f"{len(storage.servers)} NFS servers but no endpoint: an NFS volume mounts one address, so every client would read "
                f"from {storage.servers[0].address} alone",
                "set `endpoint` to the DNS name or virtual IP that spreads clients over the servers (the scale-out NAS's)",
                "storage-endpoint",
            )
        )
    target = storage_target_gbps(storage, gpu_workers)
    have = storage.read_gbps
    if have + 1e-9 < target:
        how = (
            f"target.readGBps {target:g} GB/s"
            if storage.target.read_gbps is not None
            else f"{storage.target.read_gbps_per_node:g} GB/s per node x {gpu_workers} active GPU worker(s) = {target:g} GB/s"
        )
        mean = have / len(storage.servers)
        more = math.ceil((target - have) / mean - 1e-9)
        issues.append(
            Issue.on_host(
                site_file,
                None,
                "storage.servers",
                f"the storage servers read {have:g} GB/s together ({' + '.join(f'{s.read_gbps:g}' for s in storage.servers)}), "
                f"below the target {how}: the GPUs would wait for data",
                f"add storage: {target - have:g} GB/s more, e.g. {more} more server(s) at {mean:g} GB/s behind `endpoint`; "
                "or lower `target` if your jobs read less (measure with fio/ior)",
                "storage-throughput",
            )
        )
    return issues
