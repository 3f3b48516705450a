"""Check job manifests against a stack before they are submitted (``hybridgpu job check``; pure, no Pulumi).

A job file (one or more YAML documents: the Job, its Service, NetworkPolicy ...) is checked with

* the policy pack's resource policies for Kubernetes objects, at their default settings (cost labels,
  GPU requests, ``efa-workload-requests``, MIG profiles ...), as ``pulumi preview`` would if the job were
  part of a stack (:data:`hybridgpu.policy.registry.POLICIES`);
* the job framework (``framework-not-managed``): a kind whose Kueue integration (``hybridgpu.burst.frameworks``)
  the stack's burst plan does not enable in ``kueue.frameworks`` has no controller on the stack (the toolkit
  installs a framework's chart only where the plan enables it), and Kueue would not admit it; a built-in kind
  (batch Job, Pod) naming a queue while its integration is off runs outside every quota;
* a TrainJob's runtime (``trainjob-runtime-unknown``): Kueue builds a TrainJob's pod sets from the JobSet its
  runtime makes (:mod:`hybridgpu.workloads`); the check reads the runtime from the same job file and cannot
  count the pods without it, so it refuses the file and asks for the runtime there;
* the queue (``unknown-queue``): the ``kueue.x-k8s.io/queue-name`` label names a LocalQueue of the stack's
  cluster, in the job's namespace; and the resources (``resource-undeclared``): every resource a pod set asks
  for, but CPU, memory, ephemeral storage and hugepages, is covered by that queue's ClusterQueue: Kueue's
  ``quotaCheckStrategy: BlockUndeclared`` never admits a workload asking for another ("resource ... unavailable
  in ClusterQueue", kubernetes-sigs/kueue v0.19.2 ``pkg/scheduler/flavorassigner/flavorassigner.go``);
* what Kueue's Ray webhooks refuse in a job it manages (``ray-autoscaling``, ``ray-worker-groups``; :func:`_ray_issues`);
* on a stack whose EKS cluster is the burst plan's cloud worker: the EFA queue and Topology rules
  (:func:`hybridgpu.stack.eks_topology.eks_job_issues`);
* on a stack with an on-prem inventory: the on-prem Topology rules
  (:func:`hybridgpu.stack.topology.job_topology_issues`).

The queue, resource and Topology rules read the job's Kueue pod sets (:func:`hybridgpu.workloads.pod_sets`): a
TrainJob is checked as the JobSet its runtime makes (:func:`hybridgpu.workloads.trainjob_jobset`). Each problem
is an :class:`~hybridgpu.errors.Issue` naming the job file, the object and key, and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.burst.eks_tas import efa_queues
from hybridgpu.burst.frameworks import FRAMEWORKS, framework_for_kind, unknown_framework_message
from hybridgpu.burst.kueue import EXCLUDED_RESOURCE_PREFIXES
from hybridgpu.burst.plan import ClusterQueuePlan
from hybridgpu.catalog import load_catalog
from hybridgpu.datafile import describe_yaml_error, load_unique_yaml_all, unreadable_issue
from hybridgpu.errors import Issue
from hybridgpu.k8s import KUEUE_GROUP, KUEUE_QUEUE_NAME_LABEL
from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.registry import POLICIES
from hybridgpu.policy.workloads import pod_templates
from hybridgpu.schemas import CORE_GROUPS, validate_core
from hybridgpu.stack.eks_topology import eks_job_issues
from hybridgpu.stack.load import Stack
from hybridgpu.stack.topology import job_topology_issues
from hybridgpu.workloads import KIND_PATHS, PodSetError, RuntimeKey, is_training_runtime, is_trainjob, pod_sets, ray_cluster_spec, runtime_key, runtimes_of, trainjob_jobset

__all__ = ["job_file_issues", "object_issues"]


def _type_token(doc: Mapping[str, Any]) -> str:
    api = str(doc.get("apiVersion") or "")
    return f"kubernetes:{api if '/' in api else 'core/' + api}:{doc.get('kind')}"


def _split_fix(message: str) -> tuple[str, str]:
    head, sep, fix = message.partition(" Fix: ")
    return (head, fix) if sep else (message, "see docs/policies.md for the policy")


def object_issues(doc: Mapping[str, Any], stack: Stack, file: str, runtimes: Mapping[RuntimeKey, Mapping[str, Any]] | None = None) -> list[Issue]:
    """The problems of one Kubernetes object of a job file on ``stack`` (see the module docstring).

    ``runtimes``: the TrainingRuntimes and ClusterTrainingRuntimes of the job file (:func:`hybridgpu.workloads.runtimes_of`).

    A built-in kind (``batch/v1`` Job, ``v1`` Service ...) is first validated against the Kubernetes
    schema (strict, :func:`hybridgpu.schemas.validate_core`): a malformed object gets that error only.
    A custom kind (JobSet, PyTorchJob) has no offline schema: a value of the wrong type where the
    rules read it (a list for ``metadata``, a string for ``containers``) is reported as a schema issue.
    """
    raw_meta = doc.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    label = f"{doc.get('kind')}/{meta.get('name')}"
    api = doc.get("apiVersion")
    group = api.split("/")[0] if isinstance(api, str) and "/" in api else ""
    if group in CORE_GROUPS:
        finding = validate_core([dict(doc)])[0]
        if not finding.ok:
            return [Issue(file, label, f"not a valid {doc.get('kind')}: {'; '.join(finding.errors)}", "fix the field named (Kubernetes 1.35 schema)", code="schema")]
    try:
        return _checked(doc, meta, label, stack, file, runtimes or {})
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
        return [Issue(file, label, f"a field has the wrong type for a {doc.get('kind')} ({type(exc).__name__}: {exc})", "compare the object with its kind's API reference", code="schema")]


def _framework_issues(doc: Mapping[str, Any], meta: Mapping[str, Any], label: str, stack: Stack, file: str) -> list[Issue]:
    """``framework-not-managed`` when the stack's Kueue does not manage the object's kind (see the module docstring)."""
    api, kind = str(doc.get("apiVersion") or ""), str(doc.get("kind") or "")
    group = api.rpartition("/")[0]
    framework = framework_for_kind(api, kind)
    plan = stack.burst_plan
    enabled = list(plan.source.kueue.frameworks) if plan is not None else []
    where = "the burst plan" if stack.config.burst is None else f"the burst plan {stack.config.burst.plan}"
    queue = (meta.get("labels") or {}).get(KUEUE_QUEUE_NAME_LABEL) if isinstance(meta.get("labels"), Mapping) else None
    if framework is None:
        if (group, kind) not in KIND_PATHS:
            return []
        name = f"{group}/{kind.lower()}"
        return [
            Issue(
                file, label,
                f"{api} {kind} is not a job kind the toolkit installs a controller for ({unknown_framework_message(name)}): the API "
                f"server of stack {stack.config.stack} has no such kind and Kueue manages no such integration",
                f"write the job as one of the kinds the stack's Kueue may manage ({', '.join(k.kind for f in FRAMEWORKS.values() for k in f.kinds)})",
                code="framework-not-managed",
            )
        ]
    if framework.name in enabled or (framework.chart is None and queue is None):
        return []
    if plan is None and framework.chart is None:
        why = f"stack {stack.config.stack} takes part in no burst plan, so it runs no Kueue: the queue label is ignored and the job runs outside every quota"
        fix = f"drop the {KUEUE_QUEUE_NAME_LABEL} label, or check the job against a stack of a burst plan"
    elif plan is None:
        why = f"stack {stack.config.stack} takes part in no burst plan, so it runs no Kueue and no {kind} controller"
        fix = "check the job against a stack of a burst plan, whose `kueue.frameworks` lists " + framework.name
    elif framework.chart is None:
        why = f"Kueue on stack {stack.config.stack} does not manage {framework.name} (not in `kueue.frameworks`: {', '.join(enabled) or 'none'}), so it ignores the queue label and the job runs outside every quota"
        fix = f"add {framework.name} to `kueue.frameworks` of {where}, or drop the {KUEUE_QUEUE_NAME_LABEL} label"
    else:
        why = (
            f"the burst plan does not enable {framework.name} (`kueue.frameworks`: {', '.join(enabled) or 'none'}), so stack "
            f"{stack.config.stack} installs no {kind} controller and Kueue does not manage {kind}s"
        )
        fix = f"add {framework.name} to `kueue.frameworks` of {where} (the toolkit then installs its chart on every cluster of the plan)"
    return [Issue(file, label, why, fix, code="framework-not-managed")]


def _queues(stack: Stack) -> dict[tuple[str, str], ClusterQueuePlan]:
    """``(namespace, LocalQueue) -> ClusterQueue`` of the stack's cluster: the burst plan's and the EFA pools' queues."""
    config, plan = stack.config, stack.burst_plan
    if plan is None or config.stack not in plan.clusters:
        return {}
    cluster = plan.clusters[config.stack]
    by_name = {cq.name: cq for cq in cluster.cluster_queues}
    found = {(lq.namespace, lq.name): by_name[lq.cluster_queue] for lq in cluster.local_queues if lq.cluster_queue in by_name}
    if config.cloud is not None and cluster.role == "cloud-worker":
        for q in efa_queues(config.cloud, load_catalog(), cluster.namespaces, plan.source.kueue.prefix):
            found.update({(lq.namespace, lq.name): q.cluster_queue for lq in q.local_queues})
    return found


