"""EKS cluster component: control plane, access, add-ons and the system node group.

Creates:

* a KMS key (rotation on) and alias for envelope encryption of Kubernetes secrets;
* the cluster IAM role (``AmazonEKSClusterPolicy``);
* the CloudWatch log group ``/aws/eks/<cluster>/cluster`` with a retention, created before the
  cluster so EKS does not create an unbounded one;
* the EKS cluster: API authentication mode (access entries only), private endpoint, public
  endpoint only for explicit CIDRs, control-plane logging, no self-managed default add-ons;
* the ``karpenter.sh/discovery`` tag on the EKS-created cluster security group (Karpenter
  nodes join it; it allows all traffic among members, which EFA needs), and HTTPS ingress to
  it from ``endpoint.privateAccessCidrs``;
* access entries with ``AmazonEKSClusterAdminPolicy`` for the listed admins and (by default)
  the IAM role running ``pulumi up``;
* the managed add-ons vpc-cni, kube-proxy, eks-pod-identity-agent and coredns;
* with ``nodeRepair.enabled``, the ``eks-node-monitoring-agent`` add-on (GPU and node health as node
  conditions for Karpenter's NodeRepair gate; values from :mod:`hybridgpu.render.node_repair`);
* an on-demand, non-GPU managed node group for Karpenter and CoreDNS with its own node role
  and a launch template (IMDSv2 required, encrypted gp3, cost tags on instances and volumes);
* a Kubernetes provider for the cluster (kubeconfig as a Pulumi secret).
"""

import functools
import json
from typing import NotRequired, TypedDict, cast

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import ClusterConfigArgs, NodeRepairConfigArgs, SystemNodeGroupConfigArgs
from hybridgpu.config.aws_names import CloudNames, admin_access_principals, principal_key
from hybridgpu.config.models import ClusterConfig, NodeRepairConfig, SystemNodeGroupConfig
from hybridgpu.render.iam import (
    CLUSTER_ROLE_MANAGED_POLICIES,
    eks_cluster_trust_policy,
    managed_policy_arn,
    service_trust_policy,
)
from hybridgpu.k8s import CRITICAL_ADDONS_TAINT, DISCOVERY_TAG, ROLE_LABEL, SYSTEM_ROLE
from hybridgpu.render.kubeconfig import eks_kubeconfig
from hybridgpu.render.node_repair import NODE_MONITORING_AGENT_ADDON, node_monitoring_agent_configuration_json

#: Managed policies of the system node group's role (Amazon EKS User Guide, create-node-role).
SYSTEM_NODE_MANAGED_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryPullOnly")

#: The access policy granting full cluster admin through an access entry (EKS User Guide, access-policy-permissions).
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


class EksClusterArgs(TypedDict):
    """Inputs of :class:`EksCluster`."""

    cluster: ClusterConfigArgs
    """The ``hybridgpu:cloud.cluster`` section: name, Kubernetes version, endpoint access, admins, logs, add-on versions."""
    system_node_group: NotRequired[SystemNodeGroupConfigArgs]
    """The ``hybridgpu:cloud.systemNodeGroup`` section. Default: 2 x m7i.large, on-demand."""
    subnet_ids: pulumi.Input[list[str]]
    """Private subnet ids for the control-plane ENIs and the system nodes (e.g. the Network's ``privateSubnetIds``)."""
    region: str
    """AWS region (written into the kubeconfig)."""
    cost_tags: NotRequired[dict[str, str]]
    """Tags that must reach the system nodes' instances and volumes (provider default tags do not). Default: none."""
    node_repair: NotRequired[NodeRepairConfigArgs]
    """The ``hybridgpu:cloud.karpenter.nodeRepair`` section: when enabled, the ``eks-node-monitoring-agent`` add-on. Default: off."""


