"""The jupyterhub release of ``hybridgpu:platform`` (being built)."""

from __future__ import annotations

from typing import Any

from hybridgpu.stack.load import Stack

__all__ = ["build_jupyterhub"]


def build_jupyterhub(stack: Stack, target: Any) -> None:
    """Build the jupyterhub release on ``target`` (a :class:`~hybridgpu.components.platform.PlatformTarget`)."""
    raise NotImplementedError("jupyterhub is not built yet")
