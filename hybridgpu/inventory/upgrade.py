"""Upgrades of an on-prem cluster: the ``upgrades`` section of the ``Site`` document and the upgrade plan (pure).

* :class:`UpgradePolicy` (``upgrades``): how long a node's drain may take during an upgrade, the
  scheduled etcd snapshots on the control planes (:class:`EtcdSnapshots`: systemd ``OnCalendar``
  schedule, how many to keep, where), and the GPU Operator's driver upgrade policy
  (:class:`GpuDriverUpgradePolicy`, the chart's ``driver.upgradePolicy``), and the host-installed NVIDIA driver
  and container toolkit ``pulumi up`` moves on the GPU workers (:class:`NvidiaHostUpgrade`, ``upgrades.nvidia``;
  the order: :func:`plan_nvidia_upgrade`; which hosts are NVSwitch systems whose fabric manager moves with the driver:
  :data:`NVSWITCH_BOARDS`).
* :func:`plan_upgrade`: the order in which a Kubernetes upgrade moves the hosts (an etcd snapshot on
  the first control plane, then per minor version the control planes, first one ``kubeadm upgrade
  apply`` and the others ``kubeadm upgrade node``, then the workers one at a time), and the checks
  made before anything starts (:class:`UpgradeCheck`). The scripts each step runs are rendered by
  :mod:`hybridgpu.render.upgrade`; ``hybridgpu inventory upgrade-plan`` prints the plan.

Upstream facts the plan relies on:

* kubeadm upgrades the control plane one minor version at a time:
  ``MaximumAllowedMinorVersionUpgradeSkew = 1`` in kubernetes/kubernetes
  ``cmd/kubeadm/app/phases/upgrade/policy.go`` (``EnforceVersionPolicies``: "Specified version to
  upgrade to ... is too high; kubeadm can upgrade only 1 minor version at a time", mandatory for a
  released version). Since kubeadm v1.29 it tolerates kubelets three minors older
  (``MaximumAllowedMinorVersionKubeletSkew`` 3, kubernetes/kubernetes#120825).
* Kubernetes "Version Skew Policy" (kubernetes.io/releases/version-skew-policy, read 2026-11-26):
  ``kubelet`` must not be newer than ``kube-apiserver`` and may be up to three minor versions
  older; ``kubectl`` within one minor version of ``kube-apiserver``; in an HA cluster the
  ``kube-apiserver`` instances differ by at most one minor version.

Pure: imports no other inventory module but remediation's drain timeout (the models import this one, so
the plan reads the :class:`~hybridgpu.inventory.models.Inventory` it is given through the :class:`PlanInput`
protocol, which it satisfies).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.errors import FieldError, Issue
from hybridgpu.inventory.remediation import DrainTimeout
from hybridgpu.modelbase import Model

__all__ = [
    "KUBELET_MAX_MINOR_SKEW",
    "KUBEADM_MAX_MINOR_STEP",
    "DriverDrain",
    "DriverPodDeletion",
    "DriverWaitForCompletion",
    "EtcdSnapshots",
    "GpuDriverUpgradePolicy",
    "HostDriver",
    "KubernetesUpgrade",
    "NVSWITCH_BOARDS",
    "NodeUpgrade",
    "NvidiaHostUpgrade",
    "NvidiaNode",
    "NvidiaUpgradePlan",
    "PlanInput",
    "UpgradeCheck",
    "UpgradePlan",
    "UpgradePlanError",
    "UpgradePolicy",
    "UpgradeStep",
    "needs_fabric_manager",
    "parse_version",
    "plan_nvidia_upgrade",
    "plan_upgrade",
]

#: kubeadm's ``MaximumAllowedMinorVersionUpgradeSkew`` (cmd/kubeadm/app/phases/upgrade/policy.go).
KUBEADM_MAX_MINOR_STEP = 1
#: How many minor versions a kubelet may lag kube-apiserver (Version Skew Policy; kubeadm >= 1.29).
KUBELET_MAX_MINOR_SKEW = 3

# --------------------------------------------------------------------------- the `upgrades` section

#: A systemd calendar event as ``OnCalendar=`` takes it: a shorthand (``hourly``, ``daily``, ``weekly``...)
#: or ``[weekday] date time`` such as ``*-*-* 02:00:00`` or ``Mon..Fri *-*-* 01:30`` (systemd.time(7)).
#: Checked for shape only (digits, ``*``, ``-:.,/~`` and weekday names); ``systemd-analyze calendar`` is the judge.
_CALENDAR = re.compile(
    r"^(minutely|hourly|daily|weekly|monthly|yearly|quarterly|semiannually|"
    r"((Mon|Tue|Wed|Thu|Fri|Sat|Sun)([.,](Mon|Tue|Wed|Thu|Fri|Sat|Sun)|\.\.(Mon|Tue|Wed|Thu|Fri|Sat|Sun))* )?"
    r"[0-9*][0-9*,./~-]* [0-9*][0-9*,:./-]*)$"
)
#: An absolute path without spaces, quotes or ``..`` (it is written into a systemd unit and a script).
_ABS_PATH = re.compile(r"^/[A-Za-z0-9._/-]*$")


class EtcdSnapshots(Model):
    """``upgrades.etcdSnapshots``: scheduled ``etcdctl snapshot save`` on every control plane (a systemd timer)."""

    enabled: bool = Field(default=True, strict=True, description="Install the snapshot timer on the control planes. Default: `true`.")
    schedule: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(
        default="daily",
        description="When to take a snapshot: a systemd `OnCalendar=` value (systemd.time(7)), e.g. `daily`, `hourly`, "
        "`*-*-* 02:00:00`. Default: `daily` (midnight; the timer adds up to 30 minutes of random delay).",
    )
    retention: int = Field(
        default=7, strict=True, ge=1, le=1000, description="How many scheduled snapshots each control plane keeps (oldest deleted first). Default: 7."
    )
    directory: Annotated[str, StringConstraints(max_length=255)] = Field(
        default="/var/backups/hybridgpu/etcd",
        description="Where the snapshots are written on each control plane (an absolute path, mode 0700; not under "
        "`/var/lib/etcd`, which a restore replaces). Default: `/var/backups/hybridgpu/etcd`.",
    )

    @field_validator("schedule")
    @classmethod
    def _calendar(cls, value: str) -> str:
        if not _CALENDAR.match(value):
            raise ValueError(
                f"{value!r} is not a systemd calendar event; write e.g. daily, hourly or '*-*-* 02:00:00' (systemd.time(7), OnCalendar=)"
            )
        return value

    @field_validator("directory")
    @classmethod
    def _directory(cls, value: str) -> str:
        if not _ABS_PATH.match(value) or "/../" in value + "/" or value.rstrip("/") == "":
            raise ValueError(f"{value!r} is not an absolute directory such as /var/backups/hybridgpu/etcd (no spaces, quotes or '..')")
        if value.rstrip("/") == "/var/lib/etcd" or value.startswith("/var/lib/etcd/"):
            raise ValueError(f"{value!r} is inside etcd's data directory, which a restore replaces; use e.g. /var/backups/hybridgpu/etcd")
        return value.rstrip("/")


class DriverDrain(Model):
    """``upgrades.gpuDriver.drain``: the GPU Operator's ``driver.upgradePolicy.drain``."""

    enable: bool = Field(default=False, strict=True, description="Drain the node (`kubectl drain`) before the driver reloads. Default: `false`.")
    force: bool = Field(default=False, strict=True, description="Also evict pods without a controller. Default: `false`.")
    pod_selector: Annotated[str, StringConstraints(max_length=253)] = Field(default="", description="Only pods matching this label selector. Default: all.")
    timeout_seconds: int = Field(
        default=300,
        strict=True,
        ge=1,
        le=86400,
        description="Give up the drain after this many seconds (the chart recommends a timeout, else a drain can retry forever). Default: 300.",
    )
    delete_empty_dir: bool = Field(default=False, strict=True, description="Evict pods with emptyDir volumes (their data is lost). Default: `false`.")


