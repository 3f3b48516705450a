"""Sites without internet: the ``mirrors`` section of the ``Site`` document, and where packages come from (pure).

* :class:`Mirrors` (``mirrors``): apt repositories for the Kubernetes and NVIDIA packages
  (:class:`AptMirrors`), container registry mirrors (:class:`RegistryMirrors`, rendered by
  :mod:`hybridgpu.render.containerd` as containerd ``certs.d/<registry>/hosts.toml`` files that the
  bootstrap script writes) and Helm chart mirrors (:class:`ChartMirror`: every Helm release of the stack
  takes its chart from them, :mod:`hybridgpu.render.chart_repos`). Credentials are never inline: a
  :class:`SecretSource` names the environment variable or Pulumi secret that holds them; ``pulumi up``
  writes registry logins to the hosts as a secret (:func:`registry_logins`, CRI ``registry.configs``).
* :data:`KUBERNETES_APT` and :data:`NVIDIA_APT`: the public repositories, the one place the scripts
  take them from; :func:`apt_sources` gives the repositories a site uses (its mirrors, else these).

Upstream facts relied on:

* containerd's registry host configuration (containerd ``docs/hosts.md`` and
  ``core/remotes/docker/config/hosts.go`` at commit 301026e5, read 2026-11-26): one
  ``hosts.toml`` per registry host namespace ``[registry_host_name|IP address][:port]`` or
  ``_default``; ``server`` (the upstream, tried last), ``[host."<url>"]`` entries tried in order
  with ``capabilities`` (``pull``, ``resolve``, ``push``), ``ca``, ``skip_verify`` and
  ``override_path`` (the URL path is the API root, as a Harbor proxy-cache project's
  ``/v2/<project>`` is). When ``server`` is absent containerd still appends the upstream
  (``ConfigureHosts``: "If hosts was not set, add a default host"), ``registry-1.docker.io`` for
  ``docker.io``.
* pkgs.k8s.io has one repository per Kubernetes minor version
  (``https://pkgs.k8s.io/core:/stable:/v1.NN/deb/`` with ``Release.key`` inside it; Kubernetes blog,
  2023-08-15), so a Kubernetes mirror URL names the minor as ``{minor}`` (``v1.35``): upgrades move
  through the repositories.
* NVIDIA's container toolkit list (``https://nvidia.github.io/libnvidia-container/stable/deb/
  nvidia-container-toolkit.list``) holds ``deb https://nvidia.github.io/libnvidia-container/stable/
  deb/$(ARCH) /``, signed by ``https://nvidia.github.io/libnvidia-container/gpgkey`` (NVIDIA container
  toolkit install guide, read 2026-11-22).

Imports no other inventory module (the models import this one).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.errors import FieldError
from hybridgpu.k8s import HOSTNAME_FMT
from hybridgpu.modelbase import Model

__all__ = [
    "KUBERNETES_APT",
    "NVIDIA_APT",
    "AptMirrors",
    "AptRepository",
    "AptSource",
    "AptSources",
    "ChartMirror",
    "Mirrors",
    "RegistryMirror",
    "RegistryLogin",
    "RegistryMirrors",
    "SecretSource",
    "apt_sources",
    "registry_logins",
    "upstream_server",
]


# --------------------------------------------------------------------------- the public repositories


@dataclass(frozen=True)
class AptSource:
    """An apt repository as the scripts use it.

    Attributes:
        url: the repository as the ``deb`` line names it (flat: ``deb [signed-by=K] URL /``); for
            Kubernetes ``{minor}`` stands for ``v1.NN``. None: NVIDIA's public list file is fetched.
        key_url: where the script downloads the signing key (ASCII-armored), or None.
        key_file: a keyring already on the host, named in ``signed-by`` as it is, or None.
        label: what the script's log calls the repository (its host name).
    """

    url: str | None
    key_url: str | None
    key_file: str | None
    label: str


#: The public Kubernetes repository (pkgs.k8s.io, one per minor version; ``{minor}`` is ``v1.NN``).
KUBERNETES_APT = AptSource(
    url="https://pkgs.k8s.io/core:/stable:/{minor}/deb/",
    key_url="https://pkgs.k8s.io/core:/stable:/{minor}/deb/Release.key",
    key_file=None,
    label="pkgs.k8s.io",
)
#: NVIDIA's public container toolkit repository: its list file (url None: fetched from
#: :data:`NVIDIA_LIST_URL`) and key.
NVIDIA_APT = AptSource(url=None, key_url="https://nvidia.github.io/libnvidia-container/gpgkey", key_file=None, label="nvidia.github.io")
#: NVIDIA's list file of the public repository (``deb https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /``).
NVIDIA_LIST_URL = "https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list"


@dataclass(frozen=True)
class AptSources:
    """The repositories a site's scripts install from: ``kubernetes`` and ``nvidia`` (:class:`AptSource`)."""

    kubernetes: AptSource
    nvidia: AptSource


