"""Render the scripts of an on-prem Kubernetes upgrade, the etcd snapshot timer, and the GPU driver upgrade values (pure).

From an :class:`~hybridgpu.inventory.upgrade.UpgradePlan` (:func:`hybridgpu.inventory.upgrade.plan_upgrade`):

* :func:`etcd_snapshot_script`: ``etcdctl snapshot save`` against the local etcd member with kubeadm's
  client certificate, checked with ``snapshot status``, written atomically (``.part`` then renamed),
  old scheduled snapshots pruned to the retention count. Before an upgrade it runs once per target
  version (a stamp file); the scheduled one is the same script.
* :func:`etcd_snapshot_timer_script`: installs that script with a systemd service and timer
  (``OnCalendar`` from the inventory's ``upgrades.etcdSnapshots.schedule``) on a control plane.
* Per node and step, in this order (:func:`upgrade_run_order`): :func:`node_kubeadm_script` on the node
  (``kubeadm`` package released, moved to the step's version and held again; ``kubeadm upgrade plan`` and
  ``kubeadm upgrade apply vX --yes`` on the first control plane, ``kubeadm upgrade node`` on the others),
  :func:`upgrade_drain_script` from the first control plane (cordons and marks the node
  ``hybridgpu.io/cordoned-by: upgrade-kubernetes-<version>`` in one write; a node already cordoned by anyone else is
  drained but not marked), :func:`node_kubelet_script` on the node (``kubelet`` and ``kubectl`` released, moved, held;
  kubelet restarted) and :func:`uncordon_script` from the first control plane (waits for the node's kubelet to
  report the version, then uncordons only a node carrying an upgrade's mark, and not a host ``cordoned`` in the
  inventory).
  Each node phase leaves a stamp (``/var/lib/hybridgpu/upgrade/<version>/<phase>``) once it completed, so a
  re-run after a failure in the middle resumes where it stopped and a re-run after success does nothing.
* :func:`gpu_operator_driver_upgrade_values`: the GPU Operator chart's ``driver.upgradePolicy`` from the
  inventory's ``upgrades.gpuDriver``.
* :func:`nvidia_run_order`: the host NVIDIA driver/toolkit upgrade of ``upgrades.nvidia``, per GPU worker:
  :func:`nvidia_check_script` (is the node at the target already? prints its state), :func:`nvidia_drain_script`
  (nothing for a node at the target; :func:`with_node_state` fills in the state printed), :func:`nvidia_install_script`
  (stop kubelet and the node's containers, unhold/install/hold the pinned packages: the driver, on NVSwitch hosts the
  fabric manager at the driver's version, the toolkit; schedule a reboot for a new driver and print the boot id),
  :func:`nvidia_reboot_wait_script` (the Node back ``Ready`` with another ``bootID``; :func:`with_boot_id` fills in the
  one printed), :func:`nvidia_verify_script` (``nvidia-smi`` reports the version on every GPU the inventory lists; the
  fabric manager active) and :func:`uncordon_script` (the drain's mark is ``upgrade-<tag>``). The scripts look at what
  is installed and loaded, so a re-run neither drains nor reinstalls a node at the target and a re-run after a failure
  finishes the job.

Sources (read 2026-11-26):

* Order and commands: Kubernetes docs "Upgrading kubeadm clusters" (kubernetes/website
  ``content/en/docs/tasks/administer-cluster/kubeadm/kubeadm-upgrade.md``): per node upgrade kubeadm
  (``apt-mark unhold kubeadm``, install, ``apt-mark hold kubeadm``), ``kubeadm upgrade plan`` /
  ``kubeadm upgrade apply vX`` on the first control plane and ``kubeadm upgrade node`` on the others
  and on workers, drain, then kubelet and kubectl the same way, ``systemctl daemon-reload``,
  ``systemctl restart kubelet``, uncordon; "Changing the package repository" (one pkgs.k8s.io
  repository per minor version).
* etcd client certificate: kubeadm talks to its stacked etcd with ``etcd/ca.crt`` and
  ``etcd/healthcheck-client.{crt,key}`` under ``/etc/kubernetes/pki`` (kubernetes/kubernetes
  ``cmd/kubeadm/app/util/etcd/etcd.go``, ``NewFromCluster``; names in ``cmd/kubeadm/app/constants``).
* etcd's ``snapshot save`` / ``snapshot status`` (etcd-io/etcd ``etcdctl/README.md``; ``etcdutl`` takes
  over ``status``/``restore`` from 3.5). Debian's ``etcd-client`` package provides ``etcdctl``.
* GPU Operator: NVIDIA/gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml``
  ``driver.upgradePolicy`` (copy in /work/shared/upstream/cloud/gpu-operator-v26.7.0).
* Fabric manager (read 2026-11-27): its version must equal the driver's (NVIDIA/apt-packaging-fabric-manager README);
  installed as ``<package>=<driver version>*`` and held (NVIDIA/gpu-driver-container commit 06a208c,
  ``ubuntu22.04/precompiled/nvidia-driver``); systemd unit ``nvidia-fabricmanager`` (awslabs/amazon-eks-ami commit
  81fec2e, ``templates/al2023/provisioners/install-nvidia-driver.sh``). Package names:
  :attr:`hybridgpu.inventory.upgrade.HostDriver.fabric_manager_package`.

Every script passes ``shellcheck``; values from the inputs appear only in quoted ``readonly``
assignments at the top. Pure: no Pulumi.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hybridgpu.inventory.models import Inventory, InventoryError
from hybridgpu.inventory.upgrade import (
    EtcdSnapshots,
    GpuDriverUpgradePolicy,
    NodeUpgrade,
    NvidiaNode,
    NvidiaUpgradePlan,
    UpgradePlan,
    UpgradePolicy,
    parse_version,
    plan_nvidia_upgrade,
    plan_upgrade,
)
from hybridgpu.k8s import CORDONED_BY_ANNOTATION, is_dns1123_subdomain
from hybridgpu.inventory.mirrors import Mirrors, apt_sources
from hybridgpu.render.bootstrap import DURATION_RE as _DRAIN_TIMEOUT
from hybridgpu.render.bootstrap import SCRIPT_HEADER, SCRIPT_HELPERS, SCRIPT_LOG, fill, kubernetes_repository, shell_assign

__all__ = [
    "ETCD_CA",
    "ETCD_CLIENT_CERT",
    "ETCD_CLIENT_KEY",
    "SNAPSHOT_BIN",
    "SNAPSHOT_UNIT",
    "UPGRADE_STAMP_DIR",
    "BOOT_ID_UNSET",
    "UPGRADE_MARK_PREFIX",
    "NVIDIA_TOOLKIT_PACKAGES",
    "STATE_AT_TARGET",
    "STATE_UNKNOWN",
    "STATE_UPGRADE",
    "ScriptRun",
    "etcd_snapshot_script",
    "etcd_snapshot_timer_script",
    "gpu_operator_driver_upgrade_values",
    "node_kubeadm_script",
    "fill_from_previous",
    "node_kubelet_script",
    "nvidia_check_script",
    "nvidia_drain_script",
    "nvidia_install_script",
    "nvidia_reboot_wait_script",
    "nvidia_run_order",
    "nvidia_verify_script",
    "with_boot_id",
    "with_node_state",
    "uncordon_script",
    "upgrade_drain_script",
    "upgrade_mark",
    "requested_upgrade",
    "upgrade_run_order",
]

#: kubeadm's etcd CA and the client certificate kubeadm itself uses against the stacked etcd.
ETCD_CA = "/etc/kubernetes/pki/etcd/ca.crt"
ETCD_CLIENT_CERT = "/etc/kubernetes/pki/etcd/healthcheck-client.crt"
ETCD_CLIENT_KEY = "/etc/kubernetes/pki/etcd/healthcheck-client.key"
#: Where each node keeps the phases of an upgrade it completed: ``<dir>/<version>/<phase>``.
UPGRADE_STAMP_DIR = "/var/lib/hybridgpu/upgrade"
#: The installed snapshot script and the systemd unit name (``.service`` and ``.timer``).
SNAPSHOT_BIN = "/usr/local/sbin/hybridgpu-etcd-snapshot"
SNAPSHOT_UNIT = "hybridgpu-etcd-snapshot"


def _version(version: str) -> str:
    parts = version.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"version {version!r} must be MAJOR.MINOR.PATCH such as 1.36.1")
    return version


def _host(hostname: str) -> str:
    if not is_dns1123_subdomain(hostname):
        raise ValueError(f"hostname {hostname!r} must be a lowercase DNS subdomain")
    return hostname


# --------------------------------------------------------------------------- etcd snapshots

_SNAPSHOT = """\
[[ ${EUID} -eq 0 ]] || die "run as root"
if [[ -n ${STAMP} && -e ${STAMP} ]]; then
  log "etcd snapshot for this upgrade already taken (${STAMP}); nothing to do"
  exit 0
