"""MIG profile catalog: the Multi-Instance GPU geometry of each MIG-capable GPU model.

The facts live in ``hybridgpu/mig/data/mig_profiles.yaml`` (its comment block explains
fields, units and sources, with dates); this module defines the validated shapes
(:class:`MigGpu`, :class:`MigProfile`, :class:`PciDevice`) and the lookups.

Geometry, in short: a GPU has ``memory_slots`` memory slices (8, or 4 on A30) and
``compute_slices`` compute slices (7, or 4 on A30). An instance of a profile occupies
``profile.memory_slots`` consecutive memory slices starting at one of
``profile.starts``; instances may not overlap (NVML; ``nvidia-smi mig -lgipp``).
:mod:`hybridgpu.mig.placement` decides whether a mix of profiles fits.

Example::

    from hybridgpu.mig.profiles import mig_gpu, mig_models

    mig_models()                        # ['A100-40GB', 'A100-80GB', 'H100-80GB', ...]
    h100 = mig_gpu("H100-80GB")
    h100.profile("3g.40gb").starts      # (0, 4)
    h100.device_filter                  # ('0x233010DE', '0x233110DE')

Sources (checked 2026-11-22): NVIDIA MIG User Guide v580 "Supported MIG Profiles";
NVIDIA/mig-parted ``deployments/systemd/config-default.yaml`` (2026-02-18);
``nvidia-smi mig -lgipp`` captures on A100-40GB, H100 80GB HBM3 and A30.

Nothing here imports Pulumi.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any


from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from hybridgpu.datafile import DataFileError, not_a_mapping_issue, stray_key_issue, top_level_entries, unreadable_issue
from hybridgpu.errors import FieldError, HybridGpuError, Issue, issues_from_validation

__all__ = [
    "MIG_PROFILES_FILE",
    "MigDataError",
    "MigGpu",
    "MigProfile",
    "PciDevice",
    "UnknownMigModelError",
    "UnknownMigProfileError",
    "load_mig_models",
    "mig_gpu",
    "mig_models",
]

#: File name of the MIG geometry data (inside the package's ``data/``).
MIG_PROFILES_FILE = "mig_profiles.yaml"

_TOP_KEY = "migModels"
_SOURCE_DATE_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$"
_PROFILE_NAME = re.compile(r"^(?P<g>[1-9])g\.(?P<gb>[1-9]\d*)gb(?P<me>\+me)?$")
_ME_SUFFIX = "+me"


# --------------------------------------------------------------------------- errors


class MigDataError(DataFileError):
    """The MIG data file is invalid (bad YAML, bad or unknown field, inconsistent geometry).

    Raised by :func:`load_mig_models` (and so by :func:`mig_gpu` / :func:`mig_models` on
    first use). Every problem found is reported, not only the first; each issue names the
    file, the entry (model name) and the field (e.g. ``profiles[1g.10gb].starts``).
    """

    what = "MIG profile data"


class UnknownMigModelError(HybridGpuError, KeyError):
    """A GPU model has no MIG geometry in the data (not MIG capable, or not a model at all).

    Attributes:
        name: the model asked for.
        known: every model with MIG data, in data-file order.
        suggestions: close matches among ``known`` (may be empty).
    """

    def __init__(self, name: str, known: Iterable[str]):
        self.name = name
        self.known = list(known)
        by_lower = {k.lower(): k for k in self.known}
        wanted = str(name).strip().lower()
        close = [by_lower[m] for m in difflib.get_close_matches(wanted, list(by_lower), n=3, cutoff=0.5)]
        self.suggestions = close
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        self.message = f"no MIG geometry for GPU model {name!r}{hint} (models with MIG data: {', '.join(self.known)})"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise print the repr
        return self.message


class UnknownMigProfileError(HybridGpuError, KeyError):
    """A MIG profile name is not one of the given GPU model's profiles.

    Attributes:
        model: the GPU model (catalog key).
        name: the profile asked for.
        known: the model's profile names, in data-file order.
        suggestions: close matches (spelling, same ``Ng.`` compute size, or the same
            name with different case/``MIG `` prefix); may be empty.
    """

    def __init__(self, model: str, name: str, known: Iterable[str]):
        self.model = model
        self.name = name
        self.known = list(known)
        self.suggestions = _profile_suggestions(str(name), self.known)
        hint = f"; did you mean {', '.join(map(repr, self.suggestions))}?" if self.suggestions else ""
        self.message = (
            f"unknown MIG profile {name!r} for GPU model {model}{hint} "
            f"(profiles of {model}: {', '.join(self.known)})"
        )
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def _profile_suggestions(name: str, known: list[str]) -> list[str]:
    wanted = name.strip().lower()
    if wanted.startswith("mig "):
        wanted = wanted[4:].strip()
    out: list[str] = []
    if wanted in known and wanted != name:
        out.append(wanted)
    for match in difflib.get_close_matches(wanted, known, n=3, cutoff=0.6):
        if match not in out:
            out.append(match)
    prefix = wanted.split(".", 1)[0] + "." if "." in wanted else None
    if prefix and re.fullmatch(r"[1-9]g\.", prefix):
        for candidate in known:
            if candidate.startswith(prefix) and not candidate.endswith(_ME_SUFFIX) and candidate not in out:
                out.append(candidate)
    return out[:4]


# --------------------------------------------------------------------------- models


class _MigModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)

    @classmethod
    def _aliases(cls) -> set[str]:
        return {f.alias or n for n, f in cls.model_fields.items()}


class PciDevice(_MigModel):
    """One PCI product with a given MIG geometry, for mig-parted's ``device-filter``.

    Data source: NVIDIA/mig-parted ``deployments/systemd/config-default.yaml`` at
    219e780d (2026-02-18; the GPU Operator's default mig-parted config) and the PCI ID
    repository (pci.ids 2023-04-11) for product names.
    """

    id: str = Field(
        pattern=r"^0x[0-9A-F]{4}10DE$",
        description="PCI device id as NVML/nvidia-smi and mig-parted spell it: '0x' + 4 hex digits "
        "of the device + '10DE' (NVIDIA's vendor id), upper case, e.g. '0x20B010DE'.",
    )
    product: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Product the id names (unitless), e.g. 'A100-SXM4-40GB'."
    )


class MigProfile(_MigModel):
    """One MIG GPU instance profile of one GPU model, e.g. ``3g.40gb`` on H100-80GB.

    Units: memory slices and compute slices are counts of the GPU's eighths (or
    quarters on A30); ``starts`` are memory-slice indices (0-based); ``memory_gb`` is
    nominal GB, ``memory_gib`` GiB as nvidia-smi reports it.

    Data source: ``hybridgpu/mig/data/mig_profiles.yaml`` (NVIDIA MIG User Guide v580
    "Supported MIG Profiles", ``nvidia-smi mig -lgipp``; checked 2026-11-22).

    Raises:
        pydantic.ValidationError: on construction with a bad or unknown field, or when
            the name disagrees with ``computeSlices``/``memoryGB``/``mediaExtensions``,
            the starts are not strictly increasing, or a ``+me`` profile allows more than
            one instance.
    """

    name: str = Field(description="Profile name (unitless) as nvidia-smi spells it, e.g. '1g.10gb+me'.")
    memory_slots: int = Field(
        alias="memorySlots", ge=1, description="Memory slices one instance occupies (count; the -lgipp size)."
    )
    compute_slices: int = Field(alias="computeSlices", ge=1, description="Compute slices one instance uses (count).")
    max_instances: int = Field(
        alias="maxInstances", ge=1, description="Most instances of this profile per GPU (count)."
    )
    starts: tuple[int, ...] = Field(
        min_length=1, description="Allowed first memory slice of an instance (0-based indices), ascending."
    )
    memory_gb: int = Field(alias="memoryGB", ge=1, description="Nominal memory in GB, as in the profile name.")
    memory_gib: float | None = Field(
        alias="memoryGiB",
        gt=0,
        description="Memory in GiB as 'nvidia-smi mig -lgip' reports it (driver dependent); null if unknown.",
    )
    media_extensions: bool = Field(
        alias="mediaExtensions", description="True for '+me' profiles (they hold the GPU's JPEG decoder and OFA)."
    )

    @model_validator(mode="after")
    def _check(self) -> MigProfile:
        match = _PROFILE_NAME.match(self.name)
        if match is None:
            raise FieldError("name", f"{self.name!r} is not a MIG profile name like '1g.10gb' or '1g.10gb+me'")
        if int(match["g"]) != self.compute_slices:
            raise FieldError("computeSlices", f"is {self.compute_slices} but the name {self.name!r} says {match['g']}")
        if int(match["gb"]) != self.memory_gb:
            raise FieldError("memoryGB", f"is {self.memory_gb} but the name {self.name!r} says {match['gb']}")
        if bool(match["me"]) != self.media_extensions:
            raise FieldError(
                "mediaExtensions", f"is {self.media_extensions} but the name {self.name!r} says {bool(match['me'])}"
            )
        if any(s < 0 for s in self.starts) or list(self.starts) != sorted(set(self.starts)):
            raise FieldError(
                "starts", f"must be distinct non-negative slice indices in ascending order, got {list(self.starts)}"
            )
        if self.media_extensions and self.max_instances != 1:
            raise FieldError("maxInstances", f"is {self.max_instances} but a '+me' profile allows exactly 1 instance")
        if self.max_instances > len(self.starts):
            raise FieldError(
                "maxInstances", f"is {self.max_instances} but only {len(self.starts)} start slices are allowed"
            )
        return self

    @property
    def width(self) -> int:
        """Memory slices one instance occupies (count); same as ``memory_slots``."""
        return self.memory_slots

    @property
    def base_name(self) -> str:
        """The name without the ``+me`` suffix, e.g. ``1g.10gb`` for ``1g.10gb+me``."""
        return self.name[: -len(_ME_SUFFIX)] if self.media_extensions else self.name

    def slot_mask(self, start: int) -> int:
        """Bitmask of the memory slices an instance starting at ``start`` occupies (bit i = slice i).

        Raises:
            ValueError: if ``start`` is not one of :attr:`starts`.
        """
        if start not in self.starts:
            raise ValueError(f"{self.name} cannot start at memory slice {start}; allowed: {list(self.starts)}")
        return ((1 << self.memory_slots) - 1) << start


class MigGpu(_MigModel):
    """The MIG geometry of one GPU model (catalog key), e.g. ``H100-80GB``.

    ``profiles`` are in data-file order (smallest first). Look one up with
    :meth:`profile`.

    Data source: ``hybridgpu/mig/data/mig_profiles.yaml``; each entry lists its sources
    and the date it was checked (``source``, ``source_date``).

    Raises:
        pydantic.ValidationError: on construction with a bad or unknown field, duplicate
            profile names or PCI ids, a profile wider or bigger than the GPU, a start that
            runs past the last memory slice, a ``+me`` profile whose base profile is
            missing or has another geometry, or ``verified`` disagreeing with
            ``unverifiedFields``. (:func:`load_mig_models` turns these into
            :class:`MigDataError`.)
    """

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$",
        description="GPU model (catalog key of hybridgpu/catalog/data/gpu_models.yaml), e.g. 'A100-40GB'.",
    )
    memory_slots: int = Field(alias="memorySlots", ge=1, le=62, description="Memory slices per GPU (count).")
    compute_slices: int = Field(alias="computeSlices", ge=1, description="Compute slices per GPU (count).")
    pci_devices: tuple[PciDevice, ...] = Field(
        alias="pciDevices", min_length=1, description="PCI products with this geometry (mig-parted device-filter)."
    )
    profiles: tuple[MigProfile, ...] = Field(min_length=1, description="GPU instance profiles, smallest first.")
    source: tuple[str, ...] = Field(min_length=1, description="URLs or document names backing the entry (unitless).")
    source_date: str = Field(
        alias="sourceDate", pattern=_SOURCE_DATE_PATTERN, description="Date checked, 'YYYY-MM' or 'YYYY-MM-DD'."
    )
    verified: bool = Field(description="True if every field was checked against the sources.")
    unverified_fields: tuple[str, ...] = Field(
        default=(),
        alias="unverifiedFields",
        description="Fields not checked: a model field name, or 'profiles.<field>' for that field of every profile.",
    )
    notes: str | None = Field(default=None, description="Free-text remarks (unitless).")

    _by_name: dict[str, MigProfile] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> MigGpu:
        by_name: dict[str, MigProfile] = {}
        for profile in self.profiles:
            where = f"profiles[{profile.name}]"
            if profile.name in by_name:
                raise FieldError(f"{where}.name", "duplicate profile name")
            by_name[profile.name] = profile
            if profile.memory_slots > self.memory_slots:
                raise FieldError(
                    f"{where}.memorySlots",
                    f"is {profile.memory_slots} but the GPU has {self.memory_slots} memory slices",
                )
            if profile.compute_slices > self.compute_slices:
                raise FieldError(
                    f"{where}.computeSlices",
                    f"is {profile.compute_slices} but the GPU has {self.compute_slices} compute slices",
                )
            past = [s for s in profile.starts if s + profile.memory_slots > self.memory_slots]
            if past:
                raise FieldError(
                    f"{where}.starts",
                    f"start(s) {past} + width {profile.memory_slots} run past memory slice {self.memory_slots - 1}",
                )
        for profile in self.profiles:
            if not profile.media_extensions:
                continue
            where = f"profiles[{profile.name}]"
            base = by_name.get(profile.base_name)
            if base is None:
                raise FieldError(f"{where}.name", f"'+me' profile without its base profile {profile.base_name!r}")
            if (base.memory_slots, base.compute_slices, base.starts) != (
                profile.memory_slots,
                profile.compute_slices,
                profile.starts,
            ):
                raise FieldError(f"{where}.starts", f"geometry differs from its base profile {base.name!r}")
        ids = [device.id for device in self.pci_devices]
        if len(set(ids)) != len(ids):
            raise FieldError("pciDevices", f"duplicate PCI ids in {ids}")
        self._check_verification()
        self._by_name = by_name
        return self

    def _check_verification(self) -> None:
        allowed = self._aliases() | {f"profiles.{alias}" for alias in MigProfile._aliases()}
        unknown = sorted(set(self.unverified_fields) - allowed)
        if unknown:
            raise FieldError(
                "unverifiedFields",
                f"names no field of this entry: {unknown}",
                "list only keys of this entry, or `profiles.<key>` for that key of every profile",
            )
        if self.verified and self.unverified_fields:
            raise FieldError(
                "verified",
                f"is true but unverifiedFields lists {list(self.unverified_fields)}",
                "set `verified: false`, or check those fields against a source and empty `unverifiedFields`",
            )
        if not self.verified and not self.unverified_fields:
            raise FieldError(
                "unverifiedFields",
                "must list the unverified fields when verified is false",
                "list the fields not checked against a source, or set `verified: true`",
            )

    # ------------------------------------------------------------------ lookups

    def profile(self, name: str) -> MigProfile:
        """Return the profile called ``name`` (exact nvidia-smi spelling, e.g. ``"3g.40gb"``).

        Raises:
            UnknownMigProfileError: (a ``KeyError``) naming this model, listing its
                profiles and suggesting close matches.
        """
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            pass
        raise UnknownMigProfileError(self.name, str(name), self._by_name) from None

    def has_profile(self, name: str) -> bool:
        """True if ``name`` is one of this model's profile names (exact spelling)."""
        return name in self._by_name

    @property
    def profile_names(self) -> tuple[str, ...]:
        """Profile names in data-file order (smallest first)."""
        return tuple(p.name for p in self.profiles)

    @property
    def device_filter(self) -> tuple[str, ...]:
        """PCI device ids for mig-parted's ``device-filter`` (e.g. ``('0x20B010DE', ...)``)."""
        return tuple(d.id for d in self.pci_devices)


