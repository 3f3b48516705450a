"""An on-prem upgrade uncordons only the nodes it cordoned (issue 27, section 2), in the stub sandbox.

Both upgrade paths (``upgrades.kubernetes``: :func:`hybridgpu.render.upgrade.upgrade_run_order`; ``upgrades.nvidia``:
:func:`hybridgpu.render.upgrade.nvidia_run_order`) cordon a node and uncordon it later. The drain now cordons and marks
the node (``hybridgpu.io/cordoned-by: upgrade-<id>``) in one JSON merge patch that carries the resourceVersion it read;
the uncordon step uncordons only a node with an upgrade's mark and removes the mark in the same write.

The Node is modelled as the API server keeps it (:data:`tests.helpers.sandbox.KUBECTL_NODE`): a patch with a stale
``resourceVersion`` gets the 409 Conflict of kubernetes/apiserver ``pkg/registry/generic/registry/store.go``
(``OptimisticLockErrorMsg``, commit 24a394e5, read 2026-11-27); ``kubectl cordon``/``uncordon`` write only a change and
``kubectl drain`` cordons first (kubernetes/kubectl ``pkg/cmd/drain/drain.go`` and ``pkg/drain/cordon.go``, commit
dee3483a). Why one write: with two commands, ``kubectl cordon`` then ``kubectl annotate``, a failure between them leaves a
node cordoned without the mark, which every re-run must then take for an operator's cordon and never release; and
``kubectl annotate`` refuses to change an existing value without ``--overwrite`` (``pkg/cmd/annotate/annotate.go``).
"""

from __future__ import annotations

import shutil

import pytest

from hybridgpu.inventory.remediation import RemediationPolicy
from hybridgpu.inventory.upgrade import NodeUpgrade
from hybridgpu.render.gpu_health import remediation_script
from hybridgpu.render.upgrade import node_kubeadm_script, node_kubelet_script, uncordon_script, upgrade_drain_script, upgrade_mark
from tests.helpers.nvidia_sandbox import NvidiaBox
from tests.render.test_nvidia_rerun_sandbox import _chain, _flat, _runs
from tests.render.test_upgrade_sandbox import NEW, UpgradeBox

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")

WORKER = NodeUpgrade("gpu-01", "10.50.0.21", "gpu-worker", "node", uncordon=True)
IN_INVENTORY_CORDONED = NodeUpgrade("gpu-01", "10.50.0.21", "gpu-worker", "node", uncordon=False)
MARK = upgrade_mark(f"kubernetes-{NEW}")
NVIDIA_MARK = "upgrade-nvidia-driver-580.95.05-1-toolkit-1.18.2-1"


def _scripts(node: NodeUpgrade = WORKER) -> list[str]:
    """A node's four Kubernetes upgrade scripts in run order (upgrade_run_order's), the wait shortened."""
    return [
        node_kubeadm_script(node, NEW),
        upgrade_drain_script(node.hostname, timeout="30m", mark=MARK),
        node_kubelet_script(node, NEW),
        uncordon_script(node, NEW, wait_tries=2),
    ]


def _patches(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith(("kubectl patch", "kubectl cordon", "kubectl uncordon", "kubectl annotate"))]


def _stderr(box: UpgradeBox, scripts: list[str], **env: str) -> tuple[list[str], str, int]:
    """Run ``scripts`` until one fails: (calls, stderr of all, index of the failed script or -1 when all passed)."""
    calls: list[str] = []
    err = ""
    for index, text in enumerate(scripts):
        proc = box.run(text, **env)
        calls += box.calls
        err += proc.stderr
        if proc.returncode != 0:
            return calls, err, index
    return calls, err, -1


# --------------------------------------------------------------------------- Kubernetes upgrade


def test_a_node_the_upgrade_cordoned_is_uncordoned_and_unmarked(tmp_path):
    """cordon+mark (one patch) -> drain -> kubelet moved and restarted -> uncordon+unmark (one patch)."""
    box = UpgradeBox(tmp_path, node="gpu-01")
    calls, err, failed = _stderr(box, _scripts())
    assert failed == -1, err
    cordon = next(c for c in calls if c.startswith("kubectl patch node gpu-01") and '"unschedulable":true' in c)
    assert f'"hybridgpu.io/cordoned-by":"{MARK}"' in cordon and '"resourceVersion":"1"' in cordon
    uncordon = next(c for c in calls if c.startswith("kubectl patch node gpu-01") and '"unschedulable":false' in c)
    assert '"hybridgpu.io/cordoned-by":null' in uncordon
    order = [cordon, "kubectl drain gpu-01 --ignore-daemonsets", "systemctl restart kubelet", uncordon]
    positions = [next(i for i, c in enumerate(calls) if c.startswith(p)) for p in order]
    assert positions == sorted(positions), calls
    assert box.get("cordoned-gpu-01") is None and box.get("mark-gpu-01") is None
    assert "uncordoned (cordoned by upgrade-kubernetes-1.36.1)" in err


