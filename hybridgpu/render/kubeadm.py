"""Render kubeadm v1beta4 configuration for an on-prem GPU cluster (pure, no Pulumi).

Creates, as plain dicts (plus :func:`to_yaml` for the multi-document file kubeadm reads):

* for the first control plane (:func:`init_config`): ``InitConfiguration``,
  ``ClusterConfiguration`` and ``KubeletConfiguration``, for ``kubeadm init --config F --upload-certs``;
* for further control planes (:func:`join_config_control_plane`) and workers
  (:func:`join_config_worker`): a ``JoinConfiguration`` for ``kubeadm join --config F``.

Inputs are the dataclasses :class:`~hybridgpu.render.kubeadm_specs.ClusterSpec` and
:class:`~hybridgpu.render.kubeadm_specs.NodeSpec`, which validate themselves on construction;
the inventory is mapped onto them in :mod:`hybridgpu.onprem`.

Secrets are never rendered: bootstrap tokens, certificate keys and CA public-key hashes appear as
placeholders (:mod:`hybridgpu.render.kubeadm_secrets`, which fills them at apply time).
:func:`validate_kubeadm_docs` checks rendered (or hand-written) documents: apiVersion/kind, known
field names, list-form ``extraArgs`` / ``kubeletExtraArgs`` (the v1beta3 map form no longer
unmarshals), pinned CA discovery.

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
* KubeletConfiguration ``kubelet.config.k8s.io/v1beta1`` field names from kubernetes/website
  ``content/en/docs/reference/config-api/kubelet-config.v1beta1.md`` (generated for v1.35) and
  ``staging/src/k8s.io/kubelet/config/v1beta1/types.go``; kubeadm's kubelet defaulting
  (``cmd/kubeadm/app/componentconfigs/kubelet.go``) forces ``rotateCertificates: true`` and
  picks ``/run/systemd/resolve/resolv.conf`` when systemd-resolved runs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hybridgpu.datafile import TEMPLATE, dump_yaml_all
from hybridgpu.k8s import (
    CONTROL_PLANE_TAINT,
    GPU_COUNT_LABEL,
    GPU_MODEL_LABEL,
    GPU_PRESENT_LABEL,
    GPU_TAINT,
    MIG_CONFIG_LABEL,
    ROLE_LABEL,
    taint_object,
)
from hybridgpu.render.kubeadm_secrets import (
    BOOTSTRAP_TOKEN,
    BOOTSTRAP_TOKEN_PLACEHOLDER,
    CA_CERT_HASH,
    CA_CERT_HASH_PLACEHOLDER,
    CERTIFICATE_KEY,
    CERTIFICATE_KEY_PLACEHOLDER,
    check_placeholder,
)
from hybridgpu.render.kubeadm_specs import TAINT_EFFECTS, ClusterSpec, NodeSpec, check_labels, label_value_from, split_endpoint

KUBEADM_API = "kubeadm.k8s.io/v1beta4"
KUBELET_API = "kubelet.config.k8s.io/v1beta1"
KUBEPROXY_API = "kubeproxy.config.k8s.io/v1alpha1"

#: containerd's CRI socket (kubeadm ``nodeRegistration.criSocket`` and kubelet ``containerRuntimeEndpoint``).
CRI_SOCKET = "unix:///run/containerd/containerd.sock"

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


# --------------------------------------------------------------------------- rendering helpers


def args_list(args: Mapping[str, str]) -> list[dict[str, str]]:
    """A flag map as the v1beta4 list of ``{name, value}`` (order kept)."""
    return [{"name": name, "value": value} for name, value in args.items()]


def _gates_flag(gates: Mapping[str, bool]) -> str:
    return ",".join(f"{gate}={'true' if on else 'false'}" for gate, on in sorted(gates.items()))


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
    check_labels(labels, f"node {node.hostname!r}", node.hostname)
    return labels


def node_taints(node: NodeSpec) -> list[dict[str, str]] | None:
    """``nodeRegistration.taints``: None (kubeadm default) for a plain control plane, else a list."""
    extra = [taint_object(*t) for t in node.taints]
    if node.role == "control-plane":
        if not extra:
            return None
        default = taint_object(*CONTROL_PLANE_TAINT)
        return ([] if any(t["key"] == default["key"] for t in extra) else [default]) + extra
    if node.role == "gpu-worker":
        # The operator's own nvidia.com/gpu taint is kept as written (value and effect, issue 17);
        # the default only fills in when there is none. The inventory refuses NoExecute for it
        # (rule gpu-taint: it would evict the GPU Operator's operands).
        if any(t["key"] == GPU_TAINT.key for t in extra):
            return extra
        return [taint_object(*GPU_TAINT), *extra]
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
            raise node.refused(
                "advertise_address",
                f"node {node.hostname!r}: advertise_address {ip} lies inside the cluster {what} {cidr}",
                "give the node an address outside the cluster's pod and service subnets (or move those subnets)",
            )


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
        SpecError: (a ``ValueError``, on the node's field) the node is not a control plane, or
            its address lies in a cluster subnet, or a label the kubelet refuses.
        ValueError: a placeholder is not a placeholder of the right kind.
    """
    if node.role != "control-plane":
        raise node.refused("role", f"node {node.hostname!r}: kubeadm init runs on a control-plane node, not a {node.role}", "run init on a control-plane node")
    check_placeholder(token_placeholder, BOOTSTRAP_TOKEN, "token_placeholder")
    check_placeholder(certificate_key_placeholder, CERTIFICATE_KEY, "certificate_key_placeholder")
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
    check_placeholder(token_placeholder, BOOTSTRAP_TOKEN, "token_placeholder")
    check_placeholder(ca_cert_hash_placeholder, CA_CERT_HASH, "ca_cert_hash_placeholder")
    split_endpoint(endpoint)
    return {
        # Never unsafeSkipCAVerification: the CA pin is what stops a rogue API server from
        # handing the joining node a fake cluster.
        "bootstrapToken": {"apiServerEndpoint": endpoint, "token": token_placeholder, "caCertHashes": [ca_cert_hash_placeholder]},
    }


