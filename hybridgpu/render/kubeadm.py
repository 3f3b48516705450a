"""Render kubeadm v1beta4 configuration for an on-prem GPU cluster (pure, no Pulumi).

Creates, as plain dicts (plus :func:`to_yaml` for the multi-document file kubeadm reads):

* for the first control plane (:func:`init_config`): ``InitConfiguration``,
  ``ClusterConfiguration`` and ``KubeletConfiguration``, for ``kubeadm init --config F --upload-certs``;
* for further control planes (:func:`join_config_control_plane`) and workers
  (:func:`join_config_worker`): a ``JoinConfiguration`` for ``kubeadm join --config F``.

Inputs are the simple dataclasses :class:`ClusterSpec` and :class:`NodeSpec`; the inventory is
mapped onto them elsewhere. Both validate themselves on construction (``ValueError``).

Secrets are never rendered. Bootstrap tokens, certificate keys and CA public-key hashes appear
as placeholders such as ``${BOOTSTRAP_TOKEN}`` (see :data:`BOOTSTRAP_TOKEN`); the caller fills
them at apply time with :func:`substitute`, which checks each value's format and refuses
unknown or missing placeholders. A placeholder name tells its kind by prefix
(``BOOTSTRAP_TOKEN``, ``CERTIFICATE_KEY``, ``CA_CERT_HASH``), so per-pool names such as
``${BOOTSTRAP_TOKEN_GPU}`` work too. :func:`validate_kubeadm_docs` checks rendered (or
hand-written) documents: apiVersion/kind, known field names, list-form ``extraArgs`` /
``kubeletExtraArgs`` (the v1beta3 map form no longer unmarshals), pinned CA discovery.

Choices worth knowing:

* Control planes leave ``nodeRegistration.taints`` unset, so kubeadm applies its default
  ``node-role.kubernetes.io/control-plane:NoSchedule``; extra taints given for a control plane
  are added *after* that default (a set list replaces kubeadm's default). Workers always get an
  explicit list: on GPU workers the node's taints as written when one of them is an
  ``nvidia.com/gpu`` taint (any value, e.g. ``present``), else ``nvidia.com/gpu=true:NoSchedule``
  followed by the node's taints; the node's taints or ``[]`` (no taint) on CPU workers.
* Node labels go through kubelet ``--node-labels``. The kubelet refuses to start, and the
  NodeRestriction admission plugin refuses the update, for labels in the ``kubernetes.io`` /
  ``k8s.io`` namespaces other than ``kubelet.kubernetes.io/*``, ``node.kubernetes.io/*`` and a
  short allow-list (:data:`hybridgpu.k8s.KUBELET_ALLOWED_LABELS`), and for ``node-restriction.kubernetes.io/*``.
  So ``node-role.kubernetes.io/worker`` is refused here; label roles with ``hybridgpu.io/role``.
* ``ClusterSpec.feature_gates`` are *component* gates (kube-apiserver, controller-manager,
  scheduler ``--feature-gates`` and ``KubeletConfiguration.featureGates``);
  ``ClusterConfiguration.featureGates`` holds *kubeadm's own* gates
  (``ClusterSpec.kubeadm_feature_gates``). Mixing them up is a common mistake.
* ``serverTLSBootstrap`` is off by default (inventory ``cluster.kubeletServerTlsBootstrap``):
  with it on, kubelets request serving certificates through CSRs of signer
  ``kubernetes.io/kubelet-serving``, which kube-controller-manager does not approve, so
  ``kubectl logs/exec`` and metrics-server fail on a node until its CSR is approved (run a CSR
  approver or ``kubectl certificate approve``).
* ``KubeletConfiguration`` is cluster-wide (kubeadm uploads it to the ``kubelet-config``
  ConfigMap; joining nodes download it). ``resolvConf`` therefore must exist on every node:
  the default ``/run/systemd/resolve/resolv.conf`` suits Ubuntu (systemd-resolved, and what
  kubeadm itself picks there); set ``/etc/resolv.conf`` for hosts without systemd-resolved.
  The bootstrap script checks the file exists. ``protectKernelDefaults`` is off by default;
  when on, the bootstrap script sets the six sysctls the kubelet then insists on.
* The API server audit log (on by default) needs a policy file on the host before
  ``kubeadm init``; :mod:`hybridgpu.render.bootstrap` writes it on control planes
  (:func:`audit_policy`), and ``apiServer.extraVolumes`` mounts it.

API facts (read 2026-11-22):

* kubeadm v1beta4 ``cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go`` in kubernetes/kubernetes
  (stored snapshot at commit 13299357): InitConfiguration {bootstrapTokens, dryRun,
  nodeRegistration, localAPIEndpoint, certificateKey, skipPhases, patches, timeouts};
  ClusterConfiguration {etcd, networking, kubernetesVersion, controlPlaneEndpoint, apiServer,
  controllerManager, scheduler, dns, proxy, certificatesDir, imageRepository, featureGates,
  clusterName, encryptionAlgorithm, certificateValidityPeriod, caCertificateValidityPeriod};
  JoinConfiguration {dryRun, nodeRegistration, caCertPath, discovery, controlPlane, skipPhases,
  patches, timeouts}; NodeRegistrationOptions {name, criSocket, taints (no omitempty: nil =
  default control-plane taint, ``[]`` = none), kubeletExtraArgs []Arg, ignorePreflightErrors,
  imagePullPolicy, imagePullSerial}; ``Arg {name, value}``; ControlPlaneComponent {extraArgs
  []Arg, extraVolumes []HostPathMount, extraEnvs}; APIServer adds certSANs (its
  timeoutForControlPlane of early v1beta4 drafts is gone: use
  ``timeouts.controlPlaneComponentHealthCheck``); Timeouts {controlPlaneComponentHealthCheck,
  kubeletHealthCheck, kubernetesAPICall, etcdAPICall, tlsBootstrap, discovery,
  upgradeManifests}; BootstrapTokenDiscovery {token, apiServerEndpoint, caCertHashes,
  unsafeSkipCAVerification}; JoinControlPlane {localAPIEndpoint, certificateKey (hex AES key of
  32 bytes)}. Cross-checked with kubernetes/website
  ``content/en/docs/reference/config-api/kubeadm-config.v1beta4.md`` ("replace the existing
  string/string extra argument maps with structured extra arguments").
* Bootstrap token ``BootstrapTokenPattern = \\A([a-z0-9]{6})\\.([a-z0-9]{16})\\z``
  (``k8s.io/cluster-bootstrap`` token API); BootstrapToken {token, description, ttl, expires,
  usages, groups} (``cmd/kubeadm/app/apis/bootstraptoken/v1/types.go``).
* KubeletConfiguration ``kubelet.config.k8s.io/v1beta1`` field names from kubernetes/website
  ``content/en/docs/reference/config-api/kubelet-config.v1beta1.md`` (generated for v1.35) and
  ``staging/src/k8s.io/kubelet/config/v1beta1/types.go``; kubeadm's kubelet defaulting
  (``cmd/kubeadm/app/componentconfigs/kubelet.go``) forces ``rotateCertificates: true`` and
  picks ``/run/systemd/resolve/resolv.conf`` when systemd-resolved runs.
* Kubelet self-labels: ``staging/src/k8s.io/kubelet/pkg/apis/well_known_labels.go``
  (``IsKubeletLabel``), ``cmd/kubelet/app/options/options.go`` (``ValidateKubeletFlags``) and
  ``plugin/pkg/admission/noderestriction/admission.go`` (``getForbiddenLabels``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from hybridgpu.k8s import (
    CONTROL_PLANE_TAINT,
    GPU_COUNT_LABEL,
    GPU_MODEL_LABEL,
    GPU_PRESENT_LABEL,
    GPU_TAINT,
    KUBELET_ALLOWED_LABEL_NAMESPACES,
    KUBELET_ALLOWED_LABELS,
    KUBELET_RESTRICTED_LABEL_NAMESPACES,
    MIG_CONFIG_LABEL,
    ROLE_LABEL,
    is_kubelet_settable_label,
)

KUBEADM_API = "kubeadm.k8s.io/v1beta4"
KUBELET_API = "kubelet.config.k8s.io/v1beta1"
KUBEPROXY_API = "kubeproxy.config.k8s.io/v1alpha1"

#: containerd's CRI socket (kubeadm ``nodeRegistration.criSocket`` and kubelet ``containerRuntimeEndpoint``).
CRI_SOCKET = "unix:///run/containerd/containerd.sock"

Role = Literal["control-plane", "gpu-worker", "cpu-worker"]
ROLES: tuple[str, ...] = ("control-plane", "gpu-worker", "cpu-worker")

# --------------------------------------------------------------------------- secrets / placeholders

#: Placeholder names; each marks a secret that :func:`substitute` fills at apply time.
BOOTSTRAP_TOKEN = "BOOTSTRAP_TOKEN"
CERTIFICATE_KEY = "CERTIFICATE_KEY"
CA_CERT_HASH = "CA_CERT_HASH"

#: The placeholders as they appear in rendered text.
BOOTSTRAP_TOKEN_PLACEHOLDER = "${" + BOOTSTRAP_TOKEN + "}"
CERTIFICATE_KEY_PLACEHOLDER = "${" + CERTIFICATE_KEY + "}"
CA_CERT_HASH_PLACEHOLDER = "${" + CA_CERT_HASH + "}"

#: Bootstrap token format (``BootstrapTokenPattern`` of k8s.io/cluster-bootstrap).
TOKEN_RE = re.compile(r"\A[a-z0-9]{6}\.[a-z0-9]{16}\Z")
#: Certificate key: a 32-byte AES key, hex encoded (64 hex digits).
CERTIFICATE_KEY_RE = re.compile(r"\A[0-9a-f]{64}\Z")
#: CA public-key pin: ``sha256:`` + hex SHA-256 of the CA's SubjectPublicKeyInfo.
CA_CERT_HASH_RE = re.compile(r"\Asha256:[0-9a-f]{64}\Z")

_PLACEHOLDER_NAME = r"[A-Z][A-Z0-9_]*"
_PLACEHOLDER_RE = re.compile(r"\$\{(" + _PLACEHOLDER_NAME + r")\}")
#: Anything that looks like an attempted placeholder (to catch ``${lower}`` or ``${A-B}`` too).
_PLACEHOLDER_LIKE_RE = re.compile(r"\$\{([^}\s]*)\}")

#: Placeholder kinds by name prefix.
SECRET_KINDS: tuple[str, ...] = (BOOTSTRAP_TOKEN, CERTIFICATE_KEY, CA_CERT_HASH)


def placeholder(name: str) -> str:
    """``${NAME}`` for a placeholder name whose prefix is one of :data:`SECRET_KINDS`."""
    secret_kind(name)
    return "${" + name + "}"


def secret_kind(name: str) -> str:
    """The kind (one of :data:`SECRET_KINDS`) of a placeholder name, from its prefix.

    ``BOOTSTRAP_TOKEN``, ``BOOTSTRAP_TOKEN_GPU`` -> ``BOOTSTRAP_TOKEN``, and so on.

    Raises:
        ValueError: the name is malformed or has no known prefix.
    """
    if not re.fullmatch(_PLACEHOLDER_NAME, name):
        raise ValueError(f"placeholder name {name!r} must match {_PLACEHOLDER_NAME}")
    for kind in SECRET_KINDS:
        if name == kind or name.startswith(kind + "_"):
            return kind
    raise ValueError(f"unknown placeholder {name!r}: names must start with one of {', '.join(SECRET_KINDS)}")


def _check_placeholder(value: str, kind: str, what: str) -> str:
    """Make sure ``value`` is a placeholder of ``kind`` (and so never a real secret)."""
    m = _PLACEHOLDER_RE.fullmatch(value)
    if not m or secret_kind(m.group(1)) != kind:
        raise ValueError(
            f"{what} must be a placeholder like ${{{kind}}} (secrets are never rendered; fill them with substitute()), got {value!r}"
        )
    return value


def _normalize_secret(kind: str, name: str, value: str) -> str:
    """Check (and for CA hashes normalize) one secret value for :func:`substitute`."""
    if not isinstance(value, str):
        raise ValueError(f"value of ${{{name}}} must be a string")
    if kind == BOOTSTRAP_TOKEN:
        if not TOKEN_RE.match(value):
            raise ValueError(f"${{{name}}}: a bootstrap token must match [a-z0-9]{{6}}.[a-z0-9]{{16}}")
        return value
    if kind == CERTIFICATE_KEY:
        if not CERTIFICATE_KEY_RE.match(value):
            raise ValueError(f"${{{name}}}: a certificate key must be 64 lowercase hex digits (a 32-byte AES key)")
        return value
    # CA_CERT_HASH: accept bare hex or sha256:<hex>, either case; render sha256:<lowercase hex>.
    candidate = value.strip()
    if re.fullmatch(r"[0-9a-fA-F]{64}", candidate):
        candidate = "sha256:" + candidate
    if candidate.lower().startswith("sha256:"):
        candidate = "sha256:" + candidate[len("sha256:") :].lower()
    if not CA_CERT_HASH_RE.match(candidate):
        raise ValueError(f"${{{name}}}: a CA cert hash must be sha256:<64 hex digits> (the SPKI pin kubeadm prints)")
    return candidate


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Fill the secret placeholders of rendered text at apply time.

    Args:
        text: rendered text (e.g. :func:`to_yaml` output) with ``${NAME}`` placeholders.
        values: placeholder name (without ``${}``) -> secret value. Bootstrap tokens must match
            ``[a-z0-9]{6}.[a-z0-9]{16}``; certificate keys 64 lowercase hex digits; CA cert
            hashes ``sha256:<64 hex>`` (bare hex is accepted and prefixed).

    Returns:
        The text with every placeholder replaced.

    Raises:
        ValueError: an unknown placeholder (in ``text`` or ``values``), a malformed one, a
            placeholder without a value, or a value of the wrong format. Messages never
            contain the secret values.
    """
    for key in values:
        secret_kind(key)
    for m in _PLACEHOLDER_LIKE_RE.finditer(text):
        secret_kind(m.group(1))
    present = {m.group(1) for m in _PLACEHOLDER_RE.finditer(text)}
    missing = sorted(present - set(values))
    if missing:
        raise ValueError(f"no value for placeholder(s): {', '.join(missing)}")
    clean = {name: _normalize_secret(secret_kind(name), name, values[name]) for name in present}
    return _PLACEHOLDER_RE.sub(lambda m: clean[m.group(1)], text)


