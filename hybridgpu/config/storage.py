"""Shared dataset storage of the EKS cluster (``hybridgpu:cloud.storage``): FSx for Lustre, sized for a read rate.

Models (pure, no Pulumi):

* :class:`CloudStorageConfig`: the section; today one backend, :class:`FsxLustreConfig`
  (a ``PERSISTENT_2`` SSD file system in one private subnet of the cluster's VPC, its security
  group, an optional S3 data repository association, the FSx CSI driver and a static
  PersistentVolume + PersistentVolumeClaim per training namespace);
* :class:`ReadTarget`: the aggregate read rate the file system must sustain, declared directly
  (``readGBps``) or as ``readGBpsPerNode`` x the training nodes of a NodePool (the stack layer
  counts them from the catalog: :func:`hybridgpu.stack.storage.cloud_storage_issues`).

Sizing (:func:`fsx_throughput_gbps`, :func:`fsx_options_for`): an FSx for Lustre file system's
baseline throughput is its storage capacity in TiB times its throughput per unit of storage
(MB/s/TiB), a figure AWS quotes with 1200 GiB written as 1.2 TiB (capacity in GiB / 1000); the
facts are in :data:`FSX_LUSTRE_PERSISTENT_2` with their sources.

The default per-node figure, 10 GB/s, is the seeds' rule of thumb for training storage ("a
parallel filesystem (BeeGFS or Lustre) on NVMe drives with at least 10 GB/s aggregate read
throughput per training node", shared/seeds/002_7053834bc9f222ec.txt, "Common pitfalls", 2.
Storage performance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints, field_validator, model_validator

from hybridgpu.config.base import Dns1123Name, Model

__all__ = [
    "DEFAULT_READ_GBPS_PER_NODE",
    "FSX_CSI_CHART_VERSION",
    "FSX_LUSTRE_PERSISTENT_2",
    "CloudStorageConfig",
    "FsxLustreConfig",
    "FsxLustreFacts",
    "FsxOption",
    "NFS_CSI_CHART_VERSION",
    "OnPremStorageConfig",
    "ReadTarget",
    "S3DataRepositoryConfig",
    "fsx_options_for",
    "fsx_throughput_gbps",
    "valid_fsx_capacity",
]

#: Aggregate read rate per training node the seeds ask of training storage, GB/s
#: (shared/seeds/002_7053834bc9f222ec.txt: "at least 10 GB/s aggregate read throughput per training node").
DEFAULT_READ_GBPS_PER_NODE = 10.0

#: The aws-fsx-csi-driver Helm chart version installed by default: kubernetes-sigs/aws-fsx-csi-driver
#: ``charts/aws-fsx-csi-driver/Chart.yaml`` version 1.17.0 (appVersion 1.9.0) at commit 5b227125
#: ("Release 1.9 3/3", 2026-04-21), the newest chart in the repository as read on 2026-11-24.
FSX_CSI_CHART_VERSION = "1.17.0"


@dataclass(frozen=True)
class FsxLustreFacts:
    """Capacity and throughput rules of one FSx for Lustre deployment type (SSD), with sources.

    Attributes:
        deployment_type: the API value, e.g. ``PERSISTENT_2``.
        first_capacities_gib: the capacities allowed below the first increment, GiB.
        increment_gib: every further capacity is a multiple of this, GiB.
        throughput_tiers: allowed ``PerUnitStorageThroughput`` values, MB/s per TiB.
        gib_per_tib: how AWS turns a capacity in GiB into the TiB its throughput figures use.
        sources: where each rule was read, with the date.
    """

    deployment_type: str
    first_capacities_gib: tuple[int, ...]
    increment_gib: int
    throughput_tiers: tuple[int, ...]
    gib_per_tib: int
    sources: tuple[str, ...]


#: PERSISTENT_2 on SSD storage (read 2026-11-24).
FSX_LUSTRE_PERSISTENT_2 = FsxLustreFacts(
    deployment_type="PERSISTENT_2",
    first_capacities_gib=(1200,),
    increment_gib=2400,
    throughput_tiers=(125, 250, 500, 1000),
    gib_per_tib=1000,
    sources=(
        "Amazon FSx API Reference, CreateFileSystem StorageCapacity: for SCRATCH_2, PERSISTENT_2 and PERSISTENT_1 "
        "on SSD the valid values are 1200 GiB, 2400 GiB and increments of 2400 GiB "
        "(https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html, linked from the installed "
        "pulumi-aws 7.51.1 fsx/lustre_file_system.py `storage_capacity`: 'Minimum of 1200')",
        "FSx for Lustre User Guide, Managing throughput capacity: 'For Persistent_2 SSD-based deployment types, valid "
        "values are 125, 250, 500, and 1000 MB/s/TiB' (https://docs.aws.amazon.com/fsx/latest/LustreGuide/"
        "managing-throughput-capacity.html); the same list in pulumi-aws 7.51.1 `per_unit_storage_throughput`",
        "FSx for Lustre User Guide, Amazon FSx for Lustre performance: baseline throughput = storage capacity (TiB) x "
        "throughput per unit of storage, with 1200 GiB written as 1.2 TiB (so GiB / 1000)",
    ),
)


def valid_fsx_capacity(capacity_gib: int, facts: FsxLustreFacts = FSX_LUSTRE_PERSISTENT_2) -> bool:
    """Whether ``capacity_gib`` (GiB) is a storage capacity the deployment type accepts (1200, or a multiple of 2400)."""
    return capacity_gib in facts.first_capacities_gib or (capacity_gib > 0 and capacity_gib % facts.increment_gib == 0)


def fsx_throughput_gbps(capacity_gib: int, per_unit_mbps_per_tib: int, facts: FsxLustreFacts = FSX_LUSTRE_PERSISTENT_2) -> float:
    """Baseline throughput of a file system, GB/s: capacity (GiB / 1000 = TiB) x throughput per unit (MB/s/TiB) / 1000."""
    return capacity_gib / facts.gib_per_tib * per_unit_mbps_per_tib / 1000


def _smallest_capacity(target_gbps: float, per_unit: int, facts: FsxLustreFacts) -> int:
    """The smallest valid capacity (GiB) whose throughput at ``per_unit`` MB/s/TiB reaches ``target_gbps``."""
    for first in facts.first_capacities_gib:
        if fsx_throughput_gbps(first, per_unit, facts) >= target_gbps:
            return first
    # capacity/1000 * per_unit/1000 >= target  <=>  capacity >= target * 1e6 / per_unit, rounded up to the increment.
    needed = target_gbps * facts.gib_per_tib * 1000 / per_unit
    steps = max(1, math.ceil(needed / facts.increment_gib - 1e-9))
    return steps * facts.increment_gib


@dataclass(frozen=True)
class FsxOption:
    """One way to reach a read rate: a throughput tier and the smallest capacity that reaches it at that tier."""

    per_unit_mbps_per_tib: int
    capacity_gib: int
    throughput_gbps: float

    def __str__(self) -> str:
        return f"storageCapacityGib: {self.capacity_gib} at perUnitStorageThroughput: {self.per_unit_mbps_per_tib} ({self.throughput_gbps:g} GB/s)"


def fsx_options_for(target_gbps: float, facts: FsxLustreFacts = FSX_LUSTRE_PERSISTENT_2) -> list[FsxOption]:
    """For each throughput tier (fastest first), the smallest valid capacity that reaches ``target_gbps`` (GB/s)."""
    options = []
    for tier in sorted(facts.throughput_tiers, reverse=True):
        capacity = _smallest_capacity(target_gbps, tier, facts)
        options.append(FsxOption(tier, capacity, round(fsx_throughput_gbps(capacity, tier, facts), 3)))
    return options


class ReadTarget(Model):
    """The aggregate read rate shared storage must sustain: ``readGBps``, or ``readGBpsPerNode`` x training nodes."""

    read_gbps: float | None = Field(
        default=None,
        alias="readGBps",
        gt=0,
        le=100000,
        description="Aggregate read rate to reach, in GB/s; exclusive with `nodePool`. Default: none (derived from `nodePool`).",
    )
    node_pool: Dns1123Name | None = Field(
        default=None,
        description=(
            "The NodePool whose nodes train on this data: the target is `readGBpsPerNode` x the most nodes it can run "
            "(`gpuLimit` / the fewest GPUs per instance of its types). Default: none (give `readGBps`)."
        ),
    )
    read_gbps_per_node: float = Field(
        default=DEFAULT_READ_GBPS_PER_NODE,
        alias="readGBpsPerNode",
        gt=0,
        le=1000,
        description=(
            "Read rate per training node, in GB/s. Default: 10 (the seeds' 'at least 10 GB/s aggregate read "
            "throughput per training node')."
        ),
    )

    @model_validator(mode="after")
    def _one_target(self) -> ReadTarget:
        if (self.read_gbps is None) == (self.node_pool is None):
            raise ValueError("give the target as `readGBps` (GB/s) or as `nodePool` (its nodes x `readGBpsPerNode`), exactly one")
        return self


def _unique_namespaces(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise ValueError("namespaces must not repeat")
    return value


#: The namespaces that get the ``training-data`` claim (``namespaces`` of both storage sections): none repeated.
ClaimNamespaces = Annotated[list[Dns1123Name], AfterValidator(_unique_namespaces)]
#: A pinned Helm chart version, ``X.Y.Z``.
ChartVersion = Annotated[str, StringConstraints(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")]

S3Path = Annotated[str, StringConstraints(pattern=r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?$")]
FsxPath = Annotated[str, StringConstraints(pattern=r"^/([A-Za-z0-9._-]+/?)*$", max_length=4096)]
ImportEvent = Literal["NEW", "CHANGED", "DELETED"]
_ALL_IMPORT_EVENTS: tuple[ImportEvent, ...] = ("NEW", "CHANGED", "DELETED")


class S3DataRepositoryConfig(Model):
    """An S3 data repository association (``aws.fsx.DataRepositoryAssociation``): a file system directory mirrors an S3 prefix."""

    data_repository_path: S3Path = Field(
        description="The S3 bucket and prefix linked to the file system, e.g. `s3://acme-datasets/pretraining/`. Required."
    )
    file_system_path: FsxPath = Field(
        default="/datasets",
        description=(
            "Directory of the file system mapped 1-1 to the S3 path (leading `/`; `/` alone links the root). "
            "Default: `/datasets`."
        ),
    )
    auto_import_events: list[ImportEvent] = Field(
        default_factory=lambda: list(_ALL_IMPORT_EVENTS),
        description="S3 object events imported automatically (`NEW`, `CHANGED`, `DELETED`). Default: all three.",
    )
    auto_export_events: list[ImportEvent] = Field(
        default_factory=list,
        description="File system events exported to S3 automatically (checkpoints written back). Default: none (read-only dataset).",
    )
    import_metadata_on_create: bool = Field(
        default=True,
        description="Import the S3 object listing when the association is created (`batchImportMetaDataOnCreate`). Default: true.",
    )

    @field_validator("auto_import_events", "auto_export_events")
    @classmethod
    def _unique_events(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("events must not repeat")
        return value


class FsxLustreConfig(Model):
    """An FSx for Lustre ``PERSISTENT_2`` (SSD) file system in one private subnet of the cluster's VPC."""

    storage_capacity_gib: int = Field(
        description="Storage capacity in GiB: 1200, or a multiple of 2400 (PERSISTENT_2 SSD). Required.",
    )
    per_unit_storage_throughput: Literal[125, 250, 500, 1000] = Field(
        description="Throughput per TiB of storage, MB/s/TiB: 125, 250, 500 or 1000 (PERSISTENT_2). Required.",
    )
    availability_zone: str | None = Field(
        default=None,
        description=(
            "Zone of the file system (a file system lives in one subnet); with `network.new` it picks that zone's private subnet. "
            "Put it where the training NodePool's nodes run. Default: the first zone / first private subnet."
        ),
    )
    subnet_id: Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-f]+$")] | None = Field(
        default=None,
        description="With `network.existing`: one of `privateSubnetIds` for the file system. Default: the first of them.",
    )
    data_compression_type: Literal["NONE", "LZ4"] = Field(
        default="NONE", description="Data compression (`LZ4` trades CPU on the servers for capacity). Default: `NONE`."
    )
    kms_key_id: str | None = Field(default=None, description="KMS key ARN for encryption at rest. Default: the AWS-managed FSx key.")
    automatic_backup_retention_days: int = Field(
        default=0, ge=0, le=90, description="Days of automatic backups (0 = off; the dataset's source of truth is S3). Default: 0."
    )
    data_repository: S3DataRepositoryConfig | None = Field(
        default=None, description="S3 data repository association. Default: none."
    )

    @field_validator("storage_capacity_gib")
    @classmethod
    def _valid_capacity(cls, value: int) -> int:
        if not valid_fsx_capacity(value):
            facts = FSX_LUSTRE_PERSISTENT_2
            below = max(facts.increment_gib * (value // facts.increment_gib), facts.first_capacities_gib[0])
            above = max(facts.increment_gib * -(-value // facts.increment_gib), facts.first_capacities_gib[0])
            raise ValueError(
                f"{value} GiB is not a PERSISTENT_2 SSD capacity: 1200 GiB, or a multiple of 2400 GiB "
                f"(nearest: {below}{'' if above == below else f' or {above}'})"
            )
        return value

    @property
    def throughput_gbps(self) -> float:
        """Baseline throughput, GB/s (:func:`fsx_throughput_gbps`)."""
        return fsx_throughput_gbps(self.storage_capacity_gib, self.per_unit_storage_throughput)


class CloudStorageConfig(Model):
    """Shared dataset storage of the EKS cluster (``hybridgpu:cloud.storage``)."""

    fsx_lustre: FsxLustreConfig = Field(description="The FSx for Lustre file system. Required.")
    target: ReadTarget = Field(description="The aggregate read rate the file system must reach (checked). Required.")
    namespaces: ClaimNamespaces = Field(
        default_factory=list,
        description=(
            "Namespaces that get the `training-data` PersistentVolumeClaim (created when no burst queue creates them). "
            "Default: the burst plan's queue namespaces (where training jobs run)."
        ),
    )
    csi_driver_version: ChartVersion = Field(
        default=FSX_CSI_CHART_VERSION,
        description=f"aws-fsx-csi-driver Helm chart version (pinned). Default: `{FSX_CSI_CHART_VERSION}`.",
    )


#: csi-driver-nfs chart version installed on-prem by default: kubernetes-csi/csi-driver-nfs ``charts/index.yaml``
#: lists 4.13.4 as the newest (created 2026-07-02; repository at d3b27c00, read 2026-11-24).
NFS_CSI_CHART_VERSION = "4.13.4"


class OnPremStorageConfig(Model):
    """How the on-prem cluster mounts the inventory's dataset storage (``hybridgpu:onprem.storage``).

    The storage itself (servers, export, read rates, target) is declared in the inventory's Site
    document (``storage``, :class:`hybridgpu.inventory.storage.SiteStorage`); without it nothing is installed.
    """

    namespaces: ClaimNamespaces = Field(
        default_factory=list,
        description=(
            "Namespaces that get the `training-data` PersistentVolumeClaim (created when no burst queue creates them). "
            "Default: the burst plan's queue namespaces."
        ),
    )
    csi_driver_version: ChartVersion = Field(
        default=NFS_CSI_CHART_VERSION, description=f"csi-driver-nfs Helm chart version (pinned). Default: `{NFS_CSI_CHART_VERSION}`."
    )
