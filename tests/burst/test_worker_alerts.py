"""Alerts on the MultiKueue manager when a worker is inactive (issue 26, burst plan ``manager.workerAlerts``).

Upstream: kubernetes-sigs/kueue v0.19.2 ``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``
(``Reconcile``: ``Active`` false with ``BadKubeConfig`` / ``InsecureKubeConfig`` /
``ClientConnectionFailed``, true with ``Connected``); kube-state-metrics v2.20.0
``docs/metrics/extend/customresourcestate-metrics.md`` (metric ``kube_customresource_<name>``);
prometheus-community/helm-charts ``charts/kube-state-metrics/values.yaml`` (``rbac.extraRules``,
``customResourceState.enabled`` / ``.config``).
"""

from __future__ import annotations

import subprocess

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.burst.kueue import cluster_manifests
from hybridgpu.cli import app
from hybridgpu.render.gpu_alerts import (
    MULTIKUEUE_CONDITION_METRIC,
    MULTIKUEUE_RULE_NAME,
    MULTIKUEUE_STATE_METRICS_RBAC,
    multikueue_state_metrics_config,
    multikueue_state_metrics_values,
    multikueue_worker_rule,
)
from hybridgpu.schemas import validate_all
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan as example_plan_file
from tests.helpers.teams import edited, example_plan
from tests.render.test_idle_alert import _promtool

CASES = yaml.safe_load((ROOT / "tests" / "burst" / "worker_alerts_cases.yaml").read_text())
PLAN = "stacks/burst/site-a.yaml"
runner = CliRunner(env={"COLUMNS": "400"})
MKC = 'customresource_group="kueue.x-k8s.io",customresource_kind="MultiKueueCluster",customresource_version="v1beta2",name="{name}",type="Active",reason="{reason}"'


def _rules(docs):
    return [d for d in docs if d["kind"] == "PrometheusRule"]


def test_rule_only_on_the_manager_in_the_chosen_namespace_with_labels():
    plan = example_plan()
    source = plan.source.model_copy(update={"manager": plan.source.manager.model_copy(update={
        "worker_alerts": type(plan.source.manager.worker_alerts).model_validate({"enabled": True, "namespace": "monitoring", "prometheusLabels": {"release": "kps"}})})})
    docs = {stack: cluster_manifests(cluster, source) for stack, cluster in plan.clusters.items()}
    managers = [s for s, c in plan.clusters.items() if c.multikueue is not None]
    assert managers == ["hybrid"]
    [rule] = _rules(docs["hybrid"])
    assert rule["metadata"]["name"] == MULTIKUEUE_RULE_NAME and rule["metadata"]["namespace"] == "monitoring"
    assert rule["metadata"]["labels"]["release"] == "kps"
    assert [r["alert"] for r in rule["spec"]["groups"][0]["rules"]] == ["HybridGpuMultiKueueWorkerInactive", "HybridGpuMultiKueueWorkerMetricsAbsent"]
    assert not _rules(docs["onprem"]) and not _rules(docs["prod"])
    findings = validate_all(docs["hybrid"], kubernetes_version="1.35.0")
    assert all(f.ok and not f.skipped for f in findings), [(f.kind, f.errors) for f in findings if not f.ok or f.skipped]


def test_default_namespace_is_kueues_and_off_renders_nothing():
    plan = example_plan()
    assert not _rules(cluster_manifests(plan.clusters["hybrid"], plan.source))  # default off: outputs unchanged
    source = plan.source.model_copy(update={"manager": plan.source.manager.model_copy(update={
        "worker_alerts": type(plan.source.manager.worker_alerts).model_validate({"enabled": True})})})
    [rule] = _rules(cluster_manifests(plan.clusters["hybrid"], source))
    assert rule["metadata"]["namespace"] == source.kueue.namespace == "kueue-system"


def _promtool_run(tmp_path, series, checks):
    promtool = _promtool()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(multikueue_worker_rule("monitoring")["spec"], sort_keys=False))
    tests = [{"eval_time": t, "alertname": name, "exp_alerts": exp} for t, name, exp in checks]
    test = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": tests}]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    check = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    return subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)


