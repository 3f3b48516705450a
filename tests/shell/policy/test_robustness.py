"""``hybridgpu check`` on programs that broke the offline run: it never crashes, never hangs and
behaves as the Pulumi CLI would (issue 25).

Each fixture under ``tests/fixtures/programs/run-*`` is a small program of ours reproducing one
pattern; the expected verdict (exit code and what is reported) was written before the run:

* ``run-resource-refs``: Resource objects in a component's inputs (the SDK sends resource
  references). The CLI hands analyzers a custom resource as its id and a component as its URN
  (pulumi/pulumi ``sdk/go/common/resource/plugin/rpc.go`` ``MarshalPropertyValue`` without
  ``KeepResources``, as ``analyzer_plugin.go`` marshals), so the pack reads them; expected: exit 1,
  exactly one violation (``required-cost-tags`` on the untagged security group ``sg``), in plain and
  ``--first-preview`` mode (which used to hang).
* ``run-exit-zero``: ``sys.exit(0)`` after registering an untagged VPC: the program ends
  normally, the VPC is checked; expected exit 1, ``required-cost-tags`` on ``logs``.
* ``run-exit-nonzero``: ``sys.exit(3)``: the CLI fails the run ("Program exited with non-zero exit
  code"); expected exit 2 naming the stack and the code.
* ``run-no-resources``: registers nothing; expected exit 2, "registered 0 resources".
* ``run-hang``: never finishes; expected exit 2 after the time limit, and no pack process left.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell.policy import check as check_mod
from hybridgpu.shell.preview import without_resource_references
from tests.helpers import ROOT

PROGRAMS = ROOT / "tests" / "fixtures" / "programs"
PACK = ROOT / "policies"


def _check(name: str, *extra: str, env: dict[str, str] | None = None):
    args = ["check", "dev", "--root", str(PROGRAMS / name), "--pack", str(PACK), "--format", "json", *extra]
    return CliRunner().invoke(app, args, env=env)


def _violations(result) -> list[tuple[str, str]]:
    [stack] = json.loads(result.stdout)["stacks"]
    return sorted((v["policy"], v["name"]) for v in stack["violations"])


@pytest.mark.usefixtures("shared_pack")  # the pack's own start and stop are tested below
@pytest.mark.parametrize("mode", [(), ("--first-preview",)], ids=["plain", "first-preview"])
def test_resource_references_reach_the_pack_as_ids_and_urns(mode):
    result = _check("run-resource-refs", *mode)
    assert result.exit_code == 1, result.output
    assert _violations(result) == [("required-cost-tags", "sg")]
    assert json.loads(result.stdout)["stacks"][0]["resources"] == 4


def test_a_reference_becomes_the_id_or_the_urn_as_the_cli_marshals_it():
    from google.protobuf import json_format, struct_pb2

    sig, rsig = "4dabf18193072939515e22adb298388d", "5cf8f73096256a8f31e491e813e4eb8e"
    s = struct_pb2.Struct()
    s.update(
        {
            "custom": {sig: rsig, "urn": "urn:a", "id": "vpc-1"},
            "unknownId": {sig: rsig, "urn": "urn:b", "id": ""},
            "component": {sig: rsig, "urn": "urn:c"},
            "nested": [{"x": {sig: rsig, "urn": "urn:d", "id": "sg-1"}}],
            "plain": "text",
        }
    )
    out: Any = json_format.MessageToDict(without_resource_references(s))
    assert out["custom"] == "vpc-1"
    assert out["unknownId"] == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the unknown marker, as KeepUnknowns sends it
    assert out["component"] == "urn:c"
    assert out["nested"][0]["x"] == "sg-1"
    assert out["plain"] == "text"
    plain = struct_pb2.Struct()
    plain.update({"a": 1})
    assert without_resource_references(plain) is plain


@pytest.mark.usefixtures("shared_pack")  # the pack's own start and stop are tested below
@pytest.mark.parametrize("mode", [(), ("--first-preview",)], ids=["plain", "first-preview"])
def test_sys_exit_zero_ends_the_program_normally_and_what_it_registered_is_checked(mode):
    result = _check("run-exit-zero", *mode)
    assert result.exit_code == 1, result.output
    assert _violations(result) == [("required-cost-tags", "logs")]


@pytest.mark.usefixtures("shared_pack")  # the pack's own start and stop are tested below
def test_sys_exit_nonzero_fails_naming_the_stack_and_the_code():
    result = _check("run-exit-nonzero")
    assert result.exit_code == 2, result.output
    assert "stack dev: the program exited with non-zero exit code: 3" in result.output
    assert "Traceback" not in result.output


@pytest.mark.usefixtures("shared_pack")  # the pack's own start and stop are tested below
def test_a_stack_that_registers_nothing_is_reported_not_passed():
    result = _check("run-no-resources", "--first-preview")
    assert result.exit_code == 2, result.output
    assert "stack dev: the program registered 0 resources" in result.output
    assert "nothing was checked" in result.output


def test_a_program_that_never_finishes_is_stopped_and_the_pack_process_with_it(monkeypatch):
    started: list[check_mod.Analyzer] = []

    class Recorded(check_mod.Analyzer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(check_mod, "Analyzer", Recorded)
    result = _check("run-hang", env={check_mod.TIMEOUT_ENV: "1.5"})
    assert result.exit_code == 2, result.output
    assert "stack dev: the program did not finish within 1.5 s under the offline mocks" in result.output
    assert check_mod.TIMEOUT_ENV in result.output
    assert started and all(a._proc.poll() is not None for a in started)


def test_a_bad_time_limit_is_a_clear_error():
    result = _check("run-no-resources", env={check_mod.TIMEOUT_ENV: "soon"})
    assert result.exit_code == 2
    assert "HYBRIDGPU_CHECK_TIMEOUT='soon' is not a positive number" in result.output


def test_a_timed_out_run_frees_the_worker_thread_stuck_in_the_mock_monitor(monkeypatch):
    """A registration stuck on its worker thread's event loop, as the first-preview hang was (the
    stock monitor rebuilding a referenced resource there and waiting forever for outputs only the
    program's loop resolves): the time limit stops the run, and the stuck worker is released, so a
    timed-out ``hybridgpu check`` can exit (the executor's threads are joined at exit). The stuck
    wait is made explicit: the old code path itself now fails fast or hangs depending on timing."""
    import asyncio
    import sys
    import time

    from hybridgpu.shell import preview
    from hybridgpu.stack.files import read_stack_file

    real = preview.FirstPreviewMocks.new_resource

    def never_answers(self, args):
        if args.name == "sg":  # waits on the worker thread's own loop, as the rebuilt reference did
            asyncio.get_event_loop().run_until_complete(asyncio.sleep(3600))
        return real(self, args)

    monkeypatch.setattr(preview.FirstPreviewMocks, "new_resource", never_answers)
    root = PROGRAMS / "run-resource-refs"
    raw = read_stack_file(root / "Pulumi.dev.yaml", root=root)
    with pytest.raises(preview.PreviewTimeoutError):
        preview.run_preview("dev", root, program=check_mod._entrypoint(root), first_preview=True, raw=raw, project=root.name, timeout=1.5)

    def stuck() -> list[str]:
        frames = sys._current_frames().values()
        return [str(f) for f in frames if any(fs.name == "RegisterResource" for fs in _stack(f))]

    deadline = time.monotonic() + 5
    while stuck() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stuck() == []


def _stack(frame):
    import traceback

    return traceback.extract_stack(frame)


@pytest.mark.parametrize("first_preview", [False, True], ids=["plain", "first-preview"])
def test_no_resource_is_rebuilt_on_a_worker_thread(monkeypatch, first_preview):
    """The cause of "attached to a different loop" (about one run in 25 of a program with many
    references, measured under load before the fix): the stock mock monitor rebuilt each referenced
    resource (``deserialize_resource``) on its worker thread's event loop, and the rebuilt resource's
    RPCs and outputs went into the runtime's global lists, which the program's loop awaits. Now the
    mocks get ids and URNs, so nothing is rebuilt off the main thread (deterministic, unlike the race)."""
    import threading

    from pulumi.runtime import rpc

    from hybridgpu.shell import preview
    from hybridgpu.stack.files import read_stack_file

    rebuilt: list[str] = []
    original = rpc.deserialize_resource

    def spy(ref_struct, *args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            rebuilt.append(str(ref_struct["urn"]))
        return original(ref_struct, *args, **kwargs)

    monkeypatch.setattr(rpc, "deserialize_resource", spy)
    root = PROGRAMS / "run-resource-refs"
    raw = read_stack_file(root / "Pulumi.dev.yaml", root=root)
    result = preview.run_preview("dev", root, program=check_mod._entrypoint(root), first_preview=first_preview, raw=raw, project=root.name, timeout=30)
    assert len(result.records) == 4
    assert rebuilt == []


def test_ctrl_c_during_a_program_stops_the_pack_process(monkeypatch):
    started: list[check_mod.Analyzer] = []

    class Recorded(check_mod.Analyzer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(check_mod, "Analyzer", Recorded)
    monkeypatch.setattr(check_mod, "run_preview", interrupted)
    with pytest.raises(KeyboardInterrupt):
        check_mod.check_stacks(["dev"], PROGRAMS / "run-exit-zero", pack_dir=PACK)
    assert started and all(a._proc.poll() is not None for a in started)


@pytest.mark.usefixtures("shared_pack")  # the pack's own start and stop are tested below
def test_every_stack_of_a_multi_file_program_registers_its_modules_resources():
    """Under the CLI each stack runs in a fresh language host, so `import network` registers the VPC
    in both stacks; a module cached by the first run registered nothing in the second (found on
    pulumi/examples aws-py-eks: 19 resources, then 2). Expected: both stacks fail required-cost-tags on `shared`."""
    args = ["check", "dev", "prod", "--root", str(PROGRAMS / "run-two-stacks-module"), "--pack", str(PACK), "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    stacks = json.loads(result.stdout)["stacks"]
    assert [s["stack"] for s in stacks] == ["dev", "prod"]
    for stack in stacks:
        assert sorted((v["policy"], v["name"]) for v in stack["violations"]) == [("required-cost-tags", "shared")], stack
    assert "network" not in sys.modules
