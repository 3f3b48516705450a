"""``hybridgpu check --root`` reads a project as the Pulumi CLI reads it (issue 25): ``runtime``, ``main``,
the project's own virtualenv, ``stackConfigDir``, stack references, and annotations on the program
line that registered a resource.

Upstream behaviour, pulumi/pulumi v3.259.0 (commit 1b59498):

* ``runtime`` is a string or ``{name, options}`` (``sdk/go/common/workspace/project.go``
  ``ProjectRuntimeInfo.UnmarshalYAML``); only ``python`` runs in the Python language host.
* ``main`` (a directory or a file, relative to the project directory) sets what runs and the working
  directory (``pkg/engine/project.go`` ``getPwdMain``; "project 'main' could not be read" when missing);
  the language host runs ``runpy.run_path(entry)`` (``sdk/python/cmd/pulumi-language-python-exec``).
* the environment: ``options.virtualenv`` relative to the project directory (pip), uv's ``.venv`` beside
  ``pyproject.toml``/``uv.lock``, poetry's ``poetry env info --path`` (``sdk/python/toolchain/toolchain.go``
  ``ResolveToolchain``, ``uv.go`` ``newUv``, ``poetry.go`` ``VirtualEnvPath``).
* ``stackConfigDir`` (or the old string ``config:``) relative to the project directory
  (``sdk/go/common/workspace/paths.go`` ``ProjectStackPath``, ``project.go`` ``RewriteConfigPathIntoStackConfigDir``).
* the SDK sends each registration's ``sourcePosition`` (pulumi 3.272 ``runtime/resource.py``
  ``_get_source_position``); GitHub's ``::error file=...,line=...`` takes a path relative to the checkout.

Each fixture under ``tests/fixtures/programs/proj-*`` is our own program; the expected verdict (exit
code and the key text) was written before it was run. One pack process serves the whole module
(``check_stacks`` reuses it), so the cases cost the programs' runs only.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell.policy import check as check_mod
from tests.helpers import ROOT

PROGRAMS = ROOT / "tests" / "fixtures" / "programs"
PACK = ROOT / "policies"
PYTHON = f"python{sys.version_info.major}.{sys.version_info.minor}"
TEAMLIB = '''import pulumi
import pulumi_aws as aws


def cost_tags(name):
    return {"team": "ml", "project": name, "cost-center": "cc-7"}


class Bucket(aws.s3.Bucket):
    @property
    @pulumi.getter(name="ownerTeam")
    def owner_team(self) -> pulumi.Output["Team"]:
        return pulumi.get(self, "owner_team")


class Team(str):
    pass
'''


def _check(root: Path, *extra: str, env: dict[str, str] | None = None, fmt: str = "json"):
    args = ["check", "dev", "--root", str(root), "--pack", str(PACK), "--format", fmt, *extra]
    return CliRunner().invoke(app, args, env={"GITHUB_WORKSPACE": str(ROOT), **(env or {})})


def _report(result) -> dict:
    [stack] = json.loads(result.stdout)["stacks"]
    return stack


def _violations(result) -> list[tuple[str, str, str]]:
    return sorted((v["policy"], v["level"], v["name"]) for v in _report(result)["violations"])


def _copy(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(PROGRAMS / name, dest)
    return dest


def _venv(venv: Path, *, shadow_pulumi_aws: bool = True) -> Path:
    """A virtualenv as `python -m venv` lays it out, holding the team's library (teamlib) and a
    pulumi_aws that fails on import: if it shadowed hybridgpu's, the run would fail."""
    site = venv / "lib" / PYTHON / "site-packages"
    (site / "teamlib").mkdir(parents=True)
    (site / "teamlib" / "__init__.py").write_text(TEAMLIB)
    if shadow_pulumi_aws:
        (site / "pulumi_aws").mkdir()
        (site / "pulumi_aws" / "__init__.py").write_text('raise ImportError("the project venv\'s pulumi_aws shadowed hybridgpu\'s")\n')
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return site


# --- main: ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [(), ("--first-preview",)], ids=["plain", "first-preview"])
def test_main_directory_runs_instead_of_a_stale_root_program(shared_pack, mode):
    # Expected: exit 0, the 2 tagged resources of src/ (the stale root __main__.py's untagged p5 would block).
    result = _check(PROGRAMS / "proj-main-dir", *mode)
    assert result.exit_code == 0, result.output
    assert _report(result)["resources"] == 2
    assert _violations(result) == []


def test_main_file_runs_in_its_own_directory(shared_pack):
    # Expected: exit 0; app/program.py opens tags.json relative to app/ (the CLI's working directory).
    result = _check(PROGRAMS / "proj-main-file")
    assert result.exit_code == 0, result.output
    assert _report(result)["resources"] == 1