# --------------------------------------------------------------------------- loading


def load_mig_models(path: Path | None = None) -> tuple[MigGpu, ...]:
    """Load and validate the MIG geometry data.

    Args:
        path: a YAML file to read instead of the packaged
            ``hybridgpu/mig/data/mig_profiles.yaml`` (e.g. a patched copy). None (the
            default) reads the packaged data.

    Returns:
        One :class:`MigGpu` per entry, in data-file order. For the packaged data the
        same (immutable) tuple is returned on every call.

    Raises:
        MigDataError: if the file is missing or unreadable, is not YAML of the expected
            shape (a single top-level ``migModels:`` list, no duplicate keys), or has an
            entry with a bad, missing or unknown field or an inconsistent geometry; or
            two entries share a name. Every issue names the file, the entry and the
            field.

    Data source: see the comment block at the top of the data file.
    """
    if path is None:
        return _load_packaged()
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # a non-UTF-8 file too (found by fuzzing, tests/security)
        raise MigDataError([unreadable_issue(str(path), exc)]) from exc
    return _build(text, str(path))


@functools.lru_cache(maxsize=1)
def _load_packaged() -> tuple[MigGpu, ...]:
    resource = resources.files("hybridgpu.mig").joinpath("data").joinpath(MIG_PROFILES_FILE)
    try:
        text = resource.read_text(encoding="utf-8")
    except OSError as exc:
        raise MigDataError([unreadable_issue(str(resource), exc, "the packaged file")]) from exc
    return _build(text, str(resource))


