"""`hybridgpu burst simulate` with job shapes (pods x GPUs per pod, issue 30) and Capacity Blocks on the
trace's time axis (issue 28): the fixture cases of tests/fixtures/burst_traces/cases.yaml, in-process.

Upstream behaviour the verdicts rest on: Kueue v0.19.2 (kubernetes-sigs/kueue, ``pkg/scheduler/flavorassigner``)
admits a workload's pod sets whole; Karpenter aws/karpenter-provider-aws v1.14.1 offers only ``active``
reservations (``pkg/providers/capacityreservation/types.go``) and deletes a block's nodes 40 minutes before
its end (``pkg/apis/v1/ec2nodeclass_status.go``), read 2026-11-27.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hybridgpu.cli.burst import burst_app as app  # the command group alone: building the whole app per call costs ~0.1 s
from tests.helpers import ROOT
from tests.helpers.cases import assert_fixture_counts, case_ids, load_cases
from tests.helpers.scratch import example_plan

CASES = load_cases("tests/fixtures/burst_traces/cases.yaml")
runner = CliRunner(env={"COLUMNS": "400", "HYBRIDGPU_NOW": "2026-11-27T12:00:00Z"})
MANUAL = ["--onprem-gpus", "4", "--spot-gpus", "8", "--on-demand-gpus", "8", "--spot-price", "1", "--on-demand-price", "2"]
SMALL = str(ROOT / "examples" / "traces" / "small.csv")
BLOCK_POOL = {
    "name": "h100-block",
    "nodeClass": "h100",  # the prod stack's class without EFA: a topology-aware flavor over a cold pool is refused
    "capacityTypes": ["reserved"],
    "instanceTypes": ["p5.48xlarge"],
    "gpuLimit": 16,
    "capacityBlocks": [
        {
            "id": "cr-0123456789abcdef0",
            "instanceType": "p5.48xlarge",
            "instanceCount": 2,
            "start": "2026-12-01T11:30:00Z",
            "end": "2026-12-08T11:30:00Z",
            "upfrontFeeUsd": 40000,
        }
    ],
}


def _args(case: dict[str, Any], tmp_path: Path, scratch_project) -> list[str]:
    trace = SMALL
    if "trace" in case:
        (tmp_path / "t.csv").write_text(case["trace"])
        trace = str(tmp_path / "t.csv")
    out = ["simulate", "--trace", trace]
    for arg in case["args"]:
        if arg == "MANUAL":
            out += MANUAL
        elif arg == "{root}":
            out.append(str(ROOT))
        elif arg == "{blocks}":
            root = scratch_project(plan=example_plan(), stack_edits={"prod": lambda c: c["hybridgpu:cloud"]["nodePools"].append(BLOCK_POOL)})
            out.append(str(root))
        else:
            out.append(str(arg))
    return out


def _field(result: dict[str, Any], path: str) -> Any:
    value: Any = result
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_case(case, tmp_path, scratch_project):
    args = _args(case, tmp_path, scratch_project)
    check = case.get("check")
    result = runner.invoke(app, [*args, "--json"] if check and not case.get("expect") else args)
    output = " ".join(result.output.split())
    assert "Traceback" not in output
    if case["verdict"] == "fail":
        assert result.exit_code == 2, output
    else:
        assert result.exit_code == 0, output
    for word in case.get("expect", []):
        assert word in output, (word, output)
    if check:
        data = json.loads(result.output if not case.get("expect") else runner.invoke(app, [*args, "--json"]).output)
        for path, want in check.items():
            got = [_field(r, path) for r in data["results"]]
            assert got == pytest.approx(want), (path, got)


def test_fixture_counts():
    assert_fixture_counts(CASES)


def test_json_of_a_run_without_blocks_is_unchanged():
    data = json.loads(runner.invoke(app, ["simulate", "--trace", SMALL, *MANUAL, "--json"]).output)
    assert "start" not in data and all("blocks" not in r and "unfinished" not in r for r in data["results"])


# ---------------------------------------------------------------- job files into trace rows (`burst trace --job-file`)

MIXED = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mixed}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: m, resources: {limits: {nvidia.com/gpu: 1}}}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: 8}}}]}}}
"""
CPU_ONLY = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: cpu}\nspec: {template: {spec: {containers: [{name: c}]}}}\n"


def test_job_files_become_shaped_rows_that_simulate(tmp_path):
    # Kueue's pod sets of the examples (hybridgpu.workloads.pod_sets): the JobSet has 3 pods x 8 GPUs, the RayJob 2 x 8
    out = tmp_path / "jobs.csv"
    examples = ROOT / "docs" / "examples"
    result = runner.invoke(app, ["trace", "--out", str(out), "--job-file", str(examples / "onprem-jobset.yaml"), "--job-file", str(examples / "eks-rayjob.yaml")])
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines()[1:] == ["0,24,7200,,on-demand,local,3,8", "0,16,7200,,on-demand,local,2,8"]
    data = json.loads(runner.invoke(app, ["simulate", "--trace", str(out), "--onprem-gpus", "16", "--on-demand-gpus", "16", "--json"]).output)
    assert [r["never_admitted"] for r in data["results"]] == [1, 1, 1]  # the 24-GPU gang fits nowhere


@pytest.mark.parametrize(
    "text,words",
    [
        (MIXED, ["PyTorchJob mixed", "differ in GPUs per pod", "master: 1 x 1", "worker: 2 x 8"]),
        (CPU_ONLY, ["Job cpu", "no pod requests nvidia.com/gpu"]),
        ("kind: ConfigMap\nmetadata: {name: x}\n", ["no job object"]),
        ("a: [\n", ["not valid YAML"]),
    ],
    ids=["mixed-sizes", "cpu-only", "no-job", "bad-yaml"],
)
def test_job_files_that_give_no_rows_are_refused(tmp_path, text, words):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["trace", "--out", str(tmp_path / "t.csv"), "--job-file", str(path)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in output, output
    for word in ["job.yaml", *words]:
        assert word in output, (word, output)
    assert not (tmp_path / "t.csv").exists()
