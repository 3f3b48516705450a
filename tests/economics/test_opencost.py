"""OpenCost's chart values (hybridgpu.economics.opencost): the price functions, Prometheus, where it runs (component tests: tests/components/test_opencost.py).

Upstream read (2026-11-24): opencost/opencost-helm-chart ``charts/opencost`` 2.5.17 (725bb939:
``values.yaml``, ``templates/configmap-custom-pricing.yaml``, ``templates/deployment.yaml``) and
opencost/opencost v1.112.0-9 (5f653330: ``pkg/cloud/provider/customprovider.go``,
``pkg/cloud/aws/provider.go``, ``pkg/cloud/models/models.go``).
"""

from __future__ import annotations


import pytest

from hybridgpu.config.economics import ShowbackConfig
from hybridgpu.economics.costmodel import OnPremCostModel
from hybridgpu.economics.opencost import OpenCostPriceError, eks_gpu_usd_per_hour, onprem_gpu_usd_per_hour, opencost_values
from hybridgpu.economics.report import CapacityLine, StackCostReport
from hybridgpu.render.charts import CHARTS, chart_placements, helm_merge
from hybridgpu.render.scheduling import NodeGroup, placement_problems



def _report(lines):
    return StackCostReport(stack="t", utilizations=[0.5], capacity=lines)


def _line(kind, gpus, price, name="x", it=None):
    return CapacityLine(name, kind, gpus, "H100-80GB", it, "owned" if kind == "onprem" else kind, price, kind in ("onprem", "reserved"), {}, {})


def test_single_model_fleet_gets_exactly_the_printed_capacity_line():
    """With one GPU model, OpenCost's price is that line's `USD/GPU-h` (the TCO model's fixed cost of an owned GPU-hour), to the last bit."""
    model = OnPremCostModel(40000, 4, 3906.25, 1000, 1500, 0.7, 0.3, 1.3, 0.12)
    report = _report([_line("onprem", 64, model.fixed_usd_per_gpu_hour)])
    assert onprem_gpu_usd_per_hour(report) == model.fixed_usd_per_gpu_hour
    values = opencost_values(ShowbackConfig(opencost=True), "onprem", "site", onprem_gpu_usd_per_hour(report))
    assert float(values["opencost"]["customPricing"]["costModel"]["GPU"]) == model.fixed_usd_per_gpu_hour


def test_no_onprem_or_no_pool_price_is_an_error():
    with pytest.raises(OpenCostPriceError, match="prices no on-prem GPUs"):
        onprem_gpu_usd_per_hour(_report([_line("spot", 8, 2.0, it="p5.48xlarge")]))
    with pytest.raises(OpenCostPriceError, match="prices no NodePool"):
        eks_gpu_usd_per_hour(_report([_line("onprem", 8, 2.0)]))


def test_external_prometheus_replaces_the_collector():
    values = opencost_values(ShowbackConfig(opencost=True, prometheusUrl="http://kps-prometheus.monitoring:9090"), "eks", "c", 6.88)
    assert values["opencost"]["prometheus"] == {"internal": {"enabled": False}, "external": {"enabled": True, "url": "http://kps-prometheus.monitoring:9090"}}
    assert "collectorDataSource" not in values["opencost"]["exporter"]


def test_opencost_runs_on_system_nodes_not_on_gpu_nodes():
    """With the chart's defaults (no tolerations) OpenCost would stay Pending on EKS, where every node is tainted; ours tolerate CriticalAddonsOnly only."""
    system = NodeGroup(name="system", labels={"kubernetes.io/os": ("linux",)}, taints=({"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"},), gpu=False, nodes=2)
    gpu = NodeGroup(name="gpu", labels={"kubernetes.io/os": ("linux",)}, taints=({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},), gpu=True, nodes=1)
    (ours,) = chart_placements("opencost", opencost_values(ShowbackConfig(opencost=True), "eks", "c", None), "opencost")
    assert placement_problems(ours, system) == [] and placement_problems(ours, gpu) != []
    (default,) = chart_placements("opencost", helm_merge(CHARTS["opencost"].defaults, {}), "opencost")
    assert placement_problems(default, system) != []
