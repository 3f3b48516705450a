"""Harbor on the on-prem cluster as the site's pull-through cache (``hybridgpu:platform.harbor``, issue 27).

Creates, through the on-prem cluster's Kubernetes provider:

* the namespace; the site's certificate as a ``kubernetes.io/tls`` Secret (``tlsCertificate``/``tlsKey``); the admin password Secret (from the Pulumi secret ``adminPasswordSecret``) and the
  encryption key Secret (16 random characters, ``pulumi_random``, kept secret in the state), which the
  chart reads through ``existingSecretAdminPassword`` / ``existingSecretSecretKey``;
* the csi-driver-nfs StorageClass of the site's NFS storage, which every Harbor claim uses;
* the ``harbor`` Helm release (goharbor/harbor-helm pinned); the internal database password is a
  random Pulumi secret passed in the values (the chart has no existing-secret form for it);
* the proxy-cache setup Job (:func:`hybridgpu.render.harbor.proxy_cache_script`, in the Harbor core
  image) after the release: it creates one registry endpoint and one proxy cache project per
  ``proxyCache`` entry, and leaves existing ones alone, so every ``pulumi up`` may run it again.

Refused on EKS by validation (:mod:`hybridgpu.stack.platform_services`); this builder does nothing there.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from hybridgpu.components.mlflow import read_secret, storage_class
from hybridgpu.components.base import type_token
from hybridgpu.k8s import managed_by_labels
from hybridgpu.render.charts import controller_tolerations
from hybridgpu.render.harbor import (
    ADMIN_KEY,
    ADMIN_SECRET,
    CORE_IMAGE,
    HARBOR_CHART,
    HARBOR_CHART_VERSION,
    HARBOR_RELEASE,
    HARBOR_REPO,
    SECRET_KEY_SECRET,
    TLS_SECRET,
    harbor_values,
    proxy_cache_script,
)
from hybridgpu.render.platform_storage import platform_storage_class_name
from hybridgpu.stack.load import Stack

__all__ = ["Harbor", "build_harbor"]


class Harbor(pulumi.ComponentResource):
    """Harbor on the on-prem cluster (``hybridgpu:index:Harbor``): the parent of the resources :func:`build_harbor` creates.

    Args:
        name: logical name prefix (children ``<name>-<role>``).
        opts: resource options (``depends_on``: what the releases wait for; on EKS the AWS provider).
    """

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(type_token("Harbor"), name, None, opts)


def build_harbor(stack: Stack, target: Any) -> None:
    """Build Harbor on ``target`` (a :class:`~hybridgpu.components.platform.PlatformTarget`); nothing on EKS (refused by validation)."""
    if target.kind != "onprem":
        return
    assert stack.config.platform is not None and stack.config.platform.harbor is not None
    assert stack.inventory is not None and stack.inventory.site.storage is not None
    config = stack.config.platform.harbor
    assert config.admin_password_secret is not None
    name = f"{target.name}-harbor"
    parent = Harbor(name, pulumi.ResourceOptions(depends_on=list(target.depends_on)))
    opts = pulumi.ResourceOptions(parent=parent, provider=target.provider, depends_on=list(target.depends_on))
    ns = config.namespace
    namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata={"name": ns, "labels": managed_by_labels()}, opts=opts)
    after_ns = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[namespace], additional_secret_outputs=["stringData", "data"]))
    admin = read_secret(config.admin_password_secret)
    admin_secret = k8s.core.v1.Secret(
        f"{name}-admin", metadata={"name": ADMIN_SECRET, "namespace": ns, "labels": managed_by_labels()}, string_data={ADMIN_KEY: admin}, opts=after_ns
    )
    key = random.RandomPassword(f"{name}-secret-key", length=16, special=False, opts=pulumi.ResourceOptions(parent=parent))
    key_secret = k8s.core.v1.Secret(
        f"{name}-secret-key", metadata={"name": SECRET_KEY_SECRET, "namespace": ns, "labels": managed_by_labels()}, string_data={"secretKey": key.result}, opts=after_ns
    )
    tls: list[pulumi.Resource] = []
    if config.tls_certificate is not None and config.tls_key is not None:
        tls.append(
            k8s.core.v1.Secret(
                f"{name}-tls",
                metadata={"name": TLS_SECRET, "namespace": ns, "labels": managed_by_labels()},
                type="kubernetes.io/tls",
                string_data={"tls.crt": read_secret(config.tls_certificate), "tls.key": read_secret(config.tls_key)},
                opts=after_ns,
            )
        )
    db_password = random.RandomPassword(f"{name}-database-password", length=32, special=False, opts=pulumi.ResourceOptions(parent=parent))
    sc = storage_class("harbor", stack.inventory.site.storage, f"{name}-storage-class", opts)
    values = harbor_values(config, platform_storage_class_name("harbor"))
    values["database"]["internal"]["password"] = db_password.result
    release = k8s.helm.v3.Release(
        f"{name}-release",
        name=HARBOR_RELEASE,
        chart=HARBOR_CHART,
        version=HARBOR_CHART_VERSION,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=HARBOR_REPO),
        namespace=ns,
        values=values,
        atomic=True,
        timeout=1200,
        opts=pulumi.ResourceOptions(parent=parent, provider=target.provider, depends_on=[*target.depends_on, namespace, admin_secret, key_secret, sc, *tls]),
    )
    script = proxy_cache_script(config, ns)
    env: list[dict[str, Any]] = [{"name": ADMIN_KEY, "valueFrom": {"secretKeyRef": {"name": ADMIN_SECRET, "key": ADMIN_KEY}}}]
    creds: dict[str, Any] = {}
    for index, proxy in enumerate(config.proxy_cache):
        if proxy.credentials:
            creds[f"CRED_{index}"] = read_secret(proxy.credentials)
            env.append({"name": f"CRED_{index}", "valueFrom": {"secretKeyRef": {"name": "harbor-upstream-credentials", "key": f"CRED_{index}"}}})
    waits: list[pulumi.Resource] = [release]
    if creds:
        waits.append(
            k8s.core.v1.Secret(
                f"{name}-upstream-credentials",
                metadata={"name": "harbor-upstream-credentials", "namespace": ns, "labels": managed_by_labels()},
                string_data=creds,
                opts=after_ns,
            )
        )
    # A Job's template cannot change: the name carries the script's hash, so a new proxy list runs a new Job.
    digest = hashlib.sha256(script.encode()).hexdigest()[:10]
    job_spec: Any = {
        "backoffLimit": 3,
        "template": {
            "metadata": {"labels": managed_by_labels()},
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                "tolerations": controller_tolerations(),
                "securityContext": {"runAsNonRoot": True, "runAsUser": 10000, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [
                    {
                        "name": "setup",
                        "image": CORE_IMAGE,
                        "command": ["/bin/sh", "-c", script],
                        "env": env,
                        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                    }
                ],
                "volumes": [{"name": "tmp", "emptyDir": {}}],
            },
        },
    }
    k8s.batch.v1.Job(
        f"{name}-proxy-cache-setup",
        metadata={"name": f"harbor-proxy-cache-setup-{digest}", "namespace": ns, "labels": managed_by_labels()},
        spec=job_spec,
        opts=pulumi.ResourceOptions(parent=parent, provider=target.provider, depends_on=waits),
    )
    parent.register_outputs({"external_url": config.external_url})