# --------------------------------------------------------------------------- validation helpers

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(rf"\A{_DNS_LABEL}\Z")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"\A{_DNS_LABEL}(\.{_DNS_LABEL})*\Z")
_LABEL_NAME_RE = re.compile(r"\A([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE_RE = re.compile(r"\A(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_FLAG_NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9-]*\Z")
_FEATURE_GATE_RE = re.compile(r"\A[A-Z][A-Za-z0-9]*\Z")
_VERSION_RE = re.compile(r"\Av?(1)\.(\d+)\.(\d+)\Z")

TAINT_EFFECTS: tuple[str, ...] = ("NoSchedule", "PreferNoSchedule", "NoExecute")

#: Where :mod:`hybridgpu.render.bootstrap` writes the API server audit policy on control planes.
AUDIT_POLICY_PATH = "/etc/kubernetes/audit/policy.yaml"
AUDIT_LOG_DIR = "/var/log/kubernetes/audit"

#: kubelet sysctls enforced under ``protectKernelDefaults`` (``setupKernelTunables`` in
#: ``pkg/kubelet/cm/container_manager_linux.go``; values from ``k8s.io/component-helpers`` sysctl).
KUBELET_PROTECTED_SYSCTLS: tuple[tuple[str, int], ...] = (
    ("vm.overcommit_memory", 1),
    ("vm.panic_on_oom", 0),
    ("kernel.panic", 10),
    ("kernel.panic_on_oops", 1),
    ("kernel.keys.root_maxkeys", 1000000),
    ("kernel.keys.root_maxbytes", 25000000),
)


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


def _check_labels(labels: Mapping[str, str], where: str) -> None:
    for key, value in labels.items():
        problem = label_key_problem(key) or label_value_problem(value)
        if problem:
            raise ValueError(f"{where}: {problem}")
        if not is_kubelet_settable_label(key):
            raise ValueError(
                f"{where}: label {key!r} cannot be self-set by the kubelet ({'/'.join(KUBELET_RESTRICTED_LABEL_NAMESPACES)} "
                f"namespaces allow only {', '.join(ns + '/*' for ns in KUBELET_ALLOWED_LABEL_NAMESPACES)} and "
                f"{', '.join(sorted(KUBELET_ALLOWED_LABELS))}); "
                f"use e.g. {ROLE_LABEL} or set it later with kubectl"
            )


def _check_taints(taints: Sequence[tuple[str, str | None, str]], where: str) -> None:
    for taint in taints:
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


def _split_endpoint(endpoint: str) -> tuple[str, int | None]:
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
        where = f"cluster {self.name!r}"
        if not isinstance(self.name, str) or len(self.name) > 63 or not _DNS1123_LABEL_RE.match(self.name):
            raise ValueError(f"cluster name {self.name!r} must be a lowercase DNS label (<= 63 chars)")
        if not _VERSION_RE.match(self.kubernetes_version):
            raise ValueError(f"{where}: kubernetes_version {self.kubernetes_version!r} must look like 1.35.2")
        if self.control_plane_endpoint is not None:
            _split_endpoint(self.control_plane_endpoint)
        pod = _network(self.pod_subnet, f"{where}: pod_subnet")
        svc = _network(self.service_subnet, f"{where}: service_subnet")
        if pod.version == svc.version and pod.overlaps(svc):  # type: ignore[arg-type]
            raise ValueError(f"{where}: pod_subnet {pod} overlaps service_subnet {svc}")
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.cni or ""):
            raise ValueError(f"{where}: cni {self.cni!r} must be a lowercase name such as calico, cilium or flannel")
        if self.cgroup_driver not in ("systemd", "cgroupfs"):
            raise ValueError(f"{where}: cgroup_driver must be systemd or cgroupfs, got {self.cgroup_driver!r}")
        _check_extra_args(self.api_server_extra_args, f"{where}: api_server_extra_args")
        for gates, what in ((self.feature_gates, "feature_gates"), (self.kubeadm_feature_gates, "kubeadm_feature_gates")):
            for gate, enabled in gates.items():
                if not isinstance(gate, str) or not _FEATURE_GATE_RE.match(gate) or not isinstance(enabled, bool):
                    raise ValueError(f"{where}: {what} must map CamelCase gate names to booleans, got {gate!r}: {enabled!r}")
        for san in self.api_server_cert_sans:
            try:
                ipaddress.ip_address(san)
            except ValueError:
                if not _DNS1123_SUBDOMAIN_RE.match(san.removeprefix("*.")):
                    raise ValueError(f"{where}: certificate SAN {san!r} must be an IP address or DNS name") from None
        if not self.resolv_conf.startswith("/") or re.search(r"\s", self.resolv_conf):
            raise ValueError(f"{where}: resolv_conf must be an absolute path without spaces")

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
        where = f"node {self.hostname!r}"
        if not isinstance(self.hostname, str) or len(self.hostname) > 253 or not _DNS1123_SUBDOMAIN_RE.match(self.hostname):
            raise ValueError(f"{where}: hostname must be a lowercase DNS subdomain (<= 253 chars)")
        try:
            ipaddress.ip_address(self.advertise_address)
        except ValueError:
            raise ValueError(f"{where}: advertise_address {self.advertise_address!r} is not an IP address") from None
        if self.role not in ROLES:
            raise ValueError(f"{where}: role {self.role!r} must be one of {', '.join(ROLES)}")
        _check_labels(self.labels, where)
        _check_taints(self.taints, where)
        if self.role == "gpu-worker":
            if not isinstance(self.gpu_count, int) or self.gpu_count < 1:
                raise ValueError(f"{where}: a gpu-worker needs gpu_count >= 1")
            if self.gpu_model is not None and not label_value_from(self.gpu_model):
                raise ValueError(f"{where}: gpu_model {self.gpu_model!r} has no usable characters")
            if self.mig_config is not None:
                problem = label_value_problem(self.mig_config) if self.mig_config else "mig_config must not be empty"
                if problem:
                    raise ValueError(f"{where}: {problem}")
        elif self.gpu_model is not None or self.gpu_count or self.mig_config is not None:
            raise ValueError(f"{where}: gpu_model/gpu_count/mig_config apply only to gpu-workers")


