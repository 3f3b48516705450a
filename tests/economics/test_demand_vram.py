"""Demand profiles (CSV loader, generator) and the VRAM estimator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hybridgpu.economics.demand import DemandFileError, DemandProfile, generate_demand, load_demand_csv, parse_demand_csv, write_demand_csv
from hybridgpu.economics.vram import estimate_vram, fitting_gpus, fitting_mig_profiles, min_gpus


def test_csv_round_trip(tmp_path):
    profile = generate_demand(hours=200, seed=5)
    path = tmp_path / "d.csv"
    write_demand_csv(profile, path, comment="test")
    back = load_demand_csv(path)
    assert np.array_equal(back.gpus, profile.gpus) and np.array_equal(back.checkpointable, profile.checkpointable)
    assert back.source == str(path)


def test_fraction_column():
    p = parse_demand_csv("hour,gpus,checkpointable_fraction\n0,10,0.5\n1,4,1\n")
    assert p.checkpointable.tolist() == [5.0, 4.0]


@pytest.mark.parametrize(
    "text, line, field, words",
    [
        ("hour,gpus,checkpointable\n0,10,2\n1,ten,2\n", 3, "gpus", "'ten' is not a number"),
        ("hour,gpus,checkpointable\n0,10,12\n", 2, "checkpointable", "above gpus"),
        ("hour,gpus,checkpointable\n0,10,2\n2,10,2\n", 3, "hour", "expected 1"),
        ("hour,gpus,checkpointable\n0,-3,0\n", 2, "gpus", ">= 0"),
        ("hour,gpus\n0,3\n", 1, "checkpointable", "exactly one"),
        ("hour,gpus,checkpointable,colour\n0,3,1,red\n", 1, "colour", "unknown column"),
        ("hour,gpus,checkpointable\n0,10\n", 2, None, "has 2 fields"),
        ("hour,gpus,checkpointable_fraction\n0,10,1.5\n", 2, "checkpointable_fraction", "above 1"),
    ],
)
def test_csv_errors_name_file_line_and_field(text, line, field, words):
    with pytest.raises(DemandFileError) as err:
        parse_demand_csv(text, "demand.csv")
    issue = err.value.issues[0]
    assert (issue.file, issue.line, issue.field) == ("demand.csv", line, field)
    assert words in issue.message
    assert "demand.csv: line" in str(err.value)


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(DemandFileError, match="cannot read"):
        load_demand_csv(tmp_path / "nope.csv")
    (tmp_path / "e.csv").write_text("# only a comment\n")
    with pytest.raises(DemandFileError, match="no header"):
        load_demand_csv(tmp_path / "e.csv")


@given(st.integers(min_value=1, max_value=500), st.integers(min_value=0, max_value=2**31), st.floats(min_value=0, max_value=1))
def test_generator_is_seeded_and_valid(hours, seed, frac):
    a = generate_demand(hours=hours, seed=seed, checkpointable_fraction=frac)
    b = generate_demand(hours=hours, seed=seed, checkpointable_fraction=frac)
    assert np.array_equal(a.gpus, b.gpus) and np.array_equal(a.checkpointable, b.checkpointable)
    assert a.hours == hours and (a.gpus >= 0).all() and (a.checkpointable <= a.gpus).all()
    assert (a.gpus == np.round(a.gpus)).all()


def test_generator_has_a_daily_shape():
    p = generate_demand(hours=24 * 56, noise=0, weekly_amplitude=0, seasonal_amplitude=0, base_gpus=100)
    by_hour = p.gpus.reshape(-1, 24).mean(axis=0)
    assert int(np.argmax(by_hour)) == 14 and int(np.argmin(by_hour)) == 2
    with pytest.raises(ValueError, match="checkpointable_fraction"):
        generate_demand(checkpointable_fraction=1.5)


def test_profile_rejects_inconsistent_arrays():
    with pytest.raises(ValueError):
        DemandProfile(np.array([1.0, 2.0]), np.array([3.0, 0.0]))
    with pytest.raises(ValueError):
        DemandProfile(np.array([]), np.array([]))


def test_training_adds_master_weights_for_mixed_precision():
    # 16 bytes per parameter for mixed-precision Adam (ZeRO paper): 2 + 2 + 8 + 4.
    est = estimate_vram(1, "training", "bf16", "adam", activation_gb=0)
    assert est.total_gb == pytest.approx(16)
    assert estimate_vram(1, "training", "fp32", "adam", activation_gb=0).total_gb == pytest.approx(16)  # 4 + 4 + 8, no copy
    assert estimate_vram(1, "training", "bf16", "sgd", activation_gb=0, master_weights=False).total_gb == pytest.approx(4)


def test_exact_kv_cache():
    # Llama-2-7B-like shape: 32 layers, 32 KV heads x 128, 4096 tokens, fp16: 2 x 32 x 32 x 128 x 4096 x 2 B = 2.147 GB.
    est = estimate_vram(7, "inference", "fp16", layers=32, kv_heads=32, head_dim=128, context_tokens=4096)
    assert est.parts["kv_cache"] == pytest.approx(2.147483648)
    with pytest.raises(ValueError, match="together"):
        estimate_vram(7, layers=32)


def test_smallest_gpu_and_mig_profile():
    small = estimate_vram(3, "inference", "int8", kv_overhead=0.3)  # 3.9 GB
    migs = fitting_mig_profiles(small, "H100-80GB")
    assert migs[0].label == "H100-80GB 1g.10gb" and migs[0].headroom_gib > 0
    assert all("+me" not in (f.profile or "") for f in fitting_mig_profiles(small))
    gpus = fitting_gpus(small)
    assert gpus[0].gpu_model == "T4"
    assert [f.memory_gib for f in gpus] == sorted(f.memory_gib for f in gpus)
    huge = estimate_vram(70, "training", "bf16")
    assert fitting_gpus(huge) == [] and fitting_mig_profiles(huge) == []
    n = min_gpus(lambda k: estimate_vram(70, "training", "bf16", shards=k), 79.6)
    assert n is not None and estimate_vram(70, "training", "bf16", shards=n).total_gib + 0.5 <= 79.6
    assert estimate_vram(70, "training", "bf16", shards=n - 1).total_gib + 0.5 > 79.6


@pytest.mark.parametrize("kwargs", [{"params_billions": 0}, {"params_billions": 1, "precision": "fp4"}, {"params_billions": 1, "mode": "serving"}])
def test_vram_bad_input(kwargs):
    with pytest.raises(ValueError):
        estimate_vram(**kwargs)
