"""A Pulumi Python project read as the Pulumi CLI and its Python language host read it, for the
offline check (``hybridgpu check --root``).

What the CLI does, and where it is written (pulumi/pulumi v3.259.0, commit 1b59498):

* ``runtime``: only ``python`` projects are run by the Python language host (``runtime`` is a string or
  ``{name, options}``: ``sdk/go/common/workspace/project.go`` ``ProjectRuntimeInfo.UnmarshalYAML``).
* ``main``: relative to the project directory; a directory runs its ``__main__.py`` with the working
  directory set to it, a file runs with the working directory set to the file's directory
  (``pkg/engine/project.go`` ``getPwdMain``); a ``main`` that does not exist stops the CLI
  ("project 'main' could not be read"). The language host runs ``runpy.run_path(<entry>)``
  (``sdk/python/cmd/pulumi-language-python-exec``): a directory entry goes first on ``sys.path``.
* the project's environment (``sdk/python/toolchain/toolchain.go`` ``ResolveToolchain``):
  ``toolchain: pip`` (the default) uses ``options.virtualenv`` relative to the project directory, or the
  ambient interpreter when it is not set (``pip.go``); ``toolchain: uv`` uses ``options.virtualenv``, else
  ``.venv`` beside the nearest ``uv.lock`` (else ``pyproject.toml``, else the program directory), or
  ``$UV_PROJECT_ENVIRONMENT`` (``uv.go`` ``newUv``); ``toolchain: poetry`` asks poetry
  (``poetry env info --path`` in the program directory, ``poetry.go`` ``VirtualEnvPath``); without a
  ``toolchain`` option a ``uv.lock`` or ``poetry.lock`` found upwards from the program directory picks
  uv or poetry.

Offline the program runs in hybridgpu's own interpreter under the mocks (it must: the mocks are
Python objects in this process). :class:`ProjectProgram` makes the project environment's
``site-packages`` importable *after* hybridgpu's own, for the run only: ``pulumi``, ``pulumi_aws``,
``pulumi_kubernetes`` and ``pulumi_policy`` stay the versions hybridgpu pins, and the team's other
packages (``pulumi_eks``, ``requests``, its own libraries) are found in its environment.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from hybridgpu.errors import StackFileError
from hybridgpu.stack.files import ProjectFile, read_project

#: The toolchains the Python language host knows (``parseOptions`` in
#: ``sdk/python/cmd/pulumi-language-python/main.go``).
TOOLCHAINS = ("pip", "poetry", "uv")

#: How to create a project virtualenv, for the fixes of the errors below.
VENV_FIX = "run `pulumi install` in the project, or `python -m venv {venv} && {venv}/bin/pip install -r requirements.txt`"


class ProgramExit(Exception):
    """The program called ``sys.exit`` with a non-zero code (``code``: the exit status, 1 for a
    message, as Python exits)."""

    def __init__(self, code: int, message: str = ""):
        self.code = code
        self.message = message
        super().__init__(f"exit code {code}" + (f": {message}" if message else ""))


def _searchup(start: Path, name: str) -> Path | None:
    """The nearest directory at or above ``start`` holding ``name`` (``toolchain.go`` ``searchup``)."""
    for directory in (start, *start.parents):
        if (directory / name).exists():
            return directory
    return None


def _error(project: ProjectFile, field: str, problem: str, fix: str) -> StackFileError:
    return StackFileError(f"{project.path}: {field}: {problem}. Fix: {fix}")


def project_virtualenv(project: ProjectFile, root: Path, program_dir: Path) -> tuple[Path | None, str]:
    """The virtualenv the Python language host would run the program in (see the module docstring).

    Args:
        project: the project file.
        root: the project directory.
        program_dir: the directory of the program (``main``).

    Returns:
        ``(virtualenv or None for the ambient interpreter, the Pulumi.yaml field it comes from)``.

    Raises:
        StackFileError: an option of the wrong kind, an unknown toolchain, or ``toolchain: poetry``
            when poetry is not installed or cannot name its environment.
    """
    options = project.options
    toolchain = options.get("toolchain")
    virtualenv = options.get("virtualenv")
    if virtualenv is not None and (not isinstance(virtualenv, str) or not virtualenv.strip()):
        raise _error(project, "runtime.options.virtualenv", "virtualenv option must be a string", "give the virtualenv's directory, e.g. `virtualenv: venv`")
    if toolchain is not None and toolchain not in TOOLCHAINS:
        raise _error(project, "runtime.options.toolchain", f"unsupported toolchain option: {toolchain}", f"use one of {', '.join(TOOLCHAINS)}")
    if toolchain is None:
        if _searchup(program_dir, "uv.lock"):
            toolchain = "uv"
        elif _searchup(program_dir, "poetry.lock"):
            toolchain = "poetry"
        else:
            toolchain = "pip"
    if toolchain == "poetry":
        return _poetry_env(project, program_dir), "runtime.options.toolchain (poetry)"
    if virtualenv:
        path = Path(virtualenv)
        return (path if path.is_absolute() else root / path), "runtime.options.virtualenv"
    if toolchain == "uv":
        base = _searchup(program_dir, "uv.lock") or _searchup(program_dir, "pyproject.toml") or program_dir
        env = os.environ.get("UV_PROJECT_ENVIRONMENT")
        return (base / env if env else base / ".venv"), "runtime.options.toolchain (uv: .venv beside uv.lock or pyproject.toml)"
    return None, ""


def _poetry_env(project: ProjectFile, program_dir: Path) -> Path:
    """Poetry's environment of the project, as the language host finds it (``poetry env info --path``).

    Raises:
        StackFileError: poetry is not on ``PATH``, or it fails or names no environment.
    """
    field = "runtime.options.toolchain"
    poetry = shutil.which("poetry")
    if poetry is None:
        raise _error(
            project, field,
            "poetry: the Pulumi CLI asks poetry for the project's environment (`poetry env info --path`), and poetry is not installed here",
            "install poetry where hybridgpu check runs (and `poetry install` in the project), or set `virtualenv: <dir>` with toolchain pip",
        )
    try:
        done = subprocess.run([poetry, "env", "info", "--path"], cwd=program_dir, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _error(project, field, f"poetry: `poetry env info --path` failed: {exc}", "run `poetry install` in the project") from None
    path = done.stdout.strip()
    if done.returncode != 0 or not path:
        why = " ".join((done.stderr or done.stdout).split())[:200] or f"exit code {done.returncode}"
        raise _error(project, field, f"poetry: `poetry env info --path` names no environment ({why})", "run `poetry install` in the project")
    return Path(path)


def site_packages(venv: Path) -> list[Path]:
    """The ``site-packages`` directories of virtualenv ``venv``: this interpreter's ``pythonX.Y`` first,
    then any other version's (pure-Python packages import from it; compiled ones may not)."""
    here = f"python{sys.version_info.major}.{sys.version_info.minor}"
    found = [venv / "Lib" / "site-packages"] if (venv / "Lib" / "site-packages").is_dir() else []
    for lib in ("lib", "lib64"):
        found += sorted((venv / lib).glob("python*/site-packages"), key=lambda p: (p.parent.name != here, p.parent.name))
    unique: list[Path] = []
    for path in found:
        if path.is_dir() and path.resolve() not in {p.resolve() for p in unique}:
            unique.append(path)
    return unique


