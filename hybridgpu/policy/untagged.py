"""Policies of the ``untagged`` group: spend and hosts nobody can attribute (pure validators and their settings).

* ``required-cost-tags``: :func:`required_cost_tags` (taggable AWS resources, counting the
  provider's default tags; Auto Scaling groups and GPU launch templates tag what they launch);
* ``ec2nodeclass-cost-tags``: :func:`ec2nodeclass_cost_tags` (Karpenter's instances);
* ``gpu-workload-cost-labels``: :func:`gpu_workload_cost_labels` (pods that request GPUs);
* ``onprem-host-owner``: :func:`onprem_host_owner` (every on-prem host names an owner).

Each validator takes a :class:`~hybridgpu.policy.base.PolicyResource` (or the stack's resources)
and its settings, and yields messages that name the resource and say how to fix it;
:data:`hybridgpu.policy.registry.POLICIES` lists them with their names and enforcement.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from hybridgpu.k8s import DEFAULT_COST_KEYS
from hybridgpu.policy import capacity as cap_mod
from hybridgpu.policy.base import (
    EC2NODECLASS_TYPES,
    KUBERNETES_BUNDLES,
    ONPREM_HOST_TYPES,
    Findings,
    PerStackList,
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
)
from hybridgpu.policy.capacity import is_gpu_type as _is_gpu_type
from hybridgpu.policy.workloads import pod_templates


class CostTagSettings(PolicySettings):
    """Settings of ``required-cost-tags`` and ``ec2nodeclass-cost-tags``."""

    required_tag_keys: PerStackList = Field(
        default_factory=lambda: list(DEFAULT_COST_KEYS),
        description="Tag keys every taggable AWS resource must carry (after merging the provider's default tags); "
        "a list, or per stack {\"default\": [...], \"<stack glob>\": [...]}. "
        f"Default: {', '.join(DEFAULT_COST_KEYS)}.",
    )


def _tags_of(value: Any, keys: Sequence[str] | None = None) -> dict[str, Any]:
    """Tags as a dict, from either a map or a list of ``{key, value}`` (autoscaling groups).

    With ``keys``, only those tags are read, so a tag unknown during preview that the policy
    does not need (a computed ``Name``) is never touched; a needed one comes back as
    :class:`~hybridgpu.policy.base.Unknown`.
    """
    if isinstance(value, Mapping):
        if keys is None:
            return {str(k): known(value, k) for k in value}
        return {str(k): v for k in keys if (v := known(value, k)) is not None}
    tags: dict[str, Any] = {}
    for i, item in enumerate(as_list(value)):
        key = known(item, "key")
        if isinstance(key, str) and (keys is None or key in keys):
            tags[key] = known(item, "value")
        elif isinstance(key, Unknown) and keys is not None:
            tags.setdefault(f"?{i}", key)
    return tags


def _has_text(value: Any) -> bool:
    """A tag value counts when it holds non-whitespace text (or is unknown: see the callers)."""
    return isinstance(value, str) and bool(value.strip())


def _missing_tags(tags: Mapping[str, Any], required: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(missing or blank keys, keys whose value is unknown during preview)``."""
    missing = [k for k in required if not isinstance(tags.get(k), Unknown) and not _has_text(tags.get(k))]
    unknown = [k for k in required if isinstance(tags.get(k), Unknown)]
    return missing, unknown


#: Launch-template tagSpecifications resource types whose tags reach what a GPU instance
#: launches: the instance and its EBS volumes. pulumi-aws 7.51.1 ``ec2/launch_template.py``
#: (tag_specifications: "Default tags are currently not propagated to ASG created resources"),
#: read 2026-11-24.
_LAUNCH_TAG_TARGETS = ("instance", "volume")
ASG_TYPE = cap_mod.ASG


def _provider_config(props: Mapping[str, Any]) -> dict[str, Any]:
    """Provider inputs with JSON-encoded values decoded: provider SDKs send non-string settings
    as JSON strings (pulumi_aws 7.x ``provider.py`` wraps ``default_tags`` in
    ``pulumi.runtime.to_json``; read 2026-11-22)."""
    out: dict[str, Any] = {}
    for key, value in props.items():
        if isinstance(value, str) and value[:1] in "{[":
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key] = value
    return out