# --------------------------------------------------------------------------- the `mirrors` section

#: Characters a URL may hold here: it is written into shell scripts (double-quoted, and unquoted
#: heredocs), TOML and apt sources, so no white space, quotes, ``$``, backquote, backslash, ``<>``,
#: ``{}`` (but the ``{minor}`` placeholder) or ``#``.
_URL_CHARS = re.compile(r"^[A-Za-z0-9._~:/?&=%+,;@!*()\[\]-]+$")
#: An absolute path on the hosts (CA file, keyring): no spaces, quotes or ``..``.
_HOST_PATH = re.compile(r"^/[A-Za-z0-9._/+-]*$")
#: A DNS name (lower case, as containerd names the registry directory).
_DNS = re.compile(HOSTNAME_FMT)
#: The registries an air-gapped GPU site pulls from by default (the brief of issue 27; the images
#: the GPU Operator, Kubernetes and the charts we pin name).
WELL_KNOWN_REGISTRIES = ("registry.k8s.io", "nvcr.io", "docker.io", "quay.io", "ghcr.io")

Capability = Literal["pull", "resolve", "push"]
#: Keys that would hold a credential inline under ``credentials``.
_INLINE_CREDENTIAL_KEYS = frozenset({"username", "user", "password", "token", "auth", "secret", "value"})


def _check_url(value: str, *, schemes: tuple[str, ...], minor: bool = False) -> str:
    """``value`` if it is an absolute URL of one of ``schemes`` with a host; ValueError otherwise."""
    text = value.replace("{minor}", "") if minor else value
    if not _URL_CHARS.match(text):
        raise FieldError(
            "",
            "the URL holds characters a URL written into scripts may not have (white space, quotes, $, backquote, backslash, <>, {} or #)",
            "percent-encode them (a space is %20)" + (" ; `{minor}` is the one placeholder allowed" if minor else ""),
        )
    parts = urlsplit(value)
    example = f"{schemes[0]}://mirror.site-a.internal/..."
    if parts.scheme not in schemes or not parts.hostname:
        raise FieldError("", f"{value!r} is not an absolute {' or '.join(s + '://' for s in schemes)} URL with a host", f"write it as {example}")
    try:
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        raise FieldError("", f"{value!r} has a port outside 0-65535", f"write it as {example}") from None
    return value


def _insecure_needed(url: str, insecure: bool, field: str) -> None:
    if url.startswith("http://") and not insecure:
        raise FieldError(
            field,
            f"{url} is plain http: anyone on the path can read or replace what the hosts download",
            "use https:// (with `ca` for a private CA), or set `insecure: true` to accept http on purpose",
        )


class SecretSource(Model):
    """Where a credential is kept (a registry or chart repository login): exactly one of ``env`` or ``pulumiConfig``.

    The value is ``user:password`` (or a token). It never appears in the inventory: only the name
    of the environment variable or Pulumi secret that holds it (like ``ssh.keySecret``).
    """

    env: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=255)] | None = Field(
        default=None, description="Environment variable holding the credential, e.g. `SITE_A_HARBOR`. Default: none (set exactly one)."
    )
    pulumi_config: Annotated[str, StringConstraints(pattern=r"^([A-Za-z0-9_-]+:)?[A-Za-z0-9_.-]+$", max_length=255)] | None = Field(
        default=None, description="Pulumi config key of a secret (`pulumi config set --secret`), e.g. `onprem:harbor`. Default: none (set exactly one)."
    )

    @model_validator(mode="before")
    @classmethod
    def _not_inline(cls, value: object) -> object:
        inline = sorted(k for k in value if k in _INLINE_CREDENTIAL_KEYS) if isinstance(value, dict) else []
        if isinstance(value, str) or inline:
            raise FieldError(
                "",
                "a credential given inline" + (f" (`{'`, `'.join(inline)}`)" if inline else "") + " (the value is not shown): "
                "credentials never go into the inventory",
                "write `{env: VAR}` or `{pulumiConfig: key}` naming where `user:password` is kept (e.g. "
                "`pulumi config set --secret onprem:harbor user:password`); rotate the password if this file was ever committed",
            )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretSource:
        if (self.env is None) == (self.pulumi_config is None):
            raise ValueError("set exactly one of `env` or `pulumiConfig` (where the credential is kept, never the credential)")
        return self


