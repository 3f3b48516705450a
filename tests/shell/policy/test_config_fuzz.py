"""Fuzzing the policy config loader (the file behind --policy-pack-config): any JSON, or any bytes,
gives a config or a PolicyConfigFileError naming the file; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.shell.policy.check import PolicyConfigFileError, load_policy_config
from hybridgpu.policy.registry import POLICIES
from tests.helpers import examples

NAMES = [p.name for p in POLICIES] + ["all", "nodepool-gpu-limt", ""]
SETTINGS = ["maxGpusPerNodePool", "allowedInstanceFamilies", "monthlyBudgetUsd", "exemptResources", "enforcementLevel", "requiredTagKeys", "default"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats(allow_nan=False) | st.text(max_size=12) | st.sampled_from(["mandatory", "advisory", "disabled", "strict"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(SETTINGS) | st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
configs = st.dictionaries(st.sampled_from(NAMES), json_values, max_size=5) | json_values


def _check(path: Path) -> None:
    try:
        config = load_policy_config(path)
    except PolicyConfigFileError as exc:
        assert str(path) in str(exc)
    else:
        assert set(config) == {p.name for p in POLICIES}


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=configs)
def test_any_json_gives_a_config_or_a_named_error(tmp_path, doc):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(doc))
    _check(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=64))
def test_any_bytes_give_a_config_or_a_named_error(tmp_path, raw):
    path = tmp_path / "policy.json"
    path.write_bytes(raw)
    _check(path)
