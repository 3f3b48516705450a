"""The pod sets of a job as Kueue sees them: one home for every kind Kueue admits (pure, no Pulumi).

Kueue admits a job as a Workload of *pod sets*: per pod set a name, a pod count and a pod template.
The policy pack (:mod:`hybridgpu.policy.workloads`) and ``hybridgpu job check`` (:mod:`hybridgpu.stack.jobs`,
:mod:`hybridgpu.stack.topology`, :mod:`hybridgpu.stack.eks_topology`) read them here. (The burst simulator
takes no job objects: its trace rows give each job's GPUs, :mod:`hybridgpu.burst.trace`.) :func:`pod_sets` returns them for the kinds below; ``None`` for any other kind (the
policy pack then walks the object for embedded pod templates).

Upstream sources, read 2026-11-27 (the versions the toolkit pins, ``hybridgpu.burst.frameworks``):

* Kueue v0.19.2 (kubernetes-sigs/kueue, commit 8eab68778fc1): a pod set's name is
  ``NewPodSetReference(name)``, the name lower-cased (``apis/kueue/v1beta2/workload_types.go``).

  - ``batch/v1`` Job: one pod set ``main`` (``DefaultPodSetName``), count ``parallelism`` (default 1)
    or ``completions`` when smaller (``pkg/controller/jobs/job/job_controller.go`` ``podsCount``).
  - JobSet: one pod set per ``replicatedJobs[]`` entry, named after it, count ``replicas`` (default 1) x
    the Job template's ``min(parallelism, completions)`` (``pkg/controller/jobs/jobset/jobset_controller.go``
    ``podsCount``, ``PodsCountPerReplica``).
  - PyTorchJob (Kubeflow Trainer v1): pod sets ``master`` then ``worker``, those present, count
    ``replicas`` (default 1) (``pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go``,
    ``kubeflow/jobs/pytorchjob/pytorchjob_controller.go`` ``OrderedReplicaTypes``).
  - RayCluster, and the ``rayClusterSpec`` of a RayJob or RayService: pod set ``head`` (count 1; with
    ``enableInTreeAutoscaling`` Kueue adds KubeRay's autoscaler sidecar, 500m CPU / 512Mi unless
    ``autoscalerOptions.resources``), then one per ``workerGroupSpecs[]`` entry, named after ``groupName``,
    count ``replicas`` x ``numOfHosts`` (``pkg/controller/jobs/raycluster/common.go`` ``BuildPodSets``,
    ``effectiveWorkerCount``). A RayJob in ``K8sJobMode`` (the default) adds pod set ``submitter`` (count
    1, ``submitterPodTemplate`` or KubeRay's default submitter: 500m CPU / 200Mi requested)
    (``pkg/controller/jobs/rayjob/rayjob_controller.go`` ``addSubmitterPodSet``, ``getSubmitterTemplate``).
  - TrainJob (Kubeflow Trainer v2): Kueue builds the JobSet the Trainer would create from the TrainJob
    *and its runtime* and takes that JobSet's pod sets (``pkg/controller/jobs/trainjob/trainjob_controller.go``
    ``getChildJobSet``, ``getRuntimeSpec``): without the runtime it has no pod sets at all.
* KubeRay v1.6.2 (ray-project/kuberay, commit 598eb66aa077), ``ray-operator/apis/ray/v1/raycluster_types.go``:
  a worker group's ``replicas`` and ``minReplicas`` default to 0, ``maxReplicas`` to 2147483647 and
  ``numOfHosts`` to 1 (CRD defaults, applied before Kueue reads the object, so an omitted ``replicas``
  counts 0 pods). With ``enableInTreeAutoscaling`` the Ray autoscaler moves ``replicas`` between
  ``minReplicas`` and ``maxReplicas`` after admission: Kueue counts ``replicas`` when it admits, but the
  group can hold ``maxReplicas`` x ``numOfHosts`` pods, which is what :attr:`PodSet.most` gives and the
  policy pack bounds (``None`` when ``maxReplicas`` is omitted: unbounded).
* Kubeflow Trainer v2.2.1 (kubeflow/trainer, commit c505fc7ccec9): ``runtimeRef`` names a
  ``ClusterTrainingRuntime`` (the default ``kind``) or a ``TrainingRuntime`` in the TrainJob's namespace;
  the runtime's ``spec.template`` is a JobSet template. Every replicatedJob runs ``replicas: 1``
  (``pkg/runtime/framework/plugins/jobset/builder.go``); the one labelled
  ``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` runs ``spec.trainer.numNodes`` pods (default: the
  runtime's ``mlPolicy.numNodes``, then 1; ``pkg/runtime/core/trainingruntime.go``, ``plugins/torch/torch.go``)
  and its container ``node`` takes ``spec.trainer.resourcesPerNode`` in place of its own resources; the others
  run their Job's ``parallelism`` (default 1). ``spec.runtimePatches[].trainingRuntimeSpec.template.spec`` is
  strategic-merged into the runtime's JobSet spec first (``mergeRuntimePatches``): replicatedJobs by ``name``,
  containers and volumes by ``name``, labels, annotations and ``nodeSelector`` key by key.

What can be known offline about a TrainJob: :func:`pod_sets` resolves its runtime among ``runtimes`` (the
TrainingRuntime and ClusterTrainingRuntime objects the caller has, e.g. the documents of the job file). When
the runtime is not among them, it returns the one pod set the TrainJob itself decides, ``node`` (the trainer:
``numNodes`` pods, default 1, each with ``resourcesPerNode``), with :attr:`PodSet.resolved` false: enough
for the GPU policies, not for Kueue's full count; ``hybridgpu job check`` refuses such a TrainJob (it cannot
see what Kueue will admit) and says to put the runtime in the job file.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hybridgpu.k8s import GPU_RESOURCE, QuantityError, device_count

__all__ = [
    "DEFAULT_POD_SET",
    "KIND_PATHS",
    "PodSet",
    "PodSetError",
    "RuntimeKey",
    "TRAINJOB_POD_PATH",
    "TRAINJOB_RESOURCES_PATH",
    "is_training_runtime",
    "is_trainjob",
    "pod_sets",
    "ray_cluster_spec",
    "runtime_key",
    "runtimes_of",
    "trainjob_jobset",
]

#: Kueue's pod set name of a batch Job (``DefaultPodSetName``, apis/kueue/v1beta2/constants.go v0.19.2).
DEFAULT_POD_SET = "main"

#: The Trainer v2 label that marks the replicatedJob of the training nodes, and its value
#: (kubeflow/trainer v2.2.1 ``pkg/constants/constants.go``: ``LabelTrainJobAncestor``, ``AncestorTrainer``).
TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_ANCESTOR = "trainer"
#: The container of the trainer replicatedJob that ``resourcesPerNode`` replaces (``constants.Node``).
TRAINER_NODE_CONTAINER = "node"
#: Where a TrainJob writes its trainer pods' labels and annotations itself (its runtime patch of the
#: ``node`` replicatedJob): the path of the pod set :func:`pod_sets` gives for a TrainJob without its runtime.
TRAINJOB_POD_PATH = "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[node].template.spec.template"
#: Where a TrainJob sets the trainer container's resources (``resourcesPerNode``).
TRAINJOB_RESOURCES_PATH = "spec.trainer.resourcesPerNode"
_TRAINER_GROUP = "trainer.kubeflow.org"
_CLUSTER_RUNTIME = "ClusterTrainingRuntime"
_NAMESPACED_RUNTIME = "TrainingRuntime"

#: KubeRay's autoscaler sidecar (Kueue v0.19.2 ``raycluster/common.go`` ``defaultAutoscalerResources``) and
#: RayJob's default submitter (``rayjob_controller.go`` ``defaultSubmitterResources``), as Kueue accounts them.
_AUTOSCALER = {"name": "autoscaler", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}}}
_SUBMITTER_RESOURCES = {"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}

#: ``(API group, kind)`` of every kind :func:`pod_sets` reads, and where its pod sets are (for messages).
KIND_PATHS: dict[tuple[str, str], str] = {
    ("batch", "Job"): "spec.template",
    ("jobset.x-k8s.io", "JobSet"): "spec.replicatedJobs[].template.spec.template",
    ("kubeflow.org", "PyTorchJob"): "spec.pytorchReplicaSpecs.<Master|Worker>.template",
    (_TRAINER_GROUP, "TrainJob"): "spec.runtimeRef -> the runtime's spec.template (a JobSet template)",
    ("ray.io", "RayCluster"): "spec.headGroupSpec.template, spec.workerGroupSpecs[].template",
    ("ray.io", "RayJob"): "spec.rayClusterSpec, spec.submitterPodTemplate",
    ("ray.io", "RayService"): "spec.rayClusterSpec",
}

#: ``(kind, namespace or "", name)`` of a training runtime: how a TrainJob's ``runtimeRef`` is looked up.
RuntimeKey = tuple[str, str, str]


class PodSetError(ValueError):
    """A value the pod sets are counted from has the wrong type (a string for ``replicas``, a list for ``spec``).

    Attributes:
        key: the key path in the object (``spec.replicatedJobs[0].replicas``).
        problem: what is wrong with it.
    """

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class PodSet:
    """One pod set of a job as Kueue builds it.

    Attributes:
        name: Kueue's pod set name (lower-case: ``main``, ``worker``, ``head``, ``node``).
        count: pods Kueue counts when it admits the job.
        most: most pods of the set that can run at once: ``count``, except for a Ray worker group with
            ``enableInTreeAutoscaling`` (``maxReplicas`` x ``numOfHosts``); ``None``: no bound (``maxReplicas``
            omitted, KubeRay's default 2147483647).
        template: the pod template (``metadata`` and ``spec``), as Kueue sees it (TrainJob: the runtime's,
            patched and with ``resourcesPerNode``; Ray head: with the autoscaler sidecar).
        path: key path of the template in the object (``spec.replicatedJobs[0].template.spec.template``);
            for a TrainJob the path in its runtime, prefixed ``runtime:``, or :data:`TRAINJOB_POD_PATH` when unresolved.
        count_path: key path of the value the count comes from ('' when it is fixed).
        resolved: False for a TrainJob whose runtime was not given: only the trainer pod set, as the TrainJob
            alone decides it.
    """

    name: str
    count: int
    most: int | None
    template: Mapping[str, Any]
    path: str
    count_path: str = ""
    resolved: bool = True

    @property
    def labels(self) -> Mapping[str, Any]:
        """The pods' labels (``template.metadata.labels``)."""
        return _mapping(_mapping(self.template.get("metadata")).get("labels"))

    @property
    def annotations(self) -> Mapping[str, Any]:
        """The pods' annotations (``template.metadata.annotations``): where Kueue reads topology requests."""
        return _mapping(_mapping(self.template.get("metadata")).get("annotations"))

    @property
    def spec(self) -> Mapping[str, Any]:
        """The pod spec (``template.spec``)."""
        return _mapping(self.template.get("spec"))

    def gpus(self) -> int:
        """Whole ``nvidia.com/gpu`` of one pod: the sum of the app containers' limits, or the largest init
        container's when bigger (Kubernetes' effective request, 1.35). A limit that is not a whole number of
        devices (``"0.5"``, ``"8 GPUs"``; :func:`hybridgpu.k8s.device_count`) counts 0 here: the policy pack's
        ``gpu-workload-requests`` reports it."""
        totals = []
        for key in ("containers", "initContainers"):
            counts = []
            for c in self.spec.get(key) or []:
                limits = _mapping(_mapping(_mapping(c).get("resources")).get("limits"))
                try:
                    counts.append(device_count(limits.get(GPU_RESOURCE, 0)))
                except QuantityError:
                    counts.append(0)
            totals.append(sum(counts) if key == "containers" else max(counts, default=0))
        return max(totals)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _group(obj: Mapping[str, Any]) -> str:
    api = obj.get("apiVersion")
    return api.rpartition("/")[0] if isinstance(api, str) else ""


def _map_at(node: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = node.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PodSetError(path, f"must be a mapping, got {type(value).__name__}")
    return value


def _list_at(node: Mapping[str, Any], key: str, path: str) -> Sequence[Any]:
    value = node.get(key)
    if value is None:
        return []
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise PodSetError(path, f"must be a list, got {type(value).__name__}")
    return value


def _int_at(node: Mapping[str, Any], key: str, path: str, default: int) -> int:
    """A count (an integer >= 0) at ``node[key]``; ``default`` when unset."""
    value = node.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PodSetError(path, f"must be a whole number >= 0, got {value!r}")
    return value


def _job_pods(job_spec: Mapping[str, Any], path: str) -> int:
    """``min(parallelism, completions)`` of a Job spec (parallelism default 1): Kueue's pods of one Job."""
    parallelism = _int_at(job_spec, "parallelism", f"{path}.parallelism", 1)
    completions = _int_at(job_spec, "completions", f"{path}.completions", parallelism)
    return min(parallelism, completions)


def _batch_job(obj: Mapping[str, Any]) -> list[PodSet]:
    spec = _map_at(obj, "spec", "spec")
    count = _job_pods(spec, "spec")
    return [PodSet(DEFAULT_POD_SET, count, count, _map_at(spec, "template", "spec.template"), "spec.template", "spec.parallelism")]


def _jobset_spec(spec: Mapping[str, Any], prefix: str) -> list[PodSet]:
    found = []
    for i, rj in enumerate(_list_at(spec, "replicatedJobs", f"{prefix}.replicatedJobs")):
        where = f"{prefix}.replicatedJobs[{i}]"
        if not isinstance(rj, Mapping):
            raise PodSetError(where, f"must be a mapping, got {type(rj).__name__}")
        job_spec = _map_at(_map_at(rj, "template", f"{where}.template"), "spec", f"{where}.template.spec")
        replicas = _int_at(rj, "replicas", f"{where}.replicas", 1)
        count = replicas * _job_pods(job_spec, f"{where}.template.spec")
        template = _map_at(job_spec, "template", f"{where}.template.spec.template")
        found.append(PodSet(str(rj.get("name", f"#{i}")).lower(), count, count, template, f"{where}.template.spec.template", f"{where}.replicas"))
    return found


def _pytorchjob(obj: Mapping[str, Any]) -> list[PodSet]:
    specs = _map_at(_map_at(obj, "spec", "spec"), "pytorchReplicaSpecs", "spec.pytorchReplicaSpecs")
    found = []
    for kind in ("Master", "Worker"):
        if kind not in specs:
            continue
        where = f"spec.pytorchReplicaSpecs.{kind}"
        rs = _map_at(specs, kind, where)
        count = _int_at(rs, "replicas", f"{where}.replicas", 1)
        found.append(PodSet(kind.lower(), count, count, _map_at(rs, "template", f"{where}.template"), f"{where}.template", f"{where}.replicas"))
    return found


def _ray_cluster(spec: Mapping[str, Any], prefix: str) -> list[PodSet]:
    """Kueue's pod sets of a RayClusterSpec at ``prefix`` (``spec`` or ``spec.rayClusterSpec``)."""
    head_path = f"{prefix}.headGroupSpec.template"
    head = copy.deepcopy(dict(_map_at(_map_at(spec, "headGroupSpec", f"{prefix}.headGroupSpec"), "template", head_path)))
    autoscaling = spec.get("enableInTreeAutoscaling") is True
    if autoscaling:
        resources = _map_at(_map_at(spec, "autoscalerOptions", f"{prefix}.autoscalerOptions"), "resources", f"{prefix}.autoscalerOptions.resources")
        sidecar = {**_AUTOSCALER, "resources": copy.deepcopy(dict(resources))} if resources else copy.deepcopy(_AUTOSCALER)
        pod = head.setdefault("spec", {})
        if isinstance(pod, dict):
            pod["containers"] = [*_list_at(pod, "containers", f"{head_path}.spec.containers"), sidecar]
    found = [PodSet("head", 1, 1, head, head_path)]
    for i, wg in enumerate(_list_at(spec, "workerGroupSpecs", f"{prefix}.workerGroupSpecs")):
        where = f"{prefix}.workerGroupSpecs[{i}]"
        if not isinstance(wg, Mapping):
            raise PodSetError(where, f"must be a mapping, got {type(wg).__name__}")
        hosts = max(_int_at(wg, "numOfHosts", f"{where}.numOfHosts", 1), 1)
        count = _int_at(wg, "replicas", f"{where}.replicas", 0) * hosts
        most: int | None = count
        count_path = f"{where}.replicas"
        if autoscaling:
            top = wg.get("maxReplicas")
            most = None if top is None else _int_at(wg, "maxReplicas", f"{where}.maxReplicas", 0) * hosts
            count_path = f"{where}.maxReplicas"
        name = str(wg.get("groupName", f"#{i}")).lower()
        found.append(PodSet(name, count, most, _map_at(wg, "template", f"{where}.template"), f"{where}.template", count_path))
    return found


def _rayjob(obj: Mapping[str, Any]) -> list[PodSet]:
    spec = _map_at(obj, "spec", "spec")
    found = _ray_cluster(_map_at(spec, "rayClusterSpec", "spec.rayClusterSpec"), "spec.rayClusterSpec")
    if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        template = spec.get("submitterPodTemplate")
        if isinstance(template, Mapping):
            found.append(PodSet("submitter", 1, 1, template, "spec.submitterPodTemplate"))
        else:
            default = {"spec": {"restartPolicy": "Never", "containers": [{"name": "ray-job-submitter", "resources": copy.deepcopy(_SUBMITTER_RESOURCES)}]}}
            found.append(PodSet("submitter", 1, 1, default, "spec.submitterPodTemplate"))
    return found


def ray_cluster_spec(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], str] | None:
    """``(RayClusterSpec, its key path)`` of a RayCluster (``spec``), RayJob or RayService (``spec.rayClusterSpec``); ``None`` otherwise."""
    if _group(obj) != "ray.io" or obj.get("kind") not in ("RayCluster", "RayJob", "RayService"):
        return None
    spec = _mapping(obj.get("spec"))
    return (spec, "spec") if obj.get("kind") == "RayCluster" else (_mapping(spec.get("rayClusterSpec")), "spec.rayClusterSpec")


def is_trainjob(obj: Mapping[str, Any]) -> bool:
    """True for a Kubeflow Trainer v2 TrainJob (``trainer.kubeflow.org``), whose pod sets need its runtime."""
    return (_group(obj), obj.get("kind")) == (_TRAINER_GROUP, "TrainJob")


def is_training_runtime(obj: Mapping[str, Any]) -> bool:
    """True for a TrainingRuntime or ClusterTrainingRuntime: a template, not a job (Kueue admits no workload for it)."""
    return _group(obj) == _TRAINER_GROUP and obj.get("kind") in (_CLUSTER_RUNTIME, _NAMESPACED_RUNTIME)


def runtime_key(trainjob: Mapping[str, Any]) -> RuntimeKey:
    """The runtime a TrainJob's ``spec.runtimeRef`` names: ``(kind, namespace, name)``; the namespace is ''
    for a ClusterTrainingRuntime (the default kind) and the TrainJob's (or ``default``) for a TrainingRuntime."""
    ref = _mapping(_mapping(trainjob.get("spec")).get("runtimeRef"))
    kind = str(ref.get("kind") or _CLUSTER_RUNTIME)
    namespace = "" if kind == _CLUSTER_RUNTIME else str(_mapping(trainjob.get("metadata")).get("namespace") or "default")
    return kind, namespace, str(ref.get("name") or "")


def runtimes_of(docs: Sequence[Any]) -> dict[RuntimeKey, Mapping[str, Any]]:
    """The TrainingRuntime and ClusterTrainingRuntime objects among ``docs``, keyed as :func:`runtime_key` looks them up."""
    found: dict[RuntimeKey, Mapping[str, Any]] = {}
    for doc in docs:
        if not isinstance(doc, Mapping) or not is_training_runtime(doc):
            continue
        meta = _mapping(doc.get("metadata"))
        namespace = "" if doc.get("kind") == _CLUSTER_RUNTIME else str(meta.get("namespace") or "default")
        found[(str(doc.get("kind")), namespace, str(meta.get("name") or ""))] = doc
    return found


def _merge_named(base: Sequence[Any], patch: Sequence[Any]) -> list[Any]:
    """Strategic merge of two lists of mappings keyed by ``name``: a patch entry merges into its namesake, or is appended."""
    merged = [copy.deepcopy(b) for b in base]
    for item in patch:
        if not isinstance(item, Mapping):
            continue
        target = next((m for m in merged if isinstance(m, dict) and m.get("name") == item.get("name")), None)
        if target is None:
            merged.append(copy.deepcopy(dict(item)))
        else:
            target.update(_strategic(target, item))
    return merged


_BY_NAME = frozenset({"replicatedJobs", "containers", "initContainers", "volumes", "env", "ports"})


def _strategic(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A strategic merge patch as the Trainer applies runtime patches: maps merge key by key, the lists of
    :data:`_BY_NAME` merge by ``name``, any other value is replaced (kubernetes apimachinery
    ``strategicpatch``, patch merge keys of the JobSet and core API types)."""
    out = copy.deepcopy(dict(base))
    for key, value in patch.items():
        old = out.get(key)
        if key in _BY_NAME and isinstance(value, Sequence) and isinstance(old, Sequence) and not isinstance(value, str):
            out[key] = _merge_named(old, value)
        elif isinstance(value, Mapping) and isinstance(old, Mapping):
            out[key] = _strategic(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _trainjob(obj: Mapping[str, Any], runtimes: Mapping[RuntimeKey, Mapping[str, Any]]) -> list[PodSet]:
    spec = _map_at(obj, "spec", "spec")
    trainer = _map_at(spec, "trainer", "spec.trainer")
    resources = _map_at(trainer, "resourcesPerNode", "spec.trainer.resourcesPerNode")
    patches = _list_at(spec, "runtimePatches", "spec.runtimePatches")
    runtime = runtimes.get(runtime_key(obj))
    if runtime is None:
        # The TrainJob alone: the trainer's pods as its runtime patches of the `node` replicatedJob shape them
        # (labels, annotations, nodeSelector, tolerations, volumes, the node container's env and mounts).
        count = _int_at(trainer, "numNodes", "spec.trainer.numNodes", 1)
        template: dict[str, Any] = {"metadata": {}, "spec": {"containers": [{"name": TRAINER_NODE_CONTAINER}]}}
        for i, patch in enumerate(patches):
            rjs = _list_at(_mapping(_mapping(_mapping(_mapping(patch).get("trainingRuntimeSpec")).get("template")).get("spec")), "replicatedJobs", f"spec.runtimePatches[{i}]")
            for rj in rjs:
                if isinstance(rj, Mapping) and rj.get("name") == TRAINER_NODE_CONTAINER:
                    template = _strategic(template, _mapping(_mapping(_mapping(rj.get("template")).get("spec")).get("template")))
        for c in template["spec"].get("containers") or []:
            if isinstance(c, dict) and c.get("name") == TRAINER_NODE_CONTAINER:
                c["resources"] = copy.deepcopy(dict(resources))
        return [PodSet(TRAINER_NODE_CONTAINER, count, count, template, TRAINJOB_POD_PATH, "spec.trainer.numNodes", resolved=False)]
    return _jobset_spec(_map_at(_child_jobset(obj, runtime), "spec", "spec"), "spec")


def _child_jobset(obj: Mapping[str, Any], runtime: Mapping[str, Any]) -> dict[str, Any]:
    spec = _map_at(obj, "spec", "spec")
    trainer = _map_at(spec, "trainer", "spec.trainer")
    resources = _map_at(trainer, "resourcesPerNode", "spec.trainer.resourcesPerNode")
    rspec = _map_at(runtime, "spec", "runtime spec")
    js_spec: Mapping[str, Any] = _map_at(_map_at(rspec, "template", "runtime spec.template"), "spec", "runtime spec.template.spec")
    for i, patch in enumerate(_list_at(spec, "runtimePatches", "spec.runtimePatches")):
        patch_spec = _mapping(_mapping(_mapping(_mapping(patch).get("trainingRuntimeSpec")).get("template")).get("spec"))
        if patch_spec:
            js_spec = _strategic(js_spec, patch_spec)
    runtime_nodes = _int_at(_map_at(rspec, "mlPolicy", "runtime spec.mlPolicy"), "numNodes", "runtime spec.mlPolicy.numNodes", 1)
    nodes = _int_at(trainer, "numNodes", "spec.trainer.numNodes", runtime_nodes)
    jobs = []
    for i, rj in enumerate(_list_at(js_spec, "replicatedJobs", "runtime spec.template.spec.replicatedJobs")):
        if not isinstance(rj, Mapping):
            raise PodSetError(f"runtime spec.template.spec.replicatedJobs[{i}]", f"must be a mapping, got {type(rj).__name__}")
        job = copy.deepcopy(dict(rj))
        job["replicas"] = 1
        template = job.setdefault("template", {})
        job_spec = template.setdefault("spec", {}) if isinstance(template, dict) else {}
        if _mapping(_mapping(template.get("metadata")).get("labels")).get(TRAINER_ANCESTOR_LABEL) == TRAINER_ANCESTOR:
            count = nodes
            pod_spec = _mapping(_mapping(job_spec.get("template")).get("spec"))
            for c in pod_spec.get("containers") or []:
                if resources and isinstance(c, dict) and c.get("name") == TRAINER_NODE_CONTAINER:
                    c["resources"] = copy.deepcopy(dict(resources))
        else:
            count = _int_at(job_spec, "parallelism", f"runtime spec.template.spec.replicatedJobs[{i}].template.spec.parallelism", 1)
        job_spec["parallelism"] = job_spec["completions"] = count
        jobs.append(job)
    meta = _mapping(obj.get("metadata"))
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {k: copy.deepcopy(meta[k]) for k in ("name", "namespace", "labels") if k in meta},
        "spec": {**copy.deepcopy(dict(js_spec)), "replicatedJobs": jobs},
    }


def trainjob_jobset(trainjob: Mapping[str, Any], runtimes: Mapping[RuntimeKey, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The JobSet the Trainer creates for ``trainjob`` (and whose pod sets Kueue admits), or ``None`` when its
    runtime is not among ``runtimes`` (see the module docstring for the rules).

    Raises:
        PodSetError: a count of the TrainJob or its runtime has the wrong type.
    """
    runtime = runtimes.get(runtime_key(trainjob))
    return None if runtime is None else _child_jobset(trainjob, runtime)


def pod_sets(obj: Mapping[str, Any], runtimes: Mapping[RuntimeKey, Mapping[str, Any]] | None = None) -> list[PodSet] | None:
    """Kueue's pod sets of a job object (see the module docstring for each kind's rule and source).

    Args:
        obj: a Kubernetes object as written (apiVersion, kind, metadata, spec): a batch Job, JobSet,
            PyTorchJob, TrainJob, RayJob, RayCluster or RayService.
        runtimes: training runtimes a TrainJob may reference (:func:`runtimes_of`); without its runtime a
            TrainJob gets only its trainer pod set, marked ``resolved=False``.

    Returns:
        The pod sets in Kueue's order; ``None`` when ``obj`` is not one of the kinds above.

    Raises:
        PodSetError: a value the counts are read from has the wrong type (names the key path).
    """
    key = (_group(obj), str(obj.get("kind")))
    if key not in KIND_PATHS:
        return None
    if key == ("batch", "Job"):
        return _batch_job(obj)
    if key == ("jobset.x-k8s.io", "JobSet"):
        return _jobset_spec(_map_at(obj, "spec", "spec"), "spec")
    if key == ("kubeflow.org", "PyTorchJob"):
        return _pytorchjob(obj)
    if key == (_TRAINER_GROUP, "TrainJob"):
        return _trainjob(obj, runtimes or {})
    if key == ("ray.io", "RayCluster"):
        return _ray_cluster(_map_at(obj, "spec", "spec"), "spec")
    if key == ("ray.io", "RayJob"):
        return _rayjob(obj)
    return _ray_cluster(_map_at(_map_at(obj, "spec", "spec"), "rayClusterSpec", "spec.rayClusterSpec"), "spec.rayClusterSpec")
