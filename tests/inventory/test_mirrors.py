"""Sites without internet (issue 27, section 3): the inventory's ``mirrors`` section, the registry hosts and apt sources it renders.

* The fixtures under tests/fixtures/inventory/mirrors/{pass,fail}/ go through ``hybridgpu inventory
  validate`` and ``render``. Headers: ``# verdict:``; ``# expect: <text>`` (fail: in the error
  output); ``# hosts: <registry>...`` (pass: the registries whose ``hosts.toml`` the gpu-worker's
  bootstrap script writes).
* containerd's registry host configuration, as the rendered ``hosts.toml`` files rely on it
  (containerd/containerd at commit 301026e58c619e63d09c0ec411012e54c0124b03, v2.4.0-beta.0-70, read
  2026-11-26): ``docs/hosts.md`` (one ``hosts.toml`` per registry host namespace
  ``[registry_host_name|IP address][:port]`` or ``_default``; ``server``; ``[host."<url>"]`` with
  ``capabilities``, ``ca``, ``skip_verify``, ``override_path``; "Updates under this directory do not
  require restarting the containerd daemon"); ``core/remotes/docker/config/hosts.go``
  (``ConfigureHosts`` returns a function that reads the host directory each time the resolver asks
  for a host, and without a ``server`` falls back to ``https://<host>``, ``registry-1.docker.io`` for
  ``docker.io``); ``internal/cri/server/images/image_pull.go`` (``registryHosts``: the CRI pull builds
  its resolver from ``config_path`` through ``ConfigureHosts`` on every pull).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.inventory.mirrors import KUBERNETES_APT, Mirrors, apt_sources
from hybridgpu.inventory.upgrade import NodeUpgrade
from hybridgpu.render.bootstrap import bootstrap_script
from hybridgpu.render.containerd import CONTAINERD_MARKER, registry_hosts_toml
from hybridgpu.render.upgrade import node_kubeadm_script
from tests.helpers import ROOT
from tests.helpers.registry_mirror import ctr_pull, recording_mirror
from tests.helpers.inventory_cases import cases, header, refusal_tests, relative, runner
from tests.helpers.sandbox import CLUSTER, CPU, GPU, VERSION_DEBIAN, Sandbox, _daemon

FIXTURES = ROOT / "tests" / "fixtures" / "inventory" / "mirrors"
PASS, FAIL = cases(FIXTURES)
SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"
PUBLIC_DEB = "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/${K8S_MINOR}/deb/ /"


test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)


@pytest.mark.parametrize("fixture", [FIXTURES / "fail" / "inline-password.yaml", FIXTURES / "fail" / "inline-credential-string.yaml"], ids=lambda p: p.stem)
def test_an_inline_credential_is_never_echoed(fixture, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["inventory", "validate", relative(fixture)])
    assert result.exit_code == 2 and "s3cr3t-hunter2" not in result.output
    assert "pulumiConfig" in result.output  # the fix says where a credential goes


def _heredocs(script: str) -> dict[str, str]:
    """registry directory -> the hosts.toml text the script writes for it."""
    found = re.findall(r'write_file "\$\{CONTAINERD_CERTS\}/([^"]+)/hosts\.toml" 0644 <<\'HYBRIDGPU_EOF\'\n(.*?)HYBRIDGPU_EOF\n', script, re.S)
    return dict(found)


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass_and_renders_the_registry_hosts(fixture, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    name = relative(fixture)
    result = runner.invoke(app, ["inventory", "validate", name])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    rendered = runner.invoke(app, ["inventory", "render", name, "--out", str(out)])
    assert rendered.exit_code == 0, rendered.output
    expected = (header(fixture, "hosts") or [""])[0].split()
    for host in ("cp-01", "gpu-01"):
        script = (out / host / "bootstrap.sh").read_text()
        written = _heredocs(script)
        assert list(written) == expected
        assert f"readonly MIRRORED_REGISTRIES={shlex.quote(' '.join(expected))}\n" in script
        for text in written.values():
            assert text.startswith(CONTAINERD_MARKER + "\n")
            tomllib.loads(text)  # valid TOML


def test_hosts_toml_as_containerd_reads_it():
    """Expected tables written before rendering, from containerd docs/hosts.md (see the module docstring)."""
    mirrors = Mirrors.model_validate(
        {
            "registries": [
                {
                    "registry": "docker.io",
                    "mirrors": [
                        {"url": "https://harbor.lab.internal/v2/proxy-dockerhub", "overridePath": True, "ca": "/etc/ssl/certs/lab-ca.pem"},
                        {"url": "http://10.50.0.5:5000", "insecure": True, "skipVerify": True, "capabilities": ["pull"]},
                    ],
                },
                {"registry": "_default", "mirrors": [{"url": "https://registry.lab.internal"}]},
                {"registry": "nvcr.io", "server": "https://nvcr.io", "mirrors": [{"url": "https://harbor.lab.internal"}]},
            ]
        }
    )
    docker, default, nvcr = (tomllib.loads(registry_hosts_toml(entry)) for entry in mirrors.registries)
    assert docker == {
        "server": "https://registry-1.docker.io",  # hosts.go ConfigureHosts: docker.io's default host
        "host": {
            "https://harbor.lab.internal/v2/proxy-dockerhub": {"capabilities": ["pull", "resolve"], "ca": "/etc/ssl/certs/lab-ca.pem", "override_path": True},
            "http://10.50.0.5:5000": {"capabilities": ["pull"], "skip_verify": True},
        },
    }
    assert list(docker["host"]) == ["https://harbor.lab.internal/v2/proxy-dockerhub", "http://10.50.0.5:5000"]  # tried in list order
    assert default == {"host": {"https://registry.lab.internal": {"capabilities": ["pull", "resolve"]}}}  # _default: no server
    assert nvcr["server"] == "https://nvcr.io"


def test_without_mirrors_the_scripts_use_the_public_repositories_as_before():
    """No `mirrors`: no registry hosts, pkgs.k8s.io and NVIDIA's list as the scripts had them (byte-identical
    renders of the sample were checked by hand with `hybridgpu inventory render` before and after this change)."""
    assert apt_sources(None).kubernetes is KUBERNETES_APT
    script = bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True, nvidia_toolkit_version="1.18.2-1")
    assert "MIRRORED_REGISTRIES" not in script and "hosts.toml\" 0644" not in script
    assert PUBLIC_DEB in script
    assert 'add_apt_key "https://pkgs.k8s.io/core:/stable:/${K8S_MINOR}/deb/Release.key" /etc/apt/keyrings/kubernetes-apt-keyring.gpg' in script
    assert "fetch https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list" in script
    upgrade = node_kubeadm_script(NodeUpgrade("cp-01", "10.0.0.11", "control-plane", "apply", True), "1.36.0")
    assert PUBLIC_DEB in upgrade


def test_the_sample_renders_the_same_with_an_empty_apt_section(tmp_path):
    """`mirrors: {apt: {}}` changes only the registry-hosts part (the cleanup), never the apt lines."""
    inventory = load_inventory(SAMPLE)
    plain = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)
    with_empty = bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False, mirrors=Mirrors.model_validate({"apt": {}}))
    assert inventory.site.mirrors is None
    assert [line for line in with_empty.splitlines() if "apt" in line] == [line for line in plain.splitlines() if "apt" in line]


MIRRORS = Mirrors.model_validate(
    {
        "apt": {
            "kubernetes": {"url": "https://apt.lab.internal/k8s/core:/stable:/{minor}/deb/"},
            "nvidia": {"url": "https://apt.lab.internal/nvidia/stable/deb/$(ARCH)", "keyFile": "/usr/share/keyrings/lab-mirror.gpg"},
        },
        "registries": [
            {"registry": "registry.k8s.io", "mirrors": [{"url": "https://harbor.lab.internal/v2/proxy-k8s", "overridePath": True}]},
            {"registry": "nvcr.io", "mirrors": [{"url": "https://harbor.lab.internal/v2/proxy-nvcr", "overridePath": True}]},
        ],
    }
)


def test_upgrade_scripts_take_the_kubernetes_mirror():
    script = node_kubeadm_script(NodeUpgrade("cp-01", "10.0.0.11", "control-plane", "apply", True), "1.36.0", mirrors=MIRRORS)
    assert "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://apt.lab.internal/k8s/core:/stable:/${K8S_MINOR}/deb/ /" in script
    assert 'add_apt_key "https://apt.lab.internal/k8s/core:/stable:/${K8S_MINOR}/deb/Release.key"' in script  # the default key
    assert "pkgs.k8s.io/core" not in script


def test_bootstrap_with_mirrors_in_the_sandbox(tmp_path):
    """The GPU worker's script with mirrors: hosts.toml files and mirrored apt sources, idempotent, resumes after a
    failure, and changing only the registry mirrors rewrites hosts.toml without restarting containerd (containerd
    reads the hosts directory on every pull: hosts.go ConfigureHosts, image_pull.go registryHosts)."""
    box = Sandbox(tmp_path, containerd_version=VERSION_DEBIAN, node="gpu-01")
    box.file("/usr/share/keyrings/lab-mirror.gpg").parent.mkdir(parents=True)
    box.file("/usr/share/keyrings/lab-mirror.gpg").write_text("")
    operator = box.file("/etc/containerd/certs.d/quay.io/hosts.toml")  # the operator's own file: never touched
    operator.parent.mkdir(parents=True)
    operator.write_text('server = "https://quay.io"\n')
    script = bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True, nvidia_toolkit_version="1.18.2-1", mirrors=MIRRORS)

    failed = box.run(script, FAIL_AT="curl")  # the Kubernetes key download from the mirror fails
    assert failed.returncode != 0 and box.calls[-1].startswith("curl")
    k8s = box.file("/etc/containerd/certs.d/registry.k8s.io/hosts.toml")
    assert tomllib.loads(k8s.read_text()) == {
        "server": "https://registry.k8s.io",
        "host": {"https://harbor.lab.internal/v2/proxy-k8s": {"capabilities": ["pull", "resolve"], "override_path": True}},
    }
    assert "https://apt.lab.internal/k8s/core:/stable:/v1.35/deb/Release.key" in box.calls[-1]  # ${K8S_MINOR} expanded

    first = box.run(script)
    assert first.returncode == 0, first.stderr
    nvidia_list = box.file("/etc/apt/sources.list.d/nvidia-container-toolkit.list").read_text()
    assert nvidia_list == f"deb [signed-by={box.root}/usr/share/keyrings/lab-mirror.gpg] https://apt.lab.internal/nvidia/stable/deb/$(ARCH) /\n"
    kubernetes_list = box.file("/etc/apt/sources.list.d/kubernetes.list").read_text()
    assert kubernetes_list == f"deb [signed-by={box.root}/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://apt.lab.internal/k8s/core:/stable:/v1.35/deb/ /\n"
    assert not [c for c in box.calls if "nvidia.github.io" in c or "pkgs.k8s.io" in c]  # nothing from the internet

    second = box.run(script)  # idempotent
    assert second.returncode == 0 and "wrote " not in second.stderr and "systemctl restart containerd" not in box.calls

    fewer = Mirrors.model_validate(
        {"registries": [{"registry": "registry.k8s.io", "mirrors": [{"url": "https://cache.lab.internal"}]}], "apt": MIRRORS.apt.model_dump(by_alias=True)}
    )
    changed = box.run(bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True, nvidia_toolkit_version="1.18.2-1", mirrors=fewer))
    assert changed.returncode == 0, changed.stderr
    assert "https://cache.lab.internal" in tomllib.loads(k8s.read_text())["host"]
    assert not box.file("/etc/containerd/certs.d/nvcr.io/hosts.toml").exists() and "nvcr.io is no longer mirrored" in changed.stderr
    assert operator.read_text() == 'server = "https://quay.io"\n'
    assert "systemctl restart containerd" not in box.calls  # hosts.toml changes need no restart


def test_registry_hosts_scripts_pass_shellcheck(tmp_path):
    import shutil

    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck not installed")
    path: Path = tmp_path / "bootstrap.sh"
    path.write_text(bootstrap_script(CLUSTER, GPU, nvidia_toolkit=True, mirrors=MIRRORS))
    proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_rendered_hosts_toml_sends_the_pull_to_a_harbor_style_mirror(debian_containerd, tmp_path):
    """The hosts.toml we render, loaded by Debian's containerd 1.6.20 (``ctr --hosts-dir`` reads it with the code the
    CRI plugin uses for ``config_path``): a docker.io pull goes first to the mirror's API root as written, because
    ``override_path`` keeps containerd from adding ``/v2`` (v1.6.20 ``remotes/docker/config/hosts.go``), and names the
    upstream in the ``ns`` query. Expected path written before running: ``/v2/proxy-dockerhub/library/busybox/manifests/1.36?ns=docker.io``."""
    with recording_mirror() as mirror:
        entry = Mirrors.model_validate(
            {
                "registries": [
                    {
                        "registry": "docker.io",
                        "server": f"https://127.0.0.1:{mirror.upstream_port}",
                        "mirrors": [{"url": f"http://127.0.0.1:{mirror.port}/v2/proxy-dockerhub", "overridePath": True, "insecure": True}],
                    }
                ]
            }
        ).registries[0]
        hosts = tmp_path / "certs.d" / entry.directory / "hosts.toml"
        hosts.parent.mkdir(parents=True)
        hosts.write_text(registry_hosts_toml(entry))
        with _daemon(debian_containerd, tmp_path, "ours") as (sock, ctr):
            pull = ctr_pull(ctr, sock, tmp_path / "certs.d", "docker.io/library/busybox:1.36")
        assert pull.returncode != 0  # neither the mirror nor the (closed) upstream has the image
        assert mirror.seen and mirror.seen[0].endswith(" /v2/proxy-dockerhub/library/busybox/manifests/1.36?ns=docker.io"), (mirror.seen, pull.stderr)