# --------------------------------------------------------------------------- rendering helpers


def args_list(args: Mapping[str, str]) -> list[dict[str, str]]:
    """A flag map as the v1beta4 list of ``{name, value}`` (order kept)."""
    return [{"name": name, "value": value} for name, value in args.items()]


def _gates_flag(gates: Mapping[str, bool]) -> str:
    return ",".join(f"{gate}={'true' if on else 'false'}" for gate, on in sorted(gates.items()))


def _taint(key: str, value: str | None, effect: str) -> dict[str, str]:
    taint = {"key": key}
    if value:
        taint["value"] = value
    taint["effect"] = effect
    return taint


def node_labels(node: NodeSpec) -> dict[str, str]:
    """Labels a node registers with: role, GPU labels (gpu-workers), then the node's own labels."""
    labels: dict[str, str] = {ROLE_LABEL: node.role}
    if node.role == "gpu-worker":
        labels[GPU_PRESENT_LABEL] = "true"
        labels[GPU_COUNT_LABEL] = str(node.gpu_count)
        if node.gpu_model:
            labels[GPU_MODEL_LABEL] = label_value_from(node.gpu_model)
        if node.mig_config:
            labels[MIG_CONFIG_LABEL] = node.mig_config
    labels.update(node.labels)
    _check_labels(labels, f"node {node.hostname!r}")
    return labels


