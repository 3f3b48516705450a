"""Where in a stack file a resource comes from: the config key path of the entry that made it (pure, no Pulumi).

hybridgpu's components register resources from the stack's config: a Karpenter NodePool from
``hybridgpu:cloud.nodePools[i]``, an EC2NodeClass from ``hybridgpu:cloud.nodeClasses[i]``, the EKS
cluster from ``hybridgpu:cloud.cluster``. A policy violation on such a resource is fixed in the stack
file, so ``hybridgpu check`` names that key path and its line (:func:`violation_key`, with
:func:`hybridgpu.stack.files.config_key_line`), in the table, the JSON and the GitHub annotations.

The key path is the entry's, refined by the policy to the field it checks when that field is set
in the file (``nodepool-gpu-limit`` -> ``.gpuLimit``); a violation of the whole stack gets the
section its policy reads (``stack-gpu-ceiling`` -> ``hybridgpu:cloud.nodePools``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hybridgpu.config.keys import FIELD_TO_KEY, PROJECT
from hybridgpu.config.models import StackConfig

__all__ = ["resource_key", "violation_key"]

_NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
_NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
_CLOUD = FIELD_TO_KEY["cloud"]
_KEY_TO_ALIAS = {key: alias for alias, key in FIELD_TO_KEY.items()}
_TAG_POLICIES = ("required-cost-tags", "ec2nodeclass-cost-tags")

#: Policy -> the field (camelCase, as in the stack file) of the entry it checks; the first that the
#: file sets is named (none set: the entry itself).
POLICY_FIELDS: dict[str, tuple[str, ...]] = {
    "nodepool-gpu-limit": ("gpuLimit",),
    "burst-budget": ("gpuLimit",),
    "nodepool-instance-bounds": ("instanceTypes", "instanceFamilies", "gpuNames", "gpuCounts"),
    "gpu-instance-size": ("instanceTypes", "instanceFamilies", "gpuNames", "gpuCounts"),
    "ami-alias-pinned": ("amiAlias",),
    "ec2nodeclass-cost-tags": ("tags",),
    "encrypted-volumes": ("kmsKeyId",),
    "imdsv2-required": ("httpPutResponseHopLimit",),
    "eks-endpoint-private": ("endpoint",),
}

#: Policy -> the key path a violation of the whole stack (or of a resource no entry made) is fixed at.
POLICY_SECTIONS: dict[str, str] = {
    "required-cost-tags": f"{PROJECT}:tags",
    "ec2nodeclass-cost-tags": f"{PROJECT}:tags",
    "stack-gpu-ceiling": f"{_CLOUD}.nodePools",
    "burst-budget": f"{PROJECT}:burst",
    "multikueue-kubeconfig": f"{PROJECT}:burst",
    "gpu-repair-coverage": f"{_CLOUD}.karpenter.nodeRepair",
    "mig-profiles": f"{PROJECT}:nvidia",
    "helm-values-capacity": f"{PROJECT}:nvidia",
    "onprem-host-owner": f"{PROJECT}:onprem.inventory",
    "kubeadm-ca-verification": f"{PROJECT}:onprem.inventory",
}


def _metadata_name(inputs: Mapping[str, Any]) -> str | None:
    meta = inputs.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else None


def resource_key(config: StackConfig, type_token: str, inputs: Mapping[str, Any]) -> str | None:
    """The key path of the stack-file entry that made a resource, or None when no entry did.

    Args:
        config: the validated stack config the program ran with.
        type_token: the resource's type, e.g. ``kubernetes:karpenter.sh/v1:NodePool``.
        inputs: its inputs as registered (a Kubernetes object's ``metadata.name`` names the entry).

    Returns:
        ``hybridgpu:cloud.nodePools[<i>]`` (by the NodePool's name), ``hybridgpu:cloud.nodeClasses[<i>]``,
        ``hybridgpu:cloud.cluster`` (the EKS cluster), ``hybridgpu:cloud.systemNodeGroup`` (its node
        group); None otherwise.
    """
    cloud = config.cloud
    if cloud is None:
        return None
    if type_token in (_NODEPOOL, _NODECLASS):
        name = _metadata_name(inputs)
        names = [p.name for p in cloud.node_pools] if type_token == _NODEPOOL else [c.name for c in cloud.node_classes]
        field = "nodePools" if type_token == _NODEPOOL else "nodeClasses"
        return f"{_CLOUD}.{field}[{names.index(name)}]" if name in names else None
    if type_token == "aws:eks/cluster:Cluster":
        return f"{_CLOUD}.cluster"
    if type_token == "aws:eks/nodeGroup:NodeGroup":
        return f"{_CLOUD}.systemNodeGroup"
    return None


def _entry(config: StackConfig, key: str) -> Any:
    """The model at ``key`` (one of :func:`resource_key`'s answers), or None."""
    cloud = config.cloud
    if cloud is None:
        return None
    for field, entries in (("nodePools", cloud.node_pools), ("nodeClasses", cloud.node_classes)):
        prefix = f"{_CLOUD}.{field}["
        if key.startswith(prefix):
            return entries[int(key[len(prefix) : -1])]
    if key == f"{_CLOUD}.cluster":
        return cloud.cluster
    return None


def _set_aliases(model: Any) -> set[str]:
    """The camelCase names of the fields the stack file set on ``model``."""
    fields = type(model).model_fields
    return {fields[name].alias or name for name in model.model_fields_set}


def violation_key(config: StackConfig, policy: str, resource: str | None) -> str | None:
    """The key path a policy violation is fixed at.

    Args:
        config: the validated stack config.
        policy: the policy's name.
        resource: :func:`resource_key` of the violating resource, or None (the stack, or a resource
            no entry made).

    Returns:
        The entry's key path refined to the field the policy checks when the file sets it
        (:data:`POLICY_FIELDS`), else the entry's; without an entry, the section the policy reads
        (:data:`POLICY_SECTIONS`) when the stack has it; None when nothing in the file is to blame.
    """
    if resource is not None:
        entry = _entry(config, resource)
        if entry is not None:
            present = _set_aliases(entry)
            for field in POLICY_FIELDS.get(policy, ()):
                if field in present:
                    return f"{resource}.{field}"
        if policy in _TAG_POLICIES:  # the stack's cost tags reach every resource: fixed there
            return _section(config, POLICY_SECTIONS[policy]) or resource
        return resource
    return _section(config, POLICY_SECTIONS.get(policy))


def _section(config: StackConfig, section: str | None) -> str | None:
    """``section`` when the stack file sets its top-level key, else None."""
    if section is None:
        return None
    alias = _KEY_TO_ALIAS.get(section.split(".", 1)[0])
    return section if alias is not None and alias in _set_aliases(config) else None
