"""EFA on EKS: interface counts from the catalog, the EC2NodeClass interfaces, and the EFA device plugin (pure, no Pulumi).

Creates (as plain data):

* the EFA interface count of an EC2NodeClass, derived from the catalog's ``maxEfaInterfaces`` of
  every instance type its NodePools may launch (:func:`node_class_efa_counts`, :func:`derived_efa_interfaces`);
* the ``spec.networkInterfaces`` of such a class (:func:`efa_network_interfaces`);
* the template label of EFA NodePools (:func:`efa_nodepool_labels`);
* the values of the ``aws-efa-k8s-device-plugin`` chart (:func:`efa_device_plugin_values`).

How Karpenter attaches EFA (aws/karpenter-provider-aws v1.14.1, read 2026-11-24):

* ``pkg/providers/instancetype/types.go`` ``efas``: when an EC2NodeClass sets ``networkInterfaces``,
  every instance type it launches advertises ``vpc.amazonaws.com/efa`` = the number of ``efa-only``
  entries, whatever the type's own maximum; without it, the type's ``MaximumEfaInterfaces``.
* ``pkg/providers/instancetype/compatibility/compatibility.go`` ``networkInterfaceCheck``: a type with
  fewer network cards than a configured ``networkCardIndex``, or fewer EFA interfaces than the configured
  ``efa-only`` entries, is silently dropped from the NodeClass's types.
* ``pkg/providers/launchtemplate/launchtemplate.go`` ``generateNetworkInterfaces``: configured
  interfaces are used as given, for every instance type; so one EC2NodeClass has one interface count.

Hence the count is derived per class, must be the same for every type the class's pools may launch
(a p5en.48xlarge with 16 cards under a 32-interface class is dropped; a p5.48xlarge under a 16-interface
class runs at half its EFA bandwidth), and equals the type's maximum: the checks in
:mod:`hybridgpu.stack.efa` refuse a class whose types disagree. The layout follows the EC2 User Guide,
"Maximize network bandwidth on Amazon EC2 instances with multiple network cards" (efa-acc-inst-types,
read 2026-11-24): an ENA interface at card 0 device 0, an EFA-only interface at card 0 device 1, and one
EFA-only interface at device 0 of every further card.

The device plugin chart: aws/eks-charts ``stable/aws-efa-k8s-device-plugin`` v0.5.30 (appVersion v0.5.20,
commit bfe91c4b, 2026-07-21; see :data:`hybridgpu.render.charts.CHARTS`). Its DaemonSet selects nodes by a
required affinity ``node.kubernetes.io/instance-type In supportedInstanceLabels.values`` (every EFA type
of AWS by default) and ``eks.amazonaws.com/compute-type NotIn [auto]``, tolerates ``CriticalAddonsOnly``
and then ``tolerations`` (default none). We narrow ``supportedInstanceLabels.values`` to the instance types
of the EFA NodePools, add the nodeSelector ``hybridgpu.io/efa=true`` (a template label of EFA pools only:
a p5.48xlarge of a pool without EFA has no EFA device) and tolerate the GPU taint.
"""

from __future__ import annotations

from typing import Any

from hybridgpu.catalog import Catalog, InstanceType
from hybridgpu.config.models import CloudConfig, NodeClassConfig, NodePoolConfig
from hybridgpu.k8s import EFA_LABEL, INSTANCE_TYPE_LABEL
from hybridgpu.render.charts import gpu_exists_toleration
from hybridgpu.render.karpenter import efa_network_interfaces, resolve_instance_types

__all__ = [
    "EFA_DEVICE_PLUGIN_CHART",
    "EFA_DEVICE_PLUGIN_NAMESPACE",
    "EFA_DEVICE_PLUGIN_REPO",
    "EFA_DEVICE_PLUGIN_VERSION",
    "derived_efa_interfaces",
    "efa_device_plugin_values",
    "efa_instance_types",
    "efa_network_interfaces",
    "efa_node_classes",
    "efa_nodepool_labels",
    "efa_pools",
    "node_class_efa_counts",
]

