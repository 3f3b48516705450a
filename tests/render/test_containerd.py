"""containerd's config.toml per major version (hybridgpu.render.containerd): local additions.

Upstream facts (containerd source read 2026-11-26 at the tags named):

* 1.x replaces a whole plugin table with an imported file's: ``services/server/config/config.go``
  ``mergeConfig`` at v1.6.20 and v1.7.24 ("Replace entire sections instead of merging map's
  values"); containerd issue #5837. Shown with Debian's 1.6.20 binary in
  tests/render/test_host_sandbox.py (``test_a_dropin_replaces_the_whole_cri_table_on_containerd_1``).
* 2.x merges plugin tables key by key: PR #9982 (merge commit deccefc8, first tag v2.0.0) removed
  that loop for ``Plugins`` from ``cmd/containerd/server/config/config.go``; its tests
  (``TestMergingPluginsWithTwoCriDropInConfigs``) merge a ``cni`` and a ``registry`` drop-in.
* Registry hosts: ``config_path`` of the CRI registry config, empty by default (v1.6.20
  ``pkg/cri/config/config_unix.go``; v2.1.9 ``internal/cri/config/config_unix.go``
  ``DefaultImageConfig``); on 2.x it belongs to the ``io.containerd.cri.v1.images`` plugin
  (v2.1.9 ``plugins/cri/images/plugin.go``: type ``io.containerd.cri.v1``, ID ``images``).
  ``docs/hosts.md`` (v1.6.20): one ``hosts.toml`` per registry host directory, re-read without a
  restart.
"""

from __future__ import annotations

import tomllib

import pytest

from hybridgpu.render.containerd import CONTAINERD_CERTS_DIR, CONTAINERD_DROPIN_GLOB, containerd_config

OPTIONS = [{}, {"nvidia": True}, {"nvidia": True, "nvidia_default": False}, {"systemd_cgroup": False}]


@pytest.mark.parametrize("options", OPTIONS, ids=["runc", "nvidia", "nvidia-runtimeclass", "cgroupfs"])
def test_containerd_1_imports_nothing_and_reads_registry_hosts(options):
    text = containerd_config(2, **options)
    parsed = tomllib.loads(text)
    assert "imports" not in parsed  # a drop-in would replace the whole CRI table on 1.x
    cri = parsed["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["registry"] == {"config_path": "/etc/containerd/certs.d"}
    assert CONTAINERD_CERTS_DIR == "/etc/containerd/certs.d"
    # the file says where local additions go, and that conf.d is not read
    assert "/etc/containerd/certs.d/<registry>/hosts.toml" in text and "containerd#5837" in text
    assert "conf.d" not in text


@pytest.mark.parametrize("options", OPTIONS, ids=["runc", "nvidia", "nvidia-runtimeclass", "cgroupfs"])
def test_containerd_2_imports_dropins_and_reads_registry_hosts(options):
    text = containerd_config(3, **options)
    parsed = tomllib.loads(text)
    assert parsed["imports"] == ["/etc/containerd/conf.d/*.toml"] == [CONTAINERD_DROPIN_GLOB]
    assert parsed["plugins"]["io.containerd.cri.v1.images"]["registry"] == {"config_path": "/etc/containerd/certs.d"}
    # the runtime part stays where it was; nothing registry-related under the runtime plugin
    runtime = parsed["plugins"]["io.containerd.cri.v1.runtime"]
    assert "registry" not in runtime and runtime["containerd"]["runtimes"]["runc"]["runtime_type"] == "io.containerd.runc.v2"


@pytest.mark.parametrize("version", [2, 3])
def test_same_input_same_bytes(version):
    assert containerd_config(version, nvidia=True) == containerd_config(version, nvidia=True)
    assert containerd_config(version).endswith("\n") and not containerd_config(version).endswith("\n\n")


def test_the_hosts_toml_example_of_the_docs_parses():
    """docs/onprem.md's registry mirror example is TOML with the fields hosts.toml reads
    (containerd docs/hosts.md at v1.6.20: ``server``, ``[host."<url>"]`` with ``capabilities``)."""
    import re

    from tests.helpers import ROOT

    blocks = re.findall(r"^```toml\n(.*?)^```$", (ROOT / "docs" / "onprem.md").read_text(encoding="utf-8"), re.M | re.S)
    hosts = [tomllib.loads(b) for b in blocks if "certs.d/" in b]
    assert len(hosts) == 1
    assert hosts[0]["server"] == "https://registry-1.docker.io"
    assert hosts[0]["host"] == {"https://mirror.example.internal": {"capabilities": ["pull", "resolve"]}}
