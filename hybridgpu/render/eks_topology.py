"""EKS topology-aware placement: the instance topology labels of EKS nodes and the Kueue Topology over them (pure).

Who puts the labels on EKS nodes: the AWS cloud controller manager (kubernetes/cloud-provider-aws, run by
EKS for the control plane), when a node registers: ``pkg/providers/v1/instances_v2.go``
``getAdditionalLabels`` calls EC2 ``DescribeInstanceTopology`` and writes one label per network node,
``topology.k8s.aws/network-node-layer-<N>`` with N = 1 for the top of the hierarchy to the layer the
instance is attached to (``well_known_labels.go`` ``LabelNetworkNodePrefix``); it expects an answer only
for instance types matching ``^(hpc|trn|p)[0-9]+[a-z]*(-[a-z0-9]+)?(\\.[0-9a-z]*)$``
(``topology.go`` ``defaultSupportedTopologyInstanceTypePattern``) and skips the labels for the others
(all read at tag v1.35.2, 2026-11-24). The number of layers: :data:`INSTANCE_TOPOLOGY_LAYERS` (EC2
DescribeInstanceTopology "Limitations": 3 network nodes for p3dn.24xlarge, p4d/p4de.24xlarge,
p5/p5e/p5en.48xlarge, trn1/trn2 and hpc6a/hpc7 types; 4 for p6-b200.48xlarge).

So a g5/g6/g6e node never carries them, and Kueue's TAS ignores a node missing a level label of the
Topology (kubernetes-sigs/kueue v0.19.2 ``pkg/util/tas/node.go`` ``NodeMatchesFlavor``): a TAS flavor over
such a pool would admit nothing. :func:`eks_topology_levels` therefore returns no level for a pool with
such a type, and the EKS ResourceFlavor of that pool gets no ``topologyName``.

The Topology object itself is rendered by :func:`hybridgpu.render.topology.topology_manifest` (shared with
the on-prem Topology; ``kubernetes.io/hostname`` appended as the lowest level).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from hybridgpu.k8s import HOSTNAME_LABEL, NETWORK_NODE_LAYER_PREFIX, network_node_layer_label
from hybridgpu.render.topology import topology_manifest

__all__ = [
    "EKS_TOPOLOGY",
    "INSTANCE_TOPOLOGY_LAYERS",
    "INSTANCE_TOPOLOGY_PATTERN",
    "eks_topology_levels",
    "eks_topology_manifest",
    "instance_topology_layers",
]

#: Name of the EKS Topology (and the ``topologyName`` of the EKS ResourceFlavors of EFA pools).
EKS_TOPOLOGY = "eks"

#: Instance types the cloud controller manager expects a topology answer for (cloud-provider-aws v1.35.2 ``topology.go``).
INSTANCE_TOPOLOGY_PATTERN = re.compile(r"^(hpc|trn|p)[0-9]+[a-z]*(-[a-z0-9]+)?(\.[0-9a-z]*)$")

#: Network node layers per instance type DescribeInstanceTopology answers for (EC2 API Reference,
#: DescribeInstanceTopology "Limitations", as copied in the AWS CLI v2 reference ``ec2/describe-instance-topology``,
#: read 2026-11-24). A type missing here is treated as unlabelled (conservative: its pool gets no TAS flavor).
INSTANCE_TOPOLOGY_LAYERS: dict[str, int] = {
    **dict.fromkeys(("hpc6a.48xlarge", "hpc6id.32xlarge", "hpc7a.12xlarge", "hpc7a.24xlarge", "hpc7a.48xlarge", "hpc7a.96xlarge"), 3),
    **dict.fromkeys(("hpc7g.4xlarge", "hpc7g.8xlarge", "hpc7g.16xlarge"), 3),
    **dict.fromkeys(("p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"), 3),
    **dict.fromkeys(("trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2u.48xlarge"), 3),
    "p6-b200.48xlarge": 4,
}


def instance_topology_layers(instance_type: str) -> int:
    """How many ``topology.k8s.aws/network-node-layer-*`` labels a node of ``instance_type`` gets (0: none).

    p5.48xlarge -> 3, p4d.24xlarge -> 3, p6-b200.48xlarge -> 4, g5.48xlarge -> 0 (the controller does not ask),
    p5.4xlarge -> 0 (the controller asks, but EC2 does not list it among the types it answers for).
    """
    if not INSTANCE_TOPOLOGY_PATTERN.match(instance_type):
        return 0
    return INSTANCE_TOPOLOGY_LAYERS.get(instance_type, 0)


def eks_topology_levels(instance_types: Iterable[str]) -> tuple[str, ...]:
    """The network-node-layer labels every node of ``instance_types`` carries, top layer first (empty: some type has none).

    Mixed 3- and 4-layer types share the first 3 layers (layer 4 exists only on the 4-layer types).
    """
    layers = [instance_topology_layers(t) for t in instance_types]
    if not layers or min(layers) == 0:
        return ()
    return tuple(network_node_layer_label(n) for n in range(1, min(layers) + 1))


def eks_topology_manifest(levels: Sequence[str], name: str = EKS_TOPOLOGY) -> dict[str, Any]:
    """The ``kueue.x-k8s.io/v1beta2`` Topology of the EKS cluster: ``levels`` then ``kubernetes.io/hostname``.

    Raises:
        ValueError: no level, or a level that is not an instance topology label (the node labels would never match).
    """
    if not levels:
        raise ValueError("an EKS Topology needs at least one topology.k8s.aws/network-node-layer-* level")
    bad = [level for level in levels if not level.startswith(NETWORK_NODE_LAYER_PREFIX)]
    if bad:
        raise ValueError(f"EKS nodes carry no label {', '.join(bad)}; use {NETWORK_NODE_LAYER_PREFIX}<1..3> or {HOSTNAME_LABEL}")
    return topology_manifest(name, levels)
