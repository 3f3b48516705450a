"""Kueue for many teams (hybridgpu.burst.teams) on the example plan: what lands on which cluster, and that it is valid.

Validity: every object against its upstream schema (Kubernetes 1.35 OpenAPI through kubernetes-validate
for Namespaces, Roles, RoleBindings and ValidatingAdmissionPolicies; the Kueue v0.19.2 CRD constraints of
hybridgpu.burst.schema for the Kueue kinds), plus the ClusterQueue webhook rules the project checks.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from hybridgpu.burst.kueue import cluster_manifests, kueue_configuration
from hybridgpu.burst.schema import kueue_errors
from hybridgpu.burst.teams import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL, apply_teams, preemption, team_quota_rows, weight_quantity
from hybridgpu.schemas import validate_all
from hybridgpu.teams.models import TeamsFile
from tests.helpers.teams import edited, example_plan, example_teams


@pytest.fixture(scope="module")
def teams():
    return TeamsFile.model_validate(example_teams())


@pytest.fixture(scope="module")
def plan(teams):
    return apply_teams(example_plan(), teams)


@pytest.fixture(scope="module")
def docs(plan):
    return {stack: cluster_manifests(cluster, plan.source) for stack, cluster in plan.clusters.items()}


def _of(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def test_every_object_validates_upstream(docs):
    for stack, manifests in docs.items():
        findings = validate_all(manifests, kubernetes_version="1.35.0")
        bad = [(f.kind, f.name, f.errors) for f in findings if not f.ok or f.skipped]
        assert not bad, (stack, bad)
    kinds = {d["kind"] for d in docs["hybrid"]}
    assert {"WorkloadPriorityClass", "Role", "RoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds


def test_manager_has_one_cluster_queue_per_team_in_one_cohort(docs):
    cqs = {d["metadata"]["name"]: d["spec"] for d in _of(docs["hybrid"], "ClusterQueue")}
    assert set(cqs) == {"hybridgpu-team-ml-research", "hybridgpu-team-ml-platform"}
    research, platform = cqs["hybridgpu-team-ml-research"], cqs["hybridgpu-team-ml-platform"]
    assert {s["cohortName"] for s in cqs.values()} == {"hybridgpu-teams"}
    # each team's queue admits only the team's namespaces
    assert research["namespaceSelector"]["matchExpressions"][0]["values"] == ["ml-research"]
    assert platform["namespaceSelector"]["matchExpressions"][0]["values"] == ["ml-platform"]
    # guaranteed shares as nominal quota, limits as written in the teams file
    h100 = research["resourceGroups"][0]["flavors"][0]
    assert h100 == {"name": "multikueue-onprem-h100-80gb", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 8, "lendingLimit": 8}]}
    clouds = {f["name"]: f["resources"][0] for f in research["resourceGroups"][0]["flavors"][1:]}
    assert clouds == {
        "multikueue-eks-spot": {"name": "nvidia.com/gpu", "nominalQuota": 48, "borrowingLimit": 0},
        "multikueue-eks-on-demand": {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 0},
    }
    # ml-platform's queue stays on-prem: its admission check dispatches to the on-prem worker only; no cloud flavor
    assert platform["admissionChecksStrategy"]["admissionChecks"] == [{"name": "hybridgpu-onprem-only"}]
    assert research["admissionChecksStrategy"]["admissionChecks"] == [{"name": "hybridgpu-spillover"}]
    assert [f["name"] for f in platform["resourceGroups"][0]["flavors"]] == ["multikueue-onprem-h100-80gb"]
    assert research["preemption"] == {"borrowWithinCohort": {"policy": "Never"}, "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert research["fairSharing"] == {"weight": "2"} and platform["fairSharing"] == {"weight": "1"}
    lqs = {(d["metadata"]["namespace"], d["metadata"]["name"]): d["spec"]["clusterQueue"] for d in _of(docs["hybrid"], "LocalQueue")}
    assert lqs == {
        ("ml-research", "training"): "hybridgpu-team-ml-research",
        ("ml-research", "batch-eval"): "hybridgpu-team-ml-research",
        ("ml-platform", "restricted"): "hybridgpu-team-ml-platform",
    }


def test_eks_worker_caps_each_team_at_its_cloud_share(docs):
    cqs = {d["metadata"]["name"]: d["spec"] for d in _of(docs["prod"], "ClusterQueue")}
    assert set(cqs) == {"hybridgpu-team-ml-research-eks-spot", "hybridgpu-team-ml-research-eks-on-demand"}
    spot = cqs["hybridgpu-team-ml-research-eks-spot"]["resourceGroups"][0]
    assert spot["coveredResources"] == ["nvidia.com/gpu", "nvidia.com/mig-3g.40gb"]
    assert spot["flavors"] == [
        {
            "name": "eks-spot",
            "resources": [
                {"name": "nvidia.com/gpu", "nominalQuota": 48, "borrowingLimit": 0},
                {"name": "nvidia.com/mig-3g.40gb", "nominalQuota": 0, "borrowingLimit": 0},
            ],
        }
    ]
    # a worker does not preempt what the manager dispatched
    assert all("preemption" not in s for s in cqs.values())
    lqs = {(d["metadata"]["namespace"], d["metadata"]["name"]): d["spec"]["clusterQueue"] for d in _of(docs["prod"], "LocalQueue")}
    assert lqs == {("ml-research", "training"): "hybridgpu-team-ml-research-eks-spot", ("ml-research", "batch-eval"): "hybridgpu-team-ml-research-eks-on-demand"}


def test_onprem_worker_keeps_its_one_queue_and_gets_the_classes_and_labels(docs, plan):
    assert [d["metadata"]["name"] for d in _of(docs["onprem"], "ClusterQueue")] == ["hybridgpu-onprem"]
    assert sorted(d["metadata"]["name"] for d in _of(docs["onprem"], "WorkloadPriorityClass")) == ["best-effort", "production", "research"]
    assert not _of(docs["onprem"], "Role")  # teams submit on the manager
    for stack in docs:
        ns = {d["metadata"]["name"]: d["metadata"]["labels"] for d in _of(docs[stack], "Namespace")}
        assert ns["ml-research"] == {"app.kubernetes.io/managed-by": "hybridgpu", "cost-center": "cc-4100", "project": "llm-training", "team": "ml-research"}
        config = kueue_configuration(plan.clusters[stack], plan.source)
        assert config["waitForPodsReady"] == {"timeout": "10m", "blockAdmission": False}
        assert config["fairSharing"] == {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}


def test_team_rbac_reads_only_its_own_namespace(docs):
    roles = {(d["metadata"]["namespace"], d["kind"]): d for d in docs["hybrid"] if d["kind"] in ("Role", "RoleBinding")}
    assert set(roles) == {("ml-research", "Role"), ("ml-research", "RoleBinding"), ("ml-platform", "Role"), ("ml-platform", "RoleBinding")}
    binding = roles[("ml-research", "RoleBinding")]
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ml-research"}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "hybridgpu-team-submitter"}
    rules = roles[("ml-research", "Role")]["rules"]
    kueue = next(r for r in rules if r["apiGroups"] == ["kueue.x-k8s.io"])
    assert set(kueue["verbs"]) == {"get", "list", "watch"}  # read-only: no team edits a LocalQueue or a Workload
    assert not any(d["kind"] in ("ClusterRole", "ClusterRoleBinding") for d in docs["hybrid"])  # nothing cluster-wide


def test_admission_policy_expressions(docs):
    """The CEL of each team's policy, evaluated in Python on the three cases that matter."""
    vap = next(d for d in _of(docs["hybrid"], "ValidatingAdmissionPolicy") if d["metadata"]["name"] == "hybridgpu-team-ml-platform-jobs")
    exprs = [v["expression"] for v in vap["spec"]["validations"]]
    assert exprs[0] == f"has(object.metadata.labels) && '{QUEUE_NAME_LABEL}' in object.metadata.labels"
    assert exprs[1].endswith("in ['production', 'research']") and PRIORITY_CLASS_LABEL in exprs[1]
    binding = next(d for d in _of(docs["hybrid"], "ValidatingAdmissionPolicyBinding") if d["metadata"]["name"] == "hybridgpu-team-ml-platform-jobs")
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["ml-platform"]


