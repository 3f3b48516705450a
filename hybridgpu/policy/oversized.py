"""Policies of the ``oversized`` group: GPU capacity and spend beyond the configured bounds (pure validators and their settings).

* NodePools: :func:`nodepool_gpu_limit`, :func:`nodepool_instance_bounds`;
* everything that launches or reserves GPU instances: :func:`gpu_instance_size`;
* workloads: :func:`gpu_workload_requests`, :func:`gpu_autoscaling` (HPA and KEDA),
  :func:`mig_profiles`, :func:`helm_values_capacity` (Helm values the pack cannot see into);
* the whole stack: :func:`stack_gpu_ceiling`, :func:`burst_budget`.

Each validator takes a :class:`~hybridgpu.policy.base.PolicyResource` (or the stack's resources)
and its settings, and yields messages that name the resource and say how to fix it;
:data:`hybridgpu.policy.registry.POLICIES` lists them with their names and enforcement.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml
from pydantic import Field

from hybridgpu.catalog import load_catalog
from hybridgpu.datafile import load_yaml
from hybridgpu.economics.prices import load_economics_data
from hybridgpu.errors import HybridGpuError
from hybridgpu.k8s import (
    CAPACITY_TYPE_LABEL,
    GPU_RESOURCE,
    INSTANCE_FAMILY_LABEL,
    INSTANCE_GPU_COUNT_LABEL,
    INSTANCE_TYPE_LABEL,
    MIG_RESOURCE_PREFIX,
    QuantityError,
    device_count,
)
from hybridgpu.mig.profiles import load_mig_models
from hybridgpu.policy import capacity as cap_mod
from hybridgpu.policy.base import (
    CONFIGMAP,
    KUBERNETES_BUNDLES,
    NODEPOOL_TYPES,
    UNKNOWN_ERRORS,
    Findings,
    PerStackFloat,
    PerStackInt,
    PerStackOptList,
    PolicyResource,
    PolicySettings,
    StackFindings,
    Unknown,
    as_list,
    dig,
    fix_for,
    for_stack,
    known,
    names,
    parse_quantity,
)
from hybridgpu.policy.capacity import instance_type as _instance
from hybridgpu.policy.capacity import is_gpu_type as _is_gpu_type
from hybridgpu.policy.workloads import is_gpu_resource, pod_templates


def _gpu_families() -> list[str]:
    return sorted(load_catalog().families())



class CapacitySettings(PolicySettings):
    """Settings of the GPU capacity policies (NodePools, node groups, instances)."""

    max_gpus_per_node_pool: PerStackInt = Field(
        default=64,
        description="Most GPUs one NodePool (its nvidia.com/gpu limit) or one node group (maxSize x GPUs per "
        "instance) may add; a number or per stack. Default: 64.",
    )
    max_gpus_per_instance: PerStackInt = Field(
        default=8, description="Most GPUs one instance type may have (8 = p5.48xlarge); number or per stack. Default: 8."
    )
    allowed_instance_families: PerStackOptList = Field(
        default=None,
        description="GPU instance families a stack may use, e.g. {\"default\": [\"g6\", \"p5\"], \"dev\": [\"g5\", \"g6\"]}. "
        "Default: every family in the hybridgpu catalog.",
    )

    def families(self, stack: str) -> list[str]:
        """Allowed families for ``stack``."""
        allowed = for_stack(self.allowed_instance_families, stack)
        return list(allowed) if allowed is not None else _gpu_families()


def _gpu_limit(res: PolicyResource) -> float | None:
    static = cap_mod.static_nodepool_gpus(res.props)  # a static pool (spec.replicas) has no GPU limit
    if static is not None:
        return static
    limits = dig(res.props, "spec", "limits")
    if not isinstance(limits, Mapping) or GPU_RESOURCE not in limits:
        return None
    return parse_quantity(limits[GPU_RESOURCE])


def nodepool_gpu_limit(res: PolicyResource, cfg: CapacitySettings) -> Findings:
    """Each NodePool sets an ``nvidia.com/gpu`` limit, within ``maxGpusPerNodePool``.

    CPU-only NodePools need one too (``"0"``): without it Karpenter may pick a GPU type for them,
    unless their requirements already rule out every GPU type (:func:`_may_pick_gpus`, e.g.
    ``karpenter.k8s.aws/instance-category In [c, m, r]``).
    """
    if res.type not in NODEPOOL_TYPES or not _may_pick_gpus(res):
        return
    most = for_stack(cfg.max_gpus_per_node_pool, res.stack)
    limits = dig(res.props, "spec", "limits")
    if (not isinstance(limits, Mapping) or GPU_RESOURCE not in limits) and cap_mod.static_nodepool_gpus(res.props) is None:
        yield (
            f"{res.label} sets no spec.limits[\"{GPU_RESOURCE}\"], so it can launch GPUs without bound. "
            + fix_for(
                res,
                f"Fix: set gpuLimit on the pool (at most {most}); a CPU-only pool sets \"0\".",
                f"Fix: set spec.limits[\"{GPU_RESOURCE}\"] on the NodePool (at most {most}); a CPU-only pool sets \"0\" "
                "or restricts karpenter.k8s.aws/instance-category to CPU categories.",
            )
        )
        return
    value = _gpu_limit(res)
    if value is None:
        yield f"{res.label} has a malformed {GPU_RESOURCE} limit {limits[GPU_RESOURCE]!r}. Fix: use a whole number such as \"32\"."
    elif value > most:
        limit_name = fix_for(res, "gpuLimit", f"spec.limits[\"{GPU_RESOURCE}\"]")
        yield (
            f"{res.label} may launch {value:g} GPUs, above the allowed {most} per NodePool. Fix: lower {limit_name}, "
            "split the pool across stacks, or raise maxGpusPerNodePool in the policy config with a reason."
        )


def _requirement(res: PolicyResource, key: str) -> Mapping[str, Any] | None:
    for req in as_list(dig(res.props, "spec", "template", "spec", "requirements")):
        if isinstance(req, Mapping) and req.get("key") == key:
            return req
    return None


def _in_values(req: Mapping[str, Any] | None) -> list[str] | None:
    if req is None or req.get("operator") != "In":
        return None
    return [str(v) for v in as_list(req.get("values"))]


#: Karpenter's well-known label for the instance category, the letters of the family before its
#: generation (``g`` for g6, ``gr`` for gr6, ``t`` for t3): karpenter-provider-aws
#: ``pkg/apis/v1/labels.go`` (``LabelInstanceCategory``) and its generated instance-types reference
#: (``website/content/en/*/reference/instance-types.md``, e.g. a1.medium: instance-category ``a``).
INSTANCE_CATEGORY_LABEL = "karpenter.k8s.aws/instance-category"
#: Accelerator categories whose families the catalog may not (yet) know (:data:`hybridgpu.catalog.ACCELERATOR_FAMILY`).
_ACCELERATOR_CATEGORIES = ("gr", "g", "p", "dl", "trn", "inf")


def _category(family: str) -> str:
    """The Karpenter instance category of a family: its leading letters (``g6e`` -> ``g``)."""
    return re.match(r"[a-z]*", family.lower()).group(0)  # type: ignore[union-attr]


def _satisfies(req: Mapping[str, Any], value: Any) -> bool:
    """Whether a label value meets one NodePool requirement (Kubernetes node-selector operators;
    ``value`` None: the label is absent). Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt."""
    op = req.get("operator")
    values = [str(v) for v in as_list(req.get("values"))]
    if op == "In":
        return value is not None and str(value) in values
    if op == "NotIn":
        return value is None or str(value) not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and values:
        try:
            bound, got = float(values[0]), float(value)
        except (TypeError, ValueError):
            return False
        return got > bound if op == "Gt" else got < bound
    return True  # an operator Karpenter would refuse: not ours to judge here


def _may_pick_gpus(res: PolicyResource) -> bool:
    """True unless the pool's requirements rule out every GPU type.

    Each catalog GPU type is matched against the requirements on instance type, family, category
    and GPU count; so is an accelerator family the catalog does not know, of every accelerator
    category (it matches an ``In`` on type or family only when one of the values is of its category,
    and a GPU-count bound of 0). A pool limited to ``instance-category In [c, m, r, t]`` is not a
    GPU pool.
    """
    reqs = [r for r in as_list(dig(res.props, "spec", "template", "spec", "requirements")) if isinstance(r, Mapping)]
    keys = (INSTANCE_TYPE_LABEL, INSTANCE_FAMILY_LABEL, INSTANCE_CATEGORY_LABEL, INSTANCE_GPU_COUNT_LABEL)
    reqs = [r for r in reqs if r.get("key") in keys]
    if not reqs:
        return True
    for labels in _catalog_labels():
        if all(_satisfies(r, labels[r["key"]]) for r in reqs):
            return True
    for category in _ACCELERATOR_CATEGORIES:
        if all(_uncatalogued_may_match(r, category) for r in reqs):
            return True
    return False


@functools.lru_cache(maxsize=1)
def _catalog_labels() -> tuple[dict[str, Any], ...]:
    """The Karpenter labels of every catalog GPU type that NodePool requirements select on."""
    return tuple(
        {INSTANCE_TYPE_LABEL: it.name, INSTANCE_FAMILY_LABEL: it.family,
         INSTANCE_CATEGORY_LABEL: _category(it.family), INSTANCE_GPU_COUNT_LABEL: it.gpu_count}
        for it in load_catalog().gpu_instance_types()
    )


def _uncatalogued_may_match(req: Mapping[str, Any], category: str) -> bool:
    key, op = req.get("key"), req.get("operator")
    values = [str(v) for v in as_list(req.get("values"))]
    if key == INSTANCE_CATEGORY_LABEL:
        return _satisfies(req, category)
    if key == INSTANCE_GPU_COUNT_LABEL:  # at least one GPU, how many unknown
        if op == "DoesNotExist" or (op == "Lt" and values and (parse_quantity(values[0]) or 0) <= 1):
            return False
        return not (op == "In" and all((parse_quantity(v) or 0) <= 0 for v in values))
    if op == "In":  # instance type or family: one of the values must be of this accelerator category
        return any(_cat_of(v) == category and _is_gpu_type(v.split(".", 1)[0] + ".x") for v in values)
    return True


def _cat_of(name: str) -> str:
    return _category(name.split(".", 1)[0])


def nodepool_instance_bounds(res: PolicyResource, cfg: CapacitySettings) -> Findings:
    """A NodePool bounds the GPU instances it may pick: an ``In`` list of instance types (or of
    families plus a GPU-count bound), all in allowed families and within ``maxGpusPerInstance``.

    A pool whose GPU limit is 0, or whose requirements rule out every GPU type (e.g.
    ``karpenter.k8s.aws/instance-category In [t]``; :func:`_may_pick_gpus`), is not a GPU pool and passes.
    """
    if res.type not in NODEPOOL_TYPES:
        return
    limit = _gpu_limit(res)
    if limit is not None and limit == 0:
        return  # a CPU-only pool: its zero GPU limit already keeps GPU types out
    if not _may_pick_gpus(res):
        return  # its requirements (category, family, type, GPU count) rule out every GPU type
    stack = res.stack
    allowed = cfg.families(stack)
    most = for_stack(cfg.max_gpus_per_instance, stack)
    types = _in_values(_requirement(res, INSTANCE_TYPE_LABEL))
    families = _in_values(_requirement(res, INSTANCE_FAMILY_LABEL))
    if types is not None:
        bad_family = sorted({t for t in types if t.split(".", 1)[0] not in allowed})
        if bad_family:
            yield (
                f"{res.label} may pick {names(bad_family)}, outside the families allowed in stack {stack or '?'} "
                f"({names(allowed)}). Fix: drop them from the pool's instance types, or allow the family in the "
                "policy config (allowedInstanceFamilies)."
            )
        too_big = sorted(t for t in types if (it := _instance(t)) is not None and it.gpu_count > most)
        if too_big:
            yield (
                f"{res.label} may pick {names(too_big)} with more than {most} GPUs per instance. Fix: choose "
                "smaller sizes or raise maxGpusPerInstance in the policy config."
            )
        unknown = sorted(t for t in types if _instance(t) is None and _is_gpu_type(t))
        if unknown:
            yield (
                f"{res.label} may pick {names(unknown)}, which the hybridgpu catalog does not know, so their GPU "
                "count cannot be checked. Fix: use catalog types (`hybridgpu catalog`) or "
                + fix_for(
                    res,
                    "add them to the catalog.",
                    "waive the pool in the policy config (nodepool-instance-bounds: exemptResources, with their GPU "
                    "counts as the reason) and open an issue or pull request to add them to the hybridgpu catalog.",
                )
            )
        return
    if families is None:
        yield (
            f"{res.label} does not bound its instance types (no `In` requirement on {INSTANCE_TYPE_LABEL} "
            f"or {INSTANCE_FAMILY_LABEL}): Karpenter may pick any GPU size. "
            + fix_for(
                res,
                "Fix: list instanceTypes, or gpuNames/families with a GPU-count bound.",
                f"Fix: add a requirement {INSTANCE_TYPE_LABEL} In [types], or {INSTANCE_FAMILY_LABEL} In [families] with "
                f"{INSTANCE_GPU_COUNT_LABEL} Lt {most + 1}; a CPU pool restricts {INSTANCE_CATEGORY_LABEL} to CPU categories.",
            )
        )
        return
    bad = sorted(f for f in families if f not in allowed)
    if bad:
        yield (
            f"{res.label} allows instance families {names(bad)}, outside those allowed in stack {stack or '?'} "
            f"({names(allowed)}). Fix: remove them or allow them in the policy config (allowedInstanceFamilies)."
        )
    count = _requirement(res, INSTANCE_GPU_COUNT_LABEL)
    bounded = False
    if count is not None:
        op = count.get("operator")
        values = [parse_quantity(v) for v in as_list(count.get("values"))]
        if op == "In" and values and all(v is not None and v <= most for v in values):
            bounded = True
        elif op == "Lt" and values and values[0] is not None and values[0] <= most + 1:
            bounded = True
    if not bounded:
        yield (
            f"{res.label} picks by family without bounding GPUs per instance. Fix: add a requirement "
            f"{INSTANCE_GPU_COUNT_LABEL} Lt {most + 1} (or In values <= {most}), or list instance types."
        )


def _type_problems(res: PolicyResource, label: str, types: list[str], stack: str, cfg: CapacitySettings) -> Iterator[str]:
    allowed = cfg.families(stack)
    most = for_stack(cfg.max_gpus_per_instance, stack)
    uncatalogued = sorted({t for t in types if _is_gpu_type(t) and _instance(t) is None})
    for t in sorted(set(types)):
        if not _is_gpu_type(t):
            continue
        family = cap_mod.family_of(t)
        it = _instance(t)
        if family not in allowed and (it is not None or family in _gpu_families()):
            yield (
                f"{label} uses GPU instance type {t}, outside the families allowed in stack {stack or '?'} "
                f"({names(allowed)}). Fix: use an allowed family or allow it in the policy config."
            )
        elif it is not None and it.gpu_count > most:
            yield f"{label} uses {t} with {it.gpu_count} GPUs, above {most} per instance. Fix: use a smaller size."
    if uncatalogued:
        yield cap_mod.unknown_family_message(res, label, uncatalogued)


def gpu_instance_size(resources: Sequence[PolicyResource], cfg: CapacitySettings) -> StackFindings:
    """Every AWS resource that can launch or reserve GPU instances (EC2 instances and spot
    requests, EKS node groups, Auto Scaling groups, Spot Fleets, EC2 Fleets, capacity
    reservations and Capacity Blocks, launch templates and configurations, Batch compute
    environments, SageMaker endpoint configurations, notebooks and HyperPod clusters, EMR
    clusters, instance groups and fleets; :mod:`hybridgpu.policy.capacity`) uses
    allowed families and sizes, and can hold at most ``maxGpusPerNodePool`` GPUs at once.

    Instance types are followed through launch templates of the same stack (by name, or the
    property dependencies of ``AnalyzeStack``). Accelerator-looking types the catalog does not
    know, and capacity whose types or size cannot be known, fail closed.
    """
    for cap in cap_mod.capacities(resources):
        res = cap.resource
        if cfg.exempt(res):
            continue
        stack = res.stack
        for message in _type_problems(res, res.label, cap.direct, stack, cfg):
            yield res, message
        derived_unknown = sorted(t for t in cap.derived if t not in cap.direct and _is_gpu_type(t) and _instance(t) is None)
        if derived_unknown:
            yield res, cap_mod.unknown_family_message(res, f"{res.label} (through {names({cap.derived[t] for t in derived_unknown})})", derived_unknown)
        if cap.problems and (cap.may_be_gpu or not cap.types):
            yield res, (
                f"{res.label} may launch GPU instances that cannot be checked: {'; '.join(cap.problems)}. It fails closed. "
                "Fix: set the instance types and sizes as literals in this stack (or waive the resource with a reason)."
            )
        gpus = cap.gpus()
        most = for_stack(cfg.max_gpus_per_node_pool, stack)
        if gpus > most:
            worst = max(cap.types, key=lambda t: (it.gpu_count if (it := _instance(t)) else 0) * (cap.instances or {}).get(t, 0))
            via = f", instance type from launch template {cap.derived[worst]}" if worst in cap.derived and worst not in cap.direct else ""
            detail = f"{(cap.instances or {}).get(worst, 0):g} x {worst}{via}"
            if cap.groups is not None and len(cap.groups) > 1:
                detail = " + ".join(cap_mod.worst_of(g) for g in cap.groups if cap_mod.worst_of(g))
            size = cap_mod.SIZE_INPUTS.get(res.type, "its maximum size / target capacity / instance count")
            yield res, (
                f"{res.label} may hold {gpus:g} GPUs at once ({detail}), above {most}. "
                f"Fix: lower {size}, or raise maxGpusPerNodePool in the policy config."
            )


class WorkloadSettings(PolicySettings):
    """Settings of ``gpu-workload-requests``."""

    max_gpus_per_pod: PerStackInt = Field(default=8, description="Most GPUs (whole or MIG) one pod may request. Default: 8.")
    max_gpus_per_workload: PerStackInt = Field(
        default=64, description="Most GPUs one workload may hold at once (per pod x replicas/parallelism). Default: 64."
    )


def gpu_workload_requests(res: PolicyResource, cfg: WorkloadSettings) -> Findings:
    """Workloads ask for no more GPUs than allowed, and set GPU requests equal to limits.

    Kubernetes rule for extended resources such as ``nvidia.com/gpu``: they are given in
    ``limits``; requests may be omitted (they default to the limit) or must equal it
    (kubernetes.io, "Schedule GPUs" and "Resource Management for Pods and Containers",
    extended resources, Kubernetes 1.35).
    """
    if not res.type.startswith("kubernetes:") or res.type in KUBERNETES_BUNDLES:
        return
    per_pod = for_stack(cfg.max_gpus_per_pod, res.stack)
    per_workload = for_stack(cfg.max_gpus_per_workload, res.stack)
    total = 0.0
    unknown: list[str] = []
    unbounded: list[str] = []
    for template in pod_templates(res.props):
        for where, name, value in template.malformed():
            try:
                device_count(value, name)
            except QuantityError as exc:  # always: malformed() lists the values device_count refuses
                yield f"{res.label} {where}: {exc.problem}, so its GPUs cannot be counted. Fix: {exc.fix}."
        if template.gpu_limits():
            unknown += [u for u in template.unknown if u not in unknown]
            unbounded += [u for u in template.unbounded if u not in unbounded]
        for path, c in template.containers():
            requests = dig(c, "resources", "requests") or {}
            limits = dig(c, "resources", "limits") or {}
            for name in sorted({*requests, *limits}):
                if not (name == GPU_RESOURCE or str(name).startswith(MIG_RESOURCE_PREFIX)):
                    continue
                req, lim = parse_quantity(requests.get(name)), parse_quantity(limits.get(name))
                if name in limits and lim is None or name in requests and req is None:
                    continue  # malformed: reported above
                if name not in limits or (name in requests and req != lim):
                    yield (
                        f"{res.label} {path} requests {name} {requests.get(name)!r} with limit {limits.get(name)!r}. "
                        "Fix: set resources.limits to the GPUs wanted (requests may be omitted or equal)."
                    )
        asked = sum(template.gpu_limits().values())
        if asked > per_pod:
            yield (
                f"{res.label} asks for {asked:g} GPUs per pod at {template.path or 'the pod'}, above {per_pod}. "
                "Fix: shard the job over more pods, or raise maxGpusPerPod in the policy config."
            )
        total += asked * template.replicas
    if unknown:
        yield (
            f"{res.label}: {names(unknown)} is an unknown value during preview, so the GPUs its pods hold at once "
            "cannot be counted (it fails closed). Fix: give the replica count a literal or config value."
        )
    if unbounded:
        yield (
            f"{res.label}: {names(unbounded)} is not set, so the Ray autoscaler may grow the GPU worker group to KubeRay's "
            "default of 2147483647 replicas (enableInTreeAutoscaling; ray-project/kuberay v1.6.2 raycluster_types.go). "
            "Fix: set maxReplicas on every GPU worker group (the most pods the group may hold)."
        )
    if total > per_workload:
        yield (
            f"{res.label} holds up to {total:g} GPUs at once (per pod x replicas), above {per_workload}. "
            "Fix: lower replicas/parallelism, or raise maxGpusPerWorkload in the policy config."
        )


#: Autoscalers that set a workload's replica count: HPA ``autoscaling/v2`` and ``autoscaling/v1``
#: (``spec.scaleTargetRef``, ``spec.maxReplicas``: Kubernetes API reference,
#: HorizontalPodAutoscalerSpec, 1.35) and KEDA ``keda.sh/v1alpha1`` ScaledObject
#: (``spec.scaleTargetRef {name, kind (default Deployment), apiVersion}``,
#: ``spec.maxReplicaCount`` default 100: keda.sh/docs/2.18/reference/scaledobject-spec).
_HPA_TYPES = ("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "kubernetes:autoscaling/v1:HorizontalPodAutoscaler")
_KEDA_SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
_KEDA_DEFAULT_MAX = 100


def _kind_of(res: PolicyResource) -> str:
    return res.type.rsplit(":", 1)[-1]


def gpu_autoscaling(resources: Sequence[PolicyResource], cfg: WorkloadSettings) -> StackFindings:
    """A HorizontalPodAutoscaler's ``maxReplicas`` (or a KEDA ScaledObject's ``maxReplicaCount``)
    times the GPUs per pod of the workload it scales stays within ``maxGpusPerWorkload``.

    The target is found in the stack by kind, name and namespace (``metadata.namespace``,
    default ``default``). A target outside the stack cannot be counted and is not reported: the
    workload's own policy checks it where it is deployed.
    """
    workloads: dict[tuple[str, str, str], PolicyResource] = {}
    for r in resources:
        if r.type.startswith("kubernetes:") and r.type not in _HPA_TYPES and r.type != _KEDA_SCALED_OBJECT:
            name = known(r.props, "metadata", "name")
            ns = known(r.props, "metadata", "namespace")
            if isinstance(name, str):
                workloads[(_kind_of(r), name, ns if isinstance(ns, str) and ns else "default")] = r
    for res in resources:
        if res.type not in _HPA_TYPES and res.type != _KEDA_SCALED_OBJECT or cfg.exempt(res):
            continue
        keda = res.type == _KEDA_SCALED_OBJECT
        ref = known(res.props, "spec", "scaleTargetRef") or {}
        kind = known(ref, "kind") or ("Deployment" if keda else None)
        name = known(ref, "name")
        ns = known(res.props, "metadata", "namespace")
        target = workloads.get((str(kind), str(name), ns if isinstance(ns, str) and ns else "default"))
        if target is None:
            continue
        templates = [t for t in pod_templates(target.props) if t.gpu_limits()]
        per_pod = max((sum(t.gpu_limits().values()) for t in templates), default=0.0)
        if not per_pod:
            continue
        key = "maxReplicaCount" if keda else "maxReplicas"
        most = known(res.props, "spec", key)
        if most is None and keda:
            most = _KEDA_DEFAULT_MAX
        limit = for_stack(cfg.max_gpus_per_workload, res.stack)
        if isinstance(most, Unknown):
            yield res, (
                f"{res.label}: spec.{key} is an unknown value during preview, so the GPUs of {target.label} cannot be "
                "bounded (it fails closed). Fix: give it a literal or config value."
            )
        elif not isinstance(most, (int, float)) or isinstance(most, bool):
            yield res, f"{res.label} sets no usable spec.{key}. Fix: set spec.{key} to a whole number."
        elif most * per_pod > limit:
            yield res, (
                f"{res.label} may scale {target.label} to {most:g} pods x {per_pod:g} GPUs = {most * per_pod:g} GPUs, "
                f"above {limit} per workload{' (KEDA default maxReplicaCount 100)' if keda and known(res.props, 'spec', key) is None else ''}. "
                f"Fix: lower spec.{key}, or raise maxGpusPerWorkload in the policy config."
            )


class MigSettings(PolicySettings):
    """Settings of ``mig-profiles``."""

    allowed_mig_profiles: PerStackOptList = Field(
        default=None,
        description="MIG profiles that layouts and pods may use, e.g. [\"1g.10gb\", \"3g.40gb\"]; a list or per stack. "
        "Default: any profile in the hybridgpu MIG catalog.",
    )
    allow_whole_gpu_profiles: bool = Field(
        default=False,
        description="Allow profiles that take a whole GPU (7g.* on A100/H100/H200, 4g.24gb on A30): MIG is for "
        "sharing, a whole GPU is cheaper to hand out as nvidia.com/gpu. Default: false.",
    )


@functools.lru_cache(maxsize=1)
def _mig_profiles() -> tuple[frozenset[str], frozenset[str]]:
    """(every MIG profile name, the whole-GPU ones) from the hybridgpu MIG catalog."""
    every: set[str] = set()
    whole: set[str] = set()
    for gpu in load_mig_models():
        for p in gpu.profiles:
            every.add(p.name)
            if p.compute_slices >= gpu.compute_slices:
                whole.add(p.name)
    return frozenset(every), frozenset(whole)


def _profile_problems(label: str, where: str, profile: str, stack: str, cfg: MigSettings) -> Iterator[str]:
    every, whole = _mig_profiles()
    allowed = for_stack(cfg.allowed_mig_profiles, stack)
    if profile in whole and not cfg.allow_whole_gpu_profiles:
        yield (
            f"{label} uses the whole-GPU MIG profile {profile} ({where}): MIG is meant for sharing. Fix: give the "
            f"GPU out whole ({GPU_RESOURCE}, MIG disabled) or split it into smaller profiles."
        )
    elif allowed is not None and profile not in allowed:
        yield f"{label} uses MIG profile {profile} ({where}), not in the allowed list ({names(allowed)}). Fix: use an allowed profile."
    elif profile not in every:
        yield f"{label} uses MIG profile {profile} ({where}), which no GPU in the hybridgpu MIG catalog has. Fix: check the name (`hybridgpu mig profiles`)."


def mig_profiles(res: PolicyResource, cfg: MigSettings) -> Findings:
    """MIG layouts (the mig-parted ConfigMap's ``config.yaml``) and pods requesting
    ``nvidia.com/mig-<profile>`` use allowed, shareable profiles."""
    if res.type == CONFIGMAP:
        text = dig(res.props, "data", "config.yaml")
        if not isinstance(text, str) or "mig-configs" not in text:
            return
        try:
            doc = load_yaml(text)
        except yaml.YAMLError as exc:
            yield (
                f"{res.label} data[config.yaml] is not valid YAML ({exc.__class__.__name__}). Fix: "
                + fix_for(res, "render it with hybridgpu.", "write it as valid YAML in mig-parted's config format (version, mig-configs).")
            )
            return
        for layout, entries in (dig(doc, "mig-configs") or {}).items():
            for entry in as_list(entries):
                for profile in (dig(entry, "mig-devices") or {}):
                    yield from _profile_problems(res.label, f"layout {layout}", str(profile), res.stack, cfg)
        return
    if not res.type.startswith("kubernetes:") or res.type in KUBERNETES_BUNDLES:
        return
    for template in pod_templates(res.props):
        for name in template.gpu_limits():
            if name.startswith(MIG_RESOURCE_PREFIX):
                yield from _profile_problems(res.label, f"request {name}", name[len(MIG_RESOURCE_PREFIX) :], res.stack, cfg)


class StackCapacitySettings(PolicySettings):
    """Settings of ``stack-gpu-ceiling``."""

    max_gpus_per_stack: PerStackInt = Field(
        default=256,
        description="Most GPUs all NodePools and every AWS resource that launches or reserves GPU instances (node groups, Auto Scaling groups, fleets, capacity reservations, instances) of a stack may add together; number or per stack. Default: 256.",
    )


def stack_gpu_ceiling(resources: Sequence[PolicyResource], cfg: StackCapacitySettings) -> StackFindings:
    """The GPUs a stack may add in all (NodePool limits, plus every AWS resource that launches or
    reserves GPU instances at its maximum: :mod:`hybridgpu.policy.capacity`) stay within
    ``maxGpusPerStack``. Capacity whose size cannot be known fails closed."""
    parts: list[str] = []
    total = 0.0
    stack = next((r.stack for r in resources if r.stack), "")
    unbounded: list[str] = []
    for res in resources:
        if res.type in NODEPOOL_TYPES and not cfg.exempt(res):
            static = cap_mod.static_nodepool_gpus(res.props)
            if static is not None:  # a static pool: replicas x GPUs per node, no GPU limit
                total += static
                parts.append(f"{res.name} {static:g}")
                continue
            limit = known(res.props, "spec", "limits", GPU_RESOURCE)
            gpus = parse_quantity(limit) if not isinstance(limit, Unknown) else None
            if isinstance(limit, Unknown):
                unbounded.append(f"{res.name} (spec.limits is an unknown value during preview)")
            elif gpus:
                total += gpus
                parts.append(f"{res.name} {gpus:g}")
    for cap in cap_mod.capacities(resources):
        if cap.resource.type in cap_mod.TEMPLATES or cfg.exempt(cap.resource):
            continue
        gpus = cap.gpus()
        if gpus:
            total += gpus
            parts.append(f"{cap.resource.name} {gpus:g}")
        if cap.problems and cap.may_be_gpu:
            unbounded.append(f"{cap.resource.name} ({cap.problems[0]})")
    most = for_stack(cfg.max_gpus_per_stack, stack)
    if total > most:
        yield None, (
            f"stack {stack or '?'} may add {total:g} GPUs ({', '.join(sorted(parts))}), above {most}. Fix: lower NodePool "
            f"{fix_for(resources, 'gpuLimits', 'spec.limits')} / node group, Auto Scaling group, fleet and service sizes, "
            "or raise maxGpusPerStack in the policy config."
        )
    if unbounded:
        yield None, (
            f"stack {stack or '?'}: the GPUs of {'; '.join(sorted(unbounded))} cannot be verified against the {most}-GPU ceiling. "
            "It fails closed. Fix: make their sizes and instance types literals in this stack, or waive them with a reason."
        )


class BudgetSettings(PolicySettings):
    """Settings of ``burst-budget``."""

    monthly_budget_usd: PerStackFloat = Field(
        default=None,
        description="Most USD per month the stack's NodePools may spend at their GPU limits (on-demand price, the worst "
        "case); number or per stack. Default: none (the policy is not applied).",
    )
    hours_per_month: float = Field(default=730.0, gt=0, description="Hours in a month (8,760 / 12). Default: 730.")
    gpu_hour_price_usd: dict[str, float] = Field(
        default_factory=dict,
        description="USD per GPU-hour by instance type, for types without a catalog price (e.g. p5e.48xlarge) or "
        "negotiated rates. Default: the catalog's on-demand prices.",
    )


def _pool_types(res: PolicyResource) -> list[str]:
    types = _in_values(_requirement(res, INSTANCE_TYPE_LABEL))
    if types is not None:
        return types
    families = _in_values(_requirement(res, INSTANCE_FAMILY_LABEL)) or []
    return sorted(t.name for f in families for t in load_catalog().family(f)) if families else []


def _budget_basis(res: PolicyResource, dearest_type: str, dearest: float, cfg: BudgetSettings, types: list[str]) -> str:
    """Why a pool is bounded at ``dearest`` USD per GPU-hour, and what it is expected to cost instead (spot pools).

    A spot pool is bounded at On-Demand, not at its expected spot price: EC2 never charges a Spot
    Instance more than its maximum price, which defaults to the On-Demand price, and Karpenter sets
    none (AWS EC2 User Guide, "Spot Instance pricing" / "maximum price", read 2026-11-27;
    aws/karpenter-provider-aws v1.14.1 creates its CreateFleet requests without a MaxPrice). The
    expected spot price is :meth:`hybridgpu.economics.prices.EconomicsData.gpu_hour_price` of the
    pool's cheapest type per GPU (the packaged price data, without a stack's overrides: the pack
    does not read stack files), the figure the cost report and showback use.
    """
    source = "gpuHourPriceUsd in the policy config" if dearest_type in cfg.gpu_hour_price_usd else "its On-Demand price"
    basis = f"the dearest instance type {dearest_type} at {source} {dearest:.2f} USD/GPU-hour"
    capacity = _in_values(_requirement(res, CAPACITY_TYPE_LABEL)) or []
    if "spot" not in capacity or set(capacity) - {"spot"}:
        return basis
    try:
        data = load_economics_data()
        priced = [t for t in (_instance(n) for n in types) if t is not None and t.usd_per_gpu_hour is not None]
        cheapest = min(priced, key=lambda t: (t.usd_per_gpu_hour, t.name))
        expected = data.gpu_hour_price(cheapest.name, "spot")
    except (HybridGpuError, ValueError):
        return f"{basis}: spot may reach On-Demand"
    return f"{basis}: spot may reach On-Demand; expected spot {expected.usd_per_gpu_hour:.2f} USD/GPU-hour, {expected.basis()}"


def burst_budget(resources: Sequence[PolicyResource], cfg: BudgetSettings) -> StackFindings:
    """The most a stack's NodePools can spend (GPU limit x the dearest allowed type's USD per
    GPU-hour x hours per month) stays within the monthly budget.

    Prices: :mod:`hybridgpu.catalog` on-demand prices (us-east-1; see the catalog's sources and
    dates), overridden by ``gpuHourPriceUsd``. On-demand is the ceiling for spot (EC2 charges a
    Spot Instance at most its maximum price, by default the On-Demand price) and the rate of an
    On-Demand Capacity Reservation. Each pool's part of the message names that basis and, for a
    spot pool, its expected spot price (:func:`_budget_basis`), so the policy's figure and the
    cost report's are both explained.
    """
    stack = next((r.stack for r in resources if r.stack), "")
    budget = for_stack(cfg.monthly_budget_usd, stack)
    if budget is None:
        return
    total = 0.0
    parts: list[str] = []
    for res in resources:
        if res.type not in NODEPOOL_TYPES or cfg.exempt(res) or not _may_pick_gpus(res):
            continue  # a pool whose requirements rule out GPU types spends nothing on GPUs
        limit = _gpu_limit(res)
        if limit is None:
            yield res, (f"{res.label} has no {GPU_RESOURCE} limit, so its spend is unbounded. "
                        f"Fix: set {fix_for(res, 'gpuLimit', f'spec.limits[{GPU_RESOURCE!r}] on the NodePool')}.")
            continue
        if limit == 0:
            continue
        prices: dict[str, float | None] = {}
        for t in _pool_types(res):
            it = _instance(t)
            prices[t] = cfg.gpu_hour_price_usd.get(t, it.usd_per_gpu_hour if it is not None else None)
        unpriced = sorted(t for t, p in prices.items() if p is None)
        if not prices or unpriced:
            yield res, (
                f"{res.label}: no price for {names(unpriced) or 'its instance types (none listed)'}, so its spend "
                "cannot be bounded. Fix: add gpuHourPriceUsd for them in the policy config, or list priced types."
            )
            continue
        dearest = max(p for p in prices.values() if p is not None)
        dearest_type = min(t for t, p in prices.items() if p == dearest)
        spend = limit * dearest * cfg.hours_per_month
        total += spend
        parts.append(f"{res.name} {limit:g} GPUs x ${dearest:.2f}/GPU-h = ${spend:,.0f} ({_budget_basis(res, dearest_type, dearest, cfg, list(prices))})")
    if total > budget:
        yield None, (
            f"stack {stack or '?'} NodePools may spend ${total:,.0f}/month at their GPU limits ({'; '.join(sorted(parts))}), "
            f"above the ${budget:,.0f} budget. Fix: lower {fix_for(resources, 'gpuLimit', 'spec.limits')} on the pools, "
            "or raise monthlyBudgetUsd."
        )


#: Helm releases whose values the pack reads (the chart's templates are not rendered offline).
HELM_TYPES = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart")
#: The NodePool API group (``karpenter.sh``), read from the NodePool type token.
_NODEPOOL_GROUP = NODEPOOL_TYPES[0].split(":")[1].split("/")[0]
_NODEPOOL_TEXT = re.compile(r"kind:\s*[\"']?NodePool\b|apiVersion:\s*[\"']?" + re.escape(_NODEPOOL_GROUP) + "/")


#: Keys of Helm values whose mappings hold Kubernetes resource quantities (a container's
#: ``resources.limits`` / ``resources.requests``: Kubernetes ``ResourceRequirements``, API reference v1.35).
_QUANTITY_MAPS = frozenset({"limits", "requests"})
#: Keys of Helm values whose mappings hold label keys, not resources: node selectors, labels,
#: annotations, label selectors (Kubernetes API reference v1.35: PodSpec ``nodeSelector``,
#: ObjectMeta ``labels``/``annotations``, LabelSelector ``matchLabels``). A GPU-named key there
#: (``nodeSelector: {nvidia.com/gpu.present: "true"}``, the NVIDIA device-plugin chart's values) selects
#: GPU nodes and asks for no GPU.
_LABEL_MAPS = frozenset({"nodeselector", "labels", "annotations", "matchlabels", "podlabels", "podannotations", "commonlabels", "selector"})


def _requests_gpus(parent: str, key: str, value: Any) -> bool:
    """True when ``key`` (a GPU resource name) is used as a resource request or limit under ``parent``:
    inside ``limits``/``requests``, or with a quantity as its value outside a label map. A GPU name used as
    a label or selector key (``nodeSelector``, ``labels``, ``matchLabels``) asks for nothing."""
    if not is_gpu_resource(key):
        return False
    if parent in _QUANTITY_MAPS:
        return True
    if parent.lower() in _LABEL_MAPS:
        return False
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return False
    return parse_quantity(value) is not None


def _helm_findings(node: Any, path: str, found: list[str], parent: str = "") -> None:
    errors = tuple(UNKNOWN_ERRORS)
    if isinstance(node, Mapping):
        try:
            kind, api = node.get("kind"), node.get("apiVersion")
        except errors:
            kind = api = None
        if kind == "NodePool" or (isinstance(api, str) and api.split("/", 1)[0] == _NODEPOOL_GROUP):
            found.append(f"a Karpenter NodePool at values.{path}" if path else "a Karpenter NodePool in values")
        for key in list(node):
            where = f"{path}.{key}" if path else str(key)
            try:
                value = node[key]
            except errors:
                if is_gpu_resource(str(key)) and parent.lower() not in _LABEL_MAPS:
                    found.append(f"a GPU request {key} at values.{where}")  # unknown amount: still a request
                continue
            if _requests_gpus(parent, str(key), value):
                found.append(f"a GPU request {key} at values.{where}")
                continue
            _helm_findings(value, where, found, str(key))
    elif isinstance(node, str):
        if _NODEPOOL_TEXT.search(node):
            found.append(f"NodePool YAML in the string at values.{path}")
    elif isinstance(node, Sequence) and not isinstance(node, bytes):
        for i in range(len(node)):
            try:
                value = node[i]
            except errors:
                continue
            _helm_findings(value, f"{path}[{i}]", found, parent)


def helm_values_capacity(res: PolicyResource, cfg: PolicySettings) -> Findings:
    """Helm releases that pass Karpenter NodePools or GPU requests through their values.

    The pack sees a release's inputs (chart, version, values), never the objects its templates
    render (the Helm provider renders them at deploy time), so every policy above is blind to a
    NodePool or a GPU workload defined in values. This policy flags such values so a reviewer
    sees them: a GPU resource name used as a request or limit (``nvidia.com/gpu: 8`` under
    ``resources.limits``, or with a quantity outside a label map), an object of kind NodePool or
    apiVersion ``karpenter.sh/*``, or NodePool YAML in a string. A GPU name used as a label,
    selector or toleration key (``nodeSelector: {nvidia.com/gpu.present: "true"}``) is not a request.
    """
    if res.type not in HELM_TYPES:
        return
    found: list[str] = []
    values = known(res.props, "values")
    if isinstance(values, Unknown) or values is None:
        return
    _helm_findings(values, "", found)
    if found:
        shown = sorted(set(found))
        more = f" (+{len(shown) - 5} more)" if len(shown) > 5 else ""
        yield (
            f"{res.label} passes {'; '.join(shown[:5])}{more} through Helm values, which the policy pack cannot check "
            "(it never sees the rendered objects). Fix: define NodePools and GPU workloads as Pulumi resources "
            "(or yaml ConfigGroup objects) so the pack checks them, or waive the release with the review's reason."
        )
