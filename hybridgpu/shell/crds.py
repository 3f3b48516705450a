"""Custom resources on a first ``pulumi up``: is every CRD installed earlier in the same program, or declared?

pulumi-kubernetes skips an unknown kind at preview but, on create, retries "no matches for
kind" a few times and then fails (pulumi/pulumi-kubernetes ``provider/pkg/await/await.go``,
read 2026-11-24). So each custom resource the program registers must depend, directly or
through other resources, on a Helm release whose chart ships its CRD (the chart facts in
:data:`hybridgpu.render.charts.CHARTS`), or its kind must be a precondition the stack declares
(:func:`hybridgpu.render.nvidia.declared_crds`, checked at deploy time by reading the CRD).

:func:`crd_problems` checks that over the resources the offline preview recorded
(:class:`~hybridgpu.shell.preview.ResourceRecord`: type token, inputs, explicit dependencies).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hybridgpu.render.charts import CHARTS
from hybridgpu.shell.preview import ResourceRecord

__all__ = ["HELM_RELEASE", "chart_crds", "crd_problems", "custom_kind"]

#: Type token of a pulumi-kubernetes Helm release.
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def custom_kind(record: ResourceRecord) -> tuple[str, str] | None:
    """``(group, kind)`` of a custom resource record (``kubernetes:<group>/<version>:<Kind>`` with a non-Kubernetes group), else None."""
    if not record.type.startswith("kubernetes:") or record.type == HELM_RELEASE:
        return None
    api, _, kind = record.type[len("kubernetes:") :].partition(":")
    group = api.rpartition("/")[0]
    if "." not in group or group.endswith(".k8s.io") or group in ("helm.sh",) or group.startswith("yaml"):
        return None
    return group, kind


def chart_crds(chart: str) -> set[tuple[str, str]]:
    """The ``(group, kind)`` CRDs a release of ``chart`` installs (its basename: ``oci://.../karpenter-crd`` -> ``karpenter-crd``), subcharts included."""
    name = chart.rstrip("/").rpartition("/")[2]
    kinds: set[tuple[str, str]] = set()
    for key, facts in CHARTS.items():
        if key == name or key.startswith(name + "/"):
            kinds |= set(facts.crds)
    return kinds


def crd_problems(records: Sequence[ResourceRecord], declared: Iterable[tuple[str, str]] = ()) -> list[str]:
    """Every custom resource whose CRD no release it depends on installs and the stack does not declare.

    Args:
        records: the resources of one program run (the offline preview's records).
        declared: ``(group, kind)`` pairs the stack declares as preconditions.

    Returns:
        One line per problem: the resource's URN, its kind, and the releases it depends on; empty when sound.
    """
    by_urn = {r.urn: r for r in records}
    declared_set = set(declared)
    problems = []
    for record in records:
        gk = custom_kind(record)
        if gk is None or gk in declared_set:
            continue
        seen: set[str] = set()
        stack = list(record.dependencies)
        releases = []
        while stack:
            urn = stack.pop()
            if urn in seen or urn not in by_urn:
                continue
            seen.add(urn)
            dep = by_urn[urn]
            if dep.type == HELM_RELEASE:
                releases.append(dep)
            stack.extend(dep.dependencies)
        if not any(gk in chart_crds(str(r.inputs.get("chart", ""))) for r in releases):
            shown = ", ".join(sorted(str(r.inputs.get("chart")) for r in releases)) or "none"
            problems.append(f"{record.urn}: {gk[1]} ({gk[0]}) depends on no release installing its CRD (releases it waits for: {shown})")
    return problems