def test_worker_that_lost_its_connection_alerts_after_5_minutes(tmp_path):
    """kube-state-metrics reports the condition 1 for "True", 0 otherwise; the rule waits 5 minutes."""
    series = [
        {"series": f"{MULTIKUEUE_CONDITION_METRIC}{{{MKC.format(name='eks', reason='ClientConnectionFailed')}}}", "values": "1x3 0x30"},
        {"series": f"{MULTIKUEUE_CONDITION_METRIC}{{{MKC.format(name='onprem', reason='Active')}}}", "values": "1x33"},
    ]
    labels = {"severity": "warning", "customresource_group": "kueue.x-k8s.io", "customresource_kind": "MultiKueueCluster",
              "customresource_version": "v1beta2", "name": "eks", "type": "Active", "reason": "ClientConnectionFailed"}
    exp = [{"exp_labels": labels, "exp_annotations": {
        "summary": "MultiKueue worker eks is inactive",
        "description": "MultiKueueCluster eks has not been Active for 5 minutes (reason ClientConnectionFailed): the manager dispatches "
                       "nothing to it, and workloads it held are requeued after workerLostTimeout."}}]
    checks = [("6m", "HybridGpuMultiKueueWorkerInactive", []), ("10m", "HybridGpuMultiKueueWorkerInactive", exp),
              ("32m", "HybridGpuMultiKueueWorkerMetricsAbsent", [])]
    result = _promtool_run(tmp_path, series, checks)
    assert result.returncode == 0, result.stdout + result.stderr


def test_missing_kube_state_metrics_export_alerts_after_30_minutes(tmp_path):
    """No MultiKueueCluster series at all (kube-state-metrics lacks the custom-resource config): the absent alert fires."""
    series = [{"series": 'up{job="kube-state-metrics"}', "values": "1x40"}]
    exp = [{"exp_labels": {"severity": "warning"}, "exp_annotations": {
        "summary": "No MultiKueueCluster metrics from kube-state-metrics",
        "description": f"Prometheus has had no {MULTIKUEUE_CONDITION_METRIC} series for 30 minutes, so an inactive MultiKueue worker would "
                       "not alert: give kube-state-metrics the custom-resource config and RBAC rule for MultiKueueClusters (docs/bursting.md, "
                       "Alerts on the manager)."}}]
    result = _promtool_run(tmp_path, series, [("20m", "HybridGpuMultiKueueWorkerMetricsAbsent", []), ("35m", "HybridGpuMultiKueueWorkerMetricsAbsent", exp)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_kube_state_metrics_values_carry_the_config_and_the_rbac_rule():
    values = multikueue_state_metrics_values()
    assert values["customResourceState"] == {"enabled": True, "config": multikueue_state_metrics_config()}
    assert values["rbac"]["extraRules"] == [MULTIKUEUE_STATE_METRICS_RBAC]


def test_docs_show_the_kube_state_metrics_values_the_code_renders():
    """docs/bursting.md prints the values to merge into kube-state-metrics; they must be exactly these."""
    text = (ROOT / "docs" / "bursting.md").read_text()
    start = text.index("```yaml\n# kube-state-metrics values (hybridgpu)") + len("```yaml\n")
    block = text[start : text.index("```", start)]
    assert yaml.safe_load(block) == multikueue_state_metrics_values()


# ---- the cases, through the CLI


def _validate(scratch_project, changes):
    root = scratch_project(plan=edited(example_plan_file(), changes), stacks=("hybrid", "onprem", "prod"))
    return runner.invoke(app, ["validate", "hybrid", "--root", str(root)])


def test_enough_cases():
    assert len(CASES["fail"]) >= 10 and len(CASES["pass"]) >= 10


@pytest.mark.parametrize("case", CASES["fail"], ids=lambda c: c["name"])
def test_cli_refuses(scratch_project, case):
    result = _validate(scratch_project, case["set"])
    out = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert f"{PLAN}: field" in out and case["key"] in out and "fix:" in out and "Traceback" not in result.output


@pytest.mark.parametrize("case", CASES["pass"], ids=lambda c: c["name"])
def test_cli_accepts(scratch_project, case):
    result = _validate(scratch_project, case["set"])
    assert result.exit_code == 0, result.output
