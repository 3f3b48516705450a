"""NVIDIA layer config (hybridgpu.config.nvidia): model shapes and one test per semantic check."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from hybridgpu.config.nvidia import (
    DEVICE_PLUGIN_VERSION,
    GPU_OPERATOR_VERSION,
    NvidiaConfig,
    nvidia_issues,
)
from hybridgpu.k8s import mig_resource_name
from hybridgpu.mig import check_layout

FILE = "stacks/Pulumi.dev.yaml"
POOLS = {"gpu-h100", "gpu-a100", "gpu-l4"}


def cfg(**data: Any) -> NvidiaConfig:
    return NvidiaConfig.model_validate(data)


def issues(data: dict[str, Any], pools: set[str] = POOLS):
    return nvidia_issues(NvidiaConfig.model_validate(data), FILE, node_pool_names=pools)


def only(found, key: str):
    """The single issue at ``key`` (and assert there is exactly one)."""
    at = [i for i in found if i.key == key]
    assert len(at) == 1, f"expected one issue at {key}, got {found}"
    return at[0]


H100 = {"name": "h100-half", "gpuModel": "H100-80GB", "layout": {"3g.40gb": 1, "2g.20gb": 2}}


# --------------------------------------------------------------------------- models


def test_defaults_are_valid_and_pinned():
    n = NvidiaConfig()
    assert (n.install, n.driver, n.toolkit, n.mig_strategy, n.namespace) == ("gpu-operator", "preinstalled", "preinstalled", "mixed", "gpu-operator")
    assert n.versions.gpu_operator == GPU_OPERATOR_VERSION == "v26.7.0"
    assert n.versions.device_plugin == n.versions.gpu_feature_discovery == DEVICE_PLUGIN_VERSION == "0.20.0"
    # Exporter on; ServiceMonitor and alert off by default (they need Prometheus Operator CRDs).
    assert n.dcgm.enabled and not n.dcgm.service_monitor and not n.dcgm.idle_alert.enabled
    assert (n.dcgm.idle_alert.utilization_below_percent, n.dcgm.idle_alert.for_minutes) == (5, 60)
    assert nvidia_issues(n, FILE, node_pool_names=set()) == []


def test_camel_case_keys_and_unknown_keys_rejected():
    n = cfg(migStrategy="single", nodePools={"gpu-l4": {"deviceConfig": "x"}}, dcgm={"idleAlert": {"forMinutes": 30}})
    assert n.mig_strategy == "single" and n.node_pools["gpu-l4"].device_config == "x" and n.dcgm.idle_alert.for_minutes == 30
    with pytest.raises(ValidationError, match="Extra inputs"):
        cfg(migStratgy="single")
    with pytest.raises(ValidationError):
        cfg(migStrategy="both")


def test_every_field_documents_unit_or_default():
    from hybridgpu.config import nvidia as mod

    for model in (mod.NvidiaConfig, mod.MigLayoutConfig, mod.MigDeviceGroup, mod.TimeSlicingConfig, mod.SharedResource,
                  mod.NodePoolNvidia, mod.DcgmConfig, mod.IdleAlertConfig, mod.NvidiaVersions):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"
            assert "Default" in field.description or "Required" in field.description, f"{model.__name__}.{name}"


@pytest.mark.parametrize(
    "layout",
    [
        {"name": "x", "gpuModel": "H100-80GB"},  # neither
        {"name": "x", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}, "devices": [{"gpus": [0], "migEnabled": False}]},  # both
        {"name": "x", "gpuModel": "H100-80GB", "layout": {}},  # empty
        {"name": "x", "gpuModel": "H100-80GB", "devices": [{"gpus": [0]}]},  # enabled without layout
        {"name": "x", "gpuModel": "H100-80GB", "devices": [{"gpus": [0], "migEnabled": False, "layout": {"1g.10gb": 1}}]},
        {"name": "x", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 0}},  # counts >= 1
        {"name": "Not_DNS", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 1}},
    ],
)
def test_layout_shape_errors_are_schema_errors(layout):
    with pytest.raises(ValidationError):
        cfg(migLayouts=[layout])


def test_shared_resource_name_shape():
    with pytest.raises(ValidationError):
        cfg(timeSlicing=[{"name": "ts", "resources": [{"name": "amd.com/gpu", "replicas": 2}]}])
    with pytest.raises(ValidationError):
        cfg(timeSlicing=[{"name": "ts", "resources": []}])


def test_mig_resource_name_replaces_plus():
    assert mig_resource_name("1g.10gb") == "nvidia.com/mig-1g.10gb"
    assert mig_resource_name("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"


# --------------------------------------------------------------------------- MIG layouts


def test_sound_config_has_no_issues():
    found = issues(
        {
            "migLayouts": [
                H100,
                {"name": "a100-split", "gpuModel": "A100-40GB", "devices": [{"gpus": [0, 1, 2, 3], "layout": {"1g.5gb": 7}}, {"gpus": [4, 5, 6, 7], "migEnabled": False}]},
            ],
            "timeSlicing": [
                {"name": "share-1g", "resources": [{"name": "nvidia.com/mig-1g.5gb", "replicas": 2}, {"name": "nvidia.com/gpu", "replicas": 2}]},
                {"name": "share-4", "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]},
            ],
            "nodePools": {"gpu-h100": {"migConfig": "h100-half"}, "gpu-a100": {"migConfig": "a100-split", "deviceConfig": "share-1g"}, "gpu-l4": {"deviceConfig": "share-4"}},
        }
    )
    assert found == []


def test_unknown_mig_profile_names_model_profile_and_close_match():
    found = issues({"migLayouts": [{"name": "bad", "gpuModel": "H100-80GB", "layout": {"1g.10g": 7}}]})
    issue = only(found, "hybridgpu:nvidia.migLayouts[0].layout")
    assert issue.file == FILE
    assert "'1g.10g'" in issue.message and "H100-80GB" in issue.message and "did you mean '1g.10gb'" in issue.message
    assert "1g.10gb" in issue.fix


def test_unknown_profile_in_device_group_and_unknown_model():
    found = issues(
        {
            "migLayouts": [
                {"name": "a", "gpuModel": "H100-80GB", "devices": [{"gpus": [0], "layout": {"1g.5gb": 7}}]},
                {"name": "b", "gpuModel": "H100-80G", "layout": {"1g.10gb": 7}},
            ]
        }
    )
    profile_issue = only(found, "hybridgpu:nvidia.migLayouts[0].devices[0].layout")
    assert "'1g.5gb'" in profile_issue.message and "H100-80GB" in profile_issue.message
    model_issue = only(found, "hybridgpu:nvidia.migLayouts[1].gpuModel")
    assert "H100-80G" in model_issue.message and "H100-80GB" in model_issue.message


def test_unplaceable_layout_reports_the_checker_reason():
    layout = {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}
    reason = check_layout("H100-80GB", layout).reason
    assert reason
    issue = only(issues({"migLayouts": [{"name": "too-big", "gpuModel": "H100-80GB", "layout": layout}]}), "hybridgpu:nvidia.migLayouts[0].layout")
    assert reason in issue.message and "cannot be placed" in issue.message and "H100-80GB" in issue.message


def test_unplaceable_device_group_layout():
    found = issues({"migLayouts": [{"name": "x", "gpuModel": "A30-24GB", "devices": [{"gpus": [0], "layout": {"2g.12gb": 3}}]}]})
    issue = only(found, "hybridgpu:nvidia.migLayouts[0].devices[0].layout")
    assert check_layout("A30-24GB", {"2g.12gb": 3}).reason in issue.message


def test_overlapping_gpu_indices():
    found = issues(
        {
            "migLayouts": [
                {
                    "name": "overlap",
                    "gpuModel": "H100-80GB",
                    "devices": [{"gpus": [0, 1, 2], "layout": {"1g.10gb": 7}}, {"gpus": [2, 3, 3], "migEnabled": False}],
                }
            ]
        }
    )
    at = [i for i in found if i.key == "hybridgpu:nvidia.migLayouts[0].devices[1].gpus"]
    assert len(at) == 2
    assert any("[2]" in i.message and "devices[0]" in i.message for i in at)
    assert any("[3]" in i.message and "more than once" in i.message for i in at)


def test_single_strategy_with_differing_layouts_on_one_node():
    found = issues(
        {
            "migStrategy": "single",
            "migLayouts": [
                {"name": "two", "gpuModel": "H100-80GB", "devices": [{"gpus": [0, 1, 2, 3], "layout": {"1g.10gb": 7}}, {"gpus": [4, 5, 6, 7], "layout": {"2g.20gb": 3}}]}
            ],
        }
    )
    issue = only(found, "hybridgpu:nvidia.migLayouts[0].devices")
    assert "single" in issue.message and "same MIG layout" in issue.message and "mixed" in issue.fix


def test_single_strategy_with_mig_enabled_and_disabled_gpus():
    found = issues(
        {
            "migStrategy": "single",
            "migLayouts": [{"name": "half", "gpuModel": "H100-80GB", "devices": [{"gpus": [0, 1], "layout": {"1g.10gb": 7}}, {"gpus": [2, 3], "migEnabled": False}]}],
        }
    )
    assert "migEnabled" in only(found, "hybridgpu:nvidia.migLayouts[0].devices").message


def test_single_strategy_with_more_than_one_profile():
    found = issues({"migStrategy": "single", "migLayouts": [H100]})
    issue = only(found, "hybridgpu:nvidia.migLayouts[0].layout")
    assert "one MIG device type" in issue.message
    assert issues({"migStrategy": "single", "migLayouts": [{"name": "ok", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}}]}) == []


def test_strategy_none_with_mig_layout():
    issue = only(issues({"migStrategy": "none", "migLayouts": [H100]}), "hybridgpu:nvidia.migStrategy")
    assert "h100-half" in issue.message


def test_duplicate_and_reserved_layout_names():
    found = issues({"migLayouts": [H100, H100, {**H100, "name": "all-disabled"}]})
    assert "repeats" in only(found, "hybridgpu:nvidia.migLayouts[1].name").message
    assert "reserved" in only(found, "hybridgpu:nvidia.migLayouts[2].name").message


def test_installer_combinations():
    found = issues({"install": "device-plugin", "driver": "operator", "toolkit": "operator", "migLayouts": [H100]})
    assert "gpu-operator" in only(found, "hybridgpu:nvidia.driver").fix
    only(found, "hybridgpu:nvidia.toolkit")
    assert "mig-manager" in only(found, "hybridgpu:nvidia.migLayouts").message
    assert issues({"install": "device-plugin"}) == []


# --------------------------------------------------------------------------- sharing


def test_time_slicing_replicas_below_two():
    found = issues({"timeSlicing": [{"name": "ts", "resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}]})
    issue = only(found, "hybridgpu:nvidia.timeSlicing[0].resources[0].replicas")
    assert "at least 2" in issue.message and "got 1" in issue.message


def test_mig_resource_under_single_strategy():
    found = issues(
        {
            "migStrategy": "single",
            "migLayouts": [{"name": "sevens", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}}],
            "timeSlicing": [{"name": "ts", "resources": [{"name": "nvidia.com/mig-1g.10gb", "replicas": 2}]}],
        }
    )
    issue = only(found, "hybridgpu:nvidia.timeSlicing[0].resources[0].name")
    assert "mixed" in issue.message and "nvidia.com/gpu" in issue.message and "nvidia.com/gpu" in issue.fix


def test_mig_resource_that_no_layout_provides():
    found = issues({"migLayouts": [H100], "timeSlicing": [{"name": "ts", "resources": [{"name": "nvidia.com/mig-3g.40g", "replicas": 2}]}]})
    issue = only(found, "hybridgpu:nvidia.timeSlicing[0].resources[0].name")
    assert "no MIG layout provides" in issue.message and "nvidia.com/mig-3g.40gb" in issue.message


def test_plus_me_resource_must_use_dot():
    found = issues(
        {
            "migLayouts": [{"name": "me", "gpuModel": "H100-80GB", "layout": {"1g.10gb+me": 1, "1g.10gb": 6}}],
            "timeSlicing": [
                {"name": "bad", "resources": [{"name": "nvidia.com/mig-1g.10gb+me", "replicas": 2}]},
                {"name": "good", "resources": [{"name": "nvidia.com/mig-1g.10gb.me", "replicas": 2}]},
            ],
        }
    )
    assert "nvidia.com/mig-1g.10gb.me" in only(found, "hybridgpu:nvidia.timeSlicing[0].resources[0].name").fix
    assert not [i for i in found if i.key.startswith("hybridgpu:nvidia.timeSlicing[1]")]


def test_mps_refused_for_mig():
    found = issues(
        {
            "migStrategy": "mixed",
            "migLayouts": [H100],
            "timeSlicing": [{"name": "mps", "sharing": "mps", "resources": [{"name": "nvidia.com/mig-3g.40gb", "replicas": 2}]}],
        }
    )
    assert "mixed" in only(found, "hybridgpu:nvidia.timeSlicing[0].sharing").message
    assert "MPS is not supported on MIG" in only(found, "hybridgpu:nvidia.timeSlicing[0].resources[0].name").message

    found = issues(
        {
            "migStrategy": "single",
            "migLayouts": [{"name": "sevens", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}}],
            "timeSlicing": [{"name": "mps", "sharing": "mps", "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}],
            "nodePools": {"gpu-h100": {"migConfig": "sevens", "deviceConfig": "mps"}, "gpu-l4": {"deviceConfig": "mps"}},
        }
    )
    issue = only(found, "hybridgpu:nvidia.nodePools.gpu-h100.deviceConfig")
    assert "MPS" in issue.message and "MIG" in issue.message
    assert len(found) == 1  # MPS on whole GPUs (gpu-l4) is fine under single


def test_duplicate_and_reserved_sharing_names():
    ts = {"name": "ts", "resources": [{"name": "nvidia.com/gpu", "replicas": 2}, {"name": "nvidia.com/gpu", "replicas": 3}]}
    found = issues({"timeSlicing": [ts, ts, {**ts, "name": "default"}]})
    assert "repeats" in only(found, "hybridgpu:nvidia.timeSlicing[1].name").message
    assert "reserved" in only(found, "hybridgpu:nvidia.timeSlicing[2].name").message
    assert "repeats" in only(found, "hybridgpu:nvidia.timeSlicing[0].resources[1].name").message


# --------------------------------------------------------------------------- node pools


def test_unknown_pool_reference():
    found = issues({"nodePools": {"gpu-h10": {}}})
    issue = only(found, "hybridgpu:nvidia.nodePools.gpu-h10")
    assert "no EKS NodePool named 'gpu-h10'" in issue.message and "gpu-h100" in issue.message


def test_unknown_layout_and_sharing_references():
    found = issues(
        {
            "migLayouts": [H100],
            "timeSlicing": [{"name": "share-4", "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}],
            "nodePools": {"gpu-h100": {"migConfig": "h100-hal", "deviceConfig": "share-5"}},
        }
    )
    assert "did you mean h100-half" in only(found, "hybridgpu:nvidia.nodePools.gpu-h100.migConfig").message
    assert "share-4" in only(found, "hybridgpu:nvidia.nodePools.gpu-h100.deviceConfig").message
    assert len(found) == 2


def test_issues_are_reported_all_at_once_in_config_order():
    found = issues(
        {
            "migLayouts": [{"name": "bad", "gpuModel": "H100-80GB", "layout": {"9g.1gb": 1}}],
            "timeSlicing": [{"name": "ts", "resources": [{"name": "nvidia.com/gpu", "replicas": 0}]}],
            "nodePools": {"nope": {"migConfig": "missing"}},
        }
    )
    assert [i.key for i in found] == [
        "hybridgpu:nvidia.migLayouts[0].layout",
        "hybridgpu:nvidia.timeSlicing[0].resources[0].replicas",
        "hybridgpu:nvidia.nodePools.nope",
        "hybridgpu:nvidia.nodePools.nope.migConfig",
    ]
    assert all(i.file == FILE and i.fix for i in found)
