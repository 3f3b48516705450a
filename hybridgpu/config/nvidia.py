"""Typed NVIDIA layer configuration (config key ``hybridgpu:nvidia``) and its semantic checks.

The NVIDIA layer decides how GPUs of the cluster's nodes are driven and exposed to
Kubernetes:

* which installer runs the node software (:attr:`NvidiaConfig.install`: the NVIDIA GPU
  Operator, or only the standalone NVIDIA k8s-device-plugin chart with GPU feature
  discovery), and whether drivers / the container toolkit come with the host image
  (EKS AL2023 and Bottlerocket NVIDIA AMIs and DGX OS ship both);
* MIG partitioning: named layouts (:class:`MigLayoutConfig`) rendered into one NVIDIA
  mig-parted config, selected per node with the label ``nvidia.com/mig.config``;
* GPU sharing: named device-plugin configs (:class:`TimeSlicingConfig`, time-slicing or
  MPS), selected per node with the label ``nvidia.com/device-plugin.config``;
* which EKS NodePool gets which layout / sharing config (:attr:`NvidiaConfig.node_pools`);
* DCGM exporter metrics and an idle-GPU alert; pinned chart versions.

Shapes and ranges are checked by the pydantic models (camelCase keys, unknown keys
rejected, frozen; every field names its unit and default). Cross-field rules and the MIG
geometry are checked by :func:`nvidia_issues`, which returns
:class:`~hybridgpu.errors.Issue` records with key paths such as
``hybridgpu:nvidia.migLayouts[0].layout``.

Upstream facts used here (read 2026-11-22 from the repositories' tags):

* NVIDIA/k8s-device-plugin v0.20.0 (tag 2026-08-19): ``api/config/v1`` (``replicas >= 2``;
  ``sharing.timeSlicing`` / ``sharing.mps``; rename suffix ``.shared``), ``internal/rm/rm.go``
  (MIG resource names ``nvidia.com/mig-<profile>`` with ``+`` replaced by ``.``),
  ``internal/rm/device_map.go`` (``single`` needs the same ``migEnabled`` value on every GPU
  and one MIG device type per node), ``cmd/nvidia-device-plugin/main.go`` (MPS is refused
  with ``migStrategy: mixed``), ``internal/plugin/mps.go`` / README (MPS is not supported on
  MIG devices).
* NVIDIA/mig-parted v0.15.0 (tag 2026-08-19): ``api/spec/v1/spec.go``.
* NVIDIA/gpu-operator v26.7.0 (tag 2026-08-20): ``deployments/gpu-operator/values.yaml``.
* MIG geometry: :mod:`hybridgpu.mig` (NVIDIA MIG User Guide v580, checked 2026-11-22).

Nothing here imports Pulumi.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from hybridgpu.config.base import Dns1123Name, Model
from hybridgpu.errors import Issue, suggest
from hybridgpu.k8s import GPU_RESOURCE, mig_resource_name
from hybridgpu.mig import (
    UnknownMigModelError,
    UnknownMigProfileError,
    check_layout,
    mig_gpu,
)

__all__ = [
    "ALL_DISABLED",
    "DEFAULT_DEVICE_CONFIG",
    "DEVICE_PLUGIN_VERSION",
    "GFD_VERSION",
    "GPU_OPERATOR_VERSION",
    "NVIDIA",
    "DcgmConfig",
    "IdleAlertConfig",
    "MigDeviceGroup",
    "MigLayoutConfig",
    "NodePoolNvidia",
    "NvidiaConfig",
    "NvidiaVersions",
    "SharedResource",
    "TimeSlicingConfig",
    "nvidia_issues",
]

#: Pulumi config key of the NVIDIA section; every issue's key path starts with it.
NVIDIA = "hybridgpu:nvidia"

#: NVIDIA GPU Operator Helm chart version deployed by default.
#: Source: NVIDIA/gpu-operator tag v26.7.0 (2026-08-20; Helm release PR #2783, 2026-08-21),
#: the newest release whose tag and chart could be read (checked 2026-11-22). It bundles
#: k8s-device-plugin/GFD v0.20.0, mig-manager v0.15.0, container toolkit v1.20.0 and
#: dcgm-exporter 4.6.0-4.8.3 (``deployments/gpu-operator/values.yaml`` at the tag).
GPU_OPERATOR_VERSION = "v26.7.0"

#: NVIDIA k8s-device-plugin Helm chart (``nvidia-device-plugin``) version deployed by default.
#: Source: NVIDIA/k8s-device-plugin tag v0.20.0 (2026-08-19),
#: ``deployments/helm/nvidia-device-plugin/Chart.yaml`` version "0.20.0"; the same version the
#: GPU Operator v26.7.0 bundles (checked 2026-11-22).
DEVICE_PLUGIN_VERSION = "0.20.0"

#: Version of the same chart used for the GPU feature discovery release (GFD lives in the
#: k8s-device-plugin repository and chart since v0.15; the chart deploys it with
#: ``gfd.enabled``). Source: as :data:`DEVICE_PLUGIN_VERSION`.
GFD_VERSION = "0.20.0"

#: ``prometheus-operator-crds`` Helm chart version installed when monitoring objects need the
#: ``monitoring.coreos.com`` CRDs (``dcgm.prometheusOperatorCrds: install``). Source:
#: prometheus-community/helm-charts tag prometheus-operator-crds-31.0.1 (commit 4529d7bb,
#: 2026-08-10), ``charts/prometheus-operator-crds/Chart.yaml`` version 31.0.1, appVersion v0.93.1
#: (Prometheus Operator); CRDs in ``charts/crds/templates/``, so the release manages them (read 2026-11-24).
PROMETHEUS_OPERATOR_CRDS_VERSION = "31.0.1"

#: mig-parted config always rendered; the GPU Operator's ``migManager.config.default``
#: (values.yaml v26.7.0) and the label value for GPUs without a layout.
ALL_DISABLED = "all-disabled"

#: Key of the device-plugin ConfigMap holding the config without sharing (``config.default``).
DEFAULT_DEVICE_CONFIG = "default"

#: Count of one MIG profile, or replicas: a whole number >= 1.
Count = Annotated[int, Field(ge=1, le=64)]
GpuIndex = Annotated[int, Field(ge=0, le=63)]
ProfileCounts = dict[Annotated[str, StringConstraints(min_length=1, max_length=32)], Count]


# --------------------------------------------------------------------------- models


class MigDeviceGroup(Model):
    """MIG setting of some GPUs of a node (one mig-parted ``mig-configs`` entry with a device list).

    Either ``layout`` (MIG enabled, these instances on each listed GPU) or
    ``migEnabled: false`` (whole GPUs). mig-parted requires ``mig-devices`` when MIG is
    enabled and forbids it when disabled (NVIDIA/mig-parted v0.15.0 ``api/spec/v1/spec.go``).
    """

    gpus: list[GpuIndex] = Field(
        min_length=1, description="GPU indices on the node (0-based, as nvidia-smi numbers them), e.g. `[0, 1, 2, 3]`. Required."
    )
    mig_enabled: bool = Field(default=True, description="MIG mode of these GPUs. Default: true (then `layout` is required).")
    layout: ProfileCounts | None = Field(
        default=None,
        description="MIG profile -> instances per GPU (count), e.g. `{3g.40gb: 1, 2g.20gb: 2}`. Required when MIG is enabled, forbidden when not. Default: none.",
    )

    @model_validator(mode="after")
    def _layout_matches_mode(self) -> MigDeviceGroup:
        if self.mig_enabled and not self.layout:
            raise ValueError("a MIG-enabled device group needs a non-empty `layout` (or set `migEnabled: false`)")
        if not self.mig_enabled and self.layout:
            raise ValueError("`layout` is not allowed with `migEnabled: false` (mig-parted forbids mig-devices on MIG-disabled GPUs)")
        return self


class MigLayoutConfig(Model):
    """A named MIG layout for nodes of one GPU model (one mig-parted config).

    Give ``layout`` for the same instances on every GPU of the node, or ``devices`` for
    per-GPU layouts. A node selects it with the label ``nvidia.com/mig.config=<name>``.
    """

    name: Dns1123Name = Field(
        description="Layout name (DNS-1123): the mig-parted config name and the value of the node label `nvidia.com/mig.config`. Required."
    )
    gpu_model: str = Field(
        description="GPU model key with MIG data (`hybridgpu mig` / hybridgpu.mig.mig_models()), e.g. `H100-80GB`, `A100-40GB`. Required."
    )
    layout: ProfileCounts | None = Field(
        default=None,
        description="MIG profile -> instances per GPU (count) for all GPUs of the node, e.g. `{1g.10gb: 7}`. Default: none (then `devices` is required).",
    )
    devices: list[MigDeviceGroup] | None = Field(
        default=None,
        min_length=1,
        description="Per-GPU layouts: `[{gpus: [0, 1], layout: {...}}, {gpus: [2, 3], migEnabled: false}]`. Default: none (then `layout` is required).",
    )

    @model_validator(mode="after")
    def _one_of_layout_or_devices(self) -> MigLayoutConfig:
        if (self.layout is None) == (self.devices is None):
            raise ValueError("give exactly one of `layout` (same layout on every GPU) or `devices` (per-GPU layouts)")
        if self.layout is not None and not self.layout:
            raise ValueError("`layout` must name at least one MIG profile")
        return self

    def groups(self) -> list[tuple[list[int] | None, bool, dict[str, int]]]:
        """The layout as ``(gpu indices or None for all GPUs, MIG enabled, profile -> count)`` entries."""
        if self.layout is not None:
            return [(None, True, dict(self.layout))]
        return [(list(g.gpus), g.mig_enabled, dict(g.layout or {})) for g in self.devices or []]

    @property
    def mig_enabled(self) -> bool:
        """True if the layout enables MIG on at least one GPU."""
        return any(enabled for _, enabled, _ in self.groups())

    @property
    def profiles(self) -> set[str]:
        """MIG profiles the layout creates (on any GPU)."""
        return {p for _, enabled, counts in self.groups() if enabled for p in counts}


class SharedResource(Model):
    """One resource shared by time-slicing or MPS (``sharing.*.resources[]`` of the device plugin)."""

    name: Annotated[str, StringConstraints(pattern=r"^nvidia\.com/(gpu|mig-[0-9a-z.+-]+)$")] = Field(
        description=(
            "Resource to share: `nvidia.com/gpu`, or under `migStrategy: mixed` `nvidia.com/mig-<profile>` "
            "(a `+me` profile is spelled `.me`, e.g. `nvidia.com/mig-1g.10gb.me`). Required."
        )
    )
    replicas: int = Field(
        description="Shares advertised per device (count); the device plugin requires >= 2. Required.",
    )


class TimeSlicingConfig(Model):
    """A named device-plugin sharing config (NVIDIA/k8s-device-plugin ``api/config/v1``).

    A node selects it with the label ``nvidia.com/device-plugin.config=<name>``.
    """

    name: Dns1123Name = Field(
        description="Config name (DNS-1123): the key in the device-plugin ConfigMap and the value of the node label `nvidia.com/device-plugin.config`. Required."
    )
    sharing: Literal["timeSlicing", "mps"] = Field(
        default="timeSlicing",
        description=(
            "Sharing mechanism: CUDA time-slicing, or MPS (experimental upstream; not supported on MIG devices "
            "nor with `migStrategy: mixed`). Default: `timeSlicing`."
        ),
    )
    resources: list[SharedResource] = Field(min_length=1, description="Resources to share and their replicas. Required (at least one).")
    rename_by_default: bool = Field(
        default=False, description="Advertise shared resources as `<name>.shared` (e.g. `nvidia.com/gpu.shared`). Default: false."
    )
    fail_requests_greater_than_one: bool = Field(
        default=True,
        description="Reject pods that request more than one shared replica (a share is access, not a proportion of the GPU). Default: true (upstream recommends it).",
    )


class NodePoolNvidia(Model):
    """NVIDIA settings of one EKS NodePool: node labels that select a MIG layout and a sharing config."""

    mig_config: Dns1123Name | None = Field(
        default=None,
        description=f"Name of a `migLayouts` entry, set as node label `nvidia.com/mig.config`. Default: none (the GPU Operator applies `{ALL_DISABLED}`).",
    )
    device_config: Dns1123Name | None = Field(
        default=None,
        description=f"Name of a `timeSlicing` entry, set as node label `nvidia.com/device-plugin.config`. Default: none (config `{DEFAULT_DEVICE_CONFIG}`, no sharing).",
    )


class IdleAlertConfig(Model):
    """A Prometheus alert for GPUs and MIG instances that sit idle (paid for, unused); labelled with the holding pod's team and project."""

    enabled: bool = Field(
        default=False,
        description="Create the idle-GPU PrometheusRule (its CRD: see `dcgm.prometheusOperatorCrds`). Default: false.",
    )
    utilization_below_percent: float = Field(
        default=5, ge=0, le=100, description=(
            "Alert when the share of time the GPU's (or MIG instance's) engine is active, `DCGM_FI_PROF_GR_ENGINE_ACTIVE` averaged over "
            "`forMinutes`, is below this, in percent (0-100; the rule compares the metric's 0..1 ratio with this / 100). Default: 5."
        )
    )
    for_minutes: int = Field(default=60, ge=5, le=10080, description="Averaging window, in minutes (5 to 10080 = 7 days). Default: 60.")


