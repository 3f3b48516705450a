"""Render the Kueue objects of one cluster from a :class:`~hybridgpu.burst.plan.ClusterPlan` (pure).

Creates plain dicts ready for YAML or Pulumi ``kubernetes`` resources:

* ``v1`` Namespaces of the LocalQueues;
* ``kueue.x-k8s.io/v1beta2`` ResourceFlavors, ClusterQueues (resource groups, cohort and
  lending/borrowing limits, ``admissionChecksStrategy``), LocalQueues;
* on the manager: AdmissionChecks (``controllerName: kueue.x-k8s.io/multikueue``),
  MultiKueueConfigs (workers in dispatch order) and MultiKueueClusters (``clusterSource.kubeConfig``
  from a Secret in the Kueue namespace), and with ``manager.workerAlerts`` the PrometheusRule
  that alerts on an inactive worker (:func:`hybridgpu.render.gpu_alerts.multikueue_worker_rule`);
* on a worker: the ServiceAccount, ClusterRole and ClusterRoleBinding the manager acts as, and a
  ``kubernetes.io/service-account-token`` Secret whose token goes into the exec-free kubeconfig
  (:func:`worker_kubeconfig`) that the manager stores as its Secret (key ``kubeconfig``);
* the Kueue manager ``Configuration`` and Helm values (:func:`kueue_helm_values`);
* with a teams file (:mod:`hybridgpu.burst.teams`): the namespaces' cost labels, each team
  ClusterQueue's ``preemption``, ``fairSharing.weight`` and own ``namespaceSelector``, the plan's
  extra objects (WorkloadPriorityClasses, Roles, RoleBindings, ValidatingAdmissionPolicies) and
  the Configuration's ``fairSharing`` and ``waitForPodsReady``.

Upstream formats: kubernetes-sigs/kueue tag v0.19.2 (commit 8eab6877, 2026-08-20, read
2026-11-22): CRDs ``config/components/crd/bases/kueue.x-k8s.io_*.yaml`` (version v1beta2,
storage); ``apis/config/v1beta2/configuration_types.go`` (``multiKueue.dispatcherName``,
``incrementalDispatcherConfig.stepSize`` (default 3), ``workerLostTimeout``, ``gcInterval``,
``resources.quotaCheckStrategy``); ``charts/kueue/values.yaml`` (``managerConfig.controllerManagerConfigYaml``);
worker RBAC from ``site/static/examples/multikueue/create-multikueue-kubeconfig.sh``; the
kubeconfig rules from ``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``
(``validateKubeconfig``: no tokenFile, no insecure-skip-tls-verify, no CA file path, a server
URL, no basic auth, no exec plugin, no auth provider).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from hybridgpu.burst.frameworks import FRAMEWORKS, worker_rules
from hybridgpu.burst.models import BurstPlanFile
from hybridgpu.burst.plan import ClusterPlan, ClusterQueuePlan, Flavor, LocalQueuePlan, WorkerRef
from hybridgpu.datafile import ORDERED, dump_yaml, load_yaml
from hybridgpu.k8s import (
    KUEUE_API,
    KUEUE_GROUP,
    NAMESPACE_NAME_LABEL,
    RDMA_IB_RESOURCE,
    RDMA_ROCE_RESOURCE,
    SERVICE_ACCOUNT_NAME_ANNOTATION,
    SERVICE_ACCOUNT_TOKEN_SECRET_TYPE,
    managed_by_labels,
)
from hybridgpu.render.charts import controller_tolerations
from hybridgpu.render.gpu_alerts import multikueue_worker_rule
from hybridgpu.render.kubeconfig import kubeconfig
from hybridgpu.render.topology import topology_manifest

MULTIKUEUE_CONTROLLER = f"{KUEUE_GROUP}/multikueue"
#: Chart location (kubernetes-sigs/kueue ``charts/kueue/README.md`` at v0.19.2).
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
#: Key of the kubeconfig in a MultiKueueCluster's Secret.
KUBECONFIG_KEY = "kubeconfig"
#: ServiceAccount the manager uses on a worker.
WORKER_SERVICE_ACCOUNT = "hybridgpu-multikueue"
#: Resources that Kueue does not count against quota (``resources.excludeResourcePrefixes``, prefix
#: match in ``dropExcludedResources``, ``pkg/workload/workload.go`` at v0.19.2). Everything else is
#: checked under ``BlockUndeclared``: a request for a resource no ClusterQueue declares is never admitted.
#: The on-prem RDMA shared devices (k8s-rdma-shared-dev-plugin) are excluded too: every pod of a node shares
#: them, no ClusterQueue declares them, and under ``BlockUndeclared`` an RDMA job would never be admitted
#: (``hybridgpu job check``, ``resource-undeclared``, found this for docs/examples/onprem-pytorchjob.yaml).
EXCLUDED_RESOURCE_PREFIXES = ("cpu", "memory", "ephemeral-storage", "hugepages-", RDMA_IB_RESOURCE, RDMA_ROCE_RESOURCE)
#: Name of the stack output a worker exports and the manager reads through a StackReference.
WORKER_KUBECONFIG_OUTPUT = "burst_worker_kubeconfig"


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": managed_by_labels()}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def namespace_manifest(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``v1`` Namespace for LocalQueues, with ``labels`` (a team's cost labels) besides the managed-by label."""
    meta = _meta(name)
    meta["labels"].update(dict(sorted((labels or {}).items())))
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def resource_flavor(flavor: Flavor) -> dict[str, Any]:
    """A ResourceFlavor: ``nodeLabels`` (injected as nodeSelector) and ``tolerations`` (added to admitted pods)."""
    spec: dict[str, Any] = {}
    if flavor.node_labels:
        spec["nodeLabels"] = dict(flavor.node_labels)
    if flavor.tolerations:
        spec["tolerations"] = [dict(t) for t in flavor.tolerations]
    if flavor.topology_name is not None:
        spec["topologyName"] = flavor.topology_name
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": _meta(flavor.name), "spec": spec}


