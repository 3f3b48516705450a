"""GPU failure detection and remediation renderers (hybridgpu.render.gpu_health).

* NVSentinel values: each key set is one the chart reads, with an allowed value
  (tests/fixtures/gpu_health/nvsentinel-keys.yaml: the upstream files and commits read).
* The scripts are shellcheck-clean and run in a stub sandbox (real bash; kubectl, nvidia-smi and
  systemctl stubbed on PATH, each call logged): call order, a second run, a drain that times out, a
  reset that does not bring the GPUs back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from hybridgpu.datafile import dump_yaml
from hybridgpu.inventory.remediation import REPAIR_LABEL, RemediationPolicy
from hybridgpu.render.gpu_health import (
    DRAIN_TIMEOUT_EXIT,
    GPU_FAULT_TAINT,
    NVSENTINEL_VERSION,
    gpu_operator_dcgm_values,
    gpu_reset_script,
    nvsentinel_values,
    remediation_script,
)
from tests.helpers import ROOT

KEYS = yaml.safe_load((ROOT / "tests/fixtures/gpu_health/nvsentinel-keys.yaml").read_text())
BASH = shutil.which("bash")
SHELLCHECK = shutil.which("shellcheck")

POLICIES = {
    "defaults": RemediationPolicy(),
    "gpu-reset": RemediationPolicy(reset="gpu-reset", drain_timeout="1h30m"),
    "reboot": RemediationPolicy(reset="reboot", mark_for_repair=False),
    "cordon-only": RemediationPolicy(drain=False),
    "monitor-only": RemediationPolicy(cordon=False, drain=False),
}


def _dig(values, dotted: str):
    for part in dotted.split("."):
        values = values[part]
    return values


# --------------------------------------------------------------------------- NVSentinel values


@pytest.mark.parametrize("name", POLICIES)
def test_values_use_only_keys_the_chart_reads(name):
    policy = POLICIES[name]
    values = nvsentinel_values(policy, gpu_operator_namespace="gpu-operator")
    conditions = KEYS["chart"]["conditions"]
    # Every global.<module>.enabled is a subchart condition of Chart.yaml.
    assert {f"global.{k}.enabled" for k in values["global"]} <= set(conditions.values())
    for subchart, sub in values.items():
        if subchart == "global":
            continue
        assert subchart in conditions, subchart
        assert _dig(values, conditions[subchart]) is True, f"{subchart} values set but the subchart is off"
        defaults = KEYS["defaults"][subchart]
        top = {k.split(".")[0] for k in defaults}
        assert set(sub) <= top, (subchart, set(sub) - top)
    allowed = KEYS["allowed"]
    assert values["gpu-health-monitor"]["dcgm"]["mode"] in allowed["dcgm.mode"]
    for ruleset in values.get("fault-quarantine", {}).get("ruleSets", []):
        assert set(ruleset) <= set(allowed["ruleset"])
        assert {m["kind"] for m in ruleset["match"]["all"]} <= set(allowed["match.kind"])
        assert ruleset["taint"]["effect"] in allowed["taint.effect"]
    for entry in values.get("node-drainer", {}).get("userNamespaces", []):
        assert entry["mode"] in allowed["userNamespaces.mode"]
    for action in values.get("fault-remediation", {}).get("maintenance", {}).get("actions", {}).values():
        assert set(action) == set(allowed["action"])


def test_policy_switches_the_modules():
    on = {name: nvsentinel_values(p, gpu_operator_namespace="gpu-operator")["global"] for name, p in POLICIES.items()}
    enabled = {name: sorted(k for k, v in g.items() if v["enabled"]) for name, g in on.items()}
    assert enabled["monitor-only"] == ["gpuHealthMonitor"]
    assert enabled["cordon-only"] == ["faultQuarantine", "gpuHealthMonitor", "mongodbStore"]
    assert enabled["defaults"] == ["faultQuarantine", "gpuHealthMonitor", "mongodbStore", "nodeDrainer"]
    assert enabled["gpu-reset"] == enabled["reboot"] == [
        "faultQuarantine", "faultRemediation", "gpuHealthMonitor", "janitor", "janitorProvider", "mongodbStore", "nodeDrainer",
    ]


def test_quarantine_cordons_taints_and_marks_on_a_fatal_gpu_event():
    values = nvsentinel_values(RemediationPolicy(), gpu_operator_namespace="gpu-operator")
    (ruleset,) = values["fault-quarantine"]["ruleSets"]
    assert ruleset["cordon"] == {"shouldCordon": True}
    assert ruleset["taint"] == dict(zip(("key", "value", "effect"), GPU_FAULT_TAINT, strict=True))
    assert ruleset["label"] == {"key": REPAIR_LABEL, "value": "required"}
    assert "event.agent == 'gpu-health-monitor'" in ruleset["match"]["all"][0]["expression"]
    assert "event.isFatal == true" in ruleset["match"]["all"][0]["expression"]
    unmarked = nvsentinel_values(RemediationPolicy(mark_for_repair=False), gpu_operator_namespace="gpu-operator")
    assert "label" not in unmarked["fault-quarantine"]["ruleSets"][0]


def test_drainer_lets_pods_finish_until_the_drain_timeout():
    assert nvsentinel_values(POLICIES["gpu-reset"], gpu_operator_namespace="g")["node-drainer"] == {
        "userNamespaces": [{"name": "*", "mode": "DeleteAfterTimeout"}],
        "deleteAfterTimeoutMinutes": 90,
    }
    short = nvsentinel_values(RemediationPolicy(drain_timeout="90s"), gpu_operator_namespace="g")
    assert short["node-drainer"]["deleteAfterTimeoutMinutes"] == 2  # rounded up


def test_monitor_reads_the_gpu_operators_dcgm_service():
    values = nvsentinel_values(RemediationPolicy(), gpu_operator_namespace="nvidia-system")
    assert values["gpu-health-monitor"]["dcgm"] == {
        "mode": "operator-service",
        "service": {"endpoint": "nvidia-dcgm.nvidia-system.svc", "port": 5555},
    }
    # The GPU Operator creates that Service only with dcgm.enabled (chart default false,
    # NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/values.yaml `dcgm.enabled: false`).
    assert gpu_operator_dcgm_values(RemediationPolicy()) == {"dcgm": {"enabled": True}}
    assert gpu_operator_dcgm_values(RemediationPolicy(detector="none")) == {}
    assert gpu_operator_dcgm_values(None) == {}


def test_values_refuse_what_they_cannot_render():
    with pytest.raises(ValueError, match="detector: nvsentinel"):
        nvsentinel_values(RemediationPolicy(detector="none"), gpu_operator_namespace="gpu-operator")
    with pytest.raises(ValueError, match="DNS-1123"):
        nvsentinel_values(RemediationPolicy(), gpu_operator_namespace="GPU_Operator")


def test_values_are_byte_identical_and_version_pinned():
    first = dump_yaml(nvsentinel_values(POLICIES["gpu-reset"], gpu_operator_namespace="gpu-operator"))
    assert first == dump_yaml(nvsentinel_values(POLICIES["gpu-reset"], gpu_operator_namespace="gpu-operator"))
    assert NVSENTINEL_VERSION.startswith("v") and NVSENTINEL_VERSION.count(".") == 2


# --------------------------------------------------------------------------- scripts


SCRIPTS = {
    **{f"remediate-{name}": remediation_script("gpu-01", p) for name, p in POLICIES.items() if p.cordon},
    "remediate-host-override": remediation_script("gpu-01", RemediationPolicy(reset="reboot"), reset="none"),
    "reset-gpu": gpu_reset_script("gpu-01", 8, "gpu-reset"),
    "reset-reboot": gpu_reset_script("gpu-01", 8, "reboot"),
}


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck not installed")
@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_are_shellcheck_clean(name):
    result = subprocess.run([SHELLCHECK, "-s", "bash", "-"], input=SCRIPTS[name], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_scripts_refuse_bad_input():
    with pytest.raises(ValueError, match="lowercase DNS"):
        remediation_script("gpu-01; reboot", RemediationPolicy())
    with pytest.raises(ValueError, match="cordon: false"):
        remediation_script("gpu-01", POLICIES["monitor-only"])
    with pytest.raises(ValueError, match="reset: none"):
        gpu_reset_script("gpu-01", 8, "none")
    with pytest.raises(ValueError, match="gpu_count"):
        gpu_reset_script("gpu-01", 0, "gpu-reset")


STUB = r"""#!/usr/bin/env bash
name=$(basename "$0")
printf '%s\n' "${name} $*" >>"${SANDBOX}/calls"
S=${SANDBOX}/state
case "${name}" in
  kubectl)
    case "$1" in
      get) [[ -e ${S}/node ]] || { echo 'Error from server (NotFound): nodes "gpu-01" not found' >&2; exit 1; }
           echo "node/gpu-01" ;;
      cordon) touch "${S}/cordoned"; echo "node/gpu-01 cordoned" ;;
      label) touch "${S}/labelled" ;;
      annotate) printf '%s\n' "${@: -1}" >"${S}/annotation" ;;
      drain)
        if [[ -n ${DRAIN_HANGS:-} ]]; then echo "error: timed out waiting for the condition" >&2; exit 1; fi
        touch "${S}/drained" ;;
    esac ;;
  nvidia-smi)
    case "$1" in
      --query-compute-apps=pid) [[ -n ${GPU_PIDS:-} ]] && printf '%s\n' ${GPU_PIDS} ;;
      --gpu-reset) [[ -z ${RESET_FAILS:-} ]] || exit 1 ;;
      -L) for ((i = 0; i < ${GPUS_AFTER_RESET:-8}; i++)); do echo "GPU ${i}: NVIDIA H100 80GB HBM3 (UUID: GPU-${i})"; done ;;
    esac ;;
