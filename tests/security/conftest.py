"""Fixtures of the security checks: every stack `list_stacks` finds, previewed once per session.

``all_previews`` runs the offline preview of every stack file in ``stacks/`` (new example stacks
are covered without editing the tests); ``preview_out`` runs ``hybridgpu preview`` through the
CLI into a scratch ``out/`` and keeps what it printed, for the secret scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.helpers import ROOT


@pytest.fixture(scope="session")
def all_stacks() -> list[str]:
    """Every stack with a stacks/Pulumi.<stack>.yaml."""
    from hybridgpu.stack.files import list_stacks

    stacks = list_stacks(ROOT)
    assert stacks, "no example stacks found"
    return stacks


@pytest.fixture(scope="session")
def all_previews(all_stacks):
    """Offline preview results of every stack, keyed by stack name."""
    from hybridgpu.shell.preview import run_preview

    return {stack: run_preview(stack, ROOT) for stack in all_stacks}


@dataclass(frozen=True)
class PreviewRun:
    """What ``hybridgpu preview`` (every stack) wrote and printed.

    Attributes:
        out: the out/ directory it wrote (one subdirectory per stack).
        output: everything it printed (stdout and stderr), table and JSON runs.
    """

    out: Path
    output: str


@pytest.fixture(scope="session")
def preview_out(tmp_path_factory, all_stacks) -> PreviewRun:
    """Run ``hybridgpu preview`` (tables, then ``--json``) for every stack into a scratch out/."""
    from typer.testing import CliRunner

    from hybridgpu.cli import app

    out = tmp_path_factory.mktemp("security") / "out"
    runner = CliRunner()
    printed = []
    for extra in ([], ["--json"]):
        result = runner.invoke(app, ["preview", *all_stacks, "--out", str(out), "--root", str(ROOT), *extra], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        printed.append(result.output)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(all_stacks)
    return PreviewRun(out=out, output="\n".join(printed))


def pytest_terminal_summary(terminalreporter):
    """Print how many fuzz inputs ran per target and how they ended (the figures `make fuzz` reports)."""
    try:
        from tests.helpers.fuzz_harness import CASES, FULL_RUN, OUTCOMES, RANDOM_RUN, malformed
    except ImportError:
        return
    if not CASES:
        return
    mode = "full run (HYBRIDGPU_FUZZ=full)" if FULL_RUN else "random run" if RANDOM_RUN else "CI sample (derandomized)"
    terminalreporter.write_sep("-", f"fuzz inputs run, {mode}")
    for name, count in sorted(CASES.items()):
        ends = ", ".join(f"{outcome} {n}" for (target, outcome), n in sorted(OUTCOMES.items()) if target == name)
        terminalreporter.write_line(f"{name:>24}: {count:>6}  ({ends})")
    terminalreporter.write_line(f"{'total':>24}: {sum(CASES.values()):>6}  (malformed {sum(malformed(name) for name in CASES)})")
