"""On-prem topology requirements (hybridgpu.stack.topology) and the on-prem job example (docs/examples/onprem-pytorchjob.yaml).

* ``hybridgpu:onprem.gangs``: the example passes; a gang larger than every rack, or naming a level the
  inventory lacks, is refused end to end by ``hybridgpu validate`` (file, key, fix);
* the job example: every object passes the policy pack's resource policies at their defaults, validates
  strictly against the Kubernetes schema, passes checkov with its documented skips; its queue, claim,
  RDMA resource, HCAs and topology level are the ones the onprem stack renders; it is refused on site A
  today (24 active H100, dgx-h100-04 out for repair) and fits once the host is back;
* the job rules refuse what users get wrong.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.k8s import GPU_RESOURCE, RDMA_IB_RESOURCE, TRAINING_DATA_CLAIM
from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.registry import POLICIES
from hybridgpu.render.network_operator import nic_cluster_policy, rdma_plan
from hybridgpu.stack.topology import job_pod_sets, job_topology_issues
from tests.helpers import ROOT
from tests.helpers.job_examples import (
    assert_passes_resource_policy,
    assert_refused,
    assert_validates_against_kubernetes_schema,
    checkov_skipped,
    example_job,
    job_with,
)

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

runner = CliRunner(env={"COLUMNS": "400"})
EXAMPLE = ROOT / "docs" / "examples" / "onprem-pytorchjob.yaml"
DOCS: list[dict[str, Any]] = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
SITE_A_FILE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"
SITE_A = load_inventory([SITE_A_FILE])
ANN = ("spec", "template", "metadata", "annotations")


def _job() -> dict[str, Any]:
    return example_job(DOCS)


def _with(path: tuple, value: Any) -> dict[str, Any]:
    return job_with(DOCS, path, value)


def _site_a_with_dgx04_back(tmp_path: Path):
    text = SITE_A_FILE.read_text().replace("    state: absent                       # out for repair", "    state: active                       # back from repair")
    text = text.replace("readGBpsPerNode: 10 ", "readGBpsPerNode: 9  ")  # 5 active workers: keep the storage check's target reachable
    assert "state: absent" not in text
    path = tmp_path / "site-a.yaml"
    path.write_text(text)
    return load_inventory([path])


# --------------------------------------------------------------------------- gangs, end to end


def _validate(scratch_project, edit) -> Any:
    project = scratch_project(stacks=["hybrid", "onprem", "prod"], stack_edits={"onprem": edit}, link_data=True)
    return runner.invoke(app, ["validate", "onprem", "--root", str(project)])


GANG = {"name": "llm-pretrain-2x8", "gpus": 16, "topology": "rack", "gpuModel": "H100-80GB"}


def test_a_gang_that_fits_rack_r12(scratch_project):
    result = _validate(scratch_project, lambda c: c["hybridgpu:onprem"].__setitem__("gangs", [GANG]))
    assert result.exit_code == 0, result.output


def test_a_gang_of_a_model_without_racks(scratch_project):
    gang = {**GANG, "gpuModel": "A100-40GB"}
    result = _validate(scratch_project, lambda c: c["hybridgpu:onprem"].__setitem__("gangs", [gang]))
    assert result.exit_code == 2 and "no active A100-40GB GPU worker of the inventory has a rack" in result.output


@pytest.mark.parametrize(
    ("gang", "words"),
    [
        ({"name": "pretrain-4x8", "gpus": 32, "topology": "rack", "gpuModel": "H100-80GB"}, ["gangs[0].gpus", "needs 32 H100-80GB GPUs in one rack", "has 16 (r12)", "lower `gpus` to at most 16"]),
        ({"name": "pretrain-4x8", "gpus": 32, "topology": "block", "gpuModel": "H100-80GB"}, ["gangs[0].gpus", "has 24 (b1)"]),
        ({"name": "one-node", "gpus": 16, "topology": "host"}, ["gangs[0].gpus", "in one host", "has 8"]),
        ({"name": "a100-rack", "gpus": 16, "topology": "rack", "gpuModel": "A100-80GB"}, ["has 8 (r20)"]),
    ],
)
def test_gangs_too_large_are_refused(scratch_project, gang, words):
    result = _validate(scratch_project, lambda c: c["hybridgpu:onprem"].__setitem__("gangs", [gang]))
    assert result.exit_code == 2 and "Traceback" not in result.output
    for word in words:
        assert word in result.output, (word, result.output)


def test_gang_on_a_level_the_inventory_lacks(scratch_project):
    def edit(config):
        config["hybridgpu:onprem"]["inventory"] = [str(ROOT / "tests/fixtures/inventory_cli/pass/topology-rack-only.yaml")]
        config["hybridgpu:onprem"]["gangs"] = [{"name": "x", "gpus": 8, "topology": "block"}]
        config.pop("hybridgpu:burst", None)
        config.pop("hybridgpu:teams", None)
        config.pop("hybridgpu:economics", None)

    result = _validate(scratch_project, edit)
    assert result.exit_code == 2
    assert "hybridgpu:onprem.gangs[0].topology" in result.output and "no level hybridgpu.io/topology-block" in result.output


# --------------------------------------------------------------------------- the job example


def test_example_is_a_4_by_8_gpu_rdma_job():
    ((name, pods, gpus, annotations),) = job_pod_sets(_job())
    assert (pods, gpus) == (4, 8)
    container = _job()["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"][RDMA_IB_RESOURCE] == "1"
    assert container["resources"]["limits"] == container["resources"]["requests"]
    assert _job()["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == TRAINING_DATA_CLAIM


@pytest.mark.parametrize("spec", [p for p in POLICIES if p.kind == "resource"], ids=lambda p: p.name)
def test_example_passes_every_resource_policy(spec):
    assert_passes_resource_policy(spec, DOCS, "onprem")


def test_the_policies_see_the_gpus_of_the_example():
    """Not vacuous: without the cost labels on the pod template, the pack refuses the Job."""
    job = _job()
    job["spec"]["template"]["metadata"]["labels"] = {}
    res = PolicyResource("kubernetes:batch/v1:Job", "llm-pretrain", "urn:pulumi:onprem::hybridgpu::x::llm-pretrain", job)
    spec = next(p for p in POLICIES if p.name == "gpu-workload-cost-labels")
    assert spec.run_resource(res, spec.parse_settings(None))


def test_example_validates_against_the_kubernetes_schema():
    assert_validates_against_kubernetes_schema(DOCS, 3)


def test_example_passes_checkov_with_its_documented_skips(tmp_path):
    skipped = checkov_skipped(tmp_path, EXAMPLE, min_resources=3)
    assert {f.check_id for f in skipped} == {"CKV_K8S_23", "CKV_K8S_25", "CKV_K8S_40", "CKV_K8S_43"}


def test_example_names_what_the_onprem_stack_renders(all_previews):
    out = all_previews["onprem"]
    manifests = {(d["kind"], (d.get("metadata") or {}).get("namespace"), d["metadata"]["name"]): d for d in out.kubernetes_manifests()}
    job = _job()
    namespace = job["metadata"]["namespace"]
    assert ("LocalQueue", namespace, job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]) in manifests
    assert ("PersistentVolumeClaim", namespace, TRAINING_DATA_CLAIM) in manifests
    topology = manifests[("Topology", None, "onprem")]
    level = job["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-preferred-topology"]
    assert level in [lv["nodeLabel"] for lv in topology["spec"]["levels"]]
    policy = manifests[("NicClusterPolicy", None, "nic-cluster-policy")]
    resources = [f"{e['resourcePrefix']}/{e['resourceName']}" for e in json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]]
    assert RDMA_IB_RESOURCE in resources and policy == nic_cluster_policy(rdma_plan(SITE_A))
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["NCCL_IB_HCA"] == "=" + ",".join(sorted(rdma_plan(SITE_A).fabrics[0].rdma_devices, key=lambda d: int(d.split("_")[1])))


def test_example_waits_for_dgx_h100_04_and_fits_once_it_is_back(tmp_path):
    today = job_topology_issues(_job(), SITE_A, "job.yaml")
    assert [i.code for i in today] == ["quota-too-small"] and "has 24" in today[0].message
    assert job_topology_issues(_job(), _site_a_with_dgx04_back(tmp_path), "job.yaml") == []


@pytest.mark.parametrize(
    ("job", "code", "words"),
    [
        (_with(ANN, {"kueue.x-k8s.io/podset-required-topology": "hybridgpu.io/topology-rack"}), "topology-too-large", ["4 x 8 = 32", "has 16 (r12)"]),
        (_with(ANN, {"kueue.x-k8s.io/podset-required-topology": "hybridgpu.io/topology-block"}), "topology-too-large", ["has 24 (b1)"]),
        (_with(ANN, {"kueue.x-k8s.io/podset-preferred-topology": "topology.kubernetes.io/rack"}), "topology-level-mismatch", ["topology.kubernetes.io/rack"]),
        (_with(ANN, {"kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-rack"}), "topology-level-mismatch", ["cloud.provider.com/topology-rack"]),
        (_with(ANN, {"kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-3"}), "topology-level-mismatch", ["network-node-layer-3"]),
        (_with(ANN, {"kueue.x-k8s.io/podset-required-topology": "rack"}), "topology-level-mismatch", ["'rack'"]),
        # Kueue counts min(parallelism, completions) pods (kueue v0.19.2 pkg/controller/jobs/job/job_controller.go podsCount)
        (_with(("spec",), {**_job()["spec"], "parallelism": 5, "completions": 5}), "quota-too-small", ["40 GPUs"]),
    ],
)
def test_job_rules_refuse(job, code, words):
    assert_refused(job_topology_issues(job, SITE_A, "job.yaml"), code, words)


@pytest.mark.parametrize(
    "annotations",
    [
        {"kueue.x-k8s.io/podset-preferred-topology": "hybridgpu.io/topology-rack"},
        {"kueue.x-k8s.io/podset-preferred-topology": "hybridgpu.io/topology-block"},
        {"kueue.x-k8s.io/podset-required-topology": "hybridgpu.io/topology-block"},
        {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"},
        {},
    ],
)
def test_job_rules_pass_with_dgx04_back(tmp_path, annotations):
    job = _with(ANN, annotations)
    if annotations.get("kueue.x-k8s.io/podset-required-topology") == "kubernetes.io/hostname":
        job["spec"]["parallelism"] = job["spec"]["completions"] = 1  # one pod of 8 GPUs fits one host
    assert job_topology_issues(job, _site_a_with_dgx04_back(tmp_path), "job.yaml") == []


def test_job_pod_sets_reads_gpus_from_limits():
    job = _job()
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][GPU_RESOURCE] = "4"
    assert job_pod_sets(job)[0][1:3] == (4, 4)


def test_job_check_cli_on_the_onprem_stack(tmp_path):
    """`hybridgpu job check onprem <file>` end to end: today the 4 x 8 example waits for dgx-h100-04; 3 x 8 fits."""
    result = runner.invoke(app, ["job", "check", "onprem", str(EXAMPLE), "--root", str(ROOT)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Job/llm-pretrain spec" in result.output and "has 24 in active GPU workers" in result.output
    smaller = [copy.deepcopy(d) for d in DOCS]
    job = next(d for d in smaller if d["kind"] == "Job")
    job["spec"]["parallelism"] = job["spec"]["completions"] = 3
    path = tmp_path / "three-nodes.yaml"
    path.write_text(yaml.safe_dump_all(smaller, sort_keys=False))
    result = runner.invoke(app, ["job", "check", "onprem", str(path), "--root", str(ROOT)])
    assert result.exit_code == 0, result.output
    job["spec"]["template"]["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": "hybridgpu.io/topology-rack"}
    path.write_text(yaml.safe_dump_all(smaller, sort_keys=False))
    result = runner.invoke(app, ["job", "check", "onprem", str(path), "--root", str(ROOT)])
    assert result.exit_code == 2 and "3 x 8 = 24 GPUs in one domain of hybridgpu.io/topology-rack" in " ".join(result.output.split())
