"""Demand traces for the burst simulator: a CSV loader with precise errors, and a generator.

A trace is a CSV file with a header row; ``#`` lines are comments. Columns:

=================  ========================================================================
``submit_s``       seconds from the start of the trace when the job is submitted (>= 0, float)
``gpus``           GPUs the job needs at once (integer >= 1)
``duration_s``     seconds of work on those GPUs (> 0, float)
``checkpoint_s``   seconds between checkpoints (> 0); empty or ``none``: the job never
                   checkpoints (it must not run on spot)
``burst``          optional: ``spot``, ``on-demand`` or ``none`` (on-prem only). Default:
                   ``spot`` when the job checkpoints, ``on-demand`` otherwise
``queue``          optional, read by the split-queues topology only: ``local`` (the job is
                   submitted to ``<queue>`` and runs on-prem) or ``burst`` (``<queue>-burst``:
                   it runs in EKS only; not with ``burst: none``). Default: ``local``
=================  ========================================================================

A trace needs at least one job: a header-only file is refused.

Rows need not be sorted; :func:`load_trace` sorts them by submission time (stable).
:func:`generate_trace` makes a reproducible synthetic trace (diurnal and weekly arrival rate,
a mix of job sizes and durations) for the samples in ``examples/traces/`` and the benchmark.
"""

from __future__ import annotations

import csv
import io
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from hybridgpu.burst.models import BurstClass
from hybridgpu.datafile import DataFileError, unreadable_issue
from hybridgpu.errors import Issue

REQUIRED_COLUMNS = ("submit_s", "gpus", "duration_s")
OPTIONAL_COLUMNS = ("checkpoint_s", "burst", "queue")
#: Values of the ``queue`` column: which LocalQueue a split-queues user submits to.
QUEUE_TARGETS = ("local", "burst")
BURST_CLASSES: tuple[str, ...] = get_args(BurstClass)


class TraceError(DataFileError):
    """A demand trace is invalid; every issue names the file, the line and the column."""

    what = "demand trace"


@dataclass(frozen=True, slots=True)
class Job:
    """One job of a trace.

    Attributes:
        submit_s: submission time, seconds from the trace start.
        gpus: GPUs needed at once.
        duration_s: seconds of work.
        checkpoint_s: seconds between checkpoints, or None (never checkpoints).
        burst: where it may go beyond on-prem: ``spot``, ``on-demand`` or ``none``.
        queue: split-queues only: ``local`` (``<queue>``, on-prem) or ``burst`` (``<queue>-burst``, EKS).
    """

    submit_s: float
    gpus: int
    duration_s: float
    checkpoint_s: float | None
    burst: str
    queue: str = "local"


def _number(text: str, *, integer: bool = False) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    if integer and value != int(value):
        raise ValueError("not a whole number")
    return value


