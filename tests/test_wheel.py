"""hybridgpu works from a built wheel, installed non-editable, run outside the repository (issue 13).

The wheel is built from a copy of the sources (``pip wheel --no-deps --no-build-isolation``, so
no registry is needed: the test extras bring a setuptools with ``bdist_wheel``), installed with
``pip install --no-deps --target``, and run as ``python -S`` with ``PYTHONPATH=<target>:<this
venv's site-packages>`` from a scratch directory: ``-S`` skips the venv's ``.pth`` files, so the
editable install of the checkout cannot be picked up, and each test checks where ``hybridgpu``
came from. Package data (catalog, MIG profiles, prices) must load from the wheel; repository
tooling (docs/, tools/) must say what is missing and how to fix it, never a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ROOT


@dataclass(frozen=True)
class Installed:
    """The wheel, where it is installed, a scratch working directory and a copy of the project files."""

    wheel: Path
    site: Path
    work: Path
    project: Path


def _pip(*args: str, cwd: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", *args, "--no-deps", "--no-index", "--disable-pip-version-check", "-q"],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"pip {args[0]} failed (the test extras bring setuptools>=70.1 for bdist_wheel: run `make setup`):\n{proc.stderr[-3000:]}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """Build the wheel from a copy of the sources and install it into a scratch target directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "hybridgpu", src / "hybridgpu", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _pip("wheel", "--no-build-isolation", "-w", str(tmp / "dist"), str(src), cwd=tmp)
    (wheel,) = (tmp / "dist").glob("hybridgpu-*.whl")
    _pip("install", "--target", str(tmp / "site"), str(wheel), cwd=tmp)
    work = tmp / "elsewhere"
    work.mkdir()
    project = tmp / "project"
    project.mkdir()
    shutil.copy2(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", project / "stacks")
    return Installed(wheel, tmp / "site", work, project)


def run(installed: Installed, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -S ARGS`` with only the wheel's target and this venv's site-packages on the path, from a
    directory outside the repository."""
    deps = sysconfig.get_paths()["purelib"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HYBRIDGPU_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(installed.site), deps]), PYTHONNOUSERSITE="1", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-S", *args], cwd=installed.work, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def data_files() -> list[str]:
    """Every non-Python file under hybridgpu/ (the YAML data the package reads at run time), repository-relative."""
    return sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "hybridgpu").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    )


def test_the_wheel_ships_every_data_file_and_nothing_of_the_repository(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert data_files(), "expected packaged data files (catalog, MIG profiles, prices)"
    for path in data_files():
        assert path in names, f"{path} is read at run time but missing from the wheel: add it to [tool.setuptools.package-data]"
    assert not any(n.startswith(("tests/", "benchmarks/", "docs/", "tools/", "stacks/")) for n in names)


def test_hybridgpu_is_imported_from_the_wheel(installed):
    proc = run(installed, "-c", "import hybridgpu, hybridgpu.cli.main, os; print(os.path.dirname(hybridgpu.__file__))")
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == installed.site / "hybridgpu"
    assert str(ROOT) not in proc.stdout


def test_packaged_data_loads_from_the_wheel(installed):
    code = (
        "import hybridgpu\n"
        "from hybridgpu.catalog import load_catalog\n"
        "from hybridgpu.economics.prices import load_economics_data\n"
        "from hybridgpu.mig.profiles import load_mig_models\n"
        "catalog = load_catalog()\n"
        "print(len(catalog.families()), len(load_mig_models()), load_economics_data().on_demand_usd_per_gpu_hour('p5.48xlarge'))\n"
        "print(hybridgpu.__file__)\n"
    )
    proc = run(installed, "-c", code)
    assert proc.returncode == 0, proc.stderr
    counts, origin = proc.stdout.strip().splitlines()
    families, models, price = counts.split()
    assert int(families) > 0 and int(models) > 0 and float(price) > 0
    assert origin.startswith(str(installed.site))


def test_catalog_command(installed):
    proc = run(installed, "-m", "hybridgpu", "catalog")
    assert proc.returncode == 0, proc.stderr
    assert "p5.48xlarge" in proc.stdout and "H100" in proc.stdout


def test_mig_check_command(installed):
    proc = run(installed, "-m", "hybridgpu", "mig", "check", "H100-80GB", "3g.40gb=1")
    assert proc.returncode == 0, proc.stderr
    assert "3g.40gb" in proc.stdout


def test_validate_a_stack_of_a_project_outside_the_repository(installed):
    proc = run(installed, "-m", "hybridgpu", "validate", "dev", "--root", str(installed.project))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok" in proc.stdout and "Pulumi.dev.yaml" in proc.stdout


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (("-m", "hybridgpu.docs_gen", "--check"), "docs/config-reference.md"),
        (("-m", "hybridgpu.policy.docs", "--check"), "docs/policies.md"),
        (("-m", "hybridgpu.security"), "tools/security/checkov-skips.yaml"),
    ],
    ids=["docs_gen", "policy.docs", "security"],
)
def test_repository_tooling_outside_a_checkout_says_what_is_missing(installed, args, missing):
    proc = run(installed, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert missing in proc.stderr and "source checkout" in proc.stderr and "fix:" in proc.stderr


def test_schema_validation_outside_a_checkout_says_what_is_missing(installed):
    nodepool = installed.work / "nodepool.yaml"
    nodepool.write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: gpu}\nspec: {}\n", encoding="utf-8")
    proc = run(installed, "-m", "hybridgpu.schemas", str(nodepool))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "tools/schemas" in proc.stderr and "--tools-dir" in proc.stderr and "npm ci --prefix tools/schemas" in proc.stderr


def test_repository_tooling_takes_the_checkout_root(installed):
    """The wheel's generators, pointed at this checkout with --root, find its committed docs current."""
    for args in (("-m", "hybridgpu.docs_gen", "--check", "--root", str(ROOT)), ("-m", "hybridgpu.policy.docs", "--check", "--root", str(ROOT))):
        proc = run(installed, *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run(installed, "-m", "hybridgpu.docs_gen")
    assert proc.returncode == 0 and proc.stdout.startswith("<!-- Generated by"), proc.stderr
    nodepool = installed.work / "empty-nodepool.yaml"
    nodepool.write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: gpu}\nspec: {}\n", encoding="utf-8")
    proc = run(installed, "-m", "hybridgpu.schemas", "--tools-dir", str(ROOT / "tools" / "schemas"), str(nodepool))
    assert proc.returncode == 1 and "NodePool" in proc.stdout, proc.stdout + proc.stderr  # validated: spec.template is required
