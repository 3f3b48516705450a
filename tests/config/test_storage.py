"""FSx for Lustre sizing facts and arithmetic (hybridgpu.config.storage), without Pulumi.

Facts under test (read 2026-11-24): PERSISTENT_2 SSD capacities are 1200 GiB, 2400 GiB and
increments of 2400 GiB (FSx API Reference, CreateFileSystem StorageCapacity); throughput tiers
125/250/500/1000 MB/s/TiB (FSx for Lustre User Guide, "Managing throughput capacity"; the same
list in the installed pulumi-aws 7.51.1 ``fsx/lustre_file_system.py`` docstring, checked below);
throughput = capacity (TiB, 1200 GiB = 1.2 TiB) x tier.
"""

from __future__ import annotations

import inspect

import pulumi_aws
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hybridgpu.config.storage import (
    FSX_LUSTRE_PERSISTENT_2,
    CloudStorageConfig,
    FsxLustreConfig,
    ReadTarget,
    fsx_options_for,
    fsx_throughput_gbps,
    valid_fsx_capacity,
)
from tests.helpers import examples

FACTS = FSX_LUSTRE_PERSISTENT_2


def test_tiers_are_the_ones_the_installed_provider_documents():
    doc = inspect.getsource(pulumi_aws.fsx.LustreFileSystem)
    assert "`PERSISTENT_2` deployment_type and `  SSD ` storage_type are 125, 250, 500, 1000" in doc
    assert FACTS.throughput_tiers == (125, 250, 500, 1000)
    assert "Minimum of `1200`" in doc


@pytest.mark.parametrize("gib", [1200, 2400, 4800, 7200, 40800, 81600, 2400 * 1000])
def test_valid_capacities(gib):
    assert valid_fsx_capacity(gib)
    FsxLustreConfig(storage_capacity_gib=gib, per_unit_storage_throughput=125)


@pytest.mark.parametrize("gib", [0, 1199, 1201, 1800, 3600, 3000, 4000, 40000, -2400])
def test_invalid_capacities(gib):
    assert not valid_fsx_capacity(gib)
    with pytest.raises(ValidationError, match="not a PERSISTENT_2 SSD capacity"):
        FsxLustreConfig(storage_capacity_gib=gib, per_unit_storage_throughput=125)


@pytest.mark.parametrize(("gib", "tier", "gbps"), [(1200, 125, 0.15), (1200, 1000, 1.2), (4800, 125, 0.6), (40800, 1000, 40.8), (81600, 500, 40.8)])
def test_throughput_is_capacity_in_tib_times_tier(gib, tier, gbps):
    # The User Guide's worked figures: 1.2 TiB x 1000 MB/s/TiB = 1,200 MB/s; 4.8 TiB x 125 = 600 MB/s.
    assert fsx_throughput_gbps(gib, tier) == pytest.approx(gbps)


@settings(max_examples=examples(300), deadline=None)
@given(st.floats(min_value=0.01, max_value=2000, allow_nan=False))
def test_each_option_is_the_smallest_valid_capacity_reaching_the_target(target):
    options = fsx_options_for(target)
    assert [o.per_unit_mbps_per_tib for o in options] == sorted(FACTS.throughput_tiers, reverse=True)
    for option in options:
        assert valid_fsx_capacity(option.capacity_gib)
        assert fsx_throughput_gbps(option.capacity_gib, option.per_unit_mbps_per_tib) >= target - 1e-9
        smaller = [c for c in (1200, option.capacity_gib - FACTS.increment_gib) if 0 < c < option.capacity_gib and valid_fsx_capacity(c)]
        for c in smaller:
            assert fsx_throughput_gbps(c, option.per_unit_mbps_per_tib) < target


def test_prod_training_pool_needs_forty_terabytes_at_the_top_tier():
    # 4 x p5.48xlarge x 10 GB/s (shared/seeds 002) = 40 GB/s.
    first = fsx_options_for(40)[0]
    assert (first.per_unit_mbps_per_tib, first.capacity_gib) == (1000, 40800)


@pytest.mark.parametrize(
    "target",
    [{"readGBps": 40}, {"nodePool": "h100-reserved"}, {"nodePool": "h100-reserved", "readGBpsPerNode": 12.5}],
)
def test_read_target_accepts_one_form(target):
    ReadTarget.model_validate(target)


@pytest.mark.parametrize(
    "target",
    [{}, {"readGBps": 40, "nodePool": "x"}, {"readGBps": 0}, {"readGBps": -1}, {"nodePool": "X_pool"}, {"readGbps": 40}, {"readGBpsPerNode": 10}],
)
def test_read_target_refuses(target):
    with pytest.raises(ValidationError):
        ReadTarget.model_validate(target)


def test_namespaces_must_not_repeat():
    base = {"fsxLustre": {"storageCapacityGib": 1200, "perUnitStorageThroughput": 125}, "target": {"readGBps": 0.1}}
    CloudStorageConfig.model_validate({**base, "namespaces": ["a", "b"]})
    with pytest.raises(ValidationError, match="must not repeat"):
        CloudStorageConfig.model_validate({**base, "namespaces": ["a", "a"]})
