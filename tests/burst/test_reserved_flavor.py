"""Capacity Block NodePools as a ``reserved`` Kueue flavor of the burst plan, tried before spot and On-Demand.

What the consumers do with what we render:

* Karpenter (aws/karpenter-provider-aws v1.14.1, commit bde00654, read 2026-11-27) labels a node launched into a
  reservation ``karpenter.sh/capacity-type: reserved``, ``karpenter.k8s.aws/capacity-reservation-type: <type>``
  (``capacity-block`` for a block) and ``karpenter.k8s.aws/capacity-reservation-id``
  (``pkg/cloudprovider/cloudprovider.go`` ``instanceToNodeClaim``), besides the single-valued requirements of the
  NodePool and ``karpenter.sh/nodepool``; it launches into a block only while EC2 lists it ``active`` and deletes its
  nodes 40 minutes before its end (``pkg/providers/capacityreservation/types.go``, ``pkg/apis/v1/ec2nodeclass_status.go``).
* Kueue (kubernetes-sigs/kueue v0.19.2, commit c3785e52) injects a flavor's ``nodeLabels`` as the pods' nodeSelector and
  tries a resource group's flavors in order (``pkg/scheduler/flavorassigner/flavorassigner.go``
  ``findFlavorForPodSets``; modelled in :mod:`tests.helpers.kueue_flavors`).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from hybridgpu.burst.kueue import cluster_manifests
from hybridgpu.burst.plan import BurstPlan, plan_burst, read_plan_file
from hybridgpu.burst.schema import kueue_errors
from hybridgpu.burst.teams import apply_teams
from hybridgpu.catalog import load_catalog
from hybridgpu.config.models import CloudConfig
from hybridgpu.inventory import load_inventory
from hybridgpu.render.karpenter import render_nodepool
from hybridgpu.teams.models import TeamsFile
from tests.helpers import ROOT
from tests.helpers.kueue_flavors import assign_flavor
from tests.helpers.scratch import example_stack
from tests.helpers.teams import example_teams

PLAN_FILE = "stacks/burst/site-a.yaml"
NOW = datetime(2026, 12, 2, tzinfo=UTC)
ACTIVE = {"id": "cr-0123456789abcdef0", "instanceType": "p5.48xlarge", "instanceCount": 2, "start": "2026-12-01T11:30:00Z", "end": "2026-12-08T11:30:00Z"}
LATER = {"id": "cr-0123456789abcdef1", "instanceType": "p5.48xlarge", "instanceCount": 1, "start": "2026-12-10T11:30:00Z", "end": "2026-12-11T11:30:00Z"}
FLAVOR = "eks-reserved-h100-block"


@cache
def _cloud(with_blocks: bool = True) -> CloudConfig:
    section = copy.deepcopy(example_stack("prod")["config"]["hybridgpu:cloud"])
    if with_blocks:
        section["nodePools"].append({"name": "h100-block", "nodeClass": section["nodeClasses"][0]["name"], "capacityTypes": ["reserved"],
                                     "instanceTypes": ["p5.48xlarge"], "gpuLimit": 24, "capacityBlocks": [ACTIVE, LATER]})
    return CloudConfig.model_validate(section)


def _plan(now: datetime = NOW, with_blocks: bool = True) -> BurstPlan:
    source = read_plan_file(ROOT / PLAN_FILE, PLAN_FILE)
    inventory = load_inventory(ROOT / "stacks/inventory/onprem-site-a.yaml")
    return plan_burst(source, inventory, _cloud(with_blocks), load_catalog(), file=PLAN_FILE, now=now)


def _manifests(plan: BurstPlan, stack: str, kind: str) -> list[dict[str, Any]]:
    return [d for d in cluster_manifests(plan.clusters[stack], plan.source) if d["kind"] == kind]


def test_the_flavor_selects_exactly_the_nodes_karpenter_launches_into_the_block():
    plan = _plan()
    flavor = next(f for f in _manifests(plan, "prod", "ResourceFlavor") if f["metadata"]["name"] == FLAVOR)
    pool = next(p for p in _cloud().node_pools if p.name == "h100-block")
    nodepool = render_nodepool(pool, load_catalog())
    # A node of the block, labelled as instanceToNodeClaim does: the NodePool's single-valued requirements and template
    # labels, the reservation's labels, and the NodePool name (karpenter core).
    node = {r["key"]: r["values"][0] for r in nodepool["spec"]["template"]["spec"]["requirements"] if r["operator"] == "In" and len(r["values"]) == 1}
    node |= nodepool["spec"]["template"]["metadata"]["labels"] | {
        "karpenter.sh/capacity-type": "reserved", "karpenter.k8s.aws/capacity-reservation-type": "capacity-block",
        "karpenter.k8s.aws/capacity-reservation-id": ACTIVE["id"], "karpenter.sh/nodepool": "h100-block", "karpenter.k8s.aws/instance-gpu-name": "h100",
    }
    assert flavor["spec"]["nodeLabels"] == {"karpenter.sh/capacity-type": "reserved", "karpenter.k8s.aws/capacity-reservation-type": "capacity-block",
                                            "karpenter.sh/nodepool": "h100-block", "karpenter.k8s.aws/instance-gpu-name": "h100"}
    assert flavor["spec"]["nodeLabels"].items() <= node.items()
    taints = nodepool["spec"]["template"]["spec"]["taints"]
    assert all(any(t["key"] == tol["key"] and t["effect"] == tol["effect"] for tol in flavor["spec"]["tolerations"]) for t in taints)
    spot = next(f for f in _manifests(plan, "prod", "ResourceFlavor") if f["metadata"]["name"] == "eks-spot")
    assert not spot["spec"]["nodeLabels"].items() <= node.items()  # a spot pod never lands on a block node, nor the reverse


def test_a_gpu_job_lands_on_the_reserved_flavor_first_then_spot_and_on_demand():
    plan = _plan()
    queues = _manifests(plan, "prod", "ClusterQueue")
    assert all(kueue_errors(q) == [] for q in queues)
    names = {q["spec"]["resourceGroups"][0]["flavors"][-1]["name"]: q["metadata"]["name"] for q in queues}
    spot_cq, od_cq = names["eks-spot"], names["eks-on-demand"]
    assert [f["name"] for f in next(q for q in queues if q["metadata"]["name"] == spot_cq)["spec"]["resourceGroups"][0]["flavors"]] == [FLAVOR, "eks-spot"]
    usage: dict[tuple[str, str], int] = {}
    assert assign_flavor(queues, od_cq, 8, usage) == FLAVOR  # borrowed from the spot queue, which holds the block's 16 GPUs
    assert assign_flavor(queues, spot_cq, 8, usage) == FLAVOR
    assert assign_flavor(queues, spot_cq, 8, usage) == "eks-spot"  # the block is full
    assert assign_flavor(queues, od_cq, 8, usage) == "eks-on-demand"


@pytest.mark.parametrize("now, quota", [
    (datetime(2026, 11, 30, tzinfo=UTC), 0),  # before the first block: nothing can launch, no quota
    (NOW, 16),  # the active block's 2 x 8 GPUs; the later block is not counted
    (datetime(2026, 12, 8, 10, 55, tzinfo=UTC), 0),  # in the last 40 minutes Karpenter has deleted the nodes
    (datetime(2026, 12, 10, 12, 0, tzinfo=UTC), 8),  # the second block
])
def test_the_quota_is_the_blocks_active_at_the_rendering(now: datetime, quota: int):
    plan = _plan(now)
    queues = _manifests(plan, "prod", "ClusterQueue")
    held = [f["resources"][0]["nominalQuota"] for q in queues for g in q["spec"]["resourceGroups"] for f in g["flavors"] if f["name"] == FLAVOR]
    assert sorted(held) == [0, quota] and plan.reserved[0].block_gpus == 24
    od_cq = next(q["metadata"]["name"] for q in queues if q["spec"]["resourceGroups"][0]["flavors"][-1]["name"] == "eks-on-demand")
    assert assign_flavor(queues, od_cq, 8, {}) == (FLAVOR if quota >= 8 else "eks-on-demand")


def test_the_spillover_manager_tries_owned_then_reserved_then_its_capacity_type():
    """The manager's classes that burst mirror the block after on-prem (a gate per class, like on-prem; the workers place)."""
    plan = _plan()
    gpu_flavors = {q["metadata"]["name"]: [f["name"] for f in q["spec"]["resourceGroups"][0]["flavors"]] for q in _manifests(plan, plan.source.manager_stack, "ClusterQueue")}
    assert gpu_flavors == {
        "hybridgpu-spot": ["multikueue-onprem-h100-80gb", f"multikueue-{FLAVOR}", "multikueue-eks-spot"],
        "hybridgpu-on-demand": ["multikueue-onprem-h100-80gb", f"multikueue-{FLAVOR}", "multikueue-eks-on-demand"],
        "hybridgpu-onprem-only": ["multikueue-onprem-h100-80gb"],
    }
    assert f"multikueue-{FLAVOR}" in {f["metadata"]["name"] for f in _manifests(plan, plan.source.manager_stack, "ResourceFlavor")}


