"""Kueue for many teams: a burst plan's clusters with one ClusterQueue per team in a cohort (pure, no Pulumi).

:func:`apply_teams` takes the derived :class:`~hybridgpu.burst.plan.BurstPlan` and a validated
:class:`~hybridgpu.teams.models.TeamsFile` (checked against the plan, the inventory and the
stacks by :mod:`hybridgpu.stack.teams`) and returns the plan with, per cluster:

* **the admission cluster** (where jobs are submitted: the spillover manager, or the on-prem
  cluster in split-queues) -- one ClusterQueue ``<prefix>-team-<team>`` per team in the cohort of
  the teams file, with the team's on-prem shares as ``nominalQuota`` per flavor (and, on the
  spillover manager, its cloud shares on the mirrored EKS flavors), ``borrowingLimit`` /
  ``lendingLimit``, ``preemption`` (``reclaimWithinCohort: Any``, ``withinClusterQueue:
  LowerPriority``, ``borrowWithinCohort``), ``fairSharing.weight`` and a ``namespaceSelector``
  that selects only the team's namespaces; in split-queues also ``<prefix>-team-<team>-burst``
  (the team's cloud shares, MultiKueue to EKS). The LocalQueues of the plan point at their team's
  queues. Per team namespace a Role and RoleBinding (the team's groups may create and read
  jobs and read their own LocalQueues) and a ValidatingAdmissionPolicy with its binding (a Job
  must name a LocalQueue, and only a priority class the team may use);
* **the EKS worker** -- one ClusterQueue ``<prefix>-team-<team>-eks-<capacity type>`` per team
  and capacity type, quota = the team's cloud share, finite ``borrowingLimit``: a team's overflow
  runs in the cloud only within its own share, so within its budget;
* **the on-prem worker** (spillover) -- its one ClusterQueue as before (the manager decided);
* **Capacity Blocks** (the plan's ``reserved`` flavors, :func:`~hybridgpu.burst.plan.reserved_capacity`) -- on
  every cluster where a team queue can use them (the admission cluster's queues that burst, and the EKS worker's),
  the reserved flavor comes before the team's cloud shares with ``nominalQuota: 0`` and no ``borrowingLimit``, and a
  Kueue ``Cohort`` object named as the teams' cohort holds the blocks' active GPUs (:func:`reserved_cohort`): a pool
  every team borrows from and none owns, so no team reclaims it from another;
* **every cluster** -- the WorkloadPriorityClasses (MultiKueue copies a job with its
  ``kueue.x-k8s.io/priority-class`` label to the worker, whose Kueue resolves it there), the
  team namespaces labelled with the team's cost labels, and the Kueue Configuration's
  ``fairSharing`` and ``waitForPodsReady``.

Upstream (kubernetes-sigs/kueue tag v0.19.2, commit 8eab6877, read 2026-11-24):
``apis/kueue/v1beta2/clusterqueue_types.go`` (``preemption``, ``fairSharing``, the CEL rule
"reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
``apis/kueue/v1beta2/workloadpriorityclass_types.go`` (``value`` int32, ``description`` at most
2048 characters, cluster-scoped), ``apis/config/v1beta2/configuration_types.go`` (``fairSharing``
has only ``preemptionStrategies``: fair sharing is on when the key is present,
``pkg/scheduler/preemption/fairsharing/strategy.go`` ``Enabled``; ``waitForPodsReady``:
``timeout``, ``blockAdmission``, ``recoveryTimeout``, ``requeuingStrategy``; its requeue delays in
:func:`requeue_schedule`), ``site/content/en/docs/concepts/preemption.md``
(fair sharing uses ``withinClusterQueue`` and ``reclaimWithinCohort`` but not ``borrowWithinCohort``).
ValidatingAdmissionPolicy: ``admissionregistration.k8s.io/v1``, GA in Kubernetes 1.30.
Cohort quotas (kueue v0.19.2, commit c3785e52, read 2026-11-27): ``apis/kueue/v1beta2/cohort_types.go`` ("nominalQuota
defined at the Cohort level represents additional resources on top of those defined by ClusterQueues ... a shared
pool"; limits only with a parent), ``site/content/en/docs/concepts/cohort.md`` (a ClusterQueue borrows it only for a
flavor and resource it lists, "even if this value is 0"), ``pkg/cache/scheduler/resource_node.go`` (``available``: a
root Cohort's ``SubtreeQuota`` is its own quota plus its members' lendable quota).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from hybridgpu.burst.models import BurstClass
from hybridgpu.burst.plan import BurstPlan, ClusterPlan, ClusterQueuePlan, FlavorQuota, LocalQueuePlan, OnPremCapacity, ReservedCapacity, ResourceGroup, with_reserved
from hybridgpu.k8s import GPU_RESOURCE, KUEUE_API, KUEUE_GROUP, KUEUE_PRIORITY_CLASS_LABEL, KUEUE_QUEUE_NAME_LABEL, NAMESPACE_NAME_LABEL, managed_by_labels
from hybridgpu.teams.models import CloudShare, RequeuingStrategySpec, TeamsFile, TeamSpec

#: Job labels Kueue reads (defined in :mod:`hybridgpu.k8s`).
QUEUE_NAME_LABEL = KUEUE_QUEUE_NAME_LABEL
PRIORITY_CLASS_LABEL = KUEUE_PRIORITY_CLASS_LABEL
#: Name of the Role (and RoleBinding) of a team in each of its namespaces.
TEAM_ROLE = "hybridgpu-team-submitter"


def team_queue_name(prefix: str, team: str) -> str:
    """The team's ClusterQueue on the admission cluster: ``<prefix>-team-<team>``."""
    return f"{prefix}-team-{team}"


