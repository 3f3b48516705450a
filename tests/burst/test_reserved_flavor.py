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


def test_team_queues_in_the_cloud_try_the_block_first():
    plan = apply_teams(_plan(), TeamsFile.model_validate(example_teams()))
    queues = _manifests(plan, "prod", "ClusterQueue")
    assert all(kueue_errors(q) == [] for q in queues)
    assert all(q["spec"]["resourceGroups"][0]["flavors"][0]["name"] == FLAVOR for q in queues)
    usage: dict[tuple[str, str], int] = {}
    last = queues[-1]["metadata"]["name"]
    assert assign_flavor(queues, last, 16, usage) == FLAVOR  # the whole block, borrowed within the teams' cohort
    assert assign_flavor(queues, last, 8, usage) != FLAVOR


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
