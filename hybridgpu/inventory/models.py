"""Typed model of an on-prem site inventory (pydantic v2), the loaded :class:`Inventory`, and its errors.

An inventory is YAML, one site per file or split over several files, each document carrying
``apiVersion: hybridgpu.io/v1alpha1`` and a ``kind``:

* ``kind: Site`` (exactly one per site): ``metadata`` (:class:`SiteMetadata`), ``cluster``
  (:class:`Cluster`: Kubernetes version, control-plane endpoint, pod/service subnets, CNI,
  container runtime, linked cloud VPC) and ``networks`` (list of :class:`Network`).
* ``kind: HostList`` (any number): ``metadata`` (:class:`HostListMetadata`, naming the site)
  and ``hosts`` (list of :class:`Host`).

``stacks/inventory/onprem-site-a.yaml`` is the annotated sample: every field carries a comment.
:func:`hybridgpu.inventory.load_inventory` reads the files, validates them with these models
and with the rules of :mod:`hybridgpu.inventory.checks`, and returns an :class:`Inventory`
or raises :class:`InventoryError` listing every problem at once.

Conventions are those of the stack config (:class:`Model` mirrors :class:`hybridgpu.config.base.Model`): camelCase
keys in YAML (snake_case in Python), unknown keys rejected, models frozen. IP addresses and
networks are :mod:`ipaddress` objects, parsed once here; a network with host bits set
(``10.0.0.1/24``) is refused. Values that YAML types loosely are taken strictly: a number
is not an address, ``1.35`` (a float) is not a Kubernetes version, ``true`` is not a count.

Nothing here imports Pulumi.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, StringConstraints, WithJsonSchema, field_validator, model_validator

from hybridgpu.errors import MAX_SHOWN_ISSUES, FieldError, IssuesError
from hybridgpu.k8s import HOSTNAME_FMT, Dns1123Name, HostName
from hybridgpu.k8s import LabelKey as LabelKey
from hybridgpu.k8s import LabelValue as LabelValue
from hybridgpu.modelbase import Model
from hybridgpu.inventory.power import MAX_HOST_KW, RackName, RackSpec
from hybridgpu.inventory.mirrors import Mirrors
from hybridgpu.inventory.remediation import HostRemediation, RemediationPolicy
from hybridgpu.inventory.storage import SiteStorage
from hybridgpu.inventory.upgrade import UpgradePolicy

__all__ = [
    "API_VERSION",
    "KINDS",
    "MIN_KUBERNETES_VERSION",
    "NVIDIA_CONTAINER_TOOLKIT_VERSION",
    "PUBLIC_KEY_PREFIXES",
    "Cluster",
    "Host",
    "HostAddresses",
    "HostGpu",
    "HostListMetadata",
    "HostNetwork",
    "HostNic",
    "RoceSettings",
    "HostRecord",
    "Inventory",
    "InventoryError",
    "IpAddress",
    "IpNetwork",
    "looks_like_key_material",
    "MigLayoutSpec",
    "Network",
    "NodeTaint",
    "SecretRef",
    "Site",
    "SiteMetadata",
    "SshAccess",
]

#: The one inventory schema version this code reads.
API_VERSION = "hybridgpu.io/v1alpha1"
#: Document kinds of an inventory.
KINDS = ("Site", "HostList")
#: Default NVIDIA container toolkit package version (``cluster.nvidiaContainerToolkitVersion``):
#: v1.18.2, the newest release in NVIDIA's release notes
#: (docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/release-notes.html, read
#: 2026-11-24); its Debian packages are versioned ``1.18.2-1`` (the install guide's
#: ``NVIDIA_CONTAINER_TOOLKIT_VERSION=<x.y.z>-1``).
NVIDIA_CONTAINER_TOOLKIT_VERSION = "1.18.2-1"
#: Oldest Kubernetes version (major, minor) an inventory may name: the kubeadm configuration
#: hybridgpu renders is ``kubeadm.k8s.io/v1beta4`` (:mod:`hybridgpu.render.kubeadm`), and
#: bootstrap installs kubeadm at ``kubernetesVersion``. kubeadm reads v1beta4 from v1.31 on
#: ("v1.31: v1beta3 read-only, writes only v1beta4 config", kubernetes/kubernetes
#: ``cmd/kubeadm/app/util/config/common.go`` ``validateSupportedVersion``, stored snapshot at
#: commit 1601b9e2); before, from v1.28, v1beta4 is listed in ``experimentalAPIVersions`` and
#: refused ("experimental API spec: \"kubeadm.k8s.io/v1beta4\" is not allowed", same file at
#: commit 01b1174c). Read 2026-11-26.
MIN_KUBERNETES_VERSION = (1, 31)
#: How the first line of an OpenSSH public key file starts (``ssh-keygen`` writes ``<type> <base64>
#: <comment>``; the key types of OpenSSH ``sshkey.c`` ``keytypes[]``), plus the PEM/RFC 4716 public
#: key armours. A ``keySecret.file`` whose content starts so is the public half of a key pair.
PUBLIC_KEY_PREFIXES = (
    "ssh-rsa",
    "ssh-ed25519",
    "ssh-dss",
    "ecdsa-sha2-",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-",
    "---- BEGIN SSH2 PUBLIC KEY",
    "-----BEGIN PUBLIC KEY",
    "-----BEGIN RSA PUBLIC KEY",
)

Role = Literal["control-plane", "gpu-worker", "cpu-worker"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
HostState = Literal["active", "cordoned", "absent"]
NetworkPurpose = Literal["management", "data", "bmc", "infiniband"]
Fabric = Literal["none", "infiniband", "roce"]

# --------------------------------------------------------------------------- errors


class InventoryError(IssuesError):
    """An inventory is invalid; every problem found is reported at once, not only the first.

    Raised by :func:`hybridgpu.inventory.load_inventory` for anything wrong with the input:
    missing or unreadable files, binary junk, YAML syntax errors, documents of the wrong
    shape, schema errors, and the cross-host rules of :mod:`hybridgpu.inventory.checks`.

    Args:
        issues: the problems (at least one), each an :class:`~hybridgpu.errors.Issue` built with
            :meth:`~hybridgpu.errors.Issue.on_host`: ``file``; ``host`` (the host's ``hostname``,
            or ``hosts[<index>]`` when it has no usable one; ``None`` for a problem of the site
            itself or of the file/document); ``field`` (key path relative to the host for host
            problems, ``gpu.migLayouts[1].layout['3g.40gb']``, from the document root otherwise,
            ``cluster.podSubnet``; ``None`` when the whole file is at fault); ``message`` (never
            a secret); ``fix``; and ``code`` (e.g. ``duplicate-hostname``, ``renamed-field``,
            ``mig-unplaceable``; see :mod:`hybridgpu.inventory.checks`).

    Attributes:
        issues: the problems, renamed/removed fields first, then in the order found.
        files: the distinct files named by the issues, in order.
        codes: the issues' rule codes, in order.

    Raises:
        ValueError: (on construction) no issue given.
    """

    #: At most this many issues are spelled out in the message, then the count of the rest;
    #: ``issues`` holds them all (:data:`hybridgpu.errors.MAX_SHOWN_ISSUES`).
    MAX_SHOWN = MAX_SHOWN_ISSUES

    @property
    def files(self) -> list[str]:
        """The distinct files named by the issues, in order."""
        return list(dict.fromkeys(issue.file for issue in self.issues))

    def head(self) -> str:
        return f"{self.count_text} in inventory {', '.join(self.files)}:"

    @property
    def codes(self) -> list[str]:
        """The rule codes of all issues, in order."""
        return [issue.code for issue in self.issues]


# --------------------------------------------------------------------------- base


# --------------------------------------------------------------------------- scalar types


def _parse_ip(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if isinstance(value, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return value
    if not isinstance(value, str):
        raise ValueError(f"an IP address is written as a string such as 10.20.0.11, not a {type(value).__name__}")
    try:
        # Fast path (4x faster than ipaddress.ip_address: 1.4 us vs 5.7 us, timeit, 2026-11-22): inet_pton accepts exactly the dotted
        # quads ipaddress does (no leading zeros, no short forms); anything else goes the slow way.
        return ipaddress.IPv4Address(socket.inet_pton(socket.AF_INET, value))
    except (OSError, ValueError):
        pass
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        raise ValueError(f"{value!r} is not an IPv4 or IPv6 address") from None


def _parse_network(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if isinstance(value, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return value
    if not isinstance(value, str) or "/" not in value:
        raise ValueError(f"a network is written in CIDR notation such as 10.20.0.0/22, got {value!r}")
    text = value.strip()
    try:
        return ipaddress.ip_network(text)
    except ValueError:
        pass
    try:
        loose = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ValueError(f"{value!r} is not a network in CIDR notation (address/prefix length)") from None
    raise ValueError(f"{value!r} has host bits set; the network is {loose}")


#: An IPv4 or IPv6 address given as a string (an :mod:`ipaddress` object in Python).
IpAddress = Annotated[
    ipaddress.IPv4Address | ipaddress.IPv6Address,
    PlainValidator(_parse_ip),
    WithJsonSchema({"type": "string", "format": "ipvanyaddress"}),
]
#: A network in CIDR notation with no host bits set (an :mod:`ipaddress` network in Python).
IpNetwork = Annotated[
    ipaddress.IPv4Network | ipaddress.IPv6Network,
    PlainValidator(_parse_network),
    WithJsonSchema({"type": "string", "format": "ipvanynetwork"}),
]

#: A Kubernetes node name: a DNS-1123 subdomain (lower-case labels joined by dots, <= 253
#: characters), each label a host name's (<= 63): :data:`hybridgpu.k8s.HostName`.
NodeName = HostName

# Label and taint keys (``[prefix/]name``) and values are hybridgpu.k8s's LabelKey and LabelValue (imported above).

#: A PCI bus id as ``nvidia-smi --query-gpu=pci.bus_id`` prints it (``00000000:18:00.0``) or
#: as ``lspci -D`` does (``0000:18:00.0``): domain:bus:device.function, hexadecimal.
PciBusId = Annotated[str, StringConstraints(pattern=r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-1][0-9A-Fa-f]\.[0-7]$")]

_KEY_MATERIAL = re.compile(r"PRIVATE KEY|BEGIN OPENSSH|ssh-(rsa|ed25519|dss) AAAA|\n")

StrictCount = Annotated[int, Field(strict=True, ge=0)]


def looks_like_key_material(value: Any) -> bool:
    """True if ``value`` is a string that looks like an SSH/PEM key rather than a name.

    Used to keep key material out of the inventory and out of error messages.
    """
    return isinstance(value, str) and bool(_KEY_MATERIAL.search(value))


# --------------------------------------------------------------------------- site


#: Who answers for a host: a team or person identifier (free text without spaces, e.g. `ml-platform`).
OwnerName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]*$", max_length=63)]


class SiteMetadata(Model):
    """``metadata`` of the ``Site`` document."""

    name: Dns1123Name = Field(description="Site name (DNS-1123 label), e.g. `site-a`; HostList documents refer to it. Required.")
    description: str = Field(default="", description="Free text. Default: empty.")
    owner: OwnerName | None = Field(
        default=None,
        description="Team accountable for the site's hosts (cost attribution; the policy pack requires an owner per "
        "host); hosts may name their own `owner`. Default: none.",
    )


class Network(Model):
    """One IP network of the site (``networks[]`` of the ``Site`` document)."""

    name: Dns1123Name = Field(description="Network name (DNS-1123 label), unique in the site. Required.")
    cidr: IpNetwork = Field(description="The network in CIDR notation, e.g. `10.20.0.0/22`. Required.")
    purpose: NetworkPurpose = Field(
        description=(
            "What the network carries: `management` (node OS, SSH, kubelet, API server), `data` (storage/"
            "east-west traffic), `bmc` (out-of-band IPMI/Redfish), `infiniband` (IPoIB). Host addresses "
            "`management`, `data` and `bmc` must lie in a network of that purpose. Required."
        )
    )


_DNS_SUBDOMAIN = HOSTNAME_FMT

#: ``host:port``: a DNS-1123 subdomain, an IPv4 address or a bracketed IPv6 address, then a port.
_ENDPOINT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(?P<port>[0-9]{1,5})$")


class Cluster(Model):
    """``cluster`` of the ``Site`` document: what kubeadm's ``ClusterConfiguration`` needs.

    Source: kubeadm configuration API v1beta4 (``ClusterConfiguration``: ``kubernetesVersion``,
    ``controlPlaneEndpoint``, ``networking.podSubnet``/``serviceSubnet``), Kubernetes docs,
    read 2026-11-22.
    """

    kubernetes_version: Annotated[str, StringConstraints(pattern=r"^1\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")] = Field(
        description="Kubernetes version as MAJOR.MINOR.PATCH, quoted, e.g. `\"1.35.2\"` (kubeadm installs exactly this); 1.31 or later "
        "(kubeadm reads the `kubeadm.k8s.io/v1beta4` configuration hybridgpu writes from 1.31 on). Required."
    )
    control_plane_endpoint: str | None = Field(
        default=None,
        description=(
            "Stable `host:port` of the API server: a load balancer or virtual IP in front of every control-plane "
            "node, e.g. `k8s-api.site-a.example.internal:6443`. Required when there is more than one "
            "control-plane host. Default: none."
        ),
    )
    pod_subnet: IpNetwork = Field(description="Pod network CIDR (kubeadm `networking.podSubnet`), e.g. `10.244.0.0/16`. Required.")
    service_subnet: IpNetwork = Field(
        description="Service ClusterIP CIDR (kubeadm `networking.serviceSubnet`), e.g. `10.96.0.0/12`. Required."
    )
    cni: Literal["cilium", "calico"] = Field(description="CNI plugin. Required.")
    container_runtime: Literal["containerd"] = Field(default="containerd", description="Container runtime. Default: `containerd`.")
    nvidia_container_toolkit_version: Annotated[str, StringConstraints(pattern=r"^[0-9][0-9A-Za-z.+~-]*$", max_length=64)] = Field(
        default=NVIDIA_CONTAINER_TOOLKIT_VERSION,
        description=(
            "Debian package version of the NVIDIA container toolkit that bootstrap installs and holds on gpu-workers "
            "(`nvidia-container-toolkit`, `-base`, `libnvidia-container-tools`, `libnvidia-container1`, all at this "
            "version, like the Kubernetes packages), e.g. `\"1.18.2-1\"`: with its Debian revision (`-1`), as NVIDIA's apt repository "
            "versions the packages (release candidates `<x.y.z>~rc.<n>-1`). Default: `\"" + NVIDIA_CONTAINER_TOOLKIT_VERSION + "\"`."
        ),
    )
    kubelet_server_tls_bootstrap: bool = Field(
        default=False,
        description=(
            "Kubelet `serverTLSBootstrap`: each kubelet asks for its serving certificate with a CSR of signer "
            "`kubernetes.io/kubelet-serving`. kube-controller-manager does not approve those (it approves only "
            "kubelet client CSRs), so `kubectl logs`, `exec` and `port-forward` fail on a node until someone "
            "approves its CSR: set `true` only with a CSR approver running (see docs/onprem.md, \"Kubelet serving "
            "certificates\"). Default: `false` (each kubelet serves with a self-signed certificate, which "
            "kube-apiserver accepts because kubeadm sets no `--kubelet-certificate-authority`)."
        ),
    )
    linked_cloud_vpc_cidr: IpNetwork | None = Field(
        default=None,
        description=(
            "CIDR of the cloud VPC this site is linked to (VPN/Direct Connect); pod, service and host networks "
            "must not overlap it. For now it is written here; later it is read from the linked cloud stack's "
            "`hybridgpu:cloud.network`. Default: none (no overlap check against a VPC)."
        ),
    )

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _version_is_text(cls, value: Any) -> Any:
        if isinstance(value, float):
            raise ValueError(f"YAML read {value!r} as a number; write the full version in quotes, e.g. \"1.35.2\"")
        return value

    @field_validator("kubernetes_version")
    @classmethod
    def _kubeadm_reads_v1beta4(cls, value: str) -> str:
        major, minor, _ = (int(part) for part in value.split("."))
        if (major, minor) < MIN_KUBERNETES_VERSION:
            oldest = ".".join(map(str, MIN_KUBERNETES_VERSION))
            raise FieldError(
                "",
                f"Kubernetes {value} is older than {oldest}: hybridgpu writes kubeadm.k8s.io/v1beta4 configuration, and kubeadm "
                f"reads v1beta4 only from {oldest} on (kubeadm 1.28-1.30 refuse it as an experimental API spec, older ones do not know it)",
                f'use {oldest}.0 or later, e.g. "1.35.2" (upgrade an existing older cluster one minor version at a time first)',
            )
        return value

    @field_validator("nvidia_container_toolkit_version")
    @classmethod
    def _toolkit_debian_revision(cls, value: str) -> str:
        # NVIDIA's apt repository versions every package <upstream>-1 (install guide: NVIDIA_CONTAINER_TOOLKIT_VERSION=${version}-1,
        # NVIDIA/cloud-native-docs container-toolkit/install-guide.md at 01f0197c) and release candidates <x.y.z>~rc.<n>-1
        # (packaging/debian/changelog: "1.3.0~rc.2-1"). `apt-get install pkg=V` matches V against the whole Debian version
        # ([epoch:]upstream-revision, deb-version(7)), so a version without its revision finds nothing.
        upstream, dash, revision = value.rpartition("-")
        if not dash:
            raise FieldError(
                "",
                f"{value} has no Debian revision: NVIDIA's apt packages are versioned <version>-1, and "
                f"`apt-get install nvidia-container-toolkit={value}` finds no such package",
                f'write "{value}-1" (`apt-cache madison nvidia-container-toolkit` lists the versions)',
            )
        if not revision or not revision[0].isdigit():
            candidate = f"{upstream}~{revision}-1" if revision else f"{upstream}-1"
            raise FieldError(
                "",
                f"{value} is not a version of NVIDIA's apt packages: its Debian revision (after the last '-') is "
                + (repr(revision) if revision else "empty")
                + "; NVIDIA packages releases as <x.y.z>-1 and release candidates as <x.y.z>~rc.<n>-1",
                f'write "{candidate}" (`apt-cache madison nvidia-container-toolkit` lists the versions)',
            )
        return value

    @field_validator("control_plane_endpoint")
    @classmethod
    def _endpoint_shape(cls, value: str | None) -> str | None:
        if value is None:
            return value
        match = _ENDPOINT.match(value)
        if match is None:
            raise ValueError(f"{value!r} is not host:port (e.g. k8s-api.site-a.example.internal:6443 or 10.20.0.10:6443)")
        if not 1 <= int(match["port"]) <= 65535:
            raise ValueError(f"port {match['port']} is outside 1-65535")
        host = match["host"]
        if host.startswith("["):
            try:
                ipaddress.IPv6Address(host[1:-1])
            except ValueError:
                raise ValueError(f"{host} is not an IPv6 address") from None
        elif re.fullmatch(r"[0-9.]+", host):
            try:
                ipaddress.IPv4Address(host)
            except ValueError:
                raise ValueError(f"{host!r} is not an IPv4 address") from None
        elif not re.fullmatch(_DNS_SUBDOMAIN, host) or len(host) > 253:
            raise ValueError(f"{host!r} is neither an IP address nor a lower-case DNS name")
        return value

    @property
    def endpoint_host(self) -> str | None:
        """The host part of :attr:`control_plane_endpoint` (brackets of IPv6 removed), or None."""
        if self.control_plane_endpoint is None:
            return None
        host = self.control_plane_endpoint.rsplit(":", 1)[0]
        return host[1:-1] if host.startswith("[") else host


class Site(Model):
    """The site: its name, cluster settings and networks (from the ``Site`` document)."""

    name: Dns1123Name = Field(description="Site name (`metadata.name`).")
    description: str = Field(default="", description="`metadata.description`.")
    owner: str | None = Field(default=None, description="`metadata.owner`: default owner of the hosts.")
    cluster: Cluster = Field(description="Cluster settings.")
    networks: tuple[Network, ...] = Field(description="The site's IP networks.")
    storage: SiteStorage | None = Field(
        default=None, description="`storage`: the dataset storage the cluster mounts (hybridgpu.inventory.storage). Default: none."
    )
    remediation: RemediationPolicy | None = Field(
        default=None, description="`remediation`: what happens to a host whose GPUs fail (hybridgpu.inventory.remediation). Default: none."
    )
    upgrades: UpgradePolicy | None = Field(
        default=None, description="`upgrades`: drain timeout, etcd snapshots, GPU driver upgrade policy (hybridgpu.inventory.upgrade). Default: none."
    )
    racks: dict[RackName, RackSpec] | None = Field(
        default=None, description="`racks`: power budget and cooling per rack name (hybridgpu.inventory.power). Default: none."
    )
    mirrors: Mirrors | None = Field(
        default=None, description="`mirrors`: apt, registry and chart mirrors of a site without internet (hybridgpu.inventory.mirrors). Default: none."
    )


# --------------------------------------------------------------------------- hosts


class HostListMetadata(Model):
    """``metadata`` of a ``HostList`` document."""

    site: Dns1123Name = Field(description="Name of the Site these hosts belong to (its `metadata.name`). Required.")
    name: str | None = Field(default=None, description="Label for this list, e.g. `rack-a-gpu`. Default: none.")


class HostAddresses(Model):
    """``addresses`` of a host; each must lie in a declared network of the same purpose."""

    management: IpAddress = Field(description="Node OS address: SSH, kubelet, the node's InternalIP. Required.")
    data: IpAddress | None = Field(default=None, description="Address on the data network. Default: none.")
    bmc: IpAddress | None = Field(default=None, description="Out-of-band BMC (IPMI/Redfish) address. Default: none.")

    def items(self) -> Iterator[tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address]]:
        """``(slot, address)`` for every address set, slot being ``management``, ``data`` or ``bmc``."""
        yield "management", self.management
        if self.data is not None:
            yield "data", self.data
        if self.bmc is not None:
            yield "bmc", self.bmc


class SecretRef(Model):
    """Where an SSH private key is kept: exactly one of ``env``, ``file``, ``pulumiConfig``.

    The key itself never appears in the inventory; only the name of where to read it.
    """

    env: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=255)] | None = Field(
        default=None, description="Environment variable holding the key, e.g. `SITE_A_SSH_KEY`. Default: none (set exactly one of env, file, pulumiConfig)."
    )
    file: Annotated[str, StringConstraints(min_length=1, max_length=4096)] | None = Field(
        default=None, description="Path of the PRIVATE key file on the machine running hybridgpu, e.g. `~/.ssh/site-a` (not the `.pub`; "
        "a file that exists there is read at validation and refused when it holds a public key). Default: none (set exactly one of env, file, pulumiConfig)."
    )
    pulumi_config: Annotated[str, StringConstraints(pattern=r"^([A-Za-z0-9_-]+:)?[A-Za-z0-9_.-]+$", max_length=255)] | None = Field(
        default=None, description="Pulumi config key of a secret (`pulumi config set --secret`), e.g. `onprem:sshKey`. Default: none (set exactly one of env, file, pulumiConfig)."
    )

    @field_validator("env", "file", "pulumi_config", mode="before")
    @classmethod
    def _not_key_material(cls, value: Any) -> Any:
        if looks_like_key_material(value):
            raise ValueError("this looks like key material; keySecret names where the key is kept, never the key itself")
        return value

    @field_validator("file")
    @classmethod
    def _not_public_key_file(cls, value: str | None) -> str | None:
        if value is not None and value.endswith(".pub"):
            raise FieldError(
                "",
                "names a .pub file: that is the public half of the key pair (it goes into the host's authorized_keys); "
                "the SSH connection needs the private key",
                f"name the private key file, e.g. `file: {value[: -len('.pub')] or '~/.ssh/<key>'}`",
            )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretRef:
        given = [name for name in ("env", "file", "pulumi_config") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("set exactly one of `env`, `file`, `pulumiConfig`")
        return self

    @property
    def kind(self) -> str:
        """``"env"``, ``"file"`` or ``"pulumiConfig"``: which source is set."""
        if self.env is not None:
            return "env"
        return "file" if self.file is not None else "pulumiConfig"

    @property
    def name(self) -> str:
        """The variable name, file path or config key."""
        return self.env or self.file or self.pulumi_config or ""


class SshAccess(Model):
    """How hybridgpu reaches a host over SSH (``ssh``). The key is a :class:`SecretRef`, never inline."""

    user: Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")] = Field(
        description="Login user (POSIX user name), e.g. `ubuntu`. Required."
    )
    port: int = Field(default=22, strict=True, ge=1, le=65535, description="SSH port. Default: 22.")
    key_secret: SecretRef = Field(description="Where the private key is kept (env, file or pulumiConfig). Required.")


class NodeTaint(Model):
    """A taint the node is registered with (kubelet ``--register-with-taints``)."""

    key: LabelKey = Field(description="Taint key, e.g. `nvidia.com/gpu`. Required.")
    value: LabelValue | None = Field(default=None, description="Taint value. Default: none.")
    effect: TaintEffect = Field(
        default="NoSchedule", description="Taint effect: `NoSchedule`, `PreferNoSchedule` or `NoExecute`. Default: `NoSchedule`."
    )


def _parse_gpu_indices(value: Any) -> str | tuple[int, ...]:
    if value == "all" and isinstance(value, str):
        return "all"
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f'`gpus` is "all" or a non-empty list of GPU indices such as [0, 1], got {value!r}')
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise ValueError(f"GPU indices are whole numbers >= 0 (nvidia-smi's index), got {item!r}")
        out.append(item)
    return tuple(out)


class MigLayoutSpec(Model):
    """The MIG layout of some GPUs of a host (one ``gpu.migLayouts[]`` entry).

    Checked with :func:`hybridgpu.mig.check_layout`: the mix must fit on ONE GPU.
    """

    gpus: Annotated[
        Literal["all"] | tuple[int, ...],
        PlainValidator(_parse_gpu_indices),
        WithJsonSchema({"oneOf": [{"const": "all"}, {"type": "array", "items": {"type": "integer", "minimum": 0}}]}),
    ] = Field(description='GPU indices (nvidia-smi index, from 0) this layout applies to, or `"all"`. Required.')
    layout: dict[str, StrictCount] = Field(
        min_length=1,
        description="MIG profile (nvidia-smi spelling, e.g. `3g.40gb`) -> instances on EACH of these GPUs. Required.",
    )

    def indices(self, count: int) -> tuple[int, ...]:
        """The GPU indices covered, given the host's GPU ``count``."""
        return tuple(range(count)) if self.gpus == "all" else tuple(self.gpus)


