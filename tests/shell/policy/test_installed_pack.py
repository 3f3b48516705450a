"""The policy pack ships inside the installed package, and ``hybridgpu check`` runs it by default (issue 25).

"Outside this checkout ``hybridgpu check`` fails with 'not a policy pack'": the default used to be
``<root>/policies``, which a team's project lacks. The pack is now package data
(``hybridgpu/shell/policy/pulumi_pack/``, :data:`hybridgpu.shell.policy.pack.PACK_DIR`), the default
whatever the project holds; ``--pack`` names another. A project that has a pack of its own in
``policies/`` is told so on stderr (its pack would otherwise replace the gate's rules unseen).

The fixture ``tests/fixtures/programs/pkg-own-policy-pack`` (its ``expected.yaml`` was written
before the first run) is such a project: an untagged GPU instance and a ``policies/`` pack that
allows everything. The wheel test builds hybridgpu's wheel from a snapshot of the sources, installs
it (``--no-deps``) into a throwaway virtualenv whose only other path is this venv's site-packages
through a ``.pth`` line (so this venv's own ``.pth`` files, the editable install of the checkout
among them, are not processed and the checkout cannot be imported), and runs ``hybridgpu check``
from a directory outside the checkout with no ``--pack``; the analyzer is started with that
virtualenv's interpreter, as the CLI would start it with the ``python3`` on its PATH.

How the Pulumi CLI runs a local Python pack whose ``PulumiPolicy.yaml`` has no ``virtualenv``
(pulumi/pulumi, commit 1b59498, 2026-08-21): ``parseOptions`` in
``sdk/python/cmd/pulumi-language-python/main.go`` gives a default ``venv`` to plugins but not to
analyzers (``isPlugin := req.Kind != AnalyzerPlugin``); ``pip.Command`` with no virtualenv runs
``CommandPath()`` (``$PULUMI_PYTHON_CMD``, else ``python3``/``python`` on PATH,
``sdk/python/toolchain/pip.go``); ``RunPlugin`` starts ``-u -m pulumi.policy <engine> <pack dir>``
in the pack directory; ``LoadLocalPolicyPackAnalyzers`` (``pkg/engine/update.go``) installs nothing
for a local pack.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell.policy.bundle import PACK_SOURCE
from hybridgpu.shell.policy.pack import PACK_DIR, project_pack_note
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

FIXTURE = ROOT / "tests" / "fixtures" / "programs" / "pkg-own-policy-pack"
EXPECTED = yaml.safe_load((FIXTURE / "expected.yaml").read_text())


def _verdict(exit_code: int, stdout: str) -> dict:
    """``{"verdict", "violations"}`` as expected.yaml writes it, from ``hybridgpu check --format json``."""
    assert exit_code in (0, 1), stdout
    [stack] = json.loads(stdout)["stacks"]
    return {"verdict": "fail" if exit_code == 1 else "pass", "violations": sorted([v["policy"], v["name"]] for v in stack["violations"])}


# --------------------------------------------------------------------------- the pack in the package


def test_the_installed_pack_is_the_checkouts_pack():
    """One pack: the same __main__.py (it calls serve()), description and version in both places."""
    assert PACK_DIR == (ROOT / PACK_SOURCE).resolve()
    assert (PACK_DIR / "__main__.py").read_text() == (ROOT / "policies" / "__main__.py").read_text()
    installed = yaml.safe_load((PACK_DIR / "PulumiPolicy.yaml").read_text())
    checkout = yaml.safe_load((ROOT / "policies" / "PulumiPolicy.yaml").read_text())
    assert {k: installed[k] for k in ("description", "version")} == {k: checkout[k] for k in ("description", "version")}
    # No virtualenv: the CLI then runs the pack with the python3 hybridgpu is installed in, and
    # installs nothing (module docstring); a relative one would point inside site-packages.
    assert installed["runtime"] == {"name": "python", "options": {"toolchain": "pip"}}
    assert not (PACK_DIR / "requirements.txt").exists()


def test_policy_path_prints_the_installed_pack_and_its_interpreter():
    runner = CliRunner()
    result = runner.invoke(app, ["policy", "path"])
    assert result.exit_code == 0 and result.stdout == f"{PACK_DIR}\n"
    result = runner.invoke(app, ["policy", "path", "--python"])
    assert result.exit_code == 0 and result.stdout == f"{sys.executable}\n"


def test_a_projects_own_pack_is_named_and_hybridgpus_is_not(tmp_path):
    note = project_pack_note(FIXTURE)
    assert note is not None and str(FIXTURE / "policies") in note and f"--pack {FIXTURE / 'policies'}" in note
    assert project_pack_note(ROOT) is None  # this checkout's policies/ is hybridgpu's pack
    assert project_pack_note(tmp_path) is None  # no policies/
    (tmp_path / "policies").mkdir()
    assert project_pack_note(tmp_path) is None  # a directory that is no pack


# --------------------------------------------------------------------------- a project with a pack of its own


def test_check_runs_hybridgpus_pack_not_the_projects_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside the checkout, no --pack
    result = CliRunner().invoke(app, ["check", "dev", "--root", str(FIXTURE), "--format", "json"])
    assert _verdict(result.exit_code, result.stdout) == EXPECTED["plain"], result.output
    assert f"--pack {FIXTURE / 'policies'}" in result.stderr and str(PACK_DIR) in result.stderr


def test_check_first_preview_runs_hybridgpus_pack(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", "dev", "--root", str(FIXTURE), "--first-preview", "--format", "json"])
    assert _verdict(result.exit_code, result.stdout) == EXPECTED["firstPreview"], result.output


def test_pack_runs_the_projects_own_pack_when_named():
    result = CliRunner().invoke(app, ["check", "dev", "--root", str(FIXTURE), "--pack", str(FIXTURE / "policies"), "--format", "json"])
    assert _verdict(result.exit_code, result.stdout) == EXPECTED["ownPack"], result.output
    assert "note:" not in result.stderr


# --------------------------------------------------------------------------- from a built wheel, outside the checkout


@dataclass(frozen=True)
class Venv:
    """A throwaway virtualenv with hybridgpu's wheel installed, and a scratch working directory."""

    wheel: Path
    python: Path
    site: Path
    work: Path


