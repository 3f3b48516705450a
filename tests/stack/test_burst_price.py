"""One price per GPU-hour (issue 29): the burst plan's optional `usdPerGpuHour`, the cost report, showback and the
`burst-budget` policy all price a GPU-hour through `EconomicsData.gpu_hour_price`, and every remaining difference is
explained in the output.

Upstream facts the tests rely on:

* Karpenter labels every node it launches with ``karpenter.sh/capacity-type`` and
  ``node.kubernetes.io/instance-type`` (aws/karpenter-provider-aws v1.14.1, ``pkg/providers/instancetype/types.go``
  and the well-known labels of kubernetes-sigs/karpenter ``pkg/apis/v1/labels.go``), which is what
  ``node_gpu_models`` reads from ``kubectl get nodes -o json`` to price an OpenCost row by GPU model.
* A Kueue ResourceFlavor's ``spec.nodeLabels`` select its nodes (kubernetes-sigs/kueue v0.19.2
  ``apis/kueue/v1beta2/resourceflavor_types.go``): the EKS flavor of a NodePool with one GPU model carries
  ``karpenter.k8s.aws/instance-gpu-name``, so the flavor names the model its workloads ran on.
* EC2 never charges a Spot Instance more than its maximum price, which defaults to the On-Demand price, and
  Karpenter sets none (AWS EC2 User Guide, "Spot Instance pricing", read 2026-11-27): the policy's worst case.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from hybridgpu.cli import app
from hybridgpu.economics.prices import load_economics_data
from hybridgpu.economics.report import build_report
from hybridgpu.economics.showback import ShowbackPrices, compute_showback
from hybridgpu.economics.usage import UsageRecord, parse_usage
from hybridgpu.policy.oversized import BudgetSettings, burst_budget
from hybridgpu.stack.load import load_stack, load_stack_config
from tests.helpers import ROOT
from tests.helpers.cases import apply_set, assert_fixture_counts, assert_verdict, case_ids, edited_project, load_cases, runner, validate
from tests.helpers.policy_cases import nodepool
from tests.helpers.scratch import example_plan, make_project

CASES = load_cases("tests/fixtures/burst_price/cases.yaml")
#: p5.48xlarge On-Demand per GPU (catalog: 55.04 USD/h, 8 GPUs) x the p5 spot fraction (cloud_pricing.yaml: 0.55).
H100_SPOT = 55.04 / 8 * 0.55


def test_fixture_counts():
    assert_fixture_counts(CASES)


def _edit_plan(plan: dict[str, Any], edits: dict[str, Any]) -> None:
    for path, value in edits.items():
        *parents, last = path.split(".")
        node = plan
        for part in parents:
            node = node[part]
        if value == "~drop":
            node.pop(last, None)
        else:
            node[last] = value


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_plan_price_cases(scratch_project, case):
    plan = example_plan()
    _edit_plan(plan, case.get("plan") or {})
    stack = case.get("stack", "prod")
    root = edited_project(scratch_project, stack, lambda config: apply_set(config, case), plan=plan)
    assert_verdict(validate(root, case["validate"]), case)


def _burst_plan_json(root) -> dict[str, Any]:
    result = runner.invoke(app, ["burst", "plan", "prod", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_without_usd_per_gpu_hour_the_plan_takes_the_cost_reports_price(scratch_project):
    """No `usdPerGpuHour` for spot: the plan prices it as `cost report prod` prices NodePool h100-spot, and says so."""
    plan = example_plan()
    _edit_plan(plan, {"cloud.spot.usdPerGpuHour": "~drop", "cloud.spot.priceSource": "~drop"})
    root = edited_project(scratch_project, "prod", lambda config: None, plan=plan)
    spot = _burst_plan_json(root)["cloud"]["spot"]
    line = next(c for c in load_stack("prod", root).report().capacity if c.name == "h100-spot")
    assert spot["usdPerGpuHour"] == line.usd_per_gpu_hour == pytest.approx(H100_SPOT)
    assert "cost report of stack prod" in spot["priceSource"] and "0.55 x On-Demand 6.88" in spot["priceSource"]


def test_the_three_numbers_of_prods_spot_pool_are_equal_or_explained(scratch_project):
    """Issue 29: 3.44 (plan, teams' budgets), 3.78 (cost report) and 7.91 (burst-budget): each output that shows
    one of them says why it is not the others."""
    root = edited_project(scratch_project, "prod", lambda config: None, plan=example_plan())
    # burst plan: the plan's own price, with the cost report's and its source next to it.
    spot = _burst_plan_json(root)["cloud"]["spot"]
    assert spot["usdPerGpuHour"] == 3.44
    assert "the plan's own price 3.44" in spot["priceSource"] and "at 3.78 USD/GPU-hour" in spot["priceSource"]
    assert "cloud_pricing.yaml, 2026-11-22, unverified" in spot["priceSource"]
    # validate: the same note, naming the plan file and the key.
    out = " ".join(validate(root, "prod").output.split())
    assert "note: stacks/burst/site-a.yaml: cloud.spot.usdPerGpuHour 3.44" in out and "at 3.78 USD/GPU-hour" in out
    # cost report: 3.78 with its basis.
    report = runner.invoke(app, ["cost", "report", "prod", "--root", str(root)])
    assert "h100-spot: p5.48xlarge (H100-80GB) spot = 0.55 x On-Demand 6.88 USD/GPU-hour" in " ".join(report.output.split())
    # burst-budget: the worst case, 7.91 (p5en.48xlarge On-Demand), and why, with the expected spot price.
    pool = nodepool("h100-spot", limit="64", requirements=[
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.4xlarge", "p5.48xlarge", "p5en.48xlarge"]}])
    (message,) = [m for _, m in burst_budget([pool], BudgetSettings(monthly_budget_usd=1000))]
    assert "$7.91/GPU-h" in message and "the dearest instance type p5en.48xlarge at its On-Demand price 7.91" in message
    assert "spot may reach On-Demand; expected spot 3.78 USD/GPU-hour" in message


def _prod_with_l40s(config: dict[str, Any]) -> None:
    pools = config["hybridgpu:cloud"]["nodePools"]
    spot = next(p for p in pools if p["name"] == "h100-spot")
    pools.append({**{k: v for k, v in spot.items() if k not in ("gpuNames", "narrowSpotReason", "weight")},
                  "name": "l40s-spot", "instanceFamilies": ["g6e"], "gpuLimit": 64, "weight": 50,
                  "narrowSpotReason": "one family of L40S sizes for the test"})


def _showback_prices(dest, edit) -> ShowbackPrices:
    def without_plan(config: dict[str, Any]) -> None:
        config.pop("hybridgpu:burst")
        config["hybridgpu:cloud"].setdefault("storage", {})["namespaces"] = ["ml-research"]  # no burst queue names one now
        edit(config)

    root = make_project(dest, stacks=["prod"], stack_edits={"prod": without_plan})
    return ShowbackPrices.from_report(build_report(load_stack_config("prod", root)[0], load_economics_data()))


def test_an_l40s_pool_does_not_change_the_price_of_h100_spot_hours(tmp_path):
    """The issue's example: adding an L40S spot pool made H100 spot hours 17% cheaper. Rows that name their
    GPU model keep their price; rows without a model are priced at the blended rate, and the output says so."""
    before = _showback_prices(tmp_path / "before", lambda config: None)
    after = _showback_prices(tmp_path / "after", _prod_with_l40s)
    assert after.blended_models["spot"] == ("H100-80GB", "L40S") and after.usd_per_gpu_hour["spot"] < before.usd_per_gpu_hour["spot"]
    rows = [UsageRecord("allocation", "a/h100", "a", {"team": "a"}, "spot", Decimal(100), gpu_model="H100-80GB"),
            UsageRecord("allocation", "b/l40s", "b", {"team": "b"}, "spot", Decimal(50), gpu_model="L40S"),
            UsageRecord("allocation", "c/any", "c", {"team": "c"}, "spot", Decimal(10))]
    first = compute_showback(rows[:1], before).to_dict()
    second = compute_showback(rows, after).to_dict()
    h100 = {r["team"]: r["costUsd"]["spot"] for r in second["rows"]}
    assert h100["a"] == first["rows"][0]["costUsd"]["spot"] == round(100 * H100_SPOT, 2)
    assert second["pricesByGpuModel"]["spot"]["H100-80GB"] == pytest.approx(H100_SPOT)
    l40s = float(after.by_model[("spot", "L40S")])
    assert h100["b"] == round(50 * l40s, 2) and l40s < H100_SPOT
    blended = second["blended"]["spot"]
    assert blended["records"] == 1 and blended["gpuHours"] == 10 and blended["models"] == ["H100-80GB", "L40S"]
    assert h100["c"] == round(10 * float(after.usd_per_gpu_hour["spot"]), 2)


def test_opencost_rows_are_priced_by_their_nodes_gpu_model():
    """OpenCost rows carry a node; the node's instance-type label names the GPU model (tests/fixtures/showback/nodes.json)."""
    from hybridgpu.economics.usage import load_nodes, node_gpu_models

    nodes_file = ROOT / "tests/fixtures/showback/nodes.json"
    text = (ROOT / "tests/fixtures/showback/pass/opencost-allocation.json").read_text()
    records = parse_usage(text, "export.json", nodes=load_nodes(nodes_file), node_models=node_gpu_models(nodes_file))
    spot = [r for r in records if r.capacity_type == "spot"]
    assert spot and {r.gpu_model for r in spot} == {"H100-80GB"}
    prices = ShowbackPrices({"spot": Decimal("9"), "owned": Decimal("1")}, by_model={("spot", "H100-80GB"): Decimal("3.784")},
                            blended_models={"spot": ("H100-80GB", "L40S"), "owned": ("A100-80GB", "H100-80GB")})
    out = compute_showback(records, prices).to_dict()
    assert out["pricesByGpuModel"] == {"spot": {"H100-80GB": 3.784}} and "spot" not in out["blended"]


def test_a_price_given_without_models_blends_nothing():
    """--price spot=2.41 prices every spot GPU-hour at 2.41, models or not: nothing is reported as blended."""
    stack = ShowbackPrices({"spot": Decimal("3")}, by_model={("spot", "H100-80GB"): Decimal("3.784")}, blended_models={"spot": ("H100-80GB",)})
    prices = stack.merged(ShowbackPrices.parse("spot=2.41"))
    rows = [UsageRecord("allocation", "a/x", "a", {"team": "a"}, "spot", Decimal(10), gpu_model="H100-80GB")]
    out = compute_showback(rows, prices).to_dict()
    assert out["rows"][0]["costUsd"]["spot"] == 24.1 and out["blended"] == {} and out["pricesByGpuModel"] == {}
