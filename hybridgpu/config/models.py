"""Typed stack configuration (pydantic v2).

A stack file ``stacks/Pulumi.<stack>.yaml`` holds Pulumi config keys; the keys in the
``hybridgpu`` namespace map onto :class:`StackConfig`:

=========================  ==========================================
Pulumi config key          model field
=========================  ==========================================
``aws:region``             :attr:`StackConfig.region`
``hybridgpu:environment``  :attr:`StackConfig.environment`
``hybridgpu:tags``         :attr:`StackConfig.tags`
``hybridgpu:requiredTagKeys`` :attr:`StackConfig.required_tag_keys`
``hybridgpu:cloud``        :attr:`StackConfig.cloud` (:class:`CloudConfig`)
``hybridgpu:nvidia``       :attr:`StackConfig.nvidia` (:class:`~hybridgpu.config.nvidia.NvidiaConfig`)
``hybridgpu:burst``        :attr:`StackConfig.burst` (:class:`~hybridgpu.config.burst.BurstSection`)
``hybridgpu:teams``        :attr:`StackConfig.teams` (:class:`~hybridgpu.config.teams.TeamsSection`)
``hybridgpu:economics``    :attr:`StackConfig.economics` (:class:`~hybridgpu.config.economics.EconomicsConfig`)
=========================  ==========================================

Later sections (``hybridgpu:onprem``, ``hybridgpu:burst``, ``hybridgpu:cost``) get their
own top-level key and model beside ``cloud``.

Every model forbids unknown keys and is frozen; every field says its unit and default.
Field names are camelCase in YAML (aliases) and snake_case in Python.

Upstream facts used here (limits, defaults, enums) come from Karpenter v1.14.1
(``aws/karpenter-provider-aws`` default branch at commit 1d927085, 2026-08-21:
``website/content/en/v1.14/concepts/nodepools.md``, ``nodeclasses.md``,
``charts/karpenter/Chart.yaml`` version 1.14.1), read 2026-11-22.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.config.aws_names import CLUSTER_NAME_MAX_LENGTH, binding_names
from hybridgpu.config.base import Dns1123Name, Duration, Model
from hybridgpu.config.capacity_blocks import CapacityBlock
from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.config.economics import EconomicsConfig
from hybridgpu.config.burst import BurstSection
from hybridgpu.config.teams import TeamsSection
from hybridgpu.config.storage import CloudStorageConfig, OnPremStorageConfig
from hybridgpu.config.topology import GangRequirement
from hybridgpu.config.platform import PlatformConfig
from hybridgpu.errors import FieldError
from hybridgpu.k8s import DEFAULT_COST_KEYS, GPU_TAINT

#: Karpenter chart and controller version deployed by default.
#: Source: aws/karpenter-provider-aws charts/karpenter/Chart.yaml on the default branch at
#: commit 1d927085 (2026-08-21), which carries version/appVersion 1.14.1.
KARPENTER_VERSION = "1.14.1"

#: Default EKS Kubernetes version. Karpenter v1.14 supports Kubernetes 1.30-1.36
#: (website/content/en/v1.14/upgrading/compatibility.md, read 2026-11-22).
DEFAULT_KUBERNETES_VERSION = "1.35"

#: Default pinned EKS-optimized AMI alias. The alias resolves the NVIDIA variant itself on
#: GPU instance types. Release v20261112 of awslabs/amazon-eks-ami (2026-11-12) covers
#: Kubernetes 1.31-1.37.
DEFAULT_AMI_ALIAS = "al2023@v20261112"

#: Spot pools should be able to pick from at least this many instance types; Karpenter's
#: and EC2's spot guidance is to diversify so that the price-capacity-optimized allocation
#: has pools to choose from (REFERENCE.md "spot fallback with too few instance types").
RECOMMENDED_SPOT_INSTANCE_TYPES = 5

class Environment(str, Enum):
    """Kind of stack. ``production`` turns on the production-only checks (pinned AMIs)."""

    development = "development"
    staging = "staging"
    production = "production"


class CapacityType(str, Enum):
    """Karpenter capacity types (label ``karpenter.sh/capacity-type``)."""

    spot = "spot"
    on_demand = "on-demand"
    reserved = "reserved"


class TaintEffect(str, Enum):
    """Kubernetes taint effects."""

    no_schedule = "NoSchedule"
    prefer_no_schedule = "PreferNoSchedule"
    no_execute = "NoExecute"


class Taint(Model):
    """A node taint placed on every node a NodePool launches."""

    key: str = Field(description="Taint key, e.g. `nvidia.com/gpu`. Required.")
    value: str | None = Field(default=None, description="Taint value. Default: none.")
    effect: TaintEffect = Field(default=TaintEffect.no_schedule, description="Taint effect. Default: `NoSchedule`.")


def _gpu_taint() -> Taint:
    """The GPU taint (:data:`hybridgpu.k8s.GPU_TAINT`) as a :class:`Taint`: the default of every GPU NodePool,
    so that only pods that tolerate it (GPU workloads) land on GPU nodes."""
    return Taint(key=GPU_TAINT.key, value=GPU_TAINT.value, effect=TaintEffect(GPU_TAINT.effect))


class Budget(Model):
    """A Karpenter disruption budget (``spec.disruption.budgets[]``)."""

    nodes: Annotated[str, StringConstraints(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")] = Field(
        description="How many nodes may be disrupted at once: a count (`\"1\"`) or a percentage (`\"10%\"`). Required."
    )
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = Field(
        default=None, description="Disruption reasons this budget applies to. Default: all reasons."
    )
    schedule: str | None = Field(
        default=None, description="Cron schedule (UTC) when the budget becomes active; needs `duration`. Default: always active."
    )
    duration: Duration | None = Field(default=None, description="How long the budget stays active after `schedule` fires, e.g. `8h`. Default: none.")


class Disruption(Model):
    """NodePool disruption settings (``spec.disruption``)."""

    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = Field(
        default="WhenEmpty",
        description=(
            "When Karpenter may consolidate nodes. Default: `WhenEmpty`, so long ML jobs are not evicted to repack "
            "nodes; `WhenEmptyOrUnderutilized` saves money on inference fleets."
        ),
    )
    consolidate_after: Duration | Literal["Never"] = Field(
        default="30m",
        description="How long a node must be empty/underutilized before it is consolidated. Default: `30m` (generous, GPU nodes are slow to start).",
    )
    budgets: list[Budget] = Field(
        default_factory=lambda: [Budget(nodes="10%")],
        description="Disruption budgets. Default: at most 10% of the pool's nodes at once.",
    )


class CapacityBufferConfig(Model):
    """A warm buffer of a NodePool: a ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer whose chunk is one whole node of the pool."""

    replicas: int = Field(
        ge=1,
        description="Idle nodes to keep ready (`spec.replicas` of the CapacityBuffer; one chunk asks for every GPU of one node), in nodes. Required.",
    )


class NodePoolConfig(Model):
    """One Karpenter GPU NodePool.

    Instance choice: give ``instanceTypes`` explicitly, or ``instanceFamilies`` (optionally
    narrowed by ``gpuNames``/``gpuCounts``); the toolkit resolves them against the catalog
    and renders the explicit instance-type list, so the sizes a pool may pick are bounded.
    """

    name: Dns1123Name = Field(description="NodePool name (DNS-1123). Required.")
    node_class: Dns1123Name = Field(default="gpu", description="Name of the EC2NodeClass in `nodeClasses` this pool launches with. Default: `gpu`.")
    capacity_types: list[CapacityType] = Field(
        min_length=1,
        description="Capacity types the pool may launch: `spot`, `on-demand`, `reserved` (needs a node class with capacity reservations). Required.",
    )
    weight: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="Priority among pools, 1..100, higher is tried first. Default: none (Karpenter treats it as lowest).",
    )
    instance_families: list[str] = Field(default_factory=list, description="EC2 instance families, e.g. `[g5, g6]`. Default: none.")
    instance_types: list[str] = Field(default_factory=list, description="Explicit EC2 instance types, e.g. `[p5.48xlarge]`. Default: none.")
    gpu_names: list[str] = Field(
        default_factory=list,
        description="Karpenter GPU names (`karpenter.k8s.aws/instance-gpu-name`), e.g. `[h100, h200]`. Default: any.",
    )
    gpu_counts: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list, description="Allowed GPUs per instance, e.g. `[1, 4]`. Default: any.")
    gpu_limit: int | None = Field(
        default=None,
        description="Most GPUs the pool may run at once (`spec.limits[\"nvidia.com/gpu\"]`), in GPUs. Required for every GPU pool.",
    )
    min_instance_types: int | None = Field(
        default=None,
        ge=1,
        le=50,
        description=(
            "`minValues` on the instance-type requirement: Karpenter must be able to choose among at least this many types. "
            "Default: for pools that include spot, min(5, number of resolved types); otherwise none."
        ),
    )
    narrow_spot_reason: str | None = Field(
        default=None,
        description=(
            "Written reason to accept a spot pool with fewer instance types than recommended (5), e.g. a single H100 size. "
            "Default: none (such a pool is rejected)."
        ),
    )
    taints: list[Taint] = Field(default_factory=lambda: [_gpu_taint()], description="Node taints. Default: `nvidia.com/gpu=true:NoSchedule`.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra node labels. Default: none (the toolkit adds `hybridgpu.io/nodepool`).")
    disruption: Disruption = Field(default_factory=Disruption, description="Disruption settings. Default: WhenEmpty after 30m, budget 10%.")
    expire_after: Duration | Literal["Never"] = Field(
        default="720h", description="Node lifetime before Karpenter replaces it (`template.spec.expireAfter`). Default: `720h` (30 days)."
    )
    termination_grace_period: Duration | None = Field(
        default="24h",
        description=(
            "Longest a node may take to drain before it is forcibly terminated (`template.spec.terminationGracePeriod`); "
            "bounds how long `karpenter.sh/do-not-disrupt` pods can hold an expired node. Default: `24h`."
        ),
    )
    architecture: Literal["amd64", "arm64"] = Field(default="amd64", description="CPU architecture. Default: `amd64`.")
    capacity_blocks: list[CapacityBlock] = Field(
        default_factory=list,
        description=(
            "EC2 Capacity Blocks for ML the pool launches into (id, instance type and count, UTC window; docs/cloud.md, "
            "Capacity Blocks): the pool then has `capacityTypes: [reserved]` only, its node class selects the blocks, and "
            "`gpuLimit` is at most the blocks' GPUs. A block that has ended is an error. Default: none."
        ),
    )
    replicas: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Static node count (`spec.replicas`, Karpenter StaticCapacity, alpha): the pool keeps exactly this many nodes "
            "whether pods need them or not, paid around the clock; needs `karpenter.staticCapacity`, no `weight`, and "
            "`gpuLimit` = replicas x the GPUs of the pool's one instance size. Default: none (Karpenter launches nodes for pending pods)."
        ),
    )
    capacity_buffer: CapacityBufferConfig | None = Field(
        default=None,
        description=(
            "Warm buffer (Karpenter CapacityBuffer, alpha): whole idle nodes of this pool kept ready for the next pods. "
            "Needs `karpenter.capacityBuffer`. Default: none."
        ),
    )

    @field_validator("capacity_types")
    @classmethod
    def _unique_capacity_types(cls, value: list[CapacityType]) -> list[CapacityType]:
        if len(set(value)) != len(value):
            raise ValueError("capacity types must not repeat")
        return value

    @field_validator("gpu_limit")
    @classmethod
    def _non_negative_limit(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"GPU limit must be 0 or more GPUs, got {value}")
        return value


class EfaConfig(Model):
    """Elastic Fabric Adapter interfaces for a node class (GPUDirect RDMA for NCCL)."""

    enabled: bool = Field(default=False, description="Attach EFA interfaces. Default: false.")
    interfaces: int | None = Field(
        default=None,
        ge=1,
        le=32,
        description=(
            "Number of EFA devices: one on each network card starting at card 0 (card 0 keeps an ENA interface, "
            "the others are `efa-only`). Derived from the catalog's `maxEfaInterfaces` of the instance types of the "
            "pools using the class (p5.48xlarge 32, p5en.48xlarge 16, p4d.24xlarge 4); when set it must equal that "
            "(Karpenter advertises exactly this many `vpc.amazonaws.com/efa`). Default: derived."
        ),
    )
    placement_group: str | None = Field(
        default=None, description="Name of an existing cluster placement group for the nodes. Default: none."
    )


class NodeClassConfig(Model):
    """One Karpenter EC2NodeClass: AMI, storage, metadata and networking of GPU nodes."""

    name: Dns1123Name = Field(default="gpu", description="EC2NodeClass name (DNS-1123). Default: `gpu`.")
    ami_alias: Annotated[str, StringConstraints(pattern=r"^(al2023|bottlerocket)@(latest|v[0-9][0-9.]*)$")] = Field(
        default=DEFAULT_AMI_ALIAS,
        description=(
            "EKS-optimized AMI alias `family@version` (`al2023@v20261112`, `bottlerocket@v1.50.0`); "
            "`@latest` is refused in production stacks. Default: `" + DEFAULT_AMI_ALIAS + "`."
        ),
    )
    root_volume_gib: int = Field(
        default=200,
        ge=50,
        le=16384,
        description="Root (AL2023) or data (Bottlerocket) EBS volume size in GiB, gp3, encrypted. Default: 200 GiB (CUDA/ML images are large).",
    )
    root_volume_iops: int = Field(default=6000, ge=3000, le=16000, description="gp3 IOPS. Default: 6000.")
    root_volume_throughput_mibps: int = Field(default=500, ge=125, le=1000, description="gp3 throughput in MiB/s. Default: 500.")
    kms_key_id: str | None = Field(default=None, description="KMS key for volume encryption. Default: the account's EBS default key.")
    instance_store_raid0: bool = Field(
        default=True,
        description="Use local NVMe instance store (p4d/p5 and most g sizes) as RAID0 ephemeral storage (`instanceStorePolicy: RAID0`). Default: true.",
    )
    efa: EfaConfig = Field(default_factory=EfaConfig, description="EFA interfaces. Default: none.")
    capacity_reservation_ids: list[Annotated[str, StringConstraints(pattern=r"^cr-[0-9a-z]+$")]] = Field(
        default_factory=list,
        description="On-Demand Capacity Reservation / Capacity Block ids (`cr-...`) that `reserved` pools use. Default: none.",
    )
    capacity_reservation_tags: dict[str, str] = Field(
        default_factory=dict,
        description="Select capacity reservations by tags instead of (or besides) ids. Default: none.",
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Extra tags on launched instances, merged over the stack's cost tags. Default: none.",
    )
    http_put_response_hop_limit: int = Field(
        default=1,
        ge=1,
        le=2,
        description="IMDSv2 hop limit; 1 keeps pods off the instance metadata service. Default: 1.",
    )

    @property
    def ami_family(self) -> str:
        """AMI family part of the alias (`al2023` or `bottlerocket`)."""
        return self.ami_alias.split("@", 1)[0]

    @property
    def ami_version(self) -> str:
        """Version part of the alias (`v20261112` or `latest`)."""
        return self.ami_alias.split("@", 1)[1]


class NewVpcConfig(Model):
    """A new VPC built by the toolkit."""

    cidr: str = Field(default="10.64.0.0/16", description="VPC IPv4 CIDR, /16 to /20 (AWS allows /16 to /28; smaller leaves too few pod addresses). Default: `10.64.0.0/16`.")
    availability_zones: list[str] = Field(
        min_length=2,
        max_length=6,
        description="Availability zones, e.g. `[us-west-2a, us-west-2b, us-west-2c]`; EKS needs at least 2. Required.",
    )
    private_subnet_prefix: int = Field(
        default=19,
        ge=16,
        le=24,
        description="Prefix length of each private (node and pod) subnet; the VPC CNI gives pods VPC addresses, so keep these large. Default: /19 (8190 addresses).",
    )
    public_subnet_prefix: int = Field(default=24, ge=20, le=28, description="Prefix length of each public (load balancer, NAT) subnet. Default: /24.")
    nat_gateways: Literal["single", "one-per-az"] = Field(
        default="one-per-az", description="NAT gateways: one shared (cheaper) or one per AZ (survives an AZ outage). Default: `one-per-az`."
    )

    @field_validator("cidr")
    @classmethod
    def _valid_cidr(cls, value: str) -> str:
        import ipaddress

        try:
            net = ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"not an IPv4 network CIDR: {value!r} ({exc})") from exc
        if net.prefixlen < 16:
            # EC2 CreateVpc: "The allowed block size is between a /16 netmask (65,536 IP addresses) and /28
            # netmask (16 IP addresses)" (Amazon VPC User Guide, "VPC CIDR blocks", read 2026-11-26).
            raise ValueError(f"VPC {value} is larger than AWS allows (a VPC CIDR is /16 to /28); use a /16, e.g. `{net.network_address}/16`")
        if net.prefixlen > 20:
            raise ValueError(f"VPC {value} is too small for GPU nodes and VPC-CNI pods; use /20 or larger")
        return value


class ExistingVpcConfig(Model):
    """Bring your own VPC and subnets; the toolkit adds the Karpenter discovery tag to the private subnets."""

    vpc_id: Annotated[str, StringConstraints(pattern=r"^vpc-[0-9a-f]+$")] = Field(description="Existing VPC id. Required.")
    private_subnet_ids: list[Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-f]+$")]] = Field(
        min_length=2, description="Private subnets for the control plane ENIs and nodes, in at least 2 AZs. Required."
    )
    public_subnet_ids: list[Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-f]+$")]] = Field(
        default_factory=list, description="Public subnets (for internet-facing load balancers). Default: none."
    )
    cidr: str | None = Field(default=None, description="The VPC's IPv4 CIDR, for reference (later: overlap checks with on-prem networks). Default: none.")


class NetworkConfig(Model):
    """Network of the EKS cluster: exactly one of ``new`` or ``existing``."""

    new: NewVpcConfig | None = Field(default=None, description="Build a new VPC. Default: none.")
    existing: ExistingVpcConfig | None = Field(default=None, description="Use an existing VPC. Default: none.")


class EndpointConfig(Model):
    """EKS API server endpoint access."""

    private_access: bool = Field(default=True, description="Reachable from inside the VPC. Default: true.")
    private_access_cidrs: list[str] = Field(
        default_factory=list,
        description=(
            "CIDRs (VPN, peered VPC, CI runners) allowed to reach the private endpoint on 443 through the cluster "
            "security group; the machine running `pulumi up` must be in one of them or inside the VPC. Default: none."
        ),
    )
    public_access_cidrs: list[str] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public endpoint; the public endpoint is off when empty. `0.0.0.0/0` is refused. Default: none (private only).",
    )

    @field_validator("public_access_cidrs", "private_access_cidrs")
    @classmethod
    def _valid_cidrs(cls, value: list[str]) -> list[str]:
        import ipaddress

        for cidr in value:
            try:
                net = ipaddress.ip_network(cidr, strict=True)
            except ValueError as exc:
                raise ValueError(f"not a network CIDR: {cidr!r} ({exc})") from exc
            if net.prefixlen == 0:
                raise ValueError(f"{cidr} opens the API server to the whole internet; list your office/VPN/CI CIDRs instead")
        return value


class SystemNodeGroupConfig(Model):
    """The small on-demand, non-GPU managed node group that runs Karpenter and CoreDNS."""

    instance_types: list[str] = Field(default_factory=lambda: ["m7i.large", "m6i.large"], min_length=1, description="Instance types. Default: `[m7i.large, m6i.large]`.")
    desired_size: int = Field(default=2, ge=1, le=20, description="Nodes to run. Default: 2 (Karpenter runs 2 replicas with anti-affinity).")
    min_size: int = Field(default=2, ge=1, le=20, description="Fewest nodes. Default: 2.")
    max_size: int = Field(default=3, ge=1, le=20, description="Most nodes. Default: 3.")
    disk_gib: int = Field(default=50, ge=20, le=1000, description="Root volume in GiB (gp3, encrypted). Default: 50.")
    critical_addons_only: bool = Field(
        default=True,
        description="Taint the nodes `CriticalAddonsOnly=true:NoSchedule` so only system pods (Karpenter, CoreDNS) run there. Default: true.",
    )


class AddonsConfig(Model):
    """Versions of the core EKS add-ons; unset versions resolve to the newest for the Kubernetes version."""

    vpc_cni: str | None = Field(default=None, description="`vpc-cni` version, e.g. `v1.20.4-eksbuild.1`. Default: newest compatible.")
    coredns: str | None = Field(default=None, description="`coredns` version. Default: newest compatible.")
    kube_proxy: str | None = Field(default=None, description="`kube-proxy` version. Default: newest compatible.")
    eks_pod_identity_agent: str | None = Field(default=None, description="`eks-pod-identity-agent` version. Default: newest compatible.")


#: EKS control-plane log types (aws.eks.Cluster `enabledClusterLogTypes`) and the ones sent by default.
ControlPlaneLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
_DEFAULT_LOG_TYPES: tuple[ControlPlaneLogType, ...] = ("api", "audit", "authenticator")


class ClusterConfig(Model):
    """The EKS control plane."""

    name: Annotated[str, StringConstraints(pattern=r"^[a-zA-Z][a-zA-Z0-9-]*$")] = Field(
        description=(
            f"EKS cluster name (also the interruption queue name and the Karpenter discovery tag value), at most "
            f"{CLUSTER_NAME_MAX_LENGTH} characters so that every AWS name derived from it fits its limit "
            "(docs/cloud.md, AWS names). Required."
        )
    )
    kubernetes_version: Annotated[str, StringConstraints(pattern=r"^1\.[0-9]{2}$")] = Field(
        default=DEFAULT_KUBERNETES_VERSION, description=f"Kubernetes minor version. Default: `{DEFAULT_KUBERNETES_VERSION}`."
    )
    endpoint: EndpointConfig = Field(default_factory=EndpointConfig, description="API endpoint access. Default: private only.")
    admin_principal_arns: list[Annotated[str, StringConstraints(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/.+$")]] = Field(
        default_factory=list,
        description="IAM roles/users granted cluster admin through EKS access entries, each once (EKS keeps one entry per principal). Default: none.",
    )
    deployer_admin: bool = Field(
        default=True,
        description=(
            "Grant the IAM role running `pulumi up` cluster admin through an access entry (needed to install Karpenter); "
            "no second entry when that role is also in `adminPrincipalArns`. Default: true."
        ),
    )
    log_types: list[ControlPlaneLogType] = Field(
        default_factory=lambda: list(_DEFAULT_LOG_TYPES),
        description="Control-plane log types sent to CloudWatch. Default: `[api, audit, authenticator]`.",
    )
    log_retention_days: Literal[1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 3653] = Field(
        default=90, description="CloudWatch retention of control-plane logs, in days. Default: 90."
    )
    addons: AddonsConfig = Field(default_factory=AddonsConfig, description="Core add-on versions. Default: newest compatible.")

    @field_validator("name")
    @classmethod
    def _derived_names_fit(cls, name: str) -> str:
        """Refuse a name for which a derived AWS name overflows (hybridgpu.config.aws_names)."""
        over = sorted(binding_names(name), key=lambda n: n.limit - n.length)  # stable: worst first, then creation order
        if over:
            shown = "; ".join(f"the {n.what} {n.shown!r} ({n.length} characters, limit {n.limit})" for n in over[:3])
            more = f"; and {len(over) - 3} more" if len(over) > 3 else ""
            raise FieldError(
                "",
                f"{len(name)} characters is too long for the AWS names derived from it: {shown}{more}",
                f"use a cluster name of at most {CLUSTER_NAME_MAX_LENGTH} characters",
            )
        return name


#: Oldest Karpenter with a repair policy for the agent's GPU condition: the ``NodeRepair`` gate exists
#: from v1.1.0 (``charts/karpenter/values.yaml``), ``AcceleratedHardwareReady`` joins
#: ``RepairPolicies`` in v1.2.0 (aws/karpenter-provider-aws ``pkg/cloudprovider/cloudprovider.go``).
NODE_REPAIR_MIN_KARPENTER = (1, 2, 0)
#: Oldest ``eks-node-monitoring-agent`` add-on whose configuration schema the rendered values were
#: checked against (aws/eks-node-monitoring-agent v1.7.0 ``charts/configuration.schema.json``,
#: commit c399089d) and whose ``dcgm-server`` runs the host engine from the agent image (#210).
NODE_MONITORING_AGENT_MIN = (1, 7, 0)


class NodeRepairConfig(Model):
    """GPU node repair: the EKS node monitoring agent add-on and Karpenter's ``NodeRepair`` feature gate (docs/cloud.md)."""

    enabled: bool = Field(
        default=False,
        description=(
            "Install the `eks-node-monitoring-agent` add-on and turn on Karpenter's `NodeRepair` gate (alpha): a "
            "Karpenter node whose `AcceleratedHardwareReady` stays False for 10 minutes (Ready, StorageReady, "
            "NetworkingReady, KernelReady, ContainerRuntimeReady: 30 minutes) is deleted without draining and replaced, "
            "while at most 20% (rounded up) of its NodePool is unhealthy. Default: false."
        ),
    )
    agent_version: Annotated[str, StringConstraints(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")] | None = Field(
        default=None,
        description=(
            "`eks-node-monitoring-agent` add-on version, e.g. `v1.7.0-eksbuild.1`, at least v1.7.0. "
            "Default: newest for the cluster's Kubernetes version."
        ),
    )

    @field_validator("agent_version")
    @classmethod
    def _agent_recent(cls, version: str | None) -> str | None:
        """Refuse an add-on older than the one whose configuration schema the values were checked against."""
        if version is not None:
            found = tuple(int(x) for x in version[1:].split("-")[0].split("."))
            if found < NODE_MONITORING_AGENT_MIN:
                raise FieldError(
                    "",
                    f"{version} is older than v1.7.0, the add-on whose configuration schema and bundled DCGM host engine hybridgpu renders for",
                    "use v1.7.0-eksbuild.1 or newer, or leave agentVersion unset for the newest",
                )
        return version

    @model_validator(mode="after")
    def _version_needs_repair(self) -> NodeRepairConfig:
        """An agent version without ``enabled`` would install nothing: say so instead of ignoring it."""
        if self.agent_version is not None and not self.enabled:
            raise FieldError(
                "agentVersion",
                "is set but node repair is off, so the add-on is not installed",
                "set nodeRepair.enabled: true, or remove agentVersion",
            )
        return self


class KarpenterConfig(Model):
    """The Karpenter controller installation."""

    version: Annotated[str, StringConstraints(pattern=r"^1\.[0-9]+\.[0-9]+$")] = Field(
        default=KARPENTER_VERSION, description=f"Karpenter Helm chart version (pinned). Default: `{KARPENTER_VERSION}`."
    )
    namespace: Dns1123Name = Field(
        default="kube-system",
        description=(
            "Namespace of the controller; created by the stack (before the Helm releases and the Pod Identity association) "
            "unless it is one every cluster starts with (`default`, `kube-node-lease`, `kube-public`, `kube-system`). "
            "Default: `kube-system`."
        ),
    )
    replicas: int = Field(default=2, ge=1, le=5, description="Controller replicas. Default: 2.")
    interruption_message_retention_seconds: int = Field(
        default=300, ge=60, le=1209600, description="Retention of interruption messages in the SQS queue, in seconds. Default: 300."
    )
    spot_to_spot_consolidation: bool = Field(default=False, description="Feature gate spotToSpotConsolidation (alpha). Default: false.")
    node_overlay: bool = Field(default=False, description="Feature gate nodeOverlay (alpha; advertises MIG/time-sliced capacity). Default: false.")
    static_capacity: bool = Field(
        default=False, description="Feature gate staticCapacity (alpha, Karpenter >= 1.7.0): NodePools with `replicas`. Default: false."
    )
    capacity_buffer: bool = Field(
        default=False, description="Feature gate capacityBuffer (alpha, Karpenter >= 1.14.0): NodePools with `capacityBuffer`. Default: false."
    )
    node_repair: NodeRepairConfig = Field(
        default_factory=NodeRepairConfig,
        description="GPU node repair: the EKS node monitoring agent add-on and the NodeRepair gate (docs/cloud.md, Node repair). Default: off.",
    )

    @model_validator(mode="after")
    def _repair_needs_recent_karpenter(self) -> KarpenterConfig:
        """Karpenter before v1.2.0 has no repair policy for the agent's GPU condition."""
        if self.node_repair.enabled and tuple(int(x) for x in self.version.split(".")) < NODE_REPAIR_MIN_KARPENTER:
            raise FieldError(
                "nodeRepair.enabled",
                f"Karpenter {self.version} does not repair nodes on AcceleratedHardwareReady (its repair policies start in 1.2.0)",
                f"use Karpenter version {KARPENTER_VERSION}, or turn nodeRepair off",
            )
        return self


class CloudConfig(Model):
    """The AWS side: network, EKS, Karpenter and GPU NodePools (config key ``hybridgpu:cloud``)."""

    cluster: ClusterConfig = Field(description="EKS control plane. Required.")
    network: NetworkConfig = Field(description="VPC: `new` or `existing`. Required.")
    system_node_group: SystemNodeGroupConfig = Field(default_factory=SystemNodeGroupConfig, description="System node group. Default: 2 x m7i.large.")
    karpenter: KarpenterConfig = Field(default_factory=KarpenterConfig, description="Karpenter controller. Default: pinned version, 2 replicas.")
    node_classes: list[NodeClassConfig] = Field(
        default_factory=lambda: [NodeClassConfig()], description="EC2NodeClasses. Default: one `gpu` class with the pinned AL2023 alias."
    )
    node_pools: list[NodePoolConfig] = Field(default_factory=list, description="GPU NodePools. Default: none.")
    storage: CloudStorageConfig | None = Field(
        default=None,
        description="Shared dataset storage: FSx for Lustre sized for a read rate, its CSI driver and the training PVCs (docs/multi-node.md). Default: none.",
    )


#: Cilium chart deployed as the on-prem CNI by default. Cilium 1.20.0 is the release current in
#: autumn 2026 (named as the tested default in the Rex::Rancher 0.003 changelog, 2026-10-01;
#: 1.19.0 shipped 2026-02-04 per its release notes). Override with `hybridgpu:onprem.ciliumVersion`.
DEFAULT_CILIUM_VERSION = "1.20.0"


class OnPremConfig(Model):
    """The on-prem kubeadm cluster (config key ``hybridgpu:onprem``), described by an inventory."""

    inventory: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        min_length=1,
        description="Inventory files or directories, relative to the project root, e.g. `[stacks/inventory/onprem-site-a.yaml]`. Required.",
    )
    cilium_version: Annotated[str, StringConstraints(pattern=r"^1\.[0-9]+\.[0-9]+$")] = Field(
        default=DEFAULT_CILIUM_VERSION, description=f"Cilium Helm chart version (the CNI). Default: `{DEFAULT_CILIUM_VERSION}`."
    )
    nvidia_toolkit: bool = Field(
        default=True,
        description="Install the NVIDIA container toolkit on GPU workers during bootstrap (drivers preinstalled, e.g. DGX OS). Default: true.",
    )
    storage: OnPremStorageConfig = Field(
        default_factory=OnPremStorageConfig,
        description="Mounting the inventory's dataset storage (`storage` in the Site document): claim namespaces, CSI chart version. Default: the burst plan's queue namespaces.",
    )
    gangs: list[GangRequirement] = Field(
        default_factory=list,
        description="The largest multi-node jobs that must fit in one topology domain (block, rack or host) of the inventory; "
        "checked against the active GPU workers (docs/multi-node.md). Default: none.",
    )


