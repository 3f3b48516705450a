"""Programs that reproduce the rule mistakes of issue 25, end to end through ``hybridgpu check``.

Each ``tests/fixtures/programs/rule-*`` directory is a small Pulumi Python project written as a team
outside hybridgpu would write it, with ``expected.yaml`` (written before the first run): the stack,
and for plain and ``--first-preview`` mode the verdict (``pass``, ``fail`` or ``error``) with the
exact ``[policy, resource name]`` violations ('' for the stack), or the text of the one-line error;
optional ``fixes``: per resource, text its messages must hold (``has``) and must not (``not``).
A ``policy-config.json`` next to it is the ``--policy-pack-config``.

Verdicts run through one started pack (``check_stacks(..., analyzer=...)``, the path of the CLI after
argument parsing); the error cases and one verdict run through the CLI itself for the exit codes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell.policy.check import check_stacks
from tests.helpers import ROOT

PROGRAMS = sorted((ROOT / "tests" / "fixtures" / "programs").glob("rule-*"))
PACK = ROOT / "policies"
MODES = ("plain", "firstPreview")


def expected(program: Path) -> dict:
    return yaml.safe_load((program / "expected.yaml").read_text())


def config_of(program: Path) -> Path | None:
    config = program / "policy-config.json"
    return config if config.is_file() else None


@pytest.fixture
def analyzer(running_packs):
    """The pack running for the test process (tests/conftest.py running_packs)."""
    return running_packs.get(PACK)


def test_programs_are_complete():
    assert len(PROGRAMS) >= 5
    for program in PROGRAMS:
        exp = expected(program)
        assert yaml.safe_load((program / "Pulumi.yaml").read_text())["name"] == program.name
        (program / f"Pulumi.{exp['stack']}.yaml").resolve(strict=True)
        for mode in MODES:
            assert exp[mode]["verdict"] in ("pass", "fail", "error"), (program.name, mode)
            assert (exp[mode]["verdict"] == "fail") == bool(exp[mode].get("violations")), (program.name, mode)


VERDICTS = [(p, m) for p in PROGRAMS for m in MODES if expected(p)[m]["verdict"] != "error"]


@pytest.mark.parametrize(("program", "mode"), VERDICTS, ids=lambda x: x.name if isinstance(x, Path) else x)
def test_program_gets_its_verdict(analyzer, program: Path, mode: str):
    exp = expected(program)
    [report] = check_stacks([exp["stack"]], program, config_file=config_of(program), first_preview=mode == "firstPreview", analyzer=analyzer)
    got = sorted([v.policy, v.name] for v in report.violations)
    assert got == sorted(exp[mode]["violations"]), [(v.policy, v.name, v.message) for v in report.violations]
    for v in report.violations:
        assert "Fix:" in v.message and "Traceback" not in v.message
        fix = exp.get("fixes", {}).get(v.name)
        if fix:  # the fix names what works in this project
            assert fix["has"] in v.message and fix["not"] not in v.message, v.message


ERRORS = [(p, m) for p in PROGRAMS for m in MODES if expected(p)[m]["verdict"] == "error"]


@pytest.mark.parametrize(("program", "mode"), ERRORS, ids=lambda x: x.name if isinstance(x, Path) else x)
def test_program_error_is_one_line_through_the_cli(program: Path, mode: str):
    exp = expected(program)
    args = ["check", exp["stack"], "--root", str(program), "--pack", str(PACK)]
    if config_of(program) is not None:
        args += ["--policy-pack-config", str(config_of(program))]
    if mode == "firstPreview":
        args.append("--first-preview")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.output.splitlines() if x.strip()]
    assert exp[mode]["error"] in line and "Traceback" not in result.output
    if config_of(program) is not None:
        assert str(config_of(program)) in line  # names the file


def test_failing_program_exits_1_through_the_cli():
    program = next(p for p in PROGRAMS if p.name == "rule-spot-request-block")
    result = CliRunner().invoke(app, ["check", "dev", "--root", str(program), "--pack", str(PACK), "--format", "json"])
    assert result.exit_code == 1, result.output
