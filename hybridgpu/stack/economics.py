"""The economics of a stack: its ``hybridgpu:economics`` checked by pricing, and its cost report (pure).

:func:`economics_issues` runs the stack's cost report during validation, so ``validate``,
``preview`` and ``pulumi up`` refuse what ``hybridgpu cost`` would; :func:`hybridgpu.stack.load.report_from_stack`
returns that same report for ``hybridgpu cost report`` instead of building it again.
"""

from __future__ import annotations

from pathlib import Path

from hybridgpu.catalog import load_catalog
from hybridgpu.catalog.models import UnknownInstanceTypeError
from hybridgpu.config.models import StackConfig
from hybridgpu.economics.opencost import OpenCostPriceError, eks_gpu_usd_per_hour, onprem_gpu_usd_per_hour
from hybridgpu.economics.prices import EconomicsDataError, UnknownPriceError
from hybridgpu.economics.report import StackCostReport, build_report
from hybridgpu.errors import Issue
from hybridgpu.stack.inventory import load_onprem_inventory


def economics_issues(config: StackConfig, file: str, *, root: Path | None = None) -> tuple[list[Issue], StackCostReport | None]:
    """Problems of ``hybridgpu:economics`` that only pricing finds: overrides naming families, GPU
    models or instance types the catalog does not know, or making a price entry invalid.

    Runs the stack's cost report (:func:`hybridgpu.economics.report.build_report`, about 1 ms for the
    prod stack, timed 2026-11-22)
    so that ``validate``, ``preview`` and ``pulumi up`` refuse what ``hybridgpu cost`` would.

    Returns:
        ``(issues, report)``: the report (default utilizations) when there is no issue, else None.
    """

    key = "hybridgpu:economics"
    fix = "correct the override (`hybridgpu catalog` lists families, GPU models and instance types)"
    assert config.economics is not None
    model = config.economics.on_prem.gpu_model
    if model is not None:
        try:
            load_catalog().gpu_model(model)
        except KeyError as exc:
            return [Issue(file, f"{key}.onPrem.gpuModel", f"{exc} is not a GPU catalog key", fix)], None
    inventory = load_onprem_inventory(config, root) if config.onprem is not None else None
    try:
        report = build_report(config, inventory=inventory, file=file)
    except EconomicsDataError as exc:
        found = []
        for i in exc.issues:
            if i.entry is not None and i.entry in config.economics.cloud:
                path = f"{key}.cloud.{i.entry}" + (f".{i.field}" if i.field and i.field != "family" else "")
                message = i.message
            else:  # the on-prem cost entry of the reference GPU model
                path = f"{key}.onPrem" + (f".{i.field}" if i.field else "")
                message = f"on-prem cost entry {i.entry!r}: {i.message}" if i.entry else i.message
            found.append(Issue(file, path, message, i.fix, i.code))
        return found, None
    except UnknownInstanceTypeError as exc:
        return [Issue(file, f"{key}.onDemandUsdPerHour", str(exc), fix)], None
    except (UnknownPriceError, ValueError) as exc:
        return [Issue(file, key, str(exc), "add the missing price or fix the value under `hybridgpu:economics`")], None
    return opencost_price_issues(config, report, file), report


def opencost_price_issues(config: StackConfig, report: StackCostReport, file: str) -> list[Issue]:
    """With ``showback.opencost`` on, each cluster's GPU price for OpenCost must exist in the cost report.

    On-prem OpenCost gets the owned cost per GPU-hour (:func:`hybridgpu.economics.opencost.onprem_gpu_usd_per_hour`),
    on EKS the On-Demand fallback (:func:`~hybridgpu.economics.opencost.eks_gpu_usd_per_hour`).
    """
    assert config.economics is not None
    if not config.economics.showback.opencost:
        return []
    issues = []
    checks = [(config.onprem is not None, onprem_gpu_usd_per_hour, "give the on-prem GPU model cost data under `hybridgpu:economics.onPrem` (serverUsdPerGpu, ...)"),
              (config.cloud is not None, eks_gpu_usd_per_hour, "give the NodePools' instance types an On-Demand price (`hybridgpu:economics.onDemandUsdPerHour`)")]
    for applies, price, fix in checks:
        if not applies:
            continue
        try:
            price(report)
        except OpenCostPriceError as exc:
            issues.append(Issue(file, "hybridgpu:economics.showback.opencost", f"OpenCost would have no GPU price: {exc}", f"{fix}, or set `showback.opencost: false`"))
    return issues

