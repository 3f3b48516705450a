"""Cross-section checks of the platform services MLflow and Harbor (``hybridgpu:platform``; issues 30 and 27).

Each reads the platform section together with another section or file, so it lives in the stack
layer (docs/architecture.md, rule 1):

* **where they run**: the program builds the platform releases on EKS when the stack has a cloud
  section, else on the on-prem cluster (``components/program.py``). MLflow runs on either; its
  on-prem artifacts need the inventory's NFS storage. Harbor runs only on an on-prem-only stack: on
  EKS, ECR's own pull-through cache rules do the job without a registry to operate, and a hybrid
  stack builds its platform releases on EKS.
* **secrets**: every Pulumi config key the releases read (database password, admin password,
  upstream credentials) is set in the stack, as ``pulumi.Config(ns).require_secret`` raises otherwise.
* **KMS**: a customer managed key for the artifact bucket is in the stack's region (S3 uses a key of
  the bucket's region only) and only on EKS.
* **certificate**: hosts whose mirrors point at Harbor need a certificate that lasts: the chart's
  self-signed one is a new CA at every upgrade (:mod:`hybridgpu.render.harbor`), so the site's own is required.
* **mirrors**: an inventory ``mirrors.registries`` entry that points at Harbor must name the proxy
  cache project of that same registry, with ``overridePath: true`` and Harbor's port; else containerd
  pulls another registry's images, or asks for ``/v2/<project>/v2/...`` and fails over to the internet.
* **scheduling**: their pods fit the nodes the stack creates (the same rules as every other release,
  :func:`hybridgpu.stack.scheduling.workload_issues`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from hybridgpu.catalog import Catalog
from hybridgpu.config.harbor import HarborConfig
from hybridgpu.config.models import StackConfig
from hybridgpu.errors import Issue
from hybridgpu.inventory import Inventory
from hybridgpu.onprem import OnPremPlan
from hybridgpu.render.charts import chart_placements
from hybridgpu.render.harbor import harbor_values
from hybridgpu.render.mlflow import mlflow_values
from hybridgpu.render.platform_storage import platform_storage_class_name
from hybridgpu.stack.scheduling import ClusterWorkloads, Workload, cluster_workloads, workload_issues

__all__ = ["harbor_mirror_issues", "platform_service_issues"]

PLATFORM = "hybridgpu:platform"


def _secret_issues(file: str, key_path: str, key: str | None, config_values: Mapping[str, Any] | None, example: str) -> list[Issue]:
    if key is None or config_values is None or key in config_values:
        return []
    return [
        Issue(
            file,
            key_path,
            f"the Pulumi secret {key!r} is not set in this stack: the program reads it with require_secret and `pulumi up` stops there",
            f"run `pulumi config set --secret {key} <{example}>` for this stack",
        )
    ]


def harbor_mirror_issues(harbor: HarborConfig, inventory: Inventory) -> list[Issue]:
    """Inventory ``mirrors.registries`` entries that point at Harbor but not at the right proxy cache project.

    A mirror URL on Harbor's host must be ``https://<hostname>[:<port>]/v2/<project>`` where ``<project>``
    is the proxy cache of the entry's registry, with ``overridePath: true`` (containerd ``docs/hosts.md``:
    without it containerd appends ``/v2`` to the URL's path).
    """
    mirrors = inventory.site.mirrors
    if mirrors is None or harbor.hostname is None:
        return []
    projects = {p.project_name: p.registry for p in harbor.proxy_cache}
    by_registry: dict[str, str] = {p.registry: p.project_name for p in harbor.proxy_cache}
    issues = []
    for i, entry in enumerate(mirrors.registries):
        for j, mirror in enumerate(entry.mirrors):
            parts = urlsplit(mirror.url)
            if parts.hostname != harbor.hostname:
                continue
            key = f"mirrors.registries[{i}].mirrors[{j}]"
            want = by_registry.get(entry.registry)
            example = f"{harbor.external_url}/v2/{want}" if want else None
            fix = f"write `url: {example}` with `overridePath: true`" if example else (
                f"proxy {entry.registry} in `{PLATFORM}.harbor.proxyCache`, or remove this mirror"
            )
            port = parts.port or (443 if parts.scheme == "https" else 80)
            if parts.scheme != "https" or port != (harbor.port or 443):
                issues.append(Issue(inventory.site_file, f"{key}.url", f"{mirror.url} is not Harbor's address {harbor.external_url} (scheme or port)", fix))
                continue
            path = parts.path.rstrip("/").split("/")
            project = path[2] if len(path) == 3 and path[1] == "v2" else None
            if project is None:
                issues.append(Issue(inventory.site_file, f"{key}.url", f"{mirror.url} names no Harbor project (/v2/<project>)", fix))
            elif project not in projects:
                issues.append(Issue(inventory.site_file, f"{key}.url", f"Harbor has no proxy cache project {project!r} (its projects: {', '.join(sorted(projects))})", fix))
            elif projects[project] != entry.registry:
                issues.append(
                    Issue(
                        inventory.site_file,
                        f"{key}.url",
                        f"project {project!r} caches {projects[project]}, not {entry.registry}: the hosts would pull {entry.registry} images from another registry",
                        fix,
                    )
                )
            elif not mirror.override_path:
                issues.append(
                    Issue(
                        inventory.site_file,
                        f"{key}.overridePath",
                        f"{mirror.url} without `overridePath: true`: containerd requests {mirror.url.rstrip('/')}/v2/..., which Harbor does not serve, and falls back to the internet",
                        "set `overridePath: true` on this mirror",
                    )
                )
    return issues


def _mirrors_on_harbor(harbor: HarborConfig, inventory: Inventory) -> bool:
    """Whether any inventory mirror URL is on Harbor's host."""
    mirrors = inventory.site.mirrors
    return mirrors is not None and any(urlsplit(m.url).hostname == harbor.hostname for e in mirrors.registries for m in e.mirrors)


