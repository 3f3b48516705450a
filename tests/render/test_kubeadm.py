"""kubeadm v1beta4 renderers (hybridgpu.render.kubeadm): shapes, upstream rules, secrets, golden YAML.

Golden files live in ``tests/golden/kubeadm/`` (init of the first control plane, join of a
second control plane, of a GPU worker and of a CPU worker). Regenerate them after an intended
change with ``HYBRIDGPU_UPDATE_GOLDEN=1 pytest tests/render/test_kubeadm.py`` and review the diff.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.k8s import is_kubelet_settable_label
from hybridgpu.render.kubeadm import (
    CRI_SOCKET,
    KUBEADM_API,
    KUBELET_CONFIGURATION_FIELDS,
    init_config,
    join_config_control_plane,
    join_config_worker,
    kubelet_configuration,
    to_yaml,
    validate_kubeadm_docs,
)
from hybridgpu.render.kubeadm_secrets import (
    BOOTSTRAP_TOKEN_PLACEHOLDER,
    CA_CERT_HASH_PLACEHOLDER,
    CERTIFICATE_KEY_PLACEHOLDER,
    substitute,
)
from hybridgpu.render.kubeadm_specs import ClusterSpec, NodeSpec, label_value_from
from tests import helpers
from tests.helpers import examples

GOLDEN = helpers.GOLDEN / "kubeadm"

CLUSTER = ClusterSpec(
    name="onprem-gpu",
    kubernetes_version="1.35.2",
    control_plane_endpoint="10.0.0.10:6443",
    pod_subnet="10.244.0.0/16",
    service_subnet="10.96.0.0/12",
    cni="calico",
    api_server_extra_args={"audit-log-maxage": "14", "request-timeout": "2m0s"},
    feature_gates={"DynamicResourceAllocation": True},
    api_server_cert_sans=("k8s.onprem.example.com",),
)
CP1 = NodeSpec("cp-1", "10.0.0.11", "control-plane")
CP2 = NodeSpec("cp-2", "10.0.0.12", "control-plane")
GPU = NodeSpec(
    "gpu-h100-01",
    "10.0.1.21",
    "gpu-worker",
    labels={"topology.kubernetes.io/zone": "rack-a", "hybridgpu.io/pool": "training"},
    gpu_model="H100-80GB",
    gpu_count=8,
    mig_config="h100-balanced",
)
CPU = NodeSpec("cpu-01", "10.0.2.31", "cpu-worker", labels={"node.kubernetes.io/exclude-from-external-load-balancers": "true"})

REAL_TOKEN = "abcdef.0123456789abcdef"
REAL_KEY = "f" * 8 + "0123456789abcdef" * 3 + "e" * 8
REAL_HASH = "sha256:" + "0123456789abcdef" * 4
VALUES = {"BOOTSTRAP_TOKEN": REAL_TOKEN, "CERTIFICATE_KEY": REAL_KEY, "CA_CERT_HASH": REAL_HASH}


def _renders() -> dict[str, list[dict[str, Any]]]:
    return {
        "init-control-plane.yaml": init_config(
            CLUSTER, CP1, token_placeholder=BOOTSTRAP_TOKEN_PLACEHOLDER, certificate_key_placeholder=CERTIFICATE_KEY_PLACEHOLDER
        ),
        "join-control-plane.yaml": join_config_control_plane(CLUSTER, CP2),
        "join-gpu-worker.yaml": join_config_worker(CLUSTER, GPU),
        "join-cpu-worker.yaml": join_config_worker(CLUSTER, CPU),
    }


def _walk(obj: Any, path: str = ""):
    """Yield (path, key, value) for every mapping entry in a nested structure."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield path, key, value
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            yield from _walk(item, f"{path}[{i}]")


def _doc(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind]
    return doc


def _args(args: list[dict[str, str]]) -> dict[str, str]:
    return {a["name"]: a["value"] for a in args}


# --------------------------------------------------------------------------- golden files


