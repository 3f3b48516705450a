"""Exact fast path of the capacity plan with queueing (``max_wait_hours > 0``, whole units).

:func:`hybridgpu.economics.planner.solve_plan` uses this instead of the hour-by-hour MILP when
its preconditions hold (:func:`fast_path_reason` returns None). Same model and same optimum as
the MILP in the planner's module docstring; docs/economics.md ("Queueing, fast") has the
argument in prose. Notation: ``H`` hours, demand ``d_t``, checkpointing work ``c_t``, the rest
``n_t = d_t - c_t``, maximum wait ``W >= 1``, on-prem running price ``v``, spot price ``s``,
On-Demand price ``o``, cheapest commitment rate ``r``, on-prem fixed rate ``f`` (USD/GPU-hour).

Preconditions: ``W > 0``; ``integer=True``; ``v <= o`` (using an owned GPU costs no more than an
On-Demand one). Otherwise the MILP runs, unchanged.

Why it is exact
---------------
1. *Queue = deadlines.* ``b_t <= c_{t-W+1} + ... + c_t`` with ``b_{H-1} = 0`` holds for a
   service profile exactly when the work arriving in hour ``j`` can be served in hours
   ``j .. min(j+W, H-1)`` (first-in-first-out service of the queue). Serving more than the
   queue holds is waste, never cheaper, so the checkpointing part is a transportation problem:
   arrivals ``c_j`` with interval windows, per-hour capacities of each price tier.
2. *Two integer decisions, on a small grid.* Only the cheapest commitment is bought (the MILP's
   own dominance). With ``P`` on-prem GPUs and ``R`` committed GPUs fixed, take any optimal
   assignment of work to (hour, tier) and move all work on on-prem to the hour it arrived: the
   on-prem use of hour ``j`` is then at most ``d_j <= peak``, the running cost ``v`` per GPU-hour
   is unchanged and no deadline is missed. So on-prem capacity above the peak never lowers the
   running cost and only adds fixed cost; the same holds for committed capacity (price 0 per
   use). Hence ``P`` in ``0 .. ceil(peak/unit_p)`` servers (and under the on-prem cap) and ``R``
   in ``0 .. ceil(peak/unit_r)`` instances contain an optimum, and :func:`grid_costs` prices
   every point of that grid exactly; the minimum is the MILP's optimum (13 x 13 points for the
   sample year: peak 95 GPUs, 8-GPU units).
3. *Work that does not checkpoint first.* It must run in its hour on committed, on-prem or
   On-Demand capacity. In any optimal solution it may be moved onto the cheapest of those
   (committed at 0, then on-prem at ``v``, then On-Demand at ``o``, since ``v <= o``): where
   checkpointing work holds the cheaper capacity in the same hour, swapping the two changes no
   tier's use; where nobody holds it, the move lowers the cost. Infeasible when ``n_t`` exceeds
   ``R + P + On-Demand cap``.
4. *Checkpointing work by nested maximum flows.* What is left in each hour forms tiers sorted
   by price ``p_1 <= ... <= p_K`` (committed 0, on-prem ``v``, spot ``s`` up to its cap,
   On-Demand ``o`` up to what its cap leaves; an unlimited tier is clamped at the total
   checkpointing work ``C``, which changes nothing). Let ``A_k`` be the most checkpointing work
   servable on tiers ``1..k`` in its windows. Augmenting a maximum flow on tiers ``1..k`` to
   one on tiers ``1..k+1`` never lowers the flow into the older tiers (an augmenting path ends at
   the new tier's sink), so one flow serves ``A_k`` on tiers ``<= k`` for every ``k`` at once,
   and no flow does better on any prefix. Its cost is the minimum:
   ``p_K C - sum_{k<K} (p_{k+1} - p_k) A_k`` (infeasible when ``A_K < C``).
5. *A_k without a flow.* ``A_k = C - deficiency_k``. The windows are intervals, so by Hall's
   theorem for interval (convex) bipartite graphs the deficiency is the largest
   ``sum_I (work whose window lies in I - capacity of I)`` over families of disjoint hour
   intervals ``I`` (0 for the empty family). With cumulative sums ``Cc`` (arrivals) and ``Q``
   (capacity) and ``best[-1] = 0``, a dynamic programme over the last hour of the last interval
   gives it: ``best[t] = max(best[t-1], RM[t-W-1] + Cc[t-W] - Q[t])`` with
   ``M[j] = best[j] - Cc[j] + Q[j]`` and ``RM`` the running maximum of ``M`` (``M[-1] = 0``), and
   for the last hour, whose windows are clipped, ``best[H-1] = max(best[H-2], RM[H-2] + Cc[H-1] - Q[H-1])``.
   ``best[t]`` reads ``RM`` only up to ``t-W-1``, so a block of ``W+1`` hours is computed at once
   (``numpy.maximum.accumulate``), for every grid point and tier at once: about ``H/(W+1)``
   vectorised steps in all.
6. *The hourly dispatch.* For the optimal ``(P, R)`` the checkpointing part is a flow on a path
   (hours in a line; the backlog arc from hour ``t`` to ``t+1`` holds at most
   ``c_{t-W+1} + ... + c_t``, the model's own constraint; tier arcs per hour to the sink).
   :func:`dispatch_flow` runs the greedy of step 4 literally: tier by tier, cheapest first, a
   maximum flow into the new tier in the residual network, which keeps every older tier's use.
   On a path that maximum flow is a linear sweep (:func:`path_max_flow`), so no LP solver is
   needed (HiGHS took 5-7 s for that LP on the sample year, 2 loaded vCPUs, 2026-11-27). The caller checks that the
   dispatch costs the grid's optimum.

Nothing here imports Pulumi or another hybridgpu module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "FastPrices",
    "GridResult",
    "deficiencies",
    "dispatch_flow",
    "fast_path_reason",
    "grid_costs",
    "capacity_grid",
    "path_max_flow",
    "serve_others_first",
]

# Lanes (grid points x tiers) priced in one pass; bounds the working memory (lanes x hours floats).
_MAX_LANE_HOURS = 6_000_000
# Largest grid (points x hours) the fast path prices; beyond it the MILP runs. 169 points x 8,760
# hours took 0.12-0.45 s on 2 shared vCPUs (2026-11-27), so the limit is a few seconds at most.
_MAX_GRID_HOURS = 10_000_000


@dataclass(frozen=True)
class FastPrices:
    """The prices and limits the fast path needs (USD per GPU-hour; GPUs).

    Attributes:
        onprem_fixed: on-prem fixed rate per owned GPU-hour; None = no on-prem option.
        onprem_used: on-prem running price ``v`` per used GPU-hour.
        commitment: cheapest commitment rate per committed GPU-hour; None = no commitment.
        spot: spot price per productive GPU-hour; None = no spot.
        on_demand: On-Demand price ``o``.
        unit_p, unit_r: GPUs per on-prem server and per committed instance.
        onprem_max, spot_max, on_demand_max: caps in GPUs (None = unlimited).
        wait: maximum wait ``W`` in hours (>= 1).
    """

    onprem_fixed: float | None
    onprem_used: float
    commitment: float | None
    spot: float | None
    on_demand: float
    unit_p: int
    unit_r: int
    onprem_max: float | None
    spot_max: float | None
    on_demand_max: float | None
    wait: int


@dataclass(frozen=True)
class GridResult:
    """The priced grid and its minimum.

    Attributes:
        onprem_gpus, committed_gpus: the optimal capacities (GPUs).
        total: the optimal total cost (USD over the profile).
        points: grid points priced.
        feasible: grid points with a feasible dispatch.
    """

    onprem_gpus: float
    committed_gpus: float
    total: float
    points: int
    feasible: int


def fast_path_reason(fp: FastPrices, integer: bool, peak: float, hours: int) -> str | None:
    """Why the fast path does not apply (None = it applies; preconditions in the module docstring).

    Args:
        fp: prices and limits; integer: whole units; peak: the highest hourly demand (GPUs);
        hours: the profile's length.

    Returns:
        A short reason (e.g. ``"no queueing"``), or None. Grids with more than
        ``_MAX_GRID_HOURS`` point-hours (about 1,100 points for a year) also go to the MILP.
    """
    if fp.wait <= 0:
        return "no queueing"
    if not integer:
        return "continuous capacities"
    if fp.onprem_used > fp.on_demand:
        return "on-prem running price above On-Demand"
    onprem, committed = capacity_grid(peak, fp)
    if onprem.size * committed.size * hours > _MAX_GRID_HOURS:
        return f"{onprem.size * committed.size} capacity combinations to price"
    return None


def capacity_grid(peak: float, fp: FastPrices) -> tuple[np.ndarray, np.ndarray]:
    """The candidate capacities (GPUs): on-prem ``0 .. ceil(peak/unit_p)`` servers under the cap, committed ``0 .. ceil(peak/unit_r)``.

    Returns:
        ``(onprem_gpus, committed_gpus)``, 1-D float arrays (each starts at 0).
    """
    p_top = 0 if fp.onprem_fixed is None else int(np.ceil(peak / fp.unit_p - 1e-9))
    if fp.onprem_max is not None:
        p_top = min(p_top, int(np.floor(fp.onprem_max / fp.unit_p + 1e-9)))
    r_top = 0 if fp.commitment is None else int(np.ceil(peak / fp.unit_r - 1e-9))
    return np.arange(max(p_top, 0) + 1) * float(fp.unit_p), np.arange(max(r_top, 0) + 1) * float(fp.unit_r)


def serve_others_first(n: np.ndarray, onprem: np.ndarray, committed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Work that does not checkpoint on committed, then on-prem, then On-Demand capacity (step 3).

    Args:
        n: that work per hour (GPUs), shape ``(H,)``.
        onprem, committed: capacities (GPUs), shape ``(G,)``.

    Returns:
        ``(on committed, on on-prem, on On-Demand)``, each of shape ``(G, H)``.
    """
    on_r = np.minimum(n[None, :], committed[:, None])
    on_p = np.minimum(n[None, :] - on_r, onprem[:, None])
    return on_r, on_p, n[None, :] - on_r - on_p


