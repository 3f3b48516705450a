"""The GPU failure PrometheusRule, evaluated by Prometheus itself (``promtool test rules``) on input series.

Series are shaped as their exporters write them: dcgm-exporter 4.5.3-4.8.2 (``gpu``, ``UUID``,
``modelName``, ``hostname``; ``internal/pkg/rendermetrics/render_metrics.go``; the fields from
``etc/default-counters.csv``), kube-state-metrics v2.20.0 (``kube_node_status_capacity`` /
``kube_node_status_allocatable`` with ``resource="nvidia_com_gpu"``, ``unit="integer"``;
``kube_node_status_condition``), and the MultiKueueCluster condition gauge our
``CustomResourceStateMetrics`` config makes (``docs/metrics/extend/customresourcestate-metrics.md``:
``kube_customresource_<name>`` with ``customresource_group``/``_kind``/``_version``; status "True" -> 1).
promtool as in tests/render/test_idle_alert.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from hybridgpu.render.gpu_alerts import FATAL_XIDS, MULTIKUEUE_CONDITION_METRIC, gpu_failure_rule, multikueue_state_metrics_config
from tests.render.test_idle_alert import _promtool

DCGM = 'gpu="{gpu}",UUID="GPU-{gpu}{gpu}{gpu}{gpu}",pci_bus_id="00000000:1{gpu}:00.0",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",hostname="{node}"'
KSM = 'job="kube-state-metrics",node="{node}",resource="nvidia_com_gpu",unit="integer"'
MKC = 'customresource_group="kueue.x-k8s.io",customresource_kind="MultiKueueCluster",customresource_version="v1beta2",name="{name}",type="Active",reason="{reason}"'


def _dcgm(metric: str, gpu: int, values: str, node: str = "gpu-node-1") -> dict:
    return {"series": f"{metric}{{{DCGM.format(gpu=gpu, node=node)}}}", "values": values}


def _run(tmp_path: Path, series: list[dict], checks: list[tuple[str, str, list[dict]]], *, multikueue: bool = False) -> subprocess.CompletedProcess:
    promtool = _promtool()
    rule = gpu_failure_rule("monitoring", {"release": "prometheus"}, multikueue=multikueue)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule["spec"], sort_keys=False))
    tests = [{"eval_time": t, "alertname": name, "exp_alerts": exp} for t, name, exp in checks]
    test = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": tests}]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    check = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    return subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)


def _gpu_labels(gpu: int, severity: str, node: str = "gpu-node-1") -> dict:
    return {"severity": severity, "node": node, "gpu": str(gpu), "UUID": f"GPU-{gpu}{gpu}{gpu}{gpu}", "modelName": "NVIDIA H100 80GB HBM3"}


def test_fatal_xid_fires_and_an_application_xid_does_not(tmp_path):
    """Xid 79 (fallen off the bus) fires at once, critical; Xid 13 (graphics engine exception, an application fault) does not."""
    series = [_dcgm("DCGM_FI_DEV_XID_ERRORS", 0, "0x5 79x10"), _dcgm("DCGM_FI_DEV_XID_ERRORS", 1, "0x5 13x10")]
    exp = [{"exp_labels": _gpu_labels(0, "critical"), "exp_annotations": {
        "summary": "GPU 0 on node gpu-node-1 reported Xid 79",
        "description": "GPU 0 (NVIDIA H100 80GB HBM3, GPU-0000) on node gpu-node-1 last reported Xid 79, which needs a GPU reset or a node repair "
                       "(NVIDIA Xid catalog). Cordon the node and drain it; on-prem, follow the RMA runbook."}}]
    result = _run(tmp_path, series, [("8m", "HybridGpuXidFatal", exp), ("3m", "HybridGpuXidFatal", [])])
    assert result.returncode == 0, result.stdout + result.stderr


def test_row_remap_failure_and_uncorrectable_rows(tmp_path):
    """A row-remap failure fires critical; a new uncorrectable remapped row fires a warning within 15 minutes and clears after."""
    series = [
        _dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE", 2, "0x3 1x10"),
        _dcgm("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 3, "2x5 3x40"),
        _dcgm("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 4, "2x45"),
    ]
    remap = {"summary": "GPU 2 on node gpu-node-1 failed to remap a memory row",
             "description": "GPU 2 (NVIDIA H100 80GB HBM3, GPU-2222) on node gpu-node-1 could not remap a row of HBM after an uncorrectable error: "
                            "the GPU must be replaced."}
    ecc = {"summary": "GPU 3 on node gpu-node-1 had an uncorrectable memory error",
           "description": "GPU 3 (NVIDIA H100 80GB HBM3, GPU-3333) on node gpu-node-1 remapped rows for uncorrectable (double-bit) errors in the "
                          "last 15 minutes; the jobs on it failed, and a GPU reset activates the remapping."}
    checks = [
        ("6m", "HybridGpuRowRemapFailure", [{"exp_labels": _gpu_labels(2, "critical"), "exp_annotations": remap}]),
        ("10m", "HybridGpuUncorrectableEcc", [{"exp_labels": _gpu_labels(3, "warning"), "exp_annotations": ecc}]),
        ("40m", "HybridGpuUncorrectableEcc", []),
    ]
    result = _run(tmp_path, series, checks)
    assert result.returncode == 0, result.stdout + result.stderr


def test_gpus_lost_from_allocatable_fire_after_ten_minutes(tmp_path):
    """8 GPUs in capacity, 7 allocatable from minute 5 (the plugin marked one unhealthy): fires at 15m with value 1, not at 12m; a healthy node never."""
    series = [
        {"series": f"kube_node_status_capacity{{{KSM.format(node='gpu-a')}}}", "values": "8x30"},
        {"series": f"kube_node_status_allocatable{{{KSM.format(node='gpu-a')}}}", "values": "8x5 7x25"},
        {"series": f"kube_node_status_capacity{{{KSM.format(node='gpu-b')}}}", "values": "8x30"},
        {"series": f"kube_node_status_allocatable{{{KSM.format(node='gpu-b')}}}", "values": "8x30"},
    ]
    exp = [{"exp_labels": {"severity": "critical", "node": "gpu-a"}, "exp_annotations": {
        "summary": "Node gpu-a lost 1 allocatable GPU(s)",
        "description": "Node gpu-a has 1 GPU(s) fewer allocatable than it had in the last hour: the device plugin marked them unhealthy or they "
                       "fell off the bus. Jobs that need them stay Pending; cordon and repair the node."}}]
    result = _run(tmp_path, series, [("16m", "HybridGpuAllocatableLost", exp), ("12m", "HybridGpuAllocatableLost", [])])
    assert result.returncode == 0, result.stdout + result.stderr


def test_not_ready_node_with_gpus_fires_and_a_cpu_node_does_not(tmp_path):
    series = [
        {"series": 'kube_node_status_condition{job="kube-state-metrics",node="gpu-a",condition="Ready",status="true"}', "values": "1x3 0x20"},
        {"series": 'kube_node_status_condition{job="kube-state-metrics",node="cpu-a",condition="Ready",status="true"}', "values": "1x3 0x20"},
        {"series": f"kube_node_status_capacity{{{KSM.format(node='gpu-a')}}}", "values": "8x23"},
    ]
    exp = [{"exp_labels": {"severity": "critical", "node": "gpu-a", "job": "kube-state-metrics", "condition": "Ready", "status": "true"}, "exp_annotations": {
        "summary": "GPU node gpu-a is not Ready",
        "description": "Node gpu-a has GPUs and has not been Ready for 5 minutes: its pods are lost and the gangs on it wait for Kueue's "
                       "recoveryTimeout before they are requeued."}}]
    result = _run(tmp_path, series, [("10m", "HybridGpuNodeNotReady", exp), ("6m", "HybridGpuNodeNotReady", [])])
    assert result.returncode == 0, result.stdout + result.stderr


def test_multikueue_worker_inactive_only_on_a_manager(tmp_path):
    series = [
        {"series": f"{MULTIKUEUE_CONDITION_METRIC}{{{MKC.format(name='eks-worker', reason='ClientConnectionFailed')}}}", "values": "1x3 0x20"},
        {"series": f"{MULTIKUEUE_CONDITION_METRIC}{{{MKC.format(name='onprem-worker', reason='Active')}}}", "values": "1x23"},
    ]
    labels = {"severity": "warning", "customresource_group": "kueue.x-k8s.io", "customresource_kind": "MultiKueueCluster",
              "customresource_version": "v1beta2", "name": "eks-worker", "type": "Active", "reason": "ClientConnectionFailed"}
    exp = [{"exp_labels": labels, "exp_annotations": {
        "summary": "MultiKueue worker eks-worker is inactive",
        "description": "MultiKueueCluster eks-worker has not been Active for 5 minutes (reason ClientConnectionFailed): the manager dispatches "
                       "nothing to it, and workloads it held are requeued after workerLostTimeout."}}]
    result = _run(tmp_path, series, [("10m", "HybridGpuMultiKueueWorkerInactive", exp)], multikueue=True)
    assert result.returncode == 0, result.stdout + result.stderr
    names = [r["alert"] for r in gpu_failure_rule("monitoring")["spec"]["groups"][0]["rules"]]
    assert "HybridGpuMultiKueueWorkerInactive" not in names


def test_wrong_expectation_fails_so_the_harness_is_not_vacuous(tmp_path):
    series = [_dcgm("DCGM_FI_DEV_XID_ERRORS", 1, "13x10")]
    result = _run(tmp_path, series, [("5m", "HybridGpuXidFatal", [{"exp_labels": _gpu_labels(1, "critical")}])])
    assert result.returncode != 0


def test_state_metrics_config_names_the_metric_the_rule_reads():
    """No ``metricNamePrefix``: kube-state-metrics prefixes ``kube_customresource_`` (registry_factory.go v2.20.0)."""
    config = multikueue_state_metrics_config()
    resource = config["spec"]["resources"][0]
    assert "metricNamePrefix" not in resource
    assert "kube_customresource_" + resource["metrics"][0]["name"] == MULTIKUEUE_CONDITION_METRIC
    assert resource["groupVersionKind"] == {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "MultiKueueCluster"}


def test_same_input_same_bytes_and_every_fatal_xid_in_the_expression():
    a = yaml.safe_dump(gpu_failure_rule("monitoring", multikueue=True), sort_keys=False)
    assert a == yaml.safe_dump(gpu_failure_rule("monitoring", multikueue=True), sort_keys=False)
    expr = gpu_failure_rule("monitoring")["spec"]["groups"][0]["rules"][0]["expr"]
    assert all(f"== {x}\n" in expr + "\n" for x in FATAL_XIDS)


def test_rule_is_valid_against_the_prometheus_operator_crd():
    """The PrometheusRule against the pinned prometheus-operator CRD (hybridgpu.schemas, as every rendered manifest)."""
    from hybridgpu.schemas import validate_all

    [finding] = validate_all([gpu_failure_rule("monitoring", {"release": "prometheus"}, multikueue=True)])
    assert (finding.ok, finding.skipped) == (True, False), finding.errors


def test_stack_switch_installs_the_rule_with_the_crds_before_it(project):
    """`hybridgpu:nvidia.dcgm.failureAlerts: true` on the dev example stack (expected: the rule under
    the NVIDIA component, in the NVIDIA namespace with the stack's prometheusLabels, after the
    prometheus-operator-crds release; off: no rule, as before). Run under Pulumi's mocks."""
    from hybridgpu.shell.preview import run_preview
    from tests.helpers.scratch import example_stack, write_stack

    data = example_stack("dev")
    write_stack(project, "off", data)
    dcgm = data["config"]["hybridgpu:nvidia"].setdefault("dcgm", {})
    dcgm.update(failureAlerts=True, prometheusLabels={"release": "kps"})
    write_stack(project, "on", data)
    off = run_preview("off", project)
    assert not [r for r in off.records if r.name.endswith("-gpu-failure-alerts")]
    on = run_preview("on", project)
    [rule] = [r for r in on.records if r.name.endswith("-gpu-failure-alerts")]
    assert rule.inputs["kind"] == "PrometheusRule" and rule.inputs["metadata"]["labels"]["release"] == "kps"
    crds = [r for r in on.records if r.name.endswith("-prometheus-operator-crds")]
    assert crds and crds[0].urn in rule.dependencies
    namespace = data["config"]["hybridgpu:nvidia"].get("namespace", "gpu-operator")
    assert rule.inputs["metadata"]["namespace"] == namespace


def test_switch_is_refused_without_the_gpu_operator_or_as_a_string():
    """Expected: the device-plugin install has no DCGM exporter to alert on (a stack issue naming
    `hybridgpu:nvidia.dcgm` and the fix), and a string is not a switch (a validation error)."""
    import pydantic
    import pytest

    from hybridgpu.config.nvidia import NvidiaConfig, nvidia_issues

    plugin = NvidiaConfig.model_validate({"install": "device-plugin", "dcgm": {"failureAlerts": True}})
    [issue] = [i for i in nvidia_issues(plugin, "stacks/Pulumi.x.yaml", node_pool_names=set()) if "failure alerts" in i.message]
    assert issue.field == "hybridgpu:nvidia.dcgm" and "dcgm.failureAlerts" in issue.fix
    with pytest.raises(pydantic.ValidationError, match="failureAlerts|failure_alerts"):
        NvidiaConfig.model_validate({"install": "gpu-operator", "dcgm": {"failureAlerts": "sometimes"}})
    assert NvidiaConfig.model_validate({"install": "gpu-operator", "dcgm": {"failureAlerts": True}}).dcgm.failure_alerts
