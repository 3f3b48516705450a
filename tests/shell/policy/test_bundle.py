"""``hybridgpu policy build-pack``: the built directory installs and runs with no access to this checkout (issue 14).

What a published pack goes through on a machine that enforces it (pulumi/pulumi
``pkg/backend/httpstate/policypack.go`` ``Publish`` and ``installRequiredPolicy``, and
``sdk/python/toolchain/pip.go`` ``InstallDependencies``, commit 1b59498, 2026-08-21): the publisher's
directory is archived under ``package/``; the archive is extracted elsewhere; ``python -m venv
<virtualenv>`` (the pack's ``runtime.options.virtualenv``), ``pip install --upgrade pip setuptools
wheel`` and ``pip install -r requirements.txt`` run with the extracted directory as the working
directory; the CLI then starts ``python -u -m pulumi.policy <engine> <pack dir>`` with that venv's
interpreter (:class:`hybridgpu.shell.policy.analyzer.Analyzer` does the same). This test does
each step, from PyPI (through a wheelhouse that keeps reruns fast: ``WHEELHOUSE``), and gets real verdicts for every policy
example of ``tests/helpers/policy_cases.py`` from the installed pack. It is skipped only when the
package index cannot be reached, and says so.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import traceback
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.registry import BY_NAME, PACK_NAME, POLICIES
from hybridgpu.shell.policy.analyzer import Analyzer, AnalyzerResource
from hybridgpu.shell.policy.bundle import PACK_VIRTUALENV, PackBuildError, build_pack, pinned_closure
from hybridgpu.shell.policy.check import load_policy_config
from tests.helpers import ROOT
from tests.helpers.policy_cases import CASES, Case

HYBRIDGPU = [sys.executable, "-m", "hybridgpu"]
#: Wheels fetched from the package index for the pack's venv, kept between runs: pip's own HTTP
#: cache is not written on this network (its responses are not stored), and pulumi-aws alone is
#: about 100 MB. Override with HYBRIDGPU_TEST_WHEELHOUSE.
WHEELHOUSE = Path(os.environ.get("HYBRIDGPU_TEST_WHEELHOUSE") or Path.home() / ".cache" / "hybridgpu-tests" / "wheels")


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*HYBRIDGPU, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def _index_reachable() -> bool:
    try:
        with socket.create_connection(("pypi.org", 443), timeout=5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    """A snapshot of the checkout's sources the pack is built from (``build-pack --root``), so an
    edit to the checkout during the run cannot differ two builds."""
    src = tmp_path_factory.mktemp("sources")
    shutil.copytree(ROOT / "hybridgpu", src / "hybridgpu", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(ROOT / "policies", src / "policies", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "venv"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    return src


@pytest.fixture(scope="module")
def built(sources, tmp_path_factory) -> Path:
    """The pack as ``hybridgpu policy build-pack`` writes it (built once for the module: the wheel build is the slow part)."""
    out = tmp_path_factory.mktemp("publisher") / "hybridgpu-policy-pack"
    proc = _cli("policy", "build-pack", "--out", str(out), "--root", str(sources))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _publish_and_extract(pack: Path, machine: Path) -> Path:
    """``pulumi policy publish``'s archive (every file under ``package/``) extracted as ``installRequiredPolicy`` does."""
    archive = machine / "pack.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(pack, arcname="package")
    tmp = machine / "policies" / "org" / PACK_NAME / "0.1.0.tmp"
    tmp.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    final = machine / "policies" / "org" / PACK_NAME / "0.1.0"
    (tmp / "package").rename(final)
    return final


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> tuple[Path, Path]:
    """The extracted pack and its venv's interpreter, installed as the Pulumi CLI installs it."""
    machine = tmp_path_factory.mktemp("other-machine")
    pack = _publish_and_extract(built, machine)
    meta = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())
    venv = pack / meta["runtime"]["options"]["virtualenv"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HYBRIDGPU_", "VIRTUAL_ENV"))}
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    for args in (["--upgrade", "pip", "setuptools", "wheel"], ["-r", "requirements.txt"]):
        # Resolved against the package index as the CLI's pip does; files already in the wheelhouse
        # are not fetched again. Then installed from those files only.
        # A stamp per requirement set skips the index round trips when the same set was fetched before.
        wanted = [a for a in args if a != "--upgrade"]
        text = (pack / "requirements.txt").read_text() if "-r" in args else " ".join(wanted)
        stamp = WHEELHOUSE / f".fetched-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
        steps = [] if stamp.exists() else [["download", "-q", "-d", str(WHEELHOUSE), *wanted]]
        steps.append(["install", "-q", "--no-compile", "--no-index", "--find-links", str(WHEELHOUSE), *args])
        for step in steps:
            # The pack's own wheel changes with every build under one version number; a copy left in
            # the shared wheelhouse by an earlier build would be taken instead of the pack's (pip
            # keeps a file it has "already downloaded"), with that build's pins.
            for stale in WHEELHOUSE.glob("hybridgpu-*.whl"):
                stale.unlink()
            proc = subprocess.run([str(python), "-m", "pip", *step], cwd=pack, env=env, capture_output=True, text=True, timeout=900, check=False)
            if proc.returncode != 0:
                if not _index_reachable():
                    pytest.skip(f"the package index (pypi.org) is not reachable, so the pack cannot be installed: {proc.stderr.strip()[-500:]}")
                pytest.fail(f"pip {' '.join(step)} failed in the extracted pack:\n{proc.stderr[-4000:]}")
        stamp.touch()
    return pack, python


def _resource(r: PolicyResource) -> AnalyzerResource:
    provider = None
    if r.provider_props is not None:
        provider = AnalyzerResource(type="pulumi:providers:aws", name="aws", urn="urn:pulumi:dev::hybridgpu::pulumi:providers:aws::aws", properties=dict(r.provider_props))
    return AnalyzerResource(type=r.type, name=r.name, urn=r.urn, properties=dict(r.props), provider=provider)


def _findings(analyzer: Analyzer, case: Case, resources: list[PolicyResource]) -> list[tuple[str, str]]:
    config = load_policy_config(None)
    config[case.policy] = (config[case.policy][0], case.settings or {})
    analyzer.configure(config)
    analyzer.configure_stack(project="hybridgpu", stack="dev")
    items = [_resource(r) for r in resources]
    names = {i.urn: i.name for i in items}
    diags = [d for i in items for d in analyzer.analyze(i)] if BY_NAME[case.policy].kind == "resource" else analyzer.analyze_stack(items)
    return [(names.get(d.urn, ""), d.level) for d in diags if d.policy == case.policy]


# --------------------------------------------------------------------------- the built directory


def test_the_pack_directory_holds_the_pack_a_wheel_and_pinned_requirements(built):
    files = sorted(p.name for p in built.iterdir())
    wheel = next(built.glob("hybridgpu-*+policypack-py3-none-any.whl"))
    assert files == sorted([".gitignore", "PulumiPolicy.yaml", "__main__.py", "requirements.txt", wheel.name])
    assert (built / "__main__.py").read_text() == (ROOT / "policies" / "__main__.py").read_text()
    meta = yaml.safe_load((built / "PulumiPolicy.yaml").read_text())
    assert meta["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": PACK_VIRTUALENV}}
    reqs = [line for line in (built / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert reqs[0] == f"./{wheel.name}"
    names = [r.split("=")[0].split(">")[0].split("<")[0] for r in reqs[1:]]
    assert names == sorted(names) and {"pulumi", "pulumi-policy", "pydantic", "pyyaml"} <= set(names)
    assert all(("==" in r) or "# not pinned: " + r.split(">")[0].split("<")[0] in (built / "requirements.txt").read_text() for r in reqs[1:])
    # pulumi-aws is imported by name at run time (taggable.py: which AWS types take tags); the
    # Kubernetes/command providers, the economics stack and the CLI are not imported, so not installed.
    assert "pulumi-aws" in names
    assert not {"pulumi-kubernetes", "pulumi-command", "matplotlib", "highspy", "typer", "rich"} & set(names)
    # The wheel's metadata is the trimmed one: those pins, the local version label, no console script.
    with zipfile.ZipFile(wheel) as whl:
        info = next(n.split("/")[0] for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = whl.read(f"{info}/METADATA").decode()
        assert "console_scripts" not in (whl.read(f"{info}/entry_points.txt").decode() if f"{info}/entry_points.txt" in whl.namelist() else "")
    assert re.search(r"^Version: .+\+policypack$", metadata, flags=re.M)
    assert {line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist: ")} == set(reqs[1:])
    # The upload never carries a local venv (archive.TGZ honours the pack's .gitignore).
    assert f"{PACK_VIRTUALENV}/" in (built / ".gitignore").read_text().splitlines()


def test_nothing_in_the_pack_points_at_this_checkout(built, sources):
    for path in built.rglob("*"):
        if path.is_file() and path.suffix != ".whl":
            text = path.read_text()
            assert str(ROOT) not in text and str(sources) not in text and "../" not in text, path
            assert not any(line.startswith(("-e", "--editable")) for line in text.splitlines()), path


def test_pins_follow_requirement_markers_and_never_pin_a_version_another_pin_refuses():
    pins = {p.name: p for p in pinned_closure({"pulumi-policy"})}
    assert "pulumi" in pins and "grpcio" in pins and "pulumi-policy" in pins
    for pin in pins.values():
        if pin.conflict:
            assert not pin.specifier.startswith("==") and pin.installed in pin.conflict
        else:
            assert pin.specifier == f"=={pin.installed}"


def test_a_version_another_requirement_refuses_is_not_pinned(monkeypatch):
    """The conflict branch, which a consistent environment never reaches: made to happen here."""
    import importlib.metadata as md

    from hybridgpu.shell.policy import bundle

    class Dist:
        def __init__(self, version: str, requires: list[str]):
            self.version, self.requires = version, requires

    fake = {"app": Dist("1.0", ["lib>=2,<3", "lib!=2.5", 'winonly; sys_platform == "nonexistent"']), "lib": Dist("1.5", [])}

    def distribution(name: str):
        if name not in fake:
            raise md.PackageNotFoundError(name)
        return fake[name]

    monkeypatch.setattr(bundle.md, "distribution", distribution)
    pins = {p.name: p for p in pinned_closure({"app"})}
    assert set(pins) == {"app", "lib"}
    assert pins["app"].line == "app==1.0" and not pins["app"].conflict
    assert pins["lib"].line == "lib!=2.5,<3,>=2"
    assert pins["lib"].conflict == "lib 1.5 is installed here but app 1.0 requires <3,>=2"


def test_two_builds_of_the_same_checkout_are_byte_identical(sources, built, tmp_path):
    # The second build through the API, the first (``built``) through the CLI, from the same snapshot.
    second = build_pack(sources, tmp_path / "b").directory
    files = sorted(p.name for p in built.iterdir())
    assert files == sorted(p.name for p in second.iterdir())
    for name in files:
        assert (built / name).read_bytes() == (second / name).read_bytes(), name


# --------------------------------------------------------------------------- installed elsewhere, run


def test_installed_pack_imports_hybridgpu_from_its_own_venv(installed):
    pack, python = installed
    proc = subprocess.run(
        [str(python), "-c", "import hybridgpu, importlib.util as u; print(hybridgpu.__file__); print(u.find_spec('pulumi_kubernetes'))"],
        cwd=pack, capture_output=True, text=True, timeout=120, check=False, env={"PATH": os.environ.get("PATH", "")},
    )
    assert proc.returncode == 0, proc.stderr
    origin, kubernetes_provider = proc.stdout.split()
    assert origin.startswith(str(pack / PACK_VIRTUALENV)) and str(ROOT) not in origin
    assert kubernetes_provider == "None"


@pytest.fixture(scope="module")
def remote_analyzer(installed):
    pack, python = installed
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith(("PYTHONPATH", "HYBRIDGPU_", "VIRTUAL_ENV"))}
    try:
        with Analyzer(pack, project="hybridgpu", stack="dev", python=str(python), timeout=120) as running:
            yield running
    finally:
        os.environ.update(saved)


def test_installed_pack_describes_every_policy(remote_analyzer):
    info = remote_analyzer.info()
    assert info.name == PACK_NAME
    assert sorted(p.name for p in info.policies) == sorted(p.name for p in POLICIES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_installed_pack_gives_the_same_verdicts(remote_analyzer, case: Case):
    assert _findings(remote_analyzer, case, case.good) == []
    found = _findings(remote_analyzer, case, case.bad)
    assert sorted({name for name, _ in found}) == sorted(set(case.bad_names))
    assert {level for _, level in found} == {BY_NAME[case.policy].enforcement}  # mandatory, except the advisory gpu-repair-coverage


# --------------------------------------------------------------------------- refused before anything is written
# In this process (typer's CliRunner): a refusal happens before any subprocess, and a Python start-up
# with the CLI's imports per case cost more than the rest of the file's checks.


@dataclass(frozen=True)
class _Refusal:
    returncode: int
    stderr: str


def _refused(monkeypatch: pytest.MonkeyPatch, *args: str, cwd: Path = ROOT) -> _Refusal:
    """``hybridgpu <args>`` run in ``cwd``: its exit code and stderr; fails on an uncaught exception (a traceback)."""
    from typer.testing import CliRunner

    from hybridgpu.cli.main import app

    monkeypatch.chdir(cwd)
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), "".join(traceback.format_exception(result.exception))
    return _Refusal(result.exit_code, result.stderr)


def test_out_under_a_gitignored_directory_is_refused(monkeypatch):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and this checkout's .git (the check asks `git check-ignore`)")
    target = ROOT / "out" / "policy-pack-test"
    proc = _refused(monkeypatch, "policy", "build-pack", "--out", str(target))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert ".gitignore" in proc.stderr and "fix:" in proc.stderr
    assert not target.exists()


@pytest.mark.parametrize("where", ["policies", "hybridgpu"])
def test_out_inside_the_sources_is_refused(where, monkeypatch):
    target = ROOT / where / "pack-test"
    proc = _refused(monkeypatch, "policy", "build-pack", "--out", str(target))
    assert proc.returncode == 2 and "fix:" in proc.stderr and "Traceback" not in proc.stderr
    assert not target.exists()


def test_a_non_empty_out_is_refused_and_left_alone(tmp_path, monkeypatch):
    (tmp_path / "keep.txt").write_text("mine")
    proc = _refused(monkeypatch, "policy", "build-pack", "--out", str(tmp_path))
    assert proc.returncode == 2 and "not an empty directory" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_outside_a_checkout_says_what_is_missing(tmp_path, monkeypatch):
    proc = _refused(monkeypatch, "policy", "build-pack", "--out", str(tmp_path / "pack"), "--root", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "pyproject.toml" in proc.stderr and "--root" in proc.stderr
    assert not (tmp_path / "pack").exists()


def test_out_is_required(monkeypatch):
    proc = _refused(monkeypatch, "policy", "build-pack")
    assert proc.returncode == 2 and "--out" in proc.stderr


def test_build_pack_api_refuses_the_checkout_itself():
    with pytest.raises(PackBuildError, match="inside the checkout"):
        build_pack(ROOT, ROOT)
