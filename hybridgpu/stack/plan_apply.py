"""``hybridgpu cost plan --apply``: the optimal capacity plan written into the stack files, checked first.

The capacity planner (:mod:`hybridgpu.economics.planner`) decides owned GPUs, committed GPUs and
the most spot and On-Demand GPUs any hour needs. Before this module those numbers were copied by
hand into four files that must agree; here they are derived from one another (docs/economics.md,
"Applying a plan"):

1. **NodePool ``gpuLimit``s** of the cloud stack (the burst plan's ``cloud.stack``, else the stack
   itself). The planned amounts are rounded up to whole instances of the pool (the burst plan's
   ``simulation.gpusPerInstance`` for its pools, else the GCD of the GPUs per instance of the pool's
   instance types). Spot and On-Demand go to the burst plan's ``cloud.spot`` / ``cloud.onDemand``
   pools; without a burst plan, to the spot-only / On-Demand-only pools, split in proportion to
   their current limits. Committed GPUs go to the pools whose ``capacityTypes``
   include ``reserved``, split the same way; without such a pool they go to the On-Demand amount
   (a reservation or savings plan is a discount on On-Demand usage). A pool with static capacity
   (``replicas``) keeps its limit and counts towards its type; a pool of none of these roles (e.g.
   a MIG inference pool outside the burst plan) keeps its limit. Splits round each pool down to
   whole instances and give the rest, an instance at a time, to the pool furthest below its share.
2. **The burst plan**: ``cloud.spot.gpuCeiling`` and ``cloud.onDemand.gpuCeiling`` equal the pools'
   new limits (``stack/burst.py`` checks that they do); a ``monthlyBudgetUsd`` becomes
   ``floor(ceiling x USD per GPU-hour x hoursPerMonth) + 1`` so that the budget allows exactly the
   ceiling (``burst/plan.py``, ``cloud_capacity``); a ceiling of 0 keeps the budget (it must stay > 0).
3. **The teams file**: per capacity type, the teams' cloud ``nominalQuota`` add up to the new
   ceiling (every planned GPU in some team's quota, else Kueue never admits work on it), split in
   proportion to the current quotas; a ``borrowingLimit`` is cut to what the others' shares can lend,
   a ``lendingLimit`` to the new quota. A team whose shares would cost more than its
   ``monthlyCloudBudgetUsd`` is refused (the plan needs more than the teams file allows). When the
   budgets add up to more than the new ceilings can cost (``stack/teams.py``, ``plan-budget``), each
   is lowered to what its shares cost.
4. **The policy config** (``--policy-pack-config``, optional): ``stack-gpu-ceiling.maxGpusPerStack``
   and ``nodepool-gpu-limit.maxGpusPerNodePool`` get an entry for the cloud stack: the sum and the
   largest of its new limits, so ``hybridgpu check`` holds the stack to the plan.

Nothing is written before every touched stack validates (each stack of the burst plan, loaded from
a copy of the project that holds the new texts), and the burst simulator
(:mod:`hybridgpu.burst.simulate`, strategy ``spot``) has replayed the same demand
(:func:`demand_jobs`) under the new limits without starving a queue: no job never admitted, p95
wait at most ``--max-wait + 1`` hours (the planner serves the work of hour t by the end of hour
t + max wait). Reserved GPUs are simulated as capacity that is always there and tried first, like
on-prem (the simulator has no reserved capacity type). Edits replace only the characters of the numbers they change (PyYAML's node marks;
JSON member spans), so comments, key order and every other byte stay as they were.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from hybridgpu.burst.plan import BurstPlan
from hybridgpu.burst.simulate import SimulationParams, StrategyResult, params_from_plan, percentile, simulate
from hybridgpu.burst.trace import Job
from hybridgpu.catalog import Catalog, load_catalog
from hybridgpu.config.models import CloudConfig, NodePoolConfig
from hybridgpu.datafile import SAFE_LOADER
from hybridgpu.economics.demand import DemandProfile
from hybridgpu.errors import HybridGpuError
from hybridgpu.render.karpenter import resolve_instance_types
from hybridgpu.stack.files import stack_config_dir
from hybridgpu.stack.load import Stack, load_stack
from hybridgpu.stack.plan_lock import PathPart, display_path, lock_path, lock_text
from hybridgpu.teams.models import read_teams_file

__all__ = [
    "ApplyError",
    "FileChange",
    "PlannedCapacity",
    "Proposal",
    "QueueFigures",
    "SimulationCheck",
    "Write",
    "commit",
    "demand_jobs",
    "lowest_peaks",
    "propose_apply",
    "set_json_value",
    "set_yaml_value",
    "split_limits",
]


class ApplyError(HybridGpuError):
    """The plan cannot be applied: the message names the file, the key path and the fix."""


@dataclass(frozen=True)
class PlannedCapacity:
    """The numbers of an optimal plan that the stack files take (GPUs; USD over the demand's hours).

    Attributes:
        owned_gpus: on-prem GPUs the plan owns.
        committed_gpus: GPUs under commitments (reservations, savings plans), all options together.
        spot_gpus: the most spot GPUs any hour uses.
        on_demand_gpus: the most On-Demand GPUs any hour uses.
        max_wait_hours: hours checkpointing work may queue (``--max-wait``).
        spot_usd, on_demand_usd: the plan's own estimate of the spot and On-Demand cost over the demand (USD).
        checkpoint_s: seconds between checkpoints of checkpointing work (the stack's ``checkpointIntervalHours``).
    """

    owned_gpus: float
    committed_gpus: float
    spot_gpus: float
    on_demand_gpus: float
    max_wait_hours: int = 0
    spot_usd: float = 0.0
    on_demand_usd: float = 0.0
    checkpoint_s: float = 3600.0


@dataclass(frozen=True)
class Write:
    """One number the plan decides: ``file`` (relative to the project root), its key ``path``, the value before and after."""

    file: str
    path: tuple[PathPart, ...]
    old: Any
    new: Any


@dataclass(frozen=True)
class FileChange:
    """A file whose text the plan changes (``path`` absolute; ``file`` as the user knows it)."""

    file: str
    path: Path
    old_text: str | None
    new_text: str

    def diff(self) -> str:
        """Unified diff of the change (``a/<file>`` to ``b/<file>``)."""
        old = (self.old_text or "").splitlines(keepends=True)
        new = self.new_text.splitlines(keepends=True)
        return "".join(difflib.unified_diff(old, new, f"a/{self.file}" if self.old_text is not None else "/dev/null", f"b/{self.file}"))


@dataclass(frozen=True)
class QueueFigures:
    """What the simulation did to one queue's jobs (waits in seconds, over the jobs that started)."""

    queue: str
    burst: str
    jobs: int
    never_admitted: int
    wait_p95_s: float
    wait_max_s: float


@dataclass(frozen=True)
class SimulationCheck:
    """The burst simulation of the demand under the new limits, next to the plan's estimate.

    Attributes:
        result: the simulator's figures (strategy ``spot``: checkpointing work bursts to spot, the rest to On-Demand).
        params: the simulated capacities.
        queues: per queue.
        allowed_wait_s: the longest p95 wait a queue may have: ``(--max-wait + 1)`` hours (the planner serves
            the work of hour t by the end of hour t + max wait).
        plan_cloud_usd: the plan's spot + On-Demand cost over the demand (USD).
        starving: one line per starved queue (never-admitted jobs, or p95 wait above ``allowed_wait_s``).
    """

    result: StrategyResult
    params: SimulationParams
    queues: tuple[QueueFigures, ...]
    allowed_wait_s: float
    plan_cloud_usd: float
    starving: tuple[str, ...]


@dataclass(frozen=True)
class Proposal:
    """What ``--apply`` would write, and why it may.

    Attributes:
        target: the cloud stack whose NodePools take the plan.
        writes: every number the plan decides (changed or not).
        changes: the files whose text changes (the lock file last).
        notes: what the rules decided that the diff does not show (owned GPUs to buy, pools kept).
        validated: the stacks validated with the new texts.
        simulation: the simulation check.
    """

    target: str
    writes: tuple[Write, ...]
    changes: tuple[FileChange, ...]
    notes: tuple[str, ...]
    validated: tuple[str, ...]
    simulation: SimulationCheck


# --------------------------------------------------------------------------- text edits


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value == int(value) else f"{value:.2f}"
    raise TypeError(f"cannot write {value!r}")


def _yaml_child(node: yaml.Node, part: PathPart, file: str, shown: str) -> yaml.Node | None:
    if isinstance(part, Mapping):
        if not isinstance(node, yaml.SequenceNode):
            raise ApplyError(f"{file}: {shown} is not a list; fix the file (`hybridgpu validate`) and apply again")
        for item in node.value:
            if isinstance(item, yaml.MappingNode):
                fields = {k.value: v.value for k, v in item.value if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode)}
                if all(str(fields.get(k)) == str(v) for k, v in part.items()):
                    return item
        return None
    if isinstance(part, int):
        if not isinstance(node, yaml.SequenceNode) or not 0 <= part < len(node.value):
            return None
        return node.value[part]
    if not isinstance(node, yaml.MappingNode):
        raise ApplyError(f"{file}: {shown} is not a mapping; fix the file (`hybridgpu validate`) and apply again")
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == part:
            return v
    return None


def _compose(text: str) -> yaml.Node | None:
    """The node tree of ``text`` with marks: libyaml's (fast) when its marks index the text as Python does
    (character offsets; checked on every plain scalar), else PyYAML's."""
    node = yaml.compose(text, Loader=SAFE_LOADER)
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.ScalarNode):
            if n.style in (None, "") and text[n.start_mark.index : n.end_mark.index] != n.value:
                return yaml.compose(text, Loader=yaml.SafeLoader)
        elif isinstance(n, yaml.MappingNode):
            stack += [x for kv in n.value for x in kv]
        elif isinstance(n, yaml.SequenceNode):
            stack += n.value
    return node


