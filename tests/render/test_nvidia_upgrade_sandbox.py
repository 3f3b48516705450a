"""The NVIDIA driver/toolkit upgrade scripts (``upgrades.nvidia``, :func:`hybridgpu.render.upgrade.nvidia_run_order`) run
in the stub sandbox (tests/helpers/sandbox.py): call order, a second run that changes nothing, a failure in the middle
then a re-run, the reboot and the wait for it, and the checks that keep a node cordoned.

The stubs model what the real tools do with what the scripts send them:

* ``apt-get install PKG=VERSION`` of a package on hold fails ("Held packages were changed and -y was used without
  --allow-change-held-packages", apt's ``apt-private/private-install.cc``), so each move is ``apt-mark unhold``,
  install, ``apt-mark hold``.
* After a new driver package is installed, ``nvidia-smi`` fails ("Failed to initialize NVML: Driver/library version
  mismatch") until the node reboots and loads the new kernel module; then ``--query-gpu=driver_version
  --format=csv,noheader`` prints one line per GPU (NVIDIA ``nvidia-smi`` manual, ``--query-gpu``).
* The Node's ``.status.nodeInfo.bootID`` ("boot id is the boot-id reported by the node", kubernetes/kubernetes
  ``NodeSystemInfo``; the kubelet's ``MachineInfo`` status setter in ``pkg/kubelet/nodestatus/setters.go`` copies
  cAdvisor's, read from ``/proc/sys/kernel/random/boot_id``) changes with every boot, which is how the wait after
  the reboot tells a rebooted node from one that has not gone down yet.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hybridgpu.inventory import load_inventory
from hybridgpu.inventory.upgrade import plan_nvidia_upgrade
from hybridgpu.render.upgrade import BOOT_ID_UNSET, NVIDIA_TOOLKIT_PACKAGES, ScriptRun, nvidia_run_order, with_boot_id
from tests.helpers import ROOT
from tests.helpers.nvidia_sandbox import FM, NEW_BOOT, OLD_BOOT, OLD_DRIVER, NvidiaBox
from tests.helpers.nvidia_sandbox import fast as _fast

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
SHELLCHECK = shutil.which("shellcheck")
FIXTURES = ROOT / "tests/fixtures/upgrade_nvidia/pass"


def _runs(fixture: str, host: str = "gpu-01") -> dict[str, ScriptRun]:
    plan = plan_nvidia_upgrade(load_inventory(FIXTURES / f"{fixture}.yaml"))
    assert plan is not None
    runs: dict[str, ScriptRun] = {r.phase: r for r in nvidia_run_order(plan) if r.host == host}
    assert list(runs) == ["check", "drain", "install", "reboot-wait", "verify", "uncordon"]
    return runs


def _first(calls: list[str], prefix: str) -> int:
    hits = [i for i, c in enumerate(calls) if c.startswith(prefix)]
    assert hits, (prefix, calls)
    return hits[0]


def test_driver_and_toolkit_in_order_with_a_reboot(tmp_path):
    """drain -> stop kubelet and the containers -> unhold/install/hold the driver, its fabric manager (an 8 x H100 NVSwitch
    host) at the driver's version, then the toolkit -> reboot scheduled -> the wait holds until the boot id changes ->
    nvidia-smi and the fabric manager checked -> uncordon."""
    runs = _runs("driver-and-toolkit")
    box = NvidiaBox(tmp_path)
    assert box.run(runs["drain"].text).returncode == 0
    assert box.get("cordoned-gpu-01") is not None and box.get("drained-gpu-01") is not None
    install = box.run(runs["install"].text)
    assert install.returncode == 0, install.stderr
    calls = box.calls
    order = [
        "systemctl stop kubelet",
        "crictl stop c0ffee01 c0ffee02",
        "apt-get update",
        "apt-mark unhold cuda-drivers-580",
        "apt-get install -y -qq --allow-downgrades cuda-drivers-580=580.95.05-1",
        "apt-mark hold cuda-drivers-580",
        f"apt-mark unhold {FM}",
        f"apt-get install -y -qq --allow-downgrades {FM}=580.95.05-*",
        f"apt-mark hold {FM}",
        f"systemctl enable {FM}",
        f"apt-mark unhold {' '.join(NVIDIA_TOOLKIT_PACKAGES)}",
        "apt-get install -y -qq --allow-downgrades " + " ".join(f"{p}=1.18.2-1" for p in NVIDIA_TOOLKIT_PACKAGES),
        f"apt-mark hold {' '.join(NVIDIA_TOOLKIT_PACKAGES)}",
        "systemd-run --on-active=5 --unit=hybridgpu-nvidia-reboot systemctl reboot",
    ]
    assert [_first(calls, c) for c in order] == sorted(_first(calls, c) for c in order)
    assert "systemctl start kubelet" not in calls  # kubelet stays down until the reboot
    assert all(box.get(f"hold-{p}") is not None for p in ("cuda-drivers-580", FM, *NVIDIA_TOOLKIT_PACKAGES))
    assert box.get(f"pkg-{FM}") == "580.95.05-1"
    wait = with_boot_id(_fast(runs["reboot-wait"].text), install.stdout)
    assert f"readonly BOOT_ID={OLD_BOOT}\n" in wait
    early = box.run(wait)  # the node has not gone down yet: still its old boot id
    assert early.returncode != 0 and "is not back and Ready" in early.stderr
    box.reboot()
    assert box.run(wait).returncode == 0
    verify = box.run(runs["verify"].text)
    assert verify.returncode == 0, verify.stderr
    assert "runs nvidia-driver-580.95.05-1-toolkit-1.18.2-1 on 8 GPU(s)" in verify.stderr
    assert box.run(_fast(runs["uncordon"].text)).returncode == 0 and box.get("cordoned-gpu-01") is None


def test_a_second_run_changes_nothing(tmp_path):
    runs = _runs("driver-and-toolkit")
    box = NvidiaBox(tmp_path)
    install = box.run(runs["install"].text)
    box.reboot()
    again = box.run(runs["install"].text)
    assert again.returncode == 0 and "nothing to install" in again.stderr
    assert not [c for c in box.calls if c.startswith(("apt-get", "apt-mark", "systemctl stop", "crictl", "systemd-run"))]
    assert with_boot_id(runs["reboot-wait"].text, again.stdout) == runs["reboot-wait"].text  # no reboot to wait for
    assert install.stdout != again.stdout


def test_a_node_already_at_the_versions_is_not_touched(tmp_path):
    runs = _runs("driver-and-toolkit")
    box = NvidiaBox(tmp_path)
    box.at_target()
    proc = box.run(runs["install"].text)
    assert proc.returncode == 0 and "already at" in proc.stderr
    assert [c.split()[0] for c in box.calls] == ["dpkg-query"] * 6 + ["nvidia-smi", "systemctl"]


@pytest.mark.parametrize(
    ("fail_at", "reinstalled"),
    [
        ("apt-get install -y -qq --allow-downgrades nvidia-container-toolkit=", ["nvidia-container-toolkit=1.18.2-1"]),
        ("systemd-run", []),
    ],
)
def test_failure_in_the_middle_then_rerun(tmp_path, fail_at, reinstalled):
    """The install phase fails at ``fail_at``; the re-run (the next ``pulumi up`` creates the failed command again) installs
    only what is not there yet and still schedules the reboot the loaded driver needs."""
    runs = _runs("driver-and-toolkit")
    box = NvidiaBox(tmp_path)
    failed = box.run(runs["install"].text, FAIL_AT=fail_at)
    assert failed.returncode != 0 and box.get("reboot-scheduled") is None
    again = box.run(runs["install"].text)
    assert again.returncode == 0, again.stderr
    installs = [c for c in box.calls if c.startswith("apt-get install")]
    assert [any(pkg in c for c in installs) for pkg in reinstalled] == [True] * len(reinstalled)
    if "cuda-drivers-580=580.95.05-1" not in reinstalled:
        assert not [c for c in installs if "cuda-drivers-580=" in c]  # the driver moved in the failed run: not again
    assert box.get("reboot-scheduled") is not None and f"hybridgpu-reboot-from-boot-id: {OLD_BOOT}" in again.stdout
    box.reboot()
    assert box.run(runs["verify"].text).returncode == 0
    assert all(box.get(f"hold-{p}") is not None for p in ("cuda-drivers-580", *NVIDIA_TOOLKIT_PACKAGES))


def test_toolkit_only_restarts_containerd_without_a_reboot(tmp_path):
    runs = _runs("toolkit-only")
    box = NvidiaBox(tmp_path)
    proc = box.run(runs["install"].text)
    assert proc.returncode == 0, proc.stderr
    calls = box.calls
    assert _first(calls, "apt-get install") < _first(calls, "systemctl restart containerd") < _first(calls, "systemctl start kubelet")
    assert "systemd-run" not in " ".join(calls) and box.get("pkg-cuda-drivers-580") == OLD_DRIVER  # the driver is left alone
    assert with_boot_id(runs["reboot-wait"].text, proc.stdout) == runs["reboot-wait"].text
    assert box.run(_fast(runs["reboot-wait"].text)).returncode == 0  # only waits for Ready
    assert box.run(runs["verify"].text).returncode == 0


@pytest.mark.parametrize(("gpus", "loaded", "expect"), [("7", "580.95.05", "lists 7 GPU(s), the inventory says 8"), ("8", "570.195.03", "not 580.95.05")])
def test_verify_keeps_a_bad_node_cordoned(tmp_path, gpus, loaded, expect):
    runs = _runs("driver-and-toolkit")
    box = NvidiaBox(tmp_path)
    box.put("pkg-cuda-drivers-580", "580.95.05-1")
    for pkg in NVIDIA_TOOLKIT_PACKAGES:
        box.put(f"pkg-{pkg}", "1.18.2-1")
    box.put("gpus", gpus)
    box.put("loaded", loaded)
    proc = box.run(runs["verify"].text)
    assert proc.returncode != 0 and expect in proc.stderr


def test_with_boot_id_takes_only_a_boot_id():
    wait = _runs("driver-only")["reboot-wait"].text
    assert f"readonly BOOT_ID={BOOT_ID_UNSET}\n" in wait
    assert with_boot_id(wait, "hybridgpu-reboot-from-boot-id: $(rm -rf /)\n") == wait
    assert with_boot_id(wait, None) == wait
    assert f"readonly BOOT_ID={NEW_BOOT}\n" in with_boot_id(wait, f"noise\nhybridgpu-reboot-from-boot-id: {NEW_BOOT}\n")


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck not installed")
def test_scripts_are_shellcheck_clean(tmp_path):
    for fixture in ("driver-and-toolkit", "toolkit-only"):
        for phase, run in _runs(fixture).items():
            (tmp_path / f"{fixture}-{phase}.sh").write_text(run.text)
    assert SHELLCHECK is not None
    proc = subprocess.run([SHELLCHECK, *sorted(str(p) for p in tmp_path.glob("*.sh"))], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout
