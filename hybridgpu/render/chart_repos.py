"""Where a Helm release takes its chart from: the upstream repository, or the site's chart mirror (pure).

One home for the mapping of ``(repository, chart)`` to what a ``kubernetes:helm.sh/v3:Release`` is given
(:func:`chart_source`), from the inventory's ``mirrors.charts`` (:class:`~hybridgpu.inventory.mirrors.ChartMirror`).
The program applies it to every release of an on-prem stack
(:func:`hybridgpu.components.onprem.chart_mirror_transformation`), so a release added later is covered too.

How the Release resource reads the two forms (pulumi/pulumi-kubernetes ``provider/pkg/provider/helm_release.go``
at commit 94977969, 2026-07-01, the code of the pinned 4.34 provider):

* an OCI chart is the whole reference in ``chart`` (``oci://host/path/<chart>``) and no ``repositoryOpts.repo``
  (``resolveChartName``: ``registry.IsOCI(name)`` returns the name as it is and no repository URL); with
  ``repositoryOpts.username``/``password`` set the provider logs in to that registry with a temporary credential
  store (``helm.NewRegistryClient``);
* an HTTP repository is ``repositoryOpts.repo`` with the chart's name in ``chart``
  (``repo.FindChartInAuthAndTLSAndPassRepoURL`` reads the repository's ``index.yaml``); ``username``/``password``
  are sent as basic auth to that host only.

A mirror serves the same charts under the same names and versions (``helm pull`` + ``helm push`` to an OCI
registry, or a copy of the HTTP repository with its ``index.yaml``), so only the location changes; the chart's
name is the last path segment of an OCI reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hybridgpu.inventory.mirrors import ChartMirror, Mirrors, SecretSource

__all__ = ["ChartSource", "chart_source", "split_chart", "upstream_release"]


@dataclass(frozen=True)
class ChartSource:
    """What a Helm release is given for its chart.

    Attributes:
        chart: the Release's ``chart``: a chart name (with ``repo``) or a whole ``oci://.../<name>`` reference.
        repo: the Release's ``repositoryOpts.repo`` (an ``http(s)://`` repository), or None for an OCI chart.
        mirror: the ``mirrors.charts`` entry used, or None (the upstream).
    """

    chart: str
    repo: str | None
    mirror: ChartMirror | None = None

    @property
    def credentials(self) -> SecretSource | None:
        """Where the mirror's login is kept (``mirrors.charts[].credentials``), or None."""
        return self.mirror.credentials if self.mirror is not None else None


def split_chart(repo: str | None, chart: str) -> tuple[str, str]:
    """``(repository, chart name)`` of a release as written: ``repo`` and ``chart``, or an ``oci://`` chart split at its
    last ``/`` (``oci://registry.k8s.io/kueue/charts/kueue`` -> ``oci://registry.k8s.io/kueue/charts``, ``kueue``).

    Raises:
        ValueError: neither a repository nor an ``oci://`` chart (a local path or ``repo/chart`` alias: nothing to map).
    """
    if chart.startswith("oci://"):
        body = chart[len("oci://") :].rstrip("/")
        if "/" not in body or body.startswith("/"):
            raise ValueError(f"chart {chart!r} is not oci://<registry>/<path>/<chart>")
        repository, _, name = body.rpartition("/")
        return f"oci://{repository}", name
    if repo:
        return repo, chart
    raise ValueError(f"chart {chart!r} names no repository (give repositoryOpts.repo or an oci:// reference)")


def chart_source(repo: str | None, chart: str, mirrors: Mirrors | None) -> ChartSource:
    """Where a release whose chart is ``chart`` (from ``repo``) takes it on this site.

    Args:
        repo: the release's repository URL (``https://helm.ngc.nvidia.com/nvidia``), or None for an OCI chart.
        chart: the chart's name, or the whole ``oci://`` reference when ``repo`` is None.
        mirrors: the inventory's ``mirrors`` (None: no mirrors).

    Returns:
        The mirror's location when ``mirrors.charts`` has an entry whose ``repository`` is the release's (trailing
        ``/`` ignored): an OCI mirror as ``chart=<mirror>/<name>``, ``repo=None``; an HTTP mirror as ``repo=<mirror>``,
        ``chart=<name>``. Otherwise the release's own ``repo`` and ``chart``, unchanged. Same input, same output.

    Raises:
        ValueError: the chart names no repository and is no OCI reference (see :func:`split_chart`).
    """
    repository, name = split_chart(repo, chart)
    entry = None
    if mirrors is not None:
        entry = next((m for m in mirrors.charts if m.repository.rstrip("/") == repository.rstrip("/")), None)
    if entry is None:
        return ChartSource(chart=chart, repo=repo)
    target = entry.mirror.rstrip("/")
    if target.startswith("oci://"):
        return ChartSource(chart=f"{target}/{name}", repo=None, mirror=entry)
    return ChartSource(chart=name, repo=target, mirror=entry)


def upstream_release(inputs: Mapping[str, Any], mirrors: Mirrors | None) -> dict[str, Any]:
    """A release's inputs as the component wrote them, before :func:`chart_source` moved them to a mirror: what a
    mirroring tool copies from (``hybridgpu images``), whatever the site mirrors.

    Args:
        inputs: a ``kubernetes:helm.sh/v3:Release``'s inputs (``chart``, ``repositoryOpts.repo``; camelCase, as recorded).
        mirrors: the inventory's ``mirrors`` (None: the inputs are returned as they are).

    Returns:
        A copy of ``inputs`` whose ``chart`` and ``repositoryOpts`` name the upstream when they named a ``mirrors.charts``
        entry's mirror (login fields dropped); otherwise an unchanged copy.
    """
    out = dict(inputs)
    options = dict(out.get("repositoryOpts") or {})
    chart, repo = str(out.get("chart", "")), options.get("repo")
    for entry in mirrors.charts if mirrors is not None else ():
        target = entry.mirror.rstrip("/")
        if target.startswith("oci://") and repo is None and chart.startswith(target + "/") and "/" not in chart[len(target) + 1 :]:
            name = chart[len(target) + 1 :]
        elif not target.startswith("oci://") and isinstance(repo, str) and repo.rstrip("/") == target:
            name = chart
        else:
            continue
        upstream = entry.repository.rstrip("/")
        if upstream.startswith("oci://"):
            out["chart"] = f"{upstream}/{name}"
            out.pop("repositoryOpts", None)
        else:
            out["chart"], out["repositoryOpts"] = name, {"repo": entry.repository}
        return out
    return out