def _queue_issues(doc: Mapping[str, Any], meta: Mapping[str, Any], label: str, stack: Stack, file: str) -> list[Issue]:
    """``unknown-queue`` and ``resource-undeclared`` (see the module docstring); nothing for a job without a queue label."""
    labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
    queue = labels.get(KUEUE_QUEUE_NAME_LABEL) if labels else None
    sets = pod_sets(doc)
    if queue is None or sets is None or stack.burst_plan is None:
        return []
    namespace = str(meta.get("namespace") or "default")
    queues = _queues(stack)
    cq = queues.get((namespace, str(queue)))
    key = f"metadata.labels[{KUEUE_QUEUE_NAME_LABEL}]"
    if cq is None:
        here = sorted(f"{n}/{q}" for n, q in queues if n == namespace) or ["none"]
        return [
            Issue(
                file, f"{label} {key}",
                f"no LocalQueue {queue!r} in namespace {namespace} on stack {stack.config.stack} (LocalQueues of {namespace}: "
                f"{', '.join(here)}): Kueue keeps the job suspended and never admits it",
                f"name a LocalQueue of {namespace} (`{KUEUE_QUEUE_NAME_LABEL}`), or add the queue to the burst plan's `queues`",
                code="unknown-queue",
            )
        ]
    covered = {r for group in cq.groups for r in group.covered}
    issues = []
    for ps in sets:
        asked: set[str] = set()
        for key_ in ("initContainers", "containers"):
            for c in ps.spec.get(key_) or []:
                resources = c.get("resources") if isinstance(c, Mapping) else None
                for section in ("requests", "limits"):
                    asked.update(str(r) for r in ((resources or {}).get(section) or {}))
        missing = sorted(r for r in asked if r not in covered and not r.startswith(EXCLUDED_RESOURCE_PREFIXES))
        if missing:
            issues.append(
                Issue(
                    file, f"{label} {ps.path}.spec.containers",
                    f"pod set {ps.name} asks for {', '.join(missing)}, which ClusterQueue {cq.name!r} (LocalQueue {namespace}/{queue}) "
                    f"does not cover ({', '.join(sorted(covered))}): under Kueue's quotaCheckStrategy BlockUndeclared the job is never "
                    "admitted (\"resource ... unavailable in ClusterQueue\")",
                    f"drop {', '.join(missing)} from the pods, or submit to a queue whose ClusterQueue covers it",
                    code="resource-undeclared",
                )
            )
    return issues


