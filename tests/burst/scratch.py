"""A scratch copy of the burst example project (hybrid, onprem and prod stacks plus the plan), for tests that edit it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT

PLAN = "stacks/burst/site-a.yaml"


def example_plan() -> dict[str, Any]:
    """The example burst plan file as a dict."""
    return yaml.safe_load((ROOT / PLAN).read_text())


def scratch_project(
    tmp_path: Path, plan: dict[str, Any] | None = None, stack_edits: Mapping[str, Callable[[dict[str, Any]], None]] | None = None
) -> Path:
    """Write Pulumi.yaml, the three burst stacks (inventory paths made absolute, each edited by
    ``stack_edits[stack](config)``) and ``plan`` (default: the example) under ``tmp_path``."""
    (tmp_path / "stacks" / "burst").mkdir(parents=True)
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    for stack in ("hybrid", "onprem", "prod"):
        doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
        if "hybridgpu:onprem" in doc["config"]:
            doc["config"]["hybridgpu:onprem"]["inventory"] = [str(ROOT / p) for p in doc["config"]["hybridgpu:onprem"]["inventory"]]
        if stack_edits and stack in stack_edits:
            stack_edits[stack](doc["config"])
        (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / PLAN).write_text(yaml.safe_dump(plan if plan is not None else example_plan()))
    return tmp_path
