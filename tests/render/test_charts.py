"""Chart defaults and Helm value merging (hybridgpu/render/charts.py).

The defaults are the pinned charts' values.yaml subsets (sources in the module); the tests pin
the facts issue 14 is about, and Helm's coalescing (helm/helm ``pkg/chart/v2/util/coalesce.go``:
tables merge, everything else, lists included, is replaced; a null removes a default).
"""

from __future__ import annotations

from hybridgpu.k8s import CRITICAL_ADDONS_TAINT, GPU_TAINT
from hybridgpu.render.charts import CHARTS, chart_placements, helm_merge
from hybridgpu.render.scheduling import NodeGroup, placement_problems

SYSTEM = NodeGroup("EKS system", {"hybridgpu.io/role": ("system",), "kubernetes.io/os": ("linux",)}, taints=({"key": CRITICAL_ADDONS_TAINT.key, "value": "true", "effect": "NoSchedule"},))


def test_helm_merge_replaces_lists_merges_maps_and_null_deletes():
    defaults = {"a": {"tolerations": [{"key": "x"}], "nodeSelector": {"os": "linux"}}, "b": 1}
    merged = helm_merge(defaults, {"a": {"tolerations": [{"key": "y"}]}, "b": None})
    assert merged == {"a": {"tolerations": [{"key": "y"}], "nodeSelector": {"os": "linux"}}}
    assert defaults["a"]["tolerations"] == [{"key": "x"}]  # inputs untouched


def test_every_chart_names_its_source():
    for facts in CHARTS.values():
        assert facts.source.repo and facts.source.file and facts.source.version and facts.source.read in ("2026-11-24", "2026-11-27")


def test_chart_defaults_leave_controllers_off_the_system_nodes():
    """The bug of issue 14: with chart defaults only, Kueue, the GPU Operator and NFD's controllers do not fit a CriticalAddonsOnly node."""
    for chart in ("kueue", "gpu-operator"):
        controllers = [p for p in chart_placements(chart, {}, chart) if p.kind != "DaemonSet"]
        assert controllers
        for pod in controllers:
            assert placement_problems(pod, SYSTEM), pod.name
    karpenter = chart_placements("karpenter", {}, "karpenter")[0]
    assert placement_problems(karpenter, SYSTEM) == []  # Karpenter's chart tolerates it by default


def test_operands_tolerate_the_gpu_taint_by_default():
    gpu = NodeGroup("gpu", {"nvidia.com/gpu.deploy." + s: ("true",) for s in ("device-plugin", "dcgm-exporter", "gpu-feature-discovery", "operator-validator")}, taints=(GPU_TAINT._asdict(),), gpu=True)
    operands = [p for p in chart_placements("gpu-operator", {"driver": {"enabled": False}, "toolkit": {"enabled": False}, "migManager": {"enabled": False}}, "gpu-operator") if p.gpu_agent and "nfd" not in p.name]
    assert {p.name for p in operands} == {
        "gpu-operator/nvidia-device-plugin-daemonset",
        "gpu-operator/nvidia-dcgm-exporter-daemonset",
        "gpu-operator/nvidia-gpu-feature-discovery-daemonset",
        "gpu-operator/nvidia-operator-validator-daemonset",
    }
    for pod in operands:
        assert placement_problems(pod, gpu) == [], pod.name


def test_device_plugin_charts_nfd_worker_does_not_tolerate_our_gpu_taint():
    """NVIDIA/k8s-device-plugin v0.20.0 values.yaml: nfd.worker tolerates nvidia.com/gpu=present (Equal) only."""
    worker = next(p for p in chart_placements("nvidia-device-plugin", {"gfd": {"enabled": True}}, "gfd") if p.name.endswith("nfd-worker"))
    assert placement_problems(worker, NodeGroup("gpu", {}, taints=(GPU_TAINT._asdict(),), gpu=True)) == ["no toleration for taint nvidia.com/gpu=true:NoSchedule"]


def test_subchart_follows_its_condition():
    names = {p.name for p in chart_placements("gpu-operator", {"nfd": {"enabled": False}}, "gpu-operator")}
    assert not any("node-feature-discovery" in n for n in names)
    assert not any("nfd" in p.name for p in chart_placements("nvidia-device-plugin", {}, "nvidia-device-plugin"))
