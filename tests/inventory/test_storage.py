"""The Site document's ``storage`` section through `hybridgpu inventory validate` (hybridgpu.inventory.storage).

The on-prem cases of tests/fixtures/storage/cases.yaml that edit only the inventory run here through the
inventory command too: the same verdict as `hybridgpu validate onprem`, since the rule reads the inventory
alone (active GPU workers x ``readGBpsPerNode``, or ``readGBps``, against the sum of the servers' ``readGBps``).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.inventory.storage import storage_issues
from tests.helpers import ROOT
from tests.helpers.cases import edited_inventory

runner = CliRunner(env={"COLUMNS": "400"})
CASES: list[dict[str, Any]] = [
    c for c in yaml.safe_load((ROOT / "tests/fixtures/storage/cases.yaml").read_text()) if c["stack"] == "onprem" and "storage" in c
]
INVENTORY = ROOT / "stacks/inventory/onprem-site-a.yaml"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_inventory_validate_verdict(tmp_path, case):
    path = edited_inventory(tmp_path / "site.yaml", storage=case["storage"])
    result = runner.invoke(app, ["inventory", "validate", str(path)])
    output = " ".join(result.output.split())
    assert "Traceback" not in output
    if case["verdict"] == "pass":
        assert result.exit_code == 0, output
    else:
        assert result.exit_code != 0, output
        for word in case["expect"]:
            if word != "onprem-site-a.yaml":  # the copy has another name here
                assert word in output, (word, output)


def test_example_site_declares_nfs_that_reaches_its_target():
    inventory = load_inventory([INVENTORY])
    storage = inventory.site.storage
    assert storage is not None and storage.type == "nfs"
    workers = sum(1 for h in inventory.gpu_workers if h.state == "active")
    assert (workers, storage.read_gbps) == (4, 48)
    assert storage_issues(storage, "site.yaml", workers) == []
    # A fifth active worker would need 50 GB/s, more than the NAS's 48: refused.
    assert [i.code for i in storage_issues(storage, "site.yaml", 5)] == ["storage-throughput"]


def test_only_active_gpu_workers_count(tmp_path):
    # The example has 6 GPU workers: dgx-h100-04 absent and a100-02 cordoned, so 4 read the dataset.
    # 40 GB/s on one server passes; bringing a100-02 back (active) makes it 5 x 10 = 50 GB/s: refused.
    docs = list(yaml.safe_load_all(INVENTORY.read_text()))
    site = next(d for d in docs if d.get("kind") == "Site")
    site["storage"] = {"type": "nfs", "exportPath": "/d", "servers": [{"address": "10.21.0.101", "readGBps": 40}]}
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    assert runner.invoke(app, ["inventory", "validate", str(path)]).exit_code == 0
    for doc in docs:
        for host in doc.get("hosts", []):
            if host["hostname"] == "a100-02":
                host["state"] = "active"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    result = runner.invoke(app, ["inventory", "validate", str(path)])
    assert result.exit_code != 0 and "5 active GPU worker(s) = 50 GB/s" in " ".join(result.output.split())
