"""NVIDIA layer component: makes GPUs schedulable on a cluster and partitions them.

Creates, through the cluster's Kubernetes provider:

* the namespace (Pod Security ``privileged``: the operator's driver/toolkit/device-plugin pods
  need host access);
* ConfigMaps: the mig-parted config (``config.yaml``, every named MIG layout plus
  ``all-disabled``) and the device-plugin configs (time-slicing / MPS sharing, one key each);
* either the NVIDIA GPU Operator Helm release (driver and toolkit off where the AMI ships them,
  mig-manager reading our ConfigMap, DCGM exporter) or the standalone device plugin and GPU
  feature discovery releases;
* the ``prometheus-operator-crds`` Helm release (pinned) when the idle-GPU alert or the DCGM
  ServiceMonitor is on and ``dcgm.prometheusOperatorCrds`` is ``install`` (the default), before
  the GPU Operator and the rule; with ``preinstalled`` a read of the PrometheusRule CRD instead,
  which fails ``pulumi up`` before the rule when the declared CRD is missing;
* the idle-GPU ``PrometheusRule`` when the alert is on;
* Karpenter ``NodeOverlay`` objects advertising MIG / shared capacity of NodePools, when the
  Karpenter ``nodeOverlay`` feature gate is on.

Nodes pick their layout through labels the NodePools carry (``nvidia.com/mig.config``,
``nvidia.com/device-plugin.config``; see :class:`hybridgpu.components.nodepools.GpuNodePools`).
"""

from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import NvidiaConfigArgs
from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.k8s import POD_SECURITY_AUDIT_LABEL, POD_SECURITY_ENFORCE_LABEL, POD_SECURITY_WARN_LABEL, managed_by_labels
from hybridgpu.render.charts import helm_merge
from hybridgpu.render.nvidia import (
    PROMETHEUS_OPERATOR_CRDS_CHART,
    PROMETHEUSRULE_CRD,
    dcgm_alert_rule,
    failure_alert_rule,
    declared_crds,
    device_plugin_configmap,
    device_plugin_values,
    gfd_values,
    gpu_operator_values,
    installs_prometheus_crds,
    mig_parted_configmap,
)

GPU_OPERATOR_REPO = "https://helm.ngc.nvidia.com/nvidia"
DEVICE_PLUGIN_REPO = "https://nvidia.github.io/k8s-device-plugin"


def namespace_manifest(name: str) -> dict:
    """The NVIDIA layer's namespace: Pod Security ``privileged`` (host access for GPU daemons)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                **managed_by_labels(),
                POD_SECURITY_ENFORCE_LABEL: "privileged",
                POD_SECURITY_AUDIT_LABEL: "privileged",
                POD_SECURITY_WARN_LABEL: "privileged",
            },
        },
    }


class NvidiaLayerArgs(TypedDict):
    """Inputs of :class:`NvidiaLayer`."""

    nvidia: NvidiaConfigArgs
    """The ``hybridgpu:nvidia`` section: GPU Operator or device plugin, MIG layouts, sharing, DCGM, versions."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    node_overlays: NotRequired[list[dict[str, Any]]]
    """Rendered Karpenter NodeOverlay manifests (free-form Kubernetes objects, hence untyped; ``hybridgpu.render.nvidia.node_overlays``). Default: none."""
    gpu_operator_extra: NotRequired[dict[str, Any]]
    """Helm values merged over the GPU Operator's (free-form chart values, hence untyped), e.g. GPUDirect RDMA's ``driver.rdma`` on-prem. Default: none."""


