"""Import each module of a package alone, in its own fresh process, fast (tests/test_layers.py).

One ``python -c 'import <module>'`` per module (148 modules) spent most of its time importing the
same third-party libraries again in every interpreter (pydantic, numpy, matplotlib, the Pulumi
SDKs: about two thirds of the import time of ``hybridgpu.cli.main``, ``python -X importtime``,
2026-11-26). Here a server interpreter imports those libraries once and forks one child per
module (POSIX ``fork``): each child starts with no ``hybridgpu`` module loaded, imports its module
first thing and reports. What a child checks is what the fresh interpreter checked for the
package's own modules (no import-order dependence between them, no import cycle among them, no
error at import); the libraries preloaded are only the ones the package's own ``import``
statements name, read from its sources (nothing a module does not ask for is loaded for it).

Two servers: one for the core, which preloads only what core modules import and never a Pulumi
SDK (so a child that ends up with ``pulumi``/``pulumi_*`` in ``sys.modules`` loaded it itself, or
through a library the core imports: both are reported), and one for the rest, which preloads
everything the package imports, the Pulumi SDKs included.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.helpers import ROOT

#: The server: preloads the modules named in argv[1] (JSON list), then forks one child per module
#: of argv[2] (JSON list), at most argv[3] at a time. Each child imports its module and writes
#: ``[ok, pulumi modules loaded, error text]`` as JSON to a pipe. Prints ``{module: [...]}``.
_SERVER = r"""
import importlib, json, os, sys, traceback
preload, modules, width = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])

def pulumi_loaded():
    return sorted(m for m in sys.modules if m.split('.')[0] == 'pulumi' or m.startswith('pulumi_'))

preload_errors = {}
for name in preload:
    try:
        importlib.import_module(name)
    except Exception as exc:  # the child importing the module that needs it reports it
        preload_errors[name] = repr(exc)
already = pulumi_loaded()
sys.stdout.flush(); sys.stderr.flush()
results, running = {}, {}

def start(module):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(module)
            out = [True, pulumi_loaded(), ""]
        except BaseException:
            out = [False, pulumi_loaded(), traceback.format_exc()]
        with os.fdopen(write, "w") as pipe:
            pipe.write(json.dumps(out))
        os._exit(0)
    os.close(write)
    running[pid] = (module, read)

def reap():
    pid, status = os.wait()
    module, read = running.pop(pid)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    results[module] = json.loads(text) if text else [False, [], f"child exited with status {status} and no report"]

pending = list(modules)
while pending or running:
    while pending and len(running) < width:
        start(pending.pop(0))
    reap()
print(json.dumps({"results": results, "preloaded_pulumi": already, "preload_errors": preload_errors}))
"""


def external_imports(package: Path, files: Iterable[Path]) -> list[str]:
    """Absolute module names the ``import`` statements of ``files`` name outside ``package`` (sorted).

    Includes the standard library; ``__future__`` excluded. Imports inside functions count too
    (they are what the module asks for, sooner or later).
    """
    names: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    return sorted(n for n in names if n.split(".")[0] not in {package.name, "__future__"})


def _is_pulumi(name: str) -> bool:
    top = name.split(".")[0]
    return top == "pulumi" or top.startswith("pulumi_")


def _serve(preload: list[str], modules: list[str], width: int, path: Path | None) -> dict:
    # One BLAS thread: numpy is preloaded, and a thread pool does not survive a fork.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", _SERVER, json.dumps(preload), json.dumps(modules), str(width)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"the import server failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def import_each_alone(
    package: Path, modules: dict[str, Path], is_core: Callable[[str], bool], *, path: Path | None = None
) -> dict[str, tuple[bool, list[str], str]]:
    """``module -> (imported, Pulumi modules then loaded, error text)`` of importing each module first
    in a fresh process (see the module docstring).

    Args:
        package: the package directory (``hybridgpu/``).
        modules: module name -> its source file.
        is_core: True for modules that must load no Pulumi SDK; their server preloads none.
        path: a directory to put first on the servers' ``sys.path`` (the project root, their
            working directory, is on it anyway).

    Raises:
        AssertionError: a server could not start, or preloading the core's libraries loaded Pulumi
            (the message names the libraries).
    """
    core = [m for m in modules if is_core(m)]
    rest = [m for m in modules if not is_core(m)]
    core_preload = [n for n in external_imports(package, (modules[m] for m in core)) if not _is_pulumi(n)]
    all_preload = external_imports(package, modules.values())
    width = max(1, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=2) as pool:
        core_run, rest_run = pool.map(lambda job: _serve(*job, width, path), [(core_preload, core), (all_preload, rest)])
    if core_run["preloaded_pulumi"]:
        raise AssertionError(
            f"a library the core imports loads Pulumi ({core_run['preloaded_pulumi'][:5]}); "
            f"libraries imported by core modules: {core_preload}"
        )
    return {m: tuple(v) for run in (core_run, rest_run) for m, v in run["results"].items()}  # type: ignore[misc]
