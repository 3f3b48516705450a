"""Price data of the economics package: cloud purchase options, on-prem cost defaults, egress.

The numbers live in ``hybridgpu/economics/data/*.yaml`` (each file starts with a comment block
giving fields, units and sources, and every entry carries ``source`` and ``sourceDate``).
On-Demand prices are not repeated here: they come from the GPU catalog
(:mod:`hybridgpu.catalog`, ``onDemandUsdPerHour`` per instance type).

:func:`load_economics_data` reads and validates the three files and cross-checks them against
the catalog (known families and GPU models). Nothing here imports Pulumi.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from hybridgpu.catalog import Catalog, InstanceType, UnknownInstanceTypeError, load_catalog
from hybridgpu.datafile import DataFileError, not_a_mapping_issue, top_level_entries, unreadable_issue
from hybridgpu.errors import CONFIG_REFERENCE, HybridGpuError, Issue, issues_from_validation
from hybridgpu.modelbase import Model

__all__ = [
    "CLOUD_PRICING_FILE",
    "EGRESS_FILE",
    "ONPREM_COSTS_FILE",
    "CloudPricing",
    "Commitment",
    "CommitmentName",
    "EconomicsData",
    "EconomicsDataError",
    "EgressPrice",
    "EgressTier",
    "GpuHourPrice",
    "PACKAGED_CLOUD_PRICING",
    "OnPremCost",
    "UnknownPriceError",
    "load_economics_data",
]

CLOUD_PRICING_FILE = "cloud_pricing.yaml"
ONPREM_COSTS_FILE = "onprem_costs.yaml"
EGRESS_FILE = "egress.yaml"

_SOURCE_DATE = r"^\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$"

#: Names of the commitment purchase options (AWS Reserved Instances and Savings Plans).
CommitmentName = Literal["reserved-1y", "reserved-3y", "savings-plan-1y", "savings-plan-3y"]


class EconomicsDataError(DataFileError):
    """An economics data file (or a per-stack override of it) is invalid; names file, entry and field."""

    what = "economics price data"


class UnknownPriceError(HybridGpuError, KeyError):
    """No price data for a family, GPU model or egress path; the message says what to add where."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return self.message


class PriceModel(Model):
    """Base of the price models: :class:`~hybridgpu.modelbase.Model` refusing NaN and infinity."""

    model_config = {**Model.model_config, "allow_inf_nan": False}


class SourcedEntry(PriceModel):
    """Fields every data entry carries: sources, date, verification state."""

    source: tuple[str, ...] = Field(min_length=1, description="URLs or documents backing the entry (unitless). Required.")
    source_date: str = Field(pattern=_SOURCE_DATE, description="Date of the source data, `YYYY-MM` or `YYYY-MM-DD`. Required.")
    verified: bool = Field(description="True if every field was checked against the sources. Required.")
    unverified_fields: tuple[str, ...] = Field(default=(), description="YAML names of fields not checked against a source. Default: none.")
    notes: str | None = Field(default=None, description="Free-text remarks. Default: none.")

    @model_validator(mode="after")
    def _check_verification(self) -> SourcedEntry:
        aliases = {f.alias or n for n, f in type(self).model_fields.items()}
        unknown = sorted(set(self.unverified_fields) - aliases)
        if unknown:
            raise ValueError(f"unverifiedFields names no field of this entry: {unknown}")
        if self.verified and self.unverified_fields:
            raise ValueError("verified is true but unverifiedFields is not empty; set verified: false")
        if not self.verified and not self.unverified_fields:
            raise ValueError("verified is false: list the unchecked fields in unverifiedFields")
        return self


class Commitment(PriceModel):
    """One commitment purchase option (Reserved Instance or Savings Plan) of a family."""

    name: CommitmentName = Field(description="Option name, e.g. `reserved-3y`. Required.")
    term_years: Literal[1, 3] = Field(description="Commitment term in years. Required.")
    payment: Literal["no-upfront", "partial-upfront", "all-upfront"] = Field(description="Payment option. Required.")
    discount: float = Field(ge=0, lt=1, description="Fraction off the On-Demand price (0..1), effective hourly rate over the term. Required.")


