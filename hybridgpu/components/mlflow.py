"""The MLflow tracking server of ``hybridgpu:platform.mlflow`` (issue 30).

Creates, through the cluster's Kubernetes provider:

* the namespace and a Secret holding the backend store URI (built from ``database`` and the password
  read with ``pulumi.Config(ns).require_secret(key)``: a Pulumi secret in the state, never in values);
* EKS: an S3 bucket (SSE-S3, or SSE-KMS with ``artifacts.kmsKeyArn``; versioned with expiry of
  noncurrent versions; public access blocked; bucket owner enforced; TLS-only bucket policy; tagged by
  the provider's default tags), an IAM role trusted by ``pods.eks.amazonaws.com`` for the ``mlflow``
  service account only, its least-privilege policy (:func:`hybridgpu.render.mlflow.artifact_policy`) and
  the ``aws.eks.PodIdentityAssociation``;
* on-prem: the csi-driver-nfs StorageClass of the site's NFS storage (:mod:`hybridgpu.render.platform_storage`);
* the ``mlflow`` Helm release (:data:`~hybridgpu.render.mlflow.MLFLOW_CHART` pinned).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from hybridgpu.config.mlflow import MlflowConfig
from hybridgpu.components.base import type_token
from hybridgpu.k8s import managed_by_labels
from hybridgpu.render.iam import pod_identity_trust_policy
from hybridgpu.render.mlflow import (
    BACKEND_STORE_KEY,
    BACKEND_STORE_SECRET,
    MLFLOW_CHART,
    MLFLOW_CHART_VERSION,
    MLFLOW_RELEASE,
    MLFLOW_SERVICE_ACCOUNT,
    artifact_bucket_policy,
    artifact_bucket_settings,
    artifact_policy,
    backend_store_uri,
    mlflow_values,
    tracking_uri,
)
from hybridgpu.render.platform_storage import platform_storage_class, platform_storage_class_name
from hybridgpu.stack.load import Stack

__all__ = ["Mlflow", "bucket_prefix", "build_mlflow", "read_secret", "storage_class"]


def storage_class(service: str, storage: Any, name: str, opts: pulumi.ResourceOptions) -> k8s.storage.v1.StorageClass:
    """The platform StorageClass of ``service`` on the site's NFS storage (:func:`~hybridgpu.render.platform_storage.platform_storage_class`)."""
    doc = platform_storage_class(service, storage)
    return k8s.storage.v1.StorageClass(
        name,
        metadata=doc["metadata"],
        provisioner=doc["provisioner"],
        parameters=doc["parameters"],
        reclaim_policy=doc["reclaimPolicy"],
        volume_binding_mode=doc["volumeBindingMode"],
        mount_options=doc["mountOptions"],
        opts=opts,
    )


def read_secret(key: str) -> pulumi.Output[str]:
    """The Pulumi secret ``namespace:key`` (validation checked it is set)."""
    namespace, name = key.split(":", 1)
    return pulumi.Config(namespace).require_secret(name)


def bucket_prefix(cluster_name: str) -> str:
    """The artifact bucket's ``bucket_prefix``: ``<cluster>-mlflow-`` in lower case, at most 37 characters (S3's prefix limit)."""
    base = re.sub(r"[^a-z0-9-]", "-", cluster_name.lower()).strip("-")[:29].rstrip("-")
    return f"{base}-mlflow-"