class HostGpu(Model):
    """The GPUs of a host (``gpu``)."""

    model: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="GPU model: a catalog key (`hybridgpu.catalog`), e.g. `H100-80GB`, `A100-80GB`. Required."
    )
    count: int = Field(strict=True, ge=1, le=64, description="Number of GPUs in the host. Required.")
    pci_ids: tuple[PciBusId, ...] = Field(
        default=(),
        description=(
            "PCI bus id of each GPU in index order, as `nvidia-smi --query-gpu=pci.bus_id --format=csv` prints "
            "them (e.g. `00000000:18:00.0`). Either none or exactly `count`. Default: none."
        ),
    )
    mig_layouts: tuple[MigLayoutSpec, ...] = Field(
        default=(),
        description="MIG layouts per GPU; GPUs covered by no entry keep MIG disabled. Default: none.",
    )


#: A Linux network interface name as ``ip link`` shows it (``ibp24s0``, ``enp41s0f0np0``): 1..15 characters
#: (``IFNAMSIZ`` 16 with the NUL), no ``/``, ``:`` or white space (Linux ``dev_valid_name``, net/core/dev.c).
IfName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,15}$")]
NicLinkType = Literal["infiniband", "ethernet"]
NicPurpose = Literal["compute", "storage"]


class HostNic(Model):
    """One network adapter port of a host (a ``network.nics[]`` entry): identity, link type, speed, RDMA.

    A NIC with ``purpose: compute`` whose link type matches the host's fabric (``infiniband``
    for ``fabric: infiniband``, ``ethernet`` for ``roce``) and that is RDMA-capable carries the
    fabric: the NicClusterPolicy's RDMA shared device plugin selects it by ``name``
    (:mod:`hybridgpu.render.network_operator`), and jobs name it in ``NCCL_IB_HCA``.
    Example (one of the eight compute ports of a DGX H100: ConnectX-7, NDR 400 Gb/s, NVIDIA DGX
    H100/H200 User Guide, "Network Ports", read 2026-11-24):
    ``{name: ibp24s0, rdmaDevice: mlx5_0, pciAddress: "0000:18:00.0", linkType: infiniband, speedGbps: 400, gpu: 0}``.
    """

    name: IfName | None = Field(
        default=None,
        description="Interface name (`ip link`), e.g. `ibp24s0`. Required for a NIC that carries the fabric (the RDMA shared "
        "device plugin selects by interface name). Default: none (then `pciAddress` is required).",
    )
    pci_address: PciBusId | None = Field(
        default=None, description="PCI address as `lspci -D` prints it, e.g. `0000:18:00.0`. Default: none (then `name` is required)."
    )
    rdma_device: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_]{1,63}$")] | None = Field(
        default=None,
        description="RDMA device name as `ibv_devices`/`ibdev2netdev` prints it, e.g. `mlx5_0`: what NCCL_IB_HCA lists. Default: none.",
    )
    link_type: NicLinkType = Field(description="`infiniband` or `ethernet` (the port's link layer, `ibstat`/`ibv_devinfo`). Required.")
    speed_gbps: int = Field(strict=True, ge=1, le=3200, description="Port speed in Gb/s, e.g. `400` (NDR InfiniBand, 400GbE). Required.")
    rdma: bool | None = Field(
        default=None,
        description="RDMA-capable (InfiniBand verbs or RoCE). Default: `true` for `infiniband` (an InfiniBand port always is), "
        "`false` for `ethernet` (set `true` for a RoCE-capable adapter such as ConnectX).",
    )
    purpose: NicPurpose = Field(
        default="compute",
        description="`compute` (GPU-to-GPU traffic: NCCL) or `storage` (the dataset storage network). Default: `compute`.",
    )
    gpu: int | None = Field(
        default=None, strict=True, ge=0, description="Index of the GPU behind the same PCIe switch (GPUDirect RDMA pairing, `nvidia-smi topo -m` PIX). Default: none."
    )
    numa_node: int | None = Field(default=None, strict=True, ge=0, description="NUMA node of the adapter. Default: none.")

    @model_validator(mode="after")
    def _identity(self) -> HostNic:
        if self.name is None and self.pci_address is None:
            raise ValueError("give the NIC a `name` (interface name, e.g. ibp24s0) or a `pciAddress` (e.g. 0000:18:00.0)")
        if self.link_type == "infiniband" and self.rdma is False:
            raise ValueError("an InfiniBand port is always RDMA-capable (verbs); remove `rdma: false` or set `linkType: ethernet`")
        return self

    @property
    def rdma_capable(self) -> bool:
        """``rdma`` with its default applied: True for InfiniBand unless said otherwise, False for Ethernet."""
        return self.rdma if self.rdma is not None else self.link_type == "infiniband"

    @property
    def label(self) -> str:
        """What issues call the NIC: its name, else its PCI address."""
        return self.name or self.pci_address or "?"


