"""The GPU worker of the NVIDIA upgrade sandbox tests (tests/render/test_nvidia_upgrade_sandbox.py and
tests/render/test_nvidia_rerun_sandbox.py): the stub sandbox (tests/helpers/sandbox.py) with stubs for apt, dpkg, nvidia-smi,
systemd, crictl and kubectl that model what the real tools do with what the scripts send them (see the first test module's
docstring for the sources), and :class:`NvidiaBox`, a worker at driver 570 / toolkit 1.17.8.
"""

from __future__ import annotations

from pathlib import Path

from hybridgpu.render.upgrade import NVIDIA_TOOLKIT_PACKAGES
from tests.helpers.sandbox import KUBECTL_NODE, STUB_PRELUDE, Sandbox

__all__ = ["FM", "NEW_BOOT", "OLD_BOOT", "OLD_DRIVER", "OLD_TOOLKIT", "NvidiaBox", "fast"]

OLD_DRIVER, OLD_TOOLKIT = "570.195.03-1", "1.17.8-1"
OLD_BOOT, NEW_BOOT = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"

STUB = STUB_PRELUDE + KUBECTL_NODE + r"""# fm_start: the fabric manager starts only with its package at the loaded driver's version (else it exits at once).
fm_start() {
  local v
  v=$(cat "${S}/pkg-${FM_PKG}" 2>/dev/null) || return 1
  v=${v#*:}
  if [[ -e ${S}/mismatch || ${v%%-*} != "$(cat "${S}/loaded")" ]]; then
    rm -f "${S}/running-nvidia-fabricmanager"
    echo "nv-fabricmanager: driver version mismatch" >&2
    return 1
  fi
  touch "${S}/running-nvidia-fabricmanager"
}
case "${name}" in
  dpkg-query)
    [[ -e ${S}/pkg-${!#} ]] || exit 1
    if [[ " $* " == *"db:Status-Status"* ]]; then printf 'installed %s' "$(cat "${S}/pkg-${!#}")"; else cat "${S}/pkg-${!#}"; fi ;;
  apt-mark)
    op=$1; shift
    for p in "$@"; do
      if [[ ${op} == hold ]]; then touch "${S}/hold-${p}"; else rm -f "${S}/hold-${p}"; fi
    done ;;
  apt-get)
    if [[ $1 == install ]]; then
      for a in "$@"; do
        [[ ${a} == *=* ]] || continue
        p=${a%%=*}
        if [[ -e ${S}/hold-${p} && " $* " != *" --allow-change-held-packages "* ]]; then
          echo "E: Held packages were changed and -y was used without --allow-change-held-packages." >&2
          exit 100
        fi
      done
      for a in "$@"; do
        [[ ${a} == *=* ]] || continue
        p=${a%%=*}; v=${a#*=}
        [[ ${v} == *'-*' ]] && v="${v%'-*'}-1"  # apt picks the newest revision of a version glob
        printf '%s' "${v}" >"${S}/pkg-${p}"
        [[ ${p} == "${DRIVER_PKG}" ]] && touch "${S}/mismatch"
      done
    fi ;;
  nvidia-smi)
    if [[ -e ${S}/mismatch ]]; then echo "Failed to initialize NVML: Driver/library version mismatch"; exit 18; fi
    for _ in $(seq 1 "$(cat "${S}/gpus")"); do cat "${S}/loaded"; echo; done ;;
  systemctl)
    unit=${!#}
    case "$1" in
      stop) rm -f "${S}/running-${unit}" ;;
      start | restart)
        if [[ ${unit} == nvidia-fabricmanager ]]; then fm_start || exit 1; else touch "${S}/running-${unit}"; fi ;;
      is-active) [[ -e ${S}/running-${unit} ]] || exit 3 ;;
    esac ;;
  crictl) [[ $1 == ps ]] && printf 'c0ffee01\nc0ffee02\n' ;;
  systemd-run) touch "${S}/reboot-scheduled" ;;
  kubectl)
    kubectl_node "$@"
    rc=$?
    [[ ${rc} -eq 2 ]] || exit "${rc}"
    args=" $* "
    if [[ ${args} == *" -o name "* ]]; then echo "node/$3"; exit 0; fi
    if [[ ${args} == *"bootID"* ]]; then printf '%s True' "$(cat "${S}/boot-id")"; exit 0; fi
    if [[ ${args} == *"kubeletVersion"* ]]; then printf 'v1.35.2 True'; exit 0; fi ;;
esac
exit 0
"""
STUBBED = "apt-get apt-mark dpkg-query nvidia-smi systemctl crictl systemd-run kubectl sleep".split()
#: NVIDIA's fabric manager package from branch 580 on (NVIDIA/gpu-driver-container, ubuntu22.04/precompiled/nvidia-driver).
FM = "nvidia-fabricmanager"


