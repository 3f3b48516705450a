"""MLflow tracking server, rendered (pure): the official chart's values, the backend store URI, the artifact bucket's IAM policy.

Chart: mlflow/mlflow ``charts/`` (chart ``mlflow``; added by mlflow/mlflow#21973, 2026-03). It is
published as ``oci://ghcr.io/mlflow/charts/mlflow``; the registry holds **0.1.0** only (chart 0.1.1
ships in the v3.16.0 git tag but was never pushed: mlflow/mlflow#25683, 2026-09-07, and #26040), so
:data:`MLFLOW_CHART_VERSION` is 0.1.0 (``charts/Chart.yaml`` at ed375243: appVersion 3.11.1). Facts
read 2026-11-27 in the stored copy of mlflow/mlflow (``charts/values.yaml`` at 9e068576,
``charts/templates/deployment.yaml``, ``_helpers.tpl`` at 003d4902):

* the image defaults to ``ghcr.io/mlflow/mlflow:v<appVersion>-full``; ``docker/Dockerfile.full``
  installs ``mlflow[extras,azure,db,gateway,genai,auth]``, which brings psycopg2 (PostgreSQL) and
  boto3 (S3): the stock image reaches both stores;
* the template fails without ``mlflow.backendStoreUri`` or ``mlflow.backendStoreUriFrom``; the latter
  is copied as the ``valueFrom`` of ``MLFLOW_BACKEND_STORE_URI``, so the URI (with the password) stays
  in a Secret and out of the values;
* ``server.value_options`` become ``--key=value`` flags (underscores to hyphens), ``flag_options`` bare
  flags; ``mlflow.artifactsDestination`` becomes ``MLFLOW_ARTIFACTS_DESTINATION``;
* ``storage.enabled`` creates a claim named after the release's full name, mounted at
  ``storage.mountPath``, of ``storage.storageClassName`` / ``accessMode`` / ``size``;
* ``nodeSelector``, ``tolerations``, ``affinity`` go to the one Deployment (:mod:`hybridgpu.render.charts`);
* ``serviceAccount.create`` / ``name``: the pod's service account, the one the EKS Pod Identity
  association names.

MLflow's server (``mlflow/server/security_utils.py`` at 0c38f324): a request whose ``Host`` header
matches none of ``--allowed-hosts`` (fnmatch patterns; default: localhost and private IP addresses
only) is refused with 403 "Invalid Host header", so the in-cluster service names are allowed
explicitly (:func:`allowed_hosts`).
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from hybridgpu.config.mlflow import MlflowArtifacts, MlflowConfig, MlflowDatabase
from hybridgpu.render.charts import controller_tolerations

__all__ = [
    "MLFLOW_CHART",
    "MLFLOW_CHART_VERSION",
    "MLFLOW_PORT",
    "MLFLOW_SERVICE_ACCOUNT",
    "allowed_hosts",
    "artifact_bucket_policy",
    "artifact_bucket_settings",
    "artifact_policy",
    "backend_store_uri",
    "mlflow_values",
    "tracking_uri",
]

#: The chart as published (OCI) and its pinned version (see the module docstring).
MLFLOW_CHART = "oci://ghcr.io/mlflow/charts/mlflow"
MLFLOW_CHART_VERSION = "0.1.0"
#: MLflow release the pinned chart runs (its appVersion; image ``ghcr.io/mlflow/mlflow:v3.11.1-full``).
MLFLOW_APP_VERSION = "3.11.1"
#: The server image's tag, pinned in the values (the chart's own default: ``v<appVersion>-full``, ``_helpers.tpl`` ``mlflow.image``).
MLFLOW_IMAGE_TAG = f"v{MLFLOW_APP_VERSION}-full"
#: Helm release name and the name of every object the chart creates (``fullnameOverride``).
MLFLOW_RELEASE = "mlflow"
#: The server's port (``server.value_options.port``) and its service account (Pod Identity on EKS).
MLFLOW_PORT = 5000
MLFLOW_SERVICE_ACCOUNT = "mlflow"
#: Secret (in the release namespace) holding the backend store URI under :data:`BACKEND_STORE_KEY`.
BACKEND_STORE_SECRET = "mlflow-backend-store"
BACKEND_STORE_KEY = "uri"
#: Where the on-prem artifact claim is mounted.
MOUNT_PATH = "/mlflow"


def backend_store_uri(database: MlflowDatabase, password: str) -> str:
    """The SQLAlchemy URI of the backend store: ``postgresql://user:password@host:port/database?sslmode=...``.

    The password is percent-encoded (SQLAlchemy's ``make_url`` decodes it), so ``@``, ``/``, ``:`` or
    ``%`` in it do not move the host. The result holds the password: the component puts it only in a
    Kubernetes Secret created from a Pulumi secret, never in the chart's values.
    """
    user = quote(database.user, safe="")
    secret = quote(password, safe="")
    return f"postgresql://{user}:{secret}@{database.host}:{database.port}/{database.database}?sslmode={database.ssl_mode}"


def allowed_hosts(namespace: str) -> list[str]:
    """``--allowed-hosts`` patterns: the service's in-cluster names, with and without a port (MLflow's defaults stay allowed too)."""
    names = [MLFLOW_RELEASE, f"{MLFLOW_RELEASE}.{namespace}", f"{MLFLOW_RELEASE}.{namespace}.svc", f"{MLFLOW_RELEASE}.{namespace}.svc.cluster.local"]
    # MLflow's own defaults (get_default_allowed_hosts) are replaced by the flag, so they are listed again.
    defaults = ["localhost", "127.0.0.1", "localhost:*", "127.0.0.1:*", "192.168.*", "10.*", *(f"172.{i}.*" for i in range(16, 32))]
    return [*names, *(f"{n}:*" for n in names), *defaults]


def tracking_uri(namespace: str) -> str:
    """What jobs and notebooks set as ``MLFLOW_TRACKING_URI``: the service's in-cluster URL."""
    return f"http://{MLFLOW_RELEASE}.{namespace}.svc:{MLFLOW_PORT}"


