"""Issue 29, "The first day": `make preview` needs only the package, `hybridgpu init` writes a stack that
validates, `validate` warns about two stacks creating one EKS cluster, and showback names what it could not
attribute.

Through the CLI (typer's runner at 80 columns, output not a terminal), in scratch projects.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.config.aws_names import CLUSTER_NAME_MAX_LENGTH
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan

runner = CliRunner(env={"COLUMNS": "80"})
TAGS = ["--tag", "team=ml", "--tag", "project=first", "--tag", "cost-center=cc-1"]
INVENTORY = ROOT / "stacks/inventory/onprem-site-a.yaml"

# ---- make: `make preview` installs the package only; `make test` says what it installs and why


def _make_dry_run(target: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # -B: every recipe, as on a fresh clone; -n: print, run nothing
    proc = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_preview_installs_only_the_package():
    commands = _make_dry_run("preview")
    for tool in ("apt-get", "npm", "checkov", "promtool", "shellcheck", "[test]", ".venv-tools"):
        assert tool not in commands, f"`make preview` runs {tool}:\n{commands}"
    assert "pip install --quiet -e ." in commands and "hybridgpu preview" in commands


def test_make_test_says_what_it_installs_and_why():
    commands = _make_dry_run("test")
    for tool in ("shellcheck", "checkov", "promtool", "npm ci", "'.[test]'"):
        echoes = [line for line in commands.splitlines() if line.lstrip().startswith("echo") and "make test: installing" in line or
                  "make test: extracting" in line]
        assert any(tool in line for line in echoes), f"no line says why `make test` installs {tool}:\n{commands}"


# ---- hybridgpu init


def _init(project: Path, *args: str):
    return runner.invoke(app, ["init", *args, "--root", str(project)])


def _validates(project: Path, stack: str) -> None:
    result = runner.invoke(app, ["validate", stack, "--root", str(project)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output, result.output


@pytest.fixture
def site_inventory(scratch_project) -> tuple[Path, str]:
    """A project with a copy of the example inventory whose SSH key comes from an environment variable and
    whose Site has no dataset storage (neither needs a value init cannot write); the inventory's path."""
    project = scratch_project()
    docs = list(yaml.safe_load_all(INVENTORY.read_text()))
    docs[0].pop("storage", None)
    text = yaml.safe_dump_all(docs, sort_keys=False).replace("pulumiConfig: onprem:sshKey", "env: SITE_SSH_KEY")
    (project / "inventory").mkdir()
    (project / "inventory/site.yaml").write_text(text)
    return project, "inventory/site.yaml"


@pytest.mark.parametrize(
    "args",
    [
        ["first", "--cloud"],
        ["first", "--cloud", "--nvidia"],
        ["first", "--cloud", "--region", "eu-west-1"],
        ["first", "--cloud", "--environment", "staging"],
        ["first", "--cloud", "--cluster-name", "my-own-cluster"],
        ["team_a.v2", "--cloud"],
        ["_x", "--cloud", "--nvidia", "--region", "ap-southeast-2"],
        ["n" * 100, "--cloud"],
    ],
    ids=["cloud", "cloud-nvidia", "region", "staging", "cluster-name", "dots-underscores", "underscore-first", "100-chars"],
)
def test_init_writes_a_stack_that_validates(scratch_project, args):
    project = scratch_project()
    result = _init(project, *args, *TAGS)
    assert result.exit_code == 0, result.output
    name = args[0]
    path = project / "stacks" / f"Pulumi.{name}.yaml"
    assert f"wrote stacks/Pulumi.{name}.yaml" in " ".join(result.output.split())
    _validates(project, name)
    config = yaml.safe_load(path.read_text())["config"]
    assert set(config) <= {"aws:region", "hybridgpu:environment", "hybridgpu:tags", "hybridgpu:cloud", "hybridgpu:nvidia"}
    assert ("hybridgpu:nvidia" in config) == ("--nvidia" in args)
    cluster = config["hybridgpu:cloud"]["cluster"]["name"]
    assert len(cluster) <= CLUSTER_NAME_MAX_LENGTH and cluster.startswith("my-own" if "--cluster-name" in args else "gpu-")
    assert config["hybridgpu:tags"] == {"team": "ml", "project": "first", "cost-center": "cc-1"}


def test_init_onprem_and_both_sides(site_inventory):
    project, inventory = site_inventory
    result = _init(project, "site", "--onprem", str(project / inventory), "--nvidia", *TAGS)
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((project / "stacks/Pulumi.site.yaml").read_text())["config"]
    assert "hybridgpu:cloud" not in config and "aws:region" not in config
    assert config["hybridgpu:onprem"] == {"inventory": [inventory]}, "the inventory path is kept relative to the project"
    _validates(project, "site")
    result = _init(project, "both", "--cloud", "--onprem", str(project / inventory), "--nvidia", *TAGS)
    assert result.exit_code == 0, result.output
    _validates(project, "both")


