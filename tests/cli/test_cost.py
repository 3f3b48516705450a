"""Per-stack report, its plots (content, not pixels) and the `hybridgpu cost` commands."""

from __future__ import annotations

import json

import pytest
from matplotlib.image import imread
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.economics.costmodel import HOURS_PER_MONTH, break_even_utilization
from hybridgpu.economics.plots import plot_cost_vs_utilization, plot_cumulative
from hybridgpu.economics.prices import load_economics_data
from hybridgpu.stack.load import report_from_stack
from tests.helpers import import_fresh

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def prod(root):
    return report_from_stack("prod", root)


def test_prod_report_prices_every_pool_from_its_limit(prod):
    data = load_economics_data()
    od = data.on_demand_usd_per_gpu_hour("p5.48xlarge")
    lines = {line.name: line for line in prod.capacity}
    assert set(lines) == {"h100-reserved", "h100-spot", "h100-on-demand", "h100-mig"}
    reserved = lines["h100-reserved"]
    # Stack sets reservedCapacityOption: reserved-3y; the reservation is paid whether used or not.
    assert reserved.option == "reserved-3y" and reserved.pays_when_idle
    assert reserved.monthly_usd["0.3"] == reserved.monthly_usd["0.8"] == pytest.approx(32 * HOURS_PER_MONTH * od * (1 - 0.573))
    assert reserved.usd_per_productive_gpu_hour["0.5"] == pytest.approx(od * (1 - 0.573) / 0.5)
    spot = lines["h100-spot"]
    waste = 0.02 * 1.0 * 0.5  # 2%/h x 1 h interval x half lost (stack settings)
    assert spot.usd_per_productive_gpu_hour["0.5"] == pytest.approx(od * 0.55 / (1 - waste))
    assert spot.monthly_usd["0.5"] == pytest.approx(64 * 0.5 * HOURS_PER_MONTH * od * 0.55 / (1 - waste))
    assert lines["h100-on-demand"].monthly_usd["0.8"] == pytest.approx(16 * 0.8 * HOURS_PER_MONTH * od)
    assert prod.monthly_total_usd["0.5"] == pytest.approx(sum(line.monthly_usd["0.5"] for line in prod.capacity))


def test_prod_break_even_burst_egress_and_hints(prod):
    assert prod.onprem_gpu_model == "H100-80GB" and prod.onprem_gpus == 32 + 64 + 16 + 8
    model = prod.onprem_model
    by = {b.option: b for b in prod.break_even}
    assert by["on-demand"].utilization == pytest.approx(break_even_utilization(model.fixed_usd_per_gpu_year, by["on-demand"].usd_per_productive_gpu_hour, model.usd_per_used_gpu_hour))
    assert by["on-demand"].utilization < by["reserved-1y"].utilization < by["reserved-3y"].utilization
    burst = {b.name: b for b in prod.burst}
    assert set(burst) == {"h100-spot", "h100-on-demand", "h100-mig"}
    assert burst["h100-on-demand"].usd_per_hour == pytest.approx(16 * 55.04 / 8)
    assert burst["h100-spot"].usd_per_month == pytest.approx(burst["h100-spot"].usd_per_hour * HOURS_PER_MONTH)
    assert prod.egress_usd_per_month == pytest.approx(378)
    hints = {h.workload: h for h in prod.hints}
    assert hints["chat-7b-int8"].smallest_mig == "H100-80GB 1g.10gb" and "MIG 1g.10gb" in hints["chat-7b-int8"].message
    assert hints["pretrain-70b"].pool_gpus_needed > 8
    assert len(prod.cumulative["on-prem"]) == 37 and set(prod.cumulative) >= {"on-prem", "on-demand", "spot", "reserved-3y"}
    assert {s["what"].split()[0] for s in prod.sources} >= {"purchase", "on-prem", "On-Demand"}


def test_onprem_report_counts_inventory_gpus(root):
    rep = report_from_stack("onprem", root)
    from hybridgpu.stack.inventory import load_onprem_inventory
    from hybridgpu.stack.load import load_stack_config

    config, _ = load_stack_config("onprem", root)
    inv = load_onprem_inventory(config, root)
    onprem_lines = {line.gpu_model: line.gpus for line in rep.capacity if line.kind == "onprem"}
    expected: dict[str, int] = {}
    for host in inv.gpu_workers:
        if host.state != "absent":
            expected[host.gpu.model] = expected.get(host.gpu.model, 0) + host.gpu.count
    assert onprem_lines == expected
    assert rep.break_even_instance_type is not None and rep.break_even