def _join_endpoint(cluster: ClusterSpec, api_server_endpoint: str | None) -> str:
    endpoint = api_server_endpoint or cluster.control_plane_endpoint
    if not endpoint:
        raise cluster.refused(
            "control_plane_endpoint",
            f"cluster {cluster.name!r}: joining needs an API server endpoint: set control_plane_endpoint or pass api_server_endpoint",
            "set the cluster's control-plane endpoint (a VIP or DNS name in front of the API servers)",
        )
    _host, port = split_endpoint(endpoint)
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
        SpecError: (a ``ValueError``, on the node's or cluster's field) the node is not a control
            plane, or the cluster has no ``control_plane_endpoint`` (kubeadm refuses to add a
            control plane without one).
        ValueError: a placeholder is wrong.
    """
    if node.role != "control-plane":
        raise node.refused("role", f"node {node.hostname!r}: use join_config_worker for a {node.role}", "join workers with join_config_worker")
    if not cluster.control_plane_endpoint:
        raise cluster.refused(
            "control_plane_endpoint",
            f"cluster {cluster.name!r}: more than one control plane needs control_plane_endpoint (a VIP or DNS name in front of the API servers)",
            "set the cluster's control-plane endpoint (a VIP or DNS name in front of the API servers)",
        )
    check_placeholder(certificate_key_placeholder, CERTIFICATE_KEY, "certificate_key_placeholder")
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
        SpecError: (a ``ValueError``, on the node's or cluster's field) the node is a control
            plane, or no endpoint is known.
        ValueError: a placeholder is wrong.
    """
    if node.role == "control-plane":
        raise node.refused("role", f"node {node.hostname!r}: use join_config_control_plane for a control plane", "join control planes with join_config_control_plane")
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


def to_yaml(docs: Iterable[Mapping[str, Any]]) -> str:
    """Multi-document YAML (``---`` before each document), keys in insertion order, in the
    :data:`hybridgpu.datafile.TEMPLATE` style: no anchors or aliases (shared sub-objects are written out in
    full), strings holding a placeholder double-quoted so whatever :func:`substitute` puts there stays a string."""
    return dump_yaml_all([dict(d) for d in docs], TEMPLATE)


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
