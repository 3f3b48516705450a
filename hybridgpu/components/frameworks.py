"""The job-framework Helm releases of one cluster of a burst plan: JobSet, Kubeflow Trainer, KubeRay operator.

Creates, through the cluster's Kubernetes provider, one Helm release per chart the plan's
``kueue.frameworks`` need (:func:`hybridgpu.burst.frameworks.charts_for`: pinned chart, its own
namespace, values from :func:`hybridgpu.render.frameworks.framework_chart_values`), a required chart
first (JobSet before the Trainer, which runs TrainJobs as JobSets and watches JobSets at start).

:class:`~hybridgpu.components.kueue.KueueCluster` calls :func:`framework_releases` and makes the Kueue
release depend on the result: the CRDs (in each chart's ``crds/``, installed before the release's
other objects) exist on the cluster before Kueue enables their integrations, and, on a worker,
before the manager gets its kubeconfig (the token Secret waits for the Kueue release), so MultiKueue
never watches a kind the worker lacks (kubernetes-sigs/kueue#3582).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.burst.frameworks import charts_for
from hybridgpu.render.frameworks import framework_chart_values

__all__ = ["framework_releases"]


def framework_releases(
    name: str,
    frameworks: Sequence[str],
    *,
    provider: k8s.Provider,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] = (),
) -> list[k8s.helm.v3.Release]:
    """The Helm releases that install ``frameworks`` on one cluster, in install order.

    Args:
        name: logical name prefix (children are ``<name>-<chart>``).
        frameworks: Kueue framework names of the plan (``kueue.frameworks``); built-in ones need no release.
        provider: the cluster's Kubernetes provider.
        parent: the component the releases belong to.
        depends_on: what the first releases wait for (the cluster's CNI or Karpenter).

    Returns:
        One release per chart (empty when only ``batch/job`` and ``pod`` are enabled).

    Raises:
        KeyError: a framework name the toolkit does not know (the plan model refuses these first).
    """
    releases: dict[str, k8s.helm.v3.Release] = {}
    for chart in charts_for(tuple(frameworks)):
        needs = [releases[r] for r in chart.requires if r in releases]
        oci = chart.repo.startswith("oci://")
        releases[chart.key] = k8s.helm.v3.Release(
            f"{name}-{chart.key}",
            name=chart.release,
            chart=f"{chart.repo.rstrip('/')}/{chart.chart}" if oci else chart.chart,
            repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
            version=chart.version,
            namespace=chart.namespace,
            create_namespace=True,
            values=framework_chart_values(chart.key),
            atomic=True,
            opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[*depends_on, *needs]),
        )
    return list(releases.values())
