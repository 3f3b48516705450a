"""Typed MLflow settings (``hybridgpu:platform`` ``mlflow``): the experiment tracking server (issue 30).

The tracking server is the official chart of mlflow/mlflow (:mod:`hybridgpu.render.mlflow`) with:

* a PostgreSQL backend store: an existing database (``database``: host, port, database, user and the
  Pulumi config key of the password secret). On EKS that is an RDS or Aurora instance the site already
  runs; hybridgpu does not create one (a database is a long-lived resource with its own backups, sizing,
  network and upgrade policy, and the same setting then works on-prem, where there is no RDS);
* artifacts served by the tracking server (``--serve-artifacts``): on EKS in an S3 bucket the program
  creates (encrypted, versioned, public access blocked, tagged; the server reaches it through EKS Pod
  Identity), on-prem on the site's NFS storage (a claim of ``artifacts.sizeGib``). Clients never hold
  storage credentials: they upload through the server (``mlflow-artifacts:/``).

Single-section checks live here (pydantic validators); checks that need the inventory, the cloud
section or the stack's Pulumi config are in :mod:`hybridgpu.stack.platform_services`.
Nothing here imports Pulumi.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.config.base import Dns1123Name, Model
from hybridgpu.errors import FieldError
from hybridgpu.k8s import is_hostname

__all__ = ["MlflowArtifacts", "MlflowConfig", "MlflowDatabase", "PulumiSecretKey", "check_secret_key"]

#: A Pulumi config key as ``pulumi config set --secret <namespace>:<key>`` writes it.
PulumiSecretKey = Annotated[str, StringConstraints(max_length=255)]
_SECRET_KEY = re.compile(r"^[A-Za-z0-9_-]+:[A-Za-z0-9_.-]+$")
#: PostgreSQL identifiers we accept for the database and user names (no quoting needed in a URI).
_PG_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,62}$"
_KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]{36}$")


def check_secret_key(value: str, example: str) -> str:
    """``value`` if it is a Pulumi config key with a namespace other than ``hybridgpu`` (``ns:key``); FieldError otherwise.

    The stack validation refuses any ``hybridgpu:`` key it does not know, so a secret can never be set there.
    """
    if not _SECRET_KEY.match(value):
        raise FieldError(
            "",
            f"{value!r} is not a Pulumi config key with a namespace (`namespace:key`)",
            f"name the secret as `pulumi config set --secret {example} <value>` writes it, e.g. `{example}`",
        )
    if value.split(":", 1)[0] == "hybridgpu":
        raise FieldError(
            "",
            f"{value!r} is in the `hybridgpu:` namespace, which holds only hybridgpu's own settings (the stack validation refuses other keys there)",
            f"use another namespace, e.g. `{example}`",
        )
    return value


class MlflowDatabase(Model):
    """``mlflow.database``: the existing PostgreSQL database of the backend store."""

    host: str = Field(description="DNS name or IP address of the PostgreSQL server, e.g. `mlflow.abc123.us-west-2.rds.amazonaws.com`. Required.")
    port: int = Field(default=5432, ge=1, le=65535, description="TCP port. Default: 5432.")
    database: Annotated[str, StringConstraints(pattern=_PG_NAME)] = Field(default="mlflow", description="Database name. Default: `mlflow`.")
    user: Annotated[str, StringConstraints(pattern=_PG_NAME)] = Field(default="mlflow", description="Login role. Default: `mlflow`.")
    password_secret: PulumiSecretKey = Field(
        description="Pulumi config key of the password (`pulumi config set --secret mlflow:dbPassword ...`), in a namespace other than "
        "`hybridgpu`. The password never appears in the stack file or in rendered values. Required."
    )
    ssl_mode: Literal["require", "verify-ca", "verify-full", "disable"] = Field(
        default="require",
        description="libpq `sslmode` of the connection. `disable` sends the password in clear over the network. Default: `require`.",
    )

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        import ipaddress

        try:
            ipaddress.ip_address(value)
            return value
        except ValueError:
            pass
        if "://" in value or "/" in value or ":" in value or not is_hostname(value):
            raise FieldError(
                "",
                f"{value!r} is not a host name or IP address (no scheme, port or path: the URI is built from host, port and database)",
                "write the server's DNS name, e.g. `pg.site-a.internal`, and its port in `port`",
            )
        return value

    @field_validator("password_secret")
    @classmethod
    def _secret(cls, value: str) -> str:
        return check_secret_key(value, "mlflow:dbPassword")


class MlflowArtifacts(Model):
    """``mlflow.artifacts``: where the tracking server keeps run artifacts (S3 on EKS, the site's NFS storage on-prem)."""

    prefix: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]{0,62}$")] = Field(
        default="artifacts", description="Key prefix in the bucket (EKS) or directory on the claim (on-prem). Default: `artifacts`."
    )
    kms_key_arn: str | None = Field(
        default=None,
        description="EKS: encrypt the bucket with this customer managed KMS key (SSE-KMS, S3 Bucket Key on) instead of S3 managed keys "
        "(SSE-S3); the server's role may use the key for that bucket only. Default: none (SSE-S3).",
    )
    noncurrent_version_days: int = Field(
        default=30, ge=1, le=3650, description="EKS: days a replaced or deleted artifact version is kept (the bucket is versioned). Default: 30."
    )
    size_gib: int = Field(default=100, ge=1, le=1_000_000, description="On-prem: size of the artifact claim on the site's NFS storage, in GiB. Default: 100.")

    @field_validator("kms_key_arn")
    @classmethod
    def _kms(cls, value: str | None) -> str | None:
        if value is not None and not _KMS_KEY_ARN.match(value):
            raise FieldError(
                "",
                f"{value!r} is not a KMS key ARN (an alias ARN or key id is not accepted: IAM policies match the key ARN)",
                "write arn:aws:kms:<region>:<account>:key/<key id>",
            )
        return value


class MlflowConfig(Model):
    """MLflow tracking server (the official chart) on this stack's cluster."""

    enabled: bool = Field(default=False, description="Install the MLflow tracking server. Default: false.")
    namespace: Dns1123Name = Field(default="mlflow", description="Namespace of the release. Default: `mlflow`.")
    database: MlflowDatabase | None = Field(default=None, description="The PostgreSQL backend store. Required when `enabled`.")
    artifacts: MlflowArtifacts = Field(default_factory=MlflowArtifacts, description="Artifact storage. Default: its defaults.")
    replicas: int = Field(default=2, ge=1, le=20, description="Tracking server replicas (stateless: database and artifacts are shared). Default: 2.")
    workers: int = Field(default=4, ge=1, le=64, description="Server worker processes per replica (`mlflow server --workers`). Default: 4.")

    @model_validator(mode="after")
    def _database_needed(self) -> MlflowConfig:
        if self.enabled and self.database is None:
            raise FieldError(
                "database",
                "MLflow is enabled without a backend store: the chart refuses to render without one, and a SQLite file is not shared by replicas",
                "add `database: {host: <postgres host>, passwordSecret: mlflow:dbPassword}` (an existing PostgreSQL database)",
            )
        return self
