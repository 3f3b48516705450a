"""Typed MLflow settings (``hybridgpu:platform`` ``mlflow``): the experiment tracking server.

Placeholder model; the release and its checks are being built (issue 30).
Nothing here imports Pulumi.
"""

from __future__ import annotations

from pydantic import Field

from hybridgpu.config.base import Model

__all__ = ["MlflowConfig"]


class MlflowConfig(Model):
    """MLflow tracking server (the official chart) on this stack's cluster."""

    enabled: bool = Field(default=False, description="Install the MLflow tracking server. Default: false.")
