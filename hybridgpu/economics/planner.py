"""Hybrid capacity plan: the cheapest mix of on-prem GPUs, commitments, spot and On-Demand for a demand profile.

The model (a mixed-integer LP, solved exactly by HiGHS through ``highspy``; docs/economics.md)
-----------------------------------------------------------------------------------------
Given hourly demand ``d_t`` (GPUs) of which ``c_t`` checkpoints and ``n_t = d_t - c_t`` does not:

* decision variables: ``P`` on-prem GPUs and ``R_k`` GPUs committed under each commitment
  option ``k`` (integers counting servers / instances of ``unit`` GPUs each when
  ``integer=True``, continuous GPUs otherwise), and per hour: on-prem GPUs used ``uP_t``,
  committed GPUs used ``uR_t``, On-Demand GPUs ``o_t``, spot GPUs ``s_t`` (productive GPUs:
  the spot price carries the expected interruption waste), and the checkpointing work still
  queued at the end of the hour ``b_t`` (only with a maximum wait);
* cost over the ``H`` hours of the profile:
  ``H x (P x f_onprem + sum_k R_k x r_k) + sum_t (uP_t x v_onprem + o_t x p_od + s_t x p_spot)``
  - on-prem and commitments are paid every hour, used or not;
* every hour: ``uP_t <= P``; ``uR_t <= sum_k R_k``;
  ``uP_t + uR_t + o_t + s_t + b_t - b_{t-1} >= d_t`` (all work served, or queued);
  ``uP_t + uR_t + o_t >= n_t`` (work that does not checkpoint never runs on spot and never waits);
  ``s_t <= spot cap``, ``o_t <= On-Demand cap``;
* maximum wait ``W`` hours: ``0 <= b_t <= c_{t-W+1} + ... + c_t`` and ``b_H = 0``. With
  first-in-first-out service, a backlog no larger than the checkpointing work that arrived in
  the last ``W`` hours means nothing older than ``W`` hours is still waiting. ``W = 0`` means
  no queueing (no ``b`` variables).

Exact aggregation: with ``W = 0`` no constraint links two hours except through ``P`` and ``R``,
so hours with the same ``(d_t, c_t)`` have the same set of feasible hourly decisions and the
same costs; averaging their hourly decisions in any optimal solution gives another optimal
solution, so one variable block per distinct ``(d, c)`` pair, weighted by how many hours have
it, has the same optimum. With ``W > 0`` hours are linked through ``b`` and every hour keeps
its own block.

Queueing, fast (exact): with ``W > 0``, whole units and an on-prem running price no higher than
On-Demand, :func:`solve_plan` does not build this MILP. :mod:`hybridgpu.economics.planner_fast`
prices every (on-prem servers, committed instances) pair up to the peak exactly (capacity above
the peak never lowers the running cost), serves work that does not checkpoint on the cheapest
capacity of its hour, and gets the cheapest service of the checkpointing work from nested
maximum flows with interval windows (Hall deficiencies by a dynamic programme, then path
max-flows for the hourly dispatch). Its module docstring has the proof; the MILP stays
reachable with ``method="milp"`` and a property test compares the two.

The simple alternatives (all On-Demand, all committed at peak, on-prem sized to the peak, the
seeds' "reserve the floor, spot and On-Demand above it") are explicit feasible points of the
same problem, costed by the same :func:`dispatch_cost`; the optimum can therefore never cost
more than any of them (a property test checks it). Nothing here imports Pulumi.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from hybridgpu.economics import planner_fast
from hybridgpu.economics.costmodel import OnPremCostModel
from hybridgpu.economics.demand import DemandProfile
from hybridgpu.errors import HybridGpuError
from hybridgpu.highs import quiet_highs

__all__ = [
    "Alternative",
    "CapacityPrices",
    "Dispatch",
    "Plan",
    "PlanConstraints",
    "PlanError",
    "alternatives",
    "check_dispatch",
    "dispatch_cost",
    "dispatch_for_capacity",
    "quiet_highs",
    "solve_plan",
]


_INF = 1e30  # HiGHS' infinity


class PlanError(HybridGpuError):
    """The plan cannot be solved (infeasible caps, bad prices) - the message says which input to change."""


@dataclass(frozen=True)
class CapacityPrices:
    """Prices of the capacity kinds, per GPU (USD). Built from the price data by the caller.

    Attributes:
        on_demand_usd_per_gpu_hour: On-Demand price per GPU-hour.
        spot_usd_per_productive_gpu_hour: spot price per productive GPU-hour (waste included);
            None = no spot.
        commitments: ``(name, USD per GPU-hour paid every hour)`` per commitment option.
        onprem_fixed_usd_per_gpu_hour: on-prem fixed cost ``F / 8760`` per owned GPU-hour;
            None = no on-prem option.
        onprem_usd_per_used_gpu_hour: on-prem busy power per used GPU-hour.
        onprem_unit_gpus: GPUs per on-prem server (capacity unit when integer).
        commitment_unit_gpus: GPUs per committed instance (capacity unit when integer).
    """

    on_demand_usd_per_gpu_hour: float
    spot_usd_per_productive_gpu_hour: float | None = None
    commitments: tuple[tuple[str, float], ...] = ()
    onprem_fixed_usd_per_gpu_hour: float | None = None
    onprem_usd_per_used_gpu_hour: float = 0.0
    onprem_unit_gpus: int = 8
    commitment_unit_gpus: int = 8

    def __post_init__(self) -> None:
        values = [self.on_demand_usd_per_gpu_hour, self.onprem_usd_per_used_gpu_hour, *(r for _, r in self.commitments)]
        values += [v for v in (self.spot_usd_per_productive_gpu_hour, self.onprem_fixed_usd_per_gpu_hour) if v is not None]
        if any(not math.isfinite(v) or v < 0 for v in values):
            raise PlanError(f"prices must be finite numbers >= 0 USD/GPU-hour, got {values}")
        if self.onprem_unit_gpus < 1 or self.commitment_unit_gpus < 1:
            raise PlanError("capacity units must be >= 1 GPU")
        names = [n for n, _ in self.commitments]
        if len(set(names)) != len(names):
            raise PlanError(f"duplicate commitment names {names}")

    @property
    def cheapest_commitment(self) -> tuple[str, float] | None:
        """``(name, USD per GPU-hour)`` of the cheapest commitment option (the first on ties), or None without one."""
        return min(self.commitments, key=lambda kv: kv[1]) if self.commitments else None

    @classmethod
    def build(
        cls,
        on_demand_usd_per_gpu_hour: float,
        *,
        spot_usd_per_productive_gpu_hour: float | None = None,
        commitments: dict[str, float] | None = None,
        onprem: OnPremCostModel | None = None,
        commitment_unit_gpus: int = 8,
    ) -> CapacityPrices:
        """Convenience constructor taking the on-prem prices and unit from an :class:`OnPremCostModel`."""
        return cls(
            on_demand_usd_per_gpu_hour=on_demand_usd_per_gpu_hour,
            spot_usd_per_productive_gpu_hour=spot_usd_per_productive_gpu_hour,
            commitments=tuple((commitments or {}).items()),
            onprem_fixed_usd_per_gpu_hour=onprem.fixed_usd_per_gpu_hour if onprem else None,
            onprem_usd_per_used_gpu_hour=onprem.usd_per_used_gpu_hour if onprem else 0.0,
            onprem_unit_gpus=onprem.gpus_per_server if onprem else 8,
            commitment_unit_gpus=commitment_unit_gpus,
        )


@dataclass(frozen=True)
class PlanConstraints:
    """Limits of the plan.

    Attributes:
        max_wait_hours: hours checkpointing work may queue (0 = served in its hour).
        spot_max_gpus: most spot GPUs in any hour (None = unlimited), e.g. a NodePool limit.
        on_demand_max_gpus: most On-Demand GPUs in any hour (None = unlimited).
        onprem_max_gpus: most on-prem GPUs to own (None = unlimited).
        integer: buy on-prem servers and committed instances whole (MILP) instead of GPU fractions (LP).
    """

    max_wait_hours: int = 0
    spot_max_gpus: float | None = None
    on_demand_max_gpus: float | None = None
    onprem_max_gpus: float | None = None
    integer: bool = True

    def __post_init__(self) -> None:
        if self.max_wait_hours < 0:
            raise PlanError(f"max_wait_hours must be >= 0, got {self.max_wait_hours}")
        for name in ("spot_max_gpus", "on_demand_max_gpus", "onprem_max_gpus"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value < 0):
                raise PlanError(f"{name} must be >= 0 or None, got {value}")


@dataclass(frozen=True)
class Dispatch:
    """A complete solution: capacities and what serves each hour (arrays of shape ``(hours,)``, GPUs).

    Attributes:
        onprem_gpus: on-prem GPUs owned.
        commitment_gpus: commitment name -> GPUs committed.
        onprem_used, committed_used, on_demand, spot: GPUs used per hour.
        backlog: checkpointing work queued at the end of each hour (GPU-hours).
    """

    onprem_gpus: float
    commitment_gpus: dict[str, float]
    onprem_used: np.ndarray
    committed_used: np.ndarray
    on_demand: np.ndarray
    spot: np.ndarray
    backlog: np.ndarray


def dispatch_cost(prices: CapacityPrices, dispatch: Dispatch) -> dict[str, float]:
    """Cost of a dispatch over its hours (USD), by kind.

    Returns:
        ``{"onprem", <each commitment name>, "on-demand", "spot", "total"}``.
    """
    hours = dispatch.on_demand.size
    rates = dict(prices.commitments)
    out = {"onprem": 0.0}
    if dispatch.onprem_gpus:
        out["onprem"] = dispatch.onprem_gpus * (prices.onprem_fixed_usd_per_gpu_hour or 0.0) * hours
    out["onprem"] += float(dispatch.onprem_used.sum()) * prices.onprem_usd_per_used_gpu_hour
    for name in rates:
        out[name] = dispatch.commitment_gpus.get(name, 0.0) * rates[name] * hours
    out["on-demand"] = float(dispatch.on_demand.sum()) * prices.on_demand_usd_per_gpu_hour
    out["spot"] = float(dispatch.spot.sum()) * (prices.spot_usd_per_productive_gpu_hour or 0.0)
    out["total"] = sum(out.values())
    return out


def _window_sums(ckpt: np.ndarray, wait: int) -> np.ndarray:
    csum = np.concatenate([[0.0], np.cumsum(ckpt)])
    idx = np.arange(ckpt.size)
    return csum[idx + 1] - csum[np.maximum(idx + 1 - wait, 0)]


def check_dispatch(demand: DemandProfile, prices: CapacityPrices, constraints: PlanConstraints, dispatch: Dispatch, tol: float = 1e-6) -> list[str]:
    """Every constraint of the model the dispatch violates (empty list = feasible).

    Returns:
        Human-readable violations, e.g. ``"hour 12: demand not covered (3 GPUs short)"``.
    """
    problems: list[str] = []
    d, c = demand.gpus, demand.checkpointable
    n = d - c
    arrays = {"onprem_used": dispatch.onprem_used, "committed_used": dispatch.committed_used, "on_demand": dispatch.on_demand,
              "spot": dispatch.spot, "backlog": dispatch.backlog}
    for name, arr in arrays.items():
        if arr.shape != d.shape:
            return [f"{name} has shape {arr.shape}, demand has {d.shape}"]
        if (arr < -tol).any():
            problems.append(f"{name} is negative in hour {int(np.argmax(arr < -tol))}")
    committed = sum(dispatch.commitment_gpus.values())
    unknown = set(dispatch.commitment_gpus) - {name for name, _ in prices.commitments}
    if unknown:
        problems.append(f"commitments {sorted(unknown)} have no price")
    if dispatch.onprem_gpus > tol and prices.onprem_fixed_usd_per_gpu_hour is None:
        problems.append("on-prem GPUs without an on-prem option")
    if constraints.onprem_max_gpus is not None and dispatch.onprem_gpus > constraints.onprem_max_gpus + tol:
        problems.append(f"on-prem {dispatch.onprem_gpus:g} GPUs above the cap {constraints.onprem_max_gpus:g}")
    if constraints.integer:
        if abs(dispatch.onprem_gpus / prices.onprem_unit_gpus - round(dispatch.onprem_gpus / prices.onprem_unit_gpus)) > tol:
            problems.append(f"on-prem {dispatch.onprem_gpus:g} GPUs is not a whole number of {prices.onprem_unit_gpus}-GPU servers")
        for name, gpus in dispatch.commitment_gpus.items():
            if abs(gpus / prices.commitment_unit_gpus - round(gpus / prices.commitment_unit_gpus)) > tol:
                problems.append(f"{name} {gpus:g} GPUs is not a whole number of {prices.commitment_unit_gpus}-GPU instances")
    checks = [
        (dispatch.onprem_used > dispatch.onprem_gpus + tol, "on-prem use above the on-prem GPUs"),
        (dispatch.committed_used > committed + tol, "committed use above the committed GPUs"),
        (dispatch.onprem_used + dispatch.committed_used + dispatch.on_demand < n - tol, "work that does not checkpoint not covered without spot"),
    ]
    prev = np.concatenate([[0.0], dispatch.backlog[:-1]])
    served = dispatch.onprem_used + dispatch.committed_used + dispatch.on_demand + dispatch.spot
    checks.append((served + dispatch.backlog - prev < d - tol, "demand not covered"))
    if prices.spot_usd_per_productive_gpu_hour is None:
        checks.append((dispatch.spot > tol, "spot used without a spot option"))
    if constraints.spot_max_gpus is not None:
        checks.append((dispatch.spot > constraints.spot_max_gpus + tol, "spot above its cap"))
    if constraints.on_demand_max_gpus is not None:
        checks.append((dispatch.on_demand > constraints.on_demand_max_gpus + tol, "On-Demand above its cap"))
    if constraints.max_wait_hours == 0:
        checks.append((dispatch.backlog > tol, "work queued although the maximum wait is 0"))
    else:
        checks.append((dispatch.backlog > _window_sums(c, constraints.max_wait_hours) + tol, f"work queued longer than {constraints.max_wait_hours} h"))
    if dispatch.backlog.size and dispatch.backlog[-1] > tol:
        problems.append("work still queued at the end of the profile")
    for mask, message in checks:
        if mask.any():
            problems.append(f"hour {int(np.argmax(mask))}: {message} ({int(mask.sum())} hours)")
    return problems


def dispatch_for_capacity(demand: DemandProfile, prices: CapacityPrices, constraints: PlanConstraints, onprem_gpus: float, commitment_gpus: dict[str, float]) -> Dispatch | None:
    """The cheapest hour-by-hour use of fixed capacities, without queueing.

    Committed GPUs serve first (already paid, no running cost), then on-prem (busy power), then
    what is left: work that does not checkpoint on On-Demand, checkpointing work on spot when
    spot is cheaper, up to its cap, and On-Demand beyond. Without queueing this is optimal for
    the given capacities (every hour is independent and served in price order).

    Returns:
        The :class:`Dispatch`, or None if the On-Demand cap makes it infeasible.
    """
    d, c = demand.gpus, demand.checkpointable
    n = d - c
    committed = sum(commitment_gpus.values())
    u_r = np.minimum(committed, d)
    u_p = np.minimum(onprem_gpus, d - u_r)
    covered = u_r + u_p
    rest_n = np.maximum(n - covered, 0)
    rest_c = d - covered - rest_n
    spot_price = prices.spot_usd_per_productive_gpu_hour
    if spot_price is not None and spot_price < prices.on_demand_usd_per_gpu_hour:
        s = rest_c if constraints.spot_max_gpus is None else np.minimum(rest_c, constraints.spot_max_gpus)
    else:
        s = np.zeros_like(d)
    o = rest_n + rest_c - s
    if constraints.on_demand_max_gpus is not None and (o > constraints.on_demand_max_gpus + 1e-9).any():
        return None
    return Dispatch(float(onprem_gpus), dict(commitment_gpus), u_p, u_r, o, s, np.zeros_like(d))


@dataclass(frozen=True)
class Alternative:
    """A simple capacity choice priced by the same model.

    Attributes:
        name: e.g. ``all On-Demand``.
        description: how the capacities were chosen.
        dispatch: its solution, or None when infeasible under the caps.
        cost: :func:`dispatch_cost` of it (empty when infeasible).
    """

    name: str
    description: str
    dispatch: Dispatch | None
    cost: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float | None:
        """Total cost (USD), None when infeasible."""
        return self.cost.get("total") if self.dispatch is not None else None


def _round_up(x: float, unit: int, integer: bool) -> float:
    return float(math.ceil(x / unit - 1e-9) * unit) if integer else float(x)


def _round_down(x: float, unit: int, integer: bool) -> float:
    return float(math.floor(x / unit + 1e-9) * unit) if integer else float(x)


def alternatives(demand: DemandProfile, prices: CapacityPrices, constraints: PlanConstraints) -> list[Alternative]:
    """The simple alternatives the plan is compared with (each a feasible point of the same problem, or marked infeasible).

    * all On-Demand;
    * all committed at peak: the cheapest commitment option sized to the peak (rounded up to instances);
    * on-prem sized to the peak (rounded up to servers), when on-prem is an option;
    * reserve the floor (the seeds' hybrid stack): the cheapest commitment sized to the lowest
      hourly demand (rounded down), spot for checkpointing work above it, On-Demand for the rest.
    """
    out: list[Alternative] = []

    def add(name: str, description: str, onprem: float, commit: dict[str, float]) -> None:
        if constraints.onprem_max_gpus is not None and onprem > constraints.onprem_max_gpus:
            out.append(Alternative(name, description + " (above the on-prem cap)", None))
            return
        dispatch = dispatch_for_capacity(demand, prices, constraints, onprem, commit)
        out.append(Alternative(name, description, dispatch, dispatch_cost(prices, dispatch) if dispatch else {}))

    add("all On-Demand", "no owned or committed capacity", 0.0, {})
    cheapest = prices.cheapest_commitment
    if cheapest is not None:
        name, _ = cheapest
        peak = _round_up(demand.peak, prices.commitment_unit_gpus, constraints.integer)
        add("all committed at peak", f"{peak:g} GPUs {name}", 0.0, {name: peak})
    if prices.onprem_fixed_usd_per_gpu_hour is not None:
        peak = _round_up(demand.peak, prices.onprem_unit_gpus, constraints.integer)
        add("on-prem sized to peak", f"{peak:g} on-prem GPUs", peak, {})
    if cheapest is not None:
        name, _ = cheapest
        floor = _round_down(demand.floor, prices.commitment_unit_gpus, constraints.integer)
        add("reserve the floor", f"{floor:g} GPUs {name}, spot and On-Demand above", 0.0, {name: floor})
    return out


@dataclass(frozen=True)
class Plan:
    """The optimal plan and its comparison.

    Attributes:
        dispatch: the optimal capacities and hourly use.
        cost: :func:`dispatch_cost` of it (USD over the profile).
        objective: HiGHS' objective value (USD; equals ``cost["total"]`` up to solver tolerance).
        alternatives: the simple alternatives (see :func:`alternatives`).
        solve_seconds: wall time of building and solving the model (s).
        variables, rows: size of the model passed to HiGHS.
        aggregated: True when identical hours were merged (no queueing).
        method: ``"milp"`` (the model above, HiGHS) or ``"fast"`` (queueing, the exact grid search
            of :mod:`hybridgpu.economics.planner_fast`; ``variables`` then counts the capacity
            combinations priced and ``rows`` is 0: no solver model).
    """

    dispatch: Dispatch
    cost: dict[str, float]
    objective: float
    alternatives: list[Alternative]
    solve_seconds: float
    variables: int
    rows: int
    aggregated: bool
    method: str = "milp"

    def savings(self) -> dict[str, float | None]:
        """Fraction saved against each feasible alternative: ``1 - plan / alternative`` (None if infeasible)."""
        out: dict[str, float | None] = {}
        for alt in self.alternatives:
            total = alt.total
            out[alt.name] = None if total is None or total <= 0 else 1 - self.cost["total"] / total
        return out


def solve_plan(demand: DemandProfile, prices: CapacityPrices, constraints: PlanConstraints | None = None, *, aggregate: bool = True,
               time_limit_seconds: float = 60.0, method: str = "auto") -> Plan:
    """Solve the capacity plan exactly (model in the module docstring).

    Args:
        demand: hourly demand.
        prices: capacity prices.
        constraints: limits (default: no caps, no queueing, whole servers/instances).
        aggregate: merge identical hours when there is no queueing (exact; see the module
            docstring). False keeps one block per hour (for tests and benchmarks).
        time_limit_seconds: HiGHS time limit (s).
        method: ``"auto"`` (the exact fast path of :mod:`hybridgpu.economics.planner_fast` when
            its preconditions hold: a maximum wait > 0, whole units, on-prem running price <=
            On-Demand price; else the MILP), ``"milp"`` (always the MILP) or ``"fast"`` (the fast
            path, PlanError when its preconditions do not hold).

    Returns:
        The :class:`Plan`, with the alternatives.

    Raises:
        PlanError: no feasible plan (e.g. an On-Demand cap below what spot and owned capacity
            cannot cover), or HiGHS did not reach an optimum within the time limit, or an
            unknown ``method``.
    """
    import highspy

    constraints = constraints or PlanConstraints()
    if method not in ("auto", "milp", "fast"):
        raise PlanError(f"method must be 'auto', 'milp' or 'fast', got {method!r}")
    if method != "milp":
        reason = planner_fast.fast_path_reason(_fast_prices(prices, constraints), constraints.integer, demand.peak, demand.hours)
        if reason is None:
            return _solve_queueing_fast(demand, prices, constraints)
        if method == "fast":
            raise PlanError(f"the fast path does not apply ({reason}); use method='milp' or 'auto'")
    started = time.perf_counter()
    d_all, c_all = demand.gpus, demand.checkpointable
    wait = constraints.max_wait_hours
    aggregated = aggregate and wait == 0
    if aggregated:
        pairs, inverse, counts = np.unique(np.stack([d_all, c_all], axis=1), axis=0, return_inverse=True, return_counts=True)
        d, c, w = pairs[:, 0], pairs[:, 1], counts.astype(float)
        inverse = inverse.reshape(-1)
    else:
        d, c, w = d_all, c_all, np.ones_like(d_all)
        inverse = np.arange(d_all.size)
    n = d - c
    groups = d.size
    hours = float(d_all.size)
    # Dominance (exact): committed GPUs of every option are paid every hour, have no running
    # cost and come in the same unit, so only the cheapest option can be in an optimum; the
    # others stay at 0 without being model columns (fewer integer variables for HiGHS).
    cheapest = prices.cheapest_commitment
    names = [cheapest[0]] if cheapest else []
    k = len(names)
    unit_p = prices.onprem_unit_gpus if constraints.integer else 1
    unit_r = prices.commitment_unit_gpus if constraints.integer else 1
    blocks = 5 if wait > 0 else 4
    off = 1 + k
    n_cols = off + blocks * groups
    g = np.arange(groups)
    col_up, col_ur, col_o, col_s, col_b = (off + i * groups + g for i in range(5))

    cost = np.zeros(n_cols)
    lower = np.zeros(n_cols)
    upper = np.full(n_cols, _INF)
    onprem_price = prices.onprem_fixed_usd_per_gpu_hour
    cost[0] = unit_p * (onprem_price or 0.0) * hours
    if onprem_price is None:
        upper[0] = 0
    elif constraints.onprem_max_gpus is not None:
        upper[0] = math.floor(constraints.onprem_max_gpus / unit_p + 1e-9) if constraints.integer else constraints.onprem_max_gpus
    if cheapest is not None:
        cost[1] = unit_r * cheapest[1] * hours
    cost[col_up] = w * prices.onprem_usd_per_used_gpu_hour
    cost[col_o] = w * prices.on_demand_usd_per_gpu_hour
    if constraints.on_demand_max_gpus is not None:
        upper[col_o] = constraints.on_demand_max_gpus
    if prices.spot_usd_per_productive_gpu_hour is None:
        upper[col_s] = 0
    else:
        cost[col_s] = w * prices.spot_usd_per_productive_gpu_hour
        if constraints.spot_max_gpus is not None:
            upper[col_s] = constraints.spot_max_gpus
    if wait > 0:
        upper[col_b] = _window_sums(c, wait)
        upper[col_b[-1]] = 0

    # Coefficients below 1e-9 USD are noise to a floating-point solver (a subnormal price made
    # HiGHS run into its time limit on a 41-hour model, found by the property test): drop them.
    cost[np.abs(cost) < 1e-9] = 0.0

    rows, cols, vals = [], [], []

    def put(r: np.ndarray, cc: np.ndarray | int, v: float) -> None:
        rows.append(r)
        cols.append(np.broadcast_to(cc, r.shape))
        vals.append(np.full(r.shape, v))

    # R1: uP_g - unit_p P <= 0
    put(g, col_up, 1.0)
    put(g, 0, -unit_p)
    # R2: uR_g - unit_r sum_k R_k <= 0
    put(groups + g, col_ur, 1.0)
    for i in range(k):
        put(groups + g, 1 + i, -unit_r)
    # R3: uP + uR + o + s (+ b_g - b_{g-1}) >= d
    for col in (col_up, col_ur, col_o, col_s):
        put(2 * groups + g, col, 1.0)
    if wait > 0:
        put(2 * groups + g, col_b, 1.0)
        put(2 * groups + g[1:], col_b[:-1], -1.0)
    # R4: uP + uR + o >= n
    for col in (col_up, col_ur, col_o):
        put(3 * groups + g, col, 1.0)
    row_idx = np.concatenate(rows)
    col_idx = np.concatenate(cols)
    values = np.concatenate(vals)
    order = np.lexsort((row_idx, col_idx))
    starts = np.concatenate([[0], np.cumsum(np.bincount(col_idx, minlength=n_cols))])
    row_lower = np.concatenate([np.full(2 * groups, -_INF), d, n])
    row_upper = np.concatenate([np.zeros(2 * groups), np.full(2 * groups, _INF)])

    lp = highspy.HighsLp()
    lp.num_col_ = n_cols
    lp.num_row_ = 4 * groups
    lp.col_cost_ = cost
    lp.col_lower_ = lower
    lp.col_upper_ = upper
    lp.row_lower_ = row_lower
    lp.row_upper_ = row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = starts.astype(np.int32)
    lp.a_matrix_.index_ = row_idx[order].astype(np.int32)
    lp.a_matrix_.value_ = values[order]
    if constraints.integer:
        integrality = [highspy.HighsVarType.kContinuous] * n_cols
        for i in range(1 + k):
            integrality[i] = highspy.HighsVarType.kInteger
        lp.integrality_ = integrality
    h = quiet_highs()
    h.setOptionValue("time_limit", float(time_limit_seconds))
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-6)
    # Dual simplex: chosen from a one-off manual reading of a HiGHS log (2026-11-22, 2 vCPUs), not
    # from benchmarks/economics_bench.py (which does not compare strategies); a later manual rerun
    # found no strategy clearly faster (benchmarks/README.md, economics section).
    h.setOptionValue("simplex_strategy", 1)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        raise PlanError(
            "no feasible plan: the caps leave some hours uncovered; raise the On-Demand cap, the spot cap or the on-prem cap, or allow a longer maximum wait"
        )
    if status != highspy.HighsModelStatus.kOptimal:
        raise PlanError(f"HiGHS stopped without an optimum ({h.modelStatusToString(status)}); raise the time limit")
    x = np.asarray(h.getSolution().col_value)
    objective = float(h.getInfo().objective_function_value)

    def hourly(col: np.ndarray) -> np.ndarray:
        return np.maximum(x[col], 0.0)[inverse]

    onprem_gpus = float(round(x[0]) * unit_p) if constraints.integer else float(max(x[0], 0.0))
    commits = {name: 0.0 for name, _ in prices.commitments}
    for i, name in enumerate(names):
        commits[name] = float(round(x[1 + i]) * unit_r) if constraints.integer else float(max(x[1 + i], 0.0))
    backlog = hourly(col_b) if wait > 0 else np.zeros(d_all.size)
    dispatch = Dispatch(onprem_gpus, commits, hourly(col_up), hourly(col_ur), hourly(col_o), hourly(col_s), backlog)
    elapsed = time.perf_counter() - started
    return Plan(dispatch, dispatch_cost(prices, dispatch), objective, alternatives(demand, prices, constraints), elapsed, n_cols, 4 * groups, aggregated)


_INFEASIBLE = ("no feasible plan: the caps leave some hours uncovered; raise the On-Demand cap, the spot cap or the on-prem cap, "
               "or allow a longer maximum wait")


def _fast_prices(prices: CapacityPrices, constraints: PlanConstraints) -> planner_fast.FastPrices:
    """The prices and limits of :mod:`hybridgpu.economics.planner_fast` (only the cheapest commitment, as in the MILP)."""
    cheapest = prices.cheapest_commitment
    return planner_fast.FastPrices(
        onprem_fixed=prices.onprem_fixed_usd_per_gpu_hour, onprem_used=prices.onprem_usd_per_used_gpu_hour,
        commitment=cheapest[1] if cheapest else None, spot=prices.spot_usd_per_productive_gpu_hour,
        on_demand=prices.on_demand_usd_per_gpu_hour, unit_p=prices.onprem_unit_gpus, unit_r=prices.commitment_unit_gpus,
        onprem_max=constraints.onprem_max_gpus, spot_max=constraints.spot_max_gpus, on_demand_max=constraints.on_demand_max_gpus,
        wait=constraints.max_wait_hours)


def _solve_queueing_fast(demand: DemandProfile, prices: CapacityPrices, constraints: PlanConstraints) -> Plan:
    """The plan with queueing by the exact grid search of :mod:`hybridgpu.economics.planner_fast` (same model and optimum as the MILP).

    Raises:
        PlanError: no feasible plan (the same message as the MILP's), HiGHS found no optimum for
            the hourly dispatch, or the dispatch's cost differs from the grid's optimum (a bug).
    """
    started = time.perf_counter()
    cheapest = prices.cheapest_commitment
    fp = _fast_prices(prices, constraints)
    d, c = demand.gpus, demand.checkpointable
    best = planner_fast.grid_costs(d, c, fp)
    if best is None:
        raise PlanError(_INFEASIBLE)
    solved = planner_fast.dispatch_flow(d, c, fp, best.onprem_gpus, best.committed_gpus)
    if solved is None:
        raise PlanError("internal error: no hourly dispatch for the optimal capacities; retry with method='milp' and report it")
    onprem_used, committed_used, on_demand, spot, backlog = solved
    commits = {name: 0.0 for name, _ in prices.commitments}
    if cheapest is not None:
        commits[cheapest[0]] = best.committed_gpus
    dispatch = Dispatch(best.onprem_gpus, commits, onprem_used, committed_used, on_demand, spot, backlog)
    cost = dispatch_cost(prices, dispatch)
    if abs(cost["total"] - best.total) > 1e-6 * max(1.0, abs(best.total)):
        raise PlanError(f"internal error: the hourly dispatch costs {cost['total']:.6f} USD, the exact optimum is {best.total:.6f} USD; "
                        "retry with method='milp' and report it")
    elapsed = time.perf_counter() - started
    return Plan(dispatch, cost, best.total, alternatives(demand, prices, constraints), elapsed, best.points, 0, False, "fast")