def _run(*cmd: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Venv:
    """Build the wheel from a snapshot of the sources (offline) and install it alone into a fresh venv."""
    tmp = tmp_path_factory.mktemp("installed-pack")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "hybridgpu", src / "hybridgpu", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    proc = _run(*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp / "dist"), str(src), cwd=tmp)
    assert proc.returncode == 0, f"the wheel build failed (the test extras bring setuptools: run `make setup`):\n{proc.stderr[-3000:]}"
    (wheel,) = (tmp / "dist").glob("hybridgpu-*.whl")
    env_dir = tmp / "venv"
    proc = _run(sys.executable, "-m", "venv", "--without-pip", str(env_dir), cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    python = env_dir / "bin" / "python"
    site = Path(_run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp).stdout.strip())
    proc = _run(*pip, "install", "--no-deps", "--no-index", "--no-compile", "--target", str(site), str(wheel), cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    # The dependencies from this venv, as a plain path: its .pth files (the checkout's editable
    # install) are not processed from a path a .pth line adds.
    (site / "zz-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp / "elsewhere"
    work.mkdir()
    return Venv(wheel, python, site, work)


def _in_venv(venv: Venv, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HYBRIDGPU_", "VIRTUAL_ENV"))}
    env.update(COLUMNS="200", PYTHONNOUSERSITE="1")
    return _run(str(venv.python), *args, cwd=venv.work, env=env)


def test_the_wheel_ships_the_pack(venv):
    names = set(zipfile.ZipFile(venv.wheel).namelist())
    for name in ("PulumiPolicy.yaml", "__main__.py"):
        assert f"{PACK_SOURCE.as_posix()}/{name}" in names, f"{name} missing from the wheel: add it to [tool.setuptools.package-data]"


def test_the_installed_cli_finds_the_installed_pack(venv):
    proc = _in_venv(venv, "-c", "import hybridgpu; print(hybridgpu.__file__)")
    assert proc.returncode == 0 and proc.stdout.startswith(str(venv.site)), proc.stdout + proc.stderr
    proc = _in_venv(venv, "-m", "hybridgpu", "policy", "path")
    assert proc.returncode == 0 and proc.stdout == f"{venv.site / PACK_SOURCE}\n", proc.stdout + proc.stderr


def test_check_a_foreign_project_outside_the_checkout_with_no_pack(venv):
    project = venv.work.parent / "team-project"
    shutil.copytree(FIXTURE, project, ignore=shutil.ignore_patterns("__pycache__", "expected.yaml"))
    proc = _in_venv(venv, "-m", "hybridgpu", "check", "dev", "--root", str(project), "--format", "json")
    assert "Traceback" not in proc.stderr and "not a policy pack" not in proc.stderr, proc.stderr
    assert _verdict(proc.returncode, proc.stdout) == EXPECTED["plain"], proc.stderr
    assert str(venv.site / PACK_SOURCE) in proc.stderr  # the note names the pack that ran: the wheel's
