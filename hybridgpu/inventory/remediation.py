"""What happens to an on-prem GPU host whose GPUs fail: the ``remediation`` section of the ``Site`` document.

The operator sets the policy once per site; a host may narrow the reset step (``hosts[].remediation``):

* ``detector``: ``nvsentinel`` installs NVIDIA NVSentinel's GPU health monitor (DCGM health
  watches: Xid, double-bit ECC, row-remap failures, NVLink and PCIe errors, thermal) and its
  fault-quarantine module, which sets a node condition per failed check and cordons/taints the
  node (:mod:`hybridgpu.render.gpu_health`); ``none`` installs nothing (the scripts below still
  render, for a person or another detector to run).
* ``cordon``, ``drain``, ``drainTimeout``: the node is made unschedulable, then its pods are
  evicted through the Eviction API (``kubectl drain``), so PodDisruptionBudgets hold; a Kueue
  workload's job controller recreates the evicted pods elsewhere, and with Kueue's
  ``waitForPodsReady.recoveryTimeout`` (Kueue configuration API, ``WaitForPodsReady.RecoveryTimeout``:
  measured from the workload's last ``PodsReady=false`` while admitted and running) a gang whose
  replacement pods cannot be scheduled is suspended and requeued.
* ``reset``: after a complete drain, ``gpu-reset`` (``nvidia-smi --gpu-reset``: every GPU idle)
  or ``reboot`` the host; ``none`` leaves it to the RMA runbook (docs/gpu-health.md).
* ``markForRepair``: label the node ``hybridgpu.io/repair=required`` so the runbook and
  ``hybridgpu inventory retire`` find it.

Pure: imports no other inventory module (the models import this one).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.modelbase import Model

__all__ = ["REPAIR_LABEL", "HostRemediation", "RemediationPolicy", "ResetAction"]

#: The node label that marks a host for repair (value ``required``).
REPAIR_LABEL = "hybridgpu.io/repair"

#: What follows a complete drain: nothing, a GPU reset (``nvidia-smi --gpu-reset``) or a reboot.
ResetAction = Literal["none", "gpu-reset", "reboot"]

#: ``kubectl drain --timeout``: hours, minutes and/or seconds, e.g. ``30m``, ``1h30m``; not zero.
DrainTimeout = Annotated[str, StringConstraints(pattern=r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$", min_length=2, max_length=16)]


class RemediationPolicy(Model):
    """``remediation`` of the ``Site`` document: how a host with failed GPUs is detected, drained, reset and marked."""

    detector: Literal["nvsentinel", "none"] = Field(
        default="nvsentinel",
        description="GPU health detector installed on the gpu-workers: `nvsentinel` (NVIDIA NVSentinel: DCGM health checks as "
        "node conditions, cordon and taint on a fatal error) or `none` (nothing installed; the scripts still render). "
        "Default: `nvsentinel`.",
    )
    cordon: bool = Field(
        default=True, strict=True, description="Cordon (make unschedulable) a host with a fatal GPU error. Default: `true`."
    )
    drain: bool = Field(
        default=True,
        strict=True,
        description="Evict the host's pods after cordoning (`kubectl drain`: the Eviction API, so PodDisruptionBudgets hold; a "
        "Kueue-managed job's controller recreates its pods, and with Kueue's `waitForPodsReady.recoveryTimeout` a gang whose "
        "replacement pods cannot be scheduled is suspended and requeued). Needs `cordon: true`. Default: `true`.",
    )
    drain_timeout: DrainTimeout = Field(
        default="30m",
        description="How long the drain may take (`kubectl drain --timeout`), e.g. `30m`, `1h30m`; on timeout the host stays "
        "cordoned and marked, and nothing is reset. Default: `30m`.",
    )
    reset: ResetAction = Field(
        default="none",
        description="After a complete drain: `gpu-reset` (`nvidia-smi --gpu-reset`, all GPUs idle), `reboot`, or `none` "
        "(the RMA runbook takes over). Needs `drain: true` unless `none`. Default: `none`.",
    )
    mark_for_repair: bool = Field(
        default=True,
        strict=True,
        description="Label the node `hybridgpu.io/repair=required` when it is cordoned for a GPU fault. Default: `true`.",
    )

    @field_validator("drain_timeout")
    @classmethod
    def _not_zero(cls, value: str) -> str:
        if not any(ch in "123456789" for ch in value):
            raise ValueError(f"{value!r} is no time at all; give the drain a timeout such as 30m (long jobs may need 1h)")
        return value

    @model_validator(mode="after")
    def _order(self) -> RemediationPolicy:
        if self.drain and not self.cordon:
            raise ValueError("`drain: true` needs `cordon: true` (a drained node must not take new pods); set `cordon: true` or `drain: false`")
        if self.reset != "none" and not self.drain:
            raise ValueError(f"`reset: {self.reset}` needs `drain: true` (a GPU is reset or a host rebooted only once no pod uses it)")
        return self


class HostRemediation(Model):
    """``hosts[].remediation``: what this host allows of the site's policy."""

    reset: ResetAction = Field(
        description="This host's reset step, replacing the site's `remediation.reset` (e.g. `none` for a host whose BMC "
        "cannot power-cycle it or whose GPUs share an NVSwitch fabric with others). Required."
    )