def _scheduling(config: StackConfig, file: str, catalog: Catalog, inventory: Inventory | None, onprem_plan: OnPremPlan | None) -> list[Issue]:
    platform = config.platform
    assert platform is not None
    clusters = cluster_workloads(config, catalog, inventory=inventory, onprem_plan=onprem_plan)
    if not clusters:
        return []
    # The program builds the platform releases on EKS when there is a cloud section, else on-prem.
    cluster = clusters[-1]
    side: Literal["eks", "onprem"] = "eks" if config.cloud is not None else "onprem"
    workloads: list[Workload] = []
    if platform.mlflow is not None and platform.mlflow.enabled and platform.mlflow.database is not None:
        values = mlflow_values(platform.mlflow, side, bucket="bucket", storage_class=platform_storage_class_name("mlflow"))
        workloads += [Workload(p, f"{PLATFORM}.mlflow") for p in chart_placements("mlflow", values, "mlflow")]
    if side == "onprem" and platform.harbor is not None and platform.harbor.enabled and platform.harbor.hostname is not None:
        values = harbor_values(platform.harbor, platform_storage_class_name("harbor"))
        workloads += [Workload(p, f"{PLATFORM}.harbor") for p in chart_placements("harbor", values, "harbor")]
    if not workloads:
        return []
    return workload_issues(ClusterWorkloads(cluster.cluster, cluster.groups, tuple(workloads)), file)


