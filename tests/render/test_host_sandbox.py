"""The generated host scripts run in a sandbox: real bash, system commands stubbed on a fake PATH.

Each stub (apt-get, systemctl, kubeadm, kubectl, containerd, curl, ...) appends its command
line to a call log and keeps what it "did" in a state directory, so a test can assert the call
order, that a second run changes nothing, and what a re-run does after a failure in the middle.
Host paths (``/etc``, ``/var``, ``/run``, ``/usr/share/keyrings``) are redirected into a
scratch root by rewriting the script text; nothing else in the script is changed.

containerd configs are the ones real packages ship: Debian's ``containerd`` .deb is fetched with
``apt-get download`` and unpacked with ``dpkg-deb -x`` at set-up (skipped where apt cannot fetch
it), and its ``containerd`` binary is then asked to load what we render (``containerd --config F
config dump``), and started as a daemon for the script's CRI check (``ctr plugins ls``). Docker's
``containerd.io`` cannot be downloaded here (its apt repository is not reachable); its config comes
from docker/containerd-packaging (tests/fixtures/containerd/SOURCE.md). Debian 12's apt offers
only containerd 1.6.20, so no 2.x binary is tested.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from hybridgpu.render.bootstrap import bootstrap_script, kubeadm_run_script, reset_script
from hybridgpu.render.containerd import CONTAINERD_MARKER, containerd_config
from tests.helpers.registry_mirror import ctr_pull, recording_mirror
from tests.helpers.sandbox import (
    BASH,
    CLUSTER,
    CP,
    CP2,
    CPU,
    DOCKER_CONFIG,
    GPU,
    VERSION_2X,
    VERSION_DEBIAN,
    VERSION_DOCKER,
    STUB,
    Sandbox,
    _cri_status_function,
    _daemon,
)

pytestmark = pytest.mark.skipif(BASH is None, reason="bash not installed")

def _index(calls: list[str], prefix: str) -> int:
    found = [i for i, c in enumerate(calls) if c.startswith(prefix)]
    assert found, (prefix, calls)
    return found[0]


# --------------------------------------------------------------------------- packaged configs


def test_packaged_configs_are_what_the_issue_says(debian_containerd):
    """The two packaged files really lack what kubeadm needs (so the old edit-in-place failed)."""
    debian, _, _ = debian_containerd
    parsed = tomllib.loads(debian)
    assert parsed["version"] == 2
    assert "SystemdCgroup" not in debian  # no runc options table at all
    assert parsed["plugins"]["io.containerd.grpc.v1.cri"]["cni"]["bin_dir"] == "/usr/lib/cni"
    assert tomllib.loads(DOCKER_CONFIG)["disabled_plugins"] == ["cri"]


@pytest.mark.parametrize("gpu", [False, True], ids=["runc", "nvidia"])
def test_rendered_config_loads_in_the_packaged_containerd(debian_containerd, tmp_path, gpu):
    """containerd 1.6 from the .deb loads our version-2 file: CRI on, SystemdCgroup on, nvidia runtime."""
    _, binary, _ = debian_containerd
    if binary is None:
        pytest.skip("the packaged containerd binary does not run here")
    path = tmp_path / "config.toml"
    path.write_text(containerd_config(2, nvidia=gpu))
    dump = subprocess.run([str(binary), "--config", str(path), "config", "dump"], capture_output=True, text=True, check=True).stdout
    merged = tomllib.loads(dump)
    assert merged["disabled_plugins"] == []
    cri = merged["plugins"]["io.containerd.grpc.v1.cri"]
    runtimes = cri["containerd"]["runtimes"]
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True
    assert runtimes["runc"]["runtime_type"] == "io.containerd.runc.v2"
    assert cri["cni"]["bin_dir"] == "/opt/cni/bin"
    if gpu:
        assert runtimes["nvidia"]["options"] == {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": True}
        assert cri["containerd"]["default_runtime_name"] == "nvidia"
    else:
        assert "nvidia" not in runtimes and cri["containerd"]["default_runtime_name"] == "runc"
    # Docker's packaged file, loaded by the same binary, really disables CRI.
    docker = tmp_path / "docker.toml"
    docker.write_text(DOCKER_CONFIG)
    dumped = subprocess.run([str(binary), "--config", str(docker), "config", "dump"], capture_output=True, text=True, check=True).stdout
    assert tomllib.loads(dumped)["disabled_plugins"] == ["cri"]


def test_version_3_layout_for_containerd_2():
    """containerd 2.x: runc options under 'io.containerd.cri.v1.runtime' (no 2.x binary here to load it)."""
    parsed = tomllib.loads(containerd_config(3, nvidia=True, nvidia_default=False))
    assert parsed["version"] == 3 and parsed["disabled_plugins"] == []
    runtime = parsed["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    assert runtime["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert runtime["default_runtime_name"] == "runc"
    assert runtime["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    with pytest.raises(ValueError, match="version"):
        containerd_config(4)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- bootstrap in the sandbox


def _packaged(name: str, debian_containerd) -> tuple[str, str]:
    if name == "debian":
        config, _, version = debian_containerd
        return config, version
    return DOCKER_CONFIG, VERSION_DOCKER


@pytest.mark.parametrize("package", ["debian", "docker"])
def test_bootstrap_owns_the_packaged_containerd_config(tmp_path, package, debian_containerd):
    original, version = _packaged(package, debian_containerd)
    box = Sandbox(tmp_path, containerd_version=version)
    box.file("/etc/containerd/config.toml").parent.mkdir(parents=True)
    box.file("/etc/containerd/config.toml").write_text(original)
    script = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)

    first = box.run(script)
    assert first.returncode == 0, first.stderr
    calls = box.calls
    # call order: kernel, packages, containerd (restarted: its config changed), Kubernetes packages
    order = ["modprobe overlay", "sysctl --system", "swapoff -a", "apt-get update", "containerd --version", "systemctl restart containerd"]
    order += ["apt-get install -y -qq kubelet=", "apt-mark hold kubelet kubeadm kubectl", "systemctl enable kubelet"]
    positions = [_index(calls, c) for c in order]
    assert positions == sorted(positions), calls
    written = box.file("/etc/containerd/config.toml").read_text()
    assert written.startswith(CONTAINERD_MARKER + "\n")
    parsed = tomllib.loads(written.replace(str(box.root), ""))
    assert parsed["disabled_plugins"] == [] and parsed["version"] == 2
    assert parsed["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    backup = box.file("/etc/containerd/config.toml.hybridgpu.orig")
    assert backup.read_text() == original  # the operator's (package's) file is kept
    assert "kept the previous" in first.stderr

    second = box.run(script)  # idempotent: nothing written, containerd not restarted, nothing installed
    assert second.returncode == 0, second.stderr
    assert "wrote " not in second.stderr and "kept the previous" not in second.stderr
    assert "systemctl restart containerd" not in box.calls and "systemctl start containerd" in box.calls
    assert not [c for c in box.calls if c.startswith("apt-get install -y -qq kubelet=")]
    assert backup.read_text() == original
    assert box.file("/etc/containerd/config.toml").read_text() == written


def test_bootstrap_writes_the_layout_of_the_installed_major_version(tmp_path):
    box = Sandbox(tmp_path, containerd_version=VERSION_2X)
    proc = box.run(bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True, nvidia_toolkit_version="1.18.2-1"))
    assert proc.returncode == 0, proc.stderr
    parsed = tomllib.loads(box.file("/etc/containerd/config.toml").read_text())
    assert parsed["version"] == 3
    runtime = parsed["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    assert runtime["default_runtime_name"] == "nvidia"
    assert not box.file("/etc/containerd/config.toml.hybridgpu.orig").exists()  # there was no file before
    # NVIDIA toolkit installed before the single containerd restart
    toolkit = next(i for i, c in enumerate(box.calls) if c.startswith("apt-get install") and " nvidia-container-toolkit=1.18.2-1 " in f"{c} ")
    assert toolkit < _index(box.calls, "systemctl restart containerd")
    unknown = Sandbox(tmp_path / "v3", containerd_version="containerd example.com/fork 3.0.0 abc")
    refused = unknown.run(bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False))
    assert refused.returncode != 0 and "containerd 3.0.0 is not supported" in refused.stderr


def test_bootstrap_after_a_failure_in_the_middle(tmp_path, debian_containerd):
    original, version = _packaged("debian", debian_containerd)
    box = Sandbox(tmp_path, containerd_version=version)
    box.file("/etc/containerd/config.toml").parent.mkdir(parents=True)
    box.file("/etc/containerd/config.toml").write_text(original)
    script = bootstrap_script(CLUSTER, CP, nvidia_toolkit=False)
    failed = box.run(script, FAIL_AT="apt-get install -y -qq kubelet=")
    assert failed.returncode != 0
    assert box.calls[-1].startswith("apt-get install -y -qq kubelet=")  # stopped right there
    assert "apt-mark hold kubelet kubeadm kubectl" not in box.calls
    assert not box.file("/etc/kubernetes/audit/policy.yaml").exists()  # later steps did not run
    # fix the cause and run again: it finishes; containerd's config is already right (no restart)
    again = box.run(script)
    assert again.returncode == 0, again.stderr
    assert "systemctl restart containerd" not in box.calls
    assert any(c.startswith("apt-get install -y -qq kubelet=") for c in box.calls)
    assert box.file("/etc/kubernetes/audit/policy.yaml").exists()
    assert box.file("/etc/containerd/config.toml.hybridgpu.orig").read_text() == original


# --------------------------------------------------------------------------- containerd: what the running daemon loaded (issue 27)
# containerd reads config.toml (and what it imports) only when it starts; the stub daemon models
# that (load_containerd in STUB). Registry hosts under config_path are read on every pull instead
# (containerd docs/hosts.md at v1.6.20: "Updates under this directory do not require restarting
# the containerd daemon").

LOADED = "/var/lib/hybridgpu/containerd-loaded.sha256"
READY = "is ready for kubeadm"


def _running(box: Sandbox, config: str | None = None) -> Path:
    """The stub daemon's loaded config; with ``config``, containerd already runs with that file."""
    running = box.state / "containerd-running"
    if config is not None:
        box.file("/etc/containerd/config.toml").parent.mkdir(parents=True, exist_ok=True)
        box.file("/etc/containerd/config.toml").write_text(config)
        running.write_text(config)
    return running