#: Kueue's elastic-job marker: the annotation on the job and the scheduling gate on its pod templates
#: (kubernetes-sigs/kueue v0.19.2 ``pkg/constants/constants.go`` ``ElasticJobAnnotation``,
#: ``apis/kueue/v1beta2/constants.go`` ``ElasticJobSchedulingGate``).
ELASTIC_JOB = f"{KUEUE_GROUP}/elastic-job"
#: Most pod sets of a Workload (``pkg/controller/jobframework/constants.go`` ``MaxPodSets``): a Ray head and 17 worker groups.
MAX_POD_SETS = 18


def _ray_issues(doc: Mapping[str, Any], meta: Mapping[str, Any], label: str, stack: Stack, file: str) -> list[Issue]:
    """What Kueue v0.19.2's RayCluster, RayJob and RayService webhooks refuse in a job it manages (one with a queue
    label): ``pkg/controller/jobs/raycluster/raycluster_webhook.go`` ``validateCreate``, ``common.go`` ``ValidateCreate``.

    * ``ray-autoscaling``: ``enableInTreeAutoscaling`` on a job that is not elastic (annotation ``kueue.x-k8s.io/elastic-job:
      "true"``; the ``ElasticJobsViaWorkloadSlices`` gate is on by default in 0.19), on an elastic RayCluster a pod template
      without the ``kueue.x-k8s.io/elastic-job`` scheduling gate, or autoscaling on a MultiKueue manager (refused there);
    * ``ray-worker-groups``: a worker group named ``head`` (Kueue's head pod set), or more than 17 worker groups.
    """
    found = ray_cluster_spec(doc)
    labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
    if found is None or not labels or labels.get(KUEUE_QUEUE_NAME_LABEL) is None:
        return []
    spec, prefix = found
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), Mapping) else {}
    elastic = (annotations or {}).get(ELASTIC_JOB) == "true"
    groups = [g for g in spec.get("workerGroupSpecs") or [] if isinstance(g, Mapping)]
    issues = []
    if spec.get("enableInTreeAutoscaling") is True:
        plan = stack.burst_plan
        role = plan.clusters[stack.config.stack].role if plan is not None and stack.config.stack in plan.clusters else None
        if not elastic:
            issues.append(
                Issue(
                    file, f"{label} {prefix}.enableInTreeAutoscaling",
                    "Kueue's webhook refuses in-tree autoscaling on a job it manages unless the job is elastic: the Ray autoscaler "
                    "would grow the workers beyond the quota Kueue admitted",
                    f"set fixed worker groups (replicas = minReplicas = maxReplicas) and drop enableInTreeAutoscaling, or make the job "
                    f"elastic: annotation `{ELASTIC_JOB}: \"true\"` and the scheduling gate {ELASTIC_JOB} on every pod template",
                    code="ray-autoscaling",
                )
            )
        elif role in ("manager", "onprem-manager"):
            issues.append(
                Issue(
                    file, f"{label} {prefix}.enableInTreeAutoscaling",
                    f"stack {stack.config.stack} is the MultiKueue manager: Kueue v0.19.2 does not support Ray autoscaling under MultiKueue",
                    "drop enableInTreeAutoscaling (fixed worker groups), or submit on a cluster that runs the job itself",
                    code="ray-autoscaling",
                )
            )
        elif doc.get("kind") == "RayCluster":
            templates = [(f"{prefix}.headGroupSpec.template", (spec.get("headGroupSpec") or {}).get("template"))]
            templates += [(f"{prefix}.workerGroupSpecs[{i}].template", g.get("template")) for i, g in enumerate(groups)]
            for where, template in templates:
                gates = ((template or {}).get("spec") or {}).get("schedulingGates") or []
                if not any(isinstance(g, Mapping) and g.get("name") == ELASTIC_JOB for g in gates):
                    issues.append(
                        Issue(
                            file, f"{label} {where}.spec.schedulingGates",
                            f"an elastic RayCluster needs the scheduling gate {ELASTIC_JOB} on every pod template: Kueue's webhook refuses it",
                            f"add `schedulingGates: [{{name: {ELASTIC_JOB}}}]` to the pod template",
                            code="ray-autoscaling",
                        )
                    )
    for i, group in enumerate(groups):
        if group.get("groupName") == "head":
            issues.append(
                Issue(
                    file, f"{label} {prefix}.workerGroupSpecs[{i}].groupName",
                    "a worker group named head collides with Kueue's head pod set: Kueue's webhook refuses it",
                    "rename the worker group", code="ray-worker-groups",
                )
            )
    if len(groups) + 1 > MAX_POD_SETS:
        issues.append(
            Issue(
                file, f"{label} {prefix}.workerGroupSpecs",
                f"{len(groups)} worker groups and the head make {len(groups) + 1} pod sets, more than a Kueue Workload holds ({MAX_POD_SETS})",
                f"use at most {MAX_POD_SETS - 1} worker groups", code="ray-worker-groups",
            )
        )
    return issues


