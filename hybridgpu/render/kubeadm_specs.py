"""The inputs of the kubeadm renderers (:mod:`hybridgpu.render.kubeadm`): :class:`ClusterSpec` and
:class:`NodeSpec`, and the Kubernetes rules for names, labels, taints, flags and versions they check (pure, no Pulumi).

Both dataclasses validate themselves on construction (``ValueError``, naming the node or field); the
inventory is mapped onto them in :mod:`hybridgpu.onprem`. Node labels go through kubelet
``--node-labels``, so a label the kubelet or the NodeRestriction admission plugin refuses is refused
here (:func:`check_labels`).

API facts (read 2026-11-22):

* Kubelet self-labels: ``staging/src/k8s.io/kubelet/pkg/apis/well_known_labels.go``
  (``IsKubeletLabel``), ``cmd/kubelet/app/options/options.go`` (``ValidateKubeletFlags``) and
  ``plugin/pkg/admission/noderestriction/admission.go`` (``getForbiddenLabels``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from hybridgpu.errors import Issue, IssuesError
from hybridgpu.k8s import (
    DNS1123_LABEL_FMT,
    KUBELET_ALLOWED_LABEL_NAMESPACES,
    KUBELET_ALLOWED_LABELS,
    KUBELET_RESTRICTED_LABEL_NAMESPACES,
    LABEL_NAME_FMT,
    ROLE_LABEL,
    is_kubelet_settable_label,
)

Role = Literal["control-plane", "gpu-worker", "cpu-worker"]
ROLES: tuple[str, ...] = ("control-plane", "gpu-worker", "cpu-worker")


class SpecError(IssuesError, ValueError):
    """A value of a :class:`ClusterSpec` or :class:`NodeSpec` that the kubeadm renderers refuse.

    Carries one :class:`~hybridgpu.errors.Issue` (code ``render``) on the spec, the node and the
    spec field; :meth:`located` puts it where the value was written (the inventory file, host and
    key path: :func:`hybridgpu.onprem.plan_onprem` does). A ``ValueError`` too.

    Args:
        spec: ``cluster`` or ``node``: which spec the field belongs to.
        host: the node's hostname (None for the cluster).
        field: the spec field at fault (e.g. ``labels``), or None.
        message: what is wrong; fix: how to fix it.
        suffix: the path inside the field, e.g. ``["nvidia.com/gpu"]`` or ``[1]``.

    Attributes:
        spec, host, field, message, fix, suffix: as given.
    """

    def __init__(self, spec: Literal["cluster", "node"], host: str | None, field: str | None, message: str, fix: str, suffix: str = ""):
        self.spec, self.host, self.field, self.message, self.fix, self.suffix = spec, host, field, message, fix, suffix
        super().__init__([self.located(f"kubeadm {spec} spec", host, {})])

    def head(self) -> str:
        return "the kubeadm configuration cannot be rendered:"

    def located(self, file: str, host: str | None, keys: Mapping[str, str]) -> Issue:
        """The issue where the value was written.

        Args:
            file: the file the spec's values come from.
            host: the host they belong to (None: the site).
            keys: spec field -> key path in ``file`` (e.g. ``advertise_address`` ->
                ``addresses.management``); a field not listed keeps its own name.
        """
        key = keys.get(self.field, self.field) + self.suffix if self.field else None
        return Issue.on_host(file, host, key, self.message, self.fix, "render")


@contextlib.contextmanager
def _refusing(spec: Literal["cluster", "node"], host: str | None, field: str, fix: str, suffix: str = "") -> Iterator[None]:
    """Turn the ``ValueError`` of a check inside the block into a :class:`SpecError` on ``field``."""
    try:
        yield
    except SpecError:
        raise
    except ValueError as exc:
        raise SpecError(spec, host, field, str(exc), fix, suffix) from None


# The grammar is hybridgpu.k8s's (apimachinery pkg/util/validation); \A...\Z: no trailing newline slips through.
_DNS1123_LABEL_RE = re.compile(rf"\A{DNS1123_LABEL_FMT}\Z")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"\A{DNS1123_LABEL_FMT}(\.{DNS1123_LABEL_FMT})*\Z")
_LABEL_NAME_RE = re.compile(rf"\A{LABEL_NAME_FMT}\Z")
_LABEL_VALUE_RE = re.compile(rf"\A({LABEL_NAME_FMT})?\Z")
_FLAG_NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9-]*\Z")
_FEATURE_GATE_RE = re.compile(r"\A[A-Z][A-Za-z0-9]*\Z")
_VERSION_RE = re.compile(r"\Av?(1)\.(\d+)\.(\d+)\Z")

TAINT_EFFECTS: tuple[str, ...] = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label key, or None (qualified name: optional DNS prefix / name)."""
    if not isinstance(key, str) or not key:
        return "label key must be a non-empty string"
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return f"label key {key!r} may contain only one '/'"
    if "/" in key and not prefix:
        return f"label key {key!r} has an empty prefix"
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix)):
        return f"label key prefix {prefix!r} must be a lowercase DNS subdomain (<= 253 chars)"
    if len(name) > 63 or not _LABEL_NAME_RE.match(name):
        return f"label name {name!r} must be <= 63 chars of [A-Za-z0-9-_.], starting and ending alphanumeric"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None."""
    if not isinstance(value, str):
        return "label value must be a string"
    if len(value) > 63 or not _LABEL_VALUE_RE.match(value):
        return f"label value {value!r} must be empty or <= 63 chars of [A-Za-z0-9-_.], starting and ending alphanumeric"
    return None


def label_value_from(text: str) -> str:
    """Turn free text (e.g. ``"A100 40GB"``) into a legal label value (``"A100-40GB"``)."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:63]
    value = re.sub(r"\A[^A-Za-z0-9]+|[^A-Za-z0-9]+\Z", "", value)
    return value


