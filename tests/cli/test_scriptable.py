"""The CLI is stable and scriptable (issue 14, section 5), run as a user runs it: fresh subprocesses.

* ``hybridgpu preview prod --json`` gives the same bytes every run, and so do the table output
  and every file written under ``--out`` (registrations reach the mock monitor in a
  thread-dependent order; every listing is sorted).
* Every ``--json`` / ``--format json`` output is exactly one JSON document on stdout
  (``json.loads`` of the whole of it), even in a narrow terminal: the HiGHS banner, written by
  highspy's C++ side to file descriptor 1 when a ``Highs`` is built, broke ``cost plan --json | jq``.
* ``hybridgpu catalog --family <unknown>`` is an error with the known families, exit 2 (in this process:
  typer's runner keeps stdout and stderr apart).
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT


def hybridgpu(*args: str, columns: int = 120, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m hybridgpu ARGS`` in a fresh interpreter, as from a shell (no HYBRIDGPU_* overrides)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRIDGPU_")}
    env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "hybridgpu", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def tree_digest(directory: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``directory``."""
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- same input, same bytes


def test_preview_json_and_written_files_are_byte_identical_across_runs(tmp_path):
    out = tmp_path / "out"
    runs = []
    for _ in range(2):  # two fresh processes: each has its own hash seed and thread timing
        proc = hybridgpu("preview", "prod", "--json", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        runs.append((proc.stdout, tree_digest(out / "prod")))
    assert runs[0][1], "the preview wrote no files"
    for stdout, files in runs[1:]:
        assert stdout == runs[0][0]
        assert files == runs[0][1]
    summary = json.loads(runs[0][0])[0]
    # The parent tree is listed by parent, then type and name; so are the manifests and releases.
    assert list(summary["tree"]) == sorted(summary["tree"])
    assert all(kids == sorted(kids) for kids in summary["tree"].values())


def test_preview_tables_are_byte_identical_across_runs(tmp_path):
    outputs = []
    for _ in range(2):
        proc = hybridgpu("preview", "prod", "--out", str(tmp_path / "out"), columns=200)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert "hybridgpu:index:Network" in outputs[0]


# --------------------------------------------------------------------------- one JSON document


JSON_COMMANDS = {
    "preview dev": ["preview", "dev", "--json", "--out", "{tmp}/out"],
    "burst plan": ["burst", "plan", "hybrid", "--json"],
    "burst simulate": ["burst", "simulate", "--trace", "examples/traces/site-a-month.csv", "--stack", "hybrid", "--json"],
    "cost report": ["cost", "report", "prod", "--json"],
    "cost plan": ["cost", "plan", "--demand", "examples/demand/sample.csv", "--json"],
    "cost vram": ["cost", "vram", "70", "--json"],
    "cost checkpoint": ["cost", "checkpoint", "--gpus=1024", "--checkpoint-minutes=5", "--json"],
    "cost showback": ["cost", "showback", "examples/usage/site-a-week.csv", "--stack", "prod", "--price=owned=2.25", "--json"],
    "check": ["check", "dev", "--format", "json"],
    "validate": ["validate", "dev", "--json"],
    "catalog": ["catalog", "--family=p5", "--json"],
    "mig check": ["mig", "check", "H100-80GB", "3g.40gb=1", "--json"],
    "mig profiles": ["mig", "profiles", "H100-80GB", "--json"],
    "mig plan": ["mig", "plan", "H100-80GB", "1g.10gb=20", "3g.40gb=6", "--json"],
    "job check": ["job", "check", "prod", "docs/examples/eks-pytorchjob.yaml", "--json"],
    "inventory validate": ["inventory", "validate", "stacks/inventory/onprem-site-a.yaml", "--json"],
    "inventory upgrade-plan": ["inventory", "upgrade-plan", "stacks/inventory/onprem-site-a.yaml", "--to=1.36.1", "--json"],
    "images": ["images", "dev", "--json"],
}


#: Commands that run the HiGHS solver, which prints from C straight to file descriptor 1: only a
#: process of their own shows whether its banner reaches stdout. The others run in this process
#: (typer's runner captures what Python prints), which spares an interpreter start each.
NEEDS_A_PROCESS = {"cost plan", "mig plan", "mig check"}


@pytest.mark.usefixtures("shared_pack")  # `check` takes the pack already running (tests/conftest.py)
@pytest.mark.parametrize("name", sorted(JSON_COMMANDS))
def test_every_json_output_is_one_document(name, tmp_path, monkeypatch):
    args = [a.replace("{tmp}", str(tmp_path)) for a in JSON_COMMANDS[name]]
    if name in NEEDS_A_PROCESS:
        proc = hybridgpu(*args, columns=40)  # a narrow terminal must not wrap JSON either
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    else:
        from typer.testing import CliRunner

        from hybridgpu.cli import app

        monkeypatch.chdir(ROOT)
        result = CliRunner(env={"COLUMNS": "40"}).invoke(app, args)
        code, stdout, stderr = result.exit_code, result.stdout, result.stderr
    assert code in (0, 1), f"{name}: exit {code}\n{stderr[-2000:]}"  # check exits 1 on violations
    try:
        json.loads(stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"`hybridgpu {' '.join(args)}` stdout is not one JSON document ({exc}); it starts with:\n{stdout[:300]}")
    assert "Running HiGHS" not in stdout + stderr


def test_every_json_option_of_the_cli_is_exercised():
    """A new ``--json`` option must join JSON_COMMANDS: the options are read from the CLI itself."""
    import typer.main

    from hybridgpu.cli.main import app

    found = set()

    def walk(group, prefix: list[str]) -> None:
        click_group = typer.main.get_command(group) if not hasattr(group, "commands") else group
        for name, cmd in click_group.commands.items():
            if hasattr(cmd, "commands"):
                walk(cmd, [*prefix, name])
            elif any(emits_json(p) for p in cmd.params):
                found.add(" ".join([*prefix, name]))

    def emits_json(param) -> bool:
        opts = getattr(param, "opts", [])
        # The option's enum (this typer keeps it on ``type_descriptor.annotation``; click on ``type.choices``).
        annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
        values = list(annotation) if isinstance(annotation, type) and issubclass(annotation, enum.Enum) else getattr(getattr(param, "type", None), "choices", None) or []
        choices = [str(getattr(c, "value", c)) for c in values]
        return "--json" in opts or ("--format" in opts and "json" in choices)

    walk(app, [])
    positional = ("dev", "hybrid", "prod", "70", "json", "H100-80GB")  # stacks, a model, a format: not command names
    covered = {" ".join(a for a in args if not a.startswith("-") and "/" not in a and "=" not in a and a not in positional) for args in JSON_COMMANDS.values()}
    assert found <= covered, f"--json commands without a one-document test: {sorted(found - covered)}"


# --------------------------------------------------------------------------- unknown filters


def catalog(*args: str, columns: int = 120):
    """``hybridgpu catalog ARGS`` in this process (stdout and stderr apart), as typer's runner runs it."""
    from typer.testing import CliRunner

    from hybridgpu.cli import app

    return CliRunner(env={"COLUMNS": str(columns)}).invoke(app, ["catalog", *args])


@pytest.mark.parametrize(
    ("family", "hint"),
    [("nosuch", "known: g4dn, g5, g6, g6e, g7e, gr6, p4d, p4de, p5, p5e, p5en, p6-b200, p6-b300"), ("P5", "did you mean 'p5'"), ("p5.48xlarge", "known: g4dn"), ("", "known:")],
    ids=["unknown", "upper-case", "instance-type-not-family", "empty"],
)
def test_catalog_unknown_family_is_an_error_with_the_known_values(family, hint):
    result = catalog("--family", family)
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    assert "unknown instance family" in result.stderr and hint in result.stderr
    assert "Traceback" not in result.stderr and result.exception is None or isinstance(result.exception, SystemExit)


def test_catalog_one_bad_family_among_good_ones_is_still_an_error():
    result = catalog("--family", "p5", "--family", "g7x")
    assert result.exit_code == 2 and "'g7x'" in result.stderr and result.stdout == ""


@pytest.mark.parametrize("families", [["p5"], ["g5", "g6"], ["p4d", "p4de", "p5e"]])
def test_catalog_known_families_list_only_those(families):
    result = catalog(*[a for f in families for a in ("--family", f)], columns=200)
    assert result.exit_code == 0, result.stderr
    listed = {line.split("│")[1].strip().split(".")[0] for line in result.stdout.splitlines() if line.startswith("│") and "." in line.split("│")[1]}
    assert listed == set(families)
