"""Remote (multi-language) components under ``hybridgpu check`` (issue 25).

Each ``tests/fixtures/programs/rc-*`` directory is a small Pulumi Python project of ours with
``expected.yaml`` written before the first run: for plain and ``--first-preview`` mode the verdict
(``pass``: no mandatory violation) and the exact ``[policy, resource name]`` violations; ``advisory``:
the same with ``--opaque-components advisory`` (both modes); ``messages``: text each named resource's
messages must hold; ``children``: the names of the children the offline run records under remote
components (as the provider names them).

pulumi_eks and pulumi_awsx are not installed here: those fixtures register the components exactly as
their generated SDKs do (type token, camelCase inputs, ``remote=True``). Upstream behaviour tested:
pulumi/pulumi-kubernetes ``provider/pkg/provider/yaml/v2/yaml.go`` (``Normalize``: default namespace
on namespaced kinds; ``register``: ``<prefix>:<namespace>/<name>``, Secrets' data marked secret),
``kustomize/v2/directory.go`` (prefix defaults to the component name, ``namespace`` input is the
default namespace) and ``helm/v4/chart.go`` (children registered in Construct), commit 94977969.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.shell.policy.check import check_stacks
from hybridgpu.shell.preview import run_preview
from hybridgpu.shell.remote import OPAQUE_POLICY, Opaque, construct, kustomize_build, opaque_message
from hybridgpu.stack.files import read_stack_file
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

PROGRAMS = sorted((ROOT / "tests" / "fixtures" / "programs").glob("rc-*"))
PACK = ROOT / "policies"
MODES = ("plain", "firstPreview")


def expected(program: Path) -> dict:
    return yaml.safe_load((program / "expected.yaml").read_text())


def program(name: str) -> Path:
    return next(p for p in PROGRAMS if p.name == name)


@pytest.fixture
def analyzer(running_packs):
    """The pack running for the test process (tests/conftest.py running_packs)."""
    return running_packs.get(PACK)


def test_programs_are_complete():
    assert len(PROGRAMS) >= 9
    for p in PROGRAMS:
        exp = expected(p)
        assert yaml.safe_load((p / "Pulumi.yaml").read_text())["name"] == p.name
        (p / f"Pulumi.{exp['stack']}.yaml").resolve(strict=True)
        for mode in MODES:
            assert exp[mode]["verdict"] in ("pass", "fail"), (p.name, mode)


CASES = [(p, m, "mandatory") for p in PROGRAMS for m in MODES] + [
    (p, m, "advisory") for p in PROGRAMS if "advisory" in expected(p) for m in MODES
]


@pytest.mark.parametrize(("program_dir", "mode", "level"), CASES, ids=lambda x: x.name if isinstance(x, Path) else x)
def test_program_gets_its_verdict(analyzer, program_dir: Path, mode: str, level: str):
    exp = expected(program_dir)
    want = exp[mode] if level == "mandatory" else exp["advisory"]
    [report] = check_stacks(
        [exp["stack"]], program_dir, first_preview=mode == "firstPreview", analyzer=analyzer, opaque_components=level
    )
    got = sorted([v.policy, v.name] for v in report.violations)
    assert got == sorted(want["violations"]), [(v.policy, v.name, v.message) for v in report.violations]
    assert (want["verdict"] == "fail") == bool(report.mandatory)
    for v in report.violations:
        assert "Fix:" in v.message and "Traceback" not in v.message
        if v.policy == OPAQUE_POLICY:
            assert v.level == level and v.urn.endswith(f"::{v.name}")
        for text in exp.get("messages", {}).get(v.name, []) if v.policy == OPAQUE_POLICY else []:
            assert text in v.message, v.message


@pytest.mark.parametrize("program_dir", [p for p in PROGRAMS if "children" in expected(p)], ids=lambda p: p.name)
def test_children_are_named_as_the_provider_names_them(program_dir: Path):
    exp = expected(program_dir)
    raw = read_stack_file(program_dir / f"Pulumi.{exp['stack']}.yaml", root=program_dir)
    import runpy

    preview = run_preview(exp["stack"], program_dir, program=lambda: runpy.run_path(str(program_dir / "__main__.py")), raw=raw, project="p")
    remote = {r.urn for r in preview.records if r.remote}
    children = sorted(r.name for r in preview.records if r.parent in remote)
    assert children == sorted(exp["children"])
    assert not [r for r in preview.records if r.opaque]  # everything remote here was expanded
    for r in preview.records:
        if r.parent in remote:  # the engine's URN: the component's type chain, then the child's
            parent = next(p for p in preview.records if p.urn == r.parent)
            assert r.urn == f"urn:pulumi:dev::p::{parent.type}${r.type}::{r.name}"


def test_cli_advisory_prints_the_finding_and_exits_0():
    p = program("rc-eks-managed-p5")
    args = ["check", "dev", "--root", str(p), "--pack", str(PACK), "--opaque-components", "advisory"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "2000"})  # the table, one row per line
    assert result.exit_code == 0, result.output
    assert "1 violations (0 mandatory)" in result.output and "Traceback" not in result.output
    [row] = [line for line in result.output.splitlines() if OPAQUE_POLICY in line]
    assert "advisory" in row and "eks:index:ManagedNodeGroup gpu-nodes" in row and "[p5.48xlarge (8 GPUs each)], scalingConfig.maxSize 100: up to 800 GPUs" in row


def test_cli_mandatory_is_the_default_and_reaches_json_and_github():
    p = program("rc-awsx-vpc")
    result = CliRunner().invoke(app, ["check", "dev", "--root", str(p), "--pack", str(PACK), "--format", "json"])
    assert result.exit_code == 1, result.output
    [stack] = json.loads(result.output)["stacks"]
    assert stack["mandatory"] == 1 and stack["violations"][0]["policy"] == OPAQUE_POLICY
    assert stack["violations"][0]["type"] == "awsx:ec2:Vpc"
    github = CliRunner().invoke(app, ["check", "dev", "--root", str(p), "--pack", str(PACK), "--format", "github", "--first-preview"])
    assert github.exit_code == 1 and github.output.startswith("::error ") and OPAQUE_POLICY in github.output


def test_cli_refuses_an_unknown_level():
    result = CliRunner().invoke(app, ["check", "dev", "--root", str(program("rc-awsx-vpc")), "--opaque-components", "off"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_missing_kustomization_fails_the_run_in_one_line(tmp_path: Path):
    # The provider fails the preview too ("kustomize build error"): exit 2, not a finding.
    (tmp_path / "Pulumi.yaml").write_text("name: rc-missing\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    (tmp_path / "__main__.py").write_text('import pulumi_kubernetes as k8s\nk8s.kustomize.v2.Directory("app", directory="./nowhere")\n')
    result = CliRunner().invoke(app, ["check", "dev", "--root", str(tmp_path), "--pack", str(PACK)])
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.output.splitlines() if x.strip()]
    assert "kustomize build error" in line and "nowhere" in line and "Traceback" not in result.output


# --- the provider's rules, directly -------------------------------------------------------------

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": "ml"}, "stringData": {"t": "x"}}


def test_prefix_default_explicit_and_empty():
    assert [c.name for c in construct("kubernetes:yaml/v2:ConfigGroup", "cg", {"objs": [DEPLOY]})] == ["cg:default/web"]
    assert [c.name for c in construct("kubernetes:yaml/v2:ConfigGroup", "cg", {"objs": [DEPLOY], "resourcePrefix": "p"})] == ["p:default/web"]
    assert [c.name for c in construct("kubernetes:yaml/v2:ConfigGroup", "cg", {"objs": [DEPLOY], "resourcePrefix": ""})] == ["default/web"]
    assert [c.name for c in construct("kubernetes:yaml/v2:ConfigGroup", "cg", {"objs": [DEPLOY]}, default_namespace="team")] == ["cg:team/web"]


def test_custom_kinds_take_their_scope_from_a_crd_or_stay_unnamespaced():
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.acme.io"},
        "spec": {"group": "acme.io", "names": {"kind": "Widget"}, "scope": "Namespaced"},
    }
    widget = {"apiVersion": "acme.io/v1", "kind": "Widget", "metadata": {"name": "w"}}
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"}}
    names = [c.name for c in construct("kubernetes:yaml/v2:ConfigGroup", "", {"objs": [crd, widget, pool], "resourcePrefix": ""})]
    assert names == ["widgets.acme.io", "default/w", "gpu"]


def test_secret_children_are_marked_secret():
    [child] = construct("kubernetes:yaml/v2:ConfigFile", "f", {"objs": [SECRET]})
    assert child.secret_keys == ("stringData",) and child.type == "kubernetes:core/v1:Secret"


def test_unknown_inputs_and_other_remote_types_are_opaque():
    with pytest.raises(Opaque, match="unknown at preview"):
        construct("kubernetes:kustomize/v2:Directory", "d", {"directory": "x"}, unknown=True)
    with pytest.raises(Opaque, match="the `acme` plugin does not run offline"):
        construct("acme:index:Thing", "t", {})
    with pytest.raises(Opaque, match="remote kustomization"):
        construct("kubernetes:kustomize/v2:Directory", "d", {"directory": "https://github.com/org/repo//app?ref=v1"})


def _kustomization(root: Path, text: str, **files: str) -> Path:
    (root / "kustomization.yaml").write_text(text)
    for name, body in files.items():
        (root / name).write_text(body)
    return root


def test_kustomize_namespace_skips_cluster_scoped_kinds(tmp_path: Path):
    docs = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: other}\n"
    d = _kustomization(tmp_path, "namespace: ml\nresources: [all.yaml]\n", **{"all.yaml": docs})
    assert [(o["kind"], o["metadata"].get("namespace")) for o in kustomize_build(d)] == [("Namespace", None), ("ConfigMap", "ml")]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("resources: [a.yaml]\ncommonLabels: {team: ml}\n", "`commonLabels`"),
        ("resources: [a.yaml]\nnamePrefix: x-\n", "`namePrefix`"),
        ("resources: [a.yaml]\nlabels: [{pairs: {team: ml}, includeSelectors: true}]\n", "`labels[0].includeSelectors`"),
        ("kind: Component\nresources: [a.yaml]\n", "`kind: Component`"),
        ("namespace: ml\nresources: [rb.yaml]\n", "`namespace` also rewrites"),
    ],
)
def test_kustomize_fields_not_built_offline_are_named(tmp_path: Path, text: str, field: str):
    rb = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb}\nroleRef: {kind: Role, name: r, apiGroup: rbac.authorization.k8s.io}\n"
    d = _kustomization(tmp_path, text, **{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "rb.yaml": rb})
    with pytest.raises(Opaque, match=field.replace("[", r"\[").replace("]", r"\]")) as info:
        kustomize_build(d)
    assert str(d / "kustomization.yaml") in info.value.reason


def test_opaque_message_for_an_unknown_gpu_type_and_a_generic_component():
    text = opaque_message("eks:index:NodeGroupV2", "ng", {"instanceType": "p9.huge", "maxSize": 3}, "why")
    assert "p9.huge (GPU capacity of a size the catalog does not know)" in text and "up to" not in text
    generic = opaque_message("acme:index:Thing", "t", {}, "why")
    assert "`acme` plugin's Construct" in generic and "every policy of the pack" in generic


def test_unknown_inputs_at_a_first_preview_make_the_component_opaque(tmp_path: Path):
    # The provider registers no child while an input is unknown ("Preview is incomplete"): fail closed.
    (tmp_path / "Pulumi.yaml").write_text("name: rc-unknown\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {aws:region: us-east-1}\n")
    (tmp_path / "__main__.py").write_text(
        "import pulumi_aws as aws\nimport pulumi_kubernetes as k8s\n"
        'queue = aws.sqs.Queue("jobs")\n'
        'k8s.yaml.v2.ConfigGroup("cfg", objs=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"queue": queue.arn}}])\n'
    )
    import runpy

    raw = read_stack_file(tmp_path / "Pulumi.dev.yaml", root=tmp_path)
    for first, opaque in ((False, False), (True, True)):
        preview = run_preview("dev", tmp_path, program=lambda: runpy.run_path(str(tmp_path / "__main__.py")), raw=raw, project="p", first_preview=first)
        [group] = [r for r in preview.records if r.type == "kubernetes:yaml/v2:ConfigGroup"]
        assert bool(group.opaque) is opaque and ("unknown at preview" in group.opaque) is opaque
        assert [r.name for r in preview.records if r.parent == group.urn] == ([] if opaque else ["cfg:default/c"])
