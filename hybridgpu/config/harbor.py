"""Typed Harbor settings (``hybridgpu:platform`` ``harbor``): the site's registry as a pull-through cache.

Placeholder model; the release and its checks are being built (issue 27).
Nothing here imports Pulumi.
"""

from __future__ import annotations

from pydantic import Field

from hybridgpu.config.base import Model

__all__ = ["HarborConfig"]


class HarborConfig(Model):
    """Harbor on the on-prem cluster, configured as a pull-through cache of the public registries."""

    enabled: bool = Field(default=False, description="Install Harbor. Default: false.")