@functools.lru_cache(maxsize=1)
def _packaged_by_name() -> dict[str, MigGpu]:
    return {gpu.name: gpu for gpu in _load_packaged()}


def mig_gpu(model: str) -> MigGpu:
    """Return the MIG geometry of GPU model ``model`` (catalog key, e.g. ``"H100-80GB"``).

    Raises:
        UnknownMigModelError: (a ``KeyError``) if the model has no MIG data; the message
            lists the known models and close matches.
        MigDataError: if the packaged data is invalid (a packaging bug).
    """
    by_name = _packaged_by_name()
    try:
        return by_name[model]
    except (KeyError, TypeError):
        raise UnknownMigModelError(str(model), by_name) from None


def mig_models() -> list[str]:
    """Return the GPU models (catalog keys) that have MIG data, in data-file order.

    Raises:
        MigDataError: if the packaged data is invalid (a packaging bug).
    """
    return list(_packaged_by_name())


def _stray_keys(entry: Mapping[str, Any]) -> list[tuple[str, str, set[str]]]:
    """(field path, key as written, allowed keys) for every key not spelled as the YAML alias, recursively."""
    out: list[tuple[str, str, set[str]]] = []
    allowed = MigGpu._aliases()
    out += [(str(k), str(k), allowed) for k in entry if k not in allowed]
    for key, model in (("profiles", MigProfile), ("pciDevices", PciDevice)):
        items = entry.get(key)
        if not isinstance(items, list):
            continue
        sub_allowed = model._aliases()
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            label = item.get("name") if key == "profiles" and isinstance(item.get("name"), str) else index
            out += [(f"{key}[{label}].{k}", str(k), sub_allowed) for k in item if k not in sub_allowed]
    return out


