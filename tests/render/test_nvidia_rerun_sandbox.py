"""Re-runs of a host NVIDIA upgrade (``upgrades.nvidia``) that must not undo or repeat it, in the stub sandbox
(tests/helpers/nvidia_sandbox.py; the stubs and their upstream behaviour are described in
tests/render/test_nvidia_upgrade_sandbox.py):

1. A bootstrap that runs again (any re-run: a changed script, new registry credentials) leaves a toolkit the upgrade
   moved at its target, and a toolkit still at the version from before for the upgrade to move (drained); a new host
   joins at the target. The bootstrap's toolkit block is cut from the script ``plan_onprem`` renders, as
   tests/render/test_toolkit_pin.py does.
2. A node already at the target (a re-run from the top, the nodes done before a failure, a host that joined at the new
   versions) is found so by the check phase on the node (``dpkg-query``, ``nvidia-smi``, ``systemctl is-active``) and is
   not cordoned, drained, stopped or rebooted: its drain reads the check's output, as ``pulumi up`` passes it
   (``fill_from_previous``, the apply on the check command's ``stdout``).
3. On NVSwitch systems the fabric manager package moves with the driver, at exactly its version, held; the service is
   restarted when it moved without a reboot and must be active before the node is uncordoned. Upstream facts:
   "the version of fabricmanager must match the NVIDIA driver installed" (NVIDIA/apt-packaging-fabric-manager README,
   as carried by canonical/apt-packaging-fabric-manager, read 2026-11-27); NVIDIA's CUDA repository names it
   ``nvidia-fabricmanager-<branch>`` before 580 and ``nvidia-fabricmanager`` from 580, installed as
   ``<name>=<driver version>*`` and held (NVIDIA/gpu-driver-container ``ubuntu22.04/precompiled/nvidia-driver``
   ``fabricmanager_install``, commit 06a208ca9747, 2026-08-17); Ubuntu builds ``nvidia-fabricmanager-<branch>`` from
   the source ``fabric-manager-<branch>``, whose Debian revision differs from the driver's (packages.ubuntu.com, read
   2026-11-27); the systemd unit is ``nvidia-fabricmanager`` (awslabs/amazon-eks-ami
   ``templates/al2023/provisioners/install-nvidia-driver.sh``, commit 81fec2e89585).
"""

from __future__ import annotations

import functools
import shutil
import subprocess

import pytest
import yaml

from hybridgpu.inventory import inventory_from_documents, load_inventory
from hybridgpu.inventory.upgrade import plan_nvidia_upgrade
from hybridgpu.onprem import plan_onprem
from hybridgpu.render.bootstrap import SCRIPT_LOG
from hybridgpu.render.upgrade import NVIDIA_TOOLKIT_PACKAGES, ScriptRun, fill_from_previous, nvidia_run_order
from tests.helpers import ROOT
from tests.helpers.nvidia_sandbox import FM, OLD_DRIVER, OLD_TOOLKIT, NvidiaBox, fast

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
FIXTURES = ROOT / "tests/fixtures/upgrade_nvidia/pass"
TARGET_TOOLKIT = "1.18.2-1"


@functools.cache
def _runs(fixture: str, host: str) -> tuple[ScriptRun, ...]:
    plan = plan_nvidia_upgrade(load_inventory(FIXTURES / f"{fixture}.yaml"))
    assert plan is not None
    return tuple(r for r in nvidia_run_order(plan) if r.host == host)


def _chain(box: NvidiaBox, runs: tuple[ScriptRun, ...], **env: str) -> tuple[bool, list[tuple[str, list[str]]]]:
    """Run one node's phases in order as ``pulumi up`` does (each run filled from the output of the one before; a
    scheduled reboot happens between the install and the wait); stop at the first failure. Returns (all passed,
    [(phase, calls)])."""
    seen: list[tuple[str, list[str]]] = []
    out: str | None = None
    for run in runs:
        proc = box.run(fast(fill_from_previous(run, out)), **env)
        seen.append((run.phase, box.calls))
        if proc.returncode != 0:
            return False, seen
        if box.get("reboot-scheduled") is not None:
            box.reboot()
        out = proc.stdout
    return True, seen


