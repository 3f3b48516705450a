"""MIG (Multi-Instance GPU): per-model profile geometry and the exact placement checker.

* :mod:`hybridgpu.mig.profiles` - the MIG profile catalog (data in
  ``hybridgpu/mig/data/mig_profiles.yaml``, with sources and dates): :func:`mig_gpu`,
  :func:`mig_models`, :class:`MigGpu`, :class:`MigProfile`.
* :mod:`hybridgpu.mig.placement` - :func:`check_layout` (does a mix fit on one GPU, and
  where), :func:`valid_layouts`, :func:`maximal_layouts`, :func:`slot_diagram`.
* :mod:`hybridgpu.mig.parted` - :func:`render_mig_parted`, the one renderer of NVIDIA
  mig-parted config files (:class:`MigPartedEntry` per ``mig-configs`` entry).

Nothing here imports Pulumi.
"""

from __future__ import annotations

from hybridgpu.mig.parted import MigPartedEntry, render_mig_parted
from hybridgpu.mig.placement import (
    InvalidMigCountError,
    MigLayout,
    Placement,
    check_layout,
    maximal_layouts,
    slot_diagram,
    slot_header,
    valid_layouts,
)
from hybridgpu.mig.profiles import (
    MIG_PROFILES_FILE,
    MigDataError,
    MigGpu,
    MigProfile,
    PciDevice,
    UnknownMigModelError,
    UnknownMigProfileError,
    load_mig_models,
    mig_gpu,
    mig_models,
)

__all__ = [
    "MIG_PROFILES_FILE",
    "InvalidMigCountError",
    "MigDataError",
    "MigGpu",
    "MigLayout",
    "MigPartedEntry",
    "MigProfile",
    "PciDevice",
    "Placement",
    "UnknownMigModelError",
    "UnknownMigProfileError",
    "check_layout",
    "load_mig_models",
    "maximal_layouts",
    "mig_gpu",
    "mig_models",
    "render_mig_parted",
    "slot_diagram",
    "slot_header",
    "valid_layouts",
]