class RoceSettings(Model):
    """``network.roce``: the lossless/congestion settings of a RoCE fabric, configured by the operator outside Kubernetes.

    "RoCE relies on ECN and PFC to operate" (NVIDIA Cumulus Linux 5.14 user guide, "RDMA over
    Converged Ethernet - RoCE", read 2026-11-24): *lossless* mode enables PFC on switch priority 3
    plus ECN, *lossy* mode ECN only; RoCE is mapped to priority 3 by default. Kubernetes and the
    Network Operator configure hosts, never switches, so declaring what was configured is the
    operator's acknowledgement; with neither PFC nor ECN the inventory is refused (``roce-lossless``).
    The active RoCE hosts of one pool (one GPU model), and those under the same switches (one
    ``block``, else one ``rack``), must declare the same ``priority`` and ``pfc``
    (``roce-mixed-pool``, :mod:`hybridgpu.inventory.fabric`).
    """

    pfc: bool = Field(description="PFC is enabled for `priority` on the switch ports and NICs of these hosts. Required.")
    ecn: bool = Field(description="ECN marking (DCQCN congestion control) is enabled on the switches. Required.")
    priority: int = Field(default=3, strict=True, ge=0, le=7, description="The 802.1p priority RoCE traffic uses (and PFC protects). Default: 3.")


