"""``hybridgpu cost showback`` end to end on the fixtures of tests/fixtures/showback (cases.yaml holds each verdict).

Every passing export must price to the cent as hand-computed in cases.yaml; every failing one must
exit 2 naming the file, the row and the column with a fix, never with a traceback.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli.main import app

runner = CliRunner()
HERE = Path(__file__).resolve().parents[1] / "fixtures" / "showback"
CASES = yaml.safe_load((HERE / "cases.yaml").read_text())
PRICES = ["--price", "owned=3.00,reserved=4.00,spot=2.40,on-demand=6.88"]


def _args(case: dict) -> list[str]:
    return [str(HERE / a) if (HERE / a).is_file() else a for a in case["args"]]


def _run(name: str, case: dict, *extra: str):
    args = ["cost", "showback", str(HERE / ("pass" if name in CASES["pass"] else "fail") / name), *_args(case)]
    if "--price" not in case["args"]:
        args += PRICES
    return runner.invoke(app, [*args, *extra], env={"COLUMNS": "240"})


def test_every_fixture_has_a_verdict():
    on_disk = {p.name for p in (HERE / "pass").iterdir()} | {p.name for p in (HERE / "fail").iterdir()}
    assert on_disk == set(CASES["pass"]) | set(CASES["fail"])
    assert len(CASES["pass"]) >= 10 and len(CASES["fail"]) >= 10


@pytest.mark.parametrize("name", sorted(CASES["pass"]))
def test_good_export(name):
    case = CASES["pass"][name]
    result = _run(name, case, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["totalUsd"] == case["totalUsd"]
    for team, usd in (case.get("teams") or {}).items():
        assert sum(out["teams"][team].values()) == pytest.approx(usd, abs=0.005), team
    # the table prints the same total
    text = _run(name, case)
    assert text.exit_code == 0 and f"{case['totalUsd']:,.2f}" in text.output


@pytest.mark.parametrize("name", sorted(CASES["fail"]))
def test_bad_export(name):
    case = CASES["fail"][name]
    result = _run(name, case)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "error:" in result.output
    flat = " ".join(result.output.split())
    for needle in case["expect"]:
        assert " ".join(needle.split()) in flat, (needle, result.output)


def test_json_is_stable_and_sorted():
    """Same input, byte-identical JSON; rows sorted by team then project with (unattributed) last."""
    case = CASES["pass"]["cost-labels-outside-team-namespace.csv"]
    a, b = _run("cost-labels-outside-team-namespace.csv", case, "--json"), _run("cost-labels-outside-team-namespace.csv", case, "--json")
    assert a.output == b.output
    teams = [r["team"] for r in json.loads(a.output)["rows"]]
    assert teams == ["nlp", "(unattributed)"]


def test_plot_writes_one_stacked_bar_per_team(tmp_path):
    from hybridgpu.economics.showback import ShowbackPrices, compute_showback
    from hybridgpu.economics.usage import load_usage
    from hybridgpu.economics.showback_plot import plot_showback
    from hybridgpu.teams.models import read_teams_file

    case = CASES["pass"]["hand.csv"]
    result = _run("hand.csv", case, "--plot", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "showback.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    show = compute_showback(load_usage(HERE / "pass" / "hand.csv"), ShowbackPrices.parse(PRICES[1]),
                            teams=read_teams_file(HERE / "teams.yaml", "teams.yaml"), onprem_gpus=1, window_hours=72)
    fig = plot_showback(show, "t")
    ax = fig.axes[0]
    labels = [c.get_label() for c in ax.containers]
    assert labels == ["owned", "spot", "on-demand", "idle share"]
    heights = {lab: [round(p.get_height(), 2) for p in c.patches] for lab, c in zip(labels, ax.containers, strict=True)}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["nlp", "vision"]
    assert heights == {"owned": [21.0, 54.0], "spot": [0.0, 57.6], "on-demand": [17.2, 0.0], "idle share": [39.48, 120.72]}


def test_stack_prices_are_the_cost_report_prices(root):
    """With --stack onprem, an owned GPU-hour costs what `hybridgpu cost report onprem` prints for it (OpenCost's price), and the
    stack's teams file attributes the usage (its namespaces ml-research and ml-platform)."""
    from hybridgpu.economics.opencost import onprem_gpu_usd_per_hour
    from hybridgpu.economics.showback import ShowbackPrices
    from hybridgpu.stack.load import load_stack

    price = onprem_gpu_usd_per_hour(load_stack("onprem", root).report())
    result = runner.invoke(app, ["cost", "showback", str(HERE / "stack" / "stack-priced.csv"), "--stack", "onprem", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["pricesUsdPerGpuHour"] == {"owned": price}
    # 8 H100 x 10 h = 80 GPU-hours; 2 A100 3g.40gb x 10 h = 2 x 10 x 3/7 GPU-hours
    by_team = {r["team"]: r for r in out["rows"]}
    assert by_team["ml-research"]["gpuHours"] == {"owned": 80.0}
    assert by_team["ml-platform"]["gpuHours"] == {"owned": round(60 / 7, 4)}
    # Priced by GPU model (issue 29): each model at its own owned price, not at the rate blended over both.
    models = ShowbackPrices.from_report(load_stack("onprem", root).report()).by_model
    h100, a100 = float(models[("owned", "H100-80GB")]), float(models[("owned", "A100-80GB")])
    assert out["totalUsd"] == round(h100 * 80 + a100 * 60 / 7 + 1e-9, 2)
    assert out["pricesByGpuModel"] == {"owned": {"A100-80GB": a100, "H100-80GB": h100}} and out["blended"] == {}
    assert out["topIdleAllocations"][0]["name"] == "ml-research/pretrain-0" and out["topIdleAllocations"][0]["idleGpuHours"] == 8.0


def test_the_documented_example_runs(root):
    """README and docs/teams.md: a week of site A priced with both stacks of the site; the owned fleet (40 GPUs:
    the onprem stack's inventory, hosts active or cordoned) x 168 h, the rest idle; the fleet's size and its
    source are said on stderr, and a different ``--onprem-gpus`` is warned about (the idle cost scales with it)."""
    args = ["cost", "showback", str(root / "examples/usage/site-a-week.csv"), "--stack", "onprem", "--stack", "prod",
            "--window-hours", "168", "--root", str(root), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "owned fleet: 40 GPUs, from the inventory of onprem" in " ".join(result.stderr.split())
    out = json.loads(result.stdout)
    explicit = runner.invoke(app, [*args, "--onprem-gpus", "40"])
    assert explicit.exit_code == 0 and "warning" not in explicit.stderr and json.loads(explicit.stdout) == out
    other = runner.invoke(app, [*args, "--onprem-gpus", "56"])
    assert other.exit_code == 0
    assert "warning: --onprem-gpus 56 differs from the 40 GPUs of the inventory of onprem" in " ".join(other.stderr.split())
    assert json.loads(other.stdout)["idle"]["owned"]["gpuHours"] > out["idle"]["owned"]["gpuHours"]
    alone = runner.invoke(app, ["cost", "showback", str(root / "examples/usage/site-a-week.csv"), "--stack", "prod", "--window-hours", "168", "--root", str(root)])
    assert alone.exit_code == 2 and "--onprem-gpus N, or --stack STACK of a stack with an inventory" in " ".join(alone.output.split())
    assert set(out["pricesUsdPerGpuHour"]) == {"owned", "spot", "on-demand"}
    assert [r["team"] for r in out["rows"]][-1] == "(unattributed)"  # the sandbox namespace has no team
    owned_used = sum(r["gpuHours"].get("owned", 0) for r in out["rows"])
    assert owned_used + out["idle"]["owned"]["gpuHours"] == pytest.approx(40 * 168)


def test_kueue_flavors_come_from_the_sites_burst_plan(root):
    """With --stack onprem --stack prod, the burst plan's ResourceFlavors map to capacity types: no --flavor needed.

    16 H100 x 10 h = 160 owned GPU-h (ml-research); 2 x 3g.40gb x 7 h x 3/7 = 6 owned GPU-h (ml-platform);
    8 GPUs x 2.5 h = 20 spot GPU-h (ml-research), each at the cost report's price.
    """
    from hybridgpu.stack.showback import showback_inputs

    inputs = showback_inputs(["onprem", "prod"], root)
    assert inputs.flavors["onprem-h100-80gb"] == ("owned", "H100-80GB") and inputs.flavors["eks-spot"] == ("spot", None)
    result = runner.invoke(app, ["cost", "showback", str(HERE / "stack" / "site-a-workloads.json"), "--stack", "onprem", "--stack", "prod",
                                 "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    rows = {r["team"]: r for r in out["rows"]}
    assert rows["ml-research"]["gpuHours"] == {"owned": 160.0, "spot": 20.0}
    assert rows["ml-platform"]["gpuHours"] == {"owned": 6.0}
    # Owned by GPU model (the flavors name it); the spot flavor's pool mixes H100 and H200, so its rows are blended, and said so.
    h100, a100, spot = inputs.prices.by_model[("owned", "H100-80GB")], inputs.prices.by_model[("owned", "A100-80GB")], inputs.prices.usd_per_gpu_hour["spot"]
    assert out["totalUsd"] == float((160 * h100 + 6 * a100 + 20 * spot).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
    assert out["blended"]["spot"]["gpuHours"] == 20.0 and out["blended"]["spot"]["models"] == ["H100-80GB"]
