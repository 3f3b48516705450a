"""The cost of failure: checkpoint interval, goodput and the GPU-hours and USD lost to job interruptions.

A synchronous training job on ``N`` GPUs stops when any of them (or its host, network, software)
fails. With failures independent and exponential at ``lambda`` per GPU-hour (the packaged rate:
``data/failure_rates.yaml``, derived from Meta's Llama 3 report), the job's mean time between
failures is ``M = 1 / (lambda x N)`` = (MTBF per GPU) / N. The job writes a checkpoint of ``C``
hours every ``tau`` hours of work (period ``T = tau + C``); a failure costs the downtime ``D``
(restart overhead: replace the node, reschedule, initialise), the restore ``R`` and the work
since the last checkpoint.

* Optimal interval, Young (1974, "A first order approximation to the optimum checkpoint interval",
  CACM 17(9)): ``tau_Y = sqrt(2 x C x M)``. Daly's first-order refinement (2006, "A higher order
  estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3), eq. 37 to first
  order): ``tau_D = sqrt(2 x C x M) - C``, for ``C < 2M`` (the period, not the work, is
  ``sqrt(2CM)``).
* Goodput (fraction of the job's time doing useful work), the standard first-order model
  (Herault & Robert (eds.), "Fault-Tolerance Techniques for High-Performance Computing",
  Springer 2015, ch. 1, section 1.3.1)::

      goodput = (1 - C / T) x (1 - (D + R + T / 2) / M)

* Exact expectation under exponential failures (same chapter, the expected time of one period
  with failures during restore and re-execution, none during downtime), used as the reference
  in tests: ``E(T) = e^{R/M} (M + D) (e^{T/M} - 1)``, goodput = ``tau / E(T)``.
* Lost per month: the job holds ``N`` GPUs for 730 h; ``N x 730 x (1 - goodput)`` GPU-hours buy
  no progress, priced at the GPU-hour price of the capacity the job runs on.

Nothing here imports Pulumi; no randomness (the Monte-Carlo check lives in the tests).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from hybridgpu.datafile import DataFileError, top_level_entries, unreadable_issue
from hybridgpu.economics.costmodel import HOURS_PER_MONTH
from hybridgpu.economics.prices import PriceModel, SourcedEntry, validate_entry
from hybridgpu.errors import HybridGpuError, Issue

__all__ = [
    "FAILURE_RATES_FILE",
    "CheckpointInputs",
    "CheckpointPlan",
    "FailureInputError",
    "FailureRateSource",
    "FailureRatesError",
    "daly_interval_hours",
    "exact_goodput",
    "failure_source",
    "first_order_goodput",
    "job_mtbf_hours",
    "load_failure_rates",
    "plan_checkpoint",
    "report_with_failures",
    "young_interval_hours",
]

FAILURE_RATES_FILE = "failure_rates.yaml"
HOURS_PER_DAY = 24


class FailureRatesError(DataFileError):
    """The failure-rate data file is invalid; names file, entry and field."""

    what = "failure-rate data"


class FailureInputError(HybridGpuError, ValueError):
    """Bad checkpoint or failure input: one line naming the option (or field), the value and the fix."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return self.message


