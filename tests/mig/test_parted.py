"""The one mig-parted renderer (hybridgpu.mig.parted) and its two callers."""

from __future__ import annotations

import ast

import pytest

from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.mig.parted import ALL_DEVICES, MIG_PARTED_VERSION, MigPartedEntry, render_mig_parted
from hybridgpu.mig.planner import GpuPool, MigDemand, plan_mig
from hybridgpu.render.nvidia import mig_parted_config
from tests.helpers import ROOT


def test_entries_follow_the_v1_spec():
    doc = render_mig_parted(
        {
            "mixed": [
                MigPartedEntry(devices=[0, 1], mig_devices={"1g.10gb": 7}, device_filter=("0x233010DE",)),
                MigPartedEntry(devices=(2,)),
            ],
            "off": [MigPartedEntry(devices=ALL_DEVICES)],
        }
    )
    assert doc == {
        "version": MIG_PARTED_VERSION,
        "mig-configs": {
            "mixed": [
                {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}, "device-filter": ["0x233010DE"]},
                {"devices": [2], "mig-enabled": False},
            ],
            "off": [{"devices": "all", "mig-enabled": False}],
        },
    }


def test_entries_render_fresh_objects():
    entry = MigPartedEntry(devices=[0], mig_devices={"1g.10gb": 1}, device_filter=["0x233010DE"])
    first, second = entry.as_dict(), entry.as_dict()
    assert first == second
    assert first["devices"] is not second["devices"] and first["device-filter"] is not second["device-filter"]


@pytest.mark.parametrize("devices", ["some", [], [-1], [True], ["0"]])
def test_bad_devices_are_refused(devices):
    with pytest.raises(ValueError, match="devices"):
        MigPartedEntry(devices=devices)


def test_a_config_without_entries_is_refused():
    with pytest.raises(ValueError, match="at least one"):
        render_mig_parted({"empty": []})


def test_both_callers_render_through_it():
    plan = plan_mig(MigDemand("H100-80GB", {"1g.10gb": 7}), [GpuPool("dgx", "H100-80GB", 8)])
    planned = plan.mig_parted_document()
    assert planned["version"] == MIG_PARTED_VERSION and planned["mig-configs"] == plan.mig_parted_configs()
    layered = mig_parted_config(NvidiaConfig(migLayouts=[{"name": "h100-7", "gpuModel": "H100-80GB", "layout": {"1g.10gb": 7}}]))
    assert layered["version"] == MIG_PARTED_VERSION
    assert [e["device-filter"] for e in layered["mig-configs"]["h100-7"]] == [["0x233010DE", "0x233110DE"]]


def test_only_the_renderer_builds_the_file_format():
    """No other module builds a dict with mig-parted's keys (reading them, as a policy does, is fine)."""
    keys = {"mig-configs", "mig-enabled", "mig-devices", "device-filter"}
    found = []
    for path in sorted((ROOT / "hybridgpu").rglob("*.py")):
        if path.name == "parted.py" and path.parent.name == "mig":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                built = {k.value for k in node.keys if isinstance(k, ast.Constant)} & keys
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {key}" for key in sorted(built)]
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and target.slice.value in keys:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {target.slice.value}")
    assert found == []
