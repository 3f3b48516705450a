"""The NVIDIA container toolkit is pinned and held like the Kubernetes packages (issue 17, section 5).

The toolkit part of a gpu-worker's bootstrap script runs in a sandbox: bash with a fake ``PATH``
whose ``dpkg-query``, ``apt-get`` and ``apt-mark`` record their calls and keep the installed
versions in a state file. Asserted: the first run installs the four packages at
``cluster.nvidiaContainerToolkitVersion`` and holds them; a second run installs nothing and only
re-applies the hold; a host with another version is moved to the pinned one past the hold
(``--allow-change-held-packages``), as is a host where only one of the four packages drifted.
Package names: NVIDIA container toolkit release notes, "Included Packages" (v1.18.2, read 2026-11-24).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from hybridgpu.inventory import inventory_from_documents
from hybridgpu.onprem import plan_onprem
from tests.helpers import ROOT

PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1")

DPKG_QUERY = """#!/bin/bash
pkg="${@: -1}"
version=$(grep -E "^${pkg} " "$STATE" | cut -d' ' -f2)
[[ -n ${version} ]] || exit 1
printf 'installed %s' "${version}"
"""
APT_GET = """#!/bin/bash
echo "apt-get $*" >>"$CALLS"
for arg in "$@"; do
  if [[ ${arg} == *=* ]]; then
    pkg=${arg%%=*}; version=${arg#*=}
    grep -vE "^${pkg} " "$STATE" >"$STATE.new" || true
    echo "${pkg} ${version}" >>"$STATE.new"
    mv "$STATE.new" "$STATE"
  fi
done
"""
APT_MARK = """#!/bin/bash
echo "apt-mark $*" >>"$CALLS"
"""


def _toolkit_block(version: str) -> str:
    site, hosts = list(yaml.safe_load_all((ROOT / "stacks" / "inventory" / "onprem-site-a.yaml").read_text()))[:2]
    site["cluster"]["nvidiaContainerToolkitVersion"] = version
    plan = plan_onprem(inventory_from_documents([("site.yaml", [site, hosts])]))
    script = next(s for s in plan.steps if s.role == "gpu-worker").bootstrap
    start = script.index("NVIDIA_TOOLKIT_PACKAGES=(")
    end = script.index('apt-mark hold "${NVIDIA_TOOLKIT_PACKAGES[@]}" >/dev/null\n', start)
    return f"readonly NVIDIA_TOOLKIT_VERSION={version}\n" + script[start : end + len('apt-mark hold "${NVIDIA_TOOLKIT_PACKAGES[@]}" >/dev/null\n')]


def _sandbox(tmp_path: Path, installed: dict[str, str]) -> tuple[Path, dict[str, str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("dpkg-query", DPKG_QUERY), ("apt-get", APT_GET), ("apt-mark", APT_MARK)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "state"
    state.write_text("".join(f"{p} {v}\n" for p, v in installed.items()))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STATE": str(state), "CALLS": str(tmp_path / "calls")}
    return state, env


def _run(block: str, env: dict[str, str], tmp_path: Path) -> list[str]:
    calls = tmp_path / "calls"
    calls.write_text("")
    script = 'set -euo pipefail\nlog() { echo "hybridgpu: $*"; }\n' + block
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=False, timeout=30)
    assert done.returncode == 0, done.stderr
    return calls.read_text().splitlines()


def _installed(state: Path) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in state.read_text().splitlines())


def test_first_run_installs_pinned_and_holds_then_second_run_only_holds(tmp_path):
    block = _toolkit_block("1.18.2-1")
    state, env = _sandbox(tmp_path, {})
    first = _run(block, env, tmp_path)
    assert len(first) == 2 and first[0].startswith("apt-get install -y -qq --allow-change-held-packages --allow-downgrades")
    assert all(f"{p}=1.18.2-1" in first[0] for p in PACKAGES)
    assert first[1] == f"apt-mark hold {' '.join(PACKAGES)}"
    assert _installed(state) == dict.fromkeys(PACKAGES, "1.18.2-1")
    second = _run(block, env, tmp_path)
    assert second == [f"apt-mark hold {' '.join(PACKAGES)}"]  # idempotent: nothing installed again


def test_another_version_is_moved_to_the_pin(tmp_path):
    state, env = _sandbox(tmp_path, dict.fromkeys(PACKAGES, "1.17.8-1"))
    calls = _run(_toolkit_block("1.18.2-1"), env, tmp_path)
    assert "--allow-change-held-packages" in calls[0]
    assert _installed(state) == dict.fromkeys(PACKAGES, "1.18.2-1")


def test_one_drifted_package_is_brought_back(tmp_path):
    state, env = _sandbox(tmp_path, {**dict.fromkeys(PACKAGES, "1.17.8-1"), "libnvidia-container1": "1.18.2-1"})
    calls = _run(_toolkit_block("1.17.8-1"), env, tmp_path)
    assert calls[0].startswith("apt-get install")
    assert _installed(state) == dict.fromkeys(PACKAGES, "1.17.8-1")