def team_burst_queue_name(prefix: str, team: str) -> str:
    """The team's MultiKueue ClusterQueue on the split-queues on-prem manager: ``<prefix>-team-<team>-burst``."""
    return f"{prefix}-team-{team}-burst"


def team_cloud_queue_name(prefix: str, team: str, capacity_type: str) -> str:
    """The team's ClusterQueue on the EKS worker for one capacity type: ``<prefix>-team-<team>-eks-<type>``."""
    return f"{prefix}-team-{team}-eks-{capacity_type}"


def weight_quantity(weight: float) -> str:
    """A fair-sharing weight as a Kubernetes quantity: ``2`` -> ``"2"``, ``0.5`` -> ``"500m"`` (milli-units, exact)."""
    milli = round(weight * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def preemption(teams: TeamsFile) -> dict[str, Any]:
    """``spec.preemption`` of every team ClusterQueue on the admission cluster.

    * ``reclaimWithinCohort: Any``: a team whose workload fits in its own nominal quota preempts
      workloads of teams that borrow that quota, whatever their priority: the guaranteed share
      is always reclaimable.
    * ``withinClusterQueue: LowerPriority``: inside a team, a higher WorkloadPriorityClass preempts lower ones.
    * ``borrowWithinCohort``: with fair sharing on, Kueue ignores it (``preemption.md``), so it is
      ``Never``; without fair sharing, a borrowing workload may preempt workloads of other teams
      of at most the lowest priority class's value (``LowerPriority`` with ``maxPriorityThreshold``).
    """
    borrow: dict[str, Any] = {"policy": "Never"}
    if not teams.fair_sharing.enabled:
        borrow = {"policy": "LowerPriority", "maxPriorityThreshold": min(p.value for p in teams.priority_classes)}
    return {"borrowWithinCohort": borrow, "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


def configuration_keys(teams: TeamsFile) -> dict[str, Any]:
    """Top-level keys the teams add to the Kueue ``Configuration`` of every cluster of the plan.

    ``waitForPodsReady`` (all pods of an admitted workload ready within ``timeout`` or it is
    evicted and requeued: gang admission) and, when enabled, ``fairSharing`` with its
    ``preemptionStrategies`` (its presence turns fair sharing on in Kueue v0.19.2).
    """
    wait = teams.wait_for_pods_ready
    keys: dict[str, Any] = {"waitForPodsReady": {"timeout": wait.timeout, "blockAdmission": wait.block_admission}}
    if wait.recovery_timeout is not None:
        keys["waitForPodsReady"]["recoveryTimeout"] = wait.recovery_timeout
    if (strategy := wait.requeuing_strategy) is not None:
        requeue: dict[str, Any] = {"timestamp": strategy.timestamp, "backoffBaseSeconds": strategy.backoff_base_seconds, "backoffMaxSeconds": strategy.backoff_max_seconds}
        if strategy.backoff_limit_count is not None:
            requeue["backoffLimitCount"] = strategy.backoff_limit_count
        keys["waitForPodsReady"]["requeuingStrategy"] = requeue
    if teams.fair_sharing.enabled:
        keys["fairSharing"] = {"preemptionStrategies": list(teams.fair_sharing.preemption_strategies)}
    return keys


@dataclasses.dataclass(frozen=True)
class RequeueSchedule:
    """What Kueue does with a workload evicted by ``waitForPodsReady`` again and again (see :func:`requeue_schedule`).

    Attributes:
        delays: seconds waited before each requeue, in order (without Kueue's 0.01 % jitter).
        deactivated_after: the eviction after which Kueue deactivates the workload instead of
            requeueing it (``len(delays) + 1``), or None when it requeues for ever.
    """

    delays: tuple[int, ...]
    deactivated_after: int | None


def requeue_schedule(strategy: RequeuingStrategySpec | None, evictions: int) -> RequeueSchedule:
    """The requeue delays Kueue v0.19.2 applies to the first ``evictions`` ``PodsReadyTimeout`` evictions of a workload.

    Kueue's semantics (kubernetes-sigs/kueue v0.19.2): ``reconcileNotReadyTimeout``
    (``pkg/controller/core/workload_controller.go``) first calls ``triggerDeactivation``, which
    deactivates the workload when ``requeueState.count + 1 > backoffLimitCount``; otherwise it
    evicts with ``UpdateRequeueState`` (``pkg/workload/workload.go``): count + 1 = n, wait
    ``wait.Backoff{Duration: base, Cap: max, Factor: 2, Jitter: 0.0001}.WaitTime(n)``, i.e.
    ``base * 2^(n-1)`` capped at ``max``. Unset fields take the defaults of
    ``apis/config/v1beta2/defaults.go`` (base 60, max 3600, no limit).

    Args:
        strategy: the teams file's ``requeuingStrategy``, or None for Kueue's defaults.
        evictions: how many timeouts to follow (>= 0).

    Returns:
        The delays of the requeues among those evictions and, if Kueue stops, the eviction at which it deactivates.

    Raises:
        ValueError: ``evictions`` is negative.
    """
    if evictions < 0:
        raise ValueError(f"evictions must be >= 0, got {evictions}")
    strategy = strategy or RequeuingStrategySpec()
    delays: list[int] = []
    for n in range(1, evictions + 1):
        if strategy.backoff_limit_count is not None and n > strategy.backoff_limit_count:
            return RequeueSchedule(tuple(delays), n)
        delays.append(min(strategy.backoff_base_seconds * 2 ** (n - 1), strategy.backoff_max_seconds))
    return RequeueSchedule(tuple(delays), None)


def priority_class_manifests(teams: TeamsFile) -> list[dict[str, Any]]:
    """The WorkloadPriorityClasses (cluster-scoped; ``value`` and ``description`` at the top level, no ``spec``)."""
    docs = []
    for pc in teams.priority_classes:
        doc: dict[str, Any] = {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": pc.name, "labels": managed_by_labels()}, "value": pc.value}
        if pc.description:
            doc["description"] = pc.description
        docs.append(doc)
    return docs


def team_access_manifests(team: TeamSpec) -> list[dict[str, Any]]:
    """Per team namespace: the Role and RoleBinding of the team's groups, and the admission policy of its Jobs.

    The Role lets the groups create, read and delete Jobs and read their pods, logs, Workloads and
    LocalQueues -- in that namespace only, so a team reads only its own LocalQueues and submits
    only to them (a Job's ``kueue.x-k8s.io/queue-name`` names a LocalQueue of the Job's own
    namespace, and each team ClusterQueue's ``namespaceSelector`` selects only the team's
    namespaces). The ValidatingAdmissionPolicy refuses, in the team's namespaces, a Job without
    ``kueue.x-k8s.io/queue-name`` (Kueue leaves such Jobs alone by default, ``manageJobsWithoutQueueName:
    false``, so they would run outside every quota) and a Job whose ``kueue.x-k8s.io/priority-class``
    is not one the team may use.
    """
    docs: list[dict[str, Any]] = []
    rules = [
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete", "get", "list", "watch", "patch", "update"]},
        {"apiGroups": [""], "resources": ["pods", "pods/log", "events"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [KUEUE_GROUP], "resources": ["workloads", "localqueues"], "verbs": ["get", "list", "watch"]},
    ]
    subjects = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in team.groups]
    for ns in team.namespaces:
        meta = {"name": TEAM_ROLE, "namespace": ns, "labels": managed_by_labels()}
        docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": dict(meta), "rules": rules})
        docs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": dict(meta),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TEAM_ROLE},
                "subjects": subjects,
            }
        )
    allowed = ", ".join(f"'{c}'" for c in team.priority_classes)
    name = f"hybridgpu-team-{team.name}-jobs"
    labels_expr = "has(object.metadata.labels)"
    docs.append(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": managed_by_labels()},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["jobs"]}]
                },
                "validations": [
                    {
                        "expression": f"{labels_expr} && '{QUEUE_NAME_LABEL}' in object.metadata.labels",
                        "message": f"team {team.name}: a Job must set the label {QUEUE_NAME_LABEL} to a LocalQueue of its namespace",
                    },
                    {
                        "expression": f"!{labels_expr} || !('{PRIORITY_CLASS_LABEL}' in object.metadata.labels) || object.metadata.labels['{PRIORITY_CLASS_LABEL}'] in [{allowed}]",
                        "message": f"team {team.name}: {PRIORITY_CLASS_LABEL} must be one of {', '.join(team.priority_classes)}",
                    },
                ],
            },
        }
    )
    docs.append(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": managed_by_labels()},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(team.namespaces)}]}
                },
            },
        }
    )
    return docs