class HostNetwork(Model):
    """High-speed fabric of a host (``network``): the fabric, its NICs, and for RoCE the lossless settings."""

    fabric: Fabric = Field(default="none", description="`none`, `infiniband` or `roce` (RDMA over Converged Ethernet). Default: `none`.")
    notes: str = Field(default="", description="Free text, e.g. HCA models, ports, rails. Default: empty.")
    nics: tuple[HostNic, ...] = Field(
        default=(), description="Network adapter ports (name/PCI address, link type, speed, RDMA); see docs/multi-node.md. Default: none."
    )
    roce: RoceSettings | None = Field(
        default=None, description="For `fabric: roce`: the PFC/ECN settings the operator configured on the switches (required then). Default: none."
    )
    ofed: Literal["preinstalled", "operator"] = Field(
        default="preinstalled",
        description="Where the NIC driver stack (DOCA-OFED / MLNX_OFED) comes from on a fabric host: `preinstalled` on the host "
        "(DGX OS ships it) or `operator` (the Network Operator's DOCA driver container, NicClusterPolicy `ofedDriver`). "
        "One value for every fabric host. Default: `preinstalled`.",
    )

    def fabric_nics(self) -> tuple[HostNic, ...]:
        """The NICs that carry the fabric: compute, RDMA-capable, of the fabric's link type (none for ``fabric: none``)."""
        link = {"infiniband": "infiniband", "roce": "ethernet"}.get(self.fabric)
        return tuple(n for n in self.nics if n.purpose == "compute" and n.rdma_capable and n.link_type == link)


