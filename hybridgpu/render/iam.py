"""IAM policy documents and interruption wiring for EKS and Karpenter (pure).

Every document is a plain dict (``json.dumps`` it for AWS). Scoping follows the Karpenter
v1.14 reference CloudFormation template (``aws/karpenter-provider-aws``
``website/content/en/v1.14/getting-started/getting-started-with-karpenter/cloudformation.yaml``,
read 2026-11-22): instance and launch-template actions are limited to resources tagged
``kubernetes.io/cluster/<name>: owned`` plus ``karpenter.sh/nodepool``; ``iam:PassRole`` only
on the node role, only to EC2; instance-profile actions only on profiles tagged for this
cluster and region; SQS actions only on this cluster's queue. The Pod Identity trust policy
follows the Amazon EKS User Guide, "Create IAM role with trust policy required by EKS Pod
Identity" (pod-id-role), with session-tag conditions that pin the role to one cluster,
namespace and service account.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hybridgpu.k8s import EC2NODECLASS_TAG, KARPENTER_NODEPOOL_LABEL, NODECLAIM_TAG, REGION_LABEL, cluster_tag

VERSION = "2012-10-17"

#: Managed policies of the Karpenter node role (cloudformation.yaml, KarpenterNodeRole).
NODE_ROLE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)

#: Managed policy of the EKS cluster role (Amazon EKS User Guide, cluster-iam-role).
CLUSTER_ROLE_MANAGED_POLICIES = ("AmazonEKSClusterPolicy",)


@dataclass(frozen=True)
class EventRule:
    """One EventBridge rule that feeds Karpenter's interruption queue.

    Attributes:
        name: short role name used in resource names.
        source: event source (``aws.ec2`` or ``aws.health``).
        detail_type: the event's ``detail-type``.
    """

    name: str
    source: str
    detail_type: str

    def pattern(self) -> dict[str, list[str]]:
        """The EventBridge event pattern."""
        return {"source": [self.source], "detail-type": [self.detail_type]}


#: The five interruption rules of Karpenter v1.14 (cloudformation.yaml: ScheduledChangeRule,
#: SpotInterruptionRule, RebalanceRule, InstanceStateChangeRule, CapacityReservationInterruptionRule).
INTERRUPTION_RULES = (
    EventRule("scheduled-change", "aws.health", "AWS Health Event"),
    EventRule("spot-interruption", "aws.ec2", "EC2 Spot Instance Interruption Warning"),
    EventRule("rebalance", "aws.ec2", "EC2 Instance Rebalance Recommendation"),
    EventRule("instance-state-change", "aws.ec2", "EC2 Instance State-change Notification"),
    EventRule("capacity-reservation-interruption", "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
)


def managed_policy_arn(partition: str, name: str) -> str:
    """ARN of an AWS managed policy, e.g. ``arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy``."""
    return f"arn:{partition}:iam::aws:policy/{name}"


def service_trust_policy(service: str) -> dict[str, Any]:
    """Trust policy letting an AWS service principal (e.g. ``ec2.amazonaws.com``) assume a role."""
    return {
        "Version": VERSION,
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    }


def eks_cluster_trust_policy() -> dict[str, Any]:
    """Trust policy of the EKS cluster role (``eks.amazonaws.com``; TagSession for EKS features that tag sessions)."""
    return {
        "Version": VERSION,
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": ["sts:AssumeRole", "sts:TagSession"]}
        ],
    }


def pod_identity_trust_policy(*, account_id: str, cluster_name: str, namespace: str, service_account: str) -> dict[str, Any]:
    """Trust policy of a role used through an EKS Pod Identity association.

    The ``aws:RequestTag/*`` conditions use the session tags EKS Pod Identity sets, so only
    the given service account of the given namespace of this cluster can assume the role.
    """
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "AllowEksPodIdentityForOneServiceAccount",
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:SourceAccount": account_id,
                        "aws:RequestTag/eks-cluster-name": cluster_name,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
                    }
                },
            }
        ],
    }


#: parliament findings that stay in the Karpenter controller policies below, keyed by
#: ``(statement Sid, parliament issue)``, each with why it is right. The security tests
#: (tests/security/test_iam_parliament.py) lint every generated policy: a finding missing here
#: fails, and so does an entry no finding uses any more.
PARLIAMENT_JUSTIFICATIONS: dict[tuple[str, str], str] = {
    ("AllowScopedEC2InstanceAccessActions", "RESOURCE_MISMATCH"): (
        "RunInstances/CreateFleet are authorized per resource they touch; this statement grants only "
        "the pre-existing inputs (image, snapshot, security group, subnet, capacity reservation, "
        "placement group). The instance, volume, network interface and fleet they create are granted "
        "by AllowScopedEC2InstanceActionsWithTags under the cluster-ownership request-tag condition, "
        "which could not be attached to the inputs (they carry no such tag). Same split as the "
        "Karpenter v1.14 reference template; the test checks the union covers every required ARN format."
    ),
    ("AllowScopedEC2LaunchTemplateAccessActions", "RESOURCE_MISMATCH"): (
        "Only the launch template, and only one tagged as owned by this cluster and a NodePool; the "
        "other resources of RunInstances/CreateFleet come from the two sibling statements (upstream split)."
    ),
    ("AllowScopedEC2InstanceActionsWithTags", "RESOURCE_MISMATCH"): (
        "Only the resources created by the call, under the request-tag condition that marks them as "
        "this cluster's; the pre-existing inputs (image, security group, subnet) are granted by "
        "AllowScopedEC2InstanceAccessActions, which cannot carry a request-tag condition."
    ),
    ("AllowPassingInstanceRole", "PERMISSIONS_MANAGEMENT_ACTIONS"): (
        "Karpenter must pass the node role to the instances it launches; scoped to that one role ARN "
        "and to iam:PassedToService ec2.amazonaws.com."
    ),
    ("AllowScopedInstanceProfileCreationActions", "PERMISSIONS_MANAGEMENT_ACTIONS"): (
        "Karpenter creates one instance profile per EC2NodeClass; only with request tags naming this "
        "cluster, this region and an EC2NodeClass."
    ),
    ("AllowScopedInstanceProfileActions", "PERMISSIONS_MANAGEMENT_ACTIONS"): (
        "Karpenter attaches the node role to, and deletes, the instance profiles it created; only "
        "profiles tagged as owned by this cluster, in this region, for an EC2NodeClass. The only role "
        "it can put in them is the one AllowPassingInstanceRole lets it pass."
    ),
    ("AllowSSMReadActions", "RESOURCE_MISMATCH"): (
        "parliament expects an account in the ARN (arn:*:ssm:*:*:parameter/*), but the AWS public "
        "parameters (AMI ids under /aws/service/) have an empty account field: "
        "arn:<partition>:ssm:<region>::parameter/aws/service/*, as in the Karpenter reference template "
        "and the Systems Manager User Guide (public parameters). A false positive of the ARN matcher."
    ),
}


def karpenter_controller_policies(
    *,
    partition: str,
    region: str,
    account_id: str,
    cluster_name: str,
    node_role_arn: str,
    queue_arn: str,
) -> dict[str, dict[str, Any]]:
    """The Karpenter controller's permissions, split by concern like the upstream template.

    Args:
        partition: ``aws`` (or ``aws-cn``, ``aws-us-gov``).
        region: the cluster's region.
        account_id: 12-digit account id.
        cluster_name: EKS cluster name.
        node_role_arn: ARN of the Karpenter node role (the only role it may pass).
        queue_arn: ARN of the interruption queue.

    Returns:
        ``{"node-lifecycle": doc, "iam-integration": doc, "eks-integration": doc,
        "interruption": doc, "resource-discovery": doc}``.
    """
    arn_ec2 = f"arn:{partition}:ec2:{region}"
    owned = {f"aws:ResourceTag/{cluster_tag(cluster_name)}": "owned"}
    request_owned = {
        f"aws:RequestTag/{cluster_tag(cluster_name)}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
    }
    launched = [f"{arn_ec2}:*:{kind}/*" for kind in ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")]
    profile_arn = f"arn:{partition}:iam::{account_id}:instance-profile/*"
    region_tag = {f"aws:RequestTag/{REGION_LABEL}": region}

    node_lifecycle = {
        "Version": VERSION,
        "Statement": [
            {
                # parliament finding justified in PARLIAMENT_JUSTIFICATIONS['AllowScopedEC2InstanceAccessActions', ...]
                "Sid": "AllowScopedEC2InstanceAccessActions",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Resource": [
                    f"{arn_ec2}::image/*",
                    f"{arn_ec2}::snapshot/*",
                    f"{arn_ec2}:*:security-group/*",
                    f"{arn_ec2}:*:subnet/*",
                    f"{arn_ec2}:*:capacity-reservation/*",
                    f"{arn_ec2}:*:placement-group/*",
                ],
            },
            {
                # parliament finding justified in PARLIAMENT_JUSTIFICATIONS['AllowScopedEC2LaunchTemplateAccessActions', ...]
                "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Resource": f"{arn_ec2}:*:launch-template/*",
                "Condition": {"StringEquals": owned, "StringLike": {f"aws:ResourceTag/{KARPENTER_NODEPOOL_LABEL}": "*"}},
            },
            {
                # parliament finding justified in PARLIAMENT_JUSTIFICATIONS['AllowScopedEC2InstanceActionsWithTags', ...]
                "Sid": "AllowScopedEC2InstanceActionsWithTags",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                "Resource": launched,
                "Condition": {"StringEquals": request_owned, "StringLike": {f"aws:RequestTag/{KARPENTER_NODEPOOL_LABEL}": "*"}},
            },
            {
                "Sid": "AllowScopedResourceCreationTagging",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": launched,
                "Condition": {
                    "StringEquals": {**request_owned, "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
                    "StringLike": {f"aws:RequestTag/{KARPENTER_NODEPOOL_LABEL}": "*"},
                },
            },
            {
                "Sid": "AllowScopedResourceTagging",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": f"{arn_ec2}:*:instance/*",
                "Condition": {
                    "StringEquals": owned,
                    "StringLike": {f"aws:ResourceTag/{KARPENTER_NODEPOOL_LABEL}": "*"},
                    "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                    "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", NODECLAIM_TAG, "Name"]},
                },
            },
            {
                "Sid": "AllowScopedDeletion",
                "Effect": "Allow",
                "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                "Resource": [f"{arn_ec2}:*:instance/*", f"{arn_ec2}:*:launch-template/*"],
                "Condition": {"StringEquals": owned, "StringLike": {f"aws:ResourceTag/{KARPENTER_NODEPOOL_LABEL}": "*"}},
            },
        ],
    }
    iam_integration = {
        "Version": VERSION,
        "Statement": [
            {
                # parliament finding justified in PARLIAMENT_JUSTIFICATIONS['AllowPassingInstanceRole', ...]
                "Sid": "AllowPassingInstanceRole",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": node_role_arn,
                "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
            },
            {
                # parliament finding justified in PARLIAMENT_JUSTIFICATIONS['AllowScopedInstanceProfileCreationActions', ...]
                "Sid": "AllowScopedInstanceProfileCreationActions",
                "Effect": "Allow",
                "Action": "iam:CreateInstanceProfile",
                "Resource": profile_arn,
                "Condition": {
                    "StringEquals": {**request_owned, **region_tag},
                    "StringLike": {f"aws:RequestTag/{EC2NODECLASS_TAG}": "*"},
                },
            },
            {
                "Sid": "AllowScopedInstanceProfileTagActions",
                "Effect": "Allow",
                "Action": "iam:TagInstanceProfile",
                "Resource": profile_arn,
                "Condition": {
                    "StringEquals": {
                        **owned,
                        f"aws:ResourceTag/{REGION_LABEL}": region,
                        **request_owned,
                        **region_tag,
                    },
                    "StringLike": {
                        f"aws:ResourceTag/{EC2NODECLASS_TAG}": "*",
                        f"aws:RequestTag/{EC2NODECLASS_TAG}": "*",
                    },
                },
            },
            {
                # parliament finding justified in PARLIAMENT_JUSTIFICATIONS['AllowScopedInstanceProfileActions', ...]
                "Sid": "AllowScopedInstanceProfileActions",
                "Effect": "Allow",
                "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
                "Resource": profile_arn,
                "Condition": {
                    "StringEquals": {**owned, f"aws:ResourceTag/{REGION_LABEL}": region},
                    "StringLike": {f"aws:ResourceTag/{EC2NODECLASS_TAG}": "*"},
                },
            },
            {"Sid": "AllowInstanceProfileReadActions", "Effect": "Allow", "Action": "iam:GetInstanceProfile", "Resource": profile_arn},
            # ListInstanceProfiles has no resource-level scoping in IAM; upstream grants it on "*".
            {"Sid": "AllowUnscopedInstanceProfileListAction", "Effect": "Allow", "Action": "iam:ListInstanceProfiles", "Resource": "*"},
        ],
    }
    eks_integration = {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "AllowAPIServerEndpointDiscovery",
                "Effect": "Allow",
                "Action": "eks:DescribeCluster",
                "Resource": f"arn:{partition}:eks:{region}:{account_id}:cluster/{cluster_name}",
            }
        ],
    }
    interruption = {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "AllowInterruptionQueueActions",
                "Effect": "Allow",
                "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
                "Resource": queue_arn,
            }
        ],
    }
    discovery = {
        "Version": VERSION,
        "Statement": [
            {
                # EC2 Describe* calls support no resource-level permissions; the region condition bounds them.
                "Sid": "AllowRegionalReadActions",
                "Effect": "Allow",
                "Action": [
                    "ec2:DescribeCapacityReservations",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceStatus",
                    "ec2:DescribeInstanceTypeOfferings",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates",
                    "ec2:DescribePlacementGroups",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory",
                    "ec2:DescribeSubnets",
                ],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
            },
            {
                # parliament finding justified in PARLIAMENT_JUSTIFICATIONS['AllowSSMReadActions', ...]
                "Sid": "AllowSSMReadActions",
                "Effect": "Allow",
                "Action": "ssm:GetParameter",
                "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
            },
            # The Price List API has no resource-level permissions.
            {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Action": "pricing:GetProducts", "Resource": "*"},
        ],
    }
    return {
        "node-lifecycle": node_lifecycle,
        "iam-integration": iam_integration,
        "eks-integration": eks_integration,
        "interruption": interruption,
        "resource-discovery": discovery,
    }


def interruption_queue_policy(queue_arn: str) -> dict[str, Any]:
    """SQS queue policy: EventBridge (and SQS) may send; any non-TLS access is denied."""
    return {
        "Version": VERSION,
        "Id": "KarpenterInterruptionQueue",
        "Statement": [
            {
                "Sid": "AllowEventBridgeToSend",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }
