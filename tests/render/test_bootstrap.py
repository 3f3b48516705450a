"""Host scripts (hybridgpu.render.bootstrap): content, shellcheck on every variant, idempotent helpers.

shellcheck is required: install it with ``apt-get install -y shellcheck`` (CI does). Without
the binary the shellcheck tests are skipped with that hint; everything else still runs. The
helper snippets (``write_file``, the containerd ``SystemdCgroup`` edit, the fstab edit) are
executed with bash against scratch files to check they do the right thing and are idempotent.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.render import bootstrap as bs
from tests.helpers import TOOLS_REQUIRED
from hybridgpu.render.bootstrap import (
    KUBEADM_CONFIG_PATH,
    bootstrap_script,
    drain_and_cordon_script,
    kubeadm_command,
    kubeadm_run_script,
    reset_script,
)
from hybridgpu.render.kubeadm import KUBELET_PROTECTED_SYSCTLS, audit_policy, join_config_worker, to_yaml, validate_kubeadm_docs
from hybridgpu.render.kubeadm_specs import ClusterSpec, NodeSpec

SHELLCHECK = shutil.which("shellcheck")
BASH = shutil.which("bash")
needs_shellcheck = pytest.mark.skipif(
    SHELLCHECK is None and not TOOLS_REQUIRED, reason="shellcheck not installed (`make setup` installs it; `make test` fails without it)"
)

CLUSTER = ClusterSpec(name="onprem-gpu", control_plane_endpoint="10.0.0.10:6443")
HARDENED = ClusterSpec(name="onprem-gpu", control_plane_endpoint="10.0.0.10:6443", protect_kernel_defaults=True)
PLAIN = ClusterSpec(name="lab", cgroup_driver="cgroupfs", audit_log=False, resolv_conf="/etc/resolv.conf", kubernetes_version="1.34.4")
CP = NodeSpec("cp-1", "10.0.0.11", "control-plane")
GPU = NodeSpec("gpu-h100-01", "10.0.1.21", "gpu-worker", gpu_model="H100-80GB", gpu_count=8, mig_config="h100-balanced")
CPU = NodeSpec("cpu-01", "10.0.2.31", "cpu-worker")

VARIANTS: dict[str, str] = {
    "control-plane": bootstrap_script(CLUSTER, CP, nvidia_toolkit=False),
    "control-plane-hardened": bootstrap_script(HARDENED, CP, nvidia_toolkit=False),
    "control-plane-plain": bootstrap_script(PLAIN, CP, nvidia_toolkit=False),
    "gpu-toolkit": bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True),
    "gpu-toolkit-pinned-runtimeclass": bootstrap_script(
        CLUSTER, GPU, nvidia_toolkit=True, nvidia_toolkit_version="1.18.0-1", nvidia_default_runtime=False
    ),
    "gpu-operator-toolkit": bootstrap_script(CLUSTER, GPU, nvidia_toolkit=False),
    "cpu-worker": bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False),
    "cpu-worker-plain": bootstrap_script(PLAIN, CPU, nvidia_toolkit=False),
    "kubeadm-init": kubeadm_run_script(CP, first=True),
    "kubeadm-join": kubeadm_run_script(GPU, first=False),
    "kubeadm-join-control-plane": kubeadm_run_script(NodeSpec("cp-2", "10.0.0.12", "control-plane"), first=False),
    "drain": drain_and_cordon_script("gpu-h100-01"),
    "drain-delete": drain_and_cordon_script("gpu-h100-01", timeout="1h30m", delete_node=True),
    "reset": reset_script(),
}


def shellcheck(script: str) -> str:
    """shellcheck's findings for a script (all default checks, every severity); '' when clean."""
    assert SHELLCHECK
    proc = subprocess.run(
        [SHELLCHECK, "--shell=bash", "--severity=style", "--format=gcc", "-"], input=script, capture_output=True, text=True, check=False
    )
    return (proc.stdout + proc.stderr).strip()


# --------------------------------------------------------------------------- shellcheck


@needs_shellcheck
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_shellcheck_clean(name):
    assert shellcheck(VARIANTS[name]) == ""


