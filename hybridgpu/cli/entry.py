"""The process entry of the command line (console script ``hybridgpu`` and ``python -m hybridgpu``).

:func:`main` sets the garbage collector up for a short batch run, then imports and runs the
joined app (:mod:`hybridgpu.cli.main`). It is its own module so that the collector is tuned
before the first import of the Pulumi SDK (``import hybridgpu.cli.main`` alone takes some
0.7 s, and the collector's full passes start during it), and so that importing the CLI (tests,
``from hybridgpu.cli import app``) changes no process-wide setting.
"""

from __future__ import annotations

import atexit
import gc
import platform

#: Collector thresholds of the command line (generation 0 allocations, then generation 1 and 2
#: passes). CPython's defaults are (700, 10, 10) (Python docs, ``gc.set_threshold``); mypy runs
#: with (200000, 30, 30) for the same reason (python/mypy ``mypy/build.py``, "Run gc less
#: frequently, as otherwise we can spend a large fraction of cpu in gc"). A command is a short
#: run whose objects (the SDK's modules, a preview's resources, outputs and futures) mostly live
#: until it ends, so each full pass walks them for nothing. Measured 2026-11-24 on 2 cores
#: (benchmarks/README.md): ``hybridgpu preview prod`` 2.22 s -> 1.73 s (0.52 s in the collector
#: -> 0.11 s), ``hybridgpu check`` 4.21 s -> 3.42 s, peak RSS 173 -> 174 MB and 188 -> 197 MB.
GC_THRESHOLDS = (200_000, 30, 30)


def tune_gc() -> None:
    """Raise the collector's thresholds to :data:`GC_THRESHOLDS` (CPython only) and freeze the heap at exit.

    At exit CPython's final collection would walk every object the command left behind (about
    0.45 s after one preview, 0.7 s after ``hybridgpu check`` of the four example stacks,
    measured 2026-11-24); freezing the heap skips that walk (the operating system frees the
    memory; the other atexit handlers and the flushing of stdout/stderr still run).
    Reference counting still frees acyclic garbage at once; only cycles wait longer.
    """
    if platform.python_implementation() == "CPython":
        gc.set_threshold(*GC_THRESHOLDS)
    atexit.register(gc.freeze)


def main() -> None:  # pragma: no cover - console entry point (run as a process in tests/test_entry.py)
    """Run the command line: :func:`tune_gc`, then the joined typer app (exit codes as :mod:`hybridgpu.cli.main`)."""
    tune_gc()
    from hybridgpu.cli.main import app

    app()
