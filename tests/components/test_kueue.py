"""The KueueCluster component on every cluster of the example burst plan, under Pulumi's mocks (offline preview)."""

from __future__ import annotations

import json

import pulumi
import pytest
import yaml

from hybridgpu.burst.kueue import KUEUE_CHART, endpoint_from_kubeconfig, kubeconfig_problems
from hybridgpu.errors import StackConfigError
from hybridgpu.shell.preview import run_preview, write_manifests
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"


@pytest.fixture(scope="module")
def runs(all_previews):
    """The session's previews of the example stacks (tests/conftest.py), not built again here."""
    return {stack: all_previews[stack] for stack in ("hybrid", "onprem", "prod")}


def _kueue_counts(result) -> dict[str, int]:
    return {t[len(KUEUE) :]: n for t, n in result.by_type().items() if t.startswith(KUEUE)}


@pytest.mark.parametrize(
    "stack,expected",
    [
        # The example stacks name the teams file stacks/teams/site-a.yaml (issue 19): on the manager one
        # ClusterQueue per team (ml-research, ml-platform) instead of one per queue class; on the EKS
        # worker one per team and capacity type (ml-research spot and on-demand); the 3 priority classes everywhere.
        (
            "hybrid",
            {"ResourceFlavor": 4, "ClusterQueue": 2, "LocalQueue": 3, "AdmissionCheck": 2, "MultiKueueConfig": 2, "MultiKueueCluster": 2, "WorkloadPriorityClass": 3},
        ),
        # onprem also gets the Topology `onprem` its flavors name (issue 18: the inventory's blocks and racks).
        ("onprem", {"ResourceFlavor": 2, "ClusterQueue": 1, "LocalQueue": 3, "WorkloadPriorityClass": 3, "Topology": 1}),
        # prod also gets the EFA pool's topology-aware queue (issue 18, hybridgpu.burst.eks_tas): the Topology `eks`,
        # flavor eks-efa-h100-reserved, ClusterQueue hybridgpu-eks-efa-h100-reserved, LocalQueue ml-research/h100-reserved.
        ("prod", {"ResourceFlavor": 3, "ClusterQueue": 3, "LocalQueue": 3, "WorkloadPriorityClass": 3, "Topology": 1}),
    ],
)
def test_kueue_objects_per_cluster(runs, stack, expected):
    result = runs[stack]
    assert _kueue_counts(result) == expected
    component = [r for r in result.records if r.type == "hybridgpu:index:KueueCluster"]
    assert len(component) == 1 and component[0].name == f"{stack}-burst"
    by_urn = {r.urn: r for r in result.records}
    for rec in result.records:
        if rec.type.startswith(KUEUE) and by_urn[rec.parent].type == "hybridgpu:index:EfaQueues":
            continue  # the EFA pools' topology-aware queues (issue 18): their own component, after this one
        if rec.type.startswith(KUEUE) or rec.name.startswith(f"{stack}-burst-"):
            assert by_urn[rec.parent].type == "hybridgpu:index:KueueCluster", rec.name
            assert rec.name.startswith(f"{stack}-burst-")
    worker = stack != "hybrid"
    assert len(result.of_type("kubernetes:core/v1:ServiceAccount")) == (1 if worker else 0)
    assert len(result.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")) == (1 if worker else 0)
    assert result.outputs["burst_role"] == {"hybrid": "manager", "onprem": "onprem-worker", "prod": "cloud-worker"}[stack]


def test_kueue_release_is_pinned_with_the_manager_configuration(runs):
    for stack, result in runs.items():
        release = next(r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kueue")
        assert release.inputs["chart"] == KUEUE_CHART and release.inputs["version"] == "0.19.2"
        assert release.inputs["namespace"] == "kueue-system" and release.inputs["createNamespace"] is True
        config = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
        assert ("multiKueue" in config) == (stack == "hybrid")
    manager = yaml.safe_load(
        next(r for r in runs["hybrid"].of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kueue").inputs["values"]["managerConfig"][
            "controllerManagerConfigYaml"
        ]
    )
    assert manager["multiKueue"]["dispatcherName"].endswith("incremental")


def test_manager_stores_exec_free_worker_kubeconfigs_as_secrets(runs):
    secrets = runs["hybrid"].of_type("kubernetes:core/v1:Secret")
    assert sorted(s.inputs["metadata"]["name"] for s in secrets) == ["hybridgpu-eks-kubeconfig", "hybridgpu-onprem-kubeconfig"]
    for secret in secrets:
        assert secret.inputs["metadata"]["namespace"] == "kueue-system"
        assert "stringData" in secret.secret_paths or "stringData.kubeconfig" in secret.secret_paths
        text = secret.inputs["stringData"]["kubeconfig"]
        assert kubeconfig_problems(text) == []
        assert "exec" not in yaml.safe_load(text)["users"][0]["user"]
    locations = {r.inputs["spec"]["clusterSource"]["kubeConfig"]["location"] for r in runs["hybrid"].of_type(KUEUE + "MultiKueueCluster")}
    assert locations == {s.inputs["metadata"]["name"] for s in secrets}


def test_each_multikueue_secret_holds_its_own_workers_kubeconfig(runs):
    """Each worker's Secret holds the kubeconfig read from THAT worker's stack (mocked endpoint per stack reference)."""
    from hybridgpu.stack.burst import load_burst_plan
    from hybridgpu.shell.preview import _short_hash

    workers = load_burst_plan("stacks/burst/site-a.yaml", ROOT).clusters["hybrid"].multikueue.workers
    assert len({w.stack_reference for w in workers}) == len(workers) == 2
    secrets = {s.inputs["metadata"]["name"]: s.inputs["stringData"]["kubeconfig"] for s in runs["hybrid"].of_type("kubernetes:core/v1:Secret")}
    locations = {r.inputs["metadata"]["name"]: r.inputs["spec"]["clusterSource"]["kubeConfig"]["location"] for r in runs["hybrid"].of_type(KUEUE + "MultiKueueCluster")}
    for worker in workers:
        assert locations[worker.name] == worker.secret
        server, _ = endpoint_from_kubeconfig(secrets[worker.secret])
        assert server == f"https://{_short_hash('stack', worker.stack_reference)}.worker.invalid", worker.name


def test_workers_export_their_kubeconfig_as_a_secret(runs):
    for stack in ("onprem", "prod"):
        assert runs[stack].outputs["burst_worker_kubeconfig"] == "[secret]"
        token = runs[stack].of_type("kubernetes:core/v1:Secret")
        assert [t.inputs["type"] for t in token] == ["kubernetes.io/service-account-token"]
        sa = runs[stack].of_type("kubernetes:core/v1:ServiceAccount")[0]
        assert sa.urn in token[0].dependencies
    assert "burst_worker_kubeconfig" not in runs["hybrid"].outputs


def test_queues_wait_for_their_namespace_and_cluster_queues(runs):
    result = runs["hybrid"]
    namespaces = {r.inputs["metadata"]["name"]: r.urn for r in result.of_type("kubernetes:core/v1:Namespace")}
    cqs = {r.urn for r in result.of_type(KUEUE + "ClusterQueue")}
    for lq in result.of_type(KUEUE + "LocalQueue"):
        assert namespaces[lq.inputs["metadata"]["namespace"]] in lq.dependencies
        assert cqs <= set(lq.dependencies)
    release = next(r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kueue")
    for rec in result.records:
        if rec.type.startswith(KUEUE):
            assert release.urn in rec.dependencies


def test_written_manifests_hold_no_credentials(runs, tmp_path):
    for result in runs.values():
        target = write_manifests(result, tmp_path)
        files = {p.name: p.read_text() for p in (target / "manifests").iterdir()}
        assert any(name.startswith("clusterqueue-") for name in files)
        blob = "\n".join(files.values())
        for needle in ("certificate-authority-data", "token:", "eyJ", "MOCK-WORKER-CA", "stringData"):
            assert needle not in blob, needle


def test_worker_kubeconfig_is_built_from_the_token_and_the_ca(runs):
    """Run the component alone under the mocks and resolve the secret output."""
    from pulumi.runtime.sync_await import _sync_await

    import pulumi_kubernetes as k8s
    from hybridgpu.components.base import as_input
    from hybridgpu.components.kueue import KueueCluster, KueueClusterArgs
    from hybridgpu.stack.burst import load_burst_plan
    from hybridgpu.shell.preview import HybridMocks, _mock_jwt, _reset_runtime, _short_hash

    plan = load_burst_plan("stacks/burst/site-a.yaml", ROOT)
    _reset_runtime()
    pulumi.runtime.set_mocks(HybridMocks("us-east-1"), project="hybridgpu", stack="prod", preview=False)
    try:
        provider = k8s.Provider("p", kubeconfig="{}")
        kubeconfig = json.dumps({"clusters": [{"name": "c", "cluster": {"server": "https://api.example:443", "certificate-authority-data": "Q0E="}}]})
        args = KueueClusterArgs(plan=as_input(plan.clusters["prod"]), source=as_input(plan.source), provider=provider, kubeconfig=kubeconfig)
        kueue = KueueCluster("prod-burst", args)
        assert _sync_await(kueue.worker_kubeconfig.is_secret())
        text = _sync_await(kueue.worker_kubeconfig.future())
    finally:
        _reset_runtime()
    doc = yaml.safe_load(text)
    assert kubeconfig_problems(text) == []
    assert doc["clusters"][0]["cluster"] == {"server": "https://api.example:443", "certificate-authority-data": "Q0E="}
    expected = _mock_jwt(_short_hash("kubernetes:core/v1:Secret", "prod-burst-secret-hybridgpu-multikueue-token"))
    assert doc["users"][0]["user"] == {"token": expected}


def test_split_queues_on_prem_manager(scratch_project):
    data = example_plan()
    data["topology"] = "split-queues"
    data["manager"].pop("stack")
    # The on-prem manager's management network must reach the EKS API (issue 15, point 5).
    allow = {"prod": lambda c: c["hybridgpu:cloud"]["cluster"]["endpoint"]["privateAccessCidrs"].append("10.20.0.0/22")}
    root = scratch_project(plan=data, stack_edits=allow)
    result = run_preview("onprem", root)
    counts = _kueue_counts(result)
    # + the on-prem Topology of the inventory's blocks and racks (issue 18), named by the two on-prem flavors
    assert counts == {"ResourceFlavor": 4, "ClusterQueue": 3, "LocalQueue": 5, "AdmissionCheck": 1, "MultiKueueConfig": 1, "MultiKueueCluster": 1, "Topology": 1}
    secrets = {s.inputs["metadata"]["name"]: s for s in result.of_type("kubernetes:core/v1:Secret")}
    assert set(secrets) == {"hybridgpu-eks-kubeconfig"}  # the manager is no worker: no token, no export
    assert "burst_worker_kubeconfig" not in result.outputs and result.outputs["burst_role"] == "onprem-manager"
    prod = run_preview("prod", root)
    # + the EFA pool's own topology-aware LocalQueue in the plan's namespace (issue 18, hybridgpu.burst.eks_tas)
    assert sorted(r.inputs["metadata"]["name"] for r in prod.of_type(KUEUE + "LocalQueue")) == ["batch-eval-burst", "h100-reserved", "training-burst"]


def test_a_nodepool_limit_that_disagrees_stops_the_preview(scratch_project):
    def raise_limit(config):
        config["hybridgpu:cloud"]["nodePools"][1]["gpuLimit"] = 65

    root = scratch_project(plan=example_plan(), stack_edits={"prod": raise_limit})
    with pytest.raises(StackConfigError) as err:
        run_preview("prod", root)
    assert err.value.keys == ["hybridgpu:cloud.nodePools[1].gpuLimit"]
    assert "derives 64 GPUs" in str(err.value) and not (root / "out").exists()


def test_a_capacity_block_pool_deploys_its_reserved_flavor_first_and_the_teams_cohort(scratch_project, monkeypatch):
    """Through the Pulumi program under the mocks (not only the burst plan): a NodePool of prod with an active
    Capacity Block gives prod the ResourceFlavor ``eks-reserved-<pool>`` (the labels Karpenter v1.14.1 sets on a
    block's nodes), first in each team ClusterQueue's GPU group at quota 0, and the Kueue ``Cohort`` of the teams
    that holds the block's 16 GPUs (kueue v0.19.2 ``apis/kueue/v1beta2/cohort_types.go``); the manager gets the
    flavor and the Cohort too. Every Kueue object validates against the v1beta2 constraints."""
    from hybridgpu.burst.schema import kueue_errors
    from tests.helpers.scratch import example_teams

    monkeypatch.setenv("HYBRIDGPU_NOW", "2026-12-02T00:00:00Z")

    def add_block(config):
        config["hybridgpu:cloud"]["nodePools"].append({
            "name": "h100-block", "nodeClass": "h100", "capacityTypes": ["reserved"], "instanceTypes": ["p5.48xlarge"], "gpuLimit": 16,
            "capacityBlocks": [{"id": "cr-0123456789abcdef0", "instanceType": "p5.48xlarge", "instanceCount": 2,
                                "start": "2026-12-01T11:30:00Z", "end": "2026-12-08T11:30:00Z"}],
        })

    root = scratch_project(plan=example_plan(), teams=example_teams(), stack_edits={"prod": add_block})
    prod, hybrid = run_preview("prod", root), run_preview("hybrid", root)
    flavor = next(r.inputs for r in prod.of_type(KUEUE + "ResourceFlavor") if r.inputs["metadata"]["name"] == "eks-reserved-h100-block")
    assert flavor["spec"]["nodeLabels"] == {
        "karpenter.k8s.aws/capacity-reservation-type": "capacity-block", "karpenter.k8s.aws/instance-gpu-name": "h100",
        "karpenter.sh/capacity-type": "reserved", "karpenter.sh/nodepool": "h100-block",
    }
    for result in (prod, hybrid):
        [cohort] = [r.inputs for r in result.of_type(KUEUE + "Cohort")]
        [group] = cohort["spec"]["resourceGroups"]
        assert [(f["name"], f["resources"]) for f in group["flavors"]] == [
            (("eks-reserved-h100-block" if result is prod else "multikueue-eks-reserved-h100-block"), [{"name": "nvidia.com/gpu", "nominalQuota": 16}])
        ]
        assert all(not kueue_errors(r.inputs) for t, n in result.by_type().items() if t.startswith(KUEUE) for r in result.of_type(t))
    team_queues = [r.inputs for r in prod.of_type(KUEUE + "ClusterQueue") if r.inputs["metadata"]["name"].startswith("hybridgpu-team-")]
    assert team_queues
    for cq in team_queues:
        gpu_group = next(g for g in cq["spec"]["resourceGroups"] if "nvidia.com/gpu" in g["coveredResources"])
        first = gpu_group["flavors"][0]
        assert first["name"] == "eks-reserved-h100-block"
        assert all(r["nominalQuota"] == 0 for r in first["resources"])


# --------------------------------------------------------------------------- teams (issue 19)
RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
VAP = "kubernetes:admissionregistration.k8s.io/v1:"


@pytest.mark.parametrize(
    "stack,queues,roles",
    [
        ("hybrid", {"hybridgpu-team-ml-research", "hybridgpu-team-ml-platform"}, {"ml-research", "ml-platform"}),
        ("onprem", {"hybridgpu-onprem"}, set()),
        ("prod", {"hybridgpu-team-ml-research-eks-spot", "hybridgpu-team-ml-research-eks-on-demand", "hybridgpu-eks-efa-h100-reserved"}, set()),
    ],
)
def test_team_namespaces_queues_and_rbac_per_stack(runs, stack, queues, roles):
    """Under the mocks: the team ClusterQueues, the labelled team namespaces, and the team RBAC only where jobs are submitted."""
    result = runs[stack]
    assert {r.inputs["metadata"]["name"] for r in result.of_type(KUEUE + "ClusterQueue")} == queues
    namespaces = {r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"] for r in result.of_type("kubernetes:core/v1:Namespace")}
    if "ml-research" in namespaces:
        assert namespaces["ml-research"]["team"] == "ml-research" and namespaces["ml-research"]["cost-center"] == "cc-4100"
    wpcs = {r.inputs["metadata"]["name"]: r.inputs["value"] for r in result.of_type(KUEUE + "WorkloadPriorityClass")}
    assert wpcs == {"production": 1000, "research": 100, "best-effort": 10}
    release = next(r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kueue")
    for wpc in result.of_type(KUEUE + "WorkloadPriorityClass"):
        assert release.urn in wpc.dependencies  # the CRD comes with the chart
    role_ns = {r.inputs["metadata"]["namespace"] for r in result.of_type(RBAC + "Role")}
    binding_ns = {r.inputs["metadata"]["namespace"] for r in result.of_type(RBAC + "RoleBinding")}
    assert role_ns == binding_ns == roles
    ns_urns = {r.inputs["metadata"]["name"]: r.urn for r in result.of_type("kubernetes:core/v1:Namespace")}
    for role in result.of_type(RBAC + "Role"):
        assert ns_urns[role.inputs["metadata"]["namespace"]] in role.dependencies
    policies = {r.inputs["metadata"]["name"] for r in result.of_type(VAP + "ValidatingAdmissionPolicy")}
    assert policies == {f"hybridgpu-team-{t}-jobs" for t in roles}
    for binding in result.of_type(RBAC + "RoleBinding"):
        assert binding.inputs["subjects"][0]["kind"] == "Group"
    config = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["waitForPodsReady"]["timeout"] == "10m" and "fairSharing" in config


def test_split_queues_manager_gets_the_worker_alert_rule_after_kueue(scratch_project):
    """manager.workerAlerts (issue 26): the PrometheusRule on the on-prem manager, after the Kueue release, and nothing waits for it."""
    data = example_plan()
    data["topology"] = "split-queues"
    data["manager"].pop("stack")
    data["manager"]["workerAlerts"] = {"enabled": True, "namespace": "monitoring", "prometheusLabels": {"release": "kps"}}
    allow = {"prod": lambda c: c["hybridgpu:cloud"]["cluster"]["endpoint"]["privateAccessCidrs"].append("10.20.0.0/22")}
    root = scratch_project(plan=data, stack_edits=allow)
    result = run_preview("onprem", root)
    rules = [r for r in result.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule") if r.inputs["metadata"]["name"] == "hybridgpu-multikueue-workers"]
    assert len(rules) == 1
    [rule] = rules
    assert rule.inputs["metadata"]["namespace"] == "monitoring" and rule.inputs["metadata"]["labels"]["release"] == "kps"
    release = next(r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kueue")
    assert release.urn in rule.dependencies
    # No Kueue object waits for it (a missing Prometheus operator CRD stops only the rule).
    assert all(rule.urn not in r.dependencies for r in result.records if r.type.startswith(KUEUE) or r.type == "kubernetes:helm.sh/v3:Release" and r.inputs["name"] == "kueue")