class FailureRateSource(SourcedEntry):
    """One observed failure rate (see ``data/failure_rates.yaml`` for the fields and the derivation)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Identifier, e.g. `llama3-405b-unexpected`. Required.")
    interruptions: int = Field(ge=1, description="Job interruptions observed in the window (count). Required.")
    gpus: int = Field(ge=1, description="GPUs observed (count). Required.")
    days: float = Field(gt=0, description="Length of the window (days). Required.")
    share: float = Field(default=1.0, gt=0, le=1, description="Fraction of the interruptions counted (0..1]. Default: 1.")
    default: bool = Field(default=False, description="True on the one entry used when no rate is given. Default: false.")

    @property
    def failures_per_gpu_hour(self) -> float:
        """``interruptions x share / (gpus x days x 24)`` (failures per GPU-hour)."""
        return self.interruptions * self.share / (self.gpus * self.days * HOURS_PER_DAY)


def _read_rates(text: str, file: str) -> dict[str, FailureRateSource]:
    issues: list[Issue] = []
    out: dict[str, FailureRateSource] = {}
    for index, entry in enumerate(top_level_entries(text, file, "failureRates", FailureRatesError)):
        label = str(entry.get("name")) if isinstance(entry, dict) and entry.get("name") else f"#{index}"
        value = validate_entry(entry, FailureRateSource, file, label, issues, f"the comment block at the top of {Path(file).name}")
        if value is None:
            continue
        if value.name in out:
            issues.append(Issue.in_entry(file, label, "name", f"duplicate name {value.name!r}", "delete one of the entries; each name is listed once", "duplicate"))
            continue
        out[value.name] = value
    defaults = [r.name for r in out.values() if r.default]
    if not issues and len(defaults) != 1:
        issues.append(Issue.in_entry(file, None, "default", f"{len(defaults)} entries have default: true ({', '.join(defaults) or 'none'})",
                                     "set default: true on exactly one entry", "default"))
    if issues:
        raise FailureRatesError(issues)
    return out


def load_failure_rates(path: Path | None = None) -> dict[str, FailureRateSource]:
    """The failure-rate entries by name, from ``path`` or the packaged ``data/failure_rates.yaml``.

    Raises:
        FailureRatesError: the file is unreadable, not YAML of the expected shape, has a bad,
            missing or unknown field, a duplicate name, or not exactly one default (names the
            file, the entry and the field).
    """
    if path is None:
        return dict(_packaged_rates())
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FailureRatesError([unreadable_issue(str(path), exc)]) from exc
    return _read_rates(text, str(path))


@functools.lru_cache(maxsize=1)
def _packaged_rates() -> dict[str, FailureRateSource]:
    res = resources.files(__package__).joinpath("data").joinpath(FAILURE_RATES_FILE)
    return _read_rates(res.read_text(encoding="utf-8"), str(res))


def failure_source(name: str | None = None) -> FailureRateSource:
    """The packaged entry ``name``, or the default entry when None.

    Raises:
        FailureInputError: no such entry (the message lists the known ones).
    """
    rates = load_failure_rates()
    if name is None:
        return next(r for r in rates.values() if r.default)
    if name not in rates:
        raise FailureInputError(f"--failure-source: {name!r} is not a packaged failure rate (known: {', '.join(sorted(rates))}); "
                                f"pick one, or give --failure-rate / --gpu-mtbf-hours")
    return rates[name]


# ---- formulas -------------------------------------------------------------------------------


def job_mtbf_hours(failures_per_gpu_hour: float, gpus: int) -> float:
    """Mean time between failures of a job on ``gpus`` GPUs: ``1 / (rate x gpus)`` (hours)."""
    return 1.0 / (failures_per_gpu_hour * gpus)


def young_interval_hours(checkpoint_hours: float, mtbf_hours: float) -> float:
    """Young's optimal work between checkpoints: ``sqrt(2 x C x M)`` (hours)."""
    return math.sqrt(2.0 * checkpoint_hours * mtbf_hours)


def daly_interval_hours(checkpoint_hours: float, mtbf_hours: float) -> float:
    """Daly's first-order optimal work between checkpoints: ``sqrt(2 x C x M) - C`` (hours), for ``C < 2M``.

    Raises:
        FailureInputError: ``C >= 2M`` (Daly's estimate is then ``M``: checkpointing cannot help).
    """
    if checkpoint_hours >= 2.0 * mtbf_hours:
        raise FailureInputError(f"checkpoint time {checkpoint_hours:g} h is >= twice the job MTBF {mtbf_hours:g} h: Daly's interval needs C < 2M")
    return young_interval_hours(checkpoint_hours, mtbf_hours) - checkpoint_hours


def first_order_goodput(interval_hours: float, checkpoint_hours: float, downtime_hours: float, restore_hours: float, mtbf_hours: float) -> float:
    """First-order goodput ``(1 - C/T) x (1 - (D + R + T/2) / M)`` with ``T = interval + C`` (fraction, may be <= 0)."""
    period = interval_hours + checkpoint_hours
    return (1.0 - checkpoint_hours / period) * (1.0 - (downtime_hours + restore_hours + period / 2.0) / mtbf_hours)