class Host(Model):
    """One machine of the site (a ``hosts[]`` entry of a ``HostList`` document)."""

    hostname: NodeName = Field(description="Host name = Kubernetes node name (DNS-1123 subdomain), unique in the site. Required.")
    addresses: HostAddresses = Field(description="IP addresses (management required; data, bmc optional). Required.")
    role: Role = Field(description="`control-plane` (runs etcd: stacked topology), `gpu-worker` or `cpu-worker`. Required.")
    ssh: SshAccess = Field(description="SSH access (user, port, keySecret). Required.")
    rack: Annotated[str, StringConstraints(min_length=1, max_length=63)] | None = Field(
        default=None,
        description="Rack, e.g. `r12`; becomes node label `hybridgpu.io/topology-rack` (a label value: letters, digits, `-_.`) and a "
        "level of the Kueue Topology. Default: none.",
    )
    block: Annotated[str, StringConstraints(min_length=1, max_length=63)] | None = Field(
        default=None,
        description="Block: the group of racks under one leaf/spine unit of the fabric, e.g. `b1`; becomes node label "
        "`hybridgpu.io/topology-block` and the broadest level of the Kueue Topology. Needs `rack`. Default: none.",
    )
    owner: OwnerName | None = Field(
        default=None, description="Team accountable for this host (overrides the Site's `metadata.owner`). Default: the site's owner."
    )
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, description="Node labels. Default: none.")
    taints: tuple[NodeTaint, ...] = Field(default=(), description="Node taints. Default: none.")
    state: HostState = Field(
        default="active",
        description=(
            "`active`, `cordoned` (joined but unschedulable) or `absent` (out for repair; kept in the inventory). "
            "Default: `active`."
        ),
    )
    gpu: HostGpu | None = Field(default=None, description="GPUs (required for role gpu-worker). Default: none.")
    power_kw: float | None = Field(
        default=None, strict=True, gt=0, le=MAX_HOST_KW, allow_inf_nan=False,
        description=f"Draw at full load in kW (at most {MAX_HOST_KW}), e.g. `10.2`; counts against the rack's `racks` budget. "
        "Default: GPU board power x count + the platform's draw from the GPU catalog (hybridgpu.inventory.power).",
    )
    cooling: Literal["air", "liquid"] | None = Field(
        default=None,
        description="How this server is cooled: `air` (fans) or `liquid` (cold plates fed with coolant by the rack's manifolds: "
        "only in a rack declared `cooling: liquid`). Default: the GPU catalog platform's `cooling` (hybridgpu.inventory.power).",
    )
    network: HostNetwork = Field(default_factory=HostNetwork, description="High-speed fabric. Default: `fabric: none`.")
    remediation: HostRemediation | None = Field(
        default=None,
        description="What this host allows of the site's `remediation` policy (its `reset` step). Default: the site's policy.",
    )

    @model_validator(mode="after")
    def _remediation_needs_gpus(self) -> Host:
        if self.remediation is not None and self.remediation.reset == "gpu-reset" and self.gpu is None:
            raise ValueError("`remediation.reset: gpu-reset` on a host without `gpu`; remove `remediation` or use `reset: none`/`reboot`")
        return self

    @property
    def gpu_count(self) -> int:
        """Number of GPUs (0 without a ``gpu`` section)."""
        return self.gpu.count if self.gpu is not None else 0


