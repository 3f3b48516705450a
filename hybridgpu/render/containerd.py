"""containerd's ``/etc/containerd/config.toml`` as hybridgpu owns it on kubeadm hosts (pure).

The bootstrap script (:mod:`hybridgpu.render.bootstrap`) does not edit whatever file the
package left behind: it writes the complete file for the containerd major version installed,
as kubespray does (kubernetes-sigs/kubespray ``roles/container-engine/containerd/templates/
config.toml.j2``, read 2026-11-24), keeps the operator's previous file once as
``config.toml.hybridgpu.orig`` and restarts containerd when the files it loads differ from what
its last verified restart loaded (see :data:`hybridgpu.render.bootstrap.CONTAINERD_LOADED_PATH`).

Why: the configs that real packages ship do not work for kubeadm as they are.

* Debian 12's ``containerd`` 1.6.20~ds1-1+deb12u3 ships a nine-line ``version = 2`` file with
  no runc options table (so no ``SystemdCgroup``) and CNI binaries in ``/usr/lib/cni``, where
  Cilium does not install its plugin (Cilium's ``cni.binPath`` default is ``/opt/cni/bin``).
* Docker's ``containerd.io`` ships ``disabled_plugins = ["cri"]`` (docker/containerd-packaging
  ``common/containerd.toml``, commit 2161c611a72887063f4a054aeef4343ebc5ae91f, 2025-05-23):
  the kubelet then has no CRI to talk to (kubernetes/website ``container-runtimes.md``: "If you
  installed containerd from a package (for example, RPM or .deb), you may find that the CRI
  integration plugin is disabled by default").

Layouts (containerd ``docs/cri/config.md`` and ``RELEASES.md``, read 2026-11-24): containerd 1.x
reads config ``version = 2`` with the CRI plugin at ``plugins."io.containerd.grpc.v1.cri"``;
containerd 2.x reads ``version = 3`` with the runtime part at
``plugins.'io.containerd.cri.v1.runtime'`` (2.x still migrates a version 2 file on every start,
but writing its own layout avoids that). The NVIDIA runtime is the one ``nvidia-ctk runtime
configure --runtime=containerd`` adds (NVIDIA/nvidia-container-toolkit
``pkg/config/engine/containerd``): a runc-v2 runtime named ``nvidia`` whose ``BinaryName`` is
``/usr/bin/nvidia-container-runtime``, optionally the default runtime.

Local additions, per version (containerd source read 2026-11-26 at the tags named):

* Registry mirrors, registry CAs, client certificates, ``skip_verify``: one
  ``/etc/containerd/certs.d/<registry>/hosts.toml`` per registry, which the CRI plugin reads
  through ``config_path`` on every pull (``docs/hosts.md`` at v1.6.20: "Updates under this
  directory do not require restarting the containerd daemon"). ``config_path`` is empty by
  default in both majors (v1.6.20 ``pkg/cri/config/config_unix.go``, v2.1.9
  ``internal/cri/config/config_unix.go`` ``DefaultImageConfig``), so the file sets it:
  ``plugins."io.containerd.grpc.v1.cri".registry`` on 1.x,
  ``plugins.'io.containerd.cri.v1.images'.registry`` on 2.x.
* Drop-ins (``imports``) only on 2.x. containerd 1.x merges an imported file by replacing each
  plugin table it names as a whole (``services/server/config/config.go`` ``mergeConfig`` at
  v1.6.20 and v1.7.24: "Replace entire sections instead of merging map's values"; containerd
  issue #5837), so a drop-in that only adds a mirror drops ``SystemdCgroup`` and the ``nvidia``
  runtime from the CRI table. containerd PR #9982 (merged 2024-10-23, first in
  v2.0.0; ``cmd/containerd/server/config/config.go``) merges plugin tables key by key. The 1.x
  file therefore has no ``imports`` line, and the bootstrap script refuses drop-ins on 1.x.
  From v2.3.0 (config version 4) containerd refuses a drop-in whose ``version`` is higher than
  the root file's (``LoadConfigWithPlugins``: "drop-in config version %d higher than root config
  version %d"); the version 3 root stays valid there (it is migrated).
"""

from __future__ import annotations

from typing import Literal

from hybridgpu.inventory.mirrors import RegistryMirrors

#: Where the bootstrap script writes the file.
CONTAINERD_CONFIG_PATH = "/etc/containerd/config.toml"
#: The operator's (or the package's) file, kept once before the first overwrite.
CONTAINERD_BACKUP_PATH = CONTAINERD_CONFIG_PATH + ".hybridgpu.orig"
#: Directory of drop-in files containerd 2.x imports (local additions survive re-runs).
CONTAINERD_DROPIN_DIR = "/etc/containerd/conf.d"
#: The ``imports`` pattern of the 2.x file.
CONTAINERD_DROPIN_GLOB = CONTAINERD_DROPIN_DIR + "/*.toml"
#: First containerd major version that merges drop-ins key by key (containerd PR #9982, v2.0.0).
DROPINS_MERGE_FROM_MAJOR = 2
#: The CRI plugin's registry ``config_path``: one ``<registry>/hosts.toml`` per registry.
CONTAINERD_CERTS_DIR = "/etc/containerd/certs.d"
#: First line of every file hybridgpu writes (tells ours from an operator's).
CONTAINERD_MARKER = "# Managed by hybridgpu (hybridgpu.render.containerd)"
#: The NVIDIA container runtime binary the toolkit installs (nvidia-container-toolkit package).
NVIDIA_RUNTIME_BINARY = "/usr/bin/nvidia-container-runtime"

ConfigVersion = Literal[2, 3]

