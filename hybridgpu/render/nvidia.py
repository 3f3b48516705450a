"""Render the NVIDIA GPU layer from :class:`~hybridgpu.config.nvidia.NvidiaConfig` (pure, no Pulumi).

Creates plain dicts, ready for YAML, a Pulumi ``kubernetes`` resource or Helm values:

* the NVIDIA mig-parted config (:func:`mig_parted_config`, rendered by
  :func:`hybridgpu.mig.parted.render_mig_parted`) and the ``v1`` ConfigMap the GPU
  Operator's mig-manager reads (:func:`mig_parted_configmap`, key ``config.yaml``);
* device-plugin config files (:func:`device_plugin_config`) and their ConfigMap
  (:func:`device_plugin_configmap`, one key per named config plus ``default``);
* Helm values of the ``gpu-operator`` chart (:func:`gpu_operator_values`) or, with
  ``install: device-plugin``, of two releases of the ``nvidia-device-plugin`` chart
  (:func:`device_plugin_values`, :func:`gfd_values`);
* a ``monitoring.coreos.com/v1`` PrometheusRule with an idle-GPU alert (:func:`dcgm_alert_rule`);
* NodePool template labels that select a MIG layout / sharing config (:func:`nodepool_labels`);
* ``karpenter.sh/v1alpha1`` NodeOverlays that tell Karpenter's scheduling simulation the
  MIG or shared capacity the nodes of a NodePool will advertise (:func:`node_overlays`).

Renderers assume the section passed :func:`hybridgpu.config.nvidia.nvidia_issues` (an
unknown GPU model raises :class:`~hybridgpu.mig.UnknownMigModelError`).

Upstream formats (read 2026-11-22 at the tags named):

* mig-parted config: NVIDIA/mig-parted v0.15.0 (2026-08-19) ``api/spec/v1/spec.go``:
  ``version: v1``, ``mig-configs: {name: [{devices: all|[idx], mig-enabled, mig-devices,
  device-filter}]}``; ``devices`` and ``mig-enabled`` required, ``mig-devices`` required when
  enabled and must be empty when disabled; ``device-filter`` a PCI id string or list
  (``0x<device>10DE``, matched by ``api/spec/v1/helpers.go``).
* device-plugin config: NVIDIA/k8s-device-plugin v0.20.0 (2026-08-19) ``api/config/v1``
  (``version``, ``flags.migStrategy``, ``sharing.timeSlicing|mps.{renameByDefault,
  failRequestsGreaterThanOne, resources[{name, replicas}]}``); node label
  ``nvidia.com/device-plugin.config``; chart ``deployments/helm/nvidia-device-plugin``
  values ``config.{name,default}``, ``migStrategy``, ``devicePlugin.enabled``, ``gfd.enabled``.
* GPU Operator: NVIDIA/gpu-operator v26.7.0 (2026-08-20)
  ``deployments/gpu-operator/values.yaml``: ``driver.enabled``, ``toolkit.enabled``,
  ``mig.strategy``, ``migManager.{enabled,config.{name,create,default}}`` (the ConfigMap
  key must be ``config.yaml``), ``devicePlugin.config.{name,create,default}``,
  ``dcgmExporter.{enabled,serviceMonitor.enabled}``.
* DCGM exporter metric labels: NVIDIA/dcgm-exporter ``internal/pkg/rendermetrics``: ``gpu``,
  ``UUID``, ``modelName``, and the node as ``Hostname`` (renamed ``hostname`` on 2026-05-12,
  commit d5e5f51; the GPU Operator sets ``NODE_NAME`` so the value is the node name).
* NodeOverlay: Karpenter v1.14 ``pkg/apis/crds/karpenter.sh_nodeoverlays.yaml`` and
  ``website/content/en/v1.14/concepts/nodeoverlays.md`` (aws/karpenter-provider-aws at
  1d927085, 2026-08-21): ``spec.requirements`` (``karpenter.sh/nodepool`` allowed),
  ``spec.capacity`` (extended resources; ``cpu``/``memory``/``ephemeral-storage``/``pods``
  refused). kubernetes-sigs/karpenter ``ApplyCapacityOverlay`` merges the overlay over the
  instance type's capacity, so a value given for ``nvidia.com/gpu`` replaces the GPU count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import math
import re

from hybridgpu.config.nvidia import (
    ALL_DISABLED,
    DEFAULT_DEVICE_CONFIG,
    NvidiaConfig,
    TimeSlicingConfig,
)
from hybridgpu.k8s import (
    DEFAULT_COST_KEYS,
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    KARPENTER_NODEPOOL_LABEL,
    MIG_CONFIG_LABEL,
    managed_by_labels,
    mig_resource_name,
)
from hybridgpu.mig import mig_gpu
from hybridgpu.mig.parted import ALL_DEVICES, MigPartedEntry, render_mig_parted
from hybridgpu.render import dump_yaml
from hybridgpu.render.charts import control_plane_toleration, controller_tolerations, gpu_exists_toleration
from hybridgpu.render.gpu_alerts import gpu_failure_rule

__all__ = [
    "DEVICE_PLUGIN_CONFIGMAP",
    "gpu_agent_tolerations",
    "MIG_PARTED_CONFIGMAP",
    "MIG_PARTED_CONFIG_KEY",
    "NODEOVERLAY_API",
    "IDLE_ALERT_POD_LABELS",
    "IDLE_METRIC",
    "dcgm_alert_rule",
    "failure_alert_rule",
    "idle_alert_pod_label_values",
    "declared_crds",
    "installs_prometheus_crds",
    "monitoring_kinds",
    "device_plugin_config",
    "device_plugin_configmap",
    "device_plugin_values",
    "gfd_values",
    "gpu_operator_values",
    "mig_parted_config",
    "mig_parted_configmap",
    "node_capacity",
    "node_overlays",
    "nodepool_extra_limits",
    "nodepool_labels",
]

#: ConfigMap holding the mig-parted config (GPU Operator ``migManager.config.name``).
MIG_PARTED_CONFIGMAP = "hybridgpu-mig-parted-config"
#: Key of the mig-parted config in its ConfigMap; the GPU Operator requires ``config.yaml``.
MIG_PARTED_CONFIG_KEY = "config.yaml"
#: ConfigMap holding the device-plugin configs (``devicePlugin.config.name`` / ``config.name``).
DEVICE_PLUGIN_CONFIGMAP = "hybridgpu-device-plugin-config"
#: API version of Karpenter's NodeOverlay (alpha, feature gate ``nodeOverlay``).
NODEOVERLAY_API = "karpenter.sh/v1alpha1"
#: Suffix the device plugin appends with ``renameByDefault`` (api/config/v1/consts.go).
SHARED_SUFFIX = ".shared"


def _configmap(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": managed_by_labels()},
        "data": data,
    }


# --------------------------------------------------------------------------- mig-parted


def mig_parted_config(nvidia: NvidiaConfig) -> dict[str, Any]:
    """The NVIDIA mig-parted config (``version: v1``) of all MIG layouts.

    Always holds ``all-disabled`` (MIG off on every GPU; the GPU Operator's default). Each
    layout becomes one config whose entries carry ``device-filter`` = the PCI ids of the
    layout's GPU model, so a node with another GPU is left alone instead of failing.
    ``mig-devices`` is present exactly on MIG-enabled entries, as mig-parted requires.
    Rendered by :func:`hybridgpu.mig.parted.render_mig_parted` (as the MIG planner's configs).

    Args:
        nvidia: a checked NVIDIA section.

    Returns:
        ``{"version": "v1", "mig-configs": {name: [entry, ...]}}``.

    Raises:
        UnknownMigModelError: a layout names a GPU model without MIG data (the config
            checks report this first).
    """
    configs: dict[str, list[MigPartedEntry]] = {ALL_DISABLED: [MigPartedEntry(devices=ALL_DEVICES)]}
    for layout in nvidia.mig_layouts:
        device_filter = mig_gpu(layout.gpu_model).device_filter
        configs[layout.name] = [
            MigPartedEntry(
                devices=ALL_DEVICES if gpus is None else tuple(sorted(gpus)),
                mig_devices=dict(counts) if enabled else None,
                device_filter=device_filter,
            )
            for gpus, enabled, counts in layout.groups()
        ]
    return render_mig_parted(configs)


def mig_parted_configmap(nvidia: NvidiaConfig) -> dict[str, Any]:
    """``v1`` ConfigMap ``hybridgpu-mig-parted-config`` with the mig-parted config under ``config.yaml``.

    Lives in ``nvidia.namespace`` (the GPU Operator's namespace); referenced by
    :func:`gpu_operator_values` with ``migManager.config.create: false``.
    """
    return _configmap(MIG_PARTED_CONFIGMAP, nvidia.namespace, {MIG_PARTED_CONFIG_KEY: dump_yaml(mig_parted_config(nvidia))})


# --------------------------------------------------------------------------- device plugin


def device_plugin_config(ts: TimeSlicingConfig | None, strategy: str) -> dict[str, Any]:
    """One device-plugin config file (NVIDIA/k8s-device-plugin ``api/config/v1``).

    Args:
        ts: the sharing config, or None for the config without sharing.
        strategy: ``none``, ``single`` or ``mixed`` (``flags.migStrategy``).

    Returns:
        ``{"version": "v1", "flags": {"migStrategy": ...}, "sharing": {"timeSlicing"|"mps":
        {"renameByDefault", "failRequestsGreaterThanOne", "resources": [{name, replicas}]}}}``
        (no ``sharing`` when ``ts`` is None).
    """
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": strategy}}
    if ts is not None:
        config["sharing"] = {
            ts.sharing: {
                "renameByDefault": ts.rename_by_default,
                "failRequestsGreaterThanOne": ts.fail_requests_greater_than_one,
                "resources": [{"name": r.name, "replicas": r.replicas} for r in ts.resources],
            }
        }
    return config


def device_plugin_configmap(nvidia: NvidiaConfig) -> dict[str, Any]:
    """``v1`` ConfigMap ``hybridgpu-device-plugin-config``: key ``default`` (no sharing) plus one key per sharing config.

    Each value is a device-plugin config file (YAML). The device plugin's config-manager
    picks the key named by the node label ``nvidia.com/device-plugin.config`` and falls back
    to ``default``.
    """
    data = {DEFAULT_DEVICE_CONFIG: dump_yaml(device_plugin_config(None, nvidia.mig_strategy))}
    for ts in nvidia.time_slicing:
        data[ts.name] = dump_yaml(device_plugin_config(ts, nvidia.mig_strategy))
    return _configmap(DEVICE_PLUGIN_CONFIGMAP, nvidia.namespace, data)


# --------------------------------------------------------------------------- Helm values


def gpu_agent_tolerations() -> list[dict[str, str]]:
    """Tolerations of node agents that must run on GPU nodes: the GPU taint (any value) and the control-plane taint."""
    return [control_plane_toleration(), gpu_exists_toleration()]


def _nfd_values() -> dict[str, Any]:
    """The NFD subchart's scheduling values: controllers tolerate the system taint, the worker the GPU taint."""
    return {
        "master": {"tolerations": controller_tolerations()},
        "gc": {"tolerations": controller_tolerations()},
        "worker": {"tolerations": gpu_agent_tolerations()},
    }


def gpu_operator_values(nvidia: NvidiaConfig) -> dict[str, Any]:
    """Values of the ``gpu-operator`` chart (``nvidia.versions.gpu_operator``, namespace ``nvidia.namespace``).

    Sets only what the toolkit decides; everything else keeps the chart defaults (NFD and
    GFD on). mig-manager runs only when MIG layouts exist and then reads our ConfigMap
    (``create: false``, default ``all-disabled``); the device plugin reads our ConfigMap
    with default ``default``.

    Key names checked against NVIDIA/gpu-operator v26.7.0
    ``deployments/gpu-operator/values.yaml`` (read 2026-11-22).

    Scheduling: ``operator.tolerations`` and the NFD master/gc tolerate ``CriticalAddonsOnly``
    (:func:`~hybridgpu.render.charts.controller_tolerations`); ``daemonsets.tolerations`` keeps the chart's
    ``nvidia.com/gpu`` Exists, which tolerates :data:`hybridgpu.k8s.GPU_TAINT`
    (checked by :mod:`hybridgpu.stack.scheduling` against the chart defaults in
    :mod:`hybridgpu.render.charts`).
    """
    mig_manager: dict[str, Any] = {"enabled": bool(nvidia.mig_layouts)}
    if nvidia.mig_layouts:
        mig_manager["config"] = {"name": MIG_PARTED_CONFIGMAP, "create": False, "default": ALL_DISABLED}
    dcgm = nvidia.dcgm
    return {
        "operator": {"tolerations": controller_tolerations()},
        "node-feature-discovery": _nfd_values(),
        "driver": {"enabled": nvidia.driver == "operator"},
        "toolkit": {"enabled": nvidia.toolkit == "operator"},
        "mig": {"strategy": nvidia.mig_strategy},
        "migManager": mig_manager,
        "devicePlugin": {
            "enabled": True,
            "config": {"name": DEVICE_PLUGIN_CONFIGMAP, "create": False, "default": DEFAULT_DEVICE_CONFIG},
        },
        "dcgmExporter": {
            "enabled": dcgm.enabled,
            **idle_alert_pod_label_values(nvidia),
            "serviceMonitor": {
                "enabled": dcgm.enabled and dcgm.service_monitor,
                **({"additionalLabels": dict(dcgm.prometheus_labels)} if dcgm.prometheus_labels else {}),
            },
        },
    }


def device_plugin_values(nvidia: NvidiaConfig) -> dict[str, Any]:
    """Values of the ``nvidia-device-plugin`` chart release that runs the device plugin (``install: device-plugin``).

    Chart version ``nvidia.versions.device_plugin``. GFD (and with it the NFD subchart,
    whose condition is ``nfd.enabled,gfd.enabled``) is left to the separate release of
    :func:`gfd_values`, so each is pinned on its own. ``config.name`` points at
    :func:`device_plugin_configmap` (``config.map`` stays unset: the chart refuses both).
    """
    return {
        "config": {"name": DEVICE_PLUGIN_CONFIGMAP, "default": DEFAULT_DEVICE_CONFIG},
        "migStrategy": nvidia.mig_strategy,
        "devicePlugin": {"enabled": True},
        "gfd": {"enabled": False},
    }


def gfd_values(nvidia: NvidiaConfig) -> dict[str, Any]:
    """Values of a second ``nvidia-device-plugin`` chart release that runs only GPU feature discovery.

    Chart version ``nvidia.versions.gpu_feature_discovery``; install it under another
    release name (e.g. ``gpu-feature-discovery``) in the same namespace. ``gfd.enabled``
    also deploys the chart's NFD subchart; ``devicePlugin.enabled: false`` skips the
    device-plugin and MPS daemon sets. GFD reads the same ConfigMap (its ``migStrategy``
    decides the ``nvidia.com/mig.strategy`` and MIG labels). Scheduling: the NFD subchart (alias
    ``nfd``) gets :func:`_nfd_values`; the device plugin and GFD keep the chart's tolerations
    (``CriticalAddonsOnly`` and ``nvidia.com/gpu`` Exists).
    """
    return {
        "config": {"name": DEVICE_PLUGIN_CONFIGMAP, "default": DEFAULT_DEVICE_CONFIG},
        "migStrategy": nvidia.mig_strategy,
        "devicePlugin": {"enabled": False},
        "gfd": {"enabled": True},
        # The chart's NFD worker tolerates only `nvidia.com/gpu=present` (Equal), not our
        # `nvidia.com/gpu=true` taint, and its master/gc only the control plane (v0.20.0 values.yaml).
        "nfd": _nfd_values(),
    }


# --------------------------------------------------------------------------- monitoring


#: Pod labels the idle-GPU alert carries (cost-attribution keys of :data:`hybridgpu.k8s.DEFAULT_COST_KEYS`).
IDLE_ALERT_POD_LABELS: tuple[str, ...] = tuple(k for k in DEFAULT_COST_KEYS if k in ("team", "project"))
#: The DCGM metric of the idle alert: a ratio (0..1) that MIG instances report too.
IDLE_METRIC = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


def idle_alert_pod_label_values(nvidia: NvidiaConfig) -> dict[str, Any]:
    """GPU Operator ``dcgmExporter`` values that put the pod's team/project labels on DCGM metrics, when the idle alert is on.

    dcgm-exporter adds ``pod``, ``namespace`` and ``container`` to the metrics of a GPU (or MIG
    instance) a pod holds (``DCGM_EXPORTER_KUBERNETES=true`` in the operator's DaemonSet,
    NVIDIA/gpu-operator v26.7.0 ``assets/state-dcgm-exporter/0800_daemonset.yaml``), and the
    pod's own labels only with ``enablePodLabels`` (opt-in, ``values.yaml``), bounded by
    ``podLabelAllowlistRegex`` (``controllers/object_controls.go``:
    ``DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS``, ``..._POD_LABEL_ALLOWLIST_REGEX``); the label
    key is sanitized to a Prometheus name (NVIDIA/dcgm-exporter ``internal/pkg/transformation/kubernetes.go``,
    ``utils.SanitizeLabelName``: ``cost-center`` -> ``cost_center``). So the alert reads team and
    project from the metric itself: no kube-state-metrics ``kube_pod_labels`` join, whose labels
    exist only if kube-state-metrics runs with ``--metric-labels-allowlist=pods=[...]``, which
    hybridgpu does not install.
    """
    if not (nvidia.dcgm.enabled and nvidia.dcgm.idle_alert.enabled):
        return {}
    return {"enablePodLabels": True, "podLabelAllowlistRegex": [f"^{re.escape(k)}$" for k in IDLE_ALERT_POD_LABELS]}


def failure_alert_rule(nvidia: NvidiaConfig) -> dict[str, Any] | None:
    """The GPU-failure PrometheusRule (:func:`hybridgpu.render.gpu_alerts.gpu_failure_rule`) in the
    NVIDIA namespace with the stack's ``prometheusLabels``, or None when DCGM or ``dcgm.failureAlerts`` is off.
    Its MultiKueue worker alert is not included: it belongs to the Kueue manager's cluster."""
    if not (nvidia.dcgm.enabled and nvidia.dcgm.failure_alerts):
        return None
    return gpu_failure_rule(nvidia.namespace, nvidia.dcgm.prometheus_labels)


def dcgm_alert_rule(nvidia: NvidiaConfig) -> dict[str, Any] | None:
    """A ``monitoring.coreos.com/v1`` PrometheusRule alerting on idle GPUs and idle MIG instances, or None when DCGM or the alert is off.

    The alert ``HybridGpuIdle`` fires for a GPU, or a MIG instance, whose
    ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` averaged over ``forMinutes`` is below
    ``utilizationBelowPercent`` / 100 (the metric is a ratio of time the graphics/compute engine
    is active, 0..1: "Ratio of time the graphics engine is active", NVIDIA/dcgm-exporter
    ``etc/dcp-metrics-included.csv``, the collectors file the GPU Operator v26.7.0 sets in
    ``DCGM_EXPORTER_COLLECTORS``, and ``etc/default-counters.csv``; both at 4.5.3-4.8.2, read
    2026-11-24). ``DCGM_FI_DEV_GPU_UTIL`` (percent) is not used because NVML reports no GPU
    utilization while MIG mode is on (NVIDIA MIG User Guide: "GPU utilization is not supported
    when MIG mode is enabled"), whereas the DCGM profiling metrics are reported per GPU
    instance: dcgm-exporter labels a MIG instance's series ``GPU_I_PROFILE`` and ``GPU_I_ID``
    (``internal/pkg/rendermetrics/render_metrics.go``).

    Labels of the alert: ``node`` (from the exporter's ``hostname``, or ``Hostname`` before
    dcgm-exporter's 2026-05 rename), ``gpu``, ``UUID``, ``modelName``, ``GPU_I_PROFILE`` and
    ``GPU_I_ID`` (MIG), and for a GPU a pod holds its ``namespace``, ``pod`` and the pod's
    ``team`` / ``project`` labels (:func:`idle_alert_pod_label_values`). The series must have
    reported ``forMinutes`` ago too, so a node that just joined does not alert on a partial window.
    """
    if not (nvidia.dcgm.enabled and nvidia.dcgm.idle_alert.enabled):
        return None
    alert = nvidia.dcgm.idle_alert
    window = f"{alert.for_minutes}m"
    percent = f"{alert.utilization_below_percent:g}"
    ratio = f"{alert.utilization_below_percent / 100:g}"
    device = "UUID, gpu, GPU_I_ID"
    by = ", ".join(("node", "gpu", "UUID", "modelName", "GPU_I_PROFILE", "GPU_I_ID", "namespace", "pod", *IDLE_ALERT_POD_LABELS))
    expr = (
        f"avg by ({by}) (\n"
        f'  label_join(avg_over_time({IDLE_METRIC}[{window}]), "node", "", "hostname", "Hostname")\n'
        f") < {ratio}\n"
        f"and on ({device}) count by ({device}) ({IDLE_METRIC} offset {window})"
    )
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "hybridgpu-gpu-idle", "namespace": nvidia.namespace, "labels": {**managed_by_labels(), **nvidia.dcgm.prometheus_labels}},
        "spec": {
            "groups": [
                {
                    "name": "hybridgpu-gpu-utilization",
                    "rules": [
                        {
                            "alert": "HybridGpuIdle",
                            "expr": expr,
                            "labels": {"severity": "warning"},
                            "annotations": {
                                "summary": "GPU {{ $labels.gpu }}{{ if $labels.GPU_I_PROFILE }} MIG {{ $labels.GPU_I_PROFILE }}{{ end }} on node {{ $labels.node }} is idle",
                                "description": (
                                    "GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) "
                                    "{{ if $labels.GPU_I_PROFILE }}MIG instance {{ $labels.GPU_I_PROFILE }} (GI {{ $labels.GPU_I_ID }}) {{ end }}"
                                    "on node {{ $labels.node }}"
                                    "{{ if $labels.pod }}, held by pod {{ $labels.namespace }}/{{ $labels.pod }} (team {{ $labels.team }}, project {{ $labels.project }}){{ end }}, "
                                    f"had its engine active {{{{ $value | humanizePercentage }}}} of the last {alert.for_minutes} minutes "
                                    f"(threshold {percent}%). An idle GPU still costs money: scale the workload down or let the node consolidate."
                                ),
                            },
                        }
                    ],
                }
            ]
        },
    }


#: API group of the Prometheus Operator's CRDs (PrometheusRule, ServiceMonitor).
MONITORING_GROUP = "monitoring.coreos.com"
#: The CRD :func:`dcgm_alert_rule` needs, read first under ``prometheusOperatorCrds: preinstalled``.
PROMETHEUSRULE_CRD = "prometheusrules.monitoring.coreos.com"
#: Chart that ships the Prometheus Operator CRDs (prometheus-community/helm-charts README of the chart, read 2026-11-24).
PROMETHEUS_OPERATOR_CRDS_CHART = "oci://ghcr.io/prometheus-community/charts/prometheus-operator-crds"


def monitoring_kinds(nvidia: NvidiaConfig) -> tuple[tuple[str, str], ...]:
    """The ``monitoring.coreos.com`` kinds the NVIDIA layer's objects need: ``(group, kind)`` pairs, empty when none.

    ``PrometheusRule`` when :func:`dcgm_alert_rule` renders one; ``ServiceMonitor`` when the GPU
    Operator is asked for one (it creates it itself, and skips it while the CRD is missing:
    NVIDIA/gpu-operator v26.7.0 ``controllers/object_controls.go`` ``ServiceMonitor``, read 2026-11-24).
    """
    kinds = []
    if dcgm_alert_rule(nvidia) is not None or failure_alert_rule(nvidia) is not None:
        kinds.append((MONITORING_GROUP, "PrometheusRule"))
    if nvidia.install == "gpu-operator" and nvidia.dcgm.enabled and nvidia.dcgm.service_monitor:
        kinds.append((MONITORING_GROUP, "ServiceMonitor"))
    return tuple(kinds)


def installs_prometheus_crds(nvidia: NvidiaConfig) -> bool:
    """True if the NVIDIA layer installs the ``prometheus-operator-crds`` chart (monitoring objects on, ``prometheusOperatorCrds: install``)."""
    return bool(monitoring_kinds(nvidia)) and nvidia.dcgm.prometheus_operator_crds == "install"


def declared_crds(nvidia: NvidiaConfig) -> tuple[tuple[str, str], ...]:
    """The CRDs the stack declares as preconditions (``prometheusOperatorCrds: preinstalled``) for its own objects, as ``(group, kind)``."""
    return monitoring_kinds(nvidia) if nvidia.dcgm.prometheus_operator_crds == "preinstalled" else ()


# --------------------------------------------------------------------------- Karpenter


def nodepool_labels(nvidia: NvidiaConfig, pool_name: str) -> dict[str, str]:
    """Template labels for an EKS NodePool: ``nvidia.com/mig.config`` and/or ``nvidia.com/device-plugin.config``.

    Returns:
        ``{}`` when the pool has no NVIDIA settings; pass the result as
        ``render_nodepool(..., extra_labels=...)``.
    """
    settings = nvidia.node_pools.get(pool_name)
    labels: dict[str, str] = {}
    if settings is None:
        return labels
    if settings.mig_config:
        labels[MIG_CONFIG_LABEL] = settings.mig_config
    if settings.device_config:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = settings.device_config
    return labels


def node_capacity(nvidia: NvidiaConfig, pool_name: str, gpu_count: int) -> dict[str, int]:
    """The NVIDIA extended resources a node of ``pool_name`` with ``gpu_count`` GPUs will advertise.

    Applies the pool's MIG layout under the strategy (``mixed``: ``nvidia.com/gpu`` = GPUs
    with MIG off, ``nvidia.com/mig-<profile>`` = instances x GPUs; ``single``: every MIG
    device counts as ``nvidia.com/gpu``; ``none``: MIG ignored), then the pool's sharing
    config (each shared resource x replicas, renamed ``<name>.shared`` with
    ``renameByDefault``). GPU indices of per-GPU layouts at or beyond ``gpu_count`` are
    ignored; GPUs no device group names count as MIG-disabled. ``nvidia.com/gpu`` is always
    present (possibly 0).

    Args:
        nvidia: a checked NVIDIA section.
        pool_name: EKS NodePool name.
        gpu_count: GPUs per node of the instance type (count).

    Returns:
        Resource name -> count, e.g. ``{"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 56}``.
    """
    settings = nvidia.node_pools.get(pool_name)
    layout = nvidia.layout(settings.mig_config) if settings else None
    per_gpu: list[dict[str, int] | None] = [None] * gpu_count
    if layout is not None and nvidia.mig_strategy != "none":
        for gpus, enabled, counts in layout.groups():
            for idx in range(gpu_count) if gpus is None else gpus:
                if idx < gpu_count:
                    per_gpu[idx] = dict(counts) if enabled else None
    whole = sum(1 for g in per_gpu if g is None)
    mig: Counter[str] = Counter()
    for g in per_gpu:
        if g is not None:
            mig.update(g)
    resources: dict[str, int] = {}
    if nvidia.mig_strategy == "single":
        resources[GPU_RESOURCE] = whole + sum(mig.values())
    else:
        resources[GPU_RESOURCE] = whole
        for profile, count in mig.items():
            name = mig_resource_name(profile)
            resources[name] = resources.get(name, 0) + count
    ts = nvidia.sharing_config(settings.device_config) if settings else None
    if ts is not None:
        for res in ts.resources:
            base = resources.get(res.name, 0)
            if not base:
                continue
            if ts.rename_by_default:
                resources[res.name] = 0
                resources[res.name + SHARED_SUFFIX] = base * res.replicas
            else:
                resources[res.name] = base * res.replicas
    return resources


def _overlay_name(pool: str, instance_type: str) -> str:
    return f"hybridgpu-{pool}-{instance_type.replace('.', '-')}"


def node_overlays(
    nvidia: NvidiaConfig, pools: Mapping[str, tuple[str, int] | Sequence[tuple[str, int]]]
) -> list[dict[str, Any]]:
    """``karpenter.sh/v1alpha1`` NodeOverlays advertising MIG / shared GPU capacity of NodePools.

    Karpenter's scheduling simulation otherwise assumes ``nvidia.com/gpu`` = the instance's
    GPU count, so it would neither launch a MIG node for a pod asking for
    ``nvidia.com/mig-1g.10gb`` nor pack time-sliced pods, and it would wait for resources
    the node never registers. One overlay per (pool, instance type), selected by the
    requirements ``karpenter.sh/nodepool In [pool]`` and ``node.kubernetes.io/instance-type
    In [type]``, with ``spec.capacity`` = :func:`node_capacity`. Pools without a MIG layout
    or sharing config, or whose capacity equals the plain GPU count, get none. Needs the
    Karpenter feature gate ``nodeOverlay``.

    Args:
        nvidia: a checked NVIDIA section.
        pools: NodePool name -> ``(instance type, GPUs per instance)`` or a list of such
            pairs (every instance type the pool may launch, e.g. from
            :func:`hybridgpu.render.karpenter.resolve_instance_types`).

    Returns:
        The NodeOverlay manifests, sorted by name.
    """
    overlays = []
    for pool, spec in pools.items():
        settings = nvidia.node_pools.get(pool)
        if settings is None or not (settings.mig_config or settings.device_config):
            continue
        pairs = [spec] if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) else list(spec)
        for instance_type, gpu_count in pairs:
            capacity = node_capacity(nvidia, pool, gpu_count)
            if capacity == {GPU_RESOURCE: gpu_count}:
                continue
            overlays.append(
                {
                    "apiVersion": NODEOVERLAY_API,
                    "kind": "NodeOverlay",
                    "metadata": {"name": _overlay_name(pool, instance_type), "labels": managed_by_labels()},
                    "spec": {
                        "requirements": [
                            {"key": KARPENTER_NODEPOOL_LABEL, "operator": "In", "values": [pool]},
                            {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [instance_type]},
                        ],
                        "capacity": dict(sorted(capacity.items())),
                    },
                }
            )
    return sorted(overlays, key=lambda o: o["metadata"]["name"])