def cluster_queue(cq: ClusterQueuePlan, namespaces: tuple[str, ...]) -> dict[str, Any]:
    """A ClusterQueue admitting workloads from ``namespaces`` only.

    Quotas are whole units (GPUs, MIG instances) written as integers; ``borrowingLimit`` and
    ``lendingLimit`` appear only inside a cohort (the CRD refuses ``borrowingLimit`` without one).
    """
    groups = []
    for group in cq.groups:
        flavors = []
        for fq in group.flavors:
            resources = []
            for res in group.covered:
                entry: dict[str, Any] = {"name": res, "nominalQuota": int(fq.nominal.get(res, 0))}
                if cq.cohort is not None and res in fq.borrowing_limit:
                    entry["borrowingLimit"] = int(fq.borrowing_limit[res])
                if cq.cohort is not None and res in fq.lending_limit:
                    entry["lendingLimit"] = int(fq.lending_limit[res])
                resources.append(entry)
            flavors.append({"name": fq.flavor, "resources": resources})
        groups.append({"coveredResources": list(group.covered), "flavors": flavors})
    selected = cq.namespaces if cq.namespaces is not None else namespaces
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(selected)}]},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": groups,
    }
    if cq.cohort is not None:
        spec["cohortName"] = cq.cohort
    if cq.preemption is not None:
        spec["preemption"] = _plain(cq.preemption)
    if cq.fair_sharing_weight is not None:
        spec["fairSharing"] = {"weight": cq.fair_sharing_weight}
    if cq.admission_check is not None:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": cq.admission_check}]}
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": _meta(cq.name), "spec": spec}


def _plain(value: Any) -> Any:
    """Mappings and tuples of a plan as plain dicts and lists (for YAML and Pulumi)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def local_queue(lq: LocalQueuePlan) -> dict[str, Any]:
    """A LocalQueue in its namespace pointing at its ClusterQueue."""
    return {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": _meta(lq.name, lq.namespace), "spec": {"clusterQueue": lq.cluster_queue}}


def admission_check(name: str, config: str) -> dict[str, Any]:
    """A MultiKueue AdmissionCheck whose parameters name the MultiKueueConfig ``config``."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": _meta(name),
        "spec": {"controllerName": MULTIKUEUE_CONTROLLER, "parameters": {"apiGroup": KUEUE_GROUP, "kind": "MultiKueueConfig", "name": config}},
    }


def multikueue_config(name: str, clusters: tuple[str, ...]) -> dict[str, Any]:
    """A MultiKueueConfig listing worker clusters in dispatch order (the Incremental dispatcher keeps it)."""
    return {"apiVersion": KUEUE_API, "kind": "MultiKueueConfig", "metadata": _meta(name), "spec": {"clusters": list(clusters)}}


