"""Helm values of the Cilium CNI release on the on-prem cluster (pure).

The on-prem component installs chart ``cilium`` from https://helm.cilium.io into ``kube-system``
with these values; :mod:`hybridgpu.stack.scheduling` checks where its pods can run from the
same values (chart defaults in :data:`hybridgpu.render.charts.CHARTS` ``cilium``).
"""

from __future__ import annotations

from typing import Any

#: Replicas of the cilium-operator Deployment (the chart's default is 2, with a required
#: hostname anti-affinity, so they need two schedulable nodes; source: the chart facts of
#: :data:`hybridgpu.render.charts.CHARTS` ``cilium``, cilium/cilium ``Documentation/helm-values.rst``).
CILIUM_OPERATOR_REPLICAS = 2


def cilium_helm_values(pod_subnet: str) -> dict[str, Any]:
    """Values of the ``cilium`` chart: cluster-pool IPAM over ``pod_subnet`` (CIDR), two operator replicas."""
    return {
        "ipam": {"mode": "cluster-pool", "operator": {"clusterPoolIPv4PodCIDRList": [pod_subnet]}},
        "operator": {"replicas": CILIUM_OPERATOR_REPLICAS},
    }
