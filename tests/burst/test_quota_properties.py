"""Property tests of the quota invariants: whatever the capacities, the quotas can never disagree.

* spillover: each manager class owns on-prem + its own ceiling, with no cohort (class isolation),
  in flavors whose quotas are worker flavors' quotas (no workload larger than one worker);
* every resource a manager queue covers is covered on each worker it dispatches to (quota 0
  where the worker offers none), so under BlockUndeclared nothing is admitted without quota;
* split-queues: the on-prem manager's MultiKueue queues = the EKS worker; its local queue = on-prem;
* EKS worker quota per capacity type = the ceiling = the NodePool limit the stack must carry;
* the on-prem quota = the GPUs (and MIG instances) of the inventory's active hosts;
* a budget ceiling never exceeds the budget, is whole instances, and is the largest such;
* every rendered Kueue object satisfies the v1beta2 CRD constraints;
* Capacity Blocks (some generated clouds have block pools, with blocks active, not yet started, or in their last 40
  minutes at the plan's time): each reserved flavor's quota is the GPUs of its blocks usable at that time (never more
  than the blocks' GPUs), held by exactly one EKS queue and borrowed by the others in one cohort, and the flavor comes
  first on the EKS worker and the split-queues burst queues, after on-prem and before the class's capacity type on the
  spillover manager; the quota changes exactly at the times :func:`~hybridgpu.burst.plan.quota_changes` lists.
"""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime, timedelta
from functools import cache, reduce

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.burst.kueue import cluster_manifests
from hybridgpu.burst.models import BurstPlanFile, CapacitySpec
from hybridgpu.burst.plan import CloudCapacity, Flavor, OnPremCapacity, assemble_plan, cloud_capacity, onprem_capacity, quota_changes, reserved_capacity
from hybridgpu.config.models import CloudConfig
from hybridgpu.k8s import GPU_RESOURCE
from hybridgpu.burst.schema import kueue_errors
from hybridgpu.catalog import load_catalog
from hybridgpu.stack.load import load_stack_config
from hybridgpu.inventory import load_inventory
from hybridgpu.inventory.models import Host, HostRecord, Inventory
from tests.helpers import ROOT, examples
from tests.helpers.scratch import example_stack

CATALOG = load_catalog()
PROD_CLOUD = load_stack_config("prod", ROOT)[0].cloud
SITE = load_inventory(ROOT / "stacks" / "inventory" / "onprem-site-a.yaml")
MIG_RES = ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"]
PROD_SECTION = example_stack("prod")["config"]["hybridgpu:cloud"]
NOW = datetime(2026, 12, 2, 11, 30, tzinfo=UTC)
BLOCK_TYPES = {"p5.48xlarge": 8, "p4d.24xlarge": 8}

