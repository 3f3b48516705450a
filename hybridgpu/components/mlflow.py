"""The mlflow release of ``hybridgpu:platform`` (being built)."""

from __future__ import annotations

from typing import Any

from hybridgpu.stack.load import Stack

__all__ = ["build_mlflow"]


def build_mlflow(stack: Stack, target: Any) -> None:
    """Build the mlflow release on ``target`` (a :class:`~hybridgpu.components.platform.PlatformTarget`)."""
    raise NotImplementedError("mlflow is not built yet")
