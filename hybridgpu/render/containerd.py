"""containerd's ``/etc/containerd/config.toml`` as hybridgpu owns it on kubeadm hosts (pure).

The bootstrap script (:mod:`hybridgpu.render.bootstrap`) does not edit whatever file the
package left behind: it writes the complete file for the containerd major version installed,
as kubespray does (kubernetes-sigs/kubespray ``roles/container-engine/containerd/templates/
config.toml.j2``, read 2026-11-24), keeps the operator's previous file once as
``config.toml.hybridgpu.orig`` and restarts containerd only when the content changed.

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
``/usr/bin/nvidia-container-runtime``, optionally the default runtime. ``imports`` of
``/etc/containerd/conf.d/*.toml`` leaves a place for local additions (registry mirrors, the
GPU Operator's drop-in) that survive re-runs.
"""

from __future__ import annotations

from typing import Literal

#: Where the bootstrap script writes the file.
CONTAINERD_CONFIG_PATH = "/etc/containerd/config.toml"
#: The operator's (or the package's) file, kept once before the first overwrite.
CONTAINERD_BACKUP_PATH = CONTAINERD_CONFIG_PATH + ".hybridgpu.orig"
#: Directory of drop-in files containerd imports (local additions survive re-runs).
CONTAINERD_DROPIN_GLOB = "/etc/containerd/conf.d/*.toml"
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
        TOML text, CRI enabled (``disabled_plugins = []``), ending in a newline.

    Raises:
        ValueError: a version other than 2 or 3.
    """
    if version == 2:
        cri = '"io.containerd.grpc.v1.cri"'
        q = '"'
    elif version == 3:
        cri = "'io.containerd.cri.v1.runtime'"
        q = "'"
    else:
        raise ValueError(f"containerd config version {version!r} is not supported (2 for containerd 1.x, 3 for 2.x)")
    cgroup = "true" if systemd_cgroup else "false"
    default = "nvidia" if nvidia and nvidia_default else "runc"
    lines = [
        CONTAINERD_MARKER,
        "# Rewritten by every bootstrap run; put local additions in " + CONTAINERD_DROPIN_GLOB + ".",
        f"# The file found here before the first run is kept as {CONTAINERD_BACKUP_PATH}.",
        f"version = {version}",
        f"imports = [{q}{CONTAINERD_DROPIN_GLOB}{q}]",
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
    return "\n".join(lines) + "\n"