fi
[[ -r ${ETCD_CLIENT_KEY} ]] || die "${ETCD_CLIENT_KEY} not found: run this on a control plane of the kubeadm cluster"
if ! command -v etcdctl >/dev/null 2>&1; then
  log "installing etcdctl (Debian/Ubuntu package etcd-client)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-client >/dev/null
fi
install -d -m 0700 "${SNAPSHOT_DIR}"
name="${SNAPSHOT_DIR}/${REASON}-$(date -u +%Y%m%dT%H%M%SZ).db"
rm -f "${name}.part"
log "etcd snapshot save ${name}"
ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 --cacert="${ETCD_CA}" --cert="${ETCD_CLIENT_CERT}" \\
  --key="${ETCD_CLIENT_KEY}" snapshot save "${name}.part" >/dev/null
if command -v etcdutl >/dev/null 2>&1; then
  reader=(etcdutl snapshot status)
else
  reader=(etcdctl snapshot status)
fi
if ! ETCDCTL_API=3 "${reader[@]}" "${name}.part" >/dev/null; then
  rm -f "${name}.part"
  die "snapshot ${name}.part does not read back (${reader[*]}); nothing kept"
fi
chmod 0600 "${name}.part"
mv "${name}.part" "${name}"
if [[ ${REASON} == scheduled ]]; then
  # Keep the newest RETENTION scheduled snapshots (names sort by time); pre-upgrade ones stay until removed by hand.
  find "${SNAPSHOT_DIR}" -maxdepth 1 -name 'scheduled-*.db' | sort | head -n "-${RETENTION}" | while read -r old; do
    rm -f "${old}"
    log "removed ${old} (keeping ${RETENTION})"
  done
fi
if [[ -n ${STAMP} ]]; then
  install -d -m 0755 "$(dirname "${STAMP}")"
  : >"${STAMP}"
fi
log "done: ${name}"
"""


def _snapshot_values(snapshots: EtcdSnapshots, reason: str, stamp: str) -> dict[str, str]:
    return {
        "SNAPSHOT_DIR": snapshots.directory,
        "RETENTION": str(snapshots.retention),
        "REASON": reason,
        "STAMP": stamp,
        "ETCD_CA": ETCD_CA,
        "ETCD_CLIENT_CERT": ETCD_CLIENT_CERT,
        "ETCD_CLIENT_KEY": ETCD_CLIENT_KEY,
    }


def etcd_snapshot_script(snapshots: EtcdSnapshots, *, before_version: str | None = None) -> str:
    """Script (root, on a control plane) that saves an etcd snapshot into ``snapshots.directory``.

    Args:
        snapshots: the inventory's ``upgrades.etcdSnapshots`` (directory, retention).
        before_version: the version an upgrade moves to; the snapshot is then named ``pre-upgrade-<version>-...``,
            taken once (stamp ``UPGRADE_STAMP_DIR/<version>/etcd-snapshot``) and never pruned. ``None``: a
            scheduled snapshot (``scheduled-<UTC time>.db``), after which all but the newest ``retention`` go.

    Returns:
        The script text (same input, same bytes).

    Raises:
        ValueError: ``before_version`` is not MAJOR.MINOR.PATCH.
    """
    if before_version is None:
        reason, stamp, title = "scheduled", "", "hybridgpu: scheduled etcd snapshot"
    else:
        _version(before_version)
        reason, stamp = f"pre-upgrade-{before_version}", f"{UPGRADE_STAMP_DIR}/{before_version}/etcd-snapshot"
        title = f"hybridgpu: etcd snapshot before the upgrade to {before_version}"
    header = SCRIPT_HEADER.format(title=title, note="Safe to re-run.")
    return header + shell_assign(_snapshot_values(snapshots, reason, stamp)) + "\n" + SCRIPT_LOG + _SNAPSHOT


_TIMER_INSTALL = """\
[[ ${EUID} -eq 0 ]] || die "run as root"
{body}"""

_TIMER_ON = """\
log "etcd snapshot timer (${SCHEDULE}, keeping ${RETENTION})"
write_file "${SNAPSHOT_BIN}" 0755 <<'HYBRIDGPU_SNAPSHOT_EOF'
{script}HYBRIDGPU_SNAPSHOT_EOF
units_changed=${FILE_CHANGED}
write_file "/etc/systemd/system/${UNIT}.service" 0644 <<EOF
[Unit]
Description=hybridgpu: etcd snapshot (keeps ${RETENTION} in ${SNAPSHOT_DIR})
After=kubelet.service

[Service]
Type=oneshot
ExecStart=${SNAPSHOT_BIN}
EOF
units_changed=$((units_changed | FILE_CHANGED))
write_file "/etc/systemd/system/${UNIT}.timer" 0644 <<EOF
[Unit]
Description=hybridgpu: etcd snapshot, ${SCHEDULE}

[Timer]
OnCalendar=${SCHEDULE}
RandomizedDelaySec=30m
Persistent=true

[Install]
WantedBy=timers.target
EOF
units_changed=$((units_changed | FILE_CHANGED))
if [[ ${units_changed} -eq 1 ]]; then
  systemctl daemon-reload
fi
systemctl enable --now "${UNIT}.timer" >/dev/null 2>&1
systemctl is-enabled --quiet "${UNIT}.timer" || die "${UNIT}.timer is not enabled"
log "done: ${UNIT}.timer enabled; snapshots in ${SNAPSHOT_DIR}"
"""

_TIMER_OFF = """\
if [[ -e "/etc/systemd/system/${UNIT}.timer" ]]; then
  systemctl disable --now "${UNIT}.timer" >/dev/null 2>&1 || true
  rm -f "/etc/systemd/system/${UNIT}.timer" "/etc/systemd/system/${UNIT}.service" "${SNAPSHOT_BIN}"
  systemctl daemon-reload
  log "removed ${UNIT}.timer (etcdSnapshots.enabled is false); the snapshots already taken stay in ${SNAPSHOT_DIR}"