#: The fix of a node label the renderers refuse.
LABEL_FIX = f"use a valid label key and value that the kubelet may set on itself (e.g. under {ROLE_LABEL.split('/')[0]}/)"


def check_labels(labels: Mapping[str, str], where: str, host: str | None = None) -> None:
    """Check node labels as the kubelet and the NodeRestriction admission plugin will.

    Args:
        labels: label key -> value.
        where: how messages name the node, e.g. ``node 'gpu-01'``.
        host: the node's hostname, for the error.

    Raises:
        SpecError: a bad key or value, or a label the kubelet may not set (on ``labels["<key>"]``).
    """
    for key, value in labels.items():
        problem = label_key_problem(key) or label_value_problem(value)
        if problem:
            raise SpecError("node", host, "labels", f"{where}: {problem}", LABEL_FIX, f'["{key}"]')
        if not is_kubelet_settable_label(key):
            raise SpecError(
                "node",
                host,
                "labels",
                f"{where}: label {key!r} cannot be self-set by the kubelet ({'/'.join(KUBELET_RESTRICTED_LABEL_NAMESPACES)} "
                f"namespaces allow only {', '.join(ns + '/*' for ns in KUBELET_ALLOWED_LABEL_NAMESPACES)} and "
                f"{', '.join(sorted(KUBELET_ALLOWED_LABELS))}); "
                f"use e.g. {ROLE_LABEL} or set it later with kubectl",
                LABEL_FIX,
                f'["{key}"]',
            )


def _check_taints(taints: Sequence[tuple[str, str | None, str]], where: str, host: str | None = None) -> None:
    fix = f"write each taint as a valid key, an optional label-valued value and an effect ({', '.join(TAINT_EFFECTS)})"
    for i, taint in enumerate(taints):
        with _refusing("node", host, "taints", fix, f"[{i}]"):
            if not isinstance(taint, tuple | list) or len(taint) != 3:
                raise ValueError(f"{where}: a taint is (key, value, effect), got {taint!r}")
            key, value, effect = taint
            problem = label_key_problem(key)
            if problem:
                raise ValueError(f"{where}: taint {problem}")
            if value is not None:
                problem = label_value_problem(value)
                if problem:
                    raise ValueError(f"{where}: taint {problem}")
            if effect not in TAINT_EFFECTS:
                raise ValueError(f"{where}: taint effect {effect!r} must be one of {', '.join(TAINT_EFFECTS)}")


