"""The `hybridgpu` command line (typer's CliRunner, in-process)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers.scratch import example_stack, write_stack

runner = CliRunner(env={"COLUMNS": "220"})


def test_preview_all_example_stacks_writes_manifests(root, tmp_path):
    result = runner.invoke(app, ["preview", "--root", str(root), "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.output)
    assert [s["stack"] for s in summaries] == ["dev", "hybrid", "onprem", "prod"]
    by_stack = {s["stack"]: s for s in summaries}
    prod = by_stack["prod"]
    pools = {p["name"]: p for p in prod["nodePools"]}
    assert pools["h100-reserved"]["maxGpus"] == 32 and pools["h100-reserved"]["instanceTypes"] == ["p5.48xlarge"]
    assert pools["h100-spot"]["capacityTypes"] == ["spot"]
    assert (tmp_path / "prod" / "manifests" / "nodepool-h100-spot.yaml").is_file()
    assert (tmp_path / "dev" / "helm-releases.yaml").is_file()
    assert prod["byType"]["aws:eks/cluster:Cluster"] == 1
    onprem = by_stack["onprem"]
    assert [h["host"] for h in onprem["onprem"]][:3] == ["cp-01", "cp-02", "cp-03"]
    assert [h["step"] for h in onprem["onprem"]][:2] == ["kubeadm init", "kubeadm join"]
    assert {h["host"] for h in onprem["onprem"] if h["drainAfterJoin"]} == {"a100-02"}
    assert onprem["onpremSkipped"] == ["dgx-h100-04"]


def test_preview_table_output(root, tmp_path):
    result = runner.invoke(app, ["preview", "dev", "--root", str(root), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "spot-g5-g6" in result.output and "hybridgpu:index:Karpenter" in result.output


def test_preview_bad_config_exits_2_and_writes_nothing(project, tmp_path):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["nodePools"][0]["weight"] = 0
    write_stack(project, "dev", data)
    out = tmp_path / "out"
    result = runner.invoke(app, ["preview", "--root", str(project), "--out", str(out)])
    assert result.exit_code == 2
    assert "stacks/Pulumi.dev.yaml" in result.output and "nodePools[0].weight" in result.output
    assert not out.exists()


def test_validate_and_catalog(root):
    ok = runner.invoke(app, ["validate", "prod", "--root", str(root)])
    assert ok.exit_code == 0 and "4 GPU NodePool" in ok.output
    missing = runner.invoke(app, ["validate", "nope", "--root", str(root)])
    assert missing.exit_code == 2 and "no such stack file" in missing.output
    cat = runner.invoke(app, ["catalog", "--family", "p5"])
    assert cat.exit_code == 0 and "p5.48xlarge" in cat.output


def test_preview_with_broken_inventory_names_file_host_field_and_writes_nothing(scratch_project, tmp_path):
    project = scratch_project(copy=["stacks/Pulumi.onprem.yaml", "stacks/inventory/onprem-site-a.yaml"])
    inventory = project / "stacks" / "inventory" / "onprem-site-a.yaml"
    text = inventory.read_text()
    # cp-02 gets cp-01's management address: a duplicate the offline validation must catch.
    broken = text.replace("10.20.0.12", "10.20.0.11", 1)
    assert broken != text
    inventory.write_text(broken)
    out = tmp_path / "out"
    result = runner.invoke(app, ["preview", "onprem", "--root", str(project), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "stacks/inventory/onprem-site-a.yaml" in result.output
    assert "cp-02" in result.output and "addresses.management" in result.output
    assert not out.exists()