def multikueue_cluster(worker: WorkerRef) -> dict[str, Any]:
    """A MultiKueueCluster reading its kubeconfig from the Secret ``worker.secret`` (key ``kubeconfig``) in Kueue's namespace."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueCluster",
        "metadata": _meta(worker.name),
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": worker.secret}}},
    }


def worker_rbac_rules(frameworks: list[str]) -> list[dict[str, Any]]:
    """ClusterRole rules the manager needs on a worker: jobs, pods, workloads (+status), queues, and each enabled framework's kinds.

    ``batch`` Jobs and Pods are always granted (as Kueue's ``create-multikueue-kubeconfig.sh`` does);
    each other framework adds its kinds with the verbs its MultiKueue adapter uses
    (:func:`hybridgpu.burst.frameworks.worker_rules`: create, delete, get, list, watch; update and patch
    on RayClusters and RayServices, whose adapter patches the remote object) and ``get`` on their status.

    Args:
        frameworks: Kueue framework names of the plan (``kueue.frameworks``).

    Raises:
        ValueError: a framework not in :data:`hybridgpu.burst.frameworks.FRAMEWORKS`.
    """
    unknown = [f for f in frameworks if f not in FRAMEWORKS]
    if unknown:  # the plan model refuses these; a direct caller gets the same answer
        raise ValueError(f"no worker RBAC for framework(s) {', '.join(unknown)}: the toolkit installs only {', '.join(FRAMEWORKS)}")
    rules: list[dict[str, Any]] = [
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete", "get", "list", "watch"]},
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "get", "list", "watch"]},
        {"apiGroups": [KUEUE_GROUP], "resources": ["workloads"], "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"]},
        {"apiGroups": [KUEUE_GROUP], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
        {"apiGroups": [KUEUE_GROUP], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    ]
    return rules + worker_rules([f for f in frameworks if FRAMEWORKS[f].chart is not None])


def token_secret_name() -> str:
    """Name of the worker's service-account-token Secret (in Kueue's namespace)."""
    return f"{WORKER_SERVICE_ACCOUNT}-token"


def worker_access_manifests(kueue_namespace: str, frameworks: list[str]) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole, ClusterRoleBinding and token Secret on a worker (the token is filled in by Kubernetes)."""
    sa = WORKER_SERVICE_ACCOUNT
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(sa, kueue_namespace)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(sa), "rules": worker_rbac_rules(frameworks)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(sa),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": sa},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": kueue_namespace}],
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": SERVICE_ACCOUNT_TOKEN_SECRET_TYPE,
            "metadata": {**_meta(token_secret_name(), kueue_namespace), "annotations": {SERVICE_ACCOUNT_NAME_ANNOTATION: sa}},
        },
    ]


def cluster_manifests(cluster: ClusterPlan, source: BurstPlanFile) -> list[dict[str, Any]]:
    """Every object of ``cluster`` in apply order: namespaces, flavors, MultiKueue objects, ClusterQueues, LocalQueues, worker access.

    The manager's worker kubeconfig Secrets are not included: they carry credentials and are
    built by the component from the workers' (secret) stack outputs.
    """
    docs: list[dict[str, Any]] = [namespace_manifest(ns, cluster.namespace_labels.get(ns)) for ns in cluster.namespaces]
    docs += [topology_manifest(name, levels) for name, levels in sorted(cluster.topologies.items())]
    docs += [resource_flavor(f) for f in cluster.flavors]
    if cluster.multikueue is not None:
        mk = cluster.multikueue
        docs += [multikueue_cluster(w) for w in mk.workers]
        docs += [multikueue_config(name, workers) for name, workers in mk.configs.items()]
        docs += [admission_check(name, config) for name, config in mk.checks.items()]
        alerts = source.manager.worker_alerts
        if alerts.enabled:
            docs.append(multikueue_worker_rule(alerts.namespace or source.kueue.namespace, alerts.prometheus_labels))
    docs += [cluster_queue(cq, cluster.namespaces) for cq in cluster.cluster_queues]
    docs += [local_queue(lq) for lq in cluster.local_queues]
    docs += [_plain(doc) for doc in cluster.extra_manifests]
    if cluster.worker_access:
        docs += worker_access_manifests(source.kueue.namespace, source.kueue.frameworks)
    return docs