def test_main_that_does_not_exist_names_pulumi_yaml_and_the_field():
    # Expected: exit 2 before anything runs: "<dir>/Pulumi.yaml: main: 'src/' does not exist".
    result = _check(PROGRAMS / "proj-main-missing")
    assert result.exit_code == 2
    assert "proj-main-missing/Pulumi.yaml: main: 'src/' does not exist" in result.stderr
    assert "Fix:" in result.stderr and "Traceback" not in result.output


# --- runtime: ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, text",
    [
        ("proj-runtime-nodejs", "Pulumi.yaml: runtime: nodejs: hybridgpu check runs Python programs"),
        ("proj-runtime-go", "Pulumi.yaml: runtime: go: hybridgpu check runs Python programs"),
        ("proj-no-runtime", "Pulumi.yaml: runtime: missing"),
    ],
)
def test_only_python_projects_run(name, text):
    # Expected: exit 2 naming Pulumi.yaml and runtime; the stray __main__.py never runs.
    result = _check(PROGRAMS / name)
    assert result.exit_code == 2
    assert text in " ".join(result.stderr.split())


def test_runtime_of_the_wrong_kind_and_a_missing_project_file(tmp_path):
    # Expected: exit 2 with the CLI's own wording for the runtime; exit 2 "name: missing" (the CLI requires a
    # name; without it the project would pass for hybridgpu's own); exit 2 naming Pulumi.yaml when it is missing.
    project = _copy("proj-no-runtime", tmp_path)
    (project / "Pulumi.yaml").write_text("name: x\nruntime: [python]\n")
    result = _check(project)
    assert result.exit_code == 2
    assert "runtime: must be a string or an object with name and options attributes" in " ".join(result.stderr.split())
    (project / "Pulumi.yaml").write_text("runtime: python\n")
    result = _check(project)
    assert result.exit_code == 2
    assert "Pulumi.yaml: name: missing" in " ".join(result.stderr.split())
    (project / "Pulumi.yaml").unlink()
    result = _check(project)
    assert result.exit_code == 2
    assert "Pulumi.yaml" in result.stderr and "Traceback" not in result.output


# --- the project's environment ----------------------------------------------------------------


def test_project_virtualenv_packages_import_after_hybridgpus(shared_pack, tmp_path):
    # Expected: exit 0, 2 resources (teamlib's Bucket and tags); hybridgpu's pulumi_aws wins over the
    # venv's broken one; teamlib stays importable until the runtime has resolved teamlib.Bucket's typed
    # outputs (they name teamlib.Team: "NameError: name 'Team' is not defined" if it were dropped when
    # the program body returns); afterwards neither the venv nor teamlib is left in this interpreter.
    project = _copy("proj-venv", tmp_path)
    site = _venv(project / "venv")
    path_before, aws_before = list(sys.path), sys.modules["pulumi_aws"]
    result = _check(project)
    assert result.exit_code == 0, result.output
    assert _report(result)["resources"] == 2
    assert sys.path == path_before and str(site) not in sys.path
    assert "teamlib" not in sys.modules and sys.modules["pulumi_aws"] is aws_before


def test_missing_virtualenv_runs_with_hybridgpus_packages_and_names_it_on_a_missing_import():
    # The CLI creates a missing virtualenv and installs requirements.txt (pulumi/pulumi v3.259.0
    # sdk/python/toolchain/pip.go EnsureVenv), so a fresh clone has none: not an error by itself.
    # Expected: the program imports teamlib, which only the virtualenv has -> exit 2 naming the
    # module, the virtualenv, its Pulumi.yaml field and `pulumi install`.
    result = _check(PROGRAMS / "proj-venv")
    assert result.exit_code == 2
    text = " ".join(result.stderr.split())
    assert "teamlib" in text
    assert "virtualenv venv (runtime.options.virtualenv in Pulumi.yaml) does not exist yet" in text
    assert "pulumi install" in text and "python -m venv venv && venv/bin/pip install -r requirements.txt" in text


def test_uv_toolchain_uses_dot_venv_beside_pyproject(shared_pack, tmp_path):
    # Expected: without .venv exit 2 naming teamlib and .venv; with it exit 0.
    project = _copy("proj-uv", tmp_path)
    result = _check(project)
    assert result.exit_code == 2
    assert "the project's virtualenv .venv (runtime.options.toolchain (uv" in " ".join(result.stderr.split())
    _venv(project / ".venv")
    result = _check(project)
    assert result.exit_code == 0, result.output


