"""Any invoke gets an answer (issue 25): answers derived from the provider SDK's result types,
checked by calling the real SDK functions under the mocks (the SDK's result classes type-check
every property, so a wrongly shaped answer fails there); the answers file; the explicit
provider's region; and the inv-* programs end to end through ``hybridgpu check``."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell import invokes
from hybridgpu.shell.invokes import InvokeAnswersError, answers_from, derive_answer, load_answers, policy_document, result_class
from hybridgpu.shell.preview import HybridMocks, RecordingMonitor, UnknownInvokeError, _reset_runtime
from tests.helpers import ROOT

PROGRAMS = ROOT / "tests" / "fixtures" / "programs"
# The sample of SDK functions includes deprecated ones; their warnings say nothing about the answers.
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.usefixtures("shared_pack")]


@pytest.fixture
def mocks():
    """HybridMocks in us-west-2 installed for direct SDK calls; the runtime is reset after."""
    _reset_runtime()
    m = HybridMocks(region="us-west-2")
    pulumi.runtime.set_mocks(m, project="inv", stack="dev", preview=False, monitor=RecordingMonitor(m))
    yield m
    _reset_runtime()


def _dummy(param: inspect.Parameter):
    """A value of the annotated type for a required argument of an SDK function."""
    text = str(param.annotation)
    if "Sequence" in text:
        return []
    if "Mapping" in text:
        return {}
    if "bool" in text:
        return False
    if "int" in text:
        return 1
    return "x"


#: A sample of pulumi_aws modules: the ones real programs look things up in, plus ``lambda_``
#: (a Python keyword the generator suffixes with "_"). Every one of pulumi_aws 7.51's 686 plain
#: get_* functions was also run this way while writing the module (all answered).
SAMPLE_MODULES = ["pulumi_aws", "pulumi_aws.ec2", "pulumi_aws.iam", "pulumi_aws.eks", "pulumi_aws.s3", "pulumi_aws.lambda_", "pulumi_aws.rds"]


@pytest.mark.parametrize("module_name", SAMPLE_MODULES)
def test_every_sdk_lookup_in_the_module_gets_an_answer_the_sdk_accepts(mocks, module_name):
    module = importlib.import_module(module_name)
    getattr(module, "_utilities", None)  # load the lazy module
    functions = [getattr(module, n) for n in sorted(dir(module)) if n.startswith("get_") and not n.endswith("_output")]
    functions = [f for f in functions if inspect.isfunction(f)]
    assert functions
    for fn in functions:
        required = {p.name: _dummy(p) for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty}
        fn(**required)  # raises if the answer's shape does not fit the SDK's result class


def test_lookups_are_shaped_as_the_service_answers(mocks):
    ami = aws.ec2.get_ami(most_recent=True, owners=["137112412989"], filters=[aws.ec2.GetAmiFilterArgs(name="name", values=["amzn2-*"])])
    assert ami.id.startswith("ami-") and ami.image_id.startswith("ami-")
    assert ami.owners == ["137112412989"]  # what was asked is echoed
    assert ami.filters[0].values == ["amzn2-*"]
    zones = aws.get_availability_zones(state="available")
    assert zones.names == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert zones.zone_ids == ["usw2-az1", "usw2-az2", "usw2-az3"]
    subnets = aws.ec2.get_subnets()
    assert len(subnets.ids) == 3 and all(i.startswith("subnet-") for i in subnets.ids)
    vpc = aws.ec2.get_vpc(default=True)
    assert vpc.id.startswith("vpc-") and vpc.default is True
    group = aws.ec2.get_security_group(name="default")
    assert group.id.startswith("sg-") and group.arn == f"arn:aws:ec2:us-west-2:111122223333:security-group/{group.id}"
    role = aws.iam.get_role(name="ops")
    assert role.name == "ops" and role.arn == "arn:aws:iam::111122223333:role/ops"
    cluster = aws.eks.get_cluster(name="shared")
    assert cluster.arn == "arn:aws:eks:us-west-2:111122223333:cluster/shared"
    assert cluster.endpoint.startswith("https://") and cluster.certificate_authorities[0].data


def test_answers_are_deterministic_and_depend_on_the_args():
    a = derive_answer("aws:ec2/getAmi:getAmi", {"owners": ["amazon"]}, "us-west-2", "111122223333")
    assert a == derive_answer("aws:ec2/getAmi:getAmi", {"owners": ["amazon"]}, "us-west-2", "111122223333")
    assert a["imageId"] != derive_answer("aws:ec2/getAmi:getAmi", {"owners": ["self"]}, "us-west-2", "111122223333")["imageId"]


def test_the_hand_answers_are_kept(mocks):
    assert aws.get_caller_identity().arn == "arn:aws:sts::111122223333:assumed-role/hybridgpu-deployer/preview"
    assert aws.get_region().region == "us-west-2"


def test_an_explicit_providers_region_is_honoured(mocks):
    eu = aws.Provider("eu", region="eu-west-1")
    opts = pulumi.InvokeOptions(provider=eu)
    assert aws.get_availability_zones(opts=opts).names[0] == "eu-west-1a"
    assert aws.get_region(opts=opts).region == "eu-west-1"
    assert aws.eks.get_cluster(name="c", opts=opts).arn.startswith("arn:aws:eks:eu-west-1:")
    assert aws.get_availability_zones().names[0] == "us-west-2a"  # default provider: the stack's region


def test_policy_document_follows_the_providers_rendering():
    """terraform-provider-aws internal/service/iam/iam_policy_model.go (what pulumi-aws runs)."""
    doc = policy_document(
        {
            "statements": [
                {"actions": ["sts:AssumeRole"], "principals": [{"type": "Service", "identifiers": ["ec2.amazonaws.com"]}]},
                {"sid": "Read", "actions": ["s3:GetObject", "s3:ListBucket"], "resources": ["*"],
                 "conditions": [{"test": "StringEquals", "variable": "aws:RequestedRegion", "values": ["us-west-2", "eu-west-1"]}]},
                {"principals": [{"type": "*", "identifiers": ["*"]}], "effect": "Deny", "actions": ["*"]},
            ],
            "overridePolicyDocuments": [json.dumps({"Statement": [{"Sid": "Read", "Effect": "Deny", "Action": "s3:*"}]})],
        }
    )
    assert doc["Version"] == "2012-10-17"
    first, read, deny = doc["Statement"]
    assert first == {"Sid": "", "Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "ec2.amazonaws.com"}}
    assert read == {"Sid": "Read", "Effect": "Deny", "Action": "s3:*"}  # replaced by the override's same Sid
    assert deny["Principal"] == "*"
    only = policy_document({"statements": [{"actions": ["b", "a", "c"], "conditions": [{"test": "T", "variable": "v", "values": ["2", "1"]}]}]})
    assert only["Statement"][0]["Action"] == ["c", "b", "a"]  # several: reverse-sorted
    assert only["Statement"][0]["Condition"] == {"T": {"v": ["2", "1"]}}  # condition values keep their order


def test_policy_document_json_reaches_the_program(mocks):
    result = aws.iam.get_policy_document(statements=[aws.iam.GetPolicyDocumentStatementArgs(actions=["ec2:*"], resources=["*"])])
    assert json.loads(result.json)["Statement"] == [{"Sid": "", "Effect": "Allow", "Action": "ec2:*", "Resource": "*"}]
    assert json.loads(result.minified_json) == json.loads(result.json)


def test_a_token_no_sdk_has_fails_naming_the_answers_file(mocks):
    assert result_class("acme:index/getThing:getThing") is None
    with pytest.raises(UnknownInvokeError, match="--invoke-answers"):
        pulumi.runtime.invoke("acme:index/getThing:getThing", {})


def test_answers_file_overrides_and_adds(mocks, tmp_path):
    path = tmp_path / "answers.yaml"
    path.write_text(
        "aws:ec2/getAmi:getAmi:\n  imageId: ami-0pinned\n"
        "aws:index/getCallerIdentity:getCallerIdentity:\n  accountId: '444455556666'\n"
        "acme:index/getThing:getThing:\n  - match: {kind: a}\n    answer: {value: 1}\n  - answer: {value: 2}\n"
    )
    with answers_from(path):
        ami = aws.ec2.get_ami(owners=["self"])
        assert ami.image_id == "ami-0pinned" and ami.id.startswith("ami-")  # merged over the derived answer
        assert aws.get_caller_identity().account_id == "444455556666"  # over a hand answer too
        assert pulumi.runtime.invoke("acme:index/getThing:getThing", {"kind": "a"}).value == {"value": 1}
        assert pulumi.runtime.invoke("acme:index/getThing:getThing", {"kind": "b"}).value == {"value": 2}
    assert invokes._ANSWERS == {}  # nothing left behind for the next check


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n", "expected a mapping of invoke token"),
        ("getAmi: {imageId: x}\n", "not an invoke token"),
        ("'aws:ec2/getAmi:getAmi': [1]\n", r"getAmi:getAmi\[0\]: expected an answer mapping"),
        ("'aws:ec2/getAmi:getAmi': {image_id: ami-1}\n", "did you mean 'imageId'"),
        ("'aws:ec2/getAmi:getAmi': [{match: 3, answer: {}}]\n", r"\.match: expected a mapping"),
        ("a: [\n", "not valid YAML/JSON"),
    ],
)
def test_a_bad_answers_file_names_the_file_and_the_entry(tmp_path, text, message):
    path = tmp_path / "answers.yaml"
    path.write_text(text)
    with pytest.raises(InvokeAnswersError, match=message) as err:
        load_answers(path)
    assert str(path) in str(err.value)


# --- end to end: `hybridgpu check` on programs that make these lookups ---------------------

#: Fixture -> (exit code, violations as (policy, resource)); written down before running them.
EXPECTED = {
    "inv-webserver": (1, [("required-cost-tags", "web-server-www")]),  # untagged GPU instance from getAmi
    "inv-default-vpc": (0, []),  # getAvailabilityZones, getVpc, getSubnets
    "inv-iam-policy": (0, []),  # getPolicyDocument into a role and a policy
    "inv-arns": (0, []),  # getCallerIdentity, getRegion in ARNs
    "inv-eks-lookup": (0, []),  # getCluster, getClusterAuth into a Kubernetes provider
    "inv-provider-region": (0, []),  # invokes through aws.Provider(region="eu-west-1")
}


def _check(*args: str):
    result = CliRunner().invoke(app, ["check", "dev", "--pack", str(ROOT / "policies"), "--format", "json", *args])
    return result


#: The programs whose lookup arguments come from other lookups, also checked as a first preview.
FIRST_PREVIEW = ("inv-webserver", "inv-default-vpc", "inv-provider-region")


@pytest.mark.parametrize(
    ("name", "first_preview"), [(n, False) for n in sorted(EXPECTED)] + [(n, True) for n in FIRST_PREVIEW]
)
def test_program_gets_its_expected_verdict(name, first_preview):
    code, violations = EXPECTED[name]
    result = _check("--root", str(PROGRAMS / name), *(["--first-preview"] if first_preview else []))
    assert result.exit_code == code, result.output
    [report] = json.loads(result.output)["stacks"]
    assert sorted((v["policy"], v["name"]) for v in report["violations"]) == violations


def test_unknown_provider_fails_closed_then_passes_with_an_answers_file():
    root = PROGRAMS / "inv-unknown-token"
    result = _check("--root", str(root))
    assert result.exit_code == 2
    assert "acme:index/getCostCenter:getCostCenter" in result.output and "--invoke-answers" in result.output
    assert "Traceback" not in result.output
    result = _check("--root", str(root), "--invoke-answers", str(root / "answers.yaml"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["stacks"][0]["violations"] == []


def test_a_bad_answers_file_is_one_line_exit_2(tmp_path: Path):
    bad = tmp_path / "answers.yaml"
    bad.write_text("'aws:ec2/getAmi:getAmi': {image_id: ami-1}\n")
    result = _check("--root", str(PROGRAMS / "inv-webserver"), "--invoke-answers", str(bad))
    assert result.exit_code == 2
    assert str(bad) in result.output and "imageId" in result.output and "Traceback" not in result.output