class AptRepository(Model):
    """A mirror of one apt repository (``mirrors.apt.kubernetes`` or ``mirrors.apt.nvidia``)."""

    url: str = Field(
        description="The repository as its `deb` line names it (a flat repository: `deb [signed-by=...] URL /`), e.g. "
        "`https://apt.site-a.internal/k8s/core:/stable:/{minor}/deb/` (Kubernetes: `{minor}` is replaced by `v1.NN`, "
        "required) or `https://apt.site-a.internal/nvidia/stable/deb/$(ARCH)` (NVIDIA; apt expands `$(ARCH)`). Required."
    )
    key_url: str | None = Field(
        default=None,
        description="URL of the ASCII-armored signing key the script downloads. Default: for Kubernetes `<url>Release.key` "
        "(pkgs.k8s.io's layout); for NVIDIA set `keyUrl` or `keyFile`.",
    )
    key_file: str | None = Field(
        default=None,
        description="A keyring already on every host (absolute path), named in `signed-by` as it is, e.g. "
        "`/usr/share/keyrings/site-a-mirror.gpg`. Default: none.",
    )
    insecure: bool = Field(default=False, strict=True, description="Allow `http://` URLs (apt still checks signatures). Default: `false`.")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        _check_url(value.replace("$(ARCH)", "arch"), schemes=("https", "http"), minor=True)  # apt expands $(ARCH)
        return value

    @field_validator("key_url")
    @classmethod
    def _key_url(cls, value: str | None) -> str | None:
        return None if value is None else _check_url(value, schemes=("https", "http"), minor=True)

    @field_validator("key_file")
    @classmethod
    def _key_file(cls, value: str | None) -> str | None:
        if value is not None and (not _HOST_PATH.match(value) or "/../" in value + "/"):
            raise FieldError("", f"{value!r} is not an absolute path on the hosts", "write the keyring's absolute path, e.g. /usr/share/keyrings/site-a-mirror.gpg (no spaces, quotes or '..')")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> AptRepository:
        if self.key_url is not None and self.key_file is not None:
            raise FieldError("keyFile", "both `keyUrl` and `keyFile` are set", "keep one: the key to download, or the keyring already on the hosts")
        _insecure_needed(self.url, self.insecure, "url")
        if self.key_url is not None:
            _insecure_needed(self.key_url, self.insecure, "keyUrl")
        return self


class AptMirrors(Model):
    """``mirrors.apt``: where bootstrap and upgrades install the Kubernetes and NVIDIA packages from."""

    kubernetes: AptRepository | None = Field(
        default=None, description="Mirror of pkgs.k8s.io (kubelet, kubeadm, kubectl). Default: none (pkgs.k8s.io)."
    )
    nvidia: AptRepository | None = Field(
        default=None, description="Mirror of NVIDIA's container toolkit repository. Default: none (nvidia.github.io)."
    )

    @model_validator(mode="after")
    def _keys(self) -> AptMirrors:
        if self.kubernetes is not None and "$(ARCH)" in self.kubernetes.url:
            raise FieldError(
                "kubernetes.url",
                "pkgs.k8s.io's repositories are flat and hold every architecture: there is no $(ARCH) in their path",
                "drop $(ARCH), e.g. https://apt.site-a.internal/k8s/core:/stable:/{minor}/deb/",
            )
        if self.kubernetes is not None and "{minor}" not in self.kubernetes.url:
            raise FieldError(
                "kubernetes.url",
                f"{self.kubernetes.url} does not name the minor version: pkgs.k8s.io has one repository per minor "
                "(core:/stable:/v1.NN/deb/) and upgrades move from one to the next",
                "write `{minor}` where the mirror's path holds v1.NN, e.g. https://apt.site-a.internal/k8s/core:/stable:/{minor}/deb/",
            )
        if self.nvidia is not None and self.nvidia.key_url is None and self.nvidia.key_file is None:
            raise FieldError(
                "nvidia.keyUrl",
                "the NVIDIA mirror has no signing key (NVIDIA's key is not inside the repository, so there is no default)",
                "set `keyUrl` to the mirrored https://nvidia.github.io/libnvidia-container/gpgkey, or `keyFile` to a keyring on the hosts",
            )
        return self


