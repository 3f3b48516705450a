"""NVIDIA layer renderers (hybridgpu.render.nvidia): shapes, upstream rules, schema validation, golden YAML.

Golden files live in ``tests/golden/nvidia/`` (the manifests and Helm values of
:data:`REPRESENTATIVE`). Regenerate them after an intended change with
``HYBRIDGPU_UPDATE_GOLDEN=1 pytest tests/render/test_nvidia_render.py`` and review the diff.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from hybridgpu.config.nvidia import NvidiaConfig, nvidia_issues
from hybridgpu.mig import mig_gpu
from hybridgpu.render.nvidia import (
    DEVICE_PLUGIN_CONFIGMAP,
    MIG_PARTED_CONFIGMAP,
    dcgm_alert_rule,
    device_plugin_config,
    device_plugin_configmap,
    device_plugin_values,
    gfd_values,
    gpu_operator_values,
    mig_parted_config,
    mig_parted_configmap,
    node_capacity,
    node_overlays,
    nodepool_labels,
)
from hybridgpu.schemas import validate_core, validate_karpenter
from tests import helpers

GOLDEN = helpers.GOLDEN / "nvidia"

#: A representative section: a whole-node H100 layout, a per-GPU A100 layout with MIG
#: time-slicing, a time-sliced L4 pool.
REPRESENTATIVE: dict[str, Any] = {
    "migStrategy": "mixed",
    "migLayouts": [
        {"name": "h100-balanced", "gpuModel": "H100-80GB", "layout": {"3g.40gb": 1, "2g.20gb": 2}},
        {
            "name": "a100-split",
            "gpuModel": "A100-40GB",
            "devices": [{"gpus": [0, 1, 2, 3], "layout": {"1g.5gb": 7}}, {"gpus": [4, 5, 6, 7], "migEnabled": False}],
        },
    ],
    "timeSlicing": [
        {"name": "shared-1g", "resources": [{"name": "nvidia.com/mig-1g.5gb", "replicas": 2}]},
        {"name": "inference-4", "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]},
    ],
    "nodePools": {
        "gpu-h100-mig": {"migConfig": "h100-balanced"},
        "gpu-a100-mixed": {"migConfig": "a100-split", "deviceConfig": "shared-1g"},
        "gpu-l4-shared": {"deviceConfig": "inference-4"},
    },
    "dcgm": {"serviceMonitor": True, "idleAlert": {"enabled": True}},
}
POOLS = {
    "gpu-h100-mig": ("p5.48xlarge", 8),
    "gpu-a100-mixed": [("p4d.24xlarge", 8)],
    "gpu-l4-shared": [("g6.xlarge", 1), ("g6.12xlarge", 4)],
    "gpu-plain": [("g6e.xlarge", 1)],
}


@pytest.fixture(scope="module")
def nv() -> NvidiaConfig:
    n = NvidiaConfig.model_validate(REPRESENTATIVE)
    assert nvidia_issues(n, "test", node_pool_names=set(POOLS)) == []
    return n


def cfg(**data: Any) -> NvidiaConfig:
    return NvidiaConfig.model_validate(data)


# --------------------------------------------------------------------------- upstream rule mirrors


def assert_mig_parted_v1(doc: dict[str, Any]) -> None:
    """The rules of NVIDIA/mig-parted v0.15.0 api/spec/v1/spec.go UnmarshalJSON."""
    assert set(doc) == {"version", "mig-configs"} and doc["version"] == "v1"
    assert doc["mig-configs"], "at least one entry in 'mig-configs' is required"
    for name, entries in doc["mig-configs"].items():
        assert entries, f"at least one entry in {name!r} is required"
        for entry in entries:
            assert set(entry) <= {"device-filter", "devices", "mig-enabled", "mig-devices"}, entry
            assert {"devices", "mig-enabled"} <= set(entry)
            devices = entry["devices"]
            assert devices == "all" or (isinstance(devices, list) and all(isinstance(d, int) for d in devices))
            if entry["mig-enabled"]:
                assert entry.get("mig-devices") is not None, "mig-devices required when mig-enabled"
            else:
                assert not entry.get("mig-devices"), "MIG devices included when 'mig-enabled' is false"
            if "device-filter" in entry:
                df = entry["device-filter"]
                assert isinstance(df, str) or all(isinstance(x, str) for x in df)


def assert_device_plugin_v1(doc: dict[str, Any]) -> None:
    """The rules of NVIDIA/k8s-device-plugin v0.20.0 api/config/v1 (version, flags, sharing, replicas >= 2)."""
    assert doc["version"] == "v1"
    assert set(doc) <= {"version", "flags", "resources", "sharing", "imex"}
    assert doc["flags"]["migStrategy"] in ("none", "single", "mixed")
    for kind, block in doc.get("sharing", {}).items():
        assert kind in ("timeSlicing", "mps")
        assert set(block) <= {"renameByDefault", "failRequestsGreaterThanOne", "resources"}
        assert block["resources"], "no resources specified"
        for res in block["resources"]:
            assert set(res) <= {"name", "rename", "devices", "replicas"} and res["replicas"] >= 2


# --------------------------------------------------------------------------- mig-parted


def test_mig_parted_config_shape(nv):
    doc = mig_parted_config(nv)
    assert_mig_parted_v1(doc)
    configs = doc["mig-configs"]
    assert list(configs) == ["all-disabled", "h100-balanced", "a100-split"]
    assert configs["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert configs["h100-balanced"] == [
        {"device-filter": list(mig_gpu("H100-80GB").device_filter), "devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 1, "2g.20gb": 2}}
    ]
    enabled, disabled = configs["a100-split"]
    assert enabled["devices"] == [0, 1, 2, 3] and enabled["mig-devices"] == {"1g.5gb": 7}
    assert disabled == {"device-filter": ["0x20B010DE", "0x20B110DE", "0x20F110DE"], "devices": [4, 5, 6, 7], "mig-enabled": False}


def test_mig_parted_config_without_layouts_is_all_disabled_only():
    doc = mig_parted_config(NvidiaConfig())
    assert_mig_parted_v1(doc)
    assert list(doc["mig-configs"]) == ["all-disabled"]


def test_mig_parted_configmap_has_config_yaml_and_validates(nv):
    cm = mig_parted_configmap(nv)
    assert cm["metadata"] == {"name": MIG_PARTED_CONFIGMAP, "namespace": "gpu-operator", "labels": {"app.kubernetes.io/managed-by": "hybridgpu"}}
    assert list(cm["data"]) == ["config.yaml"]
    text = cm["data"]["config.yaml"]
    assert "&id" not in text and "*id" not in text  # no YAML anchors/aliases
    assert yaml.safe_load(text) == mig_parted_config(nv)
    finding = validate_core([cm], "1.35")[0]
    assert finding.ok, finding.errors


# --------------------------------------------------------------------------- device plugin


def test_device_plugin_config_time_slicing(nv):
    doc = device_plugin_config(nv.sharing_config("shared-1g"), "mixed")
    assert_device_plugin_v1(doc)
    assert doc == {
        "version": "v1",
        "flags": {"migStrategy": "mixed"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/mig-1g.5gb", "replicas": 2}],
            }
        },
    }
    assert device_plugin_config(None, "single") == {"version": "v1", "flags": {"migStrategy": "single"}}


def test_device_plugin_config_mps():
    n = cfg(migStrategy="none", timeSlicing=[{"name": "mps", "sharing": "mps", "renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}])
    doc = device_plugin_config(n.time_slicing[0], n.mig_strategy)
    assert_device_plugin_v1(doc)
    assert list(doc["sharing"]) == ["mps"] and doc["sharing"]["mps"]["renameByDefault"] is True


def test_device_plugin_configmap_keys_and_validation(nv):
    cm = device_plugin_configmap(nv)
    assert cm["metadata"]["name"] == DEVICE_PLUGIN_CONFIGMAP and cm["metadata"]["namespace"] == "gpu-operator"
    assert list(cm["data"]) == ["default", "shared-1g", "inference-4"]
    for text in cm["data"].values():
        assert_device_plugin_v1(yaml.safe_load(text))
    assert "sharing" not in yaml.safe_load(cm["data"]["default"])
    finding = validate_core([cm, mig_parted_configmap(nv)], "1.35")
    assert all(f.ok for f in finding), [f.errors for f in finding]


# --------------------------------------------------------------------------- Helm values


def test_gpu_operator_values(nv):
    values = gpu_operator_values(nv)
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}
    assert values["mig"] == {"strategy": "mixed"}
    assert values["migManager"] == {"enabled": True, "config": {"name": MIG_PARTED_CONFIGMAP, "create": False, "default": "all-disabled"}}
    assert values["devicePlugin"]["config"] == {"name": DEVICE_PLUGIN_CONFIGMAP, "create": False, "default": "default"}
    # the idle alert is on in REPRESENTATIVE: dcgm-exporter exports the pods' team/project labels (tests/render/test_idle_alert.py)
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": True}, "enablePodLabels": True, "podLabelAllowlistRegex": ["^team$", "^project$"]}


def test_gpu_operator_values_variants():
    values = gpu_operator_values(cfg(driver="operator", toolkit="operator", migStrategy="single", dcgm={"serviceMonitor": False}))
    assert values["driver"]["enabled"] and values["toolkit"]["enabled"] and values["mig"]["strategy"] == "single"
    assert values["migManager"] == {"enabled": False}
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": False}}
    assert gpu_operator_values(cfg(dcgm={"enabled": False}))["dcgmExporter"] == {"enabled": False, "serviceMonitor": {"enabled": False}}


def test_device_plugin_and_gfd_values(nv):
    dp, gfd = device_plugin_values(nv), gfd_values(nv)
    for values in (dp, gfd):
        assert values["config"] == {"name": DEVICE_PLUGIN_CONFIGMAP, "default": "default"}
        assert "map" not in values["config"]  # the chart refuses config.name together with config.map
        assert values["migStrategy"] == "mixed"
    assert dp["devicePlugin"] == {"enabled": True} and dp["gfd"] == {"enabled": False}
    assert gfd["devicePlugin"] == {"enabled": False} and gfd["gfd"] == {"enabled": True}


# --------------------------------------------------------------------------- monitoring


def test_dcgm_alert_rule(nv):
    rule = dcgm_alert_rule(nv)
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["namespace"] == "gpu-operator"
    (group,) = rule["spec"]["groups"]
    (alert,) = group["rules"]
    assert alert["alert"] == "HybridGpuIdle" and alert["labels"] == {"severity": "warning"}
    expr = alert["expr"]
    # DCGM_FI_PROF_GR_ENGINE_ACTIVE (a 0..1 ratio MIG instances report), not DCGM_FI_DEV_GPU_UTIL (percent, none under MIG)
    assert "avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[60m])" in expr and ") < 0.05\n" in expr
    assert '"node", "", "hostname", "Hostname"' in expr and "by (node, gpu, UUID, modelName, GPU_I_PROFILE, GPU_I_ID, namespace, pod, team, project)" in expr
    assert "{{ $labels.node }}" in alert["annotations"]["summary"]


def test_dcgm_alert_rule_threshold_window_and_off_switches():
    rule = dcgm_alert_rule(cfg(dcgm={"idleAlert": {"enabled": True, "utilizationBelowPercent": 12.5, "forMinutes": 30}}))
    expr = rule["spec"]["groups"][0]["rules"][0]["expr"]
    assert "[30m]" in expr and "< 0.125" in expr and "offset 30m" in expr
    assert dcgm_alert_rule(cfg(dcgm={"enabled": False, "idleAlert": {"enabled": True}})) is None
    assert dcgm_alert_rule(cfg()) is None  # off by default: it needs the Prometheus Operator CRDs
    assert dcgm_alert_rule(cfg(dcgm={"idleAlert": {"enabled": False}})) is None


# --------------------------------------------------------------------------- Karpenter


def test_nodepool_labels(nv):
    assert nodepool_labels(nv, "gpu-h100-mig") == {"nvidia.com/mig.config": "h100-balanced"}
    assert nodepool_labels(nv, "gpu-a100-mixed") == {"nvidia.com/mig.config": "a100-split", "nvidia.com/device-plugin.config": "shared-1g"}
    assert nodepool_labels(nv, "gpu-l4-shared") == {"nvidia.com/device-plugin.config": "inference-4"}
    assert nodepool_labels(nv, "gpu-plain") == {}


def test_node_capacity_mixed(nv):
    assert node_capacity(nv, "gpu-h100-mig", 8) == {"nvidia.com/gpu": 0, "nvidia.com/mig-3g.40gb": 8, "nvidia.com/mig-2g.20gb": 16}
    # GPUs 0-3: 7 x 1g.5gb time-sliced x2; GPUs 4-7 whole
    assert node_capacity(nv, "gpu-a100-mixed", 8) == {"nvidia.com/gpu": 4, "nvidia.com/mig-1g.5gb": 56}
    # a 2-GPU node only has GPUs 0-1 of the per-GPU layout
    assert node_capacity(nv, "gpu-a100-mixed", 2) == {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.5gb": 28}
    assert node_capacity(nv, "gpu-l4-shared", 4) == {"nvidia.com/gpu": 16}
    assert node_capacity(nv, "gpu-plain", 1) == {"nvidia.com/gpu": 1}


def test_node_capacity_single_rename_and_none():
    single = cfg(
        migStrategy="single",
        migLayouts=[{"name": "sevens", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}}],
        timeSlicing=[{"name": "ts", "renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}],
        nodePools={"a": {"migConfig": "sevens"}, "b": {"migConfig": "sevens", "deviceConfig": "ts"}},
    )
    assert node_capacity(single, "a", 8) == {"nvidia.com/gpu": 56}
    assert node_capacity(single, "b", 8) == {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 112}
    none = cfg(migStrategy="none", migLayouts=[{"name": "sevens", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}}], nodePools={"a": {"migConfig": "sevens"}})
    assert node_capacity(none, "a", 8) == {"nvidia.com/gpu": 8}


def test_node_capacity_plus_me_resource_name():
    n = cfg(migLayouts=[{"name": "me", "gpuModel": "H100-80GB", "layout": {"1g.10gb+me": 1, "1g.10gb": 6}}], nodePools={"a": {"migConfig": "me"}})
    assert node_capacity(n, "a", 1) == {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb.me": 1, "nvidia.com/mig-1g.10gb": 6}


def test_node_overlays(nv):
    overlays = node_overlays(nv, POOLS)
    names = [o["metadata"]["name"] for o in overlays]
    assert names == [
        "hybridgpu-gpu-a100-mixed-p4d-24xlarge",
        "hybridgpu-gpu-h100-mig-p5-48xlarge",
        "hybridgpu-gpu-l4-shared-g6-12xlarge",
        "hybridgpu-gpu-l4-shared-g6-xlarge",
    ]  # gpu-plain has no NVIDIA settings
    h100 = overlays[1]
    assert h100["apiVersion"] == "karpenter.sh/v1alpha1" and h100["kind"] == "NodeOverlay"
    assert h100["spec"]["requirements"] == [
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-h100-mig"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
    ]
    assert h100["spec"]["capacity"] == {"nvidia.com/gpu": 0, "nvidia.com/mig-2g.20gb": 16, "nvidia.com/mig-3g.40gb": 8}
    assert overlays[3]["spec"]["capacity"] == {"nvidia.com/gpu": 4}
    assert not set(h100["spec"]) & {"price", "priceAdjustment", "weight"}


def test_node_overlays_skip_pools_whose_capacity_is_unchanged():
    n = cfg(migStrategy="none", migLayouts=[{"name": "sevens", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}}], nodePools={"a": {"migConfig": "sevens"}})
    assert node_overlays(n, {"a": ("p5.48xlarge", 8)}) == []


def test_node_overlays_validate_with_karpenter_schema(nv):
    overlays = node_overlays(nv, POOLS)
    findings = validate_karpenter(overlays)
    assert [f.ok for f in findings] == [True] * len(overlays), [f.errors for f in findings]


def test_node_overlay_schema_check_can_fail(nv):
    """The schema check above is not vacuous: a misspelled field fails."""
    broken = node_overlays(nv, POOLS)[0]
    broken = {**broken, "spec": {**broken["spec"], "capacityy": broken["spec"]["capacity"]}}
    assert not validate_karpenter([broken])[0].ok


# --------------------------------------------------------------------------- golden files


class _LiteralDumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (embedded config files) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _str)


def _dump_all(docs: list[Any]) -> str:
    return yaml.dump_all(docs, Dumper=_LiteralDumper, sort_keys=True, default_flow_style=False, width=120, explicit_start=True)


def _golden_outputs(nv: NvidiaConfig) -> dict[str, str]:
    manifests = [mig_parted_configmap(nv), device_plugin_configmap(nv), dcgm_alert_rule(nv), *node_overlays(nv, POOLS)]
    return {
        "manifests.yaml": _dump_all(manifests),
        "gpu-operator-values.yaml": _dump_all([gpu_operator_values(nv)]),
        "device-plugin-values.yaml": _dump_all([device_plugin_values(nv)]),
        "gfd-values.yaml": _dump_all([gfd_values(nv)]),
    }


@pytest.mark.parametrize("name", ["manifests.yaml", "gpu-operator-values.yaml", "device-plugin-values.yaml", "gfd-values.yaml"])
def test_golden(nv, name, assert_golden):
    assert_golden(_golden_outputs(nv)[name], GOLDEN / name, "NVIDIA YAML")


def test_golden_manifests_round_trip_and_validate(nv):
    docs = list(yaml.safe_load_all((GOLDEN / "manifests.yaml").read_text()))
    assert [d["kind"] for d in docs] == ["ConfigMap", "ConfigMap", "PrometheusRule"] + ["NodeOverlay"] * 4
    core = [d for d in docs if d["apiVersion"] == "v1"]
    assert all(f.ok for f in validate_core(core, "1.35"))
    assert all(f.ok for f in validate_karpenter([d for d in docs if d["kind"] == "NodeOverlay"]))
    assert yaml.safe_load(docs[0]["data"]["config.yaml"]) == mig_parted_config(nv)


def test_extra_limits_keep_time_sliced_pools_at_physical_gpus():
    from hybridgpu.render.nvidia import nodepool_extra_limits

    shared = cfg(migStrategy="none", timeSlicing=[{"name": "s4", "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}],
                 nodePools={"p": {"deviceConfig": "s4"}})
    # 8 physical GPUs of 1- and 4-GPU instances -> 32 time-sliced shares.
    assert nodepool_extra_limits(shared, "p", 8, [1, 4]) == {"nvidia.com/gpu": "32"}
    mig = cfg(migStrategy="mixed", migLayouts=[{"name": "m", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}}],
              nodePools={"p": {"migConfig": "m"}})
    assert nodepool_extra_limits(mig, "p", 16, [8]) == {"nvidia.com/mig-1g.10gb": "112"}
    assert nodepool_extra_limits(mig, "other", 16, [8]) == {}


def test_prometheus_labels_reach_rule_and_service_monitor():
    n = cfg(dcgm={"serviceMonitor": True, "idleAlert": {"enabled": True}, "prometheusLabels": {"release": "kps"}})
    assert dcgm_alert_rule(n)["metadata"]["labels"]["release"] == "kps"
    assert gpu_operator_values(n)["dcgmExporter"]["serviceMonitor"]["additionalLabels"] == {"release": "kps"}
