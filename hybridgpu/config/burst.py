"""The stack section ``hybridgpu:burst``: which burst plan file a stack takes part in (pure).

The plan file itself (kind ``BurstPlan``) is :class:`hybridgpu.burst.models.BurstPlanFile`;
checking a stack against it is :mod:`hybridgpu.stack.burst`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from hybridgpu.modelbase import Model


class BurstSection(Model):
    """The stack's part in bursting (config key ``hybridgpu:burst``).

    The stack's role (manager, on-prem worker, cloud worker) follows from its name and the
    stacks the plan file names, so it cannot be configured inconsistently.
    """

    plan: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="Burst plan file (kind `BurstPlan`), relative to the project root, e.g. `stacks/burst/site-a.yaml`. Required."
    )
