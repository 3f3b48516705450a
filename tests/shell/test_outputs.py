"""Outputs like the engine's (issue 25): generated computed outputs for any resource type.

Unit tests of :mod:`hybridgpu.shell.outputs` (values per type, inputs and hand-written answers win,
first-preview state), then the ``out-*`` programs under tests/fixtures/programs/ end to end through
``hybridgpu check`` in plain and ``--first-preview`` mode, against the verdicts in their
``expected.yaml`` (written before the first run).

Upstream behaviour the values follow:
- pulumi-aws auto-names ``name`` (``bucket`` for ``aws.s3.Bucket``) as ``<name>-<7 hex>`` when it is
  not set (pulumi-aws ``provider/resources.go``, ``AutoName``/``AutoNameWithCustomOptions``; the
  Pulumi docs "Resource names: Autonaming": "random suffix of 7 characters");
- pulumi-kubernetes auto-names ``metadata.name`` as ``<name>-<8 random>`` in ``Check``
  (``provider/pkg/metadata/naming.go``, ``AssignNameIfAutonamable``), so the name is known in a preview;
- S3 bucket ARNs have no region or account (``arn:aws:s3:::<bucket>``, AWS "Amazon S3 resources" ARN format).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pulumi
from pulumi.runtime import rpc as pulumi_rpc
import pulumi_aws  # noqa: F401 - registers the aws resource modules
import pulumi_kubernetes  # noqa: F401 - registers the kubernetes resource modules
import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell.outputs import fill_outputs, first_preview_state, output_table, sdk_class
from hybridgpu.shell.policy.check import _entrypoint, _preview
from hybridgpu.shell.preview import FirstPreviewMocks, HybridMocks
from hybridgpu.stack.files import project_name, read_stack_file
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

PROGRAMS = ROOT / "tests" / "fixtures" / "programs"
OUT_PROGRAMS = sorted(p for p in PROGRAMS.glob("out-*") if (p / "expected.yaml").is_file())
PACK = ROOT / "policies"
REGION, ACCOUNT = "us-west-2", "111122223333"


def fill(typ: str, name: str, inputs: dict | None = None, rid: str = "x-1", generic_id: bool = True):
    inputs = dict(inputs or {})
    return fill_outputs(typ, name, inputs, dict(inputs), rid, region=REGION, account=ACCOUNT, generic_id=generic_id)


def args(typ: str, name: str, inputs: dict | None = None) -> pulumi.runtime.MockResourceArgs:
    return pulumi.runtime.MockResourceArgs(typ=typ, name=name, inputs=dict(inputs or {}), provider=None, resource_id=None, custom=True)


def test_sdk_class_from_type_token():
    assert sdk_class("aws:s3/bucket:Bucket") is pulumi_aws.s3.Bucket
    assert sdk_class("kubernetes:core/v1:Namespace") is pulumi_kubernetes.core.v1.Namespace
    assert sdk_class("nosuch:mod/thing:Thing") is None
    assert output_table("nosuch:mod/thing:Thing") == ()


def test_bucket_gets_autoname_arn_and_id():
    rid, state = fill("aws:s3/bucket:Bucket", "Data")
    assert re.fullmatch(r"data-[0-9a-f]{7}", state["bucket"])  # lower case: S3 names are
    assert state["arn"] == f"arn:aws:s3:::{state['bucket']}"
    assert rid == state["bucket"]
    assert state["region"] == REGION and state["bucketRegionalDomainName"].endswith(f".{REGION}.amazonaws.com")
    assert state["tagsAll"] == {} and state["objectLockEnabled"] is False
    # A list of objects is left out (unknown in the check's dry run): an empty list would fail a
    # program's [0] (ACM domainValidationOptions), and its entries cannot be made up.
    assert "corsRules" not in state
    assert "forceDestroy" not in state  # Optional[...] outputs: the provider may return nothing there


def test_inputs_win_and_name_prefix():
    _, state = fill("aws:s3/bucket:Bucket", "data", {"bucket": "my-bucket", "tags": {"team": "ml"}})
    assert state["bucket"] == "my-bucket" and state["arn"] == "arn:aws:s3:::my-bucket"
    assert state["tagsAll"] == {"team": "ml"}
    _, state = fill("aws:iam/policy:Policy", "p", {"namePrefix": "train-"})
    assert re.fullmatch(r"train-\d{26}", state["name"])
    assert state["arn"] == f"arn:aws:iam::{ACCOUNT}:policy/{state['name']}"  # IAM: no region


def test_ec2_ids_and_arns_use_the_service_prefix():
    rid, state = fill("aws:ec2/instance:Instance", "gpu", {"instanceType": "g5.xlarge"})
    assert re.fullmatch(r"i-[0-9a-f]{17}", rid)
    assert state["arn"] == f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{rid}"
    assert state["instanceType"] == "g5.xlarge"


def test_deterministic():
    assert fill("aws:s3/bucket:Bucket", "data") == fill("aws:s3/bucket:Bucket", "data")
    assert fill("aws:s3/bucket:Bucket", "data")[1]["bucket"] != fill("aws:s3/bucket:Bucket", "logs")[1]["bucket"]


def test_kubernetes_metadata_autoname_namespace_and_uid():
    _, ns = fill("kubernetes:core/v1:Namespace", "research", {"metadata": {"labels": {"team": "ml"}}})
    assert re.fullmatch(r"research-[0-9a-z]{8}", ns["metadata"]["name"])
    assert "namespace" not in ns["metadata"]  # cluster-scoped
    assert ns["metadata"]["labels"] == {"team": "ml"} and ns["metadata"]["uid"]
    assert "status" not in ns  # left as the inputs
    _, gen = fill("kubernetes:core/v1:Namespace", "research", {"metadata": {"generateName": "research-"}})
    assert re.fullmatch(r"research-[0-9a-z]{5}", gen["metadata"]["name"])  # generateName + 5 characters
    _, cm = fill("kubernetes:core/v1:ConfigMap", "cfg", {"metadata": {"name": "given"}})
    assert cm["metadata"]["name"] == "given" and cm["metadata"]["namespace"] == "default"


def test_hand_written_answers_win():
    mocks = HybridMocks(region=REGION)
    rid, state = mocks.new_resource(args("aws:iam/role:Role", "node", {"assumeRolePolicy": "{}"}))
    assert state["arn"] == f"arn:aws:iam::{ACCOUNT}:role/{rid}" and state["uniqueId"].startswith("AROA")
    rid, state = mocks.new_resource(args("aws:ec2/securityGroup:SecurityGroup", "web"))
    assert rid.startswith("sg-") and re.fullmatch(r"web-[0-9a-f]{7}", state["name"])
    assert state["arn"].endswith(f":security-group/{rid}")


def test_first_preview_knows_only_the_autonames():
    """A first preview: what the providers' Check sets (auto-names) is known, computed outputs are not."""
    state = first_preview_state("aws:s3/bucket:Bucket", "data", {})
    assert set(state) == {"bucket"}
    meta = first_preview_state("kubernetes:core/v1:Namespace", "research", {"metadata": {"labels": {"a": "b"}}})["metadata"]
    assert re.fullmatch(r"research-[0-9a-z]{8}", meta["name"]) and meta["annotations"] == {"pulumi.com/autonamed": "true"}
    assert meta["uid"] == meta["resourceVersion"] == pulumi_rpc.UNKNOWN  # unknown, not missing: no KeyError
    meta = first_preview_state("kubernetes:core/v1:Namespace", "research", {"metadata": {"generateName": "research-"}})["metadata"]
    assert meta["name"] == pulumi_rpc.UNKNOWN  # the API server picks it when the object is created
    rid, state = FirstPreviewMocks(HybridMocks(region=REGION)).new_resource(args("aws:ec2/securityGroup:SecurityGroup", "web"))
    assert rid is None and set(state) == {"name"}


