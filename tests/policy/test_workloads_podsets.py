"""Kueue's pod sets per job kind (hybridgpu.workloads), and the GPU policies that count them.

Each test states the upstream rule it checks; the sources (read 2026-11-27):

* Kueue v0.19.2 (kubernetes-sigs/kueue, commit 8eab68778fc1): ``pkg/controller/jobs/job/job_controller.go``
  ``PodSets``/``podsCount``; ``jobset/jobset_controller.go`` ``PodSets``/``podsCount``/``PodsCountPerReplica``;
  ``kubeflow/kubeflowjob/kubeflowjob_controller.go`` ``PodSets``; ``raycluster/common.go`` ``BuildPodSets``,
  ``effectiveWorkerCount``, ``autoscalerContainer``; ``rayjob/rayjob_controller.go`` ``addSubmitterPodSet``;
  ``trainjob/trainjob_controller.go`` ``getChildJobSet``; ``apis/kueue/v1beta2/workload_types.go``
  ``NewPodSetReference`` (names lower-cased).
* KubeRay v1.6.2 (ray-project/kuberay, commit 598eb66aa077) ``ray-operator/apis/ray/v1/raycluster_types.go``:
  ``replicas`` defaults to 0, ``maxReplicas`` to 2147483647, ``numOfHosts`` to 1.
* Kubeflow Trainer v2.2.1 (kubeflow/trainer, commit c505fc7ccec9) ``pkg/runtime/core/trainingruntime.go``
  (``numNodes`` for the replicatedJob labelled ``trainer.kubeflow.org/trainjob-ancestor-step: trainer``,
  ``resourcesPerNode`` replacing the ``node`` container's resources, ``mergeRuntimePatches``),
  ``pkg/runtime/framework/plugins/jobset/builder.go`` (replicas 1).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.oversized import WorkloadSettings, gpu_workload_requests
from hybridgpu.policy.untagged import WorkloadLabelSettings, gpu_workload_cost_labels
from hybridgpu.policy.workloads import pod_templates
from hybridgpu.stack.topology import job_pod_sets
from hybridgpu.workloads import PodSetError, pod_sets, runtimes_of, trainjob_jobset


def _pod(gpus: int = 0, name: str = "c", labels: dict[str, str] | None = None) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {"metadata": {"labels": labels or {}}, "spec": {"containers": [{"name": name, "resources": {"limits": limits}}]}}


def _counts(obj: dict[str, Any], runtimes: Any = None) -> list[tuple[str, int, int | None]]:
    return [(p.name, p.count, p.most) for p in pod_sets(obj, runtimes) or []]


def test_batch_job_is_one_pod_set_main_of_min_parallelism_completions():
    job = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 5, "completions": 3, "template": _pod(8)}}
    assert _counts(job) == [("main", 3, 3)]
    job["spec"].pop("completions")
    assert _counts(job) == [("main", 5, 5)]


def test_jobset_counts_replicas_times_pods_per_job_per_replicated_job():
    js = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "spec": {
            "replicatedJobs": [
                {"name": "Leader", "template": {"spec": {"template": _pod(0)}}},
                {"name": "workers", "replicas": 3, "template": {"spec": {"parallelism": 4, "completions": 2, "template": _pod(8)}}},
            ]
        },
    }
    assert _counts(js) == [("leader", 1, 1), ("workers", 6, 6)]
    assert pod_sets(js)[1].path == "spec.replicatedJobs[1].template.spec.template"


def test_pytorchjob_master_then_worker_replicas_default_one():
    pj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3, "template": _pod(8)}, "Master": {"template": _pod(8)}}}}
    assert _counts(pj) == [("master", 1, 1), ("worker", 3, 3)]


def _ray(autoscaling: bool | None = None, **group: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"headGroupSpec": {"template": _pod(0, "ray-head")}, "workerGroupSpecs": [{"groupName": "GPU", "template": _pod(8), **group}]}
    if autoscaling is not None:
        spec["enableInTreeAutoscaling"] = autoscaling
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"}, "spec": spec}


def test_raycluster_head_and_workers_replicas_times_hosts_omitted_replicas_count_zero():
    assert _counts(_ray(replicas=2, numOfHosts=2)) == [("head", 1, 1), ("gpu", 4, 4)]
    assert _counts(_ray()) == [("head", 1, 1), ("gpu", 0, 0)]  # CRD default replicas: 0


def test_raycluster_autoscaling_bounds_by_max_replicas_and_adds_the_autoscaler_to_the_head():
    sets = pod_sets(_ray(True, replicas=1, minReplicas=1, maxReplicas=3, numOfHosts=2))
    assert [(p.name, p.count, p.most) for p in sets] == [("head", 1, 1), ("gpu", 2, 6)]
    assert [c["name"] for c in sets[0].spec["containers"]] == ["ray-head", "autoscaler"]
    assert sets[0].spec["containers"][1]["resources"]["requests"] == {"cpu": "500m", "memory": "512Mi"}
    assert _counts(_ray(True, replicas=1)) == [("head", 1, 1), ("gpu", 1, None)]  # no maxReplicas: unbounded


def test_rayjob_adds_the_submitter_in_k8s_job_mode_only_and_rayservice_reads_its_cluster_spec():
    cluster = _ray(replicas=2)["spec"]
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "spec": {"rayClusterSpec": cluster}}
    assert _counts(job) == [("head", 1, 1), ("gpu", 2, 2), ("submitter", 1, 1)]
    assert pod_sets(job)[2].spec["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}
    job["spec"]["submissionMode"] = "HTTPMode"
    assert _counts(job) == [("head", 1, 1), ("gpu", 2, 2)]
    service = {"apiVersion": "ray.io/v1", "kind": "RayService", "spec": {"rayClusterSpec": cluster}}
    assert _counts(service) == [("head", 1, 1), ("gpu", 2, 2)]


RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch"},
    "spec": {
        "mlPolicy": {"numNodes": 2, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {"name": "dataset-initializer", "template": {"spec": {"template": _pod(0, "dataset-initializer")}}},
                    {
                        "name": "node",
                        "replicas": 3,  # the Trainer runs every replicatedJob once
                        "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}, "spec": {"template": _pod(1, "node")}},
                    },
                ]
            }
        },
    },
}


def _trainjob(**trainer: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ml"},
        "spec": {"runtimeRef": {"name": "torch"}, "trainer": trainer},
    }


def test_trainjob_pod_sets_are_those_of_the_jobset_its_runtime_makes():
    runtimes = runtimes_of([RUNTIME])
    job = _trainjob(numNodes=4, resourcesPerNode={"limits": {"nvidia.com/gpu": "8"}})
    assert _counts(job, runtimes) == [("dataset-initializer", 1, 1), ("node", 4, 4)]
    node = pod_sets(job, runtimes)[1]
    assert node.spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "8"}}  # replaced, not merged
    child = trainjob_jobset(job, runtimes)
    assert child is not None and child["kind"] == "JobSet" and child["spec"]["replicatedJobs"][1]["template"]["spec"]["parallelism"] == 4
    assert _counts(_trainjob(), runtimes)[1] == ("node", 2, 2)  # the runtime's mlPolicy.numNodes


def test_trainjob_runtime_patches_merge_by_name_into_the_pod_template():
    job = _trainjob(numNodes=2)
    patch = {"metadata": {"labels": {"team": "a"}, "annotations": {"kueue.x-k8s.io/podset-preferred-topology": "x"}}, "spec": {"nodeSelector": {"k": "v"}}}
    job["spec"]["runtimePatches"] = [{"manager": "me", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": patch}}}]}}}}]
    for runtimes in (runtimes_of([RUNTIME]), None):  # resolved, and the TrainJob alone
        node = [p for p in pod_sets(job, runtimes) or [] if p.name == "node"][0]
        assert node.labels == {"team": "a"} and node.spec["nodeSelector"] == {"k": "v"}
        assert node.annotations == {"kueue.x-k8s.io/podset-preferred-topology": "x"}
    alone = pod_sets(job)
    assert alone is not None and [(p.name, p.count, p.resolved) for p in alone] == [("node", 2, False)]


def test_a_count_of_the_wrong_type_names_its_key_and_the_policy_walk_still_runs():
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {"replicatedJobs": [{"name": "w", "replicas": "2", "template": {"spec": {"template": _pod(8)}}}]}}
    with pytest.raises(PodSetError) as err:
        pod_sets(js)
    assert err.value.key == "spec.replicatedJobs[0].replicas"
    assert [t.path for t in pod_templates(js)] == ["spec.replicatedJobs[0].template.spec.template"]


def test_other_kinds_have_no_pod_sets_and_are_walked():
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2, "template": _pod(1)}}
    assert pod_sets(deploy) is None
    assert [(t.path, t.replicas) for t in pod_templates(deploy)] == [("spec.template", 2)]


def _findings(obj: dict[str, Any]) -> list[str]:
    res = PolicyResource(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", "w", "urn:pulumi:s::p::t::w", obj)
    return list(gpu_workload_requests(res, WorkloadSettings()))


def test_gpu_workload_requests_counts_ray_workers_at_max_replicas():
    """8 GPUs x maxReplicas 9 = 72 > 64 although Kueue admits replicas 1: the autoscaler may grow it."""
    assert _findings(_ray(True, replicas=1, maxReplicas=8)) == []
    assert any("holds up to 72 GPUs" in m for m in _findings(_ray(True, replicas=1, maxReplicas=9)))
    assert any("maxReplicas is not set" in m for m in _findings(_ray(True, replicas=1)))
    assert _findings(_ray(False, replicas=8, maxReplicas=100)) == []  # no autoscaling: replicas is the count


def test_gpu_workload_requests_counts_a_trainjob_as_num_nodes_times_resources_per_node():
    assert any("holds up to 72 GPUs" in m for m in _findings(_trainjob(numNodes=9, resourcesPerNode={"limits": {"nvidia.com/gpu": "8"}})))
    bad = _findings(_trainjob(numNodes=1, resourcesPerNode={"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "8"}}))
    assert any("spec.trainer.resourcesPerNode requests nvidia.com/gpu" in m for m in bad)


def test_cost_labels_of_a_trainjob_are_asked_in_its_runtime_patch():
    res = PolicyResource("kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob", "t", "urn:pulumi:s::p::t::t", _trainjob(resourcesPerNode={"limits": {"nvidia.com/gpu": "8"}}))
    (message,) = gpu_workload_cost_labels(res, WorkloadLabelSettings())
    assert "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[node].template.spec.template.metadata.labels" in message


def test_topology_reads_the_same_pod_sets():
    assert job_pod_sets(_ray(True, replicas=1, maxReplicas=3)) == [("head", 1, 0, {}), ("gpu", 3, 8, {})]


@settings(max_examples=60, deadline=None)
@given(
    replicas=st.integers(0, 6),
    max_replicas=st.one_of(st.none(), st.integers(0, 9)),
    hosts=st.integers(1, 3),
    gpus=st.integers(0, 8),
    autoscaling=st.booleans(),
)
def test_policy_and_topology_count_the_same_gpus(replicas, max_replicas, hosts, gpus, autoscaling):
    """One home: the policy pack and the job rules see the same pods and GPUs for any Ray worker group."""
    group: dict[str, Any] = {"replicas": replicas, "numOfHosts": hosts}
    if max_replicas is not None:
        group["maxReplicas"] = max_replicas
    cluster = _ray(autoscaling, **group)
    cluster["spec"]["workerGroupSpecs"][0]["template"] = _pod(gpus)
    policy = sum(t.replicas * t.gpu_limits().get("nvidia.com/gpu", 0) for t in pod_templates(cluster))
    topology = sum(pods * per_pod for _, pods, per_pod, _ in job_pod_sets(cluster))
    assert policy == topology
    expected = (max_replicas if autoscaling and max_replicas is not None else replicas) * hosts * gpus
    assert topology == expected
