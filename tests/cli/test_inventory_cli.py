"""`hybridgpu inventory validate|render|export` end to end (typer's CliRunner, in-process), on the
fixtures under tests/fixtures/inventory_cli/ with their verdicts.

Each fixture says in its header what it is and what must happen:

* ``# verdict: pass`` or ``# verdict: fail``;
* ``# expect: <text>`` (fail): text the error output must contain (file, host, field and message);
* ``# rendered: <path>: <text>`` (pass): text a file written by ``inventory render`` must contain.

Every must-pass fixture also goes through ``render`` and ``export --format kubespray``; every
must-fail one leaves nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hybridgpu.cli import app
from hybridgpu.errors import MAX_SHOWN_ISSUES
from tests.helpers import ROOT
from tests.helpers.inventory_cases import cases, header, refusal_tests, relative, runner

FIXTURES = ROOT / "tests" / "fixtures" / "inventory_cli"
PASS, FAIL = cases(FIXTURES)


def _relative(path: Path) -> str:
    return relative(path)


test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass(fixture, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    name = _relative(fixture)
    result = runner.invoke(app, ["inventory", "validate", name])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"ok {name}: site lab: ")

    out = tmp_path / "rendered"
    result = runner.invoke(app, ["inventory", "render", name, "--out", str(out)])
    assert result.exit_code == 0, result.output
    plan = (out / "plan.txt").read_text().splitlines()
    hosts = [line.split()[1] for line in plan[1:] if not line.startswith("skipped")]
    for host in hosts:
        config = (out / host / "kubeadm.yaml").read_text()
        assert "${BOOTSTRAP_TOKEN}" in config  # secrets stay placeholders
        assert list(yaml.safe_load_all(config))  # parses
        assert (out / host / "bootstrap.sh").read_text().startswith("#!")
        assert (out / host / "kubeadm-run.sh").stat().st_mode & 0o111
        assert (out / host / "kubeadm.yaml").stat().st_mode & 0o077 == 0
    for spec in header(fixture, "rendered"):
        path, _, text = spec.partition(": ")
        assert text in (out / path).read_text(), f"{text!r} not in {path}"

    result = runner.invoke(app, ["inventory", "export", "--format", "kubespray", name, "--out", str(tmp_path / "ks")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ks" / "inventory.ini").is_file()


def test_render_is_byte_identical_across_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    runs = []
    for n in (1, 2):
        out = tmp_path / str(n)
        assert runner.invoke(app, ["inventory", "render", "stacks/inventory/onprem-site-a.yaml", "--out", str(out)]).exit_code == 0
        runs.append({p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert runs[0] == runs[1] and len(runs[0]) > 20


def test_split_example_validates_and_renders(tmp_path, monkeypatch):
    """docs/onprem.md offers it as an inventory: it must pass (issue 17: it used calico)."""
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["inventory", "validate", "stacks/inventory/split-example"])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["inventory", "render", "stacks/inventory/split-example", "--out", str(tmp_path)]).exit_code == 0


def test_error_output_is_capped_at_fifty_issues(tmp_path):
    """A repeated mistake on many hosts prints the first 50 issues, then the count of the rest."""
    sample = list(yaml.safe_load_all((FIXTURES / "pass" / "minimal.yaml").read_text()))
    worker = sample[1]["hosts"][1]
    hosts = [sample[1]["hosts"][0]]
    for i in range(120):
        host = {**worker, "hostname": f"gpu-{i:03d}", "addresses": {"management": f"10.50.0.{100 + i}"}}
        host["labels"] = {"node-role.kubernetes.io/worker": ""}
        hosts.append(host)
    sample[1]["hosts"] = hosts
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump_all(sample))
    result = runner.invoke(app, ["inventory", "validate", str(path)])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0] == f"error: 120 problems in inventory {path}:"
    assert sum(line.startswith("  - ") for line in lines) == MAX_SHOWN_ISSUES
    assert lines[-1] == "  ... and 70 more problems not shown (fix the ones above and run again)"
    assert len(lines) == 1 + 2 * MAX_SHOWN_ISSUES + 1


def test_missing_path_is_an_error_not_a_traceback(tmp_path):
    result = runner.invoke(app, ["inventory", "validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "no such file or directory" in result.output


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass_fixtures_also_preview(fixture, scratch_project, tmp_path):
    """What `inventory validate` passes, the program runs: `hybridgpu preview` under Pulumi's mocks
    on a stack naming the fixture (the onprem example stack without its burst plan) exits 0."""

    def edit(config):
        config["hybridgpu:onprem"]["inventory"] = [str(fixture)]
        config.pop("hybridgpu:burst", None)
        # Fixtures use GPU models without packaged on-prem cost data (L40S, A30): no OpenCost price.
        config.pop("hybridgpu:economics", None)

    project = scratch_project(stacks=["onprem"], stack_edits={"onprem": edit})
    result = runner.invoke(app, ["preview", "onprem", "--root", str(project), "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output


def test_validate_json_gives_the_summary_and_the_racks(monkeypatch):
    """Issue 29: `inventory validate --json` (one document); the sample's racks as docs/onprem.md shows them:
    r12 two DGX H100 (2 x 10.2 kW) of 25 kW; r20 two DGX A100 (one cordoned, still counted) of 15 kW."""
    import json

    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["inventory", "validate", "stacks/inventory/onprem-site-a.yaml", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["site"] == "site-a" and doc["hosts"]["byState"]["absent"] == 1
    racks = {r["rack"]: r for r in doc["racks"]}
    assert (racks["r12"]["drawKw"], racks["r12"]["budgetKw"], racks["r12"]["hosts"]) == (20.4, 25.0, 2)
    assert (racks["r20"]["drawKw"], racks["r20"]["marginKw"]) == (13.0, 2.0)
