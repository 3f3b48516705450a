"""The invariants of many teams on Kueue, as hypothesis properties over random team files and plans.

Kueue's quota algebra (kubernetes-sigs/kueue v0.19.2, ``site/content/en/docs/concepts/cluster_queue.md``,
"Borrowing" and "LendingLimit"; ``preemption.md``): a ClusterQueue in a cohort may use its own
``nominalQuota`` plus what it borrows of the others' unused quota, at most ``borrowingLimit``; a
ClusterQueue lends at most ``lendingLimit`` of its unused nominal quota (all of it when unset);
the cohort never admits more than the sum of its members' nominal quota per flavor and resource.
``reclaimWithinCohort: Any`` lets a ClusterQueue that is under its nominal quota preempt the
cohort's borrowers, whatever their priority.

Random sites have 0 to 3 GPU models of whole GPUs and 0 to 2 with MIG profiles (at least one of
the two), 1 to 5 teams with 1 or 2 namespaces, both topologies, ceilings 0 to 512 GPUs.

Stated for every flavor F and resource R of every cohort (the teams' ClusterQueues on the admission
cluster, and on the EKS worker), with capacity(F, R) the GPUs (or MIG instances) behind F -- the
inventory's active hosts for an on-prem flavor and its mirror on the manager, the NodePool limit for
a cloud flavor:

1. **Nothing is promised twice**: sum over teams of nominalQuota(F, R) <= capacity(F, R).
2. **No team is starved of its guaranteed share**: with the others using as much as Kueue lets them,
   a team T still has at least nominalQuota_T - lendingLimit_T free at once (the part it never lends;
   its full nominalQuota when lendingLimit is 0), and the rest of its nominalQuota is reclaimable
   because every admission-cluster team queue has ``reclaimWithinCohort: Any``.
3. **Borrowing never exceeds physical capacity**: nominalQuota + borrowingLimit <= the cohort's
   capacity <= capacity(F, R); a team without a borrowingLimit holds at most the cohort's capacity.
4. **A team's cloud spending stays within its budget**: sum over its EKS queues of
   (nominalQuota + borrowingLimit) x USD per GPU-hour x hours per month <= monthlyCloudBudgetUsd.
5. **A team submits only to its own queues**: each team ClusterQueue's namespaceSelector selects
   exactly the team's namespaces, and each LocalQueue points at a ClusterQueue of its namespace's team.
6. **Valid objects**: every Kueue object satisfies the v1beta2 CRD constraints; the validator accepts
   every generated (sound) file, so it has no false positives.

Run with ``--hypothesis-show-statistics`` for the example counts.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.burst.kueue import cluster_manifests
from hybridgpu.burst.models import BurstPlanFile
from hybridgpu.burst.plan import CloudCapacity, Flavor, OnPremCapacity, assemble_plan
from hybridgpu.burst.schema import kueue_errors
from hybridgpu.burst.teams import apply_teams, cohort_capacity
from hybridgpu.k8s import DEFAULT_COST_KEYS, GPU_RESOURCE
from hybridgpu.stack.teams import teams_file_issues
from hybridgpu.teams.models import TeamsFile
from tests.helpers import examples

#: Per test, not a loaded profile: a profile would change every later hypothesis test of the session.
TEAMS_SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

MIG_RES = ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"]
HOURS = 730.0


def _split(draw, total: int, parts: int) -> list[int]:
    """A random composition of ``total`` into ``parts`` non-negative integers."""
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=parts - 1, max_size=parts - 1)))
    edges = [0, *cuts, total]
    return [edges[i + 1] - edges[i] for i in range(parts)]


@st.composite
def scenario(draw):
    topology = draw(st.sampled_from(["spillover", "split-queues"]))
    models = draw(st.lists(st.sampled_from(["H100-80GB", "A100-80GB", "L40S"]), max_size=3, unique=True))
    gpus = {m: draw(st.integers(1, 256)) for m in models}
    # with no whole GPUs, at least one MIG model (a site of partitioned GPUs only)
    mig_models = draw(st.lists(st.sampled_from(["A100-80GB", "H100-80GB"]), min_size=0 if gpus else 1, max_size=2, unique=True))
    mig = {m: {r: draw(st.integers(0 if gpus else 1, 100)) for r in draw(st.lists(st.sampled_from(MIG_RES), min_size=1, unique=True))} for m in mig_models}
    onprem = OnPremCapacity(
        gpus=gpus, mig=mig, flavors={m: Flavor(f"onprem-{m.lower()}") for m in gpus}, mig_flavors={m: Flavor(f"onprem-{m.lower()}-mig") for m in mig}
    )

    n_teams = draw(st.integers(1, 5))
    team_classes: list[list[str]] = []
    for _ in range(n_teams):
        if topology == "spillover" and draw(st.booleans()):
            team_classes.append(["none"])
        else:
            picked = draw(st.lists(st.sampled_from(["spot", "on-demand"] if topology == "spillover" else ["spot", "on-demand", "none"]), min_size=1, max_size=3, unique=True))
            team_classes.append(picked)
    used = {c for cs in team_classes for c in cs if c != "none"}
    caps = {}
    for c in sorted(used):
        price = draw(st.floats(0.5, 12.0, allow_nan=False)).__round__(2)
        caps[c] = CloudCapacity(c, f"pool-{c}", draw(st.integers(0, 512)), price, "test", "gpuCeiling", (8,), Flavor(f"eks-{c}", {"karpenter.sh/capacity-type": c}))

    teams = []
    queues = []
    for t, classes in enumerate(team_classes):
        namespaces = [f"t{t}-ns{j}" for j in range(draw(st.integers(1, 2)))]
        for i, c in enumerate(classes):
            queues.append({"namespace": namespaces[0], "name": f"q-{c}", "burst": c})
        for ns in namespaces[1:]:
            queues.append({"namespace": ns, "name": "q", "burst": classes[0]})
        teams.append({"name": f"team-{t}", "namespaces": namespaces, "groups": [f"g{t}"], "onprem": [], "cloud": [], "costLabels": {"team": f"team-{t}", "project": "p", "cost-center": f"cc-{t}"}})

    # On-prem: each flavor/resource's capacity split exactly among the teams.
    flavors = [(m, GPU_RESOURCE, n) for m, n in gpus.items()] + [(m, r, n) for m, per in mig.items() for r, n in per.items()]
    for model, res, cap in flavors:
        for team, nominal in zip(teams, _split(draw, cap, n_teams), strict=True):
            share = {"gpuModel": model, "resource": res, "nominalQuota": nominal}
            if draw(st.booleans()):
                share["borrowingLimit"] = draw(st.integers(0, cap - nominal))
            if draw(st.booleans()):
                share["lendingLimit"] = draw(st.integers(0, nominal))
            team["onprem"].append(share)

    # Cloud: each ceiling split among the teams that burst to it (some left over); borrowing within what is left.
    for c, cap in caps.items():
        users = [t for t, classes in enumerate(team_classes) if c in classes]
        parts = _split(draw, cap.gpus, len(users) + 1)[:-1]
        shared, spare = sum(parts), cap.gpus - sum(parts)
        for t, nominal in zip(users, parts, strict=True):
            borrow = draw(st.integers(0, min(spare, shared - nominal)))
            spare -= borrow
            share = {"capacityType": c, "nominalQuota": nominal, "borrowingLimit": borrow}
            if draw(st.booleans()):
                share["lendingLimit"] = draw(st.integers(0, nominal))
            teams[t]["cloud"].append(share)
    # Budgets: each team's cloud spending at most, plus a little where the plan's capacity leaves room.
    plan_spend = sum(cap.gpus * cap.usd_per_gpu_hour * HOURS for cap in caps.values())
    for team in teams:
        team["monthlyCloudBudgetUsd"] = sum((s["nominalQuota"] + s["borrowingLimit"]) * caps[s["capacityType"]].usd_per_gpu_hour * HOURS for s in team["cloud"])
    room = plan_spend - sum(t["monthlyCloudBudgetUsd"] for t in teams)
    for team in teams:
        extra = min(draw(st.sampled_from([0.0, 0.01, 100.0])), max(room, 0.0))
        team["monthlyCloudBudgetUsd"] += extra
        room -= extra
    for team in teams:
        team["fairSharingWeight"] = draw(st.sampled_from([0, 0.5, 1, 2, 3.25]))
    classes = [{"name": "high", "value": 1000}, {"name": "low", "value": draw(st.integers(-100, 999))}]
    for team in teams:
        team["priorityClasses"] = draw(st.lists(st.sampled_from(["high", "low"]), min_size=1, unique=True))
    teams_file = TeamsFile.model_validate(
        {"apiVersion": "hybridgpu.io/v1alpha1", "kind": "Teams", "priorityClasses": classes, "fairSharing": {"enabled": draw(st.booleans())}, "teams": teams}
    )
    cloud = {"stack": "cloud", "stackReference": "o/p/cloud", "hoursPerMonth": HOURS}
    for c, cap in caps.items():
        cloud["spot" if c == "spot" else "onDemand"] = {"nodePool": cap.node_pool, "gpuCeiling": cap.gpus}
    source = BurstPlanFile.model_validate(
        {
            "apiVersion": "hybridgpu.io/v1alpha1",
            "kind": "BurstPlan",
            "topology": topology,
            "manager": {"stack": "mgr"} if topology == "spillover" else {},
            "onprem": {"stack": "site", "stackReference": "o/p/site"},
            "cloud": cloud,
            "queues": queues,
        }
    )
    return assemble_plan(source, onprem, caps), teams_file


def _physical(plan, flavor: str, res: str) -> int:
    """GPUs (or MIG instances) behind a flavor of any cluster of the plan (a manager mirror: its worker flavor)."""
    name = flavor.removeprefix("multikueue-")
    for model, f in plan.onprem.flavors.items():
        if f.name == name and res == GPU_RESOURCE:
            return plan.onprem.gpus[model]
    for model, f in plan.onprem.mig_flavors.items():
        if f.name == name:
            return plan.onprem.mig[model].get(res, 0)
    for c, cap in plan.cloud.items():
        if name in (cap.flavor.name, f"multikueue-{c}", c):
            return cap.gpus if res == GPU_RESOURCE else 0
    if name in plan.cloud:
        return plan.cloud[name].gpus if res == GPU_RESOURCE else 0
    return 0


@TEAMS_SETTINGS
@given(scenario())
def test_team_quotas_hold_the_invariants(case):
    plan, teams = case
    # 6. the validator accepts every sound file (no false positives)
    assert teams_file_issues(plan, teams, "teams.yaml", list(DEFAULT_COST_KEYS)) == []
    result = apply_teams(plan, teams)
    owner = {ns: t.name for t in teams.teams for ns in t.namespaces}
    spend: dict[str, float] = {t.name: 0.0 for t in teams.teams}
    for stack, cluster in result.clusters.items():
        team_cqs = [cq for cq in cluster.cluster_queues if cq.team is not None]
        capacity = cohort_capacity(cluster, teams.cohort)
        for (flavor, res), total in capacity.items():
            # 1. nothing is promised twice
            assert total <= _physical(result, flavor, res), (stack, flavor, res)
        for cq in team_cqs:
            team = next(t for t in teams.teams if t.name == cq.team)
            # 5. a team submits only to its own queues
            assert cq.namespaces == tuple(sorted(team.namespaces))
            if cluster.role in ("manager", "onprem-manager"):
                assert cq.preemption is not None and cq.preemption["reclaimWithinCohort"] == "Any"
            for group in cq.groups:
                for fq in group.flavors:
                    for res in group.covered:
                        nominal = fq.nominal.get(res, 0)
                        cohort = capacity[(fq.flavor, res)]
                        lend = fq.lending_limit.get(res)
                        borrow = fq.borrowing_limit.get(res)
                        # 3. borrowing never exceeds physical capacity
                        most = nominal + borrow if borrow is not None else cohort
                        assert most <= cohort <= _physical(result, fq.flavor, res)
                        # 2. the never-lent part is free whatever the others do: they hold at most the
                        # cohort's capacity minus T's nominal plus what T lends
                        lendable = nominal if lend is None else lend
                        assert lend is None or lend <= nominal
                        others_most = sum(
                            min(o_fq.nominal.get(res, 0) + (o_fq.borrowing_limit.get(res) if o_fq.borrowing_limit.get(res) is not None else cohort), cohort)
                            for o in team_cqs
                            if o is not cq
                            for g in o.groups
                            for o_fq in g.flavors
                            if o_fq.flavor == fq.flavor and res in g.covered
                        )
                        others_hold = min(others_most, cohort - nominal + lendable)
                        assert cohort - others_hold >= nominal - lendable
            if cluster.role == "cloud-worker":
                for group in cq.groups:
                    for fq in group.flavors:
                        price = next(c.usd_per_gpu_hour for c in result.cloud.values() if c.flavor.name == fq.flavor)
                        spend[cq.team] += (fq.nominal.get(GPU_RESOURCE, 0) + fq.borrowing_limit.get(GPU_RESOURCE, 0)) * price * HOURS
        for lq in cluster.local_queues:
            cq = next(c for c in cluster.cluster_queues if c.name == lq.cluster_queue)
            if cq.team is not None:
                assert cq.team == owner[lq.namespace]
        # 6. valid objects
        for doc in cluster_manifests(cluster, result.source):
            if doc["apiVersion"].startswith("kueue.x-k8s.io"):
                assert kueue_errors(doc) == [], (stack, doc["kind"], doc["metadata"]["name"])
    # 4. cloud spending within budget
    for team in teams.teams:
        assert spend[team.name] <= team.monthly_cloud_budget_usd + 1e-6


@TEAMS_SETTINGS
@given(scenario(), st.data())
def test_an_over_committed_share_is_always_refused(case, data):
    """The converse of invariant 1: adding GPUs to any team's on-prem share makes validation name that flavor."""
    plan, teams = case
    t = data.draw(st.integers(0, len(teams.teams) - 1))
    team = teams.teams[t]
    s = data.draw(st.integers(0, len(team.onprem) - 1))
    extra = data.draw(st.integers(1, 64))
    share = team.onprem[s]
    bumped = share.model_copy(update={"nominal_quota": share.nominal_quota + extra, "lending_limit": None})
    onprem = [*team.onprem[:s], bumped, *team.onprem[s + 1 :]]
    broken = teams.model_copy(update={"teams": [*teams.teams[:t], team.model_copy(update={"onprem": onprem}), *teams.teams[t + 1 :]]})
    issues = teams_file_issues(plan, broken, "teams.yaml", list(DEFAULT_COST_KEYS))
    over = [i for i in issues if i.code == "onprem-capacity"]
    assert len(over) == 1 and f"{share.gpu_model} {share.resource}" in over[0].message and f"by {extra}" in over[0].fix
