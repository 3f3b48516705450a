"""The policies of the hybridgpu pack: name, group, description, validator, settings, enforcement.

``policies/__main__.py`` builds the ``pulumi_policy`` pack from :data:`POLICIES`; the offline
check, the docs and the tests read the same list, so a policy exists in one place.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from hybridgpu.errors import Issue, issues_from_validation
from hybridgpu.k8s import DEFAULT_COST_KEYS
from hybridgpu.policy import efa, oversized, repair, safety, untagged
from hybridgpu.policy.base import CONFIGMAP, EC2NODECLASS_TYPES, NODEPOOL_TYPES, ONPREM_HOST_TYPES, PolicyResource, PolicySettings
from hybridgpu.policy.capacity import INSTANCE, LAUNCH_CONFIGURATION, LAUNCH_TEMPLATE, SPOT_INSTANCE

#: Name of the pack (PulumiPolicy.yaml and the analyzer's reports).
PACK_NAME = "hybridgpu"


@dataclass(frozen=True)
class PolicySpec:
    """One policy of the pack.

    Attributes:
        name: policy name (kebab-case), the key of its ``--policy-pack-config`` entry.
        group: ``untagged``, ``oversized`` or ``safety``.
        kind: ``resource`` (one resource at a time, Pulumi's Analyze) or ``stack`` (every
            resource at once, AnalyzeStack).
        description: one line: what it blocks.
        why: why it matters (docs).
        validator: ``(resource, settings) -> messages`` or ``(resources, settings) -> (resource|None, message)``.
        settings: the pydantic settings model (its JSON schema is the policy's config schema).
        enforcement: default level: ``mandatory`` or ``advisory``.
        types: type-token prefixes of the resources a resource policy reads (empty: every
            type); the pack skips other resources before parsing settings (a test proves the
            validator yields nothing for them).
    """

    name: str
    group: Literal["untagged", "oversized", "safety"]
    kind: Literal["resource", "stack"]
    description: str
    why: str
    validator: Callable[..., Iterable[Any]]
    settings: type[PolicySettings]
    enforcement: Literal["mandatory", "advisory"] = "mandatory"
    types: tuple[str, ...] = ()

    def applies(self, resource_type: str) -> bool:
        """True when the policy reads resources of ``resource_type``."""
        return not self.types or resource_type.startswith(self.types)

    def parse_settings(self, raw: Mapping[str, Any] | None) -> PolicySettings:
        """Validate this policy's config (defaults filled in).

        Args:
            raw: the policy's entry of ``--policy-pack-config`` without ``enforcementLevel``
                (None: the defaults).

        Returns:
            The validated settings.

        Raises:
            PolicyConfigError: the config does not match the settings model; names the policy,
                the field and the fix of each problem (its ``issues``).
        """
        try:
            return self.settings.model_validate(dict(raw or {}))
        except ValidationError as exc:
            issues = issues_from_validation(exc, file=f"policy {self.name}", root=self.settings, reference=POLICY_REFERENCE)
            raise PolicyConfigError(self.name, issues) from None

    def run_resource(self, resource: PolicyResource, settings: PolicySettings) -> list[str]:
        """Messages of a resource policy for one resource ([] when it passes or is waived)."""
        if settings.exempt(resource):
            return []
        return list(self.validator(resource, settings))

    def run_stack(self, resources: Sequence[PolicyResource], settings: PolicySettings) -> list[tuple[PolicyResource | None, str]]:
        """Findings of a stack policy: ``(resource or None for the stack, message)``."""
        return list(self.validator(resources, settings))

    def schema_problems(self, raw: Mapping[str, Any] | None) -> list[tuple[str, str]]:
        """Where a config entry breaks the pack's published config schema, as the Pulumi CLI checks it.

        The CLI validates each policy's properties (defaults filled in, ``enforcementLevel`` removed)
        against ``{"type": "object", "properties": <configSchema>}`` with gojsonschema and refuses
        the run on any error (pulumi/pulumi ``pkg/resource/analyzer/config.go``,
        ``validatePolicyConfig`` / ``convertSchema``). JSON Schema types are strict where the
        settings model is lax: ``"64"`` is not an integer.

        Args:
            raw: the policy's properties (without ``enforcementLevel``); None: none.

        Returns:
            ``(path of the setting, what is wrong and how to write it)`` per problem, sorted; [] when valid.
        """
        problems = []
        for err in _schema_validator(self).iter_errors(dict(raw or {})):
            deeper = [e for e in err.context or () if len(e.absolute_path) > len(err.absolute_path)]
            if deeper:  # an anyOf branch got further in: report where it broke ({"default": "8"} -> .default)
                err = max(deeper, key=lambda e: len(e.absolute_path))
            path = ".".join(str(p) for p in err.absolute_path) or "(top)"
            problems.append((path, _schema_message(err.instance, err.schema)))
        return sorted(set(problems))

    def config_schema(self) -> dict[str, Any]:
        """JSON-schema ``properties`` of the settings (``$ref``s inlined, as Pulumi's config schema wants)."""
        schema = self.settings.model_json_schema(by_alias=True)
        defs = schema.get("$defs", {})
        return {k: _inline(v, defs) for k, v in schema.get("properties", {}).items()}


#: What documents every policy's settings (named in fix hints).
POLICY_REFERENCE = "docs/policies.md"


class PolicyConfigError(ValueError):
    """A policy's ``--policy-pack-config`` entry is invalid (names the policy, the field and the fix).

    Args:
        policy: the policy's name.
        issues: the problems (``file`` is ``policy <name>``, ``key`` the setting's path).

    Attributes:
        policy, issues: as given.
    """

    def __init__(self, policy: str, issues: list[Issue]):
        self.policy = policy
        self.issues = list(issues)
        problems = "; ".join(f"{i.key or '(top)'}: {i.message} (fix: {i.fix})" for i in self.issues)
        super().__init__(f"policy config of {policy!r} is invalid: {problems}")


@functools.lru_cache(maxsize=None)
def _schema_validator(spec: PolicySpec) -> Any:
    """The JSON-schema validator of a policy's config, as the Pulumi CLI builds it (``convertSchema``:
    an object with the published properties); built once per policy (schema generation is slow)."""
    import jsonschema  # a runtime dependency; imported here so the validators' import stays light

    return jsonschema.Draft7Validator({"type": "object", "properties": spec.config_schema()})


def _schema_types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a schema node accepts (through ``anyOf``), e.g. ``["integer", "object"]``."""
    kinds = [schema["type"]] if isinstance(schema.get("type"), str) else list(schema.get("type") or [])
    for sub in schema.get("anyOf", []):
        kinds += _schema_types(sub)
    return [k for k in dict.fromkeys(kinds) if k != "null"]


def _schema_message(value: Any, schema: Mapping[str, Any]) -> str:
    """What is wrong with ``value`` against one schema node, with the way to write it."""
    kinds = _schema_types(schema)
    shown = json.dumps(value)[:80]
    if isinstance(value, str) and {"integer", "number"} & set(kinds):
        try:
            number = float(value)
        except ValueError:
            number = None
        if number is not None:
            as_json = json.dumps(int(number) if number.is_integer() else number)
            return f"{shown} is a string where the pack's config schema wants a number: write {as_json}, without quotes (the Pulumi CLI refuses the string)"
    if kinds:
        return f"{shown} is not of the types the pack's config schema accepts ({' or '.join(kinds)})"
    return f"{shown} does not match the pack's config schema"


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].split("/")[-1]], defs)
        return {k: _inline(v, defs) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


POLICIES: tuple[PolicySpec, ...] = (
    PolicySpec(
        "required-cost-tags", "untagged", "resource",
        "Taggable AWS resources carry the required cost tags (provider default tags count).",
        "Spend nobody can attribute is spend nobody owns; AWS Cost Explorer and CUR group by these tags.",
        untagged.required_cost_tags, untagged.CostTagSettings,
        types=("aws:",),
    ),
    PolicySpec(
        "ec2nodeclass-cost-tags", "untagged", "resource",
        "Karpenter EC2NodeClasses tag the instances they launch with the required cost tags.",
        "Provider default tags never reach instances launched by Karpenter; only EC2NodeClass spec.tags does.",
        untagged.ec2nodeclass_cost_tags, untagged.CostTagSettings,
        types=EC2NODECLASS_TYPES,
    ),
    PolicySpec(
        "gpu-workload-cost-labels", "untagged", "resource",
        f"Pods that request GPUs carry the cost-attribution labels ({', '.join(DEFAULT_COST_KEYS)}).",
        "GPU cost tools (OpenCost, Kubecost) attribute node cost to pods by their labels.",
        untagged.gpu_workload_cost_labels, untagged.WorkloadLabelSettings,
        types=("kubernetes:",),
    ),
    PolicySpec(
        "onprem-host-owner", "untagged", "stack",
        "Every on-prem host names an owner.",
        "Owned GPUs cost money whether used or not; an owner is who answers for idle or broken hosts.",
        untagged.onprem_host_owner, PolicySettings,
    ),
    PolicySpec(
        "nodepool-gpu-limit", "oversized", "resource",
        "Every Karpenter NodePool sets an nvidia.com/gpu limit within the allowed maximum.",
        "A NodePool without a GPU limit can launch GPU instances until the account's quota stops it.",
        oversized.nodepool_gpu_limit, oversized.CapacitySettings,
        types=NODEPOOL_TYPES,
    ),
    PolicySpec(
        "nodepool-instance-bounds", "oversized", "resource",
        "GPU NodePools bound the instance types and sizes they may pick, within the allowed families.",
        "Without a size bound Karpenter may pick p5.48xlarge (8 x H100) for a one-GPU pod.",
        oversized.nodepool_instance_bounds, oversized.CapacitySettings,
        types=NODEPOOL_TYPES,
    ),
    PolicySpec(
        "gpu-instance-size", "oversized", "stack",
        "Every AWS resource that launches or reserves GPU instances (instances, node groups, Auto Scaling groups, "
        "Spot Fleets, EC2 Fleets, capacity reservations and blocks, launch templates, Batch compute environments, "
        "SageMaker endpoints, notebooks and HyperPod clusters, EMR clusters) stays within allowed families, sizes and counts.",
        "Capacity outside Karpenter bypasses NodePool limits; the same bounds must hold there, wherever the instance type is set.",
        oversized.gpu_instance_size, oversized.CapacitySettings,
    ),
    PolicySpec(
        "gpu-workload-requests", "oversized", "resource",
        "Workloads request no more GPUs than allowed and set GPU requests equal to limits; a job's GPUs are its Kueue pod sets' "
        "(Job, JobSet replicatedJobs, TrainJob numNodes x resourcesPerNode, PyTorchJob replica specs, Ray worker groups at "
        "maxReplicas when they autoscale, which must set it).",
        "One oversized job can hold a whole NodePool's GPUs; extended resources require limits; an autoscaled Ray worker "
        "group without maxReplicas may grow to 2147483647 pods.",
        oversized.gpu_workload_requests, oversized.WorkloadSettings,
        types=("kubernetes:",),
    ),
    PolicySpec(
        "efa-workload-requests", "safety", "resource",
        "Pods requesting vpc.amazonaws.com/efa ask for whole devices, no more than a node has, with requests equal to limits, "
        "and select the EFA NodePools' nodes (hybridgpu.io/efa=true).",
        "Karpenter may launch an EFA pod on a NodePool without EFA, where no EFA device plugin runs: the pod stays Pending and the node idles.",
        efa.efa_workload_requests, efa.EfaWorkloadSettings,
        types=("kubernetes:",),
    ),
    PolicySpec(
        "gpu-workload-autoscaling", "oversized", "stack",
        "HPA maxReplicas / KEDA ScaledObject maxReplicaCount times a GPU workload's GPUs per pod stays within the workload bound.",
        "An autoscaler replaces the replica count the workload policy saw; its maximum is what the cluster may be asked for.",
        oversized.gpu_autoscaling, oversized.WorkloadSettings,
    ),
    PolicySpec(
        "helm-values-capacity", "oversized", "resource",
        "Helm releases that pass Karpenter NodePools or GPU requests through values are flagged (the pack cannot see rendered charts).",
        "Objects a chart renders never reach the policy pack, so a NodePool or a GPU job in values bypasses every bound above.",
        oversized.helm_values_capacity, PolicySettings,
        types=oversized.HELM_TYPES,
    ),
    PolicySpec(
        "mig-profiles", "oversized", "resource",
        "MIG layouts and pods use allowed, shareable MIG profiles (no whole-GPU 7g profiles).",
        "A whole-GPU MIG profile loses memory and compute slices to MIG and shares nothing.",
        oversized.mig_profiles, oversized.MigSettings,
        types=("kubernetes:",),
    ),
    PolicySpec(
        "stack-gpu-ceiling", "oversized", "stack",
        "All NodePools and every AWS resource that launches or reserves GPU instances may add no more GPUs per stack than allowed.",
        "Per-pool limits can each be fine while the stack as a whole is not.",
        oversized.stack_gpu_ceiling, oversized.StackCapacitySettings,
    ),
    PolicySpec(
        "burst-budget", "oversized", "stack",
        "The most a stack's NodePools can spend per month at their GPU limits stays within the budget.",
        "GPU limits times price times hours is the bill a runaway queue can run up; it should be a decision.",
        oversized.burst_budget, oversized.BudgetSettings,
    ),
    PolicySpec(
        "imdsv2-required", "safety", "resource",
        "Instances, spot instance requests, launch templates and EC2NodeClasses require IMDSv2 tokens.",
        "IMDSv1 hands the node role's credentials to any SSRF or pod that can reach 169.254.169.254.",
        safety.imdsv2_required, PolicySettings,
        types=(LAUNCH_TEMPLATE, INSTANCE, SPOT_INSTANCE, *EC2NODECLASS_TYPES),
    ),
    PolicySpec(
        "encrypted-volumes", "safety", "resource",
        "EBS volumes (launch templates, EC2NodeClasses, instances, spot instance requests, volumes, node groups) are encrypted.",
        "Checkpoints and datasets on GPU nodes are often the most valuable data in the account.",
        safety.encrypted_volumes, PolicySettings,
        types=(LAUNCH_TEMPLATE, INSTANCE, SPOT_INSTANCE, *EC2NODECLASS_TYPES, "aws:ebs/volume:Volume", "aws:eks/nodeGroup:NodeGroup"),
    ),
    PolicySpec(
        "eks-endpoint-private", "safety", "resource",
        "EKS API endpoints are not open to 0.0.0.0/0.",
        "A public API endpoint exposes the cluster to credential stuffing and API-server CVEs.",
        safety.eks_endpoint_private, PolicySettings,
        types=("aws:eks/cluster:Cluster",),
    ),
    PolicySpec(
        "ami-alias-pinned", "safety", "resource",
        "Production EC2NodeClasses pin an AMI version instead of @latest.",
        "@latest rolls every GPU node to a new AMI (driver, kernel) through drift without review.",
        safety.ami_alias_pinned, safety.AmiSettings,
        types=EC2NODECLASS_TYPES,
    ),
    PolicySpec(
        "kubeadm-ca-verification", "safety", "resource",
        "kubeadm joins verify the cluster CA (no unsafeSkipCAVerification), in commands, ConfigMaps and EC2 user data.",
        "Without CA pinning a joining node trusts any API server that answers, and hands it its credentials.",
        safety.kubeadm_ca_verification, PolicySettings,
        types=(*ONPREM_HOST_TYPES, "command:", CONFIGMAP, INSTANCE, SPOT_INSTANCE, LAUNCH_TEMPLATE, LAUNCH_CONFIGURATION),
    ),
    PolicySpec(
        "multikueue-kubeconfig", "safety", "stack",
        "MultiKueue worker kubeconfigs are exec-free, with inline token and CA data.",
        "The MultiKueue manager refuses exec plugins and file paths; insecure TLS would leak the worker token.",
        safety.multikueue_kubeconfig, safety.MultiKueueSettings,
    ),
    PolicySpec(
        "gpu-repair-coverage", "safety", "stack",
        "GPU NodePools, node groups and on-prem GPU hosts have GPU health detection and node repair.",
        "GPUs are the first cause of lost training work (Llama 3: 58.7% of 419 interruptions); an unrepaired failed GPU holds its jobs and quota.",
        repair.gpu_repair_coverage, repair.RepairSettings,
        enforcement="advisory",
    ),
)

BY_NAME: dict[str, PolicySpec] = {p.name: p for p in POLICIES}