def _flat(seen: list[tuple[str, list[str]]]) -> list[str]:
    return [call for _, calls in seen for call in calls]


# --------------------------------------------------------------------------- 1. bootstrap again


@functools.cache
def _bootstrap_toolkit_block(pin: str | None, target: str | None) -> str:
    """The toolkit block of a gpu-worker's bootstrap for the sample site with ``cluster.nvidiaContainerToolkitVersion``
    ``pin`` and ``upgrades.nvidia.toolkitVersion`` ``target``, with its ``NVIDIA_TOOLKIT_*`` inputs and ``log``."""
    site, hosts = list(yaml.safe_load_all((ROOT / "stacks/inventory/onprem-site-a.yaml").read_text()))[:2]
    if pin is None:
        site["cluster"].pop("nvidiaContainerToolkitVersion", None)
    else:
        site["cluster"]["nvidiaContainerToolkitVersion"] = pin
    if target is not None:
        site["upgrades"] = {"nvidia": {"toolkitVersion": target}}
    plan = plan_onprem(inventory_from_documents([("site.yaml", [site, hosts])]))
    script = next(s for s in plan.steps if s.role == "gpu-worker").bootstrap
    inputs = "".join(line + "\n" for line in script.splitlines() if line.startswith("readonly NVIDIA_TOOLKIT_"))
    start = script.index("NVIDIA_TOOLKIT_PACKAGES=(")
    hold = 'apt-mark hold "${NVIDIA_TOOLKIT_PACKAGES[@]}" >/dev/null\n'
    end = script.index(hold, start) + len(hold)
    return "set -euo pipefail\n" + inputs + SCRIPT_LOG + script[start:end]


def _toolkit(box: NvidiaBox) -> set[str | None]:
    return {box.get(f"pkg-{p}") for p in NVIDIA_TOOLKIT_PACKAGES}


def test_bootstrap_again_after_the_upgrade_keeps_the_target(tmp_path):
    """bootstrap (toolkit at the old pin: left for the upgrade) -> the upgrade moves the node -> bootstrap again: still at
    the target, nothing installed, the packages held. Before: the second bootstrap moved the toolkit back to
    ``cluster.nvidiaContainerToolkitVersion``."""
    block = _bootstrap_toolkit_block(OLD_TOOLKIT, TARGET_TOOLKIT)
    box = NvidiaBox(tmp_path, fabric_manager=False)
    first = box.run(block)
    assert first.returncode == 0, first.stderr
    assert not [c for c in box.calls if c.startswith("apt-get install")]  # not moved in place, under running pods
    assert _toolkit(box) == {OLD_TOOLKIT} and "left as it is" in first.stderr
    ok, _ = _chain(box, _runs("toolkit-only", "gpu-01"))
    assert ok and _toolkit(box) == {TARGET_TOOLKIT}
    again = box.run(block)
    assert again.returncode == 0, again.stderr
    assert not [c for c in box.calls if c.startswith("apt-get install")]
    assert _toolkit(box) == {TARGET_TOOLKIT}
    assert [c for c in box.calls if not c.startswith("dpkg-query")] == [f"apt-mark hold {' '.join(NVIDIA_TOOLKIT_PACKAGES)}"]