def test_a_node_an_operator_cordoned_stays_cordoned(tmp_path):
    """Cordoned by hand before the upgrade (a suspect GPU, the inventory still ``active``): drained and upgraded, never
    marked, never uncordoned; the uncordon step exits 0 and says why."""
    box = UpgradeBox(tmp_path, node="gpu-01")
    box.put("cordoned-gpu-01", "")
    calls, err, failed = _stderr(box, _scripts())
    assert failed == -1, err
    assert _patches(calls) == []  # no write to the Node at all
    assert "kubectl drain gpu-01 --ignore-daemonsets --delete-emptydir-data --timeout=30m" in calls
    assert box.get("cordoned-gpu-01") == "" and box.get("mark-gpu-01") is None and box.get("kubelet-running") == NEW
    assert "was cordoned before the upgrade, not by it" in err
    assert "it stays cordoned: it was cordoned before the upgrade, not by it (no hybridgpu.io/cordoned-by)" in err


@pytest.mark.parametrize(
    ("fail_at", "from_top"),
    [("kubectl drain", True), ("systemctl restart kubelet", False), ("systemctl restart kubelet", True), ("kubectl get node gpu-01 -o jsonpath={.status", False)],
)
def test_failure_after_the_cordon_then_rerun_uncordons(tmp_path, fail_at, from_top):
    """The step after the cordon fails (a PodDisruptionBudget held the drain, the kubelet restart, the wait): the node
    stays cordoned and marked; the re-run from the top (or from the failed command, as ``pulumi up`` does) finds its own
    mark, writes nothing new before the uncordon, and uncordons it."""
    box = UpgradeBox(tmp_path, node="gpu-01")
    scripts = _scripts()
    calls, _, failed = _stderr(box, scripts, FAIL_AT=fail_at)
    assert failed > 0 and any(c.startswith(fail_at) for c in calls)
    assert box.get("cordoned-gpu-01") == "" and box.get("mark-gpu-01") == MARK
    calls, err, again = _stderr(box, scripts[0 if from_top else failed :])
    assert again == -1, err
    assert [c for c in _patches(calls) if '"unschedulable":true' in c] == []  # already cordoned and marked by this upgrade
    assert box.get("cordoned-gpu-01") is None and box.get("mark-gpu-01") is None


def test_a_node_the_gpu_remediation_cordoned_stays_cordoned(tmp_path):
    """The remediation script (hybridgpu.render.gpu_health, a GPU fault: ``kubectl cordon``, the repair label, drain) leaves
    no upgrade mark, so a later upgrade moves the node and leaves it cordoned for its repair."""
    box = UpgradeBox(tmp_path, node="gpu-01")
    assert box.run(remediation_script("gpu-01", RemediationPolicy())).returncode == 0
    assert box.get("cordoned-gpu-01") == ""
    calls, err, failed = _stderr(box, _scripts())
    assert failed == -1, err
    assert _patches(calls) == [] and box.get("cordoned-gpu-01") == "" and box.get("kubelet-running") == NEW


def test_an_operator_cordon_racing_the_upgrade_wins(tmp_path):
    """Somebody cordons the node between the drain's read and its write: the patch (with the resourceVersion read) gets
    409 Conflict, the script reads again, finds it cordoned without a mark, leaves it unmarked; the node stays cordoned."""
    box = UpgradeBox(tmp_path, node="gpu-01")
    calls, err, failed = _stderr(box, _scripts(), CORDON_AFTER_READ="1")
    assert failed == -1, err
    assert "gpu-01 changed while this step was writing it; reading it again" in err
    assert len(_patches(calls)) == 1  # the refused one
    assert box.get("cordoned-gpu-01") == "" and box.get("mark-gpu-01") is None