def _cohorts(plan: BurstPlan, stack: str) -> list[dict[str, Any]]:
    return _manifests(plan, stack, "Cohort")


def test_team_queues_in_the_cloud_try_the_block_first():
    """EKS worker with teams: every team queue lists the block first with 0 of its own; the teams' Cohort holds its GPUs."""
    plan = apply_teams(_plan(), TeamsFile.model_validate(example_teams()))
    queues = _manifests(plan, "prod", "ClusterQueue")
    cohorts = _cohorts(plan, "prod")
    assert all(kueue_errors(q) == [] for q in [*queues, *cohorts])
    assert [c["metadata"]["name"] for c in cohorts] == ["hybridgpu-teams"]
    assert cohorts[0]["spec"]["resourceGroups"][0]["flavors"] == [{"name": FLAVOR, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16}]}]
    assert all(q["spec"]["resourceGroups"][0]["flavors"][0]["name"] == FLAVOR for q in queues)
    assert {r["nominalQuota"] for q in queues for f in q["spec"]["resourceGroups"][0]["flavors"] if f["name"] == FLAVOR for r in f["resources"]} == {0}
    usage: dict[tuple[str, str], int] = {}
    first, last = queues[0]["metadata"]["name"], queues[-1]["metadata"]["name"]
    assert assign_flavor(queues, last, 8, usage, cohorts=cohorts) == FLAVOR  # borrowed from the Cohort's pool
    assert assign_flavor(queues, first, 8, usage, cohorts=cohorts) == FLAVOR
    assert assign_flavor(queues, first, 8, usage, cohorts=cohorts) != FLAVOR  # the block's 16 GPUs are in use