def node_taints(node: NodeSpec) -> list[dict[str, str]] | None:
    """``nodeRegistration.taints``: None (kubeadm default) for a plain control plane, else a list."""
    extra = [_taint(*t) for t in node.taints]
    if node.role == "control-plane":
        if not extra:
            return None
        default = _taint(*CONTROL_PLANE_TAINT)
        return ([] if any(t["key"] == default["key"] for t in extra) else [default]) + extra
    if node.role == "gpu-worker":
        # The operator's own nvidia.com/gpu taint is kept as written (value and effect, issue 17);
        # the default only fills in when there is none. The inventory refuses NoExecute for it
        # (rule gpu-taint: it would evict the GPU Operator's operands).
        if any(t["key"] == GPU_TAINT.key for t in extra):
            return extra
        return [_taint(*GPU_TAINT), *extra]
    return extra


def _node_registration(node: NodeSpec) -> dict[str, Any]:
    labels = node_labels(node)
    kubelet_args = {
        "node-ip": node.advertise_address,
        "node-labels": ",".join(f"{k}={v}" for k, v in labels.items()),
    }
    registration: dict[str, Any] = {
        "name": node.hostname,
        "criSocket": CRI_SOCKET,
        "kubeletExtraArgs": args_list(kubelet_args),
        "imagePullPolicy": "IfNotPresent",
    }
    taints = node_taints(node)
    if taints is not None:
        registration["taints"] = taints
    return registration


def _local_endpoint(node: NodeSpec) -> dict[str, Any]:
    return {"advertiseAddress": node.advertise_address, "bindPort": 6443}


def _check_node_in_cluster(cluster: ClusterSpec, node: NodeSpec) -> None:
    ip = ipaddress.ip_address(node.advertise_address)
    for cidr, what in ((cluster.pod_subnet, "pod_subnet"), (cluster.service_subnet, "service_subnet")):
        if ip in ipaddress.ip_network(cidr):
            raise ValueError(f"node {node.hostname!r}: advertise_address {ip} lies inside the cluster {what} {cidr}")


#: Timeouts of ``kubeadm init`` / ``join`` (v1beta4 ``timeouts``; defaults 4m/4m/5m/5m). GPU hosts
#: with large images and slow first starts get a little more headroom.
INIT_TIMEOUTS = {"controlPlaneComponentHealthCheck": "5m0s", "kubeletHealthCheck": "5m0s"}
JOIN_TIMEOUTS = {"controlPlaneComponentHealthCheck": "5m0s", "kubeletHealthCheck": "5m0s", "discovery": "5m0s", "tlsBootstrap": "5m0s"}

#: Bootstrap token lifetime (kubeadm's default): long enough to join a rack, short enough to expire.
TOKEN_TTL = "24h0m0s"


def api_server_args(cluster: ClusterSpec) -> dict[str, str]:
    """kube-apiserver flags: hardening defaults, audit log, feature gates, then the cluster's own."""
    args: dict[str, str] = {"profiling": "false"}
    if cluster.audit_log:
        args.update(
            {
                "audit-policy-file": AUDIT_POLICY_PATH,
                "audit-log-path": f"{AUDIT_LOG_DIR}/audit.log",
                "audit-log-maxage": "30",
                "audit-log-maxbackup": "10",
                "audit-log-maxsize": "100",
            }
        )
    if cluster.feature_gates:
        args["feature-gates"] = _gates_flag(cluster.feature_gates)
    args.update(cluster.api_server_extra_args)
    return args


