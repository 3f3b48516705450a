"""Scratch projects: a copy of the example project under a temporary directory, for tests that edit it.

``make_project`` is behind the ``scratch_project`` fixture (``tests/conftest.py``); the fuzzing
harness, which needs a fresh directory per hypothesis example, uses ``temporary_project``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT

#: The example burst plan (relative to the project root) and the stacks it names.
PLAN = "stacks/burst/site-a.yaml"
BURST_STACKS = ("hybrid", "onprem", "prod")
#: The example teams file (relative to the project root), named by the burst stacks' ``hybridgpu:teams``.
TEAMS = "stacks/teams/site-a.yaml"


def example_stack(stack: str) -> dict[str, Any]:
    """The example stack file ``stacks/Pulumi.<stack>.yaml`` as a dict."""
    return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())


def example_plan() -> dict[str, Any]:
    """The example burst plan file as a dict."""
    return yaml.safe_load((ROOT / PLAN).read_text())


def example_teams() -> dict[str, Any]:
    """The example teams file as a dict."""
    return yaml.safe_load((ROOT / TEAMS).read_text())


def write_stack(project: Path, stack: str, doc: dict[str, Any]) -> Path:
    """Write ``doc`` as the stack file ``stacks/Pulumi.<stack>.yaml`` of ``project`` (keys in their order)."""
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def make_project(
    dest: Path,
    *,
    stacks: Iterable[str] = (),
    stack_edits: Mapping[str, Callable[[dict[str, Any]], None]] | None = None,
    plan: dict[str, Any] | None = None,
    copy: Iterable[str] = (),
    link_data: bool = False,
    teams: dict[str, Any] | None = None,
) -> Path:
    """A project under ``dest``: Pulumi.yaml and a stacks/ directory, then, as asked:

    * ``stacks``: example stacks, copied with their inventory paths made absolute (they still read
      the example inventory), each edited in place by ``stack_edits[stack](config)``;
    * ``plan``: a burst plan written to ``stacks/burst/site-a.yaml``, with the stacks it names
      (``BURST_STACKS``) copied too;
    * ``copy``: files (relative to the project root) copied as they are, e.g. a stack and the
      inventory it reads, for a test that breaks the copy;
    * ``link_data``: links to the example data directories of stacks/ (inventory, burst plans);
    * ``teams``: a teams file written to ``stacks/teams/site-a.yaml``; without it the copied stacks
      lose their ``hybridgpu:teams`` (the burst plan alone, as before teams existed).
    """
    (dest / "stacks").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Pulumi.yaml", dest / "Pulumi.yaml")
    names = dict.fromkeys([*stacks, *(BURST_STACKS if plan is not None else ())])
    for stack in names:
        doc = example_stack(stack)
        onprem = doc["config"].get("hybridgpu:onprem")
        if onprem and "inventory" in onprem:
            onprem["inventory"] = [str(ROOT / p) for p in onprem["inventory"]]
        if teams is None:
            doc["config"].pop("hybridgpu:teams", None)
        if stack_edits and stack in stack_edits:
            stack_edits[stack](doc["config"])
        write_stack(dest, stack, doc)
    if plan is not None:
        (dest / PLAN).parent.mkdir(parents=True, exist_ok=True)
        (dest / PLAN).write_text(yaml.safe_dump(plan))
    if teams is not None:
        (dest / TEAMS).parent.mkdir(parents=True, exist_ok=True)
        (dest / TEAMS).write_text(yaml.safe_dump(teams, sort_keys=False))
    for relative in copy:
        (dest / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relative, dest / relative)
    if link_data:
        for child in (ROOT / "stacks").iterdir():
            if child.is_dir():
                (dest / "stacks" / child.name).symlink_to(child, target_is_directory=True)
    return dest


@contextmanager
def temporary_project(**kwargs: Any) -> Iterator[Path]:
    """``make_project`` in a fresh temporary directory, removed afterwards (one per hypothesis example)."""
    with tempfile.TemporaryDirectory(prefix="hybridgpu-scratch-") as tmp:
        yield make_project(Path(tmp), **kwargs)