@pytest.mark.parametrize("name", sorted(_renders()))
def test_golden(name, assert_golden):
    assert_golden(to_yaml(_renders()[name]), GOLDEN / name, "kubeadm YAML")


@pytest.mark.parametrize("name", sorted(_renders()))
def test_golden_parses_and_validates(name):
    docs = list(yaml.safe_load_all((GOLDEN / name).read_text()))
    assert docs == _renders()[name]
    assert validate_kubeadm_docs(docs) == []


@pytest.mark.parametrize("name", sorted(_renders()))
def test_golden_validates_after_substitution(name):
    text = substitute((GOLDEN / name).read_text(), VALUES)
    docs = list(yaml.safe_load_all(text))
    assert validate_kubeadm_docs(docs) == []
    assert "${" not in text


# --------------------------------------------------------------------------- v1beta4 shapes


@pytest.mark.parametrize("name", sorted(_renders()))
def test_every_extra_args_is_a_name_value_list(name):
    found = 0
    for path, key, value in _walk(_renders()[name]):
        if key in ("extraArgs", "kubeletExtraArgs"):
            found += 1
            assert isinstance(value, list), f"{path}.{key} is not a list"
            assert all(set(a) == {"name", "value"} and isinstance(a["value"], str) for a in value), f"{path}.{key}"
    assert found >= 1


def test_init_documents():
    docs = _renders()["init-control-plane.yaml"]
    assert [(d["apiVersion"], d["kind"]) for d in docs] == [
        (KUBEADM_API, "InitConfiguration"),
        (KUBEADM_API, "ClusterConfiguration"),
        ("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"),
    ]
    init = _doc(docs, "InitConfiguration")
    assert init["bootstrapTokens"][0]["token"] == BOOTSTRAP_TOKEN_PLACEHOLDER
    assert init["bootstrapTokens"][0]["usages"] == ["signing", "authentication"]
    assert init["certificateKey"] == CERTIFICATE_KEY_PLACEHOLDER
    assert init["localAPIEndpoint"] == {"advertiseAddress": "10.0.0.11", "bindPort": 6443}
    registration = init["nodeRegistration"]
    assert registration["name"] == "cp-1"
    assert registration["criSocket"] == "unix:///run/containerd/containerd.sock"
    assert "taints" not in registration  # unset: kubeadm adds node-role.kubernetes.io/control-plane:NoSchedule
    assert _args(registration["kubeletExtraArgs"])["node-ip"] == "10.0.0.11"
    assert set(init["timeouts"]) <= {"controlPlaneComponentHealthCheck", "kubeletHealthCheck"}
    assert "timeoutForControlPlane" not in str(docs)


def test_cluster_configuration():
    cc = _doc(_renders()["init-control-plane.yaml"], "ClusterConfiguration")
    assert cc["kubernetesVersion"] == "v1.35.2"
    assert cc["controlPlaneEndpoint"] == "10.0.0.10:6443"
    assert cc["clusterName"] == "onprem-gpu"
    assert cc["networking"]["podSubnet"] == "10.244.0.0/16"
    assert cc["networking"]["serviceSubnet"] == "10.96.0.0/12"
    assert cc["etcd"] == {"local": {"dataDir": "/var/lib/etcd"}}
    api = _args(cc["apiServer"]["extraArgs"])
    assert api["profiling"] == "false"
    assert api["audit-policy-file"] == "/etc/kubernetes/audit/policy.yaml"
    assert api["audit-log-path"].startswith("/var/log/kubernetes/audit/")
    assert api["audit-log-maxage"] == "14"  # the cluster's own value overrides the default, no duplicate
    assert [a["name"] for a in cc["apiServer"]["extraArgs"]].count("audit-log-maxage") == 1
    assert api["request-timeout"] == "2m0s"
    assert api["feature-gates"] == "DynamicResourceAllocation=true"
    mounts = {v["hostPath"]: v for v in cc["apiServer"]["extraVolumes"]}
    assert mounts["/etc/kubernetes/audit/policy.yaml"]["readOnly"] is True
    assert "/var/log/kubernetes/audit" in mounts
    assert cc["apiServer"]["certSANs"] == ["k8s.onprem.example.com"]
    assert _args(cc["controllerManager"]["extraArgs"])["profiling"] == "false"
    assert _args(cc["scheduler"]["extraArgs"]) == {"feature-gates": "DynamicResourceAllocation=true"}
    assert "featureGates" not in cc  # component gates are not kubeadm gates