def audit_policy() -> dict[str, Any]:
    """The ``audit.k8s.io/v1`` Policy written to :data:`AUDIT_POLICY_PATH` on control planes.

    Metadata only (never request or response bodies, so Secrets never reach the log), health
    probes and the kube-proxy / node endpoint watches skipped, RequestReceived stage omitted.
    """
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"],
        "rules": [
            {"level": "None", "nonResourceURLs": ["/healthz*", "/livez*", "/readyz*", "/version"]},
            {
                "level": "None",
                "users": ["system:kube-proxy"],
                "verbs": ["watch"],
                "resources": [{"group": "", "resources": ["endpoints", "services", "services/status"]}],
            },
            {"level": "None", "userGroups": ["system:nodes"], "verbs": ["get"], "resources": [{"group": "", "resources": ["nodes", "nodes/status"]}]},
            {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}], "verbs": ["get", "update", "watch"]},
            {"level": "None", "resources": [{"group": "", "resources": ["events"]}]},
            {"level": "Metadata"},
        ],
    }


def cluster_configuration(cluster: ClusterSpec) -> dict[str, Any]:
    """The ``ClusterConfiguration`` document."""
    api_server: dict[str, Any] = {"extraArgs": args_list(api_server_args(cluster))}
    if cluster.audit_log:
        api_server["extraVolumes"] = [
            {"name": "audit-policy", "hostPath": AUDIT_POLICY_PATH, "mountPath": AUDIT_POLICY_PATH, "readOnly": True, "pathType": "File"},
            {"name": "audit-logs", "hostPath": AUDIT_LOG_DIR, "mountPath": AUDIT_LOG_DIR, "readOnly": False, "pathType": "DirectoryOrCreate"},
        ]
    if cluster.api_server_cert_sans:
        api_server["certSANs"] = list(cluster.api_server_cert_sans)
    controller_manager_args = {"profiling": "false"}
    scheduler_args: dict[str, str] = {}
    if cluster.feature_gates:
        controller_manager_args["feature-gates"] = _gates_flag(cluster.feature_gates)
        scheduler_args["feature-gates"] = _gates_flag(cluster.feature_gates)
    scheduler: dict[str, Any] = {"extraArgs": args_list(scheduler_args)} if scheduler_args else {}
    doc: dict[str, Any] = {
        "apiVersion": KUBEADM_API,
        "kind": "ClusterConfiguration",
        "clusterName": cluster.name,
        "kubernetesVersion": f"v{cluster.version}",
    }
    if cluster.control_plane_endpoint:
        doc["controlPlaneEndpoint"] = cluster.control_plane_endpoint
    doc.update(
        {
            "networking": {"podSubnet": cluster.pod_subnet, "serviceSubnet": cluster.service_subnet, "dnsDomain": "cluster.local"},
            "etcd": {"local": {"dataDir": "/var/lib/etcd"}},
            "apiServer": api_server,
            "controllerManager": {"extraArgs": args_list(controller_manager_args)},
            "scheduler": scheduler,
        }
    )
    if cluster.disable_kube_proxy:
        doc["proxy"] = {"disabled": True}
    if cluster.kubeadm_feature_gates:
        doc["featureGates"] = dict(sorted(cluster.kubeadm_feature_gates.items()))
    return doc


def kubelet_configuration(cluster: ClusterSpec) -> dict[str, Any]:
    """The cluster-wide ``KubeletConfiguration`` document (uploaded to the ``kubelet-config`` ConfigMap)."""
    doc: dict[str, Any] = {
        "apiVersion": KUBELET_API,
        "kind": "KubeletConfiguration",
        "cgroupDriver": cluster.cgroup_driver,
        "containerRuntimeEndpoint": CRI_SOCKET,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True}},
        "authorization": {"mode": "Webhook"},
        "readOnlyPort": 0,
        "rotateCertificates": True,
        "serverTLSBootstrap": cluster.kubelet_server_tls_bootstrap,
        "tlsMinVersion": "VersionTLS12",
        "resolvConf": cluster.resolv_conf,
        "protectKernelDefaults": cluster.protect_kernel_defaults,
        # Graceful node shutdown: give training pods a chance to checkpoint on a host reboot.
        "shutdownGracePeriod": "60s",
        "shutdownGracePeriodCriticalPods": "20s",
    }
    if cluster.feature_gates:
        doc["featureGates"] = dict(sorted(cluster.feature_gates.items()))
    return doc


# --------------------------------------------------------------------------- public renderers


def init_config(
    cluster: ClusterSpec,
    node: NodeSpec,
    *,
    token_placeholder: str = BOOTSTRAP_TOKEN_PLACEHOLDER,
    certificate_key_placeholder: str = CERTIFICATE_KEY_PLACEHOLDER,
) -> list[dict[str, Any]]:
    """Documents for ``kubeadm init --config F --upload-certs`` on the first control plane.

    Args:
        cluster: the cluster.
        node: the first control-plane node.
        token_placeholder: placeholder of the bootstrap token the other nodes join with.
        certificate_key_placeholder: placeholder of the key that encrypts the uploaded
            control-plane certificates (``--upload-certs``).

    Returns:
        ``[InitConfiguration, ClusterConfiguration, KubeletConfiguration]``.

    Raises:
        ValueError: the node is not a control plane, a placeholder is not a placeholder of
            the right kind, or the node address lies in a cluster subnet.
    """
    if node.role != "control-plane":
        raise ValueError(f"node {node.hostname!r}: kubeadm init runs on a control-plane node, not a {node.role}")
    _check_placeholder(token_placeholder, BOOTSTRAP_TOKEN, "token_placeholder")
    _check_placeholder(certificate_key_placeholder, CERTIFICATE_KEY, "certificate_key_placeholder")
    _check_node_in_cluster(cluster, node)
    init: dict[str, Any] = {
        "apiVersion": KUBEADM_API,
        "kind": "InitConfiguration",
        "bootstrapTokens": [
            {
                "token": token_placeholder,
                "description": f"hybridgpu join token for cluster {cluster.name}",
                "ttl": TOKEN_TTL,
                "usages": ["signing", "authentication"],
                "groups": ["system:bootstrappers:kubeadm:default-node-token"],
            }
        ],
        "nodeRegistration": _node_registration(node),
        "localAPIEndpoint": _local_endpoint(node),
        "certificateKey": certificate_key_placeholder,
        "timeouts": dict(INIT_TIMEOUTS),
    }
    if cluster.disable_kube_proxy:
        init["skipPhases"] = ["addon/kube-proxy"]
    return [init, cluster_configuration(cluster), kubelet_configuration(cluster)]