def nodepool_extra_limits(nvidia: NvidiaConfig, pool_name: str, gpu_limit: int, instance_gpu_counts: Sequence[int]) -> dict[str, str]:
    """NodePool ``spec.limits`` that keep a pool at ``gpu_limit`` physical GPUs under NodeOverlays.

    With overlays, a node advertises what the NVIDIA layer makes of its GPUs, not the EC2 GPU
    count: ``nvidia.com/gpu: 0`` plus ``nvidia.com/mig-*`` under the mixed strategy, or
    ``nvidia.com/gpu`` = GPUs x replicas with time-slicing. A plain ``nvidia.com/gpu:
    <gpuLimit>`` limit would then bound nothing (MIG) or count shares instead of GPUs
    (time-slicing). Every advertised resource ``r`` gets the limit ``ceil(gpu_limit x max over
    instance types of capacity_r / GPUs)``: what ``gpu_limit`` GPUs of the pool provide.
    ``nvidia.com/gpu`` never goes below ``gpu_limit`` (so a mixed MIG pool with whole GPUs keeps
    its plain limit).

    Args:
        nvidia: a checked NVIDIA section.
        pool_name: EKS NodePool name.
        gpu_limit: the pool's GPU limit, in physical GPUs.
        instance_gpu_counts: GPUs per instance of each type the pool may launch.

    Returns:
        Resource name -> limit (as Kubernetes quantity strings), to merge over the NodePool's
        ``{"nvidia.com/gpu": gpuLimit}``; ``{}`` when the pool has no MIG or sharing settings.
    """
    settings = nvidia.node_pools.get(pool_name)
    if settings is None or not (settings.mig_config or settings.device_config):
        return {}
    ratios: dict[str, float] = {}
    for gpus in instance_gpu_counts:
        for resource, count in node_capacity(nvidia, pool_name, gpus).items():
            if count == 0:
                continue
            ratios[resource] = max(ratios.get(resource, 0.0), count / gpus)
    limits = {resource: str(math.ceil(gpu_limit * ratio)) for resource, ratio in sorted(ratios.items()) if resource != GPU_RESOURCE}
    if ratios.get(GPU_RESOURCE, 0.0) > 1:
        limits[GPU_RESOURCE] = str(math.ceil(gpu_limit * ratios[GPU_RESOURCE]))
    return dict(sorted(limits.items()))
