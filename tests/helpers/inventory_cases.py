"""Inventory fixture files with their verdicts in a header, run through ``hybridgpu inventory``.

A fixture says what it is and what must happen in ``# key: value`` header lines:
``# verdict: pass|fail`` and, for a must-fail one, ``# expect: <text>`` (text the error output must
hold). Used by the inventory fixture tests (:func:`refusal_tests` gives each directory its two standard tests).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT

runner = CliRunner(env={"COLUMNS": "400"})


def header(path: Path, key: str) -> list[str]:
    """The values of the ``# <key>: `` header lines of ``path``, in order."""
    prefix = f"# {key}: "
    return [line[len(prefix) :] for line in path.read_text().splitlines() if line.startswith(prefix)]


def cases(directory: Path) -> tuple[list[Path], list[Path]]:
    """``(must pass, must fail)``: the ``*.yaml`` files under ``directory/pass`` and ``directory/fail``."""
    return sorted((directory / "pass").glob("*.yaml")), sorted((directory / "fail").glob("*.yaml"))


def relative(path: Path) -> str:
    """``path`` as the CLI is given it: relative to the repository root (the tests' working directory)."""
    return str(path.relative_to(ROOT))


def assert_headers(passing: list[Path], failing: list[Path]) -> None:
    """At least ten of each, each with its verdict (and, when failing, an expected text)."""
    assert len(passing) >= 10 and len(failing) >= 10
    assert all(header(p, "verdict") == ["pass"] for p in passing)
    assert all(header(p, "verdict") == ["fail"] and header(p, "expect") for p in failing)


def assert_refused(fixture: Path, out: Path) -> None:
    """``inventory validate`` and ``inventory render`` both refuse ``fixture``: exit 2, one ``error:``
    block naming the file, every ``# expect:`` text and a fix, no traceback, nothing written to ``out``.
    Run with the repository root as the working directory."""
    name = relative(fixture)
    for command in (["inventory", "validate", name], ["inventory", "render", name, "--out", str(out)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert result.output.startswith("error: ") and f"in inventory {name}" in result.output
        for text in header(fixture, "expect"):
            assert f"{name}: {text}" in result.output or text in result.output, f"{text!r} not in:\n{result.output}"
        assert "    fix: " in result.output
    assert not out.exists()


def refusal_tests(passing: list[Path], failing: list[Path]) -> tuple[Callable[[], None], Callable[..., None]]:
    """The two tests every inventory fixture directory gets, for a test module to bind at top level::

        test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)

    the fixture counts and headers (:func:`assert_headers`), and each must-fail fixture refused by
    ``inventory validate`` and ``render`` (:func:`assert_refused`), one test per file.
    """

    def test_there_are_at_least_ten_of_each() -> None:
        assert_headers(passing, failing)

    @pytest.mark.parametrize("fixture", failing, ids=lambda p: p.stem)
    def test_must_fail(fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        assert_refused(fixture, tmp_path / "r")

    return test_there_are_at_least_ten_of_each, test_must_fail


def preview_clusters(plans: dict) -> object:
    """One offline preview (Pulumi's mocks) of a program that builds one ``OnPremCluster`` per plan
    (name -> :class:`~hybridgpu.onprem.OnPremPlan`), as ``pulumi up`` would register them; returns the
    :class:`~hybridgpu.shell.preview.PreviewResult`. The fixtures' SSH keys come from ``LAB_SSH_KEY``
    (``keySecret: {env: ...}``), set here when unset: the component reads it, the mocks never use it."""
    import os

    from hybridgpu.components.onprem import OnPremCluster, OnPremClusterArgs
    from hybridgpu.shell.preview import run_preview

    def program() -> None:
        for name, plan in plans.items():
            OnPremCluster(name, OnPremClusterArgs(plan=plan))

    os.environ.setdefault("LAB_SSH_KEY", "not a key")
    return run_preview("onprem", ROOT, program=program)