@pytest.mark.parametrize(
    ("pin", "installed", "expect"),
    [
        (OLD_TOOLKIT, {}, TARGET_TOOLKIT),  # a new host joins at the target
        (OLD_TOOLKIT, dict.fromkeys(NVIDIA_TOOLKIT_PACKAGES, "1.17.3-1"), TARGET_TOOLKIT),  # drifted: forward, never back
        (OLD_TOOLKIT, {**dict.fromkeys(NVIDIA_TOOLKIT_PACKAGES, OLD_TOOLKIT), "libnvidia-container1": TARGET_TOOLKIT}, TARGET_TOOLKIT),
    ],
)
def test_bootstrap_during_the_upgrade_never_moves_back(tmp_path, pin, installed, expect):
    box = NvidiaBox(tmp_path, fabric_manager=False)
    for pkg in NVIDIA_TOOLKIT_PACKAGES:
        if pkg in installed:
            box.put(f"pkg-{pkg}", installed[pkg])
        else:
            (box.state / f"pkg-{pkg}").unlink()
    proc = box.run(_bootstrap_toolkit_block(pin, TARGET_TOOLKIT))
    assert proc.returncode == 0, proc.stderr
    assert _toolkit(box) == {expect}
    assert all(box.get(f"hold-{p}") is not None for p in NVIDIA_TOOLKIT_PACKAGES)


def test_without_an_upgrade_the_bootstrap_block_is_unchanged():
    """No ``upgrades.nvidia`` (or its toolkit at the pin): the pinned block as before, byte for byte."""
    plain = _bootstrap_toolkit_block(TARGET_TOOLKIT, None)
    assert _bootstrap_toolkit_block(TARGET_TOOLKIT, TARGET_TOOLKIT) == plain
    assert "NVIDIA_TOOLKIT_PREVIOUS" not in plain and "toolkit_before" not in plain


# --------------------------------------------------------------------------- 2. a node at the target


def test_a_node_at_the_target_is_neither_drained_nor_rebooted(tmp_path):
    """check (dpkg-query, nvidia-smi, systemctl is-active) -> the drain does nothing -> install nothing -> the wait only
    for Ready -> verify -> uncordon. No cordon, drain, kubelet stop, apt-get or reboot."""
    box = NvidiaBox(tmp_path)
    box.at_target()
    ok, seen = _chain(box, _runs("driver-and-toolkit", "gpu-01"))
    assert ok, seen
    phases = dict(seen)
    assert [c.split()[0] for c in phases["check"]] == ["dpkg-query"] * 6 + ["nvidia-smi", "systemctl"]
    assert phases["drain"] == []  # not even a kubectl call
    calls = _flat(seen)
    for banned in ("kubectl cordon", "kubectl patch", "kubectl drain", "systemctl stop", "crictl", "apt-get", "apt-mark", "systemd-run", "systemctl restart"):
        assert not [c for c in calls if c.startswith(banned)], (banned, calls)


def test_rerun_after_a_failure_drains_only_the_node_not_done(tmp_path):
    """gpu-01 upgraded, gpu-02 fails in its install; running every script again from the top (run-order.txt; ``pulumi
    up`` after the scripts changed) drains gpu-02 again but not gpu-01."""
    boxes = {h: NvidiaBox(tmp_path / h, node=h) for h in ("gpu-01", "gpu-02")}
    runs = {h: _runs("driver-and-toolkit", h) for h in boxes}
    ok, first = _chain(boxes["gpu-01"], runs["gpu-01"])
    assert ok and "kubectl drain gpu-01 --ignore-daemonsets --delete-emptydir-data --timeout=30m" in _flat(first)
    ok, failed = _chain(boxes["gpu-02"], runs["gpu-02"], FAIL_AT="apt-get install")
    assert not ok and failed[-1][0] == "install" and boxes["gpu-02"].get("cordoned-gpu-02") is not None
    again = {h: _chain(boxes[h], runs[h]) for h in boxes}
    assert again["gpu-01"][0] and again["gpu-02"][0]
    assert not [c for c in _flat(again["gpu-01"][1]) if c.startswith(("kubectl cordon", "kubectl drain", "apt-get", "systemd-run"))]
    second = _flat(again["gpu-02"][1])
    assert [c for c in second if c.startswith("kubectl drain")] and [c for c in second if c.startswith("systemd-run")]
    assert boxes["gpu-02"].get("cordoned-gpu-02") is None and boxes["gpu-02"].get(f"pkg-{FM}") == "580.95.05-1"