class EksCluster(pulumi.ComponentResource):
    """An EKS control plane with core add-ons and a small system node group (``hybridgpu:index:EksCluster``).

    Args:
        name: logical name prefix of the children.
        args: :class:`EksClusterArgs`.
        opts: resource options (pass the AWS provider through ``providers``).

    Attributes:
        cluster_name, cluster_arn, endpoint, cluster_security_group_id: ``Output[str]``.
        kubeconfig: ``Output[str]`` (secret), JSON kubeconfig using ``aws eks get-token``.
        provider: a ``pulumi_kubernetes.Provider`` for the cluster.
        access_ready: resources that must exist before workloads are installed (admin access
            entries, the system node group, the pod identity agent and CoreDNS).
    """

    cluster_name: pulumi.Output[str]
    """EKS cluster name."""
    cluster_arn: pulumi.Output[str]
    """EKS cluster ARN."""
    endpoint: pulumi.Output[str]
    """API server URL."""
    cluster_security_group_id: pulumi.Output[str]
    """The EKS-created cluster security group (every node joins it)."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig (JSON, secret) using ``aws eks get-token``."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster (pass it to the Kubernetes-side components)."""

    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        config = section(ClusterConfig, args["cluster"], component="EksCluster", name=name, field="cluster")
        system_node_group = section(
            SystemNodeGroupConfig, args.get("system_node_group", {}), component="EksCluster", name=name, field="systemNodeGroup"
        )
        subnet_ids, region, cost_tags = args["subnet_ids"], args["region"], dict(args.get("cost_tags") or {})
        node_repair = section(NodeRepairConfig, args.get("node_repair", {}), component="EksCluster", name=name, field="nodeRepair")
        own, _ = component_options("hybridgpu:cloud:EksCluster", opts)
        super().__init__(type_token("EksCluster"), name, None, own)
        child = pulumi.ResourceOptions(parent=self)
        partition = aws.get_partition_output(opts=pulumi.InvokeOptions(parent=self)).partition
        cluster_name = config.name
        # Every child whose name reaches AWS takes it from CloudNames, which the stack check uses
        # too (hybridgpu.config.cloud_checks): the names validated are the names created.
        names = CloudNames(cluster_name)

        key = aws.kms.Key(
            f"{name}-secrets-key",
            description=f"Envelope encryption of Kubernetes secrets of EKS cluster {cluster_name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            opts=child,
        )
        aws.kms.Alias(f"{name}-secrets-key-alias", name=names.kms_alias, target_key_id=key.key_id, opts=child)

        role = aws.iam.Role(
            names.cluster_role,
            assume_role_policy=json.dumps(eks_cluster_trust_policy()),
            description=f"EKS control plane of {cluster_name}",
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{names.cluster_role}-{policy}",
                role=role.name,
                policy_arn=partition.apply(functools.partial(managed_policy_arn, name=policy)),
                opts=child,
            )
            for policy in CLUSTER_ROLE_MANAGED_POLICIES
        ]
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-control-plane-logs",
            name=names.log_group,
            retention_in_days=config.log_retention_days,
            opts=child,
        )
        public_cidrs = list(config.endpoint.public_access_cidrs)
        cluster = aws.eks.Cluster(
            f"{name}-cluster",
            name=cluster_name,
            version=config.kubernetes_version,
            role_arn=role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=subnet_ids,
                endpoint_private_access=config.endpoint.private_access,
                endpoint_public_access=bool(public_cidrs),
                public_access_cidrs=public_cidrs or None,
            ),
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API",
                bootstrap_cluster_creator_admin_permissions=False,
            ),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key.arn),
                resources=["secrets"],
            ),
            enabled_cluster_log_types=list(config.log_types),
            bootstrap_self_managed_addons=False,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[log_group, *attachments]),
        )
        # Always set once the cluster exists (EKS creates the group with the cluster).
        cluster_sg = cast(pulumi.Output[str], cluster.vpc_config.apply(lambda v: v.cluster_security_group_id))
        aws.ec2.Tag(f"{name}-cluster-sg-discovery", resource_id=cluster_sg, key=DISCOVERY_TAG, value=cluster_name, opts=child)
        # The cluster security group admits only its members; listed networks (VPN, CI runners)
        # get HTTPS to the private endpoint so `pulumi up` and kubectl can reach it.
        for i, cidr in enumerate(config.endpoint.private_access_cidrs):
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-api-from-{i}",
                security_group_id=cluster_sg,
                cidr_ipv4=cidr,
                ip_protocol="tcp",
                from_port=443,
                to_port=443,
                description=f"EKS API (private endpoint) from {cidr}",
                opts=child,
            )

        # Cluster admins through access entries (no aws-auth ConfigMap in API mode). EKS keeps one
        # entry per principal, so the deployer gets none of its own when it is a listed admin. Its
        # ARN comes from a plain (blocking) invoke: invokes run in `pulumi preview` as well as in
        # `up`, so the set of entries is decided before any is registered and previews show it.
        admin_entries: list[pulumi.Resource] = []
        deployer: str | None = None
        if config.deployer_admin:
            caller = aws.get_caller_identity(opts=pulumi.InvokeOptions(parent=self))
            deployer = aws.iam.get_session_context(arn=caller.arn, opts=pulumi.InvokeOptions(parent=self)).issuer_arn
            if any(principal_key(deployer) == principal_key(arn) for arn in config.admin_principal_arns):
                pulumi.log.info(f"the deployer {deployer} is listed in adminPrincipalArns: one access entry for it", resource=self)
        for label, principal in admin_access_principals(list(config.admin_principal_arns), deployer):
            entry = aws.eks.AccessEntry(f"{name}-access-{label}", cluster_name=cluster.name, principal_arn=principal, type="STANDARD", opts=child)
            admin_entries.append(
                aws.eks.AccessPolicyAssociation(
                    f"{name}-access-{label}-admin",
                    cluster_name=cluster.name,
                    principal_arn=entry.principal_arn,
                    policy_arn=partition.apply(lambda p: f"arn:{p}:eks::aws:cluster-access-policy/{CLUSTER_ADMIN_POLICY}"),
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    opts=child,
                )
            )

        def addon(addon_name: str, version: str | None, depends: list[pulumi.Resource], configuration: str | None = None) -> aws.eks.Addon:
            resolved = version or aws.eks.get_addon_version_output(
                addon_name=addon_name,
                kubernetes_version=cluster.version,
                most_recent=True,
                opts=pulumi.InvokeOptions(parent=self),
            ).version
            return aws.eks.Addon(
                f"{name}-addon-{addon_name}",
                cluster_name=cluster.name,
                addon_name=addon_name,
                addon_version=resolved,
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="PRESERVE",
                configuration_values=configuration,
                opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
            )

        versions = config.addons
        vpc_cni = addon("vpc-cni", versions.vpc_cni, [])
        pod_identity = addon("eks-pod-identity-agent", versions.eks_pod_identity_agent, [])
        kube_proxy = addon("kube-proxy", versions.kube_proxy, [])

        node_group = self._system_node_group(names, cluster, cluster_name, system_node_group, subnet_ids, partition, cost_tags, [vpc_cni, kube_proxy])
        coredns = addon("coredns", versions.coredns, [node_group])
        if node_repair.enabled:
            # Sets the node conditions Karpenter's NodeRepair gate acts on (docs/cloud.md, Node repair).
            addon(NODE_MONITORING_AGENT_ADDON, node_repair.agent_version, [node_group], node_monitoring_agent_configuration_json())

        self.cluster_name = cluster.name
        self.cluster_arn = cluster.arn
        self.endpoint = cluster.endpoint
        self.cluster_security_group_id = cluster_sg
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint, cluster.certificate_authority.apply(lambda ca: ca.data)).apply(
                lambda args: json.dumps(eks_kubeconfig(cluster_name=args[0], endpoint=args[1], ca_data=args[2], region=region))
            )
        )
        self.access_ready: list[pulumi.Resource] = [*admin_entries, node_group, pod_identity, coredns]
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=admin_entries),
        )
        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "cluster_arn": self.cluster_arn,
                "endpoint": self.endpoint,
                "cluster_security_group_id": self.cluster_security_group_id,
                "kubeconfig": self.kubeconfig,
            }
        )

    def _system_node_group(
        self,
        names: CloudNames,
        cluster: aws.eks.Cluster,
        cluster_name: str,
        config: SystemNodeGroupConfig,
        subnet_ids: pulumi.Input[list[str]],
        partition: pulumi.Output[str],
        cost_tags: dict[str, str],
        depends: list[pulumi.Resource],
    ) -> aws.eks.NodeGroup:
        child = pulumi.ResourceOptions(parent=self)
        # A role of its own: EKS makes the access entry of a managed node group's role itself,
        # so sharing the Karpenter node role (which has an explicit entry) would collide.
        role = aws.iam.Role(
            names.system_role,
            assume_role_policy=json.dumps(service_trust_policy("ec2.amazonaws.com")),
            description=f"System node group of {cluster_name}",
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{names.system_role}-{policy}",
                role=role.name,
                policy_arn=partition.apply(functools.partial(managed_policy_arn, name=policy)),
                opts=child,
            )
            for policy in SYSTEM_NODE_MANAGED_POLICIES
        ]
        template = aws.ec2.LaunchTemplate(
            names.system_launch_template,
            description="System node group: IMDSv2 only, encrypted gp3 root volume",
            update_default_version=True,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=1,
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name="/dev/xvda",
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=config.disk_gib,
                        volume_type="gp3",
                        encrypted="true",
                        delete_on_termination="true",
                    ),
                )
            ],
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags={**cost_tags, "Name": f"{cluster_name}-system"})
                for kind in ("instance", "volume", "network-interface")
            ],
            opts=child,
        )
        taints = (
            # The EKS API spells the effect NO_SCHEDULE (CRITICAL_ADDONS_TAINT.effect is the Kubernetes NoSchedule).
            [aws.eks.NodeGroupTaintArgs(key=CRITICAL_ADDONS_TAINT.key, value=CRITICAL_ADDONS_TAINT.value, effect="NO_SCHEDULE")]
            if config.critical_addons_only
            else None
        )
        return aws.eks.NodeGroup(
            names.system_node_group,
            cluster_name=cluster.name,
            # Follows the control plane: a control-plane upgrade then rolls the system nodes.
            version=cluster.version,
            node_role_arn=role.arn,
            subnet_ids=subnet_ids,
            capacity_type="ON_DEMAND",
            ami_type="AL2023_x86_64_STANDARD",
            instance_types=list(config.instance_types),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                desired_size=config.desired_size,
                min_size=config.min_size,
                max_size=config.max_size,
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str)),
            labels={ROLE_LABEL: SYSTEM_ROLE},
            taints=taints,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*attachments, *depends],
                ignore_changes=["scalingConfig.desiredSize"],
            ),
        )