@pytest.mark.parametrize(
    ("package", "fail_at"),
    [("docker", "apt-get install -y -qq --allow-change-held-packages"), ("debian", "apt-get install -y -qq --allow-change-held-packages"), ("docker", "curl")],
    ids=["docker-toolkit", "debian-toolkit", "docker-key"],
)
def test_rerun_after_a_failure_between_config_write_and_restart_restarts_containerd(tmp_path, package, fail_at, debian_containerd):
    """Issue 27: the first run writes config.toml, then fails before the restart (NVIDIA key
    download, toolkit install); the re-run found the file unchanged and only ran
    `systemctl start`, so containerd kept the packaged file (Docker's: no CRI) and the script
    still said the host was ready. Now the re-run restarts it and checks CRI before saying so."""
    original, version = _packaged(package, debian_containerd)
    box = Sandbox(tmp_path, containerd_version=version, node="gpu-01")
    running = _running(box, original)
    script = bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True, nvidia_toolkit_version="1.18.2-1")

    failed = box.run(script, FAIL_AT=fail_at)
    assert failed.returncode != 0 and box.calls[-1].startswith(fail_at)
    written = box.file("/etc/containerd/config.toml").read_text()
    assert written.startswith(CONTAINERD_MARKER)  # the new file is on disk ...
    assert running.read_text() == original  # ... but the daemon still runs the packaged one
    assert not box.file(LOADED).exists() and READY not in failed.stderr

    again = box.run(script)
    assert again.returncode == 0, again.stderr
    assert "wrote " + str(box.file("/etc/containerd/config.toml")) not in again.stderr  # the file did not change in this run
    calls = box.calls
    assert "systemctl restart containerd" in calls, calls
    positions = [_index(calls, c) for c in ("apt-get install -y -qq --allow-change-held-packages", "systemctl restart containerd", "ctr ")]
    assert positions == sorted(positions), calls  # toolkit, then the restart, then the CRI check
    assert running.read_text() == written  # the daemon now runs our file
    assert "no completed run restarted it with this configuration" in again.stderr
    assert again.stderr.rstrip().endswith(f"{READY} (config goes to {box.root}/etc/kubernetes/hybridgpu/kubeadm.yaml)")
    assert box.file(LOADED).read_text().strip() and box.file(LOADED).read_text().endswith("\n")

    third = box.run(script)  # idempotent: nothing restarted once the daemon has the file
    assert third.returncode == 0, third.stderr
    assert "systemctl restart containerd" not in box.calls and "systemctl start containerd" in box.calls
    assert _index(box.calls, "systemctl start containerd") < _index(box.calls, "ctr ")  # CRI checked on every run


