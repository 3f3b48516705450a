"""The upgrade scripts and the etcd restore runbook run in the stub sandbox of tests/render/test_host_sandbox.py.

Real bash; apt-get, apt-mark, dpkg-query, kubeadm, kubectl, systemctl, etcdctl, etcdutl, crictl, date ... are
stubs that log each call and keep what they "did" in a state directory: package versions and holds, the
cluster version, the kubelet that runs, cordoned nodes. apt-get refuses to move a held package, as apt does
("Held packages were changed and -y was used without --allow-change-held-packages"), so a script that forgets
``apt-mark unhold`` fails here. Tests assert the call order, that a second run changes nothing, and what a re-run
does after a failure in the middle.

Upstream behaviour the stubs model, and the order asserted: Kubernetes docs "Upgrading kubeadm clusters"
(kubernetes/website content/en/docs/tasks/administer-cluster/kubeadm/kubeadm-upgrade.md): kubeadm first
(unhold, install, hold), ``kubeadm upgrade plan``/``apply`` on the first control plane and ``kubeadm upgrade
node`` elsewhere, drain, kubelet and kubectl (unhold, install, hold), ``systemctl daemon-reload``, ``systemctl
restart kubelet``, uncordon. The restore runbook: Kubernetes docs "Operating etcd clusters for Kubernetes",
"Restoring an etcd cluster" (``etcdutl snapshot restore`` with ``--name``, ``--initial-cluster``,
``--initial-advertise-peer-urls``, ``--data-dir``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hybridgpu.inventory.upgrade import EtcdSnapshots, NodeUpgrade, UpgradePolicy
from hybridgpu.render.upgrade import (
    etcd_snapshot_script,
    etcd_snapshot_timer_script,
    node_kubeadm_script,
    node_kubelet_script,
    uncordon_script,
    upgrade_drain_script,
    upgrade_mark,
)
from tests.helpers import ROOT
from tests.helpers.sandbox import KUBECTL_NODE, STUB_PRELUDE, Sandbox

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
SHELLCHECK = shutil.which("shellcheck")

STUB = STUB_PRELUDE + KUBECTL_NODE + r"""ver() { local v; v=$(cat "${S}/pkg-$1"); printf '%s' "${v%%-*}"; }
case "${name}" in
  dpkg-query) [[ -e ${S}/pkg-${!#} ]] || exit 1; cat "${S}/pkg-${!#}" ;;
  apt-mark)
    op=$1; shift
    for p in "$@"; do
      if [[ ${op} == hold ]]; then touch "${S}/hold-${p}"; else rm -f "${S}/hold-${p}"; fi
    done ;;
  apt-get)
    if [[ $1 == install ]]; then
      for a in "$@"; do
        [[ ${a} == *=* ]] || continue
        p=${a%%=*}; v=${a#*=}; v=${v%-\*}
        if [[ -e ${S}/hold-${p} ]]; then
          echo "E: Held packages were changed and -y was used without --allow-change-held-packages." >&2
          exit 100
        fi
        printf '%s-1.1' "${v}" >"${S}/pkg-${p}"
      done
    fi ;;
  kubeadm)
    case "$1 $2" in
      "version -o") printf 'v%s\n' "$(ver kubeadm)" ;;
      "upgrade apply") printf '%s' "${3#v}" >"${S}/cluster-version" ;;
      "upgrade node") touch "${S}/node-upgraded" ;;
    esac ;;
  systemctl)
    case "$1" in
      restart) [[ $2 == kubelet ]] && ver kubelet >"${S}/kubelet-running" ;;
      enable) touch "${S}/enabled-${!#}" ;;
      disable) rm -f "${S}/enabled-${!#}" ;;
      is-enabled) [[ -e ${S}/enabled-${!#} ]] || exit 1 ;;
    esac ;;
  kubectl)
    kubectl_node "$@"
    rc=$?
    [[ ${rc} -eq 2 ]] || exit "${rc}"
    args=" $* "
    if [[ ${args} == *" -o name "* ]]; then echo "node/$3"; exit 0; fi
    if [[ ${args} == *" -o jsonpath="* ]]; then printf 'v%s True' "$(cat "${S}/kubelet-running")"; exit 0; fi ;;
  etcdctl)
    prev=""
    for a in "$@"; do
      [[ ${prev} == save ]] && printf 'etcd snapshot\n' >"${a}"
      prev=${a}
    done ;;
  etcdutl)
    if [[ $2 == restore ]]; then
      prev=""
      for a in "$@"; do
        [[ ${prev} == --data-dir ]] && mkdir -p "${a}/member" && cp "$3" "${a}/member/snap"
        prev=${a}
      done
    fi ;;
  gpg) while [[ $# -gt 0 ]]; do if [[ $1 == -o ]]; then : >"$2"; fi; shift; done ;;
  date) n=$(($(cat "${S}/clock" 2>/dev/null || echo 0) + 1)); echo "${n}" >"${S}/clock"; printf '20261126T02%04dZ\n' "${n}" ;;
esac
exit 0
"""

STUBBED = "apt-get apt-mark dpkg-query kubeadm kubectl systemctl etcdctl etcdutl crictl curl gpg sleep date".split()

OLD, NEW = "1.35.2", "1.36.1"
CP = NodeUpgrade("cp-01", "10.50.0.11", "control-plane", "apply", uncordon=True)
WORKER = NodeUpgrade("gpu-01", "10.50.0.21", "gpu-worker", "node", uncordon=True)
CORDONED = NodeUpgrade("gpu-02", "10.50.0.22", "gpu-worker", "node", uncordon=False)
SNAPSHOTS = EtcdSnapshots(retention=3)
STAMPS = "/var/lib/hybridgpu/upgrade"


class UpgradeBox(Sandbox):
    """The host sandbox with the upgrade stubs; a node at ``OLD`` with kubelet, kubeadm, kubectl held."""

    def __init__(self, base: Path, node: str = "cp-01"):
        super().__init__(base, node=node)
        self.install_stubs(STUB, STUBBED)
        for pkg in ("kubelet", "kubeadm", "kubectl"):
            self.put(f"pkg-{pkg}", f"{OLD}-1.1")
            self.put(f"hold-{pkg}", "")
        self.put("kubelet-running", OLD)
        pki = self.root / "etc/kubernetes/pki/etcd"
        pki.mkdir(parents=True)
        (pki / "healthcheck-client.key").write_text("key\n")

    def script(self, text: str) -> str:
        """The host sandbox's path rewriting, plus ``/usr/local/`` (where the snapshot timer installs its script)."""
        return super().script(text.replace("/usr/local/", f"{self.root}/usr/local/"))

    def run_all(self, scripts: list[str], **env: str) -> list[str]:
        """Run ``scripts`` in order until one fails; returns every call made."""
        calls: list[str] = []
        for text in scripts:
            proc = self.run(text, **env)
            calls += self.calls
            if proc.returncode != 0:
                break
        return calls


def _upgrade(node: NodeUpgrade) -> list[str]:
    """A node's four scripts in run order (upgrade_run_order's, without the snapshot)."""
    return [
        node_kubeadm_script(node, NEW),
        upgrade_drain_script(node.hostname, timeout="30m", mark=upgrade_mark(f"kubernetes-{NEW}")),
        node_kubelet_script(node, NEW),
        uncordon_script(node, NEW, wait_tries=2),
    ]


def _positions(calls: list[str], expected: list[str]) -> list[int]:
    found = []
    for prefix in expected:
        hits = [i for i, c in enumerate(calls) if c.startswith(prefix)]
        assert hits, (prefix, calls)
        found.append(hits[0])
    return found


def test_first_control_plane_call_order(tmp_path):
    box = UpgradeBox(tmp_path)
    calls = box.run_all([etcd_snapshot_script(SNAPSHOTS, before_version=NEW), *_upgrade(CP)])
    order = [
        "etcdctl --endpoints=https://127.0.0.1:2379 --cacert=",
        "apt-mark unhold kubeadm",
        "apt-get install -y -qq kubeadm=1.36.1-*",
        "apt-mark hold kubeadm",
        "kubeadm upgrade plan v1.36.1",
        "kubeadm upgrade apply v1.36.1 --yes",
        'kubectl patch node cp-01 --type=merge -p {"metadata":{"resourceVersion":"1","annotations":{"hybridgpu.io/cordoned-by":"upgrade-kubernetes-1.36.1"}},"spec":{"unschedulable":true}}',
        "kubectl drain cp-01 --ignore-daemonsets --delete-emptydir-data --timeout=30m",
        "apt-mark unhold kubelet kubectl",
        "apt-get install -y -qq kubelet=1.36.1-* kubectl=1.36.1-*",
        "apt-mark hold kubelet kubectl",
        "systemctl daemon-reload",
        "systemctl restart kubelet",
        'kubectl patch node cp-01 --type=merge -p {"metadata":{"resourceVersion":"2","annotations":{"hybridgpu.io/cordoned-by":null}},"spec":{"unschedulable":false}}',
    ]
    positions = _positions(calls, order)
    assert positions == sorted(positions), calls
    assert box.get("cluster-version") == NEW and box.get("kubelet-running") == NEW
    assert all(box.get(f"pkg-{p}") == f"{NEW}-1.1" and box.get(f"hold-{p}") == "" for p in ("kubelet", "kubeadm", "kubectl"))
    assert box.get("cordoned-cp-01") is None and box.get("mark-cp-01") is None
    assert "v1.36/deb/" in box.file("/etc/apt/sources.list.d/kubernetes.list").read_text()  # the new minor's repository
    snapshots = list(box.file("/var/backups/hybridgpu/etcd").glob("pre-upgrade-1.36.1-*.db"))
    assert len(snapshots) == 1 and not list(box.file("/var/backups/hybridgpu/etcd").glob("*.part"))


def test_second_run_changes_nothing(tmp_path):
    box = UpgradeBox(tmp_path)
    scripts = [etcd_snapshot_script(SNAPSHOTS, before_version=NEW), *_upgrade(CP)]
    box.run_all(scripts)
    again = box.run_all(scripts)
    assert not [c for c in again if c.startswith(("apt-get", "apt-mark", "kubeadm upgrade", "etcdctl", "systemctl restart"))], again
    assert len(list(box.file("/var/backups/hybridgpu/etcd").glob("*.db"))) == 1  # no second pre-upgrade snapshot
    assert box.get("cordoned-cp-01") is None


def test_worker_runs_upgrade_node_and_a_cordoned_host_stays_cordoned(tmp_path):
    box = UpgradeBox(tmp_path, node="gpu-01")
    calls = box.run_all(_upgrade(WORKER))
    assert "kubeadm upgrade node" in calls and not [c for c in calls if c.startswith(("kubeadm upgrade apply", "kubeadm upgrade plan"))]
    assert box.get("cordoned-gpu-01") is None and box.get("mark-gpu-01") is None
    other = UpgradeBox(tmp_path / "b", node="gpu-02")
    calls = other.run_all(_upgrade(CORDONED))
    assert "kubectl drain gpu-02 --ignore-daemonsets --delete-emptydir-data --timeout=30m" in calls
    assert not [c for c in calls if c.startswith("kubectl uncordon") or '"unschedulable":false' in c]
    assert other.get("cordoned-gpu-02") == "" and other.get("mark-gpu-02") is None and other.get("kubelet-running") == NEW


@pytest.mark.parametrize(
    ("fail_at", "phase", "rerun_installs"),
    [
        ("apt-get install -y -qq kubeadm=", 0, ["kubeadm=1.36.1-*", "kubelet=1.36.1-* kubectl=1.36.1-*"]),
        ("kubeadm upgrade apply", 0, ["kubelet=1.36.1-* kubectl=1.36.1-*"]),  # kubeadm already moved: not installed again
        ("kubectl drain", 1, ["kubelet=1.36.1-* kubectl=1.36.1-*"]),  # a PodDisruptionBudget held the drain past its timeout
        ("apt-get install -y -qq kubelet=", 2, ["kubelet=1.36.1-* kubectl=1.36.1-*"]),
        ("systemctl restart kubelet", 2, []),  # packages already moved: only the restart is left
    ],
)
def test_failure_in_the_middle_then_resume(tmp_path, fail_at, phase, rerun_installs):
    box = UpgradeBox(tmp_path)
    scripts = _upgrade(CP)
    failed = box.run_all(scripts, FAIL_AT=fail_at)
    assert failed[-1].startswith(fail_at)  # stopped right there
    stamp = box.file(f"{STAMPS}/{NEW}")
    assert (stamp / "kubeadm").exists() is (phase > 0)
    assert not (stamp / "kubelet").exists()
    assert box.get("kubelet-running") == OLD  # the kubelet did not move
    assert box.get("hold-kubeadm") == "" or fail_at.startswith("apt-get install -y -qq kubeadm")
    # Fix the cause and run the list again from the top: it finishes, done phases are skipped.
    resumed = box.run_all(scripts)
    installs = [c.split(" -qq ", 1)[1] for c in resumed if c.startswith("apt-get install")]
    assert installs == rerun_installs
    assert resumed.count("kubeadm upgrade apply v1.36.1 --yes") == (1 if phase == 0 else 0)
    assert resumed.count("systemctl restart kubelet") == 1
    assert box.get("kubelet-running") == NEW and box.get("cluster-version") == NEW and box.get("cordoned-cp-01") is None
    assert all(box.get(f"hold-{p}") == "" for p in ("kubelet", "kubeadm", "kubectl"))


def test_kubelet_phase_refuses_to_run_before_kubeadm(tmp_path):
    box = UpgradeBox(tmp_path)
    proc = box.run(node_kubelet_script(CP, NEW))
    assert proc.returncode != 0 and "the kubeadm phase of 1.36.1 has not run on cp-01" in proc.stderr
    assert not [c for c in box.calls if c.startswith(("apt-get", "systemctl restart"))]


def test_uncordon_waits_for_the_new_kubelet(tmp_path):
    box = UpgradeBox(tmp_path)
    proc = box.run(uncordon_script(CP, NEW, wait_tries=2))  # kubelet still reports the old version
    assert proc.returncode != 0 and "reports 'v1.35.2 True', not 'v1.36.1 True'" in proc.stderr
    assert not [c for c in box.calls if c.startswith("kubectl uncordon")]


# --------------------------------------------------------------------------- etcd snapshots


def test_scheduled_snapshots_keep_the_retention_count(tmp_path):
    box = UpgradeBox(tmp_path)
    script = etcd_snapshot_script(SNAPSHOTS)
    for _ in range(5):
        assert box.run(script).returncode == 0
    kept = sorted(p.name for p in box.file("/var/backups/hybridgpu/etcd").glob("*.db"))
    assert kept == ["scheduled-20261126T020003Z.db", "scheduled-20261126T020004Z.db", "scheduled-20261126T020005Z.db"]  # the newest 3
    pre = box.run(etcd_snapshot_script(SNAPSHOTS, before_version=NEW))  # pre-upgrade snapshots are not pruned
    assert pre.returncode == 0 and box.run(script).returncode == 0
    names = sorted(p.name for p in box.file("/var/backups/hybridgpu/etcd").glob("*.db"))
    assert len(names) == 4 and any(n.startswith("pre-upgrade-1.36.1-") for n in names)


def test_a_failed_snapshot_leaves_no_file_and_no_stamp(tmp_path):
    box = UpgradeBox(tmp_path)
    script = etcd_snapshot_script(SNAPSHOTS, before_version=NEW)
    failed = box.run(script, FAIL_AT="etcdutl snapshot status")
    assert failed.returncode != 0 and "does not read back" in failed.stderr
    assert not list(box.file("/var/backups/hybridgpu/etcd").iterdir())  # neither the snapshot nor its .part
    assert not box.file(f"{STAMPS}/{NEW}/etcd-snapshot").exists()
    assert box.run(script).returncode == 0 and box.file(f"{STAMPS}/{NEW}/etcd-snapshot").exists()


def test_snapshot_timer_installs_once_and_is_removed_when_disabled(tmp_path):
    box = UpgradeBox(tmp_path)
    script = etcd_snapshot_timer_script(EtcdSnapshots(schedule="*-*-* 02:00:00", retention=14))
    first = box.run(script)
    assert first.returncode == 0, first.stderr
    assert _positions(box.calls, ["systemctl daemon-reload", "systemctl enable --now hybridgpu-etcd-snapshot.timer"]) == sorted(
        _positions(box.calls, ["systemctl daemon-reload", "systemctl enable --now hybridgpu-etcd-snapshot.timer"])
    )
    timer = box.file("/etc/systemd/system/hybridgpu-etcd-snapshot.timer").read_text()
    assert "OnCalendar=*-*-* 02:00:00" in timer and "Persistent=true" in timer
    installed = box.file("/usr/local/sbin/hybridgpu-etcd-snapshot")
    assert installed.read_text() == box.script(etcd_snapshot_script(EtcdSnapshots(schedule="*-*-* 02:00:00", retention=14)))
    assert installed.stat().st_mode & 0o777 == 0o755
    second = box.run(script)
    assert second.returncode == 0 and "systemctl daemon-reload" not in box.calls  # nothing changed
    off = box.run(etcd_snapshot_timer_script(EtcdSnapshots(enabled=False)))
    assert off.returncode == 0 and not box.file("/etc/systemd/system/hybridgpu-etcd-snapshot.timer").exists()
    assert box.get("enabled-hybridgpu-etcd-snapshot.timer") is None


# --------------------------------------------------------------------------- the restore runbook (docs/upgrades.md)


def _block(name: str) -> str:
    text = (ROOT / "docs" / "upgrades.md").read_text()
    match = re.search(rf"<!-- {name}:begin -->\n```bash\n(.*?)```\n<!-- {name}:end -->", text, re.S)
    assert match, f"docs/upgrades.md has no {name} block"
    return match.group(1)


def test_restore_runbook_walks_through_in_order(tmp_path):
    box = UpgradeBox(tmp_path)
    manifests = box.file("/etc/kubernetes/manifests")
    manifests.mkdir(parents=True)
    for name in ("etcd.yaml", "kube-apiserver.yaml", "kube-scheduler.yaml"):
        (manifests / name).write_text(name)
    box.file("/var/lib/etcd/member").mkdir(parents=True)
    box.file("/var/lib/etcd/member/old").write_text("old state")
    snapshot = box.file("/var/backups/hybridgpu/etcd/pre-upgrade-1.36.1-20261126T020000Z.db")
    snapshot.parent.mkdir(parents=True)
    snapshot.write_text("etcd snapshot\n")
    runbook = "set -euo pipefail\n" + _block("restore-runbook")
    proc = box.run(runbook)
    assert proc.returncode == 0, proc.stderr
    order = [
        "crictl ps -q --name kube-apiserver|etcd",
        "etcdutl snapshot restore ",
        "systemctl restart kubelet",
    ]
    positions = _positions(box.calls, order)
    assert positions == sorted(positions)
    restore = next(c for c in box.calls if c.startswith("etcdutl snapshot restore"))
    assert "--name cp-01 --initial-cluster cp-01=https://10.50.0.11:2380,cp-02=https://10.50.0.12:2380,cp-03=https://10.50.0.13:2380" in restore
    assert "--initial-advertise-peer-urls https://10.50.0.11:2380" in restore
    assert box.file("/var/lib/etcd/member/snap").read_text() == "etcd snapshot\n"  # restored from the snapshot
    assert box.file("/var/lib/etcd.before-restore/member/old").read_text() == "old state"  # old data kept
    assert sorted(p.name for p in manifests.iterdir()) == ["etcd.yaml", "kube-apiserver.yaml", "kube-scheduler.yaml"]  # back
    check = box.run("set -euo pipefail\n" + _block("restore-check"))
    assert check.returncode == 0, check.stderr
    assert box.calls == ["kubectl get nodes", "kubectl -n kube-system delete pod -l component in (kube-controller-manager,kube-scheduler)"]


# --------------------------------------------------------------------------- shellcheck


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck not installed")
def test_scripts_are_shellcheck_clean(tmp_path):
    scripts = {
        "kubeadm-apply": node_kubeadm_script(CP, NEW),
        "kubeadm-node": node_kubeadm_script(WORKER, NEW),
        "kubelet": node_kubelet_script(WORKER, NEW),
        "drain": upgrade_drain_script(WORKER.hostname, timeout="30m", mark=upgrade_mark(f"kubernetes-{NEW}")),
        "uncordon": uncordon_script(WORKER, NEW),
        "stay-cordoned": uncordon_script(CORDONED, NEW),
        "snapshot": etcd_snapshot_script(SNAPSHOTS),
        "snapshot-pre": etcd_snapshot_script(SNAPSHOTS, before_version=NEW),
        "timer": etcd_snapshot_timer_script(SNAPSHOTS),
        "timer-off": etcd_snapshot_timer_script(EtcdSnapshots(enabled=False)),
        "runbook": "#!/usr/bin/env bash\nset -euo pipefail\n" + _block("restore-runbook") + _block("restore-check"),
    }
    for name, text in scripts.items():
        (tmp_path / f"{name}.sh").write_text(text)
    proc = subprocess.run([SHELLCHECK, *sorted(str(p) for p in tmp_path.glob("*.sh"))], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_scripts_refuse_bad_input():
    with pytest.raises(ValueError, match="MAJOR.MINOR.PATCH"):
        node_kubeadm_script(CP, "1.36")
    with pytest.raises(ValueError, match="lowercase DNS subdomain"):
        node_kubelet_script(NodeUpgrade("CP_01", "10.0.0.1", "control-plane", "apply", True), NEW)
    with pytest.raises(ValueError, match="wait_tries"):
        uncordon_script(CP, NEW, wait_tries=0)
    assert UpgradePolicy().etcd_snapshots.retention == 7


# --------------------------------------------------------------------------- the whole run order, twice a minor


def test_run_order_of_two_steps_resumes_from_the_top(tmp_path):
    """upgrade_run_order of a 1.35.2 -> 1.36.4 -> 1.37.1 plan, run for one control plane in one sandbox: each step uses
    its minor's repository, the snapshot is taken once, and after a failure in the second step running the whole list
    again from the top skips everything done."""
    from hybridgpu.inventory import load_inventory
    from hybridgpu.inventory.upgrade import plan_upgrade
    from hybridgpu.render.upgrade import upgrade_run_order

    inventory = load_inventory(ROOT / "tests/fixtures/upgrade/pass/one-control-plane.yaml")
    plan = plan_upgrade(inventory, "1.37.1", via=["1.36.4"])
    runs = [r for r in upgrade_run_order(plan, inventory.site.upgrades) if r.host == "cp-01"]
    assert [r.name for r in runs] == [
        "1.36.4/00-cp-01-etcd-snapshot.sh",
        *(f"{v}/01-cp-01-{p}.sh" for v in ("1.36.4", "1.37.1") for p in ("1-kubeadm", "2-drain", "3-kubelet", "4-uncordon")),
    ]
    scripts = [r.text.replace("WAIT_TRIES=60", "WAIT_TRIES=2") for r in runs]
    box = UpgradeBox(tmp_path)
    failed = box.run_all(scripts, FAIL_AT="kubeadm upgrade apply v1.37.1")
    assert failed[-1] == "kubeadm upgrade apply v1.37.1 --yes"
    assert box.get("cluster-version") == "1.36.4" and box.get("kubelet-running") == "1.36.4"
    assert "v1.37/deb/" in box.file("/etc/apt/sources.list.d/kubernetes.list").read_text()
    resumed = box.run_all(scripts)
    assert [c for c in resumed if c.startswith(("kubeadm upgrade", "apt-get install", "etcdctl"))] == [
        "kubeadm upgrade plan v1.37.1",
        "kubeadm upgrade apply v1.37.1 --yes",
        "apt-get install -y -qq kubelet=1.37.1-* kubectl=1.37.1-*",
    ]
    assert box.get("cluster-version") == "1.37.1" and box.get("kubelet-running") == "1.37.1"
    assert len(list(box.file("/var/backups/hybridgpu/etcd").glob("*.db"))) == 1
