"""The ``hybridgpu`` command line: one module per command group, joined in :mod:`hybridgpu.cli.main`.

``hybridgpu.cli.app`` is that joined app (``from hybridgpu.cli import app``). It is looked up
lazily so that a command group (``hybridgpu.cli.burst``, ``.mig``, ``.cost``) can be imported on
its own without the Pulumi shell that ``preview`` and ``check`` need.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    """``app`` of :mod:`hybridgpu.cli.main` and ``main`` of :mod:`hybridgpu.cli.entry` (the process entry), imported on first use."""
    if name == "app":
        return importlib.import_module("hybridgpu.cli.main").app
    if name == "main":
        return importlib.import_module("hybridgpu.cli.entry").main
    raise AttributeError(f"module 'hybridgpu.cli' has no attribute {name!r}")