def set_yaml_value(text: str, path: Sequence[PathPart], value: Any, file: str) -> str:
    """``text`` with the scalar at ``path`` set to ``value``; every other character unchanged.

    The scalar's characters (PyYAML's node marks) are replaced by the number; a missing last key is
    added as a new line after the mapping's last one-line entry, at that entry's indentation.

    Raises:
        ApplyError: the file is not YAML, a step of the path is missing, the target is not a plain scalar,
            or a missing key cannot be added (a flow mapping, or a last entry over several lines).
    """
    try:
        node = _compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ApplyError(f"{file}: not valid YAML{where}: {getattr(exc, 'problem', exc)}; fix the syntax and apply again") from None
    shown = display_path(path)
    parent = None
    for i, part in enumerate(path):
        if node is None:
            break
        parent = node
        node = _yaml_child(node, part, file, display_path(path[: i + 1]))
        if node is None and i < len(path) - 1:
            raise ApplyError(f"{file}: {display_path(path[: i + 1])} is missing; `hybridgpu validate` the stack, then apply again")
    if node is not None:
        if not isinstance(node, yaml.ScalarNode) or node.style not in (None, ""):
            raise ApplyError(f"{file}: {shown} is not a plain number; write it as one and apply again")
        new, start, end = _fmt(value), node.start_mark.index, node.end_mark.index
        gap = len(text[end:]) - len(text[end:].lstrip(" "))
        if text[end + gap : end + gap + 1] == "#" and gap:  # keep a trailing comment in its column
            gap = max(1, gap + (end - start) - len(new))
            return text[:start] + new + " " * gap + text[end + len(text[end:]) - len(text[end:].lstrip(" ")) :]
        return text[:start] + new + text[end:]
    assert isinstance(parent, yaml.MappingNode)
    if parent.flow_style or not parent.value:
        raise ApplyError(f"{file}: cannot add {shown}: write `{path[-1]}: {_fmt(value)}` there and apply again")
    last_key, last_value = parent.value[-1]
    if not isinstance(last_value, yaml.ScalarNode) or last_value.end_mark.line != last_key.start_mark.line:
        raise ApplyError(f"{file}: cannot add {shown}: write `{path[-1]}: {_fmt(value)}` there and apply again")
    eol = text.find("\n", last_value.end_mark.index)
    eol = len(text) if eol < 0 else eol
    line = "\n" + " " * last_key.start_mark.column + f"{path[-1]}: {_fmt(value)}"
    return text[:eol] + line + text[eol:]


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _json_members(text: str, start: int) -> tuple[list[tuple[str, int, int]], int]:
    """``[(key, value start, value end)]`` of the JSON object at ``start`` and the index of its closing brace."""
    decoder = json.JSONDecoder()
    members: list[tuple[str, int, int]] = []
    i = _ws(text, start + 1)
    while text[i] != "}":
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _ws(text, i)
        i = _ws(text, i + 1)  # the colon
        _, end = decoder.raw_decode(text, i)
        members.append((key, i, end))
        i = _ws(text, end)
        if text[i] == ",":
            i = _ws(text, i + 1)
    return members, i


