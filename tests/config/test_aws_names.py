"""The AWS name table and name builders (hybridgpu.config.aws_names), without Pulumi.

* the auto-name arithmetic is the bridge's: logical name + ``-`` + 7 random characters
  (pulumi-terraform-bridge ``pkg/tfbridge/info/autonaming.go`` ``AutoName``: ``Randlen: 7``;
  pulumi ``sdk/go/common/resource/resource_id.go`` ``NewUniqueName`` errors when
  ``len(prefix) + randlen > maxlen``), re-implemented here from that code to check the table;
* property (hypothesis): for every cluster name the model accepts, every derived AWS name fits
  every limit; one character more and the model refuses, naming the overflowing resource;
* the upstream limits recorded in the table (pulumi-aws resources.go, AWS API references);
* the access-entry principals: each once, the deployer dropped when it is a listed admin.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hybridgpu.config.aws_names import (
    AUTONAME_SUFFIX_LENGTH,
    AWS_NAME_LIMITS,
    CLUSTER_NAME_MAX_LENGTH,
    CONTROLLER_POLICY_CONCERNS,
    EVENT_RULE_WORDS,
    CloudNames,
    access_entry_label,
    admin_access_principals,
    binding_names,
)
from hybridgpu.config.models import ClusterConfig
from hybridgpu.render.iam import INTERRUPTION_RULES, karpenter_controller_policies
from tests.helpers import examples


def new_unique_name(prefix: str, randlen: int, maxlen: int) -> str:
    """pulumi's ``resource.NewUniqueName`` (sdk/go/common/resource/resource_id.go), minus the randomness."""
    if maxlen > 0 and len(prefix) + randlen > maxlen:
        raise ValueError(f"name '{prefix}' plus {randlen} random chars is longer than maximum length {maxlen}")
    return prefix + "0" * randlen


def bridge_autoname(logical: str, maxlen: int) -> str:
    """pulumi-terraform-bridge ``AutoName(name, maxlen, "-")``: NewUniqueName(logical + "-", 7, maxlen)."""
    return new_unique_name(logical + "-", 7, maxlen)


cluster_names = st.from_regex(rf"\A[a-zA-Z][a-zA-Z0-9-]{{0,{CLUSTER_NAME_MAX_LENGTH - 1}}}\Z")


def test_autoname_suffix_is_the_bridges():
    assert len(bridge_autoname("x", 64)) - len("x") == AUTONAME_SUFFIX_LENGTH


def test_the_issue_14_rule_overflows_the_bridge():
    # The logical name the hybrid stack registered before issue 14: the provider refuses it at preview.
    old = "gpu-burst-manager-karpenter-capacity-reservation-interruption"
    with pytest.raises(ValueError, match="longer than maximum length 64"):
        bridge_autoname(old, AWS_NAME_LIMITS["aws:cloudwatch/eventRule:EventRule"].autoname_max)


@settings(max_examples=examples(300), deadline=None)
@given(cluster_names)
def test_every_derived_name_of_an_accepted_cluster_name_fits(name):
    ClusterConfig(name=name)  # accepted by the model
    for derived in CloudNames(name).aws_names():
        lim = AWS_NAME_LIMITS[derived.resource_type]
        if derived.naming == "auto":
            aws_name = bridge_autoname(derived.logical_name, lim.autoname_max)  # raises like `pulumi preview` would
        else:
            aws_name = derived.name
        assert len(aws_name) <= lim.api_max, (derived.what, aws_name)
        assert len(aws_name) == derived.length


@settings(max_examples=examples(100), deadline=None)
@given(st.from_regex(rf"\A[a-zA-Z][a-zA-Z0-9-]{{{CLUSTER_NAME_MAX_LENGTH},99}}\Z"))
def test_a_longer_name_is_refused_and_overflows(name):
    assert binding_names(name)
    with pytest.raises(ValidationError, match="too long"):
        ClusterConfig(name=name)


def test_the_maximum_is_bound_by_the_controller_role():
    assert CLUSTER_NAME_MAX_LENGTH == 44
    over = binding_names("a" * (CLUSTER_NAME_MAX_LENGTH + 1))
    assert "Karpenter controller role" in {n.what for n in over}


def test_refusal_names_the_resource_and_the_fix():
    with pytest.raises(ValidationError) as info:
        ClusterConfig(name="ml-platform-gpu-training-prod-us-east-1-blue2")
    text = str(info.value)
    assert "45 characters is too long" in text
    assert "the system node group role 'ml-platform-gpu-training-prod-us-east-1-blue2-system-role-xxxxxxx' (65 characters, limit 64)" in text
    assert "and 1 more" in text  # the Karpenter controller role


