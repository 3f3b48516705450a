"""The stub sandbox the host-script tests run in: real bash, system commands stubbed on a fake PATH.

Moved here from tests/render/test_host_sandbox.py so every test that runs a generated script can
import it (:class:`Sandbox`, the :func:`debian_containerd` session fixture, registered in tests/conftest.py, :func:`_daemon`).
Each stub (apt-get, systemctl, kubeadm, kubectl, containerd, curl, ...) appends its command line to
a call log and keeps what it "did" in a state directory; host paths (``/etc``, ``/var``, ``/run``,
``/usr/share/keyrings``) are redirected into a scratch root by rewriting the script text.
See tests/render/test_host_sandbox.py for what the containerd fixtures are and where they come from.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hybridgpu.render.bootstrap import bootstrap_script
from hybridgpu.render.containerd import containerd_config
from hybridgpu.render.kubeadm_specs import ClusterSpec, NodeSpec
from tests.helpers import TOOLS_REQUIRED

BASH = shutil.which("bash")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "containerd"
DOCKER_CONFIG = (FIXTURES / "docker-containerd.io-config.toml").read_text()

CLUSTER = ClusterSpec(name="site-a", control_plane_endpoint="10.0.0.10:6443")
CP = NodeSpec("cp-01", "10.0.0.11", "control-plane")
CP2 = NodeSpec("cp-02", "10.0.0.12", "control-plane")
GPU = NodeSpec("gpu-01", "10.0.1.21", "gpu-worker", gpu_model="H100-80GB", gpu_count=8)
CPU = NodeSpec("cpu-01", "10.0.2.31", "cpu-worker")

#: `containerd --version` of Debian 12's package (what its binary prints), and of the others.
VERSION_DEBIAN = "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3"
VERSION_DOCKER = "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da"
VERSION_2X = "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376"

#: The start of every stub (this one and the upgrade tests'): log the call, fail when FAIL_AT matches,
#: ``S`` is the state directory; the stub then acts on the state by its name.
STUB_PRELUDE = r"""#!/usr/bin/env bash
name=$(basename "$0")
line="${name} $*"
printf '%s\n' "${line}" >>"${SANDBOX}/calls"
if [[ -n ${FAIL_AT:-} && ${line} == ${FAIL_AT}* ]]; then
  echo "stub: ${line} fails" >&2
  exit 1
fi
S=${SANDBOX}/state
"""

#: The Node objects of the upgrade stubs (tests/render/test_upgrade_sandbox.py, tests/helpers/nvidia_sandbox.py) as the
#: API server keeps them: ``spec.unschedulable`` (state file ``cordoned-<node>``), the ``hybridgpu.io/cordoned-by``
#: annotation (``mark-<node>``) and ``metadata.resourceVersion`` (``rv-<node>``, bumped by every write). ``kubectl_node ARGS``
#: answers the reads and writes of the drain and uncordon scripts and returns 2 for anything else:
#:
#: * ``get node N -o jsonpath={.spec.unschedulable}|...``: ``true`` or nothing, the resourceVersion, the annotation or
#:   nothing (kubectl's JSONPath prints nothing for a missing key); with ``CORDON_AFTER_READ`` set, somebody cordons the
#:   node right after the first such read (a race the scripts must lose safely);
#: * ``patch node N --type=merge -p BODY``: a JSON merge patch (RFC 7386: ``null`` removes a key); a ``resourceVersion``
#:   in it that is not the current one is refused with the API server's 409 Conflict text (kubernetes/apiserver
#:   ``pkg/registry/generic/registry/store.go`` ``OptimisticLockErrorMsg``, commit 24a394e5);
#: * ``cordon``/``uncordon`` write only when the value changes (kubectl ``pkg/cmd/drain/drain.go``: "already cordoned");
#:   ``drain`` cordons first (``RunDrain`` calls ``RunCordonOrUncordon(true)``), kubernetes/kubectl commit dee3483a.
KUBECTL_NODE = r"""node_rv() { cat "${S}/rv-$1" 2>/dev/null || echo 1; }
node_bump() { echo $(($(node_rv "$1") + 1)) >"${S}/rv-$1"; }
kubectl_node() {
  local n=$3
  if [[ $1 == get && " $* " == *"{.spec.unschedulable}|"* ]]; then
    printf '%s|%s|%s' "$([[ -e ${S}/cordoned-${n} ]] && echo true)" "$(node_rv "${n}")" "$(cat "${S}/mark-${n}" 2>/dev/null)"
    if [[ -n ${CORDON_AFTER_READ:-} && ! -e ${S}/raced ]]; then
      touch "${S}/raced" "${S}/cordoned-${n}"
      node_bump "${n}"
    fi
    return 0
  fi
  case "$1" in
    patch)
      n=$3
      "${PYTHON}" - "${S}" "${n}" "${!#}" <<'PY' || return 1