def test_init_joins_a_burst_plan_only_when_the_plan_names_the_stack(scratch_project):
    """``--burst PLAN`` writes ``hybridgpu:burst.plan`` and the stack is validated against the plan (role,
    reachability of the workers: hybridgpu/stack/burst.py): a plan that does not name the stack, or a
    manager the worker's private endpoint does not admit, is refused and nothing is written; a manager
    the plan names and the worker admits is written and validates."""
    def admit(config):
        config["hybridgpu:cloud"]["cluster"]["endpoint"]["privateAccessCidrs"].append("10.64.0.0/16")

    project = scratch_project(plan=example_plan(), stack_edits={"prod": admit})
    (project / "stacks/Pulumi.hybrid.yaml").unlink()
    plan = str(project / "stacks/burst/site-a.yaml")
    result = _init(project, "newcomer", "--cloud", "--burst", plan, *TAGS)
    assert result.exit_code == 2 and "takes no part in stacks/burst/site-a.yaml" in result.output and "nothing written" in result.output
    assert not (project / "stacks/Pulumi.newcomer.yaml").exists()
    result = _init(project, "hybrid", "--cloud", "--region", "us-east-1", "--burst", plan, *TAGS)
    assert result.exit_code == 0, result.output
    assert "burst plan stacks/burst/site-a.yaml" in " ".join(result.output.split())
    config = yaml.safe_load((project / "stacks/Pulumi.hybrid.yaml").read_text())["config"]
    assert config["hybridgpu:burst"] == {"plan": "stacks/burst/site-a.yaml"}
    assert config["hybridgpu:cloud"]["network"]["new"]["cidr"] == "10.64.0.0/16"
    _validates(project, "hybrid")


def test_init_picks_a_cluster_name_and_vpc_no_other_stack_uses(scratch_project):
    project = scratch_project(stacks=["dev"])  # gpu-dev in us-west-2, VPC 10.64.0.0/16
    result = _init(project, "dev_", "--cloud", *TAGS)  # the default name would be gpu-dev
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((project / "stacks/Pulumi.dev_.yaml").read_text())["config"]
    assert config["hybridgpu:cloud"]["cluster"]["name"] == "gpu-dev-2"
    assert config["hybridgpu:cloud"]["network"]["new"]["cidr"] == "10.65.0.0/16"
    _validates(project, "dev_")
    result = _init(project, "west", "--cloud", "--region", "eu-west-1", "--cluster-name", "gpu-dev", *TAGS)
    assert result.exit_code == 0, "another region may reuse the name: " + result.output
    _validates(project, "west")


def test_init_writes_the_same_bytes_for_the_same_input(tmp_path):
    from tests.helpers.scratch import make_project

    texts = []
    for n in range(2):
        project = make_project(tmp_path / str(n))
        assert _init(project, "same", "--cloud", "--nvidia", *TAGS).exit_code == 0
        texts.append((project / "stacks/Pulumi.same.yaml").read_bytes())
    assert texts[0] == texts[1]
    assert max(len(line) for line in texts[0].decode().splitlines()) <= 80


def _refused(result, project: Path, *words: str) -> str:
    out = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    for word in words:
        assert word in out, (word, out)
    return out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["my stack", "--cloud"], ["not a Pulumi stack name", "my-gpus"]),
        (["1st", "--cloud"], ["not a Pulumi stack name"]),
        (["org/proj/dev2", "--cloud"], ["qualified stack reference", "'dev2'"]),
        (["n" * 101, "--cloud"], ["at most 100"]),
        (["first"], ["--cloud", "--onprem INVENTORY"]),
        (["first", "--onprem", "no/such/inventory.yaml"], ["inventory.yaml", "nothing written"]),
        (["first", "--cluster-name", "gpu-x", "--onprem", str(INVENTORY)], ["give --cloud too"]),
        (["first", "--cloud", "--cluster-name", "9-lives"], ["hybridgpu:cloud.cluster.name", "nothing written"]),
        (["first", "--cloud", "--cluster-name", "gpu-dev"], ["stacks/Pulumi.dev.yaml already creates", "us-west-2"]),
        (["first", "--cloud", "--region", "mars"], ["aws:region", "us-west-2", "nothing written"]),
        (["first", "--cloud", "--environment", "qa"], ["qa"]),
        (["dev", "--cloud"], ["stacks/Pulumi.dev.yaml exists", "never overwrites"]),
    ],
    ids=["space", "digit-first", "qualified", "101-chars", "no-section", "missing-inventory", "cluster-name-without-cloud",
         "bad-cluster-name", "cluster-name-taken", "bad-region", "bad-environment", "exists"],
)
def test_init_refuses(scratch_project, args, words):
    project = scratch_project(stacks=["dev"])
    before = {p.name: p.read_bytes() for p in (project / "stacks").iterdir()}
    result = _init(project, *args, *TAGS)
    _refused(result, project, *words)
    assert {p.name: p.read_bytes() for p in (project / "stacks").iterdir()} == before, "init wrote or changed a file"