def test_dev_report_notes_missing_onprem_data(root):
    rep = report_from_stack("dev", root)
    assert rep.onprem_model is None and rep.break_even == []
    assert any("no on-prem cost data for GPU model" in n for n in rep.notes)
    assert rep.burst and rep.burst[0].kind == "spot"


def test_cost_plot_content(prod, tmp_path):
    fig = plot_cost_vs_utilization(prod.onprem_model, prod.cloud_rates, "prod")
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["on-prem", *[r.option for r in prod.cloud_rates]]
    onprem = ax.get_lines()[0]
    x, y = onprem.get_xdata(), onprem.get_ydata()
    assert x[0] == pytest.approx(5) and x[-1] == pytest.approx(100)
    assert y[-1] == pytest.approx(prod.onprem_model.usd_per_productive_gpu_hour(1.0))
    assert all(a >= b for a, b in zip(y, y[1:]))  # falls with utilization
    texts = [t.get_text() for t in ax.texts]
    for b in prod.break_even:
        if b.utilization is not None and b.utilization <= 1:
            assert f"break-even {b.option}: {b.utilization:.1%}" in texts
    assert ax.get_xlabel().startswith("utilization") and "productive GPU-hour" in ax.get_ylabel()
    fig.savefig(tmp_path / "a.png")
    assert imread(tmp_path / "a.png").shape[:2] == (500, 800)


def test_cumulative_plot_content(prod):
    fig = plot_cumulative(prod.cumulative, "prod")
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert set(lines) == set(prod.cumulative)
    assert list(lines["on-prem"].get_ydata()) == prod.cumulative["on-prem"]
    assert lines["on-prem"].get_ydata()[0] == pytest.approx(prod.onprem_gpus * prod.onprem_model.server_usd_per_gpu)


