"""AWS resource names: the one table of their length limits, and the one place the names are built.

Every AWS resource the program creates gets its name here, so the components
(:mod:`hybridgpu.components.eks`, ``karpenter``, ``network``) and the stack check
(:func:`hybridgpu.config.cloud_checks.aws_name_issues`) cannot disagree: both call :class:`CloudNames`.

A resource is named one of three ways (:data:`Naming`):

* ``explicit``: the program sets the name property (``name=``), e.g. the EKS cluster, the SQS
  interruption queue, the Karpenter roles, the EventBridge rules;
* ``auto``: the program sets no name, so the Pulumi AWS provider derives one from the logical
  (URN) name plus a random suffix, e.g. the EKS cluster role and the system node group;
* ``none``: the resource type has no name property (VPC, subnets, access entries, ...), so its
  logical name never reaches AWS (tags have their own, generous, 256-character limit).

Auto-naming, as read from the source:

* pulumi/pulumi-terraform-bridge ``pkg/tfbridge/info/autonaming.go`` (commit 59de6c66,
  2026-08-05): ``AutoName(name, maxlength, separator)`` uses ``Randlen: 7`` and calls
  ``resource.NewUniqueName(seed, <logical name> + separator, 7, maxlength, nil)``;
  ``SetAutonaming(255, "-")`` gives every other resource property literally called ``name``
  the same treatment with a limit of 255.
* pulumi/pulumi ``sdk/go/common/resource/resource_id.go`` (commit 01c4ec37): ``NewUniqueName``
  fails with "name '<prefix>' plus 7 random chars is longer than maximum length <max>" when
  ``len(prefix) + randlen > maxlen``. So an auto-name is the logical name + ``-`` + 7 hex
  characters: **logical name + 8** (:data:`AUTONAME_SUFFIX_LENGTH`), and ``pulumi preview``
  fails when that exceeds the provider's limit.
* pulumi/pulumi-aws: the v6 ``provider/resources.go`` (commit 00ba5ea5) and the v7 provider's
  ``resourceOverrides`` (module ``github.com/pulumi/pulumi-aws/provider/v7``, the line of the
  pulumi-aws 7.51.1 we pin; both read 2026-11-24, the entries below are the same in both):
  ``aws_iam_role`` name ``AutoName("name", 64, "-")``; ``aws_cloudwatch_event_rule``
  name 64; ``aws_cloudwatch_event_target`` targetId 255; ``aws_sqs_queue`` name 80;
  ``aws_kms_alias`` name 238 (then prefixed ``alias/``); ``aws_eks_node_group``
  ``nodeGroupName`` 255; and, through pulumi-aws's own ``setAutonaming`` (255, ``-``), every
  resource with an input ``name``: ``aws_iam_role_policy``, ``aws_launch_template``,
  ``aws_eks_cluster``, ``aws_cloudwatch_log_group``.

The AWS API can be stricter than the provider: an EKS node group name may have at most 63
characters while pulumi-aws auto-names up to 255; an inline role policy 128 against 255; a
launch template 128 against 255. The AWS limits come from the AWS API references (IAM
CreateRole ``RoleName`` 1-64 and PutRolePolicy ``PolicyName`` 1-128; EventBridge PutRule
``Name`` 1-64 and PutTargets ``Id`` 1-64; SQS CreateQueue ``QueueName`` 1-80; EKS
CreateCluster ``name`` 1-100; KMS CreateAlias ``AliasName`` 1-256 including ``alias/``;
CloudWatch Logs CreateLogGroup ``logGroupName`` 1-512; EC2 CreateLaunchTemplate
``LaunchTemplateName`` 3-128), as repeated in the installed pulumi-aws 7.51.1 docstrings
(``eks/node_group.py``: "The node group name can't be longer than 63 characters";
``sqs/queue.py``: "between 1 and 80 characters long"), read 2026-11-24.

Pure: imports nothing from hybridgpu, so the config models (the cluster name's maximum length,
:data:`CLUSTER_NAME_MAX_LENGTH`), the stack check and the components can all use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

#: How a resource gets its AWS name (see the module docstring).
Naming = Literal["explicit", "auto", "none"]

#: Characters an auto-name adds to the logical name: the separator ``-`` plus 7 random hex
#: characters (pulumi-terraform-bridge ``AutoName``: ``Randlen: 7``).
AUTONAME_SUFFIX_LENGTH = 8

#: The config key every AWS name derives from.
CLUSTER_NAME_KEY = "hybridgpu:cloud.cluster.name"

_BRIDGE = "pulumi/pulumi-terraform-bridge pkg/tfbridge/info/autonaming.go @59de6c66 (SetAutonaming 255)"
_AWS_RES = "pulumi/pulumi-aws provider/resources.go @00ba5ea5"


@dataclass(frozen=True)
class NameLimit:
    """The name limits of one AWS resource type the toolkit creates.

    Attributes:
        resource_type: Pulumi type token, e.g. ``aws:iam/role:Role``.
        terraform_type: the bridged Terraform type, e.g. ``aws_iam_role`` (what resources.go keys on).
        name_property: the Pulumi input that carries the AWS name (``name``, ``nodeGroupName``,
            ``targetId``), or None for a type without one.
        naming: how the toolkit names it (``explicit``, ``auto`` or ``none``).
        autoname_max: pulumi-aws's auto-name limit for the property (characters, logical name
            + 8 must fit), or None when the property is not auto-named.
        api_max: the AWS API's limit for the name (characters), or None without a name.
        source: where both limits were read.
    """

    resource_type: str
    terraform_type: str
    name_property: str | None
    naming: Naming
    autoname_max: int | None
    api_max: int | None
    source: str

    @property
    def limit(self) -> int | None:
        """The binding limit for a name the toolkit builds: the API's, and for auto-names the provider's too."""
        return self.limit_for(self.naming)

    def limit_for(self, naming: Naming) -> int | None:
        """The binding limit of a name of this type given ``naming``: the API's, and for ``auto`` the provider's too."""
        limits = [self.api_max, self.autoname_max] if naming == "auto" else [self.api_max]
        found = [n for n in limits if n is not None]
        return min(found) if found else None


#: Every AWS resource type the program creates (hybridgpu/components/*.py), in the order
#: of the components, with its pulumi-aws auto-name limit and the AWS API limit.
AWS_NAME_LIMITS: dict[str, NameLimit] = {
    lim.resource_type: lim
    for lim in (
        # network.py
        NameLimit("aws:ec2/vpc:Vpc", "aws_vpc", None, "none", None, None, "no name property (Name tag only)"),
        NameLimit("aws:ec2/internetGateway:InternetGateway", "aws_internet_gateway", None, "none", None, None, "no name property"),
        NameLimit("aws:ec2/subnet:Subnet", "aws_subnet", None, "none", None, None, "no name property"),
        NameLimit("aws:ec2/routeTable:RouteTable", "aws_route_table", None, "none", None, None, "no name property"),
        NameLimit("aws:ec2/route:Route", "aws_route", None, "none", None, None, "no name property"),
        NameLimit("aws:ec2/routeTableAssociation:RouteTableAssociation", "aws_route_table_association", None, "none", None, None, "no name property"),
        NameLimit("aws:ec2/eip:Eip", "aws_eip", None, "none", None, None, "no name property"),
        NameLimit("aws:ec2/natGateway:NatGateway", "aws_nat_gateway", None, "none", None, None, "no name property"),
        NameLimit("aws:ec2/tag:Tag", "aws_ec2_tag", None, "none", None, None, "no name property"),
        # eks.py
        NameLimit("aws:kms/key:Key", "aws_kms_key", None, "none", None, None, "no name property (description only)"),
        NameLimit("aws:kms/alias:Alias", "aws_kms_alias", "name", "explicit", 238, 256, f"{_AWS_RES} (AutoName 238 + 'alias/'); KMS API CreateAlias AliasName 1-256"),
        NameLimit("aws:iam/role:Role", "aws_iam_role", "name", "auto", 64, 64, f"{_AWS_RES} (AutoName 64); IAM API CreateRole RoleName 1-64"),
        NameLimit("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws_iam_role_policy_attachment", None, "none", None, None, "no name property"),
        NameLimit("aws:cloudwatch/logGroup:LogGroup", "aws_cloudwatch_log_group", "name", "explicit", 255, 512, f"{_BRIDGE}; CloudWatch Logs API CreateLogGroup logGroupName 1-512"),
        NameLimit("aws:eks/cluster:Cluster", "aws_eks_cluster", "name", "explicit", 255, 100, f"{_BRIDGE}; EKS API CreateCluster name 1-100"),
        NameLimit("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "aws_vpc_security_group_ingress_rule", None, "none", None, None, "no name property"),
        NameLimit("aws:eks/accessEntry:AccessEntry", "aws_eks_access_entry", None, "none", None, None, "no name property (one entry per principal ARN and cluster)"),
        NameLimit("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "aws_eks_access_policy_association", None, "none", None, None, "no name property"),
        NameLimit("aws:eks/addon:Addon", "aws_eks_addon", None, "none", None, None, "addonName is the add-on's own fixed name"),
        NameLimit("aws:ec2/launchTemplate:LaunchTemplate", "aws_launch_template", "name", "auto", 255, 128, f"{_BRIDGE}; EC2 API CreateLaunchTemplate LaunchTemplateName 3-128"),
        NameLimit("aws:eks/nodeGroup:NodeGroup", "aws_eks_node_group", "nodeGroupName", "auto", 255, 63, f"{_AWS_RES} (AutoName nodeGroupName 255); EKS: at most 63 characters (pulumi-aws 7.51.1 eks/node_group.py)"),
        # karpenter.py
        NameLimit("aws:sqs/queue:Queue", "aws_sqs_queue", "name", "explicit", 80, 80, f"{_AWS_RES} (AutoName 80); SQS API CreateQueue QueueName 1-80"),
        NameLimit("aws:sqs/queuePolicy:QueuePolicy", "aws_sqs_queue_policy", None, "none", None, None, "no name property"),
        NameLimit("aws:cloudwatch/eventRule:EventRule", "aws_cloudwatch_event_rule", "name", "explicit", 64, 64, f"{_AWS_RES} (AutoName 64); EventBridge API PutRule Name 1-64"),
        NameLimit("aws:cloudwatch/eventTarget:EventTarget", "aws_cloudwatch_event_target", "targetId", "explicit", 255, 64, f"{_AWS_RES} (AutoName targetId 255); EventBridge API PutTargets Target.Id 1-64"),
        NameLimit("aws:iam/rolePolicy:RolePolicy", "aws_iam_role_policy", "name", "auto", 255, 128, f"{_BRIDGE}; IAM API PutRolePolicy PolicyName 1-128"),
        NameLimit("aws:eks/podIdentityAssociation:PodIdentityAssociation", "aws_eks_pod_identity_association", None, "none", None, None, "no name property (namespace and service account are Kubernetes names)"),
        # storage.py (FSx for Lustre, only with hybridgpu:cloud.storage)
        NameLimit("aws:ec2/securityGroup:SecurityGroup", "aws_security_group", "name", "auto", 255, 255, f"{_BRIDGE}; EC2 API CreateSecurityGroup GroupName: up to 255 characters"),
        NameLimit("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "aws_vpc_security_group_egress_rule", None, "none", None, None, "no name property"),
        NameLimit("aws:fsx/lustreFileSystem:LustreFileSystem", "aws_fsx_lustre_file_system", None, "none", None, None, "no name property (Name tag only; AWS assigns fs-<id>)"),
        NameLimit("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation", "aws_fsx_data_repository_association", None, "none", None, None, "no name property"),
    )
}

@dataclass(frozen=True)
class AwsName:
    """One AWS name the program will use, as the components build it.

    Attributes:
        resource_type: Pulumi type token (a key of :data:`AWS_NAME_LIMITS`).
        what: the resource in words, e.g. ``Karpenter controller role``.
        logical_name: the Pulumi logical (URN) name of the resource.
        naming: ``explicit`` (``name`` is what AWS gets) or ``auto`` (AWS gets ``logical_name``
            plus :data:`AUTONAME_SUFFIX_LENGTH` characters).
        name: the explicit name, or the logical name for an auto-name.
        limit: the binding limit in characters (see :attr:`NameLimit.limit`).
        source: where the limit comes from.
    """

    resource_type: str
    what: str
    logical_name: str
    naming: Naming
    name: str
    limit: int
    source: str

    @property
    def length(self) -> int:
        """Characters AWS receives: the explicit name, or the logical name + 8 for an auto-name."""
        return len(self.name) + (AUTONAME_SUFFIX_LENGTH if self.naming == "auto" else 0)

    @property
    def shown(self) -> str:
        """The name as AWS will see it (an auto-name's random suffix written ``-xxxxxxx``)."""
        return self.name + ("-" + "x" * (AUTONAME_SUFFIX_LENGTH - 1) if self.naming == "auto" else "")

    @property
    def fits(self) -> bool:
        """Whether the name is within its limit."""
        return self.length <= self.limit


#: The five EventBridge rules feeding Karpenter's interruption queue, by their role name in
#: :data:`hybridgpu.render.iam.INTERRUPTION_RULES`, and the short word their AWS name ends in
#: (``<cluster>-karpenter-<word>``; a word of at most 9 characters keeps the rule name within
#: EventBridge's 64 for the longest allowed cluster name).
EVENT_RULE_WORDS: dict[str, str] = {
    "scheduled-change": "scheduled",
    "spot-interruption": "spot",
    "rebalance": "rebalance",
    "instance-state-change": "state",
    "capacity-reservation-interruption": "reserved",
}

#: The inline policies of the Karpenter controller role (one per concern, as upstream splits them).
CONTROLLER_POLICY_CONCERNS = ("node-lifecycle", "iam-integration", "eks-integration", "interruption", "resource-discovery")

#: The EventBridge target id of every interruption rule (explicit, the same in each rule).
INTERRUPTION_TARGET_ID = "KarpenterInterruptionQueueTarget"


@dataclass(frozen=True)
class CloudNames:
    """Every component, logical and AWS name of the cloud side, derived from the EKS cluster name.

    Args:
        cluster: the EKS cluster name (``hybridgpu:cloud.cluster.name``).

    The components take their own names and their children's from here; :meth:`aws_names`
    lists every name that reaches AWS with its limit, for the stack check.
    """

    cluster: str
    #: True when the stack has ``hybridgpu:cloud.storage`` (FSx for Lustre and its security group).
    fsx: bool = False

    # -- component (URN) names ------------------------------------------------------------
    @property
    def network(self) -> str:
        """The Network component."""
        return f"{self.cluster}-net"

    @property
    def eks(self) -> str:
        """The EksCluster component."""
        return self.cluster

    @property
    def karpenter(self) -> str:
        """The Karpenter component."""
        return f"{self.cluster}-karpenter"

    @property
    def efa(self) -> str:
        """The Efa component (the EFA security-group rule, a ``aws:vpc/securityGroupEgressRule`` without a name, and the
        EFA device plugin); created only when a NodePool's node class has EFA."""
        return f"{self.cluster}-efa"

    # -- EksCluster children -----------------------------------------------------------------
    @property
    def kms_alias(self) -> str:
        """Explicit KMS alias name of the secrets key."""
        return f"alias/{self.cluster}-eks-secrets"

    @property
    def cluster_role(self) -> str:
        """Logical name of the EKS cluster role (auto-named; was ``<cluster>-cluster-role``, too long for 64)."""
        return f"{self.eks}-eks-role"

    @property
    def log_group(self) -> str:
        """Explicit name of the control-plane log group (EKS writes to exactly this name)."""
        return f"/aws/eks/{self.cluster}/cluster"

    @property
    def system_role(self) -> str:
        """Logical name of the system node group's role (auto-named; was ``<cluster>-system-node-role``)."""
        return f"{self.eks}-system-role"

    @property
    def system_launch_template(self) -> str:
        """Logical name of the system node group's launch template (auto-named)."""
        return f"{self.eks}-system-lt"

    @property
    def system_node_group(self) -> str:
        """Logical name of the system node group (auto-named; EKS allows 63)."""
        return f"{self.eks}-system"

    # -- Karpenter children ------------------------------------------------------------------
    @property
    def karpenter_node_role(self) -> str:
        """Explicit name of the Karpenter node role (the upstream ``KarpenterNode…-<cluster>`` convention)."""
        return f"KarpenterNode-{self.cluster}"

    @property
    def karpenter_controller_role(self) -> str:
        """Explicit name of the Karpenter controller role."""
        return f"KarpenterController-{self.cluster}"

    @property
    def interruption_queue(self) -> str:
        """Explicit name of the SQS interruption queue (the cluster name, as in the upstream template)."""
        return self.cluster

    def event_rule(self, rule: str) -> str:
        """Explicit name of the interruption EventBridge rule ``rule`` (a key of :data:`EVENT_RULE_WORDS`).

        Raises:
            KeyError: an unknown rule.
        """
        return f"{self.cluster}-karpenter-{EVENT_RULE_WORDS[rule]}"

    def controller_policy(self, concern: str) -> str:
        """Logical name of the controller role's inline policy for ``concern`` (auto-named)."""
        return f"{self.karpenter}-controller-{concern}"

    # -- FsxLustre children (hybridgpu.components.storage) ------------------------------
    @property
    def fsx_component(self) -> str:
        """The FsxLustre component."""
        return f"{self.cluster}-fsx"

    @property
    def fsx_security_group(self) -> str:
        """Logical name of the FSx security group (auto-named by pulumi-aws: ``name`` 255)."""
        return f"{self.fsx_component}-sg"

    # -- the check's view ----------------------------------------------------------------------
    def aws_names(self) -> list[AwsName]:
        """Every name the program sends to AWS, with its limit, in creation order."""

        def entry(token: str, what: str, logical: str, name: str, naming: Naming | None = None) -> AwsName:
            lim = AWS_NAME_LIMITS[token]
            how = naming or lim.naming
            limit = lim.limit_for(how)
            assert limit is not None, token  # only types with a name property are listed
            return AwsName(token, what, logical, how, name, limit, lim.source)

        role = "aws:iam/role:Role"
        names = [
            entry("aws:kms/alias:Alias", "KMS alias of the secrets key", f"{self.eks}-secrets-key-alias", self.kms_alias),
            entry(role, "EKS cluster role", self.cluster_role, self.cluster_role),
            entry("aws:cloudwatch/logGroup:LogGroup", "control-plane log group", f"{self.eks}-control-plane-logs", self.log_group),
            entry("aws:eks/cluster:Cluster", "EKS cluster", f"{self.eks}-cluster", self.cluster),
            entry(role, "system node group role", self.system_role, self.system_role),
            entry("aws:ec2/launchTemplate:LaunchTemplate", "system node group launch template", self.system_launch_template, self.system_launch_template),
            entry("aws:eks/nodeGroup:NodeGroup", "system node group", self.system_node_group, self.system_node_group),
            entry(role, "Karpenter node role", f"{self.karpenter}-node-role", self.karpenter_node_role, "explicit"),
            entry("aws:sqs/queue:Queue", "Karpenter interruption queue", f"{self.karpenter}-interruption-queue", self.interruption_queue),
        ]
        for rule in EVENT_RULE_WORDS:
            names.append(entry("aws:cloudwatch/eventRule:EventRule", f"interruption rule {rule}", f"{self.karpenter}-{rule}", self.event_rule(rule)))
            names.append(
                entry("aws:cloudwatch/eventTarget:EventTarget", f"target of interruption rule {rule}", f"{self.karpenter}-{rule}-target", INTERRUPTION_TARGET_ID)
            )
        names.append(entry(role, "Karpenter controller role", f"{self.karpenter}-controller-role", self.karpenter_controller_role, "explicit"))
        for concern in CONTROLLER_POLICY_CONCERNS:
            logical = self.controller_policy(concern)
            names.append(entry("aws:iam/rolePolicy:RolePolicy", f"controller inline policy {concern}", logical, logical))
        if self.fsx:
            names.append(entry("aws:ec2/securityGroup:SecurityGroup", "FSx for Lustre security group", self.fsx_security_group, self.fsx_security_group))
        return names


def _max_cluster_name_length() -> int:
    """The longest cluster name for which every name of :meth:`CloudNames.aws_names` fits.

    A name holds the cluster name ``d`` times (0 or 1), so its length is ``overhead + d * L``
    for a cluster name of ``L`` characters; the bound is the smallest ``(limit - overhead) // d``,
    capped by EKS's own 100.
    """
    short, longer = CloudNames("q" * 10).aws_names(), CloudNames("q" * 11).aws_names()
    bounds = [AWS_NAME_LIMITS["aws:eks/cluster:Cluster"].api_max or 100]
    for a, b in zip(short, longer):
        d = b.length - a.length
        if d:
            bounds.append((a.limit - (a.length - 10 * d)) // d)
    return min(bounds)


#: The longest EKS cluster name the toolkit accepts: every AWS name derived from it fits its
#: limit (EKS itself allows 100). The binding name is the Karpenter controller role
#: ``KarpenterController-<cluster>`` against IAM's 64 characters.
CLUSTER_NAME_MAX_LENGTH = _max_cluster_name_length()

#: The cluster name's characters: a letter, then letters, digits and hyphens (EKS also allows
#: ``_``, which EC2 tag-based discovery and DNS-style names downstream do not need).
CLUSTER_NAME_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]*$")


def binding_names(cluster: str) -> list[AwsName]:
    """The names of ``cluster`` that overflow their limit (empty when all fit)."""
    return [n for n in CloudNames(cluster).aws_names() if not n.fits]


# -- EKS access entries ------------------------------------------------------------------------
#
# EKS keeps one access entry per IAM principal and cluster: CreateAccessEntry for a principal
# that already has one fails with ResourceInUseException (Amazon EKS API Reference,
# CreateAccessEntry, "Errors"; EKS User Guide, access-entries: "You can create one access entry
# for each IAM principal"). An access entry has no name, so its Pulumi logical name is ours to
# pick: keyed by the principal, not by its position in a list, so that moving a principal
# between `adminPrincipalArns` and the deployer, or removing an earlier list entry, keeps the
# same resource instead of creating a second entry for the principal before deleting the first.

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def principal_key(arn: str) -> str:
    """How two IAM principal ARNs are compared: IAM names are unique case-insensitively in an account.

    ``arn:aws:iam::111122223333:role/Platform-Admins`` and ``...:role/platform-admins`` name one role
    (IAM User Guide, "IAM identifiers": names are not distinguished by case).
    """
    return arn.lower()


def access_entry_label(arn: str) -> str:
    """The logical-name part of the access entry of ``arn``: ``<account>-<role|user>-<path/name>`` made URN-safe.

    Example: ``arn:aws:iam::111122223333:role/platform-admins`` -> ``111122223333-role-platform-admins``.
    """
    tail = arn.split(":iam::", 1)[-1]
    return _UNSAFE.sub("-", tail).strip("-").lower()


def admin_access_principals(admin_arns: list[str] | tuple[str, ...], deployer_arn: str | None) -> list[tuple[str, str]]:
    """The principals that get a cluster-admin access entry, each once: ``[(label, arn), ...]``.

    Args:
        admin_arns: ``hybridgpu:cloud.cluster.adminPrincipalArns`` (the stack check refuses duplicates
            in it; here a repeat is dropped too, so the program never asks EKS twice).
        deployer_arn: the IAM role or user running ``pulumi up`` (the session issuer of
            ``aws.get_caller_identity``), or None when ``deployerAdmin`` is false. Known only at
            run time: when it is one of ``admin_arns`` it gets no second entry.

    Returns:
        The listed admins in order, then the deployer unless already listed; labels from
        :func:`access_entry_label`.
    """
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for arn in [*admin_arns, *([deployer_arn] if deployer_arn else [])]:
        if principal_key(arn) in seen:
            continue
        seen.add(principal_key(arn))
        found.append((access_entry_label(arn), arn))
    return found
