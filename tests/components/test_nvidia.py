"""NVIDIA layer wiring under mocks: releases, ConfigMaps, NodePool labels/limits, NodeOverlays."""

from __future__ import annotations

import yaml

from hybridgpu.shell.preview import run_preview
from tests.helpers import one_record as _one
from tests.helpers.scratch import example_stack, write_stack


def test_gpu_operator_release_wired_to_our_configmaps(previews):
    result = previews["prod"]
    layer = _one(result, "hybridgpu:index:NvidiaLayer")
    release = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "gpu-operator"][0]
    assert release.parent == layer.urn
    assert release.inputs["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia"
    values = release.inputs["values"]
    assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False
    assert values["mig"]["strategy"] == "mixed"
    assert values["migManager"]["config"]["name"] == "hybridgpu-mig-parted-config"
    configmaps = {r.inputs["metadata"]["name"]: r for r in result.of_type("kubernetes:core/v1:ConfigMap")}
    assert set(configmaps) == {"hybridgpu-mig-parted-config", "hybridgpu-device-plugin-config"}
    for cm in configmaps.values():
        assert cm.urn in release.dependencies
    parted = yaml.safe_load(configmaps["hybridgpu-mig-parted-config"].inputs["data"]["config.yaml"])
    entries = parted["mig-configs"]["h100-inference"]
    assert [e["devices"] for e in entries] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert entries[0]["mig-devices"] == {"1g.10gb": 7}
    ns = _one(result, "kubernetes:core/v1:Namespace", "nvidia").inputs
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_nodepools_carry_layer_labels_and_mig_limits(previews):
    pools = {r.inputs["metadata"]["name"]: r.inputs for r in previews["prod"].of_type("kubernetes:karpenter.sh/v1:NodePool")}
    mig = pools["h100-mig"]
    assert mig["spec"]["template"]["metadata"]["labels"]["nvidia.com/mig.config"] == "h100-inference"
    # 8 GPUs: 4 x 7 + 4 x 4 = 44 1g.10gb and 4 3g.40gb per node; limits keep the 8-GPU cap.
    assert mig["spec"]["limits"] == {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "44", "nvidia.com/mig-3g.40gb": "4"}
    assert "nvidia.com/mig.config" not in pools["h100-spot"]["spec"]["template"]["metadata"]["labels"]
    dev_pool = _one(previews["dev"], "kubernetes:karpenter.sh/v1:NodePool").inputs
    assert dev_pool["spec"]["template"]["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "shared-4"
    assert dev_pool["spec"]["limits"] == {"nvidia.com/gpu": "8"}  # no overlays in dev: EC2 GPU count binds


def test_node_overlay_only_with_feature_gate(previews):
    overlay = _one(previews["prod"], "kubernetes:karpenter.sh/v1alpha1:NodeOverlay").inputs
    assert overlay["spec"]["capacity"] == {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 44, "nvidia.com/mig-3g.40gb": 4}
    release = [r for r in previews["prod"].of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "karpenter"][0]
    assert release.inputs["values"]["settings"]["featureGates"]["nodeOverlay"] is True
    assert not previews["dev"].of_type("kubernetes:karpenter.sh/v1alpha1:NodeOverlay")


def test_idle_alert_only_when_enabled(previews):
    rule = _one(previews["prod"], "kubernetes:monitoring.coreos.com/v1:PrometheusRule").inputs
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in yaml.safe_dump(rule["spec"])  # MIG instances report it (tests/render/test_idle_alert.py)
    assert not previews["dev"].of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")


def test_device_plugin_install_and_no_nvidia_section(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:nvidia"]["install"] = "device-plugin"
    write_stack(project, "dp", data)
    result = run_preview("dp", project)
    names = sorted(r.inputs["name"] for r in result.of_type("kubernetes:helm.sh/v3:Release"))
    assert names == ["gpu-feature-discovery", "karpenter", "karpenter-crd", "nvidia-device-plugin"]
    assert not any(r.inputs["metadata"]["name"] == "hybridgpu-mig-parted-config" for r in result.of_type("kubernetes:core/v1:ConfigMap"))

    del data["config"]["hybridgpu:nvidia"]
    write_stack(project, "bare", data)
    bare = run_preview("bare", project)
    assert not [r for r in bare.records if r.type.startswith("hybridgpu:nvidia") or r.type.startswith("kubernetes:core/")]
    pool = _one(bare, "kubernetes:karpenter.sh/v1:NodePool").inputs
    assert not any(k.startswith("nvidia.com/") for k in pool["spec"]["template"]["metadata"]["labels"])
