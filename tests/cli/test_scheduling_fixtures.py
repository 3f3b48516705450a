"""Every pod the toolkit installs can be scheduled: `hybridgpu validate` end to end on the fixtures (issue 14, point 2).

Each case of ``tests/fixtures/scheduling/cases.yaml`` edits an example stack (or the example
inventory) the way a user would and runs ``hybridgpu validate <stack>`` through the CLI in a
scratch project. A refused stack exits 2 and names the workload, the node group and the taint
or label that refuses it; an accepted one exits 0. Semantics: kube-scheduler's TaintToleration
and NodeAffinity filters (kubernetes/kubernetes ``pkg/scheduler/framework/plugins/{tainttoleration,
nodeaffinity}``, read 2026-11-24) over the chart defaults recorded in ``hybridgpu/render/charts.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.cases import apply_set, assert_fixture_counts, assert_verdict, case_ids, edited_inventory, load_cases, validate_edited
from tests.helpers.scratch import example_plan

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/scheduling/cases.yaml")


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_validate_verdict(scratch_project, tmp_path, case):
    def edit(config: dict[str, Any]) -> None:
        apply_set(config, case)
        if "inventory" in case:
            edits = case["inventory"]
            edited = edited_inventory(tmp_path / "site-a.yaml", hosts=edits.get("hosts"), drop=edits.get("drop", ()))
            config["hybridgpu:onprem"]["inventory"] = [str(edited)]

    assert_verdict(validate_edited(scratch_project, case["stack"], edit, plan=example_plan()), case)


def test_fixture_counts():
    assert_fixture_counts(CASES)
