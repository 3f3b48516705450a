"""Helm values of the job-framework charts: JobSet, Kubeflow Trainer, KubeRay operator (pure).

Which charts a burst plan installs, and their pins, are in :mod:`hybridgpu.burst.frameworks`;
this module renders each chart's values (:func:`framework_chart_values`). Every controller gets
:func:`~hybridgpu.render.charts.controller_tolerations` (the charts default to ``tolerations: []``,
so on EKS, where every node the toolkit creates is tainted, they would stay Pending; checked by
:mod:`hybridgpu.stack.scheduling`).

Values keys relied on (:data:`VALUES_KEYS`), read 2026-11-27 from the pinned chart sources:

* JobSet ``charts/jobset/values.yaml`` v0.12.0 (kubernetes-sigs/jobset f22e565a): ``image.repository``
  (``us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset`` in the source), ``image.tag``
  (``main``), ``image.pullPolicy`` (``Always``); ``hack/helm-chart-package.sh`` rewrites them to
  ``registry.k8s.io/jobset/jobset``, ``v0.12.0`` and ``IfNotPresent`` in the published chart. We set
  the published values, so the release does not depend on that rewrite and ``hybridgpu images``
  lists the image that runs. ``controller.tolerations`` (``[]``), read by
  ``templates/controller/deployment.yaml``.
* Kubeflow Trainer ``charts/kubeflow-trainer/values.yaml`` v2.2.1 (kubeflow/trainer c505fc7c):
  ``jobset.install`` (``true``: the chart's JobSet 0.11.0 subchart, ``Chart.yaml`` dependency condition);
  we install JobSet 0.12.0 (the version Kueue v0.19.2 is built against) as its own release and turn
  the subchart off, so one JobSet controller runs. ``manager.tolerations`` (``[]``, read by
  ``templates/manager/deployment.yaml``). ``runtimes.torchDistributed.enabled`` (``false``): renders the
  ClusterTrainingRuntime ``torch-distributed`` (``templates/runtimes/torch-distributed.yaml``); Kueue's
  docs require a TrainJob's ClusterTrainingRuntime on every worker, alike
  (kubernetes-sigs/kueue v0.19.2 ``site/content/en/docs/tasks/run/multikueue/trainjob.md``), which
  installing it with the chart on every cluster gives.
* KubeRay ``helm-chart/kuberay-operator/values.yaml`` v1.6.2 (ray-project/kuberay 598eb66a):
  top-level ``tolerations`` (``[]``), read by ``templates/deployment.yaml``.
"""

from __future__ import annotations

from typing import Any

from hybridgpu.render.charts import controller_tolerations

__all__ = ["JOBSET_IMAGE", "TRAINER_RUNTIME", "VALUES_KEYS", "framework_chart_values"]

#: The JobSet image the published chart 0.12.0 runs (``hack/helm-chart-package.sh`` at v0.12.0).
JOBSET_IMAGE = ("registry.k8s.io/jobset/jobset", "v0.12.0")
#: The ClusterTrainingRuntime the Trainer chart installs on every cluster (``runtimes.torchDistributed``).
TRAINER_RUNTIME = "torch-distributed"

#: Per chart key, the dotted values paths we set (each exists in the chart's values.yaml at the pin; sources above).
VALUES_KEYS: dict[str, tuple[str, ...]] = {
    "jobset": ("image.repository", "image.tag", "image.pullPolicy", "controller.tolerations"),
    "kubeflow-trainer": ("jobset.install", "manager.tolerations", "runtimes.torchDistributed.enabled"),
    "kuberay-operator": ("tolerations",),
}


def framework_chart_values(chart: str) -> dict[str, Any]:
    """The values of the job-framework chart ``chart``.

    Args:
        chart: ``jobset``, ``kubeflow-trainer`` or ``kuberay-operator`` (the keys of
            :data:`hybridgpu.burst.frameworks.FRAMEWORK_CHARTS`).

    Returns:
        A fresh dict of values (only the keys of :data:`VALUES_KEYS`).

    Raises:
        KeyError: another chart.
    """
    tolerations = controller_tolerations()
    if chart == "jobset":
        repository, tag = JOBSET_IMAGE
        return {"image": {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}, "controller": {"tolerations": tolerations}}
    if chart == "kubeflow-trainer":
        return {"jobset": {"install": False}, "manager": {"tolerations": tolerations}, "runtimes": {"torchDistributed": {"enabled": True}}}
    if chart == "kuberay-operator":
        return {"tolerations": tolerations}
    raise KeyError(chart)