import json, pathlib, sys
state, node, body = pathlib.Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
rv_file = state / f"rv-{node}"
current = rv_file.read_text().strip() if rv_file.exists() else "1"
meta, spec = body.pop("metadata", {}), body.pop("spec", {})
want = meta.pop("resourceVersion", None)
annotations = meta.pop("annotations", {})
assert not body and not meta and set(spec) <= {"unschedulable"}, ("the stub models only these fields", body, meta, spec)
if want is not None and want != current:
    sys.exit(f'Error from server (Conflict): Operation cannot be fulfilled on nodes "{node}": the object has been modified; '
             "please apply your changes to the latest version and try again")
if "unschedulable" in spec:
    if spec["unschedulable"]:
        (state / f"cordoned-{node}").touch()
    else:
        (state / f"cordoned-{node}").unlink(missing_ok=True)
        (state / f"drained-{node}").unlink(missing_ok=True)
for key, value in annotations.items():
    assert key == "hybridgpu.io/cordoned-by", key
    if value is None:
        (state / f"mark-{node}").unlink(missing_ok=True)
    else:
        (state / f"mark-{node}").write_text(value)
rv_file.write_text(str(int(current) + 1))
print(f"node/{node} patched")
PY
      ;;
    cordon) [[ -e ${S}/cordoned-$2 ]] || { touch "${S}/cordoned-$2"; node_bump "$2"; } ;;
    uncordon) [[ ! -e ${S}/cordoned-$2 ]] || { rm -f "${S}/cordoned-$2" "${S}/drained-$2"; node_bump "$2"; } ;;
    drain)
      [[ -e ${S}/cordoned-$2 ]] || { touch "${S}/cordoned-$2"; node_bump "$2"; }
      touch "${S}/drained-$2" ;;
    *) return 2 ;;
  esac
}
"""

# One stub for every command: log the call, fail when FAIL_AT matches, then act on the state.
STUB = STUB_PRELUDE + r"""R=${SANDBOX}/root
# containerd loads its files only when it starts: the stub daemon's "running config" is a copy of
# config.toml (plus the drop-ins when the file imports them) taken at restart, or at start when it
# was not running (${S}/containerd-running); `ctr plugins ls` lists CRI unless that copy disables it.
load_containerd() {
  cat "${R}/etc/containerd/config.toml" >"${S}/containerd-running" 2>/dev/null || : >"${S}/containerd-running"
  if grep -q '^imports' "${S}/containerd-running"; then
    cat "${R}"/etc/containerd/conf.d/*.toml >>"${S}/containerd-running" 2>/dev/null || true
  fi
}
case "${name}" in
  containerd) [[ $1 == --version ]] && printf '%s\n' "${CONTAINERD_VERSION_LINE}" ;;
  systemctl)
    [[ $1 == restart && $2 == containerd ]] && load_containerd
    [[ $1 == start && $2 == containerd && ! -e ${S}/containerd-running ]] && load_containerd ;;
  ctr)
    printf 'TYPE                     ID     PLATFORMS      STATUS    \n'
    if [[ -e ${S}/containerd-running ]] && ! grep -Eq '^disabled_plugins *= *\[.*cri' "${S}/containerd-running"; then
      printf 'io.containerd.grpc.v1    cri    linux/amd64    ok        \n'
    fi ;;
  apt-get) [[ $1 == install && " $* " == *" kubelet="* ]] && touch "${S}/installed" ;;
  dpkg-query)
    [[ -e ${S}/installed ]] || exit 1
    printf 'installed %s-1.1' "${K8S_VERSION}" ;;
  curl)
    while [[ $# -gt 0 ]]; do
      if [[ $1 == -o ]]; then printf 'deb https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n' >"$2"; fi
      shift
    done ;;
  gpg) while [[ $# -gt 0 ]]; do if [[ $1 == -o ]]; then : >"$2"; fi; shift; done ;;
  kubeadm)
    case "$1" in
      init | join)
        mkdir -p "${R}/etc/kubernetes/manifests"
        : >"${R}/etc/kubernetes/kubelet.conf"
        [[ $1 == init || ${JOIN_CONTROL_PLANE:-0} == 1 ]] && : >"${R}/etc/kubernetes/admin.conf"
        [[ $1 == init || ${JOIN_CONTROL_PLANE:-0} == 1 ]] && : >"${R}/etc/kubernetes/manifests/kube-apiserver.yaml"
        if [[ -n ${KUBEADM_STOPS_BEFORE:-} ]]; then
          echo "stub: kubeadm $1 stopped before ${KUBEADM_STOPS_BEFORE}" >&2
          [[ ${KUBEADM_STOPS_BEFORE} == upload-certs || ${KUBEADM_STOPS_BEFORE} == bootstrap-token ]] && touch "${S}/api" "${S}/node" "${S}/kubeadm-config"
          exit 1
        fi
        touch "${S}/api" "${S}/node" "${S}/kubeadm-config" "${S}/cluster-info" "${S}/control-plane-label"
        echo "Your Kubernetes control-plane has initialized successfully!" ;;
      reset)
        rm -rf "${R}/etc/kubernetes/manifests" "${R}/etc/kubernetes/kubelet.conf" "${R}/etc/kubernetes/admin.conf"
        rm -f "${S}/api" "${S}/node" "${S}/kubeadm-config" "${S}/cluster-info" "${S}/control-plane-label" ;;
    esac ;;
  kubectl)
    args=" $* "
    if [[ ${args} == *" --raw=/readyz "* ]]; then [[ -e ${S}/api ]] || exit 1; echo ok; exit 0; fi
    [[ -e ${S}/api ]] || { echo "The connection to the server was refused" >&2; exit 1; }
    if [[ ${args} == *" get nodes -l "* ]]; then [[ -e ${S}/control-plane-label ]] && echo "node/${NODE}"; exit 0; fi
    if [[ ${args} == *" get node "* ]]; then [[ -e ${S}/node ]] || exit 1; echo "node/${NODE}"; exit 0; fi
    if [[ ${args} == *" configmap kubeadm-config "* ]]; then [[ -e ${S}/kubeadm-config ]] || exit 1; exit 0; fi
    if [[ ${args} == *" configmap cluster-info "* ]]; then [[ -e ${S}/cluster-info ]] || exit 1; exit 0; fi ;;
esac
exit 0
"""

STUBBED = (
    "apt-get apt-mark dpkg-query modprobe sysctl swapoff systemctl curl gpg containerd "
    "nvidia-smi kubeadm kubectl sleep ctr"
).split()


class Sandbox:
    """A scratch root, a state directory, a call log and a PATH of stubs in front of the real one."""

    def __init__(self, base: Path, *, containerd_version: str = VERSION_DEBIAN, node: str = "cp-01"):
        self.base = base
        self.root = base / "root"
        self.state = base / "state"
        for d in (self.root / "run/systemd/resolve", self.state, base / "bin", self.root / "etc"):
            d.mkdir(parents=True, exist_ok=True)
        (self.root / "run/systemd/resolve/resolv.conf").write_text("nameserver 10.0.0.2\n")
        (self.root / "etc/fstab").write_text("UUID=1 / ext4 defaults 0 1\n/swap.img none swap sw 0 0\n")
        self.install_stubs(STUB, STUBBED)
        self.env = {
            "PATH": f"{base / 'bin'}:/usr/bin:/bin",
            "SANDBOX": str(base),
            "CONTAINERD_VERSION_LINE": containerd_version,
            "K8S_VERSION": CLUSTER.version,
            "NODE": node,
            "HOME": str(base),
            "PYTHON": sys.executable,
        }

    def install_stubs(self, stub: str, names: list[str] | tuple[str, ...]) -> None:
        """Put ``stub`` (a bash script starting with :data:`STUB_PRELUDE`) on the PATH under each of ``names``."""
        for name in names:
            path = self.base / "bin" / name
            path.write_text(stub)
            path.chmod(path.stat().st_mode | stat.S_IEXEC)

    def put(self, name: str, text: str) -> None:
        """Write the stub state file ``name`` (what a stub reads: an installed version, a hold, a flag)."""
        (self.state / name).write_text(text)

    def get(self, name: str) -> str | None:
        """The stub state file ``name``, or None when it does not exist."""
        path = self.state / name
        return path.read_text() if path.exists() else None

    def script(self, text: str) -> str:
        """The script with host paths moved under the scratch root (and the root check off)."""
        root = str(self.root)
        text = text.replace("unix:///run/", "unix://@RUN@")  # a socket name passed to kubeadm, not a path we write
        for prefix in ("/etc/", "/var/", "/run/", "/usr/share/keyrings"):
            text = text.replace(prefix, root + prefix)
        return text.replace("unix://@RUN@", "unix:///run/").replace('[[ ${EUID} -eq 0 ]] || die "run as root"', ": sandbox")

    def run(self, text: str, **env: str) -> subprocess.CompletedProcess[str]:
        """Run a generated script; returns the process (stdout, stderr, returncode)."""
        calls = self.base / "calls"
        calls.write_text("")
        return subprocess.run(
            [BASH, "-c", self.script(text)], env={**self.env, **env}, capture_output=True, text=True, check=False, cwd=self.base, timeout=60
        )

    @property
    def calls(self) -> list[str]:
        return (self.base / "calls").read_text().splitlines()

    def file(self, path: str) -> Path:
        return self.root / path.lstrip("/")


@pytest.fixture(scope="session")
def debian_containerd(tmp_path_factory) -> tuple[str, Path | None, str]:
    """(config.toml, containerd binary or None, version line) of the host registry's ``containerd`` .deb.

    Under ``make test`` (:data:`tests.helpers.TOOLS_REQUIRED`) a package that cannot be had fails
    the tests instead of skipping them: ``make setup`` already depends on apt for shellcheck and promtool.
    """
    skip = pytest.fail if TOOLS_REQUIRED else pytest.skip
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        skip("needs apt-get and dpkg-deb to fetch Debian's containerd package")
    work = tmp_path_factory.mktemp("containerd-deb")
    got = subprocess.run(["apt-get", "download", "containerd"], cwd=work, capture_output=True, text=True, check=False, timeout=300)
    debs = list(work.glob("containerd_*.deb"))
    if got.returncode != 0 or not debs:
        skip(f"apt-get download containerd failed here: {got.stderr.strip()[-200:]}")
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(work / "x")], check=True)
    config = work / "x/etc/containerd/config.toml"
    if not config.is_file():
        skip(f"{debs[0].name} ships no /etc/containerd/config.toml")
    binary = work / "x/usr/bin/containerd"
    version = VERSION_DEBIAN
    if binary.is_file():
        probe = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=False)
        version = probe.stdout.strip() if probe.returncode == 0 else version
        if probe.returncode != 0:
            binary = None
    return config.read_text(), binary if binary and binary.is_file() else None, version


def _cri_status_function() -> str:
    """The ``cri_status`` function exactly as the bootstrap script defines it."""
    script = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)
    start = script.index("cri_status() {")
    return script[start : script.index("\n}\n", start) + 3]


@contextlib.contextmanager
def _daemon(debian_containerd, tmp_path: Path, config: str) -> Iterator[tuple[Path, Path]]:
    """Debian's containerd started as a daemon with ``config`` ("docker": Docker's packaged file,
    "ours": :func:`containerd_config` for 1.x with the nvidia runtime); yields (socket, ctr).

    Everything the daemon writes stays under ``tmp_path``: root, state, sockets and the ``opt``
    plugin's directory (``/opt/containerd`` by default). Skips where it cannot start (not root)."""
    _, binary, _ = debian_containerd
    if binary is None:
        pytest.skip("the packaged containerd binary does not run here")
    if os.geteuid() != 0:
        pytest.skip("starting containerd needs root")
    ctr = binary.parent / "ctr"
    sock = tmp_path / "containerd.sock"
    paths = f'root = "{tmp_path}/root"\nstate = "{tmp_path}/state"\n'
    tables = f'\n[grpc]\n  address = "{sock}"\n[ttrpc]\n  address = "{sock}.ttrpc"\n[debug]\n  address = "{tmp_path}/debug.sock"\n'
    if config == "docker":  # a version 1 file: plugins by their short ID
        text = DOCKER_CONFIG + "\n" + paths + tables + f'[plugins.opt]\n  path = "{tmp_path}/opt"\n'
    else:
        ours = containerd_config(2, nvidia=True)
        text = ours.replace("disabled_plugins = []\n", "disabled_plugins = []\n" + paths) + tables
        text += f'[plugins."io.containerd.internal.v1.opt"]\n  path = "{tmp_path}/opt"\n'
    (tmp_path / "config.toml").write_text(text)
    with (tmp_path / "containerd.log").open("w") as log:
        daemon = subprocess.Popen([str(binary), "--config", str(tmp_path / "config.toml")], stdout=log, stderr=subprocess.STDOUT)
        try:
            for _ in range(100):
                up = subprocess.run([str(ctr), "--address", str(sock), "version"], capture_output=True, check=False, timeout=10)
                if up.returncode == 0 or daemon.poll() is not None:
                    break
                time.sleep(0.1)
            if up.returncode != 0:
                pytest.skip(f"containerd did not start here: {(tmp_path / 'containerd.log').read_text()[-300:]}")
            yield sock, ctr
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


