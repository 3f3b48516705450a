"""The stack section ``hybridgpu:teams``: which teams file a stack shares its GPUs by (pure).

The teams file itself (kind ``Teams``) is :class:`hybridgpu.teams.models.TeamsFile`; checking a
stack against it (inventory, NodePools, burst plan, required cost keys) is :mod:`hybridgpu.stack.teams`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from hybridgpu.modelbase import Model


class TeamsSection(Model):
    """The teams sharing this stack's GPUs (config key ``hybridgpu:teams``).

    Every stack of the stack's burst plan names the same file; the teams' Kueue objects are
    derived on each cluster of the plan (docs/teams.md).
    """

    file: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="Teams file (kind `Teams`), relative to the project root, e.g. `stacks/teams/site-a.yaml`. Required."
    )