settings.register_profile("burst", max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("burst")


@st.composite
def onprem_caps(draw) -> OnPremCapacity:
    models = draw(st.lists(st.sampled_from(["H100-80GB", "A100-80GB", "L40S"]), min_size=1, max_size=3, unique=True))
    gpus = {m: draw(st.integers(1, 512)) for m in models}
    mig_models = draw(st.lists(st.sampled_from(["A100-80GB", "H100-80GB"]), max_size=2, unique=True))
    mig = {m: {r: draw(st.integers(0, 200)) for r in draw(st.lists(st.sampled_from(MIG_RES), min_size=1, unique=True))} for m in mig_models}
    return OnPremCapacity(
        gpus=gpus,
        mig=mig,
        flavors={m: Flavor(f"onprem-{m.lower()}") for m in gpus},
        mig_flavors={m: Flavor(f"onprem-{m.lower()}-mig") for m in mig},
    )


def _cap(ctype: str, gpus: int) -> CloudCapacity:
    return CloudCapacity(ctype, f"pool-{ctype}", gpus, 1.0, "test", "gpuCeiling", (8,), Flavor(f"eks-{ctype}", {"karpenter.sh/capacity-type": ctype}))


@st.composite
def block_pools(draw) -> tuple[CloudConfig, datetime]:
    """The example cloud stack plus 0 to 2 Capacity Block NodePools, and the time to judge them at.

    Blocks start 4 days before to 6 days after ``now`` (at 11:30 UTC, as EC2 sells them), last 1 to 7 days, and ``now``
    is moved by up to a day, sometimes into a block's last 40 minutes (Karpenter has deleted its nodes then).
    """
    section = copy.deepcopy(PROD_SECTION)
    node_class = section["nodeClasses"][0]["name"]
    serial = 0
    for p in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        blocks = []
        for _ in range(draw(st.integers(1, 3))):
            start = NOW + timedelta(days=draw(st.integers(-4, 6)))
            itype = draw(st.sampled_from(sorted(BLOCK_TYPES)))
            blocks.append({"id": f"cr-{serial:017x}", "instanceType": itype, "instanceCount": draw(st.integers(1, 4)),
                           "start": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "end": (start + timedelta(days=draw(st.integers(1, 7)))).strftime("%Y-%m-%dT%H:%M:%SZ")})
            serial += 1
        types = sorted({b["instanceType"] for b in blocks})
        limit = sum(b["instanceCount"] * BLOCK_TYPES[b["instanceType"]] for b in blocks)
        section["nodePools"].append({"name": f"block-{p}", "nodeClass": node_class, "capacityTypes": ["reserved"], "instanceTypes": types,
                                     "gpuLimit": limit, "capacityBlocks": blocks})
    now = NOW + draw(st.sampled_from([timedelta(0), timedelta(hours=23, minutes=-20), timedelta(hours=-5), timedelta(minutes=-41)]))
    return CloudConfig.model_validate(section), now


def _gpu_flavors(cq) -> list[str]:
    return [fq.flavor for g in cq.groups if GPU_RESOURCE in g.covered for fq in g.flavors]


def _reserved_quota(cq, flavor: str) -> int:
    return sum(fq.nominal.get(GPU_RESOURCE, 0) for g in cq.groups for fq in g.flavors if fq.flavor == flavor)


@st.composite
def scenario(draw):
    topology = draw(st.sampled_from(["spillover", "split-queues"]))
    classes = draw(st.lists(st.sampled_from(["spot", "on-demand", "none"]), min_size=1, max_size=3, unique=True))
    if classes == ["none"]:
        classes = ["none", draw(st.sampled_from(["spot", "on-demand"]))]
    queues = [{"namespace": f"ns-{i % 2}", "name": f"q{i}", "burst": c} for i, c in enumerate(classes)]
    caps = {c: _cap(c, draw(st.integers(0, 1024))) for c in ("spot", "on-demand") if c in classes}
    cloud = {"stack": "cloud", "stackReference": "o/p/cloud"}
    for c in caps:
        cloud["spot" if c == "spot" else "onDemand"] = {"nodePool": f"pool-{c}", "gpuCeiling": caps[c].gpus}
    data = {
        "apiVersion": "hybridgpu.io/v1alpha1",
        "kind": "BurstPlan",
        "topology": topology,
        "manager": {"stack": "mgr"} if topology == "spillover" else {},
        "onprem": {"stack": "site", "stackReference": "o/p/site"},
        "cloud": cloud,
        "queues": queues,
    }
    cloud_section, now = draw(block_pools())
    return BurstPlanFile.model_validate(data), draw(onprem_caps()), caps, reserved_capacity(cloud_section, CATALOG, now), now


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b) if a.get(k, 0) + b.get(k, 0) or k in a or k in b}


def _nonzero(d: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in d.items() if v}


def _covered(cq) -> set[str]:
    return {r for g in cq.groups for r in g.covered}


def _flavor_quotas(cluster) -> set[tuple[str, int]]:
    return {(r, n) for cq in cluster.cluster_queues for g in cq.groups for fq in g.flavors for r, n in fq.nominal.items()}