def exact_goodput(interval_hours: float, checkpoint_hours: float, downtime_hours: float, restore_hours: float, mtbf_hours: float) -> float:
    """Goodput under exponential failures: ``tau / (e^{R/M} (M + D) (e^{T/M} - 1))`` (fraction in (0, 1))."""
    period = interval_hours + checkpoint_hours
    expected = math.exp(restore_hours / mtbf_hours) * (mtbf_hours + downtime_hours) * math.expm1(period / mtbf_hours)
    return interval_hours / expected


# ---- inputs and plan ------------------------------------------------------------------------

#: CLI option of each input field (errors name the option the user typed).
OPTIONS = {
    "gpus": "--gpus",
    "failures_per_gpu_hour": "--failure-rate",
    "checkpoint_minutes": "--checkpoint-minutes",
    "restore_minutes": "--restore-minutes",
    "restart_minutes": "--restart-minutes",
    "interval_minutes": "--interval-minutes",
}

#: How to fix each input (appended to its error).
FIXES = {
    "gpus": "give the GPUs of one job, a whole number >= 1",
    "failures_per_gpu_hour": "give failures per GPU-hour in (0, 1), e.g. 2e-5, or the MTBF per GPU with --gpu-mtbf-hours",
    "checkpoint_minutes": "give the minutes one checkpoint write takes, > 0",
    "restore_minutes": "give the minutes a restore takes, >= 0",
    "restart_minutes": "give the minutes a restart takes (detect, replace, reschedule), >= 0",
    "interval_minutes": "give the job's current minutes of work between checkpoints, > 0",
}


class CheckpointInputs(PriceModel):
    """What ``hybridgpu cost checkpoint`` and ``cost report --failure-rate`` take (times in minutes)."""

    gpus: int = Field(ge=1, le=10_000_000, description="GPUs of one job (count); the job stops when any fails. Required.")
    failures_per_gpu_hour: float = Field(gt=0, lt=1, description="Failures per GPU-hour (1 / MTBF per GPU in hours). Required.")
    checkpoint_minutes: float = Field(gt=0, description="Time to write one checkpoint (minutes). Required.")
    restore_minutes: float = Field(default=0.0, ge=0, description="Time to load a checkpoint after a failure (minutes). Default: 0.")
    restart_minutes: float = Field(default=0.0, ge=0, description="Restart overhead: detect, replace or drain the node, reschedule, initialise (minutes). Default: 0.")
    interval_minutes: float | None = Field(default=None, gt=0, description="The job's current work between checkpoints (minutes), to price too. Default: none.")

    @property
    def mtbf_hours(self) -> float:
        """Job MTBF (hours)."""
        return job_mtbf_hours(self.failures_per_gpu_hour, self.gpus)

    @model_validator(mode="after")
    def _feasible(self) -> CheckpointInputs:
        m = self.mtbf_hours
        c = self.checkpoint_minutes / 60
        if c >= m:
            raise ValueError(f"checkpoint time {self.checkpoint_minutes:g} min is >= the job MTBF {m * 60:.4g} min "
                             f"({self.gpus} GPUs at {self.failures_per_gpu_hour:.4g} failures/GPU-hour): write checkpoints faster or run on fewer GPUs")
        lost = (self.restore_minutes + self.restart_minutes) / 60
        if lost >= m:
            raise ValueError(f"restore + restart {lost * 60:g} min is >= the job MTBF {m * 60:.4g} min: the job would never progress; "
                             f"shorten --restore-minutes / --restart-minutes or run on fewer GPUs")
        return self

    @classmethod
    def from_options(cls, **values: Any) -> CheckpointInputs:
        """Validated inputs from keyword options (field names as in :data:`OPTIONS`).

        Raises:
            FailureInputError: a value out of range or an infeasible combination (one line naming
                the option, the value and the fix).
        """
        try:
            return cls.model_validate({k: v for k, v in values.items() if v is not None})
        except ValidationError as exc:
            err = exc.errors()[0]
            field = str(err["loc"][0]) if err["loc"] else ""
            option = OPTIONS.get(field, field)
            msg = str(err["msg"]).removeprefix("Value error, ")
            if option:
                raise FailureInputError(f"{option}: {msg}, got {err.get('input')!r}; {FIXES.get(field, 'see --help')}") from None
            raise FailureInputError(msg) from None


