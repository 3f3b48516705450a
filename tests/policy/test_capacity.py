"""The pure parts behind the capacity and workload policies: the Kubernetes quantity grammar (the
official client's parser), replica multipliers (JobSet, LeaderWorkerSet), the accelerator-family
rule of the catalog, and the capacity each AWS resource type can launch."""

from __future__ import annotations

import pytest

from hybridgpu.catalog import INSTANCE_TYPES_SOURCE, is_accelerator_type
from hybridgpu.policy.base import PolicyResource, parse_quantity
from hybridgpu.policy.capacity import capacities
from hybridgpu.policy.workloads import pod_templates


@pytest.mark.parametrize(
    ("text", "value"),
    [("2e3", 2000), ("1E3", 1000), ("3e1", 30), ("+4", 4), ("0.5", 0.5), ("1Ki", 1024), ("2M", 2e6), ("100m", 0.1), (8, 8)],
)
def test_the_full_quantity_grammar(text, value):
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["2 GPUs", "two", "0x10", " 4", "4 ", "NaN", "Infinity", "1ki", "", None, True, [1]])
def test_what_is_not_a_quantity(text):
    assert parse_quantity(text) is None


@pytest.mark.parametrize(
    ("itype", "gpu"),
    [("gr6.8xlarge", True), ("g4ad.xlarge", True), ("p3.2xlarge", True), ("dl1.24xlarge", True), ("trn2.48xlarge", True),
     ("inf2.xlarge", True), ("c7g.large", False), ("m7i.large", False), ("r7gd.xlarge", False), ("t4g.micro", False)],
)
def test_accelerator_families_by_name(itype, gpu):
    assert is_accelerator_type(itype) is gpu
    assert INSTANCE_TYPES_SOURCE.endswith("instance_types.yaml")


def _pod(gpus: str = "1") -> dict:
    return {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}


def test_leaderworkerset_counts_groups_times_size():
    lws = {"spec": {"replicas": 3, "leaderWorkerTemplate": {"size": 4, "leaderTemplate": _pod("1"), "workerTemplate": _pod("8")}}}
    got = sorted((t.path, t.replicas) for t in pod_templates(lws))
    assert got == [("spec.leaderWorkerTemplate.leaderTemplate", 3), ("spec.leaderWorkerTemplate.workerTemplate", 9)]
    no_leader = {"spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4, "workerTemplate": _pod()}}}
    assert [t.replicas for t in pod_templates(no_leader)] == [8]


def test_jobset_counts_replicated_jobs_times_parallelism():
    jobset = {"spec": {"replicatedJobs": [{"name": "w", "replicas": 4, "template": {"spec": {"parallelism": 8, "template": _pod("4")}}}]}}
    [t] = pod_templates(jobset)
    assert t.replicas == 32 and t.gpu_limits() == {"nvidia.com/gpu": 4}


def test_malformed_gpu_asks_are_kept_and_reported():
    [t] = pod_templates({"spec": {"template": _pod("2 GPUs")}})
    assert t.gpu_limits() == {"nvidia.com/gpu": 0.0}  # still a GPU pod (labels apply)
    assert t.malformed() == [("spec.template.spec.containers[0].resources.limits", "nvidia.com/gpu", "2 GPUs")]


def _r(type_: str, name: str, props: dict, deps: dict | None = None) -> PolicyResource:
    return PolicyResource(type_, name, f"urn:pulumi:dev::p::{type_}::{name}", props, property_dependencies=deps or {})


def test_capacity_follows_launch_templates_by_dependency_and_name():
    lt = _r("aws:ec2/launchTemplate:LaunchTemplate", "lt", {"name": "gpu-nodes", "instanceType": "p5.48xlarge"})
    by_dep = _r("aws:autoscaling/group:Group", "a", {"maxSize": 3, "launchTemplate": {"id": "lt-unknown"}}, {"launchTemplate": (lt.urn,)})
    by_name = _r("aws:eks/nodeGroup:NodeGroup", "b", {"scalingConfig": {"maxSize": 2}, "launchTemplate": {"name": "gpu-nodes"}})
    caps = {c.resource.name: c for c in capacities([lt, by_dep, by_name])}
    assert caps["a"].gpus() == 24 and caps["a"].derived == {"p5.48xlarge": "lt"}
    assert caps["b"].gpus() == 16
    assert caps["lt"].gpus() == 0  # a template launches nothing itself


def test_capacity_units_weights_and_unknown_templates():
    fleet = _r("aws:ec2/fleet:Fleet", "f", {
        "launchTemplateConfigs": [{"overrides": [{"instanceType": "g6.12xlarge", "weightedCapacity": 4}]}],
        "targetCapacitySpecification": {"totalTargetCapacity": 32}})
    vcpu = _r("aws:ec2/spotFleetRequest:SpotFleetRequest", "s", {
        "launchSpecifications": [{"instanceType": "g6.xlarge"}], "targetCapacity": 64, "targetCapacityUnitType": "vcpu"})
    external = _r("aws:autoscaling/group:Group", "x", {"maxSize": 5, "launchTemplate": {"id": "lt-0abc"}})
    attrs = _r("aws:autoscaling/group:Group", "y", {"maxSize": 5, "mixedInstancesPolicy": {"launchTemplate": {
        "overrides": [{"instanceRequirements": {"vcpuCount": {"min": 4}}}]}}})
    caps = {c.resource.name: c for c in capacities([fleet, vcpu, external, attrs])}
    assert caps["f"].gpus() == 32  # 32 units / weight 4 = 8 instances x 4 GPUs
    assert caps["s"].gpus() == 16  # 64 vCPUs / 4 vCPUs per g6.xlarge = 16 instances x 1 GPU
    assert caps["x"].problems and caps["x"].may_be_gpu
    assert any("acceleratorCount" in p for p in caps["y"].problems)
