"""Render bash scripts that prepare and manage the hosts of an on-prem kubeadm cluster (pure).

* :func:`bootstrap_script`: makes a Debian/Ubuntu host ready for ``kubeadm init/join``:
  kernel modules ``overlay`` and ``br_netfilter`` (persisted in ``/etc/modules-load.d``), the
  bridge/forwarding sysctls (``/etc/sysctl.d``), swap off (now and in ``/etc/fstab``), containerd
  with the complete ``config.toml`` for its major version (:mod:`hybridgpu.render.containerd`:
  CRI on, ``SystemdCgroup``, the ``nvidia`` runtime on GPU workers; the previous file kept as
  ``config.toml.hybridgpu.orig``), ``kubelet``/``kubeadm``/``kubectl`` pinned to the cluster's
  version from ``pkgs.k8s.io`` (the repository of its minor version) and held, on control
  planes the API server audit policy, and on GPU workers with preinstalled drivers the NVIDIA
  container toolkit from NVIDIA's apt repository (its runtime is in the containerd config we
  write; ``nvidia-ctk`` does not edit it). Every step checks before it changes, so the script is
  safe to re-run. containerd restarts when the files it loads differ from those its last
  verified restart loaded (a digest kept in :data:`CONTAINERD_LOADED_PATH`), so a re-run after a
  failure between the config write and the restart still restarts it; after the (re)start the
  script checks that containerd serves its CRI plugin before it says the host is ready. On
  containerd 1.x it refuses drop-ins in ``/etc/containerd/conf.d`` (1.x replaces whole plugin
  tables with them, containerd#5837). It refuses to move an installed Kubernetes to another
  version (that is ``kubeadm upgrade``'s job).
* :func:`kubeadm_command` / :func:`kubeadm_run_script`: the ``kubeadm init --config F
  --upload-certs --skip-token-print --skip-certificate-key-print`` / ``kubeadm join --config F``
  command, and a script around it that decides from the cluster (API server answers, Node
  registered, ``kubeadm-config`` present) whether the host is complete, resets and retries a
  failed run naming the phase, refuses a config that still holds placeholders and deletes the
  config (it holds the bootstrap token and certificate key) once the host is complete.
* :func:`drain_and_cordon_script` and :func:`reset_script`: lifecycle (maintenance, removal).

Every script passes ``shellcheck`` (tests run it on each variant). Values from the inputs
appear only in quoted ``readonly`` assignments at the top, never spliced into commands.

Sources (read 2026-11-22):

* Repository layout ``https://pkgs.k8s.io/core:/stable:/v1.NN/deb/`` (one repository per minor
  version) with ``Release.key`` in ``/etc/apt/keyrings`` and ``apt-mark hold``: the Kubernetes
  blog "pkgs.k8s.io: Introducing Kubernetes Community-Owned Package Repositories" (2023-08-15,
  updated 2024-03-26: the Google-hosted apt.kubernetes.io is gone). The stored copy of
  kubernetes/website ``install-kubeadm.md`` predates pkgs.k8s.io, so it was not used.
* Modules ``overlay``/``br_netfilter``, the ``net.bridge.bridge-nf-call-ip(6)tables`` and
  ``net.ipv4.ip_forward`` sysctls, swap off, matching kubelet/containerd cgroup drivers
  (``SystemdCgroup = true``): the kubeadm host prerequisites (kubernetes/website
  ``install-kubeadm.md``: "Matching the container runtime and kubelet cgroup drivers is
  required"; ``container-runtimes.md``), cross-checked in current install scripts. The
  containerd config layouts and the packaged files they replace: :mod:`hybridgpu.render.containerd`.
* NVIDIA container toolkit install guide
  (docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html):
  ``https://nvidia.github.io/libnvidia-container/gpgkey``, ``.../stable/deb/
  nvidia-container-toolkit.list`` rewritten with ``signed-by``, packages
  ``nvidia-container-toolkit``, ``-base``, ``libnvidia-container-tools``,
  ``libnvidia-container1`` (pinned together to one version such as ``1.18.0-1``). The runtime
  entry ``nvidia-ctk runtime configure --runtime=containerd --set-as-default`` would add is
  rendered into the owned config instead; the NVIDIA/k8s-device-plugin README lists
  "nvidia-container-runtime configured as the default low-level runtime" as a prerequisite (or
  a ``nvidia`` RuntimeClass instead).
* kubeadm's init phase order and what each writes: kubernetes/kubernetes
  ``cmd/kubeadm/app/cmd/init.go`` (``newCmdInit``); the printed token and certificate key:
  ``cmd/kubeadm/app/cmd/phases/init/uploadcerts.go`` (``SkipCertificateKeyPrint``) and
  ``showjoincommand.go`` (``--skip-token-print``), read 2026-11-24.
* ``kubeadm reset`` leaves ``/etc/cni/net.d``, iptables and IPVS state behind (its own output
  says so), hence the extra cleanup in :func:`reset_script`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence

from hybridgpu.datafile import ORDERED, dump_yaml
from hybridgpu.k8s import is_dns1123_subdomain
from hybridgpu.inventory.mirrors import NVIDIA_LIST_URL, AptSource, Mirrors, apt_sources, registry_logins
from hybridgpu.render.containerd import (
    CONTAINERD_BACKUP_PATH,
    CONTAINERD_CERTS_DIR,
    CONTAINERD_CONFIG_PATH,
    CONTAINERD_DROPIN_DIR,
    CONTAINERD_MARKER,
    DROPINS_MERGE_FROM_MAJOR,
    containerd_config,
    registry_hosts_toml,
)
from hybridgpu.render.kubeadm import AUDIT_LOG_DIR, AUDIT_POLICY_PATH, CRI_SOCKET, KUBELET_PROTECTED_SYSCTLS, audit_policy
from hybridgpu.render.kubeadm_specs import ClusterSpec, NodeSpec

#: Where the (substituted) kubeadm config is uploaded on each host; mode 0600, deleted after use.
KUBEADM_CONFIG_PATH = "/etc/kubernetes/hybridgpu/kubeadm.yaml"
#: sha256 of the files containerd loaded at the bootstrap's last restart whose CRI check passed.
#: containerd reads its configuration only when it starts, so this, not "the file changed in this
#: run", tells whether the running daemon has the current file.
CONTAINERD_LOADED_PATH = "/var/lib/hybridgpu/containerd-loaded.sha256"

#: The site's registry logins (``mirrors.registries[].credentials``), written by ``pulumi up`` as a root-only file
#: (mode 0600; :data:`REGISTRY_AUTH_WRITE`) that the bootstrap merges into containerd's config: the CRI
#: ``registry.configs."<mirror host>".auth`` tables, :func:`registry_auth_fragment`.
REGISTRY_AUTH_PATH = "/etc/hybridgpu/registry-auth.toml"
#: Stands for the CRI registry table in :data:`REGISTRY_AUTH_PATH`; the bootstrap puts the installed major's in.
CRI_REGISTRY_PLACEHOLDER = "@CRI_REGISTRY@"
#: The remote command that writes stdin to :data:`REGISTRY_AUTH_PATH` (umask 077, atomic rename) and prints the
#: file's sha256 (the bootstrap re-runs when it changes). Nothing of the file is printed.
REGISTRY_AUTH_WRITE = (
    f"sudo install -d -m 0700 {REGISTRY_AUTH_PATH.rsplit('/', 1)[0]} && "
    f"sudo sh -c 'umask 077; cat > {REGISTRY_AUTH_PATH}.part && mv {REGISTRY_AUTH_PATH}.part {REGISTRY_AUTH_PATH}' && "
    f"sudo sha256sum {REGISTRY_AUTH_PATH} | cut -c1-64"
)
#: Removes the file when the site no longer declares registry credentials (the command's ``delete``).
REGISTRY_AUTH_DELETE = f"sudo rm -f {REGISTRY_AUTH_PATH} {REGISTRY_AUTH_PATH}.part"

_DEB_VERSION_RE = re.compile(r"\A[0-9][0-9A-Za-z.+~-]*\Z")
#: A kubectl drain timeout as the scripts pass it (`1h`, `30m`, `90s`, `1h30m`): Go duration units h, m, s, in that order.
DURATION_RE = re.compile(r"\A(?=\d)(\d+h)?(\d+m)?(\d+s)?\Z")


def shell_assign(values: Mapping[str, str]) -> str:
    """``readonly NAME='value'`` lines, shell-quoted, in the given order (the scripts' inputs; also used by
    :mod:`hybridgpu.render.upgrade`)."""
    return "".join(f"readonly {name}={shlex.quote(value)}\n" for name, value in values.items())


SCRIPT_HEADER = """\
#!/usr/bin/env bash
# {title}
# Generated by hybridgpu.render.bootstrap. {note}
set -euo pipefail