def _loc_to_field(loc: tuple[Any, ...], entry: Mapping[str, Any]) -> str | None:
    """Pydantic error location -> YAML key path, e.g. ('profiles', 2, 'starts') -> 'profiles[1g.10gb].starts'."""
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int) and parts:
            label: Any = part
            items = entry.get(parts[0]) if len(parts) == 1 else None
            if parts[0] == "profiles" and isinstance(items, list) and part < len(items):
                item = items[part]
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    label = item["name"]
            parts[-1] = f"{parts[-1]}[{label}]"
        else:
            parts.append(str(part))
    return ".".join(parts) or None


def _build(text: str, file: str) -> tuple[MigGpu, ...]:
    entries = top_level_entries(text, file, _TOP_KEY, MigDataError)
    issues: list[Issue] = []
    out: list[MigGpu] = []
    seen: set[str] = set()
    reference = f"the comment block at the top of {Path(file).name}"
    for index, entry in enumerate(entries):
        label = entry["name"] if isinstance(entry, dict) and isinstance(entry.get("name"), str) else f"#{index}"
        if not isinstance(entry, dict):
            issues.append(not_a_mapping_issue(file, label, entry))
            continue
        stray = _stray_keys(entry)
        if stray:
            issues += [stray_key_issue(file, label, path, name, allowed) for path, name, allowed in stray]
            continue
        try:
            gpu = MigGpu.model_validate(entry)
        except ValidationError as exc:
            issues += issues_from_validation(
                exc,
                file=file,
                root=MigGpu,
                reference=reference,
                key_of=lambda loc, entry=entry: _loc_to_field(loc, entry),  # type: ignore[misc]
                entry=label,
                entry_kind="entry",
            )
            continue
        if gpu.name in seen:
            issues.append(Issue.in_entry(file, label, "name", "duplicate name", "delete one of the entries; each GPU model is listed once", "duplicate"))
            continue
        seen.add(gpu.name)
        out.append(gpu)
    if issues:
        raise MigDataError(issues)
    return tuple(out)