def test_a_check_that_printed_nothing_drains():
    """Without the check's line (an older check, a failed one, a hand run that skipped it) the node is drained."""
    drain = next(r for r in _runs("driver-and-toolkit", "gpu-01") if r.phase == "drain")
    assert fill_from_previous(drain, None) == drain.text and "readonly NODE_STATE=unknown\n" in drain.text
    assert fill_from_previous(drain, "hybridgpu-nvidia-node-state: $(reboot)\n") == drain.text
    assert "readonly NODE_STATE=at-target\n" in fill_from_previous(drain, "x\nhybridgpu-nvidia-node-state: at-target\n")


# --------------------------------------------------------------------------- 3. the fabric manager


def test_fabric_manager_at_another_version_moves_and_restarts_without_a_reboot(tmp_path):
    """Driver and toolkit at the target, the fabric manager package left at the old version (so it cannot run): the node is
    drained, only the fabric manager moves (to the driver's version, held), its service restarts before kubelet starts,
    and verify finds it active."""
    box = NvidiaBox(tmp_path)
    box.at_target(fabric_manager=OLD_DRIVER)
    (box.state / "running-nvidia-fabricmanager").unlink()
    ok, seen = _chain(box, _runs("driver-and-toolkit", "gpu-01"))
    assert ok, seen
    calls = _flat(seen)
    assert "kubectl drain gpu-01 --ignore-daemonsets --delete-emptydir-data --timeout=30m" in calls
    assert [c for c in calls if c.startswith("apt-get install")] == [f"apt-get install -y -qq --allow-downgrades {FM}=580.95.05-*"]
    uncordon = next(c for c in calls if c.startswith("kubectl patch node gpu-01") and '"unschedulable":false' in c)
    order = [f"apt-mark unhold {FM}", f"apt-mark hold {FM}", f"systemctl restart {FM}", "systemctl start kubelet", uncordon]
    assert [calls.index(c) for c in order] == sorted(calls.index(c) for c in order)
    assert not [c for c in calls if c.startswith("systemd-run")]  # the loaded driver is the target: no reboot
    assert box.get(f"hold-{FM}") is not None and box.get("running-nvidia-fabricmanager") is not None


def test_ubuntu_fabric_manager_with_its_own_revision_is_at_the_target(tmp_path):
    """Ubuntu's nvidia-fabricmanager-580 carries another Debian revision than nvidia-driver-580-server: same upstream
    version, so the node is at the target."""
    box = NvidiaBox(tmp_path, driver_package="nvidia-driver-580-server", fm_package="nvidia-fabricmanager-580")
    box.at_target(driver="580.95.05-0ubuntu0.24.04.2", fabric_manager="580.95.05-0ubuntu0.24.04.1")
    ok, seen = _chain(box, _runs("ubuntu-server-driver", "gpu-01"))
    assert ok, seen
    assert dict(seen)["drain"] == [] and not [c for c in _flat(seen) if c.startswith("apt-get")]


def test_verify_keeps_the_node_cordoned_when_the_fabric_manager_does_not_run(tmp_path):
    box = NvidiaBox(tmp_path)
    box.at_target()
    (box.state / "running-nvidia-fabricmanager").unlink()
    verify = next(r for r in _runs("driver-and-toolkit", "gpu-01") if r.phase == "verify")
    proc = box.run(verify.text, FAIL_AT=f"systemctl restart {FM}")
    assert proc.returncode != 0 and "nvidia-fabricmanager is not active on gpu-01" in proc.stderr


