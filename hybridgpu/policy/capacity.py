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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybridgpu.catalog import INSTANCE_TYPES_SOURCE, is_accelerator_type, load_catalog
from hybridgpu.catalog.models import InstanceType
from hybridgpu.policy.base import PolicyResource, Unknown, as_list, known, parse_quantity

INSTANCE = "aws:ec2/instance:Instance"
SPOT_INSTANCE = "aws:ec2/spotInstanceRequest:SpotInstanceRequest"
NODEGROUP = "aws:eks/nodeGroup:NodeGroup"
ASG = "aws:autoscaling/group:Group"
SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
FLEET = "aws:ec2/fleet:Fleet"
CAPACITY_RESERVATION = "aws:ec2/capacityReservation:CapacityReservation"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
LAUNCH_CONFIGURATION = "aws:ec2/launchConfiguration:LaunchConfiguration"

#: Every type token this module reads (the capacity policies' ``types``).
CAPACITY_TYPES = (INSTANCE, SPOT_INSTANCE, NODEGROUP, ASG, SPOT_FLEET, FLEET, CAPACITY_RESERVATION, LAUNCH_TEMPLATE, LAUNCH_CONFIGURATION)
#: Types that launch nothing themselves (a template); their types are checked, their count is not.
TEMPLATES = (LAUNCH_TEMPLATE, LAUNCH_CONFIGURATION)


def instance_type(name: str) -> InstanceType | None:
    """The catalog entry of an EC2 instance type, or None."""
    try:
        return load_catalog().instance_type(name)
    except KeyError:
        return None


def is_gpu_type(name: str) -> bool:
    """GPU or accelerator capacity: in the catalog, or of a family named like one (g*, gr*, p*, dl*, trn*, inf*)."""
    return instance_type(name) is not None or is_accelerator_type(name)


def unknown_family_message(label: str, types: Sequence[str]) -> str:
    """The fail-closed message for accelerator-looking types the catalog does not know."""
    return (
        f"{label} uses {', '.join(sorted(set(types)))}, which looks like GPU/accelerator capacity but is not in the "
        f"hybridgpu catalog, so its GPU count cannot be checked. Fix: use a catalog type (`hybridgpu catalog`), or add "
        f"the type to {INSTANCE_TYPES_SOURCE} with its sources."
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
    """

    resource: PolicyResource
    direct: list[str] = field(default_factory=list)
    derived: dict[str, str] = field(default_factory=dict)
    instances: dict[str, float] | None = None
    problems: list[str] = field(default_factory=list)

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
        best = 0.0
        for t in self.types:
            it = instance_type(t)
            if it is not None:
                best = max(best, it.gpu_count * self.instances.get(t, 0.0))
        return best

    def uncatalogued(self) -> list[str]:
        """Accelerator-looking types the catalog does not know (their GPU count is unknown)."""
        return sorted(t for t in self.types if instance_type(t) is None and is_accelerator_type(t))


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


def _overrides(overrides: Any, cap: Capacity, where: str, weights: dict[str, float]) -> list[str]:
    types: list[str] = []
    if isinstance(overrides, Unknown):
        cap.problems.append(f"{where} is an unknown value during preview")
        return types
    for i, o in enumerate(as_list(overrides)):
        t = known(o, "instanceType")
        if isinstance(t, Unknown):
            cap.problems.append(f"{where}[{i}].instanceType is an unknown value during preview")
        elif isinstance(t, str) and t:
            types.append(t)
            w = _number(known(o, "weightedCapacity"), f"{where}[{i}].weightedCapacity", cap)
            if w is not None and w > 0:
                weights[t] = min(weights.get(t, w), w)
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


def capacities(resources: Sequence[PolicyResource]) -> list[Capacity]:
    """The :class:`Capacity` of every resource of a stack that can launch or reserve instances."""
    index = StackIndex(resources)
    out = []
    for r in resources:
        cap = capacity_of(r, index)
        if cap is not None:
            out.append(cap)
    return out