def _registry_host(value: str) -> str:
    """``value`` if it is a registry host namespace containerd reads: ``_default``, ``host``, ``host:port``, ``IP[:port]``, ``[IPv6]:port``."""
    if value == "_default":
        return value
    fix = "write the host (and :port) as image references name it, e.g. registry.k8s.io, nvcr.io, harbor.site-a.internal:5000, or _default"
    if "/" in value:
        raise FieldError(
            "",
            f"{value!r} is not a registry host: no scheme and no path (a Harbor project or other path belongs in a mirror's `url`)",
            fix + "; put https://host/v2/<project> in `mirrors[].url` with `overridePath: true`",
        )
    host, port = value, None
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        if not rest.startswith(":"):
            raise ValueError(f"{value!r}: a bracketed IPv6 address is followed by :port, e.g. [fd00::10]:5000")
        port = rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{value!r}: {host} is not an IPv6 address") from None
    else:
        if value.count(":") == 1:
            host, port = value.split(":")
        if not (_DNS.fullmatch(host) and len(host) <= 253):
            raise FieldError("", f"{value!r} is not a registry host: a lower-case DNS name or IP address, optionally with :port", fix)
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        raise FieldError("", f"{value!r}: the port is a number from 1 to 65535", fix)
    return value


#: The upstream a registry host namespace falls back to (containerd ``ConfigureHosts``: docker.io is served by registry-1.docker.io).
def upstream_server(registry: str) -> str | None:
    """The ``server`` containerd uses for ``registry`` when hosts.toml names none (None for ``_default``)."""
    if registry == "_default":
        return None
    return "https://registry-1.docker.io" if registry == "docker.io" else f"https://{registry}"


class RegistryMirror(Model):
    """One mirror of a registry (a ``[host."<url>"]`` entry of its hosts.toml, tried in list order)."""

    url: str = Field(
        description="The mirror's URL, e.g. `https://harbor.site-a.internal` or, for a Harbor proxy-cache project, "
        "`https://harbor.site-a.internal/v2/proxy-k8s` with `overridePath: true`. Required."
    )
    capabilities: tuple[Capability, ...] = Field(
        default=("pull", "resolve"),
        min_length=1,
        description="What containerd may do with this host: `pull`, `resolve` (tags to digests; only for a mirror you trust), `push`. "
        "Default: `[pull, resolve]`.",
    )
    ca: str | None = Field(
        default=None, description="CA certificate file on every host (absolute path), e.g. `/etc/ssl/certs/site-a-ca.pem`. Default: none (system CAs)."
    )
    skip_verify: bool = Field(default=False, strict=True, description="Skip TLS verification (`skip_verify`). Default: `false`.")
    override_path: bool = Field(
        default=False, strict=True, description="The URL's path is the registry API root (`override_path`), e.g. a Harbor proxy cache's `/v2/<project>`. Default: `false`."
    )
    insecure: bool = Field(default=False, strict=True, description="Allow an `http://` URL. Default: `false`.")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        _check_url(value, schemes=("https", "http"))
        if urlsplit(value).query or urlsplit(value).fragment:
            raise FieldError("", f"{value!r} has a query or fragment", "write the mirror as scheme://host[:port][/path]")
        return value

    @field_validator("ca")
    @classmethod
    def _ca(cls, value: str | None) -> str | None:
        if value is not None and (not _HOST_PATH.match(value) or "/../" in value + "/"):
            raise FieldError("", f"{value!r} is not an absolute path on the hosts", "write the CA file's absolute path on every host, e.g. /etc/ssl/certs/site-a-ca.pem (no spaces, quotes or '..')")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RegistryMirror:
        _insecure_needed(self.url, self.insecure, "url")
        if len(set(self.capabilities)) != len(self.capabilities):
            raise FieldError("capabilities", f"{list(self.capabilities)} names a capability twice", "list each of pull, resolve, push once")
        if self.override_path and "/v2" not in urlsplit(self.url).path:
            raise FieldError(
                "overridePath",
                f"`overridePath: true` but {self.url} has no /v2 in its path: containerd then sends requests to the URL as it is, without the /v2 API prefix",
                "write the API root in the URL, e.g. https://harbor.site-a.internal/v2/proxy-k8s, or drop `overridePath`",
            )
        return self