def mlflow_values(config: MlflowConfig, side: Literal["eks", "onprem"], *, bucket: str | None = None, storage_class: str | None = None) -> dict[str, Any]:
    """The chart's values for ``config`` on ``side`` (no secret in them).

    Args:
        config: the ``mlflow`` settings (enabled, with a database).
        side: ``eks`` (artifacts in ``s3://<bucket>/<prefix>``) or ``onprem`` (artifacts on a claim of ``storage_class``).
        bucket: the artifact bucket's name (EKS; a Pulumi Output is accepted in the program: it is only placed).
        storage_class: the StorageClass of the site's NFS storage (on-prem).

    Returns:
        A values mapping; every key exists in the pinned chart's ``values.yaml`` (tested).

    Raises:
        ValueError: ``bucket`` missing on EKS or ``storage_class`` missing on-prem.
    """
    values: dict[str, Any] = {
        "image": {"tag": MLFLOW_IMAGE_TAG},
        "fullnameOverride": MLFLOW_RELEASE,
        "replicaCount": config.replicas,
        "server": {
            "value_options": {
                "host": "0.0.0.0",
                "port": MLFLOW_PORT,
                "workers": config.workers,
                "allowed_hosts": ",".join(allowed_hosts(config.namespace)),
            },
            # Clients upload and download through the server (mlflow-artifacts:/): they need no storage credentials.
            "flag_options": ["serve_artifacts"],
        },
        "mlflow": {"backendStoreUriFrom": {"secretKeyRef": {"name": BACKEND_STORE_SECRET, "key": BACKEND_STORE_KEY}}},
        "serviceAccount": {"create": True, "name": MLFLOW_SERVICE_ACCOUNT},
        "tolerations": controller_tolerations(),
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
    }
    if side == "eks":
        if bucket is None:
            raise ValueError("mlflow_values: the EKS side needs the artifact bucket")
        values["mlflow"]["artifactsDestination"] = f"s3://{bucket}/{config.artifacts.prefix}"
    else:
        if storage_class is None:
            raise ValueError("mlflow_values: the on-prem side needs the NFS StorageClass")
        values["mlflow"]["artifactsDestination"] = f"{MOUNT_PATH}/{config.artifacts.prefix}"
        values["storage"] = {
            "enabled": True,
            "size": f"{config.artifacts.size_gib}Gi",
            # Several replicas mount the one claim: NFS serves ReadWriteMany.
            "accessMode": "ReadWriteMany",
            "storageClassName": storage_class,
            "mountPath": MOUNT_PATH,
        }
    return values


