"""NVIDIA mig-parted config files (``version: v1``): the one renderer of them.

Both producers of mig-parted configs build :class:`MigPartedEntry` lists and hand them to
:func:`render_mig_parted`:

* the NVIDIA layer, from a stack's ``migLayouts``
  (:func:`hybridgpu.render.nvidia.mig_parted_config`, the GPU Operator's ConfigMap);
* the MIG planner, from an optimal plan (:meth:`hybridgpu.mig.planner.MigPlan.mig_parted_document`,
  ``hybridgpu mig plan --yaml``).

Format: NVIDIA/mig-parted ``api/spec/v1/spec.go`` and ``helpers.go`` (v0.15.0, 2026-08-19;
unchanged since 28f95990, 2024-01-28, and the same at bd7160f4, 2026-08-21)::

    version: v1
    mig-configs:
      <config name>:                  # at least one entry per config
        - devices: all | [0, 1, ...]  # required: "all" or GPU indices (nvidia-smi's)
          mig-enabled: true | false   # required
          mig-devices: {1g.10gb: 7}   # required when mig-enabled, must be empty when not
          device-filter: [0x233010DE] # optional: PCI device ids (a string or a list); absent or
                                      # empty matches every GPU (MatchesDeviceFilter)

Nothing here imports Pulumi.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ALL_DEVICES", "MIG_PARTED_VERSION", "MigPartedEntry", "render_mig_parted"]

#: The ``version`` of the only mig-parted config format (``api/spec/v1/spec.go`` ``Version``, read 2026-11-22).
MIG_PARTED_VERSION = "v1"
#: ``devices`` value selecting every GPU of a node (the only string mig-parted accepts there).
ALL_DEVICES = "all"


@dataclass(frozen=True)
class MigPartedEntry:
    """One entry of a mig-parted config (``MigConfigSpec``): the MIG setting of some GPUs of a node.

    Args:
        devices: :data:`ALL_DEVICES` or the GPU indices (0-based, as nvidia-smi numbers them) the
            entry applies to; a list is stored as a tuple.
        mig_devices: profile (exact nvidia-smi spelling, e.g. ``"1g.10gb"``) -> instances per GPU
            when MIG is enabled; None when MIG is disabled on these GPUs.
        device_filter: PCI device ids (``0x<device>10DE``) the entry is limited to; empty for no
            filter (every GPU model matches).

    Raises:
        ValueError: ``devices`` is neither ``"all"`` nor a non-empty sequence of indices >= 0.
    """

    devices: str | tuple[int, ...]
    mig_devices: Mapping[str, int] | None = None
    device_filter: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "device_filter", tuple(self.device_filter))
        if isinstance(self.devices, str):
            if self.devices != ALL_DEVICES:
                raise ValueError(f'mig-parted devices must be "{ALL_DEVICES}" or GPU indices, got {self.devices!r}')
            return
        indices = tuple(self.devices)
        if not indices or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in indices):
            raise ValueError(f"mig-parted devices must be a non-empty list of GPU indices >= 0, got {self.devices!r}")
        object.__setattr__(self, "devices", indices)

    @property
    def mig_enabled(self) -> bool:
        """True if the entry enables MIG (has ``mig_devices``)."""
        return self.mig_devices is not None

    def as_dict(self) -> dict[str, Any]:
        """The entry as mig-parted reads it: ``devices``, ``mig-enabled``, and ``mig-devices`` only
        when enabled; ``device-filter`` only when set. Fresh lists and dicts on every call (so a
        YAML dump of several entries has no anchors)."""
        entry: dict[str, Any] = {
            "devices": self.devices if isinstance(self.devices, str) else list(self.devices),
            "mig-enabled": self.mig_enabled,
        }
        if self.mig_devices is not None:
            entry["mig-devices"] = dict(self.mig_devices)
        if self.device_filter:
            entry["device-filter"] = list(self.device_filter)
        return entry


def render_mig_parted(configs: Mapping[str, Sequence[MigPartedEntry]]) -> dict[str, Any]:
    """A whole mig-parted config file from named entry lists.

    Args:
        configs: config name (the value of the node label ``nvidia.com/mig.config`` that selects
            it) -> its entries, in the order to write them.

    Returns:
        ``{"version": "v1", "mig-configs": {name: [entry dict, ...]}}`` (see
        :meth:`MigPartedEntry.as_dict`); names keep the order given.

    Raises:
        ValueError: a config has no entry (mig-parted refuses an empty one).
    """
    rendered: dict[str, list[dict[str, Any]]] = {}
    for name, entries in configs.items():
        if not entries:
            raise ValueError(f"mig-parted config {name!r} has no entry; mig-parted requires at least one")
        rendered[name] = [entry.as_dict() for entry in entries]
    return {"version": MIG_PARTED_VERSION, "mig-configs": rendered}
