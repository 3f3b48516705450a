"""Kueue's flavor assignment for one resource, as kubernetes-sigs/kueue v0.19.2 does it, over rendered ClusterQueues.

``pkg/scheduler/flavorassigner/flavorassigner.go`` ``findFlavorForPodSets`` (tag v0.19.2, commit c3785e52, read
2026-11-27): the flavors of the ClusterQueue's resource group that covers the resource are tried in list order; a
flavor whose free nominal quota holds the request (in a cohort: what the cohort's queues have not used) fits without
borrowing and ends the search; one that fits only by borrowing unused quota of the cohort also ends it under the default ``flavorFungibility.whenCanBorrow: MayStopSearch``
(``apis/kueue/v1beta2/clusterqueue_types.go``); one that does not fit (no preemption here: ``reclaimWithinCohort``
and ``withinClusterQueue`` default to ``Never``) sends the search to the next flavor. ``borrowingLimit`` caps what a
queue borrows per flavor; ``lendingLimit`` keeps ``nominalQuota - lendingLimit`` to the queue itself. A root ``Cohort`` object's ``nominalQuota`` is a
pool on top of its members' quotas that any member listing the flavor may borrow (``apis/kueue/v1beta2/cohort_types.go``,
``pkg/cache/scheduler/resource_node.go`` ``available``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _quota(cq: Mapping[str, Any], flavor: str, resource: str) -> dict[str, Any] | None:
    for group in cq["spec"]["resourceGroups"]:
        if resource not in group["coveredResources"]:
            continue
        for f in group["flavors"]:
            if f["name"] == flavor:
                return next(r for r in f["resources"] if r["name"] == resource)
    return None


def assign_flavor(queues: Sequence[Mapping[str, Any]], name: str, request: int, usage: dict[tuple[str, str], int],
                  resource: str = "nvidia.com/gpu", cohorts: Sequence[Mapping[str, Any]] = ()) -> str | None:
    """The flavor Kueue assigns to a workload of ``request`` units of ``resource`` in ClusterQueue ``name``, or None (pending).

    Args:
        queues: the rendered ClusterQueues of one cluster (cohort members are found by ``spec.cohortName``).
        name: the ClusterQueue the workload is queued in.
        request: units requested (e.g. GPUs).
        usage: ``(ClusterQueue, flavor) -> units admitted``; updated with the admission.
        cohorts: rendered root ``Cohort`` objects; the one named as the queue's cohort adds its quota to the pool.

    Returns:
        The flavor name, or None when no flavor fits.

    """
    cq = next(q for q in queues if q["metadata"]["name"] == name)
    cohort = cq["spec"].get("cohortName")
    members = [q for q in queues if cohort is not None and q["spec"].get("cohortName") == cohort and q["metadata"]["name"] != name]
    group = next(g for g in cq["spec"]["resourceGroups"] if resource in g["coveredResources"])
    for f in group["flavors"]:
        flavor = f["name"]
        own = next(r for r in f["resources"] if r["name"] == resource)
        used = usage.get((name, flavor), 0)
        if cohort is None:
            if used + request <= own["nominalQuota"]:
                usage[(name, flavor)] = used + request
                return flavor
            continue
        # In a cohort a queue's own nominal quota is free only while nobody borrows it: what others borrowed comes back
        # only by preemption (reclaimWithinCohort), which this model leaves out. resource_node.go: a member keeps
        # nominal - lendingLimit to itself (localQuota) and puts the rest in the cohort; its usage above its localQuota
        # counts against the cohort; available = own local free + the cohort's free, capped by the borrowingLimit.
        quotas = [(n, _quota(m, flavor, resource)) for n, m in ((m["metadata"]["name"], m) for m in members)]
        pool = sum(r["nominalQuota"] for c in cohorts if c["metadata"]["name"] == cohort for g in c["spec"].get("resourceGroups", [])
                   for f in g["flavors"] if f["name"] == flavor for r in f["resources"] if r["name"] == resource)

        def local(q: Mapping[str, Any]) -> int:
            return q["nominalQuota"] - q["lendingLimit"] if "lendingLimit" in q else 0

        subtree = pool + sum(q["nominalQuota"] - local(q) for q in [own, *(q for _, q in quotas if q is not None)])
        cohort_usage = max(0, used - local(own)) + sum(max(0, usage.get((n, flavor), 0) - local(q)) for n, q in quotas if q is not None)
        available = max(0, local(own) - used) + subtree - cohort_usage
        limit = own.get("borrowingLimit")
        if request <= available and (limit is None or used + request - own["nominalQuota"] <= limit):
            usage[(name, flavor)] = used + request
            return flavor
    return None