def set_json_value(text: str, path: Sequence[str], value: Any, file: str) -> str:
    """``text`` (a JSON object) with the member at ``path`` set to ``value`` (compact JSON); every other character unchanged.

    A missing member is added at the end of its object as ``, "key": value`` (with the rest of the path
    as nested objects).

    Raises:
        ApplyError: the text is not a JSON object, or a step of the path is not an object.
    """
    try:
        json.loads(text)
    except ValueError as exc:
        raise ApplyError(f"{file}: not valid JSON ({exc}); fix it and apply again") from None
    start = _ws(text, 0)
    for depth, key in enumerate(path):
        if text[start] != "{":
            raise ApplyError(f"{file}: {'.'.join(path[:depth]) or 'the file'} is not a JSON object")
        members, close = _json_members(text, start)
        found = next(((s, e) for k, s, e in members if k == key), None)
        if found is None:
            new: Any = value
            for k in reversed(path[depth + 1 :]):
                new = {k: new}
            piece = json.dumps(key) + ": " + json.dumps(new)
            if members:
                end = members[-1][2]
                return text[:end] + ", " + piece + text[end:]
            return text[: start + 1] + piece + text[start + 1 :]
        s, e = found
        if depth == len(path) - 1:
            return text[:s] + json.dumps(value) + text[e:]
        start = s
    raise ApplyError(f"{file}: empty key path")


# --------------------------------------------------------------------------- numbers


def _step(pool: NodePoolConfig, catalog: Catalog) -> int:
    counts = sorted({t.gpu_count for t in resolve_instance_types(pool, catalog)})
    return reduce(math.gcd, counts) if counts else 1


def _round_up(x: float, step: int) -> int:
    return int(math.ceil(x / step - 1e-9)) * step if x > 1e-9 else 0


def split_limits(amount: int, pools: Sequence[tuple[str, int, int]]) -> dict[str, int]:
    """Split ``amount`` GPUs across ``pools`` ``[(name, current limit, GPUs per instance)]`` (pure).

    Each pool's share is ``amount x current / sum(current)`` (equal shares when every current limit is
    0), rounded down to whole instances; the rest goes an instance at a time to the pool furthest below
    its share (the first on ties), so the sum is at least ``amount`` and exceeds it by less than an instance.

    Returns:
        ``{name: new limit}``.
    """
    if not pools:
        return {}
    total = sum(c for _, c, _ in pools)
    shares = {n: amount * (c / total if total else 1 / len(pools)) for n, c, _ in pools}
    out = {n: int(math.floor(shares[n] / s + 1e-9)) * s for n, _, s in pools}
    steps = {n: s for n, _, s in pools}
    while sum(out.values()) < amount:
        name = max((n for n, _, _ in pools), key=lambda n: (shares[n] - out[n], -list(shares).index(n)))
        out[name] += steps[name]
    return out


def _cents_up(x: float) -> float:
    cents = round(x * 100)
    if abs(cents - x * 100) < 1e-6:
        return cents / 100
    return math.ceil(x * 100) / 100


