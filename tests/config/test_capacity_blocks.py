"""EC2 Capacity Blocks for ML as a NodePool's capacity: config, rendering, validation through the CLI.

Fixture cases (tests/fixtures/capacity_blocks/cases.yaml) run ``hybridgpu validate dev`` in-process on
the dev stack with one pool appended, "now" fixed through ``$HYBRIDGPU_NOW``.

Upstream behaviour the rendering and the rules follow (aws/karpenter-provider-aws v1.14.1, read 2026-11-27):

* ``pkg/providers/instancetype/types.go`` (createOfferings/computeRequirements): a reserved offering carries
  ``karpenter.k8s.aws/capacity-reservation-id In [id]`` and ``karpenter.k8s.aws/capacity-reservation-type
  In [capacity-block|default]``; every other offering has both labels ``DoesNotExist``.
* ``pkg/providers/capacityreservation/types.go``: only reservations in EC2 state ``active`` are listed, and
  only those the EC2NodeClass's ``capacityReservationSelectorTerms`` select.
* ``pkg/apis/v1/ec2nodeclass_status.go`` (``capacityReservationExpirationPeriod`` = 40 minutes) and
  ``pkg/controllers/capacityreservation/expiration/controller.go``: a capacity block within 40 minutes of its
  end is ``expiring`` and the NodeClaims in it are deleted.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hybridgpu.catalog import load_catalog
from hybridgpu.config.capacity_blocks import NOW_ENV, CapacityBlock, utc_now
from hybridgpu.config.models import CloudConfig, NodeClassConfig, NodePoolConfig
from hybridgpu.policy.oversized import _satisfies
from hybridgpu.render.karpenter import capacity_block_ids, render_ec2_nodeclass, render_nodepool
from hybridgpu.stack.capacity_blocks import block_gpus, capacity_block_issues
from tests.helpers.cases import assert_fixture_counts, assert_verdict, case_ids, load_cases, validate_edited

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/capacity_blocks/cases.yaml")
NOW = "2026-11-27T12:00:00Z"
BLOCK = {"id": "cr-0123456789abcdef0", "instanceType": "p5.48xlarge", "instanceCount": 2,
         "start": "2026-11-20T11:30:00Z", "end": "2026-12-04T11:30:00Z"}


def _pool(**extra: Any) -> NodePoolConfig:
    raw = {"name": "h100-block", "capacityTypes": ["reserved"], "instanceTypes": ["p5.48xlarge"], "gpuLimit": 16, "capacityBlocks": [BLOCK]}
    return NodePoolConfig.model_validate({**raw, **extra})


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_validate_verdict(scratch_project, monkeypatch, case):
    monkeypatch.setenv(NOW_ENV, NOW)

    def edit(config: dict[str, Any]) -> None:
        config["hybridgpu:cloud"]["nodePools"].append(case["pool"])

    result = validate_edited(scratch_project, "dev", edit)
    output = assert_verdict(result, case)
    for word in case.get("warn", []):
        assert word in output, (word, output)


def test_fixture_counts():
    assert_fixture_counts(CASES)


# --------------------------------------------------------------------------- Karpenter's view of the render


def _offering_labels(kind: str, reservation: str | None = None) -> dict[str, str | None]:
    """The two reservation labels of a p5.48xlarge offering as v1.14.1 instancetype/types.go sets them."""
    if kind == "reserved":
        return {"karpenter.k8s.aws/capacity-reservation-id": reservation, "karpenter.k8s.aws/capacity-reservation-type": "capacity-block",
                "karpenter.sh/capacity-type": "reserved"}
    return {"karpenter.k8s.aws/capacity-reservation-id": None, "karpenter.k8s.aws/capacity-reservation-type": None, "karpenter.sh/capacity-type": kind}


def _compatible(nodepool: dict[str, Any], labels: dict[str, str | None]) -> bool:
    reqs = [r for r in nodepool["spec"]["template"]["spec"]["requirements"] if r["key"] in labels]
    return all(_satisfies(r, labels[r["key"]]) for r in reqs)


def test_block_pool_matches_only_its_blocks_offerings():
    """Karpenter launches a block pool only into the listed blocks: on-demand, spot and other reservations do not match."""
    doc = render_nodepool(_pool(), load_catalog())
    assert _compatible(doc, _offering_labels("reserved", "cr-0123456789abcdef0"))
    assert not _compatible(doc, _offering_labels("reserved", "cr-0ffffffffffffffff"))
    assert not _compatible(doc, _offering_labels("on-demand"))
    assert not _compatible(doc, _offering_labels("spot"))
    assert doc["spec"]["limits"]["nvidia.com/gpu"] == "16"


def test_nodeclass_selects_the_blocks_of_its_pools():
    """The EC2NodeClass lists each block id once, after its own reservations (Karpenter offers only what it selects)."""
    other = _pool(name="other", capacityBlocks=[{**BLOCK, "id": "cr-0fedcba9876543210"}])
    cloud = CloudConfig.model_validate({
        "cluster": {"name": "c"}, "network": {"new": {"availabilityZones": ["us-east-1a", "us-east-1b"]}},
        "nodePools": [_pool().model_dump(by_alias=True), other.model_dump(by_alias=True)],
    })
    ids = capacity_block_ids("gpu", cloud.node_pools)
    assert ids == ["cr-0123456789abcdef0", "cr-0fedcba9876543210"]
    nc = NodeClassConfig(capacity_reservation_ids=["cr-0fedcba9876543210", "cr-0aaaaaaaaaaaaaaaa"])
    doc = render_ec2_nodeclass(nc, cluster_name="c", node_role_name="r", cost_tags={}, capacity_block_ids=ids)
    assert doc["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0fedcba9876543210"}, {"id": "cr-0aaaaaaaaaaaaaaaa"}, {"id": "cr-0123456789abcdef0"}]
    assert "capacityReservationSelectorTerms" not in render_ec2_nodeclass(NodeClassConfig(), cluster_name="c", node_role_name="r", cost_tags={})["spec"]


def test_window_checks_at_a_given_time():
    """Expired (end <= now) and expiring (within 40 minutes of the end, Karpenter's expiration period) are errors."""
    catalog = load_catalog()
    cloud = CloudConfig.model_validate({"cluster": {"name": "c"}, "network": {"new": {"availabilityZones": ["us-east-1a", "us-east-1b"]}},
                                        "nodePools": [_pool().model_dump(by_alias=True)]})
    end = datetime(2026, 12, 4, 11, 30, tzinfo=UTC)
    assert capacity_block_issues(cloud, "f", catalog, now=datetime(2026, 12, 4, 10, 49, tzinfo=UTC)) == []
    assert [i.key for i in capacity_block_issues(cloud, "f", catalog, now=datetime(2026, 12, 4, 10, 50, tzinfo=UTC))] == [
        "hybridgpu:cloud.nodePools[0].capacityBlocks[0].end"]
    assert "ended" in capacity_block_issues(cloud, "f", catalog, now=end)[0].message
    assert block_gpus(cloud.node_pools[0], catalog) == 16


def test_block_model_and_clock_seam(monkeypatch):
    block = CapacityBlock.model_validate(BLOCK)
    now = datetime(2026, 11, 27, 12, tzinfo=UTC)
    assert block.active_at(now) and not block.future(now) and not block.expired(now)
    assert block.gpus(8) == 16
    monkeypatch.setenv(NOW_ENV, NOW)
    assert utc_now() == now
    monkeypatch.setenv(NOW_ENV, "tomorrow")
    with pytest.raises(ValueError, match="HYBRIDGPU_NOW"):
        utc_now()


def test_policy_pack_counts_a_block_pool_by_its_limit():
    """The policy pack reads the rendered NodePool (hybridgpu.policy.oversized): the block pool's limit (at most the
    blocks' GPUs, checked above) is what the stack GPU ceiling counts, and its bounded instance list passes."""
    from hybridgpu.policy.base import NODEPOOL, PolicyResource
    from hybridgpu.policy.oversized import CapacitySettings, StackCapacitySettings, nodepool_instance_bounds, stack_gpu_ceiling

    res = PolicyResource(NODEPOOL, "h100-block", urn="urn:pulumi:prod::hybridgpu::kubernetes:karpenter.sh/v1:NodePool::h100-block",
                         props=render_nodepool(_pool(), load_catalog()))
    assert list(nodepool_instance_bounds(res, CapacitySettings())) == []
    findings = [msg for _, msg in stack_gpu_ceiling([res], StackCapacitySettings(max_gpus_per_stack=8))]
    assert len(findings) == 1 and "may add 16 GPUs (h100-block 16)" in findings[0]
