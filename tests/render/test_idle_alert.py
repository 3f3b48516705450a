"""The idle-GPU PrometheusRule, evaluated by Prometheus itself (``promtool test rules``) on DCGM series.

The series are shaped as dcgm-exporter writes them (NVIDIA/dcgm-exporter 4.5.3-4.8.2
``internal/pkg/rendermetrics/render_metrics.go``: ``gpu``, ``UUID``, ``pci_bus_id``, ``device``,
``modelName``, ``GPU_I_PROFILE`` and ``GPU_I_ID`` for a MIG instance, ``hostname``; plus ``pod``,
``namespace``, ``container`` for a device a pod holds, and the pod's allowlisted labels with
``enablePodLabels``, ``internal/pkg/transformation/kubernetes.go``). ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``
is a ratio (0..1).

promtool comes from Debian's ``prometheus`` package (2.42.0): ``make setup`` (so ``make test`` and
``.ci/run``) extracts it to ``.venv-tools/bin/promtool``; ``HYBRIDGPU_PROMTOOL`` or PATH may name
another. Without any, the test fails under ``make test`` (``HYBRIDGPU_REQUIRE_TOOLS`` set) or CI
(``CI`` set), and is skipped in a bare ``pytest`` run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.render.nvidia import IDLE_METRIC, dcgm_alert_rule, gpu_operator_values
from tests.helpers import TOOLS_REQUIRED


def _promtool() -> str:
    local = Path(__file__).resolve().parents[2] / ".venv-tools" / "bin" / "promtool"
    found = os.environ.get("HYBRIDGPU_PROMTOOL") or (str(local) if local.exists() else None) or shutil.which("promtool")
    if found is None:
        if TOOLS_REQUIRED:
            pytest.fail("promtool is missing: `make setup` extracts it from Debian's prometheus package to .venv-tools/bin/promtool")
        pytest.skip("promtool not found (apt-get download prometheus; set HYBRIDGPU_PROMTOOL)")
    return found


def _rule(**idle: object) -> dict:
    rule = dcgm_alert_rule(NvidiaConfig.model_validate({"dcgm": {"idleAlert": {"enabled": True, **idle}}}))
    assert rule is not None
    return rule


GPU = 'gpu="{gpu}",UUID="{uuid}",pci_bus_id="00000000:1{gpu}:00.0",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",hostname="gpu-node-1"'


def _series(gpu: int, uuid: str, values: str, *, mig: tuple[str, str] | None = None, pod: tuple[str, str, str, str] | None = None) -> dict:
    labels = GPU.format(gpu=gpu, uuid=uuid)
    if mig:
        labels += f',GPU_I_PROFILE="{mig[0]}",GPU_I_ID="{mig[1]}"'
    if pod:
        labels += f',namespace="{pod[0]}",pod="{pod[1]}",container="main",team="{pod[2]}",project="{pod[3]}"'
    return {"series": f"{IDLE_METRIC}{{{labels}}}", "values": values}


def _run(tmp_path: Path, rule: dict, series: list[dict], eval_time: str, expected: list[dict]) -> subprocess.CompletedProcess:
    promtool = _promtool()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule["spec"], sort_keys=False))
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series,
                   "alert_rule_test": [{"eval_time": eval_time, "alertname": "HybridGpuIdle", "exp_alerts": expected}]}],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    check = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    return subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)


def _alert(gpu: str, uuid: str, value: str, *, mig: tuple[str, str] | None = None, pod: tuple[str, str, str, str] | None = None,
           minutes: int = 60, threshold: str = "5") -> dict:
    labels = {"severity": "warning", "node": "gpu-node-1", "gpu": gpu, "UUID": uuid, "modelName": "NVIDIA H100 80GB HBM3"}
    where = ""
    if mig:
        labels |= {"GPU_I_PROFILE": mig[0], "GPU_I_ID": mig[1]}
        where = f"MIG instance {mig[0]} (GI {mig[1]}) "
    held = ""
    if pod:
        labels |= {"namespace": pod[0], "pod": pod[1], "team": pod[2], "project": pod[3]}
        held = f", held by pod {pod[0]}/{pod[1]} (team {pod[2]}, project {pod[3]})"
    return {
        "exp_labels": labels,
        "exp_annotations": {
            "summary": f"GPU {gpu}{' MIG ' + mig[0] if mig else ''} on node gpu-node-1 is idle",
            "description": (f"GPU {gpu} (NVIDIA H100 80GB HBM3, {uuid}) {where}on node gpu-node-1{held}, had its engine active {value} of the last "
                            f"{minutes} minutes (threshold {threshold}%). An idle GPU still costs money: scale the workload down or let the node consolidate."),
        },
    }


def test_idle_mig_instance_alerts_with_its_pods_team_and_a_busy_one_does_not(tmp_path):
    """On one MIG GPU, the idle 1g.10gb instance a pod of team nlp holds fires, labelled with the team; the busy 3g.40gb does not."""
    idle_pod = ("nlp", "chat-0", "nlp", "chat")
    series = [
        _series(0, "GPU-aaaa", "0.01x150", mig=("1g.10gb", "9"), pod=idle_pod),
        _series(0, "GPU-aaaa", "0.6x150", mig=("3g.40gb", "2"), pod=("vision", "train-0", "vision", "detector")),
    ]
    result = _run(tmp_path, _rule(), series, "120m", [_alert("0", "GPU-aaaa", "1%", mig=("1g.10gb", "9"), pod=idle_pod)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_idle_whole_gpu_without_a_pod_alerts_and_a_node_that_just_joined_does_not(tmp_path):
    """An unallocated idle whole GPU fires (no pod labels); a GPU reporting for 30 minutes only does not (partial window)."""
    series = [
        _series(1, "GPU-bbbb", "0x150"),
        {"series": _series(2, "GPU-cccc", "")["series"], "values": "_x100 0x50"},
    ]
    result = _run(tmp_path, _rule(), series, "130m", [_alert("1", "GPU-bbbb", "0%")])
    assert result.returncode == 0, result.stdout + result.stderr


def test_threshold_is_percent_of_the_ratio_and_window_comes_from_config(tmp_path):
    """``utilizationBelowPercent: 12.5`` alerts at an average ratio 0.12 and not at 0.13; ``forMinutes: 30`` sets the window."""
    series = [_series(3, "GPU-dddd", "0.12x100"), _series(4, "GPU-eeee", "0.13x100")]
    rule = _rule(utilizationBelowPercent=12.5, forMinutes=30)
    result = _run(tmp_path, rule, series, "60m", [_alert("3", "GPU-dddd", "12%", minutes=30, threshold="12.5")])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[30m]" in rule["spec"]["groups"][0]["rules"][0]["expr"] and "< 0.125" in rule["spec"]["groups"][0]["rules"][0]["expr"]


def test_wrong_expectation_fails_so_the_harness_is_not_vacuous(tmp_path):
    """The busy instance expected to fire: promtool must report a failure."""
    series = [_series(0, "GPU-aaaa", "0.6x150", mig=("3g.40gb", "2"))]
    result = _run(tmp_path, _rule(), series, "120m", [_alert("0", "GPU-aaaa", "60%", mig=("3g.40gb", "2"))])
    assert result.returncode != 0


def test_gpu_operator_exports_the_team_and_project_pod_labels_only_with_the_alert():
    """dcgm-exporter adds pod labels only with ``enablePodLabels`` (GPU Operator v26.7.0 values.yaml, opt-in), bounded by the allowlist."""
    on = gpu_operator_values(NvidiaConfig.model_validate({"dcgm": {"idleAlert": {"enabled": True}}}))["dcgmExporter"]
    assert on["enablePodLabels"] is True and on["podLabelAllowlistRegex"] == ["^team$", "^project$"]
    off = gpu_operator_values(NvidiaConfig.model_validate({}))["dcgmExporter"]
    assert "enablePodLabels" not in off and "podLabelAllowlistRegex" not in off
