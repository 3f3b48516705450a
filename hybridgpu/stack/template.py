"""The stack file ``hybridgpu init`` writes (pure: no file is read or written here).

:func:`render_stack` turns a :class:`StackTemplate` (the sections asked for) into the config values
and the text of ``Pulumi.<stack>.yaml``: the required cost tags, then

* ``cloud``: an EKS cluster in a new VPC (two availability zones, one NAT gateway) and one spot GPU
  NodePool of g6 instances capped at 4 GPUs (the dev stack's shape, smaller);
* ``onprem``: a kubeadm cluster from the given inventory files;
* ``nvidia``: the GPU Operator, with the drivers the EKS NVIDIA AMI or the hosts already have.

Sections not asked for are left out. The text is deterministic: the same template gives the same bytes.
Also here: :func:`stack_name_problem` (Pulumi's stack name rule) and :func:`cluster_name_for`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hybridgpu.config.aws_names import CLUSTER_NAME_MAX_LENGTH
from hybridgpu.datafile import ORDERED, dump_yaml

__all__ = ["StackTemplate", "cluster_name_for", "render_stack", "stack_name_problem"]

#: Pulumi's stack name rule: ``tokens.IsName`` (``[A-Za-z_.][A-Za-z0-9_.-]*``) and at most 100 characters
#: (pulumi/pulumi ``sdk/go/common/tokens/names.go`` and ``pkg/backend/diy/store.go`` ``ParseReference``:
#: "stack names are limited to 100 characters and may only contain alphanumeric, hyphens, underscores, or periods").
STACK_NAME_RE = re.compile(r"[A-Za-z_.][A-Za-z0-9_.-]*")
STACK_NAME_MAX_LENGTH = 100


def stack_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a Pulumi stack name (the message names the rule), or None when it can."""
    if "/" in name:
        return f"{name!r} is a qualified stack reference (org/project/stack); give the stack part only, e.g. {name.rsplit('/', 1)[-1]!r}"
    if not name:
        return "the stack name is empty"
    if len(name) > STACK_NAME_MAX_LENGTH:
        return f"{len(name)} characters is too long: Pulumi stack names have at most {STACK_NAME_MAX_LENGTH}"
    if not STACK_NAME_RE.fullmatch(name):
        return (f"{name!r} is not a Pulumi stack name: letters, digits, `-`, `_` and `.` only, "
                "starting with a letter, `_` or `.`")
    return None


def cluster_name_for(stack: str) -> str:
    """The default EKS cluster name of a stack: ``gpu-<stack>``, with the characters a cluster name may not
    hold (``_``, ``.``) turned into ``-`` and cut to :data:`CLUSTER_NAME_MAX_LENGTH` characters."""
    tail = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9-]", "-", stack)).strip("-")
    return f"gpu-{tail}"[:CLUSTER_NAME_MAX_LENGTH].rstrip("-") if tail else "gpu"


@dataclass(frozen=True)
class StackTemplate:
    """What ``hybridgpu init`` asks for.

    Attributes:
        stack: the stack name.
        environment: ``development``, ``staging`` or ``production``.
        tags: cost tags (``hybridgpu:tags``), in the order given.
        region: ``aws:region`` (with ``cloud``).
        cluster_name: the EKS cluster name (with ``cloud``).
        vpc_cidr: the new VPC's CIDR (with ``cloud``).
        cloud: write ``hybridgpu:cloud``.
        onprem: inventory paths for ``hybridgpu:onprem`` (empty: no on-prem section).
        nvidia: write ``hybridgpu:nvidia``.
    """

    stack: str
    environment: str = "development"
    tags: dict[str, str] = field(default_factory=dict)
    region: str | None = None
    cluster_name: str | None = None
    vpc_cidr: str = "10.64.0.0/16"
    cloud: bool = False
    onprem: tuple[str, ...] = ()
    nvidia: bool = False
    burst: str | None = None


def _sections(t: StackTemplate) -> list[tuple[str, str, Any]]:
    """``(comment, key, value)`` per config key, in file order."""
    out: list[tuple[str, str, Any]] = []
    if t.cloud:
        out.append(("The AWS region of the EKS cluster.", "aws:region", t.region))
    out.append(("development, staging or production (production refuses floating AMI\naliases).", "hybridgpu:environment", t.environment))
    out.append(("Cost tags: on every AWS resource and GPU instance\n(docs/config-reference.md).", "hybridgpu:tags", dict(t.tags)))
    if t.cloud:
        region = t.region or ""
        out.append((
            "EKS in a new VPC with one spot GPU NodePool of g6 instances, at most 4 GPUs\n"
            "(docs/cloud.md). The cluster name is unique among this project's stacks in\n"
            "this region. Check the availability zones with\n"
            "`aws ec2 describe-availability-zones --region " + region + "`.",
            "hybridgpu:cloud",
            {
                "cluster": {"name": t.cluster_name},
                "network": {"new": {"cidr": t.vpc_cidr, "availabilityZones": [f"{region}a", f"{region}b"], "natGateways": "single"}},
                "nodePools": [{"name": "gpu-spot", "capacityTypes": ["spot"], "instanceFamilies": ["g6"], "gpuLimit": 4}],
            },
        ))
    if t.onprem:
        out.append((
            "A kubeadm GPU cluster from a bare-metal inventory (docs/onprem.md).",
            "hybridgpu:onprem",
            {"inventory": list(t.onprem)},
        ))
    if t.nvidia:
        nvidia: dict[str, Any] = {"install": "gpu-operator", "driver": "preinstalled"}
        if t.onprem:
            nvidia["migStrategy"] = "mixed"
        out.append(("The NVIDIA layer: the GPU Operator; the drivers are on the AMI or the hosts\nalready (docs/nvidia.md).",
                    "hybridgpu:nvidia", nvidia))
    if t.burst:
        out.append(("The burst plan this stack takes part in; the plan names the stack and its\nrole (docs/bursting.md).",
                    "hybridgpu:burst", {"plan": t.burst}))
    return out


def render_stack(t: StackTemplate) -> tuple[dict[str, Any], str]:
    """The config values and the text of the stack file for ``t``.

    Args:
        t: the sections and values asked for (checked by the caller: stack name, tags, region).

    Returns:
        ``(values, text)``: the namespaced config values (``ns:key`` -> value) and the YAML text that holds
        exactly those values, with a comment above each key.
    """
    values: dict[str, Any] = {}
    lines = [
        f"# Stack `{t.stack}`, written by `hybridgpu init`.",
        f"# Check it with `hybridgpu validate {t.stack}`, preview it offline with",
        f"# `hybridgpu preview {t.stack}`; every key: docs/config-reference.md.",
        "config:",
    ]
    for comment, key, value in _sections(t):
        values[key] = value
        lines.extend(f"  # {c}" for c in comment.splitlines())
        body = dump_yaml({key: value}, ORDERED)
        lines.extend(f"  {line}" for line in body.rstrip("\n").splitlines())
    return values, "\n".join(lines) + "\n"
