"""JupyterHub (``hybridgpu:platform.jupyterhub``, issue 30): what the hub, KubeSpawner and Kueue do with what we render.

Upstream sources (read 2026-11-27):

* zero-to-jupyterhub-k8s tag 4.4.0 (commit 5c5f5df751588a68a7781ead01d0f62e88e2e72f): ``jupyterhub/values.yaml``
  (the keys we set), ``files/hub/jupyterhub_config.py`` (``singleuser.profileList`` becomes
  ``c.KubeSpawner.profile_list`` before each ``hub.extraConfig`` snippet is ``exec``'d with ``c`` in scope),
  ``templates/hub/deployment.yaml`` (hub tolerations = ``scheduling.corePods.tolerations`` + ``hub.tolerations``).
* jupyterhub/kubespawner 7.0.0 (commit a8f28439): ``kubespawner/spawner.py`` ``load_user_options`` (a callable
  ``profile_list`` is called with the spawner; the user's choice must be in its result), ``_apply_overrides``
  (a dict override is merged into the trait, anything else replaces it), ``_start`` (profile loaded before the pod
  reflector starts, reflectors keyed by namespace).
* kubernetes-sigs/kueue v0.19.2 (commit 8eab6877): ``pkg/controller/jobs/pod/pod_webhook.go`` (a pod with
  ``kueue.x-k8s.io/queue-name`` in a managed namespace is gated by ``kueue.x-k8s.io/admission``);
  ``pkg/scheduler/flavorassigner/flavorassigner.go`` (``BlockUndeclared``: an undeclared resource is not admitted).
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest

from hybridgpu.catalog import load_catalog
from hybridgpu.config.jupyterhub import JupyterHubConfig
from hybridgpu.datafile import dump_yaml
from hybridgpu.k8s import CRITICAL_ADDONS_TAINT, GPU_TAINT, KUEUE_QUEUE_NAME_LABEL, ROLE_LABEL, SYSTEM_ROLE, taint_object
from hybridgpu.render.charts import chart_placements
from hybridgpu.render.jupyterhub import VALUE_KEYS, GpuOffering, NotebookProfile, jupyterhub_values, profile_entry, value_paths
from hybridgpu.render.scheduling import NodeGroup, placement_problems
from hybridgpu.shell.preview import run_preview
from hybridgpu.stack.jupyterhub import notebook_plan
from hybridgpu.stack.load import load_stack
from hybridgpu.stack.teams import load_teams
from tests.helpers.cases import apply_set, assert_fixture_counts, assert_verdict, case_ids, load_cases, validate
from tests.helpers.scratch import example_plan, example_teams

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/platform/jupyterhub/cases.yaml")

#: The hub block every case starts from.
BASE: dict[str, Any] = {
    "enabled": True,
    "auth": {
        "clientId": "jupyterhub",
        "clientSecretPulumiConfig": "jupyterhub:clientSecret",
        "authorizeUrl": "https://sso.example.com/realms/site-a/protocol/openid-connect/auth",
        "tokenUrl": "https://sso.example.com/realms/site-a/protocol/openid-connect/token",
        "userdataUrl": "https://sso.example.com/realms/site-a/protocol/openid-connect/userinfo",
        "oauthCallbackUrl": "https://notebooks.example.com/hub/oauth_callback",
    },
    "image": {"name": "quay.io/jupyter/pytorch-notebook", "tag": "cuda12-python-3.12"},
}
SECRET = {"secure": "v1:cGxhY2Vob2xkZXI="}


def _drop(config: dict[str, Any], path: str) -> None:
    namespace, _, rest = path.partition(".")
    node = config[namespace]
    parts = rest.split(".") if rest else []
    if not parts:
        del config[namespace]
        return
    for part in parts[:-1]:
        node = node[part]
    del node[parts[-1]]


def _edit(case: dict[str, Any]) -> Any:
    def edit(config: dict[str, Any]) -> None:
        config["hybridgpu:platform"] = {"jupyterhub": copy.deepcopy(BASE)}
        config["jupyterhub:clientSecret"] = dict(SECRET)
        apply_set(config, case)
        for path in case.get("drop") or ():
            _drop(config, path)

    return edit


def _project(scratch_project, case: dict[str, Any]):
    plan = example_plan()
    plan["kueue"]["frameworks"] = list(case.get("frameworks", ["batch/job", "pod"]))
    teams = example_teams() if case.get("teams", True) else None
    return scratch_project(stacks=[case["stack"]], plan=plan, teams=teams, stack_edits={case["stack"]: _edit(case)})


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_verdict(scratch_project, case):
    root = _project(scratch_project, case)
    assert_verdict(validate(root, case["stack"]), case)
    if "profiles" in case:
        stack = load_stack(case["stack"], root)
        hub = stack.config.platform.jupyterhub if stack.config.platform else None
        count = 0
        if hub is not None and hub.enabled:
            assert stack.burst_plan is not None
            count = len(notebook_plan(stack.config, load_catalog(), load_teams(stack.config, root), stack.burst_plan,
                                      inventory=stack.inventory, onprem_plan=stack.onprem_plan).profiles)
        assert count == case["profiles"]


def test_fixture_counts():
    assert_fixture_counts(CASES)


# ------------------------------------------------------------------ one stack, looked at closely


@pytest.fixture(scope="module")
def onprem(tmp_path_factory):
    """The onprem example with the base hub: its stack, root and notebook plan."""
    from tests.helpers.scratch import make_project

    case = {"stack": "onprem"}
    root = make_project(tmp_path_factory.mktemp("hub"), stacks=["onprem"], plan=_plan_with_pod(), teams=example_teams(), stack_edits={"onprem": _edit(case)})
    stack = load_stack("onprem", root)
    assert stack.burst_plan is not None
    plan = notebook_plan(stack.config, load_catalog(), load_teams(stack.config, root), stack.burst_plan, inventory=stack.inventory, onprem_plan=stack.onprem_plan)
    return SimpleNamespace(root=root, stack=stack, plan=plan)


def _plan_with_pod() -> dict[str, Any]:
    plan = example_plan()
    plan["kueue"]["frameworks"] = ["batch/job", "pod"]
    return plan


def test_every_value_we_set_is_a_chart_key(onprem):
    """Every path we render is in VALUE_KEYS, the keys read from z2jh 4.4.0 ``jupyterhub/values.yaml``
    (``tools/check_jupyterhub_schema.py`` validates the values against the tag's ``values.schema.yaml``)."""
    assert value_paths(onprem.plan.values) <= VALUE_KEYS
    assert onprem.plan.values["hub"]["config"]["JupyterHub"]["authenticator_class"] == "generic-oauth"  # the chart default is dummy


def test_profiles_land_in_team_queues_with_cost_labels(onprem):
    """Each profile pod carries the LocalQueue label in that queue's namespace (Kueue looks the queue up in the
    pod's namespace and gates the pod until admission), requests one unit of a resource its ClusterQueue declares
    (BlockUndeclared), and carries the team's cost labels."""
    teams = {t.name: t for t in load_teams(onprem.stack.config, onprem.root).teams}
    cluster = onprem.stack.burst_plan.clusters["onprem"]
    queues = {(lq.namespace, lq.name): lq.cluster_queue for lq in cluster.local_queues}
    cqs = {cq.name: cq for cq in cluster.cluster_queues}
    assert {p.team for p in onprem.plan.profiles} == set(teams)
    for profile in onprem.plan.profiles:
        entry = profile_entry(profile)["kubespawner_override"]
        assert (entry["namespace"], entry["extra_labels"][KUEUE_QUEUE_NAME_LABEL]) in queues
        assert entry["namespace"] in teams[profile.team].namespaces
        cq = cqs[queues[(entry["namespace"], profile.queue)]]
        (resource,) = entry["extra_resource_limits"]
        assert any(resource in rg.covered for rg in cq.groups) and cq.admission_check is None
        assert teams[profile.team].cost_labels.items() <= entry["extra_labels"].items()
    kinds = {p.offering.kind for p in onprem.plan.profiles}
    assert kinds == {"gpu", "mig"}  # the example site: whole H100s and A100 3g.40gb slices


def test_profile_pods_fit_the_gpu_nodes_and_nothing_else(onprem):
    """A profile pod tolerates the GPU taint and selects its GPU model: it fits a GPU worker, not the control plane."""
    from hybridgpu.stack.jupyterhub import offering_placement
    from hybridgpu.stack.scheduling import cluster_workloads

    (cluster,) = cluster_workloads(onprem.stack.config, load_catalog(), inventory=onprem.stack.inventory,
                                   burst_plan=onprem.stack.burst_plan, onprem_plan=onprem.stack.onprem_plan)
    for profile in onprem.plan.profiles:
        pod = offering_placement(profile.offering)
        fits = [g for g, _ in cluster.groups if not placement_problems(pod, g)]
        assert fits and all(g.gpu for g in fits), profile.slug


def test_hub_pods_run_on_system_nodes_only_with_our_tolerations():
    """z2jh's hub, proxy and user scheduler tolerate only hub.jupyter.org/dedicated=core by default: on an EKS
    system node group tainted CriticalAddonsOnly they stay Pending; with our values they fit it, and never a GPU node."""
    system = NodeGroup("system", {ROLE_LABEL: (SYSTEM_ROLE,)}, (taint_object(*CRITICAL_ADDONS_TAINT),))
    gpu = NodeGroup("gpu", {}, (taint_object(*GPU_TAINT),), gpu=True)
    defaults = chart_placements("jupyterhub", {}, "jupyterhub")
    assert {p.name for p in defaults if p.kind == "Deployment"} == {"jupyterhub/hub", "jupyterhub/proxy", "jupyterhub/user-scheduler"}
    assert all(placement_problems(p, system) for p in defaults if p.kind == "Deployment")
    values = jupyterhub_values(_config(), [])
    ours = chart_placements("jupyterhub", values, "jupyterhub")
    assert {p.kind for p in ours} == {"Deployment"}  # image pullers (DaemonSets, a hook Job) are off
    for pod in ours:
        assert not placement_problems(pod, system) and placement_problems(pod, gpu), pod.name


def _config(**changes: Any) -> JupyterHubConfig:
    return JupyterHubConfig.model_validate({**BASE, **changes})


def _profile(team: str, groups: tuple[str, ...], slug: str) -> NotebookProfile:
    offering = GpuOffering("gpu", "nvidia.com/gpu", "H100-80GB", "on-prem H100-80GB hosts", slug, "a whole GPU")
    return NotebookProfile(team, groups, team, "training", {"team": team}, offering)


def test_profile_filter_offers_each_team_only_its_profiles():
    """Run the rendered ``hub.extraConfig`` snippet as z2jh runs it (``exec`` with ``c`` in scope, after
    ``c.KubeSpawner.profile_list`` was set from ``singleuser.profileList``), then call the profile list as
    KubeSpawner's ``load_user_options`` does: a user sees only the profiles of the teams whose groups they are in."""
    profiles = [_profile("research", ("g-research",), "h100"), _profile("platform", ("g-platform", "g-ops"), "h100")]
    values = jupyterhub_values(_config(), profiles)
    c = SimpleNamespace(KubeSpawner=SimpleNamespace(profile_list=values["singleuser"]["profileList"]))
    scope: dict[str, Any] = {"c": c}
    for snippet in values["hub"]["extraConfig"].values():
        exec(snippet, scope)  # noqa: S102 -- the hub does exactly this with the chart's extraConfig
    listing = c.KubeSpawner.profile_list
    assert callable(listing)

    def slugs(*groups: str) -> list[str]:
        user = SimpleNamespace(groups=[SimpleNamespace(name=g) for g in groups])
        return [p["slug"] for p in listing(SimpleNamespace(user=user))]

    assert slugs("g-research") == ["research-h100"]
    assert slugs("g-ops") == ["platform-h100"]
    assert slugs("g-research", "g-platform") == ["research-h100", "platform-h100"]
    assert slugs("someone-else") == []
    oauth = values["hub"]["config"]["GenericOAuthenticator"]
    assert oauth["allowed_groups"] == ["g-ops", "g-platform", "g-research"] and oauth["manage_groups"] is True


def test_same_input_same_values(onprem):
    first = dump_yaml(jupyterhub_values(onprem.stack.config.platform.jupyterhub, onprem.plan.profiles))
    assert first == dump_yaml(dict(onprem.plan.values))


def test_preview_installs_the_release_with_a_secret_client_secret(onprem):
    """One offline preview: the release with the pinned chart, the client secret as a Pulumi secret (never the
    value), and a Role and RoleBinding for the hub in each team namespace notebooks run in."""
    result = run_preview("onprem", onprem.root)
    (release,) = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "jupyterhub"]
    assert release.inputs["version"] == "4.4.0"
    assert release.inputs["values"]["hub"]["config"]["GenericOAuthenticator"]["client_secret"] == "[secret]"
    bindings = [r for r in result.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding") if r.name.startswith("onprem-site-a-jupyterhub")
                or "jupyterhub" in r.name]
    assert {b.inputs["metadata"]["namespace"] for b in bindings} == set(onprem.plan.team_namespaces) == {"ml-research", "ml-platform"}


