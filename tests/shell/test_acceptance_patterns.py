"""Patterns public Pulumi programs use that broke the offline check (issue 25 acceptance run).

Each ``tests/fixtures/programs/ap-*`` program is our own re-creation of a pattern seen in public
programs (pulumi/examples, pulumi-awsx and pulumi-eks examples, templates), run end to end through
``hybridgpu check`` in both modes; the expected verdicts were written before the first run.

Upstream behaviour relied on:
- ``pulumi preview`` is a dry run (``pulumi.runtime.is_dry_run()`` True) and an output the engine
  does not know is unknown in it, not ``None`` (pulumi 3.272 ``pulumi/runtime/rpc.py``
  ``resolve_outputs``: a missing property of a dry run resolves unknown);
- a remote component's outputs are what its provider's ``Construct`` returns (pulumi/pulumi
  ``pkg/resource/deploy/source_eval.go``, ``RegisterResource`` with ``remote``), mostly resource
  references: nothing offline can stand for them.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

PROGRAMS = ROOT / "tests" / "fixtures" / "programs"
PACK = ROOT / "policies"
MODES = {"plain": [], "first-preview": ["--first-preview"]}


def _check(name: str, *extra: str):
    args = ["check", "dev", "--root", str(PROGRAMS / name), "--pack", str(PACK), "--format", "json", *extra]
    return CliRunner().invoke(app, args)


def _policies(result) -> list[list[str]]:
    [stack] = json.loads(result.stdout)["stacks"]
    return sorted([v["policy"], v["name"]] for v in stack["violations"])


# name -> (exit code, [[policy, resource name], ...] or a text the one-line error holds), both modes.
EXPECTED = {
    # Remote component outputs unknown: the program runs to the end; the component is opaque.
    "ap-remote-typed-outputs": (1, [["offline-opaque-component", "net"]]),
    # The "only on up" guard is not taken in a preview: the untagged bucket is reported.
    "ap-dry-run-guard": (1, [["required-cost-tags", "site"]]),
    # status unknown in a preview: the export's apply does not run; nothing GPU, nothing AWS.
    "ap-k8s-service-status": (0, []),
    # uris left unknown, not {}: the untagged API is what is reported.
    "ap-service-keyed-map": (1, [["required-cost-tags", "api"]]),
    # The program's print goes to stderr: stdout is the JSON report.
    "ap-program-prints": (1, [["required-cost-tags", "logs"]]),
    # json.loads of a made-up secret fails: exit 2 naming the invoke and --invoke-answers. In both
    # modes: a data source exists before the stack does, so a first preview answers it too (first
    # written as "unknown in --first-preview"; revised: the engine runs invokes in every preview).
    "ap-parsed-secret-invoke": (2, "aws:secretsmanager/getSecretVersion:getSecretVersion"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_public_program_pattern_gets_its_verdict(name: str, mode: str):
    code, want = EXPECTED[name]
    result = _check(name, *MODES[mode])
    assert result.exit_code == code, (result.stdout, result.stderr)
    if isinstance(want, str):
        text = " ".join(result.stderr.split())
        assert want in text and "--invoke-answers" in text and "Traceback" not in text
    else:
        assert _policies(result) == want


def test_program_prints_go_to_stderr():
    result = _check("ap-program-prints")
    assert "hello from the program" in result.stderr
    json.loads(result.stdout)  # parses: nothing but the report


def test_answers_file_supplies_the_parsed_secret():
    # Expected: with the secret's JSON given, the bucket's tags are known and complete: exit 0.
    result = _check("ap-parsed-secret-invoke", "--invoke-answers", str(PROGRAMS / "ap-parsed-secret-invoke" / "answers.yaml"))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert _policies(result) == []