@pytest.mark.parametrize(
    ("fixture", "expect"),
    [
        ("driver-and-toolkit", {"gpu-01": FM, "gpu-02": FM, "gpu-03": ""}),  # 8 x H100 SXM: NVSwitch; 4 x H100: none
        ("fabric-manager-cuda-570", {"gpu-01": "nvidia-fabricmanager-570", "gpu-02": "nvidia-fabricmanager-570", "gpu-03": "nvidia-fabricmanager-570"}),
        ("fabric-manager-unbranched-590", {"gpu-01": FM, "gpu-02": FM, "gpu-03": FM}),
        ("fabric-manager-ubuntu-535", {"gpu-01": "nvidia-fabricmanager-535", "gpu-02": "nvidia-fabricmanager-535", "gpu-03": "nvidia-fabricmanager-535"}),
        ("debian-driver-four-gpu-boards", {"gpu-01": "", "gpu-02": "", "gpu-03": ""}),
        ("toolkit-only-on-nvswitch", {"gpu-01": "", "gpu-02": "", "gpu-03": ""}),  # the driver does not move: nor does its fabric manager
    ],
)
def test_which_hosts_pin_which_fabric_manager(fixture, expect):
    for host, package in expect.items():
        install = next(r for r in _runs(fixture, host) if r.phase == "install")
        value = package or "''"
        assert f"readonly FM_PACKAGE={value}\n" in install.text, (fixture, host)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_scripts_are_shellcheck_clean(tmp_path):
    """The bootstrap while the toolkit upgrade runs, and the check and drain of an NVSwitch host."""
    site, hosts = list(yaml.safe_load_all((ROOT / "stacks/inventory/onprem-site-a.yaml").read_text()))[:2]
    site["cluster"]["nvidiaContainerToolkitVersion"] = OLD_TOOLKIT
    site["upgrades"] = {"nvidia": {"toolkitVersion": TARGET_TOOLKIT}}
    plan = plan_onprem(inventory_from_documents([("site.yaml", [site, hosts])]))
    (tmp_path / "bootstrap.sh").write_text(next(s for s in plan.steps if s.role == "gpu-worker").bootstrap)
    for run in _runs("fabric-manager-ubuntu-535", "gpu-01"):
        (tmp_path / f"{run.phase}.sh").write_text(run.text)
    shellcheck = shutil.which("shellcheck")
    assert shellcheck is not None
    proc = subprocess.run([shellcheck, *sorted(str(p) for p in tmp_path.glob("*.sh"))], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_upgrade_plan_names_the_fabric_manager_and_refuses_one_it_cannot_pin(tmp_path, monkeypatch):
    """``hybridgpu inventory upgrade-plan`` (in-process) shows which hosts move a fabric manager and that a node at the
    target is not drained; an upgrade of Debian's driver on an NVSwitch host is refused before any script is written."""
    from hybridgpu.cli import app
    from tests.helpers.inventory_cases import relative, runner

    monkeypatch.chdir(ROOT)
    shown = runner.invoke(app, ["inventory", "upgrade-plan", relative(FIXTURES / "fabric-manager-cuda-570.yaml"), "--json"])
    assert shown.exit_code == 0, shown.output
    assert '"fabricManager": "nvidia-fabricmanager-570"' in shown.output and '"fabricManager": true' in shown.output
    text = runner.invoke(app, ["inventory", "upgrade-plan", relative(FIXTURES / "driver-and-toolkit.yaml")])
    assert text.exit_code == 0 and "gpu-01 (8 GPUs, nvidia-fabricmanager)" in text.output and "gpu-03 (4 GPUs)" in text.output
    assert "neither drained nor" in text.output
    refused = runner.invoke(
        app, ["inventory", "upgrade-plan", relative(FIXTURES.parent / "fail/debian-driver-hgx-a100.yaml"), "--out", str(tmp_path / "r")]
    )
    assert refused.exit_code == 2 and "Traceback" not in refused.output and "need the NVIDIA fabric manager" in refused.output
    assert "fix: " in refused.output and not (tmp_path / "r").exists()