def split_endpoint(endpoint: str) -> tuple[str, int | None]:
    """``host[:port]`` (IPv6 as ``[addr]:port``) -> (host, port)."""
    if endpoint.startswith("["):
        host, sep, rest = endpoint[1:].partition("]")
        if not sep:
            raise ValueError(f"endpoint {endpoint!r}: missing ']'")
        if rest and not rest.startswith(":"):
            raise ValueError(f"endpoint {endpoint!r}: expected ':port' after ']'")
        port_text = rest[1:] if rest else ""
        ipaddress.IPv6Address(host)
    else:
        host, _, port_text = endpoint.partition(":")
        if ":" in port_text:
            raise ValueError(f"endpoint {endpoint!r}: write an IPv6 address as [addr]:port")
    port = None
    if port_text:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise ValueError(f"endpoint {endpoint!r}: port must be 1..65535")
        port = int(port_text)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if len(host) > 253 or not _DNS1123_SUBDOMAIN_RE.match(host):
            raise ValueError(f"endpoint {endpoint!r}: host must be an IP address or a lowercase DNS name") from None
    return host, port


def _check_extra_args(args: Mapping[str, str], where: str) -> None:
    for name, value in args.items():
        if not isinstance(name, str) or not _FLAG_NAME_RE.match(name):
            raise ValueError(f"{where}: flag name {name!r} must be written without dashes, e.g. 'audit-log-maxage'")
        if not isinstance(value, str):
            raise ValueError(f"{where}: value of {name!r} must be a string (got {type(value).__name__})")


# --------------------------------------------------------------------------- input dataclasses


