"""Karpenter component: IAM, interruption handling and the Helm releases.

Creates:

* the node role (trust ``ec2.amazonaws.com``; worker, CNI, ECR pull-only and SSM managed
  policies) and its EKS access entry of type ``EC2_LINUX``;
* the controller role, trusted only through EKS Pod Identity by service account
  ``karpenter`` in the Karpenter namespace of this cluster, with five inline policies scoped
  to this cluster (see :func:`hybridgpu.render.iam.karpenter_controller_policies`), and the
  Pod Identity association;
* the SQS interruption queue (SSE, short retention, TLS-only policy allowing EventBridge)
  and the five EventBridge rules with their targets;
* the Karpenter namespace, when ``karpenter.namespace`` is not one the cluster starts with
  (``kube-system``, ...);
* Helm releases ``karpenter-crd`` and ``karpenter`` (``oci://public.ecr.aws/karpenter``) at
  the pinned version with cluster name and queue wired.
"""

import functools
import json
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import KarpenterConfigArgs
from hybridgpu.config.aws_names import CONTROLLER_POLICY_CONCERNS, INTERRUPTION_TARGET_ID, CloudNames
from hybridgpu.config.models import KarpenterConfig
from hybridgpu.render.iam import (
    INTERRUPTION_RULES,
    NODE_ROLE_MANAGED_POLICIES,
    interruption_queue_policy,
    karpenter_controller_policies,
    managed_policy_arn,
    pod_identity_trust_policy,
    service_trust_policy,
)
from hybridgpu.render.karpenter import karpenter_helm_values, karpenter_namespace_manifest

CHART_REPO = "oci://public.ecr.aws/karpenter"
SERVICE_ACCOUNT = "karpenter"


def _policy_document(docs: dict[str, Any], concern: str) -> str:
    """The JSON of one concern's inline policy out of :func:`karpenter_controller_policies`."""
    return json.dumps(docs[concern])


class KarpenterArgs(TypedDict):
    """Inputs of :class:`Karpenter`."""

    karpenter: NotRequired[KarpenterConfigArgs]
    """The ``hybridgpu:cloud.karpenter`` section. Default: the pinned version, 2 replicas, namespace ``kube-system``."""
    cluster_name: str
    """EKS cluster name, as a plain string (AWS names, the controller's policy documents, the access entry)."""
    region: str
    """AWS region."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster (the EksCluster's ``provider``)."""


