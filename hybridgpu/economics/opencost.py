"""OpenCost on a cluster, priced with the stack's GPU-hour prices: the Helm values (pure).

Chart: ``opencost`` 2.5.17 (app 1.120.1) from ``https://opencost.github.io/opencost-helm-chart``
(opencost/opencost-helm-chart ``charts/opencost/Chart.yaml``, ``values.yaml`` and
``templates/configmap-custom-pricing.yaml``, commit 725bb939, read 2026-11-24).

What the values say, and why:

* **Prices.** ``opencost.customPricing`` makes the chart write a ConfigMap whose keys are
  ``costModel``'s (every value quoted) plus ``provider``, and point OpenCost at it
  (``CONFIG_PATH``, ``PRICING_CONFIGMAP_NAME`` in ``templates/deployment.yaml``).

  - On-prem (``provider: custom``): ``GPU`` is the owned cost per GPU-hour of capacity from the
    TCO model, the same number ``hybridgpu cost report`` prints for the on-prem capacity line
    (:func:`onprem_gpu_usd_per_hour`: hardware amortization + operations + network + facility +
    idle power x PUE, per owned GPU-hour; GPU-weighted when the inventory has several models).
    ``CPU``, ``RAM``, ``storage`` and egress are 0, because ``serverUsdPerGpu`` already includes
    the whole server: pricing its cores and memory again would count them twice. OpenCost's
    custom provider has one GPU price for every node ("TODO: support multiple custom gpu types"),
    and prices a node's GPUs only when the node carries ``gpuLabel`` (opencost/opencost
    ``pkg/cloud/provider/customprovider.go`` ``NodePricing``, ``DownloadPricingData``,
    ``customProviderKey.GPUType``; ``pkg/cloud/models/models.go`` ``CustomPricing`` for the key
    spellings; v1.112.0-9, 5f653330): ``gpuLabel`` is ``nvidia.com/gpu.present``, which GPU feature
    discovery puts on every GPU node. With several GPU models on-prem, the one price is their
    GPU-weighted mean, which ``hybridgpu cost report`` prints as the owned GPU-hour price.
  - EKS (``provider: aws``): OpenCost's AWS provider prices each node from the AWS price list by
    its instance type and region, and as spot when the node has ``karpenter.sh/capacity-type:
    spot`` (``pkg/cloud/aws/provider.go`` ``getUsageType``: ``models.KarpenterCapacityTypeLabel``,
    and ``eks.amazonaws.com/capacityType: SPOT`` for managed node groups), with spot prices from
    the spot data feed when one is configured. Karpenter sets that label on every node it
    launches, so spot, reserved and on-demand nodes are told apart without labels of ours.
    ``GPU`` is the stack's On-Demand price per GPU-hour, which OpenCost uses only for a node it
    finds no price for. Reserved capacity is billed at the list price unless OpenCost's cloud
    cost integration reads the CUR; ``hybridgpu cost showback`` prices it at the report's
    ``reservedCapacityOption`` rate.
* **Prometheus.** The chart queries ``http://prometheus-server.prometheus-system:80`` by
  default (``opencost.prometheus.internal``), which hybridgpu does not install. Without
  ``showback.prometheusUrl``, OpenCost's collector data source is turned on
  (``opencost.exporter.collectorDataSource.enabled``: "collects cluster data without a
  dependency on Prometheus"; 15 daily windows kept), so it works on a new cluster. With a URL,
  the chart's external Prometheus is used instead.
* **Scheduling.** The chart's Deployment takes ``opencost.tolerations`` / ``nodeSelector`` /
  ``affinity`` (defaults ``[]``, ``{}``, ``{}``). It gets the controllers' tolerations
  (:func:`hybridgpu.render.charts.controller_tolerations`), so it runs on the system nodes (EKS's
  system node group is tainted ``CriticalAddonsOnly``) and never on a GPU node.
"""

from __future__ import annotations

from typing import Any, Literal

from hybridgpu.config.economics import ShowbackConfig
from hybridgpu.economics.showback import ShowbackPrices
from hybridgpu.k8s import CAPACITY_TYPE_LABEL, GPU_PRESENT_LABEL
from hybridgpu.render.charts import controller_tolerations

__all__ = [
    "OPENCOST_CHART",
    "OPENCOST_CHART_VERSION",
    "OPENCOST_REPO",
    "OpenCostPriceError",
    "eks_gpu_usd_per_hour",
    "onprem_gpu_usd_per_hour",
    "opencost_values",
]