# --------------------------------------------------------------------------- the inventory


@dataclass(frozen=True)
class HostRecord:
    """A validated host and where it came from.

    Attributes:
        host: the host.
        file: the file it was read from.
        index: its position in its document's ``hosts`` list (0-based).
    """

    host: Host
    file: str
    index: int

    @property
    def label(self) -> str:
        """What issues call the host: its hostname."""
        return self.host.hostname


@dataclass(frozen=True)
class Inventory:
    """A validated site inventory: the site and its hosts, in file order.

    Built by :func:`hybridgpu.inventory.load_inventory` only after every rule passed, so
    hostnames and addresses are unique, addresses lie in their networks, there is an odd
    number of control-plane hosts (at least one active), and every GPU model and MIG
    layout is valid.

    Attributes:
        site: the site (cluster settings and networks).
        records: every host with the file it came from, in file order.
        site_file: the file holding the ``Site`` document.
        files: every file read, in reading order.
    """

    site: Site
    records: tuple[HostRecord, ...]
    site_file: str
    files: tuple[str, ...]
    _by_name: Mapping[str, HostRecord] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {r.host.hostname: r for r in self.records})

    @cached_property
    def hosts(self) -> tuple[Host, ...]:
        """Every host, in file order."""
        return tuple(r.host for r in self.records)

    @cached_property
    def control_planes(self) -> tuple[Host, ...]:
        """Hosts with role ``control-plane`` (in any state), in file order."""
        return tuple(h for h in self.hosts if h.role == "control-plane")

    @cached_property
    def gpu_workers(self) -> tuple[Host, ...]:
        """Hosts with role ``gpu-worker`` (in any state), in file order."""
        return tuple(h for h in self.hosts if h.role == "gpu-worker")

    @property
    def first_control_plane(self) -> Host:
        """The first ``active`` control-plane host in file order: where ``kubeadm init`` runs.

        A loaded inventory always has one (rule ``no-active-control-plane``).
        """
        return next(h for h in self.control_planes if h.state == "active")

    def active_hosts(self) -> tuple[Host, ...]:
        """Hosts whose ``state`` is ``active`` (not cordoned, not absent), in file order."""
        return tuple(h for h in self.hosts if h.state == "active")

    def host(self, hostname: str) -> Host:
        """The host called ``hostname``.

        Raises:
            KeyError: no such host.
        """
        return self._by_name[hostname].host

    def file_of(self, hostname: str) -> str:
        """The file that declares ``hostname``.

        Raises:
            KeyError: no such host.
        """
        return self._by_name[hostname].file

    @property
    def gpu_count(self) -> int:
        """Total GPUs over all hosts (any state)."""
        return sum(h.gpu_count for h in self.hosts)
