"""Base of every typed input model (stack config, inventory) and shared constrained types.

Pure (no Pulumi) and import-light: both :mod:`hybridgpu.config` and :mod:`hybridgpu.inventory`
build on it, and the config package loads inventories, so it lives outside both packages.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints
from pydantic.alias_generators import to_camel

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


def unwrap_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside a field annotation (``X``, ``X | None``, ``list[X]``...), or None."""
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = unwrap_model(arg)
        if found is not None:
            return found
    return None


def model_at(root: type[BaseModel] | None, loc: Any) -> type[BaseModel] | None:
    """The model that owns the last element of a pydantic error location (to list its allowed keys).

    Args:
        root: the model validated at the top of ``loc``.
        loc: the error's location (field aliases and list indices).

    Returns:
        The owning model class, or None when the location leaves the models (e.g. a dict value).
    """
    model = root
    for part in tuple(loc)[:-1]:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        info = fields.get(str(part))
        if info is None:
            return None
        model = unwrap_model(info.annotation)
    return model
