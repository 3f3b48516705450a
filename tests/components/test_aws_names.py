"""AWS names, access entries and the Karpenter namespace as the program registers them (offline preview).

The names are read from what the components register, not from :class:`CloudNames`, so these
tests catch a component that names a resource differently from the table the stack check uses:

* every AWS resource type the program registers has a row in ``AWS_NAME_LIMITS``;
* every name that reaches AWS (the explicit name input, or logical name + 8 when the provider
  auto-names it: pulumi-terraform-bridge ``AutoName`` appends ``-`` and 7 random characters and
  fails when that exceeds the provider's limit) is within its limit, for every example stack
  and for the longest cluster name the model allows. On the code before issue 14 the hybrid
  stack's rule ``gpu-burst-manager-karpenter-capacity-reservation-interruption`` + 8 was 69
  characters against pulumi-aws's 64 for ``aws_cloudwatch_event_rule``;
* the names registered are exactly those :meth:`CloudNames.aws_names` lists;
* EKS access entries: one per principal (a deployer that is a listed admin gets no second one);
* a Karpenter namespace other than ``kube-system`` is created before what goes into it.
"""

from __future__ import annotations

import pytest

from hybridgpu.config.aws_names import AUTONAME_SUFFIX_LENGTH, AWS_NAME_LIMITS, CLUSTER_NAME_MAX_LENGTH, CloudNames
from hybridgpu.shell.preview import HybridMocks, run_preview
from tests.helpers import one_record
from tests.helpers.scratch import example_stack, write_stack

CLOUD_STACKS = ("dev", "hybrid", "prod")


@pytest.fixture(scope="module")
def cloud_previews(all_previews):
    """Offline previews of the example stacks with a cloud section (hybrid included; the session's, tests/conftest.py)."""
    return {stack: all_previews[stack] for stack in CLOUD_STACKS}


def _aws_names(result) -> dict[str, tuple[str, str, int]]:
    """``logical name -> (type, name as AWS sees it, length)`` for every registered AWS resource with a name."""
    found = {}
    for record in result.records:
        if not record.custom or not record.type.startswith("aws:"):
            continue
        limit = AWS_NAME_LIMITS[record.type]
        if limit.name_property is None:
            continue
        explicit = record.inputs.get(limit.name_property)
        if explicit is not None:
            found[record.name] = (record.type, explicit, len(explicit))
        else:
            assert limit.autoname_max is not None, f"{record.type} {record.name} has no name and pulumi-aws does not auto-name it"
            found[record.name] = (record.type, record.name + "-" + "x" * 7, len(record.name) + AUTONAME_SUFFIX_LENGTH)
    return found


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_every_registered_aws_type_is_in_the_table(cloud_previews, stack):
    types = {r.type for r in cloud_previews[stack].records if r.custom and r.type.startswith("aws:") and not r.type.startswith("aws:index/")}
    types.discard("pulumi:providers:aws")
    assert types - set(AWS_NAME_LIMITS) == set(), "add the new AWS resource types to hybridgpu/config/aws_names.py"


def _overflows(result) -> list[str]:
    """Registered names over their limit: the API's, and for auto-names pulumi-aws's too."""
    over = []
    for logical, (typ, name, length) in _aws_names(result).items():
        limit = AWS_NAME_LIMITS[typ]
        auto = logical + "-xxxxxxx" == name
        bound = min(n for n in (limit.api_max, limit.autoname_max if auto else None) if n is not None)
        if length > bound:
            over.append(f"{typ} {logical}: {name!r} is {length} > {bound}")
    return over


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_every_registered_name_fits_its_limit(cloud_previews, stack):
    assert _overflows(cloud_previews[stack]) == []


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_registered_names_are_the_table_names(cloud_previews, stack):
    result = cloud_previews[stack]
    registered = {logical: name for logical, (_, name, _) in _aws_names(result).items()}
    cluster = one_record(result, "aws:eks/cluster:Cluster").inputs["name"]
    # FSx for Lustre (and its security group) exists only in stacks with hybridgpu:cloud.storage (prod).
    fsx = bool(result.of_type("aws:fsx/lustreFileSystem:LustreFileSystem"))
    assert fsx == (stack == "prod")
    expected = {n.logical_name: n.shown for n in CloudNames(cluster, fsx=fsx).aws_names()}
    assert registered == expected


