"""Cost formulas and price data: properties, data integrity, errors that name file, entry and field."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hybridgpu.catalog import load_catalog
from hybridgpu.economics.costmodel import (
    HOURS_PER_YEAR,
    CloudRate,
    OnPremCostModel,
    break_even_utilization,
    cloud_rates,
    cumulative_cloud_usd,
    cumulative_onprem_usd,
    spot_waste_fraction,
)
from hybridgpu.economics.prices import EconomicsDataError, UnknownPriceError, load_economics_data

fractions = st.floats(min_value=0.01, max_value=1.0)
money = st.floats(min_value=0, max_value=1e5)


@st.composite
def onprem_models(draw):
    return OnPremCostModel(
        server_usd_per_gpu=draw(money), amortization_years=draw(st.floats(min_value=0.5, max_value=8)),
        ops_usd_per_gpu_year=draw(money), network_usd_per_gpu_year=draw(money), facility_usd_per_gpu_year=draw(money),
        power_kw_per_gpu=draw(st.floats(min_value=0, max_value=2)), idle_power_fraction=draw(st.floats(min_value=0, max_value=1)),
        pue=draw(st.floats(min_value=1, max_value=2)), usd_per_kwh=draw(st.floats(min_value=0, max_value=0.5)),
    )


@given(onprem_models(), fractions)
def test_components_add_up_and_match_the_annual_cost(model, u):
    parts = model.breakdown_per_productive_gpu_hour(u)
    assert parts["total"] == pytest.approx(sum(v for k, v in parts.items() if k != "total"))
    assert parts["total"] == pytest.approx(model.annual_usd_per_gpu(u) / (HOURS_PER_YEAR * u), rel=1e-9, abs=1e-9)
    assert model.annual_usd_per_gpu(u) == pytest.approx(model.fixed_usd_per_gpu_year + model.usd_per_used_gpu_hour * HOURS_PER_YEAR * u)


@given(onprem_models(), fractions, fractions)
def test_cost_per_productive_hour_falls_with_utilization(model, a, b):
    lo, hi = sorted((a, b))
    assert model.usd_per_productive_gpu_hour(hi) <= model.usd_per_productive_gpu_hour(lo) * (1 + 1e-9) + 1e-9


@given(onprem_models(), st.floats(min_value=0.01, max_value=50))
def test_break_even_is_where_the_costs_meet(model, price):
    u = break_even_utilization(model.fixed_usd_per_gpu_year, price, model.usd_per_used_gpu_hour)
    if u is None:
        assert price <= model.usd_per_used_gpu_hour
    elif 0.001 < u <= 1:
        assert model.usd_per_productive_gpu_hour(u) == pytest.approx(price, rel=1e-6)
        if u < 0.99:
            assert model.usd_per_productive_gpu_hour(min(1.0, u * 1.01)) <= price * (1 + 1e-9)


def test_utilization_out_of_range_is_refused():
    model = OnPremCostModel(1, 1, 0, 0, 0, 1, 0, 1, 0.1)
    for bad in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="utilization"):
            model.usd_per_productive_gpu_hour(bad)
    with pytest.raises(ValueError, match="pue"):
        OnPremCostModel(1, 1, 0, 0, 0, 1, 0, 0.9, 0.1)


def test_spot_waste_must_leave_progress():
    assert spot_waste_fraction(0.02, 0.5, lost_fraction_of_interval=0.5, restart_hours=0.25) == pytest.approx(0.02 * 0.5)
    with pytest.raises(ValueError, match="checkpoint more often"):
        spot_waste_fraction(0.5, 2.0)
    with pytest.raises(ValueError, match="interruptions_per_hour"):
        spot_waste_fraction(-0.1, 1.0)


def test_cloud_rates_follow_the_data_order():
    p5 = load_economics_data().cloud_pricing("p5")
    rates = cloud_rates(10.0, p5)
    assert [r.option for r in rates] == ["on-demand", "reserved-1y", "reserved-3y", "savings-plan-1y", "savings-plan-3y", "spot"]
    assert all(r.pays_when_idle == (r.term_years > 0) for r in rates)
    assert rates[2].usd_per_gpu_hour == pytest.approx(10 * (1 - 0.573))


def test_cumulative_onprem_refreshes_hardware_inside_the_horizon():
    model = OnPremCostModel(1000, 2, 0, 0, 0, 0, 0, 1, 0)
    curve = cumulative_onprem_usd(model, 2, 0.5, months=36)
    assert curve[0] == 2000 and curve[23] == 2000 and curve[24] == 4000 and curve[36] == 4000
    cloud = cumulative_cloud_usd(CloudRate("on-demand", 2.0, 2.0, False), 2, 0.5, months=12)
    assert cloud[12] == pytest.approx(2 * 0.5 * 8760 * 2.0)


def test_packaged_data_has_sources_and_covers_the_catalog_families_it_names():
    data = load_economics_data()
    catalog = load_catalog()
    assert set(data.cloud) <= catalog.families()
    for entry in [*data.cloud.values(), *data.onprem.values(), *data.egress.values()]:
        assert entry.source and entry.source_date.startswith("2026")
        assert entry.verified or entry.unverified_fields
    for family in ("p5", "p4d", "g5", "g6"):
        assert data.cloud_pricing(family).commitment("reserved-3y").term_years == 3
    with pytest.raises(UnknownPriceError, match="no cloud purchase-option data for family 'x1'"):
        data.cloud_pricing("x1")
    with pytest.raises(UnknownPriceError, match="onPrem"):
        data.onprem_cost("T4")


def _copy_data(tmp_path: Path) -> Path:
    src = resources.files("hybridgpu.economics").joinpath("data")
    for name in ("cloud_pricing.yaml", "onprem_costs.yaml", "egress.yaml"):
        shutil.copy(str(src.joinpath(name)), tmp_path / name)
    return tmp_path


def test_bad_data_file_names_file_entry_and_field(tmp_path):
    d = _copy_data(tmp_path)
    text = (d / "cloud_pricing.yaml").read_text()
    (d / "cloud_pricing.yaml").write_text(text.replace("spotPriceFraction: 0.55", "spotPriceFraction: 1.7", 1))
    onprem = (d / "onprem_costs.yaml").read_text()
    (d / "onprem_costs.yaml").write_text(onprem.replace("gpuModel: A100-40GB", "gpuModel: A100-41GB"))
    with pytest.raises(EconomicsDataError) as err:
        load_economics_data(d)
    issues = err.value.issues
    assert any(i.file.endswith("cloud_pricing.yaml") and i.entry == "p5" and i.field == "spotPriceFraction" for i in issues), issues
    assert any(i.entry == "A100-41GB" and i.field == "gpuModel" and "not a GPU catalog key" in i.message for i in issues), issues


def test_duplicate_and_unknown_keys_are_refused(tmp_path):
    d = _copy_data(tmp_path)
    egress = (d / "egress.yaml").read_text()
    (d / "egress.yaml").write_text(egress.replace("  - name: gcp-internet", "  - name: aws-internet\n    colour: blue", 1))
    with pytest.raises(EconomicsDataError) as err:
        load_economics_data(d)
    messages = [str(i) for i in err.value.issues]
    assert any("colour" in m for m in messages), messages


def test_egress_tiers():
    aws = load_economics_data().egress_price("aws-internet")
    assert aws.monthly_cost(0) == 0
    assert aws.monthly_cost(10240) == pytest.approx(10240 * 0.09)
    assert aws.monthly_cost(60000) == pytest.approx(10240 * 0.09 + 40960 * 0.085 + 8800 * 0.07)
    with pytest.raises(ValueError):
        aws.monthly_cost(-1)


def test_overrides_replace_prices_and_report_bad_values_by_label():
    data = load_economics_data()
    new = data.with_overrides(on_demand_usd_per_hour={"p5.48xlarge": 80.0}, cloud={"p5": {"spotPriceFraction": 0.4}},
                              onprem={"H100-80GB": {"usdPerKwh": 0.2}}, label="stacks/Pulumi.x.yaml")
    assert new.on_demand_usd_per_gpu_hour("p5.48xlarge") == 10.0
    assert new.cloud["p5"].spot_price_fraction == 0.4 and new.cloud["p5"].commitments == data.cloud["p5"].commitments
    assert new.onprem["H100-80GB"].usd_per_kwh == 0.2 and data.onprem["H100-80GB"].usd_per_kwh == 0.10
    with pytest.raises(EconomicsDataError) as err:
        data.with_overrides(onprem={"H100-80GB": {"pue": 0.5}}, label="stacks/Pulumi.x.yaml")
    issue = err.value.issues[0]
    assert (issue.file, issue.entry, issue.field) == ("stacks/Pulumi.x.yaml", "H100-80GB", "pue")
    with pytest.raises(EconomicsDataError, match="serverUsdPerGpu"):
        data.with_overrides(onprem={"L4": {"pue": 1.2}}, label="x")  # no packaged L4 entry: required fields missing
    with pytest.raises(EconomicsDataError) as err:
        data.with_overrides(cloud={"p9": {"spotPriceFraction": 0.5}}, onprem={"H100": {"pue": 1.2}}, label="stacks/Pulumi.x.yaml")
    assert [(i.entry, i.field) for i in err.value.issues] == [("p9", "family"), ("H100", "gpuModel")]