def test_a_restart_by_someone_else_with_another_file_is_undone(tmp_path):
    """After a complete run an operator replaced config.toml and restarted containerd with it: the
    next run rewrites the file and restarts (the file changed in this run)."""
    box = Sandbox(tmp_path, containerd_version=VERSION_2X)
    script = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)
    assert box.run(script).returncode == 0
    ours = box.file("/etc/containerd/config.toml").read_text()
    _running(box, DOCKER_CONFIG)  # edited and restarted by hand: containerd without CRI
    again = box.run(script)
    assert again.returncode == 0, again.stderr
    assert "restarting containerd (configuration changed)" in again.stderr
    assert (box.state / "containerd-running").read_text() == ours


def test_containerd_without_cri_stops_before_ready(tmp_path):
    """After the (re)start the script asks containerd (`ctr plugins ls`) for its CRI plugin; a
    drop-in that disables it stops the run before the kubelet packages, and nothing is recorded
    as loaded, so the run after the fix restarts containerd again."""
    box = Sandbox(tmp_path, containerd_version=VERSION_2X)
    dropin = box.file("/etc/containerd/conf.d/99-local.toml")
    dropin.parent.mkdir(parents=True)
    dropin.write_text('version = 3\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n')
    script = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)
    failed = box.run(script)
    assert failed.returncode != 0
    assert "containerd runs without its CRI plugin (ctr plugins ls: not loaded)" in failed.stderr
    assert "disabled_plugins" in failed.stderr and READY not in failed.stderr
    assert box.calls.count("sleep 2") == 5  # it waited for a slow start before giving up
    assert not [c for c in box.calls if c.startswith("apt-get install -y -qq kubelet=")]
    assert not box.file(LOADED).exists()
    dropin.unlink()
    fixed = box.run(script)
    assert fixed.returncode == 0, fixed.stderr
    assert "systemctl restart containerd" in box.calls and READY in fixed.stderr


