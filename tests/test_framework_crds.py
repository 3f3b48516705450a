"""The job frameworks' CRDs under tools/schemas/crds/ (hybridgpu/schemas.py ``CRD_FILES``) and the docs' job examples.

The CRDs are copied from the upstream repositories at the pins of hybridgpu.burst.frameworks (JobSet
v0.12.0 ``config/components/crd/bases``, Kubeflow Trainer v2.2.1 ``manifests/base/crds``, KubeRay
v1.6.2 ``ray-operator/config/crd/bases``; read 2026-11-27, field descriptions removed). Every object of
those kinds in docs/examples/ validates against its CRD's ``openAPIV3Schema``, strictly (unknown fields
refused, as the API server prunes or rejects them), and a misspelt field is caught.
"""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from hybridgpu.burst.frameworks import FRAMEWORK_CHARTS
from hybridgpu.schemas import CRD_FILE_GROUPS, CRD_FILES, validate_crd_files
from tests.helpers import ROOT

FRAMEWORK_GROUPS = {"jobset.x-k8s.io": "jobset", "trainer.kubeflow.org": "kubeflow-trainer", "ray.io": "kuberay-operator"}


def _examples() -> list[dict]:
    docs = []
    for path in sorted((ROOT / "docs/examples").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d and d["apiVersion"].split("/")[0] in FRAMEWORK_GROUPS]
    return docs


def test_each_crd_file_is_at_its_frameworks_pin():
    for (group, kind), file in CRD_FILES.items():
        if group not in FRAMEWORK_GROUPS:
            continue
        version = FRAMEWORK_CHARTS[FRAMEWORK_GROUPS[group]].version.lstrip("v")
        assert re.search(rf"-v{re.escape(version)}\.yaml$", file), (kind, file, version)
        head = (ROOT / "tools/schemas/crds" / file).read_text().splitlines()[0]
        assert f"v{version}" in head and "read 2026-11-27" in head, head


def test_the_job_examples_validate_against_the_pinned_crds():
    docs = _examples()
    kinds = sorted({d["kind"] for d in docs})
    assert kinds == ["ClusterTrainingRuntime", "JobSet", "RayCluster", "RayJob", "TrainJob"]
    assert {d["apiVersion"].split("/")[0] for d in docs} <= CRD_FILE_GROUPS
    findings = validate_crd_files(docs)
    assert [(f.kind, f.errors) for f in findings if not f.ok] == []


@pytest.mark.parametrize(
    ("kind", "path"),
    [("JobSet", ("spec", "replicatedJobz")), ("RayJob", ("spec", "rayClusterSpec", "workerGroupSpec")), ("TrainJob", ("spec", "trainer", "numNode"))],
)
def test_a_misspelt_field_is_refused(kind, path):
    doc = copy.deepcopy(next(d for d in _examples() if d["kind"] == kind))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = 1
    [finding] = validate_crd_files([doc])
    assert not finding.ok and any(path[-1] in e for e in finding.errors), finding.errors
