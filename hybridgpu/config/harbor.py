"""Typed Harbor settings (``hybridgpu:platform`` ``harbor``): the site's registry as a pull-through cache (issue 27).

Harbor (goharbor/harbor-helm, :mod:`hybridgpu.render.harbor`) runs on the on-prem cluster with its
volumes on the site's NFS storage, and serves one *proxy cache* project per public registry
(``proxyCache``): a pull of ``<harbor>/<project>/<repository>`` fetches the image from the upstream
once and keeps it, so large ML images cross the WAN once per site. The chart creates no project;
a Job after the release creates the registry endpoints and projects through Harbor's API.

Single-section checks live here; whether the stack is on-prem, the inventory has NFS storage, the
Pulumi secrets are set and the inventory's containerd mirrors point at the right projects is checked
in :mod:`hybridgpu.stack.platform_services`. Nothing here imports Pulumi.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.config.base import Dns1123Name, Model
from hybridgpu.config.mlflow import PulumiSecretKey, check_secret_key
from hybridgpu.errors import FieldError
from hybridgpu.k8s import is_hostname

__all__ = ["DEFAULT_PROJECTS", "HarborConfig", "HarborProxy"]

#: Default proxy-cache project per public registry (the registries of issue 27).
DEFAULT_PROJECTS: dict[str, str] = {
    "registry.k8s.io": "k8s",
    "nvcr.io": "nvcr",
    "docker.io": "dockerhub",
    "quay.io": "quay",
    "ghcr.io": "ghcr",
}
#: Harbor's project name rule (goharbor/harbor v2.15.1 ``src/pkg/project/manager.go`` ``validProjectName``,
#: read 2026-11-27): lower case letters, digits and ``._-`` between them; at most 255 characters. The registry
#: endpoint named after it (``proxy-<project>``) may have at most 64 (``src/controller/registry/controller.go`` ``validate``).
_PROJECT = r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$"
_HOST_PATH = re.compile(r"^/[A-Za-z0-9._/+-]*$")


class HarborProxy(Model):
    """One proxy-cache project: the upstream registry it caches and the project name images are pulled through."""

    registry: Literal["registry.k8s.io", "nvcr.io", "docker.io", "quay.io", "ghcr.io"] = Field(
        description="The upstream registry as image references name it. Required."
    )
    project: Annotated[str, StringConstraints(pattern=_PROJECT, max_length=58)] | None = Field(
        default=None,
        description="Harbor project name, at most 58 characters (the registry endpoint `proxy-<project>` may have 64). "
        "Default: `k8s`, `nvcr`, `dockerhub`, `quay`, `ghcr`.",
    )
    credentials: PulumiSecretKey | None = Field(
        default=None,
        description="Pulumi config key of `user:token` for the upstream (nvcr.io API keys, Docker Hub's pull limits), e.g. "
        "`harbor:nvcrCredentials`. Default: none (anonymous).",
    )

    @field_validator("credentials")
    @classmethod
    def _credentials(cls, value: str | None) -> str | None:
        return None if value is None else check_secret_key(value, "harbor:nvcrCredentials")

    @property
    def project_name(self) -> str:
        """``project`` or the registry's default."""
        return self.project or DEFAULT_PROJECTS[self.registry]