class DriverPodDeletion(Model):
    """``upgrades.gpuDriver.gpuPodDeletion``: the GPU Operator's ``driver.upgradePolicy.gpuPodDeletion``."""

    force: bool = Field(default=False, strict=True, description="Delete GPU pods without a controller too. Default: `false`.")
    timeout_seconds: int = Field(default=300, strict=True, ge=0, le=86400, description="How long to wait for GPU pods to go (0: forever). Default: 300.")
    delete_empty_dir: bool = Field(default=False, strict=True, description="Delete GPU pods with emptyDir volumes. Default: `false`.")


class DriverWaitForCompletion(Model):
    """``upgrades.gpuDriver.waitForCompletion``: the GPU Operator's ``driver.upgradePolicy.waitForCompletion``."""

    timeout_seconds: int = Field(
        default=0, strict=True, ge=0, le=604800, description="How long to wait for the selected pods (jobs) to finish (0: forever). Default: 0."
    )
    pod_selector: Annotated[str, StringConstraints(max_length=253)] = Field(
        default="", description="Label selector of the pods to wait for, e.g. `hybridgpu.io/training=true`. Default: none (no wait)."
    )


#: ``maxUnavailable``: a node count or a percentage of the driver's nodes (``25%``).
_PERCENT = re.compile(r"^([0-9]{1,3})%$")


class GpuDriverUpgradePolicy(Model):
    """``upgrades.gpuDriver``: the GPU Operator's driver upgrade policy (chart values ``driver.upgradePolicy``).

    Keys and defaults are NVIDIA/gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml``
    (``driver.upgradePolicy``): ``autoUpgrade`` true, ``maxParallelUpgrades`` 1 (0: no limit),
    ``maxUnavailable`` 25%, ``waitForCompletion``, ``gpuPodDeletion``, ``drain`` (off, 300 s).
    Used only when the GPU Operator installs the driver (``hybridgpu:nvidia.driver: operator``).
    """

    auto_upgrade: bool = Field(
        default=True, strict=True, description="Let the operator roll a new driver version over the nodes (off: every other key is ignored). Default: `true`."
    )
    max_parallel_upgrades: int = Field(
        default=1, strict=True, ge=0, le=10000, description="Nodes upgraded at once (0, all at once, is refused). Default: 1."
    )
    max_unavailable: int | Annotated[str, StringConstraints(pattern=r"^[0-9]{1,3}%$")] = Field(
        default="25%", description="Driver nodes that may be unavailable at once: a count or a percentage (`25%`, rounded up). Default: `25%`."
    )
    wait_for_completion: DriverWaitForCompletion = Field(default_factory=DriverWaitForCompletion, description="Wait for selected jobs to finish first. Default: no wait.")
    gpu_pod_deletion: DriverPodDeletion = Field(default_factory=DriverPodDeletion, description="How GPU pods are deleted before the reload. Default: chart's.")
    drain: DriverDrain = Field(default_factory=DriverDrain, description="Drain before the reload. Default: off.")

    @field_validator("max_unavailable", mode="before")
    @classmethod
    def _unavailable(cls, value: Any) -> Any:
        if isinstance(value, bool) or isinstance(value, float):
            raise ValueError(f"maxUnavailable is a node count such as 1 or a percentage such as \"25%\", got {value!r}")
        if isinstance(value, int) and value < 1:
            raise ValueError("maxUnavailable 0 lets no node go unavailable, so no driver is ever upgraded; use 1 or a percentage")
        if isinstance(value, str):
            match = _PERCENT.match(value)
            if match and not 1 <= int(match[1]) <= 100:
                raise ValueError(f"maxUnavailable {value!r} is outside 1%-100%")
        return value

    @model_validator(mode="after")
    def _bounded(self) -> GpuDriverUpgradePolicy:
        if self.auto_upgrade and self.max_parallel_upgrades == 0:
            raise ValueError(
                "`maxParallelUpgrades: 0` upgrades the driver on every GPU node at once (no GPU left for running jobs); "
                "give a number such as 1"
            )
        return self

    def chart_values(self) -> dict[str, Any]:
        """The chart's ``driver.upgradePolicy`` mapping (camelCase keys, every key set)."""
        return self.model_dump(by_alias=True, mode="json")


