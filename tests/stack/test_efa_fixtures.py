"""EFA on EKS, end to end: `hybridgpu validate <stack>` on the fixtures of tests/fixtures/efa/cases.yaml.

Each case edits an example stack the way a user would and runs the CLI in a scratch project.
Refusals exit 2 and name the file, the key and the fix. Why each rule exists is Karpenter v1.14.1
(aws/karpenter-provider-aws ``pkg/providers/instancetype/types.go`` ``efas`` and
``compatibility/compatibility.go`` ``networkInterfaceCheck``, read 2026-11-24): one EC2NodeClass has
one interface list, Karpenter advertises as many ``vpc.amazonaws.com/efa`` as it has ``efa-only``
entries and drops instance types with fewer network cards or EFA interfaces. The device-plugin rules
are the chart's scheduling fields (aws/eks-charts ``stable/aws-efa-k8s-device-plugin`` v0.5.30).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.cases import apply_set, assert_fixture_counts, assert_verdict, case_ids, load_cases, validate_edited

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/efa/cases.yaml")


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_validate_verdict(scratch_project, case):
    assert_verdict(validate_edited(scratch_project, case["stack"], lambda config: apply_set(config, case)), case)


def test_fixture_counts():
    assert_fixture_counts(CASES)
