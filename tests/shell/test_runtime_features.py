"""Pulumi runtime features under the offline check (issue 25): transforms, component methods (``Call``),
``secure:`` config and stable unknowns in ``--first-preview``.

Each ``rt-*`` program under tests/fixtures/programs/ is ours and reproduces one pattern that broke the
offline run; the expected verdicts below were written before the first run. The CLI cases run
``hybridgpu check`` end to end; the record cases look at what the offline preview registered (no pack).

Upstream behaviour followed:

- transforms run in the resource monitor before anything else of a registration: the resource's own,
  then its parents' (nearest first), then the stack's, each getting the previous one's properties and
  options (pulumi/pulumi ``pkg/resource/deploy/source_eval.go`` ``resmon.RegisterResource``, commit
  ae0d4ab5); the older ``transformations`` and ``register_stack_transformation`` run in the SDK
  (pulumi 3.272 ``resource.py`` ``Resource.__init__``); stack invoke transforms run on every invoke
  (``wrapInvokeTransformCallback``);
- a component method is a ``Call`` to the component's provider, which runs it in a preview too
  (``resmon.Call`` passes ``DryRun``); Pulumi's Python codegen nests the result class
  ``<Method>Result`` in the component class and passes it as ``typ`` (pulumi_eks
  ``Cluster.get_kubeconfig``, token ``eks:index:Cluster/getKubeconfig``);
- the CLI hands a program decrypted ``secure:`` values and lists their keys as secret
  (``PULUMI_CONFIG_SECRET_KEYS``), so ``config.require_secret`` returns a secret Output; offline the
  value is a placeholder naming the key, and a program that parses it cannot be checked (exit 2);
- an unknown value goes over the wire as ``04da6b54-80e4-46f7-96ec-b56ff0331ba9`` (pulumi
  ``runtime/rpc.py`` ``UNKNOWN``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell.invokes import answers_from, method_result_class
from hybridgpu.shell.policy.check import ProgramError, _entrypoint, _preview
from hybridgpu.shell.preview import PreviewResult, encrypted_placeholder
from hybridgpu.stack.files import project_name, read_stack_file
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

PROGRAMS = ROOT / "tests" / "fixtures" / "programs"
PACK = ROOT / "policies"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
COST_TAGS = {"team": "ml", "project": "gate", "cost-center": "cc-7"}
ANSWERS = PROGRAMS / "rt-component-method" / "answers.yaml"
OPAQUE = "offline-opaque-component"  # a remote component whose children nobody can see offline

# (program, stack, extra CLI arguments, expected exit code, expected (policy, resource) pairs or the
# texts the one-line error must hold). Written before the first run.
CASES = [
    # A stack transform adds the cost tags to an untagged GPU instance: it passes, in both modes.
    ("rt-stack-transform", "dev", (), 0, []),
    ("rt-stack-transform", "dev", ("--first-preview",), 0, []),
    # Own transform strips, stack transform re-adds (stack last): passes; parent's transform drops
    # cost-center after the child's own added it (parents after own): blocked.
    ("rt-transform-order", "dev", (), 1, [("required-cost-tags", "kept")]),
    # A resource transform removes the tags the instance was written with: blocked.
    ("rt-transform-strips", "dev", (), 1, [("required-cost-tags", "trainer")]),
    # A remote component's children (v2 ConfigGroup) get the component's and the stack's transforms:
    # the stack's labels the unlabelled Job, the component's own drops cost-center from the other.
    ("rt-transform-remote-children", "dev", (), 1, [("gpu-workload-cost-labels", "tune:ml/tune")]),
    # transformations=[...] empties cost-center, the stack transformation (run after it) keeps it empty.
    ("rt-legacy-transformations", "dev", (), 1, [("required-cost-tags", "logs")]),
    # The tags come from a component method only the provider can answer: without an answer the
    # instance is untagged; the remote component itself is reported as unseen.
    ("rt-component-method", "dev", (), 1, [(OPAQUE, "platform"), ("required-cost-tags", "trainer")]),
    # ... with the answer in --invoke-answers the tags are there, also in a first preview.
    ("rt-component-method", "dev", ("--first-preview", "--invoke-answers", str(ANSWERS)), 1, [(OPAQUE, "platform")]),
    # A method no loaded class declares: exit 2 naming the token and the fix.
    ("rt-method-unknown", "dev", (), 2, ["unknown component method myco:index:Ghost/describe", "--invoke-answers"]),
    # A secret cost center used as a tag value: passes.
    ("rt-secret-config", "dev", ("--first-preview",), 0, []),
    # require_secret_int / json.loads of an encrypted value: exit 2 naming the file and the key.
    ("rt-secret-config", "int", (), 2, ["Pulumi.int.yaml: rt-secret-config:gpuCount:", "encrypted", "cannot be read offline", "Fix:"]),
    ("rt-secret-config", "json", (), 2, ["Pulumi.json.yaml: rt-secret-config:settings:", "encrypted", "plaintext value"]),
]


@pytest.mark.parametrize(
    ("program", "stack", "extra", "code", "expected"), CASES, ids=[f"{c[0]}-{c[1]}{'-first' if '--first-preview' in c[2] else ''}" for c in CASES]
)
def test_program_gets_its_verdict_through_the_cli(program: str, stack: str, extra: tuple[str, ...], code: int, expected: list):
    argv = ["check", stack, "--root", str(PROGRAMS / program), "--pack", str(PACK), "--format", "json", *extra]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == code, result.output
    if code == 2:
        line = " ".join(result.output.split())
        assert "Traceback" not in result.output
        for text in expected:
            assert text in line
        return
    [report] = json.loads(result.stdout)["stacks"]
    assert sorted((v["policy"], v["name"]) for v in report["violations"]) == sorted(expected)


def _records(program: str, first_preview: bool = False, stack: str = "dev") -> PreviewResult:
    """The offline preview ``hybridgpu check`` makes of a fixture program (no pack)."""
    root = PROGRAMS / program
    raw = read_stack_file(root / f"Pulumi.{stack}.yaml", root=root)
    return _preview(root, _entrypoint(root), first_preview, project_name(root), stack=stack, raw=raw)


def _by_name(result: PreviewResult) -> dict:
    return {r.name: r for r in result.records}


def test_recorded_inputs_are_the_transformed_ones():
    trainer = _by_name(_records("rt-stack-transform"))["trainer"]
    # The stack transform's tags, and the AMI lookup's name filter as the invoke transform set it.
    assert trainer.inputs["tags"] == {**COST_TAGS, "Name": "trainer", "image-filter": "^ml-gpu-.*"}
    records = _by_name(_records("rt-transform-order"))
    assert records["stripped"].inputs["tags"] == COST_TAGS
    assert records["kept"].inputs["tags"] == {"Name": "kept", "team": "ml", "project": "gate"}
    assert records["kept"].parent == records["data"].urn
    assert "tags" not in _by_name(_records("rt-transform-strips"))["trainer"].inputs


def test_a_component_method_result_reaches_the_resource_that_uses_it():
    plain = _by_name(_records("rt-component-method"))
    value = plain["kubeconfig"].inputs["value"]
    assert isinstance(value, str) and value.startswith("mock-result-")  # from Thing.GetKubeconfigResult.result
    assert value == _by_name(_records("rt-component-method"))["kubeconfig"].inputs["value"]  # deterministic
    assert plain["trainer"].inputs["tags"] == {}  # Mapping[str, str]: nothing known without an answer
    with answers_from(ANSWERS):
        assert _by_name(_records("rt-component-method"))["trainer"].inputs["tags"] == COST_TAGS
    # A first preview: the component's children do not exist, the method's result is unknown.
    first = _by_name(_records("rt-component-method", first_preview=True))
    assert first["kubeconfig"].inputs["value"] == UNKNOWN and first["trainer"].inputs["tags"] == UNKNOWN


def test_first_preview_records_hold_the_wire_marker_for_unknowns():
    runs = [[(r.urn, r.inputs) for r in _records("rt-component-method", first_preview=True)._stable()] for _ in range(2)]
    dumped = [json.dumps(run, sort_keys=True) for run in runs]
    assert dumped[0] == dumped[1]  # byte-identical between runs
    assert UNKNOWN in dumped[0] and "object at 0x" not in dumped[0]


def test_an_encrypted_value_reaches_the_program_as_a_secret_placeholder():
    key = "rt-secret-config:costCenter"
    [trainer] = _records("rt-secret-config").records
    assert trainer.inputs["tags"]["cost-center"] == encrypted_placeholder(key) == f"[secret {key}]"
    assert trainer.secret_paths == ["tags.cost-center"]  # require_secret: marked secret on the wire


def test_a_transform_that_raises_is_one_line_naming_its_line():
    with pytest.raises(ProgramError) as failed:
        _records("rt-transform-raises")
    text = str(failed.value)
    assert "rt-transform-raises/__main__.py:9" in text and "ValueError: logs: buckets need an owner tag" in text


def test_a_method_result_class_is_found_as_the_codegen_nests_it():
    import pulumi_aws

    # pulumi_aws 7.51.1 provider.py: Provider.terraform_config calls pulumi:providers:aws/terraformConfig
    # with typ=Provider.TerraformConfigResult.
    assert method_result_class("pulumi:providers:aws/terraformConfig") == (True, pulumi_aws.Provider.TerraformConfigResult)
    assert method_result_class("nosuch:index:Thing/getIt") == (False, None)
    assert method_result_class("aws:ec2/getAmi:getAmi") == (False, None)  # an invoke, not a method