class DcgmConfig(Model):
    """DCGM exporter (GPU metrics) settings."""

    enabled: bool = Field(default=True, description="Run the DCGM exporter (GPU Operator `dcgmExporter.enabled`). Default: true.")
    service_monitor: bool = Field(
        default=False,
        description=(
            "Have the GPU Operator create a Prometheus Operator ServiceMonitor for it (the operator skips it while the "
            "`servicemonitors.monitoring.coreos.com` CRD is missing; see `prometheusOperatorCrds`). Default: false."
        ),
    )
    prometheus_operator_crds: Literal["install", "preinstalled"] = Field(
        default="install",
        description=(
            "Where the `monitoring.coreos.com` CRDs that the ServiceMonitor and the idle-GPU PrometheusRule need come from, when "
            "either is on. `install`: hybridgpu installs the pinned `prometheus-operator-crds` chart "
            f"(`versions.prometheusOperatorCrds`) before them, so a first `pulumi up` of a new cluster works. `preinstalled`: "
            "a precondition you declare (e.g. kube-prometheus-stack runs there); `pulumi up` then reads the "
            "`prometheusrules.monitoring.coreos.com` CRD first and stops with not found if it is missing. Default: `install`."
        ),
    )
    idle_alert: IdleAlertConfig = Field(default_factory=IdleAlertConfig, description="Idle-GPU alert. Default: off; when on, below 5% averaged over 60 minutes.")
    failure_alerts: bool = Field(
        default=False,
        description=(
            "Create the GPU-failure PrometheusRule `hybridgpu-gpu-failures` (fatal Xid errors, row-remap failures, GPUs gone "
            "from a node's allocatable, NotReady nodes with GPUs; docs/nvidia.md), beside the idle alert and with its "
            "`prometheusLabels` (its CRD: see `prometheusOperatorCrds`). Default: false."
        ),
    )
    prometheus_labels: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Labels on the ServiceMonitor and the PrometheusRule so the cluster's Prometheus selects them, e.g. "
            "`{release: kube-prometheus-stack}` (that chart only picks up objects with its release label by default). Default: none."
        ),
    )