def kueue_configuration(cluster: ClusterPlan, source: BurstPlanFile) -> dict[str, Any]:
    """The Kueue manager ``Configuration`` (``config.kueue.x-k8s.io/v1beta2``) of ``cluster``.

    Every cluster: the chart's health/metrics/webhook/leader-election settings, the configured
    job frameworks, and ``resources.quotaCheckStrategy: BlockUndeclared`` with
    ``excludeResourcePrefixes`` :data:`EXCLUDED_RESOURCE_PREFIXES`: CPU, memory, ephemeral storage
    and huge pages are not under quota, and every other resource a workload requests (``nvidia.com/gpu``,
    ``nvidia.com/mig-*``, ``vpc.amazonaws.com/efa`` ...) must be declared by the ClusterQueue or the
    workload is not admitted there ("resource X unavailable in ClusterQueue",
    ``pkg/scheduler/flavorassigner/flavorassigner.go`` at v0.19.2). ``IgnoreUndeclared`` would admit
    an undeclared MIG request with no quota and no flavor (no node labels, no tolerations). The manager adds
    ``multiKueue``: the dispatcher (Incremental with ``stepSize: 1`` for spillover, so workers are
    tried one at a time in MultiKueueConfig order: on-prem, then EKS after about 5 minutes),
    ``workerLostTimeout`` and ``gcInterval``.
    """
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "integrations": {"frameworks": list(source.kueue.frameworks)},
        "resources": {"quotaCheckStrategy": "BlockUndeclared", "excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES)},
    }
    if "pod" in source.kueue.frameworks:
        config["managedJobsNamespaceSelector"] = managed_jobs_namespace_selector(cluster)
    if cluster.multikueue is not None:
        mk: dict[str, Any] = {
            "gcInterval": source.manager.gc_interval,
            "origin": "hybridgpu",
            "workerLostTimeout": source.manager.worker_lost_timeout,
            "dispatcherName": cluster.multikueue.dispatcher,
        }
        if cluster.multikueue.dispatcher.endswith("incremental"):
            mk["incrementalDispatcherConfig"] = {"stepSize": 1}
        config["multiKueue"] = mk
    config.update(_plain(cluster.configuration))
    return config


def managed_jobs_namespace_selector(cluster: ClusterPlan) -> dict[str, Any]:
    """The ``managedJobsNamespaceSelector`` of a cluster whose plan enables Kueue's ``pod`` integration: its queue namespaces.

    With ``pod`` in ``integrations.frameworks`` the Kueue chart's pod mutating webhook has
    ``failurePolicy: Fail`` and takes this selector as its ``namespaceSelector``
    (``charts/kueue/templates/webhook/manifests.yaml`` at v0.19.2); Kueue's default (every namespace
    but ``kube-system`` and its own) would send every pod of the cluster (GPU Operator, Karpenter,
    the job-framework controllers, ...) through Kueue's webhook and fail their creation while Kueue
    is down. Kueue's docs recommend selecting the namespaces explicitly
    (``site/content/en/docs/tasks/manage/enforce_job_management/opt_in_namespace_management.md``); the
    selector applies to every integration (``ManagedJobsNamespaceSelectorAlwaysRespected`` is GA and
    locked on in 0.19, ``pkg/features/kube_features.go``), which only drops queue labels outside the
    queue namespaces, where the plan has no LocalQueue.

    Returns:
        ``{matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: <namespaces>}]}``; a
        cluster without queue namespaces gets ``DoesNotExist`` on that label, which no namespace matches (the
        API server sets it on every namespace) where ``In []`` would be an invalid selector.
    """
    if not cluster.namespaces:
        return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "DoesNotExist"}]}
    return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(cluster.namespaces)}]}


def kueue_helm_values(cluster: ClusterPlan, source: BurstPlanFile) -> dict[str, Any]:
    """Values of the ``kueue`` chart: the manager Configuration as ``managerConfig.controllerManagerConfigYaml``, and
    ``controllerManager.tolerations`` (:func:`~hybridgpu.render.charts.controller_tolerations`)."""
    text = dump_yaml(kueue_configuration(cluster, source), ORDERED)
    # Scheduling: the chart's `controllerManager.tolerations` is [] (charts/kueue/values.yaml v0.19.2),
    # so on EKS, where the system nodes are tainted CriticalAddonsOnly, the controller stayed Pending;
    # the control-plane toleration lets it run on an on-prem cluster without CPU workers
    # (checked by hybridgpu.stack.scheduling).
    return {
        "managerConfig": {"controllerManagerConfigYaml": text},
        "controllerManager": {"tolerations": controller_tolerations()},
    }