def deficiencies(ckpt: np.ndarray, capacity: np.ndarray, wait: int) -> np.ndarray:
    """Checkpointing work that no schedule can serve within its window (step 5), per lane.

    Args:
        ckpt: checkpointing work arriving each hour (GPU-hours), shape ``(H,)``; work of hour
            ``j`` may be served in hours ``j .. min(j+wait, H-1)``.
        capacity: capacity per lane and hour (GPUs, finite, >= 0), shape ``(L, H)``.
        wait: ``W >= 1`` hours.

    Returns:
        The deficiency per lane (GPU-hours, >= 0), shape ``(L,)``.
    """
    lanes, hours = capacity.shape
    cc = np.concatenate([[0.0], np.cumsum(ckpt)])  # cc[i] = arrivals in hours < i
    # Hours along axis 0, lanes along axis 1: a block of hours is a contiguous slice.
    q = np.zeros((hours + 1, lanes))
    np.cumsum(capacity.T, axis=0, out=q[1:])
    step = wait + 1
    best_prev = np.zeros(lanes)  # best[a-1]
    # rm_block[i] = RM[a - step + i] for the block starting at hour a; RM[-1] = M[-1] = 0 and
    # hours before -1 do not exist (-inf).
    rm_block = np.full((step, lanes), -np.inf)
    rm_block[step - 1] = 0.0
    rm_last = np.zeros(lanes)
    last = hours - 1
    t_all = np.arange(hours)
    # arrivals[t] = Cc[t-W] (arrivals in hours <= t-W); -inf for t < W (no window inside [0, t]).
    arrivals = np.where(t_all - wait >= 0, cc[np.maximum(t_all - wait, 0) + 1], -np.inf)
    for a in range(0, last, step):
        b = min(a + step, last)  # this block: hours a .. b-1 (the last hour is done apart)
        width = b - a
        qb = q[a + 1 : b + 1]
        cand = rm_block[:width] + (arrivals[a:b, None] - qb)  # candidate[t] = RM[t-W-1] + Cc[t-W] - Q[t]
        np.maximum(cand[0], best_prev, out=cand[0])
        best = np.maximum.accumulate(cand, axis=0)
        m = best - cc[a + 1 : b + 1, None] + qb  # M[t] = best[t] - Cc[t] + Q[t]
        np.maximum(m[0], rm_last, out=m[0])
        rm = np.maximum.accumulate(m, axis=0)
        if width == step:
            rm_block = rm
        rm_last = rm[-1]
        best_prev = best[-1]
    final = np.maximum(best_prev, rm_last + cc[hours] - q[hours])
    return np.maximum(final, 0.0)