class NvidiaBox(Sandbox):
    """A GPU worker at driver 570 and toolkit 1.17.8 (all held), 8 GPUs, kubelet running, boot :data:`OLD_BOOT`; with
    ``fabric_manager`` (an NVSwitch host) the fabric manager package at the driver's version, held, its service running."""

    def __init__(
        self, base: Path, node: str = "gpu-01", driver_package: str = "cuda-drivers-580", fabric_manager: bool = True, fm_package: str = FM
    ):
        super().__init__(base, node=node)
        self.install_stubs(STUB, STUBBED)
        self.env["DRIVER_PKG"] = driver_package
        self.env["FM_PKG"] = fm_package
        pinned = [(driver_package, OLD_DRIVER), *((p, OLD_TOOLKIT) for p in NVIDIA_TOOLKIT_PACKAGES)]
        if fabric_manager:
            pinned.append((fm_package, OLD_DRIVER))
            self.put("running-nvidia-fabricmanager", "")
        for pkg, version in pinned:
            self.put(f"pkg-{pkg}", version)
            self.put(f"hold-{pkg}", "")
        self.put("loaded", OLD_DRIVER.split("-")[0])
        self.put("gpus", "8")
        self.put("running-kubelet", "")
        self.put("boot-id", OLD_BOOT)

    def script(self, text: str) -> str:
        """The sandbox's rewriting, and the boot id read from the stub state instead of /proc."""
        return super().script(text.replace("/proc/sys/kernel/random/boot_id", f"{self.state}/boot-id"))

    def reboot(self) -> None:
        """What a reboot does: the installed driver's module loads, a new boot id, kubelet starts (it is enabled)."""
        assert self.get("reboot-scheduled") is not None, "no reboot was scheduled"
        (self.state / "reboot-scheduled").unlink()
        (self.state / "mismatch").unlink(missing_ok=True)
        self.put("loaded", (self.get(f"pkg-{self.env['DRIVER_PKG']}") or "").split(":")[-1].split("-")[0])
        self.put("boot-id", NEW_BOOT)
        self.put("running-kubelet", "")
        (self.state / "running-nvidia-fabricmanager").unlink(missing_ok=True)  # enabled: starts at boot if it can
        fabric = self.get(f"pkg-{self.env['FM_PKG']}")
        if fabric is not None and fabric.split(":")[-1].split("-")[0] == self.get("loaded"):
            self.put("running-nvidia-fabricmanager", "")

    def at_target(self, driver: str = "580.95.05-1", toolkit: str = "1.18.2-1", fabric_manager: str | None = None) -> None:
        """What a node the upgrade already moved (or one that joined at the new versions) looks like; the fabric manager
        package (if installed) at ``fabric_manager`` (default: the driver's Debian version) and running."""
        self.put(f"pkg-{self.env['DRIVER_PKG']}", driver)
        self.put("loaded", driver.split(":")[-1].split("-")[0])
        if self.get(f"pkg-{self.env['FM_PKG']}") is not None:
            self.put(f"pkg-{self.env['FM_PKG']}", fabric_manager or driver)
            self.put("running-nvidia-fabricmanager", "")
        for pkg in NVIDIA_TOOLKIT_PACKAGES:
            self.put(f"pkg-{pkg}", toolkit)




def fast(text: str) -> str:
    """A wait script polling twice instead of for 15 minutes (``sleep`` is a stub anyway)."""
    return text.replace("readonly WAIT_TRIES=180\n", "readonly WAIT_TRIES=2\n").replace("readonly WAIT_TRIES=60\n", "readonly WAIT_TRIES=2\n")