def test_missing_virtualenv_of_a_program_needing_only_the_sdks_is_checked(shared_pack, tmp_path):
    # Expected: a program importing only pulumi/pulumi_aws runs without its (not yet created)
    # virtualenv and gets its verdict: the untagged bucket blocks (exit 1), not exit 2.
    project = _copy("proj-venv", tmp_path)
    (project / "__main__.py").write_text('import pulumi_aws as aws\n\naws.s3.Bucket("logs")\n')
    result = _check(project)
    assert result.exit_code == 1, result.output
    assert "required-cost-tags" in result.output


def test_poetry_toolchain_asks_poetry_for_its_environment(shared_pack, tmp_path):
    # Expected: no poetry on PATH -> exit 2 saying so; a poetry that names an env -> exit 0 with teamlib from it.
    project = _copy("proj-poetry", tmp_path)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    result = _check(project, env={"PATH": str(empty)})
    assert result.exit_code == 2
    assert "runtime.options.toolchain: poetry" in result.stderr and "poetry is not installed" in " ".join(result.stderr.split())
    env_dir = tmp_path / "poetry-cache" / "proj-poetry-py3"
    _venv(env_dir)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    poetry = bin_dir / "poetry"
    poetry.write_text(f'#!/bin/sh\n[ "$1 $2 $3" = "env info --path" ] && echo "{env_dir}" && exit 0\nexit 1\n')
    poetry.chmod(poetry.stat().st_mode | stat.S_IXUSR)
    result = _check(project, env={"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert result.exit_code == 0, result.output


def test_a_module_in_neither_environment_names_module_line_and_fix(shared_pack):
    # Expected: exit 2: "__main__.py:3 (import teamlib_not_installed)", the module, requirements.txt.
    result = _check(PROGRAMS / "proj-missing-module")
    assert result.exit_code == 2
    text = " ".join(result.stderr.split())
    assert "proj-missing-module/__main__.py:3 (import teamlib_not_installed)" in text
    assert "the program imports 'teamlib_not_installed'" in text and "requirements.txt" in text


# --- stackConfigDir -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["proj-stack-config-dir", "proj-legacy-config"])
def test_stack_files_are_read_from_the_stack_config_dir(shared_pack, name):
    # Expected: exit 0: the instance's cost tags come from aws:defaultTags in configs/ (settings/).
    result = _check(PROGRAMS / name)
    assert result.exit_code == 0, result.output
    assert _violations(result) == []


# --- stack references ---------------------------------------------------------------------------


def test_unknown_stack_reference_value_fails_closed_on_the_property(shared_pack):
    # Expected: exit 1: gpu-instance-size names "instanceType is an unknown value"; the reference is an advisory line.
    result = _check(PROGRAMS / "proj-stackref-type")
    assert result.exit_code == 1
    violations = _report(result)["violations"]
    size = [v for v in violations if v["policy"] == "gpu-instance-size"]
    assert size and "instanceType is an unknown value" in size[0]["message"]
    [ref] = [v for v in violations if v["policy"] == "offline-unknown-stack-reference"]
    assert ref["level"] == "advisory" and "acme/gpu-platform/prod" in ref["message"] and "trainerType" in ref["message"]


@pytest.mark.parametrize("outputs, code", [("outputs-small.yaml", 0), ("outputs-big.json", 1)])
def test_stack_outputs_file_gives_the_real_value(shared_pack, outputs, code):
    # Expected (maxGpusPerInstance 1): g5.xlarge passes; g5.12xlarge (4 GPUs) blocks on gpu-instance-size, nothing else.
    root = PROGRAMS / "proj-stackref-type"
    result = _check(root, "--stack-outputs", str(root / outputs), "--policy-pack-config", str(root / "policy-config.json"))
    assert result.exit_code == code, result.output
    assert _violations(result) == ([] if code == 0 else [("gpu-instance-size", "mandatory", "trainer")])


def test_resources_inside_apply_of_an_unknown_reference_fail_closed(shared_pack):
    # Expected: exit 1, one mandatory offline-unknown-stack-reference naming the skipped callback (__main__.py:11).
    result = _check(PROGRAMS / "proj-stackref-apply")
    assert result.exit_code == 1
    assert _violations(result) == [("offline-unknown-stack-reference", "mandatory", "acme/gpu-platform/prod")]
    [finding] = _report(result)["violations"]
    assert "did not run (__main__.py:11)" in finding["message"] and "--stack-outputs" in finding["message"]
    assert (finding["file"], finding["line"]) == ("tests/fixtures/programs/proj-stackref-apply/__main__.py", 7)


def test_resources_inside_apply_are_checked_with_the_outputs_file(shared_pack):
    # Expected: exit 1: the two instances the callback creates are registered and blocked (untagged).
    root = PROGRAMS / "proj-stackref-apply"
    result = _check(root, "--stack-outputs", str(root / "outputs.yaml"))
    assert result.exit_code == 1
    assert _violations(result) == [("required-cost-tags", "mandatory", "trainer-0"), ("required-cost-tags", "mandatory", "trainer-1")]


@pytest.mark.parametrize("mode", [(), ("--first-preview",)], ids=["plain", "first-preview"])
def test_reference_used_only_as_input_is_an_advisory_line(shared_pack, mode):
    # Expected: exit 0 with a ::warning on the line that created the reference (no callback was skipped).
    result = _check(PROGRAMS / "proj-stackref-value", *mode, fmt="github")
    assert result.exit_code == 0, result.output
    [line] = result.stdout.splitlines()
    assert line.startswith("::warning file=tests/fixtures/programs/proj-stackref-value/__main__.py,line=6,title=hybridgpu/offline-unknown-stack-reference")


def test_secret_stack_output_and_a_bad_outputs_file(shared_pack):
    # Expected: with the file exit 0 and no finding (the secret token is a tag value); a malformed file: exit 2 naming it.
    root = PROGRAMS / "proj-stackref-value"
    result = _check(root, "--stack-outputs", str(root / "outputs.yaml"))
    assert result.exit_code == 0, result.output
    assert _violations(result) == []
    result = _check(root, "--stack-outputs", str(root / "Pulumi.yaml"))
    assert result.exit_code == 2
    assert "Pulumi.yaml: name: expected a mapping of output name to value" in " ".join(result.stderr.split())


# --- where violations are shown -----------------------------------------------------------------


def test_github_annotations_point_at_the_registering_line(shared_pack):
    # Expected: exit 1; untagged-here at __main__.py:6, untagged-there at storage.py:5 (the line inside the helper).
    result = _check(PROGRAMS / "proj-source-line", fmt="github")
    assert result.exit_code == 1
    lines = sorted(result.stdout.splitlines())
    base = "tests/fixtures/programs/proj-source-line"
    assert [line.split(",title=")[0] for line in lines] == [f"::error file={base}/__main__.py,line=6", f"::error file={base}/storage.py,line=5"]


def test_json_carries_file_and_line_and_stack_findings_name_the_stack_file(shared_pack):
    # Expected: JSON file/line as the annotations; the stack-level ceiling finding on the stack file (no line).
    result = _check(PROGRAMS / "proj-stackref-type")
    places = {v["policy"]: (v["file"], v["line"]) for v in _report(result)["violations"]}
    base = "tests/fixtures/programs/proj-stackref-type"
    assert places["gpu-instance-size"] == (f"{base}/__main__.py", 7)
    assert places["stack-gpu-ceiling"] == (f"{base}/Pulumi.dev.yaml", None)


def test_config_error_is_annotated_on_its_stack_file_line(tmp_path):
    # Expected: exit 2; ::error on configs/Pulumi.dev.yaml at the line of the un-namespaced key (3), fix names the project.
    project = _copy("proj-stack-config-dir", tmp_path)
    (project / "configs" / "Pulumi.dev.yaml").write_text("config:\n  aws:region: us-west-2\n  region: oops\n")
    result = _check(project, fmt="github", env={"GITHUB_WORKSPACE": str(tmp_path)})
    assert result.exit_code == 2
    [line] = result.stdout.splitlines()
    assert line.startswith("::error file=proj-stack-config-dir/configs/Pulumi.dev.yaml,line=3,")
    assert "write it as `proj-stack-config-dir:region`" in line


def test_answered_reference_outputs_carry_secrecy_and_dependencies():
    # Expected (as the engine resolves a StackReference): the value from the file, the secret output
    # marked secret on the wire, and the reference's URN among the input's property dependencies.
    from hybridgpu.shell.references import stack_outputs_from
    from hybridgpu.stack.files import read_stack_file

    root = PROGRAMS / "proj-stackref-value"
    raw = read_stack_file(root / "Pulumi.dev.yaml", root=root)
    with stack_outputs_from(root / "outputs.yaml"):
        result = check_mod._preview(root, check_mod._entrypoint(root), False, "proj-stackref-value", stack="dev", raw=raw)
    [group] = result.records
    ref = "urn:pulumi:dev::proj-stackref-value::pulumi:pulumi:StackReference::acme/network/prod"
    assert group.inputs["vpcId"] == "vpc-0123456789abcdef0"
    assert group.secret_paths == ["tags.owner-token"]
    assert group.property_dependencies["vpcId"] == [ref]
    assert result.check_findings == []
