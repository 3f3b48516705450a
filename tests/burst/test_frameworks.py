"""Job frameworks installed under Kueue and MultiKueue (issue 30): JobSet, Kubeflow Trainer v2, KubeRay, Kueue's pod integration.

Upstream, read 2026-11-27 (facts recorded in hybridgpu/burst/frameworks.py and hybridgpu/render/frameworks.py):

* kubernetes-sigs/kueue v0.19.2 (8eab6877): ``FrameworkName`` in ``pkg/controller/jobs/*/*_controller.go``;
  ``cmd/kueue/main.go`` ``GetMultiKueueAdapters(cfg.Integrations.Frameworks)``; the adapters'
  remote calls (``*_multikueue_adapter.go``, ``pkg/controller/jobs/ray/ray_multikueue_adapter.go``:
  Create, Get, Delete, a watch through ``GetEmptyList``, Patch for RayCluster/RayService);
  ``charts/kueue/templates/webhook/manifests.yaml`` (pod webhook: ``failurePolicy: Fail`` when ``pod``
  is enabled, ``namespaceSelector`` = ``managedJobsNamespaceSelector``); ``go.mod`` (jobset v0.12.0,
  trainer v2.2.1, kuberay v1.6.2).
* kubernetes-sigs/jobset v0.12.0 ``charts/jobset``; kubeflow/trainer v2.2.1 ``charts/kubeflow-trainer``;
  ray-project/kuberay v1.6.2 ``helm-chart/kuberay-operator``.

Tests that read those sources need the mirrors (``fetch`` into /work/.mirror) and are skipped without them.
``python -m tests.burst.test_frameworks`` prints hybridgpu/stack/data/chart_images_frameworks.yaml from them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing
import yaml
from typer.testing import CliRunner

from hybridgpu.burst.frameworks import FRAMEWORK_CHARTS, FRAMEWORKS, KNOWN_NOT_INSTALLED, charts_for, framework_for_kind, worker_rules
from hybridgpu.burst.kueue import kueue_configuration, kueue_helm_values, worker_rbac_rules
from hybridgpu.burst.models import BurstPlanFile
from hybridgpu.burst.plan import plan_burst
from hybridgpu.catalog import load_catalog
from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.k8s import CONTROL_PLANE_TAINT, CRITICAL_ADDONS_TAINT
from hybridgpu.render.charts import CHARTS, chart_placements
from hybridgpu.render.frameworks import VALUES_KEYS, framework_chart_values
from hybridgpu.stack.images import FRAMEWORK_CHART_IMAGES_FILE, list_images
from hybridgpu.stack.load import load_stack_config
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan as example_plan_file
from tests.helpers.teams import edited, example_plan

CASES = yaml.safe_load((ROOT / "tests" / "burst" / "frameworks_cases.yaml").read_text())
runner = CliRunner(env={"COLUMNS": "400"})
EVERY = ["batch/job", "pod", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice"]

MIRROR = Path("/work/.mirror")
#: (mirror directory, tag) of each upstream repository read here.
UPSTREAM = {
    "kueue": ("kubernetes-sigs+kueue", "v0.19.2"),
    "jobset": ("kubernetes-sigs+jobset", "v0.12.0"),
    "kubeflow-trainer": ("kubeflow+trainer", "v2.2.1"),
    "kuberay-operator": ("ray-project+kuberay", "v1.6.2"),
}
CHART_DIRS = {"jobset": "charts/jobset", "kubeflow-trainer": "charts/kubeflow-trainer", "kuberay-operator": "helm-chart/kuberay-operator"}


def _show(repo: str, path: str) -> str | None:
    """A file of a mirrored upstream repository at its pinned tag, or None when the mirror is absent."""
    directory, tag = UPSTREAM[repo]
    git = MIRROR / directory / "repo"
    if not git.is_dir():
        return None
    done = subprocess.run(["git", "-C", str(git), "show", f"{tag}:{path}"], capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def _need(repo: str, path: str) -> str:
    text = _show(repo, path)
    if text is None:
        pytest.skip(f"upstream {repo} {path} not mirrored here")
    return text


def _plan(frameworks: list[str], **changes: Any):
    """The example plan derived with ``kueue.frameworks`` (and other plan edits), without the stack layer."""
    source = BurstPlanFile.model_validate(edited(example_plan_file(), {"kueue.frameworks": frameworks, **changes}))
    cloud = load_stack_config("prod", ROOT)[0].cloud
    assert cloud is not None
    return plan_burst(source, load_inventory(ROOT / "stacks/inventory/onprem-site-a.yaml"), cloud, load_catalog(), file=example_plan().file)


# ---- the table: names and adapters as Kueue spells them


def test_framework_names_are_kueues():
    """Each name is the ``FrameworkName`` constant of its Kueue v0.19.2 integration, and each registers a MultiKueue adapter."""
    files = {
        "batch/job": "job/job_controller.go",
        "pod": "pod/pod_controller.go",
        "jobset.x-k8s.io/jobset": "jobset/jobset_controller.go",
        "trainer.kubeflow.org/trainjob": "trainjob/trainjob_controller.go",
        "ray.io/rayjob": "rayjob/rayjob_controller.go",
        "ray.io/raycluster": "raycluster/raycluster_controller.go",
        "ray.io/rayservice": "rayservice/rayservice_controller.go",
        "kubeflow.org/pytorchjob": "kubeflow/jobs/pytorchjob/pytorchjob_controller.go",
    }
    assert set(files) == set(FRAMEWORKS) | set(KNOWN_NOT_INSTALLED)
    for name, path in files.items():
        source = _need("kueue", f"pkg/controller/jobs/{path}")
        assert re.search(rf'FrameworkName\s+=\s+"{re.escape(name)}"', source), name
        assert "MultiKueueAdapter:" in source, name
        if name in FRAMEWORKS:
            assert FRAMEWORKS[name].multikueue_adapter


def test_pinned_charts_are_the_versions_kueue_is_built_against():
    """MultiKueue copies a job's spec to the worker through Kueue's vendored Go types (go.mod), so the charts match them."""
    gomod = _need("kueue", "go.mod")
    assert f"sigs.k8s.io/jobset v{FRAMEWORK_CHARTS['jobset'].version}" in gomod
    assert f"github.com/kubeflow/trainer/v2 v{FRAMEWORK_CHARTS['kubeflow-trainer'].version}" in gomod
    assert f"github.com/ray-project/kuberay/ray-operator v{FRAMEWORK_CHARTS['kuberay-operator'].version}" in gomod


def test_each_chart_ships_the_crds_of_its_kinds():
    """Every kind an enabled framework manages has its CRD in the chart the toolkit installs for it (the chart's ``crds/``)."""
    for fw in FRAMEWORKS.values():
        if fw.chart is None:
            assert fw.crds == ()
            continue
        chart = FRAMEWORK_CHARTS[fw.chart]
        assert set(fw.crds) <= set(chart.crds), fw.name
        facts = {f"{k.plural}.{k.group}" for k in fw.kinds}
        assert {(k.group, k.kind) for k in fw.kinds} <= set(CHARTS[chart.key].crds)
        for crd in facts:
            text = _show(chart.key, f"{CHART_DIRS[chart.key]}/crds/{crd.split('.', 1)[1]}_{crd.split('.', 1)[0]}.yaml")
            if text is not None:
                assert f"name: {crd}" in text


def test_kinds_map_back_to_their_framework():
    for api_version, kind, name in (
        ("ray.io/v1", "RayCluster", "ray.io/raycluster"),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob", "trainer.kubeflow.org/trainjob"),
        ("jobset.x-k8s.io/v1alpha2", "JobSet", "jobset.x-k8s.io/jobset"),
    ):
        found = framework_for_kind(api_version, kind)
        assert found is not None and found.name == name
    assert framework_for_kind("kubeflow.org/v1", "PyTorchJob") is None


def test_trainer_brings_jobset_first():
    """A TrainJob runs as a JobSet (the Trainer chart depends on JobSet): the JobSet chart comes first, once."""
    assert [c.key for c in charts_for(["trainer.kubeflow.org/trainjob"])] == ["jobset", "kubeflow-trainer"]
    assert [c.key for c in charts_for(["trainer.kubeflow.org/trainjob", "jobset.x-k8s.io/jobset"])] == ["jobset", "kubeflow-trainer"]
    assert [c.key for c in charts_for(["ray.io/rayjob", "ray.io/rayservice"])] == ["kuberay-operator"]
    assert charts_for(["batch/job", "pod"]) == ()
    dependency = _show("kubeflow-trainer", "charts/kubeflow-trainer/Chart.yaml")
    if dependency is not None:
        deps = yaml.safe_load(dependency)["dependencies"]
        assert any(d["name"] == "jobset" and d["condition"] == "jobset.install" for d in deps)


# ---- Kueue's Configuration and the worker's RBAC


def test_configuration_enables_exactly_the_plan_frameworks_on_every_cluster():
    plan = _plan(EVERY)
    for stack, cluster in plan.clusters.items():
        config = kueue_configuration(cluster, plan.source)
        assert config["integrations"]["frameworks"] == EVERY, stack


def _emulate_pod_webhook_selector(values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(failurePolicy, namespaceSelector) of the chart's ``mpod.kb.io`` webhook as charts/kueue/templates/webhook/manifests.yaml
    (v0.19.2) renders them from ``managerConfig.controllerManagerConfigYaml``."""
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    policy = "Fail" if "pod" in config["integrations"]["frameworks"] else "Ignore"
    default = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kueue-system"]}]}
    return policy, config.get("managedJobsNamespaceSelector", default)


def _selects(selector: dict[str, Any], namespace: str) -> bool:
    for expr in selector.get("matchExpressions", []):
        assert expr["key"] == "kubernetes.io/metadata.name"
        op = expr["operator"]
        if op == "In" and namespace not in expr["values"]:
            return False
        if op == "NotIn" and namespace in expr["values"]:
            return False
        if op == "DoesNotExist":
            return False  # the API server labels every namespace with its name
    return True


def test_pod_integration_gates_only_the_queue_namespaces():
    """With ``pod`` the chart's pod webhook fails closed over managedJobsNamespaceSelector: it must not select the
    namespaces of the controllers (GPU Operator, Karpenter, the framework charts), only the plan's queue namespaces."""
    template = _show("kueue", "charts/kueue/templates/webhook/manifests.yaml")
    if template is not None:
        block = template[template.index("path: /mutate--v1-pod") :][:900]
        assert 'if has "pod" $integrationsConfig.frameworks' in block and "failurePolicy: Fail" in block
        assert 'hasKey $managerConfig "managedJobsNamespaceSelector"' in block
    plan = _plan(["batch/job", "pod", "ray.io/rayjob"])
    for stack, cluster in plan.clusters.items():
        policy, selector = _emulate_pod_webhook_selector(kueue_helm_values(cluster, plan.source))
        assert policy == "Fail"
        for ns in ("kube-system", "kueue-system", "gpu-operator", "karpenter", "kuberay-system", "jobset-system", "default"):
            assert not _selects(selector, ns), (stack, ns)
        for ns in cluster.namespaces:
            assert _selects(selector, ns), (stack, ns)
    # Without `pod` the configuration keeps Kueue's default (and the webhook fails open).
    plain = _plan(["batch/job"])
    cluster = plain.clusters["prod"]
    assert "managedJobsNamespaceSelector" not in kueue_configuration(cluster, plain.source)
    assert _emulate_pod_webhook_selector(kueue_helm_values(cluster, plain.source))[0] == "Ignore"


def _allowed(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    """RBAC's rule resolution (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac ``RuleAllows``) for these plain rules."""
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


def test_worker_rbac_grants_what_each_multikueue_adapter_does_on_the_worker():
    """The adapters create, get, delete and watch (list+watch) the remote object; the Ray adapter patches RayClusters
    (elastic replicas) and RayServices (spec sync). Nothing is granted for a framework the plan does not enable."""
    rules = worker_rbac_rules(EVERY)
    for fw in FRAMEWORKS.values():
        for kind in fw.kinds:
            for verb in ("create", "get", "delete", "list", "watch"):
                assert _allowed(rules, kind.group, kind.plural, verb), (fw.name, verb)
            if fw.name != "pod":  # the pod adapter reads the remote pod's status with a plain Get
                assert _allowed(rules, kind.group, f"{kind.plural}/status", "get")
    for plural in ("rayclusters", "rayservices"):
        assert _allowed(rules, "ray.io", plural, "patch") and _allowed(rules, "ray.io", plural, "update")
    assert not _allowed(rules, "ray.io", "rayjobs", "patch")
    only_jobs = worker_rbac_rules(["batch/job"])
    assert not any(g != "" and g not in ("batch", "kueue.x-k8s.io") for r in only_jobs for g in r["apiGroups"])
    assert worker_rules(["ray.io/rayjob"]) == [
        {"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": ["create", "delete", "get", "list", "watch"]},
        {"apiGroups": ["ray.io"], "resources": ["rayjobs/status"], "verbs": ["get"]},
    ]
    with pytest.raises(ValueError, match="kubeflow.org/pytorchjob"):
        worker_rbac_rules(["kubeflow.org/pytorchjob"])
    script = _show("kueue", "site/static/examples/multikueue/create-multikueue-kubeconfig.sh")
    if script is not None:  # upstream's own worker role grants at least the same on the kinds it lists
        for plural in ("jobsets", "rayjobs", "rayclusters", "rayservices"):
            assert f"- {plural}\n" in script


# ---- the charts: values keys, scheduling, images


def _paths(values: Any, prefix: str = "") -> set[str]:
    if not isinstance(values, dict) or not values:
        return {prefix}
    out: set[str] = set()
    for key, value in values.items():
        out |= _paths(value, f"{prefix}.{key}" if prefix else key)
    return out


def test_values_set_only_keys_the_pinned_charts_read():
    for key in FRAMEWORK_CHARTS:
        values = framework_chart_values(key)
        assert _paths(values) == set(VALUES_KEYS[key]), key
        text = _show(key, f"{CHART_DIRS[key]}/values.yaml")
        if text is None:
            continue
        upstream = yaml.safe_load(text)
        for path in VALUES_KEYS[key]:
            node: Any = upstream
            for part in path.split("."):
                assert isinstance(node, dict) and part in node, (key, path)
                node = node[part]
    with pytest.raises(KeyError):
        framework_chart_values("kueue")


def test_controllers_tolerate_the_system_nodes_the_chart_defaults_do_not():
    """The charts default to ``tolerations: []``: on EKS, where the system nodes carry CriticalAddonsOnly, the controllers
    would stay Pending; ours tolerate it and kubeadm's control-plane taint, never the GPU taint."""
    for key, chart in FRAMEWORK_CHARTS.items():
        default = chart_placements(key, {}, chart.release)
        ours = chart_placements(key, framework_chart_values(key), chart.release)
        assert len(ours) == 1 and all(not p.tolerations for p in default if "jobset" not in p.name or key == "jobset")
        keys = {t["key"] for t in ours[0].tolerations}
        assert keys == {CRITICAL_ADDONS_TAINT.key, CONTROL_PLANE_TAINT.key}, key
    # The Trainer's own JobSet subchart is off: one JobSet controller (ours, 0.12.0) per cluster.
    assert [p.name for p in chart_placements("kubeflow-trainer", framework_chart_values("kubeflow-trainer"), "t")] == ["t/kubeflow-trainer-controller-manager"]


def test_images_of_the_framework_charts_are_pinned():
    releases = [
        {"name": c.release, "chart": f"{c.repo}/{c.chart}" if c.repo.startswith("oci://") else c.chart, "version": c.version,
         "repositoryOpts": {} if c.repo.startswith("oci://") else {"repo": c.repo}, "values": framework_chart_values(c.key)}
        for c in FRAMEWORK_CHARTS.values()
    ]
    listing = list_images(releases, None)
    assert listing.charts == (
        "https://ray-project.github.io/kuberay-helm/kuberay-operator:1.6.2",
        "oci://ghcr.io/kubeflow/charts/kubeflow-trainer:2.2.1",
        "oci://registry.k8s.io/jobset/charts/jobset:0.12.0",
    )
    assert "registry.k8s.io/jobset/jobset:v0.12.0" in listing.images  # not the source values' staging image
    assert "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.1" in listing.images
    assert "quay.io/kuberay/operator:v1.6.2" in listing.images
    assert "docker.io/pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime" in listing.images  # the torch-distributed runtime
    assert not [i for i in listing.images if "deepspeed" in i or "data-cache" in i or "staging" in i]
    assert not [u for u in listing.unpinned if "jobset" in u or "kuberay" in u or "trainer-controller" in u], listing.unpinned


def derive_image_data() -> dict[str, Any] | None:
    """The image data of the framework charts from their values.yaml at the pinned tags (None without the mirrors)."""
    from tests.cli.test_images import _walk

    out: dict[str, Any] = {}
    for key, chart in FRAMEWORK_CHARTS.items():
        text = _show(key, f"{CHART_DIRS[key]}/values.yaml")
        if text is None:
            return None
        values = yaml.safe_load(text)
        images: list[dict[str, Any]] = []
        defaults: dict[str, Any] = {}
        for path, fields, enabled in _walk(values, [], []):
            entry: dict[str, Any] = {"path": ".".join(path), **fields}
            if enabled:
                entry["enabledBy"] = sorted(set(enabled))
                for flag in enabled:
                    node: Any = values
                    for part in flag.split("."):
                        node = node.get(part) if isinstance(node, dict) else None
                    if isinstance(node, bool):
                        cursor = defaults
                        *parents, last = flag.split(".")
                        for part in parents:
                            cursor = cursor.setdefault(part, {})
                        cursor[last] = node
            images.append(entry)
        doc: dict[str, Any] = {"source": chart.source, "defaults": defaults, "images": images}
        if key == "kubeflow-trainer":
            # trainer.defaultImageTag: "v" + the chart version (templates/_helpers.tpl); the torch-distributed
            # runtime's image is written in templates/runtimes/torch-distributed.yaml, not in values.
            runtime = _show(key, f"{CHART_DIRS[key]}/templates/runtimes/torch-distributed.yaml") or ""
            image = re.search(r"image: (\S+):(\S+)", runtime)
            assert image is not None
            doc["appVersion"] = f"v{chart.version}"
            doc["defaults"].setdefault("runtimes", {}).setdefault("torchDistributed", {})["enabled"] = False
            images.append({"path": "runtimes.torchDistributed.templateImage", "registry": "docker.io", "repository": image.group(1), "tag": image.group(2), "enabledBy": ["runtimes.torchDistributed.enabled"]})
            # The torchtune runtime image has no single enable flag (one per model), so it is listed even when off.
        # JobSet's source values.yaml names a staging image with tag `main`; the published chart and our values
        # (hybridgpu.render.frameworks.JOBSET_IMAGE) replace it with registry.k8s.io/jobset/jobset:v0.12.0.
        out[f"{chart.chart}@{chart.version}"] = doc
    return out


HEADER = """\
# Images of the pinned job-framework charts (JobSet, Kubeflow Trainer, KubeRay operator), in the format of
# chart_images.yaml. Generated from the charts' values.yaml (and the Trainer's torch-distributed runtime template) at
# the pinned tags by `python -m tests.burst.test_frameworks`; tests/burst/test_frameworks.py fails on any difference
# when the upstream mirrors are present. Do not edit by hand.
"""


def render_image_data() -> str | None:
    data = derive_image_data()
    return None if data is None else HEADER + yaml.safe_dump({"charts": data}, sort_keys=True, default_flow_style=False, width=200)


def test_image_data_matches_the_pinned_charts():
    text = render_image_data()
    if text is None:
        pytest.skip("upstream chart sources not mirrored here")
    assert (ROOT / "hybridgpu" / "stack" / FRAMEWORK_CHART_IMAGES_FILE).read_text() == text, "regenerate: python -m tests.burst.test_frameworks"


def test_docs_table_names_every_framework_and_pin():
    text = (ROOT / "docs" / "bursting.md").read_text()
    section = text[text.index("### Job frameworks") : text.index("## Submitting a job")]
    for name in FRAMEWORKS:
        assert f"| `{name}`" in section, name
    for chart in FRAMEWORK_CHARTS.values():
        assert f"{chart.chart}` {chart.version}" in section, chart.key  # `<repo>/<chart>` <version>
        assert f"`{chart.namespace}`" in section
    for name in KNOWN_NOT_INSTALLED:
        assert f"`{name}`" in section


# ---- the component: releases before Kueue (one run under Pulumi's mocks, KueueCluster alone)

ONPREM_KUBECONFIG = "apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: 'https://10.0.0.1:6443', certificate-authority-data: Q0E=}\n"


def test_framework_releases_come_before_kueue_and_the_worker_token(scratch_project):
    """The charts' CRDs (their ``crds/``) exist before the Kueue release enables the integrations, and, on a worker,
    before the token Secret the manager's kubeconfig is built from (kubernetes-sigs/kueue#3582); JobSet before the Trainer."""
    import pulumi_kubernetes as k8s

    from hybridgpu.components.base import as_input
    from hybridgpu.components.kueue import KueueCluster, KueueClusterArgs
    from hybridgpu.shell.crds import crd_problems
    from hybridgpu.shell.preview import run_preview
    from hybridgpu.stack.load import load_stack

    root = scratch_project(plan=edited(example_plan_file(), {"kueue.frameworks": EVERY}), stacks=("hybrid", "onprem", "prod"))
    stack = load_stack("onprem", root)
    assert stack.burst_plan is not None
    cluster, source = stack.burst_plan.clusters["onprem"], stack.burst_plan.source

    def program() -> None:
        provider = k8s.Provider("onprem-k8s", kubeconfig="{}")
        KueueCluster("onprem-burst", KueueClusterArgs(plan=as_input(cluster), source=as_input(source), provider=provider, kubeconfig=ONPREM_KUBECONFIG))

    records = run_preview("onprem", root, program=program, loaded=stack).records
    releases = {r.inputs["name"]: r for r in records if r.type == "kubernetes:helm.sh/v3:Release"}
    assert set(releases) == {"jobset", "kuberay-operator", "kubeflow-trainer", "kueue"}
    for name in ("jobset", "kubeflow-trainer", "kuberay-operator"):
        chart = FRAMEWORK_CHARTS[name]
        assert releases[name].urn in releases["kueue"].dependencies
        assert releases[name].inputs["version"] == chart.version and releases[name].inputs["namespace"] == chart.namespace
        assert releases[name].inputs["values"] == framework_chart_values(name)
    assert releases["jobset"].urn in releases["kubeflow-trainer"].dependencies
    assert releases["kuberay-operator"].inputs["repositoryOpts"]["repo"] == "https://ray-project.github.io/kuberay-helm/"
    token = next(r for r in records if r.type == "kubernetes:core/v1:Secret")
    assert releases["kueue"].urn in token.dependencies
    assert crd_problems(records) == []


# ---- the cases, through the CLI

#: The click command of the CLI, built once: typer rebuilds it from the app's signatures on every ``invoke``
#: (about 0.2 s, more than the validation itself).
_COMMAND = typer.main.get_command(app)


@pytest.fixture
def fast_cli(monkeypatch):
    """``runner.invoke(app, ...)`` with the command built once (the same command typer would build)."""
    monkeypatch.setattr(typer.testing, "_get_command", lambda _app: _COMMAND)


def _validate(scratch_project, case):
    root = scratch_project(plan=edited(example_plan_file(), case["set"]), stacks=("hybrid", "onprem", "prod"))
    return runner.invoke(app, ["validate", case["stack"], "--root", str(root)])


def test_enough_cases():
    assert len(CASES["fail"]) >= 10 and len(CASES["pass"]) >= 10


@pytest.mark.parametrize("case", CASES["fail"], ids=lambda c: c["name"])
def test_cli_refuses(scratch_project, fast_cli, case):
    result = _validate(scratch_project, case)
    out = " ".join(result.output.split())
    assert result.exit_code == 2, out
    assert "Traceback" not in result.output and "fix:" in out
    for word in case["expect"]:
        assert word in out, (word, out)


@pytest.mark.parametrize("case", CASES["pass"], ids=lambda c: c["name"])
def test_cli_accepts(scratch_project, fast_cli, case):
    result = _validate(scratch_project, case)
    assert result.exit_code == 0, result.output


if __name__ == "__main__":
    rendered = render_image_data()
    if rendered is None:
        sys.exit("upstream chart sources not mirrored under /work/.mirror")
    sys.stdout.write(rendered)