def _checked(doc: Mapping[str, Any], meta: Mapping[str, Any], label: str, stack: Stack, file: str, runtimes: Mapping[RuntimeKey, Mapping[str, Any]]) -> list[Issue]:
    issues = _framework_issues(doc, meta, label, stack, file) + _ray_issues(doc, meta, label, stack, file)
    if is_trainjob(doc):
        child = trainjob_jobset(doc, runtimes)
        if child is None:
            kind, namespace, name = runtime_key(doc)
            issues.append(
                Issue(
                    file, f"{label} spec.runtimeRef",
                    f"the TrainJob's runtime {kind} {(namespace + '/') if namespace else ''}{name} is not in the job file: Kueue admits the "
                    "pod sets of the JobSet the runtime makes (its replicatedJobs, their parallelism, the trainer's numNodes), "
                    "so without it the check cannot count the pods, GPUs or topology requests Kueue will see",
                    f"add the {kind} {name!r} to the job file as a further YAML document (`kubectl apply` leaves an identical one as it is)",
                    code="trainjob-runtime-unknown",
                )
            )
            return issues
        doc = child  # Kueue's view of a TrainJob, and its pods': the JobSet its runtime makes
        label = f"{label} (as the JobSet its runtime makes)"
    res = PolicyResource(_type_token(doc), str(meta.get("name")), f"urn:pulumi:{stack.config.stack}::job::{_type_token(doc)}::{meta.get('name')}", dict(doc))
    for spec in POLICIES:
        if spec.kind != "resource" or not spec.applies(res.type):
            continue
        for message in spec.run_resource(res, spec.parse_settings(None)):
            text, fix = _split_fix(message)
            issues.append(Issue(file, label, f"policy {spec.name}: {text}", fix, code=spec.name))
    try:
        pod_sets(doc)
    except PodSetError as exc:
        return [*issues, Issue(file, f"{label} {exc.key}", f"a value the pod sets are counted from is wrong: {exc.problem}", "compare the object with its kind's API reference", code="schema")]
    if not pod_templates(doc) or is_training_runtime(doc):
        return issues  # a runtime is a template: its pods are checked in the TrainJob that uses it
    issues += _queue_issues(doc, meta, label, stack, file)
    config, plan = stack.config, stack.burst_plan
    if config.cloud is not None and plan is not None and config.stack in plan.clusters and plan.clusters[config.stack].role == "cloud-worker":
        worker = plan.clusters[config.stack]
        found = eks_job_issues(doc, config.cloud, load_catalog(), namespaces=worker.namespaces, prefix=plan.source.kueue.prefix, file=file)
        issues += [Issue(file, f"{label} {i.key}", i.message, i.fix, code=i.code) for i in found]
    if stack.inventory is not None:
        found = job_topology_issues(doc, stack.inventory, file)
        issues += [Issue(file, f"{label} {i.key}", i.message, i.fix, code=i.code) for i in found]
    return issues