@pytest.mark.parametrize(
    "token,auto,api",
    [
        # pulumi/pulumi-aws provider/resources.go @00ba5ea5; AWS API references (see the module docstring).
        ("aws:iam/role:Role", 64, 64),
        ("aws:cloudwatch/eventRule:EventRule", 64, 64),
        ("aws:sqs/queue:Queue", 80, 80),
        ("aws:eks/nodeGroup:NodeGroup", 255, 63),
        ("aws:eks/cluster:Cluster", 255, 100),
        ("aws:iam/rolePolicy:RolePolicy", 255, 128),
        ("aws:ec2/launchTemplate:LaunchTemplate", 255, 128),
        ("aws:kms/alias:Alias", 238, 256),
        ("aws:cloudwatch/logGroup:LogGroup", 255, 512),
        ("aws:cloudwatch/eventTarget:EventTarget", 255, 64),
    ],
)
def test_recorded_upstream_limits(token, auto, api):
    lim = AWS_NAME_LIMITS[token]
    assert (lim.autoname_max, lim.api_max) == (auto, api)
    assert lim.source


def test_every_named_row_has_both_limits_and_unnamed_rows_none():
    for lim in AWS_NAME_LIMITS.values():
        if lim.name_property is None:
            assert (lim.naming, lim.autoname_max, lim.api_max) == ("none", None, None), lim
        else:
            assert lim.api_max and lim.autoname_max, lim


def test_each_name_takes_the_limit_of_its_naming():
    """An auto-name is bound by the API and the provider, an explicit one by the API only (the role is both)."""
    role = AWS_NAME_LIMITS["aws:iam/role:Role"]
    policy = AWS_NAME_LIMITS["aws:iam/rolePolicy:RolePolicy"]
    assert (policy.limit_for("auto"), policy.limit_for("explicit")) == (128, 128)
    alias = AWS_NAME_LIMITS["aws:kms/alias:Alias"]
    assert (alias.limit_for("auto"), alias.limit_for("explicit"), alias.limit) == (238, 256, 256)
    assert AWS_NAME_LIMITS["aws:eks/cluster:Cluster"].limit_for("auto") == 100
    assert AWS_NAME_LIMITS["aws:cloudwatch/eventTarget:EventTarget"].limit_for("explicit") == 64
    for name in CloudNames("c").aws_names():
        lim = AWS_NAME_LIMITS[name.resource_type]
        assert name.limit == lim.limit_for(name.naming), name
        if name.naming == lim.naming:
            assert name.limit == lim.limit, name
    assert role.limit == 64


def test_rule_words_and_policy_concerns_match_the_renderers():
    assert list(EVENT_RULE_WORDS) == [r.name for r in INTERRUPTION_RULES]
    assert len(set(EVENT_RULE_WORDS.values())) == len(EVENT_RULE_WORDS)
    docs = karpenter_controller_policies(
        partition="aws", region="us-east-1", account_id="111122223333", cluster_name="c", node_role_arn="arn", queue_arn="arn"
    )
    assert list(docs) == list(CONTROLLER_POLICY_CONCERNS)


# ----------------------------------------------------------------------------- access entries

ADMINS = "arn:aws:iam::111122223333:role/platform-admins"


@pytest.mark.parametrize(
    "admins,deployer,expected",
    [
        ([ADMINS], "arn:aws:iam::111122223333:role/ci-deployer", [ADMINS, "arn:aws:iam::111122223333:role/ci-deployer"]),
        ([ADMINS], ADMINS, [ADMINS]),
        ([ADMINS], "arn:aws:iam::111122223333:role/Platform-Admins", [ADMINS]),
        ([ADMINS, ADMINS.upper().replace("ARN:AWS:IAM", "arn:aws:iam")], None, [ADMINS]),
        ([], "arn:aws:iam::111122223333:user/alice", ["arn:aws:iam::111122223333:user/alice"]),
        ([], None, []),
    ],
)
def test_admin_access_principals_once_each(admins, deployer, expected):
    assert [arn for _, arn in admin_access_principals(admins, deployer)] == expected


def test_access_entry_labels_are_urn_safe_and_distinct():
    assert access_entry_label(ADMINS) == "111122223333-role-platform-admins"
    assert access_entry_label("arn:aws:iam::111122223333:role/team/ops+ml@x") == "111122223333-role-team-ops-ml-x"
    assert access_entry_label("arn:aws:iam::111122223333:user/ops") != access_entry_label("arn:aws:iam::111122223333:role/ops")


# ----------------------------------------------------------------------------- the docs say what the code does


def test_docs_cloud_table_matches_the_code():
    from tests.helpers import ROOT

    text = (ROOT / "docs" / "cloud.md").read_text()
    section = text.split("## AWS names and their limits", 1)[1].split("\n## ", 1)[0]
    assert f"at most **{CLUSTER_NAME_MAX_LENGTH} characters**" in section
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ") and "`aws:" in line]
    documented = {}
    for cells in rows:
        token = cells[1].strip().split("`")[1]
        auto, api = (int(c.strip().split()[0]) for c in cells[4:6])
        documented.setdefault(token, set()).add((cells[2].strip(), auto, api))
    code = {}
    for name in CloudNames("c").aws_names():
        lim = AWS_NAME_LIMITS[name.resource_type]
        code.setdefault(name.resource_type, set()).add((name.naming, lim.autoname_max, lim.api_max))
    assert documented == code