fi
log "done: no etcd snapshot timer"
"""


def etcd_snapshot_timer_script(snapshots: EtcdSnapshots) -> str:
    """Script (root, on each control plane) that installs the scheduled snapshot: :func:`etcd_snapshot_script` as
    :data:`SNAPSHOT_BIN`, a oneshot ``.service`` and a ``.timer`` (``OnCalendar=<schedule>``, ``Persistent=true``:
    a run missed while the host was off happens at boot; ``RandomizedDelaySec=30m``), enabled at once. With
    ``enabled: false`` it removes the three files and the timer instead. Re-running changes nothing.

    Args:
        snapshots: the inventory's ``upgrades.etcdSnapshots``.

    Returns:
        The script text.
    """
    header = SCRIPT_HEADER.format(title="hybridgpu: scheduled etcd snapshots (systemd timer)", note="Safe to re-run.")
    values = {"SNAPSHOT_BIN": SNAPSHOT_BIN, "UNIT": SNAPSHOT_UNIT, "SNAPSHOT_DIR": snapshots.directory}
    if not snapshots.enabled:
        return header + shell_assign(values) + "\n" + SCRIPT_LOG + _TIMER_INSTALL.replace("{body}", _TIMER_OFF)
    values |= {"SCHEDULE": snapshots.schedule, "RETENTION": str(snapshots.retention)}
    body = _TIMER_ON.replace("{script}", etcd_snapshot_script(snapshots))
    return header + shell_assign(values) + "\n" + SCRIPT_LOG + SCRIPT_HELPERS + _TIMER_INSTALL.replace("{body}", body)


# --------------------------------------------------------------------------- node phases

_PACKAGES = """\
[[ ${EUID} -eq 0 ]] || die "run as root"
command -v apt-get >/dev/null 2>&1 || die "needs a Debian/Ubuntu host (apt-get)"
export DEBIAN_FRONTEND=noninteractive
readonly STAMP_DIR="${STAMP_ROOT}/${K8S_VERSION}"
# at_version PKG: the package is installed at K8S_VERSION (Debian revision any, e.g. 1.36.1-1.1).
at_version() {
  [[ $(dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true) == "${K8S_VERSION}-"* ]]
}
REPO_READY=0
# use_repository: the pkgs.k8s.io repository of K8S_MINOR (one per minor version), once per run.
use_repository() {
  [[ ${REPO_READY} -eq 1 ]] && return 0
  log "Kubernetes packages from {k8s_label} (${K8S_MINOR})"
  {k8s_key}
  write_file /etc/apt/sources.list.d/kubernetes.list 0644 <<EOF
{k8s_deb}
EOF
  if [[ ${FILE_CHANGED} -eq 1 ]]; then
    log "apt now reads the ${K8S_MINOR} repository"
  fi
  apt-get update -qq
  REPO_READY=1
}
# move PKG...: release the hold, install K8S_VERSION, hold again (skipped for a package already there).
move() {
  local pkg todo=()
  for pkg in "$@"; do
    at_version "${pkg}" || todo+=("${pkg}")
  done
  if [[ ${#todo[@]} -gt 0 ]]; then
    use_repository
    apt-mark unhold "${todo[@]}" >/dev/null
    local specs=()
    for pkg in "${todo[@]}"; do
      specs+=("${pkg}=${K8S_VERSION}-*")
    done
    log "install ${specs[*]}"
    apt-get install -y -qq "${specs[@]}" >/dev/null
  fi
  apt-mark hold "$@" >/dev/null
}
done_phase() {
  install -d -m 0755 "${STAMP_DIR}"
  : >"${STAMP_DIR}/$1"
}
"""

_KUBEADM = """\
if [[ -e ${STAMP_DIR}/kubeadm ]]; then
  log "${NODE_NAME}: kubeadm phase of ${K8S_VERSION} already done"
  exit 0
fi
move kubeadm
[[ $(kubeadm version -o short) == "v${K8S_VERSION}" ]] || die "kubeadm is not at v${K8S_VERSION} after the install"
{upgrade}done_phase kubeadm
log "done: ${NODE_NAME} kubeadm phase of ${K8S_VERSION}; next: drain, then the kubelet phase"
"""

_APPLY = """\
log "kubeadm upgrade plan / apply v${K8S_VERSION} (first control plane)"
kubeadm upgrade plan "v${K8S_VERSION}"
kubeadm upgrade apply "v${K8S_VERSION}" --yes
"""

_NODE = """\
log "kubeadm upgrade node"
kubeadm upgrade node
"""

_KUBELET = """\
if [[ -e ${STAMP_DIR}/kubelet ]]; then
  log "${NODE_NAME}: kubelet phase of ${K8S_VERSION} already done"
  exit 0
fi
[[ -e ${STAMP_DIR}/kubeadm ]] || die "the kubeadm phase of ${K8S_VERSION} has not run on ${NODE_NAME}; run it first"
move kubelet kubectl
systemctl daemon-reload
log "restart kubelet"
systemctl restart kubelet
systemctl is-active --quiet kubelet || die "kubelet is not running after the restart"
done_phase kubelet
log "done: ${NODE_NAME} kubelet phase of ${K8S_VERSION}; next: uncordon"
"""


def _node_script(node: NodeUpgrade, version: str, title: str, body: str, mirrors: Mirrors | None = None) -> str:
    major, minor, _ = _version(version).split(".")
    header = SCRIPT_HEADER.format(title=title, note="Safe to re-run: a completed phase is skipped.")
    values = {"NODE_NAME": _host(node.hostname), "K8S_VERSION": version, "K8S_MINOR": f"v{major}.{minor}", "STAMP_ROOT": UPGRADE_STAMP_DIR}
    packages = fill(_PACKAGES, kubernetes_repository(apt_sources(mirrors).kubernetes))
    return header + shell_assign(values) + "\n" + SCRIPT_LOG + SCRIPT_HELPERS + packages + body


def node_kubeadm_script(node: NodeUpgrade, version: str, *, mirrors: Mirrors | None = None) -> str:
    """The kubeadm phase of one node (root, on the node): kubeadm moved to ``version`` and held, then
    ``kubeadm upgrade plan`` + ``kubeadm upgrade apply v<version> --yes`` (``node.kubeadm == "apply"``, the first
    control plane) or ``kubeadm upgrade node``. Stamp: ``UPGRADE_STAMP_DIR/<version>/kubeadm``. Packages come from
    the site's ``mirrors.apt.kubernetes`` when ``mirrors`` has one, else pkgs.k8s.io.

    Raises:
        ValueError: malformed version or hostname.
    """
    upgrade = _APPLY if node.kubeadm == "apply" else _NODE
    return _node_script(node, version, f"hybridgpu: upgrade {node.hostname} to {version}, kubeadm phase", _KUBEADM.replace("{upgrade}", upgrade), mirrors)


def node_kubelet_script(node: NodeUpgrade, version: str, *, mirrors: Mirrors | None = None) -> str:
    """The kubelet phase of one node (root, on the node, after the drain): kubelet and kubectl moved to ``version``
    and held, ``systemctl daemon-reload``, kubelet restarted. Refuses to run before the kubeadm phase.
    Stamp: ``UPGRADE_STAMP_DIR/<version>/kubelet``.

    Raises:
        ValueError: malformed version or hostname.
    """
    return _node_script(node, version, f"hybridgpu: upgrade {node.hostname} to {version}, kubelet phase", _KUBELET, mirrors)


# --------------------------------------------------------------------------- cordon with a mark, uncordon only what is marked

#: The value of :data:`hybridgpu.k8s.CORDONED_BY_ANNOTATION` on a node an upgrade cordoned starts with this:
#: ``upgrade-kubernetes-<version>`` (a Kubernetes step) or ``upgrade-<tag>`` (an NVIDIA upgrade, ``upgrade-nvidia-...``).
UPGRADE_MARK_PREFIX = "upgrade-"


def upgrade_mark(upgrade_id: str) -> str:
    """The mark an upgrade leaves on a node it cordons: ``upgrade-<upgrade_id>`` (``upgrade_id`` such as
    ``kubernetes-1.36.1`` or the NVIDIA upgrade's tag).

    Raises:
        ValueError: ``upgrade_id`` is empty or has characters other than ``[A-Za-z0-9._~+-]`` (Debian version characters;
            it goes into a JSON string and a log line).
    """
    if not upgrade_id or not all(c.isascii() and (c.isalnum() or c in "._~+-") for c in upgrade_id):
        raise ValueError(f"upgrade id {upgrade_id!r} must be letters, digits, '.', '_', '~', '+' or '-'")
    return UPGRADE_MARK_PREFIX + upgrade_id


def _mark_values() -> dict[str, str]:
    # kubectl's JSONPath takes an annotation key with its dots escaped (kubectl get -o jsonpath; missing keys print nothing).
    return {
        "MARK_KEY": CORDONED_BY_ANNOTATION,
        "MARK_JSONPATH": CORDONED_BY_ANNOTATION.replace(".", "\\."),
        "MARK_PREFIX": UPGRADE_MARK_PREFIX,
        "PATCH_TRIES": "5",
    }


# node_state prints "<spec.unschedulable>|<metadata.resourceVersion>|<the mark>" in one read; the patches carry that
# resourceVersion, so the API server refuses them (409 Conflict, "the object has been modified") when anybody changed
# the Node in between, and the script reads it again. Cordon and mark are one write: no re-run can find the node
# cordoned by the upgrade without the mark, or marked by the upgrade while somebody else cordoned it.
_NODE_STATE = """\
node_state() {
  kubectl get node "${NODE_NAME}" -o "jsonpath={.spec.unschedulable}|{.metadata.resourceVersion}|{.metadata.annotations.${MARK_JSONPATH}}"
}
# patch_node BODY: a JSON merge patch of the Node; returns 1 on a conflict (read again), dies on any other error.
patch_node() {
  local out
  if out=$(kubectl patch node "${NODE_NAME}" --type=merge -p "$1" 2>&1); then
    return 0
  fi
  [[ ${out} == *"the object has been modified"* ]] || die "cannot patch node ${NODE_NAME}: ${out}"
  log "${NODE_NAME} changed while this step was writing it; reading it again"
  return 1
}
"""

_MARKED_DRAIN = """\
if ! out=$(kubectl get node "${NODE_NAME}" -o name 2>&1); then
  if [[ ${out} == *NotFound* || ${out} == *"not found"* ]]; then
    log "node ${NODE_NAME} not found; nothing to drain"
    exit 0
  fi
  die "cannot read node ${NODE_NAME}: ${out}"
fi
settled=0
for _ in $(seq 1 "${PATCH_TRIES}"); do
  state=$(node_state) || die "cannot read node ${NODE_NAME}"
  IFS='|' read -r unschedulable version mark <<<"${state}"
  if [[ ${unschedulable} == true && ${mark} == "${MARK}" ]]; then
    log "${NODE_NAME} is cordoned by this upgrade already (${MARK_KEY}=${MARK})"
    settled=1
    break
  fi
  if [[ ${unschedulable} == true && ${mark} != "${MARK_PREFIX}"* ]]; then
    log "${NODE_NAME} was cordoned before the upgrade, not by it: drained without ${MARK_KEY}, it stays cordoned afterwards"
    settled=1
    break
  fi
  if [[ ${unschedulable} == true ]]; then
    log "${NODE_NAME} is cordoned by an earlier upgrade (${MARK_KEY}=${mark}); this upgrade takes it over (${MARK})"
  else
    log "cordon ${NODE_NAME} and mark it ${MARK_KEY}=${MARK} (one write)"
  fi
  body=$(printf '{"metadata":{"resourceVersion":"%s","annotations":{"%s":"%s"}},"spec":{"unschedulable":true}}' "${version}" "${MARK_KEY}" "${MARK}")
  if patch_node "${body}"; then
    settled=1
    break
  fi
done
[[ ${settled} -eq 1 ]] || die "${NODE_NAME} kept changing while it was being cordoned (${PATCH_TRIES} tries); run pulumi up again"
log "drain ${NODE_NAME} (timeout ${DRAIN_TIMEOUT}; PodDisruptionBudgets are respected)"
kubectl drain "${NODE_NAME}" --ignore-daemonsets --delete-emptydir-data --timeout="${DRAIN_TIMEOUT}"
"""


def upgrade_drain_script(hostname: str, *, timeout: str, mark: str) -> str:
    """Cordon and drain a node for an upgrade (first control plane, ``KUBECONFIG`` = admin.conf), leaving ``mark``
    (:func:`upgrade_mark`) in the node's :data:`~hybridgpu.k8s.CORDONED_BY_ANNOTATION` annotation.

    The node is read once (``spec.unschedulable``, ``resourceVersion``, the annotation) and then, in one JSON merge patch
    that carries that ``resourceVersion``:

    * schedulable: cordoned and marked together;
    * cordoned with another upgrade's mark (an upgrade that stopped before its uncordon): the mark is taken over;
    * cordoned with ``mark`` (a re-run): nothing written;
    * cordoned without an upgrade's mark (an operator, the GPU remediation, the inventory's ``cordoned`` state): not
      marked, so :func:`uncordon_script` leaves it cordoned.

    A Node changed in between makes the API server answer 409 Conflict (kubernetes/apiserver
    ``pkg/registry/generic/registry/store.go``, ``OptimisticLockErrorMsg``, commit 24a394e5, read 2026-11-27; kubectl
    ``annotate --resource-version`` relies on the same, kubernetes/kubectl ``pkg/cmd/annotate/annotate.go`` dee3483a): the
    script reads it again (5 tries). Then ``kubectl drain`` (its own cordon is then a no-op). A node that does not exist is
    a success with nothing done.

    Raises:
        ValueError: malformed hostname, timeout or mark.
    """
    if not is_dns1123_subdomain(hostname):
        raise ValueError(f"hostname {hostname!r} must be a lowercase DNS subdomain")
    if not _DRAIN_TIMEOUT.match(timeout):
        raise ValueError(f"timeout {timeout!r} must look like 15m, 1h or 1h30m")
    if not mark.startswith(UPGRADE_MARK_PREFIX):
        raise ValueError(f"mark {mark!r} must come from upgrade_mark()")
    upgrade_mark(mark[len(UPGRADE_MARK_PREFIX) :])
    header = SCRIPT_HEADER.format(title=f"hybridgpu: cordon (marked {mark}) and drain {hostname}", note="Safe to re-run.")
    values = {"NODE_NAME": hostname, "DRAIN_TIMEOUT": timeout, "MARK": mark} | _mark_values()
    return header + shell_assign(values) + "\n" + SCRIPT_LOG + _NODE_STATE + _MARKED_DRAIN


_UNCORDON = """\
log "waiting for ${NODE_NAME} to report kubelet v${K8S_VERSION} and Ready"
seen=""
for _ in $(seq 1 "${WAIT_TRIES}"); do
  seen=$(kubectl get node "${NODE_NAME}" -o 'jsonpath={.status.nodeInfo.kubeletVersion} {.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  [[ ${seen} == "v${K8S_VERSION} True" ]] && break
  sleep 5
done
[[ ${seen} == "v${K8S_VERSION} True" ]] ||
  die "${NODE_NAME} reports '${seen}', not 'v${K8S_VERSION} True': check 'systemctl status kubelet' on it, then re-run"
for _ in $(seq 1 "${PATCH_TRIES}"); do
  state=$(node_state) || die "cannot read node ${NODE_NAME}"
  IFS='|' read -r unschedulable version mark <<<"${state}"
  if [[ ${mark} != "${MARK_PREFIX}"* ]]; then
    if [[ ${unschedulable} != true ]]; then
      log "done: ${NODE_NAME} runs ${K8S_VERSION} and takes pods"
    elif [[ ${KEEP_CORDONED} -eq 1 ]]; then
      log "done: ${NODE_NAME} runs ${K8S_VERSION}; it stays cordoned (state cordoned in the inventory)"
    else
      log "done: ${NODE_NAME} runs ${K8S_VERSION}; it stays cordoned: it was cordoned before the upgrade, not by it (no ${MARK_KEY}); kubectl uncordon ${NODE_NAME} when it may take pods again"
    fi
    exit 0
  fi
  if [[ ${KEEP_CORDONED} -eq 1 ]]; then
    # The inventory says cordoned: the cordon is the inventory's now, the upgrade's mark goes.
    body=$(printf '{"metadata":{"resourceVersion":"%s","annotations":{"%s":null}}}' "${version}" "${MARK_KEY}")
    text="it stays cordoned (state cordoned in the inventory); ${MARK_KEY} removed"
  else
    body=$(printf '{"metadata":{"resourceVersion":"%s","annotations":{"%s":null}},"spec":{"unschedulable":false}}' "${version}" "${MARK_KEY}")
    text="uncordoned (cordoned by ${mark}), takes pods again"
  fi
  if patch_node "${body}"; then
    log "done: ${NODE_NAME} runs ${K8S_VERSION}; ${text}"
    exit 0
  fi
done
die "${NODE_NAME} kept changing while it was being uncordoned (${PATCH_TRIES} tries); run pulumi up again"
"""


def uncordon_script(node: NodeUpgrade, version: str, *, wait_tries: int = 60) -> str:
    """Script for the first control plane (``KUBECONFIG`` = admin.conf) after a node's kubelet (or verify) phase: waits
    (5 s x ``wait_tries``) for the Node to report kubelet ``v<version>`` and ``Ready``, then, only when the node carries
    an upgrade's mark (:data:`~hybridgpu.k8s.CORDONED_BY_ANNOTATION` starting ``upgrade-``, left by
    :func:`upgrade_drain_script`), uncordons it and removes the mark in one write (the ``resourceVersion`` read with it
    as precondition; a conflict reads again). A node cordoned without the mark (by an operator, the GPU remediation)
    stays cordoned and the script says so (exit 0); so does a host ``cordoned`` in the inventory (``node.uncordon`` false),
    whose mark is removed. A schedulable node without a mark: nothing to do.

    Raises:
        ValueError: malformed version or hostname, or ``wait_tries`` < 1.
    """
    if wait_tries < 1:
        raise ValueError("wait_tries must be at least 1")
    header = SCRIPT_HEADER.format(title=f"hybridgpu: {node.hostname} at {version}: wait, uncordon", note="Safe to re-run.")
    values = {
        "NODE_NAME": _host(node.hostname),
        "K8S_VERSION": _version(version),
        "WAIT_TRIES": str(wait_tries),
        "KEEP_CORDONED": "0" if node.uncordon else "1",
    } | _mark_values()
    return header + shell_assign(values) + "\n" + SCRIPT_LOG + _NODE_STATE + _UNCORDON


# --------------------------------------------------------------------------- the run order


@dataclass(frozen=True)
class ScriptRun:
    """One script of an upgrade and where it runs.

    Attributes:
        name: file name, e.g. ``1.36.1/03-gpu-01-kubeadm.sh`` (sorts in run order within a step).
        where: ``node`` (as root on ``host``) or ``first-control-plane`` (as root with
            ``KUBECONFIG=/etc/kubernetes/admin.conf``, about ``host``).
        host: the node the script is about.
        text: the script.
        phase: ``etcd-snapshot``, ``kubeadm``, ``drain``, ``kubelet`` or ``uncordon``; for the NVIDIA upgrade ``check``,
            ``drain``, ``install``, ``reboot-wait``, ``verify``, ``uncordon``.
        version: the release the step moves to (``pulumi up`` triggers each command on it); for the NVIDIA upgrade its
            tag (:attr:`hybridgpu.inventory.upgrade.NvidiaHostUpgrade.tag`).
        kind: ``kubernetes`` (one chain, each run after the one before) or ``nvidia``.
        batch: for ``nvidia`` runs, the group of nodes the run belongs to: the runs of one node follow each other, the
            nodes of a group run side by side, a group starts once the one before it is done. None for ``kubernetes``.
    """

    name: str
    where: Literal["node", "first-control-plane"]
    host: str
    text: str
    phase: Literal["etcd-snapshot", "kubeadm", "drain", "kubelet", "uncordon", "check", "install", "reboot-wait", "verify"] = "kubeadm"
    version: str = ""
    kind: Literal["kubernetes", "nvidia"] = "kubernetes"
    batch: int | None = None


def upgrade_run_order(plan: UpgradePlan, policy: UpgradePolicy | None, *, mirrors: Mirrors | None = None) -> tuple[ScriptRun, ...]:
    """Every script of ``plan`` in the order it must run: the etcd snapshot on the first control plane, then per
    step and node the kubeadm phase, the drain, the kubelet phase and the uncordon. Running the list again from the
    top after a failure resumes the upgrade (each script skips what is done).

    Args:
        plan: a plan whose checks passed.
        policy: the inventory's ``upgrades`` (drain timeout, snapshot directory); None: the defaults.
        mirrors: the inventory's ``mirrors`` (the Kubernetes apt mirror); None: pkgs.k8s.io.

    Raises:
        ValueError: the plan has a failed check (nothing may run).
    """
    if not plan.ok:
        raise ValueError(f"the upgrade plan has failed checks ({', '.join(c.name for c in plan.failures)}); nothing may run")
    policy = policy if policy is not None else UpgradePolicy()
    runs: list[ScriptRun] = []
    if plan.steps:
        first = plan.steps[0].version
        runs.append(
            ScriptRun(
                f"{first}/00-{plan.snapshot_host}-etcd-snapshot.sh",
                "node",
                plan.snapshot_host,
                etcd_snapshot_script(policy.etcd_snapshots, before_version=first),
                "etcd-snapshot",
                first,
            )
        )
    for step in plan.steps:
        for index, node in enumerate(step.nodes, 1):
            stem = f"{step.version}/{index:02d}-{node.hostname}"
            v = step.version
            runs += [
                ScriptRun(f"{stem}-1-kubeadm.sh", "node", node.hostname, node_kubeadm_script(node, v, mirrors=mirrors), "kubeadm", v),
                ScriptRun(
                    f"{stem}-2-drain.sh",
                    "first-control-plane",
                    node.hostname,
                    upgrade_drain_script(node.hostname, timeout=policy.drain_timeout, mark=upgrade_mark(f"kubernetes-{v}")),
                    "drain",
                    v,
                ),
                ScriptRun(f"{stem}-3-kubelet.sh", "node", node.hostname, node_kubelet_script(node, v, mirrors=mirrors), "kubelet", v),
                ScriptRun(f"{stem}-4-uncordon.sh", "first-control-plane", node.hostname, uncordon_script(node, v), "uncordon", v),
            ]
    return tuple(runs)


# --------------------------------------------------------------------------- NVIDIA driver and toolkit on the hosts

#: The container toolkit's packages, moved together (the bootstrap's list, render/bootstrap.py ``_NVIDIA_INSTALL_PINNED``).
NVIDIA_TOOLKIT_PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1")
#: The ``BOOT_ID`` of a reboot-wait script before :func:`with_boot_id` fills it: no reboot was asked for.
BOOT_ID_UNSET = "none"
#: The line the install script prints when it scheduled a reboot (the boot id the node had before it).
_BOOT_LINE = "hybridgpu-reboot-from-boot-id: "
#: The line the check phase prints, followed by :data:`STATE_AT_TARGET` or :data:`STATE_UPGRADE`.
_STATE_LINE = "hybridgpu-nvidia-node-state: "
#: What the check phase found: the node runs the target versions (its drain does nothing), or it must be upgraded.
STATE_AT_TARGET, STATE_UPGRADE = "at-target", "upgrade"
#: ``NODE_STATE`` of a drain before :func:`with_node_state` fills it: not known, so the node is drained.
STATE_UNKNOWN = "unknown"

_NVIDIA_COMMON = """\
[[ ${EUID} -eq 0 ]] || die "run as root"
command -v apt-get >/dev/null 2>&1 || die "needs a Debian/Ubuntu host (apt-get)"
export DEBIAN_FRONTEND=noninteractive
TOOLKIT_PACKAGES=({toolkit_packages})
# at PKG VERSION: the package is installed at exactly VERSION.
at() {
  [[ $(dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true) == "$2" ]]
}
driver_package_ok() {
  [[ -z ${DRIVER_PACKAGE} ]] || at "${DRIVER_PACKAGE}" "${DRIVER_DEB_VERSION}"
}
toolkit_ok() {
  local pkg
  [[ -z ${TOOLKIT_VERSION} ]] && return 0
  for pkg in "${TOOLKIT_PACKAGES[@]}"; do
    at "${pkg}" "${TOOLKIT_VERSION}" || return 1
  done
}
# running_driver: the driver version every GPU reports (one line; empty when nvidia-smi cannot reach the driver).
running_driver() {
  nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | tr -d ' ' | sort -u | paste -sd, - || true
}
driver_running_ok() {
  [[ -z ${DRIVER_PACKAGE} ]] || [[ $(running_driver) == "${DRIVER_VERSION}" ]]
}
# fabric_manager_ok: on an NVSwitch host (FM_PACKAGE set) the fabric manager package is at the driver's version (its
# Debian revision may differ from the driver's: Ubuntu builds it from another source package).
fabric_manager_ok() {
  [[ -z ${FM_PACKAGE} ]] && return 0
  local have
  have=$(dpkg-query -W -f='${Version}' "${FM_PACKAGE}" 2>/dev/null || true)
  have=${have#*:}
  [[ -n ${have} && ${have%%-*} == "${DRIVER_VERSION}" ]]
}
fabric_manager_running() {
  [[ -z ${FM_PACKAGE} ]] || systemctl is-active --quiet nvidia-fabricmanager
}
# at_target: packages installed, driver loaded and (NVSwitch) fabric manager running, all at the target versions.
at_target() {
  driver_package_ok && fabric_manager_ok && toolkit_ok && driver_running_ok && fabric_manager_running
}
"""

_NVIDIA_CHECK = """\
if at_target; then
  log "${NODE_NAME}: already at ${TAG}: not drained, nothing installed, no reboot"
  printf '%s%s\\n' "${STATE_LINE}" "${STATE_AT_TARGET}"
else
  log "${NODE_NAME}: not at ${TAG} yet: drained, then upgraded"
  printf '%s%s\\n' "${STATE_LINE}" "${STATE_UPGRADE}"
fi
"""

# Put in front of the drain of an NVIDIA upgrade: NODE_STATE is what the node's check phase printed (with_node_state).
_NVIDIA_SKIP_DRAIN = """\
if [[ ${NODE_STATE} == "${STATE_AT_TARGET}" ]]; then
  log "${NODE_NAME} already runs the target versions (its check phase): not cordoned, not drained"
  exit 0
fi
"""

_NVIDIA_INSTALL = """\
readonly STAMP_DIR="${STAMP_ROOT}/${TAG}"
if at_target; then
  log "${NODE_NAME}: already at ${TAG}; nothing to install"
  exit 0
fi
# Stop the GPU's users: kubelet first (it would start the pods again), then the containers left after the drain
# (DaemonSets such as the device plugin and DCGM exporter), then NVIDIA's host daemons.
log "stop kubelet and the node's containers"
systemctl stop kubelet
mapfile -t containers < <(crictl ps -q 2>/dev/null || true)
if [[ ${#containers[@]} -gt 0 ]]; then
  crictl stop "${containers[@]}" >/dev/null
fi
for unit in nvidia-persistenced nvidia-dcgm dcgm; do
  if systemctl is-active --quiet "${unit}"; then
    systemctl stop "${unit}"
  fi
done
apt-get update -qq
if ! driver_package_ok; then
  log "install ${DRIVER_PACKAGE}=${DRIVER_DEB_VERSION}"
  apt-mark unhold "${DRIVER_PACKAGE}" >/dev/null
  apt-get install -y -qq --allow-downgrades "${DRIVER_PACKAGE}=${DRIVER_DEB_VERSION}" >/dev/null
fi
if [[ -n ${DRIVER_PACKAGE} ]]; then
  apt-mark hold "${DRIVER_PACKAGE}" >/dev/null
fi
fabric_manager_moved=0
if ! fabric_manager_ok; then
  # Exactly the driver's version, or the fabric manager refuses to start and CUDA sees no GPU.
  log "install ${FM_PACKAGE}=${DRIVER_VERSION}-* (the fabric manager of this NVSwitch system)"
  apt-mark unhold "${FM_PACKAGE}" >/dev/null 2>&1 || true
  apt-get install -y -qq --allow-downgrades "${FM_PACKAGE}=${DRIVER_VERSION}-*" >/dev/null
  fabric_manager_moved=1
fi
if [[ -n ${FM_PACKAGE} ]]; then
  apt-mark hold "${FM_PACKAGE}" >/dev/null
  systemctl enable nvidia-fabricmanager >/dev/null 2>&1
fi
toolkit_moved=0
if ! toolkit_ok; then
  log "install the container toolkit ${TOOLKIT_VERSION}"
  apt-mark unhold "${TOOLKIT_PACKAGES[@]}" >/dev/null
  specs=()
  for pkg in "${TOOLKIT_PACKAGES[@]}"; do
    specs+=("${pkg}=${TOOLKIT_VERSION}")
  done
  apt-get install -y -qq --allow-downgrades "${specs[@]}" >/dev/null
  toolkit_moved=1
fi
if [[ -n ${TOOLKIT_VERSION} ]]; then
  apt-mark hold "${TOOLKIT_PACKAGES[@]}" >/dev/null
fi
install -d -m 0755 "${STAMP_DIR}"
: >"${STAMP_DIR}/installed"
if ! driver_running_ok; then
  # The loaded kernel module is another version than the package now installed: only a reboot loads the new one.
  boot_id=$(cat /proc/sys/kernel/random/boot_id)
  log "driver ${DRIVER_VERSION} installed; rebooting ${NODE_NAME} in ${REBOOT_DELAY} s (the next step waits for it)"
  printf '%s%s\\n' "${BOOT_LINE}" "${boot_id}"
  systemd-run --on-active="${REBOOT_DELAY}" --unit=hybridgpu-nvidia-reboot systemctl reboot >/dev/null
  exit 0
fi
if [[ ${fabric_manager_moved} -eq 1 ]] || ! fabric_manager_running; then
  log "restart nvidia-fabricmanager"
  systemctl restart nvidia-fabricmanager
fi
if [[ ${toolkit_moved} -eq 1 ]]; then
  systemctl restart containerd
fi
systemctl start kubelet
log "done: ${NODE_NAME} install phase of ${TAG}; next: verify"
"""

_NVIDIA_VERIFY = """\
readonly STAMP_DIR="${STAMP_ROOT}/${TAG}"
found=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null) ||
  die "nvidia-smi cannot reach the driver on ${NODE_NAME} (dmesg | grep -i nvrm); fix it, then run pulumi up again"
gpus=$(grep -c . <<<"${found}" || true)
[[ ${gpus} -eq ${GPU_COUNT} ]] ||
  die "${NODE_NAME}: nvidia-smi lists ${gpus} GPU(s), the inventory says ${GPU_COUNT} (a GPU fell off the bus? see dmesg); it stays cordoned"
if [[ -n ${DRIVER_PACKAGE} ]]; then
  [[ $(running_driver) == "${DRIVER_VERSION}" ]] ||
    die "${NODE_NAME}: nvidia-smi reports driver $(running_driver), not ${DRIVER_VERSION}; it stays cordoned"
  driver_package_ok || die "${DRIVER_PACKAGE} is not at ${DRIVER_DEB_VERSION} on ${NODE_NAME}"
fi
toolkit_ok || die "the container toolkit packages are not all at ${TOOLKIT_VERSION} on ${NODE_NAME}"
if [[ -n ${FM_PACKAGE} ]]; then
  fabric_manager_ok || die "${FM_PACKAGE} is not at the driver's version ${DRIVER_VERSION} on ${NODE_NAME}; it stays cordoned"
  if ! fabric_manager_running; then
    log "restart nvidia-fabricmanager"
    systemctl restart nvidia-fabricmanager || true
  fi
  fabric_manager_running ||
    die "nvidia-fabricmanager is not active on ${NODE_NAME} (journalctl -u nvidia-fabricmanager), so CUDA sees no GPU; it stays cordoned"
fi
if ! systemctl is-active --quiet kubelet; then
  systemctl start kubelet
fi
install -d -m 0755 "${STAMP_DIR}"
: >"${STAMP_DIR}/verified"
log "done: ${NODE_NAME} runs ${TAG} on ${gpus} GPU(s); next: uncordon"
"""

_NVIDIA_WAIT = """\
if [[ ${BOOT_ID} == "${BOOT_ID_UNSET}" ]]; then
  log "${NODE_NAME} was not rebooted; waiting for Ready"
else
  log "waiting for ${NODE_NAME} to come back from its reboot (boot id other than ${BOOT_ID}) and report Ready"
fi
seen=""
for _ in $(seq 1 "${WAIT_TRIES}"); do
  seen=$(kubectl get node "${NODE_NAME}" -o 'jsonpath={.status.nodeInfo.bootID} {.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  if [[ ${seen} == *" True" && ( ${BOOT_ID} == "${BOOT_ID_UNSET}" || ${seen%% *} != "${BOOT_ID}" ) ]]; then
    log "done: ${NODE_NAME} is back (${seen})"
    exit 0
  fi
  sleep 5
done
die "${NODE_NAME} is not back and Ready after $((WAIT_TRIES * 5)) s (it reports '${seen}'): check its console, then run pulumi up again"
"""


def _nvidia_values(node: NvidiaNode, plan: NvidiaUpgradePlan) -> dict[str, str]:
    driver = plan.policy.driver
    fabric = driver.fabric_manager_package if driver is not None and node.fabric_manager else None
    return {
        "NODE_NAME": _host(node.hostname),
        "TAG": plan.policy.tag,
        "DRIVER_PACKAGE": driver.package if driver is not None else "",
        "DRIVER_DEB_VERSION": driver.version if driver is not None else "",
        "DRIVER_VERSION": driver.upstream if driver is not None else "",
        "FM_PACKAGE": fabric or "",
        "TOOLKIT_VERSION": plan.policy.toolkit_version or "",
        "STAMP_ROOT": UPGRADE_STAMP_DIR,
    }


def _plan_ok(plan: NvidiaUpgradePlan) -> None:
    if plan.issues:
        raise InventoryError(list(plan.issues))


def nvidia_check_script(node: NvidiaNode, plan: NvidiaUpgradePlan) -> str:
    """The check phase of one GPU worker (root, on the node, before anything else): prints
    ``hybridgpu-nvidia-node-state: at-target`` when the driver package, the fabric manager package (NVSwitch hosts), the
    four toolkit packages, the driver ``nvidia-smi`` reports and the running fabric manager are all at the plan's
    versions, else ``...: upgrade``. :func:`with_node_state` puts it into the node's drain, which then does nothing for a
    node at the target (a re-run, a node done before a failure, a host that joined at the new versions). Changes nothing.

    Raises:
        ValueError: malformed hostname.
        InventoryError: the plan has issues (:attr:`NvidiaUpgradePlan.issues`).
    """
    _plan_ok(plan)
    extra = {"STATE_LINE": _STATE_LINE, "STATE_AT_TARGET": STATE_AT_TARGET, "STATE_UPGRADE": STATE_UPGRADE}
    return _nvidia_node_script(node, plan, f"hybridgpu: is {node.hostname} at {plan.policy.tag}? check phase", extra, _NVIDIA_CHECK, stamps=False)


def nvidia_drain_script(node: NvidiaNode, timeout: str, *, tag: str) -> str:
    """The drain of one GPU worker in an NVIDIA upgrade (first control plane): :func:`upgrade_drain_script` with the mark
    ``upgrade-<tag>`` (``tag``: :attr:`hybridgpu.inventory.upgrade.NvidiaHostUpgrade.tag`), preceded by a guard that exits
    without cordoning when ``NODE_STATE`` is :data:`STATE_AT_TARGET`. ``NODE_STATE`` is :data:`STATE_UNKNOWN` (drain) until
    :func:`with_node_state` fills it from the check phase's output.

    Raises:
        ValueError: malformed hostname, timeout or tag.
    """
    text = upgrade_drain_script(node.hostname, timeout=timeout, mark=upgrade_mark(tag))
    values = shell_assign({"NODE_STATE": STATE_UNKNOWN, "STATE_AT_TARGET": STATE_AT_TARGET})
    head, tail = text.split("\n" + SCRIPT_LOG, 1)
    return head + values + "\n" + SCRIPT_LOG + _NVIDIA_SKIP_DRAIN + tail


def with_node_state(drain_script: str, check_output: str | None) -> str:
    """``drain_script`` (:func:`nvidia_drain_script`) with ``NODE_STATE`` set to what the check phase printed in
    ``check_output`` (its stdout); without that line (None, a failed or an older check) it stays :data:`STATE_UNKNOWN`,
    and the node is drained."""
    for line in (check_output or "").splitlines():
        if line.startswith(_STATE_LINE):
            state = line[len(_STATE_LINE) :].strip()
            if state in (STATE_AT_TARGET, STATE_UPGRADE):
                return drain_script.replace(f"readonly NODE_STATE={STATE_UNKNOWN}\n", f"readonly NODE_STATE={state}\n", 1)
    return drain_script


def fill_from_previous(run: ScriptRun, previous_output: str | None) -> str:
    """The text of an NVIDIA ``run`` that reads the output of the run before it on the same node (``pulumi up`` and a
    hand-run pass it in): the drain takes the check phase's state (:func:`with_node_state`), the reboot-wait the install
    phase's boot id (:func:`with_boot_id`); any other run is returned as it is."""
    if run.kind != "nvidia":
        return run.text
    if run.phase == "drain":
        return with_node_state(run.text, previous_output)
    if run.phase == "reboot-wait":
        return with_boot_id(run.text, previous_output)
    return run.text


def _nvidia_node_script(node: NvidiaNode, plan: NvidiaUpgradePlan, title: str, extra: dict[str, str], body: str, *, stamps: bool = True) -> str:
    header = SCRIPT_HEADER.format(title=title, note="Safe to re-run: it checks the installed and running versions first.")
    common = _NVIDIA_COMMON.replace("{toolkit_packages}", " ".join(NVIDIA_TOOLKIT_PACKAGES))
    values = {k: v for k, v in _nvidia_values(node, plan).items() if stamps or k != "STAMP_ROOT"}
    return header + shell_assign(values | extra) + "\n" + SCRIPT_LOG + common + body


def nvidia_install_script(node: NvidiaNode, plan: NvidiaUpgradePlan, *, reboot_delay: int = 5) -> str:
    """The install phase of one GPU worker (root, on the node, after its drain).

    Does nothing when the node is at the plan's versions (the check phase's test). Otherwise: stops kubelet, the node's
    remaining containers (``crictl stop``) and ``nvidia-persistenced``/DCGM, moves the driver package (``apt-mark unhold``,
    ``apt-get install <pkg>=<version>``, ``apt-mark hold``), on an NVSwitch host the fabric manager package to the driver's
    version (``<pkg>=<driver version>-*``, held, service enabled) and the four toolkit packages the same way; then, when the
    loaded driver is not the target, prints ``hybridgpu-reboot-from-boot-id: <boot id>`` and schedules a reboot
    ``reboot_delay`` seconds later (``systemd-run --on-active``, so the SSH command returns first); else restarts
    ``nvidia-fabricmanager`` (moved, or not running) and containerd (toolkit moved) and starts kubelet.

    Raises:
        ValueError: malformed hostname, or ``reboot_delay`` < 1.
        InventoryError: the plan has issues (:attr:`NvidiaUpgradePlan.issues`).
    """
    if reboot_delay < 1:
        raise ValueError("reboot_delay must be at least 1 second")
    _plan_ok(plan)
    extra = {"REBOOT_DELAY": str(reboot_delay), "BOOT_LINE": _BOOT_LINE}
    return _nvidia_node_script(node, plan, f"hybridgpu: {node.hostname} to {plan.policy.tag}, install phase", extra, _NVIDIA_INSTALL)


def nvidia_verify_script(node: NvidiaNode, plan: NvidiaUpgradePlan) -> str:
    """The verify phase of one GPU worker (root, on the node): ``nvidia-smi`` lists ``node.gpu_count`` GPUs, each at the
    target driver version, the packages are at theirs; on an NVSwitch host the fabric manager package is at the driver's
    version and ``nvidia-fabricmanager`` is active (restarted once if it is not); kubelet started if it is not running.
    Fails (the node stays cordoned, the chain stops) otherwise.

    Raises:
        ValueError: malformed hostname.
        InventoryError: the plan has issues (:attr:`NvidiaUpgradePlan.issues`).
    """
    _plan_ok(plan)
    extra = {"GPU_COUNT": str(node.gpu_count)}
    return _nvidia_node_script(node, plan, f"hybridgpu: {node.hostname} at {plan.policy.tag}, verify phase", extra, _NVIDIA_VERIFY)


def nvidia_reboot_wait_script(node: NvidiaNode, *, timeout_seconds: int = 900) -> str:
    """Script for the first control plane (``KUBECONFIG`` = admin.conf) after a node's install phase: waits up to
    ``timeout_seconds`` (5 s polls) for the Node to report ``Ready`` with a boot id other than ``BOOT_ID`` (it rebooted),
    or only ``Ready`` while ``BOOT_ID`` is :data:`BOOT_ID_UNSET`. :func:`with_boot_id` fills ``BOOT_ID`` from the install
    phase's output.

    Raises:
        ValueError: malformed hostname, or ``timeout_seconds`` < 5.
    """
    if timeout_seconds < 5:
        raise ValueError("timeout_seconds must be at least 5")
    header = SCRIPT_HEADER.format(title=f"hybridgpu: wait for {node.hostname} after its NVIDIA install", note="Safe to re-run.")
    values = {"NODE_NAME": _host(node.hostname), "BOOT_ID": BOOT_ID_UNSET, "BOOT_ID_UNSET": BOOT_ID_UNSET, "WAIT_TRIES": str(timeout_seconds // 5)}
    return header + shell_assign(values) + "\n" + SCRIPT_LOG + _NVIDIA_WAIT


def with_boot_id(wait_script: str, install_output: str | None) -> str:
    """``wait_script`` (:func:`nvidia_reboot_wait_script`) waiting for the reboot the install phase printed in
    ``install_output`` (its stdout; None or without the line: no reboot, the script is returned as it is)."""
    for line in (install_output or "").splitlines():
        if line.startswith(_BOOT_LINE):
            boot_id = line[len(_BOOT_LINE) :].strip()
            if boot_id and all(c in "0123456789abcdef-" for c in boot_id):
                return wait_script.replace(f"readonly BOOT_ID={BOOT_ID_UNSET}\n", f"readonly BOOT_ID={boot_id}\n", 1)
    return wait_script


def nvidia_run_order(plan: NvidiaUpgradePlan) -> tuple[ScriptRun, ...]:
    """Every script of an NVIDIA upgrade in run order: per node check (node), drain (first control plane; nothing when the
    check found the node at the target), install (node), reboot-wait (first control plane), verify (node), uncordon (first
    control plane, :func:`uncordon_script` at the plan's kubelet version). Runs carry ``kind="nvidia"``, the plan's tag as
    ``version`` and their group as ``batch``; the drain and the reboot-wait take the output of the run before them
    (:func:`fill_from_previous`).

    Raises:
        InventoryError: the plan has issues (:attr:`NvidiaUpgradePlan.issues`): nothing may run.
    """
    _plan_ok(plan)
    tag = plan.policy.tag
    runs: list[ScriptRun] = []
    for batch_index, batch in enumerate(plan.batches):
        for index, node in enumerate(batch, 1):
            stem = f"{tag}/{batch_index + 1:02d}-{index:02d}-{node.hostname}"
            k8s_node = NodeUpgrade(node.hostname, node.address, "gpu-worker", "node", node.uncordon)
            texts = (
                ("0-check", "node", nvidia_check_script(node, plan), "check"),
                ("1-drain", "first-control-plane", nvidia_drain_script(node, plan.drain_timeout, tag=tag), "drain"),
                ("2-install", "node", nvidia_install_script(node, plan), "install"),
                ("3-reboot-wait", "first-control-plane", nvidia_reboot_wait_script(node, timeout_seconds=plan.policy.reboot_timeout_seconds), "reboot-wait"),
                ("4-verify", "node", nvidia_verify_script(node, plan), "verify"),
                ("5-uncordon", "first-control-plane", uncordon_script(k8s_node, plan.kubelet_version), "uncordon"),
            )
            for suffix, where, text, phase in texts:
                runs.append(ScriptRun(f"{stem}-{suffix}.sh", where, node.hostname, text, phase, tag, "nvidia", batch_index))  # type: ignore[arg-type]
    return tuple(runs)


def requested_upgrade(inventory: Inventory, *, host_driver: bool = True) -> tuple[UpgradePlan | None, tuple[ScriptRun, ...]]:
    """The upgrades the inventory asks ``pulumi up`` to carry out (``upgrades.kubernetes``, then ``upgrades.nvidia``), and their runs.

    Args:
        inventory: a validated inventory; ``cluster.kubernetesVersion`` is what runs now.
        host_driver: the GPU workers carry their own driver (the stack installs the container toolkit on them); False
            (the GPU Operator installs the driver): ``upgrades.nvidia`` is not run on the hosts.

    Returns:
        ``(plan, runs)``: :func:`~hybridgpu.inventory.upgrade.plan_upgrade` from ``cluster.kubernetesVersion`` to
        ``upgrades.kubernetes.to`` (with its ``via`` and ``workersLast``), None without ``upgrades.kubernetes`` or when
        ``to`` is the version that runs (nothing moves); ``runs``: :func:`upgrade_run_order` of it (the site's ``mirrors``
        included) followed by :func:`nvidia_run_order` of ``upgrades.nvidia``. When a Kubernetes check fails, ``runs``
        is empty and ``plan.failures`` say why (each with its :class:`~hybridgpu.errors.Issue` on the inventory).
    """
    policy = inventory.site.upgrades
    wanted = policy.kubernetes if policy is not None else None
    nvidia = plan_nvidia_upgrade(inventory) if host_driver else None
    nvidia_runs = nvidia_run_order(nvidia) if nvidia is not None else ()
    if wanted is None or parse_version(wanted.to) == parse_version(inventory.site.cluster.kubernetes_version, "cluster.kubernetesVersion"):
        return None, nvidia_runs
    plan = plan_upgrade(inventory, wanted.to, via=wanted.via, workers_last=wanted.workers_last)
    if not plan.ok:
        return plan, ()
    return plan, upgrade_run_order(plan, policy, mirrors=inventory.site.mirrors) + nvidia_runs


# --------------------------------------------------------------------------- GPU driver


def gpu_operator_driver_upgrade_values(policy: UpgradePolicy | None) -> dict[str, Any]:
    """GPU Operator chart values for the inventory's driver upgrade policy: ``{"driver": {"upgradePolicy": {...}}}``
    (every key of the chart's ``driver.upgradePolicy``), or ``{}`` without ``upgrades.gpuDriver`` (chart defaults)."""
    driver: GpuDriverUpgradePolicy | None = policy.gpu_driver if policy is not None else None
    if driver is None:
        return {}
    return {"driver": {"upgradePolicy": driver.chart_values()}}