TagKey = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[\w .:/=+@-]+$")]
TagValue = Annotated[str, StringConstraints(max_length=256, pattern=r"^[\w .:/=+@-]*$")]


class StackConfig(Model):
    """Everything a stack file configures, validated.

    Built by :func:`hybridgpu.stack.files.load_stack_config` (from a stack file) or
    :func:`hybridgpu.stack.files.config_from_pulumi_values` (inside the Pulumi program).
    """

    stack: str = Field(description="Stack name, taken from the file name `Pulumi.<stack>.yaml` (not a config key). Required.")
    region: str | None = Field(default=None, description="AWS region (`aws:region`). Required when `cloud` is set.")
    environment: Environment = Field(default=Environment.development, description="Kind of stack (`hybridgpu:environment`). Default: `development`.")
    required_tag_keys: list[str] = Field(
        default_factory=lambda: list(DEFAULT_COST_KEYS),
        description=f"Cost tag keys that `tags` must contain (`hybridgpu:requiredTagKeys`). Default: `[{', '.join(DEFAULT_COST_KEYS)}]`.",
    )
    tags: dict[TagKey, TagValue] = Field(
        default_factory=dict,
        description="Cost tags on every AWS resource (provider default tags) and on every instance Karpenter launches (`hybridgpu:tags`). Required keys: `requiredTagKeys`.",
    )
    cloud: CloudConfig | None = Field(default=None, description="AWS side (`hybridgpu:cloud`). Default: none (no cloud resources).")
    onprem: OnPremConfig | None = Field(
        default=None,
        description="On-prem kubeadm cluster from a bare-metal inventory (`hybridgpu:onprem`). Default: none.",
    )
    nvidia: NvidiaConfig | None = Field(
        default=None,
        description="NVIDIA layer: GPU Operator or device plugin, MIG layouts, GPU sharing, DCGM (`hybridgpu:nvidia`). Default: none (not installed).",
    )
    burst: BurstSection | None = Field(
        default=None,
        description="Part in bursting with Kueue MultiKueue: the burst plan file this stack takes part in (`hybridgpu:burst`). Default: none.",
    )
    teams: TeamsSection | None = Field(
        default=None,
        description="Teams sharing the GPUs with Kueue: the teams file (per-team quotas, priorities, budgets, cost labels) of this stack's burst plan (`hybridgpu:teams`). Default: none.",
    )
    economics: EconomicsConfig | None = Field(
        default=None,
        description="GPU economics: price overrides and report settings for `hybridgpu cost report` (`hybridgpu:economics`). Default: none (packaged prices).",
    )
    platform: PlatformConfig | None = Field(
        default=None,
        description="Platform releases on this stack's cluster: JupyterHub, MLflow, Harbor (`hybridgpu:platform`). Default: none.",
    )

    @field_validator("region")
    @classmethod
    def _region_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[a-z]{2}(-gov)?-[a-z]+-[0-9]", value):
            raise ValueError(f"{value!r} is not an AWS region name like `us-west-2`")
        return value