def test_hybrid_interruption_rules_are_named_within_eventbridge_limits(cloud_previews):
    rules = sorted(r.inputs["name"] for r in cloud_previews["hybrid"].of_type("aws:cloudwatch/eventRule:EventRule"))
    assert rules == sorted(f"gpu-burst-manager-karpenter-{w}" for w in ("scheduled", "spot", "rebalance", "state", "reserved"))
    assert max(len(r) for r in rules) <= 64


def test_longest_allowed_cluster_name_previews_within_every_limit(project):
    name = "ml-platform-gpu-training-prod-us-east-1-blue"
    assert len(name) == CLUSTER_NAME_MAX_LENGTH
    doc = example_stack("dev")
    doc["config"]["hybridgpu:cloud"]["cluster"]["name"] = name
    write_stack(project, "long", doc)
    result = run_preview("long", project)
    assert _overflows(result) == []
    # The Karpenter controller role and the system node role are exactly at IAM's 64.
    lengths = {logical: length for logical, (_, _, length) in _aws_names(result).items()}
    assert lengths[f"{name}-karpenter-controller-role"] == 64 and lengths[f"{name}-system-role"] == 64


# ------------------------------------------------------------------------------ access entries


def _as_deployer(monkeypatch, issuer: str) -> None:
    """Make the mocks answer that ``issuer`` runs ``pulumi up`` (the session issuer of the caller)."""
    original = HybridMocks.call

    def call(self, args):
        answer = original(self, args)
        if args.token == "aws:iam/getSessionContext:getSessionContext":
            answer = {**answer, "issuerArn": issuer}
        return answer

    monkeypatch.setattr(HybridMocks, "call", call)


def _entries(result) -> list[tuple[str, str]]:
    return sorted((r.inputs["principalArn"], r.inputs["type"]) for r in result.of_type("aws:eks/accessEntry:AccessEntry"))


def test_deployer_that_is_a_listed_admin_gets_one_access_entry(root, monkeypatch):
    _as_deployer(monkeypatch, "arn:aws:iam::111122223333:role/platform-admins")
    result = run_preview("prod", root)
    assert _entries(result) == [
        ("arn:aws:iam::111122223333:role/KarpenterNode-gpu-prod", "EC2_LINUX"),
        ("arn:aws:iam::111122223333:role/platform-admins", "STANDARD"),
    ]
    assert len(result.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")) == 1


def test_deployer_listed_in_another_case_is_the_same_principal(root, monkeypatch):
    _as_deployer(monkeypatch, "arn:aws:iam::111122223333:role/Platform-Admins")
    result = run_preview("prod", root)
    assert [p for p, t in _entries(result) if t == "STANDARD"] == ["arn:aws:iam::111122223333:role/platform-admins"]


def test_deployer_not_listed_gets_its_own_entry_keyed_by_principal(cloud_previews):
    result = cloud_previews["prod"]
    standard = {r.name: r.inputs["principalArn"] for r in result.of_type("aws:eks/accessEntry:AccessEntry") if r.inputs["type"] == "STANDARD"}
    assert standard == {
        "gpu-prod-access-111122223333-role-platform-admins": "arn:aws:iam::111122223333:role/platform-admins",
        "gpu-prod-access-111122223333-role-hybridgpu-deployer": "arn:aws:iam::111122223333:role/hybridgpu-deployer",
    }


# ------------------------------------------------------------------------------ Karpenter namespace


def test_default_karpenter_namespace_is_not_created(cloud_previews):
    namespaces = [r for r in cloud_previews["dev"].of_type("kubernetes:core/v1:Namespace") if r.name.endswith("-karpenter-namespace")]
    assert namespaces == []


def test_own_karpenter_namespace_is_created_before_the_releases_and_the_association(project):
    doc = example_stack("dev")
    doc["config"]["hybridgpu:cloud"]["karpenter"] = {"namespace": "karpenter"}
    write_stack(project, "ns", doc)
    result = run_preview("ns", project)
    namespace = [r for r in result.of_type("kubernetes:core/v1:Namespace") if r.inputs["metadata"]["name"] == "karpenter"]
    assert len(namespace) == 1
    urn = namespace[0].urn
    releases = {r.inputs["name"]: r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"].startswith("karpenter")}
    assert set(releases) == {"karpenter", "karpenter-crd"}
    for release in releases.values():
        assert release.inputs["namespace"] == "karpenter"
        assert urn in release.dependencies
    association = one_record(result, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association.inputs["namespace"] == "karpenter" and urn in association.dependencies