class KubernetesUpgrade(Model):
    """``upgrades.kubernetes``: the Kubernetes upgrade ``pulumi up`` carries out (:func:`plan_upgrade` from
    ``cluster.kubernetesVersion`` to ``to``; the same plan ``hybridgpu inventory upgrade-plan`` shows)."""

    to: Annotated[str, StringConstraints(max_length=32)] = Field(
        description="The release to reach, MAJOR.MINOR.PATCH such as `1.36.4` (`kubeadm upgrade apply` needs the exact release). "
        "Equal to `cluster.kubernetesVersion`: nothing to do (set both once the upgrade is done). Required."
    )
    via: tuple[Annotated[str, StringConstraints(max_length=32)], ...] = Field(
        default=(),
        max_length=10,
        description="The release of each minor version crossed on the way (kubeadm moves one minor at a time), e.g. `[1.36.4]` "
        "from 1.35 to 1.37. Default: none (one step).",
    )
    workers_last: bool = Field(
        default=False,
        strict=True,
        description="Move the control planes through every step and the workers once, in the last (fewer drains; at most 3 minors). Default: `false`.",
    )

    @field_validator("to")
    @classmethod
    def _to(cls, value: str) -> str:
        return _release(value)

    @field_validator("via")
    @classmethod
    def _via(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, item in enumerate(value):
            _release(item, f"[{index}]")
        return tuple(_release(v) for v in value)


def _release(value: str, field: str = "") -> str:
    """``value`` as ``MAJOR.MINOR.PATCH`` without a leading ``v``; FieldError naming ``field`` otherwise."""
    if not _VERSION.match(value.strip()):
        raise FieldError(
            field,
            f"{value!r} is not a Kubernetes release (kubeadm upgrade apply needs the exact one)",
            "give MAJOR.MINOR.PATCH such as 1.36.4 (the releases: kubernetes.io/releases)",
        )
    return value.strip().lstrip("v")


#: Debian packages of a host-installed NVIDIA driver that the upgrade pins: NVIDIA's CUDA repository meta-packages
#: ``cuda-drivers`` / ``cuda-drivers-<branch>`` and ``nvidia-open`` / ``nvidia-open-<branch>``, Ubuntu's
#: ``nvidia-driver-<branch>[-server][-open]`` and Debian's ``nvidia-driver``.
#: NVIDIA's driver installation guide (docs.nvidia.com/datacenter/tesla/driver-installation-guide, "Recent updates",
#: read 2026-11-27): branch meta-packages (``cuda-drivers-580``) up to branch 580, unbranched names from 590 on.
_DRIVER_PACKAGE = re.compile(r"^(cuda-drivers|nvidia-open|nvidia-driver)(-(?P<branch>[0-9]{3}))?(?P<suffix>(-server)?(-open)?)$")
#: A driver's Debian version: ``[epoch:]<branch>.<minor>[.<patch>]-<revision>`` such as ``580.95.05-1`` (NVIDIA),
#: ``580.95.05-0ubuntu0.24.04.2`` (Ubuntu), ``550.163.01-2`` (Debian).
_DRIVER_VERSION = re.compile(r"^(?:[0-9]+:)?(?P<upstream>(?P<branch>[0-9]{3})\.[0-9]{2,3}(?:\.[0-9]{2,3})?)-(?P<revision>[0-9A-Za-z.+~]+)$")
#: The container toolkit's Debian version (NVIDIA's apt repository: ``<x.y.z>-1``, release candidates ``<x.y.z>~rc.<n>-1``).
_TOOLKIT_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(~rc\.[0-9]+)?-[0-9][0-9A-Za-z.+~]*$")


class HostDriver(Model):
    """``upgrades.nvidia.driver``: the NVIDIA driver package a host-installed driver moves to (pinned and held)."""

    package: Annotated[str, StringConstraints(max_length=64)] = Field(
        description="The Debian package that carries the driver on the hosts, as they were installed: `cuda-drivers-<branch>` or "
        "`nvidia-open-<branch>` (NVIDIA's CUDA repository), `nvidia-driver-<branch>-server` / `nvidia-driver-<branch>[-open]` (Ubuntu), "
        "`nvidia-driver` (Debian). Required."
    )
    version: Annotated[str, StringConstraints(max_length=64)] = Field(
        description="Its Debian version with the revision, e.g. `\"580.95.05-1\"` (`apt-cache madison <package>` lists them); the part "
        "before the `-` is what `nvidia-smi` must report afterwards. Required."
    )

    @field_validator("package")
    @classmethod
    def _package(cls, value: str) -> str:
        if not _DRIVER_PACKAGE.match(value):
            raise FieldError(
                "",
                f"{value!r} is not an NVIDIA driver package hybridgpu pins",
                "write the driver meta-package the hosts carry, e.g. cuda-drivers-580, nvidia-open-580, nvidia-driver-580-server or "
                "nvidia-driver (`dpkg -l | grep -i nvidia` on a host shows it), and the version in `version`",
            )
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise FieldError("", f"YAML read {value!r} as a number", 'write the Debian version in quotes, e.g. "580.95.05-1"')
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if _DRIVER_VERSION.match(value):
            return value
        if re.match(r"^(?:[0-9]+:)?[0-9]{3}\.[0-9]{2,3}(\.[0-9]{2,3})?$", value):
            raise FieldError(
                "",
                f"{value!r} has no Debian revision, so `apt-get install <package>={value}` finds nothing",
                f'write e.g. "{value}-1" (`apt-cache madison <package>` lists the versions)',
            )
        raise FieldError(
            "",
            f"{value!r} is not an NVIDIA driver's Debian version (<branch>.<minor>[.<patch>]-<revision>)",
            'write e.g. "580.95.05-1" (`apt-cache madison <package>` lists the versions)',
        )

    @model_validator(mode="after")
    def _same_branch(self) -> HostDriver:
        package, version = _DRIVER_PACKAGE.match(self.package), _DRIVER_VERSION.match(self.version)
        if package and version and package["branch"] and package["branch"] != version["branch"]:
            raise FieldError(
                "version",
                f"{self.package} carries the {package['branch']} driver branch, but version {self.version} is of branch {version['branch']}",
                f"name the package of that branch ({self.package.replace(package['branch'], version['branch'], 1)}) or a {package['branch']}.x version",
            )
        return self

    @property
    def upstream(self) -> str:
        """The driver version ``nvidia-smi`` reports, e.g. ``580.95.05`` (the Debian version without epoch and revision)."""
        match = _DRIVER_VERSION.match(self.version)
        assert match is not None  # validated
        return match["upstream"]

    @property
    def fabric_manager_package(self) -> str | None:
        """The fabric manager package of this driver's repository, pinned to the driver's version on NVSwitch hosts
        (:data:`NVSWITCH_BOARDS`), or None where hybridgpu knows none (Debian's ``nvidia-driver``).

        NVIDIA's CUDA repository (``cuda-drivers*``, ``nvidia-open*``): ``nvidia-fabricmanager-<branch>`` before branch
        580, ``nvidia-fabricmanager`` from 580 on (NVIDIA/gpu-driver-container ``ubuntu22.04/precompiled/nvidia-driver``
        ``fabricmanager_install``, commit 06a208c, 2026-08-17: ``apt-get install <name>=<driver version>*``, then
        ``apt-mark hold``). Ubuntu's archive (``nvidia-driver-<branch>*``): ``nvidia-fabricmanager-<branch>`` (source
        ``fabric-manager-<branch>``, packages.ubuntu.com, read 2026-11-27; its Debian revision is not the driver's).
        """
        package, version = _DRIVER_PACKAGE.match(self.package), _DRIVER_VERSION.match(self.version)
        assert package is not None and version is not None  # validated
        branch = int(version["branch"])
        if package[1] == "nvidia-driver":
            return f"nvidia-fabricmanager-{branch}" if package["branch"] else None
        return "nvidia-fabricmanager" if branch >= 580 else f"nvidia-fabricmanager-{branch}"


class NvidiaHostUpgrade(Model):
    """``upgrades.nvidia``: the NVIDIA driver and container toolkit ``pulumi up`` moves on the GPU workers that carry their own
    driver, one node (or ``maxParallel`` nodes) at a time: drain, stop the GPU's users, install the pinned packages, reboot for a
    new driver, check ``nvidia-smi``, uncordon (docs/upgrades.md, "GPU drivers and the container toolkit")."""

    driver: HostDriver | None = Field(default=None, description="The driver package and version to reach. Default: none (the driver is left alone).")
    toolkit_version: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        default=None,
        description="The NVIDIA container toolkit version to reach (Debian version with its revision, e.g. `\"1.18.2-1\"`; "
        "set `cluster.nvidiaContainerToolkitVersion` to it once done). Default: none (the toolkit is left alone).",
    )
    max_parallel: int = Field(
        default=1, strict=True, ge=1, le=64, description="GPU workers upgraded at the same time (each drained first). Default: 1."
    )
    reboot_timeout_seconds: int = Field(
        default=900, strict=True, ge=60, le=7200, description="How long a node may take to come back Ready after the reboot a new driver needs. Default: 900."
    )

    @field_validator("toolkit_version", mode="before")
    @classmethod
    def _toolkit_text(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise FieldError("", f"YAML read {value!r} as a number", 'write the version in quotes, e.g. "1.18.2-1"')
        return value

    @field_validator("toolkit_version")
    @classmethod
    def _toolkit(cls, value: str | None) -> str | None:
        if value is not None and not _TOOLKIT_VERSION.match(value):
            hint = f"{value}-1" if re.match(r"^[0-9]+\.[0-9]+\.[0-9]+(~rc\.[0-9]+)?$", value) else "1.18.2-1"
            raise FieldError(
                "",
                f"{value!r} is not a version of NVIDIA's container toolkit packages (<x.y.z>-1, release candidates <x.y.z>~rc.<n>-1; "
                "apt finds nothing else)",
                f'write "{hint}" (`apt-cache madison nvidia-container-toolkit` lists the versions)',
            )
        return value

    @model_validator(mode="after")
    def _something(self) -> NvidiaHostUpgrade:
        if self.driver is None and self.toolkit_version is None:
            raise FieldError("", "`upgrades.nvidia` moves nothing", "give `driver: {package, version}`, `toolkitVersion`, or both (or drop the section)")
        return self

    @property
    def tag(self) -> str:
        """What the upgrade moves to, as one name part (``nvidia-driver-580.95.05-1-toolkit-1.18.2-1``): the commands'
        trigger and the stamp directory on the nodes."""
        parts = ["nvidia"]
        if self.driver is not None:
            parts.append(f"driver-{self.driver.version.replace(':', '_')}")
        if self.toolkit_version is not None:
            parts.append(f"toolkit-{self.toolkit_version}")
        return "-".join(parts)


class UpgradePolicy(Model):
    """``upgrades`` of the ``Site`` document: how upgrades treat the nodes, etcd snapshots, GPU driver upgrades."""

    drain_timeout: DrainTimeout = Field(
        default="30m",
        description="How long each node's drain may take during a Kubernetes upgrade (`kubectl drain --timeout`; PodDisruptionBudgets "
        "hold, so a drain blocked by one fails the step, which a re-run resumes), e.g. `30m`, `2h`. Default: `30m`.",
    )
    etcd_snapshots: EtcdSnapshots = Field(
        default_factory=EtcdSnapshots, description="Scheduled etcd snapshots on the control planes. Default: daily, keep 7."
    )
    gpu_driver: GpuDriverUpgradePolicy | None = Field(
        default=None, description="The GPU Operator's driver upgrade policy (`driver.upgradePolicy`). Default: none (the chart's defaults)."
    )
    kubernetes: KubernetesUpgrade | None = Field(
        default=None,
        description="The Kubernetes upgrade `pulumi up` carries out, node by node in the plan's order (docs/upgrades.md). Default: none.",
    )
    nvidia: NvidiaHostUpgrade | None = Field(
        default=None,
        description="The NVIDIA driver and container toolkit `pulumi up` moves on GPU workers that carry their own driver, one node at a "
        "time (after the Kubernetes upgrade, when both are asked for). Default: none.",
    )

    @field_validator("drain_timeout")
    @classmethod
    def _not_zero(cls, value: str) -> str:
        if not any(ch in "123456789" for ch in value):
            raise ValueError(f"{value!r} is no time at all; give the drain a timeout such as 30m")
        return value


# --------------------------------------------------------------------------- the plan


class UpgradePlanError(ValueError):
    """A version given to :func:`plan_upgrade` is not ``MAJOR.MINOR.PATCH``; the message names the option and the fix."""


_VERSION = re.compile(r"^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


def parse_version(text: str, option: str = "--to") -> tuple[int, int, int]:
    """``"1.36.1"`` (or ``"v1.36.1"``) as ``(1, 36, 1)``.

    Raises:
        UpgradePlanError: not MAJOR.MINOR.PATCH; the message names ``option``.
    """
    match = _VERSION.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise UpgradePlanError(
            f"{option} {text!r} is not a Kubernetes release (kubeadm upgrade apply needs the exact one)\n"
            "    fix: give MAJOR.MINOR.PATCH such as 1.36.1 (the releases: kubernetes.io/releases)"
        )
    return int(match[1]), int(match[2]), int(match[3])


def _text(version: tuple[int, int, int]) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class UpgradeCheck:
    """One check made before an upgrade starts.

    Attributes:
        name: short id, e.g. ``one-minor-at-a-time``, ``kubelet-skew``.
        level: ``ok``, ``warn`` (the upgrade may go ahead; read it) or ``fail`` (refused).
        message: what was found.
        issue: for ``warn`` and ``fail``, the problem as an :class:`~hybridgpu.errors.Issue` on the inventory
            (file, host, key, the fix; its code is ``name``); None for ``ok``.
    """

    name: str
    level: Literal["ok", "warn", "fail"]
    message: str
    issue: Issue | None = None

    @property
    def fix(self) -> str:
        """The fix of :attr:`issue` (empty for ``ok``)."""
        return self.issue.fix if self.issue is not None else ""


@dataclass(frozen=True)
class NodeUpgrade:
    """What one node does in one step, in order: kubeadm (``apply`` on the first control plane, else ``node``),
    drain, kubelet and kubectl, and uncordon unless the host is ``cordoned`` in the inventory."""

    hostname: str
    address: str
    role: str
    kubeadm: Literal["apply", "node"]
    uncordon: bool


@dataclass(frozen=True)
class UpgradeStep:
    """One minor version (or one patch release): every node moves to ``version``, control planes first."""

    version: str
    nodes: tuple[NodeUpgrade, ...]


@dataclass(frozen=True)
class UpgradePlan:
    """The order and the checks of an upgrade from ``current`` to ``target``.

    Attributes:
        site: the site name.
        current: the inventory's ``cluster.kubernetesVersion``.
        target: the release asked for.
        steps: one per minor version crossed (empty when a check failed before the steps could be built).
        snapshot_host: the first control plane, where the etcd snapshot is taken before the first step.
        skipped: hosts in state ``absent`` (left out; bootstrap installs the new version when they return).
        checks: every check, in the order made.
    """

    site: str
    current: str
    target: str
    steps: tuple[UpgradeStep, ...]
    snapshot_host: str
    skipped: tuple[str, ...]
    checks: tuple[UpgradeCheck, ...]

    @property
    def ok(self) -> bool:
        """No check failed."""
        return all(c.level != "fail" for c in self.checks)

    @property
    def failures(self) -> tuple[UpgradeCheck, ...]:
        """The failed checks."""
        return tuple(c for c in self.checks if c.level == "fail")

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (the same keys and order every time)."""
        return {
            "site": self.site,
            "from": self.current,
            "to": self.target,
            "ok": self.ok,
            "checks": [{"name": c.name, "level": c.level, "message": c.message, "fix": c.fix} for c in self.checks],
            "snapshot": {"host": self.snapshot_host, "before": "the first control plane moves"},
            "steps": [
                {
                    "version": s.version,
                    "nodes": [
                        {"hostname": n.hostname, "role": n.role, "kubeadm": f"upgrade {n.kubeadm}", "drain": True, "uncordon": n.uncordon}
                        for n in s.nodes
                    ],
                }
                for s in self.steps
            ],
            "skipped": list(self.skipped),
        }

    def text(self, width: int = 80) -> str:
        """The plan as lines of at most ``width`` characters: the checks, then the order."""
        lines = [f"upgrade plan, site {self.site}: Kubernetes {self.current} -> {self.target}"]
        lines.append("checks:")
        for check in self.checks:
            lines += textwrap.wrap(f"{check.level:<4}  {check.name}: {check.message}", width, subsequent_indent="      ", break_on_hyphens=False)
            if check.fix:
                lines += textwrap.wrap(f"fix: {check.fix}", width, initial_indent="      ", subsequent_indent="        ", break_on_hyphens=False)
        if self.steps:
            lines.append("order (one node at a time; each: kubeadm, drain, kubelet+kubectl, uncordon):")
            lines.append(f"   0  {self.snapshot_host}: etcd snapshot (etcdctl snapshot save)")
            index = 0
            for step in self.steps:
                lines.append(f"  step to {step.version}:")
                for node in step.nodes:
                    index += 1
                    then = "" if node.uncordon else ", stays cordoned"
                    lines += textwrap.wrap(
                        f"{index:>4}  {node.hostname} ({node.role}): kubeadm upgrade {node.kubeadm}{then}",
                        width,
                        subsequent_indent="        ",
                        break_on_hyphens=False,
                    )
        for name in self.skipped:
            lines.append(f"skipped {name} (state absent)")
        return "\n".join(lines) + "\n"


class _Host(Protocol):
    @property
    def hostname(self) -> str: ...

    @property
    def role(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def addresses(self) -> Any: ...

    @property
    def gpu_count(self) -> int: ...

    @property
    def gpu(self) -> Any: ...


class _Site(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def cluster(self) -> Any: ...

    @property
    def upgrades(self) -> UpgradePolicy | None: ...


class PlanInput(Protocol):
    """What :func:`plan_upgrade` reads of an :class:`~hybridgpu.inventory.models.Inventory` (which has all of it)."""

    @property
    def site(self) -> _Site: ...

    @property
    def hosts(self) -> Sequence[_Host]: ...

    @property
    def control_planes(self) -> Sequence[_Host]: ...

    @property
    def first_control_plane(self) -> _Host: ...

    @property
    def site_file(self) -> str: ...


def _nodes(inventory: PlanInput) -> tuple[NodeUpgrade, ...]:
    first = inventory.first_control_plane.hostname
    present = [h for h in inventory.hosts if h.state != "absent"]

    def node(host: _Host) -> NodeUpgrade:
        kind: Literal["apply", "node"] = "apply" if host.hostname == first else "node"
        return NodeUpgrade(host.hostname, str(host.addresses.management), host.role, kind, host.state == "active")

    control = sorted((h for h in present if h.role == "control-plane"), key=lambda h: h.hostname != first)
    workers = [h for h in present if h.role != "control-plane"]
    return tuple(node(h) for h in (*control, *workers))


def plan_upgrade(
    inventory: PlanInput, target: str, *, via: tuple[str, ...] | list[str] = (), workers_last: bool = False
) -> UpgradePlan:
    """The upgrade of ``inventory``'s cluster from its ``kubernetesVersion`` to ``target``, and its checks.

    Args:
        inventory: a loaded inventory; ``cluster.kubernetesVersion`` is what runs now.
        target: the release to reach, ``MAJOR.MINOR.PATCH`` (e.g. ``1.36.1``).
        via: the release of each minor version crossed on the way (``1.35.4`` from 1.34 to 1.36):
            kubeadm moves one minor at a time and needs an exact release for each.
        workers_last: move the control planes through every minor version and the workers once, in the
            last step (fewer drains); allowed while the workers stay within three minors of kube-apiserver.

    Returns:
        The plan. When a check fails (``plan.ok`` is false) nothing may run; the steps are still
        listed when the versions allow it.

    Raises:
        UpgradePlanError: ``target`` or a ``via`` release is not ``MAJOR.MINOR.PATCH``.
    """
    site = inventory.site
    current = parse_version(site.cluster.kubernetes_version, "cluster.kubernetesVersion")
    goal = parse_version(target, "--to")
    stops = sorted({parse_version(v, "--via") for v in via})
    checks: list[UpgradeCheck] = []

    def check(name: str, level: Literal["ok", "warn", "fail"], message: str, fix: str = "", host: str | None = None) -> UpgradeCheck:
        where = ("state" if host else "cluster.kubernetesVersion") if level != "ok" else None
        issue = Issue.on_host(inventory.site_file, host, where, message, fix, code=name) if level != "ok" else None
        return UpgradeCheck(name, level, message, issue)

    first = inventory.first_control_plane.hostname
    skipped = tuple(h.hostname for h in inventory.hosts if h.state == "absent")

    def plan(steps: tuple[UpgradeStep, ...]) -> UpgradePlan:
        return UpgradePlan(site.name, _text(current), _text(goal), steps, first, skipped, tuple(checks))

    if goal[0] != current[0]:
        checks.append(check("major-version", "fail", f"{_text(current)} -> {_text(goal)} changes the major version", "stay on 1.x"))
        return plan(())
    if goal <= current:
        what = "is what runs now" if goal == current else "is older than what runs now"
        checks.append(
            check(
                "newer-version",
                "fail",
                f"{_text(goal)} {what} ({_text(current)}); kubeadm upgrade only moves forward here",
                "give a newer release; to go back, restore an etcd snapshot (docs/upgrades.md)",
            )
        )
        return plan(())

    # One step per minor version (kubeadm policy.go: MaximumAllowedMinorVersionUpgradeSkew = 1).
    minors = list(range(current[1] + 1, goal[1] + 1)) if goal[1] > current[1] else [goal[1]]
    by_minor = {v[1]: v for v in stops}
    versions: list[tuple[int, int, int]] = []
    missing: list[str] = []
    for minor in minors[:-1]:
        if minor in by_minor:
            versions.append(by_minor[minor])
        else:
            missing.append(f"{current[0]}.{minor}")
    versions.append(goal)
    stray = [_text(v) for v in stops if v[0] != current[0] or v[1] not in minors[:-1]]
    twice = sorted({m for m in (v[1] for v in stops) if sum(v[1] == m for v in stops) > 1})
    stray += [f"{current[0]}.{m} twice ({', '.join(_text(v) for v in stops if v[1] == m)})" for m in twice]
    if stray:
        checks.append(
            check(
                "via-versions",
                "fail",
                f"--via {', '.join(stray)}: not one release of a minor version between {_text(current)} and {_text(goal)}",
                f"give --via only for {', '.join(f'{current[0]}.{m}' for m in minors[:-1]) or 'no minor (this is one step)'}",
            )
        )
    path = " -> ".join([f"{current[0]}.{current[1]}", *(f"{current[0]}.{m}" for m in minors)]) if goal[1] > current[1] else f"patch {_text(current)} -> {_text(goal)}"
    if missing:
        checks.append(
            check(
                "one-minor-at-a-time",
                "fail",
                f"{path}: kubeadm upgrades one minor version at a time and needs the exact release of {', '.join(missing)}",
                " ".join(f"--via {m}.N" for m in missing) + " (the newest patch of each, kubernetes.io/releases)",
            )
        )
    else:
        steps_text = " -> ".join(_text(v) for v in versions)
        checks.append(check("one-minor-at-a-time", "ok", f"{len(versions)} step(s): {_text(current)} -> {steps_text}"))

    # kubelet <= kube-apiserver, at most three minors older: control planes move first, workers follow in the same step
    # (or, with workers_last, only in the last one).
    lag = len(minors) if workers_last and goal[1] > current[1] else min(1, goal[1] - current[1])
    if lag > KUBELET_MAX_MINOR_SKEW:
        checks.append(
            check(
                "kubelet-skew",
                "fail",
                f"with the workers last their kubelets would lag kube-apiserver by {lag} minor versions; the Version Skew "
                f"Policy allows {KUBELET_MAX_MINOR_SKEW}",
                "upgrade the workers in every step (drop --workers-last), or in two runs of at most 3 minors each",
            )
        )
    else:
        checks.append(
            check(
                "kubelet-skew",
                "ok",
                f"control planes move first, so no kubelet is newer than kube-apiserver; worker kubelets lag by at most "
                f"{lag} minor (the policy allows {KUBELET_MAX_MINOR_SKEW})",
            )
        )
    control = [h for h in inventory.control_planes if h.state != "absent"]
    if len(control) == 1:
        checks.append(
            check(
                "control-plane-ha",
                "warn",
                f"one control plane ({first}): the API server is down while it upgrades; running pods keep running",
                "upgrade in a maintenance window, or add control planes behind controlPlaneEndpoint",
            )
        )
    else:
        checks.append(check("control-plane-ha", "ok", f"{len(control)} control planes, upgraded one at a time"))
    if any(h.role == "control-plane" and h.state == "absent" for h in inventory.hosts):
        absent = ", ".join(h.hostname for h in inventory.control_planes if h.state == "absent")
        checks.append(
            check(
                "absent-control-plane",
                "fail",
                f"control plane {absent} is absent: its etcd member and kube-apiserver would stay on {_text(current)}",
                "restore it first, or remove it from the cluster (kubeadm reset, etcd member remove) and the inventory",
                host=absent.split(", ")[0],
            )
        )
    checks.append(check("etcd-snapshot", "ok", f"etcdctl snapshot save on {first} before the first control plane moves"))
    policy = site.upgrades if site.upgrades is not None else UpgradePolicy()
    checks.append(
        check(
            "drain",
            "ok",
            f"each node is drained (timeout {policy.drain_timeout}; PodDisruptionBudgets hold); evicted pods of a Kueue "
            "workload are recreated by their job, and a gang that cannot run is requeued",
        )
    )
    if skipped:
        checks.append(
            check(
                "absent-hosts",
                "warn",
                f"{', '.join(skipped)} absent: left out; they join at the new version when restored",
                f"set cluster.kubernetesVersion to {_text(goal)} once the upgrade is done",
                host=skipped[0],
            )
        )
    nodes = _nodes(inventory)
    last = len(versions) - 1
    steps = (
        ()
        if stray or missing
        else tuple(
            UpgradeStep(_text(v), nodes if i == last or not workers_last else tuple(n for n in nodes if n.role == "control-plane"))
            for i, v in enumerate(versions)
        )
    )
    return plan(steps)


# --------------------------------------------------------------------------- NVIDIA driver and toolkit on the hosts


#: GPU models (catalog names) whose 8-GPU HGX/DGX baseboard joins the GPUs through NVSwitch chips, by that board's GPU
#: count: there the NVIDIA fabric manager (``nvidia-fabricmanager``, exactly the driver's version) must run before CUDA sees
#: the GPUs. NVIDIA Fabric Manager User Guide r2.3 (2025-05-06), "GPU Baseboard Topologies": HGX A100, HGX H100 and
#: HGX B200/B100 8-GPU baseboards (read 2026-11-27). H200 (HGX H200) and B300 (HGX B300) are not in that guide: taken
#: to share the NVSwitch boards of H100 and B200, not verified here. Every catalog entry named here is
#: the SXM module (hybridgpu/catalog/data/gpu_models.yaml); the 4-GPU HGX boards join their GPUs directly (no NVSwitch,
#: no fabric manager), PCIe cards use NVLink bridges at most.
NVSWITCH_BOARDS: dict[str, int] = {
    "A100-40GB": 8,
    "A100-80GB": 8,
    "H100-80GB": 8,
    "H200-141GB": 8,
    "B200-180GB": 8,
    "B300-288GB": 8,
}


def needs_fabric_manager(gpu_model: str | None, gpu_count: int) -> bool:
    """Whether a host with ``gpu_count`` GPUs of ``gpu_model`` (a catalog name) is an NVSwitch system that needs the
    fabric manager (:data:`NVSWITCH_BOARDS`)."""
    return gpu_model is not None and NVSWITCH_BOARDS.get(gpu_model) == gpu_count


@dataclass(frozen=True)
class NvidiaNode:
    """One GPU worker of an NVIDIA upgrade: its name, management address, GPU count (``nvidia-smi`` must list that many
    afterwards), whether it is uncordoned at the end (false for a host ``cordoned`` in the inventory) and whether it is an
    NVSwitch system whose fabric manager moves with the driver (:func:`needs_fabric_manager`)."""

    hostname: str
    address: str
    gpu_count: int
    uncordon: bool
    fabric_manager: bool = False


@dataclass(frozen=True)
class NvidiaUpgradePlan:
    """The order of an ``upgrades.nvidia`` upgrade (:func:`plan_nvidia_upgrade`).

    Attributes:
        site: the site name.
        policy: the inventory's ``upgrades.nvidia``.
        batches: the GPU workers in groups of ``maxParallel``, in file order; a group starts once the one before it is done.
        kubelet_version: the kubelet version the nodes report when they are uncordoned (``upgrades.kubernetes.to`` when a
            Kubernetes upgrade runs first, else ``cluster.kubernetesVersion``).
        drain_timeout: ``upgrades.drainTimeout``.
        skipped: GPU workers in state ``absent`` (left out).
        warnings: what the operator should read before ``pulumi up`` (e.g. every GPU worker drained at once).
        issues: what stops the upgrade before anything runs (an NVSwitch host whose driver package has no fabric manager
            package hybridgpu knows), each on the inventory's file, host and key; empty when it may run.
    """

    site: str
    policy: NvidiaHostUpgrade
    batches: tuple[tuple[NvidiaNode, ...], ...]
    kubelet_version: str
    drain_timeout: str
    skipped: tuple[str, ...]
    warnings: tuple[str, ...]
    issues: tuple[Issue, ...] = ()

    @property
    def target(self) -> str:
        """``driver <package>=<version>, toolkit <version>`` (what moves)."""
        parts = []
        if self.policy.driver is not None:
            parts.append(f"driver {self.policy.driver.package}={self.policy.driver.version}")
        if self.policy.toolkit_version is not None:
            parts.append(f"container toolkit {self.policy.toolkit_version}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (same keys and order every time)."""
        driver = self.policy.driver
        return {
            "site": self.site,
            "driver": None if driver is None else {"package": driver.package, "version": driver.version, "nvidiaSmi": driver.upstream},
            "toolkitVersion": self.policy.toolkit_version,
            "maxParallel": self.policy.max_parallel,
            "warnings": list(self.warnings),
            "fabricManager": None if driver is None else driver.fabric_manager_package,
            "batches": [
                [{"hostname": n.hostname, "gpus": n.gpu_count, "uncordon": n.uncordon, "fabricManager": n.fabric_manager} for n in batch]
                for batch in self.batches
            ],
            "skipped": list(self.skipped),
        }

    def text(self, width: int = 80) -> str:
        """The plan as lines of at most ``width`` characters."""
        lines = [f"NVIDIA upgrade, site {self.site}: {self.target}"]
        for warning in self.warnings:
            lines += textwrap.wrap(f"warn  {warning}", width, subsequent_indent="      ", break_on_hyphens=False)
        reboot = ", reboot and wait for Ready" if self.policy.driver is not None else ", restart containerd"
        lines += textwrap.wrap(
            f"order ({self.policy.max_parallel} GPU worker(s) at a time; each: check the installed and running versions, drain "
            f"(timeout {self.drain_timeout}), stop kubelet and the node's containers, install and hold the packages{reboot}, "
            "check nvidia-smi (and the fabric manager on NVSwitch hosts), uncordon; a node already at the versions is "
            "neither drained nor rebooted):",
            width,
            subsequent_indent="  ",
            break_on_hyphens=False,
        )
        fabric = self.policy.driver.fabric_manager_package if self.policy.driver is not None else None
        for index, batch in enumerate(self.batches, 1):
            names = ", ".join(
                f"{n.hostname} ({n.gpu_count} GPUs{f', {fabric}' if n.fabric_manager and fabric else ''}"
                f"{'' if n.uncordon else ', stays cordoned'})"
                for n in batch
            )
            lines += textwrap.wrap(f"{index:>4}  {names}", width, subsequent_indent="        ", break_on_hyphens=False)
        for name in self.skipped:
            lines.append(f"skipped {name} (state absent)")
        return "\n".join(lines) + "\n"


def plan_nvidia_upgrade(inventory: PlanInput) -> NvidiaUpgradePlan | None:
    """The NVIDIA driver/toolkit upgrade the inventory's ``upgrades.nvidia`` asks for, or None without it.

    Args:
        inventory: a loaded inventory.

    Returns:
        The plan: every GPU worker that is not ``absent``, in file order, in groups of ``maxParallel``. A plan with no
        GPU worker has no batches (nothing runs).
    """
    policy = inventory.site.upgrades
    wanted = policy.nvidia if policy is not None else None
    if policy is None or wanted is None:
        return None
    gpu = [h for h in inventory.hosts if h.role == "gpu-worker"]
    # The fabric manager moves with the driver; the toolkit alone leaves it (and the driver) as they are.
    moves_driver = wanted.driver is not None
    present = [
        NvidiaNode(
            h.hostname,
            str(h.addresses.management),
            h.gpu_count,
            h.state == "active",
            moves_driver and needs_fabric_manager(h.gpu.model if h.gpu is not None else None, h.gpu_count),
        )
        for h in gpu
        if h.state != "absent"
    ]
    skipped = tuple(h.hostname for h in gpu if h.state == "absent")
    issues: list[Issue] = []
    switched = [n for n in present if n.fabric_manager]
    if switched and wanted.driver is not None and wanted.driver.fabric_manager_package is None:
        issues.append(
            Issue.on_host(
                inventory.site_file,
                None,
                "upgrades.nvidia.driver.package",
                f"{', '.join(n.hostname for n in switched)}: NVSwitch system(s) (8 SXM GPUs) need the NVIDIA fabric manager at "
                f"exactly the driver's version, and hybridgpu knows no fabric manager package beside Debian's {wanted.driver.package}",
                "install the driver from NVIDIA's CUDA repository (cuda-drivers-<branch> or nvidia-open-<branch>, with "
                "nvidia-fabricmanager) or Ubuntu's (nvidia-driver-<branch>-server, with nvidia-fabricmanager-<branch>) and name "
                "that package",
                code="fabric-manager",
            )
        )
    size = wanted.max_parallel
    batches = tuple(tuple(present[i : i + size]) for i in range(0, len(present), size))
    warnings = []
    if len(present) > 1 and size >= len(present):
        warnings.append(
            f"maxParallel {size} drains all {len(present)} GPU workers at once: no GPU is left for running jobs meanwhile "
            "(lower maxParallel to keep some)"
        )
    kubelet = policy.kubernetes.to if policy.kubernetes is not None else inventory.site.cluster.kubernetes_version
    return NvidiaUpgradePlan(inventory.site.name, wanted, batches, kubelet, policy.drain_timeout, skipped, tuple(warnings), tuple(issues))