def test_offerings_follow_the_nvidia_layer_of_each_pool():
    """EKS offerings come from what a node of each pool advertises (render.nvidia.node_capacity): whole GPUs per
    GPU model, the MIG slices of the pool's layout, and a time-sliced pool's shares (NVIDIA/k8s-device-plugin
    v0.20.0 ``sharing.timeSlicing``: each GPU advertised ``replicas`` times under its own name)."""
    from hybridgpu.config.nvidia import NodePoolNvidia, SharedResource, TimeSlicingConfig
    from hybridgpu.stack.jupyterhub import gpu_offerings
    from hybridgpu.stack.load import load_stack_config
    from tests.helpers import ROOT

    config, _ = load_stack_config("prod", ROOT)
    assert config.nvidia is not None
    shared = TimeSlicingConfig(name="ts4", resources=[SharedResource(name="nvidia.com/gpu", replicas=4)])
    nvidia = config.nvidia.model_copy(
        update={"time_slicing": [shared], "node_pools": {**config.nvidia.node_pools, "h100-on-demand": NodePoolNvidia(device_config="ts4")}}
    )
    offerings = {(o.where, o.gpu_model, o.resource): o for o in gpu_offerings(config.model_copy(update={"nvidia": nvidia}), load_catalog())}
    assert offerings[("Karpenter NodePool h100-on-demand", "H100-80GB", "nvidia.com/gpu")].kind == "shared"
    assert "1 of 4" in offerings[("Karpenter NodePool h100-on-demand", "H100-80GB", "nvidia.com/gpu")].detail
    assert {r for w, _, r in offerings if w == "Karpenter NodePool h100-mig"} == {"nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"}
    spot = {m for w, m, _ in offerings if w == "Karpenter NodePool h100-spot"}
    assert spot == {"H100-80GB", "H200-141GB"}
    for (where, model, _), o in offerings.items():
        assert o.node_selector == {"karpenter.sh/nodepool": where.rsplit(" ", 1)[1]}
        assert (o.required_terms is not None) == (where.endswith("h100-spot"))  # only the two-model pool pins instance types