class RegistryMirrors(Model):
    """``mirrors.registries[]``: the mirrors of one registry (one ``certs.d/<registry>/hosts.toml``)."""

    registry: str = Field(
        description="The registry host namespace as images name it: `registry.k8s.io`, `nvcr.io`, `docker.io`, `quay.io`, "
        "`ghcr.io`, any `host[:port]`, or `_default` (every registry without its own entry). Required."
    )
    mirrors: tuple[RegistryMirror, ...] = Field(min_length=1, description="The mirrors, tried in this order before `server`. Required.")
    server: str | None = Field(
        default=None,
        description="The upstream tried after the mirrors (hosts.toml `server`). Default: the registry itself "
        "(`https://registry-1.docker.io` for docker.io; none for `_default`). containerd always tries it last.",
    )
    credentials: SecretSource | None = Field(
        default=None, description="Where the mirrors' login is kept (env or pulumiConfig); never inline. Default: none (anonymous pulls)."
    )

    @field_validator("registry")
    @classmethod
    def _registry(cls, value: str) -> str:
        return _registry_host(value)

    @field_validator("server")
    @classmethod
    def _server(cls, value: str | None) -> str | None:
        return None if value is None else _check_url(value, schemes=("https", "http"))

    @model_validator(mode="after")
    def _urls(self) -> RegistryMirrors:
        seen: dict[str, int] = {}
        for index, mirror in enumerate(self.mirrors):
            if mirror.url.rstrip("/") in seen:
                raise FieldError(
                    f"mirrors[{index}].url", f"{mirror.url} is listed twice (also mirrors[{seen[mirror.url.rstrip('/')]}])", "list each mirror once"
                )
            seen[mirror.url.rstrip("/")] = index
        if self.server is not None and self.server.startswith("http://"):
            raise FieldError("server", f"{self.server} is plain http", "use https:// for the upstream server (or leave `server` out for the default)")
        return self

    @property
    def directory(self) -> str:
        """The directory under ``certs.d`` containerd looks in for this registry (``host:port`` as written)."""
        return self.registry

    def effective_server(self) -> str | None:
        """``server`` or the registry's default upstream (:func:`upstream_server`)."""
        return self.server if self.server is not None else upstream_server(self.registry)


class ChartMirror(Model):
    """``mirrors.charts[]``: where the Helm charts of one upstream repository are mirrored (OCI or HTTP)."""

    repository: str = Field(
        description="The upstream chart repository as the stack's releases name it, e.g. `https://helm.ngc.nvidia.com/nvidia` "
        "or `oci://registry.k8s.io/kueue/charts`. Required."
    )
    mirror: str = Field(
        description="Where the same charts are served: `oci://harbor.site-a.internal/charts/nvidia` or "
        "`https://charts.site-a.internal/nvidia`. Required."
    )
    insecure: bool = Field(default=False, strict=True, description="Allow an `http://` mirror. Default: `false`.")
    credentials: SecretSource | None = Field(
        default=None, description="Where the mirror's login is kept (env or pulumiConfig); never inline. Default: none."
    )

    @field_validator("repository", "mirror")
    @classmethod
    def _url(cls, value: str) -> str:
        return _check_url(value, schemes=("https", "http", "oci"))

    @model_validator(mode="after")
    def _consistent(self) -> ChartMirror:
        _insecure_needed(self.mirror, self.insecure, "mirror")
        if self.repository.rstrip("/") == self.mirror.rstrip("/"):
            raise FieldError("mirror", f"the mirror is the upstream repository itself ({self.mirror})", "name the site's own chart mirror")
        return self