def _largest_remainder(total: int, weights: Sequence[int]) -> list[int]:
    if not weights:
        return []
    w = sum(weights)
    shares = [total * (x / w if w else 1 / len(weights)) for x in weights]
    out = [int(math.floor(s + 1e-9)) for s in shares]
    order = sorted(range(len(weights)), key=lambda i: (-(shares[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def lowest_peaks(solve: Callable[[float | None, float | None], Any], plan: Any, spot_cap: float | None = None, on_demand_cap: float | None = None) -> Any:
    """Among the optimal plans, one with the lowest spot peak, then the lowest On-Demand peak (the ceilings ``--apply`` writes).

    With a maximum wait the optimum is degenerate: work may wait and burst later in a larger peak at
    the same cost, so the solver's peak is one of many. This searches the smallest whole-GPU cap on
    spot, then on On-Demand, under which ``solve`` still reaches the optimal cost (within 1e-7
    relative): a binary search, ``2 x log2(peak)`` solves at most.

    Args:
        solve: ``(spot cap, On-Demand cap) -> Plan`` (:func:`hybridgpu.economics.planner.solve_plan` with those caps; None:
            no cap); raises :class:`HybridGpuError` when infeasible.
        plan: the optimal plan without the extra caps.
        spot_cap, on_demand_cap: the user's caps (the search stays within them).

    Returns:
        The plan with the lowest peaks (``plan`` itself when no cap lowers them).
    """
    limit = plan.cost["total"] * (1 + 1e-7) + 1e-6
    best = plan

    def search(peak: float, make: Callable[[int], tuple[float | None, float | None]]) -> None:
        nonlocal best
        lo, hi = 0, int(math.ceil(peak - 1e-9))
        while lo < hi:
            mid = (lo + hi) // 2
            try:
                candidate = solve(*make(mid))
            except HybridGpuError:
                lo = mid + 1
                continue
            if candidate.cost["total"] <= limit:
                hi, best = mid, candidate
            else:
                lo = mid + 1

    search(float(best.dispatch.spot.max()), lambda cap: (cap if spot_cap is None else min(cap, spot_cap), on_demand_cap))
    spot_now = float(best.dispatch.spot.max())
    search(float(best.dispatch.on_demand.max()), lambda cap: (spot_now if spot_cap is None else min(spot_now, spot_cap),
                                                              cap if on_demand_cap is None else min(cap, on_demand_cap)))
    return best


# --------------------------------------------------------------------------- simulation


def demand_jobs(profile: DemandProfile, *, gpus_per_instance: int, checkpoint_s: float, spot_queue: tuple[str, str], other_queue: tuple[str, str],
                onprem_gpus: int = 0, split_queues: bool = False) -> tuple[list[Job], list[str]]:
    """The hourly demand as burst-simulator jobs, and each job's queue label (pure; same profile, same jobs).

    Each hour's GPUs are rounded up; checkpointing GPUs and the rest are two series. Each series is cut
    into levels of ``gpus_per_instance`` GPUs (level k holds GPUs k x instance + 1 ...); a level's GPUs in
    an hour form one job, and consecutive hours where the level holds the same GPUs are one job running
    that many hours (demand that stays is work that keeps running, not a new job every hour).
    Checkpointing jobs go to ``spot_queue`` and checkpoint every ``checkpoint_s``; the rest go to
    ``other_queue`` and never checkpoint. ``(label, burst class)`` name the queues. With ``split_queues``,
    a level above ``onprem_gpus`` is submitted to the burst queue (``queue: burst``).

    Returns:
        ``(jobs sorted by submission, labels in the same order)``.
    """
    g = np.ceil(profile.gpus - 1e-9).astype(int)
    c = np.minimum(np.ceil(profile.checkpointable - 1e-9).astype(int), g)
    rows: list[tuple[float, int, Job, str]] = []
    serial = 0
    for series, (label, burst), ckpt in ((c, spot_queue, checkpoint_s), (g - c, other_queue, None)):
        if burst == "spot" and ckpt is None:
            burst = "on-demand"
        levels = int(math.ceil(series.max() / gpus_per_instance)) if series.size and series.max() > 0 else 0
        for k in range(levels):
            size = np.clip(series - k * gpus_per_instance, 0, gpus_per_instance)
            start = 0
            for t in range(1, size.size + 1):
                if t == size.size or size[t] != size[start]:
                    if size[start] > 0:
                        queue = "burst" if split_queues and burst != "none" and k * gpus_per_instance >= onprem_gpus else "local"
                        job = Job(float(start * 3600), int(size[start]), float((t - start) * 3600), ckpt, burst, queue)
                        rows.append((job.submit_s, serial, job, label))
                        serial += 1
                    start = t
    rows.sort(key=lambda r: (r[0], r[1]))
    return [r[2] for r in rows], [r[3] for r in rows]


def _simulate(profile: DemandProfile, planned: PlannedCapacity, params: SimulationParams, spot_queue: tuple[str, str], other_queue: tuple[str, str]) -> SimulationCheck:
    jobs, labels = demand_jobs(profile, gpus_per_instance=params.gpus_per_instance, checkpoint_s=planned.checkpoint_s, spot_queue=spot_queue,
                               other_queue=other_queue, onprem_gpus=params.onprem_gpus, split_queues=params.topology == "split-queues")
    starts: list[float | None] = []
    result = simulate(jobs, params, "spot", starts=starts)
    allowed = (planned.max_wait_hours + 1) * 3600.0
    figures = []
    starving = []
    bursts = {spot_queue[0]: spot_queue[1], other_queue[0]: other_queue[1]}
    for label in dict.fromkeys(labels):
        idx = [i for i, lab in enumerate(labels) if lab == label]
        waits = sorted(s - jobs[i].submit_s for i in idx if (s := starts[i]) is not None)
        never = sum(1 for i in idx if starts[i] is None)
        q = QueueFigures(label, bursts.get(label, ""), len(idx), never, percentile(waits, 95), waits[-1] if waits else 0.0)
        figures.append(q)
        if never or q.wait_p95_s > allowed + 1e-6:
            ceiling = {"spot": params.spot_gpus, "on-demand": params.on_demand_gpus}.get(q.burst)
            room = f", its {q.burst} ceiling {ceiling} GPUs" if ceiling is not None else ""
            starving.append(
                f"queue {label}: {never} of {len(idx)} jobs never admitted, p95 wait {q.wait_p95_s / 3600:.2f} h "
                f"(at most {allowed / 3600:g} h with --max-wait {planned.max_wait_hours}{room}; the on-prem and reserved GPUs go to whichever queue's jobs come first)"
            )
    return SimulationCheck(result, params, tuple(figures), allowed, planned.spot_usd + planned.on_demand_usd, tuple(starving))


# --------------------------------------------------------------------------- the proposal


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _read_text(path: Path, file: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ApplyError(f"{file}: cannot read it ({exc.__class__.__name__}: {exc}); fix the path or its permissions and apply again") from None


class _Texts:
    """The files being edited: original and new text per absolute path, and every write."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.old: dict[Path, str | None] = {}
        self.new: dict[Path, str] = {}
        self.writes: list[Write] = []

    def file(self, path: Path) -> str:
        return _rel(path, self.root)

    def text(self, path: Path) -> str:
        if path not in self.new:
            self.old[path] = _read_text(path, self.file(path))
            self.new[path] = self.old[path] or ""
        return self.new[path]

    def set_yaml(self, path: Path, keys: Sequence[PathPart], old: Any, value: Any) -> None:
        text = self.text(path)
        self.writes.append(Write(self.file(path), tuple(keys), old, value))
        if old is None or old != value:
            self.new[path] = set_yaml_value(text, keys, value, self.file(path))


def _pool_roles(cloud: CloudConfig, plan: BurstPlan | None) -> dict[str, str]:
    """Pool name -> ``spot``, ``on-demand``, ``reserved``, ``static`` or ``keep`` (module docstring, rule 1)."""
    named = {c.node_pool: kind for kind, c in plan.cloud.items()} if plan is not None else {}
    roles = {}
    for pool in cloud.node_pools:
        types = {t.value for t in pool.capacity_types}
        if getattr(pool, "replicas", None) is not None:
            roles[pool.name] = "static"
        elif pool.name in named:
            roles[pool.name] = named[pool.name]
        elif "reserved" in types:
            roles[pool.name] = "reserved"
        elif plan is None and types == {"spot"}:
            roles[pool.name] = "spot"
        elif plan is None and types == {"on-demand"}:
            roles[pool.name] = "on-demand"
        else:
            roles[pool.name] = "keep"
    return roles


def _pool(cloud: CloudConfig, name: str) -> NodePoolConfig:
    return next(p for p in cloud.node_pools if p.name == name)


def _static_type(pool: NodePoolConfig) -> str:
    types = {t.value for t in pool.capacity_types}
    return "reserved" if "reserved" in types else "spot" if types == {"spot"} else "on-demand"


def _new_limits(cloud: CloudConfig, plan: BurstPlan | None, planned: PlannedCapacity, catalog: Catalog, file: str, notes: list[str]) -> dict[str, int]:
    roles = _pool_roles(cloud, plan)
    pools = {p.name: p for p in cloud.node_pools}
    steps = {p.name: _step(p, catalog) for p in cloud.node_pools}
    committed = planned.committed_gpus
    want = {"spot": planned.spot_gpus, "on-demand": planned.on_demand_gpus, "reserved": committed}
    if committed > 1e-9 and not any(r == "reserved" or (r == "static" and _static_type(pools[n]) == "reserved") for n, r in roles.items()):
        want["on-demand"] += committed
        want["reserved"] = 0.0
        notes.append(f"{file} has no NodePool with capacityTypes [reserved]: the plan's {committed:g} committed GPUs are On-Demand capacity under the commitment")
    out: dict[str, int] = {}
    for kind in ("reserved", "spot", "on-demand"):
        static = sum(pools[n].gpu_limit or 0 for n, r in roles.items() if r == "static" and _static_type(pools[n]) == kind)
        members = [n for n, r in roles.items() if r == kind]
        need = max(0.0, want[kind] - static)
        if static and want[kind] < static:
            notes.append(f"the static {kind} pools of {file} hold {static} GPUs, more than the plan's {want[kind]:g}: kept")
        if not members:
            if need > 1e-9 and kind == "reserved":
                raise ApplyError(
                    f"{file}: the plan commits {need:g} GPUs more than the static reserved pools hold, and no other NodePool has "
                    "`capacityTypes: [reserved]` to run them; add one (with its capacity reservation), or raise the static pool's `replicas`"
                )
            if need > 1e-9:
                where = "the burst plan names no NodePool for it" if plan is not None else f"{file} has no {kind}-only NodePool"
                key = "onDemand" if kind == "on-demand" else kind
                raise ApplyError(
                    f"{file}: the plan needs {need:g} {kind} GPUs but {where}; add a {kind} NodePool"
                    f"{f' and `cloud.{key}` in the burst plan' if plan is not None else ''}, or plan without {kind} capacity (--{'spot' if kind == 'spot' else 'on-demand'}-max 0)"
                )
            continue
        # One pool: the planned amount rounded up to its instances; several: a split of the rounded total.
        if plan is not None and kind in plan.cloud and plan.source.simulation is not None:
            steps.update({n: plan.source.simulation.gpus_per_instance for n in members})  # the instance size the burst plan assumes
        step = reduce(math.gcd, [steps[n] for n in members])
        amount = _round_up(need, step)
        out.update(split_limits(amount, [(n, pools[n].gpu_limit or 0, steps[n]) for n in members]))
    kept = sorted(n for n, r in roles.items() if r in ("keep", "static"))
    if kept:
        notes.append(f"NodePools kept as they are (outside the plan's capacity types or static): {', '.join(kept)}")
    return out


def _teams_edits(texts: _Texts, path: Path, plan: BurstPlan, ceilings: Mapping[str, int], prices: Mapping[str, float], notes: list[str]) -> None:
    file = texts.file(path)
    teams = read_teams_file(path, file)
    hours = plan.source.cloud.hours_per_month
    quotas: dict[tuple[int, int], int] = {}
    for kind, ceiling in ceilings.items():
        shares = [(t, c, s) for t, team in enumerate(teams.teams) for c, s in enumerate(team.cloud) if s.capacity_type == kind]
        for (t, c, _), q in zip(shares, _largest_remainder(ceiling, [s.nominal_quota for _, _, s in shares])):
            quotas[(t, c)] = q
    new_budgets: list[float] = []
    spends: list[float] = []
    for t, team in enumerate(teams.teams):
        spend = 0.0
        for c, share in enumerate(team.cloud):
            key: list[PathPart] = ["teams", {"name": team.name}, "cloud", {"capacityType": share.capacity_type}]
            q = quotas.get((t, c), share.nominal_quota)
            kind_ceiling = ceilings.get(share.capacity_type)
            have = int(share.borrowing_limit or 0)
            borrow = have if kind_ceiling is None else min(have, max(0, kind_ceiling - q))
            texts.set_yaml(path, [*key, "nominalQuota"], share.nominal_quota, q)
            if borrow != share.borrowing_limit:
                texts.set_yaml(path, [*key, "borrowingLimit"], share.borrowing_limit, borrow)
            if share.lending_limit is not None and share.lending_limit > q:
                texts.set_yaml(path, [*key, "lendingLimit"], share.lending_limit, q)
            spend += (q + borrow) * prices.get(share.capacity_type, 0.0) * hours
        if spend > team.monthly_cloud_budget_usd + 1e-6:
            raise ApplyError(
                f"{file}: teams[{t}] ({team.name}) would hold cloud GPUs costing {spend:,.2f} USD a month under the plan, more than its "
                f"monthlyCloudBudgetUsd {team.monthly_cloud_budget_usd:,.2f}: the plan needs more cloud GPUs than the teams file allows; raise "
                f"`monthlyCloudBudgetUsd` to at least {_cents_up(spend):,.2f}, or cap the plan (--spot-max / --on-demand-max)"
            )
        spends.append(spend)
        new_budgets.append(team.monthly_cloud_budget_usd)
    capacity = sum(ceilings[k] * prices.get(k, 0.0) * hours for k in ceilings)
    if sum(new_budgets) > capacity + 1e-6:
        new_budgets = [_cents_up(s) if team.cloud else 0.0 for s, team in zip(spends, teams.teams)]
        if sum(new_budgets) > capacity + 1e-6:
            raise ApplyError(
                f"{file}: the teams' cloud shares with their borrowingLimit cost {sum(new_budgets):,.2f} USD a month, more than the plan's cloud "
                f"capacity can cost ({capacity:,.2f}); lower the cloud `borrowingLimit`s and apply again"
            )
        notes.append(f"{file}: team budgets lowered to what their shares cost, so that they add up to at most the plan's cloud capacity ({capacity:,.2f} USD a month)")
    for team, budget in zip(teams.teams, new_budgets):  # every team with cloud shares: its budget is a number the plan decides
        if team.cloud:
            texts.set_yaml(path, ["teams", {"name": team.name}, "monthlyCloudBudgetUsd"], team.monthly_cloud_budget_usd, budget)


def _policy_edits(texts: _Texts, path: Path, target: str, limits: Mapping[str, int], check: Callable[[Path], object] | None) -> None:
    """Per-stack entries for ``target`` in ``stack-gpu-ceiling.maxGpusPerStack`` (sum of the limits) and
    ``nodepool-gpu-limit.maxGpusPerNodePool`` (the largest limit); a scalar setting becomes ``{default: old, target: new}``."""
    text = texts.text(path)
    file = texts.file(path)
    for policy, setting, value, default in (("stack-gpu-ceiling", "maxGpusPerStack", sum(limits.values()), 256),
                                            ("nodepool-gpu-limit", "maxGpusPerNodePool", max(limits.values(), default=0), 64)):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ApplyError(f"{file}: not valid JSON ({exc}); fix it and apply again") from None
        if not isinstance(data, dict):
            raise ApplyError(f"{file}: must be a JSON object of policy name -> settings (Pulumi's --policy-pack-config format)")
        entry = data.get(policy)
        current = entry.get(setting) if isinstance(entry, dict) else None
        old = current.get(target) if isinstance(current, dict) else None
        texts.writes.append(Write(file, (policy, setting, target), old, value))
        if old == value:
            continue
        if entry is None:
            text = set_json_value(text, [policy], {setting: {"default": default, target: value}}, file)
        elif isinstance(entry, str):
            text = set_json_value(text, [policy], {"enforcementLevel": entry, setting: {"default": default, target: value}}, file)
        elif not isinstance(entry, dict):
            raise ApplyError(f"{file}: `{policy}` must be an enforcement level or an object of settings")
        elif current is None:
            text = set_json_value(text, [policy, setting], {"default": default, target: value}, file)
        elif not isinstance(current, dict):
            text = set_json_value(text, [policy, setting], {"default": current, target: value}, file)
        else:
            text = set_json_value(text, [policy, setting, target], value, file)
    texts.new[path] = text
    if check is not None and text != texts.old[path]:
        with tempfile.TemporaryDirectory(prefix="hybridgpu-policy-") as tmp:
            probe = Path(tmp) / path.name
            probe.write_text(text)
            try:
                check(probe)
            except HybridGpuError as exc:
                raise ApplyError(f"{file}: the new ceilings would not be a valid policy config: {str(exc).replace(str(probe), file)}") from None


def _overlay(root: Path, texts: Mapping[Path, str], dest: Path) -> None:
    """A copy of the project at ``dest``: ``texts`` written as files, everything else a symlink to ``root``'s."""
    inside = {p.relative_to(root): t for p, t in texts.items() if p.is_relative_to(root)}
    dirs = {parent for rel in inside for parent in rel.parents}

    def build(src: Path, dst: Path, rel: Path) -> None:
        dst.mkdir(exist_ok=True)
        for child in sorted(src.iterdir()):
            r = rel / child.name
            if r in inside:
                (dst / child.name).write_text(inside[r])
            elif r in dirs and child.is_dir():
                build(child, dst / child.name, r)
            else:
                (dst / child.name).symlink_to(child)
        for r, t in inside.items():  # new files (the lock)
            if r.parent == rel and not (dst / r.name).exists():
                (dst / r.name).write_text(t)

    build(root, dest, Path("."))


def _validate(root: Path, texts: Mapping[Path, str], stacks: Sequence[str]) -> dict[str, Stack]:
    out = {}
    with tempfile.TemporaryDirectory(prefix="hybridgpu-apply-") as tmp:
        copy = Path(tmp).resolve()
        _overlay(root, texts, copy)
        for name in stacks:
            try:
                out[name] = load_stack(name, copy)
            except HybridGpuError as exc:
                message = str(exc).replace(str(copy) + os.sep, "").replace(str(copy), str(root))
                raise ApplyError(f"the applied plan would not validate: stack {name}: {message}") from None
    return out


def propose_apply(
    stack: Stack,
    profile: DemandProfile,
    planned: PlannedCapacity,
    inputs: Mapping[str, Any],
    *,
    policy_config: Path | None = None,
    check_policy_config: Callable[[Path], object] | None = None,
    prices: Mapping[str, float] | None = None,
    catalog: Catalog | None = None,
) -> Proposal:
    """Everything ``--apply`` would write for ``planned``, validated and simulated, without writing.

    Args:
        stack: the validated stack given with ``--stack``.
        profile: the demand the plan was solved for (simulated again under the new limits).
        planned: the plan's numbers.
        inputs: what the plan was solved from, recorded in the lock (demand file and hash, options, prices).
        policy_config: the policy config file whose GPU ceilings follow the plan (None: none).
        check_policy_config: validates a policy config file (raises a :class:`HybridGpuError`), e.g. the
            shell's ``load_policy_config``.
        prices: USD per GPU-hour by ``spot`` / ``on-demand`` for the simulation without a burst plan.
        catalog: instance catalog (default: the packaged one).

    Raises:
        ApplyError: a file cannot be read or edited, the plan does not fit the files (a capacity type
            without a NodePool, a team budget too small), or the new files do not validate.
    """
    catalog = catalog or load_catalog()
    root = stack.root
    plan = stack.burst_plan
    target = plan.source.cloud.stack if plan is not None else stack.config.stack
    cloud_stack = stack if target == stack.config.stack else load_stack(target, root)
    cloud = cloud_stack.config.cloud
    cloud_file = stack_config_dir(root) / f"Pulumi.{target}.yaml"
    if cloud is None or not cloud.node_pools:
        raise ApplyError(
            f"{_rel(cloud_file, root)}: stack {target} has no `hybridgpu:cloud.nodePools` and no burst plan names a cloud stack: "
            "there is no NodePool to write the plan into; give --stack a stack with GPU NodePools or a burst plan"
        )
    notes: list[str] = []
    texts = _Texts(root)
    limits = _new_limits(cloud, plan, planned, catalog, _rel(cloud_file, root), notes)
    for pool in cloud.node_pools:
        if pool.name in limits:
            texts.set_yaml(cloud_file, ["config", "hybridgpu:cloud", "nodePools", {"name": pool.name}, "gpuLimit"], pool.gpu_limit, limits[pool.name])
    all_limits = {p.name: limits.get(p.name, p.gpu_limit or 0) for p in cloud.node_pools}
    stacks = [stack.config.stack, target]
    if plan is not None:
        plan_path = root / plan.file
        ceilings = {kind: limits[c.node_pool] for kind, c in plan.cloud.items()}
        plan_prices = {kind: c.usd_per_gpu_hour for kind, c in plan.cloud.items()}
        hours = plan.source.cloud.hours_per_month
        for kind, cap in plan.cloud.items():
            key = "spot" if kind == "spot" else "onDemand"
            spec = getattr(plan.source.cloud, "spot" if kind == "spot" else "on_demand")
            new = ceilings[kind]
            texts.set_yaml(plan_path, ["cloud", key, "gpuCeiling"], spec.gpu_ceiling, new)
            if spec.monthly_budget_usd is not None and new > 0:
                budget = math.floor(new * cap.usd_per_gpu_hour * hours) + 1
                texts.set_yaml(plan_path, ["cloud", key, "monthlyBudgetUsd"], spec.monthly_budget_usd, budget)
        teams_cfg = stack.config.teams or cloud_stack.config.teams
        if teams_cfg is not None:
            _teams_edits(texts, root / teams_cfg.file, plan, ceilings, plan_prices, notes)
        stacks += [plan.source.manager_stack, plan.source.onprem.stack, plan.source.cloud.stack]
    if policy_config is not None:
        _policy_edits(texts, policy_config if policy_config.is_absolute() else Path.cwd() / policy_config, target, all_limits, check_policy_config)
    owned_now = sum(plan.onprem.gpus.values()) if plan is not None else 0
    if planned.owned_gpus > owned_now + 1e-9:
        notes.append(f"the plan owns {planned.owned_gpus:g} GPUs and the on-prem side has {owned_now}: the files cannot buy servers; the limits assume {owned_now}")
    stacks = list(dict.fromkeys(stacks))
    changed = {p: t for p, t in texts.new.items() if t != texts.old.get(p)}
    validated = _validate(root, changed, stacks)
    new_plan = validated[target].burst_plan if plan is not None else None
    roles = _pool_roles(cloud, plan)
    reserved = sum(v for n, v in all_limits.items() if roles[n] == "reserved" or (roles[n] == "static" and _static_type(_pool(cloud, n)) == "reserved"))
    if new_plan is not None:
        params = params_from_plan(new_plan, require_simulation=False)
        if new_plan.source.simulation is None:
            notes.append(f"{plan.file if plan else ''} has no `simulation` section: simulated with no launch latency and no spot interruptions")
        queues = new_plan.source.queues
        spot_q = next((q for q in queues if q.burst == "spot"), None) or next((q for q in queues if q.burst == "on-demand"), None) or queues[0]
        other_q = next((q for q in queues if q.burst == "on-demand"), None) or next((q for q in queues if q.burst == "none"), None) or queues[0]
        spot_queue = (f"{spot_q.namespace}/{spot_q.name}", spot_q.burst)
        other_queue = (f"{other_q.namespace}/{other_q.name}", other_q.burst)
    else:
        p = prices or {}
        gpi = reduce(math.gcd, [_step(pool, catalog) for pool in cloud.node_pools])
        spot_total = sum(v for n, v in limits.items() if _pool_roles(cloud, None).get(n) == "spot")
        od_total = sum(v for n, v in limits.items() if _pool_roles(cloud, None).get(n) == "on-demand")
        params = SimulationParams(onprem_gpus=0, spot_gpus=spot_total, on_demand_gpus=od_total, spot_usd_per_gpu_hour=p.get("spot", 0.0),
                                  on_demand_usd_per_gpu_hour=p.get("on-demand", 0.0), gpus_per_instance=max(gpi, 1))
        spot_queue = ("checkpointing work", "spot" if spot_total else "on-demand")
        other_queue = ("other work", "on-demand")
    if reserved:
        params = SimulationParams(**{**params.__dict__, "onprem_gpus": params.onprem_gpus + reserved})
        notes.append(f"simulated the {reserved} reserved GPUs as capacity that is always there and tried first, like on-prem")
    simulation = _simulate(profile, planned, params, spot_queue, other_queue)
    lock = lock_path(root)
    previous = None
    if lock.exists():
        try:
            previous = yaml.safe_load(lock.read_text())
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            previous = None
    written = [{"file": w.file, "path": [dict(p) if isinstance(p, Mapping) else p for p in w.path], "value": w.new} for w in texts.writes]
    new_lock = lock_text(previous, target, {"stack": stack.config.stack, "inputs": dict(inputs), "written": written})
    old_lock = lock.read_text() if lock.exists() else None
    changes = [FileChange(_rel(p, root), p, texts.old.get(p), t) for p, t in changed.items()]
    if new_lock != old_lock:
        changes.append(FileChange(_rel(lock, root), lock, old_lock, new_lock))
    return Proposal(target, tuple(texts.writes), tuple(changes), tuple(notes), tuple(stacks), simulation)


def _writable(path: Path, file: str) -> None:
    target = path if path.exists() else path.parent
    mode = target.stat().st_mode if target.exists() else 0
    if not target.exists() or not os.access(target, os.W_OK) or (path.exists() and not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)):
        what = "the file is read-only" if path.exists() else "its directory cannot be written"
        raise ApplyError(f"{file}: cannot write it ({what}); make it writable (chmod u+w) and apply again; nothing was written")


def commit(proposal: Proposal) -> list[Path]:
    """Write every changed file of ``proposal``, all or nothing.

    Every file is checked writable, then written to a temporary file beside it (same permissions);
    only when all are written are they renamed over the originals. A rename that fails puts back the
    files already replaced.

    Returns:
        The files written.

    Raises:
        ApplyError: a file is read-only or its directory cannot be written, or writing failed (nothing
            is left changed).
    """
    for change in proposal.changes:
        _writable(change.path, change.file)
    temps: list[tuple[FileChange, Path]] = []
    try:
        for change in proposal.changes:
            tmp = change.path.with_name(f".{change.path.name}.hybridgpu-apply.tmp")
            tmp.write_text(change.new_text)
            if change.path.exists():
                shutil.copymode(change.path, tmp)
            temps.append((change, tmp))
    except OSError as exc:
        for _, tmp in temps:
            tmp.unlink(missing_ok=True)
        raise ApplyError(f"cannot write a temporary file beside {change.file}: {exc}; nothing was written") from None
    done: list[FileChange] = []
    try:
        for change, tmp in temps:
            os.replace(tmp, change.path)
            done.append(change)
    except OSError as exc:
        for change in done:
            if change.old_text is None:
                change.path.unlink(missing_ok=True)
            else:
                change.path.write_text(change.old_text)
        for _, tmp in temps:
            tmp.unlink(missing_ok=True)
        raise ApplyError(f"cannot replace {change.file}: {exc}; the files already replaced were put back") from None
    return [c.path for c in proposal.changes]
