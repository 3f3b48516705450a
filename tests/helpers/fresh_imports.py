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

Inside a server, modules are checked in groups (:func:`anchor_groups`): a group server first imports
an *anchor* module that every module of the group imports anyway (e.g. ``hybridgpu.config``), then
forks the group's children, so the package's own heavy imports (pydantic models) are not repeated
in every child either; the grouping's argument is in :func:`anchor_groups` (2026-11-27: the check
of 204 modules went from 36 s to 15 s on 2 cores).

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
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.helpers import ROOT

#: The server: preloads the libraries named in argv[1] (JSON list); then, per group of argv[2] (JSON list
#: of ``[anchor or null, [modules], [the anchor's closure]]``), forks a group server that imports the anchor and forks one
#: child per module, at most argv[3] at a time. Each child imports its module and writes
#: ``[ok, pulumi modules loaded, error text]`` as JSON to a pipe. Prints ``{"results": {module: [...]}, ...}``.
_SERVER = r"""
import importlib, json, os, sys, traceback
preload, groups, width = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])

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

def forked(body):
    # Run body() in a forked process; return what it wrote (JSON) to the pipe.
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            out = body()
        except BaseException:
            out = {"crash": traceback.format_exc()}
        with os.fdopen(write, "w") as pipe:
            pipe.write(json.dumps(out))
        os._exit(0)
    os.close(write)
    return pid, read

def import_one(module):
    try:
        importlib.import_module(module)
        return [True, pulumi_loaded(), ""]
    except BaseException:
        return [False, pulumi_loaded(), traceback.format_exc()]

def group_server(anchor, modules, allowed):
    # A sub-server: import the group's anchor (every module of the group imports it), then one child per module.
    # The anchor must load no module of the package outside `allowed` (its static closure): else the group
    # is checked without it.
    if anchor:
        try:
            importlib.import_module(anchor)
        except BaseException:
            return {"anchor_failed": traceback.format_exc()}
        package = anchor.split(".")[0]
        extra = sorted(m for m in sys.modules if m.split(".")[0] == package and m not in allowed)
        if extra:
            return {"anchor_failed": "the anchor loaded modules outside its static closure: " + ", ".join(extra[:5])}
    results, running, pending = {}, {}, list(modules)
    while pending or running:
        while pending and len(running) < width:
            module = pending.pop(0)
            pid, read = forked(lambda m=module: import_one(m))
            running[pid] = (module, read)
        pid, status = os.wait()
        module, read = running.pop(pid)
        with os.fdopen(read) as pipe:
            text = pipe.read()
        results[module] = json.loads(text) if text else [False, [], f"child exited with status {status} and no report"]
    return {"results": results}

results, retry, fallbacks = {}, [], {}
for anchor, modules, allowed in groups:
    pid, read = forked(lambda a=anchor, m=modules, w=set(allowed): group_server(a, m, w))
    with os.fdopen(read) as pipe:  # read before waiting: the results may not fit the pipe's buffer
        out = json.loads(pipe.read() or '{"crash": "the group server wrote nothing"}')
    os.waitpid(pid, 0)
    if "results" in out:
        results.update(out["results"])
    else:  # the anchor did not import, or loaded more than its closure: check the group without it
        retry += modules
        fallbacks[anchor] = (out.get("anchor_failed") or out.get("crash") or "")[-500:]
if retry:
    results.update(group_server(None, retry, set())["results"])
print(json.dumps({"results": results, "preloaded_pulumi": already, "preload_errors": preload_errors, "fallbacks": fallbacks}))
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


def _package_imports(name: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The package's modules that ``name`` (source ``path``) imports when it is imported: its module-level
    ``import`` statements (also inside ``if``/``try``/``with`` and class bodies, not inside functions, which
    run later), a ``from X import y`` naming submodule ``X.y`` when there is one, and every parent package
    of each (Python imports those first)."""
    package = name.split(".")[0]
    is_package = modules[name].name == "__init__.py"
    found: set[str] = set()

    def visit(nodes: Iterable[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.split(".")[0] == package)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] == package:
                    found.add(target)
                    found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules)
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    visit(inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)).body)
    with_parents = {".".join(m.split(".")[:i]) for m in found for i in range(1, m.count(".") + 2)}
    return {m for m in with_parents if m in modules and m != name}


