"""Per-stack cost report: what the stack's GPU capacity costs, its break-even, burst spend and right-sizing hints.

Built from the same stack file the Pulumi program reads (``hybridgpu.stack.files``), the
cloud NodePools' GPU limits (``hybridgpu:cloud.nodePools``), the on-prem inventory
(``hybridgpu:onprem``), the price data (:mod:`hybridgpu.economics.prices`) with the stack's
``hybridgpu:economics`` overrides, and the GPU catalog's On-Demand prices. Nothing is deployed
and Pulumi is not imported. Formulas: :mod:`hybridgpu.economics.costmodel` and
docs/economics.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from hybridgpu.catalog import InstanceType
from hybridgpu.config.economics import EconomicsConfig
from hybridgpu.config.models import CapacityType, NodePoolConfig, StackConfig
from hybridgpu.economics.costmodel import (
    HOURS_PER_MONTH,
    CloudRate,
    OnPremCostModel,
    break_even_utilization,
    checkpoint_egress_usd_per_month,
    cloud_rates,
    cumulative_cloud_usd,
    cumulative_onprem_usd,
)
from hybridgpu.economics.planner import CapacityPrices
from hybridgpu.economics.prices import ONPREM_COSTS_FILE, EconomicsData, GpuHourPrice, UnknownPriceError, load_economics_data
from hybridgpu.economics.vram import estimate_vram, fitting_gpus, fitting_mig_profiles, min_gpus
from hybridgpu.inventory import Inventory
from hybridgpu.inventory.power import GpuDraw, gpu_draw_by_model
from hybridgpu.render.karpenter import resolve_instance_types

__all__ = ["BreakEven", "BurstLine", "CapacityLine", "Hint", "StackCostReport", "build_report", "cloud_price_data", "plan_prices", "pool_gpu_hour_price"]


@dataclass(frozen=True)
class CapacityLine:
    """One slice of the stack's capacity, priced.

    Attributes:
        name: NodePool name, or ``on-prem <GPU model>``.
        kind: ``onprem``, ``reserved``, ``spot`` or ``on-demand`` (the pool's first capacity
            type in Karpenter's order reserved > spot > on-demand).
        gpus: GPUs (the pool's GPU limit, or the inventory's GPUs).
        gpu_model: GPU catalog key.
        instance_type: the pool's cheapest priced instance type per GPU (None on-prem).
        option: price option used (``on-demand``, ``spot``, a commitment, ``owned``).
        usd_per_gpu_hour: price per GPU-hour of capacity (on-prem: fixed part per owned GPU-hour).
        pays_when_idle: True for capacity billed every hour (reservations, owned servers).
        monthly_usd: utilization (as text, e.g. ``"0.5"``) -> USD per month for the slice.
        usd_per_productive_gpu_hour: utilization -> USD per productive GPU-hour.
        price_basis: how ``usd_per_gpu_hour`` is made (:meth:`GpuHourPrice.basis`; on-prem: the TCO model).
    """

    name: str
    kind: str
    gpus: int
    gpu_model: str
    instance_type: str | None
    option: str
    usd_per_gpu_hour: float
    pays_when_idle: bool
    monthly_usd: dict[str, float]
    usd_per_productive_gpu_hour: dict[str, float]
    price_basis: str = ""


@dataclass(frozen=True)
class BreakEven:
    """Break-even utilization of owning a GPU against one cloud option.

    Attributes:
        option: cloud purchase option.
        instance_type: instance type priced.
        usd_per_productive_gpu_hour: the option's price per productive GPU-hour.
        utilization: ``u*`` (None: on-prem never cheaper; above 1: not below 100%).
    """

    option: str
    instance_type: str
    usd_per_productive_gpu_hour: float
    utilization: float | None


@dataclass(frozen=True)
class BurstLine:
    """The most an elastic NodePool may spend.

    Attributes:
        name: NodePool name.
        kind: ``spot`` or ``on-demand``.
        gpu_limit: GPUs.
        usd_per_hour: limit x the pool's priciest GPU-hour for its capacity type (USD/hour).
        usd_per_month: ``usd_per_hour x 730`` (USD/month, the limit held all month).
    """

    name: str
    kind: str
    gpu_limit: int
    usd_per_hour: float
    usd_per_month: float


@dataclass(frozen=True)
class Hint:
    """A right-sizing hint for a configured workload.

    Attributes:
        workload: workload name.
        needs_gib: estimated memory (GiB per GPU).
        smallest_gpu: smallest whole GPU that holds it (catalog key) or None.
        smallest_mig: smallest MIG profile of the pool's GPU (or of any GPU) that holds it, or None.
        pool_gpu: the pool's GPU model (None without ``nodePool``).
        pool_gpus_needed: GPUs of the pool's model it needs when sharded (None without a pool).
        message: the hint in words.
    """

    workload: str
    needs_gib: float
    smallest_gpu: str | None
    smallest_mig: str | None
    pool_gpu: str | None
    pool_gpus_needed: int | None
    message: str


@dataclass
class StackCostReport:
    """The report (all money in USD; see the attribute docs of the line types).

    Attributes:
        stack: stack name.
        utilizations: utilizations priced.
        capacity: priced capacity slices.
        monthly_total_usd: utilization (text) -> sum over the slices (USD/month).
        onprem_gpu_model: GPU model the break-even is computed for (None: no on-prem data).
        onprem_gpus: GPUs of the reference on-prem fleet.
        onprem_model: the on-prem cost model (None without data).
        onprem_breakdown: utilization -> component -> USD per productive GPU-hour.
        cloud_rates: the cloud options priced for the break-even family.
        break_even: per cloud option.
        burst: per elastic NodePool.
        egress_usd_per_month: checkpoint egress (USD/month).
        cumulative: option -> cumulative USD by month 0..36 (reference fleet at the middle utilization).
        cumulative_utilization: the utilization of ``cumulative``.
        hints: right-sizing hints.
        pool_limits: capacity kind (``reserved``, ``spot``, ``on-demand``) -> sum of the priced
            NodePools' GPU limits.
        notes: what could not be priced and why.
        sources: price data used: what, source, date, verified.
        priced_with: the :class:`EconomicsData` with the stack's overrides applied, set by
            :func:`build_report` (not in :meth:`to_dict`, repr or comparisons).
    """

    stack: str
    utilizations: list[float]
    capacity: list[CapacityLine] = field(default_factory=list)
    monthly_total_usd: dict[str, float] = field(default_factory=dict)
    onprem_gpu_model: str | None = None
    onprem_gpus: int = 0
    onprem_model: OnPremCostModel | None = None
    onprem_breakdown: dict[str, dict[str, float]] = field(default_factory=dict)
    cloud_rates: list[CloudRate] = field(default_factory=list)
    break_even_instance_type: str | None = None
    break_even: list[BreakEven] = field(default_factory=list)
    burst: list[BurstLine] = field(default_factory=list)
    egress_usd_per_month: float = 0.0
    cumulative: dict[str, list[float]] = field(default_factory=dict)
    cumulative_utilization: float | None = None
    hints: list[Hint] = field(default_factory=list)
    pool_limits: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    priced_with: EconomicsData | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (dataclasses as dicts; without ``priced_with``)."""
        out = asdict(replace(self, priced_with=None))  # the price data is not copied into the dict
        del out["priced_with"]
        return out


def _key(u: float) -> str:
    return f"{u:g}"


_ORDER = (CapacityType.reserved, CapacityType.spot, CapacityType.on_demand)


def _primary_kind(types: list[CapacityType]) -> str:
    for t in _ORDER:
        if t in types:
            return t.value
    return types[0].value


def _priced(types: list[InstanceType]) -> list[InstanceType]:
    return [t for t in types if t.usd_per_gpu_hour is not None]


def _onprem_overrides(cfg: EconomicsConfig, fleet_gpus: int) -> dict[str, Any]:
    dumped = cfg.on_prem.model_dump(by_alias=True, exclude_none=True)
    for key in ("gpuModel", "gpus", "opsUsdPerYear"):
        dumped.pop(key, None)
    if cfg.on_prem.ops_usd_per_year is not None:
        dumped["opsUsdPerGpuYear"] = cfg.on_prem.ops_usd_per_year / max(fleet_gpus, 1)
    return dumped


def build_report(config: StackConfig, data: EconomicsData | None = None, inventory: Inventory | None = None, utilizations: list[float] | None = None,
                 file: str | None = None) -> StackCostReport:
    """Price the stack's capacity (see :class:`StackCostReport`).

    Args:
        config: the validated stack configuration.
        data: price data (default: the packaged data); the stack's ``hybridgpu:economics``
            overrides are applied on top.
        inventory: the stack's validated on-prem inventory (None: no on-prem hosts).
        utilizations: utilizations to price (default: the section's, else 0.3, 0.5, 0.8).
        file: the stack file, for error messages.

    Returns:
        The report. Capacity that cannot be priced (no catalog price, no data for a GPU
        model) is listed in ``notes`` instead.

    Raises:
        EconomicsDataError: an override in ``hybridgpu:economics`` makes a price entry invalid
            (names the stack file, the entry and the field).
        UnknownInstanceTypeError: an On-Demand override names an unknown instance type.
        ValueError: a utilization outside (0, 1], or spot waste >= 1 (checkpoint more often).
    """
    cfg = config.economics or EconomicsConfig()
    us = sorted(utilizations or cfg.utilizations)
    for u in us:
        if not 0 < u <= 1:
            raise ValueError(f"utilization must be a fraction in (0, 1], got {u}")
    report = StackCostReport(stack=config.stack, utilizations=us)
    base = data or load_economics_data()
    label = file or f"stack {config.stack}"

    # ---- which GPUs: cloud pools and on-prem inventory
    pools = config.cloud.node_pools if config.cloud else []
    inv_counts: Counter[str] = Counter()
    if inventory is not None:
        for host in inventory.gpu_workers:
            if host.state != "absent" and host.gpu is not None:
                inv_counts[host.gpu.model] += host.gpu.count
    first_pool_gpu = None
    for pool in pools:
        priced = resolve_instance_types(pool, base.catalog)
        if priced:
            first_pool_gpu = priced[0].gpu_model
            break
    ref_model = cfg.on_prem.gpu_model or (inv_counts.most_common(1)[0][0] if inv_counts else first_pool_gpu)
    if cfg.on_prem.gpus is not None:
        ref_gpus = cfg.on_prem.gpus
    elif ref_model is not None and inv_counts:
        ref_gpus = inv_counts.get(ref_model, 0)
    else:
        ref_gpus = sum((p.gpu_limit or 0) for p in pools if any(t.gpu_model == ref_model for t in resolve_instance_types(p, base.catalog)))

    # ---- prices with the stack's overrides
    cloud_over = {fam: o.model_dump(by_alias=True, exclude_none=True) for fam, o in cfg.cloud.items()}
    onprem_over = {}
    if ref_model is not None and (cfg.on_prem.model_dump(exclude_none=True).keys() - {"gpu_model", "gpus"}):
        onprem_over[ref_model] = _onprem_overrides(cfg, ref_gpus)
    data = base.with_overrides(on_demand_usd_per_hour=dict(cfg.on_demand_usd_per_hour), cloud=cloud_over, onprem=onprem_over, label=label)
    catalog = data.catalog
    report.priced_with = data
    # The power bill: what the inventory's hosts draw at full load, platform included (hybridgpu.inventory.power).
    draws: dict[str, GpuDraw] = gpu_draw_by_model(inventory.hosts, catalog) if inventory is not None else {}

    def onprem_model(gpu_model: str) -> OnPremCostModel:
        draw = draws.get(gpu_model)
        cost = data.onprem_cost(gpu_model)
        if draw is not None and cost.power_kw_per_gpu is None and draw.board_power_only:
            report.notes.append(
                f"on-prem {gpu_model}: {', '.join(draw.board_power_only)} billed at GPU board power only (no `powerKw`, no catalog "
                "platform for its GPUs); set the host's powerKw in the inventory"
            )
        return OnPremCostModel.from_data(cost, catalog.gpu_model(gpu_model), draw.kw_per_gpu if draw is not None else None)

    # Rates depend only on the instance type (its price and family): priced once per type, not
    # once per pool and per burst line (a 50-pool stack asked some 300 times).
    priced_rates: dict[str, dict[str, CloudRate]] = {}

    def rates_for(it: InstanceType) -> dict[str, CloudRate]:
        per_gpu = it.usd_per_gpu_hour
        assert per_gpu is not None  # only priced instance types (see _priced) get here
        if it.name in priced_rates:
            return priced_rates[it.name]
        try:
            pricing = data.cloud_pricing(it.family)
        except UnknownPriceError as exc:
            report.notes.append(str(exc))
            return {"on-demand": CloudRate("on-demand", per_gpu, per_gpu, False)}
        rates = {r.option: r for r in cloud_rates(per_gpu, pricing, cfg.checkpoint_interval_hours, cfg.lost_fraction_of_interval, cfg.restart_hours)}
        priced_rates[it.name] = rates
        return rates

    # ---- cloud capacity lines and burst
    for pool in pools:
        resolved = resolve_instance_types(pool, catalog)
        priced = _priced(resolved)
        kind = _primary_kind(pool.capacity_types)
        limit = pool.gpu_limit or 0
        if not priced:
            report.notes.append(f"NodePool {pool.name}: none of its instance types has an On-Demand price; set hybridgpu:economics.onDemandUsdPerHour")
            continue
        if limit == 0:
            report.notes.append(f"NodePool {pool.name}: no gpuLimit, so its spend is unbounded; not priced")
            continue
        cheapest = min(priced, key=lambda t: (t.usd_per_gpu_hour, t.name))
        rates = rates_for(cheapest)
        option: str  # a purchase option of `rates` ("on-demand", "spot", "reserved-1y", ...)
        if kind == "reserved":
            option = cfg.reserved_capacity_option
            if option not in rates:
                report.notes.append(f"NodePool {pool.name}: no {option} price for {cheapest.family}; billed at On-Demand")
                option = "on-demand"
            rate = rates[option]
            pays = True
        elif kind == "spot" and "spot" in rates:
            option, rate, pays = "spot", rates["spot"], False
        else:
            option, rate, pays = "on-demand", rates["on-demand"], False
        if pool.replicas is not None:
            pays = True  # a static pool (replicas): its nodes run, and are billed, every hour (hybridgpu.render.karpenter_static)
        price = data.gpu_hour_price(cheapest.name, option)  # the one price of a GPU-hour (EconomicsData.gpu_hour_price)
        if price.usd_per_gpu_hour != rate.usd_per_gpu_hour:  # cloud_rates and gpu_hour_price share CloudPricing's fractions
            raise AssertionError(f"{pool.name}: {option} priced {price.usd_per_gpu_hour} and {rate.usd_per_gpu_hour}")
        monthly, per_prod = {}, {}
        for u in us:
            if pays:
                monthly[_key(u)] = limit * HOURS_PER_MONTH * rate.usd_per_gpu_hour
                per_prod[_key(u)] = rate.usd_per_gpu_hour / u
            else:
                monthly[_key(u)] = limit * u * HOURS_PER_MONTH * rate.usd_per_productive_gpu_hour
                per_prod[_key(u)] = rate.usd_per_productive_gpu_hour
        report.capacity.append(CapacityLine(pool.name, kind, limit, cheapest.gpu_model, cheapest.name, option, price.usd_per_gpu_hour, pays, monthly, per_prod,
                                            price.basis()))
        report.pool_limits.setdefault(kind, 0)
        report.pool_limits[kind] += limit
        if not pays:
            worst = 0.0
            for it in priced:
                it_rates = rates_for(it)
                worst = max(worst, (it_rates["spot"] if option == "spot" and "spot" in it_rates else it_rates["on-demand"]).usd_per_gpu_hour)
            report.burst.append(BurstLine(pool.name, option, limit, limit * worst, limit * worst * HOURS_PER_MONTH))

    # ---- on-prem lines, break-even, cumulative
    if ref_model is not None:
        try:
            model: OnPremCostModel | None = onprem_model(ref_model)
        except UnknownPriceError as exc:
            model = None
            report.notes.append(str(exc))
        if model is not None:
            report.onprem_model = model
            report.onprem_gpu_model = ref_model
            report.onprem_gpus = ref_gpus
            report.onprem_breakdown = {_key(u): model.breakdown_per_productive_gpu_hour(u) for u in us}
            for gpu_model, count in sorted(inv_counts.items()):
                if gpu_model == ref_model:
                    m = model
                else:
                    try:
                        m = onprem_model(gpu_model)
                    except UnknownPriceError as exc:
                        report.notes.append(str(exc))
                        continue
                report.capacity.append(CapacityLine(
                    f"on-prem {gpu_model}", "onprem", count, gpu_model, None, "owned", m.fixed_usd_per_gpu_hour, True,
                    {_key(u): count * m.annual_usd_per_gpu(u) / 12 for u in us},
                    {_key(u): m.usd_per_productive_gpu_hour(u) for u in us},
                    f"on-prem {gpu_model}: fixed cost of an owned GPU-hour (TCO model, {ONPREM_COSTS_FILE} with the stack's hybridgpu:economics.onPrem)",
                ))
            candidates = [t for p in pools for t in _priced(resolve_instance_types(p, catalog)) if t.gpu_model == ref_model]
            candidates = candidates or [t for t in _priced(list(catalog.instance_types)) if t.gpu_model == ref_model]
            if candidates:
                it = min(candidates, key=lambda t: (t.usd_per_gpu_hour, -t.gpu_count, t.name))
                be_rates = list(rates_for(it).values())
                report.cloud_rates = be_rates
                report.break_even_instance_type = it.name
                for r in be_rates:
                    report.break_even.append(BreakEven(r.option, it.name, r.usd_per_productive_gpu_hour,
                                                       break_even_utilization(model.fixed_usd_per_gpu_year, r.usd_per_productive_gpu_hour, model.usd_per_used_gpu_hour)))
                mid = us[len(us) // 2]
                fleet = max(ref_gpus, 1)
                report.cumulative_utilization = mid
                report.cumulative["on-prem"] = cumulative_onprem_usd(model, fleet, mid)
                for r in be_rates:
                    report.cumulative[r.option] = cumulative_cloud_usd(r, fleet, mid)
            else:
                report.notes.append(f"no EC2 instance type with {ref_model} has an On-Demand price: no break-even")
    report.notes = list(dict.fromkeys(report.notes))
    report.monthly_total_usd = {_key(u): sum(line.monthly_usd[_key(u)] for line in report.capacity) for u in us}

    # ---- egress
    if cfg.egress.checkpoint_gb and cfg.egress.transfers_per_month:
        report.egress_usd_per_month = checkpoint_egress_usd_per_month(cfg.egress.checkpoint_gb, cfg.egress.transfers_per_month, data.egress_price(cfg.egress.path))

    # ---- right-sizing hints
    pool_gpu = {line.name: line.gpu_model for line in report.capacity}
    for w in cfg.workloads:
        est = estimate_vram(w.params_billions, w.mode, w.precision, w.optimizer, activation_gb=w.activation_gb)
        gpus = fitting_gpus(est, catalog)
        model_name = pool_gpu.get(w.node_pool) if w.node_pool else None
        if w.node_pool and model_name is None:
            report.notes.append(f"workload {w.name}: nodePool {w.node_pool!r} is not a priced NodePool of this stack")
        migs = fitting_mig_profiles(est, model_name) if model_name else fitting_mig_profiles(est)
        smallest_gpu = gpus[0].gpu_model if gpus else None
        smallest_mig = migs[0].label if migs else None
        needed = None
        if model_name:
            mem = catalog.gpu_model(model_name).memory_gib
            needed = min_gpus(lambda n: estimate_vram(w.params_billions, w.mode, w.precision, w.optimizer, activation_gb=w.activation_gb, shards=n), mem)
            share = est.total_gib / mem
            if needed and needed > 1:
                message = f"needs {est.total_gib:.1f} GiB: {needed} x {model_name} sharded (FSDP/ZeRO-3)"
            elif smallest_mig and share <= 0.5:
                message = f"uses {share:.0%} of a {model_name}: MIG {smallest_mig.split(' ', 1)[1]} holds it; smallest whole GPU: {smallest_gpu}"
            elif smallest_gpu and smallest_gpu != model_name and share <= 0.5:
                message = f"uses {share:.0%} of a {model_name}: a {smallest_gpu} holds it"
            else:
                message = f"uses {share:.0%} of a {model_name}: right-sized"
        else:
            message = f"needs {est.total_gib:.1f} GiB: smallest GPU {smallest_gpu or 'none (shard it)'}, smallest MIG profile {smallest_mig or 'none'}"
        report.hints.append(Hint(w.name, est.total_gib, smallest_gpu, smallest_mig, model_name, needed, message))

    # ---- sources of the prices used
    families = {catalog.instance_type(line.instance_type).family for line in report.capacity if line.instance_type}
    if report.break_even_instance_type:
        families.add(catalog.instance_type(report.break_even_instance_type).family)
    for fam in sorted(families):
        if fam in data.cloud:
            pricing = data.cloud[fam]
            report.sources.append({"what": f"purchase options {fam}", "source": list(pricing.source), "date": pricing.source_date, "verified": pricing.verified})
    if report.onprem_gpu_model:
        owned = data.onprem[report.onprem_gpu_model]
        report.sources.append({"what": f"on-prem {owned.gpu_model}", "source": list(owned.source), "date": owned.source_date, "verified": owned.verified})
    platforms = {name for draw in draws.values() for name in draw.platforms}
    for platform in catalog.platforms:
        if platform.name in platforms:
            report.sources.append({"what": f"power {platform.name} {platform.max_system_watts} W maximum", "source": list(platform.source),
                                   "date": platform.source_date, "verified": platform.verified})
    its = {line.instance_type for line in report.capacity if line.instance_type}
    if report.break_even_instance_type:
        its.add(report.break_even_instance_type)
    for name in sorted(its):
        it = catalog.instance_type(name)
        report.sources.append({"what": f"On-Demand {name} {it.on_demand_usd_per_hour:g} USD/h ({it.price_region})", "source": list(it.source),
                               "date": it.source_date, "verified": it.verified})
    return report


def cloud_price_data(cfg: EconomicsConfig | None, base: EconomicsData | None = None, label: str = "stack file") -> EconomicsData:
    """The price data with a stack's cloud overrides (``onDemandUsdPerHour``, ``cloud``) applied, as its cost report prices NodePools.

    Args:
        cfg: the stack's ``hybridgpu:economics`` section (None: no overrides).
        base: price data (default: the packaged data).
        label: the stack file, named in errors.

    Raises:
        EconomicsDataError: an override makes an entry invalid (names the file, entry and field).
        UnknownInstanceTypeError: an On-Demand override names an unknown instance type.
    """
    cfg = cfg or EconomicsConfig()
    cloud_over = {fam: o.model_dump(by_alias=True, exclude_none=True) for fam, o in cfg.cloud.items()}
    return (base or load_economics_data()).with_overrides(on_demand_usd_per_hour=dict(cfg.on_demand_usd_per_hour), cloud=cloud_over, label=label)


def pool_gpu_hour_price(pool: NodePoolConfig, capacity_type: str, data: EconomicsData) -> GpuHourPrice:
    """The price of a GPU-hour of ``capacity_type`` in NodePool ``pool``, as the cost report's capacity line prices it.

    The pool is priced on its cheapest priced instance type per GPU (ties: by name), through
    :meth:`EconomicsData.gpu_hour_price`.

    Args:
        pool: the NodePool (``hybridgpu:cloud.nodePools[]``).
        capacity_type: ``on-demand``, ``spot`` or a commitment name.
        data: the price data with the stack's overrides (:func:`cloud_price_data`).

    Raises:
        UnknownPriceError: none of the pool's instance types has an On-Demand price, or the family has no such option.
    """
    priced = _priced(resolve_instance_types(pool, data.catalog))
    if not priced:
        raise UnknownPriceError(f"NodePool {pool.name}: none of its instance types has an On-Demand price; set hybridgpu:economics.onDemandUsdPerHour")
    cheapest = min(priced, key=lambda t: (t.usd_per_gpu_hour, t.name))
    return data.gpu_hour_price(cheapest.name, capacity_type)


def plan_prices(
    data: EconomicsData,
    instance_type: str,
    onprem_gpu_model: str | None,
    checkpoint_interval_hours: float = 0.5,
    lost_fraction_of_interval: float = 1.0,
    restart_hours: float = 0.0,
) -> tuple[CapacityPrices, list[CloudRate], OnPremCostModel | None]:
    """The planner's prices for one instance type (cloud) and one GPU model (on-prem).

    Args:
        data: price data (with any overrides applied).
        instance_type: EC2 instance type whose On-Demand price, family options and GPU count
            (the commitment unit) are used.
        onprem_gpu_model: GPU model to price on-prem, or None for no on-prem option.
        checkpoint_interval_hours, lost_fraction_of_interval, restart_hours: spot waste inputs.

    Returns:
        ``(CapacityPrices, cloud rates, on-prem model or None)``.

    Raises:
        UnknownInstanceTypeError, UnknownPriceError: no such instance type, or no price for it,
            its family or the GPU model.
    """
    it = data.catalog.instance_type(instance_type)
    per_gpu = data.on_demand_usd_per_gpu_hour(instance_type)
    rates = cloud_rates(per_gpu, data.cloud_pricing(it.family), checkpoint_interval_hours, lost_fraction_of_interval, restart_hours)
    model = None
    if onprem_gpu_model is not None:
        model = OnPremCostModel.from_data(data.onprem_cost(onprem_gpu_model), data.catalog.gpu_model(onprem_gpu_model))
    by = {r.option: r for r in rates}
    prices = CapacityPrices.build(
        per_gpu,
        spot_usd_per_productive_gpu_hour=by["spot"].usd_per_productive_gpu_hour if "spot" in by else None,
        commitments={r.option: r.usd_per_gpu_hour for r in rates if r.pays_when_idle},
        onprem=model,
        commitment_unit_gpus=it.gpu_count,
    )
    return prices, rates, model