def test_kubelet_configuration():
    kc = _doc(_renders()["init-control-plane.yaml"], "KubeletConfiguration")
    assert set(kc) <= KUBELET_CONFIGURATION_FIELDS
    assert kc["cgroupDriver"] == "systemd"
    # Off by default (issue 17): nothing approves kubernetes.io/kubelet-serving CSRs in a kubeadm
    # cluster (kubernetes/kubernetes pkg/controller/certificates/approver/sarapprove.go,
    # commit 017bb938: recognizers() = isSelfNodeClientCert, isNodeClientCert).
    assert kc["serverTLSBootstrap"] is False
    assert kubelet_configuration(ClusterSpec(name="c", kubelet_server_tls_bootstrap=True))["serverTLSBootstrap"] is True
    assert kc["rotateCertificates"] is True
    assert kc["containerRuntimeEndpoint"] == CRI_SOCKET
    assert kc["authentication"]["anonymous"]["enabled"] is False
    assert kc["authorization"]["mode"] == "Webhook"
    assert kc["resolvConf"] == "/run/systemd/resolve/resolv.conf"
    assert kc["protectKernelDefaults"] is False
    assert kc["featureGates"] == {"DynamicResourceAllocation": True}


def test_kubeadm_feature_gates_and_kube_proxy_replacement():
    cluster = ClusterSpec(name="c", kubeadm_feature_gates={"ControlPlaneKubeletLocalMode": True}, disable_kube_proxy=True, audit_log=False)
    docs = init_config(cluster, CP1)
    cc = _doc(docs, "ClusterConfiguration")
    assert cc["featureGates"] == {"ControlPlaneKubeletLocalMode": True}
    assert cc["proxy"] == {"disabled": True}
    assert _doc(docs, "InitConfiguration")["skipPhases"] == ["addon/kube-proxy"]
    assert "extraVolumes" not in cc["apiServer"]
    assert "audit-policy-file" not in _args(cc["apiServer"]["extraArgs"])
    assert "controlPlaneEndpoint" not in cc
    assert validate_kubeadm_docs(docs) == []


def test_join_control_plane():
    (join,) = _renders()["join-control-plane.yaml"]
    assert join["kind"] == "JoinConfiguration"
    assert join["controlPlane"] == {
        "localAPIEndpoint": {"advertiseAddress": "10.0.0.12", "bindPort": 6443},
        "certificateKey": CERTIFICATE_KEY_PLACEHOLDER,
    }
    assert join["discovery"]["bootstrapToken"] == {
        "apiServerEndpoint": "10.0.0.10:6443",
        "token": BOOTSTRAP_TOKEN_PLACEHOLDER,
        "caCertHashes": [CA_CERT_HASH_PLACEHOLDER],
    }
    assert "taints" not in join["nodeRegistration"]