def platform_service_issues(
    config: StackConfig,
    file: str,
    catalog: Catalog,
    *,
    inventory: Inventory | None = None,
    onprem_plan: OnPremPlan | None = None,
    config_values: Mapping[str, Any] | None = None,
) -> list[Issue]:
    """Every cross-section problem of the MLflow and Harbor settings of a stack (see the module docstring); empty when sound.

    Args:
        config: a schema-valid stack configuration.
        file: the stack file to name in issues.
        catalog: the instance catalog (node groups for the scheduling check).
        inventory: the stack's loaded inventory (on-prem), or None.
        onprem_plan: its rendered plan, when the caller has it.
        config_values: the stack's ``namespace:key`` values; None skips the secret checks.
    """
    platform = config.platform
    if platform is None:
        return []
    mlflow = platform.mlflow if platform.mlflow is not None and platform.mlflow.enabled else None
    harbor = platform.harbor if platform.harbor is not None and platform.harbor.enabled else None
    if mlflow is None and harbor is None:
        return []
    issues: list[Issue] = []
    storage = inventory.site.storage if inventory is not None else None
    nfs = storage is not None and storage.type == "nfs"
    if mlflow is not None:
        assert mlflow.database is not None  # the model refuses enabled without a database
        issues += _secret_issues(file, f"{PLATFORM}.mlflow.database.passwordSecret", mlflow.database.password_secret, config_values, "database password")
        kms = mlflow.artifacts.kms_key_arn
        if config.cloud is None:
            if kms is not None:
                issues.append(
                    Issue(file, f"{PLATFORM}.mlflow.artifacts.kmsKeyArn", "a KMS key for the artifact bucket on an on-prem stack: artifacts go to the site's NFS storage, there is no bucket",
                          "remove `kmsKeyArn`")
                )
            if inventory is not None and not nfs:
                issues.append(
                    Issue(
                        file,
                        f"{PLATFORM}.mlflow",
                        f"on-prem, MLflow keeps artifacts on the site's NFS storage, but the inventory ({inventory.site_file}) declares "
                        + ("no `storage`" if storage is None else f"`storage.type: {storage.type}`"),
                        "declare the site's NFS export under `storage` in the inventory's Site document (type nfs, exportPath, servers)",
                    )
                )
        elif kms is not None and config.region is not None and kms.split(":")[3] != config.region:
            issues.append(
                Issue(
                    file,
                    f"{PLATFORM}.mlflow.artifacts.kmsKeyArn",
                    f"the key is in {kms.split(':')[3]} but the bucket is created in {config.region}: S3 encrypts only with a key of the bucket's region",
                    f"use a KMS key of {config.region}, or remove `kmsKeyArn` (SSE-S3)",
                )
            )
    if harbor is not None:
        if config.cloud is not None or config.onprem is None:
            issues.append(
                Issue(
                    file,
                    f"{PLATFORM}.harbor",
                    "Harbor is installed only on the on-prem cluster of an on-prem stack (no `hybridgpu:cloud`): "
                    + ("this stack builds its platform releases on EKS" if config.onprem is not None else "this stack has no on-prem cluster"),
                    "set `harbor.enabled: false` here and enable it in the site's on-prem stack; on EKS use ECR pull-through cache rules "
                    "(aws ecr create-pull-through-cache-rule) instead",
                )
            )
        else:
            issues += _secret_issues(file, f"{PLATFORM}.harbor.adminPasswordSecret", harbor.admin_password_secret, config_values, "admin password")
            issues += _secret_issues(file, f"{PLATFORM}.harbor.tlsCertificate", harbor.tls_certificate, config_values, "PEM certificate")
            issues += _secret_issues(file, f"{PLATFORM}.harbor.tlsKey", harbor.tls_key, config_values, "PEM key")
            for i, proxy in enumerate(harbor.proxy_cache):
                issues += _secret_issues(file, f"{PLATFORM}.harbor.proxyCache[{i}].credentials", proxy.credentials, config_values, "user:token")
            if inventory is not None and not nfs:
                issues.append(
                    Issue(
                        file,
                        f"{PLATFORM}.harbor",
                        f"Harbor keeps its images and database on the site's NFS storage, but the inventory ({inventory.site_file}) declares "
                        + ("no `storage`" if storage is None else f"`storage.type: {storage.type}`"),
                        "declare the site's NFS export under `storage` in the inventory's Site document (type nfs, exportPath, servers)",
                    )
                )
            if inventory is not None:
                mirror_issues = harbor_mirror_issues(harbor, inventory)
                issues += mirror_issues
                if harbor.tls_certificate is None and not mirror_issues and _mirrors_on_harbor(harbor, inventory):
                    issues.append(
                        Issue(
                            file,
                            f"{PLATFORM}.harbor.tlsCertificate",
                            f"the inventory's mirrors ({inventory.site_file}) point the hosts at Harbor, whose certificate is the chart's self-signed "
                            "one: the chart makes a new CA at every upgrade (genCA in templates/nginx/secret.yaml), so the hosts' `ca` goes stale "
                            "at the next `pulumi up` that changes the release and their pulls fall back to the internet",
                            "give Harbor the site's certificate: `tlsCertificate: harbor:tlsCert` and `tlsKey: harbor:tlsKey` (Pulumi config keys "
                            "holding the PEM certificate and key for `hostname`)",
                        )
                    )
    if not issues:
        issues += _scheduling(config, file, catalog, inventory, onprem_plan)
    return issues
