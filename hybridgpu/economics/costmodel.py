"""The cost formulas: on-prem and cloud cost per productive GPU-hour, break-even, egress, cumulative cost.

Every formula is written out in ``docs/economics.md``; the short form:

* On-prem, per GPU and year, at utilization ``u`` (fraction of hours a GPU does productive
  work)::

      hardware  = serverUsdPerGpu / amortizationYears
      power(u)  = kW x (idle + (1 - idle) x u) x 8760 h x PUE x USD/kWh
      annual(u) = hardware + ops + network + facility + power(u)   = F + V x u
      per productive GPU-hour(u) = annual(u) / (8760 x u)

  ``F`` (fixed, USD/GPU/year) is paid whether the GPU works or not; ``V x u`` is the busy part
  of the power bill, so ``v = V / 8760`` is the on-prem cost of one more *used* GPU-hour.
* Cloud, per GPU-hour of an instance type with On-Demand price ``p_od`` (catalog,
  USD/instance-hour / GPUs): On-Demand ``p_od``; commitment ``p_od x (1 - discount)`` paid
  every hour of the term; spot ``p_od x spotPriceFraction`` per GPU-hour held, and per
  productive GPU-hour ``/ (1 - w)`` with the expected waste ``w = interruptions/h x lost
  hours per interruption`` (lost hours = checkpoint interval x lost fraction + restart time).
* Break-even utilization against a cloud price ``p`` (per productive GPU-hour)::

      F / (8760 x u) + v = p   =>   u* = F / (8760 x (p - v))

  On-prem is cheaper above ``u*``; ``u* > 1`` means never (up to 100% utilization).

Hours: 8,760 per year (24 x 365) and 730 per month (8,760 / 12), as the seed documents use.
Nothing here imports Pulumi.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hybridgpu.catalog import GpuModel
from hybridgpu.economics.prices import CloudPricing, EgressPrice, OnPremCost

__all__ = [
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "CloudRate",
    "OnPremCostModel",
    "break_even_utilization",
    "checkpoint_egress_usd_per_month",
    "cloud_rates",
    "cumulative_cloud_usd",
    "cumulative_onprem_usd",
    "spot_waste_fraction",
]

#: Hours in a (non-leap) year, 24 x 365: the seeds' "8,760 GPU-hours" per GPU-year.
HOURS_PER_YEAR = 24 * 365
#: Average hours in a month, 8,760 / 12 = 730.
HOURS_PER_MONTH = HOURS_PER_YEAR / 12


def _check_utilization(u: float) -> None:
    if not (isinstance(u, (int, float)) and math.isfinite(u) and 0 < u <= 1):
        raise ValueError(f"utilization must be a fraction in (0, 1], got {u!r}")


@dataclass(frozen=True)
class OnPremCostModel:
    """On-prem cost of one GPU (all money in USD; see the module docstring for the formulas).

    Attributes:
        server_usd_per_gpu: purchase price per GPU (USD), paid up front.
        amortization_years: straight-line depreciation period (years).
        ops_usd_per_gpu_year: staff (USD/GPU/year).
        network_usd_per_gpu_year: fabric, amortized (USD/GPU/year).
        facility_usd_per_gpu_year: rack space / colocation (USD/GPU/year).
        power_kw_per_gpu: draw at 100% utilization (kW).
        idle_power_fraction: idle draw as a fraction of ``power_kw_per_gpu``.
        pue: power usage effectiveness (>= 1).
        usd_per_kwh: electricity price (USD/kWh).
        gpus_per_server: GPUs per server (the unit on-prem capacity is bought in).
    """

    server_usd_per_gpu: float
    amortization_years: float
    ops_usd_per_gpu_year: float
    network_usd_per_gpu_year: float
    facility_usd_per_gpu_year: float
    power_kw_per_gpu: float
    idle_power_fraction: float
    pue: float
    usd_per_kwh: float
    gpus_per_server: int = 8

    def __post_init__(self) -> None:
        for name in ("server_usd_per_gpu", "ops_usd_per_gpu_year", "network_usd_per_gpu_year", "facility_usd_per_gpu_year", "power_kw_per_gpu", "usd_per_kwh"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not (self.amortization_years > 0 and math.isfinite(self.amortization_years)):
            raise ValueError(f"amortization_years must be > 0, got {self.amortization_years!r}")
        if not 0 <= self.idle_power_fraction <= 1:
            raise ValueError(f"idle_power_fraction must be in [0, 1], got {self.idle_power_fraction!r}")
        if not (self.pue >= 1 and math.isfinite(self.pue)):
            raise ValueError(f"pue must be >= 1, got {self.pue!r}")
        if self.gpus_per_server < 1:
            raise ValueError(f"gpus_per_server must be >= 1, got {self.gpus_per_server!r}")

    @classmethod
    def from_data(cls, cost: OnPremCost, gpu: GpuModel, host_kw_per_gpu: float | None = None) -> OnPremCostModel:
        """Build from a price-data entry.

        Args:
            cost: the price-data entry (with the stack's overrides).
            gpu: its GPU model.
            host_kw_per_gpu: the inventory's draw per GPU at full load, platform included
                (:attr:`hybridgpu.inventory.power.GpuDraw.kw_per_gpu`), or None without an inventory.

        The draw per GPU is the entry's ``powerKwPerGpu`` when set (packaged data or the stack's
        ``hybridgpu:economics.onPrem``), else ``host_kw_per_gpu``, else the GPU's catalog
        ``tdpWatts`` / 1000 (board power alone: the seeds' worked examples). Source of the TDP and
        the platforms: the GPU catalog (``hybridgpu/catalog/data/gpu_models.yaml``, ``platforms.yaml``).
        """
        if cost.power_kw_per_gpu is not None:
            kw = cost.power_kw_per_gpu
        elif host_kw_per_gpu is not None:
            kw = host_kw_per_gpu
        else:
            kw = gpu.tdp_watts / 1000
        return cls(
            server_usd_per_gpu=cost.server_usd_per_gpu,
            amortization_years=cost.amortization_years,
            ops_usd_per_gpu_year=cost.ops_usd_per_gpu_year,
            network_usd_per_gpu_year=cost.network_usd_per_gpu_year,
            facility_usd_per_gpu_year=cost.facility_usd_per_gpu_year,
            power_kw_per_gpu=kw,
            idle_power_fraction=cost.idle_power_fraction,
            pue=cost.pue,
            usd_per_kwh=cost.usd_per_kwh,
            gpus_per_server=cost.gpus_per_server,
        )

    # ---------------------------------------------------------------- per GPU and year

    @property
    def hardware_usd_per_gpu_year(self) -> float:
        """Hardware amortization: ``server_usd_per_gpu / amortization_years`` (USD/GPU/year)."""
        return self.server_usd_per_gpu / self.amortization_years

    def power_usd_per_gpu_year(self, utilization: float) -> float:
        """Power bill at ``utilization``: kW x (idle + (1 - idle) x u) x 8760 x PUE x USD/kWh (USD/GPU/year).

        Raises:
            ValueError: utilization outside (0, 1].
        """
        _check_utilization(utilization)
        draw = self.power_kw_per_gpu * (self.idle_power_fraction + (1 - self.idle_power_fraction) * utilization)
        return draw * HOURS_PER_YEAR * self.pue * self.usd_per_kwh

    @property
    def fixed_usd_per_gpu_year(self) -> float:
        """``F``: everything paid whether the GPU is busy or not, idle power included (USD/GPU/year)."""
        idle_power = self.power_kw_per_gpu * self.idle_power_fraction * HOURS_PER_YEAR * self.pue * self.usd_per_kwh
        return self.hardware_usd_per_gpu_year + self.ops_usd_per_gpu_year + self.network_usd_per_gpu_year + self.facility_usd_per_gpu_year + idle_power

    @property
    def usd_per_used_gpu_hour(self) -> float:
        """``v``: the extra (busy) power cost of one productive GPU-hour (USD/GPU-hour)."""
        return self.power_kw_per_gpu * (1 - self.idle_power_fraction) * self.pue * self.usd_per_kwh

    @property
    def fixed_usd_per_gpu_hour(self) -> float:
        """``F / 8760``: the fixed cost of owning one GPU for one hour (USD/GPU-hour)."""
        return self.fixed_usd_per_gpu_year / HOURS_PER_YEAR

    def annual_usd_per_gpu(self, utilization: float) -> float:
        """Total yearly cost of one GPU at ``utilization``: ``F + v x 8760 x u`` (USD/GPU/year)."""
        _check_utilization(utilization)
        return self.fixed_usd_per_gpu_year + self.usd_per_used_gpu_hour * HOURS_PER_YEAR * utilization

    def breakdown_per_productive_gpu_hour(self, utilization: float) -> dict[str, float]:
        """Each component divided by the productive hours ``8760 x u`` (USD per productive GPU-hour).

        Returns:
            ``{"hardware", "ops", "power", "network", "facility", "total"}``.
        """
        productive = HOURS_PER_YEAR * utilization
        parts = {
            "hardware": self.hardware_usd_per_gpu_year / productive,
            "ops": self.ops_usd_per_gpu_year / productive,
            "power": self.power_usd_per_gpu_year(utilization) / productive,
            "network": self.network_usd_per_gpu_year / productive,
            "facility": self.facility_usd_per_gpu_year / productive,
        }
        parts["total"] = sum(parts.values())
        return parts

    def usd_per_productive_gpu_hour(self, utilization: float) -> float:
        """``annual(u) / (8760 x u)`` (USD per productive GPU-hour).

        Raises:
            ValueError: utilization outside (0, 1].
        """
        return self.annual_usd_per_gpu(utilization) / (HOURS_PER_YEAR * utilization)


@dataclass(frozen=True)
class CloudRate:
    """The price of one cloud purchase option for one instance type.

    Attributes:
        option: ``on-demand``, ``spot`` or a commitment name (``reserved-3y``...).
        usd_per_gpu_hour: what one GPU-hour of capacity costs (USD/GPU-hour).
        usd_per_productive_gpu_hour: per productive GPU-hour, spot waste included (USD).
        pays_when_idle: True for commitments (paid every hour of the term).
        waste_fraction: expected fraction of spot GPU-hours lost to interruptions (0 otherwise).
        term_years: commitment term (0 for on-demand and spot).
    """

    option: str
    usd_per_gpu_hour: float
    usd_per_productive_gpu_hour: float
    pays_when_idle: bool
    waste_fraction: float = 0.0
    term_years: int = 0


def spot_waste_fraction(
    interruptions_per_hour: float,
    checkpoint_interval_hours: float,
    lost_fraction_of_interval: float = 1.0,
    restart_hours: float = 0.0,
) -> float:
    """Expected GPU-hours lost per spot GPU-hour: ``p x (interval x lost_fraction + restart)``.

    Args:
        interruptions_per_hour: interruption probability per instance-hour.
        checkpoint_interval_hours: time between checkpoints (hours).
        lost_fraction_of_interval: share of an interval lost per interruption: 1.0 = the worst
            case (the seed's "at most 30 minutes"), 0.5 = the mean for uniformly timed interruptions.
        restart_hours: time to get a replacement node and reload the checkpoint (hours).

    Returns:
        The waste fraction ``w`` (GPU-hours per GPU-hour), in [0, 1).

    Raises:
        ValueError: a negative input, or ``w >= 1`` (the job never progresses: checkpoint more often).
    """
    for name, value in (("interruptions_per_hour", interruptions_per_hour), ("checkpoint_interval_hours", checkpoint_interval_hours),
                        ("lost_fraction_of_interval", lost_fraction_of_interval), ("restart_hours", restart_hours)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    waste = interruptions_per_hour * (checkpoint_interval_hours * lost_fraction_of_interval + restart_hours)
    if waste >= 1:
        raise ValueError(
            f"expected spot waste {waste:.2f} GPU-hours per GPU-hour is >= 1: checkpoint more often than every {checkpoint_interval_hours} h"
        )
    return waste


def cloud_rates(
    on_demand_usd_per_gpu_hour: float,
    pricing: CloudPricing,
    checkpoint_interval_hours: float = 0.5,
    lost_fraction_of_interval: float = 1.0,
    restart_hours: float = 0.0,
) -> list[CloudRate]:
    """Every purchase option of a family at one On-Demand price.

    Args:
        on_demand_usd_per_gpu_hour: catalog On-Demand price / GPUs (USD/GPU-hour).
        pricing: the family's purchase-option data.
        checkpoint_interval_hours, lost_fraction_of_interval, restart_hours: see :func:`spot_waste_fraction`.

    Returns:
        On-Demand first, then the commitments in data order, then spot (when the data has a
        spot price).

    Raises:
        ValueError: a negative price, or spot waste >= 1.
    """
    p = on_demand_usd_per_gpu_hour
    if not math.isfinite(p) or p < 0:
        raise ValueError(f"On-Demand price must be a finite number >= 0 USD/GPU-hour, got {p!r}")
    rates = [CloudRate("on-demand", p, p, False)]
    for c in pricing.commitments:
        rate = p * (1 - c.discount)
        rates.append(CloudRate(c.name, rate, rate, True, term_years=c.term_years))
    if pricing.spot_price_fraction is not None:
        waste = spot_waste_fraction(pricing.spot_interruptions_per_hour, checkpoint_interval_hours, lost_fraction_of_interval, restart_hours)
        spot = p * pricing.spot_price_fraction
        rates.append(CloudRate("spot", spot, spot / (1 - waste), False, waste_fraction=waste))
    return rates


def break_even_utilization(fixed_usd_per_gpu_year: float, cloud_usd_per_productive_gpu_hour: float, onprem_usd_per_used_gpu_hour: float = 0.0) -> float | None:
    """Utilization above which on-prem is cheaper per productive GPU-hour: ``F / (8760 x (p - v))``.

    Args:
        fixed_usd_per_gpu_year: ``F``, on-prem fixed cost (USD/GPU/year).
        cloud_usd_per_productive_gpu_hour: ``p``, the cloud option's price (USD/GPU-hour).
        onprem_usd_per_used_gpu_hour: ``v``, on-prem busy power per GPU-hour (USD/GPU-hour).

    Returns:
        ``u*`` (may exceed 1: on-prem never wins up to full use), or None when ``p <= v``
        (every used hour costs more on-prem than in the cloud).
    """
    margin = cloud_usd_per_productive_gpu_hour - onprem_usd_per_used_gpu_hour
    if margin <= 0:
        return None
    return fixed_usd_per_gpu_year / (HOURS_PER_YEAR * margin)


def checkpoint_egress_usd_per_month(checkpoint_gb: float, transfers_per_month: float, price: EgressPrice) -> float:
    """Egress of moving checkpoints out: ``price.monthly_cost(checkpoint_gb x transfers_per_month)`` (USD/month).

    Raises:
        ValueError: a negative size or count.
    """
    if checkpoint_gb < 0 or transfers_per_month < 0:
        raise ValueError("checkpoint size and transfers per month must be >= 0")
    return price.monthly_cost(checkpoint_gb * transfers_per_month)


def cumulative_onprem_usd(model: OnPremCostModel, gpus: float, utilization: float, months: int = 36) -> list[float]:
    """Cash spent on an owned fleet by the end of each month 0..``months`` (USD).

    The servers are paid at month 0 (and again every ``amortization_years`` when that falls
    inside the horizon: a hardware refresh); operations, network, facility and power accrue
    monthly (``annual(u) - hardware``) / 12.

    Returns:
        ``months + 1`` cumulative values, the first being the purchase.
    """
    _check_utilization(utilization)
    running = model.annual_usd_per_gpu(utilization) - model.hardware_usd_per_gpu_year
    refresh = max(1, round(model.amortization_years * 12))
    out, total = [], 0.0
    for month in range(months + 1):
        if month % refresh == 0 and month < months:
            total += gpus * model.server_usd_per_gpu
        if month > 0:
            total += gpus * running / 12
        out.append(total)
    return out


def cumulative_cloud_usd(rate: CloudRate, gpus: float, utilization: float, months: int = 36) -> list[float]:
    """Cloud spend by the end of each month 0..``months`` to do the same productive work (USD).

    The work is ``gpus x u`` productive GPU-hours per hour. Pay-per-use options pay for it at
    ``usd_per_productive_gpu_hour``; a commitment is sized to that average and fully used (the
    best case for it: real demand varies, which the planner accounts for).
    """
    _check_utilization(utilization)
    monthly = gpus * utilization * HOURS_PER_MONTH * rate.usd_per_productive_gpu_hour
    return [monthly * m for m in range(months + 1)]