def test_join_gpu_worker():
    (join,) = _renders()["join-gpu-worker.yaml"]
    registration = join["nodeRegistration"]
    assert registration["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    labels = dict(item.split("=", 1) for item in _args(registration["kubeletExtraArgs"])["node-labels"].split(","))
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["hybridgpu.io/gpu-model"] == "H100-80GB"
    assert labels["hybridgpu.io/gpu-count"] == "8"
    assert labels["nvidia.com/mig.config"] == "h100-balanced"
    assert labels["hybridgpu.io/role"] == "gpu-worker"
    assert labels["topology.kubernetes.io/zone"] == "rack-a"
    assert all(is_kubelet_settable_label(k) for k in labels)
    assert "controlPlane" not in join
    assert "unsafeSkipCAVerification" not in join["discovery"]["bootstrapToken"]


def test_join_cpu_worker_has_explicit_empty_taints():
    (join,) = _renders()["join-cpu-worker.yaml"]
    assert join["nodeRegistration"]["taints"] == []
    assert "  taints: []\n" in (GOLDEN / "join-cpu-worker.yaml").read_text()
    labels = _args(join["nodeRegistration"]["kubeletExtraArgs"])["node-labels"]
    assert "nvidia.com" not in labels


def test_gpu_worker_without_mig_has_no_mig_label():
    node = NodeSpec("gpu-02", "10.0.1.22", "gpu-worker", gpu_model="A100 40GB", gpu_count=4)
    (join,) = join_config_worker(CLUSTER, node)
    labels = _args(join["nodeRegistration"]["kubeletExtraArgs"])["node-labels"]
    assert "nvidia.com/mig.config" not in labels
    assert "hybridgpu.io/gpu-model=A100-40GB" in labels


def test_extra_taints():
    cp = NodeSpec("cp-3", "10.0.0.13", "control-plane", taints=[("dedicated", "infra", "NoExecute")])
    init = _doc(init_config(CLUSTER, cp), "InitConfiguration")
    assert init["nodeRegistration"]["taints"] == [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "infra", "effect": "NoExecute"},
    ]
    gpu = NodeSpec("gpu-03", "10.0.1.23", "gpu-worker", gpu_count=1, taints=[("hybridgpu.io/reserved", None, "NoSchedule")])
    (join,) = join_config_worker(CLUSTER, gpu)
    assert [t["key"] for t in join["nodeRegistration"]["taints"]] == ["nvidia.com/gpu", "hybridgpu.io/reserved"]


def test_worker_endpoint():
    single = ClusterSpec(name="single")
    with pytest.raises(ValueError, match="endpoint"):
        join_config_worker(single, CPU)
    (join,) = join_config_worker(single, CPU, api_server_endpoint="10.0.0.11")
    assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "10.0.0.11:6443"
    with pytest.raises(ValueError, match="control_plane_endpoint"):
        join_config_control_plane(single, CP2)


def test_role_checks():
    with pytest.raises(ValueError, match="control-plane"):
        init_config(CLUSTER, GPU)
    with pytest.raises(ValueError, match="join_config_worker"):
        join_config_control_plane(CLUSTER, CPU)
    with pytest.raises(ValueError, match="join_config_control_plane"):
        join_config_worker(CLUSTER, CP2)


# --------------------------------------------------------------------------- labels (kubelet / NodeRestriction)


@pytest.mark.parametrize(
    "key",
    [
        "node-role.kubernetes.io/worker",
        "node-role.kubernetes.io/control-plane",
        "kubernetes.io/role",
        "k8s.io/anything",
        "example.k8s.io/x",
        "node-restriction.kubernetes.io/pool",
        "app.kubernetes.io/name",
    ],
)
def test_kubelet_refuses_these_labels(key):
    assert not is_kubelet_settable_label(key)
    with pytest.raises(ValueError, match="kubelet"):
        NodeSpec("n-1", "10.0.3.1", "cpu-worker", labels={key: "x"})


@pytest.mark.parametrize(
    "key",
    [
        "node.kubernetes.io/instance-type",
        "node.kubernetes.io/pool",
        "foo.node.kubernetes.io/bar",
        "kubelet.kubernetes.io/x",
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
        "nvidia.com/gpu.present",
        "hybridgpu.io/pool",
        "plain",
    ],
)
def test_kubelet_may_set_these_labels(key):
    assert is_kubelet_settable_label(key)
    NodeSpec("n-1", "10.0.3.1", "cpu-worker", labels={key: "x"})


@pytest.mark.parametrize(
    "labels",
    [{"a/b/c": "x"}, {"-bad": "x"}, {"ok": "has space"}, {"ok": "x" * 64}, {"UPPER.example.com/x": "y"}, {"ok": "comma,no"}],
)
def test_invalid_labels_refused(labels):
    with pytest.raises(ValueError):
        NodeSpec("n-1", "10.0.3.1", "cpu-worker", labels=labels)