def _share_maps(team: TeamSpec, model: str, resources: tuple[str, ...]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    nominal = {r: 0 for r in resources}
    borrowing: dict[str, int] = {}
    lending: dict[str, int] = {}
    for share in team.onprem:
        if share.gpu_model != model or share.resource not in nominal:
            continue
        nominal[share.resource] = share.nominal_quota
        if share.borrowing_limit is not None:
            borrowing[share.resource] = share.borrowing_limit
        if share.lending_limit is not None:
            lending[share.resource] = share.lending_limit
    return nominal, borrowing, lending


def team_onprem_groups(onprem: OnPremCapacity, team: TeamSpec, flavor_name: Callable[[str], str] = lambda n: n) -> list[ResourceGroup]:
    """The team's on-prem resource groups: one flavor per GPU model (whole GPUs) and per model with MIG.

    Every on-prem resource is covered; where the team has no share its ``nominalQuota`` is 0 and it
    can only borrow. ``flavor_name`` maps a worker flavor to the flavor used on this cluster
    (``multikueue-<flavor>`` on the spillover manager).
    """
    groups: list[ResourceGroup] = []
    if onprem.gpus:
        flavors = []
        for model in onprem.gpus:
            nominal, borrowing, lending = _share_maps(team, model, (GPU_RESOURCE,))
            flavors.append(FlavorQuota(flavor_name(onprem.flavors[model].name), nominal, borrowing, lending))
        groups.append(ResourceGroup((GPU_RESOURCE,), tuple(flavors)))
    if onprem.mig:
        covered = tuple(sorted({res for per in onprem.mig.values() for res in per}))
        flavors = []
        for model in onprem.mig:
            nominal, borrowing, lending = _share_maps(team, model, covered)
            flavors.append(FlavorQuota(flavor_name(onprem.mig_flavors[model].name), nominal, borrowing, lending))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return groups


def _cloud_flavor(share: CloudShare, flavor: str) -> FlavorQuota:
    lending = {GPU_RESOURCE: share.lending_limit} if share.lending_limit is not None else {}
    return FlavorQuota(flavor, {GPU_RESOURCE: share.nominal_quota}, {GPU_RESOURCE: share.borrowing_limit}, lending)


def _with_cloud(groups: list[ResourceGroup], cloud: list[FlavorQuota]) -> tuple[ResourceGroup, ...]:
    """Append cloud flavors (whole GPUs) to the ``nvidia.com/gpu`` group, or add a group for them."""
    if not cloud:
        return tuple(groups)
    for i, group in enumerate(groups):
        if GPU_RESOURCE in group.covered:
            groups[i] = ResourceGroup(group.covered, (*group.flavors, *cloud))
            return tuple(groups)
    return (ResourceGroup((GPU_RESOURCE,), tuple(cloud)), *groups)


def reserved_cohort(reserved: tuple[ReservedCapacity, ...], cohort: str, flavor_name: Callable[[str], str] = lambda n: n) -> dict[str, Any] | None:
    """The Kueue ``Cohort`` object that holds the Capacity Blocks' GPUs for the team queues of one cluster, or None without blocks.

    Why the cohort and not a team. On the admission cluster every team queue has ``reclaimWithinCohort: Any``: a
    queue that held the blocks as its own ``nominalQuota`` (as the EKS worker does without teams,
    :func:`~hybridgpu.burst.plan.with_reserved`) would preempt any other team using them. Per-team shares of a
    block, like the spot and On-Demand shares, would have to add up to a quota that changes with time (0 before the
    block starts), so a teams file valid today would be refused tomorrow; and the blocks are prepaid, so no team
    budget needs them split. A Cohort's ``nominalQuota`` is a pool on top of its members' quotas that every member
    borrows and none owns (kueue v0.19.2 ``apis/kueue/v1beta2/cohort_types.go``, ``pkg/cache/scheduler/resource_node.go``
    ``available``); the team queues list the flavor with ``nominalQuota: 0`` and no ``borrowingLimit``, so they share
    it by fair sharing (the teams' weights) or, without it, first come, first served. The cohort is a root (no
    ``parentName``), so it has no borrowing or lending limits (the Cohort webhook refuses them without a parent).
    Cohort quotas need no feature gate: ``HierarchicalCohorts`` is GA and locked on since v0.17
    (``pkg/features/kube_features.go``). The manager needs the pool as much as the worker: MultiKueue dispatches a
    workload only while it holds quota on the manager (``pkg/controller/admissionchecks/multikueue/workload.go``:
    remote workloads are deleted when the local one "has no quota reservation").

    Args:
        reserved: the plan's Capacity Block NodePools (:attr:`~hybridgpu.burst.plan.BurstPlan.reserved`).
        cohort: the teams' cohort (``cohort`` of the teams file): the Cohort object's name.
        flavor_name: the flavor's name on this cluster (``multikueue-<flavor>`` on an admission cluster).

    Returns:
        The ``kueue.x-k8s.io/v1beta2`` Cohort with one ``nvidia.com/gpu`` group: per pool, its active GPUs at the
        plan's time (:attr:`~hybridgpu.burst.plan.ReservedCapacity.gpus`); None when ``reserved`` is empty.
    """
    if not reserved:
        return None
    flavors = [{"name": flavor_name(r.flavor.name), "resources": [{"name": GPU_RESOURCE, "nominalQuota": r.gpus}]} for r in reserved]
    return {
        "apiVersion": KUEUE_API,
        "kind": "Cohort",
        "metadata": {"name": cohort, "labels": managed_by_labels()},
        "spec": {"resourceGroups": [{"coveredResources": [GPU_RESOURCE], "flavors": flavors}]},
    }


def _reserved_flavors(plan: BurstPlan, flavor_name: Callable[[str], str]) -> list[FlavorQuota]:
    """The reserved flavors of a team queue on an admission cluster: 0 of its own, borrowed from :func:`reserved_cohort`."""
    return [FlavorQuota(flavor_name(r.flavor.name), {GPU_RESOURCE: 0}) for r in plan.reserved]


def team_classes(plan: BurstPlan, team: TeamSpec) -> list[BurstClass]:
    """The burst classes of the plan queues in the team's namespaces, in the order spot, on-demand, none."""
    present = {q.burst for q in plan.source.queues if q.namespace in team.namespaces}
    return [c for c in ("spot", "on-demand", "none") if c in present]


def apply_teams(plan: BurstPlan, teams: TeamsFile) -> BurstPlan:
    """The burst plan with a ClusterQueue per team (see the module docstring for what lands where).

    Preconditions (checked with file, key and fix by :func:`hybridgpu.stack.teams.teams_issues`):
    every plan queue's namespace belongs to a team; a team's cloud shares are for capacity types
    the plan configures; on the spillover manager a team's queues either all burst or none does.

    Returns:
        A new :class:`BurstPlan`; the input is unchanged.

    Raises:
        ValueError: a precondition does not hold.
    """
    src = plan.source
    prefix = src.kueue.prefix
    owner = {ns: t for t in teams.teams for ns in t.namespaces}
    orphans = sorted({q.namespace for q in src.queues} - set(owner))
    if orphans:
        raise ValueError(f"queue namespace(s) {', '.join(orphans)} belong to no team")
    labels = {ns: dict(t.cost_labels) for ns, t in owner.items()}
    wpcs = tuple(priority_class_manifests(teams))
    config = configuration_keys(teams)
    pre = preemption(teams)
    access = tuple(doc for t in teams.teams for doc in team_access_manifests(t))

    def common(cluster: ClusterPlan, **changes: Any) -> ClusterPlan:
        ns_labels = {ns: labels[ns] for ns in cluster.namespaces if ns in labels}
        extra = tuple(changes.pop("extra_manifests", ()))
        return dataclasses.replace(cluster, namespace_labels=ns_labels, extra_manifests=(*wpcs, *extra), configuration=config, **changes)

    def team_cq(team: TeamSpec, name: str, groups: tuple[ResourceGroup, ...], check: str | None, burst_class: BurstClass | None) -> ClusterQueuePlan:
        return ClusterQueuePlan(
            name,
            groups,
            cohort=teams.cohort,
            admission_check=check,
            burst_class=burst_class,
            namespaces=tuple(sorted(team.namespaces)),
            preemption=pre,
            fair_sharing_weight=weight_quantity(team.fair_sharing_weight),
            team=team.name,
        )

    def share(team: TeamSpec, ctype: str) -> CloudShare:
        found = next((s for s in team.cloud if s.capacity_type == ctype), None)
        return found or CloudShare(capacity_type=ctype, nominal_quota=0)

    clusters: dict[str, ClusterPlan] = {}
    suffix = "-burst" if src.topology == "split-queues" else ""
    for stack, cluster in plan.clusters.items():
        if cluster.role == "cloud-worker":
            mig = sorted({res for per in plan.onprem.mig.values() for res in per})
            cqs = []
            lqs = []
            for team in teams.teams:
                for ctype in team_classes(plan, team):
                    if ctype == "none":
                        continue
                    cap = plan.cloud[ctype]
                    s = share(team, ctype)
                    quota = {GPU_RESOURCE: s.nominal_quota, **{r: 0 for r in mig}}
                    borrow = {GPU_RESOURCE: s.borrowing_limit, **{r: 0 for r in mig}}
                    lend = {GPU_RESOURCE: s.lending_limit} if s.lending_limit is not None else {}
                    group = ResourceGroup(tuple(sorted(quota)), (FlavorQuota(cap.flavor.name, dict(sorted(quota.items())), borrow, lend),))
                    cq = team_cq(team, team_cloud_queue_name(prefix, team.name, ctype), (group,), None, ctype)
                    # In the cloud a team reclaims its lent share as the borrowers finish: a worker does not
                    # preempt what the manager dispatched (the manager decides; set lendingLimit: 0 to keep it free).
                    cqs.append(dataclasses.replace(cq, preemption=None))
                    lqs += [LocalQueuePlan(q.namespace, q.name + suffix, cq.name) for q in src.queues if q.namespace in team.namespaces and q.burst == ctype]
            cqs = list(with_reserved(cqs, plan.reserved, teams.cohort, held_by_cohort=True))  # Capacity Blocks first, held by the teams' Cohort
            pool = reserved_cohort(plan.reserved, teams.cohort) if cqs else None
            clusters[stack] = common(cluster, cluster_queues=tuple(cqs), local_queues=tuple(sorted(lqs, key=lambda lq: (lq.namespace, lq.name))),
                                     extra_manifests=(pool,) if pool else ())
        elif cluster.role == "manager":
            by_class = {cq.burst_class: cq for cq in cluster.cluster_queues}
            cqs = []
            for team in teams.teams:
                classes = team_classes(plan, team)
                if not classes:
                    continue
                bursting = [c for c in classes if c != "none"]
                if bursting and "none" in classes:
                    raise ValueError(f"team {team.name!r} has queues that burst and queues that stay on-prem")
                groups = team_onprem_groups(plan.onprem, team, lambda n: f"multikueue-{n}")
                cloud = [_cloud_flavor(share(team, c), f"multikueue-{plan.cloud[c].flavor.name}") for c in bursting]
                if bursting:  # owned, then the prepaid blocks (the Cohort's), then the team's cloud shares
                    cloud = [*_reserved_flavors(plan, lambda n: f"multikueue-{n}"), *cloud]
                check = by_class[classes[0]].admission_check
                cqs.append(team_cq(team, team_queue_name(prefix, team.name), _with_cloud(groups, cloud), check, None))
            manager_lqs = tuple(LocalQueuePlan(q.namespace, q.name, team_queue_name(prefix, owner[q.namespace].name)) for q in src.queues)
            reserved_used = any(c != "none" for t in teams.teams for c in team_classes(plan, t))
            pool = reserved_cohort(plan.reserved, teams.cohort, lambda n: f"multikueue-{n}") if reserved_used else None
            clusters[stack] = common(cluster, cluster_queues=tuple(cqs), local_queues=manager_lqs, extra_manifests=(*access, *((pool,) if pool else ())))
        elif cluster.role == "onprem-manager":
            burst_cqs = [cq for cq in cluster.cluster_queues if cq.admission_check is not None]
            check = burst_cqs[0].admission_check if burst_cqs else None
            cqs = []
            lqs = []
            for team in teams.teams:
                classes = team_classes(plan, team)
                if not classes:
                    continue
                local = team_cq(team, team_queue_name(prefix, team.name), tuple(team_onprem_groups(plan.onprem, team)), None, None)
                cqs.append(local)
                bursting = [c for c in classes if c != "none"]
                if bursting:
                    burst_flavors = (*_reserved_flavors(plan, lambda n: f"multikueue-{n}"), *(_cloud_flavor(share(team, c), f"multikueue-{c}") for c in bursting))
                    cqs.append(team_cq(team, team_burst_queue_name(prefix, team.name), (ResourceGroup((GPU_RESOURCE,), burst_flavors),), check, None))
                for q in src.queues:
                    if q.namespace not in team.namespaces:
                        continue
                    lqs.append(LocalQueuePlan(q.namespace, q.name, local.name))
                    if q.burst != "none":
                        lqs.append(LocalQueuePlan(q.namespace, q.name + "-burst", team_burst_queue_name(prefix, team.name)))
            order = {(q.namespace, q.name): i for i, q in enumerate(src.queues)}
            lqs.sort(key=lambda lq: (order.get((lq.namespace, lq.name.removesuffix("-burst")), 0), lq.name.endswith("-burst")))
            pool = reserved_cohort(plan.reserved, teams.cohort, lambda n: f"multikueue-{n}") if any(cq.admission_check for cq in cqs) else None
            clusters[stack] = common(cluster, cluster_queues=tuple(cqs), local_queues=tuple(lqs), extra_manifests=(*access, *((pool,) if pool else ())))
        else:  # the spillover on-prem worker admits what the manager dispatched, in its one ClusterQueue
            clusters[stack] = common(cluster)
    return dataclasses.replace(plan, clusters=clusters)


def team_quota_rows(plan: BurstPlan) -> list[dict[str, Any]]:
    """One row per team ClusterQueue of every cluster: stack, queue, team, flavor, resource, nominal, borrowing and lending limits.

    For ``hybridgpu burst plan`` (table and ``--json``); ``None`` limits print as "-" (none: Kueue's default).
    """
    rows = []
    for stack, cluster in sorted(plan.clusters.items()):
        for cq in cluster.cluster_queues:
            if cq.team is None:
                continue
            for group in cq.groups:
                for fq in group.flavors:
                    for res in group.covered:
                        rows.append(
                            {
                                "stack": stack,
                                "clusterQueue": cq.name,
                                "team": cq.team,
                                "flavor": fq.flavor,
                                "resource": res,
                                "nominalQuota": fq.nominal.get(res, 0),
                                "borrowingLimit": fq.borrowing_limit.get(res),
                                "lendingLimit": fq.lending_limit.get(res),
                            }
                        )
    return rows


def cohort_capacity(cluster: ClusterPlan, cohort: str) -> Mapping[tuple[str, str], int]:
    """(flavor, resource) -> the sum of ``nominalQuota`` over the cohort's ClusterQueues on ``cluster``, plus the quota of
    the cluster's Kueue ``Cohort`` object of that name (the Capacity Blocks' pool, :func:`reserved_cohort`)."""
    totals: dict[tuple[str, str], int] = {}
    for doc in cluster.extra_manifests:
        if doc.get("kind") == "Cohort" and doc["metadata"]["name"] == cohort:
            for group in doc["spec"].get("resourceGroups", []):
                for f in group["flavors"]:
                    for r in f["resources"]:
                        totals[(f["name"], r["name"])] = totals.get((f["name"], r["name"]), 0) + int(r["nominalQuota"])
    for cq in cluster.cluster_queues:
        if cq.cohort != cohort:
            continue
        for group in cq.groups:
            for fq in group.flavors:
                for res in group.covered:
                    totals[(fq.flavor, res)] = totals.get((fq.flavor, res), 0) + int(fq.nominal.get(res, 0))
    return totals
