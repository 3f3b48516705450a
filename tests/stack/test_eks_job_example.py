"""The EKS job example (docs/examples/eks-pytorchjob.yaml) against what it runs through, and the EKS job rules.

* every object passes the policy pack's resource policies at their defaults (cost labels, GPU and EFA
  requests, ``efa-workload-requests``), core objects validate strictly against the Kubernetes 1.35 schema,
  and checkov finds nothing the documented skips do not cover;
* on stack prod, the job's queue is the EFA pool's LocalQueue, its topology level is a level of the EKS
  Topology and its pods fit the queue's quota (:func:`hybridgpu.stack.eks_topology.eks_job_issues`); the
  claim is the one prod's storage renders in the job's namespace;
* the EKS job rules refuse what users get wrong (each with the key and the fix).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from hybridgpu.burst.eks_tas import efa_tas_manifests
from hybridgpu.catalog import load_catalog
from hybridgpu.k8s import EFA_RESOURCE, GPU_RESOURCE, TRAINING_DATA_CLAIM
from hybridgpu.policy.registry import POLICIES
from hybridgpu.stack.eks_topology import eks_job_issues
from hybridgpu.stack.load import load_stack
from tests.helpers import ROOT
from tests.helpers.job_examples import (
    assert_passes_resource_policy,
    assert_refused,
    assert_validates_against_kubernetes_schema,
    checkov_skipped,
    example_job,
    job_with,
)

EXAMPLE = ROOT / "docs" / "examples" / "eks-pytorchjob.yaml"
DOCS: list[dict[str, Any]] = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
CATALOG = load_catalog()


@pytest.fixture(scope="module")
def prod():
    return load_stack("prod", ROOT)


def _job() -> dict[str, Any]:
    return example_job(DOCS)


def _issues(prod, job) -> list:
    worker = prod.burst_plan.clusters["prod"]
    return eks_job_issues(job, prod.config.cloud, CATALOG, namespaces=worker.namespaces, prefix=prod.burst_plan.source.kueue.prefix, file="job.yaml")


def test_example_is_a_4_by_8_gpu_efa_job():
    job = _job()
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 4
    assert container["resources"]["limits"][GPU_RESOURCE] == "8"
    assert container["resources"]["limits"][EFA_RESOURCE] == "32"
    assert job["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == TRAINING_DATA_CLAIM


@pytest.mark.parametrize("spec", [p for p in POLICIES if p.kind == "resource"], ids=lambda p: p.name)
def test_example_passes_every_resource_policy(spec):
    assert_passes_resource_policy(spec, DOCS, "prod")


def test_example_validates_against_the_kubernetes_schema():
    assert_validates_against_kubernetes_schema(DOCS, 3)


def test_example_passes_checkov_with_its_documented_skips(tmp_path):
    checkov_skipped(tmp_path, EXAMPLE, min_resources=3)  # checkov counts the Job's pod template too


def test_example_fits_prod_queues_and_topology(prod):
    assert _issues(prod, _job()) == []
    docs = efa_tas_manifests(prod.config.cloud, CATALOG, prod.burst_plan.clusters["prod"].namespaces, prod.burst_plan.source.kueue.prefix)
    queue = _job()["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert ("LocalQueue", "ml-research", queue) in {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs}
    topology = next(d for d in docs if d["kind"] == "Topology")
    level = _job()["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-preferred-topology"]
    assert level in [lvl["nodeLabel"] for lvl in topology["spec"]["levels"]]


def test_prod_storage_renders_the_claim_in_the_job_namespace(prod):
    from hybridgpu.stack.storage import storage_namespaces

    assert "ml-research" in storage_namespaces(prod.config, "eks", prod.burst_plan).namespaces


def _with(path: tuple, value: Any) -> dict[str, Any]:
    return job_with(DOCS, path, value)


ANN = ("spec", "template", "metadata", "annotations")
LIMITS = ("spec", "template", "spec", "containers", 0, "resources")


@pytest.mark.parametrize(
    ("name", "job", "code", "words"),
    [
        ("layer-4-on-p5", _with(ANN, {"kueue.x-k8s.io/podset-required-topology": "topology.k8s.aws/network-node-layer-4"}), "topology-level-mismatch", ["network-node-layer-4", "network-node-layer-3"]),
        ("onprem-rack-label", _with(ANN, {"kueue.x-k8s.io/podset-preferred-topology": "hybridgpu.io/topology-rack"}), "topology-level-mismatch", ["hybridgpu.io/topology-rack"]),
        ("zone-is-not-a-level", _with(ANN, {"kueue.x-k8s.io/podset-required-topology": "topology.kubernetes.io/zone"}), "topology-level-mismatch", ["topology.kubernetes.io/zone"]),
        ("topograph-label", _with(ANN, {"kueue.x-k8s.io/podset-required-topology": "topology.kubernetes.io/network-level-1"}), "topology-level-mismatch", ["network-level-1"]),
        # Kueue counts min(parallelism, completions) pods (kueue v0.19.2 pkg/controller/jobs/job/job_controller.go podsCount)
        ("five-nodes", _with(("spec",), {**_job()["spec"], "parallelism": 5, "completions": 5}), "quota-too-small", ["40", "nvidia.com/gpu", "gpuLimit"]),
        ("four-nodes-on-one-host", _with(ANN, {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}), "topology-too-large", ["4 x 8 = 32", "have 8"]),
        ("burst-queue-with-topology", _with(("metadata", "labels", "kueue.x-k8s.io/queue-name"), "training"), "no-topology", ["ml-research/training", "h100-reserved"]),
        ("64-efa-per-pod", _with(LIMITS, {"limits": {GPU_RESOURCE: "8", EFA_RESOURCE: "64"}}), "efa-per-node", ["64", "have 32"]),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_job_rules_refuse(prod, name, job, code, words):
    assert_refused(_issues(prod, job), code, words)


@pytest.mark.parametrize(
    "job",
    [
        _with(ANN, {"kueue.x-k8s.io/podset-required-topology": "topology.k8s.aws/network-node-layer-2"}),
        _with(ANN, {}),
        _with(("spec", "parallelism"), 2),
    ],
    ids=["required-layer-2", "no-annotation", "two-nodes"],
)
def test_job_rules_accept(prod, job):
    assert _issues(prod, job) == []


def test_no_topology_without_a_labelled_efa_pool(prod):
    cloud = prod.config.cloud.model_copy(deep=True)
    pool = cloud.node_pools[0].model_copy(update={"instance_types": ["g6e.48xlarge"]})
    cloud = cloud.model_copy(update={"node_pools": [pool, *cloud.node_pools[1:]]})
    issues = eks_job_issues(_job(), cloud, CATALOG, namespaces=("ml-research",), prefix="hybridgpu", file="job.yaml")
    assert [i.code for i in issues] == ["no-topology"]
