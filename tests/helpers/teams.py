"""Teams test helpers: the example teams file as data, key-path edits, and the example burst plan derived purely."""

from __future__ import annotations

import copy
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.burst.plan import BurstPlan, plan_burst, read_plan_file
from hybridgpu.catalog import load_catalog
from hybridgpu.inventory import load_inventory
from hybridgpu.stack.load import load_stack_config
from tests.helpers import ROOT
from tests.helpers.scratch import example_teams as scratch_example_teams

TEAMS = "stacks/teams/site-a.yaml"
CASES = ROOT / "tests" / "teams" / "cases.yaml"


def example_teams() -> dict[str, Any]:
    """The example teams file as a fresh dict (the same as :func:`tests.helpers.scratch.example_teams`)."""
    return scratch_example_teams()


def load_cases() -> dict[str, list[dict[str, Any]]]:
    """The ``fail`` and ``pass`` cases of tests/teams/cases.yaml."""
    return yaml.safe_load(CASES.read_text())


_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _tokens(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        for name, index in _TOKEN.findall(part):
            out.append(int(index) if index else name)
    return out


def edited(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``data`` with each ``key.path[0].key: value`` set (``None`` deletes the key or list item)."""
    data = copy.deepcopy(data)
    for path, value in changes.items():
        tokens = _tokens(path)
        node: Any = data
        for token in tokens[:-1]:
            node = node[token]
        last = tokens[-1]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return data


@cache
def example_plan() -> BurstPlan:
    """The example burst plan derived from its files without the stack layer's checks (pure: plan, inventory, prod's cloud section)."""
    source = read_plan_file(ROOT / "stacks/burst/site-a.yaml", "stacks/burst/site-a.yaml")
    inventory = load_inventory(ROOT / "stacks/inventory/onprem-site-a.yaml")
    cloud = load_stack_config("prod", ROOT)[0].cloud
    return plan_burst(source, inventory, cloud, load_catalog(), file="stacks/burst/site-a.yaml")


def write(path: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as YAML at ``path`` (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