@given(scenario())
def test_quotas_never_disagree(case):
    """The invariants of docs/bursting.md ("Quota invariants"), over random plans."""
    source, onprem, caps, reserved, now = case
    plan = assemble_plan(source, onprem, caps, reserved=reserved)
    eks = plan.clusters["cloud"]
    onprem_total = onprem.totals()
    mirrored = {r.flavor.name: r for r in reserved} | {f"multikueue-{r.flavor.name}": r for r in reserved}
    held = {r.flavor.name: [_reserved_quota(cq, r.flavor.name) for cq in eks.cluster_queues] for r in reserved}
    # Capacity Blocks on the EKS worker: first in every queue's GPU group, in pool order; the quota is the GPUs of the
    # blocks usable at the plan's time (never more than the blocks'), on exactly one queue, the others borrow in one cohort.
    for r in reserved:
        assert r.gpus == sum(g for _, g, start, until in r.windows if start <= now < until) <= r.block_gpus
        assert sorted(held[r.flavor.name])[:-1] == [0] * (len(eks.cluster_queues) - 1) and sum(held[r.flavor.name]) == r.gpus
    if reserved:
        assert {cq.cohort for cq in eks.cluster_queues} == {f"{source.kueue.prefix}-eks"}
    for cq in eks.cluster_queues:
        assert _gpu_flavors(cq)[: len(reserved)] == [r.flavor.name for r in reserved]
    # EKS worker GPU quota per capacity type = the ceiling = the NodePool limit (the blocks come on top); every on-prem
    # MIG resource is declared there with quota 0 (no burst pool offers MIG).
    for cq in eks.cluster_queues:
        own = sum(fq.nominal.get(GPU_RESOURCE, 0) for g in cq.groups for fq in g.flavors if fq.flavor not in mirrored)
        assert own == caps[cq.burst_class].gpus
        assert {r: n for r, n in cq.nominal_totals().items() if r != GPU_RESOURCE} == {r: 0 for r in onprem_total if r != GPU_RESOURCE}
    assert plan.nodepool_limits() == {f"pool-{c}": cap.gpus for c, cap in caps.items()}
    manager_cluster = next(c for c in plan.clusters.values() if c.multikueue is not None)
    workers = {w.name: plan.clusters[w.stack] for w in manager_cluster.multikueue.workers}
    if source.topology == "spillover":
        site = plan.clusters["site"]
        assert site.quota_totals() == onprem_total
        worker_flavor_quotas = _flavor_quotas(site) | _flavor_quotas(eks)
        for cq in manager_cluster.cluster_queues:
            # Class isolation: no cohort, so nothing is lent or borrowed; the class owns on-prem +
            # its own ceiling whatever the other classes hold.
            assert cq.cohort is None
            assert all(not fq.borrowing_limit and not fq.lending_limit for g in cq.groups for fq in g.flavors)
            want = dict(onprem_total)
            if cq.burst_class in caps:
                want[GPU_RESOURCE] = want.get(GPU_RESOURCE, 0) + caps[cq.burst_class].gpus + sum(r.gpus for r in reserved)
                # owned first, then the blocks, then the class's own capacity type
                names = _gpu_flavors(cq)
                tail = [*(f"multikueue-{r.flavor.name}" for r in reserved), f"multikueue-{caps[cq.burst_class].flavor.name}"]
                assert names[len(names) - len(tail):] == tail and not any(n in mirrored for n in names[: len(names) - len(tail)])
            else:
                assert not any(n in mirrored for n in _gpu_flavors(cq))
            assert _nonzero(cq.nominal_totals()) == _nonzero(want)
            # No workload reserves more than one worker can run: a pod set takes one flavor per
            # resource group, and every manager flavor's quota is one worker flavor's quota.
            for g in cq.groups:
                for fq in g.flavors:
                    for r, n in fq.nominal.items():
                        assert (r, n) in worker_flavor_quotas
            # Flavors: each at most once per ClusterQueue (Kueue refuses duplicates).
            names = [fq.flavor for g in cq.groups for fq in g.flavors]
            assert len(names) == len(set(names))
    else:
        site = plan.clusters["site"]
        burst = [cq for cq in site.cluster_queues if cq.admission_check is not None]
        assert sum(cq.nominal_totals().get(GPU_RESOURCE, 0) for cq in burst) == eks.quota_totals().get(GPU_RESOURCE, 0)
        for i, cq in enumerate(burst):
            assert _gpu_flavors(cq)[: len(reserved)] == [f"multikueue-{r.flavor.name}" for r in reserved]
            assert cq.nominal_totals() == {GPU_RESOURCE: caps[cq.burst_class].gpus + (sum(r.gpus for r in reserved) if i == 0 else 0)}
            assert cq.cohort == (f"{source.kueue.prefix}-burst" if reserved else None)
        local = [cq for cq in site.cluster_queues if cq.admission_check is None]
        assert len(local) == 1 and local[0].nominal_totals() == onprem_total
    # Never admit without quota: every resource a manager queue covers is covered by every worker
    # its MultiKueueConfig lists, in a queue of that worker serving the same class.
    for cq in manager_cluster.cluster_queues:
        if cq.admission_check is None:
            continue
        for worker_name in manager_cluster.multikueue.configs[manager_cluster.multikueue.checks[cq.admission_check]]:
            worker = workers[worker_name]
            serving = [w for w in worker.cluster_queues if w.burst_class in (None, cq.burst_class)]
            assert serving and all(_covered(cq) <= _covered(w) for w in serving), (cq.name, worker_name)
    # Every LocalQueue that bursts exists with the same namespace and name on the EKS worker.
    manager_cluster = next(c for c in plan.clusters.values() if c.multikueue is not None)
    burst_cqs = {cq.name for cq in manager_cluster.cluster_queues if cq.burst_class in ("spot", "on-demand")}
    dispatched = {(lq.namespace, lq.name) for lq in manager_cluster.local_queues if lq.cluster_queue in burst_cqs}
    assert dispatched == {(lq.namespace, lq.name) for lq in eks.local_queues}
    # And every rendered Kueue object is valid against the CRD constraints.
    for cluster in plan.clusters.values():
        for doc in cluster_manifests(cluster, source):
            if doc["apiVersion"].startswith("kueue.x-k8s.io/"):
                assert kueue_errors(doc) == [], doc


