"""Topology requirements against the inventory: declared gangs and job pod sets must fit a domain of the Kueue Topology (pure).

Two checks read the on-prem Topology (derived from the inventory by
:func:`hybridgpu.render.topology.onprem_topology_levels`) together with something else, so they
live in the stack layer:

* :func:`gang_issues`: every ``hybridgpu:onprem.gangs[]`` entry (config) fits one domain of its
  level: ``topology-too-large`` when no block/rack/host of the active GPU workers (of its model)
  holds that many GPUs, ``topology-level-missing`` when the inventory declares no such level;
* :func:`job_topology_issues`: a job manifest (any kind Kueue admits: its pod sets come from
  :func:`hybridgpu.workloads.pod_sets`) whose pod templates carry
  ``kueue.x-k8s.io/podset-required-topology`` or ``-preferred-topology``: the annotation names a
  node label that is a level of the Topology (``topology-level-mismatch``; Kueue skips a flavor
  whose Topology lacks the requested level, "Flavor ... does not contain the requested level",
  kubernetes-sigs/kueue v0.19.2 ``pkg/scheduler/flavorassigner/tas_flavorassigner.go``
  ``checkPodSetAndFlavorMatchForTAS``), and for *required* the GPUs of each pod set (pods x
  ``nvidia.com/gpu`` limits) fit one domain of the level (``topology-too-large``): the annotation
  applies per pod set ("all pods [of the PodSet] on nodes within the same topology domain",
  ``apis/kueue/v1beta2/topology_types.go``), so a JobSet's replicatedJobs or a RayCluster's head and
  worker groups are placed separately;
* and the job's GPUs at once fit the largest on-prem flavor's active GPUs (``quota-too-small``: the on-prem
  ClusterQueue's nominal quota is the active GPU count, :func:`hybridgpu.burst.plan.onprem_capacity`, and a
  workload above it waits forever).

Domains count only active GPU workers carrying every level label (Kueue's TAS ignores nodes
missing one: ``pkg/util/tas/node.go`` ``NodeMatchesFlavor``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hybridgpu.config.models import StackConfig
from hybridgpu.errors import Issue
from hybridgpu.inventory.models import Inventory
from hybridgpu.k8s import HOSTNAME_LABEL
from hybridgpu.render.topology import (
    LEVEL_LABELS,
    PREFERRED_TOPOLOGY_ANNOTATION,
    REQUIRED_TOPOLOGY_ANNOTATION,
    onprem_topology_levels,
    topology_domains,
)
from hybridgpu.workloads import RuntimeKey, pod_sets

__all__ = ["gang_issues", "job_pod_sets", "job_topology_issues"]


def _largest(domains: Mapping[str, int]) -> tuple[str, int]:
    if not domains:
        return "(none)", 0
    name = max(sorted(domains), key=lambda d: domains[d])
    return name, domains[name]


def gang_issues(config: StackConfig, inventory: Inventory, file: str) -> list[Issue]:
    """``hybridgpu:onprem.gangs`` entries that fit no domain of their level (codes ``topology-too-large``, ``topology-level-missing``)."""
    if config.onprem is None:
        return []
    levels = (*onprem_topology_levels(inventory.hosts), HOSTNAME_LABEL)
    issues = []
    for i, gang in enumerate(config.onprem.gangs):
        key = f"hybridgpu:onprem.gangs[{i}]"
        label = LEVEL_LABELS[gang.topology]
        if label not in levels:
            issues.append(
                Issue(
                    file, f"{key}.topology",
                    f"gang {gang.name} requires one {gang.topology}, but no GPU worker of the inventory declares a {gang.topology}, so the "
                    f"Kueue Topology has no level {label} and Kueue never admits such a job",
                    f"add `{gang.topology}:` to the GPU workers in the inventory, or require a level it has ({', '.join(levels)})",
                    code="topology-level-missing",
                )
            )
            continue
        domains = topology_domains(inventory.hosts, label, gang.gpu_model)
        name, biggest = _largest(domains)
        if gang.gpus > biggest:
            of = f"{gang.gpu_model} " if gang.gpu_model else ""
            largest = (
                f"the largest {gang.topology} of the inventory's active GPU workers has {biggest} ({name})"
                if domains
                else f"no active {of}GPU worker of the inventory has a {gang.topology}"
            )
            issues.append(
                Issue(
                    file, f"{key}.gpus",
                    f"gang {gang.name} needs {gang.gpus} {of}GPUs in one {gang.topology}, but {largest}; Kueue's topology-aware "
                    "scheduling never finds a domain and the job stays pending",
                    f"lower `gpus` to at most {biggest}, require a broader level, or use the preferred annotation "
                    f"({PREFERRED_TOPOLOGY_ANNOTATION}) for a best-effort packing",
                    code="topology-too-large",
                )
            )
    return issues


def job_pod_sets(manifest: Mapping[str, Any], runtimes: Mapping[RuntimeKey, Mapping[str, Any]] | None = None) -> list[tuple[str, int, int, dict[str, str]]]:
    """``(pod set, pods, GPUs per pod, annotations)`` of a job manifest, one per Kueue pod set
    (:func:`hybridgpu.workloads.pod_sets`: batch Job, JobSet, PyTorchJob, TrainJob with ``runtimes``, RayJob,
    RayCluster, RayService; ``[]`` for another kind). Pods: the most the set holds at once (a Ray worker group
    that autoscales: ``maxReplicas`` x ``numOfHosts``; unbounded counts its admitted ``replicas``: the policy
    pack reports the missing bound). GPUs per pod: :meth:`hybridgpu.workloads.PodSet.gpus` (the containers'
    ``nvidia.com/gpu`` limits, any Kubernetes quantity of whole devices: ``8``, ``8.0``, ``"8"``, ``"8e0"``; one
    that is not counts 0 here, the policy pack's ``gpu-workload-requests`` reports it, once, with the fix).

    Raises:
        PodSetError: a count has the wrong type (names the key path).
    """
    return [
        (ps.name, ps.count if ps.most is None else ps.most, ps.gpus(), {str(k): str(v) for k, v in ps.annotations.items()})
        for ps in pod_sets(manifest, runtimes) or []
    ]


def _paths(manifest: Mapping[str, Any], runtimes: Mapping[RuntimeKey, Mapping[str, Any]] | None) -> dict[str, str]:
    return {ps.name: ps.path for ps in pod_sets(manifest, runtimes) or []}


def job_topology_issues(
    manifest: Mapping[str, Any], inventory: Inventory, file: str, runtimes: Mapping[RuntimeKey, Mapping[str, Any]] | None = None
) -> list[Issue]:
    """Topology annotations of a job that Kueue cannot satisfy on the inventory's Topology (see the module docstring).

    Args:
        manifest: the job (any kind :func:`hybridgpu.workloads.pod_sets` reads; others have no issues).
        inventory: the stack's inventory.
        file: the job file as the user knows it.
        runtimes: the training runtimes a TrainJob may reference (:func:`hybridgpu.workloads.runtimes_of`).

    Returns:
        Issues keyed by the pod set's template path (``spec.template.metadata.annotations[...]``) or ``spec``.
    """
    levels = (*onprem_topology_levels(inventory.hosts), HOSTNAME_LABEL)
    issues = []
    paths = _paths(manifest, runtimes)
    for name, pods, gpus, annotations in job_pod_sets(manifest, runtimes):
        where = f"{paths[name]}.metadata.annotations"
        for annotation in (REQUIRED_TOPOLOGY_ANNOTATION, PREFERRED_TOPOLOGY_ANNOTATION):
            level = annotations.get(annotation)
            if level is None:
                continue
            if level not in levels:
                issues.append(
                    Issue(
                        file, f"{where}[{annotation}]",
                        f"pod set {name}: {level!r} is not a level of the on-prem Topology ({', '.join(levels)}): Kueue skips every flavor whose Topology "
                        "lacks the requested level and never admits the job",
                        f"use one of {', '.join(levels)} (the node labels hybridgpu sets from the inventory's block and rack)",
                        code="topology-level-mismatch",
                    )
                )
            elif annotation == REQUIRED_TOPOLOGY_ANNOTATION:
                domain, biggest = _largest(topology_domains(inventory.hosts, level))
                if pods * gpus > biggest:
                    issues.append(
                        Issue(
                            file, f"{where}[{annotation}]",
                            f"pod set {name} needs {pods} x {gpus} = {pods * gpus} GPUs in one domain of {level}, but the largest has "
                            f"{biggest} ({domain}) among the inventory's active GPU workers: Kueue never admits the job",
                            f"use {PREFERRED_TOPOLOGY_ANNOTATION} (best-effort packing), a broader level, or fewer GPUs",
                            code="topology-too-large",
                        )
                    )
    total = sum(pods * gpus for _, pods, gpus, _ in job_pod_sets(manifest, runtimes))
    per_model: dict[str, int] = {}
    for host in inventory.hosts:
        if host.role == "gpu-worker" and host.state == "active" and host.gpu is not None:
            per_model[host.gpu.model] = per_model.get(host.gpu.model, 0) + host.gpu.count
    model, most = _largest(per_model)
    if total > most:
        issues.append(
            Issue(
                file, "spec",
                f"the job asks for {total} GPUs at once but the largest on-prem flavor, {model}, has {most} in active GPU workers "
                "(the ClusterQueue's quota): Kueue never admits it (ExceedsMaxQuota) until more hosts are active",
                "run fewer pods, or bring hosts back (`state: active` in the inventory)",
                code="quota-too-small",
            )
        )
    return issues
