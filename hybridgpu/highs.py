"""HiGHS (``highspy``), the MILP solver of the capacity planner (:mod:`hybridgpu.economics.planner`)
and the MIG layout planner (:mod:`hybridgpu.mig.planner`): one home for starting it quietly.

Nothing here imports Pulumi or another hybridgpu module.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["quiet_highs"]


def _flush_c_stdio() -> None:
    """Flush the C library's stdio buffers (HiGHS writes its log with C/C++ stdio, not Python's)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # pragma: no cover - no libc symbol table (e.g. Windows)
        pass


def quiet_highs():
    """A ``highspy.Highs`` that writes nothing to the console, its banner included.

    highspy 1.16's ``Highs.__init__`` calls ``enableCallbacks()``, a non-const method, so the
    C++ side prints its banner ("Running HiGHS ...") to file descriptor 1 before any option can
    be set (ERGO-Code/HiGHS#1702: the header goes out on the first such call unless
    ``output_flag`` is already false; #2749: setting the flags afterwards does not stop it). That
    banner broke ``hybridgpu cost plan --json | jq`` (issue 14). The instance is therefore built
    with file descriptor 1 pointed at ``os.devnull`` and ``output_flag``/``log_to_console`` set
    to false before it is restored; nothing later writes to the console.

    Returns:
        A ``highspy.Highs`` with ``output_flag = False`` and ``log_to_console = False``.
    """
    import highspy

    sys.stdout.flush()
    _flush_c_stdio()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("log_to_console", False)
            _flush_c_stdio()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return h