class Karpenter(pulumi.ComponentResource):
    """Karpenter for one EKS cluster (``hybridgpu:index:Karpenter``).

    Args:
        name: logical name prefix of the children.
        args: :class:`KarpenterArgs`.
        opts: resource options (pass the AWS provider through ``providers``). ``depends_on``: what
            the node access entry, the Pod Identity association and the Kubernetes objects wait for:
            the cluster, with its admin access entries and system nodes (the EksCluster's ``access_ready``).

    Attributes:
        node_role_name, node_role_arn, controller_role_arn, queue_name, queue_arn, queue_url: ``Output[str]``.
        release: the ``karpenter`` Helm release (NodePools and EC2NodeClasses depend on it).
    """

    node_role_name: pulumi.Output[str]
    """Name of the node role (the GpuNodePools' ``nodeRoleName``)."""
    node_role_arn: pulumi.Output[str]
    """ARN of the node role."""
    controller_role_arn: pulumi.Output[str]
    """ARN of the controller role (EKS Pod Identity)."""
    queue_name: pulumi.Output[str]
    """Name of the SQS interruption queue."""
    queue_arn: pulumi.Output[str]
    """ARN of the SQS interruption queue."""
    queue_url: pulumi.Output[str]
    """URL of the SQS interruption queue."""

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        config = section(KarpenterConfig, args.get("karpenter", {}), component="Karpenter", name=name, field="karpenter")
        cluster_name, region, provider = args["cluster_name"], args["region"], args["provider"]
        own, ready = component_options("hybridgpu:cloud:Karpenter", opts)
        super().__init__(type_token("Karpenter"), name, None, own)
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOptions(parent=self)
        partition = aws.get_partition_output(opts=invoke).partition
        account_id = aws.get_caller_identity_output(opts=invoke).account_id
        # AWS names from CloudNames, which the stack check uses too (hybridgpu.config.cloud_checks).
        names = CloudNames(cluster_name)

        node_role = aws.iam.Role(
            f"{name}-node-role",
            name=names.karpenter_node_role,
            assume_role_policy=json.dumps(service_trust_policy("ec2.amazonaws.com")),
            description=f"Nodes launched by Karpenter in {cluster_name}",
            opts=child,
        )
        for policy in NODE_ROLE_MANAGED_POLICIES:
            aws.iam.RolePolicyAttachment(
                f"{name}-node-role-{policy}",
                role=node_role.name,
                policy_arn=partition.apply(functools.partial(managed_policy_arn, name=policy)),
                opts=child,
            )
        aws.eks.AccessEntry(
            f"{name}-node-access",
            cluster_name=cluster_name,
            principal_arn=node_role.arn,
            type="EC2_LINUX",
            opts=pulumi.ResourceOptions(parent=self, depends_on=ready),
        )

        queue = aws.sqs.Queue(
            f"{name}-interruption-queue",
            name=names.interruption_queue,
            message_retention_seconds=config.interruption_message_retention_seconds,
            sqs_managed_sse_enabled=True,
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-interruption-queue-policy",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: json.dumps(interruption_queue_policy(arn))),
            opts=child,
        )
        for rule in INTERRUPTION_RULES:
            event_rule = aws.cloudwatch.EventRule(
                f"{name}-{rule.name}",
                # Explicit: an auto-name (logical name + 8) of the longest allowed cluster exceeds EventBridge's 64.
                name=names.event_rule(rule.name),
                description=f"Karpenter interruption handling for {cluster_name}: {rule.detail_type}",
                event_pattern=json.dumps(rule.pattern()),
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{rule.name}-target",
                rule=event_rule.name,
                arn=queue.arn,
                target_id=INTERRUPTION_TARGET_ID,
                opts=child,
            )

        controller_role = aws.iam.Role(
            f"{name}-controller-role",
            name=names.karpenter_controller_role,
            assume_role_policy=account_id.apply(
                lambda acct: json.dumps(
                    pod_identity_trust_policy(account_id=acct, cluster_name=cluster_name, namespace=config.namespace, service_account=SERVICE_ACCOUNT)
                )
            ),
            description=f"Karpenter controller of {cluster_name} (EKS Pod Identity)",
            opts=child,
        )
        policies = pulumi.Output.all(partition, account_id, node_role.arn, queue.arn).apply(
            lambda a: karpenter_controller_policies(
                partition=a[0], region=region, account_id=a[1], cluster_name=cluster_name, node_role_arn=a[2], queue_arn=a[3]
            )
        )
        inline = []
        for concern in CONTROLLER_POLICY_CONCERNS:
            inline.append(
                aws.iam.RolePolicy(
                    names.controller_policy(concern),
                    role=controller_role.id,
                    policy=policies.apply(functools.partial(_policy_document, concern=concern)),
                    opts=child,
                )
            )
        # A namespace other than kube-system (and the cluster's other initial ones) is created
        # before the releases and the Pod Identity association that name it.
        namespace_doc = karpenter_namespace_manifest(config)
        namespace: list[pulumi.Resource] = []
        if namespace_doc is not None:
            namespace.append(
                k8s.core.v1.Namespace(
                    f"{name}-namespace",
                    metadata=namespace_doc["metadata"],
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(ready)),
                )
            )
        association = aws.eks.PodIdentityAssociation(
            f"{name}-pod-identity",
            cluster_name=cluster_name,
            namespace=config.namespace,
            service_account=SERVICE_ACCOUNT,
            role_arn=controller_role.arn,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*ready, *namespace]),
        )

        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*ready, *namespace])
        crds = k8s.helm.v3.Release(
            f"{name}-crd",
            name="karpenter-crd",
            chart=f"{CHART_REPO}/karpenter-crd",
            version=config.version,
            namespace=config.namespace,
            atomic=True,
            opts=k8s_opts,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="karpenter",
            chart=f"{CHART_REPO}/karpenter",
            version=config.version,
            namespace=config.namespace,
            skip_crds=True,
            atomic=True,
            values=queue.name.apply(lambda q: karpenter_helm_values(config, cluster_name=cluster_name, interruption_queue=q)),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                depends_on=[crds, association, *inline, *ready, *namespace],
            ),
        )

        self.node_role_name = node_role.name
        self.node_role_arn = node_role.arn
        self.controller_role_arn = controller_role.arn
        self.queue_name = queue.name
        self.queue_arn = queue.arn
        self.queue_url = queue.url
        self.register_outputs(
            {
                "node_role_name": self.node_role_name,
                "node_role_arn": self.node_role_arn,
                "controller_role_arn": self.controller_role_arn,
                "queue_name": self.queue_name,
                "queue_arn": self.queue_arn,
                "queue_url": self.queue_url,
            }
        )