"""

SCRIPT_LOG = """\
log() { printf '[hybridgpu] %s\\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}
"""

SCRIPT_HELPERS = """\
# write_file PATH MODE < CONTENT: install CONTENT at PATH unless it is already there.
# Sets FILE_CHANGED to 1 when it wrote the file, 0 when the file was already up to date.
FILE_CHANGED=0
write_file() {
  local path=$1 mode=$2 tmp
  tmp=$(mktemp)
  cat >"${tmp}"
  if [[ -f ${path} ]] && cmp -s "${tmp}" "${path}"; then
    rm -f "${tmp}"
    FILE_CHANGED=0
    return 0
  fi
  install -D -m "${mode}" "${tmp}" "${path}"
  rm -f "${tmp}"
  FILE_CHANGED=1
  log "wrote ${path}"
}

# fetch URL DEST: download URL to DEST; any HTTP or network error stops the script.
fetch() {
  curl -fsSL --retry 5 --retry-delay 2 -o "$2" "$1"
}

# add_apt_key URL KEYRING: store the (ASCII-armored) key at URL as a binary keyring.
add_apt_key() {
  local tmp
  tmp=$(mktemp)
  fetch "$1" "${tmp}"
  install -d -m 0755 "$(dirname "$2")"
  gpg --batch --yes --dearmor -o "$2" "${tmp}"
  chmod 0644 "$2"
  rm -f "${tmp}"
}

"""

_PREFLIGHT = """\
[[ ${EUID} -eq 0 ]] || die "run as root"
command -v apt-get >/dev/null 2>&1 || die "needs a Debian/Ubuntu host (apt-get)"
command -v systemctl >/dev/null 2>&1 || die "needs systemd"
[[ -e ${RESOLV_CONF} ]] ||
  die "kubelet resolvConf ${RESOLV_CONF} does not exist here (no systemd-resolved?); set ClusterSpec.resolv_conf, e.g. /etc/resolv.conf"
export DEBIAN_FRONTEND=noninteractive
CONTAINERD_RESTART=0

"""

_KERNEL = """\
log "kernel modules and sysctls"
write_file /etc/modules-load.d/hybridgpu-k8s.conf 0644 <<'EOF'
overlay
br_netfilter
EOF
modprobe overlay
modprobe br_netfilter
write_file /etc/sysctl.d/99-hybridgpu-k8s.conf 0644 <<'EOF'
{sysctls}
EOF
sysctl --system >/dev/null

log "swap off"
swapoff -a
if [[ -f /etc/fstab ]] && grep -Eq '^[^#[:space:]][^#]*[[:space:]]swap[[:space:]]' /etc/fstab; then
  sed -Ei.hybridgpu.bak 's/^([^#[:space:]][^#]*[[:space:]]swap[[:space:]].*)$/# hybridgpu: swap off for the kubelet: \\1/' /etc/fstab
  log "commented out swap in /etc/fstab (backup: /etc/fstab.hybridgpu.bak)"
fi

log "base packages"
apt-get update -qq
apt-get install -y -qq ca-certificates curl gpg >/dev/null

"""

# containerd: the complete config for the installed major version (hybridgpu.render.containerd),
# the operator's previous file kept once; drop-ins refused on 1.x (they would replace whole
# plugin tables there, containerd#5837), imported on 2.x.
_CONTAINERD = """\
log "containerd"
if ! command -v containerd >/dev/null 2>&1; then
  apt-get install -y -qq containerd >/dev/null
fi
# "containerd github.com/containerd/containerd 1.6.20~ds1 ...", "containerd containerd.io 1.7.27 ...",
# "containerd github.com/containerd/containerd/v2 v2.1.4 ...": the third field is the version.
CONTAINERD_VERSION=$(containerd --version | awk '{ print $3 }')
CONTAINERD_VERSION=${CONTAINERD_VERSION#v}
CONTAINERD_MAJOR=${CONTAINERD_VERSION%%.*}
install -d -m 0755 /etc/containerd "${CONTAINERD_CERTS}"
if [[ -f ${CONTAINERD_CONFIG} && ! -e ${CONTAINERD_BACKUP} ]] && ! grep -qxF "${CONTAINERD_MARKER}" "${CONTAINERD_CONFIG}"; then
  cp -p "${CONTAINERD_CONFIG}" "${CONTAINERD_BACKUP}"
  log "kept the previous ${CONTAINERD_CONFIG} as ${CONTAINERD_BACKUP}"
fi
case "${CONTAINERD_MAJOR}" in
  1)
    dropins=$(compgen -G "${CONTAINERD_DROPINS}/*.toml" | tr '\\n' ' ' || true)
    if [[ -n ${dropins} ]]; then
      die "containerd ${CONTAINERD_VERSION} does not merge drop-ins: each plugin table in ${dropins}would replace the whole table of ${CONTAINERD_CONFIG} (the CRI one holds SystemdCgroup and the runtimes; containerd#5837, merged key by key only from containerd 2.0), so the file imports none. Put registry mirrors in ${CONTAINERD_CERTS}/<registry>/hosts.toml, move the rest out of ${CONTAINERD_DROPINS} (or install containerd 2.x), then re-run"
    fi
    write_file "${CONTAINERD_CONFIG}" 0644 <<'HYBRIDGPU_EOF'
{config_v2}HYBRIDGPU_EOF
    ;;
  2)
    write_file "${CONTAINERD_CONFIG}" 0644 <<'HYBRIDGPU_EOF'
{config_v3}HYBRIDGPU_EOF
    ;;
  *) die "containerd ${CONTAINERD_VERSION} is not supported here (1.x or 2.x)" ;;