#: Helm chart name and repository (opencost/opencost-helm-chart README).
OPENCOST_CHART = "opencost"
OPENCOST_REPO = "https://opencost.github.io/opencost-helm-chart"
#: Pinned chart version (``charts/opencost/Chart.yaml`` at 725bb939, 2026-04-28; appVersion 1.120.1).
OPENCOST_CHART_VERSION = "2.5.17"
#: Name of the pricing ConfigMap the chart creates (its default ``customPricing.configmapName``).
PRICING_CONFIGMAP = "custom-pricing-model"


class OpenCostPriceError(ValueError):
    """The stack's cost report has no price for the GPUs of a cluster OpenCost would run on."""


def onprem_gpu_usd_per_hour(report: Any) -> float:
    """The owned cost per GPU-hour of capacity OpenCost gets on-prem (USD/GPU-hour).

    The cost report's on-prem capacity lines' ``usd_per_gpu_hour`` (the TCO model's fixed cost of
    an owned GPU-hour, :attr:`hybridgpu.economics.costmodel.OnPremCostModel.fixed_usd_per_gpu_hour`),
    GPU-weighted over the inventory's GPU models: with one model, exactly the figure
    ``hybridgpu cost report`` prints in its ``USD/GPU-h`` column.

    Raises:
        OpenCostPriceError: the report prices no on-prem GPUs (no inventory, or no cost data for its models).
    """
    price = ShowbackPrices.from_report(report).usd_per_gpu_hour.get("owned")
    if price is None:
        raise OpenCostPriceError(f"stack {report.stack}: the cost report prices no on-prem GPUs ({'; '.join(report.notes) or 'no on-prem capacity'})")
    return float(price)


def eks_gpu_usd_per_hour(report: Any) -> float:
    """The On-Demand USD per GPU-hour of the stack's cheapest priced NodePool instance type (OpenCost's fallback GPU price on EKS).

    Raises:
        OpenCostPriceError: no NodePool of the stack is priced.
    """
    rates = [line for line in report.capacity if line.kind != "onprem" and line.instance_type]
    if not rates:
        raise OpenCostPriceError(f"stack {report.stack}: the cost report prices no NodePool ({'; '.join(report.notes) or 'no NodePools'})")
    data = report.priced_with
    return min(data.on_demand_usd_per_gpu_hour(line.instance_type) if data is not None else line.usd_per_gpu_hour for line in rates)


def _price(value: float) -> str:
    return repr(float(value))


def opencost_values(showback: ShowbackConfig, side: Literal["onprem", "eks"], cluster_name: str, gpu_usd_per_hour: float | None) -> dict[str, Any]:
    """Helm values of the ``opencost`` chart for one cluster.

    Args:
        showback: the stack's ``hybridgpu:economics.showback``.
        side: ``onprem`` (custom provider, TCO price) or ``eks`` (AWS provider).
        cluster_name: the cluster's name (OpenCost's ``clusterName`` and default cluster ID).
        gpu_usd_per_hour: :func:`onprem_gpu_usd_per_hour` on-prem, :func:`eks_gpu_usd_per_hour`
            on EKS (USD/GPU-hour); None renders the scheduling values only (for the feasibility check).

    Returns:
        The values (see the module docstring for each key's source).
    """
    opencost: dict[str, Any] = {
        "exporter": {"defaultClusterId": cluster_name},
        "tolerations": controller_tolerations(),
    }
    if showback.prometheus_url is None:
        opencost["exporter"]["collectorDataSource"] = {"enabled": True}
    else:
        opencost["prometheus"] = {"internal": {"enabled": False}, "external": {"enabled": True, "url": showback.prometheus_url}}
    if gpu_usd_per_hour is not None:
        if side == "onprem":
            cost_model = {
                "description": "hybridgpu: owned GPU-hour from the TCO model (hybridgpu cost report); CPU, RAM and storage are in the server price",
                "CPU": "0", "spotCPU": "0", "RAM": "0", "spotRAM": "0", "GPU": _price(gpu_usd_per_hour), "storage": "0",
                "zoneNetworkEgress": "0", "regionNetworkEgress": "0", "internetNetworkEgress": "0",
                # the custom provider prices a node's GPUs only when the node has gpuLabel (customProviderKey.GPUType)
                "gpuLabel": GPU_PRESENT_LABEL, "gpuLabelValue": "true",
            }
            provider = "custom"
        else:
            cost_model = {
                "description": "hybridgpu: AWS list prices by karpenter.sh/capacity-type; GPU is the fallback On-Demand USD per GPU-hour",
                "GPU": _price(gpu_usd_per_hour),
                "spotLabel": CAPACITY_TYPE_LABEL,
                "spotLabelValue": "spot",
            }
            provider = "aws"
        opencost["customPricing"] = {"enabled": True, "createConfigmap": True, "configmapName": PRICING_CONFIGMAP, "provider": provider, "costModel": cost_model}
    return {"clusterName": cluster_name, "opencost": opencost}