class NvidiaLayer(pulumi.ComponentResource):
    """The NVIDIA GPU software of one cluster (``hybridgpu:index:NvidiaLayer``).

    Args:
        name: logical name prefix of the children.
        args: :class:`NvidiaLayerArgs`.
        opts: resource options. ``depends_on``: what every object waits for (e.g. the Karpenter
            release, whose CRD chart defines NodeOverlay; the CNI on-prem).

    Attributes:
        releases: the Helm releases created, by name.
    """

    def __init__(self, name: str, args: NvidiaLayerArgs, opts: pulumi.ResourceOptions | None = None):
        config = section(NvidiaConfig, args["nvidia"], component="NvidiaLayer", name=name, field="nvidia")
        provider = args["provider"]
        node_overlays, gpu_operator_extra = args.get("node_overlays"), args.get("gpu_operator_extra")
        own, depends_on = component_options("hybridgpu:nvidia:NvidiaLayer", opts)
        super().__init__(type_token("NvidiaLayer"), name, None, own)
        base = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or []))
        ns_doc = namespace_manifest(config.namespace)
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata=ns_doc["metadata"], opts=base)
        in_ns = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace, *(depends_on or [])])

        configmaps: list[pulumi.Resource] = []
        if config.install == "gpu-operator" and config.mig_layouts:
            doc = mig_parted_configmap(config)
            configmaps.append(k8s.core.v1.ConfigMap(f"{name}-mig-parted-config", metadata=doc["metadata"], data=doc["data"], opts=in_ns))
        doc = device_plugin_configmap(config)
        configmaps.append(k8s.core.v1.ConfigMap(f"{name}-device-plugin-config", metadata=doc["metadata"], data=doc["data"], opts=in_ns))

        # The monitoring.coreos.com CRDs, before the objects that need them (pulumi-kubernetes
        # retries "no matches for kind" a few times on create and then fails: provider/pkg/await).
        crd_deps: list[pulumi.Resource] = []
        if installs_prometheus_crds(config):
            crd_deps.append(
                k8s.helm.v3.Release(
                    f"{name}-prometheus-operator-crds",
                    name="prometheus-operator-crds",
                    chart=PROMETHEUS_OPERATOR_CRDS_CHART,
                    version=config.versions.prometheus_operator_crds,
                    namespace=config.namespace,
                    atomic=True,
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace, *(depends_on or [])]),
                )
            )
        elif declared_crds(config) and (dcgm_alert_rule(config) is not None or failure_alert_rule(config) is not None):
            # Declared precondition: read the CRD, so a missing one stops `pulumi up` here, before the rule.
            crd_deps.append(
                k8s.apiextensions.v1.CustomResourceDefinition.get(
                    f"{name}-prometheusrules-crd", PROMETHEUSRULE_CRD, opts=pulumi.ResourceOptions(parent=self, provider=provider)
                )
            )
        release_opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace, *configmaps, *crd_deps, *(depends_on or [])])
        # (release name, child role, chart, version, repository, values)
        if config.install == "gpu-operator":
            values = helm_merge(gpu_operator_values(config), gpu_operator_extra or {})
            charts = [("gpu-operator", "gpu-operator", "gpu-operator", config.versions.gpu_operator, GPU_OPERATOR_REPO, values)]
        else:
            charts = [
                ("nvidia-device-plugin", "device-plugin", "nvidia-device-plugin", config.versions.device_plugin, DEVICE_PLUGIN_REPO, device_plugin_values(config)),
                ("gpu-feature-discovery", "gfd", "nvidia-device-plugin", config.versions.gpu_feature_discovery, DEVICE_PLUGIN_REPO, gfd_values(config)),
            ]
        self.releases: dict[str, k8s.helm.v3.Release] = {}
        for release, role, chart, version, repo, values in charts:
            self.releases[release] = k8s.helm.v3.Release(
                f"{name}-{role}",
                name=release,
                chart=chart,
                version=version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo),
                namespace=config.namespace,
                values=values,
                atomic=True,
                opts=release_opts,
            )

        rule = dcgm_alert_rule(config)
        if rule is not None:
            k8s.apiextensions.CustomResource(
                f"{name}-idle-gpu-alert",
                api_version=rule["apiVersion"],
                kind=rule["kind"],
                metadata=rule["metadata"],
                spec=rule["spec"],
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*crd_deps, *self.releases.values()]),
            )
        failures = failure_alert_rule(config)
        if failures is not None:
            k8s.apiextensions.CustomResource(
                f"{name}-gpu-failure-alerts",
                api_version=failures["apiVersion"],
                kind=failures["kind"],
                metadata=failures["metadata"],
                spec=failures["spec"],
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*crd_deps, *self.releases.values()]),
            )
        for overlay in node_overlays or []:
            k8s.apiextensions.CustomResource(
                f"{name}-overlay-{overlay['metadata']['name']}",
                api_version=overlay["apiVersion"],
                kind=overlay["kind"],
                metadata=overlay["metadata"],
                spec=overlay["spec"],
                opts=base,
            )
        self.register_outputs({"releases": sorted(self.releases)})
