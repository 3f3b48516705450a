"""The harbor release of ``hybridgpu:platform`` (being built)."""

from __future__ import annotations

from typing import Any

from hybridgpu.stack.load import Stack

__all__ = ["build_harbor"]


def build_harbor(stack: Stack, target: Any) -> None:
    """Build the harbor release on ``target`` (a :class:`~hybridgpu.components.platform.PlatformTarget`)."""
    raise NotImplementedError("harbor is not built yet")