def _discovery(endpoint: str, token_placeholder: str, ca_cert_hash_placeholder: str) -> dict[str, Any]:
    _check_placeholder(token_placeholder, BOOTSTRAP_TOKEN, "token_placeholder")
    _check_placeholder(ca_cert_hash_placeholder, CA_CERT_HASH, "ca_cert_hash_placeholder")
    _split_endpoint(endpoint)
    return {
        # Never unsafeSkipCAVerification: the CA pin is what stops a rogue API server from
        # handing the joining node a fake cluster.
        "bootstrapToken": {"apiServerEndpoint": endpoint, "token": token_placeholder, "caCertHashes": [ca_cert_hash_placeholder]},
    }


def _join_endpoint(cluster: ClusterSpec, api_server_endpoint: str | None) -> str:
    endpoint = api_server_endpoint or cluster.control_plane_endpoint
    if not endpoint:
        raise ValueError(
            f"cluster {cluster.name!r}: joining needs an API server endpoint: set control_plane_endpoint or pass api_server_endpoint"
        )
    _host, port = _split_endpoint(endpoint)
    return endpoint if port is not None else f"{endpoint}:6443"


def join_config_control_plane(
    cluster: ClusterSpec,
    node: NodeSpec,
    *,
    token_placeholder: str = BOOTSTRAP_TOKEN_PLACEHOLDER,
    certificate_key_placeholder: str = CERTIFICATE_KEY_PLACEHOLDER,
    ca_cert_hash_placeholder: str = CA_CERT_HASH_PLACEHOLDER,
) -> list[dict[str, Any]]:
    """``JoinConfiguration`` for ``kubeadm join --config F`` on a further control plane.

    Raises:
        ValueError: the node is not a control plane, the cluster has no
            ``control_plane_endpoint`` (kubeadm refuses to add a control plane without one), or
            a placeholder is wrong.
    """
    if node.role != "control-plane":
        raise ValueError(f"node {node.hostname!r}: use join_config_worker for a {node.role}")
    if not cluster.control_plane_endpoint:
        raise ValueError(
            f"cluster {cluster.name!r}: more than one control plane needs control_plane_endpoint (a VIP or DNS name in front of the API servers)"
        )
    _check_placeholder(certificate_key_placeholder, CERTIFICATE_KEY, "certificate_key_placeholder")
    _check_node_in_cluster(cluster, node)
    join = {
        "apiVersion": KUBEADM_API,
        "kind": "JoinConfiguration",
        "nodeRegistration": _node_registration(node),
        "discovery": _discovery(_join_endpoint(cluster, None), token_placeholder, ca_cert_hash_placeholder),
        "controlPlane": {"localAPIEndpoint": _local_endpoint(node), "certificateKey": certificate_key_placeholder},
        "timeouts": dict(JOIN_TIMEOUTS),
    }
    return [join]


def join_config_worker(
    cluster: ClusterSpec,
    node: NodeSpec,
    *,
    token_placeholder: str = BOOTSTRAP_TOKEN_PLACEHOLDER,
    ca_cert_hash_placeholder: str = CA_CERT_HASH_PLACEHOLDER,
    api_server_endpoint: str | None = None,
) -> list[dict[str, Any]]:
    """``JoinConfiguration`` for ``kubeadm join --config F`` on a GPU or CPU worker.

    Args:
        api_server_endpoint: ``host[:port]`` to discover the cluster from; defaults to the
            cluster's ``control_plane_endpoint`` (required when that is None).

    Raises:
        ValueError: the node is a control plane, no endpoint is known, or a placeholder is wrong.
    """
    if node.role == "control-plane":
        raise ValueError(f"node {node.hostname!r}: use join_config_control_plane for a control plane")
    _check_node_in_cluster(cluster, node)
    join = {
        "apiVersion": KUBEADM_API,
        "kind": "JoinConfiguration",
        "nodeRegistration": _node_registration(node),
        "discovery": _discovery(_join_endpoint(cluster, api_server_endpoint), token_placeholder, ca_cert_hash_placeholder),
        "timeouts": {k: v for k, v in JOIN_TIMEOUTS.items() if k != "controlPlaneComponentHealthCheck"},
    }
    return [join]