def anchor_groups(
    checked: Iterable[str], modules: Mapping[str, Path], anchors: Iterable[str], max_groups: int = 6
) -> list[tuple[str | None, list[str], list[str]]]:
    """The ``checked`` modules grouped by an *anchor* (one of ``anchors``) each of them imports anyway
    (``[(anchor, modules, closure)]``, the last group with anchor None), so a group server can import the
    anchor once and fork the group's children from there; ``closure``: the anchor and what it imports (the
    group server checks that importing the anchor loaded nothing else of the package, else it checks the
    group without the anchor). ``modules``: every module of the package -> its source.

    Why this checks the same thing: a child still imports its module first thing in a fresh process,
    with only the anchor and what the anchor imports (its closure, from the module-level imports of
    the sources: :func:`_package_imports`) already loaded, and that closure is part of what the module
    imports anyway. Preloading it can hide no missing import of the module (what the module does not
    import, directly or through others, is not preloaded), and no import-order dependence of a
    preloaded module (each is checked in its own child, where it is not preloaded: a module is never in
    a group whose anchor closure contains it). Anchors are picked greedily by the import work they save
    (group size x closure size).
    """
    graph = {name: _package_imports(name, path, modules) for name, path in modules.items()}
    closures: dict[str, set[str]] = {}
    for name in modules:
        seen: set[str] = set()
        stack = list(graph[name])
        while stack:
            item = stack.pop()
            if item not in seen:
                seen.add(item)
                stack.extend(graph.get(item, ()))
        closures[name] = seen - {name}
    left = sorted(checked)
    candidates = sorted(anchors)
    groups: list[tuple[str | None, list[str], list[str]]] = []
    while left and len(groups) < max_groups:
        best, best_members, best_gain = None, [], 0
        for anchor in candidates:
            loaded = closures[anchor] | {anchor}
            members = [m for m in left if m not in loaded and loaded <= closures[m]]
            gain = len(members) * len(loaded)
            if gain > best_gain:
                best, best_members, best_gain = anchor, members, gain
        if best is None or len(best_members) < 2:
            break
        groups.append((best, best_members, sorted(closures[best] | {best})))
        left = [m for m in left if m not in best_members]
    groups.append((None, left, []))
    return groups


def _is_pulumi(name: str) -> bool:
    top = name.split(".")[0]
    return top == "pulumi" or top.startswith("pulumi_")


def _serve(preload: list[str], groups: list[tuple[str | None, list[str], list[str]]], width: int, path: Path | None) -> dict:
    # One BLAS thread: numpy is preloaded, and a thread pool does not survive a fork.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", _SERVER, json.dumps(preload), json.dumps(groups), str(width)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"the import server failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: Anchors of the last :func:`import_each_alone` whose group was checked without them (anchor -> why).
FALLBACKS: dict[str, str] = {}


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
    jobs = [(core_preload, anchor_groups(core, modules, core)), (all_preload, anchor_groups(rest, modules, modules))]
    with ThreadPoolExecutor(max_workers=2) as pool:
        core_run, rest_run = pool.map(lambda job: _serve(*job, width, path), jobs)
    if core_run["preloaded_pulumi"]:
        raise AssertionError(
            f"a library the core imports loads Pulumi ({core_run['preloaded_pulumi'][:5]}); "
            f"libraries imported by core modules: {core_preload}"
        )
    FALLBACKS.clear()
    FALLBACKS.update({a: why for run in (core_run, rest_run) for a, why in run["fallbacks"].items()})
    return {m: tuple(v) for run in (core_run, rest_run) for m, v in run["results"].items()}  # type: ignore[misc]
