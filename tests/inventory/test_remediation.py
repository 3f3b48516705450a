"""The inventory's GPU failure policy and host lifecycle, through the CLI.

* ``remediation`` (Site) and ``hosts[].remediation``: the fixtures under
  tests/fixtures/remediation/{pass,fail}/ go through ``hybridgpu inventory validate`` and ``render``.
  Headers: ``# verdict:``; ``# expect: <text>`` (fail: in the error output); ``# rendered: <file>: <text>``,
  ``# not-rendered: <file>``, ``# not-rendered-text: <file>: <text>`` and ``# values: <dotted.path> = <yaml>``
  (pass: what ``render`` writes, the last one in ``gpu-health/nvsentinel-values.yaml``).
* ``hybridgpu inventory cordon|retire|restore HOST``: the file changes in one place only, comments and
  layout kept; a second run writes nothing; an invalid result writes nothing.
* Topology: a retired host's GPUs leave every quota derived from the inventory (the burst plan's
  on-prem capacity, the Kueue Topology domains); a restored host keeps its rack/block labels.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from hybridgpu.burst.plan import onprem_capacity
from hybridgpu.catalog import load_catalog
from hybridgpu.cli import app
from hybridgpu.inventory import InventoryError, load_inventory
from hybridgpu.inventory.lifecycle import set_host_state, state_edit
from hybridgpu.k8s import TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL
from hybridgpu.render.topology import host_topology_labels, topology_domains
from tests.helpers import ROOT
from tests.helpers.inventory_cases import cases, header, refusal_tests, relative, runner

FIXTURES = ROOT / "tests" / "fixtures" / "remediation"
PASS, FAIL = cases(FIXTURES)
SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"


def _name(path: Path) -> str:
    return relative(path)


test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)


def _dig(values, path: str):
    for part in path.split("."):
        values = values[int(part)] if isinstance(values, list) else values[part]
    return values


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass(fixture, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    name = _name(fixture)
    result = runner.invoke(app, ["inventory", "validate", name])
    assert result.exit_code == 0, result.output
    out = tmp_path / "r"
    result = runner.invoke(app, ["inventory", "render", name, "--out", str(out)])
    assert result.exit_code == 0, result.output
    for spec in header(fixture, "rendered"):
        file, text = spec.split(": ", 1)
        assert text in (out / file).read_text(), f"{text!r} not in {file}"
    for file in header(fixture, "not-rendered"):
        assert not (out / file).exists(), file
    for spec in header(fixture, "not-rendered-text"):
        file, text = spec.split(": ", 1)
        assert text not in (out / file).read_text(), f"{text!r} in {file}"
    for spec in header(fixture, "values"):
        path, expected = spec.split(" = ", 1)
        values = yaml.safe_load((out / "gpu-health" / "nvsentinel-values.yaml").read_text())
        assert _dig(values, path) == yaml.safe_load(expected), spec


def test_render_is_byte_identical_twice(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    name = _name(FIXTURES / "pass" / "reset-gpu-reset.yaml")
    for run in ("a", "b"):
        assert runner.invoke(app, ["inventory", "render", name, "--out", str(tmp_path / run)]).exit_code == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


# --------------------------------------------------------------------------- lifecycle through the CLI


def _copy(tmp_path: Path, source: Path = SAMPLE) -> Path:
    target = tmp_path / source.name
    shutil.copy(source, target)
    target.chmod(0o640)
    return target


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b, strict=True) if x != y]


def test_host_through_cordon_retire_restore(tmp_path):
    inventory = _copy(tmp_path, FIXTURES / "pass" / "defaults.yaml")
    original = inventory.read_text()
    # gpu-01 has no `state` key; the first verb adds one line after its hostname.
    result = runner.invoke(app, ["inventory", "cordon", "gpu-01", str(inventory)])
    assert result.exit_code == 0, result.output
    assert "gpu-01: active -> cordoned" in result.output and "drain.sh" in result.output
    cordoned = inventory.read_text()
    assert cordoned == original.replace("  - hostname: gpu-01\n", "  - hostname: gpu-01\n    state: cordoned\n", 1)
    assert load_inventory(inventory).host("gpu-01").state == "cordoned"

    again = runner.invoke(app, ["inventory", "cordon", "gpu-01", str(inventory)])
    assert again.exit_code == 0 and "already cordoned" in again.output and "nothing written" in again.output
    assert inventory.read_text() == cordoned

    assert runner.invoke(app, ["inventory", "retire", "gpu-01", str(inventory)]).exit_code == 0
    retired = inventory.read_text()
    assert _changed_lines(cordoned, retired) == [("    state: cordoned", "    state: absent")]

    assert runner.invoke(app, ["inventory", "restore", "gpu-01", str(inventory)]).exit_code == 0
    assert _changed_lines(retired, inventory.read_text()) == [("    state: absent", "    state: active")]
    assert inventory.stat().st_mode & 0o777 == 0o640  # the mode survives the atomic replace
    assert [p.name for p in tmp_path.iterdir()] == [inventory.name]  # no temporary file left


def test_existing_state_value_is_replaced_in_place_with_its_comment(tmp_path):
    inventory = _copy(tmp_path)
    text = inventory.read_text()
    result = runner.invoke(app, ["inventory", "cordon", "dgx-h100-01", str(inventory)])
    assert result.exit_code == 0, result.output
    (old, new), = _changed_lines(text, inventory.read_text())
    assert old == "    state: active                       # in service"
    assert new == "    state: cordoned                       # in service"  # the comment is kept (the value is longer)


def test_every_inventory_rule_applies_to_the_change(tmp_path):
    # The sample's NAS reads 48 GB/s for 4 active GPU workers at 10 GB/s each; a fifth is refused, nothing written.
    inventory = _copy(tmp_path)
    before = inventory.read_bytes()
    result = runner.invoke(app, ["inventory", "restore", "dgx-h100-04", str(inventory)])
    assert result.exit_code == 2, result.output
    assert "storage.servers: the storage servers read 48 GB/s" in result.output and "5 active GPU worker(s)" in result.output
    assert inventory.read_bytes() == before


def test_flow_mapping_host_gets_state_inside_the_braces(tmp_path):
    text = (
        "hosts:\n"
        "  - {hostname: gpu-01, role: gpu-worker}  # a flow mapping\n"
        "  - hostname: gpu-02\n"
        "    role: gpu-worker\n"
    )
    assert state_edit(text, "gpu-01", "absent").splitlines()[1] == "  - {hostname: gpu-01, state: absent, role: gpu-worker}  # a flow mapping"
    assert state_edit(text, "gpu-02", "cordoned").splitlines()[2:] == ["  - hostname: gpu-02", "    state: cordoned", "    role: gpu-worker"]
    with pytest.raises(KeyError):
        state_edit(text, "gpu-03", "absent")
    crlf = text.replace("\n", "\r\n")
    assert state_edit(crlf, "gpu-02", "absent") == crlf.replace("gpu-02\r\n", "gpu-02\r\n    state: absent\r\n")


def test_symlinked_inventory_keeps_its_link(tmp_path):
    target = _copy(tmp_path, FIXTURES / "pass" / "defaults.yaml")
    link = tmp_path / "site.yaml"
    link.symlink_to(target.name)
    assert set_host_state([link], "gpu-01", "cordoned").written
    assert link.is_symlink() and "state: cordoned" in target.read_text()


def test_invalid_result_writes_nothing(tmp_path):
    inventory = _copy(tmp_path, ROOT / "tests" / "fixtures" / "remediation" / "pass" / "defaults.yaml")
    before = inventory.read_bytes()
    result = runner.invoke(app, ["inventory", "retire", "cp-01", str(inventory)])  # the only control plane
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "no control-plane host is active" in result.output and "fix:" in result.output
    assert inventory.read_bytes() == before
    result = runner.invoke(app, ["inventory", "cordon", "gpu-99", str(inventory)])
    assert result.exit_code == 2 and "host gpu-99: no such host" in result.output and "gpu-01" in result.output
    assert inventory.read_bytes() == before


def test_edits_the_file_that_declares_the_host(tmp_path):
    site_text, hosts_text = (ROOT / "tests/fixtures/remediation/pass/defaults.yaml").read_text().split("---\n")
    (tmp_path / "a-site.yaml").write_text(site_text)
    (tmp_path / "b-hosts.yaml").write_text("---\n" + hosts_text)
    change = set_host_state([tmp_path], "gpu-02", "absent")
    assert change.file == str(tmp_path / "b-hosts.yaml") and change.written
    assert (tmp_path / "a-site.yaml").read_text() == site_text
    assert change.inventory.host("gpu-02").state == "absent"
    with pytest.raises(InventoryError) as err:
        set_host_state([tmp_path], "cp-01", "cordoned")
    assert err.value.codes == ["no-active-control-plane"]


# --------------------------------------------------------------------------- quotas and topology


def test_retired_host_leaves_every_quota_and_restored_host_keeps_rack_and_block(tmp_path):
    inventory = _copy(tmp_path)
    catalog = load_catalog()
    before = load_inventory(inventory)
    host = next(h for h in before.gpu_workers if h.state == "active" and h.rack is not None and not h.gpu.mig_layouts)
    model, count = host.gpu.model, host.gpu.count
    labels = host_topology_labels(host)
    capacity = onprem_capacity(before, catalog)
    rack_gpus = topology_domains(before.hosts, TOPOLOGY_RACK_LABEL)[host.rack]

    retired = set_host_state([inventory], host.hostname, "absent").inventory
    after = onprem_capacity(retired, catalog)
    assert after.gpus.get(model, 0) == capacity.gpus[model] - count
    assert after.totals()["nvidia.com/gpu"] == capacity.totals()["nvidia.com/gpu"] - count
    assert topology_domains(retired.hosts, TOPOLOGY_RACK_LABEL).get(host.rack, 0) == rack_gpus - count
    assert host.hostname not in topology_domains(retired.hosts, "kubernetes.io/hostname")

    cordoned = set_host_state([inventory], host.hostname, "cordoned").inventory
    assert onprem_capacity(cordoned, catalog).gpus.get(model, 0) == capacity.gpus[model] - count  # unschedulable: no quota either

    restored = set_host_state([inventory], host.hostname, "active").inventory
    assert host_topology_labels(restored.host(host.hostname)) == labels
    assert labels.get(TOPOLOGY_RACK_LABEL) == host.rack and labels.get(TOPOLOGY_BLOCK_LABEL) == host.block
    assert onprem_capacity(restored, catalog) == capacity