class CloudPricing(SourcedEntry):
    """Purchase options of one EC2 GPU instance family (fractions of the catalog On-Demand price)."""

    family: str = Field(pattern=r"^[a-z][a-z0-9-]*$", description="EC2 instance family, e.g. `p5`. Required.")
    commitments: tuple[Commitment, ...] = Field(default=(), description="Reserved / Savings Plan options. Default: none.")
    spot_price_fraction: float | None = Field(
        default=None, gt=0, le=1, description="Average spot price as a fraction of On-Demand (0..1]; null = no spot data. Default: null."
    )
    spot_interruptions_per_hour: float = Field(
        default=0.0, ge=0, lt=1, description="Expected spot interruptions per instance-hour (probability). Default: 0."
    )

    @model_validator(mode="after")
    def _unique_commitments(self) -> CloudPricing:
        names = [c.name for c in self.commitments]
        if len(names) != len(set(names)):
            raise ValueError(f"commitments: duplicate option names {sorted(names)}")
        return self

    def fraction_of_on_demand(self, option: str) -> float:
        """What one GPU-hour of ``option`` costs as a fraction of the On-Demand price (unitless, 0..1].

        ``on-demand`` is 1, a commitment ``1 - discount``, ``spot`` ``spotPriceFraction``.

        Raises:
            UnknownPriceError: the family has no such option (no spot data, no such commitment).
        """
        if option == "on-demand":
            return 1.0
        if option == "spot":
            if self.spot_price_fraction is None:
                raise UnknownPriceError(f"family {self.family!r} has no spot price data; set spotPriceFraction under hybridgpu:economics.cloud.{self.family}")
            return self.spot_price_fraction
        return 1.0 - self.commitment(option).discount

    def commitment(self, name: str) -> Commitment:
        """The commitment option ``name`` (e.g. ``reserved-3y``).

        Raises:
            UnknownPriceError: the family has no such option (the message lists the ones it has).
        """
        for c in self.commitments:
            if c.name == name:
                return c
        have = ", ".join(c.name for c in self.commitments) or "none"
        raise UnknownPriceError(f"family {self.family!r} has no {name!r} price (has: {have}); add it under hybridgpu:economics.cloud")


class OnPremCost(SourcedEntry):
    """What one GPU of an owned server costs (see ``data/onprem_costs.yaml`` for the fields)."""

    gpu_model: str = Field(description="GPU catalog key, e.g. `H100-80GB`. Required.")
    server_usd_per_gpu: float = Field(ge=0, description="Server purchase price per GPU (USD). Required.")
    amortization_years: float = Field(gt=0, le=15, description="Straight-line depreciation period (years). Required.")
    ops_usd_per_gpu_year: float = Field(ge=0, description="Operations staff cost per GPU and year (USD/GPU/year). Required.")
    power_kw_per_gpu: float | None = Field(
        default=None, gt=0, le=10, description="Average draw per GPU at 100% utilization (kW); null = the inventory hosts' draw per GPU (hybridgpu.inventory.power), else catalog tdpWatts / 1000. Default: null."
    )
    idle_power_fraction: float = Field(default=0.0, ge=0, le=1, description="Idle draw as a fraction of powerKwPerGpu (0..1). Default: 0.")
    pue: float = Field(ge=1, le=3, description="Data-centre power usage effectiveness (>= 1). Required.")
    usd_per_kwh: float = Field(ge=0, description="Electricity price (USD/kWh). Required.")
    network_usd_per_gpu_year: float = Field(default=0.0, ge=0, description="Fabric amortized per GPU and year (USD/GPU/year). Default: 0.")
    facility_usd_per_gpu_year: float = Field(default=0.0, ge=0, description="Rack space / colocation per GPU and year (USD/GPU/year). Default: 0.")
    gpus_per_server: int = Field(default=8, ge=1, le=64, description="GPUs per server (count); on-prem capacity comes in these units. Default: 8.")


class EgressTier(PriceModel):
    """One volume tier of an egress price."""

    up_to_gb_per_month: float | None = Field(description="Cumulative monthly volume this tier ends at (GB/month); null = no limit. Required.")
    usd_per_gb: float = Field(ge=0, description="Price per GB in this tier (USD/GB). Required.")


