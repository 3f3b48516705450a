"""Every pod the toolkit installs can be scheduled: `hybridgpu validate` end to end on the fixtures (issue 14, point 2).

Each case of ``tests/fixtures/scheduling/cases.yaml`` edits an example stack (or the example
inventory) the way a user would and runs ``hybridgpu validate <stack>`` through the CLI in a
scratch project. A refused stack exits 2 and names the workload, the node group and the taint
or label that refuses it; an accepted one exits 0. Semantics: kube-scheduler's TaintToleration
and NodeAffinity filters (kubernetes/kubernetes ``pkg/scheduler/framework/plugins/{tainttoleration,
nodeaffinity}``, read 2026-11-24) over the chart defaults recorded in ``hybridgpu/render/charts.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan

runner = CliRunner(env={"COLUMNS": "400"})
CASES: list[dict[str, Any]] = yaml.safe_load((ROOT / "tests/fixtures/scheduling/cases.yaml").read_text())
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_path(config: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at a stack key path such as ``hybridgpu:cloud.nodePools[1].taints`` (creating maps on the way)."""
    namespace, _, rest = path.partition(".")
    parts: list[Any] = [namespace] + [int(i) if i else name for name, i in _PART.findall(rest)]
    node: Any = config
    for part in parts[:-1]:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})
    node[parts[-1]] = value


def edited_inventory(project: Path, edits: dict[str, Any]) -> Path:
    """A copy of the example inventory with hosts dropped or changed, written into ``project``."""
    docs = list(yaml.safe_load_all((ROOT / "stacks/inventory/onprem-site-a.yaml").read_text()))
    for doc in docs:
        if doc.get("kind") != "HostList":
            continue
        doc["hosts"] = [h for h in doc["hosts"] if h["hostname"] not in edits.get("drop", [])]
        for host in doc["hosts"]:
            host.update(edits.get("hosts", {}).get(host["hostname"], {}))
    path = project / "site-a.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_validate_verdict(scratch_project, tmp_path, case):
    def edit(config: dict[str, Any]) -> None:
        for path, value in (case.get("set") or {}).items():
            set_path(config, path, value)
        if "inventory" in case:
            config["hybridgpu:onprem"]["inventory"] = [str(edited_inventory(tmp_path, case["inventory"]))]

    stack = case["stack"]
    root = scratch_project(stacks=[stack], plan=example_plan(), stack_edits={stack: edit})
    result = runner.invoke(app, ["validate", stack, "--root", str(root)])
    output = " ".join(result.output.split())
    assert "Traceback" not in output
    if case["verdict"] == "pass":
        assert result.exit_code == 0, output
        return
    assert result.exit_code == 2, output
    for word in case["expect"]:
        assert word in output, (word, output)


def test_fixture_counts():
    verdicts = [c["verdict"] for c in CASES]
    assert verdicts.count("fail") >= 10 and verdicts.count("pass") >= 10
    assert all(c.get("expect") for c in CASES if c["verdict"] == "fail")