class Mirrors(Model):
    """``mirrors``: the site's package, image and chart mirrors (a site without internet, or one that must not pull from it)."""

    apt: AptMirrors | None = Field(default=None, description="apt repositories for the Kubernetes and NVIDIA packages. Default: the public ones.")
    registries: tuple[RegistryMirrors, ...] = Field(
        default=(),
        description="Container registry mirrors, one entry per registry (containerd `certs.d/<registry>/hosts.toml`). Default: none.",
    )
    charts: tuple[ChartMirror, ...] = Field(default=(), description="Helm chart mirrors, one entry per upstream repository. Default: none.")

    @model_validator(mode="after")
    def _unique(self) -> Mirrors:
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.registries):
            if entry.registry in seen:
                raise FieldError(
                    f"registries[{index}].registry",
                    f"registry {entry.registry} is listed twice (also registries[{seen[entry.registry]}]); containerd reads one hosts.toml per registry",
                    f"merge the two entries' mirrors into registries[{seen[entry.registry]}]",
                )
            seen[entry.registry] = index
        # containerd keeps one login per host it sends requests to (CRI registry.configs."<host>".auth).
        logins: dict[str, tuple[int, SecretSource | None]] = {}
        for index, entry in enumerate(self.registries):
            for mirror in entry.mirrors:
                host = _mirror_host(mirror.url)
                if host in logins and logins[host][1] != entry.credentials and entry.credentials is not None and logins[host][1] is not None:
                    raise FieldError(
                        f"registries[{index}].credentials",
                        f"mirror host {host} gets its login from registries[{logins[host][0]}].credentials and from this entry: "
                        "containerd keeps one login per host (CRI registry.configs.\"<host>\".auth)",
                        f"name the same credentials in both entries (one robot account of {host} for every project it serves)",
                    )
                if host not in logins or logins[host][1] is None:
                    logins[host] = (index, entry.credentials)
        repos: dict[str, int] = {}
        for index, chart in enumerate(self.charts):
            key = chart.repository.rstrip("/")
            if key in repos:
                raise FieldError(
                    f"charts[{index}].repository",
                    f"repository {chart.repository} is mirrored twice (also charts[{repos[key]}])",
                    "keep one mirror per upstream repository",
                )
            repos[key] = index
        return self


@dataclass(frozen=True)
class RegistryLogin:
    """The login containerd uses for one mirror host (CRI ``registry.configs."<host>".auth``).

    Attributes:
        host: the mirror's ``host[:port]`` as containerd names the host it sends a request to (the key of
            ``registry.configs``; containerd ``internal/cri/server/images/image_pull.go``: ``Registry.Configs[host]``).
        credentials: where ``user:password`` (or a token) is kept.
        key: the inventory key it was declared at, e.g. ``mirrors.registries[1].credentials``.
    """

    host: str
    credentials: SecretSource
    key: str


def _mirror_host(url: str) -> str:
    """``host[:port]`` of a mirror URL (lower case; IPv6 in brackets), the way containerd keys a request's host."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port}" if parts.port else host


def registry_logins(mirrors: Mirrors | None) -> tuple[RegistryLogin, ...]:
    """The logins of a site's registry mirrors: one per mirror host of every ``mirrors.registries[]`` entry with
    ``credentials``, sorted by host (a host named by several entries with the same credentials once).

    Args:
        mirrors: the site's ``mirrors``, or None.

    Returns:
        The logins; empty without credentials. :class:`Mirrors` refuses one host with two different credentials.
    """
    found: dict[str, RegistryLogin] = {}
    for index, entry in enumerate(mirrors.registries if mirrors is not None else ()):
        if entry.credentials is None:
            continue
        for mirror in entry.mirrors:
            host = _mirror_host(mirror.url)
            found.setdefault(host, RegistryLogin(host, entry.credentials, f"mirrors.registries[{index}].credentials"))
    return tuple(found[h] for h in sorted(found))


def apt_sources(mirrors: Mirrors | None) -> AptSources:
    """The apt repositories of a site: its ``mirrors.apt`` entries, else the public ones.

    Args:
        mirrors: the site's ``mirrors`` section, or None.

    Returns:
        :class:`AptSources`; a mirror's Kubernetes key defaults to ``<url>Release.key``.
    """
    apt = mirrors.apt if mirrors is not None else None
    kubernetes, nvidia = KUBERNETES_APT, NVIDIA_APT
    if apt is not None and apt.kubernetes is not None:
        k = apt.kubernetes
        key_url = k.key_url if k.key_url is not None or k.key_file is not None else k.url.rstrip("/") + "/Release.key"
        kubernetes = AptSource(url=k.url, key_url=key_url, key_file=k.key_file, label=urlsplit(k.url).netloc)
    if apt is not None and apt.nvidia is not None:
        n = apt.nvidia
        nvidia = AptSource(url=n.url, key_url=n.key_url, key_file=n.key_file, label=urlsplit(n.url).netloc)
    return AptSources(kubernetes=kubernetes, nvidia=nvidia)
