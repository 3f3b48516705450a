"""The GPU catalog: GPU models and EC2 GPU instance types, as validated data.

The facts live in four YAML files shipped inside this package
(``hybridgpu/catalog/data/gpu_models.yaml``, ``instance_types.yaml`` and ``platforms.yaml``,
the GPU servers' maximum system power; and ``unsupported.yaml``, the GPU families refused with a
reason and a fix; the comment block at the top of each explains
fields, units and sources). :func:`load_catalog` reads them with :mod:`importlib.resources`
(so it works from an installed wheel), validates every entry and cross-checks the files.

Example::

    from hybridgpu.catalog import load_catalog

    catalog = load_catalog()
    p5 = catalog.instance_type("p5.48xlarge")        # 8 x H100-80GB, 192 vCPU, 2048 GiB
    catalog.gpu_instance_types(gpu_names="a100")     # p4d.24xlarge, p4de.24xlarge
    priced = catalog.with_price_overrides({"g5.xlarge": 0.8})

Nothing here imports Pulumi.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hybridgpu.datafile import not_a_mapping_issue, stray_key_issue, top_level_entries, unreadable_issue
from hybridgpu.catalog.models import (
    GPU_MEMORY_TOLERANCE_GIB,
    Catalog,
    CatalogError,
    GpuModel,
    InstanceType,
    Platform,
    UnknownGpuModelError,
    UnknownInstanceFamilyError,
    UnknownInstanceTypeError,
    UnsupportedFamily,
)
from hybridgpu.errors import Issue, issues_from_validation

__all__ = [
    "GPU_MEMORY_TOLERANCE_GIB",
    "GPU_MODELS_FILE",
    "INSTANCE_TYPES_FILE",
    "Catalog",
    "CatalogError",
    "ACCELERATOR_FAMILY",
    "INSTANCE_TYPES_SOURCE",
    "GpuModel",
    "InstanceType",
    "PLATFORMS_FILE",
    "Platform",
    "UnknownGpuModelError",
    "UnknownInstanceFamilyError",
    "UnknownInstanceTypeError",
    "UNSUPPORTED_FILE",
    "UnsupportedFamily",
    "load_catalog",
]

#: File name of the GPU model data (inside the package's ``data/`` or ``path_override``).
GPU_MODELS_FILE = "gpu_models.yaml"
#: File name of the instance type data (inside the package's ``data/`` or ``path_override``).
INSTANCE_TYPES_FILE = "instance_types.yaml"
#: File name of the GPU server platform data (maximum system power; optional in ``path_override``).
PLATFORMS_FILE = "platforms.yaml"
#: File name of the refused GPU families (reason and fix; optional in ``path_override``).
UNSUPPORTED_FILE = "unsupported.yaml"

#: Where the instance type data lives in the source tree: what a user extends when the
#: catalog lacks a family (named in policy messages; the packaged copy is read at run time).
INSTANCE_TYPES_SOURCE = "hybridgpu/catalog/data/instance_types.yaml"

#: EC2 families that are GPU or other accelerator capacity, by name: G (graphics/inference
#: GPUs: g4dn, g5, g6e), Gr (GPU with a higher memory ratio: gr6), P (training GPUs: p4d, p5en),
#: DL (Gaudi: dl1, dl2q), Trn (Trainium: trn1, trn2) and Inf (Inferentia: inf1, inf2) followed
#: by a generation digit. Source: AWS, "Amazon EC2 instance type naming conventions" and the
#: "Accelerated computing" table of the EC2 Instance Types guide (read 2026-11-24). An instance
#: type whose family matches but is not in the catalog is GPU capacity of unknown size:
#: policies fail closed on it (see :func:`is_accelerator_type`).
ACCELERATOR_FAMILY = re.compile(r"^(?:gr|g|p|dl|trn|inf)[0-9]")


def is_accelerator_type(instance_type: str) -> bool:
    """True when an EC2 instance type (``"gr6.8xlarge"``) or family (``"trn2"``) looks like GPU or
    accelerator capacity (:data:`ACCELERATOR_FAMILY`), whether or not the catalog knows it.

    Graviton and other CPU families (``c7g``, ``m7i``) never match: their letter comes first.
    """
    return bool(ACCELERATOR_FAMILY.match(str(instance_type).strip().lower().split(".", 1)[0]))


_GPU_MODELS_KEY = "gpuModels"
_INSTANCE_TYPES_KEY = "instanceTypes"
_PLATFORMS_KEY = "platforms"
_UNSUPPORTED_KEY = "unsupportedFamilies"


def load_catalog(path_override: Path | None = None) -> Catalog:
    """Load, validate and cross-check the GPU catalog.

    Args:
        path_override: a directory holding ``gpu_models.yaml`` and
            ``instance_types.yaml`` (and optionally ``platforms.yaml`` and ``unsupported.yaml``;
            without them the catalog has no platforms and refuses no family by name) to use
            instead of the data shipped in the package
            (e.g. a patched copy). None (the default) reads the packaged data.

    Returns:
        The :class:`Catalog`. For the packaged data the same (immutable) object is
        returned on every call; an override directory is read afresh each time.

    Raises:
        CatalogError: if a file is missing or unreadable, is not YAML of the expected
            shape (top-level ``gpuModels:`` / ``instanceTypes:`` list, no duplicate
            keys), has an entry with a bad, missing or unknown field, or the two files
            disagree (unknown ``gpuModel``, wrong ``gpuMemoryGiB``, duplicate names, a
            platform's ``maxSystemWatts`` not above its GPUs' board power).
            Every issue names the file, the entry and the field.

    Data source: see the comment block at the top of each data file.
    """
    if path_override is None:
        return _load_packaged()
    directory = Path(path_override)
    platforms = directory / PLATFORMS_FILE
    unsupported = directory / UNSUPPORTED_FILE
    return _build(
        _read_path(directory / GPU_MODELS_FILE),
        str(directory / GPU_MODELS_FILE),
        _read_path(directory / INSTANCE_TYPES_FILE),
        str(directory / INSTANCE_TYPES_FILE),
        _read_path(platforms) if platforms.exists() else None,
        str(platforms),
        _read_path(unsupported) if unsupported.exists() else None,
        str(unsupported),
    )


@functools.lru_cache(maxsize=1)
def _load_packaged() -> Catalog:
    data = resources.files(__name__).joinpath("data")
    gpu_res = data.joinpath(GPU_MODELS_FILE)
    it_res = data.joinpath(INSTANCE_TYPES_FILE)
    pl_res = data.joinpath(PLATFORMS_FILE)
    un_res = data.joinpath(UNSUPPORTED_FILE)
    return _build(
        _read_resource(gpu_res, str(gpu_res)),
        str(gpu_res),
        _read_resource(it_res, str(it_res)),
        str(it_res),
        _read_resource(pl_res, str(pl_res)),
        str(pl_res),
        _read_resource(un_res, str(un_res)),
        str(un_res),
    )


def _read_path(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # a non-UTF-8 file too (found by fuzzing, tests/security)
        raise CatalogError([unreadable_issue(str(path), exc)]) from exc


def _read_resource(resource: Any, label: str) -> str:
    try:
        return resource.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError([unreadable_issue(label, exc, "the packaged file")]) from exc


def _parse_entries(text: str, file: str, top_key: str) -> list[Any]:
    return top_level_entries(text, file, top_key, CatalogError)


def _entry_label(entry: Any, index: int) -> str:
    if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"]:
        return entry["name"]
    return f"#{index}"


def _validate_entries(
    entries: list[Any], file: str, model: type[GpuModel] | type[InstanceType] | type[Platform] | type[UnsupportedFamily]
) -> list[Any]:
    issues: list[Issue] = []
    out = []
    reference = f"the comment block at the top of {Path(file).name}"
    for index, entry in enumerate(entries):
        label = _entry_label(entry, index)
        if not isinstance(entry, dict):
            issues.append(not_a_mapping_issue(file, label, entry))
            continue
        # The YAML spelling is the camelCase alias; reject snake_case attribute names
        # (accepted by the models for Python callers) so the files stay uniform.
        aliases = model._aliases()
        stray = [key for key in entry if key not in aliases]
        if stray:
            issues += [stray_key_issue(file, label, str(key), str(key), aliases) for key in stray]
            continue
        try:
            out.append(model.model_validate(entry))
        except ValidationError as exc:
            issues += issues_from_validation(exc, file=file, root=model, reference=reference, entry=label, entry_kind="entry")
    if issues:
        raise CatalogError(issues)
    return out


def _build(
    gpu_text: str,
    gpu_file: str,
    it_text: str,
    it_file: str,
    platform_text: str | None = None,
    platform_file: str = PLATFORMS_FILE,
    unsupported_text: str | None = None,
    unsupported_file: str = UNSUPPORTED_FILE,
) -> Catalog:
    gpu_models = _validate_entries(_parse_entries(gpu_text, gpu_file, _GPU_MODELS_KEY), gpu_file, GpuModel)
    instance_types = _validate_entries(
        _parse_entries(it_text, it_file, _INSTANCE_TYPES_KEY), it_file, InstanceType
    )
    platforms = (
        _validate_entries(_parse_entries(platform_text, platform_file, _PLATFORMS_KEY), platform_file, Platform)
        if platform_text is not None
        else []
    )
    unsupported = (
        _validate_entries(_parse_entries(unsupported_text, unsupported_file, _UNSUPPORTED_KEY), unsupported_file, UnsupportedFamily)
        if unsupported_text is not None
        else []
    )
    return Catalog(
        gpu_models=tuple(gpu_models),
        instance_types=tuple(instance_types),
        platforms=tuple(platforms),
        unsupported=tuple(unsupported),
        gpu_models_file=gpu_file,
        instance_types_file=it_file,
        platforms_file=platform_file,
        unsupported_file=unsupported_file,
    )
