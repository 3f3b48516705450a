"""The job frameworks Kueue may manage on the clusters of a burst plan: one table, pure data.

Each :class:`Framework` is one Kueue integration (its name is Kueue's ``FrameworkName``, the
string a plan lists in ``kueue.frameworks`` and Kueue reads from ``integrations.frameworks``):
the kinds it manages, the chart that installs its controller and CRDs (``None``: built into
Kubernetes), the CRDs every cluster must have, whether Kueue has a MultiKueue adapter for it,
and the verbs the MultiKueue manager needs on a worker to mirror its objects there.

Why every cluster: Kueue builds a MultiKueue adapter for every enabled integration that has one
(``cmd/kueue/main.go``: ``jobframework.GetMultiKueueAdapters(cfg.Integrations.Frameworks)``) and
watches the adapter's kind on every worker (``pkg/controller/admissionchecks/multikueue/
multikueuecluster.go`` ``establishWatch``); a worker without the CRD fails that watch, the
MultiKueueCluster stays ``Active=False`` and nothing is dispatched (kubernetes-sigs/kueue#3582).
On a cluster with no MultiKueue, an enabled integration without its CRD makes Kueue wait for the
CRD and never set up that integration's webhook (``pkg/controller/jobframework/setup.go``).

Upstream facts (read 2026-11-27):

* Kueue v0.19.2 (kubernetes-sigs/kueue tag v0.19.2, commit 8eab68778fc1, 2026-08-20):
  ``FrameworkName`` constants in ``pkg/controller/jobs/{job,pod,jobset,trainjob,rayjob,raycluster,
  rayservice}/*_controller.go`` and ``kubeflow/jobs/pytorchjob``; every one of them registers a
  ``MultiKueueAdapter``. The adapters create, get, delete and watch the remote object; the Ray
  adapter also patches a remote RayCluster (elastic worker replicas, ``WithElasticReplicaSync``) and
  a remote RayService (``WithRemoteSpecSync``) (``pkg/controller/jobs/ray/ray_multikueue_adapter.go``).
  Worker RBAC as in ``site/static/examples/multikueue/create-multikueue-kubeconfig.sh`` (which has no
  ``trainjobs`` rule and no ``update``/``patch`` on ``rayservices``: derived from the adapters).
  Kueue's ``go.mod`` builds the adapters against ``sigs.k8s.io/jobset v0.12.0``,
  ``github.com/kubeflow/trainer/v2 v2.2.1`` and ``github.com/ray-project/kuberay/ray-operator
  v1.6.2``: MultiKueue copies a job's spec to the worker through these Go types, so a field newer
  than them would be dropped on the way; the pinned charts below are exactly these versions.
* JobSet chart ``charts/jobset`` 0.12.0 (kubernetes-sigs/jobset tag v0.12.0, commit f22e565ac3cc,
  2026-05-08): CRD ``jobsets.jobset.x-k8s.io`` (v1alpha2) in ``crds/``.
* Kubeflow Trainer chart ``charts/kubeflow-trainer`` 2.2.1 (kubeflow/trainer tag v2.2.1, commit
  c505fc7ccec9, 2026-06-17): CRDs ``trainjobs``, ``trainingruntimes``, ``clustertrainingruntimes``
  (``trainer.kubeflow.org/v1alpha1``) in ``crds/``; a TrainJob runs as a JobSet, so the Trainer needs
  the JobSet controller (its chart's ``jobset`` subchart, 0.11.0, behind ``jobset.install``; we
  install the JobSet chart ourselves and turn the subchart off). The Trainer v2.2.1 is built against
  ``sigs.k8s.io/jobset v0.11.1`` (its ``go.mod``); JobSet 0.12.0 serves the same ``v1alpha2`` API.
  Newer releases on 2026-11-27: Trainer v2.3.0, KubeRay v1.7.0; move the pins with Kueue's ``go.mod``.
* KubeRay chart ``helm-chart/kuberay-operator`` 1.6.2 (ray-project/kuberay tag v1.6.2, commit
  598eb66aa077, 2026-06-17): CRDs ``rayclusters``, ``rayjobs``, ``rayservices``, ``raycronjobs``
  (``ray.io/v1``) in ``crds/``.
* ``kubeflow.org/pytorchjob`` (Trainer v1, ``training-operator`` v1.9.x) is known but not installed:
  Kueue's docs label it legacy (``site/content/en/docs/tasks/run/multikueue/kubeflow.md``) and the
  Trainer v2 chart does not ship its CRD; TrainJob replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FRAMEWORKS",
    "FRAMEWORK_CHARTS",
    "KNOWN_NOT_INSTALLED",
    "Framework",
    "FrameworkChart",
    "FrameworkKind",
    "charts_for",
    "framework_for_kind",
    "unknown_framework_message",
    "worker_rules",
]

#: Date the facts of this module were read.
READ = "2026-11-27"


@dataclass(frozen=True)
class FrameworkKind:
    """One kind a framework manages: ``apiVersion``, ``kind`` and the resource (plural) RBAC names."""

    api_version: str
    kind: str
    plural: str

    @property
    def group(self) -> str:
        """The API group (``""`` for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def crd(self) -> str | None:
        """The CRD name ``<plural>.<group>``, or ``None`` for a built-in kind (core or ``batch``)."""
        return f"{self.plural}.{self.group}" if "." in self.group else None


@dataclass(frozen=True)
class FrameworkChart:
    """A pinned Helm chart that installs job-framework controllers and CRDs.

    Attributes:
        key: key of the chart's facts in :data:`hybridgpu.render.charts.CHARTS` and of its image list.
        repo: Helm repository URL (or ``oci://`` registry path) the release pulls the chart from.
        chart: chart name in that repository.
        version: chart version (pinned).
        source: GitHub repository, chart path, tag and commit the facts were read from.
        crds: CRD names (``<plural>.<group>``) the chart ships in ``crds/`` (Helm installs these on
            first install and never upgrades or deletes them).
        namespace: namespace of the release.
        release: Helm release name.
        requires: keys of charts that must be installed with it (the Trainer runs TrainJobs as JobSets).
    """

    key: str
    repo: str
    chart: str
    version: str
    source: str
    crds: tuple[str, ...]
    namespace: str
    release: str
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Framework:
    """One Kueue integration a plan may enable.

    Attributes:
        name: Kueue's ``FrameworkName`` (the ``integrations.frameworks`` entry).
        kinds: the kinds the integration manages (one per Kueue integration).
        chart: key of the :class:`FrameworkChart` that installs it, ``None`` if built into Kubernetes.
        multikueue_adapter: Kueue v0.19.2 registers a MultiKueue adapter for it (the manager then
            watches the kind on every worker).
        worker_verbs: verbs on the kinds the manager's ServiceAccount needs on a worker.
        status_verbs: verbs on ``<plural>/status`` there.
        legacy: Kueue's docs label the integration legacy.
    """

    name: str
    kinds: tuple[FrameworkKind, ...]
    chart: str | None
    multikueue_adapter: bool = True
    worker_verbs: tuple[str, ...] = ("create", "delete", "get", "list", "watch")
    status_verbs: tuple[str, ...] = ("get",)
    legacy: bool = False

    @property
    def crds(self) -> tuple[str, ...]:
        """CRD names the integration needs on every cluster of the plan (empty for built-in kinds)."""
        return tuple(c for c in (k.crd for k in self.kinds) if c)


_MIRROR = ("create", "delete", "get", "list", "watch")
_MIRROR_AND_PATCH = (*_MIRROR, "update", "patch")

JOBSET_CHART = "jobset"
TRAINER_CHART = "kubeflow-trainer"
KUBERAY_CHART = "kuberay-operator"

#: The pinned charts that install job frameworks, by key (facts in the module docstring).
FRAMEWORK_CHARTS: dict[str, FrameworkChart] = {
    JOBSET_CHART: FrameworkChart(
        key=JOBSET_CHART,
        repo="oci://registry.k8s.io/jobset/charts",
        chart="jobset",
        version="0.12.0",
        source="kubernetes-sigs/jobset charts/jobset v0.12.0 (f22e565ac3cc3265c7c45ef67ecffdc689af5d77, 2026-05-08)",
        crds=("jobsets.jobset.x-k8s.io",),
        namespace="jobset-system",
        release="jobset",
    ),
    TRAINER_CHART: FrameworkChart(
        key=TRAINER_CHART,
        repo="oci://ghcr.io/kubeflow/charts",
        chart="kubeflow-trainer",
        version="2.2.1",
        source="kubeflow/trainer charts/kubeflow-trainer v2.2.1 (c505fc7ccec98bb326cee56144bc5ee92be5048d, 2026-06-17)",
        crds=(
            "clustertrainingruntimes.trainer.kubeflow.org",
            "trainingruntimes.trainer.kubeflow.org",
            "trainjobs.trainer.kubeflow.org",
        ),
        namespace="kubeflow-system",
        release="kubeflow-trainer",
        requires=(JOBSET_CHART,),
    ),
    KUBERAY_CHART: FrameworkChart(
        key=KUBERAY_CHART,
        repo="https://ray-project.github.io/kuberay-helm/",
        chart="kuberay-operator",
        version="1.6.2",
        source="ray-project/kuberay helm-chart/kuberay-operator v1.6.2 (598eb66aa077c55ae04fa87b192238a3ec184e88, 2026-06-17)",
        crds=("rayclusters.ray.io", "raycronjobs.ray.io", "rayjobs.ray.io", "rayservices.ray.io"),
        namespace="kuberay-system",
        release="kuberay-operator",
    ),
}

#: Every framework a plan may enable, by Kueue ``FrameworkName``, in the order they are documented.
FRAMEWORKS: dict[str, Framework] = {
    f.name: f
    for f in (
        Framework("batch/job", (FrameworkKind("batch/v1", "Job", "jobs"),), None),
        Framework("pod", (FrameworkKind("v1", "Pod", "pods"),), None),
        Framework("jobset.x-k8s.io/jobset", (FrameworkKind("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets"),), JOBSET_CHART),
        Framework("trainer.kubeflow.org/trainjob", (FrameworkKind("trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs"),), TRAINER_CHART),
        Framework("ray.io/rayjob", (FrameworkKind("ray.io/v1", "RayJob", "rayjobs"),), KUBERAY_CHART),
        Framework("ray.io/raycluster", (FrameworkKind("ray.io/v1", "RayCluster", "rayclusters"),), KUBERAY_CHART, worker_verbs=_MIRROR_AND_PATCH),
        Framework("ray.io/rayservice", (FrameworkKind("ray.io/v1", "RayService", "rayservices"),), KUBERAY_CHART, worker_verbs=_MIRROR_AND_PATCH),
    )
}

#: Kueue integrations the toolkit knows but does not install, with what to do instead.
KNOWN_NOT_INSTALLED: Mapping[str, str] = {
    "kubeflow.org/pytorchjob": (
        "the Kubeflow Trainer v1 PyTorchJob (legacy in Kueue's docs) is not installed; the toolkit installs the "
        "Trainer v2: use `trainer.kubeflow.org/trainjob`"
    ),
}


def charts_for(frameworks: list[str] | tuple[str, ...]) -> tuple[FrameworkChart, ...]:
    """The charts that install ``frameworks``, dependencies first (JobSet before the Trainer), each once.

    Args:
        frameworks: Kueue framework names (keys of :data:`FRAMEWORKS`).

    Returns:
        The charts in install order (the order of :data:`FRAMEWORK_CHARTS`); empty for built-in frameworks only.

    Raises:
        KeyError: a name not in :data:`FRAMEWORKS`.
    """
    needed: set[str] = set()
    for name in frameworks:
        chart = FRAMEWORKS[name].chart
        if chart is not None:
            needed.add(chart)
            needed.update(FRAMEWORK_CHARTS[chart].requires)
    return tuple(c for key, c in FRAMEWORK_CHARTS.items() if key in needed)


def worker_rules(frameworks: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    """RBAC rules for the kinds of ``frameworks`` that the MultiKueue manager mirrors onto a worker.

    Args:
        frameworks: Kueue framework names (keys of :data:`FRAMEWORKS`); only those with a MultiKueue adapter get rules.

    Returns:
        Two rules per kind (``<plural>`` with the framework's verbs, ``<plural>/status`` with ``get``), in the order given.

    Raises:
        KeyError: a name not in :data:`FRAMEWORKS`.
    """
    rules: list[dict[str, Any]] = []
    for name in frameworks:
        fw = FRAMEWORKS[name]
        if not fw.multikueue_adapter:
            continue
        for k in fw.kinds:
            rules.append({"apiGroups": [k.group], "resources": [k.plural], "verbs": list(fw.worker_verbs)})
            rules.append({"apiGroups": [k.group], "resources": [f"{k.plural}/status"], "verbs": list(fw.status_verbs)})
    return rules


def framework_for_kind(api_version: str, kind: str) -> Framework | None:
    """The framework that manages objects of ``apiVersion``/``kind``, or ``None``."""
    for fw in FRAMEWORKS.values():
        if any(k.api_version == api_version and k.kind == kind for k in fw.kinds):
            return fw
    return None


def unknown_framework_message(name: str) -> str:
    """Why ``name`` cannot be enabled (it is not in :data:`FRAMEWORKS`) and what to list instead."""
    reason = KNOWN_NOT_INSTALLED.get(name)
    choices = ", ".join(FRAMEWORKS)
    if reason:
        return f"{name}: {reason}"
    return f"{name} is not a framework the toolkit installs; Kueue framework names it can enable: {choices}"
