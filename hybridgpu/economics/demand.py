"""Hourly GPU demand profiles: a CSV format, its loader, and a seeded parametric generator.

CSV format (UTF-8, comma-separated, one header line, one row per hour)::

    hour,gpus,checkpointable
    0,40,28
    1,38,30

* ``hour``: 0, 1, 2, ... in order, no gaps (hours since the start of the profile);
* ``gpus``: GPUs busy that hour (a number >= 0; GPU-hours per hour);
* exactly one of ``checkpointable`` (GPUs of that demand whose jobs checkpoint, 0..gpus) or
  ``checkpointable_fraction`` (the same as a fraction 0..1). Checkpointing work may run on spot
  and may wait in a queue; the rest may not.

Lines starting with ``#`` are comments. :func:`load_demand_csv` reports every bad line with
file, line number and field. Nothing here imports Pulumi.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hybridgpu.errors import Issue, IssuesError

__all__ = ["DemandFileError", "DemandProfile", "generate_demand", "load_demand_csv", "write_demand_csv"]

_MAX_ISSUES = 20
_COLUMNS = "hour,gpus,checkpointable"


class DemandFileError(IssuesError):
    """A demand CSV is invalid; every problem found is listed (up to 20).

    Args:
        issues: the problems, each an :class:`~hybridgpu.errors.Issue` built with
            :meth:`~hybridgpu.errors.Issue.on_line`: file, 1-based ``line`` (None: the file as a
            whole), ``field`` (the column), message and fix.
    """

    MAX_SHOWN = None

    def head(self) -> str:
        return f"{self.count_text} in the demand profile (columns: hour,gpus,checkpointable|checkpointable_fraction):"


@dataclass(frozen=True)
class DemandProfile:
    """Hourly GPU demand.

    Attributes:
        gpus: GPUs needed each hour (float array, shape ``(hours,)``, >= 0).
        checkpointable: of those, GPUs whose jobs checkpoint (same shape, 0..gpus).
        source: where it came from (file path or generator parameters), for reports.
    """

    gpus: np.ndarray
    checkpointable: np.ndarray
    source: str = ""

    def __post_init__(self) -> None:
        g = np.asarray(self.gpus, dtype=float)
        c = np.asarray(self.checkpointable, dtype=float)
        if g.ndim != 1 or g.shape != c.shape or g.size == 0:
            raise ValueError(f"gpus and checkpointable must be non-empty 1-D arrays of one length, got {g.shape} and {c.shape}")
        if not (np.isfinite(g).all() and np.isfinite(c).all()):
            raise ValueError("demand values must be finite")
        if (g < 0).any() or (c < 0).any() or (c > g + 1e-9).any():
            raise ValueError("demand must satisfy 0 <= checkpointable <= gpus every hour")
        object.__setattr__(self, "gpus", g)
        object.__setattr__(self, "checkpointable", np.minimum(c, g))

    @property
    def hours(self) -> int:
        """Length of the profile (hours)."""
        return int(self.gpus.size)

    @property
    def gpu_hours(self) -> float:
        """Total demand (GPU-hours)."""
        return float(self.gpus.sum())

    @property
    def peak(self) -> float:
        """Highest hourly demand (GPUs)."""
        return float(self.gpus.max())

    @property
    def floor(self) -> float:
        """Lowest hourly demand (GPUs): what is always needed."""
        return float(self.gpus.min())


def load_demand_csv(path: Path | str) -> DemandProfile:
    """Read a demand CSV (format in the module docstring).

    Raises:
        DemandFileError: unreadable file, missing/unknown columns, a non-numeric, negative or
            out-of-range value, checkpointable above gpus, hours out of order, or no rows.
            Each issue names the file, the line and the field.
    """
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DemandFileError([Issue.on_line(file, None, None, f"cannot read the file: {exc}", "check the path and its permissions; the file must be UTF-8 text", "file")]) from exc
    return parse_demand_csv(text, file)


def parse_demand_csv(text: str, file: str = "<demand>") -> DemandProfile:
    """Parse the text of a demand CSV (format in the module docstring).

    Args:
        text: the CSV text.
        file: the file as named in issues.

    Returns:
        The profile (``source`` is ``file``).

    Raises:
        DemandFileError: see :func:`load_demand_csv`.
    """
    issues: list[Issue] = []
    rows = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise DemandFileError([Issue.on_line(file, None, None, "no header and no rows", f"start the file with the header `{_COLUMNS}`, then one row per hour", "header")])
    header_line, header = rows[0][0], next(csv.reader([rows[0][1]]))
    header = [h.strip() for h in header]
    allowed = {"hour", "gpus", "checkpointable", "checkpointable_fraction"}
    for name in header:
        if name not in allowed:
            issues.append(Issue.on_line(file, header_line, name, "unknown column", f"remove or rename it; allowed: {', '.join(sorted(allowed))}", "header"))
    for name in ("hour", "gpus"):
        if name not in header:
            issues.append(Issue.on_line(file, header_line, name, "missing column", f"add the column `{name}` to the header (`{_COLUMNS}`)", "header"))
    ckpt = [h for h in header if h in ("checkpointable", "checkpointable_fraction")]
    if len(ckpt) != 1:
        message = "need exactly one of the columns checkpointable (GPUs) or checkpointable_fraction (0..1)"
        issues.append(Issue.on_line(file, header_line, "checkpointable", message, "keep one of the two columns in the header and in every row", "header"))
    if len(set(header)) != len(header):
        issues.append(Issue.on_line(file, header_line, None, f"duplicate column names in {header}", "name each column once", "header"))
    if issues:
        raise DemandFileError(issues)
    index = {name: i for i, name in enumerate(header)}
    gpus: list[float] = []
    ckpts: list[float] = []
    for expected_hour, (line_no, line) in enumerate(rows[1:]):
        cells = next(csv.reader(io.StringIO(line)))
        if len(cells) != len(header):
            fix = f"give one value per header column ({', '.join(header)})"
            issues.append(Issue.on_line(file, line_no, None, f"has {len(cells)} fields, the header has {len(header)}", fix))
            gpus.append(0.0)
            ckpts.append(0.0)
            continue
        values = {}
        for name in header:
            raw = cells[index[name]].strip()
            try:
                value = float(raw)
            except ValueError:
                issues.append(Issue.on_line(file, line_no, name, f"{raw!r} is not a number", "write a plain number, e.g. `12` or `0.5`"))
                continue
            if not math.isfinite(value) or value < 0:
                issues.append(Issue.on_line(file, line_no, name, f"{raw!r} must be a finite number >= 0", "write a number >= 0 (demand cannot be negative)"))
                continue
            values[name] = value
        hour = values.get("hour")
        if hour is not None and hour != expected_hour:
            message = f"is {raw_int(hour)}, expected {expected_hour} (hours count from 0 without gaps)"
            issues.append(Issue.on_line(file, line_no, "hour", message, f"number the rows 0, 1, 2, ... in order: write {expected_hour} (add a row for every missing hour)"))
        g = values.get("gpus", 0.0)
        if ckpt[0] == "checkpointable_fraction":
            frac = values.get("checkpointable_fraction", 0.0)
            if frac > 1:
                issues.append(Issue.on_line(file, line_no, "checkpointable_fraction", f"{frac:g} is above 1", "write a fraction between 0 and 1"))
            c = g * min(frac, 1.0)
        else:
            c = values.get("checkpointable", 0.0)
            if c > g:
                fix = f"write at most {g:g}: the checkpointing part of the hour's {g:g} GPUs"
                issues.append(Issue.on_line(file, line_no, "checkpointable", f"{c:g} is above gpus ({g:g})", fix))
                c = g
        gpus.append(g)
        ckpts.append(c)
        if len(issues) >= _MAX_ISSUES:
            break
    if not gpus and not issues:
        issues.append(Issue.on_line(file, None, None, "has a header but no rows", "add one row per hour, starting at hour 0"))
    if issues:
        raise DemandFileError(issues[:_MAX_ISSUES])
    return DemandProfile(np.array(gpus), np.array(ckpts), source=file)


def raw_int(value: float) -> str:
    """``value`` without a trailing ``.0`` when integral (for messages)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def write_demand_csv(profile: DemandProfile, path: Path | str, comment: str | None = None) -> None:
    """Write ``profile`` as a demand CSV (``hour,gpus,checkpointable``), optionally headed by ``# comment`` lines."""
    lines = [f"# {c}" for c in (comment.splitlines() if comment else [])]
    lines.append("hour,gpus,checkpointable")
    lines += [f"{h},{raw_int(g)},{raw_int(c)}" for h, (g, c) in enumerate(zip(profile.gpus, profile.checkpointable, strict=True))]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def generate_demand(
    hours: int = 8760,
    base_gpus: float = 48.0,
    diurnal_amplitude: float = 0.25,
    weekly_amplitude: float = 0.15,
    seasonal_amplitude: float = 0.2,
    noise: float = 0.1,
    checkpointable_fraction: float = 0.7,
    seed: int = 0,
    integer: bool = True,
) -> DemandProfile:
    """A synthetic hourly profile: a base level shaped by day, week and season, with noise.

    ``gpus(t) = base x (1 + a_d cos(2 pi (t - 14) / 24) + a_w cos(2 pi t / 168) + a_s sin(2 pi t / 8760)) x (1 + noise x N(0, 1))``,
    clipped at 0 (and rounded to whole GPUs when ``integer``); the peak of the day is at 14:00
    and the weekly term peaks at the start of the profile. ``checkpointable(t) =
    checkpointable_fraction x gpus(t)`` with +-10% seeded jitter, clipped to ``[0, gpus(t)]``.

    Args:
        hours: profile length (hours, >= 1).
        base_gpus: mean level (GPUs, >= 0).
        diurnal_amplitude, weekly_amplitude, seasonal_amplitude: relative swings (>= 0).
        noise: relative standard deviation of the hourly noise (>= 0).
        checkpointable_fraction: share of the demand whose jobs checkpoint (0..1).
        seed: random seed (same seed, same profile).
        integer: round to whole GPUs.

    Returns:
        A :class:`DemandProfile` whose ``source`` records the parameters.

    Raises:
        ValueError: an argument out of range.
    """
    if hours < 1:
        raise ValueError(f"hours must be >= 1, got {hours}")
    for name, value in (("base_gpus", base_gpus), ("diurnal_amplitude", diurnal_amplitude), ("weekly_amplitude", weekly_amplitude),
                        ("seasonal_amplitude", seasonal_amplitude), ("noise", noise)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if not 0 <= checkpointable_fraction <= 1:
        raise ValueError(f"checkpointable_fraction must be in [0, 1], got {checkpointable_fraction!r}")
    rng = np.random.default_rng(seed)
    t = np.arange(hours, dtype=float)
    shape = (1 + diurnal_amplitude * np.cos(2 * np.pi * (t - 14) / 24) + weekly_amplitude * np.cos(2 * np.pi * t / 168)
             + seasonal_amplitude * np.sin(2 * np.pi * t / 8760))
    gpus = np.clip(base_gpus * shape * (1 + noise * rng.standard_normal(hours)), 0, None)
    jitter = 1 + 0.1 * (2 * rng.random(hours) - 1)
    ckpt = np.clip(checkpointable_fraction * jitter * gpus, 0, None)
    if integer:
        gpus = np.round(gpus)
        ckpt = np.floor(np.minimum(ckpt, gpus))
    ckpt = np.minimum(ckpt, gpus)
    source = (f"generated: hours={hours} base_gpus={base_gpus:g} diurnal={diurnal_amplitude:g} weekly={weekly_amplitude:g} "
              f"seasonal={seasonal_amplitude:g} noise={noise:g} checkpointable={checkpointable_fraction:g} seed={seed}")
    return DemandProfile(gpus, ckpt, source=source)