def artifact_policy(bucket_arn: str, prefix: str, kms_key_arn: str | None = None) -> dict[str, Any]:
    """The server role's IAM policy document: list the bucket under ``prefix``, read/write/delete objects there, nothing else.

    What MLflow's S3 artifact repository calls (``mlflow/store/artifact/s3_artifact_repo.py``): ``list_objects_v2``
    (``s3:ListBucket``, with the prefix as a condition), ``get_object``/``download_file`` (``s3:GetObject``),
    ``put_object``/``upload_file`` (``s3:PutObject``, which also covers multipart uploads), ``delete_objects``
    (``s3:DeleteObject``, ``mlflow gc``) and ``s3:AbortMultipartUpload`` when a large upload fails. With a
    KMS key: ``kms:GenerateDataKey`` and ``kms:Decrypt`` on that key, only through S3.
    """
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ListArtifacts",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
        },
        {
            "Sid": "ReadWriteArtifacts",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
            "Resource": f"{bucket_arn}/{prefix}/*",
        },
    ]
    if kms_key_arn is not None:
        region = kms_key_arn.split(":")[3]
        statements.append(
            {
                "Sid": "ArtifactKey",
                "Effect": "Allow",
                "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
                "Resource": kms_key_arn,
                "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def artifact_bucket_settings(artifacts: MlflowArtifacts) -> dict[str, Any]:
    """The artifact bucket's settings, in pulumi-aws argument names (the component passes them as they are).

    Returns ``{"encryption": [rule], "public_access_block": {...}, "ownership": {...}, "versioning": {...},
    "lifecycle": [rule]}``: SSE-S3 (``AES256``), or SSE-KMS with the given key and the S3 Bucket Key (fewer KMS
    calls); every public access block on; ``BucketOwnerEnforced`` (ACLs disabled); versioning on, noncurrent
    versions expiring after ``noncurrentVersionDays``, incomplete multipart uploads aborted after 7 days.
    """
    kms = artifacts.kms_key_arn
    default = {"sse_algorithm": "aws:kms", "kms_master_key_id": kms} if kms else {"sse_algorithm": "AES256"}
    return {
        "encryption": [{"apply_server_side_encryption_by_default": default, "bucket_key_enabled": bool(kms)}],
        "public_access_block": {"block_public_acls": True, "block_public_policy": True, "ignore_public_acls": True, "restrict_public_buckets": True},
        "ownership": {"object_ownership": "BucketOwnerEnforced"},
        "versioning": {"status": "Enabled"},
        "lifecycle": [
            {
                "id": "expire-noncurrent-versions",
                "status": "Enabled",
                "filter": {},
                "noncurrent_version_expiration": {"noncurrent_days": artifacts.noncurrent_version_days},
                "abort_incomplete_multipart_upload": {"days_after_initiation": 7},
            }
        ],
    }


def artifact_bucket_policy(bucket_arn: str) -> dict[str, Any]:
    """The bucket's resource policy: deny any request not made over TLS (``aws:SecureTransport`` false), for every principal."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }
