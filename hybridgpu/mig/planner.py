"""MIG layout planner: per-GPU MIG layouts that meet a demand with the fewest GPUs.

A :class:`MigDemand` asks for MIG instances of one GPU model (profile name -> number of
instances, e.g. 20 x ``1g.10gb`` and 6 x ``3g.40gb`` on H100-80GB) plus a number of whole
GPUs (MIG disabled). :func:`plan_mig` picks, from the :class:`GpuPool` s of that model,
the fewest GPUs that can host it and a layout for each, and returns a :class:`MigPlan`
that can render NVIDIA mig-parted configs and the node labels selecting them.

The optimisation is a small integer program. Let the columns be the per-GPU layouts,
projected on the demanded profiles and kept only if maximal (no instance of a demanded
profile can be added; the projections of :func:`~hybridgpu.mig.placement.maximal_layouts`).
Choose integers ``x_L >= 0`` minimising ``sum x_L`` subject to
``sum_L x_L * L[p] >= demand[p]`` for every profile ``p``. Whole GPUs are separate:
a whole GPU has MIG disabled and hosts no MIG instance, so ``whole_gpus`` GPUs are
simply added (a ``7g.*`` instance is a MIG instance, not a whole GPU, and the other way
round). Every sub-multiset of a placeable layout is placeable (drop the instances), so
covering with maximal layouts and then removing the surplus gives the same optimum with
exactly the demanded instances.

Solver: HiGHS (``highspy``, through :func:`hybridgpu.highs.quiet_highs`, as the capacity
planner of :mod:`hybridgpu.economics.planner`), branch-and-bound to a proven optimum
(``mip_rel_gap`` 0, an absolute gap below one GPU); its solution is rounded to whole GPUs and
checked to cover the demand in integer arithmetic. It replaced a hand-written dual simplex and
depth-first search (issue 24): the same GPU count on every demand the tests try (100 random
ones, all 242 small A30 demands, synthetic columns with an integrality gap, each checked against
an independent HiGHS program over every valid layout or a brute-force search). Where several
optimal plans exist HiGHS may pick other layouts than the old search did (97 of 342 demands
compared, the 100 random ones and the 242 small A30 ones; same GPU counts). It is slower on these
small programs (see :func:`plan_mig`), but 20 ms at most, far below the CLI's start-up.

Tie-breaks (deterministic, so plans are stable for golden files): HiGHS is deterministic for a
given model, and the model is built in a fixed order (columns by count vector, descending; rows
in the GPU model's profile order, whatever the order of the demand); the surplus is removed from
the last GPUs first; GPUs are listed fullest first (memory slices, then compute slices, then count
vector in the model's profile order, descending); MIG GPUs are assigned before whole
GPUs, pools in the order given, nodes in order, GPU indices ascending.

Example::

    from hybridgpu.mig.planner import GpuPool, MigDemand, plan_mig

    plan = plan_mig(
        MigDemand("H100-80GB", {"1g.10gb": 20, "3g.40gb": 6}, whole_gpus=3),
        [GpuPool("dgx-01", "H100-80GB", 8), GpuPool("dgx-02", "H100-80GB", 8)],
    )
    plan.gpus_used            # 9 (6 MIG + 3 whole)
    plan.layouts              # ((MigLayout({'1g.10gb': 4, '3g.40gb': 1}), 5), (MigLayout({'3g.40gb': 1}), 1))
    plan.mig_parted_configs() # {'hybridgpu-3491b031': [{'devices': [0, 1, 2, 3, 4], 'mig-enabled': True,
                              #     'mig-devices': {'1g.10gb': 4, '3g.40gb': 1}}, ...],
                              #  'hybridgpu-all-disabled': [{'devices': 'all', 'mig-enabled': False}]}
    plan.node_labels()        # {'dgx-01': {'nvidia.com/mig.config': 'hybridgpu-3491b031'},
                              #  'dgx-02': {'nvidia.com/mig.config': 'hybridgpu-all-disabled'}}

Sources: MIG geometry from :mod:`hybridgpu.mig.profiles` (NVIDIA MIG User Guide v580,
``nvidia-smi mig -lgipp``; checked 2026-11-22). mig-parted config shape from
NVIDIA/mig-parted ``api/spec/v1/spec.go`` (unchanged since 28f95990, 2024-01-28; same at
bd7160f4, 2026-08-21): ``devices`` is ``"all"`` or a list of GPU indices, ``mig-enabled``
is required, ``mig-devices`` is required when ``mig-enabled`` is true and must be empty
when false. The node label ``nvidia.com/mig.config`` is the one the mig-manager watches
(NVIDIA/mig-parted ``cmd/nvidia-mig-manager/main.go`` ``MigConfigLabel`` at bd7160f4,
2026-08-21); ``+me`` is spelt ``.me`` in config names as in mig-parted's own example
configs (``all-1g.10gb.me``).

Nothing here imports Pulumi.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybridgpu.errors import HybridGpuError
from hybridgpu.highs import quiet_highs
from hybridgpu.k8s import LABEL_NAME_FMT, MIG_CONFIG_LABEL
from hybridgpu.mig.parted import ALL_DEVICES, MigPartedEntry, render_mig_parted
from hybridgpu.mig.placement import MigLayout, check_layout, maximal_layouts
from hybridgpu.mig.profiles import MigGpu, UnknownMigModelError, UnknownMigProfileError, mig_gpu

__all__ = [
    "CONFIG_PREFIX",
    "GpuAssignment",
    "GpuPool",
    "InsufficientGpusError",
    "MigDemand",
    "MigPlan",
    "MigPlanError",
    "NoPoolForModelError",
    "UnknownDemandModelError",
    "UnknownDemandProfileError",
    "plan_mig",
]

#: Prefix of every config name this module generates (keeps clear of mig-parted's
#: default names such as ``all-1g.10gb``, which mean something else).
CONFIG_PREFIX = "hybridgpu-"

# Kubernetes label value: <= 63 characters, alphanumerics, '-', '_', '.', alphanumeric ends.
_LABEL_VALUE = re.compile(f"^{LABEL_NAME_FMT}$")  # a non-empty label value
# Kubernetes node name (RFC 1123 subdomain), used for pool names.
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")

#: Most GPUs one demand or pool may span (a limit of this tool, not of any hardware): above the
#: GPU count of any single cluster today, low enough that a typo (a few extra zeros) fails at
#: once instead of building a per-GPU plan for millions of GPUs (found by the fuzzing of
#: ``hybridgpu mig plan``, tests/security; a plan at the limit, `mig plan H100-80GB 1g.10gb=100000`, took 2.2 s and 71 MB peak RSS,
#: measured 2026-11-22 with /usr/bin/time).
MAX_PLAN_GPUS = 100_000
#: HiGHS stops once its dual bound is within this of the incumbent; below 1, so the incumbent is
#: optimal (the objective counts GPUs).
_MIP_ABS_GAP = 0.5
#: Slack when rounding HiGHS' floating-point dual bound up to a whole number of GPUs.
_BOUND_TOL = 1e-6
#: Seconds HiGHS may take (at most 7 rows; a plan at MAX_PLAN_GPUS takes well under a second).
_TIME_LIMIT_S = 60.0


# --------------------------------------------------------------------------- errors


class MigPlanError(HybridGpuError, ValueError):
    """A MIG plan cannot be made: bad demand or pool, unknown model/profile, not enough GPUs."""


class UnknownDemandModelError(MigPlanError, UnknownMigModelError):
    """The demand's GPU model has no MIG data (also an :class:`UnknownMigModelError`).

    Attributes: as :class:`~hybridgpu.mig.profiles.UnknownMigModelError` (``name``,
    ``known``, ``suggestions``).
    """


class UnknownDemandProfileError(MigPlanError, UnknownMigProfileError):
    """A demanded MIG profile is not one of the model's (also an :class:`UnknownMigProfileError`).

    The message names the model, lists its profiles and suggests close matches.
    Attributes: as :class:`~hybridgpu.mig.profiles.UnknownMigProfileError` (``model``,
    ``name``, ``known``, ``suggestions``).
    """


class NoPoolForModelError(MigPlanError):
    """No pool has GPUs of the demand's model.

    Attributes:
        model: the demand's GPU model.
        pool_models: pool name -> GPU model of every pool given, in order.
    """

    def __init__(self, model: str, pool_models: Mapping[str, str]):
        self.model = model
        self.pool_models = dict(pool_models)
        have = ", ".join(f"{name}: {m}" for name, m in self.pool_models.items()) or "no pools given"
        super().__init__(f"no GPU pool has {model} GPUs ({have})")


class InsufficientGpusError(MigPlanError):
    """The demand needs more GPUs of its model than the pools have.

    Attributes:
        model: the GPU model.
        needed: GPUs the optimal plan uses (``mig_gpus + whole_gpus``; count).
        mig_gpus: GPUs with MIG layouts in the optimal plan (count).
        whole_gpus: whole GPUs (MIG disabled) demanded (count).
        available: GPUs of the model in the pools (count).
        pools: pool name -> GPUs of the model in it.
    """

    def __init__(self, model: str, mig_gpus: int, whole_gpus: int, pools: Mapping[str, int]):
        self.model = model
        self.mig_gpus = mig_gpus
        self.whole_gpus = whole_gpus
        self.needed = mig_gpus + whole_gpus
        self.pools = dict(pools)
        self.available = sum(self.pools.values())
        have = ", ".join(f"{name}: {n}" for name, n in self.pools.items())
        super().__init__(
            f"the demand needs {self.needed} {model} GPUs ({mig_gpus} with MIG layouts + {whole_gpus} whole) "
            f"but the pools have {self.available} ({have}); add {self.needed - self.available} GPUs"
        )


# --------------------------------------------------------------------------- inputs


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True)
class GpuPool:
    """GPUs of one model that a plan may use: an on-prem host or a cloud node pool.

    Args:
        name: pool name; for one node it is the node name (e.g. ``"dgx-01"``), for
            several the nodes are called ``<name>-0``, ``<name>-1``, ... An RFC 1123
            subdomain (lower case), as Kubernetes node names are.
        model: GPU model (catalog key, e.g. ``"H100-80GB"``). Pools of other models than
            the demand's are ignored by :func:`plan_mig`.
        count: GPUs per node (count, >= 1), e.g. 8 for a DGX H100 or a p5.48xlarge.
        nodes: nodes in the pool (count, >= 1): 1 for a host, the NodePool's maximum
            node count for a cloud pool.

    Raises:
        MigPlanError: on a bad name, count or nodes value, or more than :data:`MAX_PLAN_GPUS` GPUs.
    """

    name: str
    model: str
    count: int
    nodes: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NODE_NAME.match(self.name):
            raise MigPlanError(f"GPU pool name must be a lower-case RFC 1123 node name, got {self.name!r}")
        if not isinstance(self.model, str) or not self.model:
            raise MigPlanError(f"GPU pool {self.name}: model must be a GPU model name, got {self.model!r}")
        if not _whole_number(self.count) or self.count < 1:
            raise MigPlanError(
                f"GPU pool {self.name}: count (GPUs per node) must be a whole number >= 1, got {self.count!r}"
            )
        if not _whole_number(self.nodes) or self.nodes < 1:
            raise MigPlanError(f"GPU pool {self.name}: nodes must be a whole number >= 1, got {self.nodes!r}")
        if self.count * self.nodes > MAX_PLAN_GPUS:
            raise MigPlanError(
                f"GPU pool {self.name}: {self.count} x {self.nodes} = {self.count * self.nodes} GPUs is more than "
                f"the {MAX_PLAN_GPUS} a plan may span; split the planning by site or pool"
            )

    @property
    def gpus(self) -> int:
        """GPUs in the pool: ``count * nodes`` (count)."""
        return self.count * self.nodes

    def node_name(self, index: int) -> str:
        """Name of node ``index`` (0-based): the pool name for a one-node pool, else ``<name>-<index>``."""
        if not 0 <= index < self.nodes:
            raise IndexError(f"GPU pool {self.name} has {self.nodes} node(s); no node {index}")
        return self.name if self.nodes == 1 else f"{self.name}-{index}"

    def node_names(self) -> tuple[str, ...]:
        """The pool's node names: ``(name,)`` for one node, else ``name-0``, ``name-1``, ..."""
        return tuple(self.node_name(i) for i in range(self.nodes))