def test_fair_sharing_off_lets_borrowers_preempt_only_the_lowest_class():
    teams = TeamsFile.model_validate(edited(example_teams(), {"fairSharing": {"enabled": False}}))
    assert preemption(teams)["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": 10}
    plan = apply_teams(example_plan(), teams)
    for cluster in plan.clusters.values():
        for doc in cluster_manifests(cluster, plan.source):
            if doc["apiVersion"].startswith("kueue"):
                assert kueue_errors(doc) == []
        assert "fairSharing" not in kueue_configuration(cluster, plan.source)


def test_split_queues_puts_team_queues_on_the_onprem_manager():
    base = example_plan()
    source = base.source.model_copy(update={"topology": "split-queues", "manager": base.source.manager.model_copy(update={"stack": None})})
    from hybridgpu.burst.plan import assemble_plan

    split = apply_teams(assemble_plan(source, base.onprem, base.cloud), TeamsFile.model_validate(example_teams()))
    onprem = split.clusters["onprem"]
    assert [cq.name for cq in onprem.cluster_queues] == ["hybridgpu-team-ml-research", "hybridgpu-team-ml-research-burst", "hybridgpu-team-ml-platform"]
    lqs = {(lq.namespace, lq.name): lq.cluster_queue for lq in onprem.local_queues}
    assert lqs[("ml-research", "training-burst")] == "hybridgpu-team-ml-research-burst"
    assert lqs[("ml-research", "training")] == "hybridgpu-team-ml-research"
    for doc in cluster_manifests(onprem, split.source):
        if doc["apiVersion"].startswith("kueue"):
            assert kueue_errors(doc) == [], doc["metadata"]["name"]
    burst = next(cq for cq in onprem.cluster_queues if cq.name.endswith("-burst"))
    assert burst.admission_check == "hybridgpu-multikueue-eks"
    assert {fq.flavor: fq.nominal for fq in burst.groups[0].flavors} == {"multikueue-spot": {"nvidia.com/gpu": 48}, "multikueue-on-demand": {"nvidia.com/gpu": 8}}