def test_label_value_from():
    assert label_value_from("A100 40GB") == "A100-40GB"
    assert label_value_from("  H100 (SXM) ") == "H100-SXM"
    assert len(label_value_from("x" * 100)) == 63


# --------------------------------------------------------------------------- input validation


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "Bad_Name"},
        {"name": "c", "kubernetes_version": "1.35"},
        {"name": "c", "kubernetes_version": "2.0.0"},
        {"name": "c", "control_plane_endpoint": "10.0.0.10:99999"},
        {"name": "c", "control_plane_endpoint": "https://10.0.0.10:6443"},
        {"name": "c", "pod_subnet": "10.96.0.0/16", "service_subnet": "10.96.0.0/12"},
        {"name": "c", "pod_subnet": "10.244.0.1/16"},
        {"name": "c", "cgroup_driver": "systemd-ish"},
        {"name": "c", "api_server_extra_args": {"--profiling": "false"}},
        {"name": "c", "api_server_extra_args": {"profiling": False}},
        {"name": "c", "feature_gates": {"lowercase": True}},
        {"name": "c", "feature_gates": {"Gate": "true"}},
        {"name": "c", "resolv_conf": "relative/path"},
    ],
)
def test_cluster_spec_refuses(kwargs):
    with pytest.raises(ValueError):
        ClusterSpec(**kwargs)


def test_cluster_spec_accepts_dns_and_ipv6_endpoints():
    assert ClusterSpec(name="c", control_plane_endpoint="k8s.example.com").control_plane_endpoint == "k8s.example.com"
    ClusterSpec(name="c", control_plane_endpoint="[fd00::10]:6443")
    assert ClusterSpec(name="c", kubernetes_version="v1.35.2").version == "1.35.2"
    assert ClusterSpec(name="c").minor == "v1.35"


@pytest.mark.parametrize(
    "args",
    [
        ("UPPER", "10.0.0.1", "cpu-worker"),
        ("ok", "not-an-ip", "cpu-worker"),
        ("ok", "10.0.0.1", "worker"),
        ("ok", "10.0.0.1", "gpu-worker"),  # gpu_count 0
        ("ok", "10.0.0.1", "cpu-worker", {}, [], "H100"),  # GPU model on a CPU worker
        ("ok", "10.0.0.1", "cpu-worker", {}, [("k", "v", "NoRun")]),
        ("ok", "10.0.0.1", "cpu-worker", {}, [("k", "v")]),
    ],
)
def test_node_spec_refuses(args):
    with pytest.raises(ValueError):
        NodeSpec(*args)


def test_node_in_pod_subnet_refused():
    node = NodeSpec("n", "10.244.3.4", "cpu-worker")
    with pytest.raises(ValueError, match="pod_subnet"):
        join_config_worker(CLUSTER, node)


# --------------------------------------------------------------------------- secrets


_SECRET_SHAPES = (re.compile(r"[a-z0-9]{6}\.[a-z0-9]{16}"), re.compile(r"[0-9a-f]{64}"))


@pytest.mark.parametrize("name", sorted(_renders()))
def test_no_secret_is_rendered(name):
    text = to_yaml(_renders()[name])
    for shape in _SECRET_SHAPES:
        assert not shape.search(text), f"{name} contains something shaped like a secret"
    for _, key, value in _walk(_renders()[name]):
        if key in ("token", "certificateKey"):
            assert re.fullmatch(r"\$\{[A-Z_]+\}", value)
        if key == "caCertHashes":
            assert all(re.fullmatch(r"\$\{[A-Z_]+\}", v) for v in value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"token_placeholder": REAL_TOKEN},
        {"token_placeholder": "${CERTIFICATE_KEY}"},
        {"certificate_key_placeholder": REAL_KEY},
        {"certificate_key_placeholder": "${FOO}"},
        {"token_placeholder": "BOOTSTRAP_TOKEN"},
    ],
)
def test_real_secrets_refused_as_placeholders(kwargs):
    with pytest.raises(ValueError):
        init_config(CLUSTER, CP1, **kwargs)


