"""`hybridgpu job check` on the jobs ML teams write: TrainJob, JobSet, RayJob, RayCluster (issue 30).

The cases of tests/fixtures/jobs/framework-cases.yaml edit the examples of docs/examples/ and run the CLI
in-process against the example project with the frameworks enabled in its burst plan's ``kueue.frameworks``,
with ``batch/job`` only, or as shipped (for the dev stack, in no burst plan). The rules they exercise, with their
upstream sources, are in the docstrings of ``hybridgpu.stack.jobs`` (framework, runtime, queue, resources,
the Ray webhook rules of kubernetes-sigs/kueue v0.19.2 ``pkg/controller/jobs/raycluster/raycluster_webhook.go``)
and ``hybridgpu.workloads`` (the pod sets Kueue builds per kind).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from hybridgpu.cli import app
from hybridgpu.cli import job as job_cli
from hybridgpu.policy.registry import POLICIES
from hybridgpu.stack.load import load_stack
from tests.helpers import ROOT
from tests.helpers.cases import assert_fixture_counts, assert_verdict, case_ids, load_cases, runner
from tests.helpers.job_examples import assert_passes_resource_policy, set_path
from tests.helpers.scratch import example_plan, example_teams, make_project

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/jobs/framework-cases.yaml")
#: The frameworks the `frameworks` project's plan enables (Kueue's names, hybridgpu.burst.frameworks).
ENABLED = ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "ray.io/rayjob", "ray.io/raycluster"]
EXAMPLES = ("eks-trainjob", "onprem-jobset", "eks-rayjob", "onprem-raycluster")


def _docs(example: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / "docs/examples" / f"{example}.yaml").read_text()) if d]


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, Path]:
    """The projects of the cases: ``frameworks`` and ``batch-only``, the example project (stacks, teams, burst plan)
    with :data:`ENABLED` or ``[batch/job]`` in the plan's ``kueue.frameworks``; ``example``, the project as shipped."""
    found = {"example": ROOT}
    for name, frameworks in (("frameworks", ENABLED), ("batch-only", ["batch/job"])):
        plan = example_plan()
        plan["kueue"]["frameworks"] = frameworks
        found[name] = make_project(tmp_path_factory.mktemp(name), plan=plan, teams=example_teams())
    return found


_STACKS: dict[tuple[str, str], Any] = {}


def _load_once(stack: str, root: Path | None = None) -> Any:
    """``load_stack`` once per project and stack: the cases change only the job file (test speed)."""
    key = (stack, str(root))
    if key not in _STACKS:
        _STACKS[key] = load_stack(stack, root)
    return _STACKS[key]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_job_check_verdict(tmp_path, roots, case, monkeypatch):
    monkeypatch.setattr(job_cli, "load_stack", _load_once)
    docs = [d for d in copy.deepcopy(_docs(case["example"])) if d["kind"] not in case.get("drop", ())]
    for kind, edits in (case.get("set") or {}).items():
        doc = next(d for d in docs if d["kind"] == kind)
        for path, value in edits.items():
            set_path(doc, path, value)
    path = tmp_path / f"{case['example']}.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    root = roots[case.get("project", "frameworks")]
    assert_verdict(runner.invoke(app, ["job", "check", case["stack"], str(path), "--root", str(root)]), case)


def test_fixture_counts():
    assert_fixture_counts(CASES)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_has_our_fabric_topology_storage_and_queue(example):
    """Each example runs multi-node with the stack's fabric (EFA on EKS, RDMA on-prem), asks Kueue for a
    topology, mounts the shared claim and names a queue: the issue's acceptance for the examples."""
    text = (ROOT / "docs/examples" / f"{example}.yaml").read_text()
    fabric = "vpc.amazonaws.com/efa" if example.startswith("eks") else "rdma/rdma_shared_device_ib"
    for word in (fabric, "kueue.x-k8s.io/podset-preferred-topology", "claimName: training-data", "kueue.x-k8s.io/queue-name"):
        assert word in text, (example, word)


@pytest.mark.parametrize("spec", [p for p in POLICIES if p.kind == "resource"], ids=lambda p: p.name)
def test_examples_pass_every_resource_policy(spec):
    """As a Pulumi program would deploy them (each object alone, a TrainJob without its runtime)."""
    for example in EXAMPLES:
        assert_passes_resource_policy(spec, _docs(example), "prod" if example.startswith("eks") else "onprem")