def parse_trace(text: str, file: str) -> list[Job]:
    """Parse trace CSV ``text`` (named ``file`` in errors) into jobs sorted by submission time.

    Raises:
        TraceError: every problem at once: missing or unknown columns, and per row the line
            number, the column and what is wrong (not a number, out of range, unknown class,
            ``burst: spot`` without checkpoints).
    """
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        fix = "start the file with the header line `submit_s,gpus,duration_s[,checkpoint_s][,burst]`, then one job per line"
        raise TraceError([Issue.in_entry(file, None, None, "no header row", fix, "header")])
    header_line, header = lines[0]
    columns = [c.strip() for c in next(csv.reader([header]))]
    issues: list[Issue] = []
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    unknown = [c for c in columns if c not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if missing:
        fix = f"add the column(s) {', '.join(missing)} to the header (required: {', '.join(REQUIRED_COLUMNS)})"
        issues.append(Issue.in_entry(file, f"line {header_line}", ", ".join(missing), "required column(s) missing from the header", fix, "header"))
    if unknown:
        fix = f"remove or rename the column(s); allowed: {', '.join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)}"
        issues.append(Issue.in_entry(file, f"line {header_line}", ", ".join(unknown), "unknown column(s)", fix, "header"))
    if issues:
        raise TraceError(issues)
    index = {c: i for i, c in enumerate(columns)}
    jobs: list[Job] = []
    reader = csv.reader(io.StringIO("\n".join(line for _, line in lines[1:])))
    for (lineno, _), row in zip(lines[1:], reader):
        where = f"line {lineno}"
        if len(row) != len(columns):
            fix = f"give one value per header column ({', '.join(columns)}); leave optional ones empty, not out"
            issues.append(Issue.in_entry(file, where, None, f"{len(row)} fields, expected {len(columns)} ({', '.join(columns)})", fix))
            continue
        cells = {c: row[i].strip() for c, i in index.items()}
        row_issues = len(issues)
        values: dict[str, float | None] = {}
        for col, integer, low, strict, fix in (
            ("submit_s", False, 0.0, False, "write the submission time in seconds from the trace start, a number >= 0"),
            ("gpus", True, 1.0, False, "write the GPUs the job needs at once, a whole number >= 1"),
            ("duration_s", False, 0.0, True, "write the job's seconds of work, a number > 0"),
        ):
            try:
                value = _number(cells[col], integer=integer)
                if value < low or (strict and value <= low):
                    raise ValueError(f"must be {'>' if strict else '>='} {int(low)}")
                values[col] = value
            except ValueError as exc:
                issues.append(Issue.in_entry(file, where, col, f"{cells[col]!r}: {exc}", fix))
        checkpoint: float | None = None
        raw = cells.get("checkpoint_s", "")
        if raw and raw.lower() != "none":
            try:
                checkpoint = _number(raw)
                if checkpoint <= 0:
                    raise ValueError("must be > 0 (leave empty for a job that never checkpoints)")
            except ValueError as exc:
                fix = "write the seconds between checkpoints (a number > 0), or leave it empty (or `none`) for a job that never checkpoints"
                issues.append(Issue.in_entry(file, where, "checkpoint_s", f"{raw!r}: {exc}", fix))
        burst = cells.get("burst", "") or ("spot" if checkpoint is not None else "on-demand")
        if burst not in BURST_CLASSES:
            issues.append(Issue.in_entry(file, where, "burst", f"{burst!r} is not a burst class", f"use one of {', '.join(BURST_CLASSES)}"))
        elif burst == "spot" and checkpoint is None and not (raw and raw.lower() != "none"):
            message = "spot needs checkpoints (a reclaimed job would restart from zero)"
            issues.append(Issue.in_entry(file, where, "burst", message, "set `checkpoint_s`, or `burst: on-demand`"))
        queue = cells.get("queue", "") or "local"
        if queue not in QUEUE_TARGETS:
            issues.append(Issue.in_entry(file, where, "queue", f"{queue!r} is not a queue target", f"use one of {', '.join(QUEUE_TARGETS)} (or leave it empty: local)"))
        elif queue == "burst" and burst == "none":
            issues.append(Issue.in_entry(file, where, "queue", "a `burst: none` job has no `-burst` queue", "set `queue: local`, or give the job a burst class"))
        if len(issues) == row_issues:
            jobs.append(Job(float(values["submit_s"] or 0.0), int(values["gpus"] or 0), float(values["duration_s"] or 0.0), checkpoint, burst, queue))
    if issues:
        raise TraceError(issues)
    if not jobs:
        fix = "add at least one job line after the header (`submit_s,gpus,duration_s,...`), or generate a trace with `hybridgpu burst trace`"
        raise TraceError([Issue.in_entry(file, f"line {header_line}", None, "the trace has a header but no job", fix, "empty")])
    jobs.sort(key=lambda j: j.submit_s)
    return jobs


def load_trace(path: str | Path) -> list[Job]:
    """Read a trace CSV file (see the module docstring).

    Raises:
        TraceError: unreadable file or any invalid row (file, line and column named).
    """
    shown = str(path)
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError([unreadable_issue(shown, exc, "the trace")]) from None
    return parse_trace(text, shown)


def write_trace(jobs: list[Job], path: str | Path) -> None:
    """Write ``jobs`` as trace CSV to ``path`` (five columns; the ``queue`` column too when a job has ``queue: burst``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    with_queue = any(j.queue != "local" for j in jobs)
    writer.writerow([*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS[: 3 if with_queue else 2]])
    for j in jobs:
        row = [f"{j.submit_s:.12g}", j.gpus, f"{j.duration_s:.12g}", "" if j.checkpoint_s is None else f"{j.checkpoint_s:.12g}", j.burst]
        writer.writerow([*row, j.queue] if with_queue else row)
    Path(path).write_text(out.getvalue())


def generate_trace(
    *,
    jobs: int,
    days: float,
    seed: int = 0,
    sizes: tuple[tuple[int, float], ...] = ((1, 0.35), (2, 0.15), (4, 0.2), (8, 0.25), (16, 0.04), (32, 0.01)),
    median_hours: float = 2.0,
    checkpointing: float = 0.7,
    onprem_only: float = 0.1,
) -> list[Job]:
    """A reproducible synthetic demand trace.

    Arrivals follow a non-homogeneous Poisson process over ``days`` whose rate is higher in
    working hours (x3 from 09:00 to 18:00) and lower at weekends (x0.4), scaled so that about
    ``jobs`` jobs arrive. Sizes are drawn from ``sizes`` (GPUs, weight); durations are
    log-normal with median ``median_hours`` (sigma 1.2, capped at 7 days); a share
    ``checkpointing`` of the jobs checkpoint every 30 minutes (those may use spot); a share
    ``onprem_only`` must stay on-prem.

    Returns:
        Jobs sorted by submission time.
    """
    rng = random.Random(seed)
    horizon = days * 86400.0

    def weight(t: float) -> float:
        day = int(t // 86400) % 7
        hour = (t % 86400) / 3600
        return (3.0 if 9 <= hour < 18 else 1.0) * (0.4 if day >= 5 else 1.0)

    # Average weight over a week: weekdays (9h x 3 + 15h x 1) / 24 = 1.75, weekends x 0.4.
    mean_weight = (5 * 1.75 + 2 * 1.75 * 0.4) / 7
    peak = 3.0
    base_rate = jobs / (horizon * mean_weight)
    size_values = [s for s, _ in sizes]
    size_weights = [w for _, w in sizes]
    out: list[Job] = []
    t = 0.0
    while True:
        # Thinning (Lewis-Shedler) against the peak rate.
        t += rng.expovariate(base_rate * peak)
        if t >= horizon:
            break
        if rng.random() * peak > weight(t):
            continue
        gpus = rng.choices(size_values, size_weights)[0]
        duration = min(7 * 86400.0, median_hours * 3600.0 * math.exp(rng.gauss(0.0, 1.2)))
        duration = max(60.0, round(duration))
        u = rng.random()
        if u < onprem_only:
            checkpoint, burst = None, "none"
        elif u < onprem_only + checkpointing * (1 - onprem_only):
            checkpoint, burst = 1800.0, "spot"
        else:
            checkpoint, burst = None, "on-demand"
        out.append(Job(round(t, 1), gpus, duration, checkpoint, burst))
    return out