@dataclass(frozen=True)
class MigDemand:
    """What a plan must provide on one GPU model: MIG instances and whole GPUs.

    Args:
        model: GPU model with MIG data (catalog key, e.g. ``"H100-80GB"``).
        instances: profile name (exact nvidia-smi spelling, e.g. ``"1g.10gb"``) ->
            number of MIG instances wanted (whole number >= 0). Stored as a
            :class:`~hybridgpu.mig.placement.MigLayout` in the model's profile order,
            zero counts dropped.
        whole_gpus: GPUs wanted with MIG disabled (count, >= 0). A ``7g.*`` instance is
            a MIG instance, not a whole GPU.

    Raises:
        UnknownDemandModelError: the model has no MIG data (lists the models that have).
        UnknownDemandProfileError: a profile is not one of the model's (names the model).
        MigPlanError: a count is not a whole number >= 0, ``instances`` is not a mapping, or the
            demand needs more than :data:`MAX_PLAN_GPUS` GPUs.
    """

    model: str
    instances: Mapping[str, int] = field(default_factory=dict)
    whole_gpus: int = 0

    def __post_init__(self) -> None:
        gpu = _mig_gpu(self.model)
        if not isinstance(self.instances, Mapping):
            raise MigPlanError(
                f"MIG demand instances must be a mapping of profile -> count, got {type(self.instances).__name__}"
            )
        for name, count in self.instances.items():
            if not isinstance(name, str) or not gpu.has_profile(name):
                raise UnknownDemandProfileError(gpu.name, str(name), gpu.profile_names)
            if not _whole_number(count):
                raise MigPlanError(
                    f"MIG demand: count of {name} on {gpu.name} must be a whole number >= 0, got {count!r}"
                )
        if not _whole_number(self.whole_gpus):
            raise MigPlanError(f"MIG demand: whole_gpus must be a whole number >= 0, got {self.whole_gpus!r}")
        slots = sum(count * gpu.profile(name).memory_slots for name, count in self.instances.items())
        least = self.whole_gpus + -(-slots // gpu.memory_slots)
        if least > MAX_PLAN_GPUS:
            raise MigPlanError(
                f"MIG demand on {gpu.name} needs at least {least} GPUs, more than the {MAX_PLAN_GPUS} a plan may span; "
                "check the counts for extra zeros, or split the demand"
            )
        ordered = MigLayout((n, self.instances.get(n, 0)) for n in gpu.profile_names)
        object.__setattr__(self, "instances", ordered)

    @property
    def total_instances(self) -> int:
        """MIG instances demanded, all profiles (count)."""
        return sum(self.instances.values())


def _mig_gpu(model: str) -> MigGpu:
    try:
        return mig_gpu(model)
    except UnknownMigModelError as exc:
        raise UnknownDemandModelError(exc.name, exc.known) from None


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class GpuAssignment:
    """One GPU of a plan.

    Attributes:
        pool: the :class:`GpuPool` name.
        node: node name (see :meth:`GpuPool.node_names`).
        gpu: GPU index on the node (0-based, as nvidia-smi and mig-parted number them).
        layout: the MIG instances on that GPU (profile -> count); None for a whole GPU
            (MIG disabled).
    """

    pool: str
    node: str
    gpu: int
    layout: MigLayout | None

    @property
    def mig_enabled(self) -> bool:
        """True if the GPU runs in MIG mode (has a layout)."""
        return self.layout is not None


@dataclass(frozen=True)
class MigPlan:
    """An optimal MIG plan from :func:`plan_mig`.

    Attributes:
        model: the GPU model (catalog key).
        demand: the :class:`MigDemand` planned for.
        mig_gpus: GPUs with MIG enabled (count); minimal.
        whole_gpus: GPUs with MIG disabled (count) = ``demand.whole_gpus``.
        layouts: ``(layout, number of GPUs)`` pairs for the MIG GPUs, fullest layout
            first; the counts add up to ``mig_gpus``.
        surplus: profile -> instances created beyond the demand (a read-only mapping,
            profiles with none left out); empty unless planned with ``fill=True``.
        assignments: one :class:`GpuAssignment` per used GPU: MIG GPUs in ``layouts``
            order, then whole GPUs, filling the pools in the order given.
        pools: the pools of ``model`` that were given, in order (also the unused ones).
        lower_bound: the lower bound on ``mig_gpus`` the solver proved (count; HiGHS' dual
            bound rounded up): no plan uses fewer MIG GPUs. Equal to ``mig_gpus``.
    """

    model: str
    demand: MigDemand
    mig_gpus: int
    whole_gpus: int
    layouts: tuple[tuple[MigLayout, int], ...]
    surplus: MigLayout
    assignments: tuple[GpuAssignment, ...]
    pools: tuple[GpuPool, ...]
    lower_bound: int

    @property
    def gpus_used(self) -> int:
        """GPUs the plan uses: ``mig_gpus + whole_gpus`` (count)."""
        return self.mig_gpus + self.whole_gpus

    @property
    def instances(self) -> MigLayout:
        """MIG instances the plan creates, all GPUs (profile -> count) = demand + surplus."""
        total: dict[str, int] = {}
        for layout, count in self.layouts:
            for name, n in layout.items():
                total[name] = total.get(name, 0) + n * count
        return MigLayout((name, total.get(name, 0)) for name in mig_gpu(self.model).profile_names)

    def _nodes(self) -> list[tuple[str, list[MigLayout | None]]]:
        """(node, per-GPU layout or None) for every node with an assigned GPU, in order."""
        per_node: dict[str, list[MigLayout | None]] = {}
        sizes = {pool.name: pool.count for pool in self.pools}
        for a in self.assignments:
            gpus = per_node.setdefault(a.node, [None] * sizes[a.pool])
            gpus[a.gpu] = a.layout
        return list(per_node.items())

    def _node_configs(self) -> list[tuple[str, str, list[MigPartedEntry]]]:
        """(node, config name, mig-parted entries) for every node with an assigned GPU, in order."""
        out = []
        for node, gpus in self._nodes():
            groups: dict[MigLayout | None, list[int]] = {}
            for index, layout in enumerate(gpus):
                groups.setdefault(layout, []).append(index)
            entries = [
                MigPartedEntry(
                    devices=ALL_DEVICES if len(groups) == 1 else tuple(indices),
                    mig_devices=None if layout is None else layout.as_dict(),
                )
                for layout, indices in groups.items()
            ]
            out.append((node, _config_name(entries), entries))
        return out

    def _configs(self) -> dict[str, list[MigPartedEntry]]:
        """Config name -> entries, one per distinct per-node combination, in node order of first use."""
        configs: dict[str, list[MigPartedEntry]] = {}
        for _, name, entries in self._node_configs():
            configs.setdefault(name, entries)
        return configs

    def mig_parted_configs(self) -> dict[str, list[dict[str, Any]]]:
        """Named NVIDIA mig-parted configs, one per distinct per-node layout combination.

        Returns:
            config name -> list of mig-parted ``MigConfigSpec`` entries (the value of one
            key under ``mig-configs:`` in a ``version: v1`` file), in node order of first
            use. GPU indices of a node with the same layout share one entry
            (``"devices": [0, 1, ...]``); a node whose GPUs all share one layout uses
            ``"devices": "all"``. MIG GPUs get ``{"mig-enabled": True, "mig-devices":
            {profile: count}}``; whole GPUs and the node's unassigned GPUs get
            ``{"mig-enabled": False}`` (no ``mig-devices`` key). Names are
            ``hybridgpu-all-<profile>-<count>[-...]`` when all GPUs of the node share a
            layout (``+me`` spelt ``.me``, as mig-parted's own names do) or
            ``hybridgpu-all-disabled``, else ``hybridgpu-<first 8 hex of the SHA-256 of
            the entries as sorted JSON>``; all are valid label values.

        Source: NVIDIA/mig-parted ``api/spec/v1/spec.go`` (2024-01-28, unchanged at
        2026-08-21). No ``device-filter``: every GPU a plan assigns on a node is of the
        plan's model, and mig-parted applies an entry without filter to every GPU model.
        """
        return self.mig_parted_document()["mig-configs"]

    def mig_parted_document(self) -> dict[str, Any]:
        """A whole mig-parted config file: ``{"version": "v1", "mig-configs": mig_parted_configs()}``,
        rendered by :func:`hybridgpu.mig.parted.render_mig_parted`."""
        return render_mig_parted(self._configs())

    def node_labels(self) -> dict[str, dict[str, str]]:
        """Node name -> ``{"nvidia.com/mig.config": <config name>}`` for every node with an assigned GPU.

        Nodes of the pools without any assigned GPU are left out (keep or set their own
        config, e.g. mig-parted's ``all-disabled``). For a cloud NodePool all nodes get
        one template's labels, so only a plan whose nodes of that pool share one config
        can be applied there as is.
        """
        return {node: {MIG_CONFIG_LABEL: name} for node, name, _ in self._node_configs()}


def _config_name(entries: list[MigPartedEntry]) -> str:
    if len(entries) == 1 and entries[0].devices == ALL_DEVICES:
        entry = entries[0]
        if entry.mig_devices is None:
            readable = f"{CONFIG_PREFIX}all-disabled"
        else:
            parts = [f"{p.replace('+me', '.me')}-{c}" for p, c in entry.mig_devices.items()]
            readable = f"{CONFIG_PREFIX}all-" + "-".join(parts)
        if _LABEL_VALUE.match(readable):
            return readable
    rendered = [entry.as_dict() for entry in entries]
    digest = hashlib.sha256(json.dumps(rendered, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"{CONFIG_PREFIX}{digest[:8]}"


# --------------------------------------------------------------------------- solver


@functools.lru_cache(maxsize=256)
def _columns(model: str, names: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    """Maximal per-GPU count vectors over ``names`` (projections of placeable layouts).

    Sorted by count vector, descending. The projection of a placeable layout is
    placeable (drop instances), so these are exactly the maximal placeable mixes of
    the demanded profiles.
    """
    projected = {tuple(layout[n] for n in names) for layout in maximal_layouts(model)}
    projected.discard((0,) * len(names))
    vectors = sorted(projected, reverse=True)
    maximal = [
        v for v in vectors if not any(w != v and all(a >= b for a, b in zip(w, v, strict=True)) for w in vectors)
    ]
    return tuple(maximal)


def _solve(columns: tuple[tuple[int, ...], ...], demand: tuple[int, ...]) -> tuple[list[int], int]:
    """An optimal cover of ``demand`` by ``columns``: the covering integer program of the module docstring.

    Args:
        columns: per-GPU count vectors (one per candidate layout), each as long as ``demand``.
        demand: instances wanted per profile (whole numbers >= 0).

    Returns:
        ``(column index per GPU, lower bound)``: the chosen columns, each repeated once per GPU
        that gets it, in column order; and the lower bound HiGHS proved on the GPU count (its dual
        bound, rounded up), equal to the number of GPUs chosen.

    Raises:
        MigPlanError: HiGHS did not prove an optimum (it names the model status), or its solution,
            rounded to whole GPUs, does not cover the demand (checked in integer arithmetic).
    """
    if not any(demand):
        return [], 0
    import highspy
    import numpy as np

    n, m = len(columns), len(demand)
    starts, index, value = [0], [], []
    for column in columns:
        for row, count in enumerate(column):
            if count:
                index.append(row)
                value.append(float(count))
        starts.append(len(index))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = np.ones(n)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.full(n, highspy.kHighsInf)
    lp.row_lower_ = np.array(demand, dtype=float)
    lp.row_upper_ = np.full(m, highspy.kHighsInf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    h = quiet_highs()
    # The objective (a GPU count) is a whole number: a gap below 1 proves the incumbent optimal.
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", _MIP_ABS_GAP)
    h.setOptionValue("time_limit", _TIME_LIMIT_S)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise MigPlanError(f"the MIG planner's solver (HiGHS) stopped without an optimum: {h.modelStatusToString(status)}")
    x = [round(v) for v in h.getSolution().col_value]
    if any(v < 0 for v in x) or any(sum(x[j] * columns[j][i] for j in range(n)) < demand[i] for i in range(m)):
        raise MigPlanError("the MIG planner's solver (HiGHS) returned a plan that does not cover the demand")  # pragma: no cover
    bound = math.ceil(h.getInfo().mip_dual_bound - _BOUND_TOL)
    chosen = [j for j, count in enumerate(x) for _ in range(count)]
    return chosen, min(bound, len(chosen))


# --------------------------------------------------------------------------- planning


def _fullness_key(gpu: MigGpu, layout: Mapping[str, int]) -> tuple[Any, ...]:
    """Sort key putting fuller GPUs first: memory slices, compute slices, count vector (all descending)."""
    memory = compute = 0
    for profile in gpu.profiles:
        count = layout.get(profile.name, 0)
        memory += profile.memory_slots * count
        compute += profile.compute_slices * count
    return (-memory, -compute, tuple(-layout.get(n, 0) for n in gpu.profile_names))


def plan_mig(demand: MigDemand, pools: Sequence[GpuPool], *, fill: bool = False) -> MigPlan:
    """Plan per-GPU MIG layouts that meet ``demand`` with the fewest GPUs of its model.

    Args:
        demand: MIG instances (profile -> count) and whole GPUs of one GPU model.
        pools: the GPUs available, in the order to fill them. Pools of another model
            are ignored.
        fill: False (default): create exactly the demanded instances (the free memory
            slices of a GPU stay unpartitioned). True: then fill each MIG GPU's free
            space with more instances of the demanded profiles (smallest profile first,
            as many as fit), reported in ``MigPlan.surplus``.

    Returns:
        A :class:`MigPlan` with the minimal number of MIG GPUs (exact optimum of the
        covering integer program; see the module docstring) plus ``demand.whole_gpus``
        whole GPUs. Deterministic for a given input.

    Raises:
        NoPoolForModelError: no pool has the demand's model.
        InsufficientGpusError: the pools have fewer GPUs of the model than the optimal
            plan needs; the message says how many it needs and how many to add.
        MigPlanError: ``pools`` holds something else than :class:`GpuPool`, or two
            pools produce the same node name.
        (:class:`MigDemand` raises the unknown model/profile errors on construction.)

    Measured (``benchmarks/mig_bench.py``'s 100 random demands of 1..987 GPUs, 2-core VM, load
    average ~2, 2026-11-26): median 1.4-1.9 ms, p90 7-8 ms, max 16-18 ms, and 7-10 ms for a
    demand needing 520 GPUs, against 0.55 ms, 1.6-1.8 ms, 3.2 ms and 1.8 ms for the hand-written
    solver HiGHS replaced; plus a one-off ~70 ms per model the first time (layout caches).
    """
    if not isinstance(demand, MigDemand):
        raise MigPlanError(f"demand must be a MigDemand, got {type(demand).__name__}")
    seen_nodes: set[str] = set()
    for pool in pools:
        if not isinstance(pool, GpuPool):
            raise MigPlanError(f"pools must hold GpuPool objects, got {type(pool).__name__}")
        for node in pool.node_names():
            if node in seen_nodes:
                raise MigPlanError(f"two GPU pools produce the node name {node!r}; rename a pool")
            seen_nodes.add(node)
    model = demand.model
    gpu = mig_gpu(model)
    mine = tuple(p for p in pools if p.model == model)
    if not mine:
        raise NoPoolForModelError(model, {p.name: p.model for p in pools})

    names = tuple(n for n in gpu.profile_names if demand.instances[n])
    vector = tuple(demand.instances[n] for n in names)
    if names:
        columns = _columns(model, names)
        chosen, lower = _solve(columns, vector)
        per_gpu = [list(columns[j]) for j in chosen]
    else:
        per_gpu, lower = [], 0

    # Canonical order (fullest first), then remove the surplus from the last GPUs first.
    keys: dict[tuple[int, ...], tuple[Any, ...]] = {}

    def key(v: tuple[int, ...]) -> tuple[Any, ...]:
        if v not in keys:
            keys[v] = _fullness_key(gpu, dict(zip(names, v, strict=True)))
        return keys[v]

    per_gpu.sort(key=lambda v: key(tuple(v)))
    excess = [sum(v[i] for v in per_gpu) - vector[i] for i in range(len(names))]
    for v in reversed(per_gpu):
        if not any(excess):
            break
        for i in range(len(names)):
            cut = min(excess[i], v[i])
            v[i] -= cut
            excess[i] -= cut
    distinct: dict[tuple[int, ...], MigLayout] = {}
    for vec in map(tuple, per_gpu):
        if vec not in distinct and any(vec):  # an empty GPU cannot occur at an optimum; defensive
            layout = MigLayout(zip(names, vec, strict=True))
            distinct[vec] = _fill(model, names, layout) if fill else layout
    layouts = [distinct[v] for v in map(tuple, per_gpu) if v in distinct]
    ordered = sorted(set(distinct.values()), key=lambda layout: _fullness_key(gpu, layout))
    rank = {layout: i for i, layout in enumerate(ordered)}
    layouts.sort(key=rank.__getitem__)
    for layout in ordered:
        placement = check_layout(model, layout)
        if not placement.ok:  # pragma: no cover - columns come from maximal_layouts
            raise AssertionError(f"planner produced an unplaceable layout {layout}: {placement.reason}")

    grouped: dict[MigLayout, int] = {}
    for layout in layouts:
        grouped[layout] = grouped.get(layout, 0) + 1
    created = {n: sum(layout[n] * count for layout, count in grouped.items()) for n in gpu.profile_names}
    surplus = MigLayout((n, created[n] - demand.instances[n]) for n in gpu.profile_names)

    mig_gpus = len(layouts)
    needed = mig_gpus + demand.whole_gpus
    available = sum(p.gpus for p in mine)
    if needed > available:
        raise InsufficientGpusError(model, mig_gpus, demand.whole_gpus, {p.name: p.gpus for p in mine})

    wanted: list[MigLayout | None] = [*layouts, *([None] * demand.whole_gpus)]
    assignments: list[GpuAssignment] = []
    slots = ((p.name, p.node_name(i), index) for p in mine for i in range(p.nodes) for index in range(p.count))
    for gpu_layout, (pool_name, node, index) in zip(wanted, slots):
        assignments.append(GpuAssignment(pool=pool_name, node=node, gpu=index, layout=gpu_layout))

    return MigPlan(
        model=model,
        demand=demand,
        mig_gpus=mig_gpus,
        whole_gpus=demand.whole_gpus,
        layouts=tuple(grouped.items()),
        surplus=surplus,
        assignments=tuple(assignments),
        pools=mine,
        lower_bound=lower,
    )


def _fill(model: str, names: tuple[str, ...], layout: MigLayout) -> MigLayout:
    """Add instances of ``names`` (in order, as many of each as fit) to ``layout``."""
    counts = layout.as_dict()
    for name in names:
        while check_layout(model, {**counts, name: counts.get(name, 0) + 1}).ok:
            counts[name] = counts.get(name, 0) + 1
    return MigLayout((n, counts.get(n, 0)) for n in mig_gpu(model).profile_names)
