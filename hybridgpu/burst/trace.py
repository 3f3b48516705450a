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
``pods``           optional, with ``gpus_per_pod``: the job's pod set as Kueue sees it (its
                   pods, all admitted together or none: a gang). Empty: one unshaped block
                   of ``gpus`` GPUs
``gpus_per_pod``   optional, with ``pods``: GPUs each pod requests (integer >= 1);
                   ``pods x gpus_per_pod`` must equal ``gpus``. A pod runs on one node, so a
                   cloud node of ``G`` GPUs holds ``G // gpus_per_pod`` of the job's pods
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

import yaml

from hybridgpu.burst.models import BurstClass
from hybridgpu.datafile import DataFileError, describe_yaml_error, load_unique_yaml_all, unreadable_issue
from hybridgpu.errors import Issue
from hybridgpu.workloads import PodSetError, pod_sets, runtimes_of

REQUIRED_COLUMNS = ("submit_s", "gpus", "duration_s")
OPTIONAL_COLUMNS = ("checkpoint_s", "burst", "queue", "pods", "gpus_per_pod")
#: The job-shape columns (:class:`Job` ``pods`` and ``gpus_per_pod``): both or neither.
SHAPE_COLUMNS = ("pods", "gpus_per_pod")
#: Values of the ``queue`` column: which LocalQueue a split-queues user submits to.
QUEUE_TARGETS = ("local", "burst")
BURST_CLASSES: tuple[str, ...] = get_args(BurstClass)


class TraceError(DataFileError):
    """A demand trace is invalid; every issue names the file, the line and the column."""

    what = "demand trace"


