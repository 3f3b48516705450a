"""Find the pod templates of a Kubernetes workload and the GPUs they ask for.

Works on any object that embeds pods: Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet,
Job, CronJob, and custom resources that embed pod templates the same way (Kubeflow
PyTorchJob replica specs, JobSet, RayCluster, LeaderWorkerSet...). A pod spec is any mapping
with a ``containers`` list; its labels are the ``metadata.labels`` next to it.

The job kinds Kueue admits (batch Job, JobSet, PyTorchJob, TrainJob, RayJob, RayCluster, RayService) are
read through their pod sets, the one home of that rule (:func:`hybridgpu.workloads.pod_sets`): one
:class:`PodTemplate` per Kueue pod set, whose ``replicas`` is the most pods the set can run at once (a Ray
worker group with in-tree autoscaling: ``maxReplicas`` x ``numOfHosts``; without ``maxReplicas`` it has no
bound, :attr:`PodTemplate.unbounded`); a TrainJob is read alone (its runtime is another object): its trainer
pod set, ``numNodes`` pods with ``resourcesPerNode``. Any other object is walked for embedded pod templates.

Replica multipliers of the walk (how many pods of a template run at once):

* ``replicas`` or ``parallelism`` next to a ``template``/``jobTemplate`` multiplies the pods below
  it, so a JobSet's ``replicatedJobs[].replicas`` x the Job template's ``parallelism`` counts
  (JobSet API ``jobset.x-k8s.io/v1alpha2``, kubernetes-sigs/jobset ``api/jobset/v1alpha2/jobset_types.go``);
* a LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``) runs ``spec.replicas`` groups of
  ``leaderWorkerTemplate.size`` pods: one leader (``leaderTemplate``, or the worker template
  when it is absent) and ``size - 1`` workers (kubernetes-sigs/lws ``api/leaderworkerset/v1/
  leaderworkerset_types.go``, LWS 0.7);
* a HorizontalPodAutoscaler's ``maxReplicas`` or a KEDA ScaledObject's ``maxReplicaCount``
  replaces the target's ``replicas``: that is a stack policy (:func:`hybridgpu.policy.oversized.gpu_autoscaling`).

Values unknown during preview are stepped over where the walk does not need them (a computed
namespace or label), and recorded where it does (an unknown replica count is
:attr:`PodTemplate.unknown`, reported once by the policy that needs the count).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybridgpu.k8s import EFA_RESOURCE, GPU_RESOURCE, MIG_RESOURCE_PREFIX, QuantityError, device_count
from hybridgpu.policy.base import UNKNOWN_ERRORS, as_list, dig, parse_quantity
from hybridgpu.workloads import TRAINJOB_POD_PATH, TRAINJOB_RESOURCES_PATH, PodSetError, pod_sets

# Extended resources that stand for GPUs: whole GPUs (``GPU_RESOURCE``, device plugin) and MIG
# devices under the ``mixed`` strategy (``MIG_RESOURCE_PREFIX`` + profile). Source: NVIDIA
# k8s-device-plugin README, "MIG support" (v0.17, 2025).


def is_gpu_resource(name: str) -> bool:
    """True for ``nvidia.com/gpu`` and ``nvidia.com/mig-<profile>`` (also ``.shared`` replicas)."""
    return name == GPU_RESOURCE or name.startswith(GPU_RESOURCE + ".") or name.startswith(MIG_RESOURCE_PREFIX)


@dataclass(frozen=True)
class PodTemplate:
    """One pod template inside a workload.

    Attributes:
        path: where it sits in the object (e.g. ``spec.template``; '' for a Pod).
        labels: the pod's labels.
        spec: the pod spec (a mapping with ``containers``).
        replicas: how many pods of this template the workload runs at once (``replicas`` or
            Job ``parallelism``; 1 when unset; DaemonSets count 1 per node).
        unknown: paths of replica counts that are unknown during preview (``replicas`` then
            counts them as 1); the GPU-count policy fails closed on them.
        unbounded: paths of replica counts with no upper bound (a Ray worker group with in-tree
            autoscaling and no ``maxReplicas``); the GPU-count policy fails closed on them too.
        pod_set: Kueue's pod set name, for the job kinds Kueue admits ('' for other objects).
        container_path: where the containers' resources are written when not in the template
            (a TrainJob's ``spec.trainer.resourcesPerNode``); '' otherwise.
        annotations: the pods' annotations (Kueue reads topology requests there).
    """

    path: str
    labels: Mapping[str, Any]
    spec: Mapping[str, Any]
    replicas: int
    unknown: tuple[str, ...] = ()
    unbounded: tuple[str, ...] = ()
    pod_set: str = ""
    container_path: str = ""
    annotations: Mapping[str, Any] = field(default_factory=dict)

    def containers(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """``(path, container)`` for every container and init container."""
        for key in ("initContainers", "containers"):
            for i, c in enumerate(as_list(self.spec.get(key))):
                if isinstance(c, Mapping):
                    yield self.container_path or f"{self.path + '.' if self.path else ''}spec.{key}[{i}]", c

    def malformed(self) -> list[tuple[str, str, Any]]:
        """``(container path, resource name, value)`` of every GPU request or limit that is not a
        whole number of devices (``"2 GPUs"``, ``"one"``, negative, ``"0.5"``, ``"500m"``;
        :func:`hybridgpu.k8s.device_count`, whose message says why): a violation, never skipped."""
        bad: list[tuple[str, str, Any]] = []
        for path, c in self.containers():
            for section in ("requests", "limits"):
                for name, value in (dig(c, "resources", section) or {}).items():
                    if is_gpu_resource(str(name)):
                        try:
                            device_count(value, str(name))
                        except QuantityError:
                            bad.append((f"{path}.resources.{section}", str(name), value))
        return bad

    def efa_devices(self) -> float:
        """EFA devices (``vpc.amazonaws.com/efa``) the pod asks for, by the same effective-request rule as
        :meth:`gpu_limits` (sum over app containers, the largest init container when bigger); 0 when none."""
        app = sum(_gpu_asks(c, is_efa_resource).get(EFA_RESOURCE, 0.0) for c in as_list(self.spec.get("containers")))
        init = max((_gpu_asks(c, is_efa_resource).get(EFA_RESOURCE, 0.0) for c in as_list(self.spec.get("initContainers"))), default=0.0)
        return max(app, init)

    def gpu_limits(self) -> dict[str, float]:
        """GPU resources of the pod: the sum over app containers of each GPU resource's limit
        (or request, when only a request is given); init containers run before the app
        containers, so their largest ask counts only when it is bigger (Kubernetes' effective
        request rule, pod resource model of Kubernetes 1.35)."""
        app: dict[str, float] = {}
        init: dict[str, float] = {}
        for key, target in (("containers", app), ("initContainers", init)):
            for c in as_list(self.spec.get(key)):
                for name, qty in _gpu_asks(c).items():
                    if key == "containers":
                        target[name] = target.get(name, 0) + qty
                    else:
                        target[name] = max(target.get(name, 0), qty)
        return {n: max(app.get(n, 0), init.get(n, 0)) for n in {*app, *init}}


def is_efa_resource(name: str) -> bool:
    """True for ``vpc.amazonaws.com/efa``, the EFA devices the AWS EFA device plugin advertises (:mod:`hybridgpu.render.efa`)."""
    return name == EFA_RESOURCE


def _gpu_asks(container: Any, wanted: Callable[[str], bool] = is_gpu_resource) -> dict[str, float]:
    asks: dict[str, float] = {}
    for section in ("requests", "limits"):
        for name, value in (dig(container, "resources", section) or {}).items():
            if wanted(str(name)):
                qty = parse_quantity(value)
                if qty is not None and qty > 0:
                    asks[str(name)] = max(asks.get(str(name), 0), qty)
                elif qty is None:
                    asks.setdefault(str(name), 0.0)  # malformed: still a GPU ask (PodTemplate.malformed reports it)
    return asks


def pod_templates(obj: Mapping[str, Any]) -> list[PodTemplate]:
    """Every pod template in a Kubernetes object (its inputs as Pulumi sends them).

    Returns:
        [] for objects without pods (ConfigMaps, NodePools...). For the job kinds Kueue admits, one per
        Kueue pod set (:func:`hybridgpu.workloads.pod_sets`); when a count there has the wrong type or is
        unknown during preview, the object is walked instead (a wrong type is the schema's to report).
    """
    skipped: tuple[type[BaseException], ...] = (PodSetError, *UNKNOWN_ERRORS)
    try:
        sets = pod_sets(obj)
    except skipped:
        sets = None
    if sets is not None:
        return [
            PodTemplate(
                ps.path,
                ps.labels,
                ps.spec,
                ps.count if ps.most is None else ps.most,
                (),
                (ps.count_path,) if ps.most is None else (),
                ps.name,
                TRAINJOB_RESOURCES_PATH if ps.path == TRAINJOB_POD_PATH else "",
                ps.annotations,
            )
            for ps in sets
        ]
    found: list[PodTemplate] = []
    _walk(obj, "", 1, (), found)
    return found


_LWS_KEY = "leaderWorkerTemplate"


def _get(node: Mapping[str, Any], key: str) -> tuple[Any, bool]:
    """``(value, known)``: a value unknown during preview comes back as ``(None, False)``."""
    try:
        return node.get(key), True
    except tuple(UNKNOWN_ERRORS):
        return None, False


def _count(node: Mapping[str, Any], keys: tuple[str, ...], path: str) -> tuple[int, tuple[str, ...]]:
    """The first of ``keys`` set on ``node`` as a count >= 1 (1 when unset), and the unknown paths."""
    for key in keys:
        value, is_known = _get(node, key)
        if not is_known:
            return 1, (f"{path}.{key}" if path else key,)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1:
            return int(value), ()
        if value is not None:
            break
    return 1, ()


def _walk(node: Any, path: str, multiplier: int, unknown: tuple[str, ...], found: list[PodTemplate]) -> None:
    if isinstance(node, Mapping):
        spec, _ = _get(node, "spec")
        containers, _ = _get(spec, "containers") if isinstance(spec, Mapping) else (None, True)
        if isinstance(containers, Sequence) and not isinstance(containers, (str, bytes)):
            labels = dig(node, "metadata", "labels") if _get(node, "metadata")[1] else None
            annotations = dig(node, "metadata", "annotations") if _get(node, "metadata")[1] else None
            found.append(
                PodTemplate(
                    path, labels if isinstance(labels, Mapping) else {}, spec, multiplier, unknown,
                    annotations=annotations if isinstance(annotations, Mapping) else {},
                )
            )
            return
        lws, _ = _get(node, _LWS_KEY)
        if isinstance(lws, Mapping):
            groups, more = _count(node, ("replicas",), path)
            size, more2 = _count(lws, ("size",), f"{path}.{_LWS_KEY}" if path else _LWS_KEY)
            leader, _ = _get(lws, "leaderTemplate")
            where = f"{path}.{_LWS_KEY}" if path else _LWS_KEY
            seen = unknown + more + more2
            if isinstance(leader, Mapping):
                _walk(leader, f"{where}.leaderTemplate", multiplier * groups, seen, found)
                _walk(_get(lws, "workerTemplate")[0], f"{where}.workerTemplate", multiplier * groups * max(size - 1, 0), seen, found)
            else:
                _walk(_get(lws, "workerTemplate")[0], f"{where}.workerTemplate", multiplier * groups * size, seen, found)
            for key in node:
                if key != _LWS_KEY:
                    _walk(_get(node, key)[0], f"{path}.{key}" if path else str(key), multiplier, unknown, found)
            return
        for key in list(node):
            value, is_known = _get(node, key)
            if not is_known:
                continue  # unknown here and not needed: a computed namespace, label or name
            child_multiplier, child_unknown = multiplier, unknown
            if key in ("template", "jobTemplate"):
                count, more = _count(node, ("replicas", "parallelism"), path)
                child_multiplier, child_unknown = multiplier * count, unknown + more
            _walk(value, f"{path}.{key}" if path else str(key), child_multiplier, child_unknown, found)
    elif isinstance(node, Sequence) and not isinstance(node, (str, bytes)):
        for i in range(len(node)):
            try:
                value = node[i]
            except tuple(UNKNOWN_ERRORS):
                continue
            _walk(value, f"{path}[{i}]", multiplier, unknown, found)
