"""Rendered Kueue objects: v1beta2 CRD constraints, the manager Configuration, worker RBAC and kubeconfigs."""

from __future__ import annotations

import copy

import pytest
import yaml

from hybridgpu.burst.kueue import (
    cluster_manifests,
    endpoint_from_kubeconfig,
    kubeconfig_problems,
    kueue_configuration,
    kueue_helm_values,
    worker_kubeconfig,
    worker_rbac_rules,
)
from hybridgpu.stack.burst import load_burst_plan
from hybridgpu.burst.schema import kueue_errors
from hybridgpu.render.kubeconfig import eks_kubeconfig
from hybridgpu.schemas import validate_all
from tests.helpers import ROOT

CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1PQ0sKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="


@pytest.fixture(scope="module")
def plan():
    return load_burst_plan("stacks/burst/site-a.yaml", ROOT)


@pytest.fixture(scope="module")
def docs(plan):
    return {stack: cluster_manifests(cluster, plan.source) for stack, cluster in plan.clusters.items()}


def _of(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def test_every_object_on_every_cluster_validates(docs):
    for stack, manifests in docs.items():
        findings = validate_all(manifests, kubernetes_version="1.35.0")
        assert len(findings) == len(manifests)
        bad = [(f.kind, f.name, f.errors) for f in findings if not f.ok or f.skipped]
        assert not bad, (stack, bad)
        kinds = {d["kind"] for d in manifests}
        assert {"ResourceFlavor", "ClusterQueue", "LocalQueue", "Namespace"} <= kinds
    assert {"AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"} <= {d["kind"] for d in docs["hybrid"]}
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret"} <= {d["kind"] for d in docs["prod"]}
    assert not _of(docs["hybrid"], "ServiceAccount")  # the manager is nobody's worker


def test_manager_objects(docs):
    hybrid = docs["hybrid"]
    checks = {d["metadata"]["name"]: d["spec"] for d in _of(hybrid, "AdmissionCheck")}
    assert checks["hybridgpu-spillover"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "hybridgpu-spillover"},
    }
    configs = {d["metadata"]["name"]: d["spec"]["clusters"] for d in _of(hybrid, "MultiKueueConfig")}
    assert configs == {"hybridgpu-spillover": ["onprem", "eks"], "hybridgpu-onprem-only": ["onprem"]}
    clusters = {d["metadata"]["name"]: d["spec"]["clusterSource"]["kubeConfig"] for d in _of(hybrid, "MultiKueueCluster")}
    assert clusters == {
        "onprem": {"locationType": "Secret", "location": "hybridgpu-onprem-kubeconfig"},
        "eks": {"locationType": "Secret", "location": "hybridgpu-eks-kubeconfig"},
    }
    for cq in _of(hybrid, "ClusterQueue"):
        assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["name"] in checks
        # No cohort: a class lends nothing, so no class can take another's cloud ceiling (issue 15).
        assert "cohortName" not in cq["spec"]
        assert cq["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["ml-platform", "ml-research"]


def test_worker_cluster_queues_have_no_admission_check_and_match_the_nodepools(docs):
    eks = {d["metadata"]["name"]: d for d in _of(docs["prod"], "ClusterQueue")}
    spot = eks["hybridgpu-eks-spot"]["spec"]
    assert "admissionChecksStrategy" not in spot and "cohortName" not in spot
    # The MIG resource the manager admits is declared with quota 0: under BlockUndeclared a MIG
    # workload is never admitted in EKS without quota (issue 15, point 2).
    assert spot["resourceGroups"] == [
        {
            "coveredResources": ["nvidia.com/gpu", "nvidia.com/mig-3g.40gb"],
            "flavors": [{"name": "eks-spot", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}, {"name": "nvidia.com/mig-3g.40gb", "nominalQuota": 0}]}],
        }
    ]
    onprem = _of(docs["onprem"], "ClusterQueue")[0]["spec"]["resourceGroups"]
    assert onprem[1]["coveredResources"] == ["nvidia.com/mig-3g.40gb"]
    assert onprem[1]["flavors"][0]["resources"] == [{"name": "nvidia.com/mig-3g.40gb", "nominalQuota": 16}]


