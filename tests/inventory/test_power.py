"""Rack power and cooling (issue 27, section 4): the ``racks`` section, each host's draw, the budget and cooling rules.

* The fixtures under tests/fixtures/inventory/power/{pass,fail}/ and tests/fixtures/inventory/cooling/{pass,fail}/
  go through ``hybridgpu inventory validate`` (and, when failing, ``render``). Headers: ``# verdict:``; ``# expect: <text>`` (fail: in
  the error output); ``# shows: <cells>`` (pass: a row of the rack table, cells split on blanks),
  ``# not-shown: <rack>`` and ``# no-table: yes``.
* The draw of a host comes from the GPU catalog: GPU board power (``gpu_models.yaml`` ``tdpWatts``)
  x count + the platform's own draw (``platforms.yaml``: maximum system power less the GPUs).
  Upstream figures, from NVIDIA's DGX user guides, chapter "Introduction", "Power Specifications"
  (read 2026-11-26 through public copies quoting them, URLs in ``platforms.yaml``): DGX H100/H200
  10.2 kW maximum with 8 x H100 SXM at 700 W; DGX A100 6.5 kW maximum with 8 x A100 SXM at 400 W.
* ``hybridgpu cost report`` bills power with the same draw (:func:`hybridgpu.inventory.power.gpu_draw_by_model`).
* Cooling: a host needs what its own ``cooling`` says, else its catalog platform's (``platforms.yaml``
  ``cooling``); a rack removes ``coolingKw`` of heat (default ``powerKw``), and a server gives off as heat
  all it draws. Upstream facts (read 2026-11-27): NVIDIA's DGX SuperPOD data-centre design for DGX H100
  plans the DGX H100 in an air-cooled data centre; the DGX B200 User Guide, "Power Specifications": 14.3 kW
  maximum; the DGX GB200 User Guide, "Hardware": compute trays take coolant from the rack's manifolds
  through cold plates while NICs and drives are cooled by fans (so liquid racks also remove air-side heat).
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from hybridgpu.catalog import PLATFORMS_FILE, CatalogError, load_catalog
from hybridgpu.cli import app
from hybridgpu.economics.costmodel import OnPremCostModel
from hybridgpu.economics.prices import load_economics_data
from hybridgpu.inventory import InventoryError, check_inventory, inventory_from_documents, load_inventory
from hybridgpu.inventory.power import format_kw, gpu_draw_by_model, host_draw, rack_loads
from hybridgpu.stack.load import report_from_stack
from tests.helpers import ROOT
from tests.helpers.inventory_cases import cases, header, refusal_tests, relative, runner

FIXTURES = ROOT / "tests" / "fixtures" / "inventory" / "power"
COOLING = ROOT / "tests" / "fixtures" / "inventory" / "cooling"
PASS, FAIL = cases(FIXTURES)
COOLING_PASS, COOLING_FAIL = cases(COOLING)
CATALOG = load_catalog()


test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)
test_there_are_at_least_ten_cooling_cases_of_each, test_cooling_must_fail = refusal_tests(COOLING_PASS, COOLING_FAIL)


def _table(output: str) -> list[list[str]]:
    lines = output.splitlines()
    if not any(line.startswith("racks: ") for line in lines):
        return []
    start = next(i for i, line in enumerate(lines) if line.startswith("racks: "))
    return [line.split() for line in lines[start + 1 :] if line.startswith("  ")]


@pytest.mark.parametrize("fixture", PASS + COOLING_PASS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_must_pass_and_shows_each_rack(fixture, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["inventory", "validate", relative(fixture)])
    assert result.exit_code == 0, result.output
    rows = _table(result.output)
    if header(fixture, "no-table"):
        assert rows == []
    else:
        assert rows[0] == ["rack", "hosts", "draw", "kW", "budget", "kW", "margin", "kW", "cooling", "cooling", "kW", "margin", "kW"]
    for cells in header(fixture, "shows"):
        assert cells.split() in rows, f"{cells!r} not in:\n{result.output}"
    for rack in header(fixture, "not-shown"):
        assert not any(row[0] == rack for row in rows[1:] if row[:2] != ["not", "checked"])
    table = result.output.split("racks: ", 1)[-1] if rows else ""
    assert all(len(line) <= 80 for line in table.splitlines())


def test_long_rack_names_widen_the_column_and_are_never_cut(tmp_path, monkeypatch):
    name = "row-07-cage-b-pod-3-rack-" + "x" * 38  # 63 characters, the longest a rack name may be
    text = (FIXTURES / "pass" / "within-budget.yaml").read_text().replace("r1", name)
    path = tmp_path / "long.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["inventory", "validate", str(path)])
    assert result.exit_code == 0, result.output
    assert [name, "4", "40.8", "45", "4.2", "air", "45", "4.2"] in _table(result.output)


# ---------------------------------------------------------------- the draw


def test_catalog_platforms_reproduce_the_dgx_maximums():
    # NVIDIA DGX H100/H200 User Guide, "Power Specifications": 10.2 kW max; DGX A100 User Guide: 6.5 kW max.
    expected = {("H100-80GB", 8): 10200, ("H200-141GB", 8): 10200, ("A100-80GB", 8): 6500, ("A100-40GB", 8): 6500}
    for (model, count), watts in expected.items():
        platform = CATALOG.platform_for(model, count)
        assert platform is not None and platform.max_system_watts == watts
        assert count * CATALOG.gpu_model(model).tdp_watts + CATALOG.platform_watts(platform) == watts
    assert CATALOG.platform_watts(CATALOG.platform_for("H100-80GB", 8)) == 10200 - 8 * 700  # H100 SXM 700 W TDP
    assert CATALOG.platform_watts(CATALOG.platform_for("A100-80GB", 8)) == 6500 - 8 * 400  # A100 SXM 400 W TDP
    assert all(p.source and p.source_date and (p.verified or set(p.unverified_fields) <= {"cooling"}) for p in CATALOG.platforms)


def test_catalog_platforms_state_their_cooling_and_the_dgx_b200_draw():
    # NVIDIA DGX B200 User Guide, "Power Specifications" (read 2026-11-27): six 3.3 kW supplies, 14.3 kW maximum.
    b200 = CATALOG.platform_for("B200-180GB", 8)
    assert (b200.name, b200.max_system_watts, b200.cooling) == ("DGX-B200", 14300, "air")
    assert CATALOG.platform_watts(b200) == 14300 - 8 * 1000
    # Every DGX entry is an air-cooled chassis; GB200/GB300 NVL72 (liquid only) are not platforms of 8 GPUs.
    assert {p.name: p.cooling for p in CATALOG.platforms} == dict.fromkeys(
        ["DGX-H100", "DGX-H200", "DGX-A100-640GB", "DGX-A100-320GB", "DGX-B200"], "air")


def test_host_cooling_comes_from_the_host_then_the_platform():
    inv = _inventory(None, [{"gpu": {"model": "H100-80GB", "count": 8}}, {"gpu": {"model": "H100-80GB", "count": 8}, "cooling": "liquid"},
                            {"gpu": {"model": "L40S", "count": 4}, "powerKw": 2.4}])
    dgx, hgx, l40s = (host_draw(inv.host(f"gpu-0{i}"), CATALOG) for i in (1, 2, 3))
    assert (dgx.cooling, dgx.cooling_basis) == ("air", "DGX-H100")
    assert (hgx.cooling, hgx.cooling_basis, hgx.watts) == ("liquid", "cooling", 10200)
    assert (l40s.cooling, l40s.cooling_basis) == (None, "")  # no platform: nothing to check


def test_a_platform_sold_both_ways_leaves_the_host_unchecked(data_copy):
    _edit_platforms(data_copy, lambda entries: entries[0].update(cooling="either"))
    catalog = load_catalog(data_copy)
    inv = _inventory(None, [{"gpu": {"model": "H100-80GB", "count": 8}}, {"gpu": {"model": "H100-80GB", "count": 8}, "cooling": "liquid"}])
    assert [host_draw(h, catalog).cooling for h in inv.hosts[1:]] == [None, "liquid"]


def test_a_liquid_only_platform_is_refused_in_an_air_rack_naming_the_platform(data_copy):
    # No catalog platform is liquid-only today (GB200 NVL72 trays are not 8-GPU platforms): make DGX-H100 one.
    _edit_platforms(data_copy, lambda entries: entries[0].update(cooling="liquid"))
    catalog = load_catalog(data_copy)
    dgx = {"gpu": {"model": "H100-80GB", "count": 8}}
    inv = _inventory({"r1": {"powerKw": 40, "cooling": "air"}, "r2": {"powerKw": 40, "cooling": "liquid"}},
                     [dgx, dict(dgx, cooling="air"), dict(dgx, rack="r2")])
    issues = [i for i in check_inventory(inv, catalog) if i.code.startswith("rack-")]
    assert [(i.code, i.field) for i in issues] == [("rack-cooling-type", "racks.r1.cooling")]
    assert issues[0].message.endswith("1 of its active and cordoned hosts needs liquid cooling (coolant piped to cold plates): "
                                      "gpu-01 (platform DGX-H100, liquid-cooled)")


def test_a_platform_without_cooling_or_with_another_is_refused(data_copy):
    _edit_platforms(data_copy, lambda entries: entries[0].pop("cooling"))
    with pytest.raises(CatalogError) as caught:
        load_catalog(data_copy)
    assert (caught.value.entry, caught.value.field) == ("DGX-H100", "cooling")
    _edit_platforms(data_copy, lambda entries: entries[0].update(cooling="immersion"))
    with pytest.raises(CatalogError) as caught:
        load_catalog(data_copy)
    assert caught.value.field == "cooling"


def test_the_cooling_rule_reports_type_before_capacity_and_skips_a_capacity_the_budget_covers():
    liquid = {"gpu": {"model": "H100-80GB", "count": 8}, "cooling": "liquid"}
    with pytest.raises(InventoryError) as caught:
        _inventory({"r1": {"powerKw": 20, "cooling": "air", "coolingKw": 25}}, [liquid, liquid])
    # 20.4 kW: over the 20 kW power budget, within the 25 kW cooling: no capacity issue.
    assert caught.value.codes == ["rack-cooling-type", "rack-power-budget"]
    assert caught.value.issues[0].field == "racks.r1.cooling" and "gpu-01 (its `cooling: liquid`), gpu-02" in caught.value.issues[0].message


def test_validate_json_gives_each_racks_cooling(monkeypatch):
    import json

    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["inventory", "validate", relative(COOLING / "pass" / "mixed-hosts-in-liquid-rack.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    (rack,) = json.loads(result.stdout)["racks"]
    assert rack == {"rack": "r1", "cooling": "liquid", "hosts": 4, "drawKw": 49.0, "budgetKw": 100.0, "marginKw": 51.0,
                    "coolingKw": 90.0, "coolingMarginKw": 41.0}


def _inventory(racks, hosts):
    site = yaml.safe_load((FIXTURES / "pass" / "within-budget.yaml").read_text().split("---")[0])
    site.pop("racks", None)
    if racks is not None:
        site["racks"] = racks
    base = {"addresses": {"management": "10.50.0.11"}, "role": "control-plane", "ssh": {"user": "ubuntu", "keySecret": {"env": "K"}}}
    listed = [dict(base, hostname="cp-01")]
    for i, extra in enumerate(hosts, 1):
        host = dict(base, hostname=f"gpu-{i:02d}", role="gpu-worker", addresses={"management": f"10.50.0.{20 + i}"}, rack="r1")
        host.update(extra)
        listed.append(host)
    docs = [site, {"apiVersion": "hybridgpu.io/v1alpha1", "kind": "HostList", "metadata": {"site": "lab"}, "hosts": listed}]
    return inventory_from_documents([("lab.yaml", docs)])


def test_host_draw_prefers_the_hosts_own_figure_then_the_catalog():
    inv = _inventory(None, [{"gpu": {"model": "H100-80GB", "count": 8}}, {"gpu": {"model": "H100-80GB", "count": 8}, "powerKw": 7.25},
                            {"gpu": {"model": "L40S", "count": 4}}])
    dgx, capped, l40s = (host_draw(inv.host(f"gpu-0{i}"), CATALOG) for i in (1, 2, 3))
    assert (dgx.watts, dgx.basis) == (10200, "8 x H100-80GB 700 W + DGX-H100 platform 4.6 kW")
    assert (capped.watts, capped.basis, capped.gpu_watts) == (7250, "powerKw", 5600)
    assert l40s.watts is None and "no catalog platform has 4 x L40S" in l40s.basis and l40s.gpu_watts == 4 * 350
    assert host_draw(inv.host("cp-01"), CATALOG).watts is None


def test_rack_loads_count_active_and_cordoned_hosts_only():
    dgx = {"gpu": {"model": "H100-80GB", "count": 8}}
    inv = _inventory({"r1": {"powerKw": 50}, "r2": {"powerKw": 5, "cooling": "liquid"}},
                     [dgx, dict(dgx, state="cordoned"), dict(dgx, state="absent"), dict(dgx, rack="r3")])
    r1, r2 = rack_loads(inv.site.racks, inv.hosts, CATALOG)
    assert [d.hostname for d in r1.draws] == ["gpu-01", "gpu-02"] and (r1.draw_watts, r1.margin_watts) == (20400, 29600)
    assert (r2.name, r2.cooling, r2.draws, r2.margin_watts) == ("r2", "liquid", (), 5000)


def test_a_rack_over_budget_with_a_host_without_draw_reports_both():
    with pytest.raises(InventoryError) as caught:
        _inventory({"r1": {"powerKw": 10}}, [{"gpu": {"model": "H100-80GB", "count": 8}}, {"gpu": {"model": "H100-80GB", "count": 8}},
                                              {"gpu": {"model": "H100-80GB", "count": 2}}])
    codes = caught.value.codes
    assert codes == ["rack-power-unknown", "rack-power-budget"]
    budget = caught.value.issues[1]
    assert budget.field == "racks.r1.powerKw" and "draw at least 20.4 kW" in budget.message and "10.4 kW over its 10 kW budget" in budget.message


def test_unknown_gpu_model_is_reported_once_not_as_a_missing_draw():
    with pytest.raises(InventoryError) as caught:
        _inventory({"r1": {"powerKw": 10}}, [{"gpu": {"model": "H100-80GBX", "count": 8}}])
    assert "rack-power-unknown" not in caught.value.codes and "unknown-gpu-model" in caught.value.codes


def test_an_over_budget_message_names_twelve_hosts_then_counts_the_rest():
    with pytest.raises(InventoryError) as caught:
        _inventory({"r1": {"powerKw": 100}}, [{"gpu": {"model": "A100-40GB", "count": 8}}] * 16)
    message = caught.value.issues[0].message
    assert "draw 104 kW" in message and "gpu-12 6.5 kW and 4 more" in message and "gpu-13" not in message
    assert "4 kW over its 100 kW budget" in message


def test_format_kw_is_exact():
    assert [format_kw(w) for w in (0, 1, 999, 1000, 6250, 40800, 122400, 1234567, -300)] == [
        "0", "0.001", "0.999", "1", "6.25", "40.8", "122.4", "1234.567", "-0.3"]


def test_validate_output_is_byte_identical_twice(monkeypatch):
    monkeypatch.chdir(ROOT)
    name = relative(FIXTURES / "pass" / "undeclared-rack-unchecked.yaml")
    first, second = (runner.invoke(app, ["inventory", "validate", name]).output for _ in range(2))
    assert first == second and "not checked (no `racks` entry): r2" in first


# ---------------------------------------------------------------- the catalog data


@pytest.fixture()
def data_copy(tmp_path: Path) -> Path:
    source = Path(load_catalog.__code__.co_filename).parent / "data"
    for file in source.glob("*.yaml"):
        shutil.copy(file, tmp_path / file.name)
    return tmp_path


def _edit_platforms(directory: Path, edit) -> None:
    path = directory / PLATFORMS_FILE
    data = yaml.safe_load(path.read_text())
    edit(data["platforms"])
    path.write_text(yaml.safe_dump(data))


def test_a_platform_below_its_gpus_board_power_is_refused(data_copy):
    _edit_platforms(data_copy, lambda entries: entries[0].update(maxSystemWatts=5600))
    with pytest.raises(CatalogError) as caught:
        load_catalog(data_copy)
    err = caught.value
    assert (err.file, err.entry, err.field) == (str(data_copy / PLATFORMS_FILE), "DGX-H100", "maxSystemWatts")
    assert "8 x 700 W = 5600 W" in str(err)


def test_two_platforms_with_the_same_gpus_are_refused(data_copy):
    def twin(entries):
        entries.append(dict(copy.deepcopy(entries[0]), name="HGX-H100-OEM"))

    _edit_platforms(data_copy, twin)
    with pytest.raises(CatalogError) as caught:
        load_catalog(data_copy)
    assert (caught.value.entry, caught.value.field) == ("HGX-H100-OEM", "gpuCount") and "already platform DGX-H100" in str(caught.value)


def test_a_platform_of_an_unknown_gpu_and_an_unknown_key_are_refused(data_copy):
    _edit_platforms(data_copy, lambda entries: entries[1].update(gpuModel="H300"))
    with pytest.raises(CatalogError) as caught:
        load_catalog(data_copy)
    assert (caught.value.entry, caught.value.field) == ("DGX-H200", "gpuModel")
    _edit_platforms(data_copy, lambda entries: entries[1].update(gpuModel="H200-141GB", maxWatts=1))
    with pytest.raises(CatalogError) as caught:
        load_catalog(data_copy)
    assert caught.value.field == "maxWatts"


def test_an_override_directory_without_platforms_has_none(data_copy):
    (data_copy / PLATFORMS_FILE).unlink()
    assert load_catalog(data_copy).platforms == ()
    assert CATALOG.with_price_overrides({"g5.xlarge": 1.0}).platform_for("H100-80GB", 8).name == "DGX-H100"


# ---------------------------------------------------------------- the power bill


def test_cost_report_bills_the_hosts_draw_platform_included(root):
    report = report_from_stack("onprem", root)
    inventory = load_inventory(ROOT / "stacks" / "inventory" / "onprem-site-a.yaml")
    draws = gpu_draw_by_model(inventory.hosts, CATALOG)
    # stacks/inventory/onprem-site-a.yaml: 8 x H100-80GB hosts (DGX H100, 10.2 kW) and 8 x A100-80GB hosts (DGX A100, 6.5 kW).
    assert draws["H100-80GB"].kw_per_gpu == pytest.approx(10.2 / 8) and draws["A100-80GB"].kw_per_gpu == pytest.approx(6.5 / 8)
    assert report.onprem_gpu_model == "H100-80GB" and report.onprem_model.power_kw_per_gpu == pytest.approx(1.275)
    data = load_economics_data()
    a100 = OnPremCostModel.from_data(data.onprem_cost("A100-80GB"), CATALOG.gpu_model("A100-80GB"), 0.8125)
    line = next(line for line in report.capacity if line.name == "on-prem A100-80GB")
    assert line.monthly_usd["0.5"] == pytest.approx(line.gpus * a100.annual_usd_per_gpu(0.5) / 12)
    assert any(s["what"] == "power DGX-H100 10200 W maximum" for s in report.sources)
    # power per productive GPU-hour at u: kW x PUE 1.3 x 0.10 USD/kWh (idle fraction 0): 1.275 kW -> 0.16575.
    assert report.onprem_breakdown["0.5"]["power"] == pytest.approx(1.275 * 1.3 * 0.10)


def test_explicit_power_per_gpu_wins_and_hosts_without_draw_are_noted():
    data = load_economics_data()
    cost = data.onprem_cost("H100-80GB")
    gpu = CATALOG.gpu_model("H100-80GB")
    assert OnPremCostModel.from_data(cost, gpu).power_kw_per_gpu == 0.7  # no inventory: board power (the seeds' worked example)
    assert OnPremCostModel.from_data(cost, gpu, 1.275).power_kw_per_gpu == 1.275
    assert OnPremCostModel.from_data(cost.model_copy(update={"power_kw_per_gpu": 1.0}), gpu, 1.275).power_kw_per_gpu == 1.0
    inv = _inventory(None, [{"gpu": {"model": "H100-80GB", "count": 8}}, {"gpu": {"model": "H100-80GB", "count": 4}},
                            {"gpu": {"model": "H100-80GB", "count": 8}, "state": "absent"}])
    draw = gpu_draw_by_model(inv.hosts, CATALOG)["H100-80GB"]
    # 10.2 kW (DGX H100) + 4 x 0.7 kW board power only (no platform for 4 GPUs); the absent host is left out.
    assert (draw.gpus, draw.watts, draw.board_power_only, draw.platforms) == (12, 13000, ("gpu-02",), ("DGX-H100",))


def test_restoring_a_host_into_a_full_rack_is_refused_and_writes_nothing(tmp_path):
    path = tmp_path / "site.yaml"
    shutil.copy(FIXTURES / "pass" / "absent-host-not-counted.yaml", path)
    before = path.read_text()
    result = runner.invoke(app, ["inventory", "restore", "gpu-03", str(path)])
    assert result.exit_code == 2 and "5.8 kW over its 35 kW budget" in result.output
    assert path.read_text() == before
    result = runner.invoke(app, ["inventory", "cordon", "gpu-04", str(path)])  # cordoned hosts still count: 30.6 kW fits
    assert result.exit_code == 0, result.output