def test_ca_hash_placeholder_checked():
    with pytest.raises(ValueError):
        join_config_worker(CLUSTER, CPU, ca_cert_hash_placeholder=REAL_HASH)


def test_substitute_fills_every_placeholder():
    text = to_yaml(_renders()["join-control-plane.yaml"])
    (join,) = yaml.safe_load_all(substitute(text, VALUES))
    assert join["discovery"]["bootstrapToken"]["token"] == REAL_TOKEN
    assert join["discovery"]["bootstrapToken"]["caCertHashes"] == [REAL_HASH]
    assert join["controlPlane"]["certificateKey"] == REAL_KEY


def test_substitute_keeps_all_digit_secrets_strings():
    text = to_yaml(_renders()["join-control-plane.yaml"])
    values = {"BOOTSTRAP_TOKEN": "123456.1234567890123456", "CERTIFICATE_KEY": "0" * 64, "CA_CERT_HASH": REAL_HASH}
    (join,) = yaml.safe_load_all(substitute(text, values))
    assert join["discovery"]["bootstrapToken"]["token"] == "123456.1234567890123456"
    assert join["controlPlane"]["certificateKey"] == "0" * 64


def test_substitute_normalizes_ca_hash():
    text = "h: " + CA_CERT_HASH_PLACEHOLDER
    assert substitute(text, {"CA_CERT_HASH": "ABCDEF0123456789" * 4}) == "h: sha256:" + "abcdef0123456789" * 4
    assert substitute(text, {"CA_CERT_HASH": "SHA256:" + "AB" * 32}) == "h: sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("BOOTSTRAP_TOKEN", "abcdef0123456789abcdef"),
        ("BOOTSTRAP_TOKEN", "ABCDEF.0123456789abcdef"),
        ("BOOTSTRAP_TOKEN", "abcdef.0123456789abcde"),
        ("BOOTSTRAP_TOKEN", "abcdef.0123456789abcdef\n"),
        ("CERTIFICATE_KEY", "f" * 63),
        ("CERTIFICATE_KEY", "F" * 64),
        ("CERTIFICATE_KEY", "g" * 64),
        ("CA_CERT_HASH", "sha1:" + "a" * 40),
        ("CA_CERT_HASH", "sha256:" + "a" * 63),
    ],
)
def test_substitute_validates_formats_without_leaking(name, bad):
    text = to_yaml(_renders()["join-control-plane.yaml"])
    values = dict(VALUES, **{name: bad})
    with pytest.raises(ValueError) as err:
        substitute(text, values)
    assert bad.strip() not in str(err.value)


def test_substitute_refuses_unknown_and_missing():
    text = to_yaml(_renders()["join-gpu-worker.yaml"])
    with pytest.raises(ValueError, match="unknown placeholder"):
        substitute(text + "x: ${SOMETHING_ELSE}\n", VALUES)
    with pytest.raises(ValueError, match="unknown placeholder"):
        substitute(text, dict(VALUES, PASSWORD="x"))
    with pytest.raises(ValueError):
        substitute(text + "x: ${lower}\n", VALUES)
    with pytest.raises(ValueError, match="no value"):
        substitute(text, {"BOOTSTRAP_TOKEN": REAL_TOKEN})


def test_custom_placeholder_names():
    docs = join_config_worker(CLUSTER, GPU, token_placeholder="${BOOTSTRAP_TOKEN_GPU}")
    text = to_yaml(docs)
    filled = substitute(text, {"BOOTSTRAP_TOKEN_GPU": REAL_TOKEN, "CA_CERT_HASH": REAL_HASH})
    assert REAL_TOKEN in filled
    with pytest.raises(ValueError):
        substitute(text, {"BOOTSTRAP_TOKEN_GPU": REAL_HASH, "CA_CERT_HASH": REAL_HASH})


# --------------------------------------------------------------------------- validate_kubeadm_docs