@dataclass(frozen=True)
class ClusterSpec:
    """Cluster-wide settings of an on-prem kubeadm cluster.

    Attributes:
        name: cluster name (DNS label), ``ClusterConfiguration.clusterName``.
        kubernetes_version: ``1.MINOR.PATCH`` (a leading ``v`` is accepted); rendered ``v``-prefixed.
        control_plane_endpoint: stable ``host[:port]`` of the API server (VIP or DNS name) or
            None for a single control plane. Needed to join more control planes; kubeadm puts it
            in the API server certificate, so it cannot be added later without re-issuing certs.
        pod_subnet: pod CIDR (must match the CNI's pool); must not overlap ``service_subnet``.
        service_subnet: service CIDR.
        cni: CNI name (informational for the renderers; the CNI is installed separately).
        cgroup_driver: ``systemd`` (default, and what containerd is configured with) or ``cgroupfs``.
        api_server_extra_args: kube-apiserver flags (name without dashes -> value), merged over
            the defaults (``profiling=false`` and the audit flags).
        feature_gates: component feature gates (apiserver, controller-manager, scheduler, kubelet).
        kubeadm_feature_gates: kubeadm's own feature gates (``ClusterConfiguration.featureGates``).
        api_server_cert_sans: extra Subject Alternative Names of the API server certificate.
        audit_log: write an API server audit log (policy from :func:`audit_policy`).
        kubelet_server_tls_bootstrap: kubelet serving certificates from CSRs (``serverTLSBootstrap``).
            Default False: nothing in a kubeadm cluster approves ``kubernetes.io/kubelet-serving``
            CSRs (kube-controller-manager's approver handles only kubelet *client* CSRs:
            kubernetes/kubernetes ``pkg/controller/certificates/approver/sarapprove.go``,
            ``recognizers()`` lists ``isNodeClientCert`` and ``isSelfNodeClientCert`` only), so
            with True ``kubectl logs/exec/port-forward`` fail until an approver runs.
        protect_kernel_defaults: kubelet ``protectKernelDefaults`` (the bootstrap script then sets
            the sysctls in :data:`KUBELET_PROTECTED_SYSCTLS`).
        resolv_conf: kubelet ``resolvConf``; must exist on every node.
        disable_kube_proxy: skip kube-proxy (for a CNI that replaces it, e.g. Cilium).
    """

    name: str
    kubernetes_version: str = "1.35.2"
    control_plane_endpoint: str | None = None
    pod_subnet: str = "10.244.0.0/16"
    service_subnet: str = "10.96.0.0/12"
    cni: str = "calico"
    cgroup_driver: Literal["systemd", "cgroupfs"] = "systemd"
    api_server_extra_args: Mapping[str, str] = field(default_factory=dict)
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    kubeadm_feature_gates: Mapping[str, bool] = field(default_factory=dict)
    api_server_cert_sans: tuple[str, ...] = ()
    audit_log: bool = True
    kubelet_server_tls_bootstrap: bool = False
    protect_kernel_defaults: bool = False
    resolv_conf: str = "/run/systemd/resolve/resolv.conf"
    disable_kube_proxy: bool = False

    def __post_init__(self) -> None:
        """Raises :class:`SpecError` (a ``ValueError``) on the first value kubeadm would refuse."""
        where = f"cluster {self.name!r}"
        if not isinstance(self.name, str) or len(self.name) > 63 or not _DNS1123_LABEL_RE.match(self.name):
            raise self.refused("name", f"cluster name {self.name!r} must be a lowercase DNS label (<= 63 chars)", "use a lowercase DNS label")
        if not _VERSION_RE.match(self.kubernetes_version):
            raise self.refused(
                "kubernetes_version", f"{where}: kubernetes_version {self.kubernetes_version!r} must look like 1.35.2", "write MAJOR.MINOR.PATCH, e.g. 1.35.2"
            )
        if self.control_plane_endpoint is not None:
            with _refusing("cluster", None, "control_plane_endpoint", "write host[:port] with an IP address or a lowercase DNS name ([addr]:port for IPv6)"):
                split_endpoint(self.control_plane_endpoint)
        cidr_fix = "write a CIDR without host bits, e.g. 10.244.0.0/16"
        with _refusing("cluster", None, "pod_subnet", cidr_fix):
            pod = _network(self.pod_subnet, f"{where}: pod_subnet")
        with _refusing("cluster", None, "service_subnet", cidr_fix):
            svc = _network(self.service_subnet, f"{where}: service_subnet")
        if pod.version == svc.version and pod.overlaps(svc):
            raise self.refused("pod_subnet", f"{where}: pod_subnet {pod} overlaps service_subnet {svc}", "pick pod and service subnets that do not overlap")
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.cni or ""):
            raise self.refused("cni", f"{where}: cni {self.cni!r} must be a lowercase name such as calico, cilium or flannel", "name the CNI, e.g. cilium")
        if self.cgroup_driver not in ("systemd", "cgroupfs"):
            raise self.refused("cgroup_driver", f"{where}: cgroup_driver must be systemd or cgroupfs, got {self.cgroup_driver!r}", "use systemd or cgroupfs")
        with _refusing("cluster", None, "api_server_extra_args", "write flag names without leading dashes, with string values"):
            _check_extra_args(self.api_server_extra_args, f"{where}: api_server_extra_args")
        for gates, what in ((self.feature_gates, "feature_gates"), (self.kubeadm_feature_gates, "kubeadm_feature_gates")):
            for gate, enabled in gates.items():
                if not isinstance(gate, str) or not _FEATURE_GATE_RE.match(gate) or not isinstance(enabled, bool):
                    raise self.refused(
                        what, f"{where}: {what} must map CamelCase gate names to booleans, got {gate!r}: {enabled!r}", "map CamelCase gate names to true or false"
                    )
        for san in self.api_server_cert_sans:
            try:
                ipaddress.ip_address(san)
            except ValueError:
                if not _DNS1123_SUBDOMAIN_RE.match(san.removeprefix("*.")):
                    raise self.refused(
                        "api_server_cert_sans", f"{where}: certificate SAN {san!r} must be an IP address or DNS name", "list IP addresses or DNS names"
                    ) from None
        if not self.resolv_conf.startswith("/") or re.search(r"\s", self.resolv_conf):
            raise self.refused("resolv_conf", f"{where}: resolv_conf must be an absolute path without spaces", "give an absolute path without spaces")

    def refused(self, field: str, message: str, fix: str) -> SpecError:
        """The error for a cluster value the renderers refuse (``field``: the spec field at fault)."""
        return SpecError("cluster", None, field, message, fix)

    @property
    def version(self) -> str:
        """``1.35.2`` (without ``v``)."""
        return self.kubernetes_version.removeprefix("v")

    @property
    def minor(self) -> str:
        """``v1.35``: the pkgs.k8s.io repository of this version."""
        m = _VERSION_RE.match(self.kubernetes_version)
        assert m
        return f"v{m.group(1)}.{m.group(2)}"