def test_cli_report_tables_json_and_plots(root, tmp_path):
    result = runner.invoke(app, ["cost", "report", "prod", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "break-even utilization" in result.output and "h100-spot" in result.output and "378 USD/month" in result.output
    result = runner.invoke(app, ["cost", "report", "prod", "--root", str(root), "--json", "--utilization", "40%,0.9", "--plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["utilizations"] == [0.4, 0.9]
    assert set(data["capacity"][0]["monthly_usd"]) == {"0.4", "0.9"}
    for name in ("prod-cost-vs-utilization.png", "prod-cumulative.png"):
        assert imread(tmp_path / name).ndim == 3


def test_cli_report_errors(root, tmp_path):
    result = runner.invoke(app, ["cost", "report", "prod", "--root", str(root), "--utilization", "1.5"])
    assert result.exit_code == 2 and "outside (0, 1]" in result.output
    result = runner.invoke(app, ["cost", "report", "nosuch", "--root", str(root)])
    assert result.exit_code == 2 and "no such stack file" in result.output
    result = runner.invoke(app, ["cost", "report", "dev", "--root", str(root), "--plot", str(tmp_path)])
    assert result.exit_code == 2 and "nothing to plot" in result.output and not list(tmp_path.iterdir())


def test_stack_override_errors_name_the_stack_file(project):
    stack = project / "stacks" / "Pulumi.t.yaml"
    stack.write_text(
        "config:\n  hybridgpu:tags: {team: a, project: b, cost-center: c}\n"
        "  hybridgpu:economics:\n    onPrem: {gpuModel: H100-80GB, gpus: 8, pue: 1.2, usdPerKwh: 0.2}\n"
        "    cloud: {p5: {spotPriceFraction: 0.5}}\n"
    )
    rep = report_from_stack("t", project)
    assert rep.onprem_model.pue == 1.2 and rep.onprem_model.usd_per_kwh == 0.2 and rep.onprem_gpus == 8
    spot = {r.option: r for r in rep.cloud_rates}["spot"]
    assert spot.usd_per_gpu_hour == pytest.approx(load_economics_data().on_demand_usd_per_gpu_hour("p5.4xlarge") * 0.5)
    stack.write_text("config:\n  hybridgpu:tags: {team: a, project: b, cost-center: c}\n  hybridgpu:economics:\n    onPrem: {gpuModel: L4, pue: 1.2}\n")
    result = runner.invoke(app, ["cost", "report", "t", "--root", str(project)])
    assert result.exit_code == 2
    assert "stacks/Pulumi.t.yaml" in result.output and "entry 'L4'" in result.output and "serverUsdPerGpu" in result.output
    stack.write_text("config:\n  hybridgpu:tags: {team: a, project: b, cost-center: c}\n  hybridgpu:economics:\n    utilizations: [0.5, 2]\n")
    result = runner.invoke(app, ["cost", "report", "t", "--root", str(project)])
    assert result.exit_code == 2 and "hybridgpu:economics.utilizations[1]" in result.output


def test_cli_plan_on_the_sample_profile(root):
    result = runner.invoke(app, ["cost", "plan", "--demand", str(root / "examples/demand/sample.csv"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["demand"]["hours"] == 8760 and data["prices"]["instanceType"] == "p5.48xlarge"
    totals = [a["totalUsd"] for a in data["alternatives"] if a["totalUsd"] is not None]
    assert data["plan"]["cost"]["total"] <= min(totals)
    result = runner.invoke(app, ["cost", "plan", "--generate", "--hours", "336", "--stack", "prod", "--root", str(root), "--max-wait", "6"])
    assert result.exit_code == 0, result.output
    assert "optimal plan (exact grid search)" in result.output and "all On-Demand" in result.output  # queueing: the fast path


def test_cli_plan_bad_csv_names_line_and_field(tmp_path):
    bad = tmp_path / "d.csv"
    bad.write_text("hour,gpus,checkpointable\n0,4,1\n1,x,1\n")
    result = runner.invoke(app, ["cost", "plan", "--demand", str(bad)])
    assert result.exit_code == 2 and f"{bad}: line 3: field 'gpus'" in result.output.replace("\n", "")
    result = runner.invoke(app, ["cost", "plan"])
    assert result.exit_code == 2 and "--demand" in result.output


def test_cli_demand_and_vram(tmp_path):
    out = tmp_path / "d.csv"
    result = runner.invoke(app, ["cost", "demand", str(out), "--hours", "48", "--seed", "1"])
    assert result.exit_code == 0 and out.read_text().count("\n") == 50
    result = runner.invoke(app, ["cost", "vram", "7", "--precision", "int4", "--json"])
    data = json.loads(result.output)
    assert data["totalGB"] == pytest.approx(4.55) and data["smallestGpu"] == "T4"
    result = runner.invoke(app, ["cost", "vram", "70", "--mode", "training", "--gpu-model", "H100-80GB"])
    assert result.exit_code == 0 and "GPUs (sharded" in result.output
    result = runner.invoke(app, ["cost", "vram", "7", "--precision", "fp5"])
    assert result.exit_code == 2 and "unknown precision" in result.output


def test_economics_core_imports_no_pulumi():
    proc = import_fresh("hybridgpu.economics.report", "hybridgpu.economics.planner", "hybridgpu.economics.plots", "hybridgpu.cli.cost")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_copy_of_sample_profile_is_generator_output(root, tmp_path):
    # The committed sample is exactly what `hybridgpu cost demand --seed 7` writes.
    out = tmp_path / "s.csv"
    assert runner.invoke(app, ["cost", "demand", str(out), "--seed", "7"]).exit_code == 0
    assert out.read_text() == (root / "examples/demand/sample.csv").read_text()


def test_cli_plan_with_stack_limits_and_onprem_override(root, project):
    result = runner.invoke(app, ["cost", "plan", "--demand", str(root / "examples/demand/sample.csv"), "--stack", "prod", "--root", str(root),
                                 "--stack-limits", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    alts = {a["name"]: a["totalUsd"] for a in data["alternatives"]}
    assert alts["all On-Demand"] is None  # the sample's 95-GPU peak is above prod's 24 On-Demand GPUs
    assert data["plan"]["peakOnDemandGpus"] <= 24 and data["plan"]["peakSpotGpus"] <= 64
    (project / "stacks" / "Pulumi.t.yaml").write_text(
        "config:\n  hybridgpu:tags: {team: a, project: b, cost-center: c}\n"
        "  hybridgpu:economics:\n    onPrem: {gpuModel: H100-80GB, serverUsdPerGpu: 1000000}\n")
    result = runner.invoke(app, ["cost", "plan", "--generate", "--hours", "200", "--stack", "t", "--root", str(project), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["plan"]["onPremGpus"] == 0  # a million-dollar GPU is never bought
    assert data["prices"]["onPremFixedUsdPerGpuHour"] > 1_000_000 / 3 / 8760
    result = runner.invoke(app, ["cost", "plan", "--generate", "--stack-limits"])
    assert result.exit_code == 2 and "--stack-limits needs --stack" in result.output


def test_plan_json_is_the_same_bytes_twice_and_timings_go_to_stderr(tmp_path):
    """Issue 29: no wall time in the plan's output; `--timings` prints it to stderr."""
    args = ["cost", "plan", "--generate", "--hours", "120", "--json"]
    first, second = runner.invoke(app, args), runner.invoke(app, args)
    assert first.exit_code == second.exit_code == 0, first.output
    assert first.stdout == second.stdout and "solveSeconds" not in first.stdout
    timed = runner.invoke(app, [*args, "--timings"])
    assert timed.stdout == first.stdout and "solved in" in timed.stderr
