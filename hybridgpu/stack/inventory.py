"""The on-prem inventory a stack names, loaded once per file version (pure, no Pulumi).

The stack checks, the burst plan (which reads another stack's ``hybridgpu:onprem``), the cost
report and the program all need the inventory; :func:`load_inventory_of` parses it once per
version of its files (:class:`~hybridgpu.inventory.Inventory` is immutable).
"""

from __future__ import annotations

import functools
from pathlib import Path

from hybridgpu.config.models import OnPremConfig, StackConfig
from hybridgpu.inventory import Inventory, load_inventory


def load_onprem_inventory(config: StackConfig, root: Path | None = None) -> Inventory:
    """Load and validate the stack's inventory (``hybridgpu:onprem.inventory``).

    Raises:
        InventoryError: the inventory is invalid (every issue names file, host, field and fix).
    """
    assert config.onprem is not None
    return load_inventory_of(config.onprem, root or Path.cwd())


def load_inventory_of(onprem: OnPremConfig, root: Path) -> Inventory:
    """Load and validate the inventory an on-prem section names (paths relative to ``root``).

    Parsed once per file version: the config checks, the program and the burst plan share it.

    Raises:
        InventoryError: the inventory is invalid (every issue names file, host, field and fix).
    """
    paths = tuple((root / p).resolve() for p in onprem.inventory)
    return _load_inventory_cached(paths, tuple(_mtime(p) for p in paths))


def _mtime(path: Path) -> int:
    try:
        return max([path.stat().st_mtime_ns, *(c.stat().st_mtime_ns for c in path.iterdir())] if path.is_dir() else [path.stat().st_mtime_ns])
    except OSError:
        return -1


@functools.lru_cache(maxsize=8)
def _load_inventory_cached(paths: tuple[Path, ...], mtimes: tuple[int, ...]) -> Inventory:
    # The config checks, the program's own validation and the on-prem component all need the
    # inventory; it is parsed once per file version (Inventory is immutable).
    return load_inventory(list(paths))