@dataclass
class ProjectProgram:
    """A project's program as the Python language host runs it, callable under the mocks.

    Attributes:
        root: the project directory.
        file: the program file that runs (``<main dir>/__main__.py`` or the ``main`` file).
        pwd: the working directory of the run (the program's directory).
        entry: what ``runpy.run_path`` is given (the directory, or the file).
        venv: the project's virtualenv (None: the ambient interpreter, i.e. only hybridgpu's).
        site_dirs: its ``site-packages`` directories, importable after hybridgpu's own during the run.
    """

    root: Path
    file: Path
    pwd: Path
    entry: Path
    venv: Path | None = None
    site_dirs: tuple[Path, ...] = ()
    #: The configured virtualenv when it does not exist yet (``(shown path, Pulumi.yaml field)``):
    #: the program then runs in hybridgpu's environment, and a module only the virtualenv would
    #: provide fails with a fix that names it.
    missing_venv: tuple[str, str] | None = None

    _entered: bool = field(default=False, init=False, repr=False)

    @contextlib.contextmanager
    def environment(self) -> Iterator[None]:
        """The program's imports for the block: its directory (and the project directory) first on
        ``sys.path``, its virtualenv's ``site-packages`` after hybridgpu's own (``site.addsitedir``
        appends, and reads their ``.pth`` files). Afterwards ``sys.path``, the import hooks and the
        path importer cache are restored and the modules loaded from the project or its virtualenv
        are forgotten: each stack runs in a fresh language host under the CLI, so the project's own
        modules (``import vpc``) must register their resources again in the next run.

        Wrap the whole run in it (the program *and* the Pulumi runtime's work after it: resolving a
        resource's outputs reads its class's module, lazily imported SDK modules load then); a
        program called outside it sets this up for its own call only. Re-entering is a no-op.
        """
        if self._entered:
            yield
            return
        saved_path, saved_meta, saved_hooks = list(sys.path), list(sys.meta_path), list(sys.path_hooks)
        saved_cache = dict(sys.path_importer_cache)
        # The language host puts a directory entry first on sys.path (runpy.run_path of a directory);
        # the project directory goes there too, as before, for programs whose `main` is a file.
        for path in dict.fromkeys([str(self.entry.resolve()) if self.entry.is_dir() else None, str(self.root.resolve())]):
            if path and path not in sys.path:
                sys.path.insert(0, path)
        for directory in self.site_dirs:
            site.addsitedir(str(directory))
        before = set(sys.modules)
        self._entered = True
        try:
            yield
        finally:
            self._entered = False
            sys.path[:] = saved_path
            sys.meta_path[:] = saved_meta
            sys.path_hooks[:] = saved_hooks
            sys.path_importer_cache.clear()
            sys.path_importer_cache.update(saved_cache)
            roots = [str(self.root.resolve())] + [str(p.resolve()) for p in ((self.venv,) if self.venv else ())]
            for name in project_modules(set(sys.modules) - before, roots):
                del sys.modules[name]

    def __call__(self) -> None:
        """Run the program once, in its directory (the working directory stays there until the caller
        restores it, as :func:`hybridgpu.shell.preview.run_preview` does after the whole run).
        ``sys.exit(0)`` ends it normally; a non-zero ``sys.exit`` raises :class:`ProgramExit`.

        Raises:
            ProgramExit: the program exited with a non-zero status.
        """
        with self.environment():
            os.chdir(self.pwd)
            try:
                runpy.run_path(str(self.entry), run_name="__main__")
            except SystemExit as exc:
                # As under the Pulumi CLI: exit status 0 ends the program normally (what it registered
                # is checked); any other status fails the run.
                if exc.code is None or exc.code == 0:
                    return
                if isinstance(exc.code, int):
                    raise ProgramExit(exc.code) from None
                raise ProgramExit(1, str(exc.code)) from None


