"""What EC2 capacity an AWS resource can launch or reserve: instance types and the most instances.

Pure: reads :class:`~hybridgpu.policy.base.PolicyResource` inputs as Pulumi sends them to
analyzers (camelCase). Every AWS resource that can launch or reserve instances is covered:

| type token | instance types from | most instances |
|---|---|---|
| ``aws:ec2/instance:Instance``, ``aws:ec2/spotInstanceRequest:SpotInstanceRequest`` | ``instanceType`` or its launch template | 1 |
| ``aws:eks/nodeGroup:NodeGroup`` | ``instanceTypes`` or its launch template's ``instanceType`` | ``scalingConfig.maxSize`` |
| ``aws:autoscaling/group:Group`` | ``launchTemplate``, ``launchConfiguration``, ``mixedInstancesPolicy.launchTemplate`` (its specification and ``overrides[].instanceType``) | ``maxSize`` (capacity units / ``weightedCapacity``) |
| ``aws:ec2/spotFleetRequest:SpotFleetRequest`` | ``launchSpecifications[].instanceType``, ``launchTemplateConfigs[]`` (specification, ``overrides``) | ``targetCapacity`` in ``targetCapacityUnitType`` units |
| ``aws:ec2/fleet:Fleet`` | ``launchTemplateConfigs[]`` (specification, ``overrides``) | ``targetCapacitySpecification.totalTargetCapacity`` |
| ``aws:ec2/capacityReservation:CapacityReservation`` | ``instanceType`` | ``instanceCount`` |
| ``aws:ec2/launchTemplate:LaunchTemplate``, ``aws:ec2/launchConfiguration:LaunchConfiguration`` | ``instanceType`` | launches nothing itself |
| ``aws:batch/computeEnvironment:ComputeEnvironment`` | ``computeResources.instanceTypes`` (a family: each catalog size of it) | ``computeResources.maxVcpus`` / the type's vCPUs, rounded up (Fargate: none) |
| ``aws:sagemaker/endpointConfiguration:EndpointConfiguration`` | ``productionVariants[]`` / ``shadowProductionVariants[]`` ``.instanceType`` (``ml.`` + EC2 type) | per variant ``managedInstanceScaling.maxInstanceCount``, else ``initialInstanceCount``; summed |
| ``aws:sagemaker/notebookInstance:NotebookInstance`` | ``instanceType`` | 1 |
| ``aws-native:sagemaker:Cluster`` (HyperPod; pulumi-aws 7.51.1 has none) | ``instanceGroups[].instanceType`` | ``instanceGroups[].instanceCount``, summed |
| ``aws:emr/cluster:Cluster`` | ``master``/``coreInstanceGroup.instanceType``, ``master``/``coreInstanceFleet.instanceTypeConfigs[]`` | groups: ``instanceCount`` (or the autoscaling policy's ``MaxCapacity``); fleets: on-demand + spot target capacity / ``weightedCapacity``; summed |
| ``aws:emr/instanceGroup:InstanceGroup``, ``aws:emr/instanceFleet:InstanceFleet`` | as in the cluster | as in the cluster |
| ``aws:ec2/capacityBlockReservation:CapacityBlockReservation`` | its offering's (``capacityBlockOfferingId``): unseen, fails closed | the offering's |

Property names: the pulumi-aws 7.51.1 Python SDK (``autoscaling/_inputs.py`` GroupLaunchTemplate,
GroupMixedInstancesPolicyLaunchTemplate{,LaunchTemplateSpecification,Override};
``ec2/_inputs.py`` FleetLaunchTemplateConfig*, FleetTargetCapacitySpecification,
SpotFleetRequestLaunchTemplateConfig*, SpotFleetRequestLaunchSpecification;
``eks/_inputs.py`` NodeGroupLaunchTemplate), read 2026-11-24. Unit types ``units`` (default),
``vcpu`` and ``memory-mib``: EC2 API reference, TargetCapacitySpecificationRequest.

A launch template referenced by id or name is followed to the launch template resource of the
same stack: by its ``name`` input, else through the property dependencies the engine sends to
``AnalyzeStack`` (the reference's URN even while the id is unknown). What cannot be known (an
unknown value, a template outside the stack, attribute-based selection) is a *problem*: the
policies fail closed on it when GPUs may be involved.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybridgpu.catalog import INSTANCE_TYPES_SOURCE, is_accelerator_type, load_catalog
from hybridgpu.catalog.models import InstanceType
from hybridgpu.k8s import INSTANCE_TYPE_LABEL
from hybridgpu.policy.base import PolicyResource, Unknown, as_list, fix_for, known, parse_quantity

INSTANCE = "aws:ec2/instance:Instance"
SPOT_INSTANCE = "aws:ec2/spotInstanceRequest:SpotInstanceRequest"
NODEGROUP = "aws:eks/nodeGroup:NodeGroup"
ASG = "aws:autoscaling/group:Group"
SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
FLEET = "aws:ec2/fleet:Fleet"
CAPACITY_RESERVATION = "aws:ec2/capacityReservation:CapacityReservation"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
LAUNCH_CONFIGURATION = "aws:ec2/launchConfiguration:LaunchConfiguration"

#: GPU capacity bought outside EC2 instances, fleets and Auto Scaling groups (input names: pulumi-aws
#: 7.51.1 Python SDK, ``batch/compute_environment.py`` + ``batch/_inputs.py``
#: ComputeEnvironmentComputeResourcesArgs; ``sagemaker/endpoint_configuration.py`` +
#: EndpointConfigurationProductionVariantArgs{,ManagedInstanceScalingArgs};
#: ``sagemaker/notebook_instance.py``; ``emr/cluster.py`` + ClusterCoreInstanceGroupArgs /
#: ClusterCoreInstanceFleetArgs / ClusterCoreInstanceFleetInstanceTypeConfigArgs;
#: ``emr/instance_group.py``; ``emr/instance_fleet.py``; ``ec2/capacity_block_reservation.py``; read 2026-11-26).
BATCH_COMPUTE_ENVIRONMENT = "aws:batch/computeEnvironment:ComputeEnvironment"
SAGEMAKER_ENDPOINT_CONFIGURATION = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
SAGEMAKER_NOTEBOOK = "aws:sagemaker/notebookInstance:NotebookInstance"
EMR_CLUSTER = "aws:emr/cluster:Cluster"
EMR_INSTANCE_GROUP = "aws:emr/instanceGroup:InstanceGroup"
EMR_INSTANCE_FLEET = "aws:emr/instanceFleet:InstanceFleet"
CAPACITY_BLOCK = "aws:ec2/capacityBlockReservation:CapacityBlockReservation"
#: SageMaker HyperPod clusters: pulumi-aws 7.51.1 has no resource for them (no ``sagemaker/cluster.py``);
#: the aws-native provider's ``sagemaker:Cluster`` (CloudFormation ``AWS::SageMaker::Cluster``:
#: ``InstanceGroups[].InstanceType`` / ``InstanceCount``) does.
HYPERPOD_CLUSTER = "aws-native:sagemaker:Cluster"
#: Resources whose capacity is the sum of independent groups (variants, instance groups), each sized on its own.
SERVICE_TYPES = (BATCH_COMPUTE_ENVIRONMENT, SAGEMAKER_ENDPOINT_CONFIGURATION, SAGEMAKER_NOTEBOOK, EMR_CLUSTER,
                 EMR_INSTANCE_GROUP, EMR_INSTANCE_FLEET, CAPACITY_BLOCK, HYPERPOD_CLUSTER)

#: Every type token this module reads (the capacity policies' ``types``).
CAPACITY_TYPES = (INSTANCE, SPOT_INSTANCE, NODEGROUP, ASG, SPOT_FLEET, FLEET, CAPACITY_RESERVATION, LAUNCH_TEMPLATE,
                  LAUNCH_CONFIGURATION, *SERVICE_TYPES)
#: Types that launch nothing themselves (a template); their types are checked, their count is not.
TEMPLATES = (LAUNCH_TEMPLATE, LAUNCH_CONFIGURATION)


#: SageMaker instance types are the EC2 type behind an ``ml.`` prefix (``ml.p4d.24xlarge`` runs on a
#: p4d.24xlarge: SageMaker pricing page, "Instance types" tables, read 2026-11-26).
SAGEMAKER_PREFIX = "ml."


def ec2_type(name: str) -> str:
    """The EC2 instance type behind a name: ``ml.g5.xlarge`` -> ``g5.xlarge``; other names unchanged."""
    return name[len(SAGEMAKER_PREFIX):] if name.startswith(SAGEMAKER_PREFIX) else name


def family_of(name: str) -> str:
    """The EC2 family of an instance type (``ml.p5.48xlarge`` -> ``p5``)."""
    return ec2_type(name).split(".", 1)[0]


def instance_type(name: str) -> InstanceType | None:
    """The catalog entry of an EC2 instance type (or of the EC2 type behind a SageMaker ``ml.`` type), or None."""
    try:
        return load_catalog().instance_type(ec2_type(name))
    except KeyError:
        return None


def static_nodepool_gpus(props: Mapping[str, Any]) -> float | None:
    """GPUs a static Karpenter NodePool runs: ``spec.replicas`` x the most GPUs of its ``node.kubernetes.io/instance-type In`` types.

    A static pool (Karpenter v1.14.1 ``spec.replicas``) may not carry an ``nvidia.com/gpu`` limit (CRD CEL rule "only
    'limits.nodes' is supported on static NodePools"); its replicas bound it instead (hybridgpu.render.karpenter_static).

    Returns:
        The bound in GPUs; None for a dynamic pool, an unknown value, or types the catalog does not know.
    """
    replicas = known(props, "spec", "replicas")
    # The analyzer hands numbers over as protobuf doubles (4.0): a whole float counts.
    if isinstance(replicas, bool) or not isinstance(replicas, (int, float)) or replicas != int(replicas):
        return None
    for req in as_list(known(props, "spec", "template", "spec", "requirements")):
        if isinstance(req, Mapping) and req.get("key") == INSTANCE_TYPE_LABEL and req.get("operator") == "In":
            found = [instance_type(str(v)) for v in as_list(req.get("values"))]
            if found and all(t is not None for t in found):
                return float(int(replicas) * max(t.gpu_count for t in found if t is not None))
    return None


def is_gpu_type(name: str) -> bool:
    """GPU or accelerator capacity: in the catalog, or of a family named like one (g*, gr*, p*, dl*, trn*, inf*)."""
    return instance_type(name) is not None or is_accelerator_type(ec2_type(name))


def unknown_family_message(res: PolicyResource, label: str, types: Sequence[str], policy: str = "gpu-instance-size") -> str:
    """The fail-closed message for accelerator-looking types the catalog does not know.

    Args:
        res: the resource reported (its project decides the fix's wording: :func:`fix_for`).
        label: how the message names it (``res.label``, perhaps with where the types come from).
        types: the uncatalogued types.
        policy: the reporting policy, whose ``exemptResources`` a foreign project waives the resource in.

    Returns:
        The message with a fix that works in the checked project: in hybridgpu's, adding the type to
        the catalog's data file; in any other (which cannot edit hybridgpu's package data), a catalog
        type, or a waiver in its policy config plus an issue or pull request for the catalog.
    """
    shown = ", ".join(sorted(set(types)))
    return (
        f"{label} uses {shown}, which looks like GPU/accelerator capacity but is not in the "
        "hybridgpu catalog, so its GPU count cannot be checked. Fix: use a catalog type (`hybridgpu catalog`)"
        + fix_for(
            res,
            f", or add the type to {INSTANCE_TYPES_SOURCE} with its sources.",
            f", or, once its GPU count is reviewed, waive the resource in the policy config "
            f'({{"{policy}": {{"exemptResources": [{{"resource": "{res.name}", "reason": "{shown}: <GPUs> per instance, reviewed ..."}}]}}}}) '
            f"and open an issue or pull request to add {shown} to the hybridgpu catalog ({INSTANCE_TYPES_SOURCE}).",
        )
    )


@dataclass
class Capacity:
    """What one resource can launch or reserve.

    Attributes:
        resource: the resource.
        direct: instance types set on the resource itself.
        derived: instance types it takes from a launch template / configuration (``type -> template name``).
        instances: ``type -> most instances of that type at once`` (None for templates, which launch nothing).
        problems: what cannot be known (unknown values, templates outside the stack, attribute-based
            selection); meaningful when GPUs may be involved.
        groups: for resources made of independently sized groups (SageMaker variants, EMR instance
            groups and fleets, HyperPod instance groups): each group's ``type -> most instances``;
            the resource holds the sum of the groups' worst cases. None: one group, ``instances``.
    """

    resource: PolicyResource
    direct: list[str] = field(default_factory=list)
    derived: dict[str, str] = field(default_factory=dict)
    instances: dict[str, float] | None = None
    problems: list[str] = field(default_factory=list)
    groups: list[dict[str, float]] | None = None

    @property
    def types(self) -> list[str]:
        """Every instance type it may use, direct and derived, sorted."""
        return sorted({*self.direct, *self.derived})

    @property
    def may_be_gpu(self) -> bool:
        """True when a type is GPU capacity, or what it launches cannot be known."""
        return any(is_gpu_type(t) for t in self.types) or bool(self.problems)

    def gpus(self) -> float:
        """Most GPUs it can hold at once (the worst type filling the whole capacity); 0 for templates."""
        if self.instances is None:
            return 0.0
        return sum(_worst(group) for group in (self.groups if self.groups is not None else [self.instances]))

    def uncatalogued(self) -> list[str]:
        """Accelerator-looking types the catalog does not know (their GPU count is unknown)."""
        return sorted(t for t in self.types if instance_type(t) is None and is_accelerator_type(t))


#: The inputs that size each service resource (named in fix hints).
SIZE_INPUTS = {
    BATCH_COMPUTE_ENVIRONMENT: "computeResources.maxVcpus (or drop the large GPU types from computeResources.instanceTypes)",
    SAGEMAKER_ENDPOINT_CONFIGURATION: "the variants' initialInstanceCount / managedInstanceScaling.maxInstanceCount",
    SAGEMAKER_NOTEBOOK: "instanceType to a smaller ml. type",
    EMR_CLUSTER: "the instance groups' instanceCount / autoscaling MaxCapacity and the fleets' target capacities",
    EMR_INSTANCE_GROUP: "instanceCount / the autoscaling policy's MaxCapacity",
    EMR_INSTANCE_FLEET: "targetOnDemandCapacity + targetSpotCapacity",
    CAPACITY_BLOCK: "the offering's instance count",
    HYPERPOD_CLUSTER: "the instance groups' instanceCount",
}


def worst_of(group: Mapping[str, float]) -> str:
    """``"<n> x <type>"`` for the type of ``group`` that holds the most GPUs ('' when none is a GPU type)."""
    best = max(group, key=lambda t: (it.gpu_count if (it := instance_type(t)) else 0) * group[t], default=None)
    if best is None or instance_type(best) is None:
        return ""
    return f"{group[best]:g} x {best}"


def _worst(group: Mapping[str, float]) -> float:
    """Most GPUs one group holds: its worst type filling the group's whole capacity."""
    best = 0.0
    for t, count in group.items():
        it = instance_type(t)
        if it is not None:
            best = max(best, it.gpu_count * count)
    return best


class StackIndex:
    """The launch templates and configurations of a stack, for following references.

    Args:
        resources: every resource of the stack (``AnalyzeStack``), or just one (``Analyze``).
    """

    def __init__(self, resources: Sequence[PolicyResource]):
        self.by_urn = {r.urn: r for r in resources if r.urn}
        self.templates = [r for r in resources if r.type in TEMPLATES]

    def templates_for(self, res: PolicyResource, prop: str, name: Any, ref_id: Any, kind: str = LAUNCH_TEMPLATE) -> list[PolicyResource] | str:
        """The template(s) a reference points at, or a problem sentence.

        Args:
            res: the referring resource. prop: its top-level input holding the reference.
            name: the referenced template name (or None). ref_id: the referenced id (or None).
            kind: the template type token.
        """
        if isinstance(name, str) and name:
            named = [t for t in self.templates if t.type == kind and known(t.props, "name") == name]
            if named:
                return named
        deps = [self.by_urn[u] for u in res.property_dependencies.get(prop, ()) if u in self.by_urn]
        deps = [d for d in deps if d.type == kind]
        if deps:
            return deps
        if isinstance(name, Unknown) or isinstance(ref_id, Unknown):
            what = name.path if isinstance(name, Unknown) else ref_id.path
            return f"{what} is an unknown value during preview and depends on no {kind.rsplit(':', 1)[-1]} of this stack"
        ref = name if isinstance(name, str) and name else ref_id
        if ref is None:
            return []
        return f"points at {ref!s}, which is not a {kind.rsplit(':', 1)[-1]} of this stack, so its instance type cannot be seen"


def _types_of_template(tpl: PolicyResource, cap: Capacity, where: str) -> list[str]:
    value = known(tpl.props, "instanceType")
    if isinstance(value, Unknown):
        cap.problems.append(f"{where}: the instanceType of {tpl.label} is an unknown value during preview")
        return []
    if known(tpl.props, "instanceRequirements") not in (None, {}):
        cap.problems.extend(_requirements_problem(known(tpl.props, "instanceRequirements"), f"{where}: {tpl.label} instanceRequirements"))
    return [value] if isinstance(value, str) and value else []


def _requirements_problem(req: Any, where: str) -> list[str]:
    """Attribute-based selection can pick GPU types unless it caps accelerators at 0."""
    if isinstance(req, Unknown):
        return [f"{where} is an unknown value during preview"]
    most = known(req, "acceleratorCount", "max")
    if isinstance(most, (int, float)) and not isinstance(most, bool) and most == 0:
        return []
    return [f"{where} selects instance types by attributes without acceleratorCount.max 0, so GPU types cannot be ruled out; list instanceType overrides instead"]


def _follow(index: StackIndex, res: PolicyResource, cap: Capacity, prop: str, spec: Any, name_key: str, id_key: str, where: str) -> list[str]:
    """Instance types of the launch template a specification points at (recorded as derived)."""
    if isinstance(spec, Unknown):
        found = index.templates_for(res, prop, spec, None)
    elif not isinstance(spec, Mapping):
        return []
    else:
        found = index.templates_for(res, prop, known(spec, name_key), known(spec, id_key))
    if isinstance(found, str):
        cap.problems.append(f"{where}: {found}")
        return []
    types: list[str] = []
    for tpl in found:
        for t in _types_of_template(tpl, cap, where):
            cap.derived.setdefault(t, tpl.name)
            types.append(t)
    return types


def _number(value: Any, where: str, cap: Capacity) -> float | None:
    if isinstance(value, Unknown):
        cap.problems.append(f"{where} is an unknown value during preview")
        return None
    if value is None:
        return None
    number = parse_quantity(value)
    if number is None:
        cap.problems.append(f"{where} is not a number ({value!r})")
        return None
    return number


def _per_type(total: float | None, weights: Mapping[str, float], unit: Any, types: Sequence[str]) -> dict[str, float]:
    """Most instances of each type when ``total`` capacity units are filled with it alone."""
    out: dict[str, float] = {}
    if total is None:
        return out
    for t in types:
        it = instance_type(t)
        if unit == "vcpu" and it is not None:
            per = float(it.vcpu)
        elif unit == "memory-mib" and it is not None:
            per = float(it.memory_gib) * 1024
        else:
            per = weights.get(t, 1.0) or 1.0
        out[t] = float(math.ceil(total / per)) if per > 0 else total
    return out


def _weighted_type(item: Any, where: str, cap: Capacity, types: list[str], weights: dict[str, float]) -> None:
    """Record ``item``'s ``instanceType`` in ``types`` and its ``weightedCapacity`` in ``weights``
    (the smallest per type: the most instances it can stand for); an unknown type is a problem of ``cap``."""
    t = known(item, "instanceType")
    if isinstance(t, Unknown):
        cap.problems.append(f"{where}.instanceType is an unknown value during preview")
    elif isinstance(t, str) and t:
        types.append(t)
        w = _number(known(item, "weightedCapacity"), f"{where}.weightedCapacity", cap)
        if w is not None and w > 0:
            weights[t] = min(weights.get(t, w), w)


def _overrides(overrides: Any, cap: Capacity, where: str, weights: dict[str, float]) -> list[str]:
    types: list[str] = []
    if isinstance(overrides, Unknown):
        cap.problems.append(f"{where} is an unknown value during preview")
        return types
    for i, o in enumerate(as_list(overrides)):
        _weighted_type(o, f"{where}[{i}]", cap, types, weights)
        req = known(o, "instanceRequirements")
        if req is not None:
            cap.problems.extend(_requirements_problem(req, f"{where}[{i}].instanceRequirements"))
    return types


def capacity_of(res: PolicyResource, index: StackIndex) -> Capacity | None:
    """The :class:`Capacity` of an AWS resource, or None for types that launch nothing.

    Values unknown during preview never raise: they become ``problems``.
    """
    t = res.type
    if t not in CAPACITY_TYPES:
        return None
    cap = Capacity(res)
    props = res.props
    if t in SERVICE_TYPES:
        return _service_capacity(res, cap)
    if t in (INSTANCE, SPOT_INSTANCE, CAPACITY_RESERVATION, LAUNCH_TEMPLATE, LAUNCH_CONFIGURATION):
        direct = known(props, "instanceType")
        if isinstance(direct, Unknown):
            cap.problems.append("instanceType is an unknown value during preview")
        elif isinstance(direct, str) and direct:
            cap.direct.append(direct)
        if t in (INSTANCE, SPOT_INSTANCE) and not cap.direct:
            _follow(index, res, cap, "launchTemplate", known(props, "launchTemplate"), "name", "id", "launchTemplate")
        if t == LAUNCH_TEMPLATE and known(props, "instanceRequirements") is not None:
            cap.problems.extend(_requirements_problem(known(props, "instanceRequirements"), "instanceRequirements"))
        if t in TEMPLATES:
            return cap
        count = 1.0 if t != CAPACITY_RESERVATION else _number(known(props, "instanceCount"), "instanceCount", cap)
        cap.instances = {x: count for x in cap.types} if count is not None else {}
        return cap
    if t == NODEGROUP:
        types = known(props, "instanceTypes")
        if isinstance(types, Unknown):
            cap.problems.append("instanceTypes is an unknown value during preview")
        else:
            cap.direct += [str(x) for x in as_list(types)]
        lt = known(props, "launchTemplate")
        if lt is not None:
            _follow(index, res, cap, "launchTemplate", lt, "name", "id", "launchTemplate")
        most = _number(known(props, "scalingConfig", "maxSize"), "scalingConfig.maxSize", cap)
        cap.instances = _per_type(most, {}, None, cap.types)
        return cap
    if t == ASG:
        weights: dict[str, float] = {}
        lt = known(props, "launchTemplate")
        if lt is not None:
            _follow(index, res, cap, "launchTemplate", lt, "name", "id", "launchTemplate")
        lc = known(props, "launchConfiguration")
        if lc is not None:
            found = index.templates_for(res, "launchConfiguration", lc, None, LAUNCH_CONFIGURATION)
            if isinstance(found, str):
                cap.problems.append(f"launchConfiguration: {found}")
            else:
                for tpl in found:
                    for x in _types_of_template(tpl, cap, "launchConfiguration"):
                        cap.derived.setdefault(x, tpl.name)
        mip = known(props, "mixedInstancesPolicy", "launchTemplate")
        if isinstance(mip, Unknown):
            cap.problems.append(f"mixedInstancesPolicy ({mip.path}) is an unknown value during preview")
        elif mip is not None:
            overrides = _overrides(known(mip, "overrides"), cap, "mixedInstancesPolicy.launchTemplate.overrides", weights)
            cap.direct += overrides
            if not overrides:
                _follow(index, res, cap, "mixedInstancesPolicy", known(mip, "launchTemplateSpecification"),
                        "launchTemplateName", "launchTemplateId", "mixedInstancesPolicy.launchTemplate.launchTemplateSpecification")
        most = _number(known(props, "maxSize"), "maxSize", cap)
        cap.instances = _per_type(most, weights, None, cap.types)
        return cap
    # Spot Fleet and EC2 Fleet
    weights = {}
    configs = known(props, "launchTemplateConfigs")
    name_key, id_key = ("name", "id") if t == SPOT_FLEET else ("launchTemplateName", "launchTemplateId")
    if isinstance(configs, Unknown):
        cap.problems.append("launchTemplateConfigs is an unknown value during preview")
    for i, cfg in enumerate(as_list(configs)):
        where = f"launchTemplateConfigs[{i}]"
        overrides = _overrides(known(cfg, "overrides"), cap, f"{where}.overrides", weights)
        cap.direct += overrides
        if not overrides:
            _follow(index, res, cap, "launchTemplateConfigs", known(cfg, "launchTemplateSpecification"), name_key, id_key, f"{where}.launchTemplateSpecification")
    if t == SPOT_FLEET:
        specs = known(props, "launchSpecifications")
        if isinstance(specs, Unknown):
            cap.problems.append("launchSpecifications is an unknown value during preview")
        for i, spec in enumerate(as_list(specs)):
            x = known(spec, "instanceType")
            if isinstance(x, Unknown):
                cap.problems.append(f"launchSpecifications[{i}].instanceType is an unknown value during preview")
            elif isinstance(x, str) and x:
                cap.direct.append(x)
                w = _number(known(spec, "weightedCapacity"), f"launchSpecifications[{i}].weightedCapacity", cap)
                if w is not None and w > 0:
                    weights[x] = min(weights.get(x, w), w)
        total = _number(known(props, "targetCapacity"), "targetCapacity", cap)
        unit = known(props, "targetCapacityUnitType")
    else:
        total = _number(known(props, "targetCapacitySpecification", "totalTargetCapacity"), "targetCapacitySpecification.totalTargetCapacity", cap)
        unit = known(props, "targetCapacitySpecification", "targetCapacityUnitType")
    if isinstance(unit, Unknown):
        cap.problems.append("the target capacity unit type is an unknown value during preview")
        unit = None
    cap.instances = _per_type(total, weights, unit, cap.types)
    return cap


def _add_group(cap: Capacity, group: dict[str, float]) -> None:
    """Record one independently sized group of a service resource."""
    assert cap.groups is not None and cap.instances is not None
    cap.groups.append(group)
    for t, n in group.items():
        cap.direct.append(t)
        cap.instances[t] = cap.instances.get(t, 0.0) + n


def _group(cap: Capacity, itype: Any, count: Any, where: str, default_count: float | None = 1.0) -> None:
    """One instance group: ``itype`` x ``count`` (``default_count`` when unset; None: required)."""
    if isinstance(itype, Unknown):
        cap.problems.append(f"{where}.instanceType is an unknown value during preview")
        return
    if not isinstance(itype, str) or not itype:
        return
    number = _number(count, f"{where} instance count", cap)
    if number is None and count is None:
        number = default_count
    if number is None:
        cap.problems.append(f"{where} sets no instance count")
        number = 0.0
    _add_group(cap, {itype: number})


def _emr_max(policy: Any, where: str, cap: Capacity) -> Any:
    """``Constraints.MaxCapacity`` of an EMR automatic-scaling policy (a JSON string: pulumi-aws
    ``emr/instance_group.py`` autoscaling_policy), or None when there is none."""
    if policy is None or policy == "":
        return None
    if isinstance(policy, Unknown):
        cap.problems.append(f"{where}.autoscalingPolicy is an unknown value during preview")
        return None
    try:
        data = json.loads(policy) if isinstance(policy, str) else policy
    except ValueError:
        cap.problems.append(f"{where}.autoscalingPolicy is not JSON")
        return None
    return known(data, "Constraints", "MaxCapacity") or known(data, "constraints", "maxCapacity")


def _emr_fleet(cap: Capacity, fleet: Any, where: str) -> None:
    """An EMR instance fleet: ``instanceTypeConfigs[]`` with ``weightedCapacity`` (default 1) filling
    ``targetOnDemandCapacity + targetSpotCapacity`` units (EMR API reference, InstanceFleetConfig)."""
    if isinstance(fleet, Unknown):
        cap.problems.append(f"{where} is an unknown value during preview")
        return
    if not isinstance(fleet, Mapping):
        return
    weights: dict[str, float] = {}
    types: list[str] = []
    configs = known(fleet, "instanceTypeConfigs")
    if isinstance(configs, Unknown):
        cap.problems.append(f"{where}.instanceTypeConfigs is an unknown value during preview")
    for i, c in enumerate(as_list(configs)):
        _weighted_type(c, f"{where}.instanceTypeConfigs[{i}]", cap, types, weights)
    total = 0.0
    for key in ("targetOnDemandCapacity", "targetSpotCapacity"):
        total += _number(known(fleet, key), f"{where}.{key}", cap) or 0.0
    _add_group(cap, _per_type(total, weights, None, types))


def _batch_types(value: Any, cap: Capacity) -> list[str]:
    """Instance types a Batch compute environment may launch: types as given, families expanded to
    their catalog types (Batch picks any size of a listed family: AWS Batch API reference,
    ComputeResource ``instanceTypes``); ``optimal`` and other CPU names stay as given."""
    if isinstance(value, Unknown):
        cap.problems.append("computeResources.instanceTypes is an unknown value during preview")
        return []
    out: list[str] = []
    catalog = load_catalog()
    for name in (str(x) for x in as_list(value)):
        if "." in name:
            out.append(name)
            continue
        members = [it.name for it in catalog.gpu_instance_types(families=[name])] if name in catalog.families() else []
        if members:
            out += members
        elif is_accelerator_type(name + ".x"):
            out.append(f"{name}.*")  # an accelerator family the catalog does not know: fails closed
        else:
            out.append(name)
    return out


def _service_capacity(res: PolicyResource, cap: Capacity) -> Capacity:
    """Capacity of the resources in :data:`SERVICE_TYPES`.

    How many instances each can hold:

    * Batch compute environment: ``computeResources.maxVcpus`` / the type's vCPUs, rounded up
      (each type on its own, the worst counts; Batch may exceed maxVcpus by at most one instance:
      AWS Batch User Guide, "Compute environment parameters", maxvCpus); Fargate environments launch no instances;
    * SageMaker endpoint configuration: per production and shadow variant, ``managedInstanceScaling.maxInstanceCount``
      if set, else ``initialInstanceCount``, summed over variants;
    * notebook instance: 1; HyperPod cluster: ``instanceGroups[].instanceCount``, summed;
    * EMR cluster: master and core instance groups (``instanceCount``, or its autoscaling policy's
      ``MaxCapacity``) and fleets, summed; EMR instance group / fleet: the same for one group;
    * Capacity Block for ML: its type and count come from the offering (``capacityBlockOfferingId``),
      an input the pack cannot resolve, so it fails closed unless the inputs carry ``instanceType``.
    """
    t, props = res.type, res.props
    cap.instances, cap.groups = {}, []
    if t == BATCH_COMPUTE_ENVIRONMENT:
        kind = known(props, "computeResources", "type")
        if known(props, "computeResources") is None or (isinstance(kind, str) and kind.upper().startswith("FARGATE")):
            return cap
        types = _batch_types(known(props, "computeResources", "instanceTypes"), cap)
        most = _number(known(props, "computeResources", "maxVcpus"), "computeResources.maxVcpus", cap)
        _add_group(cap, _per_type(most, {}, "vcpu", types))
    elif t == SAGEMAKER_ENDPOINT_CONFIGURATION:
        for key in ("productionVariants", "shadowProductionVariants"):
            variants = known(props, key)
            if isinstance(variants, Unknown):
                cap.problems.append(f"{key} is an unknown value during preview")
            for i, v in enumerate(as_list(variants)):
                scaled = known(v, "managedInstanceScaling", "maxInstanceCount")
                _group(cap, known(v, "instanceType"), scaled if scaled is not None else known(v, "initialInstanceCount"), f"{key}[{i}]")
    elif t == SAGEMAKER_NOTEBOOK:
        _group(cap, known(props, "instanceType"), None, "notebook")
    elif t == HYPERPOD_CLUSTER:
        groups = known(props, "instanceGroups")
        if isinstance(groups, Unknown):
            cap.problems.append("instanceGroups is an unknown value during preview")
        for i, g in enumerate(as_list(groups)):
            _group(cap, known(g, "instanceType"), known(g, "instanceCount"), f"instanceGroups[{i}]", None)
    elif t in (EMR_CLUSTER, EMR_INSTANCE_GROUP):
        groups = [("masterInstanceGroup", known(props, "masterInstanceGroup")), ("coreInstanceGroup", known(props, "coreInstanceGroup"))] if t == EMR_CLUSTER else [("instance group", props)]
        for where, g in groups:
            if isinstance(g, Unknown):
                cap.problems.append(f"{where} is an unknown value during preview")
                continue
            if not isinstance(g, Mapping):
                continue
            most = _emr_max(known(g, "autoscalingPolicy"), where, cap)
            _group(cap, known(g, "instanceType"), most if most is not None else known(g, "instanceCount"), where)
        if t == EMR_CLUSTER:
            for key in ("masterInstanceFleet", "coreInstanceFleet"):
                _emr_fleet(cap, known(props, key), key)
    elif t == EMR_INSTANCE_FLEET:
        _emr_fleet(cap, props, "instance fleet")
    elif t == CAPACITY_BLOCK:
        itype = known(props, "instanceType")
        if isinstance(itype, str) and itype:
            _group(cap, itype, known(props, "instanceCount"), "capacity block", None)
        else:
            cap.problems.append(
                "a Capacity Block for ML reserves GPU instances (p4d, p5, p5e, p5en, trn1, trn2) whose type and count come "
                "from its offering (capacityBlockOfferingId), which the pack cannot see"
            )
    return cap


def capacities(resources: Sequence[PolicyResource]) -> list[Capacity]:
    """The :class:`Capacity` of every resource of a stack that can launch or reserve instances."""
    index = StackIndex(resources)
    out = []
    for r in resources:
        cap = capacity_of(r, index)
        if cap is not None:
            out.append(cap)
    return out