def _network(text: str, where: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    try:
        return ipaddress.ip_network(text, strict=True)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where} {text!r} is not a CIDR ({exc})") from None


@dataclass(frozen=True)
class NodeSpec:
    """One host of the cluster.

    Attributes:
        hostname: Node name (lowercase DNS subdomain); ``nodeRegistration.name``.
        advertise_address: the node IP (kubelet ``node-ip``; control planes also advertise the
            API server on it).
        role: ``control-plane``, ``gpu-worker`` or ``cpu-worker``.
        labels: extra node labels (must be kubelet-settable, see the module docstring).
        taints: extra taints as ``(key, value or None, effect)``.
        gpu_model: GPU model name (gpu-workers), e.g. ``H100-80GB``; becomes a label value.
        gpu_count: GPUs in the host (>= 1 on gpu-workers, 0 elsewhere).
        mig_config: mig-parted layout name (``nvidia.com/mig.config`` label) or None.
    """

    hostname: str
    advertise_address: str
    role: Role
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[tuple[str, str | None, str]] = field(default_factory=list)
    gpu_model: str | None = None
    gpu_count: int = 0
    mig_config: str | None = None

    def __post_init__(self) -> None:
        """Raises :class:`SpecError` (a ``ValueError``) on the first value kubeadm or the kubelet would refuse."""
        where = f"node {self.hostname!r}"
        if not isinstance(self.hostname, str) or len(self.hostname) > 253 or not _DNS1123_SUBDOMAIN_RE.match(self.hostname):
            raise self.refused("hostname", f"{where}: hostname must be a lowercase DNS subdomain (<= 253 chars)", "use a lowercase DNS name")
        try:
            ipaddress.ip_address(self.advertise_address)
        except ValueError:
            raise self.refused(
                "advertise_address", f"{where}: advertise_address {self.advertise_address!r} is not an IP address", "give the node's IP address"
            ) from None
        if self.role not in ROLES:
            raise self.refused("role", f"{where}: role {self.role!r} must be one of {', '.join(ROLES)}", f"use one of {', '.join(ROLES)}")
        check_labels(self.labels, where, self.hostname)
        _check_taints(self.taints, where, self.hostname)
        if self.role == "gpu-worker":
            if not isinstance(self.gpu_count, int) or self.gpu_count < 1:
                raise self.refused("gpu_count", f"{where}: a gpu-worker needs gpu_count >= 1", "give the number of GPUs in the host (at least 1)")
            if self.gpu_model is not None and not label_value_from(self.gpu_model):
                raise self.refused("gpu_model", f"{where}: gpu_model {self.gpu_model!r} has no usable characters", "name the GPU model with letters and digits")
            if self.mig_config is not None:
                problem = label_value_problem(self.mig_config) if self.mig_config else "mig_config must not be empty"
                if problem:
                    raise self.refused("mig_config", f"{where}: {problem}", "check the host's MIG layouts")
        elif self.gpu_model is not None or self.gpu_count or self.mig_config is not None:
            field = "gpu_model" if self.gpu_model is not None else "gpu_count" if self.gpu_count else "mig_config"
            raise self.refused(field, f"{where}: gpu_model/gpu_count/mig_config apply only to gpu-workers", "make the host a gpu-worker, or remove its GPUs")

    def refused(self, field: str, message: str, fix: str, suffix: str = "") -> SpecError:
        """The error for a value of this node the renderers refuse (``field``: the spec field at fault)."""
        return SpecError("node", self.hostname if isinstance(self.hostname, str) else None, field, message, fix, suffix)