class EgressPrice(SourcedEntry):
    """Tiered data-transfer price of one path (e.g. EC2 to the internet)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Path identifier, e.g. `aws-internet`. Required.")
    tiers: tuple[EgressTier, ...] = Field(min_length=1, description="Volume tiers, in increasing volume. Required.")

    @model_validator(mode="after")
    def _check_tiers(self) -> EgressPrice:
        bounds = [t.up_to_gb_per_month for t in self.tiers]
        if bounds[-1] is not None:
            raise ValueError("tiers: the last tier must have upToGbPerMonth: null (no limit)")
        finite = [b for b in bounds[:-1] if b is not None]
        if len(finite) != len(bounds) - 1 or any(b <= 0 for b in finite) or finite != sorted(set(finite)):
            raise ValueError("tiers: upToGbPerMonth must be positive and strictly increasing, null only on the last tier")
        return self

    def monthly_cost(self, gb_per_month: float) -> float:
        """USD for ``gb_per_month`` GB transferred in one month, tier by tier.

        Raises:
            ValueError: a negative volume.
        """
        if gb_per_month < 0:
            raise ValueError(f"egress volume must be >= 0 GB/month, got {gb_per_month}")
        cost, low = 0.0, 0.0
        for tier in self.tiers:
            high = tier.up_to_gb_per_month if tier.up_to_gb_per_month is not None else float("inf")
            if gb_per_month > low:
                cost += (min(gb_per_month, high) - low) * tier.usd_per_gb
            low = high
        return cost


#: Where the spot and commitment fractions come from, as users know the file.
PACKAGED_CLOUD_PRICING = f"hybridgpu/economics/data/{CLOUD_PRICING_FILE}"


@dataclass(frozen=True)
class GpuHourPrice:
    """What one GPU-hour of one capacity type costs on one instance type, and why.

    Attributes:
        usd_per_gpu_hour: USD per GPU-hour of capacity held (spot without interruption waste:
            what AWS bills for the hours held).
        capacity_type: ``on-demand``, ``spot`` or a commitment name (``reserved-3y`` ...).
        instance_type: the EC2 instance type priced.
        gpu_model: its GPU catalog key.
        on_demand_usd_per_gpu_hour: the catalog (or overridden) On-Demand price per GPU (USD).
        fraction: ``usd_per_gpu_hour / on_demand_usd_per_gpu_hour`` (1 for On-Demand).
        sources: the On-Demand price's source and, for other types, the purchase-option data's.
        source_date: the purchase-option data's date for spot and commitments, else the catalog price's.
        verified: False when any figure used is an unverified assumption.
    """

    usd_per_gpu_hour: float
    capacity_type: str
    instance_type: str
    gpu_model: str
    on_demand_usd_per_gpu_hour: float
    fraction: float
    sources: tuple[str, ...]
    source_date: str
    verified: bool

    def basis(self) -> str:
        """One phrase saying how the price is made, e.g. ``p5.48xlarge (H100-80GB) spot = 0.55 x On-Demand 6.88 USD/GPU-hour
        (hybridgpu/economics/data/cloud_pricing.yaml, 2026-11-22, unverified)``."""
        head = f"{self.instance_type} ({self.gpu_model}) {self.capacity_type}"
        checked = "" if self.verified else ", unverified"
        if self.capacity_type == "on-demand":
            price_source = next((x for x in self.sources if "pricing" in x), self.sources[0])  # the price list, where the entry names it
            return f"{head} = On-Demand list price {self.usd_per_gpu_hour:.2f} USD/GPU-hour ({price_source}, {self.source_date}{checked})"
        return (f"{head} = {self.fraction:g} x On-Demand {self.on_demand_usd_per_gpu_hour:.2f} USD/GPU-hour "
                f"({self.sources[-1]}, {self.source_date}{checked})")


class EconomicsData:
    """The validated price data, indexed (immutable after construction).

    Attributes:
        cloud: family -> :class:`CloudPricing`.
        onprem: GPU model -> :class:`OnPremCost`.
        egress: path name -> :class:`EgressPrice`.
        catalog: the GPU catalog the data was checked against (On-Demand prices, GPU facts).
    """

    def __init__(self, cloud: dict[str, CloudPricing], onprem: dict[str, OnPremCost], egress: dict[str, EgressPrice], catalog: Catalog):
        self.cloud = dict(cloud)
        self.onprem = dict(onprem)
        self.egress = dict(egress)
        self.catalog = catalog

    def cloud_pricing(self, family: str) -> CloudPricing:
        """Purchase options of ``family``.

        Raises:
            UnknownPriceError: no entry (the message names the data file and the override key).
        """
        try:
            return self.cloud[family]
        except KeyError:
            raise UnknownPriceError(
                f"no cloud purchase-option data for family {family!r} (known: {', '.join(sorted(self.cloud))}); "
                f"add it to {CLOUD_PRICING_FILE} or under hybridgpu:economics.cloud"
            ) from None

    def onprem_cost(self, gpu_model: str) -> OnPremCost:
        """On-prem cost defaults of ``gpu_model``.

        Raises:
            UnknownPriceError: no entry (the message names the data file and the override key).
        """
        try:
            return self.onprem[gpu_model]
        except KeyError:
            raise UnknownPriceError(
                f"no on-prem cost data for GPU model {gpu_model!r} (known: {', '.join(sorted(self.onprem))}); "
                f"add it to {ONPREM_COSTS_FILE} or set hybridgpu:economics.onPrem"
            ) from None

    def egress_price(self, name: str) -> EgressPrice:
        """Egress price of path ``name``.

        Raises:
            UnknownPriceError: unknown path (the message lists the known ones).
        """
        try:
            return self.egress[name]
        except KeyError:
            raise UnknownPriceError(f"no egress price {name!r} (known: {', '.join(sorted(self.egress))})") from None

    def on_demand_usd_per_gpu_hour(self, instance_type: str) -> float:
        """Catalog On-Demand price of ``instance_type`` divided by its GPUs (USD per GPU-hour).

        Raises:
            UnknownInstanceTypeError: not in the catalog.
            UnknownPriceError: the catalog lists no On-Demand price for it.
        """
        it = self.catalog.instance_type(instance_type)
        per_gpu = it.usd_per_gpu_hour
        if per_gpu is None:
            raise UnknownPriceError(
                f"the catalog lists no On-Demand price for {instance_type} ({it.price_region}); set one under hybridgpu:economics.onDemandUsdPerHour"
            )
        return per_gpu

    def gpu_hour_price(self, what: str, capacity_type: str, *, among: Sequence[InstanceType] | None = None) -> GpuHourPrice:
        """The one price of a GPU-hour: by instance type or GPU model, and capacity type (or commitment).

        Every figure of the toolkit that says what a cloud GPU-hour costs comes from here: the cost
        report's capacity lines (:func:`hybridgpu.economics.report.build_report`), the burst plan's
        default spot price (:mod:`hybridgpu.stack.burst`), showback's prices per GPU model
        (:meth:`hybridgpu.economics.showback.ShowbackPrices.from_report`) and the basis the
        ``burst-budget`` policy states. Spot and commitments are fractions of the On-Demand price
        (``cloud_pricing.yaml`` per family, see :meth:`CloudPricing.fraction_of_on_demand`), so they
        follow catalog and per-stack overrides.

        Args:
            what: an instance type (``p5.48xlarge``) or a GPU catalog key (``H100-80GB``); a GPU model
                is priced on its cheapest priced instance type per GPU (ties: by name), the choice the
                cost report makes for a NodePool.
            capacity_type: ``on-demand``, ``spot`` or a commitment name (``reserved-3y`` ...).
            among: with a GPU model, only these instance types are candidates (a NodePool's types).

        Returns:
            The :class:`GpuHourPrice` (USD per GPU-hour with its basis and sources).

        Raises:
            UnknownPriceError: no priced instance type for the GPU model, no On-Demand price, or no
                purchase-option data for the capacity type (the message names the file and key to set).
            UnknownInstanceTypeError: ``what`` is neither an instance type nor a GPU model of the catalog.
        """
        it = self._priced_type(what, among)
        per_gpu = self.on_demand_usd_per_gpu_hour(it.name)
        if capacity_type == "on-demand":
            return GpuHourPrice(per_gpu, capacity_type, it.name, it.gpu_model, per_gpu, 1.0, tuple(it.source), it.source_date, it.verified)
        pricing = self.cloud_pricing(it.family)
        fraction = pricing.fraction_of_on_demand(capacity_type)
        overridden = pricing.notes is not None and pricing.notes.startswith("overridden by")
        sources = (*it.source, pricing.notes if overridden and pricing.notes else PACKAGED_CLOUD_PRICING)
        return GpuHourPrice(per_gpu * fraction, capacity_type, it.name, it.gpu_model, per_gpu, fraction, sources, pricing.source_date,
                            it.verified and pricing.verified)

    def _priced_type(self, what: str, among: Sequence[InstanceType] | None) -> InstanceType:
        """The instance type ``what`` names, or the cheapest priced one per GPU with GPU model ``what``."""
        try:
            return self.catalog.instance_type(what)
        except UnknownInstanceTypeError:
            if what not in {g.name for g in self.catalog.gpu_models}:
                raise
        pool = list(among) if among is not None else list(self.catalog.instance_types)
        priced = [t for t in pool if t.gpu_model == what and t.usd_per_gpu_hour is not None]
        if not priced:
            raise UnknownPriceError(f"no instance type with {what} has an On-Demand price; set one under hybridgpu:economics.onDemandUsdPerHour")
        return min(priced, key=lambda t: (t.usd_per_gpu_hour, t.name))

    def with_overrides(
        self,
        *,
        on_demand_usd_per_hour: dict[str, float] | None = None,
        cloud: dict[str, dict[str, Any]] | None = None,
        onprem: dict[str, dict[str, Any]] | None = None,
        label: str = "stack override",
    ) -> EconomicsData:
        """A copy with some prices replaced (per stack); this object is unchanged.

        Args:
            on_demand_usd_per_hour: instance type -> USD per instance-hour (catalog override).
            cloud: family -> fields of :class:`CloudPricing` to replace (YAML spelling).
            onprem: GPU model -> fields of :class:`OnPremCost` to replace (YAML spelling); a
                model without packaged data needs every required field.
            label: what the overrides are called in error messages (e.g. the stack file).

        Raises:
            EconomicsDataError: an override makes an entry invalid or names a family / GPU model
                the catalog does not know (names label, entry, field).
            UnknownInstanceTypeError: an On-Demand override names an unknown instance type.
        """
        catalog = self.catalog.with_price_overrides(on_demand_usd_per_hour or {})
        note = f"overridden by {label}"
        # An override with no packaged entry has no dated price source: its source names the
        # stack file and its sourceDate is the day the override was applied (today), not a
        # price date.
        applied_on = date.today().isoformat()
        new_cloud = dict(self.cloud)
        issues = _catalog_issues(catalog, cloud or {}, label, onprem or {}, label)
        if issues:
            raise EconomicsDataError(issues)
        for family, fields in (cloud or {}).items():
            base = self.cloud[family].model_dump(by_alias=True, exclude_none=True) if family in self.cloud else {
                "family": family, "source": [note], "sourceDate": applied_on, "verified": False, "unverifiedFields": ["commitments"]}
            merged = {**base, **fields, "notes": note}
            entry = validate_entry(merged, CloudPricing, label, family, issues, CONFIG_REFERENCE)
            if entry is not None:
                new_cloud[family] = entry
        new_onprem = dict(self.onprem)
        for model, fields in (onprem or {}).items():
            base = self.onprem[model].model_dump(by_alias=True) if model in self.onprem else {
                "gpuModel": model, "source": [note], "sourceDate": applied_on, "verified": False, "unverifiedFields": ["serverUsdPerGpu"]}
            merged = {**base, **fields, "gpuModel": model, "notes": note}
            entry = validate_entry(merged, OnPremCost, label, model, issues, CONFIG_REFERENCE)
            if entry is not None:
                new_onprem[model] = entry
        if issues:
            raise EconomicsDataError(issues)
        return EconomicsData(new_cloud, new_onprem, self.egress, catalog)


def _catalog_issues(catalog: Catalog, families: Iterable[str], families_file: str, models: Iterable[str], models_file: str) -> list[Issue]:
    """Issues for families and GPU models the catalog does not know (``file`` names where each came from)."""
    issues: list[Issue] = []
    known_families = catalog.families()
    for family in families:
        if family not in known_families:
            issues.append(
                Issue.in_entry(
                    families_file,
                    family,
                    "family",
                    f"is not a family of the GPU catalog (known: {', '.join(sorted(known_families))})",
                    "use one of the known families (`hybridgpu catalog` lists them), or add the family's instance types to the catalog",
                    "unknown-family",
                )
            )
    known_models = {g.name for g in catalog.gpu_models}
    for model in models:
        if model not in known_models:
            issues.append(
                Issue.in_entry(
                    models_file,
                    model,
                    "gpuModel",
                    f"is not a GPU catalog key (known: {', '.join(sorted(known_models))})",
                    "use one of the known GPU models (spelled as the catalog spells it, e.g. `H100-80GB`)",
                    "unknown-gpu-model",
                )
            )
    return issues


def validate_entry(entry: Any, model: type[Model], file: str, label: str, issues: list[Issue], reference: str) -> Any:
    """``entry`` validated by ``model``, or None with its issues added to ``issues`` (``reference`` documents the keys)."""
    if not isinstance(entry, dict):
        issues.append(not_a_mapping_issue(file, label, entry))
        return None
    try:
        return model.model_validate(entry)
    except ValidationError as exc:
        issues += issues_from_validation(exc, file=file, root=model, reference=reference, entry=label, entry_kind="entry")
        return None


def _entries(text: str, file: str, top: str, model: type[Model], key: str, issues: list[Issue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        raw = top_level_entries(text, file, top, EconomicsDataError)
    except EconomicsDataError as exc:
        issues.extend(exc.issues)
        return out
    for index, entry in enumerate(raw):
        label = str(entry.get(key)) if isinstance(entry, dict) and entry.get(key) else f"#{index}"
        value = validate_entry(entry, model, file, label, issues, f"the comment block at the top of {Path(file).name}")
        if value is None:
            continue
        name = getattr(value, {"family": "family", "gpuModel": "gpu_model", "name": "name"}[key])
        if name in out:
            issues.append(Issue.in_entry(file, label, key, f"duplicate {key} {name!r}", f"delete one of the entries; each {key} is listed once", "duplicate"))
            continue
        out[name] = value
    return out


def _build(texts: dict[str, tuple[str, str]], catalog: Catalog) -> EconomicsData:
    issues: list[Issue] = []
    cloud_text, cloud_file = texts[CLOUD_PRICING_FILE]
    onprem_text, onprem_file = texts[ONPREM_COSTS_FILE]
    egress_text, egress_file = texts[EGRESS_FILE]
    cloud = _entries(cloud_text, cloud_file, "cloudPricing", CloudPricing, "family", issues)
    onprem = _entries(onprem_text, onprem_file, "onPremCosts", OnPremCost, "gpuModel", issues)
    egress = _entries(egress_text, egress_file, "egressPrices", EgressPrice, "name", issues)
    issues += _catalog_issues(catalog, cloud, cloud_file, onprem, onprem_file)
    if issues:
        raise EconomicsDataError(issues)
    return EconomicsData(cloud, onprem, egress, catalog)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # a non-UTF-8 file too (found by fuzzing, tests/security)
        raise EconomicsDataError([unreadable_issue(str(path), exc)]) from exc


def load_economics_data(path_override: Path | None = None, catalog: Catalog | None = None) -> EconomicsData:
    """Load, validate and cross-check the economics price data.

    Args:
        path_override: a directory holding ``cloud_pricing.yaml``, ``onprem_costs.yaml`` and
            ``egress.yaml`` to read instead of the packaged data. None reads the package's.
        catalog: the GPU catalog to check against and take On-Demand prices from; None = the
            packaged catalog.

    Returns:
        :class:`EconomicsData` (the packaged data with the packaged catalog is cached).

    Raises:
        EconomicsDataError: a file is unreadable, not YAML of the expected shape, has a bad,
            missing or unknown field, a duplicate entry, or names a family / GPU model the
            catalog does not know. Every issue names the file, the entry and the field.
    """
    if path_override is None and catalog is None:
        return _load_packaged()
    if path_override is None:
        return _build(_packaged_texts(), catalog)  # type: ignore[arg-type]
    directory = Path(path_override)
    texts = {name: (_read(directory / name), str(directory / name)) for name in (CLOUD_PRICING_FILE, ONPREM_COSTS_FILE, EGRESS_FILE)}
    return _build(texts, catalog or load_catalog())


def _packaged_texts() -> dict[str, tuple[str, str]]:
    data = resources.files(__package__).joinpath("data")
    out = {}
    for name in (CLOUD_PRICING_FILE, ONPREM_COSTS_FILE, EGRESS_FILE):
        res = data.joinpath(name)
        try:
            out[name] = (res.read_text(encoding="utf-8"), str(res))
        except OSError as exc:
            raise EconomicsDataError([unreadable_issue(str(res), exc, "the packaged file")]) from exc
    return out


@functools.lru_cache(maxsize=1)
def _load_packaged() -> EconomicsData:
    return _build(_packaged_texts(), load_catalog())
