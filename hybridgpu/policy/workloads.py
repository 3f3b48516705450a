"""Find the pod templates of a Kubernetes workload and the GPUs they ask for.

Works on any object that embeds pods: Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet,
Job, CronJob, and custom resources that embed pod templates the same way (Kubeflow
PyTorchJob replica specs, JobSet, RayCluster...). A pod spec is any mapping with a
``containers`` list; its labels are the ``metadata.labels`` next to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hybridgpu.k8s import GPU_RESOURCE, MIG_RESOURCE_PREFIX
from hybridgpu.policy.base import as_list, dig, parse_quantity

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
    """

    path: str
    labels: Mapping[str, Any]
    spec: Mapping[str, Any]
    replicas: int

    def containers(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """``(path, container)`` for every container and init container."""
        for key in ("initContainers", "containers"):
            for i, c in enumerate(as_list(self.spec.get(key))):
                if isinstance(c, Mapping):
                    yield f"{self.path + '.' if self.path else ''}spec.{key}[{i}]", c

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


def _gpu_asks(container: Any) -> dict[str, float]:
    asks: dict[str, float] = {}
    for section in ("requests", "limits"):
        for name, value in (dig(container, "resources", section) or {}).items():
            if is_gpu_resource(str(name)):
                qty = parse_quantity(value)
                if qty is not None:
                    asks[str(name)] = max(asks.get(str(name), 0), qty)
    return asks


def pod_templates(obj: Mapping[str, Any]) -> list[PodTemplate]:
    """Every pod template in a Kubernetes object (its inputs as Pulumi sends them).

    Returns:
        [] for objects without pods (ConfigMaps, NodePools...).
    """
    found: list[PodTemplate] = []
    _walk(obj, "", 1, found)
    return found


def _replicas(spec: Mapping[str, Any]) -> int:
    for key in ("replicas", "parallelism"):
        value = spec.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1:
            return int(value)
    return 1


def _walk(node: Any, path: str, multiplier: int, found: list[PodTemplate]) -> None:
    if isinstance(node, Mapping):
        spec = node.get("spec")
        if isinstance(spec, Mapping) and isinstance(spec.get("containers"), Sequence):
            labels = dig(node, "metadata", "labels") or {}
            found.append(PodTemplate(path, labels if isinstance(labels, Mapping) else {}, spec, multiplier))
            return
        for key, value in node.items():
            child_multiplier = multiplier
            if key in ("template", "jobTemplate") and isinstance(node, Mapping):
                child_multiplier = multiplier * _replicas(node)
            _walk(value, f"{path}.{key}" if path else str(key), child_multiplier, found)
    elif isinstance(node, Sequence) and not isinstance(node, (str, bytes)):
        for i, value in enumerate(node):
            _walk(value, f"{path}[{i}]", multiplier, found)