def required_cost_tags(res: PolicyResource, cfg: CostTagSettings) -> Findings:
    """Taggable AWS resources carry the cost tags, counting the provider's ``defaultTags``.

    Whether a type takes tags is ``res.taggable`` (the pack reads it from the installed
    pulumi-aws SDK); when unknown, a resource whose inputs carry ``tags`` is checked.

    Yields:
        One message per resource missing keys (empty values count as missing).
    """
    if not res.type.startswith("aws:") or res.type.startswith("pulumi:providers:"):
        return
    if res.taggable is False or (res.taggable is None and "tags" not in res.props):
        return
    required = list(for_stack(cfg.required_tag_keys, res.stack))
    if res.type == ASG_TYPE:
        yield from _asg_tags(res, required)
        return
    defaults = _tags_of(dig(_provider_config(res.provider_props or {}), "defaultTags", "tags") or {}, required)
    tags = {**defaults, **_tags_of(known(res.props, "tags"), required)}
    missing, unknown = _missing_tags(tags, required)
    if missing:
        yield (
            f"{res.label} has no cost tag {names(missing)} (empty or whitespace-only values count as missing). "
            + fix_for(
                res,
                "Fix: add them to hybridgpu:tags in the stack file, which every AWS resource gets through the "
                "provider's defaultTags, or to the resource's tags.",
                "Fix: add them to aws:defaultTags in the stack config (or the default_tags of the resource's AWS "
                "provider), which every taggable AWS resource gets, or to the resource's own tags.",
            )
        )
    if unknown:
        yield (
            f"{res.label}: cost tag {names(unknown)} is an unknown value during preview, so the policy cannot see it "
            "(it fails closed). Fix: give the tag a literal or config value."
        )
    if res.type == cap_mod.LAUNCH_TEMPLATE and _is_gpu_type(str(known(res.props, "instanceType") or "")):
        yield from _launch_tag_specs(res, required)
    if res.type == cap_mod.BATCH_COMPUTE_ENVIRONMENT:
        yield from _batch_instance_tags(res, required)


def _batch_instance_tags(res: PolicyResource, required: list[str]) -> Findings:
    """A Batch compute environment tags the instances it launches through ``computeResources.tags``
    ("Key-value pair tags to be applied to resources that are launched in the compute environment",
    not applicable to Fargate: pulumi-aws 7.51.1 ``batch/_inputs.py`` ComputeEnvironmentComputeResourcesArgs);
    the provider's default tags reach only the environment's own ``tags``."""
    kind = known(res.props, "computeResources", "type")
    if known(res.props, "computeResources") is None or (isinstance(kind, str) and kind.upper().startswith("FARGATE")):
        return
    tags = _tags_of(known(res.props, "computeResources", "tags") or {}, required)
    missing, unknown = _missing_tags(tags, required)
    if missing or unknown:
        yield (
            f"{res.label} launches instances without the cost tag {names(missing + unknown)} in computeResources.tags: "
            "provider defaultTags reach only the compute environment itself. Fix: set computeResources.tags with the cost tags."
        )


def _asg_tags(res: PolicyResource, required: list[str]) -> Findings:
    """An Auto Scaling group's own ``tags`` with ``propagateAtLaunch: true`` are what its instances
    get; the provider's defaultTags do not apply to it (pulumi-aws ``ec2/launch_template.py``,
    tag_specifications; AWS provider docs, "default_tags" known limitation for aws_autoscaling_group)."""
    propagated: dict[str, Any] = {}
    for item in as_list(known(res.props, "tags")):
        key = known(item, "key")
        if key in required and known(item, "propagateAtLaunch") in (True, "true"):
            propagated[str(key)] = known(item, "value")
    missing, unknown = _missing_tags(propagated, required)
    if missing:
        yield (
            f"{res.label} does not tag the instances it launches with {names(missing)}: provider defaultTags never "
            "reach an Auto Scaling group. Fix: add tags=[{key, value, propagateAtLaunch: true}] for each cost tag."
        )
    if unknown:
        yield f"{res.label}: cost tag {names(unknown)} is an unknown value during preview. Fix: give it a literal or config value."