class NvidiaVersions(Model):
    """Pinned Helm chart versions of the NVIDIA components."""

    gpu_operator: Annotated[str, StringConstraints(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")] = Field(
        default=GPU_OPERATOR_VERSION,
        description=(
            f"`gpu-operator` chart version (https://helm.ngc.nvidia.com/nvidia). Default: `{GPU_OPERATOR_VERSION}` "
            "(NVIDIA/gpu-operator tag v26.7.0, released 2026-08-20; checked 2026-11-22)."
        ),
    )
    device_plugin: Annotated[str, StringConstraints(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")] = Field(
        default=DEVICE_PLUGIN_VERSION,
        description=(
            f"`nvidia-device-plugin` chart version (https://nvidia.github.io/k8s-device-plugin), used with `install: device-plugin`. "
            f"Default: `{DEVICE_PLUGIN_VERSION}` (NVIDIA/k8s-device-plugin tag v0.20.0, released 2026-08-19; checked 2026-11-22)."
        ),
    )
    gpu_feature_discovery: Annotated[str, StringConstraints(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")] = Field(
        default=GFD_VERSION,
        description=(
            "Version of the `nvidia-device-plugin` chart used for the GPU feature discovery release (`gfd.enabled`), "
            f"used with `install: device-plugin`. Default: `{GFD_VERSION}` (same source and date as `devicePlugin`)."
        ),
    )
    prometheus_operator_crds: Annotated[str, StringConstraints(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")] = Field(
        default=PROMETHEUS_OPERATOR_CRDS_VERSION,
        description=(
            "`prometheus-operator-crds` chart version (oci://ghcr.io/prometheus-community/charts), installed with "
            f"`dcgm.prometheusOperatorCrds: install` when monitoring objects are on. Default: `{PROMETHEUS_OPERATOR_CRDS_VERSION}` "
            "(prometheus-community/helm-charts tag prometheus-operator-crds-31.0.1, 2026-08-10; checked 2026-11-24)."
        ),
    )


class NvidiaConfig(Model):
    """The NVIDIA GPU layer (config key ``hybridgpu:nvidia``).

    Example (stack file)::

        hybridgpu:nvidia:
          migStrategy: mixed
          migLayouts:
            - {name: h100-half, gpuModel: H100-80GB, layout: {3g.40gb: 1, 2g.20gb: 2}}
          timeSlicing:
            - name: shared-4
              resources: [{name: nvidia.com/gpu, replicas: 4}]
          nodePools:
            gpu-h100: {migConfig: h100-half}
            gpu-l4: {deviceConfig: shared-4}
    """

    install: Literal["gpu-operator", "device-plugin"] = Field(
        default="gpu-operator",
        description=(
            "What installs the node software: the NVIDIA GPU Operator (device plugin, GFD, mig-manager, DCGM exporter), "
            "or only the standalone `nvidia-device-plugin` chart with GPU feature discovery (no MIG reconfiguration). "
            "Default: `gpu-operator`."
        ),
    )
    driver: Literal["preinstalled", "operator"] = Field(
        default="preinstalled",
        description=(
            "Where the NVIDIA driver comes from: the host image (EKS AL2023/Bottlerocket NVIDIA AMIs, DGX OS: "
            "GPU Operator `driver.enabled: false`) or the GPU Operator's driver container. Default: `preinstalled`."
        ),
    )
    toolkit: Literal["preinstalled", "operator"] = Field(
        default="preinstalled",
        description=(
            "Where the NVIDIA Container Toolkit comes from: the host image (the EKS NVIDIA AMIs and DGX OS ship it: "
            "`toolkit.enabled: false`) or the GPU Operator. Default: `preinstalled`."
        ),
    )
    mig_strategy: Literal["none", "single", "mixed"] = Field(
        default="mixed",
        description=(
            "How MIG devices are exposed: `none` (not at all), `single` (as `nvidia.com/gpu`; every GPU of a node "
            "MIG-enabled with one profile), `mixed` (as `nvidia.com/mig-<profile>`). Default: `mixed`."
        ),
    )
    mig_layouts: list[MigLayoutConfig] = Field(default_factory=list, description="Named MIG layouts. Default: none.")
    time_slicing: list[TimeSlicingConfig] = Field(default_factory=list, description="Named GPU sharing configs. Default: none.")
    node_pools: dict[Dns1123Name, NodePoolNvidia] = Field(
        default_factory=dict,
        description="EKS NodePool name -> `{migConfig, deviceConfig}`. Default: none (pools get no MIG layout and no sharing).",
    )
    dcgm: DcgmConfig = Field(
        default_factory=DcgmConfig,
        description="DCGM exporter and idle alert. Default: exporter on; ServiceMonitor and alert off (Prometheus Operator objects; their CRDs: `prometheusOperatorCrds`).",
    )
    versions: NvidiaVersions = Field(default_factory=NvidiaVersions, description="Pinned chart versions. Default: see `NvidiaVersions`.")
    namespace: Dns1123Name = Field(
        default="gpu-operator", description="Namespace of the NVIDIA components and their ConfigMaps. Default: `gpu-operator`."
    )

    def layout(self, name: str | None) -> MigLayoutConfig | None:
        """The MIG layout called ``name`` (first match), or None."""
        return next((m for m in self.mig_layouts if m.name == name), None)

    def sharing_config(self, name: str | None) -> TimeSlicingConfig | None:
        """The time-slicing/MPS config called ``name`` (first match), or None."""
        return next((t for t in self.time_slicing if t.name == name), None)


# --------------------------------------------------------------------------- checks


def _groups_with_keys(layout: MigLayoutConfig, key: str) -> Iterator[tuple[str, list[int] | None, bool, dict[str, int]]]:
    if layout.layout is not None:
        yield f"{key}.layout", None, True, dict(layout.layout)
        return
    for j, group in enumerate(layout.devices or []):
        yield f"{key}.devices[{j}]", list(group.gpus), group.mig_enabled, dict(group.layout or {})


def _layout_issues(nvidia: NvidiaConfig, layout: MigLayoutConfig, key: str, file: str) -> list[Issue]:
    issues: list[Issue] = []
    try:
        gpu = mig_gpu(layout.gpu_model)
    except UnknownMigModelError as exc:
        return [Issue(file, f"{key}.gpuModel", exc.message, f"use one of: {', '.join(exc.known)}")]

    for group_key, _gpus, enabled, counts in _groups_with_keys(layout, key):
        if not enabled:
            continue
        layout_key = group_key if group_key.endswith(".layout") else f"{group_key}.layout"
        unknown = [p for p in counts if not gpu.has_profile(p)]
        for profile in unknown:
            err = UnknownMigProfileError(gpu.name, profile, gpu.profile_names)
            issues.append(Issue(file, layout_key, err.message, f"use profiles of {gpu.name}: {', '.join(gpu.profile_names)}"))
        if unknown:
            continue
        placement = check_layout(gpu.name, counts)
        if not placement.ok:
            mix = ", ".join(f"{n} x {p}" for p, n in counts.items())
            issues.append(
                Issue(
                    file,
                    layout_key,
                    f"MIG layout {mix} cannot be placed on one {gpu.name}: {placement.reason}",
                    "remove or shrink instances until the layout fits (`hybridgpu mig check <model> <profile>=<n> ...` shows what fits and why)",
                )
            )

    if layout.devices is not None:
        seen: dict[int, int] = {}
        for j, group in enumerate(layout.devices):
            repeated = sorted({g for g in group.gpus if group.gpus.count(g) > 1})
            overlap = sorted({g for g in set(group.gpus) if g in seen})
            if repeated:
                issues.append(
                    Issue(file, f"{key}.devices[{j}].gpus", f"GPU index(es) {repeated} listed more than once", "list each GPU once")
                )
            if overlap:
                where = ", ".join(f"GPU {g} in devices[{seen[g]}]" for g in overlap)
                issues.append(
                    Issue(
                        file,
                        f"{key}.devices[{j}].gpus",
                        f"GPU index(es) {overlap} are already covered ({where}); mig-parted would apply both entries to the same GPU",
                        "give every GPU index to exactly one device group",
                    )
                )
            for g in group.gpus:
                seen.setdefault(g, j)

    if nvidia.mig_strategy == "single":
        groups = layout.groups()
        modes = {enabled for _, enabled, _ in groups}
        shapes = {tuple(sorted(counts.items())) for _, enabled, counts in groups if enabled}
        if len(modes) > 1:
            issues.append(
                Issue(
                    file,
                    f"{key}.devices",
                    "migStrategy `single` needs every GPU of a node MIG-enabled, but this layout mixes MIG-enabled and MIG-disabled GPUs "
                    "(the device plugin refuses: all devices on the node must be configured with the same migEnabled value)",
                    "enable MIG with the same layout on every GPU, or set `migStrategy: mixed`",
                )
            )
        elif len(shapes) > 1:
            issues.append(
                Issue(
                    file,
                    f"{key}.devices",
                    "migStrategy `single` needs the same MIG layout on every GPU of a node, but the device groups differ",
                    "use one `layout` for all GPUs, or set `migStrategy: mixed`",
                )
            )
        for group_key, _gpus, enabled, counts in _groups_with_keys(layout, key):
            if enabled and len(counts) > 1:
                layout_key = group_key if group_key.endswith(".layout") else f"{group_key}.layout"
                issues.append(
                    Issue(
                        file,
                        layout_key,
                        f"migStrategy `single` exposes only one MIG device type per node, but the layout has {len(counts)} "
                        f"({', '.join(counts)}); the device plugin refuses: more than one MIG device type present on node",
                        "use a single profile (e.g. `{1g.10gb: 7}`), or set `migStrategy: mixed`",
                    )
                )
                break
    return issues


def nvidia_issues(nvidia: NvidiaConfig, file: str, *, node_pool_names: set[str]) -> list[Issue]:
    """All cross-field problems of a schema-valid NVIDIA section.

    Checks: installer/driver combination; MIG layouts (unknown GPU model or profile with
    close matches, layouts that cannot be placed with the placement checker's reason,
    overlapping GPU indices of per-GPU layouts, ``single`` strategy rules, reserved and
    duplicate names, MIG layouts under ``migStrategy: none`` or without mig-manager);
    sharing configs (``replicas < 2``, resources that do not exist under the strategy or
    that no layout provides, MPS on MIG devices or with ``mixed``, duplicates); and
    ``nodePools`` references (unknown NodePools, layouts or sharing configs).

    Args:
        nvidia: a schema-valid NVIDIA section.
        file: the stack file to name in issues.
        node_pool_names: names of the stack's EKS NodePools (``hybridgpu:cloud.nodePools``).

    Returns:
        The issues found, in config order; empty when the section is sound. Key paths are
        in Pulumi notation under ``hybridgpu:nvidia``, e.g.
        ``hybridgpu:nvidia.migLayouts[0].layout`` or ``hybridgpu:nvidia.nodePools.gpu-a.migConfig``.

    Sources: see the module docstring (device plugin v0.20.0, mig-parted v0.15.0, GPU
    Operator v26.7.0, MIG User Guide v580; read 2026-11-22).
    """
    issues: list[Issue] = []
    strategy = nvidia.mig_strategy

    if nvidia.install == "device-plugin" and nvidia.driver == "operator":
        issues.append(
            Issue(
                file,
                f"{NVIDIA}.driver",
                "`driver: operator` needs the GPU Operator, but `install: device-plugin` installs only the device plugin and GFD",
                "set `install: gpu-operator`, or use hosts with preinstalled drivers (`driver: preinstalled`)",
            )
        )
    if nvidia.install == "device-plugin" and nvidia.toolkit == "operator":
        issues.append(
            Issue(
                file,
                f"{NVIDIA}.toolkit",
                "`toolkit: operator` needs the GPU Operator, but `install: device-plugin` does not install the container toolkit",
                "set `install: gpu-operator`, or use hosts with the toolkit preinstalled (`toolkit: preinstalled`)",
            )
        )
    if nvidia.install == "device-plugin" and (nvidia.dcgm.idle_alert.enabled or nvidia.dcgm.failure_alerts or nvidia.dcgm.service_monitor):
        issues.append(
            Issue(
                file,
                f"{NVIDIA}.dcgm",
                "the idle alert, the failure alerts and the ServiceMonitor read the DCGM exporter, which `install: device-plugin` does not deploy",
                "set `install: gpu-operator`, or turn off `dcgm.idleAlert.enabled`, `dcgm.failureAlerts` and `dcgm.serviceMonitor`",
            )
        )
    if nvidia.install == "device-plugin" and nvidia.mig_layouts:
        issues.append(
            Issue(
                file,
                f"{NVIDIA}.migLayouts",
                "MIG layouts are applied by the GPU Operator's mig-manager, which `install: device-plugin` does not run",
                "set `install: gpu-operator`, or partition GPUs on the host and remove `migLayouts`",
            )
        )

    # ---- MIG layouts
    layout_names: dict[str, int] = {}
    provided: set[str] = set()
    for i, layout in enumerate(nvidia.mig_layouts):
        key = f"{NVIDIA}.migLayouts[{i}]"
        if layout.name == ALL_DISABLED:
            issues.append(
                Issue(file, f"{key}.name", f"`{ALL_DISABLED}` is reserved (the toolkit always renders it)", "choose another name")
            )
        elif layout.name in layout_names:
            issues.append(
                Issue(
                    file, f"{key}.name", f"MIG layout name {layout.name!r} repeats (also migLayouts[{layout_names[layout.name]}])", "give every layout its own name"
                )
            )
        layout_names.setdefault(layout.name, i)
        issues += _layout_issues(nvidia, layout, key, file)
        provided |= layout.profiles
        if strategy == "none" and layout.mig_enabled:
            issues.append(
                Issue(
                    file,
                    f"{NVIDIA}.migStrategy",
                    f"migStrategy `none` does not expose MIG devices, so the GPUs that layout {layout.name!r} partitions would be unusable",
                    "set `migStrategy: mixed` (or `single`), or remove the layout",
                )
            )

    # ---- sharing configs
    sharing_names: dict[str, int] = {}
    provided_resources = sorted(mig_resource_name(p) for p in provided)
    for i, ts in enumerate(nvidia.time_slicing):
        key = f"{NVIDIA}.timeSlicing[{i}]"
        if ts.name == DEFAULT_DEVICE_CONFIG:
            issues.append(
                Issue(
                    file, f"{key}.name", f"`{DEFAULT_DEVICE_CONFIG}` is reserved (the config without sharing)", "choose another name"
                )
            )
        elif ts.name in sharing_names:
            issues.append(
                Issue(
                    file, f"{key}.name", f"sharing config name {ts.name!r} repeats (also timeSlicing[{sharing_names[ts.name]}])", "give every config its own name"
                )
            )
        sharing_names.setdefault(ts.name, i)
        if ts.sharing == "mps" and strategy == "mixed":
            issues.append(
                Issue(
                    file,
                    f"{key}.sharing",
                    "MPS sharing is not supported with migStrategy `mixed` (the device plugin refuses to start)",
                    "use `sharing: timeSlicing`, or set `migStrategy: none`/`single` for MPS on whole GPUs",
                )
            )
        seen_resources: set[str] = set()
        for j, res in enumerate(ts.resources):
            rkey = f"{key}.resources[{j}]"
            if res.name in seen_resources:
                issues.append(Issue(file, f"{rkey}.name", f"resource {res.name!r} repeats in this config", "list each resource once"))
            seen_resources.add(res.name)
            if res.replicas < 2:
                issues.append(
                    Issue(
                        file,
                        f"{rkey}.replicas",
                        f"replicas must be at least 2 (got {res.replicas}); the device plugin rejects fewer",
                        "use 2 or more replicas, or drop the resource to leave it unshared",
                    )
                )
            if res.name == GPU_RESOURCE:
                continue
            if ts.sharing == "mps":
                issues.append(
                    Issue(
                        file,
                        f"{rkey}.name",
                        f"MPS is not supported on MIG devices ({res.name})",
                        "share MIG devices with `sharing: timeSlicing`, or share whole GPUs (`nvidia.com/gpu`) with MPS",
                    )
                )
                continue
            if "+" in res.name:
                issues.append(
                    Issue(
                        file,
                        f"{rkey}.name",
                        f"{res.name!r} is not a resource name; the device plugin spells `+me` profiles with a dot",
                        f"use {res.name.replace('+', '.')!r}",
                    )
                )
                continue
            if strategy != "mixed":
                exposed = "MIG devices are exposed as `nvidia.com/gpu`" if strategy == "single" else "MIG devices are not exposed"
                issues.append(
                    Issue(
                        file,
                        f"{rkey}.name",
                        f"{res.name} exists only under migStrategy `mixed`; under `{strategy}` {exposed}",
                        "share `nvidia.com/gpu` instead" + (" (it is the MIG devices under `single`)" if strategy == "single" else "")
                        + ", or set `migStrategy: mixed`",
                    )
                )
            elif res.name not in provided_resources:
                issues.append(
                    Issue(
                        file,
                        f"{rkey}.name",
                        f"no MIG layout provides {res.name}{suggest(res.name, provided_resources)}",
                        f"use one of: {', '.join(provided_resources)}" if provided_resources else "add a MIG layout with that profile",
                    )
                )

    # ---- node pools
    pools = sorted(node_pool_names)
    for pool, settings in nvidia.node_pools.items():
        key = f"{NVIDIA}.nodePools.{pool}"
        if pool not in node_pool_names:
            issues.append(
                Issue(
                    file,
                    key,
                    f"no EKS NodePool named {pool!r}{suggest(pool, pools)}",
                    f"use one of: {', '.join(pools)}" if pools else "define the pool under `hybridgpu:cloud.nodePools`",
                )
            )
        pool_layout = nvidia.layout(settings.mig_config)
        if settings.mig_config is not None and pool_layout is None:
            names = [m.name for m in nvidia.mig_layouts]
            issues.append(
                Issue(
                    file,
                    f"{key}.migConfig",
                    f"no MIG layout named {settings.mig_config!r}{suggest(settings.mig_config, names)}",
                    f"use one of: {', '.join(names)}" if names else "define it under `migLayouts`",
                )
            )
        pool_sharing = nvidia.sharing_config(settings.device_config)
        if settings.device_config is not None and pool_sharing is None:
            names = [t.name for t in nvidia.time_slicing]
            issues.append(
                Issue(
                    file,
                    f"{key}.deviceConfig",
                    f"no sharing config named {settings.device_config!r}{suggest(settings.device_config, names)}",
                    f"use one of: {', '.join(names)}" if names else "define it under `timeSlicing`",
                )
            )
        if pool_sharing is not None and pool_sharing.sharing == "mps" and pool_layout is not None and pool_layout.mig_enabled:
            issues.append(
                Issue(
                    file,
                    f"{key}.deviceConfig",
                    f"MPS config {pool_sharing.name!r} on a pool whose MIG layout {pool_layout.name!r} enables MIG: MPS is not supported on MIG-enabled GPUs",
                    "use a time-slicing config for this pool, or a layout without MIG",
                )
            )
    return issues