# --------------------------------------------------------------------------- YAML


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Block-style YAML without anchors/aliases (shared sub-objects are written out in full).

    Built on libyaml's emitter when PyYAML has it (several times faster; same output), else
    PyYAML's pure-Python one.

    Strings holding a placeholder are double-quoted, so whatever :func:`substitute` puts there
    stays a string (an all-digit token or key would otherwise read as a number).
    """

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if "${" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def to_yaml(docs: Iterable[Mapping[str, Any]]) -> str:
    """Multi-document YAML (``---`` before each document), keys in insertion order."""
    return yaml.dump_all(
        [dict(d) for d in docs], Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=True, width=4096
    )


# --------------------------------------------------------------------------- document validation

#: Known fields per (apiVersion, kind) and per nested object (from the sources in the module docstring).
_KUBEADM_TOP: dict[str, frozenset[str]] = {
    "InitConfiguration": frozenset(
        {"apiVersion", "kind", "bootstrapTokens", "dryRun", "nodeRegistration", "localAPIEndpoint", "certificateKey", "skipPhases", "patches", "timeouts"}
    ),
    "ClusterConfiguration": frozenset(
        {
            "apiVersion", "kind", "etcd", "networking", "kubernetesVersion", "controlPlaneEndpoint", "apiServer",
            "controllerManager", "scheduler", "dns", "proxy", "certificatesDir", "imageRepository", "featureGates",
            "clusterName", "encryptionAlgorithm", "certificateValidityPeriod", "caCertificateValidityPeriod",
        }
    ),  # fmt: skip
    "JoinConfiguration": frozenset(
        {"apiVersion", "kind", "dryRun", "nodeRegistration", "caCertPath", "discovery", "controlPlane", "skipPhases", "patches", "timeouts"}
    ),
    "ResetConfiguration": frozenset(
        {"apiVersion", "kind", "cleanupTmpDir", "certificatesDir", "criSocket", "dryRun", "force", "ignorePreflightErrors", "skipPhases", "unmountFlags", "timeouts"}
    ),
}
_NESTED: dict[str, frozenset[str]] = {
    "nodeRegistration": frozenset({"name", "criSocket", "taints", "kubeletExtraArgs", "ignorePreflightErrors", "imagePullPolicy", "imagePullSerial"}),
    "localAPIEndpoint": frozenset({"advertiseAddress", "bindPort"}),
    "bootstrapTokens[]": frozenset({"token", "description", "ttl", "expires", "usages", "groups"}),
    "timeouts": frozenset(
        {"controlPlaneComponentHealthCheck", "kubeletHealthCheck", "kubernetesAPICall", "etcdAPICall", "tlsBootstrap", "discovery", "upgradeManifests"}
    ),
    "patches": frozenset({"directory"}),
    "networking": frozenset({"serviceSubnet", "podSubnet", "dnsDomain"}),
    "etcd": frozenset({"local", "external"}),
    "etcd.local": frozenset({"imageRepository", "imageTag", "dataDir", "extraArgs", "extraEnvs", "serverCertSANs", "peerCertSANs"}),
    "apiServer": frozenset({"extraArgs", "extraVolumes", "extraEnvs", "certSANs"}),
    "controllerManager": frozenset({"extraArgs", "extraVolumes", "extraEnvs"}),
    "scheduler": frozenset({"extraArgs", "extraVolumes", "extraEnvs"}),
    "extraVolumes[]": frozenset({"name", "hostPath", "mountPath", "readOnly", "pathType"}),
    "dns": frozenset({"imageRepository", "imageTag", "disabled"}),
    "proxy": frozenset({"disabled"}),
    "discovery": frozenset({"bootstrapToken", "file", "tlsBootstrapToken"}),
    "discovery.bootstrapToken": frozenset({"token", "apiServerEndpoint", "caCertHashes", "unsafeSkipCAVerification"}),
    "controlPlane": frozenset({"localAPIEndpoint", "certificateKey"}),
    "taints[]": frozenset({"key", "value", "effect", "timeAdded"}),
}

#: KubeletConfiguration fields (kubelet-config.v1beta1 reference for v1.35).
KUBELET_CONFIGURATION_FIELDS: frozenset[str] = frozenset(
    {
        "apiVersion", "kind", "enableServer", "staticPodPath", "podLogsDir", "syncFrequency", "fileCheckFrequency",
        "httpCheckFrequency", "staticPodURL", "staticPodURLHeader", "address", "port", "readOnlyPort", "tlsCertFile",
        "tlsPrivateKeyFile", "tlsCipherSuites", "tlsMinVersion", "rotateCertificates", "serverTLSBootstrap",
        "authentication", "authorization", "registryPullQPS", "registryBurst", "imagePullCredentialsVerificationPolicy",
        "preloadedImagesVerificationAllowlist", "eventRecordQPS", "eventBurst", "enableDebuggingHandlers",
        "enableContentionProfiling", "healthzPort", "healthzBindAddress", "oomScoreAdj", "clusterDomain", "clusterDNS",
        "streamingConnectionIdleTimeout", "nodeStatusUpdateFrequency", "nodeStatusReportFrequency",
        "nodeLeaseDurationSeconds", "imageMinimumGCAge", "imageMaximumGCAge", "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent", "volumeStatsAggPeriod", "kubeletCgroups", "systemCgroups", "cgroupRoot",
        "cgroupsPerQOS", "cgroupDriver", "cpuManagerPolicy", "singleProcessOOMKill", "cpuManagerPolicyOptions",
        "cpuManagerReconcilePeriod", "memoryManagerPolicy", "topologyManagerPolicy", "topologyManagerScope",
        "topologyManagerPolicyOptions", "qosReserved", "runtimeRequestTimeout", "hairpinMode", "maxPods", "podCIDR",
        "podPidsLimit", "resolvConf", "runOnce", "cpuCFSQuota", "cpuCFSQuotaPeriod", "nodeStatusMaxImages",
        "maxOpenFiles", "contentType", "kubeAPIQPS", "kubeAPIBurst", "serializeImagePulls", "maxParallelImagePulls",
        "evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionPressureTransitionPeriod",
        "evictionMaxPodGracePeriod", "evictionMinimumReclaim", "mergeDefaultEvictionSettings", "podsPerCore",
        "enableControllerAttachDetach", "protectKernelDefaults", "makeIPTablesUtilChains", "iptablesMasqueradeBit",
        "iptablesDropBit", "featureGates", "failSwapOn", "memorySwap", "containerLogMaxSize", "containerLogMaxFiles",
        "containerLogMaxWorkers", "containerLogMonitorInterval", "configMapAndSecretChangeDetectionStrategy",
        "systemReserved", "kubeReserved", "reservedSystemCPUs", "showHiddenMetricsForVersion", "systemReservedCgroup",
        "kubeReservedCgroup", "enforceNodeAllocatable", "allowedUnsafeSysctls", "volumePluginDir", "providerID",
        "kernelMemcgNotification", "logging", "enableSystemLogHandler", "enableSystemLogQuery", "shutdownGracePeriod",
        "shutdownGracePeriodCriticalPods", "shutdownGracePeriodByPodPriority", "crashLoopBackOff", "reservedMemory",
        "enableProfilingHandler", "enableDebugFlagsHandler", "seccompDefault", "memoryThrottlingFactor",
        "registerWithTaints", "registerNode", "tracing", "localStorageCapacityIsolation", "containerRuntimeEndpoint",
        "imageServiceEndpoint", "failCgroupV1", "userNamespaces",
    }
)  # fmt: skip

_ARG_LIST_KEYS = ("extraArgs", "kubeletExtraArgs")


def _unknown(obj: Any, known: frozenset[str], path: str, problems: list[str]) -> None:
    if not isinstance(obj, Mapping):
        problems.append(f"{path}: must be a mapping, got {type(obj).__name__}")
        return
    for key in obj:
        if key not in known:
            problems.append(f"{path}.{key}: unknown field")


def _check_arg_lists(obj: Any, path: str, problems: list[str]) -> None:
    """Every ``extraArgs`` / ``kubeletExtraArgs`` anywhere must be a list of ``{name, value}`` strings."""
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            here = f"{path}.{key}"
            if key in _ARG_LIST_KEYS:
                if isinstance(value, Mapping):
                    problems.append(f"{here}: is a map (the v1beta3 form); v1beta4 needs a list of {{name, value}}")
                elif not isinstance(value, list):
                    problems.append(f"{here}: must be a list of {{name, value}}")
                else:
                    for i, arg in enumerate(value):
                        if not (isinstance(arg, Mapping) and set(arg) == {"name", "value"}):
                            problems.append(f"{here}[{i}]: must have exactly the keys name and value")
                        elif not (isinstance(arg["name"], str) and isinstance(arg["value"], str)):
                            problems.append(f"{here}[{i}]: name and value must be strings")
                        elif arg["name"].startswith("-"):
                            problems.append(f"{here}[{i}]: flag name {arg['name']!r} must be written without dashes")
            else:
                _check_arg_lists(value, here, problems)
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            _check_arg_lists(item, f"{path}[{i}]", problems)


def _check_kubeadm_doc(doc: Mapping[str, Any], path: str, problems: list[str]) -> None:
    kind = doc["kind"]
    _unknown(doc, _KUBEADM_TOP[kind], path, problems)

    def sub(key: str, known: str, at: Mapping[str, Any] = doc, base: str = path) -> Any:
        value = at.get(key)
        if value is not None:
            _unknown(value, _NESTED[known], f"{base}.{key}", problems)
        return value if isinstance(value, Mapping) else None

    for key in ("nodeRegistration", "localAPIEndpoint", "timeouts", "patches", "networking", "apiServer", "controllerManager", "scheduler", "dns", "proxy"):
        sub(key, key)
    registration = doc.get("nodeRegistration")
    if isinstance(registration, Mapping):
        taints = registration.get("taints")
        if taints is not None and not isinstance(taints, list):
            problems.append(f"{path}.nodeRegistration.taints: must be a list (or left unset)")
        for i, taint in enumerate(taints or []):
            _unknown(taint, _NESTED["taints[]"], f"{path}.nodeRegistration.taints[{i}]", problems)
            if isinstance(taint, Mapping) and taint.get("effect") not in TAINT_EFFECTS:
                problems.append(f"{path}.nodeRegistration.taints[{i}].effect: must be one of {', '.join(TAINT_EFFECTS)}")
    for i, token in enumerate(doc.get("bootstrapTokens") or []):
        _unknown(token, _NESTED["bootstrapTokens[]"], f"{path}.bootstrapTokens[{i}]", problems)
    etcd = sub("etcd", "etcd")
    if etcd:
        sub("local", "etcd.local", etcd, f"{path}.etcd")
    for component in ("apiServer", "controllerManager", "scheduler"):
        volumes = (doc.get(component) or {}).get("extraVolumes") if isinstance(doc.get(component), Mapping) else None
        for i, volume in enumerate(volumes or []):
            _unknown(volume, _NESTED["extraVolumes[]"], f"{path}.{component}.extraVolumes[{i}]", problems)
    control_plane = sub("controlPlane", "controlPlane")
    if control_plane:
        sub("localAPIEndpoint", "localAPIEndpoint", control_plane, f"{path}.controlPlane")
    discovery = sub("discovery", "discovery")
    if kind == "JoinConfiguration" and not discovery:
        problems.append(f"{path}.discovery: required in a JoinConfiguration")
    if discovery:
        token = sub("bootstrapToken", "discovery.bootstrapToken", discovery, f"{path}.discovery")
        if token is not None:
            if token.get("unsafeSkipCAVerification"):
                problems.append(f"{path}.discovery.bootstrapToken.unsafeSkipCAVerification: refused; pin the CA with caCertHashes")
            if not token.get("caCertHashes"):
                problems.append(f"{path}.discovery.bootstrapToken.caCertHashes: required (without it only unsafeSkipCAVerification works)")
            if not token.get("apiServerEndpoint"):
                problems.append(f"{path}.discovery.bootstrapToken.apiServerEndpoint: required")
    version = doc.get("kubernetesVersion")
    if version is not None and not (isinstance(version, str) and re.fullmatch(r"v1\.\d+\.\d+", version)):
        problems.append(f"{path}.kubernetesVersion: {version!r} must look like v1.35.2")


def validate_kubeadm_docs(docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Check kubeadm config documents; return the problems found (empty list = valid).

    Checks apiVersion/kind (kubeadm v1beta4 kinds, ``kubelet.config.k8s.io/v1beta1``
    KubeletConfiguration, ``kubeproxy.config.k8s.io/v1alpha1`` KubeProxyConfiguration), unknown
    field names of the kubeadm kinds and KubeletConfiguration, that no ``extraArgs`` /
    ``kubeletExtraArgs`` is a map (the v1beta3 form), token discovery pinned by ``caCertHashes``
    and never ``unsafeSkipCAVerification``, at most one document per kind, and that init and
    join documents are not mixed.
    """
    problems: list[str] = []
    kinds: list[str] = []
    for i, doc in enumerate(docs):
        path = f"doc[{i}]"
        if not isinstance(doc, Mapping):
            problems.append(f"{path}: must be a mapping")
            continue
        api, kind = doc.get("apiVersion"), doc.get("kind")
        path = f"doc[{i}]({kind})"
        if api == KUBEADM_API and kind in _KUBEADM_TOP:
            _check_kubeadm_doc(doc, path, problems)
        elif api == KUBELET_API and kind == "KubeletConfiguration":
            _unknown(doc, KUBELET_CONFIGURATION_FIELDS, path, problems)
        elif api == KUBEPROXY_API and kind == "KubeProxyConfiguration":
            pass
        elif isinstance(api, str) and api.startswith("kubeadm.k8s.io/") and api != KUBEADM_API:
            problems.append(f"{path}: apiVersion {api!r} is not supported here; use {KUBEADM_API}")
        else:
            problems.append(f"{path}: unexpected apiVersion/kind {api!r}/{kind!r}")
        _check_arg_lists(doc, path, problems)
        if isinstance(kind, str):
            kinds.append(kind)
    for kind in sorted({k for k in kinds if kinds.count(k) > 1}):
        problems.append(f"{kind}: appears more than once")
    if "JoinConfiguration" in kinds and ({"InitConfiguration", "ClusterConfiguration"} & set(kinds)):
        problems.append("JoinConfiguration cannot be mixed with InitConfiguration/ClusterConfiguration in one file")
    return problems