@pytest.mark.parametrize(
    ("tags", "words"),
    [
        (["--tag", "team=ml"], ["missing project, cost-center", "--tag project=NAME --tag cost-center=NAME"]),
        (["--tag", "team"], ["--tag 'team'", "KEY=VALUE"]),
        ([*TAGS, "--tag", "team=again"], ["given twice"]),
    ],
    ids=["missing-tags", "not-key-value", "twice"],
)
def test_init_refuses_bad_tags(project, tags, words):
    _refused(runner.invoke(app, ["init", "first", "--cloud", *tags, "--root", str(project)]), project, *words)
    assert not (project / "stacks/Pulumi.first.yaml").exists()


def test_init_names_a_stack_directory_it_cannot_create(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (project / "stacks").write_text("a file where the stack directory belongs\n")
    out = _refused(_init(project, "first", "--cloud", *TAGS), project, "stacks", "fix:")
    assert "exists; init never overwrites" not in out


def test_init_refuses_an_inventory_that_needs_the_nvidia_layer(site_inventory):
    project, inventory = site_inventory
    out = _refused(_init(project, "site", "--onprem", inventory and str(project / inventory), *TAGS), project, "MIG", "migStrategy")
    assert "nothing written" in out and not (project / "stacks/Pulumi.site.yaml").exists()


# ---- validate: two stacks, one EKS cluster


def _copy_dev(config: dict, *, region: str | None = None, accounts: list[str] | None = None) -> None:
    if region:
        config["aws:region"] = region
        config["hybridgpu:cloud"]["network"]["new"]["availabilityZones"] = [f"{region}a", f"{region}b"]
    if accounts:
        config["aws:allowedAccountIds"] = accounts


def _with_second_dev(scratch_project, **edit):
    from tests.helpers.scratch import example_stack, write_stack

    project = scratch_project(stacks=["dev"])
    doc = example_stack("dev")
    _copy_dev(doc["config"], **edit)
    write_stack(project, "dev-copy", doc)
    return project


def test_validate_warns_when_two_stacks_create_one_cluster(scratch_project):
    project = _with_second_dev(scratch_project)
    result = runner.invoke(app, ["validate", "dev", "--root", str(project)])
    assert result.exit_code == 0, result.output
    warning = " ".join(result.stderr.split())
    for word in ("warning:", "stacks/Pulumi.dev.yaml and stacks/Pulumi.dev-copy.yaml", "`gpu-dev`", "us-west-2",
                 "hybridgpu:cloud.cluster.name", "aws:allowedAccountIds"):
        assert word in warning, (word, warning)
    assert all(len(line) <= 80 or " " not in line.strip() for line in result.stderr.splitlines()), result.stderr
    as_json = runner.invoke(app, ["validate", "dev", "--root", str(project), "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["stack"] == "dev" and "gpu-dev" in as_json.stderr, as_json.output
    other = runner.invoke(app, ["validate", "dev-copy", "--root", str(project)])
    assert other.exit_code == 0 and "stacks/Pulumi.dev-copy.yaml and stacks/Pulumi.dev.yaml" in " ".join(other.stderr.split())


@pytest.mark.parametrize(
    "edit",
    [{"region": "eu-west-1"}, {"accounts": ["111111111111"]}],
    ids=["other-region", "one-account-pinned"],
)
def test_validate_warns_only_when_account_and_region_may_be_shared(scratch_project, edit):
    project = _with_second_dev(scratch_project, **edit)
    result = runner.invoke(app, ["validate", "dev", "--root", str(project)])
    assert result.exit_code == 0, result.output
    if "accounts" in edit:  # dev pins no account: it may deploy to 111111111111 too
        assert "gpu-dev" in result.stderr
        (project / "stacks/Pulumi.dev.yaml").write_text(
            (project / "stacks/Pulumi.dev.yaml").read_text().replace("config:\n", "config:\n  aws:allowedAccountIds: ['222222222222']\n", 1))
        result = runner.invoke(app, ["validate", "dev", "--root", str(project)])
        assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr, result.stderr


def test_the_example_stacks_create_distinct_clusters():
    for stack in ("dev", "hybrid", "prod"):
        result = runner.invoke(app, ["validate", stack, "--root", str(ROOT)])
        assert result.exit_code == 0 and "warning" not in result.stderr, result.output


# ---- showback: usage that matches no team is reported, not silently in (unattributed)

SHOWBACK = ROOT / "tests/fixtures/showback"


def test_showback_reports_usage_that_matches_no_team(tmp_path):
    export = tmp_path / "usage.csv"
    export.write_text(
        "kind,start,namespace,pod,labels,capacity_type,gpu_model,mig_profile,gpus,hours,gpu_utilization\n"
        "allocation,2026-11-01,nlp,a-0,team=nlp,owned,H100-80GB,,1,10,\n"
        "allocation,2026-11-01,shared,b-0,team=nlp-reserch,owned,H100-80GB,,2,3,\n"  # a misspelt team label
        "allocation,2026-11-01,shared,b-1,team=nlp-reserch,owned,H100-80GB,,1,1,\n"
        "allocation,2026-11-02,sandbox,c-0,,spot,H100-80GB,,1,2.5,\n"
    )
    args = ["cost", "showback", str(export), "--teams", str(SHOWBACK / "teams.yaml"), "--price", "owned=3,spot=2.4"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["unattributed"] == {
        "records": 3, "gpuHours": 9.5, "teamLabels": {"nlp-reserch": 2}, "withoutTeamLabel": 1, "namespaces": ["sandbox", "shared"],
    }
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    note = " ".join(text.stdout.split())
    for words in ("3 usage records (9.50 GPU-hours) match no team and are in (unattributed)", "team labels seen: nlp-reserch (2)",
                  "without a team label: 1", "namespaces: sandbox, shared", "costLabels"):
        assert words in note, (words, note)


def test_showback_without_unattributed_usage_says_nothing(tmp_path):
    export = tmp_path / "usage.csv"
    export.write_text("kind,start,namespace,pod,labels,capacity_type,gpu_model,mig_profile,gpus,hours,gpu_utilization\n"
                      "allocation,2026-11-01,nlp,a-0,,owned,H100-80GB,,1,10,\n")
    result = runner.invoke(app, ["cost", "showback", str(export), "--teams", str(SHOWBACK / "teams.yaml"), "--price", "owned=3"])
    assert result.exit_code == 0 and "note:" not in result.stdout, result.output
    out = runner.invoke(app, ["cost", "showback", str(export), "--teams", str(SHOWBACK / "teams.yaml"), "--price", "owned=3", "--json"])
    assert json.loads(out.stdout)["unattributed"]["records"] == 0


# ---- runbooks: CLI commands, no `python -c "from hybridgpu..."`; no paths users do not have


def test_script_prints_the_drain_and_reset_scripts():
    drain = runner.invoke(app, ["script", "drain", "dgx-h100-04", "--timeout", "1h", "--delete-node"])
    assert drain.exit_code == 0, drain.output
    assert drain.stdout.startswith("#!/usr/bin/env bash") and "dgx-h100-04" in drain.stdout and "kubectl delete node" in drain.stdout
    assert "kubectl delete node" not in runner.invoke(app, ["script", "drain", "dgx-h100-04"]).stdout
    reset = runner.invoke(app, ["script", "reset"])
    assert reset.exit_code == 0 and "kubeadm reset" in reset.stdout, reset.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["script", "drain", "DGX_04"], ["'DGX_04'", "lowercase", "fix:"]),
        (["script", "drain", "dgx-04", "--timeout", "an hour"], ["'an hour'", "15m", "fix:"]),
        (["script", "reset", "--cri-socket", "/run/containerd.sock"], ["unix:///", "fix:"]),
    ],
    ids=["host", "timeout", "socket"],
)
def test_script_refuses_bad_input(args, words):
    result = runner.invoke(app, args)
    out = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in out and not result.stdout, result.output
    for word in words:
        assert word in out, (word, out)


def _user_facing() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "stacks").rglob("*.yaml"))]


def test_user_facing_files_run_commands_not_python_snippets():
    for path in _user_facing():
        text = path.read_text()
        assert 'python -c "from hybridgpu' not in text and "python -c 'from hybridgpu" not in text, path
        for private in ("shared/seeds", "/work/", "../shared/"):
            assert private not in text, f"{path.relative_to(ROOT)} names {private}, which users do not have"


def test_the_readme_first_stack_commands_work(scratch_project):
    readme = ROOT.joinpath("README.md").read_text()
    section = readme.split("## Your first stack", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    commands = [line.split("#", 1)[0].split() for line in block.splitlines() if line.startswith(".venv/bin/hybridgpu")]
    assert [c[1] for c in commands] == ["init", "validate", "preview"]
    project = scratch_project()
    outputs = []
    for command in commands[:2]:  # the preview is the session fixtures' business (tests/conftest.py)
        result = runner.invoke(app, [*command[1:], "--root", str(project)])
        assert result.exit_code == 0, (command, result.output)
        outputs.append(" ".join(result.stdout.split()))
    wrote = section.split("# wrote ", 1)[1].splitlines()[0]
    assert outputs[0].startswith(f"wrote {wrote}"), "the README shows what init prints"