def project_modules(names: set[str], roots: list[str] | str) -> list[str]:
    """The modules among ``names`` loaded from one of ``roots`` (the project directory, its virtualenv)
    but neither from the interpreter's environment (a ``.venv`` inside the project holds the SDKs,
    whose lazily loaded modules must stay) nor hybridgpu itself (a checkout of hybridgpu is its own project)."""
    if isinstance(roots, str):
        roots = [roots]
    environments = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    found = []
    for name in sorted(names):
        file = getattr(sys.modules.get(name), "__file__", None)
        if not file or name.split(".")[0] == "hybridgpu":
            continue
        try:
            where = Path(file).resolve()
        except OSError:
            continue
        if any(where.is_relative_to(r) for r in roots) and not any(where.is_relative_to(env) for env in environments):
            found.append(name)
    return found


def project_program(root: Path, *, own_environment: bool = False) -> ProjectProgram | None:
    """The program the Pulumi CLI would run for the project in ``root``.

    Args:
        root: the project directory (holding ``Pulumi.yaml``).
        own_environment: the project runs in hybridgpu's own interpreter (hybridgpu's project: its
            program is hybridgpu's code), so its virtualenv setting is not read.

    Returns:
        The program, or None when ``Pulumi.yaml`` sets no ``main`` and the project has no ``__main__.py``.

    Raises:
        StackFileError: ``Pulumi.yaml`` is missing or invalid; its runtime is not ``python``; ``main``
            does not exist; the configured virtualenv is not one (each names the file, the field and
            the fix). A configured virtualenv that does not exist yet is not an error (the CLI
            creates it): :attr:`ProjectProgram.missing_venv` records it.
    """
    project = read_project(root)
    if project.runtime != "python":
        raise _error(
            project, "runtime",
            f"{project.runtime}: hybridgpu check runs Python programs (runtime: python); this project's program would run in the {project.runtime} language host",
            "check a Python project, or run `pulumi preview --policy-pack` with the published pack for this one",
        )
    if project.main is None:
        entry = root
        file = root / "__main__.py"
        if not file.is_file():
            return None
    else:
        entry = root / project.main
        if entry.is_dir():
            file = entry / "__main__.py"
            if not file.is_file():
                raise _error(project, "main", f"{project.main!r} is a directory without __main__.py", "point `main` at the directory holding the program's __main__.py, or at the program file")
        elif entry.is_file():
            file = entry
        else:
            raise _error(project, "main", f"{project.main!r} does not exist (relative to {root}); the Pulumi CLI stops with \"project 'main' could not be read\"", "point `main` at the program's directory or file, or remove it")
    pwd = entry if entry.is_dir() else entry.parent
    program = ProjectProgram(root=root, file=file, pwd=pwd, entry=entry)
    if own_environment:
        return program
    venv, field = project_virtualenv(project, root, pwd)
    if venv is None:
        return program
    shown = os.path.relpath(venv, root) if venv.is_relative_to(root) else str(venv)
    if not venv.is_dir():
        # The CLI creates a missing virtualenv and installs requirements.txt into it before the
        # program runs (pulumi/pulumi sdk/python/toolchain/pip.go ``EnsureVenv``, v3.259.0): a fresh
        # clone in CI has none. The program runs with hybridgpu's packages; an import only the
        # virtualenv would satisfy fails closed (:func:`missing_module_fix` names the virtualenv).
        program.missing_venv = (shown, field)
        return program
    dirs = site_packages(venv)
    if not dirs:
        raise _error(project, field, f"{shown} is not a virtualenv (no lib/python*/site-packages)", VENV_FIX.format(venv=shown))
    program.venv, program.site_dirs = venv, tuple(dirs)
    return program