#: Chart name, Helm repository and pinned version of the EFA device plugin (aws/eks-charts
#: ``stable/aws-efa-k8s-device-plugin/Chart.yaml``: version v0.5.30, appVersion v0.5.20, commit bfe91c4b
#: 2026-07-21, the newest in the repository on 2026-08-03; read 2026-11-24).
EFA_DEVICE_PLUGIN_CHART = "aws-efa-k8s-device-plugin"
EFA_DEVICE_PLUGIN_REPO = "https://aws.github.io/eks-charts"
EFA_DEVICE_PLUGIN_VERSION = "v0.5.30"
#: Namespace of the release: the chart's README installs it into ``kube-system`` (a node agent with
#: ``priorityClassName: system-node-critical``, which the API server admits only there by default).
EFA_DEVICE_PLUGIN_NAMESPACE = "kube-system"


def efa_node_classes(cloud: CloudConfig) -> dict[str, NodeClassConfig]:
    """The EC2NodeClasses with ``efa.enabled``, by name."""
    return {nc.name: nc for nc in cloud.node_classes if nc.efa.enabled}


def efa_pools(cloud: CloudConfig) -> list[NodePoolConfig]:
    """The NodePools whose EC2NodeClass attaches EFA interfaces, in config order."""
    classes = efa_node_classes(cloud)
    return [pool for pool in cloud.node_pools if pool.node_class in classes]


def node_class_efa_counts(node_class: NodeClassConfig, cloud: CloudConfig, catalog: Catalog) -> dict[str, InstanceType]:
    """Every catalog instance type the pools of ``node_class`` may launch, by name (the catalog carries ``maxEfaInterfaces``)."""
    found: dict[str, InstanceType] = {}
    for pool in cloud.node_pools:
        if pool.node_class == node_class.name:
            for t in resolve_instance_types(pool, catalog):
                found.setdefault(t.name, t)
    return dict(sorted(found.items()))


def derived_efa_interfaces(node_class: NodeClassConfig, cloud: CloudConfig, catalog: Catalog) -> int | None:
    """The EFA interface count of an EFA node class: the one ``maxEfaInterfaces`` all its pools' instance types share.

    Returns:
        The count (p5.48xlarge 32, p5en.48xlarge 16, p4d.24xlarge 4, ...); ``efa.interfaces`` when
        the class is used by no pool; None when the class has no EFA, or its types disagree or lack EFA
        (the stack check :func:`hybridgpu.stack.efa.efa_issues` refuses those configs first).
    """
    if not node_class.efa.enabled:
        return None
    counts = {t.max_efa_interfaces for t in node_class_efa_counts(node_class, cloud, catalog).values()}
    if not counts:
        return node_class.efa.interfaces
    if len(counts) != 1 or 0 in counts:
        return None
    return counts.pop()


def efa_nodepool_labels(pool: NodePoolConfig, cloud: CloudConfig) -> dict[str, str]:
    """Template labels a pool gets for EFA: ``{hybridgpu.io/efa: "true"}`` when its node class attaches EFA, else none."""
    return {EFA_LABEL: "true"} if pool.node_class in efa_node_classes(cloud) else {}


def efa_instance_types(cloud: CloudConfig, catalog: Catalog) -> list[str]:
    """The instance types the EFA pools may launch, sorted (the device plugin's ``supportedInstanceLabels.values``)."""
    return sorted({t.name for pool in efa_pools(cloud) for t in resolve_instance_types(pool, catalog)})


def efa_device_plugin_values(cloud: CloudConfig, catalog: Catalog) -> dict[str, Any] | None:
    """Values of the ``aws-efa-k8s-device-plugin`` release, or None when no NodePool has EFA (nothing is installed).

    Returns:
        ``nodeSelector`` on the EFA pool label, the GPU taint's toleration (the chart adds
        ``CriticalAddonsOnly`` itself), and ``supportedInstanceLabels`` narrowed to the EFA pools' types.
    """
    types = efa_instance_types(cloud, catalog)
    if not types:
        return None
    return {
        "nodeSelector": {EFA_LABEL: "true"},
        "tolerations": [gpu_exists_toleration()],
        "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": types},
    }
