"""``hybridgpu cost plan --capacity-blocks FILE --demand-start T``: Capacity Block offers in the capacity plan, through the CLI in-process.

The cases are ``tests/fixtures/capacity_block_offers/cases.yaml`` (verdicts written before the first run). The offer's
fields are EC2's ``CapacityBlockOffering`` (EC2 API Reference, DescribeCapacityBlockOfferings, read 2026-11-27); a block
serves the demand's whole hours inside ``[start, end - 40 min)``, since Karpenter deletes a block's nodes 40 minutes before
its end (aws/karpenter-provider-aws v1.14.1 ``pkg/apis/v1/ec2nodeclass_status.go``, ``capacityReservationExpirationPeriod``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hybridgpu.cli import app
from tests.helpers import ROOT
from tests.helpers.cases import assert_fixture_counts, assert_verdict, case_ids, load_cases, runner

FIXTURES = ROOT / "tests/fixtures/capacity_block_offers"
CASES = load_cases("tests/fixtures/capacity_block_offers/cases.yaml")
DEFAULT_ARGS = ["--no-onprem", "--instance-type", "p5.48xlarge", "--demand-start", "2026-12-01T00:00:00Z"]


def test_fixture_counts() -> None:
    assert_fixture_counts(CASES)


def _offers_file(case: dict[str, Any], directory: Path) -> Path | None:
    if case.get("file") == "none":
        return None
    path = directory / "offers.yaml"
    if "text" in case:
        path.write_text(case["text"])
    elif "offers" in case:
        path.write_text(json.dumps(case["offers"]) if case.get("format") == "json" else yaml.safe_dump(case["offers"]))
    return path  # `file: missing`: named but not written


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_offers_file_through_the_cli(case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the file is named as given: offers.yaml
    path = _offers_file(case, tmp_path)
    args = ["cost", "plan", "--demand", str(FIXTURES / "demand.csv"), *case.get("args", DEFAULT_ARGS), *case.get("extra", [])]
    if path is not None:
        args += ["--capacity-blocks", path.name]
    output = assert_verdict(runner.invoke(app, args), case)
    for word in case.get("want", []):
        assert word in output, (word, output)


def test_same_offers_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same input, byte-identical output (the table and the JSON)."""
    monkeypatch.chdir(tmp_path)
    case = next(c for c in CASES if c["name"] == "cheap-block-is-bought")
    path = _offers_file(case, tmp_path)
    assert path is not None
    args = ["cost", "plan", "--demand", str(FIXTURES / "demand.csv"), *DEFAULT_ARGS, "--capacity-blocks", path.name]
    for extra in ([], ["--json"]):
        first, second = (runner.invoke(app, [*args, *extra]).output for _ in range(2))
        assert first == second


APPLY_OFFER = [{"capacityBlockOfferingId": "cb-0123456789abcdef0", "instanceType": "p5.48xlarge", "instanceCount": 2,
                "startDate": "2026-12-02T11:30:00Z", "capacityBlockDurationHours": 48, "upfrontFee": "200.00"}]


@pytest.mark.parametrize("fee, bought", [("200.00", True), ("900000.00", False)])
def test_apply_writes_only_capacity_the_stack_holds(fee: str, bought: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--apply`` with offers: a plan that buys an offer writes nothing and prints the NodePool to add once the block is bought (a
    NodePool launches into a block by its reservation id, ``cr-...``, which EC2 gives only on purchase: Karpenter v1.14.1
    ``capacityReservationSelectorTerms``); a plan that buys none applies as without offers and records the offers file in the lock."""
    from tests.economics.test_plan_apply import apply, project, snapshot

    root = project(tmp_path)
    (root / "offers.yaml").write_text(yaml.safe_dump([{**APPLY_OFFER[0], "upfrontFee": fee}]))
    before = snapshot(root)
    result = apply(root, ["--demand", "week.csv", "--stack", "prod", "--apply", "--yes", "--capacity-blocks", "offers.yaml",
                          "--demand-start", "2026-12-01T00:00:00Z"], monkeypatch)
    out = result.output
    assert "Traceback" not in out
    if bought:
        assert result.exit_code == 2 and snapshot(root) == before, out
        snippet = yaml.safe_load(out[out.index("- name: p5-block"):out.index("error:")])
        assert snippet[0]["capacityTypes"] == ["reserved"] and snippet[0]["gpuLimit"] == 16
        assert snippet[0]["capacityBlocks"][0] | {"id": None} == {"id": None, "instanceType": "p5.48xlarge", "instanceCount": 2, "start": "2026-12-02T11:30:00Z",
                                                                   "end": "2026-12-04T11:30:00Z", "upfrontFeeUsd": 200.0}
        assert "buy the offering" in out and "nothing was written" in out
    else:
        assert result.exit_code == 0, out
        lock = yaml.safe_load((root / "stacks/.hybridgpu-plan.lock").read_text())
        assert lock["plans"]["prod"]["inputs"]["capacityBlocks"]["blocks"] == []


def test_the_stacks_own_blocks_are_in_the_plan_as_bought(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``--stack``, the NodePools' ``capacityBlocks`` of the plan's GPU model are bought blocks: always in, fee counted."""
    from tests.economics.test_plan_apply import apply, project

    monkeypatch.setenv("HYBRIDGPU_NOW", "2026-12-01T00:00:00Z")
    root = project(tmp_path)
    stack = root / "stacks/Pulumi.prod.yaml"
    doc = yaml.safe_load(stack.read_text())
    doc["config"]["hybridgpu:cloud"]["nodePools"].append({
        "name": "h100-block", "nodeClass": "h100", "capacityTypes": ["reserved"], "instanceTypes": ["p5.48xlarge"], "gpuLimit": 8,
        "capacityBlocks": [{"id": "cr-0123456789abcdef0", "instanceType": "p5.48xlarge", "instanceCount": 1, "start": "2026-12-02T11:30:00Z",
                            "end": "2026-12-03T11:30:00Z", "upfrontFeeUsd": 500.0}]})
    stack.write_text(yaml.safe_dump(doc, sort_keys=False))
    (root / "offers.yaml").write_text(yaml.safe_dump(APPLY_OFFER))
    result = apply(root, ["--demand", "week.csv", "--stack", "prod", "--capacity-blocks", "offers.yaml", "--demand-start", "2026-12-01T00:00:00Z", "--json"], monkeypatch)
    assert result.exit_code == 0, result.output
    blocks = json.loads(result.output)["capacityBlocks"]
    bought = next(b for b in blocks["blocks"] if b["name"] == "cr-0123456789abcdef0")
    assert bought["alreadyBought"] and bought["chosen"] and (bought["startHour"], bought["hours"], bought["gpus"]) == (36, 22, 8)
    assert "cr-0123456789abcdef0" in blocks["chosen"] and blocks["blockUsd"] >= 500.0
