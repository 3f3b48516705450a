"""OpenCost config and the idle alert config, end to end: `hybridgpu validate` (and `preview` for the accepted ones) on tests/fixtures/showback_config/cases.yaml."""

from __future__ import annotations

from typing import Any

import pytest

from hybridgpu.shell.preview import run_preview
from tests.helpers.cases import apply_set, assert_fixture_counts, assert_verdict, case_ids, edited_project, load_cases, validate

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/showback_config/cases.yaml")


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_verdict(scratch_project, case):
    stack = case["stack"]
    root = edited_project(scratch_project, stack, lambda config: apply_set(config, case))
    assert_verdict(validate(root, stack), case)
    if case["verdict"] == "fail":
        return
    releases = [r for r in run_preview(stack, root).of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "opencost"]
    if case["opencost"] == "none":
        assert releases == []
    else:
        (release,) = releases
        assert release.inputs["values"]["opencost"]["customPricing"]["provider"] == case["opencost"]


def test_fixture_counts():
    assert_fixture_counts(CASES, expect_on_fail=False)
