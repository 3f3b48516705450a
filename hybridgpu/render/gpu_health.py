"""GPU failure detection and remediation on-prem: NVIDIA NVSentinel's Helm values and the remediation scripts.

Renders, from the inventory's ``remediation`` policy (:class:`hybridgpu.inventory.remediation.RemediationPolicy`):

* :func:`nvsentinel_values`: values of the NVSentinel chart (``oci://ghcr.io/nvidia/nvsentinel``,
  :data:`NVSENTINEL_VERSION`): the GPU health monitor reading the GPU Operator's standalone DCGM
  (``dcgm.mode: operator-service``), the fault-quarantine ruleset that cordons, taints
  (:data:`GPU_FAULT_TAINT`) and marks (:data:`~hybridgpu.inventory.remediation.REPAIR_LABEL`) a node
  on a fatal GPU health event, the node drainer, and for ``reset`` the fault-remediation/janitor
  modules (GPU reset or reboot as a privileged Job on the node, ``janitor-provider.csp.provider: generic``).
* :func:`gpu_operator_dcgm_values`: the GPU Operator values NVSentinel needs (``dcgm.enabled: true``:
  the standalone ``nv-hostengine`` and its ``nvidia-dcgm`` Service; the chart default is ``false``,
  DCGM embedded in dcgm-exporter, which NVSentinel cannot reach).
* :func:`remediation_script`: the same steps as a script a person runs where ``kubectl`` reaches the
  cluster (cordon, mark, drain with a timeout), for ``detector: none`` or a detector that only reports.
* :func:`gpu_reset_script`: the reset step on the host itself (root): ``nvidia-smi --gpu-reset`` once
  no process holds a GPU, or a reboot.

Upstream facts (NVIDIA/NVSentinel, chart v1.19.0 as its README's ``NVSENTINEL_VERSION``; values read in
the stored copy of the chart sources, ``distros/kubernetes/nvsentinel/``, 2026-11-26):

* ``Chart.yaml``: each module is a subchart behind ``global.<module>.enabled``
  (``gpuHealthMonitor``, ``faultQuarantine``, ``nodeDrainer``, ``faultRemediation``, ``janitor``,
  ``janitorProvider``, ``mongodbStore``).
* ``charts/gpu-health-monitor/values.yaml``: ``dcgm.mode`` (``operator-service`` |
  ``external-hostengine`` | ``embedded-mode``), ``dcgm.service.endpoint`` default
  ``nvidia-dcgm.gpu-operator.svc``, port 5555.
* ``charts/fault-quarantine/values.yaml``: ``ruleSets[]`` with ``match.all[]`` CEL expressions,
  ``cordon.shouldCordon``, optional ``taint {key, value, effect}`` and ``label {key, value}`` (removed
  when every tracked event on the node recovered); ``circuitBreaker`` (default 50 % of GPU nodes in 5 min).
* ``charts/node-drainer/values.yaml``: ``userNamespaces[] {name, mode}`` with modes ``Immediate``,
  ``AllowCompletion``, ``DeleteAfterTimeout``; ``deleteAfterTimeoutMinutes`` (default 60).
* ``values-remediation.yaml``: the modules above plus ``mongodbStore`` (the event store the
  quarantine, drainer and remediation modules read), ``janitor-provider.csp.provider: generic`` and the
  ``COMPONENT_RESET`` -> ``GPUReset`` maintenance action.

Pure: no Pulumi.
"""

from __future__ import annotations

import shlex
from typing import Any

from hybridgpu.inventory.remediation import REPAIR_LABEL, RemediationPolicy, ResetAction
from hybridgpu.k8s import GPU_TAINT, is_dns1123_subdomain

__all__ = [
    "DCGM_PORT",
    "GPU_FAULT_TAINT",
    "NVSENTINEL_CHART",
    "NVSENTINEL_NAMESPACE",
    "NVSENTINEL_VERSION",
    "gpu_operator_dcgm_values",
    "gpu_reset_script",
    "nvsentinel_values",
    "remediation_script",
]

#: The NVSentinel chart (OCI) and the release pinned (NVIDIA/NVSentinel README, ``NVSENTINEL_VERSION``).
NVSENTINEL_CHART = "oci://ghcr.io/nvidia/nvsentinel"
NVSENTINEL_VERSION = "v1.19.0"
NVSENTINEL_NAMESPACE = "nvsentinel"
#: nv-hostengine's port (gpu-health-monitor ``dcgm.service.port``).
DCGM_PORT = 5555
#: The taint fault-quarantine puts on a node with a fatal GPU health event: (key, value, effect).
GPU_FAULT_TAINT = ("hybridgpu.io/gpu-fault", "fatal", "NoSchedule")
#: Exit code of :func:`remediation_script` when the drain did not finish in time.
DRAIN_TIMEOUT_EXIT = 3

