"""Typed GPU economics configuration (config key ``hybridgpu:economics``): per-stack prices and report settings.

Everything is optional: without the section ``hybridgpu cost report`` uses the packaged price
data (``hybridgpu/economics/data/*.yaml``, with sources and dates) and the GPU catalog's
On-Demand prices. The section overrides those prices for one stack (negotiated rates, another
region, your server quote) and says which utilizations, checkpoint interval, egress volume and
workloads the report should use. Formulas: docs/economics.md.

Nothing here imports Pulumi.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.config.base import Dns1123Name, Model

__all__ = ["CloudPriceOverride", "CommitmentOverride", "EconomicsConfig", "EgressConfig", "OnPremOverride", "ShowbackConfig", "WorkloadConfig"]

Fraction = Annotated[float, Field(gt=0, le=1)]


class CommitmentOverride(Model):
    """One commitment purchase option (replaces the packaged list of the family when given)."""

    name: Literal["reserved-1y", "reserved-3y", "savings-plan-1y", "savings-plan-3y"] = Field(description="Option name. Required.")
    term_years: Literal[1, 3] = Field(description="Commitment term in years. Required.")
    payment: Literal["no-upfront", "partial-upfront", "all-upfront"] = Field(default="no-upfront", description="Payment option. Default: `no-upfront`.")
    discount: float = Field(ge=0, lt=1, description="Fraction off the On-Demand price (0..1), effective over the term. Required.")


class CloudPriceOverride(Model):
    """Purchase options of one EC2 instance family (fractions of its On-Demand price)."""

    commitments: list[CommitmentOverride] | None = Field(default=None, description="Commitment options. Default: the packaged data's.")
    spot_price_fraction: float | None = Field(default=None, gt=0, le=1, description="Average spot price / On-Demand price (0..1]. Default: the packaged data's.")
    spot_interruptions_per_hour: float | None = Field(
        default=None, ge=0, lt=1, description="Expected spot interruptions per instance-hour. Default: the packaged data's."
    )


class OnPremOverride(Model):
    """On-prem cost inputs; every field defaults to the packaged data of the GPU model (USD unless stated)."""

    gpu_model: str | None = Field(
        default=None,
        description="GPU catalog key to price on-prem, e.g. `H100-80GB`. Default: the inventory's GPU model, else the GPU of the first cloud NodePool.",
    )
    gpus: int | None = Field(
        default=None, ge=1, description="On-prem GPUs to compare (count). Default: the inventory's active GPUs, else the cloud NodePools' GPU limits."
    )
    server_usd_per_gpu: float | None = Field(default=None, ge=0, description="Server price per GPU (USD). Default: packaged data.")
    amortization_years: float | None = Field(default=None, gt=0, le=15, description="Depreciation period (years). Default: packaged data.")
    ops_usd_per_gpu_year: float | None = Field(default=None, ge=0, description="Operations staff per GPU and year (USD). Default: packaged data.")
    ops_usd_per_year: float | None = Field(
        default=None, ge=0, description="Operations staff for the whole fleet per year (USD), divided by `gpus`; exclusive with `opsUsdPerGpuYear`. Default: none."
    )
    power_kw_per_gpu: float | None = Field(default=None, gt=0, le=10, description="Draw per GPU at full use (kW). Default: packaged data (null = the inventory hosts' draw per GPU, else catalog TDP).")
    idle_power_fraction: float | None = Field(default=None, ge=0, le=1, description="Idle draw / full draw (0..1). Default: packaged data.")
    pue: float | None = Field(default=None, ge=1, le=3, description="Power usage effectiveness. Default: packaged data.")
    usd_per_kwh: float | None = Field(default=None, ge=0, description="Electricity price (USD/kWh). Default: packaged data.")
    network_usd_per_gpu_year: float | None = Field(default=None, ge=0, description="Fabric per GPU and year (USD). Default: packaged data.")
    facility_usd_per_gpu_year: float | None = Field(default=None, ge=0, description="Rack space per GPU and year (USD). Default: packaged data.")
    gpus_per_server: int | None = Field(default=None, ge=1, le=64, description="GPUs per server (count). Default: packaged data.")

    @model_validator(mode="after")
    def _one_ops_figure(self) -> OnPremOverride:
        if self.ops_usd_per_year is not None and self.ops_usd_per_gpu_year is not None:
            raise ValueError("set opsUsdPerYear (whole fleet) or opsUsdPerGpuYear (per GPU), not both")
        return self


class EgressConfig(Model):
    """Checkpoint transfers out of the cloud."""

    path: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$")] = Field(
        default="aws-internet", description="Egress price entry (`aws-internet`, `aws-cross-region`, ...). Default: `aws-internet`."
    )
    checkpoint_gb: float = Field(default=0.0, ge=0, description="Size of one checkpoint (GB). Default: 0.")
    transfers_per_month: float = Field(default=0.0, ge=0, description="Checkpoints moved out per month (count). Default: 0.")


class WorkloadConfig(Model):
    """A workload to right-size (VRAM estimate against the NodePool's GPU)."""

    name: Dns1123Name = Field(description="Workload name. Required.")
    params_billions: float = Field(gt=0, le=100000, description="Model parameters in billions. Required.")
    mode: Literal["inference", "training"] = Field(default="inference", description="Inference or training. Default: `inference`.")
    precision: Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"] = Field(default="bf16", description="Weight precision. Default: `bf16`.")
    optimizer: Literal["adam", "adamw", "sgd-momentum", "sgd", "none"] = Field(default="adam", description="Training optimizer. Default: `adam`.")
    activation_gb: float | None = Field(default=None, ge=0, description="Training activations (GB). Default: as large as the weights.")
    node_pool: str | None = Field(default=None, description="Name of the cloud NodePool that runs it. Default: none (no pool comparison).")


class ShowbackConfig(Model):
    """Showback on the clusters: OpenCost priced with this stack's GPU prices (docs/teams.md)."""

    opencost: bool = Field(
        default=False,
        description=(
            "Install OpenCost (pinned chart `opencost` 2.5.17, app 1.120.1) on each cluster of the stack, priced with the GPU-hour prices "
            "of `hybridgpu cost report`: the owned cost per GPU-hour on-prem, AWS prices by `karpenter.sh/capacity-type` on EKS. Default: false."
        ),
    )
    prometheus_url: Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$")] | None = Field(
        default=None,
        description=(
            "The Prometheus that OpenCost queries (e.g. `http://kps-prometheus.monitoring:9090`). Default: none, so OpenCost runs its own "
            "collector (chart `opencost.exporter.collectorDataSource`) and needs no Prometheus."
        ),
    )
    namespace: Dns1123Name = Field(default="opencost", description="Namespace of the OpenCost release. Default: `opencost`.")


