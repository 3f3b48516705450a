"""`hybridgpu job check <stack> <file>` end to end on the cases of tests/fixtures/jobs/eks-cases.yaml (stack prod).

Each case edits the Job of docs/examples/eks-pytorchjob.yaml and runs the CLI against the example project.
The rules: the policy pack's workload policies (hybridgpu.policy.registry) and the EKS queue and topology
rules (hybridgpu.stack.eks_topology): Kueue v0.19.2 skips a flavor whose Topology lacks the requested level
(``tas_flavorassigner.go`` ``checkPodSetAndFlavorMatchForTAS``) and refuses a topology request in a
ClusterQueue without a TAS flavor (``podSetTopologyRequest``, ``ErrNoTASCacheInformation``).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT
from tests.helpers.cases import apply_set, assert_fixture_counts, assert_verdict, case_ids, load_cases
from tests.helpers.job_examples import set_path

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

runner = CliRunner(env={"COLUMNS": "400"})
CASES: list[dict[str, Any]] = load_cases("tests/fixtures/jobs/eks-cases.yaml")
DOCS = [d for d in yaml.safe_load_all((ROOT / "docs/examples/eks-pytorchjob.yaml").read_text()) if d]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_job_check_verdict(tmp_path, case):
    docs = copy.deepcopy(DOCS)
    apply_set(next(d for d in docs if d["kind"] == "Job"), case, setter=set_path)
    path = tmp_path / "docs-job.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    assert_verdict(runner.invoke(app, ["job", "check", "prod", str(path), "--root", str(ROOT)]), case)


def test_fixture_counts():
    assert_fixture_counts(CASES)


def test_unreadable_and_non_object_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: 1\na: 2\n")
    result = runner.invoke(app, ["job", "check", "prod", str(bad), str(tmp_path / "missing.yaml"), "--root", str(ROOT)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in output
    assert "not valid YAML" in output and "cannot read the job file" in output


MALFORMED = {
    "metadata-a-list": ("apiVersion: batch/v1\nkind: Job\nmetadata: [1, 2]\nspec: {template: {spec: {containers: x}}}\n", ["not a valid Job", "metadata"]),
    "parallelism-a-string": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: '4', template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}\n",
        ["not a valid Job", "spec.parallelism"],
    ),
    "topology-level-a-number": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: 5}}, "
        "spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}\n",
        ["not a valid Job", "podset-required-topology"],
    ),
    "pod-affinity-terms-a-string": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resources: {limits: {vpc.amazonaws.com/efa: '32'}}}], "
        "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: x}]}}}}\n",
        ["not a valid Pod", "matchExpressions"],
    ),
    "jobset-efa-a-mapping": (
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, namespace: ml-research}\n"
        "spec: {replicatedJobs: [{name: w, replicas: 4, template: {spec: {template: {spec: {containers: [{name: c, image: i, "
        "resources: {limits: {vpc.amazonaws.com/efa: {a: 1}}}}]}}}}}]}\n",
        ["JobSet/js", "not a whole number of devices"],
    ),
    "a-list-document": ("- a\n- b\n", ["document 1", "not a Kubernetes object"]),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_objects_are_refused_without_a_traceback(tmp_path, name):
    text, words = MALFORMED[name]
    path = tmp_path / "job.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["job", "check", "prod", str(path), "--root", str(ROOT)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in output, output
    for word in ["job.yaml", *words]:
        assert word in output, (word, output)
