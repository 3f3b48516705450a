"""Shared dataset storage, end to end: `hybridgpu validate <stack>` on the fixtures of tests/fixtures/storage/cases.yaml.

Each case edits an example stack (or the ``storage`` section of the example inventory's Site
document) the way a user would and runs the CLI in a scratch project. Refusals exit 2 and name
the file, the key and the fix; the FSx arithmetic is capacity (GiB / 1000 = TiB) x MB/s/TiB
(hybridgpu.config.storage.FSX_LUSTRE_PERSISTENT_2, FSx for Lustre User Guide "Managing throughput
capacity", read 2026-11-24); the on-prem rule adds the servers' declared read rates
(hybridgpu.inventory.storage). The target per node, 10 GB/s, is shared/seeds/002's.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.cases import KEEP, apply_set, assert_fixture_counts, assert_verdict, case_ids, edited_inventory, load_cases, validate_edited

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/storage/cases.yaml")


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_validate_verdict(scratch_project, tmp_path, case):
    def edit(config: dict[str, Any]) -> None:
        apply_set(config, case)
        if "storage" in case or "hosts" in case:
            edited = edited_inventory(tmp_path / "onprem-site-a.yaml", storage=case.get("storage", KEEP), hosts=case.get("hosts"))
            config["hybridgpu:onprem"]["inventory"] = [str(edited)]

    assert_verdict(validate_edited(scratch_project, case["stack"], edit), case)


def test_fixture_counts():
    for side in (("prod", "dev"), ("onprem",)):
        assert_fixture_counts([c for c in CASES if c["stack"] in side], label=side, expect_on_fail=False)
    assert_fixture_counts(CASES)