class EconomicsConfig(Model):
    """GPU economics settings and price overrides of the stack (config key ``hybridgpu:economics``)."""

    utilizations: list[Fraction] = Field(
        default_factory=lambda: [0.3, 0.5, 0.8], min_length=1, description="Utilizations (fractions 0..1) the report prices. Default: `[0.3, 0.5, 0.8]`."
    )
    checkpoint_interval_hours: float = Field(default=0.5, gt=0, le=168, description="Hours between checkpoints of spot jobs. Default: 0.5.")
    lost_fraction_of_interval: float = Field(
        default=1.0, ge=0, le=1, description="Share of a checkpoint interval lost per spot interruption (1 = worst case, 0.5 = mean). Default: 1."
    )
    restart_hours: float = Field(default=0.0, ge=0, le=24, description="Hours to replace a node and reload after an interruption. Default: 0.")
    reserved_capacity_option: Literal["on-demand", "reserved-1y", "reserved-3y", "savings-plan-1y", "savings-plan-3y"] = Field(
        default="on-demand",
        description="What `reserved` NodePools (capacity reservations) are billed at: On-Demand, or a commitment that covers them. Default: `on-demand`.",
    )
    on_demand_usd_per_hour: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict, description="On-Demand price per instance-hour by instance type, e.g. `{p5.48xlarge: 40.0}`. Default: the catalog's."
    )
    cloud: dict[str, CloudPriceOverride] = Field(default_factory=dict, description="Purchase options by EC2 family, e.g. `{p5: {spotPriceFraction: 0.5}}`. Default: packaged data.")
    on_prem: OnPremOverride = Field(default_factory=OnPremOverride, description="On-prem cost inputs. Default: packaged data.")
    egress: EgressConfig = Field(default_factory=EgressConfig, description="Checkpoint egress. Default: none.")
    workloads: list[WorkloadConfig] = Field(default_factory=list, description="Workloads to right-size. Default: none.")
    showback: ShowbackConfig = Field(default_factory=ShowbackConfig, description="OpenCost on the clusters, priced from this section. Default: off.")

    @field_validator("utilizations")
    @classmethod
    def _sorted_unique(cls, value: list[float]) -> list[float]:
        if len(set(value)) != len(value):
            raise ValueError(f"utilizations must be distinct, got {value}")
        return sorted(value)
