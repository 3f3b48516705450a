"""On-prem cluster under mocks: SSH command ordering, lifecycle states, secrets, CNI and NVIDIA layer."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def onprem(previews):
    return previews["onprem"]


def _cmd(result, suffix):
    found = [r for r in result.of_type("command:remote:Command") if r.name.endswith(suffix)]
    assert len(found) == 1, (suffix, [r.name for r in found])
    return found[0]


def test_command_order_first_control_plane_then_others_then_workers(onprem):
    init = _cmd(onprem, "cp-01-kubeadm-init")
    cp2 = _cmd(onprem, "cp-02-kubeadm-join")
    cp3 = _cmd(onprem, "cp-03-kubeadm-join")
    # Each further control plane writes its config only after init (and earlier control planes).
    assert init.urn in _cmd(onprem, "cp-02-kubeadm-config").dependencies
    assert {init.urn, cp2.urn} <= set(_cmd(onprem, "cp-03-kubeadm-config").dependencies)
    # Workers wait for every control plane.
    for worker in ("dgx-h100-01", "a100-01", "cpu-01"):
        deps = set(_cmd(onprem, f"{worker}-kubeadm-config").dependencies)
        assert {init.urn, cp2.urn, cp3.urn} <= deps
    # The join runs after the config is written, which runs after the bootstrap.
    config = _cmd(onprem, "dgx-h100-01-kubeadm-config")
    assert config.urn in _cmd(onprem, "dgx-h100-01-kubeadm-join").dependencies
    assert _cmd(onprem, "dgx-h100-01-bootstrap").urn in config.dependencies
    # CA hash and admin kubeconfig are read after init.
    assert init.urn in _cmd(onprem, "cp-01-ca-cert-hash").dependencies
    assert init.urn in _cmd(onprem, "cp-01-admin-kubeconfig").dependencies


def test_lifecycle_absent_skipped_cordoned_drained(onprem):
    names = " ".join(r.name for r in onprem.records)
    assert "dgx-h100-04" not in names  # state: absent (out for repair)
    drain = _cmd(onprem, "a100-02-drain")
    assert _cmd(onprem, "a100-02-kubeadm-join").urn in drain.dependencies
    assert "kubectl" in drain.inputs["stdin"] and "a100-02" in drain.inputs["stdin"]
    assert drain.inputs["connection"]["host"] == _cmd(onprem, "cp-01-kubeadm-init").inputs["connection"]["host"]
    assert onprem.outputs["onprem_skipped_hosts"] == ["dgx-h100-04"]


def test_tokens_keys_and_kubeconfig_are_secrets(onprem):  # noqa: C901 - one walk over all commands
    for rec in onprem.of_type("command:remote:Command"):
        assert "connection" in rec.secret_paths  # carries the SSH private key
        if rec.name.endswith("-kubeadm-config") or rec.name.endswith("-join-credentials"):
            assert "stdin" in rec.secret_paths  # token, certificate key, CA hash
            assert "${BOOTSTRAP_TOKEN}" not in rec.inputs["stdin"]  # placeholders filled
    import yaml

    init_docs = list(yaml.safe_load_all(_cmd(onprem, "cp-01-kubeadm-config").inputs["stdin"]))
    init = next(d for d in init_docs if d["kind"] == "InitConfiguration")
    token = init["bootstrapTokens"][0]["token"]
    certificate_key = init["certificateKey"]
    for rec in onprem.of_type("command:remote:Command"):
        if not (rec.name.endswith("-kubeadm-config") or rec.name.endswith("-join-credentials")):
            # Scripts carry no secrets (so they stay readable in the plan): the token and key
            # travel only in the secret kubeadm config.
            assert "stdin" not in rec.secret_paths
            assert token not in str(rec.inputs) and certificate_key not in str(rec.inputs.get("stdin", ""))
    provider = [r for r in onprem.of_type("pulumi:providers:kubernetes")][0]
    assert "kubeconfig" in provider.secret_paths
    assert onprem.outputs["onprem_kubeconfig"] == "[secret]"
    (raw_token,) = onprem.of_type("random:index/randomPassword:RandomPassword")  # secret in the state
    assert raw_token.inputs["length"] == 22 and raw_token.inputs["upper"] is False and raw_token.inputs["special"] is False
    (key,) = onprem.of_type("random:index/randomBytes:RandomBytes")
    assert key.inputs["length"] == 32
    drain = _cmd(onprem, "a100-02-drain")
    assert "KUBECONFIG=/etc/kubernetes/admin.conf" in drain.inputs["create"]


def test_filled_kubeadm_configs_have_valid_token_and_hash(onprem):
    import re

    import yaml

    worker = yaml.safe_load_all(_cmd(onprem, "dgx-h100-01-kubeadm-config").inputs["stdin"])
    join = next(d for d in worker if d["kind"] == "JoinConfiguration")
    discovery = join["discovery"]["bootstrapToken"]
    assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", discovery["token"])
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in discovery["caCertHashes"])
    assert "unsafeSkipCAVerification" not in discovery
    cp = yaml.safe_load_all(_cmd(onprem, "cp-02-kubeadm-config").inputs["stdin"])
    cp_join = next(d for d in cp if d["kind"] == "JoinConfiguration")
    assert re.fullmatch(r"[0-9a-f]{64}", cp_join["controlPlane"]["certificateKey"])


def test_cni_and_nvidia_layer_on_the_onprem_provider(onprem):
    cilium = [r for r in onprem.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "cilium"][0]
    assert cilium.inputs["values"]["ipam"]["operator"]["clusterPoolIPv4PodCIDRList"] == ["10.244.0.0/16"]
    import yaml

    parted = [r for r in onprem.of_type("kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == "hybridgpu-mig-parted-config"][0]
    configs = yaml.safe_load(parted.inputs["data"]["config.yaml"])["mig-configs"]
    mig_hosts = {r.name: r for r in onprem.of_type("command:remote:Command") if r.name.endswith("-kubeadm-config")}
    a100 = yaml.safe_load_all(mig_hosts["site-a-onprem-a100-01-kubeadm-config"].inputs["stdin"])
    args = {a["name"]: a["value"] for a in next(d for d in a100 if d["kind"] == "JoinConfiguration")["nodeRegistration"]["kubeletExtraArgs"]}
    label = dict(kv.split("=", 1) for kv in args["node-labels"].split(","))["nvidia.com/mig.config"]
    assert label in configs  # the node's layout is in the ConfigMap mig-manager reads


def test_join_credentials_refreshed_on_the_first_control_plane_before_each_join(onprem):
    first_host = _cmd(onprem, "cp-01-kubeadm-init").inputs["connection"]["host"]
    for host, control_plane in (("cp-02", True), ("dgx-h100-01", False)):
        creds = _cmd(onprem, f"{host}-join-credentials")
        assert creds.inputs["connection"]["host"] == first_host
        assert creds.urn in _cmd(onprem, f"{host}-kubeadm-config").dependencies
        assert ("upload-certs" in creds.inputs["stdin"]) is control_plane
        assert "kubeadm token create" in creds.inputs["stdin"]
    assert not [r for r in onprem.of_type("command:remote:Command") if r.name.endswith("cp-01-join-credentials")]


# Commands that can see the bootstrap token, the certificate key or a kubeconfig: they get it on
# stdin, run kubeadm with the filled config, or read /etc/kubernetes/admin.conf on the host.
_SEES_SECRETS = ("-kubeadm-config", "-join-credentials", "-kubeadm-init", "-kubeadm-join", "-ca-cert-hash", "-admin-kubeconfig", "-drain")


def test_no_command_that_sees_a_secret_logs_or_keeps_plain_output(onprem):
    """Issue 17: proven on the registered wire inputs and options, not on the component's source.

    pulumi-command v1.2.1 logs stdout and stderr when ``logging`` is unset
    (provider/pkg/provider/remote/logging.go: ShouldLogStdout/ShouldLogStderr are true for nil),
    and ``additionalSecretOutputs`` does not change that; so every such command must say
    ``logging: none`` and register stdout and stderr as secret outputs.
    """
    commands = onprem.of_type("command:remote:Command")
    seeing = [r for r in commands if r.name.endswith(_SEES_SECRETS)]
    timers = [r for r in commands if r.name.endswith("-etcd-snapshot-timer")]  # one per control plane, no secret
    assert len(timers) == 3
    assert len(seeing) == len(commands) - 9 - len(timers)  # every command except the nine bootstrap scripts and the timers
    for rec in seeing:
        wire_logging = rec.wire.fields["logging"].string_value
        assert wire_logging == "none", rec.name
        assert {"stdout", "stderr"} <= set(rec.additional_secret_outputs), rec.name
    for rec in commands:
        if rec.name.endswith("-bootstrap"):
            # no secret in the script, so its progress stays visible in `pulumi up`
            assert "logging" not in rec.inputs and "stdin" not in rec.secret_paths


def test_init_suppresses_the_prints_at_the_source(onprem):
    """Even in the error copy pulumi-command makes on failure, kubeadm init prints no token or key."""
    init = _cmd(onprem, "cp-01-kubeadm-init").inputs["stdin"]
    assert "--skip-token-print --skip-certificate-key-print" in init
    creds = _cmd(onprem, "cp-02-join-credentials").inputs["stdin"]
    assert "upload-certs --upload-certs --skip-certificate-key-print" in creds
    assert 'kubeadm token create "$token"' in creds and ">/dev/null" in creds.split("kubeadm token create", 1)[1].split("\n", 1)[0]


def test_config_upload_is_skipped_only_on_verified_hosts(onprem):
    """A half-built host (kubelet.conf, no completion marker) gets the config again so the run can retry."""
    create = _cmd(onprem, "cpu-01-kubeadm-config").inputs["create"]
    assert "test -e /etc/kubernetes/hybridgpu/complete" in create
    assert "kubelet.conf" not in create
