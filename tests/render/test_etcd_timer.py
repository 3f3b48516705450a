"""The etcd snapshot timer ``pulumi up`` installs on every control plane, from the inventory, in the stub sandbox.

The script is the plan's (:attr:`hybridgpu.onprem.OnPremPlan.etcd_snapshot_timer`, rendered from the inventory's
``upgrades.etcdSnapshots``); tests/components/test_onprem_upgrades.py checks under Pulumi's mocks that each control
plane gets it after its join. Here it runs in the sandbox of tests/helpers/sandbox.py with the upgrade stubs
(systemctl records enable/disable): units written with the inventory's schedule and retention, ``systemctl enable
--now``, nothing rewritten or reloaded on a second run (``pulumi up`` runs it again when the script changes), and
with ``enabled: false`` the timer, service and installed script removed. systemd semantics relied on:
systemd.timer(5) ``OnCalendar=``, ``Persistent=``; ``systemctl enable --now`` (systemctl(1)).
"""

from __future__ import annotations

import yaml

from hybridgpu.inventory import load_inventory
from hybridgpu.onprem import plan_onprem
from hybridgpu.render.upgrade import SNAPSHOT_BIN, SNAPSHOT_UNIT
from tests.helpers import ROOT
from tests.render.test_upgrade_sandbox import UpgradeBox

FIXTURES = ROOT / "tests/fixtures/upgrade_pulumi"


def test_the_snapshot_timer_installs_on_a_control_plane_and_changes_nothing_the_second_time(tmp_path):
    """The timer script the component sends (with-policy: retention 30) in the sandbox: unit and timer written,
    ``systemctl enable --now``; a second run writes nothing and does not reload systemd."""
    plan = plan_onprem(load_inventory(FIXTURES / "pass/with-policy.yaml"))
    box = UpgradeBox(tmp_path)
    first = box.run(plan.etcd_snapshot_timer)
    assert first.returncode == 0, first.stderr
    assert "systemctl daemon-reload" in box.calls and f"systemctl enable --now {SNAPSHOT_UNIT}.timer" in box.calls
    timer = box.file(f"/etc/systemd/system/{SNAPSHOT_UNIT}.timer").read_text()
    assert "OnCalendar=*-*-* 03:00:00" in timer
    assert "keeps 30 in" in box.file(f"/etc/systemd/system/{SNAPSHOT_UNIT}.service").read_text()
    second = box.run(plan.etcd_snapshot_timer)
    assert second.returncode == 0 and "systemctl daemon-reload" not in box.calls


def test_disabled_in_the_inventory_removes_what_an_earlier_run_installed(tmp_path):
    """``etcdSnapshots.enabled: false``: the plan's script disables the timer and removes the three files."""
    box = UpgradeBox(tmp_path)
    assert box.run(plan_onprem(load_inventory(FIXTURES / "pass/one-minor.yaml")).etcd_snapshot_timer).returncode == 0
    assert box.file(f"/etc/systemd/system/{SNAPSHOT_UNIT}.timer").exists()
    docs = list(yaml.safe_load_all((FIXTURES / "pass/one-minor.yaml").read_text()))
    docs[0]["upgrades"]["etcdSnapshots"] = {"enabled": False}
    off = tmp_path / "off.yaml"
    off.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    script = plan_onprem(load_inventory(off)).etcd_snapshot_timer
    proc = box.run(script)
    assert proc.returncode == 0, proc.stderr
    assert f"systemctl disable --now {SNAPSHOT_UNIT}.timer" in box.calls
    for path in (f"/etc/systemd/system/{SNAPSHOT_UNIT}.timer", f"/etc/systemd/system/{SNAPSHOT_UNIT}.service", SNAPSHOT_BIN):
        assert not box.file(path).exists(), path