def _init_docs() -> list[dict[str, Any]]:
    return [dict(d) for d in yaml.safe_load_all(to_yaml(_renders()["init-control-plane.yaml"]))]


def test_validate_catches_v1beta3_map_extra_args():
    docs = _init_docs()
    docs[1]["apiServer"]["extraArgs"] = {"profiling": "false"}
    docs[0]["nodeRegistration"]["kubeletExtraArgs"] = {"node-ip": "10.0.0.11"}
    problems = validate_kubeadm_docs(docs)
    assert any("apiServer.extraArgs" in p and "v1beta3" in p for p in problems)
    assert any("kubeletExtraArgs" in p and "v1beta3" in p for p in problems)


def test_validate_catches_wrong_versions_and_fields():
    docs = _init_docs()
    docs[0]["apiVersion"] = "kubeadm.k8s.io/v1beta3"
    docs[1]["apiServer"]["timeoutForControlPlane"] = "4m0s"
    docs[1]["kubernetesVersion"] = "1.35.2"
    docs[2]["cgroupDriverr"] = "systemd"
    docs[1]["apiServer"]["extraArgs"].append({"name": "--v", "value": "2"})
    problems = validate_kubeadm_docs(docs)
    assert any("v1beta3" in p and "not supported" in p for p in problems)
    assert any("timeoutForControlPlane: unknown field" in p for p in problems)
    assert any("kubernetesVersion" in p for p in problems)
    assert any("cgroupDriverr: unknown field" in p for p in problems)
    assert any("without dashes" in p for p in problems)


def test_validate_catches_unpinned_discovery():
    (join,) = yaml.safe_load_all(to_yaml(_renders()["join-cpu-worker.yaml"]))
    join["discovery"]["bootstrapToken"]["unsafeSkipCAVerification"] = True
    del join["discovery"]["bootstrapToken"]["caCertHashes"]
    problems = validate_kubeadm_docs([join])
    assert any("unsafeSkipCAVerification" in p for p in problems)
    assert any("caCertHashes" in p for p in problems)


def test_validate_catches_mixing_and_duplicates():
    docs = _init_docs() + list(yaml.safe_load_all(to_yaml(_renders()["join-cpu-worker.yaml"])))
    assert any("mixed" in p for p in validate_kubeadm_docs(docs))
    assert any("more than once" in p for p in validate_kubeadm_docs(_init_docs() + _init_docs()[:1]))
    assert validate_kubeadm_docs([{"apiVersion": "v1", "kind": "ConfigMap"}])


# --------------------------------------------------------------------------- property: never broken YAML

_label_name = st.from_regex(r"\A[a-zA-Z0-9]([a-zA-Z0-9._-]{0,20}[a-zA-Z0-9])?\Z")
_dns_label = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?\Z")
_label_key = st.one_of(_label_name, st.builds(lambda p, n: f"{p}.example/{n}", _dns_label, _label_name), st.text(max_size=30))
_label_value = st.one_of(_label_name, st.just(""), st.text(max_size=20))
_hostname = st.one_of(st.builds(lambda a, b: f"{a}.{b}", _dns_label, _dns_label), _dns_label, st.text(max_size=30))


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostname=_hostname, labels=st.dictionaries(_label_key, _label_value, max_size=4), gpu_model=st.text(max_size=20))
def test_random_nodes_render_valid_yaml_or_refuse(hostname, labels, gpu_model):
    try:
        node = NodeSpec(hostname, "10.0.9.9", "gpu-worker", labels=labels, gpu_model=gpu_model or None, gpu_count=2)
        docs = join_config_worker(CLUSTER, node)
    except ValueError:
        return
    text = to_yaml(docs)
    parsed = list(yaml.safe_load_all(text))
    assert parsed == docs
    assert validate_kubeadm_docs(parsed) == []
    node_labels = _args(parsed[0]["nodeRegistration"]["kubeletExtraArgs"])["node-labels"]
    assert all(is_kubelet_settable_label(item.split("=", 1)[0]) for item in node_labels.split(","))