@pytest.mark.skipif(BASH is None, reason="bash not installed")
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_bash_parses(name):
    proc = subprocess.run([BASH, "-n"], input=VARIANTS[name], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_strict_mode_and_no_secrets(name):
    script = VARIANTS[name]
    assert script.startswith("#!/usr/bin/env bash\n")
    assert "\nset -euo pipefail\n" in script.split("readonly", 1)[0]
    for placeholder in ("BOOTSTRAP_TOKEN", "CERTIFICATE_KEY", "CA_CERT_HASH"):
        assert placeholder not in script
    assert not re.search(r"[a-z0-9]{6}\.[a-z0-9]{16}", script)


# --------------------------------------------------------------------------- bootstrap content


def test_bootstrap_common_steps():
    script = VARIANTS["cpu-worker"]
    assert "/etc/modules-load.d/hybridgpu-k8s.conf" in script
    assert "overlay\nbr_netfilter\n" in script
    assert "modprobe br_netfilter" in script
    assert "net.bridge.bridge-nf-call-iptables = 1" in script
    assert "net.ipv4.ip_forward = 1" in script
    assert "/etc/sysctl.d/" in script
    assert "swapoff -a" in script
    assert "SystemdCgroup = true" in script
    assert "readonly K8S_MINOR=v1.35" in script
    assert "readonly K8S_VERSION=1.35.2" in script
    assert "https://pkgs.k8s.io/core:/stable:/${K8S_MINOR}/deb/" in script
    assert '"kubeadm=${K8S_VERSION}-*"' in script
    assert "apt-mark hold kubelet kubeadm kubectl" in script
    assert "kubeadm upgrade" in script  # refuses to change an installed version
    # nothing GPU- or control-plane-specific on a CPU worker
    assert "nvidia" not in script
    assert "audit" not in script


def test_cgroupfs_cluster_leaves_containerd_cgroup_alone():
    script = VARIANTS["control-plane-plain"]
    assert "SystemdCgroup = true" not in script
    assert "readonly K8S_MINOR=v1.34" in script
    assert "readonly RESOLV_CONF=/etc/resolv.conf" in script


def test_gpu_toolkit_steps():
    script = VARIANTS["gpu-toolkit"]
    assert "https://nvidia.github.io/libnvidia-container/gpgkey" in script
    assert "https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list" in script
    assert "signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg" in script
    # The nvidia runtime is part of the config hybridgpu owns (issue 17: nvidia-ctk no longer
    # edits it, which would make every re-run rewrite the file and restart containerd).
    assert "nvidia-ctk" not in script
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]' in script
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in script
    assert 'default_runtime_name = "nvidia"' in script
    assert "nvidia-smi" in script  # drivers must be preinstalled
    # the toolkit is installed before containerd is (re)started once
    assert script.index("nvidia-container-toolkit") < script.index("systemctl restart containerd")
    pinned = VARIANTS["gpu-toolkit-pinned-runtimeclass"]
    assert "readonly NVIDIA_TOOLKIT_VERSION=1.18.0-1" in pinned
    assert '"libnvidia-container1=${NVIDIA_TOOLKIT_VERSION}"' in pinned
    assert 'default_runtime_name = "runc"' in pinned and "runtimes.nvidia]" in pinned
    assert "runtimes.nvidia" not in VARIANTS["gpu-operator-toolkit"]


def test_control_plane_audit_policy():
    script = VARIANTS["control-plane"]
    assert "readonly AUDIT_POLICY=/etc/kubernetes/audit/policy.yaml" in script
    body = script.split("write_file \"${AUDIT_POLICY}\" 0600 <<'HYBRIDGPU_EOF'\n", 1)[1].split("HYBRIDGPU_EOF\n", 1)[0]
    assert yaml.safe_load(body) == audit_policy()
    assert "audit" not in VARIANTS["control-plane-plain"]


def test_protect_kernel_defaults_sets_kubelet_sysctls():
    hardened = VARIANTS["control-plane-hardened"]
    for key, value in KUBELET_PROTECTED_SYSCTLS:
        assert f"{key} = {value}" in hardened
        assert key not in VARIANTS["control-plane"]


def test_bootstrap_refusals():
    with pytest.raises(ValueError, match="gpu-workers"):
        bootstrap_script(CLUSTER, CPU, nvidia_toolkit=True)
    with pytest.raises(ValueError, match="version"):
        bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True, nvidia_toolkit_version="1.18; rm -rf /")


# --------------------------------------------------------------------------- kubeadm command / lifecycle


def test_kubeadm_command():
    # issue 17: init must not print the join token or the certificate key (pulumi-command logs
    # stdout and copies it into its error).
    assert kubeadm_command(CP, True) == f"kubeadm init --config {KUBEADM_CONFIG_PATH} --upload-certs --skip-token-print --skip-certificate-key-print"
    assert kubeadm_command(CP, False) == f"kubeadm join --config {KUBEADM_CONFIG_PATH}"
    assert kubeadm_command(GPU, False) == f"kubeadm join --config {KUBEADM_CONFIG_PATH}"
    assert kubeadm_command(CPU, False, config_path="/tmp/my config.yaml") == "kubeadm join --config '/tmp/my config.yaml'"
    with pytest.raises(ValueError, match="control plane"):
        kubeadm_command(GPU, True)


def test_kubeadm_run_script_is_guarded():
    script = VARIANTS["kubeadm-init"]
    command = '\n  kubeadm init --config "${KUBEADM_CONFIG}" --upload-certs --skip-token-print --skip-certificate-key-print\n'
    assert command in script
    assert script.index("placeholders") < script.index(command)
    assert 'rm -f "${KUBEADM_CONFIG}"' in script  # in finish(), run only once the host is complete
    assert 'kubeadm join --config "${KUBEADM_CONFIG}"' in VARIANTS["kubeadm-join"]
    # kubelet.conf alone no longer means "done" (behaviour in tests/render/test_host_sandbox.py)
    assert "already belongs to a cluster" not in script


