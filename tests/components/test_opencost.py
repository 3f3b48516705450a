"""The OpenCost component in the example stacks' offline previews: one release per cluster with `showback.opencost`, priced as `hybridgpu cost report` prints.

Upstream read (2026-11-24): opencost/opencost-helm-chart ``charts/opencost`` 2.5.17 (725bb939) and
opencost/opencost v1.112.0-9 (5f653330: ``pkg/cloud/provider/customprovider.go``, ``pkg/cloud/aws/provider.go``).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hybridgpu.cli.main import app
from hybridgpu.economics.opencost import eks_gpu_usd_per_hour
from hybridgpu.k8s import CAPACITY_TYPE_LABEL, GPU_PRESENT_LABEL
from hybridgpu.stack.load import load_stack

runner = CliRunner()


def _opencost(result):
    releases = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "opencost"]
    return releases




def test_onprem_opencost_gpu_price_equals_the_price_cost_report_prints(previews, root):
    """The on-prem GPU price in OpenCost's pricing ConfigMap is the owned GPU-hour `hybridgpu cost report onprem` prints (text and JSON)."""
    (release,) = _opencost(previews["onprem"])
    model = release.inputs["values"]["opencost"]["customPricing"]
    assert model["provider"] == "custom" and model["createConfigmap"] is True
    gpu = float(model["costModel"]["GPU"])
    out = runner.invoke(app, ["cost", "report", "onprem", "--json", "--root", str(root)])
    assert out.exit_code == 0, out.output
    printed = json.loads(out.output)["ownedUsdPerGpuHour"]
    assert gpu == printed
    text = runner.invoke(app, ["cost", "report", "onprem", "--root", str(root)], env={"COLUMNS": "200"})
    assert f"owned GPU-hour (OpenCost's on-prem GPU price, showback's `owned`): {gpu:.4f} USD" in text.output
    # the inventory has two GPU models: one OpenCost price, their GPU-weighted mean of the report's lines
    lines = [c for c in load_stack("onprem", root).report().capacity if c.kind == "onprem"]
    assert len(lines) == 2
    assert gpu == pytest.approx(sum(c.gpus * c.usd_per_gpu_hour for c in lines) / sum(c.gpus for c in lines), rel=1e-12)
    # CPU/RAM/storage are in the server price: priced at 0, and GPUs priced only on nodes with the GPU label
    cost = model["costModel"]
    assert cost["CPU"] == cost["RAM"] == cost["spotCPU"] == cost["spotRAM"] == cost["storage"] == "0"
    assert cost["gpuLabel"] == GPU_PRESENT_LABEL and cost["gpuLabelValue"] == "true"
    assert all(isinstance(v, str) for v in cost.values())  # the chart quotes every value into the ConfigMap


def test_eks_opencost_uses_the_aws_provider_and_karpenter_capacity_type(previews, root):
    """On EKS, OpenCost's AWS provider prices spot nodes by karpenter.sh/capacity-type; GPU is the On-Demand fallback."""
    (release,) = _opencost(previews["prod"])
    values = release.inputs["values"]
    pricing = values["opencost"]["customPricing"]
    assert pricing["provider"] == "aws"
    assert pricing["costModel"]["spotLabel"] == CAPACITY_TYPE_LABEL == "karpenter.sh/capacity-type"
    assert pricing["costModel"]["spotLabelValue"] == "spot"
    report = load_stack("prod", root).report()
    assert float(pricing["costModel"]["GPU"]) == eks_gpu_usd_per_hour(report) == pytest.approx(55.04 / 8)
    assert values["clusterName"] == values["opencost"]["exporter"]["defaultClusterId"] == load_stack("prod", root).config.cloud.cluster.name
    # no Prometheus is installed: OpenCost's own collector
    assert values["opencost"]["exporter"]["collectorDataSource"] == {"enabled": True}
    assert release.inputs["version"] == "2.5.17" and release.inputs["namespace"] == "opencost"


def test_off_creates_nothing(previews):
    """The dev stack leaves `showback.opencost` at its default (false): no OpenCost component, release or namespace."""
    assert _opencost(previews["dev"]) == []
    assert previews["dev"].of_type("hybridgpu:index:OpenCost") == []
    assert len(previews["onprem"].of_type("hybridgpu:index:OpenCost")) == 1


def test_opencost_waits_for_the_cluster_and_lives_in_its_namespace(previews):
    """The release depends on its namespace and on what the cluster needs first (Karpenter on EKS, the CNI on-prem)."""
    for stack in ("prod", "onprem"):
        result = previews[stack]
        (component,) = result.of_type("hybridgpu:index:OpenCost")
        (release,) = _opencost(result)
        (namespace,) = [r for r in result.of_type("kubernetes:core/v1:Namespace") if r.parent == component.urn]
        assert release.parent == component.urn and namespace.urn in release.dependencies
        assert namespace.inputs["metadata"]["name"] == release.inputs["namespace"] == "opencost"
        assert len(release.dependencies) >= 2, release.dependencies