def test_the_mark_of_an_upgrade_that_stopped_is_taken_over(tmp_path):
    """Cordoned and marked by an earlier upgrade that never reached its uncordon (its target then changed): this one
    takes the mark over and uncordons the node at the end."""
    box = UpgradeBox(tmp_path, node="gpu-01")
    box.put("cordoned-gpu-01", "")
    box.put("mark-gpu-01", "upgrade-kubernetes-1.36.0")
    _, err, failed = _stderr(box, _scripts())
    assert failed == -1, err
    assert "cordoned by an earlier upgrade (hybridgpu.io/cordoned-by=upgrade-kubernetes-1.36.0)" in err
    assert box.get("cordoned-gpu-01") is None and box.get("mark-gpu-01") is None


def test_a_host_cordoned_in_the_inventory_stays_cordoned_and_loses_the_mark(tmp_path):
    box = UpgradeBox(tmp_path, node="gpu-01")
    _, err, failed = _stderr(box, _scripts(IN_INVENTORY_CORDONED))
    assert failed == -1, err
    assert box.get("cordoned-gpu-01") == "" and box.get("mark-gpu-01") is None
    assert "it stays cordoned (state cordoned in the inventory); hybridgpu.io/cordoned-by removed" in err


def test_a_refused_patch_stops_before_the_drain(tmp_path):
    """Any error other than a conflict (RBAC, the API server down) stops the step: nothing drained, nothing marked."""
    box = UpgradeBox(tmp_path, node="gpu-01")
    proc = box.run(upgrade_drain_script("gpu-01", timeout="30m", mark=MARK), FAIL_AT="kubectl patch")
    assert proc.returncode != 0 and "cannot patch node gpu-01" in proc.stderr
    assert not [c for c in box.calls if c.startswith("kubectl drain")] and box.get("cordoned-gpu-01") is None


def test_drain_and_mark_refuse_bad_input():
    with pytest.raises(ValueError, match="upgrade id"):
        upgrade_mark('x"y')
    with pytest.raises(ValueError, match="must come from upgrade_mark"):
        upgrade_drain_script("gpu-01", timeout="30m", mark="operator")
    with pytest.raises(ValueError, match="timeout"):
        upgrade_drain_script("gpu-01", timeout="soon", mark=MARK)
    assert upgrade_mark("nvidia-driver-580.95.05-1+deb12u1-toolkit-1.18.0~rc.1-1").startswith("upgrade-nvidia-")


# --------------------------------------------------------------------------- NVIDIA driver/toolkit upgrade


def test_nvidia_upgrade_uncordons_the_node_it_cordoned(tmp_path):
    box = NvidiaBox(tmp_path)
    ok, seen = _chain(box, _runs("driver-and-toolkit", "gpu-01"))
    assert ok, seen
    writes = _patches(_flat(seen))
    assert len(writes) == 2 and f'"hybridgpu.io/cordoned-by":"{NVIDIA_MARK}"' in writes[0] and '"unschedulable":false' in writes[1]
    assert box.get("cordoned-gpu-01") is None and box.get("mark-gpu-01") is None


@pytest.mark.parametrize("at_target", [False, True])
def test_nvidia_upgrade_leaves_an_operator_cordon(tmp_path, at_target):
    """A GPU worker cordoned by hand: upgraded (or, at the target already, left alone) and still cordoned afterwards.
    Before, the uncordon step ran ``kubectl uncordon`` on it either way."""
    box = NvidiaBox(tmp_path)
    if at_target:
        box.at_target()
    box.put("cordoned-gpu-01", "")
    ok, seen = _chain(box, _runs("driver-and-toolkit", "gpu-01"))
    assert ok, seen
    assert _patches(_flat(seen)) == []
    assert box.get("cordoned-gpu-01") == "" and box.get("mark-gpu-01") is None
    assert box.get("pkg-cuda-drivers-580") == "580.95.05-1"


def test_nvidia_failure_after_the_cordon_then_rerun_uncordons(tmp_path):
    """The install fails after the drain: cordoned and marked; the re-run (check says upgrade, the drain finds its own
    mark) finishes and uncordons."""
    box = NvidiaBox(tmp_path)
    runs = _runs("driver-and-toolkit", "gpu-01")
    ok, seen = _chain(box, runs, FAIL_AT="apt-get install")
    assert not ok and seen[-1][0] == "install"
    assert box.get("cordoned-gpu-01") == "" and box.get("mark-gpu-01") == NVIDIA_MARK
    ok, seen = _chain(box, runs)
    assert ok, seen
    assert [c for c in _patches(_flat(seen)) if '"unschedulable":true' in c] == []
    assert box.get("cordoned-gpu-01") is None and box.get("mark-gpu-01") is None