def _artifact_bucket(name: str, config: MlflowConfig, target: Any, parent: pulumi.Resource) -> tuple[Any, Any]:
    """The EKS artifact bucket and the Pod Identity association of the server's role; returns (bucket name, association)."""
    opts = pulumi.ResourceOptions(parent=parent)
    # Artifacts outlive the stack: `pulumi destroy` leaves the bucket (retain_on_delete); it is never emptied (force_destroy).
    bucket = aws.s3.Bucket(
        f"{name}-artifacts",
        bucket_prefix=bucket_prefix(target.name),
        force_destroy=False,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True)),
    )
    child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[bucket]))
    settings = artifact_bucket_settings(config.artifacts)
    aws.s3.BucketOwnershipControls(f"{name}-artifacts-ownership", bucket=bucket.id, rule=settings["ownership"], opts=child)
    block = aws.s3.BucketPublicAccessBlock(f"{name}-artifacts-public-access", bucket=bucket.id, **settings["public_access_block"], opts=child)
    aws.s3.BucketServerSideEncryptionConfiguration(f"{name}-artifacts-encryption", bucket=bucket.id, rules=settings["encryption"], opts=child)
    versioning = aws.s3.BucketVersioning(f"{name}-artifacts-versioning", bucket=bucket.id, versioning_configuration=settings["versioning"], opts=child)
    aws.s3.BucketLifecycleConfiguration(
        f"{name}-artifacts-lifecycle",
        bucket=bucket.id,
        rules=settings["lifecycle"],
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[versioning])),
    )
    aws.s3.BucketPolicy(
        f"{name}-artifacts-policy",
        bucket=bucket.id,
        policy=bucket.arn.apply(lambda arn: json.dumps(artifact_bucket_policy(arn), sort_keys=True)),
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[block])),
    )
    account = aws.get_caller_identity_output(opts=pulumi.InvokeOptions(parent=parent)).account_id
    role = aws.iam.Role(
        f"{name}-role",
        assume_role_policy=account.apply(
            lambda acct: json.dumps(
                pod_identity_trust_policy(account_id=acct, cluster_name=target.name, namespace=config.namespace, service_account=MLFLOW_SERVICE_ACCOUNT),
                sort_keys=True,
            )
        ),
        opts=opts,
    )
    aws.iam.RolePolicy(
        f"{name}-artifacts-access",
        role=role.id,
        policy=bucket.arn.apply(lambda arn: json.dumps(artifact_policy(arn, config.artifacts.prefix, config.artifacts.kms_key_arn), sort_keys=True)),
        opts=opts,
    )
    association = aws.eks.PodIdentityAssociation(
        f"{name}-pod-identity",
        cluster_name=target.eks.cluster_name if target.eks is not None else target.name,
        namespace=config.namespace,
        service_account=MLFLOW_SERVICE_ACCOUNT,
        role_arn=role.arn,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(target.depends_on))),
    )
    return bucket.bucket, association


class Mlflow(pulumi.ComponentResource):
    """The MLflow tracking server on one cluster (``hybridgpu:index:Mlflow``): the parent of the resources :func:`build_mlflow` creates.

    Args:
        name: logical name prefix (children ``<name>-<role>``).
        opts: resource options (``depends_on``: what the releases wait for; on EKS the AWS provider).
    """

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(type_token("Mlflow"), name, None, opts)


def build_mlflow(stack: Stack, target: Any) -> None:
    """Build the MLflow release on ``target`` (a :class:`~hybridgpu.components.platform.PlatformTarget`).

    Validation (:mod:`hybridgpu.stack.platform_services`) has checked the database password secret is set, and on-prem
    that the inventory declares NFS storage.
    """
    assert stack.config.platform is not None and stack.config.platform.mlflow is not None
    config = stack.config.platform.mlflow
    assert config.database is not None
    name = f"{target.name}-mlflow"
    own = pulumi.ResourceOptions.merge(target.aws_opts, pulumi.ResourceOptions(depends_on=list(target.depends_on))) if target.aws_opts else pulumi.ResourceOptions(depends_on=list(target.depends_on))
    parent = Mlflow(name, own)
    k8s_opts = pulumi.ResourceOptions(parent=parent, provider=target.provider, depends_on=list(target.depends_on))
    namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata={"name": config.namespace, "labels": managed_by_labels()}, opts=k8s_opts)
    database = config.database
    uri = read_secret(database.password_secret).apply(lambda pw: backend_store_uri(database, pw))
    secret = k8s.core.v1.Secret(
        f"{name}-backend-store",
        metadata={"name": BACKEND_STORE_SECRET, "namespace": config.namespace, "labels": managed_by_labels()},
        string_data={BACKEND_STORE_KEY: uri},
        opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[namespace], additional_secret_outputs=["stringData", "data"])),
    )
    waits: list[pulumi.Resource] = [namespace, secret]
    if target.kind == "eks":
        bucket, association = _artifact_bucket(name, config, target, parent)
        waits.append(association)
        values: Any = bucket.apply(lambda b: mlflow_values(config, "eks", bucket=b))
    else:
        assert stack.inventory is not None and stack.inventory.site.storage is not None
        waits.append(storage_class("mlflow", stack.inventory.site.storage, f"{name}-storage-class", k8s_opts))
        values = mlflow_values(config, "onprem", storage_class=platform_storage_class_name("mlflow"))
    k8s.helm.v3.Release(
        f"{name}-release",
        name=MLFLOW_RELEASE,
        chart=MLFLOW_CHART,
        version=MLFLOW_CHART_VERSION,
        namespace=config.namespace,
        values=values,
        atomic=True,
        opts=pulumi.ResourceOptions(parent=parent, provider=target.provider, depends_on=[*target.depends_on, *waits]),
    )
    parent.register_outputs({"tracking_uri": tracking_uri(config.namespace)})
