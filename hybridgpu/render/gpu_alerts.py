"""GPU failure alerts: a PrometheusRule and the kube-state-metrics config it needs (pure, no Pulumi).

Creates plain dicts:

* :func:`gpu_failure_rule` -- a ``monitoring.coreos.com/v1`` PrometheusRule with
  ``HybridGpuXidFatal`` (an Xid that needs a GPU reset or node repair), ``HybridGpuRowRemapFailure``
  and ``HybridGpuUncorrectableEcc`` (HBM uncorrectable errors: row remapping failed, or rows remapped
  for uncorrectable errors), ``HybridGpuAllocatableLost`` (a node's allocatable ``nvidia.com/gpu`` is
  below its capacity over the last hour: the device plugin marked a GPU unhealthy or it fell off the
  bus), ``HybridGpuNodeNotReady`` (a node with GPUs is not Ready) and, with MultiKueue,
  ``HybridGpuMultiKueueWorkerInactive`` (a MultiKueueCluster's ``Active`` condition is not true);
* :func:`multikueue_state_metrics_config` -- the kube-state-metrics ``CustomResourceStateMetrics``
  config that exports the MultiKueueCluster conditions (Kueue v0.19 exports no worker-status metric),
  and :data:`MULTIKUEUE_STATE_METRICS_RBAC`, the ClusterRole rule kube-state-metrics needs to list them;
  :func:`multikueue_state_metrics_values` puts both into kube-state-metrics chart values;
* :func:`multikueue_worker_rule` -- the MultiKueue manager's PrometheusRule (worker inactive, and the
  kube-state-metrics export missing), rendered by the burst plan (``manager.workerAlerts``).

Upstream (read 2026-11-26):

* NVIDIA/dcgm-exporter 4.5.3-4.8.2 (commit 691c9276; the GPU Operator v26.7.0 pins 4.6.0-4.8.3,
  not mirrored) ``etc/default-counters.csv`` and ``etc/dcp-metrics-included.csv``:
  ``DCGM_FI_DEV_XID_ERRORS`` (gauge, "Value of the last XID error encountered"),
  ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` (gauge, "Whether remapping of rows has failed"),
  ``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` (counter) are collected by default; the volatile
  double-bit ECC counter ``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`` is commented out in both files, so a DBE
  is seen here as Xid 48 (and the rows it remaps), not through that counter.
* NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): the Xids of
  :data:`FATAL_XIDS` have a GPU reset, a node reboot or a service call as their immediate action.
* kube-state-metrics v2.20.0 (commit 4ffeda2e): ``kube_node_status_capacity`` /
  ``kube_node_status_allocatable`` with ``resource="nvidia_com_gpu"`` (the resource name sanitised),
  ``kube_node_status_condition{condition="Ready",status="true"}``;
  ``docs/metrics/extend/customresourcestate-metrics.md``: without ``metricNamePrefix`` a metric is
  ``kube_customresource_<name>`` with ``customresource_group``/``_kind``/``_version`` labels, and a
  condition's ``status`` string ``"True"`` is 1, ``"False"``/``"Unknown"`` 0
  (``pkg/customresourcestate/registry_factory.go`` ``toFloat64``).
* kubernetes-sigs/kueue v0.19.2 ``apis/kueue/v1beta2/multikueue_types.go``: MultiKueueCluster is
  cluster-scoped, condition type ``Active`` (``MultiKueueClusterActive``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hybridgpu.k8s import KUEUE_GROUP, managed_by_labels

#: Xids whose immediate action in NVIDIA's Xid catalog is a GPU reset, a reboot or a service call:
#: 48 double-bit ECC, 63/64 row-remapping event/failure, 74 NVLink, 79 fallen off the bus,
#: 94/95 contained/uncontained ECC, 119/120 GSP RPC timeout/error, 140 unrecovered ECC.
FATAL_XIDS: tuple[int, ...] = (48, 63, 64, 74, 79, 94, 95, 119, 120, 140)
#: The MultiKueueCluster condition metric rendered by :func:`multikueue_state_metrics_config`.
MULTIKUEUE_CONDITION_METRIC = "kube_customresource_multikueuecluster_condition"
#: kube-state-metrics' resource name for ``nvidia.com/gpu``.
KSM_GPU_RESOURCE = "nvidia_com_gpu"
#: ClusterRole rule kube-state-metrics needs to list and watch MultiKueueClusters.
MULTIKUEUE_STATE_METRICS_RBAC: dict[str, Any] = {"apiGroups": [KUEUE_GROUP], "resources": ["multikueueclusters"], "verbs": ["list", "watch"]}

_NODE = 'label_join({metric}, "node", "", "hostname", "Hostname")'
_GPU_BY = "node, gpu, UUID, modelName"


def _alert(name: str, expr: str, for_: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if for_ != "0m":
        rule["for"] = for_
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {"summary": summary, "description": description}
    return rule


def _worker_inactive() -> dict[str, Any]:
    return _alert(
        "HybridGpuMultiKueueWorkerInactive",
        f'{MULTIKUEUE_CONDITION_METRIC}{{type="Active"}} == 0',
        "5m",
        "warning",
        "MultiKueue worker {{ $labels.name }} is inactive",
        "MultiKueueCluster {{ $labels.name }} has not been Active for 5 minutes (reason {{ $labels.reason }}): the manager dispatches "
        "nothing to it, and workloads it held are requeued after workerLostTimeout.",
    )


def multikueue_worker_rules() -> list[dict[str, Any]]:
    """The alerting rules of :func:`multikueue_worker_rule`, in a fixed order.

    * ``HybridGpuMultiKueueWorkerInactive``: a MultiKueueCluster's ``Active`` condition has not been
      true for 5 minutes (kueue v0.19.2 ``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``
      ``Reconcile`` sets ``Active`` false with reason ``BadKubeConfig``, ``InsecureKubeConfig`` or
      ``ClientConnectionFailed`` when the worker's kubeconfig Secret is unusable or its API server
      cannot be reached, and true with ``Connected`` otherwise; a worker that is not Active gets no
      workloads).
    * ``HybridGpuMultiKueueWorkerMetricsAbsent``: no :data:`MULTIKUEUE_CONDITION_METRIC` series for
      30 minutes, i.e. kube-state-metrics does not export MultiKueueClusters (its values lack
      :func:`multikueue_state_metrics_values`), so the first alert could never fire.

    Returns:
        Prometheus alerting rules (dicts with ``alert``, ``expr``, optional ``for``, ``labels``, ``annotations``).
    """
    return [
        _worker_inactive(),
        _alert(
            "HybridGpuMultiKueueWorkerMetricsAbsent",
            f"absent({MULTIKUEUE_CONDITION_METRIC})",
            "30m",
            "warning",
            "No MultiKueueCluster metrics from kube-state-metrics",
            f"Prometheus has had no {MULTIKUEUE_CONDITION_METRIC} series for 30 minutes, so an inactive MultiKueue worker would "
            "not alert: give kube-state-metrics the custom-resource config and RBAC rule for MultiKueueClusters (docs/bursting.md, "
            "Alerts on the manager).",
        ),
    ]


def gpu_failure_rules(*, multikueue: bool) -> list[dict[str, Any]]:
    """The alerting rules of :func:`gpu_failure_rule` (see the module docstring), in a fixed order.

    Args:
        multikueue: add ``HybridGpuMultiKueueWorkerInactive`` (a MultiKueue manager).

    Returns:
        Prometheus alerting rules (dicts with ``alert``, ``expr``, optional ``for``, ``labels``, ``annotations``).
    """
    xid = _NODE.format(metric="DCGM_FI_DEV_XID_ERRORS")
    fatal = "\n  or ".join(f"{xid} == {code}" for code in FATAL_XIDS)
    rules = [
        _alert(
            "HybridGpuXidFatal",
            f"max by ({_GPU_BY}) (\n  {fatal}\n)",
            "0m",
            "critical",
            "GPU {{ $labels.gpu }} on node {{ $labels.node }} reported Xid {{ $value }}",
            "GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on node {{ $labels.node }} last reported Xid {{ $value }}, "
            "which needs a GPU reset or a node repair (NVIDIA Xid catalog). Cordon the node and drain it; on-prem, follow the RMA runbook.",
        ),
        _alert(
            "HybridGpuRowRemapFailure",
            f"max by ({_GPU_BY}) ({_NODE.format(metric='DCGM_FI_DEV_ROW_REMAP_FAILURE')}) > 0",
            "0m",
            "critical",
            "GPU {{ $labels.gpu }} on node {{ $labels.node }} failed to remap a memory row",
            "GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on node {{ $labels.node }} could not remap a row of HBM "
            "after an uncorrectable error: the GPU must be replaced.",
        ),
        _alert(
            "HybridGpuUncorrectableEcc",
            f"max by ({_GPU_BY}) ({_NODE.format(metric='increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[15m])')}) > 0",
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on node {{ $labels.node }} had an uncorrectable memory error",
            "GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on node {{ $labels.node }} remapped rows for uncorrectable "
            "(double-bit) errors in the last 15 minutes; the jobs on it failed, and a GPU reset activates the remapping.",
        ),
        _alert(
            "HybridGpuAllocatableLost",
            f'max_over_time(kube_node_status_capacity{{resource="{KSM_GPU_RESOURCE}"}}[1h])\n'
            f'  - on (node) kube_node_status_allocatable{{resource="{KSM_GPU_RESOURCE}"}} > 0',
            "10m",
            "critical",
            "Node {{ $labels.node }} lost {{ $value }} allocatable GPU(s)",
            "Node {{ $labels.node }} has {{ $value }} GPU(s) fewer allocatable than it had in the last hour: the device plugin marked them "
            "unhealthy or they fell off the bus. Jobs that need them stay Pending; cordon and repair the node.",
        ),
        _alert(
            "HybridGpuNodeNotReady",
            'kube_node_status_condition{condition="Ready",status="true"} == 0\n'
            f'and on (node) kube_node_status_capacity{{resource="{KSM_GPU_RESOURCE}"}} > 0',
            "5m",
            "critical",
            "GPU node {{ $labels.node }} is not Ready",
            "Node {{ $labels.node }} has GPUs and has not been Ready for 5 minutes: its pods are lost and the gangs on it wait for "
            "Kueue's recoveryTimeout before they are requeued.",
        ),
    ]
    if multikueue:
        rules.append(_worker_inactive())
    return rules


def gpu_failure_rule(namespace: str, labels: Mapping[str, str] | None = None, *, multikueue: bool = False) -> dict[str, Any]:
    """A ``monitoring.coreos.com/v1`` PrometheusRule ``hybridgpu-gpu-failures`` with :func:`gpu_failure_rules`.

    Args:
        namespace: namespace of the rule (where the Prometheus operator looks for rules).
        labels: extra labels the Prometheus ``ruleSelector`` matches (e.g. ``release: prometheus``).
        multikueue: the cluster is a MultiKueue manager (adds the worker-inactive alert; needs
            :func:`multikueue_state_metrics_config` in kube-state-metrics).

    Returns:
        The PrometheusRule as a plain dict; the same inputs give the same dict.
    """
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "hybridgpu-gpu-failures", "namespace": namespace, "labels": {**managed_by_labels(), **dict(labels or {})}},
        "spec": {"groups": [{"name": "hybridgpu-gpu-failures", "rules": gpu_failure_rules(multikueue=multikueue)}]},
    }


def multikueue_state_metrics_config(kueue_version: str = "v1beta2") -> dict[str, Any]:
    """kube-state-metrics' ``CustomResourceStateMetrics`` config exporting every MultiKueueCluster condition.

    One gauge :data:`MULTIKUEUE_CONDITION_METRIC` per condition, labelled ``name`` (the
    MultiKueueCluster), ``type`` and ``reason``, 1 when the condition's status is ``True``.
    Pass it to kube-state-metrics with ``--custom-resource-state-config`` (the chart's
    ``customResourceState.config``) and grant :data:`MULTIKUEUE_STATE_METRICS_RBAC`.

    Args:
        kueue_version: the Kueue API version served (``v1beta2`` for Kueue v0.19).

    Returns:
        The config as a plain dict.
    """
    return {
        "kind": "CustomResourceStateMetrics",
        "spec": {
            "resources": [
                {
                    "groupVersionKind": {"group": KUEUE_GROUP, "version": kueue_version, "kind": "MultiKueueCluster"},
                    "labelsFromPath": {"name": ["metadata", "name"]},
                    "metrics": [
                        {
                            "name": "multikueuecluster_condition",
                            "help": "Condition of a Kueue MultiKueueCluster (1 when its status is True).",
                            "each": {
                                "type": "Gauge",
                                "gauge": {"path": ["status", "conditions"], "labelsFromPath": {"type": ["type"], "reason": ["reason"]}, "valueFrom": ["status"]},
                            },
                        }
                    ],
                }
            ]
        },
    }


#: Name of the manager's PrometheusRule (:func:`multikueue_worker_rule`).
MULTIKUEUE_RULE_NAME = "hybridgpu-multikueue-workers"


def multikueue_worker_rule(namespace: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``monitoring.coreos.com/v1`` PrometheusRule :data:`MULTIKUEUE_RULE_NAME` with :func:`multikueue_worker_rules`.

    Rendered on a MultiKueue manager (burst plan ``manager.workerAlerts``), which may have no GPUs
    and so no NVIDIA layer with :func:`gpu_failure_rule`.

    Args:
        namespace: namespace of the rule (one the Prometheus operator's ``ruleNamespaceSelector`` selects).
        labels: extra labels the Prometheus ``ruleSelector`` matches (e.g. ``release: kube-prometheus-stack``).

    Returns:
        The PrometheusRule as a plain dict; the same inputs give the same dict.
    """
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": MULTIKUEUE_RULE_NAME, "namespace": namespace, "labels": {**managed_by_labels(), **dict(labels or {})}},
        "spec": {"groups": [{"name": MULTIKUEUE_RULE_NAME, "rules": multikueue_worker_rules()}]},
    }


def multikueue_state_metrics_values(kueue_version: str = "v1beta2") -> dict[str, Any]:
    """Values for the kube-state-metrics Helm chart (prometheus-community ``kube-state-metrics``, also
    the ``kube-state-metrics`` key of ``kube-prometheus-stack``) that export MultiKueueCluster conditions.

    ``customResourceState.enabled`` / ``customResourceState.config`` make the chart write the config
    into a ConfigMap and pass it with ``--custom-resource-state-config-file``; ``rbac.extraRules``
    adds :data:`MULTIKUEUE_STATE_METRICS_RBAC` to the chart's ClusterRole (prometheus-community/helm-charts
    ``charts/kube-state-metrics/values.yaml``, keys present since chart 5.8.0, 2023-06).

    Args:
        kueue_version: the Kueue API version served (``v1beta2`` for Kueue v0.19).

    Returns:
        The values as a plain dict (merge them into the chart's values; the lists replace the chart's).
    """
    return {
        "rbac": {"extraRules": [dict(MULTIKUEUE_STATE_METRICS_RBAC)]},
        "customResourceState": {"enabled": True, "config": multikueue_state_metrics_config(kueue_version)},
    }