def test_a_team_gets_only_what_its_local_queue_admits(onprem):
    """Kueue admits a notebook only through a ClusterQueue that declares its resource (BlockUndeclared) in a flavor
    whose node labels its nodes carry; a queue with a MultiKueue admission check would run it on another cluster."""
    import dataclasses

    from hybridgpu.stack.jupyterhub import notebook_profiles
    from hybridgpu.stack.scheduling import cluster_workloads

    stack = onprem.stack
    cluster = stack.burst_plan.clusters["onprem"]
    (workloads,) = cluster_workloads(stack.config, load_catalog(), inventory=stack.inventory, burst_plan=stack.burst_plan, onprem_plan=stack.onprem_plan)
    groups = [g for g, _ in workloads.groups if g.gpu]
    teams = load_teams(stack.config, onprem.root)
    offerings = onprem.plan.offerings

    def profiles(plan_cluster):
        found, skipped = notebook_profiles(offerings, plan_cluster, teams, groups, load_catalog(), "mixed")
        return {(p.team, p.offering.resource) for p in found}, {reason for _, _, reason in skipped}

    assert profiles(cluster)[0] == {(t, r) for t in ("ml-research", "ml-platform") for r in ("nvidia.com/gpu", "nvidia.com/mig-3g.40gb")}
    multikueue = dataclasses.replace(cluster, cluster_queues=tuple(dataclasses.replace(cq, admission_check="mk") for cq in cluster.cluster_queues))
    found, reasons = profiles(multikueue)
    assert not found and any("MultiKueue" in r for r in reasons)
    gpu_only = dataclasses.replace(cluster, cluster_queues=tuple(
        dataclasses.replace(cq, groups=tuple(rg for rg in cq.groups if "nvidia.com/gpu" in rg.covered)) for cq in cluster.cluster_queues))
    found, reasons = profiles(gpu_only)
    assert {r for _, r in found} == {"nvidia.com/gpu"} and any("declares no nvidia.com/mig-3g.40gb" in r for r in reasons)
    elsewhere = dataclasses.replace(cluster, flavors=tuple(dataclasses.replace(f, node_labels={**f.node_labels, "nvidia.com/gpu.product": "NVIDIA-B200"})
                                                            for f in cluster.flavors))
    found, reasons = profiles(elsewhere)
    assert not found and any("no flavor" in r for r in reasons)
