"""Network component: the VPC that EKS and Karpenter GPU nodes live in.

Creates, for ``network.new``: a VPC, an internet gateway, one private and one public subnet
per availability zone (laid out by :func:`hybridgpu.render.network.plan_subnets`), NAT
gateway(s) with Elastic IPs, and route tables. Private subnets carry the
``karpenter.sh/discovery`` tag so EC2NodeClasses find them.

For ``network.existing`` it creates only ``aws:ec2/tag:Tag`` resources that add the
discovery tag to the given private subnets, and passes the ids through.
"""

from typing import TypedDict

import pulumi
import pulumi_aws as aws

from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import NetworkConfigArgs
from hybridgpu.config.models import NetworkConfig
from hybridgpu.k8s import DISCOVERY_TAG, cluster_tag
from hybridgpu.render.network import plan_subnets


class NetworkArgs(TypedDict):
    """Inputs of :class:`Network`."""

    network: NetworkConfigArgs
    """The ``hybridgpu:cloud.network`` section: exactly one of ``new`` (a VPC built here) or ``existing`` (subnets tagged only)."""
    cluster_name: str
    """EKS cluster name: the ``karpenter.sh/discovery`` tag value and the ``kubernetes.io/cluster/<name>`` tag."""


class Network(pulumi.ComponentResource):
    """VPC and subnets of the cloud cluster (``hybridgpu:index:Network``).

    Args:
        name: logical name prefix of the children.
        args: :class:`NetworkArgs`.
        opts: resource options (pass the AWS provider through ``providers``).

    Attributes:
        vpc_id: VPC id (``Output[str]``).
        private_subnet_ids: private subnet ids, one per zone (``Output[list[str]]``).
        public_subnet_ids: public subnet ids (``Output[list[str]]``; empty for BYO without public subnets).
    """

    vpc_id: pulumi.Output[str]
    """VPC id."""
    private_subnet_ids: pulumi.Output[list[str]]
    """Private subnet ids, one per zone."""
    public_subnet_ids: pulumi.Output[list[str]]
    """Public subnet ids (empty for an existing VPC without public subnets)."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        config = section(NetworkConfig, args["network"], component="Network", name=name, field="network")
        own, _ = component_options("hybridgpu:cloud:Network", opts)
        super().__init__(type_token("Network"), name, None, own)
        cluster_name = args["cluster_name"]
        child = pulumi.ResourceOptions(parent=self)
        cluster_tags = {cluster_tag(cluster_name): "shared"}

        if config.existing is not None:
            existing = config.existing
            for i, subnet_id in enumerate(existing.private_subnet_ids):
                aws.ec2.Tag(f"{name}-discovery-{i}", resource_id=subnet_id, key=DISCOVERY_TAG, value=cluster_name, opts=child)
            self.vpc_id = pulumi.Output.from_input(existing.vpc_id)
            self.private_subnet_ids = pulumi.Output.from_input(list(existing.private_subnet_ids))
            self.public_subnet_ids = pulumi.Output.from_input(list(existing.public_subnet_ids))
            self.register_outputs({"vpc_id": self.vpc_id, "private_subnet_ids": self.private_subnet_ids, "public_subnet_ids": self.public_subnet_ids})
            return

        new = config.new
        assert new is not None  # guaranteed by the config checks
        plan = plan_subnets(
            new.cidr,
            list(new.availability_zones),
            private_prefix=new.private_subnet_prefix,
            public_prefix=new.public_subnet_prefix,
            cluster_name=cluster_name,
        )
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=new.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={"Name": f"{cluster_name}-vpc"},
            opts=child,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={"Name": f"{cluster_name}-igw"}, opts=child)
        subnets = {}
        for sub in plan:
            subnets[sub.name] = aws.ec2.Subnet(
                f"{name}-{sub.name}",
                vpc_id=vpc.id,
                cidr_block=sub.cidr,
                availability_zone=sub.zone,
                map_public_ip_on_launch=False,
                tags={"Name": f"{cluster_name}-{sub.name}", **cluster_tags, **sub.tags},
                opts=child,
            )
        public_rt = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=vpc.id, tags={"Name": f"{cluster_name}-public"}, opts=child)
        aws.ec2.Route(f"{name}-public-default", route_table_id=public_rt.id, destination_cidr_block="0.0.0.0/0", gateway_id=igw.id, opts=child)
        publics = [s for s in plan if s.tier == "public"]
        privates = [s for s in plan if s.tier == "private"]
        for sub in publics:
            aws.ec2.RouteTableAssociation(f"{name}-{sub.name}-rta", subnet_id=subnets[sub.name].id, route_table_id=public_rt.id, opts=child)

        nat_zones = [publics[0]] if new.nat_gateways == "single" else publics
        nats = {}
        for sub in nat_zones:
            eip = aws.ec2.Eip(f"{name}-nat-eip-{sub.zone}", domain="vpc", tags={"Name": f"{cluster_name}-nat-{sub.zone}"}, opts=child)
            nats[sub.zone] = aws.ec2.NatGateway(
                f"{name}-nat-{sub.zone}",
                allocation_id=eip.id,
                subnet_id=subnets[sub.name].id,
                tags={"Name": f"{cluster_name}-nat-{sub.zone}"},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )
        for sub in privates:
            nat = nats.get(sub.zone) or next(iter(nats.values()))
            rt = aws.ec2.RouteTable(f"{name}-{sub.name}-rt", vpc_id=vpc.id, tags={"Name": f"{cluster_name}-{sub.name}"}, opts=child)
            aws.ec2.Route(f"{name}-{sub.name}-default", route_table_id=rt.id, destination_cidr_block="0.0.0.0/0", nat_gateway_id=nat.id, opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-{sub.name}-rta", subnet_id=subnets[sub.name].id, route_table_id=rt.id, opts=child)

        self.vpc_id = vpc.id
        self.private_subnet_ids = pulumi.Output.all(*[subnets[s.name].id for s in privates])
        self.public_subnet_ids = pulumi.Output.all(*[subnets[s.name].id for s in publics])
        self.register_outputs({"vpc_id": self.vpc_id, "private_subnet_ids": self.private_subnet_ids, "public_subnet_ids": self.public_subnet_ids})