class JobShapeError(DataFileError):
    """A job file cannot be turned into trace rows; every issue names the file, the job and the key path."""

    what = "job file"


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
        pods: pods of the job's pod set (a gang), or None (unshaped: GPUs placed freely on whole nodes).
        gpus_per_pod: GPUs per pod, or None; with ``pods``, ``pods x gpus_per_pod == gpus``.
    """

    submit_s: float
    gpus: int
    duration_s: float
    checkpoint_s: float | None
    burst: str
    queue: str = "local"
    pods: int | None = None
    gpus_per_pod: int | None = None


def _number(text: str, *, integer: bool = False) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    if integer and value != int(value):
        raise ValueError("not a whole number")
    return value


def _shape(cells: dict[str, str], gpus: float | None, file: str, where: str, issues: list[Issue]) -> tuple[int | None, int | None]:
    """The row's ``(pods, gpus_per_pod)`` (both None when the row gives neither); problems go to ``issues``."""
    raw = {c: cells.get(c, "") for c in SHAPE_COLUMNS}
    if not any(raw.values()):
        return None, None
    parsed: dict[str, int] = {}
    for col, what in (("pods", "the pods of the job's pod set"), ("gpus_per_pod", "the GPUs each pod requests")):
        if not raw[col]:
            other = "gpus_per_pod" if col == "pods" else "pods"
            fix = f"give both `pods` and `gpus_per_pod` (pods x gpus_per_pod = gpus), or leave both empty; `{other}` is {raw[other]!r}"
            issues.append(Issue.in_entry(file, where, col, "missing: the job's shape needs both columns", fix))
            continue
        try:
            value = _number(raw[col], integer=True)
            if value < 1:
                raise ValueError("must be >= 1")
            parsed[col] = int(value)
        except ValueError as exc:
            issues.append(Issue.in_entry(file, where, col, f"{raw[col]!r}: {exc}", f"write {what}, a whole number >= 1"))
    if len(parsed) < 2:
        return None, None
    pods, per_pod = parsed["pods"], parsed["gpus_per_pod"]
    if gpus is not None and pods * per_pod != gpus:
        fix = f"set `gpus` to {pods * per_pod} (pods x gpus_per_pod), or correct the shape"
        issues.append(Issue.in_entry(file, where, "gpus", f"{int(gpus)} is not pods x gpus_per_pod = {pods} x {per_pod} = {pods * per_pod}", fix))
    return pods, per_pod


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
        shape = _shape(cells, values.get("gpus"), file, where, issues)
        if len(issues) == row_issues:
            job = Job(float(values["submit_s"] or 0.0), int(values["gpus"] or 0), float(values["duration_s"] or 0.0), checkpoint, burst, queue, *shape)
            jobs.append(job)
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
    """Write ``jobs`` as trace CSV to ``path`` (five columns; the ``queue`` column too when a job has ``queue: burst``
    or a shape, and ``pods``, ``gpus_per_pod`` when a job has a shape)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    with_shape = any(j.pods is not None for j in jobs)
    with_queue = with_shape or any(j.queue != "local" for j in jobs)
    writer.writerow([*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS[: 5 if with_shape else 3 if with_queue else 2]])
    for j in jobs:
        row: list[object] = [f"{j.submit_s:.12g}", j.gpus, f"{j.duration_s:.12g}", "" if j.checkpoint_s is None else f"{j.checkpoint_s:.12g}", j.burst]
        if with_queue:
            row.append(j.queue)
        if with_shape:
            row += ["" if j.pods is None else j.pods, "" if j.gpus_per_pod is None else j.gpus_per_pod]
        writer.writerow(row)
    Path(path).write_text(out.getvalue())


def job_file_shapes(path: str | Path) -> list[tuple[str, int, int]]:
    """The trace shape of every job in a Kubernetes job file, from Kueue's pod sets (:func:`hybridgpu.workloads.pod_sets`).

    Each job object (batch Job, JobSet, PyTorchJob, TrainJob with the file's TrainingRuntimes, RayJob,
    RayCluster, RayService) gives ``(label, pods, gpus_per_pod)``: the pods of its pod sets that request
    ``nvidia.com/gpu`` (Kueue's ``count``), all of one GPU size. Other objects are skipped.

    Raises:
        JobShapeError: the file is unreadable or not YAML; a job has no GPU pod, GPU pods of different sizes (the
            trace has one size per job: write the rows by hand), or a count of the wrong type (key path named);
            or the file holds no job at all.
    """
    shown = str(path)
    try:
        docs = load_unique_yaml_all(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise JobShapeError([unreadable_issue(shown, exc, "the job file")]) from None
    except yaml.YAMLError as exc:
        raise JobShapeError([Issue.in_entry(shown, None, None, f"not valid YAML: {describe_yaml_error(exc)}", "fix the YAML syntax", "yaml")]) from None
    runtimes = runtimes_of(docs)
    out: list[tuple[str, int, int]] = []
    issues: list[Issue] = []
    for n, doc in enumerate(docs, start=1):
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        label = f"{doc.get('kind')} {name or f'(document {n})'}"
        try:
            sets = pod_sets(doc, runtimes)
        except PodSetError as exc:
            issues.append(Issue.in_entry(shown, label, exc.key, exc.problem, "write the count as a whole number, as the job's API expects"))
            continue
        if sets is None:
            continue
        gpu_sets = [ps for ps in sets if ps.gpus() > 0]
        sizes = sorted({ps.gpus() for ps in gpu_sets})
        if not gpu_sets:
            issues.append(Issue.in_entry(shown, label, None, "no pod requests nvidia.com/gpu, so the job has no place in a GPU trace", "give its GPU containers `resources.limits.nvidia.com/gpu`, or leave the job out"))
        elif len(sizes) > 1:
            detail = ", ".join(f"{ps.name}: {ps.count} x {ps.gpus()}" for ps in gpu_sets)
            issues.append(Issue.in_entry(shown, label, None, f"its GPU pod sets differ in GPUs per pod ({detail}); a trace row has one size", "write its rows by hand (e.g. one per pod set), or give its pods one size"))
        else:
            out.append((label, sum(ps.count for ps in gpu_sets), sizes[0]))
    if issues:
        raise JobShapeError(issues)
    if not out:
        raise JobShapeError([Issue.in_entry(shown, None, None, "no job object (Job, JobSet, PyTorchJob, TrainJob, RayJob, RayCluster, RayService)", "name a job file, e.g. docs/examples/eks-pytorchjob.yaml")])
    return out


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