def _tiers(fp: FastPrices, total_ckpt: float, onprem: np.ndarray, committed: np.ndarray, on_p: np.ndarray, on_r: np.ndarray,
           on_o: np.ndarray) -> list[tuple[float, np.ndarray]]:
    """The price tiers left for checkpointing work (step 4): ``(price, capacity (G, H))``, sorted by price, unlimited clamped at ``total_ckpt``."""
    tiers = [(0.0, committed[:, None] - on_r), (fp.onprem_used, onprem[:, None] - on_p)]
    if fp.spot is not None:
        cap = total_ckpt if fp.spot_max is None else min(fp.spot_max, total_ckpt)
        tiers.append((fp.spot, np.full((1, on_o.shape[1]), cap)))
    od = np.full_like(on_o, total_ckpt) if fp.on_demand_max is None else np.clip(fp.on_demand_max - on_o, 0.0, total_ckpt)
    tiers.append((fp.on_demand, od))
    return sorted(tiers, key=lambda pc: pc[0])


def grid_costs(demand: np.ndarray, ckpt: np.ndarray, fp: FastPrices) -> GridResult | None:
    """Price every grid point exactly (steps 2-5) and return the cheapest, or None if none is feasible.

    Args:
        demand, ckpt: ``d_t`` and ``c_t`` (GPUs), shape ``(H,)``.
        fp: prices and limits.

    Returns:
        The :class:`GridResult` (the first minimum in on-prem-major order on ties), or None.
    """
    hours = demand.size
    n = demand - ckpt
    total_ckpt = float(ckpt.sum())
    onprem_axis, committed_axis = capacity_grid(float(demand.max()), fp)
    onprem = np.repeat(onprem_axis, committed_axis.size)
    committed = np.tile(committed_axis, onprem_axis.size)
    points = onprem.size
    totals = np.full(points, np.inf)
    tol = 1e-9 * (1.0 + float(demand.sum()))
    n_tiers = 3 + (fp.spot is not None)
    chunk = max(1, _MAX_LANE_HOURS // (hours * n_tiers))
    for lo in range(0, points, chunk):
        sl = slice(lo, min(lo + chunk, points))
        p, r = onprem[sl], committed[sl]
        on_r, on_p, on_o = serve_others_first(n, p, r)
        ok = np.ones(p.size, dtype=bool) if fp.on_demand_max is None else (on_o <= fp.on_demand_max + 1e-9).all(axis=1)
        fixed = hours * (p * (fp.onprem_fixed or 0.0) + r * (fp.commitment or 0.0))
        running = fp.onprem_used * on_p.sum(axis=1) + fp.on_demand * on_o.sum(axis=1)
        ckpt_cost = np.zeros(p.size)
        if total_ckpt > 0:
            tiers = _tiers(fp, total_ckpt, p, r, on_p, on_r, on_o)
            cumulative = np.zeros((p.size, hours))
            stacked = []
            for _, cap in tiers:
                cumulative = np.minimum(cumulative + cap, total_ckpt)
                stacked.append(cumulative)
            lanes = np.stack(stacked, axis=1).reshape(-1, hours)  # (points, K, H) -> lanes
            # Lanes with no capacity serve nothing; lanes with room for all the work in every
            # hour serve it all. Only the others need the DP.
            unserved = np.where(lanes.max(axis=1) <= 0, total_ckpt, 0.0)
            hard = (unserved == 0) & (lanes.min(axis=1) < total_ckpt)
            unserved[hard] = deficiencies(ckpt, lanes[hard], fp.wait)
            served = total_ckpt - unserved.reshape(p.size, len(tiers))
            ok &= served[:, -1] >= total_ckpt - tol
            prices = np.array([price for price, _ in tiers])
            ckpt_cost = prices[-1] * total_ckpt - served[:, :-1] @ np.diff(prices)
        totals[sl] = np.where(ok, fixed + running + ckpt_cost, np.inf)
    if not np.isfinite(totals).any():
        return None
    i = int(np.argmin(totals))
    return GridResult(float(onprem[i]), float(committed[i]), float(totals[i]), points, int(np.isfinite(totals).sum()))


def path_max_flow(supply: list[float], sink: list[float], forward: list[float], backward: list[float]
                  ) -> tuple[list[float], list[float], list[float]]:
    """Maximum flow on a path of hours from node supplies to node sinks (one augmentation stage of step 6).

    Nodes are hours ``0 .. H-1``; edge ``i`` joins hours ``i`` and ``i+1`` and may carry up to
    ``forward[i]`` rightwards (more backlog) and ``backward[i]`` leftwards (less backlog).
    Exact by leaf elimination (a path is a tree): the leftmost node serves its own sink from its
    own supply first (an exchange argument shows some maximum flow does), then hands what is
    left, supply or demand, to its neighbour within the edge's capacity; a backward pass then
    splits the flows (incoming supply used before the node's own, the node's own sink served
    before a request from the left).

    Args:
        supply, sink: per hour (GPU-hours, >= 0).
        forward, backward: per edge (``H-1`` values, >= 0).

    Returns:
        ``(supply used per hour, sink used per hour, net flow per edge, > 0 rightwards)``.
    """
    hours = len(supply)
    offer = [0.0] * hours  # offer[t]: net amount node t hands to t+1 (> 0 supply, < 0 demand)
    x = 0.0
    for t in range(hours):
        pool_s = supply[t] + (x if x > 0 else 0.0)
        pool_d = sink[t] + (-x if x < 0 else 0.0)
        if t == hours - 1:
            break
        x = min(pool_s - pool_d, forward[t]) if pool_s >= pool_d else -min(pool_d - pool_s, backward[t])
        offer[t] = x
    used_supply = [0.0] * hours
    used_sink = [0.0] * hours
    flow = [0.0] * max(hours - 1, 0)
    out = 0.0  # actual flow on the edge to the right of node t
    for t in range(hours - 1, -1, -1):
        x = offer[t - 1] if t > 0 else 0.0
        x_s = x if x > 0 else 0.0
        x_d = -x if x < 0 else 0.0
        matched = min(supply[t] + x_s, sink[t] + x_d)
        s_used = matched + (out if out > 0 else 0.0)
        d_used = matched + (-out if out < 0 else 0.0)
        from_left = min(x_s, s_used)
        own_sink = min(sink[t], d_used)
        used_supply[t] = s_used - from_left
        used_sink[t] = own_sink
        if t > 0:
            out = from_left - (d_used - own_sink)
            flow[t - 1] = out
    return used_supply, used_sink, flow


def dispatch_flow(demand: np.ndarray, ckpt: np.ndarray, fp: FastPrices, onprem_gpus: float, committed_gpus: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The cheapest hourly dispatch for fixed capacities (step 6), without an LP solver.

    Work that does not checkpoint as in step 3; checkpointing work by the tier-by-tier greedy of
    step 4: for each price tier, cheapest first, a maximum flow of the work still unserved into
    that tier's capacity over the residual path network (backlog arcs ``b_t <= c_{t-W+1..t}``,
    reversible up to their flow), keeping every earlier tier's use (:func:`path_max_flow`).
    This is the matroid greedy of step 4, so its cost is the minimum for these capacities.

    Args:
        demand, ckpt: ``d_t`` and ``c_t`` (GPUs), shape ``(H,)``.
        fp: prices and limits.
        onprem_gpus, committed_gpus: the capacities (GPUs).

    Returns:
        ``(onprem_used, committed_used, on_demand, spot, backlog)``, arrays of shape ``(H,)``,
        or None when some work stays unserved (infeasible capacities).
    """
    hours = demand.size
    n = demand - ckpt
    total_ckpt = float(ckpt.sum())
    on_r, on_p, on_o = (a[0] for a in serve_others_first(n, np.array([onprem_gpus]), np.array([committed_gpus])))
    if fp.on_demand_max is not None and (on_o > fp.on_demand_max + 1e-9).any():
        return None
    tiers = {"committed": (0.0, committed_gpus - on_r), "onprem": (fp.onprem_used, onprem_gpus - on_p),
             "on_demand": (fp.on_demand, np.full(hours, total_ckpt) if fp.on_demand_max is None else np.clip(fp.on_demand_max - on_o, 0.0, total_ckpt))}
    if fp.spot is not None:
        tiers["spot"] = (fp.spot, np.full(hours, total_ckpt if fp.spot_max is None else min(fp.spot_max, total_ckpt)))
    csum = np.concatenate([[0.0], np.cumsum(ckpt)])
    t = np.arange(hours - 1)
    window = (csum[t + 1] - csum[np.maximum(t + 1 - fp.wait, 0)]).tolist()
    left = ckpt.astype(float).tolist()
    backlog = [0.0] * (hours - 1)
    use = {name: np.zeros(hours) for name in tiers}
    for name in sorted(tiers, key=lambda k: tiers[k][0]):
        cap = np.maximum(tiers[name][1], 0.0)
        if not cap.any() or sum(left) <= 0:
            continue
        forward = [max(w - b, 0.0) for w, b in zip(window, backlog, strict=True)]
        used_supply, used_sink, flow = path_max_flow(left, cap.tolist(), forward, backlog)
        left = [max(a - u, 0.0) for a, u in zip(left, used_supply, strict=True)]
        backlog = [min(max(b + f, 0.0), w) for b, f, w in zip(backlog, flow, window, strict=True)]
        use[name] = np.asarray(used_sink)
    if sum(left) > 1e-9 * (1.0 + total_ckpt):
        return None
    return on_p + use["onprem"], on_r + use["committed"], on_o + use["on_demand"], use.get("spot", np.zeros(hours)), np.array(backlog + [0.0])
