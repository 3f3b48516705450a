"""A self-contained policy pack directory for ``pulumi policy publish`` (``hybridgpu policy build-pack``).

Why (issue 14): ``pulumi policy publish [org-name]`` archives the *current directory* only
(``archive.TGZ(pwd, "package", true)`` in pulumi/pulumi ``pkg/backend/httpstate/policypack.go``,
v3.2xx, commit 1b59498 of 2026-08-21), and every machine that runs an enforced pack extracts that
archive into ``~/.pulumi/policies/<org>/<pack>/<version>`` and installs it with the Python language
host: ``python3 -m venv <virtualenv>`` (``virtualenv`` from ``runtime.options``, ``venv`` when
absent), ``pip install --upgrade pip setuptools wheel``, then ``pip install -r requirements.txt``
with the extracted directory as the working directory (``installRequiredPolicy`` in the same file;
``InstallDependencies`` in ``sdk/python/toolchain/pip.go``). The checkout's ``policies/`` has
``-e ..`` in its requirements, which points nowhere there, and the pack installed with hybridgpu
(:data:`hybridgpu.shell.policy.pack.PACK_DIR`) has no requirements: it runs where hybridgpu is.

:func:`build_pack` writes a directory that needs nothing but PyPI:

* ``__main__.py``: the installed pack's (``hybridgpu/shell/policy/pulumi_pack/__main__.py`` of
  the checkout), unchanged;
* ``PulumiPolicy.yaml``: that pack's description/version with ``runtime.options``
  ``toolchain: pip`` and ``virtualenv: venv`` (inside the pack, where the CLI creates it);
* ``hybridgpu-<version>+policypack-py3-none-any.whl``: the hybridgpu package built from the
  checkout, whose metadata requires only the distributions the pack imports, pulumi-aws included
  (the full distribution would also pull pulumi-kubernetes, pulumi-command, matplotlib, highspy
  and typer into every policy run); the ``+policypack`` local version says so, and it declares
  no ``hybridgpu`` console script (the CLI's dependencies are not installed with it) and no extras;
* ``requirements.txt``: ``./<that wheel>`` plus every distribution it needs, transitively,
  pinned (``==``) to the version installed where the pack was built;
* ``.gitignore``: ``venv/`` and ``__pycache__/``, which ``archive.TGZ`` honours, so a local
  ``pulumi preview --policy-pack DIR`` that created ``DIR/venv`` does not end up in the upload.

The same checkout and environment give byte-identical files: no build date is written and the
wheel's entries carry a fixed ``SOURCE_DATE_EPOCH`` timestamp.

``archive.TGZ`` also applies every ``.gitignore`` *above* the pack directory (up to ``/``,
``sdk/go/common/util/archive/archive.go``): a pack built under this checkout's ``out/``,
``build/`` or ``dist/`` would be published empty. :func:`build_pack` refuses such a directory.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from hybridgpu.datafile import ORDERED, dump_yaml
from hybridgpu.errors import HybridGpuError
from hybridgpu.shell.policy.pack import PACK_DIR

#: The local version label of the pack's wheel (PEP 440): the hybridgpu code, trimmed dependencies.
LOCAL_LABEL = "policypack"
#: The modules the pack's ``__main__.py`` imports; what they import in turn decides the wheel's
#: dependencies. ``pulumi_aws`` is imported by name at run time (:mod:`hybridgpu.shell.policy.taggable`
#: asks the SDK which AWS types take tags): without it ``required-cost-tags`` would not know that
#: an untagged VPC needs tags, so it is listed here although no import statement names it.
#: ``kubernetes`` likewise: :mod:`hybridgpu.policy.base` loads the client's ``utils/quantity.py``
#: from the installed package by path, without importing the package (start-up time).
PACK_IMPORTS = ("pulumi_policy", "hybridgpu.shell.policy.pack", "hybridgpu.policy.registry", "pulumi_aws", "kubernetes.utils.quantity")
#: Where the Pulumi CLI is told to create the pack's virtualenv (relative to the extracted pack).
PACK_VIRTUALENV = "venv"
#: The oldest setuptools that reads pyproject's SPDX ``project.license`` (PEP 639).
_SETUPTOOLS_MIN = (77, 0)
#: The timestamp of every file in the pack's wheel: 1980-01-01, the earliest a zip entry can hold.
_SOURCE_DATE_EPOCH = "315532800"
#: The installed pack's directory inside a source checkout (``hybridgpu/shell/policy/pulumi_pack``):
#: the template of the built pack's ``__main__.py`` and ``PulumiPolicy.yaml``.
PACK_SOURCE = PACK_DIR.relative_to(Path(__file__).resolve().parents[3])


class PackBuildError(HybridGpuError):
    """The pack cannot be built: the message names the file or directory and the fix."""


@dataclass(frozen=True)
class BuiltPack:
    """What :func:`build_pack` wrote.

    Attributes:
        directory: the pack directory (absolute).
        wheel: the hybridgpu wheel inside it.
        requirements: the ``requirements.txt`` lines that are requirements (wheel first, then
            ``name==version`` sorted by name).
        pins: the dependencies, with any installed version that could not be pinned and why.
    """

    directory: Path
    wheel: Path
    requirements: tuple[str, ...]
    pins: tuple[Pin, ...]


def _imported_distributions(python: str) -> set[str]:
    """Canonical names of the distributions whose top-level modules ``PACK_IMPORTS`` load in ``python``.

    Run in a fresh interpreter and counted from the modules the imports add, so only what the
    pack pulls in is counted (not, say, setuptools' ``_distutils_hack`` loaded by ``site``).
    """
    code = (
        "import importlib, importlib.metadata as md, json, sys\n"
        "before = set(sys.modules)\n"
        f"for m in {list(PACK_IMPORTS)!r}: importlib.import_module(m)\n"
        "tops = {n.split('.')[0] for n in set(sys.modules) - before}\n"
        "owners = md.packages_distributions()\n"
        "print(json.dumps(sorted({d for t in tops for d in owners.get(t, [])})))\n"
    )
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise PackBuildError(f"importing the pack's modules {', '.join(PACK_IMPORTS)} failed:\n{proc.stderr.strip()[-2000:]}")
    return {canonicalize_name(d) for d in json.loads(proc.stdout)}


@dataclass(frozen=True)
class Pin:
    """One requirement of the pack.

    Attributes:
        name: canonical distribution name.
        installed: the version installed where the pack is built.
        specifier: what ``requirements.txt`` says after the name: ``==<installed>``, or, when the
            installed version breaks a requirement of another distribution the pack needs (an
            inconsistent environment, as ``pip check`` would report), the combined specifiers of
            those requirements, so pip chooses a version that satisfies them.
        conflict: why the installed version was not pinned ('' when it was).
    """

    name: str
    installed: str
    specifier: str
    conflict: str = ""

    @property
    def line(self) -> str:
        """The ``requirements.txt`` line."""
        return f"{self.name}{self.specifier}"


def pinned_closure(roots: set[str]) -> list[Pin]:
    """Every distribution ``roots`` need, transitively, pinned to the version installed here.

    Args:
        roots: canonical distribution names.

    Returns:
        One :class:`Pin` per distribution, sorted by name; markers are evaluated for this
        interpreter (extras are not followed: the pack needs none).

    Raises:
        PackBuildError: a needed distribution is not installed (the fix: install it first).
    """
    installed: dict[str, str] = {}
    wanted: dict[str, list[tuple[str, Requirement]]] = {}
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in installed:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            raise PackBuildError(f"{name} is needed by the policy pack but not installed here; fix: pip install {name}") from None
        installed[name] = dist.version
        for text in dict.fromkeys(dist.requires or ()):
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):  # over this interpreter's environment
                continue
            dep = canonicalize_name(req.name)
            wanted.setdefault(dep, []).append((f"{name} {dist.version}", req))
            todo.append(dep)
    pins = []
    for name, version in sorted(installed.items()):
        broken = [(who, req) for who, req in wanted.get(name, []) if not req.specifier.contains(version, prereleases=True)]
        if not broken:
            pins.append(Pin(name, version, f"=={version}"))
            continue
        combined = ",".join(sorted({str(spec) for _, req in wanted[name] for spec in req.specifier}))
        why = "; ".join(f"{who} requires {req.specifier}" for who, req in broken)
        pins.append(Pin(name, version, combined, f"{name} {version} is installed here but {why}"))
    return pins


def _ignored_by_git(directory: Path) -> bool:
    """True when a ``.gitignore`` of the enclosing git work tree ignores files in ``directory``."""
    probe = directory / "PulumiPolicy.yaml"
    parent = next((p for p in [directory, *directory.parents] if p.is_dir()), None)
    if parent is None or shutil.which("git") is None:
        return False
    proc = subprocess.run(
        ["git", "-C", str(parent), "check-ignore", "-q", "--no-index", str(probe)], capture_output=True, text=True, timeout=30, check=False
    )
    return proc.returncode == 0


def _setuptools_ok() -> bool:
    try:
        version = md.version("setuptools")
    except md.PackageNotFoundError:
        return False
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    return parts >= _SETUPTOOLS_MIN


def _staged_pyproject(text: str, version: str, pins: list[Pin]) -> str:
    """The checkout's pyproject with ``version`` given the local label and ``dependencies`` replaced by ``pins``."""
    deps = "dependencies = [\n" + "".join(f'    "{pin.line}",\n' for pin in pins) + "]\n"
    text, n_deps = re.subn(r"(?ms)^dependencies = \[\n.*?^\]\n", lambda _: deps, text, count=1)
    text, n_version = re.subn(r'(?m)^version = "[^"]+"$', f'version = "{version}"', text, count=1)
    if n_deps != 1 or n_version != 1:
        raise PackBuildError("pyproject.toml: [project] has no `version = \"...\"` line or no `dependencies = [` block to rewrite")
    # No `hybridgpu` console script (the CLI's own dependencies, typer and rich, are not in the pack)
    # and no extras (the test tools are not the pack's business).
    for table in ("project.scripts", "project.optional-dependencies"):
        text = re.sub(rf"(?ms)^\[{re.escape(table)}\]\n.*?(?=^\[|\Z)", "", text, count=1)
    return text


def build_pack(root: Path, out: Path, *, python: str | None = None) -> BuiltPack:
    """Write a self-contained policy pack directory (see the module docstring for its files).

    Args:
        root: the hybridgpu source checkout (holds ``pyproject.toml``, ``README.md`` and ``hybridgpu/``).
        out: the pack directory to create; it must not exist or be empty, and must not be
            ignored by a ``.gitignore`` (the Pulumi CLI would leave its files out of the upload).
        python: the interpreter whose installed distributions are pinned (default: this one).

    Returns:
        The :class:`BuiltPack`.

    Raises:
        PackBuildError: ``root`` is not a checkout, ``out`` is not usable, or the wheel build failed;
            nothing is left in ``out`` on failure.
    """
    python = python or sys.executable
    root = root.resolve()
    out = out.resolve()
    template = root / PACK_SOURCE
    for needed in ("pyproject.toml", "README.md", "hybridgpu", PACK_SOURCE / "__main__.py", PACK_SOURCE / "PulumiPolicy.yaml"):
        if not (root / needed).exists():
            raise PackBuildError(f"{root / needed}: missing; build-pack reads the source checkout; fix: run it in the checkout or pass --root DIR")
    if out == root or (root in out.parents and out.parts[len(root.parts)] in ("policies", "hybridgpu")):
        raise PackBuildError(f"{out}: inside the checkout's sources; fix: pass an --out outside policies/ and hybridgpu/")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise PackBuildError(f"{out}: exists and is not an empty directory; fix: remove it or pass another --out")
    if _ignored_by_git(out):
        raise PackBuildError(
            f"{out}: a .gitignore ignores this directory, and `pulumi policy publish` leaves ignored files out of the "
            "upload (it applies every .gitignore above the pack); fix: pass an --out outside out/, build/ and dist/"
        )
    if not _setuptools_ok():
        raise PackBuildError("building the wheel needs setuptools>=77 in this environment; fix: pip install 'setuptools>=77,<80' (the test extras have it)")

    meta = yaml.safe_load((template / "PulumiPolicy.yaml").read_text(encoding="utf-8")) or {}
    project_version = _project_version(root)
    wheel_version = f"{project_version}+{LOCAL_LABEL}"
    pins = pinned_closure(_imported_distributions(python) - {"hybridgpu"})

    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="hybridgpu-pack-") as tmp:
            src = Path(tmp) / "src"
            src.mkdir()
            shutil.copy2(root / "README.md", src / "README.md")
            (src / "pyproject.toml").write_text(_staged_pyproject((root / "pyproject.toml").read_text(encoding="utf-8"), wheel_version, pins), encoding="utf-8")
            shutil.copytree(root / "hybridgpu", src / "hybridgpu", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            proc = subprocess.run(
                [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check", "-q", "-w", str(out), str(src)],
                capture_output=True, text=True, timeout=600, check=False,
                # Every zip entry dated 1980-01-01 (wheel honours SOURCE_DATE_EPOCH) instead of the
                # build time: the same checkout and environment give a byte-identical wheel.
                env={**os.environ, "SOURCE_DATE_EPOCH": _SOURCE_DATE_EPOCH},
            )
            if proc.returncode != 0:
                raise PackBuildError(f"building the hybridgpu wheel failed:\n{proc.stderr.strip()[-3000:]}")
        wheels = sorted(out.glob("hybridgpu-*.whl"))
        if len(wheels) != 1:
            raise PackBuildError(f"{out}: expected one hybridgpu wheel, found {[w.name for w in wheels]}")
        wheel = wheels[0]
        shutil.copy2(template / "__main__.py", out / "__main__.py")
        policy_yaml = {
            "description": meta.get("description", "hybridgpu policy pack"),
            "version": meta.get("version", project_version),
            "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": PACK_VIRTUALENV}},
        }
        (out / "PulumiPolicy.yaml").write_text(
            "# Built by `hybridgpu policy build-pack` from hybridgpu's pack (docs/policies.md, \"Publishing\").\n"
            "# The Pulumi CLI creates the virtualenv in ./venv and runs `pip install -r requirements.txt` here.\n"
            + dump_yaml(policy_yaml, ORDERED),
            encoding="utf-8",
        )
        lines = (f"./{wheel.name}", *(pin.line for pin in pins))
        notes = "".join(f"# not pinned: {pin.conflict}\n" for pin in pins if pin.conflict)
        (out / "requirements.txt").write_text(
            f"# Built by `hybridgpu policy build-pack` (hybridgpu {project_version}).\n"
            "# The wheel is this pack's copy of hybridgpu; pip reads the path relative to the working directory,\n"
            "# which the Pulumi CLI sets to the extracted pack. Versions: those installed where the pack was built.\n"
            + notes + "\n".join(lines) + "\n",
            encoding="utf-8",
        )
        (out / ".gitignore").write_text(f"{PACK_VIRTUALENV}/\n__pycache__/\n", encoding="utf-8")
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for child in out.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        raise
    return BuiltPack(directory=out, wheel=wheel, requirements=lines, pins=tuple(pins))


def _project_version(root: Path) -> str:
    """``[project] version`` of the checkout's pyproject.toml."""
    with (root / "pyproject.toml").open("rb") as fh:
        return str(tomllib.load(fh)["project"]["version"])
