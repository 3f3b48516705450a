"""Three fixes found by running public Pulumi programs through ``hybridgpu check`` (issue 25).

Each ``tests/fixtures/programs/acc-*`` directory is a small Pulumi Python project of ours (never the
public program's code); the verdicts below were written before the first run, for the plain and
``--first-preview`` modes, and the checks share one pack process.

Upstream behaviour tested:

- ECR API reference, ``AuthorizationData``
  (https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_AuthorizationData.html):
  ``authorizationToken`` is base64 and decodes to ``user:password`` (the user is ``AWS``);
  ``proxyEndpoint`` is the registry URL for ``docker login``, ``https://<account>.dkr.ecr.<region>.amazonaws.com``;
- pulumi-aws ``ecr/get_repository.py``: ``repository_url`` is ``aws_account_id.dkr.ecr.region.amazonaws.com/repositoryName``;
  terraform-provider-aws ``internal/service/ecr/image_data_source.go``: an image's id is its digest and
  ``image_uri`` is ``<repository URI>@<digest>``.
"""

from __future__ import annotations

import base64
import json
import re

import pytest

from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.capacity import unknown_family_message
from hybridgpu.shell.invokes import derive_answer
from hybridgpu.shell.policy.check import check_stacks
from hybridgpu.shell.remote import named_capacity, opaque_message
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

PROGRAMS = ROOT / "tests" / "fixtures" / "programs"
PACK = ROOT / "policies"
ACCOUNT = "123456789012"
OPAQUE = "offline-opaque-component"

# program -> (violations [policy, resource name] in both modes, texts the resource's message must
# hold, texts it must not hold). Written before the first run.
EXPECTED = {
    # The login decodes (else the program fails, exit 2); only the untagged repository is reported.
    "acc-ecr-credentials": ([["required-cost-tags", "app"]], {}, {}),
    # p3.2xlarge is a V100 type the catalog lacks: blocked, with a fix this project can apply.
    "acc-foreign-gpu-size": (
        [["gpu-instance-size", "gpu"]],
        {"gpu": ["p3.2xlarge", "exemptResources", '"resource": "gpu"', "`hybridgpu catalog`", "issue or pull request"]},
        {"gpu": ["Fix: use a catalog type (`hybridgpu catalog`), or add the type to"]},
    ),
    # An unfamiliar remote component: reported, naming the GPU type and size its inputs hold.
    "acc-opaque-gpu-inputs": (
        [[OPAQUE, "gpu"]],
        {"gpu": ["lbrlabs-eks:index:AttachedNodeGroup 'gpu'", "Its inputs name g6.8xlarge (1 GPU each), scalingConfig.maxSize 3: up to 3 GPUs"]},
        {},
    ),
}
MODES = ("plain", "firstPreview")


@pytest.fixture
def analyzer(running_packs):
    """The pack running for the test process (tests/conftest.py running_packs)."""
    return running_packs.get(PACK)


def test_fixtures_are_complete():
    assert sorted(p.name for p in PROGRAMS.glob("acc-*")) == sorted(EXPECTED)
    for name in EXPECTED:
        (PROGRAMS / name / "Pulumi.dev.yaml").resolve(strict=True)
        assert f"name: {name}\n" in (PROGRAMS / name / "Pulumi.yaml").read_text()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_program_gets_its_verdict(analyzer, name: str, mode: str):
    violations, has, has_not = EXPECTED[name]
    [report] = check_stacks(["dev"], PROGRAMS / name, first_preview=mode == "firstPreview", analyzer=analyzer)
    assert sorted([v.policy, v.name] for v in report.violations) == sorted(violations), [(v.policy, v.name, v.message) for v in report.violations]
    assert report.mandatory
    for v in report.violations:
        assert "Fix:" in v.message and "Traceback" not in v.message
        for text in has.get(v.name, ()):
            assert text in v.message, (text, v.message)
        for text in has_not.get(v.name, ()):
            assert text not in v.message, (text, v.message)


