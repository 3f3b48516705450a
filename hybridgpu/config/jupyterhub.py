"""Typed JupyterHub settings (``hybridgpu:platform`` ``jupyterhub``): notebooks with GPU access.

Placeholder model; the release, its profiles and its checks are being built (issue 30).
Nothing here imports Pulumi.
"""

from __future__ import annotations

from pydantic import Field

from hybridgpu.config.base import Model

__all__ = ["JupyterHubConfig"]


class JupyterHubConfig(Model):
    """JupyterHub (zero-to-jupyterhub chart) on this stack's cluster."""

    enabled: bool = Field(default=False, description="Install JupyterHub. Default: false.")