def _admitted(queues: list[dict[str, Any]], name: str, cohorts: list[dict[str, Any]], request: int = 8) -> list[str]:
    """The flavors of ``request``-GPU workloads admitted one after the other in ``name`` until one stays pending."""
    usage: dict[tuple[str, str], int] = {}
    out = []
    while (flavor := assign_flavor(queues, name, request, usage, cohorts=cohorts)) is not None:
        out.append(flavor)
    return out


@pytest.mark.parametrize("now, block", [(NOW, 16), (datetime(2026, 11, 30, tzinfo=UTC), 0)])
def test_the_teams_manager_admits_the_blocks_gpus_on_top_of_the_shares(now: datetime, block: int):
    """Spillover manager with teams (MultiKueue: the manager reserves quota in its own ClusterQueue before it dispatches,
    kueue v0.19.2 ``pkg/controller/admissionchecks/multikueue/workload.go``): a team admits its on-prem shares, then the
    block's active GPUs (the teams' Cohort), then its cloud shares; without the Cohort it could not use the block at all."""
    plan = apply_teams(_plan(now), TeamsFile.model_validate(example_teams()))
    manager = plan.source.manager_stack
    queues = _manifests(plan, manager, "ClusterQueue")
    cohorts = _cohorts(plan, manager)
    assert all(kueue_errors(d) == [] for d in [*queues, *cohorts])
    research = "hybridgpu-team-ml-research"
    flavors = [f["name"] for f in next(q for q in queues if q["metadata"]["name"] == research)["spec"]["resourceGroups"][0]["flavors"]]
    assert flavors == ["multikueue-onprem-h100-80gb", f"multikueue-{FLAVOR}", "multikueue-eks-spot", "multikueue-eks-on-demand"]
    admitted = _admitted(queues, research, cohorts)
    # 24 on-prem H100s (16 own + 8 borrowed), the block, 48 spot and 8 on-demand GPUs of the team's shares.
    assert admitted == ["multikueue-onprem-h100-80gb"] * 3 + [f"multikueue-{FLAVOR}"] * (block // 8) + ["multikueue-eks-spot"] * 6 + ["multikueue-eks-on-demand"]
    assert _admitted(queues, research, []).count(f"multikueue-{FLAVOR}") == 0  # the pool is the Cohort's: no team queue owns it
    # A team that stays on-prem does not list the block (its admission check dispatches to the on-prem worker only).
    platform = next(q for q in queues if q["metadata"]["name"] == "hybridgpu-team-ml-platform")
    assert all("reserved" not in f["name"] for g in platform["spec"]["resourceGroups"] for f in g["flavors"])


def test_split_queues_team_burst_queues_borrow_the_block_from_the_teams_cohort():
    from hybridgpu.burst.plan import assemble_plan

    base = _plan()
    source = base.source.model_copy(update={"topology": "split-queues", "manager": base.source.manager.model_copy(update={"stack": None})})
    split = apply_teams(assemble_plan(source, base.onprem, base.cloud, reserved=base.reserved), TeamsFile.model_validate(example_teams()))
    queues = _manifests(split, "onprem", "ClusterQueue")
    cohorts = _cohorts(split, "onprem")
    assert all(kueue_errors(d) == [] for d in [*queues, *cohorts])
    burst = "hybridgpu-team-ml-research-burst"
    assert [f["name"] for f in next(q for q in queues if q["metadata"]["name"] == burst)["spec"]["resourceGroups"][0]["flavors"]][0] == f"multikueue-{FLAVOR}"
    assert _admitted(queues, burst, cohorts)[:3] == [f"multikueue-{FLAVOR}"] * 2 + ["multikueue-spot"]


def test_without_capacity_blocks_the_teams_render_no_cohort_object():
    plan = apply_teams(_plan(with_blocks=False), TeamsFile.model_validate(example_teams()))
    assert all(not _cohorts(plan, stack) for stack in plan.clusters)
    assert plan.judged_at is None


def test_without_capacity_blocks_the_plan_is_unchanged():
    plan = _plan(with_blocks=False)
    assert plan.reserved == ()
    for cluster in plan.clusters.values():
        assert not any("reserved" in f.name for f in cluster.flavors)
    assert all(q.cohort is None for q in plan.clusters["prod"].cluster_queues)


def test_split_queues_burst_queues_share_the_block_through_a_cohort():
    """Split-queues: the on-prem manager's burst queues list the block first, one quota for all of them (as on the worker)."""
    from hybridgpu.burst.plan import assemble_plan

    base = _plan()
    source = base.source.model_copy(update={"topology": "split-queues", "manager": base.source.manager.model_copy(update={"stack": None})})
    split = assemble_plan(source, base.onprem, base.cloud, reserved=base.reserved)
    queues = [q for q in _manifests(split, "onprem", "ClusterQueue") if q["spec"].get("admissionChecksStrategy")]
    assert all(kueue_errors(q) == [] for q in queues) and {q["spec"]["cohortName"] for q in queues} == {"hybridgpu-burst"}
    usage: dict[tuple[str, str], int] = {}
    assert [assign_flavor(queues, q["metadata"]["name"], 8, usage) for q in reversed(queues)] == [f"multikueue-{FLAVOR}"] * 2
    assert assign_flavor(queues, queues[0]["metadata"]["name"], 8, usage) == "multikueue-spot"


@pytest.mark.parametrize("now, judged, active, nxt", [
    (NOW, "2026-12-02T00:00:00Z", 16, {"at": "2026-12-08T10:50:00Z", "nodePool": "h100-block", "block": ACTIVE["id"], "event": "ends", "gpus": 16}),
    (datetime(2026, 11, 30, tzinfo=UTC), "2026-11-30T00:00:00Z", 0, {"at": "2026-12-01T11:30:00Z", "nodePool": "h100-block", "block": ACTIVE["id"], "event": "starts", "gpus": 16}),
    (datetime(2026, 12, 11, 11, 0, tzinfo=UTC), "2026-12-11T11:00:00Z", 0, None),  # both blocks past their usable end
])
def test_burst_plan_says_when_the_quotas_were_judged_and_when_to_run_pulumi_up_again(monkeypatch, now, judged, active, nxt):
    """The reserved quota depends on the rendering's time, so ``hybridgpu burst plan`` (table and ``--json``) states that
    time and the next block start or usable end (start, or end - 40 min: Karpenter's expiry lead)."""
    import json

    import hybridgpu.cli.burst as burst_cli
    from tests.helpers.cases import app, runner

    plan = _plan(now)
    monkeypatch.setattr(burst_cli, "_load_plan", lambda stack, root: plan)
    data = json.loads(runner.invoke(app, ["burst", "plan", "prod", "--json"]).output)["capacityBlocks"]
    assert data["judgedAt"] == judged and data["nextChange"] == nxt
    assert [(p["nodePool"], p["gpus"], p["blockGpus"]) for p in data["pools"]] == [("h100-block", active, 24)]
    assert [b["usableUntil"] for b in data["pools"][0]["blocks"]] == ["2026-12-08T10:50:00Z", "2026-12-11T10:50:00Z"]
    result = runner.invoke(app, ["burst", "plan", "prod"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0 and f"Capacity Block quotas judged at {judged}" in text
    assert "!=" not in text and "its own ceiling (+ Capacity Blocks)" in text  # each class's quota holds the blocks on top
    if nxt:
        assert f"next change {nxt['at']}: block {nxt['block']} of h100-block {nxt['event']}" in text and "run `pulumi up` on prod and hybrid then" in text
    else:
        assert "no later change" in text


def test_without_blocks_burst_plan_json_has_no_capacity_block_key():
    from hybridgpu.cli.burst import plan_summary

    assert "capacityBlocks" not in plan_summary(_plan(with_blocks=False))