def job_file_issues(path: Path, stack: Stack, shown: str | None = None) -> list[Issue]:
    """Every problem of the objects in the job file ``path`` on ``stack``; empty when it may be submitted.

    Args:
        path: the YAML file (one or more documents).
        stack: the validated stack (:func:`hybridgpu.stack.load.load_stack`).
        shown: the file as named in issues (default: ``path`` as given).
    """
    file = shown or str(path)
    text: str | None = None
    try:
        text = path.read_text(encoding="utf-8")
        docs = load_unique_yaml_all(text)
    except (OSError, UnicodeDecodeError) as exc:
        return [unreadable_issue(file, exc, "the job file")]
    except yaml.YAMLError as exc:
        return [Issue(file, None, f"not valid YAML: {describe_yaml_error(exc, text)}", "fix the YAML syntax (duplicate keys are refused too)", code="yaml")]
    issues: list[Issue] = []
    runtimes = runtimes_of(docs)
    for i, doc in enumerate(docs):
        if not isinstance(doc, Mapping) or not doc.get("kind") or not doc.get("apiVersion"):
            issues.append(Issue(file, f"document {i + 1}", "not a Kubernetes object (needs apiVersion and kind)", "give each YAML document apiVersion, kind and metadata", code="schema"))
            continue
        issues += object_issues(doc, stack, file, runtimes)
    return issues