def test_drain_and_reset():
    drain = VARIANTS["drain"]
    assert drain.index("kubectl cordon") < drain.index("kubectl drain")
    assert "--ignore-daemonsets --delete-emptydir-data" in drain
    assert "readonly DRAIN_TIMEOUT=15m" in drain
    assert "kubectl delete node" not in drain
    assert "kubectl delete node" in VARIANTS["drain-delete"]
    reset = VARIANTS["reset"]
    assert 'kubeadm reset --force --cri-socket "${CRI_SOCKET}"' in reset
    assert "rm -rf /etc/cni/net.d" in reset
    with pytest.raises(ValueError):
        drain_and_cordon_script("gpu-01; rm -rf /")
    with pytest.raises(ValueError):
        drain_and_cordon_script("gpu-01", timeout="soon")
    with pytest.raises(ValueError):
        reset_script(cri_socket="unix:///run/x.sock; reboot")


# --------------------------------------------------------------------------- helpers really work (bash)

pytestmark_bash = pytest.mark.skipif(BASH is None, reason="bash not installed")


def _run(snippet: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = "set -euo pipefail\n" + bs.SCRIPT_LOG + bs.SCRIPT_HELPERS + snippet
    return subprocess.run([BASH, "-c", script], capture_output=True, text=True, check=False, cwd=tmp_path)


@pytestmark_bash
def test_write_file_is_idempotent(tmp_path):
    target = tmp_path / "etc" / "x.conf"
    snippet = f"printf 'a\\nb\\n' | write_file {target} 0640\n"
    first = _run(snippet, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "wrote" in first.stderr
    assert target.read_text() == "a\nb\n"
    assert oct(target.stat().st_mode & 0o777) == "0o640"
    second = _run(snippet, tmp_path)
    assert second.returncode == 0 and "wrote" not in second.stderr


@pytestmark_bash
def test_fstab_swap_edit(tmp_path):
    fstab = tmp_path / "fstab"
    fstab.write_text("UUID=1 / ext4 defaults 0 1\n/swap.img none swap sw 0 0\n# /old none swap sw 0 0\n")
    section = bs._KERNEL.split('log "swap off"\n', 1)[1].split('log "base packages"', 1)[0]
    snippet = section.replace("swapoff -a\n", "").replace("/etc/fstab", str(fstab))
    for _ in range(2):
        proc = _run(snippet, tmp_path)
        assert proc.returncode == 0, proc.stderr
    lines = fstab.read_text().splitlines()
    assert lines[0] == "UUID=1 / ext4 defaults 0 1"
    assert lines[1] == "# hybridgpu: swap off for the kubelet: /swap.img none swap sw 0 0"
    assert lines[2] == "# /old none swap sw 0 0"


# --------------------------------------------------------------------------- property: random inputs

_dns_label = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?\Z")
_label_name = st.from_regex(r"\A[a-zA-Z0-9]([a-zA-Z0-9._-]{0,15}[a-zA-Z0-9])?\Z")
_hostname = st.one_of(st.builds(lambda a, b: f"{a}.{b}", _dns_label, _dns_label), _dns_label, st.text(max_size=25))
_labels = st.dictionaries(
    st.one_of(_label_name, st.builds(lambda p, n: f"{p}.io/{n}", _dns_label, _label_name), st.text(max_size=20)),
    st.one_of(_label_name, st.just(""), st.text(max_size=15)),
    max_size=3,
)


@needs_shellcheck
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    hostname=_hostname,
    labels=_labels,
    role=st.sampled_from(["control-plane", "gpu-worker", "cpu-worker"]),
    mig=st.one_of(st.none(), _label_name, st.text(max_size=10)),
)
def test_random_nodes_give_clean_scripts_and_yaml(hostname, labels, role, mig):
    gpu = role == "gpu-worker"
    try:
        node = NodeSpec(hostname, "10.0.9.9", role, labels=labels, gpu_count=2 if gpu else 0, mig_config=mig if gpu else None)
    except ValueError:
        return
    script = bootstrap_script(CLUSTER, node, nvidia_toolkit=gpu)
    assert shellcheck(script) == ""
    assert shellcheck(kubeadm_run_script(node, first=role == "control-plane")) == ""
    assert shellcheck(drain_and_cordon_script(node.hostname)) == ""
    if role != "control-plane":
        docs = join_config_worker(CLUSTER, node)
        assert list(yaml.safe_load_all(to_yaml(docs))) == docs
        assert validate_kubeadm_docs(docs) == []


@needs_shellcheck
@pytest.mark.parametrize("control_plane", [True, False])
def test_join_credentials_script_is_shellcheck_clean_and_only_uses_placeholders(control_plane):
    from hybridgpu.render.bootstrap import join_credentials_script
    from hybridgpu.render.kubeadm_secrets import substitute

    script = join_credentials_script(control_plane=control_plane)
    values = {"BOOTSTRAP_TOKEN": "abcdef.0123456789abcdef", "CERTIFICATE_KEY": "ab" * 32}
    filled = substitute(script, {k: v for k, v in values.items() if "${" + k + "}" in script})
    assert "${" not in filled and "abcdef.0123456789abcdef" in filled
    assert ("ab" * 32 in filled) is control_plane
    assert shellcheck(filled) == ""
