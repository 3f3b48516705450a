"""The garbage collector in hybridgpu's processes (pure, no Pulumi, imports nothing of hybridgpu).

* :func:`gc_paused`: the cyclic collector paused around work that builds many short-lived objects
  and (almost) no reference cycles: parsing YAML (:mod:`hybridgpu.datafile`), validating an
  inventory (:mod:`hybridgpu.inventory.loader`).
* :func:`promote_to_oldest`: what such work built and keeps moved to the oldest generation at once
  (the validated inventory, :mod:`hybridgpu.inventory.loader`); :func:`builds_long_lived` does both
  for a function (the on-prem plan, :func:`hybridgpu.onprem.plan_onprem`).
* :func:`tune_for_batch_run`: the settings of a process that runs one command and exits: the
  command line (:mod:`hybridgpu.cli.entry`) and the Pulumi program (the project's ``__main__.py``,
  which the Pulumi CLI's Python language host runs once per ``pulumi preview``/``up``).

CPython's collector runs a pass over the young objects every 700 net allocations of containers,
and a full pass over every object the process holds after ten passes of the middle generation
(Python docs, ``gc.set_threshold``; CPython 3.11 ``Modules/gcmodule.c``). A preview's objects
(the SDK's modules, resources, outputs, futures) mostly live until the process ends, so those
passes walk them for nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import platform
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

#: Collector thresholds of a batch process (generation 0 allocations, then generation 1 and 2
#: passes). CPython's defaults are (700, 10, 10); mypy runs with (200000, 30, 30) for the same
#: reason (python/mypy ``mypy/build.py``: "Run gc less frequently, as otherwise we can spend a
#: large fraction of cpu in gc"). Measured 2026-11-24 on 2 cores (benchmarks/README.md, fourth
#: session): ``hybridgpu preview prod`` 2.03-2.08 s -> 1.72-1.80 s, ``hybridgpu check`` of the four
#: example stacks 4.09-4.16 s -> 3.50-3.57 s, a 1,000-host on-prem preview 18.8 s -> 10.7 s; peak
#: RSS +1 to +10 MB for those three, +15 MB (526 -> 541 MB) for the 1,000 hosts.
BATCH_THRESHOLDS = (200_000, 30, 30)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block (re-enabled on the way out if it was on).

    Parsing YAML builds a node for every scalar, mapping and list, all alive until the document
    is constructed, and (almost) no reference cycles: the collector's passes over them are wasted
    work, and they count towards its later full passes over everything the process holds. A
    50-NodePool stack file (17 KB) made 7 passes; a 10,000-host inventory spent about as long in
    the collector as in parsing and validation (``benchmarks/inventory_bench.py``). Reference
    counting still frees everything. Process-wide, as the collector is: overlapping pauses in
    several threads leave it enabled once the first that found it enabled leaves.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def promote_to_oldest() -> None:
    """Move every object the collector tracks into its oldest generation without examining it (CPython only).

    For the end of work that built a large structure meant to live on (a validated 10,000-host
    inventory is about 300,000 tracked objects): left in the young generation, the next young pass
    walks all of it (the first allocation after :func:`gc_paused` re-enables the collector), and a
    middle-generation pass walks it again before it reaches the oldest generation, about 0.1 s and
    0.3 s for those 10,000 hosts (measured 2026-11-27, ``benchmarks/inventory_bench.py``). Nothing
    is collected or lost: the objects are examined at the next full collection, like every
    long-lived object; reference counting frees them as before. ``gc.freeze()`` then
    ``gc.unfreeze()`` is exactly this move (Python docs, ``gc``: freeze moves every tracked object
    to the permanent generation, unfreeze moves them back "into the oldest generation"), and it
    does not visit the objects: 5 us with 300,000 young ones (CPython 3.11.7, 2026-11-27). Does
    nothing while someone else keeps objects frozen (``gc.get_freeze_count()`` > 0), so as not to
    unfreeze them.
    """
    if platform.python_implementation() == "CPython" and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def builds_long_lived(function: Callable[P, R]) -> Callable[P, R]:
    """Decorate a function whose result lives on: it runs under :func:`gc_paused`, then :func:`promote_to_oldest`.

    For builders of large, acyclic results (the on-prem plan of every host: ``hybridgpu.onprem.plan_onprem``).
    Nothing is promoted when the function raises.
    """

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with gc_paused():
            result = function(*args, **kwargs)
            promote_to_oldest()
            return result

    return wrapper


def tune_for_batch_run() -> None:
    """Set :data:`BATCH_THRESHOLDS` (CPython only) and freeze the heap at exit.

    Call it first thing in a process's entry point, before the Pulumi SDK is imported (its import
    alone makes several full passes). At exit CPython's final collection would walk every object
    the process left behind (about 0.45 s after one preview, 0.7 s after ``hybridgpu check`` of the
    four example stacks, measured 2026-11-24); freezing the heap skips that walk (the operating
    system frees the memory; the other atexit handlers and the flushing of stdout/stderr still
    run). Reference counting still frees acyclic garbage at once; only cycles wait longer.
    """
    if platform.python_implementation() == "CPython":
        gc.set_threshold(*BATCH_THRESHOLDS)
    atexit.register(gc.freeze)
