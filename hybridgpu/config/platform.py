"""Typed platform layer (config key ``hybridgpu:platform``): the optional releases ML teams use on top of the GPUs.

Each part is optional per stack and lives in its own module: notebooks
(:mod:`hybridgpu.config.jupyterhub`), experiment tracking (:mod:`hybridgpu.config.mlflow`) and
the site's registry (:mod:`hybridgpu.config.harbor`). Nothing here imports Pulumi.
"""

from __future__ import annotations

from pydantic import Field

from hybridgpu.config.base import Model
from hybridgpu.config.harbor import HarborConfig
from hybridgpu.config.jupyterhub import JupyterHubConfig
from hybridgpu.config.mlflow import MlflowConfig

__all__ = ["PlatformConfig"]


class PlatformConfig(Model):
    """The platform releases a stack installs on its cluster (EKS or on-prem)."""

    jupyterhub: JupyterHubConfig | None = Field(default=None, description="JupyterHub for notebooks with GPU access. Default: none.")
    mlflow: MlflowConfig | None = Field(default=None, description="MLflow tracking server. Default: none.")
    harbor: HarborConfig | None = Field(default=None, description="Harbor registry as a pull-through cache (on-prem). Default: none.")