class HarborConfig(Model):
    """Harbor on the on-prem cluster, configured as a pull-through cache of the public registries."""

    enabled: bool = Field(default=False, description="Install Harbor. Default: false.")
    namespace: Dns1123Name = Field(default="harbor", description="Namespace of the release. Default: `harbor`.")
    hostname: str | None = Field(
        default=None,
        description="DNS name the hosts and users reach Harbor at (its certificate's name and `externalURL`), e.g. "
        "`harbor.site-a.internal`. Required when `enabled`.",
    )
    expose: Literal["nodePort", "loadBalancer", "ingress"] = Field(
        default="nodePort",
        description="How Harbor is reached: `nodePort` (every node's port `nodePort`; `hostname` resolves to the nodes or a VIP), "
        "`loadBalancer` (a LoadBalancer Service: MetalLB or similar), `ingress` (the cluster's ingress controller). Default: `nodePort`.",
    )
    node_port: int = Field(default=30003, ge=30000, le=32767, description="HTTPS node port with `expose: nodePort`. Default: 30003.")
    tls_certificate: PulumiSecretKey | None = Field(
        default=None,
        description="Pulumi config key of the site's PEM certificate (chain) for `hostname`, e.g. `harbor:tlsCert`; with `tlsKey`. "
        "Default: none (the chart generates a self-signed CA and certificate, anew at every upgrade: the hosts cannot trust it for long).",
    )
    tls_key: PulumiSecretKey | None = Field(
        default=None, description="Pulumi config key of the certificate's PEM private key (a secret), e.g. `harbor:tlsKey`. Default: none."
    )
    ca_file: str | None = Field(
        default=None,
        description="CA certificate of Harbor's certificate on every host (absolute path), written as `ca` in the containerd mirror "
        "entries. Default: none (the system CAs).",
    )
    admin_password_secret: PulumiSecretKey | None = Field(
        default=None,
        description="Pulumi config key of the admin password (`pulumi config set --secret harbor:adminPassword ...`). Required when `enabled`.",
    )
    proxy_cache: tuple[HarborProxy, ...] = Field(
        default=tuple(HarborProxy(registry=r) for r in DEFAULT_PROJECTS),
        description="The proxy-cache projects, one per upstream registry. Default: registry.k8s.io, nvcr.io, docker.io, quay.io, ghcr.io.",
    )
    registry_size_gib: int = Field(default=500, ge=10, le=1_000_000, description="Size of the image store claim (`registrySizeGib`), in GiB. Default: 500.")
    trivy: bool = Field(
        default=False,
        description="Install the Trivy scanner (it downloads its vulnerability database from ghcr.io, which a disconnected site cannot reach). "
        "Default: false.",
    )

    @field_validator("hostname")
    @classmethod
    def _hostname(cls, value: str | None) -> str | None:
        if value is not None and not is_hostname(value):
            raise FieldError("", f"{value!r} is not a lower-case DNS name", "write the name hosts resolve to Harbor, e.g. harbor.site-a.internal (no scheme or port)")
        return value

    @field_validator("ca_file")
    @classmethod
    def _ca(cls, value: str | None) -> str | None:
        if value is not None and (not _HOST_PATH.match(value) or "/../" in value + "/"):
            raise FieldError("", f"{value!r} is not an absolute path on the hosts", "write the CA file's path on every host, e.g. /etc/ssl/certs/site-a-ca.pem")
        return value

    @field_validator("admin_password_secret")
    @classmethod
    def _admin(cls, value: str | None) -> str | None:
        return None if value is None else check_secret_key(value, "harbor:adminPassword")

    @field_validator("tls_certificate", "tls_key")
    @classmethod
    def _tls(cls, value: str | None) -> str | None:
        return None if value is None else check_secret_key(value, "harbor:tlsKey")

    @model_validator(mode="after")
    def _consistent(self) -> HarborConfig:
        if not self.enabled:
            return self
        if self.hostname is None:
            raise FieldError("hostname", "Harbor is enabled without `hostname`: its certificate, externalURL and the hosts' mirrors need it",
                             "set `hostname: harbor.<site>.internal` (a name every host resolves)")
        if self.admin_password_secret is None:
            raise FieldError(
                "adminPasswordSecret",
                "Harbor is enabled without an admin password secret: the chart's default password is public (Harbor12345)",
                "set `adminPasswordSecret: harbor:adminPassword` and `pulumi config set --secret harbor:adminPassword <password>`",
            )
        if (self.tls_certificate is None) != (self.tls_key is None):
            missing = "tlsKey" if self.tls_key is None else "tlsCertificate"
            raise FieldError(missing, f"`{missing}` is missing: a certificate needs its key and the other way round",
                             "set both `tlsCertificate` and `tlsKey` (Pulumi config keys), or neither (self-signed)")
        if not self.proxy_cache:
            raise FieldError("proxyCache", "no proxy-cache project: Harbor would cache nothing", "list at least one registry, or leave `proxyCache` out for the five defaults")
        seen: dict[str, int] = {}
        names: dict[str, int] = {}
        for i, proxy in enumerate(self.proxy_cache):
            if proxy.registry in seen:
                raise FieldError(f"proxyCache[{i}].registry", f"{proxy.registry} is proxied twice (also proxyCache[{seen[proxy.registry]}])", "keep one project per registry")
            if proxy.project_name in names:
                raise FieldError(
                    f"proxyCache[{i}].project",
                    f"project {proxy.project_name!r} is used twice (also proxyCache[{names[proxy.project_name]}]): one project caches one upstream",
                    "give each registry its own project",
                )
            seen[proxy.registry], names[proxy.project_name] = i, i
        return self

    @property
    def port(self) -> int | None:
        """The HTTPS port in Harbor's URL: the node port with ``expose: nodePort``, else None (443)."""
        return self.node_port if self.expose == "nodePort" else None

    @property
    def external_url(self) -> str:
        """``https://<hostname>[:<node port>]`` (Harbor's ``externalURL``); requires ``hostname``."""
        assert self.hostname is not None
        return f"https://{self.hostname}" + (f":{self.port}" if self.port else "")
