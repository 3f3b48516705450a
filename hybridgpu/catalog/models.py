"""Typed model of the GPU catalog: GPU models, EC2 GPU instance types, and the catalog.

The catalog is data, not code: the facts live in ``hybridgpu/catalog/data/*.yaml``
(see the comment block at the top of each file for fields, units and sources). This
module only defines the shapes those files must have and the consistency rules that
tie them together; :func:`hybridgpu.catalog.load_catalog` reads the files.

Python attribute names are snake_case (``gpu_count``); the YAML keys are the
camelCase aliases (``gpuCount``). Both spellings are accepted on input and
``model_dump(by_alias=True)`` gives back the YAML spelling.

Nothing here imports Pulumi.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from hybridgpu.datafile import DataFileError
from hybridgpu.errors import FieldError, HybridGpuError, Issue

__all__ = [
    "Catalog",
    "CatalogError",
    "GpuModel",
    "InstanceType",
    "Platform",
    "RefusedFamilyError",
    "UnknownGpuModelError",
    "UnknownInstanceFamilyError",
    "UnknownInstanceTypeError",
    "UnsupportedFamily",
]

#: Tolerance, in GiB, allowed between ``InstanceType.gpu_memory_gib`` and
#: ``gpu_count x GpuModel.memory_gb`` (the data files hold whole numbers, so this only
#: absorbs rounding).
GPU_MEMORY_TOLERANCE_GIB = 0.5

_SOURCE_DATE_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$"


# --------------------------------------------------------------------------- errors


class CatalogError(DataFileError):
    """A catalog data file is invalid (bad YAML, bad field, or inconsistent with the other file).

    Raised by :func:`hybridgpu.catalog.load_catalog` and by :class:`Catalog` validation.
    Every problem found is reported, not only the first; ``issues`` holds them and
    ``file``/``entry``/``field`` are those of the first.
    """

    what = "GPU catalog data"


class _UnknownNameError(HybridGpuError, KeyError):
    """Base of the lookup errors: a ``KeyError`` whose message lists close matches."""

    kind = "name"

    def __init__(self, name: str, suggestions: list[str], known: Iterable[str] | None = None):
        self.name = name
        self.suggestions = list(suggestions)
        if self.suggestions:
            hint = "did you mean " + ", ".join(repr(s) for s in self.suggestions) + "?"
        elif known is not None:
            hint = "known: " + ", ".join(sorted(known))
        else:
            hint = "no close match in the catalog"
        self.message = f"unknown {self.kind} {name!r}; {hint}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise print the repr of the message
        return self.message


class UnknownInstanceTypeError(_UnknownNameError):
    """An EC2 instance type is not in the catalog. ``suggestions`` holds close matches."""

    kind = "instance type"


class UnknownGpuModelError(_UnknownNameError):
    """A GPU model (catalog key or Karpenter GPU name) is not in the catalog."""

    kind = "GPU model"


class UnknownInstanceFamilyError(_UnknownNameError):
    """An EC2 instance family is not in the catalog."""

    kind = "instance family"


class RefusedFamilyError(UnknownInstanceFamilyError):
    """An EC2 GPU family the catalog refuses (``unsupported.yaml``): the message says why and what to use instead."""

    def __init__(self, entry: UnsupportedFamily):
        super().__init__(entry.name, [])
        self.entry = entry
        self.message = f"instance family {entry.name!r} cannot be provisioned: {entry.consequence}; fix: {entry.instead}"
        self.args = (self.message,)


# --------------------------------------------------------------------------- models


class _CatalogModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        allow_inf_nan=False,
    )

    @classmethod
    def _aliases(cls) -> set[str]:
        return {f.alias or n for n, f in cls.model_fields.items()}

    def _check_verification(self) -> None:
        verified: bool = getattr(self, "verified")
        unverified: tuple[str, ...] = getattr(self, "unverified_fields")
        unknown = sorted(set(unverified) - self._aliases())
        if unknown:
            raise FieldError("unverifiedFields", f"names no field of this entry: {unknown}", "list only keys of this entry (camelCase, as written in the file)")
        if verified and unverified:
            raise FieldError(
                "verified",
                f"is true but unverifiedFields lists {list(unverified)}",
                "set `verified: false`, or check those fields against a source and empty `unverifiedFields`",
            )
        if not verified and not unverified:
            raise FieldError("unverifiedFields", "must list the unverified fields when verified is false", "list the fields not checked against a source, or set `verified: true`")


class _SourcedCatalogModel(_CatalogModel):
    """A catalog entry with its provenance: the sources, their date, and which fields were checked."""

    source: tuple[str, ...] = Field(min_length=1, description="URLs or document names backing the entry (unitless).")
    source_date: str = Field(
        alias="sourceDate",
        pattern=_SOURCE_DATE_PATTERN,
        description="Date of the source data (when it was read), 'YYYY-MM' or 'YYYY-MM-DD'.",
    )
    verified: bool = Field(description="True if every field was checked against the sources.")
    unverified_fields: tuple[str, ...] = Field(
        default=(),
        alias="unverifiedFields",
        description="YAML names of fields not checked against a source; empty when verified.",
    )
    notes: str | None = Field(default=None, description="Free-text remarks (unitless).")


class GpuModel(_SourcedCatalogModel):
    """One GPU model (per-GPU facts), e.g. ``H100-80GB``.

    Data source: ``hybridgpu/catalog/data/gpu_models.yaml`` (Karpenter's generated EC2
    instance-type reference, nvidia-smi/GFD output, NVIDIA's CUDA compute-capability
    and MIG documentation; each entry lists its URLs in ``source``).

    Raises:
        pydantic.ValidationError: on construction with a bad or unknown field, or when
            ``migCapable`` disagrees with ``maxMigInstances`` or ``verified`` with
            ``unverifiedFields``. (``load_catalog`` turns these into :class:`CatalogError`.)
    """

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$",
        description="Catalog key (unitless identifier), e.g. 'H100-80GB'; unique in the catalog.",
    )
    vendor: Literal["nvidia"] = Field(description="GPU vendor (unitless); only 'nvidia' today.")
    architecture: Literal["Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell"] = Field(
        description="GPU architecture name (unitless)."
    )
    compute_capability: str = Field(
        alias="computeCapability",
        pattern=r"^\d+\.\d+$",
        description="CUDA compute capability 'major.minor' (unitless), as GFD labels "
        "nvidia.com/gpu.compute.major/minor.",
    )
    memory_gb: int = Field(
        alias="memoryGB",
        gt=0,
        description="Nominal memory per GPU in vendor marketing gigabytes (GB, decimal), e.g. 80.",
    )
    memory_mib: int | None = Field(
        alias="memoryMiB",
        gt=0,
        description="Memory per GPU in MiB as EC2 reports it, i.e. the value of the Karpenter "
        "label karpenter.k8s.aws/instance-gpu-memory; null if the GPU is not offered on EC2.",
    )
    driver_memory_mib: int = Field(
        alias="driverMemoryMiB",
        gt=0,
        description="Total framebuffer per GPU in MiB as the NVIDIA driver reports it "
        "(nvidia-smi; GFD label nvidia.com/gpu.memory).",
    )
    karpenter_gpu_name: str | None = Field(
        alias="karpenterGpuName",
        pattern=r"^[a-z0-9-]+$",
        description="Value of the Karpenter label karpenter.k8s.aws/instance-gpu-name "
        "(unitless, lower case, e.g. 'a100'); null if the GPU is not offered on EC2.",
    )
    product_label: str = Field(
        alias="productLabel",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="Value of the GFD label nvidia.com/gpu.product (unitless), e.g. 'NVIDIA-H100-80GB-HBM3'.",
    )
    mig_capable: bool = Field(alias="migCapable", description="True if the GPU supports Multi-Instance GPU.")
    max_mig_instances: int = Field(
        alias="maxMigInstances",
        ge=0,
        description="Maximum MIG GPU instances per GPU (count); 0 if not MIG capable.",
    )
    tdp_watts: int = Field(
        alias="tdpWatts",
        gt=0,
        description="Maximum board power in watts (W), the default power cap nvidia-smi reports.",
    )

    @model_validator(mode="after")
    def _check(self) -> GpuModel:
        if self.mig_capable != (self.max_mig_instances > 0):
            raise FieldError(
                "maxMigInstances",
                f"is {self.max_mig_instances} but migCapable is {self.mig_capable}",
                "MIG-capable GPUs need maxMigInstances > 0, others 0: correct `maxMigInstances` or `migCapable`",
            )
        if (self.memory_mib is None) != (self.karpenter_gpu_name is None):
            raise FieldError(
                "memoryMiB",
                "memoryMiB and karpenterGpuName must both be set (GPU offered on EC2) or both be null",
                "set both `memoryMiB` and `karpenterGpuName` for a GPU offered on EC2, else set both to null",
            )
        self._check_verification()
        return self

    @property
    def memory_gib(self) -> float:
        """Memory per GPU in GiB: ``memory_mib / 1024`` (EC2 figure), else ``driver_memory_mib / 1024``."""
        mib = self.memory_mib if self.memory_mib is not None else self.driver_memory_mib
        return mib / 1024


class InstanceType(_SourcedCatalogModel):
    """One EC2 GPU instance type (per-instance facts), e.g. ``p5.48xlarge``.

    Data source: ``hybridgpu/catalog/data/instance_types.yaml`` (Karpenter's generated
    EC2 instance-type reference and us-east-1 price table, the AWS instance-type pages
    and the On-Demand pricing page; each entry lists its URLs in ``source``).

    Raises:
        pydantic.ValidationError: on construction with a bad or unknown field, when
            ``family`` is not the prefix of ``name``, when ``efaSupported`` disagrees
            with ``maxEfaInterfaces``, or ``verified`` with ``unverifiedFields``.
            Cross-checks against GPU models happen in :class:`Catalog`.
    """

    name: str = Field(
        pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$",
        description="EC2 instance type (unitless), e.g. 'p5.48xlarge'; unique in the catalog.",
    )
    family: str = Field(
        pattern=r"^[a-z][a-z0-9-]*$",
        description="EC2 instance family (unitless): the part of name before the first '.'.",
    )
    gpu_model: str = Field(alias="gpuModel", description="Key of the GPU model in the catalog (unitless).")
    gpu_count: int = Field(alias="gpuCount", gt=0, description="Number of GPUs (count).")
    gpu_memory_gib: float = Field(
        alias="gpuMemoryGiB",
        gt=0,
        description="Total GPU memory in GiB as AWS lists it: gpuCount x the model's nominal memoryGB "
        "(AWS's 'GiB' column holds the vendor's nominal GB figure).",
    )
    vcpu: int = Field(gt=0, description="Number of vCPUs (count).")
    memory_gib: float = Field(alias="memoryGiB", gt=0, description="Instance RAM in GiB.")
    local_nvme_gb: int = Field(
        default=0, alias="localNvmeGB", ge=0, description="Total local NVMe instance storage in GB (decimal)."
    )
    efa_supported: bool = Field(alias="efaSupported", description="True if Elastic Fabric Adapter is supported.")
    max_efa_interfaces: int = Field(
        alias="maxEfaInterfaces", ge=0, description="Maximum number of EFA interfaces (count); 0 if none."
    )
    network_gbps: float = Field(
        alias="networkGbps", gt=0, description="Baseline network bandwidth in Gbit/s (small sizes may burst higher)."
    )
    on_demand_usd_per_hour: float | None = Field(
        alias="onDemandUsdPerHour",
        ge=0,
        description="Linux On-Demand price in USD per instance-hour in priceRegion; null if AWS lists none.",
    )
    price_region: str = Field(
        alias="priceRegion",
        pattern=r"^[a-z]{2}(-[a-z]+)+-\d$",
        description="AWS region (unitless) the price applies to, e.g. 'us-east-1'.",
    )
    price_note: str | None = Field(default=None, alias="priceNote", description="Free-text remark on the price.")

    @model_validator(mode="after")
    def _check(self) -> InstanceType:
        prefix = self.name.split(".", 1)[0]
        if self.family != prefix:
            raise FieldError("family", f"is {self.family!r} but the name {self.name!r} says {prefix!r}", f"set `family: {prefix}`")
        if self.efa_supported != (self.max_efa_interfaces > 0):
            raise FieldError(
                "efaSupported",
                f"is {self.efa_supported} but maxEfaInterfaces is {self.max_efa_interfaces}",
                f"efaSupported must be true exactly when maxEfaInterfaces > 0: set `efaSupported: {str(self.max_efa_interfaces > 0).lower()}` "
                "or correct `maxEfaInterfaces`",
            )
        self._check_verification()
        return self

    @property
    def size(self) -> str:
        """The size part of the name (unitless), e.g. ``48xlarge`` for ``p5.48xlarge``."""
        return self.name.split(".", 1)[1]

    @property
    def usd_per_gpu_hour(self) -> float | None:
        """On-Demand price per GPU-hour in USD (``on_demand_usd_per_hour / gpu_count``), or None if unpriced."""
        if self.on_demand_usd_per_hour is None:
            return None
        return self.on_demand_usd_per_hour / self.gpu_count


class Platform(_SourcedCatalogModel):
    """A GPU server platform: its GPUs and its maximum system power, e.g. ``DGX-H100``.

    The platform's own draw at full load (CPUs, memory, NICs, NVSwitches, fans, power
    conversion) is not a datasheet figure: it is derived as the system maximum less the GPUs'
    board power (:attr:`platform_watts`), so that ``gpuCount x tdpWatts + platform_watts`` gives
    back the datasheet's maximum. A host with this GPU model and count draws that at full load
    (:func:`hybridgpu.inventory.power.host_draw`) unless it declares its own ``powerKw``, and needs
    the platform's ``cooling`` unless it declares its own (the rack rule of
    :func:`hybridgpu.inventory.power.rack_power_issues`).

    Data source: ``hybridgpu/catalog/data/platforms.yaml`` (vendor user guides and datasheets;
    each entry lists its URLs in ``source``).

    Raises:
        pydantic.ValidationError: on construction with a bad or unknown field, or when
            ``verified`` disagrees with ``unverifiedFields``. Cross-checks against GPU models
            (known model, system power above the GPUs' board power) happen in :class:`Catalog`.
    """

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$",
        description="Platform name (unitless), e.g. 'DGX-H100'; unique in the catalog.",
    )
    gpu_model: str = Field(alias="gpuModel", description="Key of the GPU model in the catalog (unitless).")
    gpu_count: int = Field(alias="gpuCount", gt=0, le=64, description="Number of GPUs (count).")
    max_system_watts: int = Field(
        alias="maxSystemWatts",
        gt=0,
        description="Maximum system input power in watts (W), as the vendor's datasheet or user guide states it.",
    )
    cooling: Literal["air", "liquid", "either"] = Field(
        description="How the vendor cools the system: `air` (fans; any rack), `liquid` (cold plates fed with coolant "
        "through the rack's manifolds: only a rack declared `cooling: liquid`) or `either` (sold in both variants: "
        "the inventory host says which with its own `cooling`).",
    )

    @model_validator(mode="after")
    def _check(self) -> Platform:
        self._check_verification()
        return self


class UnsupportedFamily(_SourcedCatalogModel):
    """An EC2 GPU family the toolkit knows but refuses to provision, with the reason and the fix.

    Data source: ``hybridgpu/catalog/data/unsupported.yaml`` (the EKS accelerated-AMI page,
    awslabs/amazon-eks-ami and aws/karpenter-provider-aws; each entry lists its sources). A NodePool
    naming such a family or one of its types gets this consequence and fix instead of "unknown family"
    (:meth:`Catalog.unsupported_family`).

    Raises:
        pydantic.ValidationError: on construction with a bad or unknown field, or when ``verified``
            disagrees with ``unverifiedFields``. That no catalog family has the same name is checked
            in :class:`Catalog`.
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$", description="EC2 instance family (unitless), e.g. 'g6f'; unique.")
    architecture: Literal["amd64", "arm64"] = Field(description="CPU architecture of the family's instances (Kubernetes spelling).")
    gpu: str = Field(min_length=1, description="The family's GPU as AWS names it (free text, e.g. 'NVIDIA L4, 1/8 to 1/2 of a GPU').")
    reason: Literal["ultraserver", "fractional-gpu", "driver", "architecture"] = Field(
        description="Why it is refused: UltraServer topology, a fractional GPU Karpenter counts as 0, "
        "a driver the pinned EKS AMI lacks, or a CPU architecture the toolkit does not render."
    )
    consequence: str = Field(min_length=1, description="What goes wrong if a pool launched it (one sentence, for the error).")
    instead: str = Field(min_length=1, description="What to do instead (one sentence, the fix of the error).")

    @model_validator(mode="after")
    def _check(self) -> UnsupportedFamily:
        self._check_verification()
        return self


def _as_list(value: str | int | Iterable[Any] | None) -> list[Any] | None:
    """Normalise a filter argument: None stays None, a bare str/int becomes a 1-list."""
    if value is None:
        return None
    if isinstance(value, (str, int)):
        return [value]
    return list(value)


class Catalog(_CatalogModel):
    """The GPU catalog: every GPU model and EC2 GPU instance type, cross-checked.

    Usually obtained from :func:`hybridgpu.catalog.load_catalog`; it can also be built
    directly from model instances. Immutable: :meth:`with_price_overrides` returns a
    new catalog.

    Consistency (checked on construction): names are unique; every instance type's
    ``gpuModel`` names a GPU model; ``gpuMemoryGiB == gpuCount x memoryGB`` of that
    model within :data:`GPU_MEMORY_TOLERANCE_GIB`.

    Raises:
        CatalogError: when a consistency rule fails, naming the data file, the entry and
            the field (files are ``gpu_models_file`` / ``instance_types_file``).

    Data source: ``hybridgpu/catalog/data/gpu_models.yaml`` and ``instance_types.yaml``.
    """

    gpu_models: tuple[GpuModel, ...] = Field(description="All GPU models, in data-file order.")
    instance_types: tuple[InstanceType, ...] = Field(
        description="All EC2 GPU instance types, in data-file order (family, then ascending size)."
    )
    platforms: tuple[Platform, ...] = Field(
        default=(), description="GPU server platforms with their maximum system power, in data-file order. Default: none."
    )
    unsupported: tuple[UnsupportedFamily, ...] = Field(
        default=(), description="EC2 GPU families refused with a reason (unsupported.yaml), in data-file order. Default: none."
    )
    unsupported_file: str = Field(
        default="<unsupported>", description="Where unsupported came from (path or resource name), for errors."
    )
    gpu_models_file: str = Field(
        default="<gpu_models>", description="Where gpu_models came from (path or resource name), for errors."
    )
    instance_types_file: str = Field(
        default="<instance_types>", description="Where instance_types came from (path or resource name), for errors."
    )
    platforms_file: str = Field(
        default="<platforms>", description="Where platforms came from (path or resource name), for errors."
    )

    _gpu_by_name: dict[str, GpuModel] = PrivateAttr(default_factory=dict)
    _it_by_name: dict[str, InstanceType] = PrivateAttr(default_factory=dict)
    _by_family: dict[str, list[InstanceType]] = PrivateAttr(default_factory=dict)
    _platform_by_gpus: dict[tuple[str, int], Platform] = PrivateAttr(default_factory=dict)
    #: Answers of :meth:`gpu_instance_types` by normalized filters: validation and the program ask
    #: the same few questions once per NodePool and check (some 150 times for a 50-pool stack).
    _query_cache: dict[tuple[Any, Any, Any], tuple[InstanceType, ...]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _check_consistency(self) -> Catalog:
        issues: list[Issue] = []
        gfile, ifile = self.gpu_models_file, self.instance_types_file

        gpu_by_name: dict[str, GpuModel] = {}
        for gpu in self.gpu_models:
            if gpu.name in gpu_by_name:
                issues.append(Issue.in_entry(gfile, gpu.name, "name", "duplicate name", "delete one of the entries, or rename it", "duplicate"))
            gpu_by_name.setdefault(gpu.name, gpu)

        it_by_name: dict[str, InstanceType] = {}
        by_family: dict[str, list[InstanceType]] = {}
        for it in self.instance_types:
            if it.name in it_by_name:
                issues.append(Issue.in_entry(ifile, it.name, "name", "duplicate name", "delete one of the entries, or rename it", "duplicate"))
                continue
            it_by_name[it.name] = it
            by_family.setdefault(it.family, []).append(it)
            model = gpu_by_name.get(it.gpu_model)
            if model is None:
                close = difflib.get_close_matches(it.gpu_model, list(gpu_by_name), n=3, cutoff=0.5)
                hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                known = ", ".join(sorted(gpu_by_name))
                issues.append(
                    Issue.in_entry(
                        ifile,
                        it.name,
                        "gpuModel",
                        f"{it.gpu_model!r} is not a GPU model in {gfile}{hint}",
                        f"use a `name` of {gfile} ({known}), or add the GPU model there",
                        "unknown-gpu-model",
                    )
                )
                continue
            expected = it.gpu_count * model.memory_gb
            if abs(it.gpu_memory_gib - expected) > GPU_MEMORY_TOLERANCE_GIB:
                issues.append(
                    Issue.in_entry(
                        ifile,
                        it.name,
                        "gpuMemoryGiB",
                        f"is {it.gpu_memory_gib:g} but gpuCount x memoryGB of {model.name} is "
                        f"{it.gpu_count} x {model.memory_gb} = {expected}",
                        f"set `gpuMemoryGiB: {expected:g}`, or correct `gpuCount` or {model.name}'s `memoryGB` in {gfile}",
                        "inconsistent",
                    )
                )
        issues += self._platform_issues(gpu_by_name)
        seen_unsupported: set[str] = set()
        for entry in self.unsupported:
            if entry.name in by_family or entry.name in seen_unsupported:
                where = "a family of " + ifile if entry.name in by_family else "listed twice"
                issues.append(Issue.in_entry(
                    self.unsupported_file, entry.name, "name", f"family {entry.name!r} is {where}",
                    "keep a family either in the catalog (provisionable) or here (refused), once", "duplicate",
                ))
            seen_unsupported.add(entry.name)
        if issues:
            raise CatalogError(issues)
        self._gpu_by_name = gpu_by_name
        self._it_by_name = it_by_name
        self._by_family = by_family
        return self

    def _platform_issues(self, gpu_by_name: Mapping[str, GpuModel]) -> list[Issue]:
        """Cross-check the platforms: unique names, one platform per GPU model and count, a known
        GPU model, and a system maximum above the GPUs' board power. Fills the lookup on success."""
        issues: list[Issue] = []
        pfile = self.platforms_file
        names: set[str] = set()
        by_gpus: dict[tuple[str, int], Platform] = {}
        for platform in self.platforms:
            if platform.name in names:
                issues.append(Issue.in_entry(pfile, platform.name, "name", "duplicate name", "delete one of the entries, or rename it", "duplicate"))
                continue
            names.add(platform.name)
            key = (platform.gpu_model, platform.gpu_count)
            if key in by_gpus:
                issues.append(Issue.in_entry(
                    pfile, platform.name, "gpuCount",
                    f"{platform.gpu_count} x {platform.gpu_model} is already platform {by_gpus[key].name}: a host with those GPUs "
                    "would have two draws",
                    "keep one entry per GPU model and count (hosts that differ set `powerKw` in the inventory)", "duplicate",
                ))
                continue
            model = gpu_by_name.get(platform.gpu_model)
            if model is None:
                known = ", ".join(sorted(gpu_by_name))
                issues.append(Issue.in_entry(
                    pfile, platform.name, "gpuModel", f"{platform.gpu_model!r} is not a GPU model in {self.gpu_models_file}",
                    f"use a `name` of {self.gpu_models_file} ({known}), or add the GPU model there", "unknown-gpu-model",
                ))
                continue
            gpu_watts = platform.gpu_count * model.tdp_watts
            if platform.max_system_watts <= gpu_watts:
                issues.append(Issue.in_entry(
                    pfile, platform.name, "maxSystemWatts",
                    f"is {platform.max_system_watts} W, not above the GPUs' board power {platform.gpu_count} x {model.tdp_watts} W = {gpu_watts} W",
                    "take the system's maximum input power from its datasheet (it includes the GPUs), or correct `gpuCount`",
                    "inconsistent",
                ))
                continue
            by_gpus[key] = platform
        self._platform_by_gpus = by_gpus
        return issues

    # ------------------------------------------------------------------ lookups

    def platform_for(self, gpu_model: str, gpu_count: int) -> Platform | None:
        """The platform with ``gpu_count`` GPUs of ``gpu_model`` (e.g. ``("H100-80GB", 8)`` -> DGX-H100), or None.

        Returns:
            The one platform of that GPU model and count (the catalog holds at most one), or None.
        """
        return self._platform_by_gpus.get((gpu_model, gpu_count))

    def platform_watts(self, platform: Platform) -> int:
        """Draw of ``platform`` without its GPUs at full load, in watts: ``maxSystemWatts - gpuCount x tdpWatts``.

        Raises:
            UnknownGpuModelError: the platform's GPU model is not in this catalog.
        """
        return platform.max_system_watts - platform.gpu_count * self.gpu_model(platform.gpu_model).tdp_watts


    def instance_type(self, name: str) -> InstanceType:
        """Return the instance type called ``name`` (exact EC2 name, e.g. ``"g5.xlarge"``).

        Raises:
            UnknownInstanceTypeError: (a ``KeyError``) if absent; the message and
                ``.suggestions`` list close matches.
        """
        try:
            return self._it_by_name[name]
        except KeyError:
            pass
        names = list(self._it_by_name)
        lowered = str(name).strip().lower()
        close = difflib.get_close_matches(lowered, names, n=3, cutoff=0.6)
        if lowered in self._it_by_name and lowered not in close:
            close.insert(0, lowered)
        raise UnknownInstanceTypeError(str(name), close) from None

    def gpu_model(self, name: str) -> GpuModel:
        """Return the GPU model whose catalog key is ``name`` (exact, e.g. ``"H100-80GB"``).

        Raises:
            UnknownGpuModelError: (a ``KeyError``) if absent; suggestions include close
                keys and models whose Karpenter GPU name or GFD product label is ``name``.
        """
        try:
            return self._gpu_by_name[name]
        except KeyError:
            pass
        raise UnknownGpuModelError(str(name), self._gpu_suggestions(str(name)), self._gpu_by_name) from None

    def gpu_model_of(self, instance_type: str) -> GpuModel:
        """Return the GPU model fitted in the EC2 instance type ``instance_type``.

        Raises:
            UnknownInstanceTypeError: if the instance type is not in the catalog.
        """
        return self._gpu_by_name[self.instance_type(instance_type).gpu_model]

    def family(self, name: str) -> list[InstanceType]:
        """Return every size of the EC2 family ``name`` (e.g. ``"g5"``), smallest first.

        Raises:
            UnknownInstanceFamilyError: (a ``KeyError``) if no instance type has that family;
                :class:`RefusedFamilyError` (a subclass) when the family is refused with a reason.
        """
        try:
            return list(self._by_family[name])
        except KeyError:
            pass
        refused = self.unsupported_family(str(name)) if "." not in str(name) else None
        if refused is not None:
            raise RefusedFamilyError(refused) from None
        close = difflib.get_close_matches(str(name).strip().lower(), list(self._by_family), n=3, cutoff=0.5)
        raise UnknownInstanceFamilyError(str(name), close, self._by_family) from None

    def unsupported_family(self, name: str) -> UnsupportedFamily | None:
        """The refused family that ``name`` (a family, ``"g6f"``, or an instance type, ``"g6f.xlarge"``) belongs to, or None.

        Returns:
            The :class:`UnsupportedFamily` entry (its ``consequence`` and ``instead`` go into the error), or
            None when the family is not listed as refused (it may still be unknown altogether).
        """
        family = str(name).strip().lower().split(".", 1)[0]
        return next((u for u in self.unsupported if u.name == family), None)

    def families(self) -> set[str]:
        """Return the set of EC2 family names in the catalog, e.g. ``{"g5", "p5", ...}``."""
        return set(self._by_family)

    def gpu_instance_types(
        self,
        families: str | Iterable[str] | None = None,
        gpu_names: str | Iterable[str] | None = None,
        gpu_counts: int | Iterable[int] | None = None,
    ) -> list[InstanceType]:
        """Return the instance types matching every given filter, in catalog order.

        Args:
            families: EC2 family names (e.g. ``["g5", "g6"]``); None means any family.
            gpu_names: GPU names; each is a catalog key (case-insensitive, e.g.
                ``"H100-80GB"``) or a Karpenter ``instance-gpu-name`` value (e.g.
                ``"a100"``, which matches both A100 sizes). None means any GPU.
            gpu_counts: GPUs per instance (e.g. ``[1, 4]``); None means any count.

            A bare string/int is taken as a one-element list. An empty list matches
            nothing.

        Returns:
            The matching instance types (possibly empty), in data-file order.

        Raises:
            UnknownInstanceFamilyError: if a family is not in the catalog.
            UnknownGpuModelError: if a GPU name matches no GPU model.
        """
        fam_list = _as_list(families)
        names = _as_list(gpu_names)
        count_list = _as_list(gpu_counts)
        key = tuple(None if v is None else frozenset(v) for v in (fam_list, names, count_list))
        cached = self._query_cache.get(key)  # type: ignore[arg-type]
        if cached is not None:
            return list(cached)
        if fam_list is not None:
            for fam in fam_list:
                if fam not in self._by_family:
                    self.family(fam)  # raises with suggestions
            fam_set = set(fam_list)
        gpu_keys: set[str] | None = None
        if names is not None:
            gpu_keys = set()
            for gname in names:
                matched = self._resolve_gpu_name(str(gname))
                if not matched:
                    raise UnknownGpuModelError(str(gname), self._gpu_suggestions(str(gname)), self._gpu_by_name)
                gpu_keys.update(matched)
        count_set = set(count_list) if count_list is not None else None

        found = tuple(
            it
            for it in self.instance_types
            if (fam_list is None or it.family in fam_set)
            and (gpu_keys is None or it.gpu_model in gpu_keys)
            and (count_set is None or it.gpu_count in count_set)
        )
        self._query_cache[key] = found  # type: ignore[index]
        return list(found)

    # ------------------------------------------------------------------ prices

    def with_price_overrides(self, mapping: Mapping[str, float]) -> Catalog:
        """Return a copy of the catalog with some On-Demand prices replaced (e.g. per stack).

        Args:
            mapping: instance type name -> price in USD per instance-hour (finite, >= 0).
                Prices are taken as given (negotiated or other-region prices are fine);
                the entry's ``priceNote`` records the override and the list price.

        Returns:
            A new :class:`Catalog`; this one is unchanged. An empty mapping returns self.

        Raises:
            UnknownInstanceTypeError: if a name is not in the catalog.
            ValueError: if a price is not a finite number >= 0.
        """
        if not mapping:
            return self
        for name, price in mapping.items():
            self.instance_type(name)
            if isinstance(price, bool) or not isinstance(price, (int, float)) or not math.isfinite(price) or price < 0:
                raise ValueError(f"price override for {name!r} must be a finite number >= 0 USD/h, got {price!r}")
        updated = []
        for it in self.instance_types:
            if it.name in mapping:
                was = (
                    f"{it.on_demand_usd_per_hour:g} USD/h ({it.price_region})"
                    if it.on_demand_usd_per_hour is not None
                    else f"not listed ({it.price_region})"
                )
                it = it.model_copy(
                    update={
                        "on_demand_usd_per_hour": float(mapping[it.name]),
                        "price_note": f"Overridden by stack configuration; catalog list price: {was}.",
                    }
                )
            updated.append(it)
        return Catalog(
            gpu_models=self.gpu_models,
            instance_types=tuple(updated),
            platforms=self.platforms,
            unsupported=self.unsupported,
            gpu_models_file=self.gpu_models_file,
            instance_types_file=self.instance_types_file,
            platforms_file=self.platforms_file,
            unsupported_file=self.unsupported_file,
        )

    # ------------------------------------------------------------------ helpers

    def _resolve_gpu_name(self, name: str) -> set[str]:
        wanted = name.strip().lower()
        return {
            key
            for key, model in self._gpu_by_name.items()
            if key.lower() == wanted or (model.karpenter_gpu_name is not None and model.karpenter_gpu_name == wanted)
        }

    def _gpu_suggestions(self, name: str) -> list[str]:
        wanted = name.strip().lower()
        out = [
            key
            for key, model in self._gpu_by_name.items()
            if key.lower() == wanted
            or model.karpenter_gpu_name == wanted
            or model.product_label.lower() == wanted
        ]
        if out:
            return out
        by_lower = {key.lower(): key for key in self._gpu_by_name}
        for match in difflib.get_close_matches(wanted, list(by_lower), n=3, cutoff=0.5):
            if by_lower[match] not in out:
                out.append(by_lower[match])
        return out
