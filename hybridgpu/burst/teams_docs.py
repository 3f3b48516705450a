"""The teams file reference (``docs/teams-reference.md``), generated from the models of :mod:`hybridgpu.teams.models`.

Run ``python -m hybridgpu.burst.teams_docs > docs/teams-reference.md``; ``tests/burst/test_teams.py``
fails when the committed file is stale. It lives beside the burst plan reference because the
generator (:mod:`hybridgpu.docs_gen`) sits above :mod:`hybridgpu.teams` in the layers.
"""

from __future__ import annotations

from hybridgpu.burst.docs import file_reference_markdown
from hybridgpu.teams.models import TeamsFile

REGENERATE = "python -m hybridgpu.burst.teams_docs > docs/teams-reference.md"


def teams_reference_markdown() -> str:
    """Markdown reference of every key of a teams file (deterministic)."""
    return file_reference_markdown(
        TeamsFile,
        regenerate=REGENERATE,
        source="hybridgpu/teams/models.py",
        title="Teams file reference",
        intro="A teams file (e.g. `stacks/teams/site-a.yaml`) says who shares the GPUs of a burst plan and how: "
        "every stack of the plan points at it with `hybridgpu:teams.file`, and each team's Kueue ClusterQueues, "
        "priority classes, namespaces and RBAC are derived from it ([teams guide](teams.md)). Keys are camelCase; "
        "unknown keys are errors.",
    )


if __name__ == "__main__":  # pragma: no cover
    print(teams_reference_markdown(), end="")
