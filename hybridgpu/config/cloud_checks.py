"""The AWS names and EKS access entries a stack will create, checked before any resource is (pure, no Pulumi).

Two checks of the cloud section alone (so they live in :mod:`hybridgpu.config`, docs/architecture.md
rule 1), run by :func:`hybridgpu.stack.checks.check_stack` and so by
``hybridgpu validate``, ``hybridgpu preview`` and the program under ``pulumi up``:

* :func:`aws_name_issues`: every AWS name the program sends, explicit or auto-generated
  (logical name + 8), built by :class:`hybridgpu.config.aws_names.CloudNames` exactly as the
  components build it, within the limit of its resource type (the pulumi-aws auto-name limit
  and the AWS API limit, :data:`hybridgpu.config.aws_names.AWS_NAME_LIMITS`). The cluster
  name's own maximum (:data:`~hybridgpu.config.aws_names.CLUSTER_NAME_MAX_LENGTH`) is derived
  from the same table, so a schema-valid stack passes; this check is what keeps the two from
  drifting apart when a component gains a name.
* :func:`access_entry_issues`: EKS keeps one access entry per IAM principal and cluster
  (CreateAccessEntry answers ``ResourceInUseException`` for a second), so a principal listed
  twice in ``adminPrincipalArns``, or the Karpenter node role (which gets its own ``EC2_LINUX``
  entry) listed as an admin, is refused here. The deployer's principal is known only when the
  program runs (``aws.get_caller_identity``); the program gives it no second entry when it is
  a listed admin (:func:`hybridgpu.config.aws_names.admin_access_principals`).

Both name the stack file, the key and the fix.
"""

from __future__ import annotations

from hybridgpu.config.aws_names import CLUSTER_NAME_KEY, CLUSTER_NAME_MAX_LENGTH, CloudNames, principal_key
from hybridgpu.config.models import CloudConfig
from hybridgpu.errors import Issue

ADMINS_KEY = "hybridgpu:cloud.cluster.adminPrincipalArns"


def aws_name_issues(cloud: CloudConfig, file: str) -> list[Issue]:
    """One issue per AWS name of ``cloud`` over its limit (empty when every name fits).

    Args:
        cloud: the schema-valid cloud section.
        file: the stack file to name.

    Returns:
        Issues at ``hybridgpu:cloud.cluster.name`` (every name derives from it), each naming the
        resource, the name as AWS would see it, its length, the limit and where the limit comes from.
    """
    issues = []
    for name in CloudNames(cloud.cluster.name, fsx=cloud.storage is not None).aws_names():
        if name.fits:
            continue
        how = "auto-named: logical name + 8" if name.naming == "auto" else "explicit"
        issues.append(
            Issue(
                file,
                CLUSTER_NAME_KEY,
                f"the {name.what} ({name.resource_type}, {how}) would be named {name.shown!r}: {name.length} characters, "
                f"over the limit of {name.limit} ({name.source})",
                f"shorten `{CLUSTER_NAME_KEY}` to at most {CLUSTER_NAME_MAX_LENGTH} characters",
                code="aws-name-length",
            )
        )
    return issues


def access_entry_issues(cloud: CloudConfig, file: str) -> list[Issue]:
    """Access entries that EKS would refuse as a second entry of one principal.

    Args:
        cloud: the schema-valid cloud section.
        file: the stack file to name.

    Returns:
        An issue per repeated ``adminPrincipalArns`` entry (compared as IAM compares names,
        ignoring case) and per entry that is the Karpenter node role of this cluster.
    """
    issues = []
    seen: dict[str, int] = {}
    node_role = CloudNames(cloud.cluster.name).karpenter_node_role
    for i, arn in enumerate(cloud.cluster.admin_principal_arns):
        key = f"{ADMINS_KEY}[{i}]"
        first = seen.setdefault(principal_key(arn), i)
        if first != i:
            issues.append(
                Issue(
                    file,
                    key,
                    f"{arn} is already entry {first}: EKS keeps one access entry per principal, so a second one fails with ResourceInUseException",
                    "list each IAM role or user once",
                    code="duplicate-access-entry",
                )
            )
        if principal_key(arn).endswith(f":role/{node_role}".lower()):
            issues.append(
                Issue(
                    file,
                    key,
                    f"{arn} is the Karpenter node role, which gets its own EC2_LINUX access entry; a cluster-admin entry for it would be a second one",
                    "remove it from `adminPrincipalArns` (nodes must not be cluster admins)",
                    code="duplicate-access-entry",
                )
            )
    return issues
