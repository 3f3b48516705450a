"""One validation per stack (docs/architecture.md): the commands do not derive a stack twice.

``hybridgpu preview <stack>`` validates the stack (``hybridgpu.stack.load.validate_stack``, whose
cross-section part is ``check_stack``) before the program runs, then hands the validated stack to
the program through ``hybridgpu.stack.load.preloaded``; the program's ``runtime_stack`` must
return it rather than validate again. ``hybridgpu cost report`` returns the report validation
built rather than building another. Each test wraps the function with a counter in every
module that looks it up by name, and runs the real command through typer's CliRunner.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

import hybridgpu.economics.report
import hybridgpu.onprem
import hybridgpu.stack.checks
from hybridgpu.cli import app
from hybridgpu.stack.files import list_stacks
from hybridgpu.stack.load import load_stack
from tests.helpers import ROOT

runner = CliRunner(env={"COLUMNS": "200"})
STACKS = list_stacks(ROOT)


def count_calls(monkeypatch: pytest.MonkeyPatch, real: Callable[..., Any]) -> list[tuple[Any, ...]]:
    """Replace ``real`` by a counting wrapper in every loaded hybridgpu module that holds it as a global
    (``hybridgpu.stack.load.check_stack`` is one); returns the list of the calls' arguments."""
    calls: list[tuple[Any, ...]] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    holders = [m for name, m in list(sys.modules.items()) if name.startswith("hybridgpu") and getattr(m, real.__name__, None) is real]
    assert holders, f"no module looks up {real.__name__}"
    for module in holders:
        monkeypatch.setattr(module, real.__name__, counting)
    return calls


def test_the_example_stacks_are_all_there():
    assert {"dev", "hybrid", "onprem", "prod"} <= set(STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_preview_validates_each_stack_once(monkeypatch, tmp_path, stack):
    checks = count_calls(monkeypatch, hybridgpu.stack.checks.check_stack)
    result = runner.invoke(app, ["preview", stack, "--root", str(ROOT), "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert [args[1] for args in checks] == [f"stacks/Pulumi.{stack}.yaml"], "the program validated the stack again"


def test_preview_of_every_stack_validates_each_once(monkeypatch, tmp_path):
    checks = count_calls(monkeypatch, hybridgpu.stack.checks.check_stack)
    result = runner.invoke(app, ["preview", "--root", str(ROOT), "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert sorted(args[1] for args in checks) == sorted(f"stacks/Pulumi.{s}.yaml" for s in STACKS)


def test_cost_report_builds_the_report_once(monkeypatch):
    builds = count_calls(monkeypatch, hybridgpu.economics.report.build_report)
    checks = count_calls(monkeypatch, hybridgpu.stack.checks.check_stack)
    result = runner.invoke(app, ["cost", "report", "prod", "--root", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert len(checks) == 1
    assert len(builds) == 1, "the cost report was built again after validation built it"


@pytest.mark.parametrize("stack", STACKS)
def test_preview_renders_the_onprem_plan_once(monkeypatch, tmp_path, stack):
    """Validation renders the on-prem plan (kubeadm configs and scripts of every host) and the
    program deploys that plan: ``plan_onprem`` runs once per preview of a stack with
    ``hybridgpu:onprem`` (not again in the scheduling check or the program), never without."""
    expected = 1 if load_stack(stack, ROOT).config.onprem is not None else 0
    renders = count_calls(monkeypatch, hybridgpu.onprem.plan_onprem)
    result = runner.invoke(app, ["preview", stack, "--root", str(ROOT), "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert len(renders) == expected, f"the on-prem plan was rendered {len(renders)} times"
