"""Property tests of the quota invariants: whatever the capacities, the quotas can never disagree.

* spillover: each manager class owns on-prem + its own ceiling, with no cohort (class isolation),
  in flavors whose quotas are worker flavors' quotas (no workload larger than one worker);
* every resource a manager queue covers is covered on each worker it dispatches to (quota 0
  where the worker offers none), so under BlockUndeclared nothing is admitted without quota;
* split-queues: the on-prem manager's MultiKueue queues = the EKS worker; its local queue = on-prem;
* EKS worker quota per capacity type = the ceiling = the NodePool limit the stack must carry;
* the on-prem quota = the GPUs (and MIG instances) of the inventory's active hosts;
* a budget ceiling never exceeds the budget, is whole instances, and is the largest such;
* every rendered Kueue object satisfies the v1beta2 CRD constraints.
"""

from __future__ import annotations

import math
from functools import reduce

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.burst.kueue import cluster_manifests
from hybridgpu.burst.models import BurstPlanFile, CapacitySpec
from hybridgpu.burst.plan import CloudCapacity, Flavor, OnPremCapacity, assemble_plan, cloud_capacity, onprem_capacity
from hybridgpu.k8s import GPU_RESOURCE
from hybridgpu.burst.schema import kueue_errors
from hybridgpu.catalog import load_catalog
from hybridgpu.stack.load import load_stack_config
from hybridgpu.inventory import load_inventory
from hybridgpu.inventory.models import Host, HostRecord, Inventory
from tests.helpers import ROOT, examples

CATALOG = load_catalog()
PROD_CLOUD = load_stack_config("prod", ROOT)[0].cloud
SITE = load_inventory(ROOT / "stacks" / "inventory" / "onprem-site-a.yaml")
MIG_RES = ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"]

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
    return BurstPlanFile.model_validate(data), draw(onprem_caps()), caps


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
    source, onprem, caps = case
    plan = assemble_plan(source, onprem, caps)
    eks = plan.clusters["cloud"]
    onprem_total = onprem.totals()
    # EKS worker GPU quota per capacity type = the ceiling = the NodePool limit; every on-prem
    # MIG resource is declared there with quota 0 (no burst pool offers MIG).
    for cq in eks.cluster_queues:
        assert cq.nominal_totals() == {GPU_RESOURCE: caps[cq.burst_class].gpus, **{r: 0 for r in onprem_total if r != GPU_RESOURCE}}
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
                want[GPU_RESOURCE] = want.get(GPU_RESOURCE, 0) + caps[cq.burst_class].gpus
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
        for cq in burst:
            assert cq.nominal_totals() == {GPU_RESOURCE: caps[cq.burst_class].gpus}
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
