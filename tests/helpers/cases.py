"""Fixture-driven CLI cases: a YAML list of cases, each editing an example the way a user would, run through
the CLI, with the verdict the CLI must give.

A case is a mapping with at least ``name``, ``verdict`` (``pass`` or ``fail``) and, when it fails,
``expect`` (words the output must contain: file, key, fix); ``set`` maps key paths to the values the case
writes (:func:`apply_set`); :func:`edited_inventory` is the example inventory as a case changes it. Used by the ``hybridgpu validate`` fixture tests (scheduling, EFA, storage,
showback config) and ``hybridgpu job check``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from click.testing import Result
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan

#: The CLI runner of the case tests: wide enough that rich never wraps a key or a file name.
runner = CliRunner(env={"COLUMNS": "400"})
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
#: ``validate_edited``'s default plan: the example burst plan for every stack but dev.
EXAMPLE_PLAN_UNLESS_DEV = object()
#: The example inventory the on-prem cases edit.
EXAMPLE_INVENTORY = ROOT / "stacks/inventory/onprem-site-a.yaml"
#: ``edited_inventory``'s default ``storage``: the Site document's as shipped.
KEEP = object()


def set_path(config: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at a stack key path such as ``hybridgpu:cloud.nodePools[1].taints`` (creating maps on the way)."""
    namespace, _, rest = path.partition(".")
    parts: list[Any] = [namespace] + [int(i) if i else name for name, i in _PART.findall(rest)]
    node: Any = config
    for part in parts[:-1]:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})
    node[parts[-1]] = value


def apply_set(target: dict[str, Any], case: dict[str, Any], setter: Callable[[dict[str, Any], str, Any], None] = set_path) -> None:
    """Apply the case's ``set`` edits (key path -> value, in file order) to ``target`` with ``setter``."""
    for path, value in (case.get("set") or {}).items():
        setter(target, path, value)


def edited_project(scratch_project: Callable[..., Path], stack: str, edit: Callable[[dict[str, Any]], None], plan: Any = EXAMPLE_PLAN_UNLESS_DEV) -> Path:
    """The root of a scratch project holding the example ``stack``, its stack file changed in place by ``edit``.

    ``plan``: the burst plan written into the project (None: none); by default the example plan, except for
    dev, which no plan names.
    """
    if plan is EXAMPLE_PLAN_UNLESS_DEV:
        plan = example_plan() if stack != "dev" else None
    return scratch_project(stacks=[stack], plan=plan, stack_edits={stack: edit})


def edited_inventory(
    path: Path, *, storage: Any = KEEP, hosts: dict[str, dict[str, Any]] | None = None, drop: Iterable[str] = ()
) -> Path:
    """Write to ``path`` a copy of the example inventory whose Site document has ``storage`` (None: no storage
    section; default: as shipped), without the hosts named in ``drop``, each other host updated with
    ``hosts[hostname]``. Returns ``path``."""
    docs = list(yaml.safe_load_all(EXAMPLE_INVENTORY.read_text()))
    dropped = set(drop)
    for doc in docs:
        if doc.get("kind") == "Site" and storage is not KEEP:
            doc.pop("storage", None)
            if storage is not None:
                doc["storage"] = storage
        if doc.get("kind") == "HostList":
            doc["hosts"] = [h for h in doc["hosts"] if h["hostname"] not in dropped]
            for host in doc["hosts"]:
                host.update((hosts or {}).get(host["hostname"], {}))
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def validate(root: Path, stack: str) -> Result:
    """``hybridgpu validate <stack> --root <root>`` through the CLI."""
    return runner.invoke(app, ["validate", stack, "--root", str(root)])


def validate_edited(scratch_project: Callable[..., Path], stack: str, edit: Callable[[dict[str, Any]], None], plan: Any = EXAMPLE_PLAN_UNLESS_DEV) -> Result:
    """``hybridgpu validate <stack>`` on :func:`edited_project` ``(scratch_project, stack, edit, plan)``."""
    return validate(edited_project(scratch_project, stack, edit, plan), stack)


def assert_verdict(result: Result, case: dict[str, Any]) -> str:
    """The CLI ``result`` gives the case's verdict: never a traceback; ``pass`` exits 0, ``fail`` exits 2 and its
    output (whitespace folded to single spaces) contains every word of ``case["expect"]``. Returns that output."""
    output = " ".join(result.output.split())
    assert "Traceback" not in output
    if case["verdict"] == "pass":
        assert result.exit_code == 0, output
        return output
    assert result.exit_code == 2, output
    for word in case["expect"]:
        assert word in output, (word, output)
    return output


def assert_fixture_counts(cases: Iterable[dict[str, Any]], *, minimum: int = 10, label: Any = None, expect_on_fail: bool = True) -> None:
    """At least ``minimum`` failing and ``minimum`` passing cases (``label`` names the subset in the failure);
    with ``expect_on_fail``, every failing case lists the words its output must contain."""
    cases = list(cases)
    verdicts = [c["verdict"] for c in cases]
    assert verdicts.count("fail") >= minimum and verdicts.count("pass") >= minimum, label
    if expect_on_fail:
        assert all(c.get("expect") for c in cases if c["verdict"] == "fail")


def load_cases(relative: str) -> list[dict[str, Any]]:
    """The cases of the YAML file ``relative`` (to the project root)."""
    return yaml.safe_load((ROOT / relative).read_text())


def case_ids(cases: Iterable[dict[str, Any]]) -> list[str]:
    """The parametrization ids of ``cases``: their names."""
    return [c["name"] for c in cases]
