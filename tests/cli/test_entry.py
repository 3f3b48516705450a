"""The command line's process entry (:mod:`hybridgpu.cli.entry`): the collector is tuned for the
process that runs a command, and for no process that merely imports the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from hybridgpu.collector import BATCH_THRESHOLDS

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_importing_the_cli_changes_no_collector_setting():
    # Tests and `from hybridgpu.cli import app` import the CLI; only running it tunes the process.
    out = _python("import gc, atexit; before = gc.get_threshold(); import hybridgpu.cli.main; print(before == gc.get_threshold())")
    assert out == "True"


def test_batch_settings_raise_the_thresholds():
    code = (
        "import gc\n"
        "from hybridgpu.collector import tune_for_batch_run\n"
        "tune_for_batch_run()\n"
        "print(gc.get_threshold())\n"
        "gc.collect()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(BATCH_THRESHOLDS)


def test_the_exit_freeze_still_flushes_output_and_keeps_the_exit_code():
    # atexit(gc.freeze) must not swallow output or change the command's exit code.
    proc = subprocess.run(
        [sys.executable, "-m", "hybridgpu", "catalog", "--family", "nosuch"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 2
    assert "nosuch" in proc.stdout + proc.stderr
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "hybridgpu", "catalog", "--family", "p5"], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "p5.48xlarge" in proc.stdout


def test_console_script_and_module_run_the_entry():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"hybridgpu": "hybridgpu.cli.entry:main"}
    assert "from hybridgpu.cli.entry import main" in (ROOT / "hybridgpu" / "__main__.py").read_text()


def test_the_pulumi_program_runs_with_the_batch_settings():
    # The language host runs the project's __main__.py: the collector is set up before the program
    # (and the SDK it imports) runs. A stand-in program reports the thresholds it runs under.
    code = (
        "import gc, runpy, sys, types\n"
        "stub = types.ModuleType('hybridgpu.components.program')\n"
        "stub.main = lambda: print(gc.get_threshold())\n"
        "sys.modules['hybridgpu.components.program'] = stub\n"
        f"runpy.run_path({str(ROOT / '__main__.py')!r}, run_name='__main__')\n"
    )
    assert _python(code) == str(BATCH_THRESHOLDS)
