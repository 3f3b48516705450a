"""Capacity Blocks and pod sets in the burst simulator (issues 28 and 30).

Upstream behaviour modelled (aws/karpenter-provider-aws v1.14.1, read 2026-11-27):
``pkg/providers/capacityreservation/types.go`` offers only reservations in state ``active`` (a block
holds nothing before its start); ``pkg/apis/v1/ec2nodeclass_status.go`` (``capacityReservationExpirationPeriod``)
and ``pkg/controllers/capacityreservation/expiration`` delete the NodeClaims in a block 40 minutes before
its end. Kueue v0.19.2 (``pkg/scheduler/flavorassigner``) admits a workload's pod sets whole (a gang) and a
pod runs on one node, so a pod larger than an instance never fits it. Expected figures were worked out by
hand before the first run (the comments show the arithmetic).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hybridgpu.burst.simulate import BLOCK_EXPIRY_LEAD_S, ReservedBlock, SimulationParams, comparison_rows, compare, reserved_blocks, simulate
from hybridgpu.burst.trace import Job, load_trace
from hybridgpu.catalog import load_catalog
from hybridgpu.config.models import CloudConfig
from tests.helpers import ROOT
from tests.helpers.scratch import example_stack

H = 3600.0
#: 2 x 8 GPUs from hour 1 to hour 11: usable until 11 h - 40 min = 37,200 s.
BLOCK = ReservedBlock("cr-0123456789abcdef0", "h100-block", 1 * H, 11 * H, 2, 8, upfront_fee_usd=1000.0)
NO_CLOUD = SimulationParams(onprem_gpus=0, dispatch_delay_s=0.0)


def test_the_40_minute_lead_is_karpenters():
    assert BLOCK_EXPIRY_LEAD_S == 2400 and BLOCK.usable_end_s == 37200 and BLOCK.gpus == 16


def test_a_job_waits_for_the_window_and_runs_on_the_block():
    job = [Job(0.0, 8, H, 1800.0, "spot")]
    r = simulate(job, NO_CLOUD, "spot", blocks=[BLOCK])
    assert (r.never_admitted, r.admitted, r.wait_p50_s, r.makespan_s) == (0, 1, H, 2 * H)  # starts at the block's start
    use = r.blocks[0]
    assert use.used_gpu_hours == pytest.approx(8) and use.window_gpu_hours == pytest.approx(160)  # 16 GPUs x 10 h
    assert use.idle_gpu_hours == pytest.approx(152) and use.evictions == 0
    assert r.gpu_hours["reserved"] == pytest.approx(8) and r.cost_usd["reserved"] == 1000.0 and r.total_cost_usd == 1000.0


def test_without_the_block_or_on_prem_only_the_job_has_nowhere_to_go():
    job = [Job(0.0, 8, H, 1800.0, "spot")]
    assert simulate(job, NO_CLOUD, "spot").never_admitted == 1
    r = simulate(job, NO_CLOUD, "onprem-only", blocks=[BLOCK])  # nothing bursts; the block is paid anyway
    assert r.never_admitted == 1 and r.blocks[0].used_gpu_hours == 0 and r.blocks[0].idle_gpu_hours == pytest.approx(160)
    assert r.total_cost_usd == 1000.0


def test_a_job_after_the_usable_end_does_not_use_the_block():
    late = [Job(BLOCK.usable_end_s, 8, H, 1800.0, "spot")]
    r = simulate(late, NO_CLOUD, "spot", blocks=[BLOCK])
    assert r.never_admitted == 1 and r.blocks[0].used_gpu_hours == 0


def test_eviction_at_end_minus_40_minutes_loses_work_since_the_checkpoint_and_requeues():
    # 20 h job with hourly checkpoints starts on the block at 1 h; evicted at 37,200 s after 33,600 s of
    # work: 9 h saved, 1,200 s lost on 8 GPUs (2.667 GPU-h). Requeued; spot (ceiling 8) runs the rest,
    # 72,000 - 32,400 = 39,600 s, from 37,200 to 76,800 s.
    job = [Job(H, 8, 20 * H, H, "spot")]
    params = SimulationParams(onprem_gpus=0, spot_gpus=8, spot_usd_per_gpu_hour=1.0, dispatch_delay_s=0.0)
    r = simulate(job, params, "spot", blocks=[BLOCK])
    use = r.blocks[0]
    assert use.evictions == 1 and use.lost_gpu_hours == pytest.approx(8 * 1200 / H)
    assert use.used_gpu_hours == pytest.approx(8 * 33600 / H)
    assert r.gpu_hours["spot"] == pytest.approx(88) and r.makespan_s == pytest.approx(76800 - H)
    assert r.unfinished == 0 and r.burst_jobs == 1 and r.wait_p50_s == 0


def test_an_evicted_job_with_nowhere_else_to_go_is_unfinished():
    r = simulate([Job(H, 8, 20 * H, H, "spot")], NO_CLOUD, "spot", blocks=[BLOCK])
    assert r.blocks[0].evictions == 1 and r.unfinished == 1 and r.admitted == 1


def test_a_job_without_checkpoints_loses_all_its_work_at_the_end():
    r = simulate([Job(H, 16, 20 * H, None, "on-demand")], NO_CLOUD, "spot", blocks=[BLOCK])
    assert r.blocks[0].lost_gpu_hours == pytest.approx(16 * (37200 - H) / H)


def test_a_gang_larger_than_the_block_is_never_admitted():
    r = simulate([Job(H, 24, H, 1800.0, "spot")], NO_CLOUD, "spot", blocks=[BLOCK])
    assert r.never_admitted == 1 and r.blocks[0].used_gpu_hours == 0


def test_expired_blocks_are_left_out_and_change_nothing():
    section = example_stack("dev")["config"]["hybridgpu:cloud"]
    section["nodePools"].append(
        {
            "name": "h100-block",
            "nodeClass": section["nodeClasses"][0]["name"],
            "capacityTypes": ["reserved"],
            "instanceTypes": ["p5.48xlarge"],
            "gpuLimit": 16,
            "capacityBlocks": [
                {"id": "cr-0123456789abcdef0", "instanceType": "p5.48xlarge", "instanceCount": 2, "start": "2026-11-20T11:30:00Z", "end": "2026-11-27T11:30:00Z"},
                {"id": "cr-0123456789abcdef1", "instanceType": "p5.48xlarge", "instanceCount": 1, "start": "2026-11-27T11:30:00Z", "end": "2026-11-28T11:30:00Z"},
            ],
        }
    )
    cloud = CloudConfig.model_validate(section)
    start = datetime(2026, 11, 27, 11, 0, tzinfo=UTC)  # the first block's nodes went at 10:50
    blocks = reserved_blocks(cloud, load_catalog(), start)
    assert [(b.id, b.start_s, b.end_s, b.gpus) for b in blocks] == [("cr-0123456789abcdef1", 1800.0, 88200.0, 8)]
    jobs = load_trace(ROOT / "examples" / "traces" / "small.csv")
    params = SimulationParams(onprem_gpus=4, spot_gpus=8, on_demand_gpus=8, spot_usd_per_gpu_hour=1, on_demand_usd_per_gpu_hour=2, launch_s=120)
    gone = [ReservedBlock("cr-0123456789abcdef0", "h100-block", -7 * 86400, -1800, 2, 8)]
    for plain, with_gone in zip(compare(jobs, params), compare(jobs, params, blocks=gone)):
        assert with_gone.blocks[0].used_gpu_hours == 0
        assert (plain.wait_mean_s, plain.makespan_s, plain.gpu_hours["spot"], plain.gpu_hours["on-demand"]) == (
            with_gone.wait_mean_s, with_gone.makespan_s, with_gone.gpu_hours["spot"], with_gone.gpu_hours["on-demand"])


def test_the_table_shows_each_blocks_use_only_when_there_are_blocks():
    jobs = [Job(0.0, 8, H, 1800.0, "spot")]
    plain = [label for label, _ in comparison_rows(compare(jobs, NO_CLOUD))]
    assert not any(label.startswith("block ") for label in plain)
    rows = dict(comparison_rows(compare(jobs, NO_CLOUD, blocks=[BLOCK])))
    assert rows["block cr-0123456789abcdef0 (16 GPUs): idle GPU-hours"] == ["160", "152", "152"]


# ---------------------------------------------------------------- pod sets (issue 30)


def test_pods_per_node_decide_the_nodes_a_gang_launches():
    # 4 pods of 6 GPUs on 8-GPU instances: one pod per node, 4 nodes (32 GPUs) > ceiling 24, never admitted;
    # the same 24 GPUs unshaped fill 3 nodes and run.
    params = SimulationParams(onprem_gpus=0, on_demand_gpus=24, on_demand_usd_per_gpu_hour=1.0)
    shaped = simulate([Job(0.0, 24, H, None, "on-demand", pods=4, gpus_per_pod=6)], params, "spot")
    unshaped = simulate([Job(0.0, 24, H, None, "on-demand")], params, "spot")
    assert shaped.never_admitted == 1 and unshaped.never_admitted == 0 and unshaped.nodes_launched == 3
    roomy = simulate([Job(0.0, 24, H, None, "on-demand", pods=4, gpus_per_pod=6)], SimulationParams(onprem_gpus=0, on_demand_gpus=32), "spot")
    assert roomy.nodes_launched == 4 and roomy.gpu_hours["on-demand"] == pytest.approx(32)  # whole instances billed


def test_a_pod_larger_than_an_instance_never_runs_in_the_cloud():
    params = SimulationParams(onprem_gpus=0, on_demand_gpus=64)
    r = simulate([Job(0.0, 16, H, None, "on-demand", pods=1, gpus_per_pod=16)], params, "spot")
    assert r.never_admitted == 1


def test_small_pods_pack_onto_one_node():
    # 2 pods of 3 GPUs fit one 8-GPU instance (2 pods per node)
    r = simulate([Job(0.0, 6, H, None, "on-demand", pods=2, gpus_per_pod=3)], SimulationParams(onprem_gpus=0, on_demand_gpus=8), "spot")
    assert r.nodes_launched == 1 and r.never_admitted == 0