# The upstream default's node exclusion (fault-quarantine values.yaml): a node labelled
# k8saas.nvidia.com/ManagedByNVSentinel=false or nvsentinel.dgxc.nvidia.com/managed=false is left alone.
_NODE_NOT_EXCLUDED = (
    "!('k8saas.nvidia.com/ManagedByNVSentinel' in node.metadata.labels && "
    "node.metadata.labels['k8saas.nvidia.com/ManagedByNVSentinel'] == \"false\") && "
    "!('nvsentinel.dgxc.nvidia.com/managed' in node.metadata.labels && "
    "node.metadata.labels['nvsentinel.dgxc.nvidia.com/managed'] == \"false\")"
)


def _minutes(duration: str) -> int:
    """Whole minutes (rounded up, at least 1) of a ``1h30m``-style duration."""
    seconds, number = 0, ""
    for ch in duration:
        if ch.isdigit():
            number += ch
        else:
            seconds += int(number) * {"h": 3600, "m": 60, "s": 1}[ch]
            number = ""
    return max(1, -(-seconds // 60))


def gpu_operator_dcgm_values(policy: RemediationPolicy | None) -> dict[str, Any]:
    """GPU Operator values the detector needs: ``{"dcgm": {"enabled": True}}`` with NVSentinel, else ``{}``.

    NVSentinel's GPU health monitor connects to DCGM's ``nvidia-dcgm`` Service (``operator-service``
    mode), which the GPU Operator creates only with ``dcgm.enabled: true`` (chart default ``false``,
    NVIDIA/gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml``); dcgm-exporter then uses that
    hostengine too, so one DCGM watches each GPU.
    """
    if policy is None or policy.detector != "nvsentinel":
        return {}
    return {"dcgm": {"enabled": True}}


def nvsentinel_values(policy: RemediationPolicy, *, gpu_operator_namespace: str) -> dict[str, Any]:
    """Values of the NVSentinel chart for ``policy`` (``detector: nvsentinel``).

    Args:
        policy: the site's remediation policy.
        gpu_operator_namespace: where the GPU Operator (and its ``nvidia-dcgm`` Service) runs.

    Returns:
        The values: monitor always; quarantine with ``cordon``; drainer with ``drain`` (pods may finish
        until ``drainTimeout``, then are deleted); remediation, janitor and the generic (on-node)
        janitor provider with ``reset`` (``gpu-reset`` adds the ``COMPONENT_RESET`` action).

    Raises:
        ValueError: ``policy.detector`` is not ``nvsentinel``, or a malformed namespace.
    """
    if policy.detector != "nvsentinel":
        raise ValueError(f"nvsentinel_values needs `detector: nvsentinel`, not {policy.detector!r}")
    if not is_dns1123_subdomain(gpu_operator_namespace) or "." in gpu_operator_namespace:
        raise ValueError(f"namespace {gpu_operator_namespace!r} is not a DNS-1123 label")
    resets = policy.reset != "none"
    values: dict[str, Any] = {
        "global": {
            "gpuHealthMonitor": {"enabled": True},
            "faultQuarantine": {"enabled": policy.cordon},
            "nodeDrainer": {"enabled": policy.drain},
            "faultRemediation": {"enabled": resets},
            "janitor": {"enabled": resets},
            "janitorProvider": {"enabled": resets},
            # The quarantine, drainer and remediation modules read the events from this store.
            "mongodbStore": {"enabled": policy.cordon},
        },
        "gpu-health-monitor": {
            "dcgm": {
                "mode": "operator-service",
                "service": {"endpoint": f"nvidia-dcgm.{gpu_operator_namespace}.svc", "port": DCGM_PORT},
            },
            # The monitor runs on every GPU node, tainted ones included.
            "tolerations": [{"key": GPU_TAINT.key, "operator": "Exists", "effect": GPU_TAINT.effect}],
        },
    }
    if policy.cordon:
        key, value, effect = GPU_FAULT_TAINT
        ruleset: dict[str, Any] = {
            "enabled": True,
            "version": "1",
            "name": "hybridgpu GPU fatal error",
            "match": {
                "all": [
                    {"kind": "HealthEvent", "expression": "event.agent == 'gpu-health-monitor' && event.componentClass == 'GPU' && event.isFatal == true"},
                    {"kind": "Node", "expression": _NODE_NOT_EXCLUDED},
                ]
            },
            "cordon": {"shouldCordon": True},
            "taint": {"key": key, "value": value, "effect": effect},
        }
        if policy.mark_for_repair:
            ruleset["label"] = {"key": REPAIR_LABEL, "value": "required"}
        values["fault-quarantine"] = {"ruleSets": [ruleset]}
    if policy.drain:
        values["node-drainer"] = {
            "userNamespaces": [{"name": "*", "mode": "DeleteAfterTimeout"}],
            "deleteAfterTimeoutMinutes": _minutes(policy.drain_timeout),
        }
    if resets:
        values["janitor-provider"] = {"csp": {"provider": "generic"}}
    if policy.reset == "gpu-reset":
        values["fault-remediation"] = {
            "maintenance": {
                "actions": {
                    "COMPONENT_RESET": {
                        "apiGroup": "janitor.dgxc.nvidia.com",
                        "version": "v1alpha1",
                        "kind": "GPUReset",
                        "scope": "Cluster",
                        "completeConditionType": "Complete",
                        "templateFileName": "gpureset-template.yaml",
                        "equivalenceGroup": "reset",
                        "impactedEntityScope": "GPU_UUID",
                        "supersedingEquivalenceGroups": ["restart"],
                    }
                },
                "templates": {
                    "gpureset-template.yaml": (
                        "apiVersion: {{ .ApiGroup }}/{{ .Version }}\n"
                        "kind: GPUReset\n"
                        "metadata:\n"
                        "  name: maintenance-{{ .HealthEvent.NodeName }}-{{ .HealthEventID }}\n"
                        "spec:\n"
                        "  nodeName: {{ .HealthEvent.NodeName }}\n"
                        "  selector:\n"
                        "    uuids:\n"
                        "      - {{ .ImpactedEntityScopeValue }}\n"
                    )
                },
            }
        }
    return values


_HEADER = """\
#!/usr/bin/env bash
# {title}
# Generated by hybridgpu.render.gpu_health. {note}
set -euo pipefail

"""

_LOG = """\
log() { printf '[hybridgpu] %s\\n' "$*" >&2; }
die() {
  log "ERROR: $1"
  exit "${2:-1}"
}
"""


def _assign(values: dict[str, str], body: str) -> str:
    """``readonly`` lines for the values ``body`` reads (an unused one is a shellcheck warning)."""
    return "".join(f"readonly {name}={shlex.quote(value)}\n" for name, value in values.items() if "${" + name + "}" in body)


_REMEDIATE_FIND = """\
if ! out=$(kubectl get node "${NODE_NAME}" -o name 2>&1); then
  if [[ ${out} == *NotFound* || ${out} == *"not found"* ]]; then
    log "node ${NODE_NAME} not found; nothing to remediate"
    exit 0
  fi
  die "cannot read node ${NODE_NAME}: ${out}"
fi
"""
_REMEDIATE_CORDON = """\
log "cordon ${NODE_NAME}"
kubectl cordon "${NODE_NAME}"
"""
_REMEDIATE_MARK = """\
log "mark ${NODE_NAME} for repair (${REPAIR_LABEL}=required)"
kubectl label node "${NODE_NAME}" --overwrite "${REPAIR_LABEL}=required"
"""
_REMEDIATE_DRAIN = """\
log "drain ${NODE_NAME} (timeout ${DRAIN_TIMEOUT}; PodDisruptionBudgets are respected)"
if ! kubectl drain "${NODE_NAME}" --ignore-daemonsets --delete-emptydir-data --timeout="${DRAIN_TIMEOUT}"; then
  kubectl annotate node "${NODE_NAME}" --overwrite "${DRAIN_ANNOTATION}=timeout"
  die "drain of ${NODE_NAME} did not finish within ${DRAIN_TIMEOUT} (a PodDisruptionBudget or a pod that does not stop): the node stays cordoned${MARK_TEXT}, nothing was reset; see 'kubectl get pods -A --field-selector spec.nodeName=${NODE_NAME}', then re-run" {timeout_exit}
fi
kubectl annotate node "${NODE_NAME}" --overwrite "${DRAIN_ANNOTATION}=done"
"""
_REMEDIATE_NEXT = {
    "none": 'log "drained; next: hybridgpu inventory retire ${NODE_NAME} and the RMA runbook (docs/gpu-health.md)"\n',
    "gpu-reset": 'log "drained; next: run gpu-reset.sh on ${NODE_NAME} as root, then kubectl uncordon ${NODE_NAME} once nvidia-smi shows every GPU"\n',
    "reboot": 'log "drained; next: run gpu-reset.sh on ${NODE_NAME} as root (it reboots the host), then kubectl uncordon ${NODE_NAME}"\n',
}
_DONE = 'log "cordoned${MARK_TEXT}; no drain in this policy"\n'


def remediation_script(hostname: str, policy: RemediationPolicy, *, reset: ResetAction | None = None) -> str:
    """The policy's cluster-side steps for ``hostname`` as a script (run where ``kubectl`` reaches the cluster).

    Steps, each safe to repeat: cordon; label ``hybridgpu.io/repair=required`` (``markForRepair``);
    ``kubectl drain --timeout=<drainTimeout>`` (the Eviction API: PodDisruptionBudgets hold). On a
    drain timeout the node is annotated ``hybridgpu.io/drain=timeout`` and the script exits
    :data:`DRAIN_TIMEOUT_EXIT` without any reset; after a complete drain it is annotated
    ``hybridgpu.io/drain=done`` and the script names the next step (``gpu-reset.sh`` on the host or
    the RMA runbook). A node that does not exist is a success with nothing done.

    Args:
        hostname: the Node name.
        policy: the site's remediation policy.
        reset: the host's own reset step (``hosts[].remediation.reset``), replacing ``policy.reset``.

    Raises:
        ValueError: malformed hostname, or a policy without ``cordon`` (nothing to do).
    """
    if not is_dns1123_subdomain(hostname):
        raise ValueError(f"hostname {hostname!r} must be a lowercase DNS subdomain")
    if not policy.cordon:
        raise ValueError("the policy has `cordon: false`: there is no remediation step to script")
    action = reset if reset is not None else policy.reset
    header = _HEADER.format(title=f"hybridgpu: remediate GPU failure on {hostname}", note="Safe to re-run.")
    values = {
        "NODE_NAME": hostname,
        "DRAIN_TIMEOUT": policy.drain_timeout,
        "REPAIR_LABEL": REPAIR_LABEL,
        "DRAIN_ANNOTATION": "hybridgpu.io/drain",
        "MARK_TEXT": " and marked for repair" if policy.mark_for_repair else "",
    }
    body = _REMEDIATE_FIND + _REMEDIATE_CORDON + (_REMEDIATE_MARK if policy.mark_for_repair else "")
    if policy.drain:
        body += _REMEDIATE_DRAIN.replace("{timeout_exit}", str(DRAIN_TIMEOUT_EXIT)) + _REMEDIATE_NEXT[action]
    else:
        body += _DONE
    return header + _assign(values, body) + "\n" + _LOG + body


_RESET_BODY = """\
[[ ${EUID} -eq 0 ]] || die "run as root on ${NODE_NAME}"
busy=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader || true)
if [[ -n ${busy} ]]; then
  die "processes still hold a GPU (pids: ${busy//$'\\n'/ }); drain the node first (remediate.sh)"
fi
"""
_RESET_GPU = """\
log "reset every GPU of ${NODE_NAME} (nvidia-smi --gpu-reset)"
if nvidia-smi --gpu-reset; then
  found=$(nvidia-smi -L | grep -c '^GPU ' || true)
  if [[ ${found} -eq ${GPU_COUNT} ]]; then
    log "reset done: ${found} of ${GPU_COUNT} GPUs present; uncordon the node when its workloads may return"
    exit 0
  fi
  log "after the reset nvidia-smi lists ${found} of ${GPU_COUNT} GPUs"
else
  log "nvidia-smi --gpu-reset failed"
fi
"""
_RESET_FALLBACK = {
    "gpu-reset": 'die "the reset did not bring every GPU back; this host may not be rebooted by policy: hybridgpu inventory retire ${NODE_NAME} (RMA)"\n',
    "reboot": 'log "reboot ${NODE_NAME}"\nsystemctl reboot\n',
}


def gpu_reset_script(hostname: str, gpu_count: int, reset: ResetAction) -> str:
    """The host-side reset step (run as root on the host, after :func:`remediation_script` drained it).

    Refuses while any process holds a GPU (``nvidia-smi --query-compute-apps``). ``gpu-reset``:
    ``nvidia-smi --gpu-reset``, then checks that ``nvidia-smi -L`` lists ``gpu_count`` GPUs (a GPU
    that fell off the bus, Xid 79, may not come back: then the script fails and names the RMA step).
    ``reboot``: ``systemctl reboot``.

    Raises:
        ValueError: malformed hostname, a count below 1, or ``reset: none`` (nothing to script).
    """
    if not is_dns1123_subdomain(hostname):
        raise ValueError(f"hostname {hostname!r} must be a lowercase DNS subdomain")
    if gpu_count < 1:
        raise ValueError(f"gpu_count must be >= 1, got {gpu_count}")
    if reset == "none":
        raise ValueError("`reset: none`: there is no reset step to script (the RMA runbook takes over)")
    header = _HEADER.format(title=f"hybridgpu: GPU {reset} on {hostname}", note="Run as root on the host after the drain.")
    body = _RESET_BODY + (_RESET_GPU if reset == "gpu-reset" else "") + _RESET_FALLBACK[reset]
    return header + _assign({"NODE_NAME": hostname, "GPU_COUNT": str(gpu_count)}, body) + "\n" + _LOG + body