esac
if [[ ${FILE_CHANGED} -eq 1 ]]; then
  CONTAINERD_RESTART=1
fi
if [[ ${CONTAINERD_MAJOR} -ge ${DROPINS_MERGE_FROM_MAJOR} ]]; then
  install -d -m 0755 "${CONTAINERD_DROPINS}"
fi
"""

# Registry mirrors (mirrors.registries): one hosts.toml per registry under config_path, read by
# containerd on every pull (no restart). Files we wrote for registries no longer listed are removed.
_REGISTRY_HOSTS_CLEANUP = """\
for hosts in "${CONTAINERD_CERTS}"/*/hosts.toml; do
  [[ -f ${hosts} ]] || continue
  registry=$(basename "$(dirname "${hosts}")")
  if [[ " ${MIRRORED_REGISTRIES} " != *" ${registry} "* ]] && grep -qxF "${CONTAINERD_MARKER}" "${hosts}"; then
    rm -f "${hosts}"
    log "removed ${hosts} (${registry} is no longer mirrored)"
  fi
done

"""

_CRICTL = """\
write_file /etc/crictl.yaml 0644 <<EOF
runtime-endpoint: ${CRI_SOCKET}
image-endpoint: ${CRI_SOCKET}
EOF

"""

_KUBERNETES = """\
log "Kubernetes ${K8S_VERSION} packages from {k8s_label} (${K8S_MINOR})"
{k8s_key}
write_file /etc/apt/sources.list.d/kubernetes.list 0644 <<EOF
{k8s_deb}
EOF
apt-get update -qq
missing=0
for pkg in kubelet kubeadm kubectl; do
  status=$(dpkg-query -W -f="\\${db:Status-Status} \\${Version}" "${pkg}" 2>/dev/null || true)
  case "${status}" in
    "installed ${K8S_VERSION}-"*) ;;
    installed\\ *){upgraded}
      die "${pkg} ${status#installed } is installed but this node wants ${K8S_VERSION}; upgrade with kubeadm upgrade, not this script" ;;
    *) missing=1 ;;
  esac
done
if [[ ${missing} -eq 1 ]]; then
  apt-get install -y -qq "kubelet=${K8S_VERSION}-*" "kubeadm=${K8S_VERSION}-*" "kubectl=${K8S_VERSION}-*" >/dev/null
fi
apt-mark hold kubelet kubeadm kubectl >/dev/null
systemctl enable kubelet >/dev/null 2>&1

"""

_NVIDIA = """\
log "NVIDIA container toolkit"
command -v nvidia-smi >/dev/null 2>&1 || die "nvidia-smi not found: this gpu-worker expects preinstalled NVIDIA drivers"
nvidia-smi -L >/dev/null || die "nvidia-smi cannot reach the driver (reboot after installing it?)"
"""

# NVIDIA's public repository: its list file, rewritten with signed-by (the install guide's steps).
_NVIDIA_PUBLIC = """\
add_apt_key {key_url} {keyring}
NVIDIA_LIST=$(mktemp)
fetch {list_url} "${NVIDIA_LIST}"
sed -i 's#deb https://#deb [signed-by={keyring}] https://#g' "${NVIDIA_LIST}"
write_file /etc/apt/sources.list.d/nvidia-container-toolkit.list 0644 <"${NVIDIA_LIST}"
rm -f "${NVIDIA_LIST}"
apt-get update -qq
"""

# A site's mirror of it (mirrors.apt.nvidia): one flat deb line; the quoted heredoc keeps $(ARCH) for apt.
_NVIDIA_MIRROR = """\
log "NVIDIA packages from {label}"
{key_step}
write_file /etc/apt/sources.list.d/nvidia-container-toolkit.list 0644 <<'EOF'
{deb}
EOF
apt-get update -qq
"""

_NVIDIA_INSTALL_LATEST = """\
toolkit_status=$(dpkg-query -W -f="\\${db:Status-Status}" nvidia-container-toolkit 2>/dev/null || true)
if [[ ${toolkit_status} != installed ]]; then
  apt-get install -y -qq nvidia-container-toolkit >/dev/null
fi
"""

# Pinned and held like kubelet/kubeadm/kubectl (issue 17): installed only when a package is
# missing or at another version (then moved to the pinned one, past the hold), and held so that
# `apt-get upgrade` leaves it alone. Version: cluster.nvidiaContainerToolkitVersion of the inventory.
_NVIDIA_INSTALL_PINNED = """\
NVIDIA_TOOLKIT_PACKAGES=(nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1)
toolkit_change=0
for pkg in "${NVIDIA_TOOLKIT_PACKAGES[@]}"; do
  status=$(dpkg-query -W -f="\\${db:Status-Status} \\${Version}" "${pkg}" 2>/dev/null || true)
  if [[ ${status} != "installed ${NVIDIA_TOOLKIT_VERSION}" ]]; then
    toolkit_change=1
  fi
done
{upgrading}if [[ ${toolkit_change} -eq 1 ]]; then
  log "NVIDIA container toolkit ${NVIDIA_TOOLKIT_VERSION} (pinned)"
  apt-get install -y -qq --allow-change-held-packages --allow-downgrades \\
    "nvidia-container-toolkit=${NVIDIA_TOOLKIT_VERSION}" \\
    "nvidia-container-toolkit-base=${NVIDIA_TOOLKIT_VERSION}" \\
    "libnvidia-container-tools=${NVIDIA_TOOLKIT_VERSION}" \\
    "libnvidia-container1=${NVIDIA_TOOLKIT_VERSION}" >/dev/null
fi
apt-mark hold "${NVIDIA_TOOLKIT_PACKAGES[@]}" >/dev/null
"""

# While upgrades.nvidia moves the toolkit (NVIDIA_TOOLKIT_VERSION is then its target), the upgrade moves each node,
# drained: a node whose four packages are still at the version from before (NVIDIA_TOOLKIT_PREVIOUS,
# cluster.nvidiaContainerToolkitVersion; empty: any one version) is left to it, so a bootstrap that runs again never
# moves the toolkit back, nor forward under running pods. A new host (nothing installed) joins at the target.
_NVIDIA_TOOLKIT_UPGRADING = """\
if [[ ${toolkit_change} -eq 1 ]]; then
  toolkit_before=""
  for pkg in "${NVIDIA_TOOLKIT_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f="\\${db:Status-Status} \\${Version}" "${pkg}" 2>/dev/null || true)
    if [[ ${status} != "installed "* || ( -n ${toolkit_before} && ${status#installed } != "${toolkit_before}" ) ]]; then
      toolkit_before=""
      break
    fi
    toolkit_before=${status#installed }
  done
  if [[ -n ${toolkit_before} && ( -z ${NVIDIA_TOOLKIT_PREVIOUS} || ${toolkit_before} == "${NVIDIA_TOOLKIT_PREVIOUS}" ) ]]; then
    log "NVIDIA container toolkit ${toolkit_before} left as it is: upgrades.nvidia moves it to ${NVIDIA_TOOLKIT_VERSION}, node by node"
    toolkit_change=0
  fi
fi
"""

# containerd reads its configuration only when it starts. A run that wrote the file and stopped
# before the restart (a failed toolkit install, say) leaves the daemon on the old file, so the
# restart follows what the last verified restart loaded (CONTAINERD_LOADED), not only what this
# run wrote; the digest is recorded only once the restarted daemon serves CRI.
_CONTAINERD_START = """\
# containerd_digest: sha256 over the files containerd loads at start (config.toml; on 2.x also
# the drop-ins it imports).
containerd_digest() {
  local files=("${CONTAINERD_CONFIG}")
  if [[ ${CONTAINERD_MAJOR} -ge ${DROPINS_MERGE_FROM_MAJOR} ]]; then
    mapfile -t -O 1 files < <(compgen -G "${CONTAINERD_DROPINS}/*.toml" | LC_ALL=C sort)
  fi
  sha256sum "${files[@]}" | sha256sum | awk '{ print $1 }'
}
# cri_status: what `ctr plugins ls` says of the CRI plugin (ok, skip, error), nothing when the
# daemon runs without it (disabled_plugins: Docker's containerd.io ships ["cri"]) or does not answer.
cri_status() {
  { ctr --address "${CRI_SOCKET#unix://}" plugins ls 'type==io.containerd.grpc.v1,id==cri' 2>/dev/null || true; } |
    awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { print $4 }'
}
systemctl enable containerd >/dev/null 2>&1
CONTAINERD_DIGEST=$(containerd_digest)
CONTAINERD_FAILED="containerd does not run with ${CONTAINERD_CONFIG} and its imports: see journalctl -u containerd"
if [[ ${CONTAINERD_RESTART} -eq 1 ]]; then
  log "restarting containerd (configuration changed)"
  systemctl restart containerd || die "${CONTAINERD_FAILED}"
elif [[ $(cat "${CONTAINERD_LOADED}" 2>/dev/null || true) != "${CONTAINERD_DIGEST}" ]]; then
  log "restarting containerd (no completed run restarted it with this configuration; ${CONTAINERD_LOADED})"
  systemctl restart containerd || die "${CONTAINERD_FAILED}"
  CONTAINERD_RESTART=1
else
  systemctl start containerd || die "${CONTAINERD_FAILED}"
fi
systemctl is-active --quiet containerd || die "${CONTAINERD_FAILED}"
cri=""
for _ in 1 2 3 4 5; do
  cri=$(cri_status)
  [[ ${cri} == ok ]] && break
  sleep 2
done
if [[ ${cri} != ok ]]; then
  die "containerd runs without its CRI plugin (ctr plugins ls: ${cri:-not loaded}), so kubeadm's preflight would fail: look for cri in disabled_plugins of ${CONTAINERD_CONFIG} and its imports, and in journalctl -u containerd"
fi
if [[ ${CONTAINERD_RESTART} -eq 1 ]]; then
  install -d -m 0755 "$(dirname "${CONTAINERD_LOADED}")"
  printf '%s\\n' "${CONTAINERD_DIGEST}" >"${CONTAINERD_LOADED}"
fi

"""

_AUDIT = """\
log "API server audit policy"
install -d -m 0700 "$(dirname "${AUDIT_POLICY}")" "${AUDIT_LOG_DIR}"
write_file "${AUDIT_POLICY}" 0600 <<'HYBRIDGPU_EOF'
{policy}HYBRIDGPU_EOF

"""

_FOOTER = """\
install -d -m 0700 "$(dirname "${KUBEADM_CONFIG}")"
log "done: ${NODE_NAME} (${NODE_ROLE}) is ready for kubeadm (config goes to ${KUBEADM_CONFIG})"
"""


#: Where the Kubernetes and NVIDIA repositories' downloaded keys are kept (``signed-by``).
KUBERNETES_KEYRING = "/etc/apt/keyrings/kubernetes-apt-keyring.gpg"
NVIDIA_KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"


def _with_minor(text: str) -> str:
    return text.replace("{minor}", "${K8S_MINOR}")


def _key_step(source: AptSource, keyring: str, what: str, setting: str) -> tuple[str, str]:
    """(the script line that provides the repository's key, the keyring ``signed-by`` names)."""
    if source.key_file is not None:
        line = (
            f'[[ -f {source.key_file} ]] || die "{source.key_file} ({what} mirror keyring, {setting}.keyFile) is not on this host: '
            'install it there, then re-run"'
        )
        return line, source.key_file
    assert source.key_url is not None
    return f'add_apt_key "{_with_minor(source.key_url)}" {keyring}', keyring


def kubernetes_repository(source: AptSource) -> dict[str, str]:
    """The parts of a script that set up the Kubernetes apt repository, for :func:`fill`.

    Args:
        source: the repository (:data:`hybridgpu.inventory.mirrors.KUBERNETES_APT` or a site's mirror);
            ``{minor}`` in its URLs becomes the script's ``${K8S_MINOR}``.

    Returns:
        ``{"{k8s_label}": log name, "{k8s_key}": the key line, "{k8s_deb}": the deb line}``.
    """
    assert source.url is not None
    key, keyring = _key_step(source, KUBERNETES_KEYRING, "the Kubernetes", "mirrors.apt.kubernetes")
    return {"{k8s_label}": source.label, "{k8s_key}": key, "{k8s_deb}": f"deb [signed-by={keyring}] {_with_minor(source.url)} /"}


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each placeholder (key of ``values``) replaced by its value."""
    for placeholder, value in values.items():
        template = template.replace(placeholder, value)
    return template


def _nvidia_repository(source: AptSource) -> str:
    if source.url is None:  # NVIDIA's own: the list file
        assert source.key_url is not None
        return fill(_NVIDIA_PUBLIC, {"{key_url}": source.key_url, "{list_url}": NVIDIA_LIST_URL, "{keyring}": NVIDIA_KEYRING})
    key, keyring = _key_step(source, NVIDIA_KEYRING, "the NVIDIA", "mirrors.apt.nvidia")
    return fill(_NVIDIA_MIRROR, {"{label}": source.label, "{key_step}": key, "{deb}": f"deb [signed-by={keyring}] {source.url} /"})


def registry_auth_fragment(logins: Sequence[tuple[str, str]]) -> str:
    """The content of :data:`REGISTRY_AUTH_PATH`: one CRI ``registry.configs."<host>".auth`` table per login.

    containerd's CRI plugin authenticates a pull from a mirror host with ``Registry.Configs[host].Auth`` when the
    kubelet passed no credentials (containerd ``internal/cri/server/images/image_pull.go`` at 301026e5 and
    ``pkg/cri/server/image_pull.go`` at v1.7.34: ``credentials`` / ``ParseAuth``); ``hosts.toml`` takes no credentials
    (``docs/hosts.md``: "you can still specify your credentials via CRI config"). The table is
    ``[plugins."io.containerd.grpc.v1.cri".registry.configs."<host>".auth]`` on 1.x and under
    ``io.containerd.cri.v1.images`` on 2.x (deprecated there, removal announced for v2.4: ``pkg/deprecation``
    ``CRIRegistryConfigs``); the bootstrap puts the installed major's name where :data:`CRI_REGISTRY_PLACEHOLDER` is.

    Args:
        logins: ``(host, value)`` pairs: the mirror's ``host[:port]`` and ``user:password`` (a value without a colon
            is a token: ``identitytoken``).

    Returns:
        TOML tables (strings escaped as TOML basic strings), sorted by host; same input, same bytes. Holds the
        secrets: it only ever travels as a Pulumi secret and lives in a mode 0600 file.
    """
    lines: list[str] = []
    for host, value in sorted(logins):
        user, sep, password = value.partition(":")
        lines.append(f"[{CRI_REGISTRY_PLACEHOLDER}.configs.{json.dumps(host)}.auth]")
        if sep:
            lines += [f"  username = {json.dumps(user)}", f"  password = {json.dumps(password)}"]
        else:
            lines.append(f"  identitytoken = {json.dumps(value)}")
    return "\n".join(lines) + "\n" if lines else ""


_REGISTRY_AUTH = """\
# registry_auth PLUGIN: the site's registry logins from REGISTRY_AUTH (written by pulumi up, mode 0600) as the CRI
# registry.configs tables of PLUGIN; nothing when the file is absent. The config then holds passwords: mode 0600.
registry_auth() {
  [[ -s ${REGISTRY_AUTH} ]] || return 0
  printf '\\n'
  sed "s|@CRI_REGISTRY@|plugins.$1.registry|" "${REGISTRY_AUTH}"
}
CONTAINERD_MODE=0644
if [[ -s ${REGISTRY_AUTH} ]]; then
  CONTAINERD_MODE=0600
fi
"""


def _with_registry_auth(containerd: str) -> str:
    """The containerd step writing the config with :func:`registry_auth_fragment`'s tables appended for its major."""
    for version, plugin in (("{config_v2}", '\'"io.containerd.grpc.v1.cri"\''), ("{config_v3}", '\'"io.containerd.cri.v1.images"\'')):
        old = f"write_file \"${{CONTAINERD_CONFIG}}\" 0644 <<'HYBRIDGPU_EOF'\n{version}HYBRIDGPU_EOF\n"
        new = f"write_file \"${{CONTAINERD_CONFIG}}\" \"${{CONTAINERD_MODE}}\" < <(\n      cat <<'HYBRIDGPU_EOF'\n{version}HYBRIDGPU_EOF\n      registry_auth {plugin}\n    )\n"
        assert old in containerd, version
        containerd = containerd.replace(old, new)
    return containerd.replace('log "containerd"\n', 'log "containerd"\n' + _REGISTRY_AUTH, 1)


def _registry_hosts(mirrors: Mirrors) -> str:
    lines = ['log "registry mirrors in ${CONTAINERD_CERTS} (containerd reads them on every pull: no restart)"\n']
    for entry in mirrors.registries:
        lines.append(f'write_file "${{CONTAINERD_CERTS}}/{entry.directory}/hosts.toml" 0644 <<\'HYBRIDGPU_EOF\'\n')
        lines.append(registry_hosts_toml(entry) + "HYBRIDGPU_EOF\n")
    return "".join(lines) + _REGISTRY_HOSTS_CLEANUP


# A package the running upgrade already moved (upgrades.kubernetes.to): newer than K8S_VERSION, not past UPGRADE_TO.
_UPGRADED = """
      have=${status#installed }
      have=${have%%-*}
      if dpkg --compare-versions "${have}" gt "${K8S_VERSION}" && dpkg --compare-versions "${have}" le "${UPGRADE_TO}"; then
        log "${pkg} ${have}: moved by the upgrade to ${UPGRADE_TO} (upgrades.kubernetes); left as it is"
        continue
      fi"""


def bootstrap_script(
    cluster: ClusterSpec,
    node: NodeSpec,
    *,
    nvidia_toolkit: bool,
    nvidia_default_runtime: bool = True,
    nvidia_toolkit_version: str | None = None,
    mirrors: Mirrors | None = None,
    upgrade_to: str | None = None,
    nvidia_toolkit_upgrade_to: str | None = None,
) -> str:
    """The bash script that prepares ``node`` for ``kubeadm init`` / ``join``.

    Args:
        cluster: the cluster (version, cgroup driver, audit log, kubelet options).
        node: the host.
        nvidia_toolkit: install the NVIDIA container toolkit and add its ``nvidia`` runtime to
            containerd's config (gpu-workers with preinstalled drivers; leave False when the
            GPU Operator installs the toolkit).
        nvidia_default_runtime: make ``nvidia`` containerd's default runtime (what
            ``nvidia-ctk --set-as-default`` does), which the device plugin expects unless pods
            use a RuntimeClass.
        nvidia_toolkit_version: pin the toolkit packages to this Debian version (e.g.
            ``1.18.0-1``); None installs the newest once and then leaves it alone.
        mirrors: the site's ``mirrors`` (:mod:`hybridgpu.inventory.mirrors`): the apt repositories
            the packages come from, and one ``hosts.toml`` per mirrored registry (hybridgpu's
            files of registries no longer listed are removed). With registry ``credentials`` the containerd
            config also takes the logins ``pulumi up`` writes to :data:`REGISTRY_AUTH_PATH` (mode 0600 then).
            None: the public repositories and no registry hosts (the script is then what it was before
            mirrors existed).
        upgrade_to: the release ``upgrades.kubernetes.to`` moves the cluster to, while it is ahead of the cluster's
            version: kubelet, kubeadm and kubectl already between the two are left as they are (a re-run on a host
            the upgrade moved); anything else installed at another version still stops the script. None: only the
            cluster's version is accepted.
        nvidia_toolkit_upgrade_to: the toolkit version ``upgrades.nvidia.toolkitVersion`` moves the GPU workers to, while it
            differs from ``nvidia_toolkit_version``: a host without the toolkit gets this version; a host whose four
            packages are all at ``nvidia_toolkit_version`` (or, unpinned, all at one version) keeps them for the upgrade
            to move, drained; anything else is moved to this version. None: only ``nvidia_toolkit_version``.

    Raises:
        ValueError: ``nvidia_toolkit`` on a node that is not a gpu-worker, or a malformed version.
    """
    if nvidia_toolkit and node.role != "gpu-worker":
        raise ValueError(f"node {node.hostname!r}: the NVIDIA container toolkit belongs on gpu-workers, not a {node.role}")
    if nvidia_toolkit_version is not None and not _DEB_VERSION_RE.match(nvidia_toolkit_version):
        raise ValueError(f"nvidia_toolkit_version {nvidia_toolkit_version!r} is not a Debian package version")
    if nvidia_toolkit_upgrade_to is not None and not _DEB_VERSION_RE.match(nvidia_toolkit_upgrade_to):
        raise ValueError(f"nvidia_toolkit_upgrade_to {nvidia_toolkit_upgrade_to!r} is not a Debian package version")

    values = {
        "NODE_NAME": node.hostname,
        "NODE_ROLE": node.role,
        "K8S_VERSION": cluster.version,
        "K8S_MINOR": cluster.minor,
        "CRI_SOCKET": CRI_SOCKET,
        "RESOLV_CONF": cluster.resolv_conf,
        "KUBEADM_CONFIG": KUBEADM_CONFIG_PATH,
    }
    sysctls = ["net.bridge.bridge-nf-call-iptables = 1", "net.bridge.bridge-nf-call-ip6tables = 1", "net.ipv4.ip_forward = 1"]
    if cluster.protect_kernel_defaults:
        # protectKernelDefaults makes the kubelet fail unless these are set already.
        sysctls += [f"{key} = {value}" for key, value in KUBELET_PROTECTED_SYSCTLS]

    values.update(
        CONTAINERD_CONFIG=CONTAINERD_CONFIG_PATH,
        CONTAINERD_BACKUP=CONTAINERD_BACKUP_PATH,
        CONTAINERD_MARKER=CONTAINERD_MARKER,
        CONTAINERD_CERTS=CONTAINERD_CERTS_DIR,
        CONTAINERD_DROPINS=CONTAINERD_DROPIN_DIR,
        DROPINS_MERGE_FROM_MAJOR=str(DROPINS_MERGE_FROM_MAJOR),
        CONTAINERD_LOADED=CONTAINERD_LOADED_PATH,
    )
    containerd = {"systemd_cgroup": cluster.cgroup_driver == "systemd", "nvidia": nvidia_toolkit, "nvidia_default": nvidia_default_runtime}
    logins = registry_logins(mirrors)
    if logins:
        values["REGISTRY_AUTH"] = REGISTRY_AUTH_PATH
    body = [
        SCRIPT_LOG,
        SCRIPT_HELPERS,
        _PREFLIGHT,
        _KERNEL.replace("{sysctls}", "\n".join(sysctls)),
        (_with_registry_auth(_CONTAINERD) if logins else _CONTAINERD)
        .replace("{config_v2}", containerd_config(2, **containerd))
        .replace("{config_v3}", containerd_config(3, **containerd)),
    ]
    if mirrors is not None:
        values["MIRRORED_REGISTRIES"] = " ".join(entry.directory for entry in mirrors.registries)
        body.append(_registry_hosts(mirrors))
    body.append(_CRICTL)
    sources = apt_sources(mirrors)
    if nvidia_toolkit:
        body.append(_NVIDIA + _nvidia_repository(sources.nvidia))
        if nvidia_toolkit_upgrade_to is not None and nvidia_toolkit_upgrade_to != nvidia_toolkit_version:
            values["NVIDIA_TOOLKIT_VERSION"] = nvidia_toolkit_upgrade_to
            values["NVIDIA_TOOLKIT_PREVIOUS"] = nvidia_toolkit_version or ""
            body.append(_NVIDIA_INSTALL_PINNED.replace("{upgrading}", _NVIDIA_TOOLKIT_UPGRADING))
        elif nvidia_toolkit_version:
            values["NVIDIA_TOOLKIT_VERSION"] = nvidia_toolkit_version
            body.append(_NVIDIA_INSTALL_PINNED.replace("{upgrading}", ""))
        else:
            body.append(_NVIDIA_INSTALL_LATEST)
    body.append(_CONTAINERD_START)
    if upgrade_to is not None and upgrade_to != cluster.version:
        values["UPGRADE_TO"] = upgrade_to
    body.append(fill(_KUBERNETES.replace("{upgraded}", _UPGRADED if "UPGRADE_TO" in values else ""), kubernetes_repository(sources.kubernetes)))
    if node.role == "control-plane" and cluster.audit_log:
        values["AUDIT_POLICY"] = AUDIT_POLICY_PATH
        values["AUDIT_LOG_DIR"] = AUDIT_LOG_DIR
        policy = dump_yaml(audit_policy(), ORDERED)
        body.append(_AUDIT.replace("{policy}", policy))
    body.append(_FOOTER)

    header = SCRIPT_HEADER.format(
        title=f"hybridgpu bootstrap for {node.hostname} ({node.role}), Kubernetes v{cluster.version}, cluster {cluster.name}",
        note="Safe to re-run: every step checks before it changes.",
    )
    return header + shell_assign(values) + "\n" + "".join(body)


#: Written by the kubeadm run script once the host is verified complete (API server answers, node
#: registered, kubeadm-config present); the kubeadm-config upload skips hosts that have it.
COMPLETE_MARKER_PATH = "/etc/kubernetes/hybridgpu/complete"

#: ``kubeadm init`` phases up to and including kubelet-start (kubernetes/kubernetes
#: ``cmd/kubeadm/app/cmd/init.go``, ``newCmdInit``: preflight, certs, kubeconfig, etcd,
#: control-plane, kubelet-start, wait-control-plane, upload-config, upload-certs,
#: mark-control-plane, bootstrap-token, kubelet-finalize, addon, show-join-command). When the API
#: server already answers, a retry skips these and runs the rest, which create-or-update.
INIT_PHASES_BEFORE_WAIT = ("preflight", "certs", "kubeconfig", "etcd", "control-plane", "kubelet-start")


def kubeadm_command(node: NodeSpec, first: bool, *, config_path: str = KUBEADM_CONFIG_PATH) -> str:
    """The ``kubeadm init`` (first control plane) or ``kubeadm join`` command line.

    ``init`` runs with ``--upload-certs --skip-token-print --skip-certificate-key-print``: without
    the two ``--skip`` flags kubeadm prints the join token (``showjoincommand.go``) and the
    certificate key (``phases/init/uploadcerts.go``: ``[upload-certs] Using certificate key``)
    on stdout, which pulumi-command would log and copy into its error on failure. ``--skip-*``
    flags may be mixed with ``--config`` (``apis/kubeadm/validation/validation.go``,
    ``isAllowedFlag``).

    Raises:
        ValueError: ``first`` for a node that is not a control plane.
    """
    if first and node.role != "control-plane":
        raise ValueError(f"node {node.hostname!r}: only a control plane can run kubeadm init (it is a {node.role})")
    path = shlex.quote(config_path)
    if first:
        return f"kubeadm init --config {path} --upload-certs --skip-token-print --skip-certificate-key-print"
    return f"kubeadm join --config {path}"


_RUN = """\
[[ ${EUID} -eq 0 ]] || die "run as root"
# k ARGS: kubectl with this host's credentials, never waiting long for an API server that is down.
k() { kubectl --kubeconfig "${CHECK_KUBECONFIG}" --request-timeout=10s "$@"; }

# missing_sign: prints what shows the {kind} is NOT complete, or nothing when it is: the API
# server answers, this node is registered, kube-system/kubeadm-config exists{extra_doc}.
# (/etc/kubernetes/kubelet.conf alone proves nothing: kubeadm writes it before
# wait-control-plane, upload-config, upload-certs and bootstrap-token.)
missing_sign() {
  if [[ ! -f ${CHECK_KUBECONFIG} ]]; then
    echo "no ${CHECK_KUBECONFIG} (phase {kubeconfig_phase})"
  elif ! k get --raw=/readyz >/dev/null 2>&1; then
    echo "the API server does not answer (phase wait-control-plane)"
  elif ! k get node "${NODE_NAME}" -o name >/dev/null 2>&1; then
    echo "node ${NODE_NAME} is not registered (phase kubelet-start)"
  elif ! k -n kube-system get configmap kubeadm-config -o name >/dev/null 2>&1; then
    echo "ConfigMap kube-system/kubeadm-config is missing (phase upload-config)"
{extra_checks}  fi
}

# leftovers: true when an earlier kubeadm run left state behind on this host.
leftovers() {
  [[ -e /etc/kubernetes/kubelet.conf || -e /etc/kubernetes/bootstrap-kubelet.conf || -e /var/lib/kubelet/config.yaml ]] ||
    [[ -n $(ls -A /etc/kubernetes/manifests 2>/dev/null) ]]
}

# wait_complete: the kubelet registers its Node shortly after kubeadm returns: give it a minute.
wait_complete() {
  local attempt
  for attempt in 1 2 3 4 5 6 7 8 9 10 11 12; do
    sign=$(missing_sign)
    if [[ -z ${sign} ]]; then
      return 0
    fi
    log "waiting for ${NODE_NAME} to be complete (${attempt}/12): ${sign}"
    sleep 5
  done
  return 1
}

finish() {
  install -d -m 0700 "$(dirname "${COMPLETE_MARKER}")"
  : >"${COMPLETE_MARKER}"
  # The config holds the bootstrap token (and certificate key): do not leave it on disk.
  rm -f "${KUBEADM_CONFIG}"
}

sign=""
if leftovers; then
  sign=$(missing_sign)
  if [[ -z ${sign} ]]; then
    log "${NODE_NAME}: kubeadm {kind} already complete (API server answers, node registered, kubeadm-config present); nothing to do"
    finish
    exit 0
  fi
  log "${NODE_NAME}: an earlier kubeadm {kind} did not finish: ${sign}"
fi
[[ -f ${KUBEADM_CONFIG} ]] || die "missing ${KUBEADM_CONFIG}; upload the substituted kubeadm config first"
if grep -qF "\\${" "${KUBEADM_CONFIG}"; then
  die "${KUBEADM_CONFIG} still contains \\${...} placeholders; fill them with hybridgpu.render.kubeadm_secrets.substitute"
fi
chmod 0600 "${KUBEADM_CONFIG}"
rm -f "${COMPLETE_MARKER}"
{run}
wait_complete || die "kubeadm {kind} returned but ${NODE_NAME} is not complete: ${sign}"
finish
log "${NODE_NAME}: kubeadm {kind} complete"
"""

_RUN_INIT = """\
if leftovers && [[ ${sign} != "no "* && ${sign} != "the API server does not answer"* ]]; then
  # The control plane is up: run the phases after kubelet-start again (they create or update).
  log "retrying kubeadm init from phase wait-control-plane on (skipping ${SKIP_PHASES})"
  {command} --skip-phases="${SKIP_PHASES}"
else
  if leftovers; then
    log "retrying: kubeadm reset, then a full kubeadm init"
    kubeadm reset --force --cri-socket "${CRI_SOCKET}"
    rm -rf /etc/cni/net.d
  fi
  log "kubeadm init on ${NODE_NAME}"
  {command}
fi"""

_RUN_JOIN = """\
if leftovers; then
  log "retrying: kubeadm reset, then kubeadm join again"
  kubeadm reset --force --cri-socket "${CRI_SOCKET}"
  rm -rf /etc/cni/net.d
fi
log "kubeadm join on ${NODE_NAME}"
{command}"""

_INIT_EXTRA = """\
  elif ! k -n kube-public get configmap cluster-info -o name >/dev/null 2>&1; then
    echo "ConfigMap kube-public/cluster-info is missing (phases upload-certs, mark-control-plane, bootstrap-token)"
"""

_CONTROL_PLANE_EXTRA = """\
  elif ! k get nodes -l node-role.kubernetes.io/control-plane -o name 2>/dev/null | grep -qxF "node/${NODE_NAME}"; then
    echo "node ${NODE_NAME} is not marked as a control plane (phase control-plane-join)"
"""


def kubeadm_run_script(node: NodeSpec, *, first: bool, config_path: str = KUBEADM_CONFIG_PATH, cri_socket: str = CRI_SOCKET) -> str:
    """The script that runs :func:`kubeadm_command` on a host, safe to run again after a failure.

    The host counts as complete only when what a finished ``kubeadm init``/``join`` leaves is
    really there, checked with ``kubectl`` and the host's own credentials
    (``/etc/kubernetes/admin.conf`` on control planes, ``kubelet.conf`` on workers, which may
    read their Node and ``kubeadm-config``: kubeadm binds ``system:nodes`` to the
    ``kubeadm:nodes-kubeadm-config`` Role in ``phases/uploadconfig/uploadconfig.go``): the API
    server answers ``/readyz``, the Node is registered, ``kube-system/kubeadm-config`` exists;
    for ``init`` also ``kube-public/cluster-info`` (written by the bootstrap-token phase), for a
    control-plane join the ``node-role.kubernetes.io/control-plane`` label.

    * complete: logs so, writes :data:`COMPLETE_MARKER_PATH`, deletes the config, exits 0;
    * nothing there yet: runs kubeadm;
    * left over from a failed run: logs the sign that is missing and the phase it points to,
      then for ``init`` with a live API server re-runs the phases after kubelet-start
      (``--skip-phases`` :data:`INIT_PHASES_BEFORE_WAIT`), otherwise ``kubeadm reset --force``
      and runs kubeadm again.

    After kubeadm returns, the same checks must pass or the script fails naming the missing
    sign. The config (token, certificate key) is deleted once the host is complete.

    Raises:
        ValueError: ``first`` for a node that is not a control plane, or a malformed CRI socket.
    """
    if not re.fullmatch(r"unix:///[A-Za-z0-9/._-]+", cri_socket):
        raise ValueError(f"cri_socket {cri_socket!r} must be a unix:/// socket path")
    command = kubeadm_command(node, first, config_path=config_path).replace(shlex.quote(config_path), '"${KUBEADM_CONFIG}"')
    kind = "init" if first else "join"
    control_plane = node.role == "control-plane"
    header = SCRIPT_HEADER.format(
        title=f"hybridgpu kubeadm {kind} for {node.hostname} ({node.role})",
        note="Does nothing on a host that is complete; resets and retries after a failed run.",
    )
    values = {
        "NODE_NAME": node.hostname,
        "KUBEADM_CONFIG": config_path,
        "CRI_SOCKET": cri_socket,
        "CHECK_KUBECONFIG": "/etc/kubernetes/admin.conf" if control_plane else "/etc/kubernetes/kubelet.conf",
        "COMPLETE_MARKER": COMPLETE_MARKER_PATH,
    }
    if first:
        values["SKIP_PHASES"] = ",".join(INIT_PHASES_BEFORE_WAIT)
        run, extra, extra_doc = _RUN_INIT.replace("{command}", command), _INIT_EXTRA, " and kube-public/cluster-info exists"
    else:
        run = _RUN_JOIN.replace("{command}", command)
        extra, extra_doc = (_CONTROL_PLANE_EXTRA, " and the node is marked control-plane") if control_plane else ("", "")
    body = (
        _RUN.replace("{run}", run)
        .replace("{extra_checks}", extra)
        .replace("{extra_doc}", extra_doc)
        .replace("{kubeconfig_phase}", "kubeconfig" if control_plane else "kubelet-start")
        .replace("{kind}", kind)
    )
    return header + shell_assign(values) + "\n" + SCRIPT_LOG + body


_DRAIN = """\
if ! out=$(kubectl get node "${NODE_NAME}" -o name 2>&1); then
  if [[ ${out} == *NotFound* || ${out} == *"not found"* ]]; then
    log "node ${NODE_NAME} not found; nothing to drain"
    exit 0
  fi
  die "cannot read node ${NODE_NAME}: ${out}"
fi
log "cordon ${NODE_NAME}"
kubectl cordon "${NODE_NAME}"
log "drain ${NODE_NAME} (timeout ${DRAIN_TIMEOUT}; PodDisruptionBudgets are respected)"
kubectl drain "${NODE_NAME}" --ignore-daemonsets --delete-emptydir-data --timeout="${DRAIN_TIMEOUT}"
"""

_DELETE = """\
log "delete node ${NODE_NAME}"
kubectl delete node "${NODE_NAME}" --ignore-not-found
"""


def drain_and_cordon_script(hostname: str, *, timeout: str = "15m", delete_node: bool = False) -> str:
    """Cordon and drain a node (run where ``kubectl`` reaches the cluster; ``KUBECONFIG`` as usual).

    Args:
        hostname: the Node name.
        timeout: ``kubectl drain --timeout`` (e.g. ``15m``, ``1h30m``); long GPU jobs may need more.
        delete_node: also delete the Node object afterwards (before :func:`reset_script` on removal).

    Raises:
        ValueError: malformed hostname or timeout.
    """
    if not is_dns1123_subdomain(hostname):
        raise ValueError(f"hostname {hostname!r} must be a lowercase DNS subdomain")
    if not DURATION_RE.match(timeout):
        raise ValueError(f"timeout {timeout!r} must look like 15m, 1h or 1h30m")
    header = SCRIPT_HEADER.format(title=f"hybridgpu: cordon and drain {hostname}", note="Safe to re-run.")
    body = _DRAIN + (_DELETE if delete_node else "")
    return header + shell_assign({"NODE_NAME": hostname, "DRAIN_TIMEOUT": timeout}) + "\n" + SCRIPT_LOG + body


_RESET = """\
[[ ${EUID} -eq 0 ]] || die "run as root"
if command -v kubeadm >/dev/null 2>&1 && [[ -d /etc/kubernetes ]]; then
  log "kubeadm reset"
  kubeadm reset --force --cri-socket "${CRI_SOCKET}"
fi
# kubeadm reset leaves CNI configuration behind; a stale one breaks the next join.
rm -rf /etc/cni/net.d
rm -f "${KUBEADM_CONFIG}" "${COMPLETE_MARKER}"
log "reset done; iptables/IPVS rules and CNI interfaces are left alone (reboot, or clean them per your CNI)"
"""


def reset_script(*, cri_socket: str = CRI_SOCKET) -> str:
    """Undo ``kubeadm init/join`` on this host (drain it first with :func:`drain_and_cordon_script`).

    Keeps the packages and containerd, so :func:`kubeadm_run_script` can join the host again.
    """
    if not re.fullmatch(r"unix:///[A-Za-z0-9/._-]+", cri_socket):
        raise ValueError(f"cri_socket {cri_socket!r} must be a unix:/// socket path")
    header = SCRIPT_HEADER.format(title="hybridgpu: reset kubeadm on this host", note="Safe to re-run.")
    return header + shell_assign({"CRI_SOCKET": cri_socket, "KUBEADM_CONFIG": KUBEADM_CONFIG_PATH, "COMPLETE_MARKER": COMPLETE_MARKER_PATH}) + "\n" + SCRIPT_LOG + _RESET


#: Lifetime of a bootstrap token (re)created for a joining node; long enough for one join.
JOIN_TOKEN_TTL = "2h0m0s"


def join_credentials_script(*, control_plane: bool) -> str:
    """Script for the FIRST control plane that makes the join credentials valid for a new node.

    kubeadm's bootstrap token expires (``TOKEN_TTL``, 24 h) and the uploaded control-plane
    certificates are deleted after two hours, so a node added days later could not join with
    the token and certificate key created at ``kubeadm init``. Before each join this script
    (re)creates the same token if it is gone (with :data:`JOIN_TOKEN_TTL`) and, for a further
    control plane, re-uploads the certificates encrypted with the same certificate key
    (``kubeadm init phase upload-certs --upload-certs --certificate-key``). Idempotent; safe
    when several nodes join at once (a concurrent create that loses the race is fine as long
    as the token exists afterwards). Sources: kubeadm docs "kubeadm token" and "kubeadm init
    phase upload-certs" (kubernetes.io, read 2026-11-22).

    The token and key appear only as the placeholders ``${BOOTSTRAP_TOKEN}`` and
    ``${CERTIFICATE_KEY}``: fill them with :func:`hybridgpu.render.kubeadm_secrets.substitute` and send
    the result on stdin as a secret. No other ``${...}`` appears in the script.
    """
    lines = [
        "#!/usr/bin/env bash",
        "# hybridgpu: make the join credentials valid for a new node (runs on the first control plane).",
        "# Generated by hybridgpu.render.bootstrap. Holds secrets once filled: send it on stdin only.",
        "set -euo pipefail",
        "export KUBECONFIG=/etc/kubernetes/admin.conf",
        'token="${BOOTSTRAP_TOKEN}"',
        'token_id="$(printf \'%s\' "$token" | cut -d. -f1)"',
        "has_token() { kubeadm token list 2>/dev/null | awk 'NR > 1 { print $1 }' | cut -d. -f1 | grep -qx \"$token_id\"; }",
        "if ! has_token; then",
        f'  kubeadm token create "$token" --ttl {JOIN_TOKEN_TTL} --description "hybridgpu node join" >/dev/null || has_token',
        "fi",
    ]
    if control_plane:
        lines.append('kubeadm init phase upload-certs --upload-certs --skip-certificate-key-print --certificate-key "${CERTIFICATE_KEY}" >/dev/null')
    return "\n".join(lines) + "\n"