def test_the_waiver_the_fix_names_clears_the_finding(analyzer, tmp_path):
    [report] = check_stacks(["dev"], PROGRAMS / "acc-foreign-gpu-size", analyzer=analyzer)
    [finding] = report.violations
    waiver = re.search(r"waive the resource in the policy config \((\{.*\})\) and open", finding.message)
    config = json.loads(waiver[1].replace("<GPUs>", "1 V100"))
    (tmp_path / "policy-config.json").write_text(json.dumps(config))
    [waived] = check_stacks(["dev"], PROGRAMS / "acc-foreign-gpu-size", analyzer=analyzer, config_file=tmp_path / "policy-config.json")
    assert not waived.violations and not waived.mandatory
    [again] = check_stacks(["dev"], PROGRAMS / "acc-foreign-gpu-size", analyzer=analyzer)  # the shared pack forgets it
    assert [v.policy for v in again.violations] == ["gpu-instance-size"]


# --- ECR answers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["aws:ecr/getCredentials:getCredentials", "aws:ecr/getAuthorizationToken:getAuthorizationToken"])
def test_ecr_tokens_decode_to_user_and_password(token: str):
    answer = derive_answer(token, {"registryId": "210987654321"}, "eu-west-1", ACCOUNT)
    user, password = base64.b64decode(answer["authorizationToken"], validate=True).decode().split(":")
    assert (user, password) == (answer["userName"], answer["password"]) and user == "AWS" and password
    assert answer["proxyEndpoint"] == "https://210987654321.dkr.ecr.eu-west-1.amazonaws.com"
    assert answer == derive_answer(token, {"registryId": "210987654321"}, "eu-west-1", ACCOUNT)  # deterministic
    # No registry named: the caller's account's default registry.
    assert derive_answer(token, {}, "us-east-1", ACCOUNT)["proxyEndpoint"] == f"https://{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"


def test_ecr_repository_and_image_uris():
    repo = derive_answer("aws:ecr/getRepository:getRepository", {"name": "team/app"}, "us-west-2", ACCOUNT)
    assert repo["repositoryUrl"] == f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/team/app"
    assert repo["registryId"] == ACCOUNT
    image = derive_answer("aws:ecr/getImage:getImage", {"repositoryName": "team/app", "imageTag": "v1"}, "us-west-2", ACCOUNT)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", image["imageDigest"]) and image["id"] == image["imageDigest"]
    assert image["imageUri"] == f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/team/app@{image['imageDigest']}"
    assert image["imageTags"] == ["v1"]
    pinned = derive_answer("aws:ecr/getImage:getImage", {"repositoryName": "app", "imageDigest": "sha256:" + "a" * 64}, "us-west-2", ACCOUNT)
    assert pinned["imageDigest"] == "sha256:" + "a" * 64


# --- fix wording per project ------------------------------------------------------------------------


def _instance(project: str) -> PolicyResource:
    return PolicyResource(type="aws:ec2/instance:Instance", name="gpu", urn=f"urn:pulumi:dev::{project}::aws:ec2/instance:Instance::gpu")


def test_unknown_type_fix_names_the_catalog_file_only_in_hybridgpus_project():
    ours = unknown_family_message(_instance("hybridgpu"), "x", ["p3.2xlarge"])
    theirs = unknown_family_message(_instance("team-app"), "x", ["p3.2xlarge"])
    assert "add the type to hybridgpu/catalog/data/instance_types.yaml" in ours and "exemptResources" not in ours
    assert '{"gpu-instance-size": {"exemptResources": [{"resource": "gpu", "reason": ' in theirs and "add the type to hybridgpu/catalog" not in theirs


# --- opaque components: capacity named in any inputs ------------------------------------------------


def test_unfamiliar_component_inputs_are_scanned_for_gpu_types_and_sizes():
    assert named_capacity({"pools": [{"instanceType": "ml.p5.48xlarge", "max_size": 2}, {"types": ["g5.xlarge"], "desiredCapacity": 3}]}) == (
        "name p5.48xlarge (8 GPUs each), g5.xlarge (1 GPU each), pools[0].max_size 2, pools[1].desiredCapacity 3: up to 40 GPUs"
    )
    assert named_capacity({"instanceType": "p4d.24xlarge"}) == "name p4d.24xlarge (8 GPUs each) and no group size"
    assert named_capacity({"instanceType": "t3.medium", "maxSize": 3, "name": "g5"}) == ""  # no GPU type named


def test_well_known_component_messages_keep_their_wording():
    message = opaque_message("eks:index:ManagedNodeGroup", "n", {"instanceTypes": ["g5.xlarge"], "scalingConfig": {"maxSize": 2}}, "r")
    assert "Its inputs: instanceTypes [g5.xlarge (1 GPU each)], scalingConfig.maxSize 2: up to 2 GPUs." in message
    assert "Its inputs name" not in message