def test_a_restart_that_fails_names_the_log_and_is_retried(tmp_path):
    """containerd refuses its files (on 2.3, a drop-in with a higher version than config.toml:
    v2.3.0 cmd/containerd/server/config/config.go LoadConfigWithPlugins): the run stops at the
    restart naming where to look, records nothing, and the next run restarts again."""
    box = Sandbox(tmp_path, containerd_version=VERSION_2X)
    script = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)
    failed = box.run(script, FAIL_AT="systemctl restart containerd")
    assert failed.returncode != 0 and box.calls[-1] == "systemctl restart containerd"
    assert "containerd does not run with" in failed.stderr and "journalctl -u containerd" in failed.stderr
    assert not box.file(LOADED).exists()
    again = box.run(script)
    assert again.returncode == 0, again.stderr
    assert "systemctl restart containerd" in box.calls and box.file(LOADED).exists()


def test_dropins_refused_on_containerd_1_and_merged_on_2(tmp_path):
    """containerd 1.x would replace its whole CRI table with a drop-in's (containerd#5837; v1.6.20
    and v1.7.24 services/server/config/config.go mergeConfig), so the 1.x script refuses one and
    names the fix; 2.x imports them (merged key by key since PR #9982, v2.0.0), and a changed
    drop-in restarts containerd on the next run."""
    mirror = '[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]\n  endpoint = ["https://mirror.example"]\n'
    old = Sandbox(tmp_path / "v1", containerd_version=VERSION_DEBIAN)
    _running(old, "# the operator's file\n")
    dropin = old.file("/etc/containerd/conf.d/mirror.toml")
    dropin.parent.mkdir(parents=True)
    dropin.write_text(mirror)
    refused = old.run(bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False))
    assert refused.returncode != 0
    message = refused.stderr.replace(str(old.root), "")
    assert "containerd 1.6.20~ds1 does not merge drop-ins" in message
    assert "/etc/containerd/conf.d/mirror.toml" in message and "containerd#5837" in message
    assert "/etc/containerd/certs.d/<registry>/hosts.toml" in message
    assert old.file("/etc/containerd/config.toml").read_text() == "# the operator's file\n"  # nothing written
    assert "systemctl restart containerd" not in old.calls

    new = Sandbox(tmp_path / "v2", containerd_version=VERSION_2X)
    dropin = new.file("/etc/containerd/conf.d/50-local.toml")
    dropin.parent.mkdir(parents=True)
    dropin.write_text("version = 3\n[plugins.'io.containerd.cri.v1.images']\n  max_concurrent_downloads = 6\n")
    script = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)
    assert new.run(script).returncode == 0
    assert "max_concurrent_downloads = 6" in (new.state / "containerd-running").read_text()
    assert new.run(script).returncode == 0 and "systemctl restart containerd" not in new.calls
    dropin.write_text("version = 3\n[plugins.'io.containerd.cri.v1.images']\n  max_concurrent_downloads = 8\n")
    changed = new.run(script)
    assert changed.returncode == 0 and "systemctl restart containerd" in new.calls
    assert "max_concurrent_downloads = 8" in (new.state / "containerd-running").read_text()


@pytest.mark.parametrize("version", [VERSION_DEBIAN, VERSION_2X], ids=["1.x", "2.x"])
def test_registry_hosts_need_no_restart(tmp_path, version):
    """A mirror added as certs.d/<registry>/hosts.toml between runs restarts nothing."""
    box = Sandbox(tmp_path, containerd_version=version)
    script = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)
    assert box.run(script).returncode == 0
    assert box.file("/etc/containerd/certs.d").is_dir()
    hosts = box.file("/etc/containerd/certs.d/docker.io/hosts.toml")
    hosts.parent.mkdir()
    hosts.write_text('server = "https://registry-1.docker.io"\n\n[host."https://mirror.example"]\n  capabilities = ["pull", "resolve"]\n')
    again = box.run(script)
    assert again.returncode == 0, again.stderr
    assert "systemctl restart containerd" not in box.calls