def _records(program: Path, first_preview: bool):
    """The offline preview ``hybridgpu check`` makes of a program (its entry point, raw stack values)."""
    raw = read_stack_file(program / "Pulumi.dev.yaml", root=program)
    return _preview(program, _entrypoint(program), first_preview, project_name(program), stack="dev", raw=raw)


@pytest.mark.parametrize("first_preview", [False, True], ids=["plain", "first-preview"])
def test_namespace_name_reaches_the_deployment(first_preview: bool):
    """``ns.metadata["name"]`` resolves (plain and first preview) and the policy sees it on the Deployment."""
    result = _records(PROGRAMS / "out-k8s-namespace-gpu", first_preview)
    [deployment] = result.of_type("kubernetes:apps/v1:Deployment")
    assert re.fullmatch(r"research-[0-9a-z]{8}", deployment.inputs["metadata"]["namespace"])
    assert result.outputs["namespace"] == deployment.inputs["metadata"]["namespace"]
    assert (result.outputs["uid"] is None) == first_preview


@pytest.mark.parametrize("mode", ["plain", "firstPreview"])
@pytest.mark.parametrize("program", OUT_PROGRAMS, ids=lambda p: p.name)
def test_program_gets_its_verdict_through_the_cli(program: Path, mode: str):
    exp = yaml.safe_load((program / "expected.yaml").read_text())
    want = exp[mode]
    argv = ["check", exp["stack"], "--root", str(program), "--pack", str(PACK), "--format", "json"]
    result = CliRunner().invoke(app, argv + (["--first-preview"] if mode == "firstPreview" else []))
    assert result.exit_code == {"pass": 0, "fail": 1}[want["verdict"]], result.output
    [report] = json.loads(result.stdout)["stacks"]
    assert report["resources"] > 0
    assert sorted([v["policy"], v["name"]] for v in report["violations"]) == want["violations"]