@given(block_pools())
def test_the_reserved_quota_changes_exactly_at_the_listed_times(case):
    """``burst plan`` says when to run ``pulumi up`` again: between ``now`` and the first listed change the reserved quota
    stays what was rendered, and at each listed change it moves by that block's GPUs (up when it starts, down 40 minutes
    before it ends)."""
    cloud, now = case
    reserved = reserved_capacity(cloud, CATALOG, now)
    changes = quota_changes(reserved, now)
    assert all(c.at > now for c in changes) and changes == sorted(changes, key=lambda c: (c.at, c.node_pool, c.block, c.event))
    quota = {r.node_pool: r.gpus for r in reserved}
    if changes:
        before = reserved_capacity(cloud, CATALOG, changes[0].at - timedelta(seconds=1))
        assert {r.node_pool: r.gpus for r in before} == quota
    for c in changes:
        quota[c.node_pool] += c.gpus if c.event == "starts" else -c.gpus
        at = {r.node_pool: r.gpus for r in reserved_capacity(cloud, CATALOG, c.at)}
        if not any(d.at == c.at and (d.node_pool, d.block, d.event) > (c.node_pool, c.block, c.event) for d in changes):
            assert at == quota
    assert all(v == 0 for v in quota.values())  # after the last change no block is usable


@given(
    price=st.floats(0.05, 200.0, allow_nan=False),
    budget=st.floats(1.0, 5_000_000.0, allow_nan=False),
    ceiling=st.one_of(st.none(), st.integers(0, 2048)),
    hours=st.floats(100.0, 744.0),
)
def test_budget_ceiling_is_within_budget_whole_and_largest(price, budget, ceiling, hours):
    spec = CapacitySpec.model_validate(
        {"nodePool": "h100-spot", "monthlyBudgetUsd": budget, "gpuCeiling": ceiling, "usdPerGpuHour": price, "priceSource": "test"}
    )
    cap = cloud_capacity("spot", spec, PROD_CLOUD, CATALOG, hours, "plan.yaml")
    step = reduce(math.gcd, cap.instance_gpu_counts)
    assert cap.gpus % step == 0
    assert cap.gpus * price * hours <= budget * (1 + 1e-9)
    if ceiling is not None:
        assert cap.gpus <= ceiling
    # The largest: one more instance step would break the budget (or the ceiling).
    more = cap.gpus + step
    assert more * price * hours > budget * (1 - 1e-9) or (ceiling is not None and more > ceiling)


def _host(i: int, model: str, count: int, state: str, mig: list[dict]) -> Host:
    return Host.model_validate(
        {
            "hostname": f"gpu-{i:03d}",
            "addresses": {"management": f"10.20.0.{i + 20}"},
            "role": "gpu-worker",
            "ssh": {"user": "ubuntu", "keySecret": {"env": "K"}},
            "state": state,
            "gpu": {"model": model, "count": count, "migLayouts": mig},
        }
    )


@st.composite
def hosts(draw):
    out = []
    for i in range(draw(st.integers(1, 12))):
        model = draw(st.sampled_from(["H100-80GB", "A100-80GB"]))
        count = draw(st.sampled_from([4, 8]))
        mig = []
        if draw(st.booleans()):
            layout = {"3g.40gb": 2} if draw(st.booleans()) else {"1g.10gb": 7}
            mig = [{"gpus": list(range(draw(st.integers(1, count)))), "layout": layout}]
        out.append(_host(i, model, count, draw(st.sampled_from(["active", "active", "cordoned", "absent"])), mig))
    return out