@dataclass(frozen=True)
class CheckpointPlan:
    """The checkpoint interval and what failures cost (hours, fractions, USD).

    Attributes:
        gpus: GPUs of the job.
        failures_per_gpu_hour: rate used; ``rate_source`` says where it came from.
        gpu_mtbf_hours, job_mtbf_hours: MTBF per GPU and of the job (hours).
        checkpoint_hours, restore_hours, restart_hours: inputs (hours).
        young_interval_hours, daly_interval_hours: optimal work between checkpoints (hours).
        goodput: first-order goodput at Daly's interval (fraction).
        goodput_at_interval: first-order goodput at the given ``interval_hours`` (None without).
        checkpoint_share, failure_share: the waste split: time writing checkpoints, and time
            lost to failures (restart, restore, re-done work), at Daly's interval (fractions).
        lost_gpu_hours_per_month: ``gpus x 730 x (1 - goodput)`` at Daly's interval.
        lost_gpu_hours_per_month_at_interval: the same at ``interval_hours`` (None without).
        usd_per_gpu_hour, price_source: the price used (None: no USD figures).
        lost_usd_per_month, lost_usd_per_month_at_interval: lost GPU-hours x price (None without a price).
    """

    gpus: int
    failures_per_gpu_hour: float
    rate_source: str
    gpu_mtbf_hours: float
    job_mtbf_hours: float
    checkpoint_hours: float
    restore_hours: float
    restart_hours: float
    young_interval_hours: float
    daly_interval_hours: float
    goodput: float
    checkpoint_share: float
    failure_share: float
    lost_gpu_hours_per_month: float
    interval_hours: float | None = None
    goodput_at_interval: float | None = None
    lost_gpu_hours_per_month_at_interval: float | None = None
    usd_per_gpu_hour: float | None = None
    price_source: str | None = None
    lost_usd_per_month: float | None = None
    lost_usd_per_month_at_interval: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with camelCase keys (stable order)."""
        def camel(name: str) -> str:
            head, *rest = name.split("_")
            return head + "".join(p.capitalize() for p in rest)

        return {camel(k): getattr(self, k) for k in self.__dataclass_fields__}


def plan_checkpoint(inputs: CheckpointInputs, *, rate_source: str, usd_per_gpu_hour: float | None = None, price_source: str | None = None) -> CheckpointPlan:
    """Young's and Daly's intervals, the goodput and the monthly loss for ``inputs``.

    Args:
        inputs: validated inputs.
        rate_source: where the failure rate came from (printed with the result).
        usd_per_gpu_hour: price of one GPU-hour of the job's capacity (None: no USD figures).
        price_source: where the price came from.

    Returns:
        The :class:`CheckpointPlan`.

    Raises:
        FailureInputError: the goodput at Daly's interval is not positive (restarts take longer
            than the job runs between failures), or a negative price.
    """
    if usd_per_gpu_hour is not None and not (math.isfinite(usd_per_gpu_hour) and usd_per_gpu_hour >= 0):
        raise FailureInputError(f"--price: must be a finite number >= 0 USD per GPU-hour, got {usd_per_gpu_hour!r}")
    m = inputs.mtbf_hours
    c, r, d = inputs.checkpoint_minutes / 60, inputs.restore_minutes / 60, inputs.restart_minutes / 60
    tau = daly_interval_hours(c, m)
    good = first_order_goodput(tau, c, d, r, m)
    if good <= 0:
        raise FailureInputError(f"goodput would be {good:.3f}: with a job MTBF of {m:.3g} h the job loses more time to checkpoints and "
                                f"restarts than it runs; shorten --checkpoint-minutes, --restore-minutes or --restart-minutes, or run on fewer GPUs")
    period = tau + c
    monthly = inputs.gpus * HOURS_PER_MONTH
    at = None
    if inputs.interval_minutes is not None:
        at = inputs.interval_minutes / 60
    good_at = first_order_goodput(at, c, d, r, m) if at is not None else None
    lost_at = monthly * (1 - max(good_at, 0.0)) if good_at is not None else None
    price = usd_per_gpu_hour
    return CheckpointPlan(
        gpus=inputs.gpus, failures_per_gpu_hour=inputs.failures_per_gpu_hour, rate_source=rate_source,
        gpu_mtbf_hours=1.0 / inputs.failures_per_gpu_hour, job_mtbf_hours=m, checkpoint_hours=c, restore_hours=r, restart_hours=d,
        young_interval_hours=young_interval_hours(c, m), daly_interval_hours=tau, goodput=good,
        checkpoint_share=c / period, failure_share=1 - good - c / period, lost_gpu_hours_per_month=monthly * (1 - good),
        interval_hours=at, goodput_at_interval=good_at, lost_gpu_hours_per_month_at_interval=lost_at,
        usd_per_gpu_hour=price, price_source=price_source if price is not None else None,
        lost_usd_per_month=monthly * (1 - good) * price if price is not None else None,
        lost_usd_per_month_at_interval=lost_at * price if price is not None and lost_at is not None else None,
    )


# ---- the cost report with failures ------------------------------------------------------------


def report_with_failures(report: Any, plan: CheckpointPlan) -> tuple[Any, dict[str, Any]]:
    """The cost report priced with lost work, and the loss per capacity line.

    Every GPU-hour a job holds yields ``goodput`` productive GPU-hours (the plan's, at Daly's
    interval), on every side alike, so each price per productive GPU-hour is divided by the
    goodput, and ``1 - goodput`` of each line's monthly spend buys lost work. The break-even
    utilizations do not move: ``F / (8760 u g) + v / g = p / g`` has the same root ``u*`` (a
    uniform rate; a different rate per side would move it). Monthly spend and the cumulative
    curves (the same fleet, the same held hours) are unchanged.

    Args:
        report: a :class:`hybridgpu.economics.report.StackCostReport` (not changed).
        plan: the :func:`plan_checkpoint` result.

    Returns:
        ``(new report, failure section)``; the section (JSON-ready) holds the plan and per line
        and utilization the lost GPU-hours and USD per month, and their totals.
    """
    g = plan.goodput
    capacity = [replace(line, usd_per_productive_gpu_hour={k: v / g for k, v in line.usd_per_productive_gpu_hour.items()}) for line in report.capacity]
    breakdown = {k: {p: v / g for p, v in parts.items()} for k, parts in report.onprem_breakdown.items()}
    rates = [replace(r, usd_per_productive_gpu_hour=r.usd_per_productive_gpu_hour / g) for r in report.cloud_rates]
    break_even = [replace(b, usd_per_productive_gpu_hour=b.usd_per_productive_gpu_hour / g) for b in report.break_even]
    new = replace(report, capacity=capacity, onprem_breakdown=breakdown, cloud_rates=rates, break_even=break_even)
    new.priced_with = report.priced_with
    lines = []
    total_hours: dict[str, float] = {}
    total_usd: dict[str, float] = {}
    for line in report.capacity:
        hours = {k: line.gpus * float(k) * HOURS_PER_MONTH * (1 - g) for k in line.monthly_usd}
        usd = {k: v * (1 - g) for k, v in line.monthly_usd.items()}
        lines.append({"name": line.name, "lostGpuHoursPerMonth": hours, "lostUsdPerMonth": usd})
        for k in hours:
            total_hours[k] = total_hours.get(k, 0.0) + hours[k]
            total_usd[k] = total_usd.get(k, 0.0) + usd[k]
    section = {"plan": plan.to_dict(), "lines": lines, "lostGpuHoursPerMonth": total_hours, "lostUsdPerMonth": total_usd}
    return new, section