def worker_kubeconfig(*, name: str, server: str, ca_data: str, token: str) -> str:
    """An exec-free kubeconfig (YAML) for a worker: bearer token and inline CA data.

    Args:
        name: cluster/context/user name.
        server: API server URL (``https://...``).
        ca_data: base64 PEM of the cluster CA (``certificate-authority-data``).
        token: the service-account token (plain text; the caller keeps the result a secret).

    Raises:
        ValueError: the result would be refused by Kueue (see :func:`kubeconfig_problems`).
    """
    doc = kubeconfig(name=name, server=server, ca_data=ca_data, user={"token": token})
    text = dump_yaml(doc, ORDERED)
    problems = kubeconfig_problems(text)
    if problems:
        raise ValueError(f"worker kubeconfig for {name!r} would be refused by Kueue: {'; '.join(problems)}")
    return text


def kubeconfig_problems(text: str) -> list[str]:
    """Why Kueue v0.19.2 would refuse ``text`` as a MultiKueue kubeconfig, or why it is unsafe (empty list: accepted).

    Mirrors ``validateKubeconfig``/``validateRestConfig`` of
    ``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``: parseable, every cluster
    with an ``https://`` server, ``certificate-authority-data`` (no file path) and no
    ``insecure-skip-tls-verify``; no user with ``tokenFile``, ``exec``, ``auth-provider``,
    ``username``/``password`` or certificate/key file paths, and each user with an inline
    credential (``token``, or ``client-certificate-data`` with ``client-key-data``). Used by the
    burst renderer (which refuses to build such a kubeconfig) and by the policy pack's
    ``multikueue-kubeconfig`` check, so any text is accepted: malformed entries are problems,
    never exceptions. The messages never quote credential values.
    """
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as exc:
        return [f"not YAML ({exc.__class__.__name__})"]
    if not isinstance(doc, dict):
        return ["not a kubeconfig mapping"]
    problems: list[str] = []

    def entries(key: str, inner: str) -> list[tuple[str, dict[str, Any]]]:
        found: list[tuple[str, dict[str, Any]]] = []
        raw = doc.get(key) or []
        if not isinstance(raw, list):
            problems.append(f"{key} is not a list")
            return found
        for entry in raw:
            body = entry.get(inner) if isinstance(entry, dict) else None
            name = str(entry.get("name", "?")) if isinstance(entry, dict) else "?"
            if not isinstance(body, dict):
                problems.append(f"{key} entry {name}: no {inner} mapping")
                continue
            found.append((name, body))
        return found

    clusters = entries("clusters", "cluster")
    if not clusters and not problems:
        problems.append("no cluster")
    for name, cluster in clusters:
        if cluster.get("insecure-skip-tls-verify"):
            problems.append(f"cluster {name}: insecure-skip-tls-verify")
        if cluster.get("certificate-authority"):
            problems.append(f"cluster {name}: certificate-authority file path (use certificate-authority-data)")
        if not cluster.get("certificate-authority-data"):
            problems.append(f"cluster {name}: no certificate-authority-data")
        if not str(cluster.get("server", "")).startswith("https://"):
            problems.append(f"cluster {name}: server must be an https:// URL")
    for name, user in entries("users", "user"):
        for key in ("exec", "auth-provider", "tokenFile", "username", "password", "client-certificate", "client-key"):
            if user.get(key):
                problems.append(f"user {name}: {key} is not allowed")
        if not user.get("token") and not (user.get("client-certificate-data") and user.get("client-key-data")):
            problems.append(f"user {name}: no token (or client-certificate-data and client-key-data)")
    return problems


def endpoint_from_kubeconfig(text: str) -> tuple[str, str]:
    """``(server URL, base64 CA data)`` of the current (else first) cluster of a kubeconfig (YAML or JSON).

    Raises:
        ValueError: no cluster with a server and ``certificate-authority-data``.
    """
    doc = load_yaml(text) or {}  # JSON, which EKS kubeconfigs are, is YAML too
    clusters = {c.get("name"): c.get("cluster") or {} for c in doc.get("clusters") or [] if isinstance(c, dict)}
    current = next((c.get("context", {}).get("cluster") for c in doc.get("contexts") or [] if c.get("name") == doc.get("current-context")), None)
    cluster = clusters.get(current) or next(iter(clusters.values()), {})
    server, ca = cluster.get("server"), cluster.get("certificate-authority-data")
    if not server or not ca:
        raise ValueError("the cluster's kubeconfig has no cluster with a server and certificate-authority-data")
    return str(server), str(ca)
