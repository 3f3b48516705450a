"""Every small Pulumi project under tests/fixtures/policy-cases/ through the real analyzer.

Each case directory is a complete Pulumi Python project (``Pulumi.yaml``, ``__main__.py``, one
``Pulumi.<stack>.yaml``) written as a user would, plus ``expected.yaml``: its family
(untagged, oversized, safety, robustness), the class of mistake it stands for, the verdict
(``pass``, ``fail`` or ``error``) and the exact ``[policy, resource name]`` violations ('' for
the stack), or for ``error`` the text the one-line error must hold. A ``policy-config.json``
next to it is the ``--policy-pack-config``; ``firstPreview: true`` checks it as a first
``pulumi preview`` (computed values unknown).

All cases run through one started pack (``check_stacks(..., analyzer=...)``: the path of
``hybridgpu check`` after its argument parsing); a sample runs through the CLI itself for the
exit codes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell.policy.check import ProgramError, check_stacks
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

CASES_DIR = ROOT / "tests" / "fixtures" / "policy-cases"
CASES = sorted(p for p in CASES_DIR.iterdir() if (p / "expected.yaml").is_file())
PACK = ROOT / "policies"


def expected(case: Path) -> dict:
    return yaml.safe_load((case / "expected.yaml").read_text())


@pytest.fixture
def analyzer(running_packs):
    """The pack running for the test process (tests/conftest.py running_packs)."""
    return running_packs.get(PACK)


def test_every_family_has_ten_failing_and_ten_passing_cases():
    counts = Counter((expected(c)["family"], expected(c)["verdict"]) for c in CASES)
    for family in ("untagged", "oversized", "safety"):
        assert counts[(family, "pass")] >= 10, (family, counts)
        assert counts[(family, "fail")] >= 10, (family, counts)
    assert counts[("robustness", "error")] >= 2


def test_expectations_are_consistent():
    for case in CASES:
        exp = expected(case)
        assert exp["verdict"] in ("pass", "fail", "error"), case.name
        assert case.name.startswith(exp["family"] if exp["family"] != "robustness" else "crash"), case.name
        if exp["verdict"] == "pass":
            assert exp["violations"] == [], case.name
        elif exp["verdict"] == "fail":
            assert exp["violations"], case.name
        (case / f"Pulumi.{exp['stack']}.yaml").resolve(strict=True)
        assert yaml.safe_load((case / "Pulumi.yaml").read_text())["name"] == case.name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_gets_its_verdict(analyzer, case: Path):
    exp = expected(case)
    config = case / "policy-config.json"
    run = dict(config_file=config if config.is_file() else None, first_preview=bool(exp.get("firstPreview")), analyzer=analyzer)
    if exp["verdict"] == "error":
        with pytest.raises(ProgramError) as err:
            check_stacks([exp["stack"]], case, **run)
        text = str(err.value)
        assert exp["error"] in text and "\n" not in text
        assert str(case) in text  # names the program file
        return
    [report] = check_stacks([exp["stack"]], case, **run)
    got = sorted([v.policy, v.name] for v in report.violations)
    assert got == exp["violations"], [(v.policy, v.name, v.message) for v in report.violations]
    for v in report.violations:
        assert v.level == "mandatory" and "Fix:" in v.message
        if v.name:
            assert v.urn.startswith(f"urn:pulumi:{exp['stack']}::{case.name}::")  # project name from its Pulumi.yaml


@pytest.mark.parametrize(
    ("name", "code"),
    [("untagged-pass-default-tags-only", 0), ("oversized-fail-asg-50-p5", 1), ("crash-unknown-invoke", 2), ("crash-type-error", 2)],
)
def test_cli_exit_codes(name: str, code: int):
    exp = expected(CASES_DIR / name)
    result = CliRunner().invoke(app, ["check", "--root", str(CASES_DIR / name), "--pack", str(PACK), "--format", "json"])
    assert result.exit_code == code, result.output
    if code == 2:
        [line] = [x for x in result.output.splitlines() if x.strip()]  # one clear line, no traceback
        assert line.startswith("error: ") and exp["error"] in line and "Traceback" not in result.output


def test_cli_debug_prints_the_traceback():
    result = CliRunner().invoke(app, ["check", "--root", str(CASES_DIR / "crash-type-error"), "--pack", str(PACK), "--debug"])
    assert result.exit_code == 2
    assert "Traceback" in result.output and "TypeError" in result.output