def test_manager_configuration_uses_incremental_dispatch_one_worker_at_a_time(plan):
    manager = kueue_configuration(plan.clusters["hybrid"], plan.source)
    assert manager["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert manager["multiKueue"]["dispatcherName"] == "kueue.x-k8s.io/multikueue-dispatcher-incremental"
    # Kueue's default stepSize is 3, which would nominate on-prem and EKS at once.
    assert manager["multiKueue"]["incrementalDispatcherConfig"] == {"stepSize": 1}
    assert manager["multiKueue"]["workerLostTimeout"] == "15m"
    assert manager["resources"] == {"quotaCheckStrategy": "BlockUndeclared", "excludeResourcePrefixes": ["cpu", "memory", "ephemeral-storage", "hugepages-", "rdma/rdma_shared_device_ib", "rdma/rdma_shared_device_roce"]}
    worker = kueue_configuration(plan.clusters["prod"], plan.source)
    # The example plan enables the job frameworks hybridgpu installs (tests/burst/test_frameworks.py) and `pod`.
    assert "multiKueue" not in worker and worker["integrations"]["frameworks"] == list(plan.source.kueue.frameworks)
    assert worker["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "ray.io/rayjob", "ray.io/raycluster", "pod"]
    # With `pod`, Kueue manages plain pods only in the queues' namespaces (its pod webhook fails closed there).
    # On the EKS worker that is ml-research only: ml-platform's one queue never bursts (`burst: none`).
    assert worker["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == list(plan.clusters["prod"].namespaces) == ["ml-research"]
    values = kueue_helm_values(plan.clusters["hybrid"], plan.source)
    assert yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"]) == manager


def test_worker_rbac_covers_jobs_pods_and_workloads_status():
    rules = worker_rbac_rules(["batch/job"])
    granted = {(g, r): set(rule["verbs"]) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}
    assert {"create", "delete", "get", "list", "watch"} <= granted[("batch", "jobs")]
    assert {"create", "delete", "get"} <= granted[("", "pods")]
    assert {"create", "update", "patch", "delete"} <= granted[("kueue.x-k8s.io", "workloads")]
    assert {"get", "patch"} <= granted[("kueue.x-k8s.io", "workloads/status")]
    assert ("jobset.x-k8s.io", "jobsets") not in granted
    # A framework the toolkit does not install (Trainer v1) has no rules (tests/burst/test_frameworks.py covers the others).
    with pytest.raises(ValueError, match="the toolkit installs only"):
        worker_rbac_rules(["kubeflow.org/pytorchjob"])


def test_token_secret_shape(docs):
    secret = _of(docs["prod"], "Secret")[0]
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "hybridgpu-multikueue"}
    assert "data" not in secret and "stringData" not in secret  # Kubernetes fills in the token


def test_worker_kubeconfig_is_exec_free_with_inline_ca():
    text = worker_kubeconfig(name="eks", server="https://api.example:443", ca_data=CA, token="eyJ.abc.def")
    doc = yaml.safe_load(text)
    assert doc["users"][0]["user"] == {"token": "eyJ.abc.def"}
    assert doc["clusters"][0]["cluster"] == {"server": "https://api.example:443", "certificate-authority-data": CA}
    assert kubeconfig_problems(text) == []
    assert endpoint_from_kubeconfig(text) == ("https://api.example:443", CA)


def test_kueue_would_refuse_the_usual_eks_kubeconfig():
    import json

    eks = json.dumps(eks_kubeconfig(cluster_name="c", endpoint="https://x.eks.amazonaws.com", ca_data=CA, region="us-east-1"))
    problems = kubeconfig_problems(eks)
    assert any("exec is not allowed" in p for p in problems) and any("no token" in p for p in problems)


@pytest.mark.parametrize(
    "edit,words",
    [
        (lambda c, u: c.update({"insecure-skip-tls-verify": True}), "insecure-skip-tls-verify"),
        (lambda c, u: c.update({"certificate-authority": "/etc/ca.crt"}), "file path"),
        (lambda c, u: c.pop("certificate-authority-data"), "no certificate-authority-data"),
        (lambda c, u: c.update(server="http://plain:80"), "https://"),
        (lambda c, u: u.update(tokenFile="/var/run/token"), "tokenFile"),
        (lambda c, u: u.update({"auth-provider": {"name": "oidc"}}), "auth-provider"),
        (lambda c, u: u.update(username="admin", password="x"), "username"),
    ],
)
def test_kubeconfig_problems_catch_what_kueue_refuses(edit, words):
    doc = yaml.safe_load(worker_kubeconfig(name="w", server="https://w:6443", ca_data=CA, token="t0k"))
    edit(doc["clusters"][0]["cluster"], doc["users"][0]["user"])
    assert any(words in p for p in kubeconfig_problems(yaml.safe_dump(doc)))
    with pytest.raises(ValueError, match="refused by Kueue"):
        worker_kubeconfig(name="w", server="http://w", ca_data=CA, token="t")


@pytest.mark.parametrize(
    "kind,edit,path",
    [
        ("ClusterQueue", lambda d: d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(borrowingLimit=4), "borrowingLimit must be nil"),
        ("ClusterQueue", lambda d: d["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop(), "spec.resourceGroups[0]"),
        ("ClusterQueue", lambda d: d["spec"].update(queueingStrategy="FIFO"), "spec.queueingStrategy"),
        ("ClusterQueue", lambda d: d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(nominalQuota="lots"), "nominalQuota"),
        ("ClusterQueue", lambda d: d["spec"].update(cohort="old-v1beta1-name"), "spec.cohort"),
        ("ClusterQueue", lambda d: (d["spec"].update(cohortName="c"), d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(lendingLimit=1000)), "lendingLimit must be less than"),
        ("ClusterQueue", lambda d: d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(nominalQuota=-1), "must not be negative"),
        ("ClusterQueue", lambda d: d["spec"]["resourceGroups"].append(d["spec"]["resourceGroups"][0]), "one resource group only"),
        ("MultiKueueConfig", lambda d: d["spec"]["clusters"].append(d["spec"]["clusters"][0]), "must not repeat"),
        ("MultiKueueCluster", lambda d: d["spec"]["clusterSource"].update(clusterProfileRef={"name": "x"}), "exactly one"),
        ("AdmissionCheck", lambda d: d["spec"]["parameters"].update(name="Not_DNS"), "spec.parameters.name"),
        ("LocalQueue", lambda d: d["metadata"].pop("namespace"), "metadata.namespace"),
        ("ResourceFlavor", lambda d: d["spec"].update(nodeLabels={f"k{i}": "v" for i in range(9)}), "at most 8"),
        ("ResourceFlavor", lambda d: d["spec"].update(tolerations=[{"operator": "Equal", "value": "x"}]), "without key"),
        ("ResourceFlavor", lambda d: d.update(apiVersion="kueue.x-k8s.io/v1beta1"), "apiVersion"),
    ],
)
def test_schema_rejects_broken_objects(docs, kind, edit, path):
    pool = docs["hybrid"] + docs["prod"]
    # The manager's on-demand ClusterQueue: on-prem and EKS flavors, two resource groups.
    doc = copy.deepcopy(next(d for d in pool if d["kind"] == kind and (kind != "ClusterQueue" or d["metadata"]["name"] == "hybridgpu-on-demand")))
    assert kueue_errors(doc) == []
    edit(doc)
    errors = kueue_errors(doc)
    assert any(path in e for e in errors), errors