def _launch_tag_specs(res: PolicyResource, required: list[str]) -> Findings:
    """A GPU launch template's ``tagSpecifications`` tag the instance and its volumes."""
    specs = known(res.props, "tagSpecifications")
    by_target: dict[str, dict[str, Any]] = {}
    for spec in as_list(specs):
        target = known(spec, "resourceType")
        if isinstance(target, str):
            by_target.setdefault(target, {}).update(_tags_of(known(spec, "tags"), required))
    for target in _LAUNCH_TAG_TARGETS:
        missing, unknown = _missing_tags(by_target.get(target, {}), required)
        if missing or unknown:
            yield (
                f"{res.label} launches GPU instances whose {target}s carry no cost tag {names(missing + unknown)}: "
                "provider defaultTags do not reach what a launch template launches. Fix: add tagSpecifications "
                f"[{{resourceType: \"{target}\", tags: {{...cost tags}}}}] (for instance and volume)."
            )


def ec2nodeclass_cost_tags(res: PolicyResource, cfg: CostTagSettings) -> Findings:
    """EC2NodeClass ``spec.tags`` carries the cost tags (Karpenter puts them on every instance,
    volume and network interface it launches; provider default tags never reach those)."""
    if res.type not in EC2NODECLASS_TYPES:
        return
    required = list(for_stack(cfg.required_tag_keys, res.stack))
    tags = _tags_of(dig(res.props, "spec", "tags") or {}, required)
    missing, unknown = _missing_tags(tags, required)
    missing += unknown
    if missing:
        yield (
            f"{res.label} sets no spec.tags {names(missing)}: the GPU instances Karpenter launches from it "
            "would carry no cost attribution. "
            + fix_for(
                res,
                "Fix: set them in hybridgpu:tags (hybridgpu copies them into every EC2NodeClass) or in the node class's tags.",
                "Fix: set them in the EC2NodeClass's spec.tags (provider default tags never reach what Karpenter launches).",
            )
        )


class WorkloadLabelSettings(PolicySettings):
    """Settings of ``gpu-workload-cost-labels``."""

    required_labels: PerStackList = Field(
        default_factory=lambda: list(DEFAULT_COST_KEYS),
        description="Labels every pod that requests GPUs must carry (read by cost tools such as OpenCost); "
        f"a list or per stack. Default: {', '.join(DEFAULT_COST_KEYS)}.",
    )


def gpu_workload_cost_labels(res: PolicyResource, cfg: WorkloadLabelSettings) -> Findings:
    """Pods that request ``nvidia.com/gpu`` or ``nvidia.com/mig-*`` carry the cost-attribution labels
    on the pod (template) itself: labels on the Deployment/Job alone do not reach the pods."""
    if not res.type.startswith("kubernetes:") or res.type in KUBERNETES_BUNDLES:
        return
    required = for_stack(cfg.required_labels, res.stack)
    for template in pod_templates(res.props):
        if not template.gpu_limits():
            continue
        missing = [k for k in required if not template.labels.get(k)]
        if missing:
            where = f"{template.path}.metadata.labels" if template.path else "metadata.labels"
            yield (
                f"{res.label} requests GPUs but its pods lack the cost labels {names(missing)}. "
                f"Fix: set them under {where}."
            )


def onprem_host_owner(resources: Sequence[PolicyResource], cfg: PolicySettings) -> StackFindings:
    """Every on-prem host (``hybridgpu:onprem:Host``) names an owner (inventory ``owner``, or the
    site's ``metadata.owner``)."""
    for res in resources:
        if res.type not in ONPREM_HOST_TYPES or cfg.exempt(res):
            continue
        if not str(res.props.get("owner") or "").strip():
            yield res, (
                f"{res.label} (host {res.props.get('hostname', res.name)}) has no owner. Fix: set `owner` on the "
                "host in the inventory, or `metadata.owner` on its Site for every host of the site."
            )