esac
exit 0
"""


class Sandbox:
    """A PATH of logging stubs in front of the real one, and a state directory."""

    def __init__(self, base: Path, *, node: bool = True):
        self.base = base
        (base / "bin").mkdir(parents=True)
        (base / "state").mkdir()
        for name in ("kubectl", "nvidia-smi", "systemctl"):
            stub = base / "bin" / name
            stub.write_text(STUB)
            stub.chmod(0o755)
        if node:
            (base / "state" / "node").touch()

    def run(self, script: str, **env: str) -> subprocess.CompletedProcess[str]:
        if os.geteuid() != 0:  # the reset script insists on root; the sandbox is not
            script = script.replace("[[ ${EUID} -eq 0 ]]", "true")
        full = {"PATH": f"{self.base / 'bin'}:{os.environ['PATH']}", "SANDBOX": str(self.base), **env}
        return subprocess.run([BASH, "-c", script], capture_output=True, text=True, env=full, check=False)

    def calls(self) -> list[str]:
        path = self.base / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def state(self, name: str) -> str | None:
        path = self.base / "state" / name
        return path.read_text().strip() if path.exists() else None


pytestmark_bash = pytest.mark.skipif(BASH is None, reason="bash not installed")


@pytestmark_bash
def test_remediation_runs_cordon_mark_drain_in_order_and_again(tmp_path):
    box = Sandbox(tmp_path)
    script = remediation_script("gpu-01", RemediationPolicy(drain_timeout="45m"))
    first = box.run(script)
    assert first.returncode == 0, first.stderr
    assert box.calls() == [
        "kubectl get node gpu-01 -o name",
        "kubectl cordon gpu-01",
        f"kubectl label node gpu-01 --overwrite {REPAIR_LABEL}=required",
        "kubectl drain gpu-01 --ignore-daemonsets --delete-emptydir-data --timeout=45m",
        "kubectl annotate node gpu-01 --overwrite hybridgpu.io/drain=done",
    ]
    assert "next: hybridgpu inventory retire gpu-01" in first.stderr
    # A second run does the same idempotent calls and succeeds: safe to re-run after an interruption.
    second = box.run(script)
    assert second.returncode == 0, second.stderr
    assert box.calls()[5:] == box.calls()[:5]
    assert box.state("annotation") == "hybridgpu.io/drain=done"


@pytestmark_bash
def test_drain_timeout_leaves_the_node_cordoned_marked_and_unreset(tmp_path):
    box = Sandbox(tmp_path)
    result = box.run(remediation_script("gpu-01", RemediationPolicy(reset="gpu-reset")), DRAIN_HANGS="1")
    assert result.returncode == DRAIN_TIMEOUT_EXIT
    assert "did not finish within 30m" in result.stderr and "nothing was reset" in result.stderr
    assert "stays cordoned and marked for repair" in result.stderr
    assert box.state("cordoned") == "" and box.state("labelled") == ""
    assert box.state("annotation") == "hybridgpu.io/drain=timeout" and box.state("drained") is None
    assert not any(c.startswith(("nvidia-smi", "systemctl")) for c in box.calls())
    assert "next:" not in result.stderr
    # Once the blocking pod is gone, the re-run completes the drain and names the reset step.
    again = box.run(remediation_script("gpu-01", RemediationPolicy(reset="gpu-reset")))
    assert again.returncode == 0 and box.state("annotation") == "hybridgpu.io/drain=done"
    assert "run gpu-reset.sh on gpu-01" in again.stderr


@pytestmark_bash
def test_missing_node_is_nothing_to_do(tmp_path):
    box = Sandbox(tmp_path, node=False)
    result = box.run(remediation_script("gpu-01", RemediationPolicy()))
    assert result.returncode == 0 and "not found; nothing to remediate" in result.stderr
    assert box.calls() == ["kubectl get node gpu-01 -o name"]


@pytestmark_bash
def test_cordon_only_policy_never_drains(tmp_path):
    box = Sandbox(tmp_path)
    result = box.run(remediation_script("gpu-01", RemediationPolicy(drain=False, mark_for_repair=False)))
    assert result.returncode == 0, result.stderr
    assert box.calls() == ["kubectl get node gpu-01 -o name", "kubectl cordon gpu-01"]


@pytestmark_bash
def test_gpu_reset_checks_idle_gpus_then_counts_them(tmp_path):
    box = Sandbox(tmp_path)
    result = box.run(gpu_reset_script("gpu-01", 8, "gpu-reset"))
    assert result.returncode == 0, result.stderr
    assert box.calls() == ["nvidia-smi --query-compute-apps=pid --format=csv,noheader", "nvidia-smi --gpu-reset", "nvidia-smi -L"]
    assert "8 of 8 GPUs present" in result.stderr


@pytestmark_bash
def test_gpu_reset_refuses_busy_gpus(tmp_path):
    box = Sandbox(tmp_path)
    result = box.run(gpu_reset_script("gpu-01", 8, "gpu-reset"), GPU_PIDS="4242 4343")
    assert result.returncode == 1
    assert "processes still hold a GPU (pids: 4242 4343)" in result.stderr
    assert box.calls() == ["nvidia-smi --query-compute-apps=pid --format=csv,noheader"]


@pytestmark_bash
def test_gpu_that_stays_off_the_bus_means_rma_not_reboot(tmp_path):
    # Xid 79 ("GPU has fallen off the bus"): after the reset nvidia-smi lists 7 of 8.
    box = Sandbox(tmp_path)
    result = box.run(gpu_reset_script("gpu-01", 8, "gpu-reset"), GPUS_AFTER_RESET="7")
    assert result.returncode == 1
    assert "lists 7 of 8 GPUs" in result.stderr and "hybridgpu inventory retire gpu-01" in result.stderr
    assert not any(c.startswith("systemctl") for c in box.calls())
    failed = Sandbox(tmp_path / "b")
    assert failed.run(gpu_reset_script("gpu-01", 8, "gpu-reset"), RESET_FAILS="1").returncode == 1


@pytestmark_bash
def test_reboot_policy_reboots_once_idle(tmp_path):
    box = Sandbox(tmp_path)
    result = box.run(gpu_reset_script("gpu-01", 8, "reboot"))
    assert result.returncode == 0, result.stderr
    assert box.calls() == ["nvidia-smi --query-compute-apps=pid --format=csv,noheader", "systemctl reboot"]
