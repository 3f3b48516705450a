"""Showback: who used which GPU-hours, on which side and capacity type, and what they cost (pure).

Takes a usage export and returns, per team and project, GPU-hours by side (on-prem / cloud)
and capacity type (``owned``, ``reserved``, ``spot``, ``on-demand``), their cost in USD, the
team's share of idle cost, and the allocations that held GPUs without using them. The CLI is
``hybridgpu cost showback`` (:mod:`hybridgpu.cli.cost`); the columns of every accepted export
are documented in ``docs/teams.md`` ("The usage export").

Rules (docs/teams.md states them with examples):

* **GPU-hours** are GPU-equivalents x hours. A MIG instance counts as the fraction of the GPU's
  compute slices it holds: ``profile.computeSlices / gpu.computeSlices`` from the MIG catalog
  (``1g.10gb`` on an H100 = 1/7, ``3g.40gb`` = 3/7; on an A30, ``1g.6gb`` = 1/4). Memory is not
  counted: a ``1g.20gb`` holds as much compute as a ``1g.10gb``.
* **Cost** = GPU-hours x the price per GPU-hour of the capacity type and GPU model
  (:class:`ShowbackPrices`, built from the stack's cost report, whose cloud lines are priced by
  :meth:`hybridgpu.economics.prices.EconomicsData.gpu_hour_price`: the same prices OpenCost gets). A row
  whose export names no GPU model (or a model the stacks have no capacity line of) is priced at the
  capacity type's blended rate, the GPU-weighted mean over the stacks' lines of that type, and the
  result says which rows, how many GPU-hours and which models were blended (:class:`Blended`).
  Adding a pool of another GPU model therefore never changes the price of a row that names its model.
* **Idle** GPU-hours of a capacity type are the capacity's GPU-hours no allocation held: the
  export's idle rows (OpenCost ``__idle__``; CSV ``kind=idle``), plus, for owned GPUs, the fleet
  (``onprem_gpus`` x window hours) minus the owned GPU-hours used. Their cost is split among the
  teams pro rata to each team's GPU-hours of the same capacity type, as OpenCost's
  ``shareIdle=true`` shares idle cost in proportion to allocation cost and the FinOps
  Foundation's "proportional" shared-cost allocation does; with no usage of that type, it stays
  with ``(unattributed)``.
* **Idle allocations**: GPU-hours an allocation held x (1 - its GPU utilization), when the export
  has the utilization (OpenCost ``gpuUsageAverage / gpuRequestAverage``; CSV ``gpu_utilization``).
* **Team** of an allocation: the team whose ``namespaces`` hold it (teams file); else the team
  whose ``costLabels`` all match the pod's labels; else the team the pod's ``team`` label names
  (a team of the file, by name or ``costLabels.team``; without a teams file, any value); else
  ``(unattributed)``. **Project**: the pod's ``project`` label, else the team's
  ``costLabels.project``, else ``(none)``. What went to ``(unattributed)`` is reported
  (:class:`Unattributed`: the records, their GPU-hours, the ``team`` labels and namespaces seen), so
  a misspelt label is never silently in that row.

Usage exports are read by :mod:`hybridgpu.economics.usage`. Money is computed in :class:`decimal.Decimal` and
rounded half-up to the cent when reported. Nothing here imports Pulumi.
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from hybridgpu.economics.usage import CAPACITY_TYPES, UsageError, UsageRecord
from hybridgpu.errors import Issue
from hybridgpu.teams.models import TeamsFile

__all__ = ["NO_PROJECT", "UNATTRIBUTED", "Blended", "IdleAllocation", "Showback", "ShowbackPrices", "ShowbackRow", "Unattributed", "blended_note",
           "compute_showback", "unattributed_note"]

#: The row that holds usage no team claims (and idle cost no usage of its type can carry).
UNATTRIBUTED = "(unattributed)"
#: Project of usage with no ``project`` label and no team default.
NO_PROJECT = "(none)"
_CENT = Decimal("0.01")


@dataclass(frozen=True)
class ShowbackPrices:
    """USD per GPU-hour by capacity type and GPU model, and where each price comes from.

    Attributes:
        usd_per_gpu_hour: capacity type -> USD per GPU-hour for usage without a GPU model: the
            blended rate (``owned``: the TCO model's cost of an owned GPU-hour, the figure OpenCost
            gets; cloud types: the cost report's NodePool rates), GPU-weighted over the models.
        sources: capacity type -> how the price was obtained (shown with the table).
        by_model: (capacity type, GPU catalog key) -> USD per GPU-hour of that model (GPU-weighted over
            the lines of that type and model, normally one price).
        blended_models: capacity type -> the GPU models its blended rate mixes, sorted.
    """

    usd_per_gpu_hour: Mapping[str, Decimal]
    sources: Mapping[str, str] = field(default_factory=dict)
    by_model: Mapping[tuple[str, str], Decimal] = field(default_factory=dict)
    blended_models: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def price(self, capacity_type: str, gpu_model: str | None) -> tuple[Decimal, bool]:
        """``(USD per GPU-hour, blended)`` of usage of ``capacity_type`` on ``gpu_model``: the model's own price
        when there is one, else the capacity type's blended rate (``blended`` True).

        Raises:
            KeyError: no price for the capacity type at all (callers check first).
        """
        if gpu_model is not None and (capacity_type, gpu_model) in self.by_model:
            return self.by_model[(capacity_type, gpu_model)], False
        return self.usd_per_gpu_hour[capacity_type], True

    @classmethod
    def from_report(cls, report: Any) -> ShowbackPrices:
        """The prices of a stack's cost report (:class:`hybridgpu.economics.report.StackCostReport`).

        ``owned``: the on-prem capacity lines' ``usd_per_gpu_hour`` (the fixed cost of owning a
        GPU for an hour, :attr:`OnPremCostModel.fixed_usd_per_gpu_hour`), GPU-weighted when the
        inventory has several GPU models; the reserved, spot and on-demand prices are the
        GPU-weighted mean of the NodePools of that kind (each priced by its cheapest instance
        type per GPU, spot without interruption waste: showback bills the hours held). A type
        the stack does not have is absent; usage of it is reported as an error naming the fix.
        """
        weights: dict[str, list[tuple[int, float]]] = defaultdict(list)
        model_weights: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        for line in report.capacity:
            kind = "owned" if line.kind == "onprem" else line.kind
            weights[kind].append((line.gpus, line.usd_per_gpu_hour))
            model_weights[(kind, line.gpu_model)].append((line.gpus, line.usd_per_gpu_hour))
        prices, sources = {}, {}
        for kind, pairs in weights.items():
            gpus = sum(g for g, _ in pairs)
            if gpus <= 0:
                continue
            prices[kind] = Decimal(repr(sum(g * p for g, p in pairs) / gpus))
            sources[kind] = f"stack {report.stack} cost report ({len(pairs)} capacity line{'s' if len(pairs) > 1 else ''})"
        by_model = {}
        for key, pairs in model_weights.items():
            gpus = sum(g for g, _ in pairs)
            if gpus > 0:
                by_model[key] = Decimal(repr(sum(g * p for g, p in pairs) / gpus))
        blended = {kind: tuple(sorted(m for k, m in by_model if k == kind)) for kind in prices}
        return cls(prices, sources, by_model, blended)

    @classmethod
    def parse(cls, text: str) -> ShowbackPrices:
        """Prices written as ``owned=3.10,spot=2.41,on-demand=6.88`` (USD per GPU-hour).

        Raises:
            ValueError: an unknown capacity type, a missing ``=`` or a price that is not a finite number >= 0.
        """
        prices = {}
        for item in (i.strip() for i in text.split(",")):
            if not item:
                continue
            kind, sep, value = item.partition("=")
            kind = kind.strip()
            if not sep or kind not in CAPACITY_TYPES:
                raise ValueError(f"--price: {item!r} is not CAPACITY_TYPE=USD with a capacity type in {', '.join(CAPACITY_TYPES)}, e.g. owned=3.10")
            try:
                price = Decimal(value.strip())
            except InvalidOperation:
                raise ValueError(f"--price: {value.strip()!r} of {kind} is not a number (USD per GPU-hour, e.g. 3.10)") from None
            if not price.is_finite() or price < 0:
                raise ValueError(f"--price: {kind} must be a finite number >= 0 USD per GPU-hour, got {value.strip()}")
            prices[kind] = price
        if not prices:
            raise ValueError("--price: give at least one CAPACITY_TYPE=USD, e.g. owned=3.10,spot=2.41")
        return cls(prices, dict.fromkeys(prices, "--price"))

    def merged(self, other: ShowbackPrices) -> ShowbackPrices:
        """These prices with ``other``'s on top (``--price`` over the stack's).

        A capacity type ``other`` prices without GPU models (``--price``) replaces this one's prices of
        every model of that type: ``--price spot=2.41`` prices all spot GPU-hours at 2.41.
        """
        replaced = {k for k in other.usd_per_gpu_hour if not any(kind == k for kind, _ in other.by_model)}
        by_model = {key: v for key, v in self.by_model.items() if key[0] not in replaced}
        blended = {k: v for k, v in self.blended_models.items() if k not in replaced}
        for kind, models in other.blended_models.items():
            blended[kind] = tuple(sorted({*blended.get(kind, ()), *models}))
        return ShowbackPrices({**self.usd_per_gpu_hour, **other.usd_per_gpu_hour}, {**self.sources, **other.sources},
                              {**by_model, **other.by_model}, blended)


# --------------------------------------------------------------------------- attribution and cost


def _label(labels: Mapping[str, str], key: str) -> str | None:
    if key in labels:
        return labels[key]
    return labels.get(re.sub(r"[^A-Za-z0-9_]", "_", key))  # OpenCost / Prometheus spelling


class _Attributor:
    def __init__(self, teams: TeamsFile | None):
        self.by_namespace: dict[str, Any] = {}
        self.teams = list(teams.teams) if teams else []
        for team in self.teams:
            for ns in team.namespaces:
                self.by_namespace[ns] = team
        self.cache: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[str, str]] = {}

    def __call__(self, record: UsageRecord) -> tuple[str, str]:
        team = self.by_namespace.get(record.namespace)
        if team is not None:  # the common case: a team's namespace decides, labels only name the project
            return team.name, _label(record.labels, "project") or team.cost_labels.get("project") or NO_PROJECT
        key = (record.namespace, tuple(sorted(record.labels.items())))
        hit = self.cache.get(key)
        if hit is None:
            hit = self.cache[key] = self._resolve(record)
        return hit

    def _resolve(self, record: UsageRecord) -> tuple[str, str]:
        team = self.by_namespace.get(record.namespace)
        if team is None:
            for candidate in self.teams:
                if candidate.cost_labels and all(_label(record.labels, k) == v for k, v in candidate.cost_labels.items()):
                    team = candidate
                    break
        project = _label(record.labels, "project")
        name = _label(record.labels, "team")
        if team is None and name:
            team = next((t for t in self.teams if name in (t.name, t.cost_labels.get("team"))), None)
        if team is not None:
            return team.name, project or team.cost_labels.get("project") or NO_PROJECT
        if name and not self.teams:
            return name, project or NO_PROJECT
        return UNATTRIBUTED, project or NO_PROJECT


@dataclass
class ShowbackRow:
    """One team and project.

    Attributes:
        team, project: the attribution (see the module docstring).
        gpu_hours: capacity type -> GPU-hours used.
        cost_usd: capacity type -> USD (unrounded).
        idle_usd: capacity type -> the row's share of idle cost (USD, unrounded).
    """

    team: str
    project: str
    gpu_hours: dict[str, Decimal] = field(default_factory=dict)
    cost_usd: dict[str, Decimal] = field(default_factory=dict)
    idle_usd: dict[str, Decimal] = field(default_factory=dict)
    #: (capacity type, GPU model or None) -> GPU-hours used: what the cost is priced from.
    hours_by_model: dict[tuple[str, str | None], Decimal] = field(default_factory=dict)

    @property
    def total_usd(self) -> Decimal:
        """Usage cost plus idle share (USD, unrounded)."""
        return sum(self.cost_usd.values(), Decimal(0)) + sum(self.idle_usd.values(), Decimal(0))


@dataclass(frozen=True)
class IdleAllocation:
    """An allocation that held GPUs it did not use: ``gpu_hours x (1 - utilization)`` idle GPU-hours, priced."""

    name: str
    team: str
    project: str
    capacity_type: str
    gpu_hours: Decimal
    utilization: float
    idle_gpu_hours: Decimal
    idle_usd: Decimal


@dataclass
class Unattributed:
    """The usage no team claimed (it is in the ``(unattributed)`` rows), so that it is never silently there.

    Attributes:
        records: how many usage records (allocations) went to ``(unattributed)``.
        gpu_hours: their GPU-hours (all capacity types).
        team_labels: each ``team`` label value seen on them -> how many records carried it (a value that
            names no team of the teams file, nor its ``costLabels.team``).
        without_team_label: records with no ``team`` label at all.
        namespaces: the namespaces they ran in (none is a team's namespace), sorted.
    """

    records: int = 0
    gpu_hours: Decimal = Decimal(0)
    team_labels: dict[str, int] = field(default_factory=dict)
    without_team_label: int = 0
    namespaces: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, stable: label values and namespaces sorted, GPU-hours to 4 decimals."""
        return {
            "records": self.records,
            "gpuHours": _hours(self.gpu_hours),
            "teamLabels": dict(sorted(self.team_labels.items())),
            "withoutTeamLabel": self.without_team_label,
            "namespaces": sorted(self.namespaces),
        }


@dataclass
class Blended:
    """Usage of one capacity type priced at its blended rate, because its rows name no GPU model with a price of its own.

    Attributes:
        usd_per_gpu_hour: the blended rate (USD per GPU-hour).
        models: the GPU models the rate is a GPU-weighted mean over (the stacks' capacity lines of the type).
        records: how many usage records (allocations) were priced at it.
        gpu_hours: their GPU-hours, idle capacity priced at it included.
        row_models: the GPU models those rows named that have no price of their own, sorted (empty: the rows named none).
    """

    usd_per_gpu_hour: Decimal
    models: tuple[str, ...]
    records: int = 0
    gpu_hours: Decimal = Decimal(0)
    row_models: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, stable."""
        return {"usdPerGpuHour": float(self.usd_per_gpu_hour), "models": list(self.models), "records": self.records,
                "gpuHours": _hours(self.gpu_hours), "rowModels": sorted(self.row_models)}


def blended_note(blended: Mapping[str, Any]) -> str:
    """One sentence on the ``blended`` part of :meth:`Showback.to_dict` (empty when every row was priced by its GPU model).

    Example: ``spot: 12.00 GPU-hours (3 usage records) name no GPU model and are priced at the blended rate 2.9500
    USD/GPU-hour, the GPU-weighted mean over H100-80GB, L40S. Fix: ...``.
    """
    parts = []
    for kind, b in blended.items():
        named = f" (models without a price of their own: {', '.join(b['rowModels'])})" if b["rowModels"] else ""
        mixes = f"the GPU-weighted mean over {', '.join(b['models'])}" if len(b["models"]) > 1 else f"the price of {', '.join(b['models']) or 'the type'}"
        parts.append(f"{kind}: {b['gpuHours']:,.2f} GPU-hours ({b['records']} usage record{'s' if b['records'] != 1 else ''}) name no GPU model with a "
                     f"price{named} and are priced at the blended rate {b['usdPerGpuHour']:.4f} USD/GPU-hour, {mixes}")
    if not parts:
        return ""
    return ("; ".join(parts) + ". Fix: give the rows their GPU model (usage CSV `gpu_model`; OpenCost: --nodes with the nodes' instance-type "
            "labels; Kueue: a ResourceFlavor per GPU model, --flavor NAME=TYPE:MODEL)")


#: How many label values and namespaces :func:`unattributed_note` names (the JSON has all).
NOTE_VALUES = 10


def unattributed_note(unattributed: Mapping[str, Any]) -> str:
    """One sentence on the ``unattributed`` part of :meth:`Showback.to_dict` (empty when nothing was unattributed):
    how many records and GPU-hours, the ``team`` labels and namespaces seen, and the fix.

    Example: ``3 usage records (12.50 GPU-hours) match no team and are in (unattributed): team labels
    seen: nlp-reserch (2); without a team label: 1; namespaces: scratch. Fix: ...``.

    Args:
        unattributed: ``Showback.to_dict()["unattributed"]``.
    """
    if not unattributed or not unattributed.get("records"):
        return ""

    def listed(items: list[str]) -> str:
        more = len(items) - NOTE_VALUES
        return ", ".join(items[:NOTE_VALUES]) + (f" and {more} more (--json lists all)" if more > 0 else "")

    parts = []
    labels = unattributed.get("teamLabels") or {}
    if labels:
        parts.append("team labels seen: " + listed([f"{value} ({n})" for value, n in labels.items()]))
    if unattributed.get("withoutTeamLabel"):
        parts.append(f"without a team label: {unattributed['withoutTeamLabel']}")
    if unattributed.get("namespaces"):
        parts.append("namespaces: " + listed(list(unattributed["namespaces"])))
    n = unattributed["records"]
    return (f"{n} usage record{'s' if n != 1 else ''} ({unattributed['gpuHours']:,.2f} GPU-hours) "
            f"{'match' if n != 1 else 'matches'} no team and {'are' if n != 1 else 'is'} in {UNATTRIBUTED}: {'; '.join(parts)}. Fix: add the namespace to a team's "
            "`namespaces` or the label value to its `costLabels` in the teams file, or correct the pods' `team` label")


@dataclass
class Showback:
    """The result of :func:`compute_showback` (money in USD; GPU-hours as GPU-equivalents).

    Attributes:
        rows: per (team, project), sorted by team then project, ``(unattributed)`` last.
        idle_gpu_hours: capacity type -> idle GPU-hours of capacity.
        idle_usd: capacity type -> their cost.
        top_idle: the allocations with the most idle GPU-hours, most first.
        prices: capacity type -> USD per GPU-hour used for rows without a GPU model (the blended rate).
        days: the distinct start days seen (``YYYY-MM-DD``), sorted.
        unattributed: the usage no team claimed (:class:`Unattributed`).
        model_prices: capacity type -> GPU model -> USD per GPU-hour, for the models rows were priced by.
        blended: capacity type -> the usage priced at the blended rate (:class:`Blended`); absent when none was.
    """

    rows: list[ShowbackRow]
    idle_gpu_hours: dict[str, Decimal]
    idle_usd: dict[str, Decimal]
    top_idle: list[IdleAllocation]
    prices: dict[str, Decimal]
    days: list[str]
    unattributed: Unattributed = field(default_factory=Unattributed)
    model_prices: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    blended: dict[str, Blended] = field(default_factory=dict)

    def teams(self) -> dict[str, dict[str, Decimal]]:
        """Team -> ``{capacity type: usage USD, "idle": idle share USD}`` (unrounded), for the plot."""
        out: dict[str, dict[str, Decimal]] = {}
        for row in self.rows:
            t = out.setdefault(row.team, {})
            for kind, usd in row.cost_usd.items():
                t[kind] = t.get(kind, Decimal(0)) + usd
            t["idle"] = t.get("idle", Decimal(0)) + sum(row.idle_usd.values(), Decimal(0))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, stable: keys in fixed order, money as numbers rounded to the cent, GPU-hours to 4 decimals."""
        kinds = [k for k in CAPACITY_TYPES if any(k in r.gpu_hours for r in self.rows) or k in self.idle_gpu_hours]
        rows = []
        for r in self.rows:
            rows.append({
                "team": r.team,
                "project": r.project,
                "gpuHours": {k: _hours(r.gpu_hours[k]) for k in kinds if k in r.gpu_hours},
                "gpuHoursBySide": {side: _hours(sum((v for k, v in r.gpu_hours.items() if CAPACITY_TYPES[k] == side), Decimal(0)))
                                   for side in ("on-prem", "cloud")},
                "costUsd": {k: _cents(r.cost_usd[k]) for k in kinds if k in r.cost_usd},
                "idleShareUsd": _cents(sum(r.idle_usd.values(), Decimal(0))),
                "totalUsd": _cents(r.total_usd),
            })
        teams = {team: {k: _cents(v) for k, v in sorted(parts.items())} for team, parts in sorted(self.teams().items(), key=lambda kv: _team_order(kv[0]))}
        return {
            "pricesUsdPerGpuHour": {k: float(v) for k, v in sorted(self.prices.items())},
            "pricesByGpuModel": {k: {m: float(v) for m, v in sorted(self.model_prices[k].items())} for k in CAPACITY_TYPES if self.model_prices.get(k)},
            "blended": {k: self.blended[k].to_dict() for k in CAPACITY_TYPES if k in self.blended},
            "days": self.days,
            "rows": rows,
            "teams": teams,
            "idle": {k: {"gpuHours": _hours(self.idle_gpu_hours[k]), "usd": _cents(self.idle_usd[k])} for k in kinds if k in self.idle_gpu_hours},
            "topIdleAllocations": [
                {"name": a.name, "team": a.team, "project": a.project, "capacityType": a.capacity_type, "gpuHours": _hours(a.gpu_hours),
                 "utilization": round(a.utilization, 4), "idleGpuHours": _hours(a.idle_gpu_hours), "idleUsd": _cents(a.idle_usd)}
                for a in self.top_idle
            ],
            "totalUsd": _cents(sum((r.total_usd for r in self.rows), Decimal(0))),
            "unattributed": self.unattributed.to_dict(),
        }


def _cents(value: Decimal) -> float:
    return float(value.quantize(_CENT, rounding=ROUND_HALF_UP))


def _hours(value: Decimal) -> float:
    return float(value.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def _team_order(team: str) -> tuple[int, str]:
    return (1 if team == UNATTRIBUTED else 0, team)


def compute_showback(
    records: Sequence[UsageRecord],
    prices: ShowbackPrices,
    *,
    teams: TeamsFile | None = None,
    onprem_gpus: int | None = None,
    window_hours: float | None = None,
    top: int = 10,
    file: str = "usage export",
) -> Showback:
    """Attribute, price and share idle cost (rules in the module docstring).

    Args:
        records: the export's records (:func:`parse_usage`).
        prices: USD per GPU-hour by capacity type.
        teams: the teams file (None: attribute by the ``team`` label only).
        onprem_gpus, window_hours: the owned fleet and the window's length (hours); together they
            add the owned GPU-hours no allocation held to the idle capacity.
        top: how many idle allocations to list.
        file: the export, named in errors.

    Returns:
        The :class:`Showback`.

    Raises:
        UsageError: a capacity type in use has no price, or the owned usage exceeds the fleet's GPU-hours.
    """
    attribute = _Attributor(teams)
    rows: dict[tuple[str, str], ShowbackRow] = {}
    used: dict[str, Decimal] = defaultdict(Decimal)
    idle_hours: dict[str, Decimal] = defaultdict(Decimal)
    idle_by_model: dict[tuple[str, str | None], Decimal] = defaultdict(Decimal)  # idle GPU-hours with the model they are priced by
    idle_priced: dict[tuple[str, str | None], Decimal] = defaultdict(Decimal)  # OpenCost idle cost without GPU-hours
    held: list[tuple[float, str, UsageRecord, tuple[str, str]]] = []
    record_count: dict[tuple[str, str | None], int] = defaultdict(int)
    days = set()
    lost = Unattributed()
    lost_namespaces: set[str] = set()
    for rec in records:
        if rec.day:
            days.add(rec.day)
        if rec.kind == "idle":
            if rec.idle_usd is not None:
                idle_priced[(rec.capacity_type, rec.gpu_model)] += rec.idle_usd
            else:
                idle_hours[rec.capacity_type] += rec.gpu_hours
                idle_by_model[(rec.capacity_type, rec.gpu_model)] += rec.gpu_hours
            continue
        who = attribute(rec)
        if who[0] == UNATTRIBUTED:
            lost.records += 1
            lost.gpu_hours += rec.gpu_hours
            label = _label(rec.labels, "team")
            if label:
                lost.team_labels[label] = lost.team_labels.get(label, 0) + 1
            else:
                lost.without_team_label += 1
            if rec.namespace:
                lost_namespaces.add(rec.namespace)
        row = rows.get(who)
        if row is None:
            row = rows[who] = ShowbackRow(*who)
        row.gpu_hours[rec.capacity_type] = row.gpu_hours.get(rec.capacity_type, Decimal(0)) + rec.gpu_hours
        key = (rec.capacity_type, rec.gpu_model)
        row.hours_by_model[key] = row.hours_by_model.get(key, Decimal(0)) + rec.gpu_hours
        record_count[key] += 1
        used[rec.capacity_type] += rec.gpu_hours
        if rec.utilization is not None and rec.utilization < 1 and rec.gpu_hours > 0:
            held.append((float(rec.gpu_hours) * (1 - rec.utilization), rec.name, rec, who))
    if onprem_gpus is not None and window_hours is not None:
        capacity = Decimal(onprem_gpus) * Decimal(repr(window_hours))
        if used["owned"] > capacity:
            raise UsageError([Issue.in_entry(file, None, "capacity_type", f"owned usage {used['owned']:.2f} GPU-hours exceeds the fleet's {capacity} "
                                             f"({onprem_gpus} GPUs x {window_hours:g} h)", "give the fleet's GPU count (--onprem-gpus) and the export's window (--window-hours)")])
        idle_hours["owned"] += capacity - used["owned"]
        idle_by_model[("owned", None)] += capacity - used["owned"]
    needed = sorted(set(used) | {k for k, v in idle_hours.items() if v > 0} | {k for k, _ in idle_priced}, key=list(CAPACITY_TYPES).index)
    missing = [k for k in needed if k not in prices.usd_per_gpu_hour]
    if missing:
        raise UsageError([Issue.in_entry(file, None, "capacity_type", f"no price for {', '.join(missing)} GPU-hours",
                                         "pass --stack with that capacity (its cost report prices it) or --price " + ",".join(f"{k}=USD" for k in missing))])
    price = {k: prices.usd_per_gpu_hour[k] for k in needed}
    model_prices: dict[str, dict[str, Decimal]] = defaultdict(dict)
    blended: dict[str, Blended] = {}

    def priced(kind: str, model: str | None, hours: Decimal, count: int) -> Decimal:
        """USD per GPU-hour of (kind, model); usage at the blended rate is counted in ``blended``."""
        usd, is_blended = prices.price(kind, model)
        if not is_blended:
            assert model is not None
            model_prices[kind][model] = usd
            return usd
        if not prices.blended_models.get(kind):
            return usd  # a price given without GPU models (--price): nothing is blended
        b = blended.setdefault(kind, Blended(usd, tuple(prices.blended_models.get(kind, ()))))
        b.records += count
        b.gpu_hours += hours
        if model is not None and model not in b.row_models:
            b.row_models.append(model)
        return usd

    idle_usd: dict[str, Decimal] = defaultdict(Decimal)
    for (kind, model), usd in idle_priced.items():
        rate = prices.price(kind, model)[0]
        if rate <= 0:
            raise UsageError([Issue.in_entry(file, None, "gpuCost", f"idle {kind} cost {usd} USD cannot be turned into GPU-hours at a price of 0",
                                             f"give {kind} a price above 0 (--price {kind}=USD)")])
        priced(kind, model, usd / rate, 0)
        idle_hours[kind] += usd / rate
        idle_usd[kind] += usd
    for (kind, model), hours in idle_by_model.items():
        if hours:
            idle_usd[kind] += hours * priced(kind, model, hours, 0)
    for row in rows.values():
        for (kind, model), hours in row.hours_by_model.items():
            row.cost_usd[kind] = row.cost_usd.get(kind, Decimal(0)) + hours * priced(kind, model, hours, record_count[(kind, model)])
    for b in blended.values():
        b.row_models.sort()
    idle_usd = {k: idle_usd[k] for k in needed if idle_usd.get(k)}
    for kind, usd in idle_usd.items():
        if used[kind] > 0:
            for row in rows.values():
                if kind in row.gpu_hours:
                    row.idle_usd[kind] = usd * row.gpu_hours[kind] / used[kind]
        else:
            row = rows.setdefault((UNATTRIBUTED, NO_PROJECT), ShowbackRow(UNATTRIBUTED, NO_PROJECT))
            row.idle_usd[kind] = usd
    top_idle = []
    for _, _, rec, who in heapq.nsmallest(max(top, 0), held, key=lambda h: (-h[0], h[1])):
        idle = rec.gpu_hours * (Decimal(1) - Decimal(repr(rec.utilization)))
        top_idle.append(IdleAllocation(rec.name, who[0], who[1], rec.capacity_type, rec.gpu_hours, rec.utilization or 0.0, idle,
                                       idle * prices.price(rec.capacity_type, rec.gpu_model)[0]))
    ordered = sorted(rows.values(), key=lambda r: (*_team_order(r.team), r.project))
    lost.namespaces = sorted(lost_namespaces)
    return Showback(ordered, {k: idle_hours[k] for k in needed if idle_hours.get(k)}, idle_usd, top_idle, price, sorted(days), lost,
                    {k: dict(v) for k, v in model_prices.items()}, blended)
