"""Base of every typed input model (stack config, inventory) and shared constrained types.

Pure (no Pulumi) and import-light: both :mod:`hybridgpu.config` and :mod:`hybridgpu.inventory`
build on it, and the config package loads inventories, so it lives outside both packages.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints
from pydantic.alias_generators import to_camel

DNS1123 = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
Dns1123Name = Annotated[str, StringConstraints(pattern=DNS1123, max_length=63)]
#: A Go duration as Karpenter accepts it (e.g. ``30m``, ``1h``, ``720h``, ``1h30m``).
Duration = Annotated[str, StringConstraints(pattern=r"^([0-9]+(s|m|h))+$")]


class Model(BaseModel):
    """Base of every config model: camelCase keys, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
    )