def missing_module(exc: BaseException) -> ModuleNotFoundError | None:
    """The :class:`ModuleNotFoundError` in ``exc``'s cause/context chain, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ModuleNotFoundError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def missing_module_fix(program: Any, module: str) -> str:
    """The fix for a module the program imports that neither environment has."""
    top = module.split(".")[0]
    venv = getattr(program, "venv", None)
    missing = getattr(program, "missing_venv", None)
    if missing is not None:
        shown, field = missing
        return (
            f"the project's virtualenv {shown} ({field} in Pulumi.yaml) does not exist yet, so the program ran with hybridgpu's "
            f"packages only: {VENV_FIX.format(venv=shown)} before the check (the Pulumi CLI creates it on its first run)"
        )
    if venv is not None:
        return f"add the package that provides {top!r} to requirements.txt and install it into the project's virtualenv {venv} (`pulumi install`)"
    return (
        f"add the package that provides {top!r} to requirements.txt, create the project's virtualenv and point Pulumi.yaml at it "
        "(`runtime: {name: python, options: {virtualenv: venv}}`, then `pulumi install`); "
        "hybridgpu check imports a project's packages from its virtualenv"
    )


__all__ = [
    "ProgramExit", "ProjectProgram", "missing_module", "missing_module_fix", "project_modules",
    "project_program", "project_virtualenv", "site_packages",
]