#: containerd major version -> config file version it reads natively.
CONFIG_VERSION_OF_MAJOR: dict[int, ConfigVersion] = {1: 2, 2: 3}


def containerd_config(version: ConfigVersion, *, systemd_cgroup: bool = True, nvidia: bool = False, nvidia_default: bool = True) -> str:
    """The complete ``config.toml`` for containerd (config ``version`` 2 = containerd 1.x, 3 = 2.x).

    Args:
        version: config file version (2 for containerd 1.x, 3 for containerd 2.x).
        systemd_cgroup: runc's ``SystemdCgroup`` (must match the kubelet's ``cgroupDriver``).
        nvidia: add the ``nvidia`` runtime (GPU workers with the NVIDIA container toolkit).
        nvidia_default: make ``nvidia`` the default runtime (what the NVIDIA device plugin
            expects unless pods select a RuntimeClass); only with ``nvidia``.

    Returns:
        TOML text, CRI enabled (``disabled_plugins = []``), registry hosts read from
        :data:`CONTAINERD_CERTS_DIR`, drop-ins imported from :data:`CONTAINERD_DROPIN_GLOB` only
        in version 3 (containerd 1.x would replace whole plugin tables with them), ending in a
        newline.

    Raises:
        ValueError: a version other than 2 or 3.
    """
    if version == 2:
        cri = '"io.containerd.grpc.v1.cri"'
        images = cri
        q = '"'
        additions = [
            f"# Registry mirrors: {CONTAINERD_CERTS_DIR}/<registry>/hosts.toml. containerd 1.x gets no drop-ins:",
            "# an imported file would replace whole plugin tables (containerd#5837).",
        ]
    elif version == 3:
        cri = "'io.containerd.cri.v1.runtime'"
        images = "'io.containerd.cri.v1.images'"
        q = "'"
        additions = [
            f"# Registry mirrors: {CONTAINERD_CERTS_DIR}/<registry>/hosts.toml; other local additions:",
            f"# {CONTAINERD_DROPIN_GLOB} (merged key by key from containerd 2.0).",
        ]
    else:
        raise ValueError(f"containerd config version {version!r} is not supported (2 for containerd 1.x, 3 for 2.x)")
    cgroup = "true" if systemd_cgroup else "false"
    default = "nvidia" if nvidia and nvidia_default else "runc"
    lines = [
        CONTAINERD_MARKER,
        "# Rewritten by every bootstrap run: edits here do not last.",
        *additions,
        f"# The file found here before the first run is kept as {CONTAINERD_BACKUP_PATH}.",
        f"version = {version}",
    ]
    if version == 3:
        lines.append(f"imports = [{q}{CONTAINERD_DROPIN_GLOB}{q}]")
    lines += [
        "disabled_plugins = []",
        "",
        f"[plugins.{cri}.containerd]",
        f"  default_runtime_name = {q}{default}{q}",
        "",
        f"  [plugins.{cri}.containerd.runtimes.runc]",
        f"    runtime_type = {q}io.containerd.runc.v2{q}",
        "",
        f"    [plugins.{cri}.containerd.runtimes.runc.options]",
        f"      SystemdCgroup = {cgroup}",
    ]
    if nvidia:
        lines += [
            "",
            f"  [plugins.{cri}.containerd.runtimes.nvidia]",
            f"    runtime_type = {q}io.containerd.runc.v2{q}",
            "",
            f"    [plugins.{cri}.containerd.runtimes.nvidia.options]",
            f"      BinaryName = {q}{NVIDIA_RUNTIME_BINARY}{q}",
            f"      SystemdCgroup = {cgroup}",
        ]
    if version == 2:
        # Debian's package points bin_dir at /usr/lib/cni; CNI plugins (Cilium) install to /opt/cni/bin.
        lines += ["", f"[plugins.{cri}.cni]", f"  bin_dir = {q}/opt/cni/bin{q}", f"  conf_dir = {q}/etc/cni/net.d{q}"]
    lines += ["", f"[plugins.{images}.registry]", f"  config_path = {q}{CONTAINERD_CERTS_DIR}{q}"]
    return "\n".join(lines) + "\n"


def _toml_string(value: str) -> str:
    # A TOML basic string; the values are validated URLs and paths (no quotes, backslashes or control characters).
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def registry_hosts_toml(entry: RegistryMirrors) -> str:
    """The ``certs.d/<registry>/hosts.toml`` of one mirrored registry (containerd ``docs/hosts.md``).

    Args:
        entry: the registry and its mirrors (``mirrors.registries[]`` of the inventory).

    Returns:
        TOML text starting with :data:`CONTAINERD_MARKER`: ``server`` (the entry's, else the
        registry's upstream; none for ``_default``), then one ``[host."<url>"]`` table per mirror in
        order with ``capabilities`` and, when set, ``ca``, ``skip_verify``, ``override_path``;
        ending in a newline. containerd reads it on every pull (no restart).
    """
    lines = [CONTAINERD_MARKER, f"# Mirrors of {entry.registry}, tried in order before the server (inventory mirrors.registries)."]
    server = entry.effective_server()
    if server is not None:
        lines.append(f"server = {_toml_string(server)}")
    for mirror in entry.mirrors:
        lines += ["", f"[host.{_toml_string(mirror.url)}]", f"  capabilities = [{', '.join(_toml_string(c) for c in mirror.capabilities)}]"]
        if mirror.ca is not None:
            lines.append(f"  ca = {_toml_string(mirror.ca)}")
        if mirror.skip_verify:
            lines.append("  skip_verify = true")
        if mirror.override_path:
            lines.append("  override_path = true")
    return "\n".join(lines) + "\n"