def test_without_teams_the_plan_is_unchanged():
    """No teams file: today's burst plan, byte for byte."""
    plan = example_plan()
    before = {s: yaml.safe_dump(cluster_manifests(c, plan.source)) for s, c in plan.clusters.items()}
    apply_teams(plan, TeamsFile.model_validate(example_teams()))  # returns a new plan; the input stays
    assert {s: yaml.safe_dump(cluster_manifests(c, plan.source)) for s, c in plan.clusters.items()} == before
    assert all(cq.team is None for c in plan.clusters.values() for cq in c.cluster_queues)


def test_quota_rows_for_the_cli(plan):
    rows = team_quota_rows(plan)
    research = [r for r in rows if r["stack"] == "hybrid" and r["team"] == "ml-research" and r["flavor"] == "multikueue-onprem-h100-80gb"]
    assert research == [
        {"stack": "hybrid", "clusterQueue": "hybridgpu-team-ml-research", "team": "ml-research", "flavor": "multikueue-onprem-h100-80gb", "resource": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 8, "lendingLimit": 8}
    ]


@pytest.mark.parametrize("weight,quantity", [(1, "1"), (2.0, "2"), (0.5, "500m"), (0, "0"), (0.001, "1m"), (1.25, "1250m")])
def test_weight_quantity(weight, quantity):
    assert weight_quantity(weight) == quantity
    assert kueue_errors({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"fairSharing": {"weight": quantity}}}) == []


_GROUP_WITH_LIMIT = {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2, "lendingLimit": 5}]}]}


def test_cohort_under_a_parent_may_lend_more_than_its_nominal_quota():
    """The Cohort webhook does not enforce lendingLimit <= nominalQuota (enforceNominalGreaterThanLending: false, v0.19.2)."""
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c"}, "spec": {"parentName": "root", "resourceGroups": [_GROUP_WITH_LIMIT]}}
    assert kueue_errors(doc) == []
    assert kueue_errors({**doc, "kind": "ClusterQueue", "spec": {"cohortName": "root", "resourceGroups": [_GROUP_WITH_LIMIT]}})  # a ClusterQueue may not


@pytest.mark.parametrize(
    "doc,error",
    [
        ({"kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": "high"}, "value"),
        ({"kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": 2**31}, "value"),
        ({"kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": 1, "spec": {"value": 1}}, "spec"),
        ({"kind": "WorkloadPriorityClass", "metadata": {"name": "p", "namespace": "x"}, "value": 1}, "metadata.namespace"),
        ({"kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": 1, "description": "x" * 2049}, "description"),
        ({"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}}}}, "reclaimWithinCohort=Never"),
        ({"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"preemption": {"reclaimWithinCohort": "Sometimes"}}}, "reclaimWithinCohort"),
        ({"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"fairSharing": {"weight": "1e-10"}}}, "10^-9"),
        ({"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"fairSharing": {"weight": "-1"}}}, "negative"),
        ({"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"fairSharing": {"weight": 1, "share": 2}}}, "share"),
        ({"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"fairSharing": {"weight": "1n"}}}, "10^-9"),
        ({"kind": "Cohort", "metadata": {"name": "c"}, "spec": {"resourceGroups": [_GROUP_WITH_LIMIT]}}, "need parentName"),
        ({"kind": "Cohort", "metadata": {"name": "c"}, "spec": {"parent": "root"}}, "parent"),
        ({"kind": "Cohort", "metadata": {"name": "c", "namespace": "x"}, "spec": {}}, "metadata.namespace"),
    ],
)
def test_schema_refuses(doc, error):
    """The new CRD constraints of hybridgpu.burst.schema (Kueue v0.19.2 CRDs and ClusterQueue webhook)."""
    errors = kueue_errors({"apiVersion": "kueue.x-k8s.io/v1beta2", **copy.deepcopy(doc)})
    assert any(error in e for e in errors), errors


def test_committed_teams_reference_matches_generated_and_every_field_is_documented():
    from hybridgpu.burst.teams_docs import REGENERATE, teams_reference_markdown
    from hybridgpu.docs_gen import field_doc_problems
    from tests.helpers import ROOT

    committed = (ROOT / "docs" / "teams-reference.md").read_text()
    assert committed == teams_reference_markdown(), f"docs/teams-reference.md is stale; run `{REGENERATE}`"
    assert field_doc_problems(TeamsFile) == []
    for key in ("`teams[].onprem[].lendingLimit`", "`teams[].costLabels`", "`teams[].monthlyCloudBudgetUsd`"):
        assert key in committed
