"""EKS cluster names across the stacks of one project.

EKS cluster names are unique per AWS account and region (``CreateCluster`` answers
``ResourceInUseException`` for a name already in use there; Amazon EKS API Reference,
"CreateCluster", read 2026-11-26). Two stacks of a project that would create the same cluster
name in the same region both validate on their own, and the second ``pulumi up`` fails. This
module reads the project's stack files (without validating them: each stack's own ``validate``
reports its problems) and answers:

* :func:`cluster_claims`: which stack would create which EKS cluster, where;
* :func:`cluster_name_clashes`: the warnings for one stack (``hybridgpu validate`` prints them);
* :func:`unused_cluster_name`: a name no other stack uses there, and :func:`unused_vpc_cidr`, a VPC
  range no other stack uses (``hybridgpu init``).

The region is the stack's ``aws:region``. The account is not in a stack file unless the stack pins
it with the AWS provider's ``aws:allowedAccountIds``: two stacks are taken to share an account
unless both pin accounts and no account is in both lists.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybridgpu.config.aws_names import CLUSTER_NAME_MAX_LENGTH
from hybridgpu.errors import HybridGpuError
from hybridgpu.stack.files import list_stacks, read_stack_file, stack_config_dir

__all__ = ["ClusterClaim", "claim_of", "cluster_claims", "cluster_name_clashes", "same_account", "unused_cluster_name", "unused_vpc_cidr"]


@dataclass(frozen=True)
class ClusterClaim:
    """The EKS cluster one stack file would create.

    Attributes:
        stack: the stack name.
        file: its stack file, relative to the project root.
        name: ``hybridgpu:cloud.cluster.name``.
        region: ``aws:region`` (None when the stack file sets none).
        accounts: ``aws:allowedAccountIds`` as strings, or None when not pinned.
    """

    stack: str
    file: str
    name: str
    region: str | None
    accounts: frozenset[str] | None


def _accounts(value: Any) -> frozenset[str] | None:
    if isinstance(value, str):  # the Pulumi runtime's JSON spelling of a list
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = [value]
    if isinstance(value, list) and value:
        return frozenset(str(v) for v in value)
    return None


def _cloud_sections(root: Path) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """``(stack, file, all values, hybridgpu:cloud)`` of each readable stack file with a cloud mapping, in stack-name order."""
    out = []
    for stack in list_stacks(root):
        try:
            values = read_stack_file(stack_config_dir(root) / f"Pulumi.{stack}.yaml", root=root)
        except HybridGpuError:
            continue  # `hybridgpu validate` of that stack names the problem
        cloud = values.values.get("hybridgpu:cloud")
        if isinstance(cloud, str):
            try:
                cloud = json.loads(cloud)
            except json.JSONDecodeError:
                continue
        if isinstance(cloud, dict):
            out.append((stack, values.file, values.values, cloud))
    return out


def cluster_claims(root: Path) -> list[ClusterClaim]:
    """The EKS clusters the project's stacks would create, in stack-name order.

    Args:
        root: the project root.

    Returns:
        One claim per stack file with a ``hybridgpu:cloud.cluster.name``; stack files that cannot be
        read are left out (``hybridgpu validate`` of that stack names the problem).
    """
    claims = []
    for stack, file, values, cloud in _cloud_sections(root):
        cluster = cloud.get("cluster")
        name = cluster.get("name") if isinstance(cluster, dict) else None
        if not isinstance(name, str) or not name:
            continue
        region = values.get("aws:region")
        claims.append(ClusterClaim(stack, file, name, region if isinstance(region, str) else None, _accounts(values.get("aws:allowedAccountIds"))))
    return claims


def same_account(a: frozenset[str] | None, b: frozenset[str] | None) -> bool:
    """Whether two stacks may deploy to the same account: yes unless both pin accounts and share none."""
    return a is None or b is None or bool(a & b)


def claim_of(root: Path, name: str, region: str | None, accounts: frozenset[str] | None = None) -> ClusterClaim | None:
    """The first stack of the project (in name order) that creates EKS cluster ``name`` in ``region`` in an
    account that may be ``accounts`` (see :func:`same_account`), or None when no stack does."""
    return next((c for c in cluster_claims(root) if c.name == name and c.region == region and same_account(accounts, c.accounts)), None)


def cluster_name_clashes(root: Path, stack: str) -> list[str]:
    """Warnings for ``stack``: each other stack of the project that would create an EKS cluster of the
    same name in the same region (and possibly the same account).

    Args:
        root: the project root.
        stack: the stack name.

    Returns:
        One message per clash, naming both stack files, the cluster, the region and the fix; empty when
        the stack creates no EKS cluster or its name is unique.
    """
    claims = cluster_claims(root)
    mine = next((c for c in claims if c.stack == stack), None)
    if mine is None:
        return []
    warnings = []
    for other in claims:
        if other.stack == stack or other.name != mine.name or other.region != mine.region:
            continue
        if not same_account(mine.accounts, other.accounts):
            continue
        where = f"region {mine.region}" if mine.region else "the same region (no aws:region)"
        warnings.append(
            f"{mine.file} and {other.file} both create the EKS cluster `{mine.name}` in {where}; EKS cluster names "
            f"are unique per account and region, so the second `pulumi up` fails. Fix: give one of them another "
            f"`hybridgpu:cloud.cluster.name`, or, if they deploy to different AWS accounts, pin each with `aws:allowedAccountIds`"
        )
    return warnings


def unused_cluster_name(root: Path, base: str, region: str | None, accounts: frozenset[str] | None = None) -> str:
    """``base``, or ``base-2``, ``base-3`` ...: the first that no stack of the project uses as its EKS cluster
    name in ``region`` (and a possibly shared account), cut to :data:`CLUSTER_NAME_MAX_LENGTH` characters.

    Args:
        root: the project root.
        base: the wanted name (a valid cluster name).
        region: the new stack's ``aws:region``.
        accounts: the new stack's ``aws:allowedAccountIds``, if pinned.

    Returns:
        A cluster name unique in the project for that region and account.
    """
    taken = {c.name for c in cluster_claims(root) if c.region == region and same_account(accounts, c.accounts)}
    base = base[:CLUSTER_NAME_MAX_LENGTH].rstrip("-")
    n = 1
    name = base
    while name in taken:
        n += 1
        suffix = f"-{n}"
        name = base[: CLUSTER_NAME_MAX_LENGTH - len(suffix)].rstrip("-") + suffix
    return name


def unused_vpc_cidr(root: Path) -> str:
    """The first ``10.N.0.0/16`` (N from 64 up) that overlaps no VPC CIDR another stack of the project creates
    (``network.new.cidr``) or names (``network.existing.cidr``), so the VPCs can later be peered or routed;
    ``10.64.0.0/16`` when every one overlaps.

    Args:
        root: the project root.
    """
    taken = []
    for _, _, _, cloud in _cloud_sections(root):
        network = cloud.get("network")
        for kind in ("new", "existing"):
            section = network.get(kind) if isinstance(network, dict) else None
            try:
                taken.append(ipaddress.IPv4Network(str(section.get("cidr")) if isinstance(section, dict) else ""))
            except ValueError:
                continue
    for n in range(64, 256):
        candidate = ipaddress.IPv4Network(f"10.{n}.0.0/16")
        if not any(candidate.overlaps(t) for t in taken):
            return str(candidate)
    return "10.64.0.0/16"
