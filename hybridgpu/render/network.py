"""Subnet plan of a new VPC (pure).

Private subnets (nodes and, with the VPC CNI, pods) come first and are large; public
subnets (load balancers, NAT gateways) are carved after them. Tags follow the AWS Load
Balancer Controller and Karpenter conventions: ``kubernetes.io/role/internal-elb`` and
``karpenter.sh/discovery`` on private subnets, ``kubernetes.io/role/elb`` on public ones.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from hybridgpu.k8s import DISCOVERY_TAG, ELB_TAG, INTERNAL_ELB_TAG


@dataclass(frozen=True)
class SubnetPlan:
    """One planned subnet.

    Attributes:
        name: short role name, e.g. ``private-us-west-2a``.
        tier: ``private`` or ``public``.
        zone: availability zone.
        cidr: IPv4 CIDR inside the VPC.
        tags: tags specific to the subnet role (cost tags come from the provider).
    """

    name: str
    tier: Literal["private", "public"]
    zone: str
    cidr: str
    tags: dict[str, str]


def plan_subnets(vpc_cidr: str, zones: list[str], *, private_prefix: int, public_prefix: int, cluster_name: str) -> list[SubnetPlan]:
    """Lay out one private and one public subnet per zone, without overlap, inside ``vpc_cidr``.

    Args:
        vpc_cidr: the VPC CIDR, e.g. ``10.64.0.0/16``.
        zones: availability zones, in order.
        private_prefix: prefix length of each private subnet (e.g. 19).
        public_prefix: prefix length of each public subnet (e.g. 24); must be >= private_prefix.
        cluster_name: value of the Karpenter discovery tag.

    Returns:
        ``len(zones)`` private subnets followed by ``len(zones)`` public subnets.

    Raises:
        ValueError: the subnets do not fit in the VPC, or a prefix is shorter than the VPC's.
    """
    vpc = ipaddress.IPv4Network(vpc_cidr)
    if private_prefix < vpc.prefixlen or public_prefix < private_prefix:
        raise ValueError(f"need VPC prefix /{vpc.prefixlen} <= private /{private_prefix} <= public /{public_prefix}")
    private_blocks = list(vpc.subnets(new_prefix=private_prefix))
    private = private_blocks[: len(zones)]
    if len(private) < len(zones):
        raise ValueError(f"{len(zones)} private /{private_prefix} subnets do not fit in {vpc}")
    # Public subnets come from the first private-sized block left over.
    rest = private_blocks[len(zones) :]
    public: list[ipaddress.IPv4Network] = []
    for block in rest:
        for sub in block.subnets(new_prefix=public_prefix):
            public.append(sub)
            if len(public) == len(zones):
                break
        if len(public) == len(zones):
            break
    if len(public) < len(zones):
        raise ValueError(f"{len(zones)} private /{private_prefix} and public /{public_prefix} subnets do not fit in {vpc}")
    plans = [
        SubnetPlan(
            name=f"private-{zone}",
            tier="private",
            zone=zone,
            cidr=str(net),
            tags={INTERNAL_ELB_TAG: "1", DISCOVERY_TAG: cluster_name},
        )
        for zone, net in zip(zones, private)
    ]
    plans += [
        SubnetPlan(name=f"public-{zone}", tier="public", zone=zone, cidr=str(net), tags={ELB_TAG: "1"})
        for zone, net in zip(zones, public)
    ]
    return plans