# --------------------------------------------------------------------------- containerd 1.x drop-ins, with Debian's binary (issue 27)


def _dump(binary: Path, config: Path) -> dict:
    out = subprocess.run([str(binary), "--config", str(config), "config", "dump"], capture_output=True, text=True, check=True, timeout=30)
    return tomllib.loads(out.stdout)


def test_a_dropin_replaces_the_whole_cri_table_on_containerd_1(debian_containerd, tmp_path):
    """The upstream behaviour (containerd#5837): with the ``imports`` line hybridgpu wrote before
    issue 27, a drop-in that only adds a docker.io mirror (what docs/onprem.md told operators to do)
    leaves containerd 1.6.20 without SystemdCgroup and the nvidia runtime. Source: containerd
    v1.6.20 services/server/config/config.go mergeConfig, "Replace entire sections instead of
    merging map's values" (the same at v1.7.24; removed for plugins by PR #9982, first in v2.0.0)."""
    _, binary, _ = debian_containerd
    if binary is None:
        pytest.skip("the packaged containerd binary does not run here")
    dropins = tmp_path / "conf.d"
    dropins.mkdir()
    (dropins / "mirror.toml").write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]\n  endpoint = ["https://mirror.example"]\n'
    )
    ours = containerd_config(2, nvidia=True)
    before_27 = ours.replace("version = 2\n", f"version = 2\nimports = [\"{dropins}/*.toml\"]\n")
    config = tmp_path / "config.toml"
    config.write_text(before_27)
    merged = _dump(binary, config)
    # `config dump` lists the files it loaded as imports (v1.6.20 LoadConfig: "Fix up the list of
    # config files loaded", from a map, so in any order)
    assert sorted(merged["imports"]) == sorted([str(config), str(dropins / "mirror.toml")])
    cri = merged["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["registry"]["mirrors"]["docker.io"]["endpoint"] == ["https://mirror.example"]  # the drop-in's table ...
    runtimes = cri["containerd"]["runtimes"]
    assert "nvidia" not in runtimes and cri["containerd"]["default_runtime_name"] == "runc"  # ... replaced ours
    assert runtimes["runc"]["options"].get("SystemdCgroup", False) is False
    assert cri["registry"].get("config_path", "") == ""

    # What we render now: no imports on 1.x, mirrors through config_path; the CRI table stays ours.
    config.write_text(ours)
    merged = _dump(binary, config)
    cri = merged["plugins"]["io.containerd.grpc.v1.cri"]
    assert merged["imports"] == [str(config)]  # the drop-in left in conf.d is not read
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert cri["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert cri["registry"].get("mirrors", {}) == {}


@pytest.mark.parametrize("config", ["docker", "ours"])
def test_cri_check_against_the_real_daemon(debian_containerd, tmp_path, config):
    """The script's CRI check, run against Debian's containerd 1.6.20 started as a daemon: with
    Docker's containerd.io file (``disabled_plugins = ["cri"]``) it finds no CRI plugin, with ours
    it finds it ``ok``. A disabled plugin is left out of the plugin graph (v1.6.20
    services/server/server.go LoadPlugins: ``plugin.Graph(filter(config.DisabledPlugins))``) and
    so out of ``ctr plugins ls``, whose columns are TYPE ID PLATFORMS STATUS
    (cmd/ctr/commands/plugins/plugins.go)."""
    with _daemon(debian_containerd, tmp_path, config) as (sock, ctr):
        check = f"set -euo pipefail\nCRI_SOCKET=unix://{sock}\n{_cri_status_function()}cri_status\n"
        env = {"PATH": f"{ctr.parent}:/usr/bin:/bin"}
        status = subprocess.run([BASH, "-c", check], env=env, capture_output=True, text=True, check=True, timeout=30).stdout
        assert status == ("" if config == "docker" else "ok\n")


def test_a_registry_mirror_in_hosts_toml_takes_the_pull(debian_containerd, tmp_path):
    """The mechanism docs/onprem.md gives for mirrors on 1.x, with Debian's 1.6.20: a
    ``<hosts dir>/docker.io/hosts.toml`` shaped like the page's example sends a docker.io pull to
    the mirror first. ``ctr --hosts-dir`` reads the directory with the same code the CRI plugin
    uses for ``config_path`` (v1.6.20 remotes/docker/config/hosts.go ``ConfigureHosts``, called
    from pkg/cri/server/image_pull.go ``registryHosts``). The path is the OCI distribution API's;
    the ``ns`` query names the upstream registry on a request to a mirror (v1.6.20
    remotes/docker/resolver.go)."""
    with recording_mirror() as mirror:
        hosts = tmp_path / "certs.d/docker.io/hosts.toml"
        hosts.parent.mkdir(parents=True)
        hosts.write_text(
            f'server = "http://127.0.0.1:{mirror.upstream_port}"\n\n'
            f'[host."http://127.0.0.1:{mirror.port}"]\n  capabilities = ["pull", "resolve"]\n'
        )
        with _daemon(debian_containerd, tmp_path, "ours") as (sock, ctr):
            pull = ctr_pull(ctr, sock, tmp_path / "certs.d", "docker.io/library/busybox:1.36")
        assert pull.returncode != 0  # neither the mirror nor the (closed) upstream has the image
        assert mirror.seen and mirror.seen[0].endswith(" /v2/library/busybox/manifests/1.36?ns=docker.io"), (mirror.seen, pull.stderr)

# --------------------------------------------------------------------------- kubeadm init/join in the sandbox

CONFIG = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nbootstrapTokens: [{token: abcdef.0123456789abcdef}]\n"


def _upload(box: Sandbox) -> Path:
    path = box.file("/etc/kubernetes/hybridgpu/kubeadm.yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CONFIG)
    return path


def test_init_fresh_then_second_run_does_nothing(tmp_path):
    box = Sandbox(tmp_path)
    script = kubeadm_run_script(CP, first=True)
    config = _upload(box)
    first = box.run(script)
    assert first.returncode == 0, first.stderr
    assert "kubeadm init --config" in "\n".join(box.calls)
    init = next(c for c in box.calls if c.startswith("kubeadm init"))
    assert "--skip-token-print" in init and "--skip-certificate-key-print" in init
    # after init the script checked what shows completion, in this order
    after = box.calls[box.calls.index(init) + 1 :]
    assert [c.split(" --request-timeout=10s ")[1] for c in after] == [
        "get --raw=/readyz",
        "get node cp-01 -o name",
        "-n kube-system get configmap kubeadm-config -o name",
        "-n kube-public get configmap cluster-info -o name",
    ]
    assert not config.exists()  # token and key removed
    assert box.file("/etc/kubernetes/hybridgpu/complete").exists()
    assert "kubeadm init complete" in first.stderr

    _upload(box)  # e.g. the config step ran again: a complete host still does nothing
    second = box.run(script)
    assert second.returncode == 0, second.stderr
    assert not [c for c in box.calls if c.startswith("kubeadm")]
    assert "already complete" in second.stderr
    assert not config.exists()


def test_init_rerun_after_kubelet_conf_but_no_api_server_resets_and_retries(tmp_path):
    """The old script exited 0 here because /etc/kubernetes/kubelet.conf existed."""
    box = Sandbox(tmp_path)
    script = kubeadm_run_script(CP, first=True)
    config = _upload(box)
    failed = box.run(script, KUBEADM_STOPS_BEFORE="wait-control-plane")
    assert failed.returncode != 0
    assert box.file("/etc/kubernetes/kubelet.conf").exists()
    assert config.exists() and not box.file("/etc/kubernetes/hybridgpu/complete").exists()

    again = box.run(script)
    assert again.returncode == 0, again.stderr
    assert "the API server does not answer (phase wait-control-plane)" in again.stderr
    kubeadm = [c for c in box.calls if c.startswith("kubeadm")]
    assert kubeadm[0].startswith("kubeadm reset --force --cri-socket unix:///run/containerd/containerd.sock")
    assert kubeadm[1].startswith("kubeadm init --config") and "--skip-phases" not in kubeadm[1]
    assert box.file("/etc/kubernetes/hybridgpu/complete").exists() and not config.exists()


def test_init_rerun_with_live_api_server_retries_the_later_phases(tmp_path):
    box = Sandbox(tmp_path)
    script = kubeadm_run_script(CP, first=True)
    _upload(box)
    assert box.run(script, KUBEADM_STOPS_BEFORE="bootstrap-token").returncode != 0
    again = box.run(script)
    assert again.returncode == 0, again.stderr
    assert "kube-public/cluster-info is missing" in again.stderr
    kubeadm = [c for c in box.calls if c.startswith("kubeadm")]
    assert len(kubeadm) == 1 and "reset" not in kubeadm[0]  # no reset of a control plane that is up
    assert kubeadm[0].endswith("--skip-phases=preflight,certs,kubeconfig,etcd,control-plane,kubelet-start")


@pytest.mark.parametrize("node", [CPU, CP2], ids=["worker", "control-plane"])
def test_join_after_failure_resets_and_joins_again(tmp_path, node):
    box = Sandbox(tmp_path, node=node.hostname)
    script = kubeadm_run_script(node, first=False)
    env = {"JOIN_CONTROL_PLANE": "1" if node.role == "control-plane" else "0"}
    _upload(box)
    assert box.run(script, KUBEADM_STOPS_BEFORE="kubelet-start", **env).returncode != 0
    again = box.run(script, **env)
    assert again.returncode == 0, again.stderr
    assert "did not finish" in again.stderr
    kubeadm = [c for c in box.calls if c.startswith("kubeadm")]
    assert kubeadm[0].startswith("kubeadm reset --force") and kubeadm[1].startswith("kubeadm join --config")
    credentials = "/etc/kubernetes/admin.conf" if node.role == "control-plane" else "/etc/kubernetes/kubelet.conf"
    assert all(credentials in c for c in box.calls if c.startswith("kubectl"))
    third = box.run(script, **env)
    assert third.returncode == 0 and not [c for c in box.calls if c.startswith("kubeadm")]


def test_join_reports_an_incomplete_host_after_kubeadm_returns(tmp_path):
    """kubeadm join exits 0 but the Node never registers: the script waits, then fails naming it."""
    box = Sandbox(tmp_path, node="cpu-01")
    _upload(box)
    stub = box.base / "bin" / "kubeadm"
    stub.write_text(STUB.replace('touch "${S}/api" "${S}/node" "${S}/kubeadm-config" "${S}/cluster-info"', 'touch "${S}/api" "${S}/kubeadm-config"'))
    proc = box.run(kubeadm_run_script(CPU, first=False))
    assert proc.returncode != 0
    assert "node cpu-01 is not registered (phase kubelet-start)" in proc.stderr
    assert box.calls.count("sleep 5") == 12
    assert not box.file("/etc/kubernetes/hybridgpu/complete").exists()


def test_reset_removes_the_completion_marker(tmp_path):
    box = Sandbox(tmp_path)
    marker = box.file("/etc/kubernetes/hybridgpu/complete")
    marker.parent.mkdir(parents=True)
    marker.touch()
    proc = box.run(reset_script())
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert box.calls[0].startswith("kubeadm reset --force")


def test_sandbox_env_does_not_leak_real_paths():
    """The redirect covers every absolute host path the scripts write (guards the sandbox itself)."""
    for script in (bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True), kubeadm_run_script(CP, first=True), reset_script()):
        rewritten = Sandbox.script(type("B", (), {"root": Path("/sandbox")})(), script)  # type: ignore[arg-type]
        for prefix in ("/etc/", "/var/", "/run/"):
            assert f" {prefix}" not in rewritten and f"={prefix}" not in rewritten, prefix
    assert os.sep == "/"


# --------------------------------------------------------------------------- state table: what a re-run does
# (host files left behind, cluster facts the kubectl stub answers) -> first kubeadm call and the log line.
KC, AC, BK = "etc/kubernetes/kubelet.conf", "etc/kubernetes/admin.conf", "etc/kubernetes/bootstrap-kubelet.conf"
APISERVER, KUBELET_CONFIG = "etc/kubernetes/manifests/kube-apiserver.yaml", "var/lib/kubelet/config.yaml"
ALL = ("api", "node", "kubeadm-config", "cluster-info", "control-plane-label")
RESUME = "resume"  # kubeadm init --config ... --skip-phases=<the phases up to kubelet-start>
STATES = [
    # id, node, host files, cluster facts, first kubeadm call (None: nothing to do), expected log text
    ("init-fresh", CP, (), (), "kubeadm init --config", "kubeadm init on cp-01"),
    ("init-complete", CP, (KC, AC, APISERVER), ALL, None, "already complete"),
    ("init-kubelet-conf-only", CP, (KC,), (), "kubeadm reset", "no /etc/kubernetes/admin.conf (phase kubeconfig)"),
    ("init-api-down", CP, (KC, AC, APISERVER), (), "kubeadm reset", "the API server does not answer (phase wait-control-plane)"),
    ("init-manifests-only", CP, (APISERVER,), (), "kubeadm reset", "did not finish"),
    ("init-kubelet-config-only", CP, (KUBELET_CONFIG,), (), "kubeadm reset", "did not finish"),
    ("init-node-missing", CP, (KC, AC), ("api",), RESUME, "node cp-01 is not registered"),
    ("init-no-kubeadm-config", CP, (KC, AC), ("api", "node"), RESUME, "kube-system/kubeadm-config is missing (phase upload-config)"),
    ("init-no-cluster-info", CP, (KC, AC), ("api", "node", "kubeadm-config"), RESUME, "kube-public/cluster-info is missing"),
    ("init-bootstrap-conf-only", CP, (BK,), (), "kubeadm reset", "did not finish"),
    ("join-fresh", CPU, (), (), "kubeadm join --config", "kubeadm join on cpu-01"),
    ("join-complete", CPU, (KC,), ALL, None, "already complete"),
    ("join-api-down", CPU, (KC,), (), "kubeadm reset", "the API server does not answer"),
    ("join-bootstrap-only", CPU, (BK,), (), "kubeadm reset", "no /etc/kubernetes/kubelet.conf (phase kubelet-start)"),
    ("join-not-registered", CPU, (KC,), ("api",), "kubeadm reset", "node cpu-01 is not registered"),
    ("join-no-kubeadm-config", CPU, (KC,), ("api", "node"), "kubeadm reset", "kube-system/kubeadm-config is missing"),
    ("cp-join-complete", CP2, (KC, AC, APISERVER), ALL, None, "already complete"),
    ("cp-join-not-marked", CP2, (KC, AC, APISERVER), ("api", "node", "kubeadm-config"), "kubeadm reset", "not marked as a control plane"),
]


@pytest.mark.parametrize(("node", "files", "facts", "first_call", "message"), [s[1:] for s in STATES], ids=[s[0] for s in STATES])
def test_rerun_decision_table(tmp_path, node, files, facts, first_call, message):
    box = Sandbox(tmp_path, node=node.hostname)
    for path in files:
        box.file(path).parent.mkdir(parents=True, exist_ok=True)
        box.file(path).write_text("left over\n")
    for fact in facts:
        (box.state / fact).touch()
    config = _upload(box)
    first = node is CP
    proc = box.run(kubeadm_run_script(node, first=first), JOIN_CONTROL_PLANE="1" if node.role == "control-plane" else "0")
    assert proc.returncode == 0, proc.stderr
    assert message in proc.stderr.replace(str(box.root), "")
    kubeadm = [c for c in box.calls if c.startswith("kubeadm")]
    if first_call is None:
        assert kubeadm == []
    elif first_call == RESUME:
        assert len(kubeadm) == 1 and kubeadm[0].startswith("kubeadm init --config"), kubeadm
        assert kubeadm[0].endswith("--skip-phases=preflight,certs,kubeconfig,etcd,control-plane,kubelet-start")
    else:
        assert kubeadm[0].startswith(first_call), kubeadm
        assert not any("--skip-phases" in c for c in kubeadm)
        if first_call == "kubeadm reset":
            assert kubeadm[1].startswith(f"kubeadm {'init' if first else 'join'} --config")
    assert box.file("/etc/kubernetes/hybridgpu/complete").exists() and not config.exists()


VERSION_LINES = [
    # `containerd --version` as packages print it -> config version written (None: refused)
    (VERSION_DEBIAN, 2),
    (VERSION_DOCKER, 2),
    ("containerd github.com/containerd/containerd 1.7.24 1.7.24-0ubuntu1~24.04.2", 2),
    ("containerd github.com/containerd/containerd v1.7.28 b98a3aace656320842a23f4a0a33f5af8fdfd9a6", 2),
    ("containerd github.com/containerd/containerd 1.6.33 d2d58213f83a351ca8f528a95fbd145f5654e957", 2),
    (VERSION_2X, 3),
    ("containerd github.com/containerd/containerd/v2 v2.0.0 207ad711eabd375a01713109a8a197d197ff6542", 3),
    ("containerd containerd.io v2.1.5 fcd43222d6b07379a4be9786bda52438f0dd16a1", 3),
    ("containerd github.com/containerd/containerd/v2 2.2.0+unknown", 3),
    ("containerd github.com/containerd/containerd 1.5.18 ", 2),
    ("containerd example.com/fork 3.0.0 abc", None),
    ("containerd github.com/containerd/containerd 0.2.3", None),
    ("containerd", None),
    ("", None),
    ("containerd github.com/containerd/containerd v10.1.0", None),
    ("containerd github.com/containerd/containerd 12.0", None),
    ("containerd github.com/containerd/containerd latest", None),
    ("containerd github.com/containerd/containerd v", None),
    ("containerd github.com/containerd/containerd 2x", None),
    ("containerd github.com/containerd/containerd .1.7", None),
]


@pytest.mark.parametrize(("line", "version"), VERSION_LINES, ids=[f"{i}-{v}" for i, (_, v) in enumerate(VERSION_LINES)])
def test_config_layout_follows_the_installed_version(tmp_path, line, version):
    box = Sandbox(tmp_path, containerd_version=line)
    proc = box.run(bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False))
    config = box.file("/etc/containerd/config.toml")
    if version is None:
        assert proc.returncode != 0 and "is not supported here (1.x or 2.x)" in proc.stderr
        assert not config.exists()
    else:
        assert proc.returncode == 0, proc.stderr
        assert tomllib.loads(config.read_text())["version"] == version
