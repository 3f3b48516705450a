"""``hybridgpu images`` lists the packages the inventory's upgrades install (issue 27, section 3), pinned, in the line form
and in JSON, so a disconnected site mirrors them before ``pulumi up`` runs the upgrade.

What the upgrade scripts install (hybridgpu/render/upgrade.py, the consumer of these versions): ``apt-get install
kubeadm=<step>-*`` and ``kubelet=<step>-* kubectl=<step>-*`` per step (``node_kubeadm_script``/``node_kubelet_script``);
``<driver package>=<version>``, on NVSwitch hosts ``<fabric manager package>=<driver upstream version>-*`` and the four
toolkit packages ``=<toolkitVersion>`` (``nvidia_install_script``); a mirror that lacks one of those versions makes that
``apt-get install`` fail in the middle of the upgrade, a node drained. Expected sets were written before the first run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.render.upgrade import NVIDIA_TOOLKIT_PACKAGES
from hybridgpu.stack.images import upgrade_packages
from tests.helpers import ROOT
from tests.helpers.cases import edited_project, runner

FIXTURES = ROOT / "tests/fixtures"


def _toolkit(version: str) -> set[str]:
    return {f"{p}={version}" for p in NVIDIA_TOOLKIT_PACKAGES}


def _k8s(*versions: str) -> set[str]:
    return {f"{p}={v}-*" for p in ("kubeadm", "kubelet", "kubectl") for v in versions}


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        # 2 x 8 H100 SXM (NVSwitch) and a 4 x H100 board: the fabric manager of branch 580 at the driver's version.
        ("upgrade_nvidia/pass/driver-and-toolkit", {"cuda-drivers-580=580.95.05-1", "nvidia-fabricmanager=580.95.05-*"} | _toolkit("1.18.2-1")),
        ("upgrade_nvidia/pass/fabric-manager-cuda-570", {"cuda-drivers-570=570.195.03-1", "nvidia-fabricmanager-570=570.195.03-*"} | _toolkit("1.18.2-1")),
        ("upgrade_nvidia/pass/toolkit-only-on-nvswitch", _toolkit("1.18.2-1")),  # the driver stays: so does its fabric manager
        ("upgrade_nvidia/pass/debian-driver-four-gpu-boards", {"nvidia-driver=550.163.01-2"} | _toolkit("1.18.2-1")),
        ("upgrade_pulumi/pass/two-minors-via", _k8s("1.36.4", "1.37.1")),
        ("upgrade_pulumi/pass/already-there", set()),  # `to` is what runs: nothing moves
    ],
)
def test_upgrade_packages(fixture, expected):
    packages, _ = upgrade_packages(load_inventory(FIXTURES / f"{fixture}.yaml"))
    assert packages == expected


def test_upgrade_packages_without_host_drivers():
    """``nvidiaToolkit: false`` (the GPU Operator brings the driver): ``upgrades.nvidia`` does not run on the hosts."""
    inventory = load_inventory(FIXTURES / "upgrade_nvidia/pass/driver-and-toolkit.yaml")
    assert upgrade_packages(inventory, host_driver=False) == (set(), set())


class _NoReleases:
    """The preview's result for a run that recorded no Helm release (the packages come from the inventory alone)."""

    def of_type(self, _type: str) -> list[object]:
        return []


@pytest.fixture
def upgrading_site(scratch_project, tmp_path, monkeypatch) -> Path:
    """A scratch project whose onprem stack reads the example inventory with Kubernetes 1.35.2 -> 1.36.4 -> 1.37.1 and the
    NVIDIA driver 580.95.05 / toolkit 1.19.0 upgrades; the preview is replaced (no charts) to keep the test in-process."""
    docs = list(yaml.safe_load_all((ROOT / "stacks/inventory/onprem-site-a.yaml").read_text()))
    site = next(d for d in docs if d.get("kind") == "Site")
    site["upgrades"] = {
        "kubernetes": {"to": "1.37.1", "via": ["1.36.4"]},
        "nvidia": {"driver": {"package": "cuda-drivers-580", "version": "580.95.05-1"}, "toolkitVersion": "1.19.0-1"},
    }
    inventory = tmp_path / "site.yaml"
    inventory.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    monkeypatch.setattr("hybridgpu.cli.images.run_preview", lambda *a, **k: _NoReleases())

    def edit(config: dict) -> None:
        config["hybridgpu:onprem"]["inventory"] = [str(inventory)]

    return edited_project(scratch_project, "onprem", edit)


def test_images_lists_the_upgrade_packages_in_both_forms(upgrading_site):
    root = str(upgrading_site)
    text = runner.invoke(app, ["images", "onprem", "--root", root])
    as_json = runner.invoke(app, ["images", "onprem", "--root", root, "--json"])
    assert text.exit_code == 0 and as_json.exit_code == 0, text.output + as_json.output
    data = json.loads(as_json.output)
    expected = (
        _k8s("1.35.2", "1.36.4", "1.37.1")  # what bootstrap installs, then each step
        | _toolkit("1.18.2-1")  # cluster.nvidiaContainerToolkitVersion (bootstrap of a host not moved yet)
        | _toolkit("1.19.0-1")
        | {"cuda-drivers-580=580.95.05-1", "nvidia-fabricmanager=580.95.05-*"}  # 8 x H100/A100 SXM hosts: NVSwitch
    )
    assert set(data["packages"]) == expected and data["packages"] == sorted(expected)
    lines = text.output.splitlines()
    assert lines[lines.index("# packages") + 1 : lines.index("# packages") + 1 + len(expected)] == data["packages"]
    assert "# unpinned: kubeadm/kubelet/kubectl 1.37.1 (upgrades.kubernetes): Debian revision (`-*`) is whatever pkgs.k8s.io (or the mirror) holds" in lines
    assert any(line.startswith("# unpinned: nvidia-fabricmanager 580.95.05 (upgrades.nvidia") for line in lines)