@given(hosts())
def test_onprem_quota_is_the_active_hosts_gpus(hs):
    inventory = Inventory(site=SITE.site, records=tuple(HostRecord(h, "x.yaml", i) for i, h in enumerate(hs)), site_file="x.yaml", files=("x.yaml",))
    cap = onprem_capacity(inventory, CATALOG)
    active = [h for h in hs if h.state == "active"]
    whole = sum(h.gpu.count - sum(len(m.indices(h.gpu.count)) for m in h.gpu.mig_layouts) for h in active)
    assert sum(cap.gpus.values()) == whole
    instances = sum(n * len(m.indices(h.gpu.count)) for h in active for m in h.gpu.mig_layouts for n in m.layout.values())
    assert sum(n for per in cap.mig.values() for n in per.values()) == instances
    assert set(cap.flavors) == set(cap.gpus) and set(cap.mig_flavors) == set(cap.mig)


@cache
def _example_base():
    from hybridgpu.burst.plan import plan_burst, read_plan_file
    from hybridgpu.teams.models import TeamsFile
    from tests.helpers.teams import example_teams

    plan_file = "stacks/burst/site-a.yaml"
    base = plan_burst(read_plan_file(ROOT / plan_file, plan_file), SITE, PROD_CLOUD, CATALOG, file=plan_file)
    return base, TeamsFile.model_validate(example_teams())


@given(block_pools(), st.sampled_from(["spillover", "split-queues"]))
def test_with_teams_the_blocks_are_the_cohorts_and_no_teams(case, topology):
    """With a teams file (docs/teams.md, "Capacity Blocks with teams"): every team queue that bursts lists each reserved
    flavor before its cloud shares with nominalQuota 0 and no borrowingLimit, a team that stays on-prem does not list
    it, and on each cluster where some team queue lists it a root Cohort named as the teams' cohort holds exactly the
    blocks' usable GPUs (kueue v0.19.2 ``apis/kueue/v1beta2/cohort_types.go``: a pool on top of the members' quotas),
    which :func:`~hybridgpu.burst.teams.cohort_capacity` reports."""
    from hybridgpu.burst.teams import apply_teams, cohort_capacity

    cloud, now = case
    base, teams = _example_base()
    reserved = reserved_capacity(cloud, CATALOG, now)
    source = base.source
    if topology == "split-queues":
        source = source.model_copy(update={"topology": "split-queues", "manager": source.manager.model_copy(update={"stack": None})})
    plan = apply_teams(assemble_plan(source, base.onprem, base.cloud, reserved=reserved), teams)
    cloud_flavors = {cap.flavor.name for cap in base.cloud.values()} | {f"multikueue-{c}" for c in base.cloud} | {f"multikueue-{cap.flavor.name}" for cap in base.cloud.values()}
    for stack, cluster in plan.clusters.items():
        docs = cluster_manifests(cluster, source)
        assert all(kueue_errors(d) == [] for d in docs if d["apiVersion"].startswith("kueue.x-k8s.io/")), stack
        cohorts = [d for d in docs if d["kind"] == "Cohort"]
        listing = False
        for cq in cluster.cluster_queues:
            if cq.team is None:
                continue
            names = _gpu_flavors(cq)
            for r in reserved:
                name = r.flavor.name if cluster.role == "cloud-worker" else f"multikueue-{r.flavor.name}"
                bursts = any(n in cloud_flavors for n in names)
                assert (name in names) == bursts, (stack, cq.name)
                if name in names:
                    listing = True
                    fq = next(fq for g in cq.groups for fq in g.flavors if fq.flavor == name)
                    assert fq.nominal.get(GPU_RESOURCE) == 0 and GPU_RESOURCE not in fq.borrowing_limit
                    assert names.index(name) < min(names.index(n) for n in names if n in cloud_flavors)
                    assert cohort_capacity(cluster, teams.cohort)[(name, GPU_RESOURCE)] == r.gpus <= r.block_gpus
        assert len(cohorts) == (1 if listing else 0), stack
        for c in cohorts:
            assert c["metadata"]["name"] == teams.cohort and "parentName" not in c["spec"]
