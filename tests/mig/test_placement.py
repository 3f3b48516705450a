"""Tests of the exact MIG placement checker (hybridgpu.mig.placement).

The core check is exhaustive: for every MIG model, every count vector with each profile
count in 0..maxInstances is decided by an independent brute-force oracle written here
(product over every profile's combinations of allowed starts, overlap checked on sets of
slice indices) and must agree with check_layout. Plain pytest + hypothesis; no Pulumi.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.errors import HybridGpuError
from hybridgpu.mig.placement import (
    InvalidMigCountError,
    MigLayout,
    Placement,
    check_layout,
    maximal_layouts,
    slot_diagram,
    slot_header,
    valid_layouts,
)
from hybridgpu.mig.profiles import MigGpu, UnknownMigModelError, UnknownMigProfileError, mig_gpu, mig_models
from tests.helpers import examples

MODELS = mig_models()

# Count vectors per model in the exhaustive test: prod(maxInstances + 1).
EXPECTED_VECTOR_COUNTS = {
    "A100-40GB": 8 * 2 * 5 * 4 * 3 * 2 * 2,
    "A100-80GB": 3840,
    "H100-80GB": 3840,
    "H200-141GB": 3840,
    "A30-24GB": 5 * 2 * 3 * 2 * 2,
}


# --------------------------------------------------------------------------- the oracle


def oracle(gpu: MigGpu, counts: dict[str, int]) -> bool:
    """Brute force: try every combination of allowed starts for every instance.

    Independent of hybridgpu.mig.placement: reads only the profile data.
    """
    profiles = {p.name: p for p in gpu.profiles}
    requested = [(profiles[name], c) for name, c in counts.items() if c]
    if any(c > p.max_instances for p, c in requested):
        return False
    if sum(c for p, c in requested if p.media_extensions) > 1:
        return False
    if sum(c * p.compute_slices for p, c in requested) > gpu.compute_slices:
        return False
    # Instances of one profile are interchangeable and can never share a start (they
    # would overlap), so each profile's instances take a set of distinct starts.
    per_profile = [itertools.combinations(p.starts, c) for p, c in requested]
    for choice in itertools.product(*per_profile):
        used: set[int] = set()
        clash = False
        for (profile, _), starts in zip(requested, choice):
            for start in starts:
                cells = set(range(start, start + profile.memory_slots))
                if cells & used or max(cells) >= gpu.memory_slots:
                    clash = True
                    break
                used |= cells
            if clash:
                break
        if not clash:
            return True
    return False


def assert_valid_placement(gpu: MigGpu, counts: dict[str, int], placement: Placement) -> None:
    """An ok placement: one allowed start per requested instance, no overlap, nothing else."""
    assert placement.ok and placement.reason is None
    profiles = {p.name: p for p in gpu.profiles}
    placed: dict[str, int] = {}
    used: set[int] = set()
    for name, start in placement.placements:
        profile = profiles[name]
        assert start in profile.starts, (name, start)
        cells = set(range(start, start + profile.memory_slots))
        assert not cells & used, f"{name}@{start} overlaps"
        assert max(cells) < gpu.memory_slots
        used |= cells
        placed[name] = placed.get(name, 0) + 1
    assert placed == {k: v for k, v in counts.items() if v}
    starts = [s for _, s in placement.placements]
    assert starts == sorted(starts)
    assert placement.memory_slots_used == len(used)


# --------------------------------------------------------------------------- exhaustive


@pytest.mark.parametrize("model", MODELS)
def test_exhaustive_agreement_with_oracle(model):
    gpu = mig_gpu(model)
    names = gpu.profile_names
    ranges = [range(p.max_instances + 1) for p in gpu.profiles]
    vectors = 0
    fitting = set()
    for vector in itertools.product(*ranges):
        vectors += 1
        counts = dict(zip(names, vector))
        placement = check_layout(model, counts)
        expected = oracle(gpu, counts)
        assert placement.ok == expected, (counts, placement.reason)
        if placement.ok:
            assert_valid_placement(gpu, counts, placement)
            fitting.add(MigLayout(counts))
        else:
            assert placement.placements == () and placement.reason
    assert vectors == EXPECTED_VECTOR_COUNTS[model]
    # valid_layouts enumerates exactly the fitting vectors.
    assert set(valid_layouts(model)) == fitting
    assert len(valid_layouts(model)) == len(fitting)


@pytest.mark.parametrize("model", MODELS)
def test_counts_above_max_never_fit(model):
    gpu = mig_gpu(model)
    for profile in gpu.profiles:
        placement = check_layout(model, {profile.name: profile.max_instances + 1})
        assert not placement.ok
        expected = f"{profile.name}: {profile.max_instances + 1} requested, at most {profile.max_instances}"
        assert expected in placement.reason


# --------------------------------------------------------------------------- hypothesis


@st.composite
def requests(draw):
    model = draw(st.sampled_from(MODELS))
    gpu = mig_gpu(model)
    chosen = draw(st.lists(st.sampled_from(gpu.profile_names), unique=True, max_size=len(gpu.profiles)))
    counts = {name: draw(st.integers(0, gpu.profile(name).max_instances + 2)) for name in chosen}
    return model, counts


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_property_ok_iff_oracle(request):
    model, counts = request
    gpu = mig_gpu(model)
    placement = check_layout(model, counts)
    assert placement.ok == oracle(gpu, counts)
    if placement.ok:
        assert_valid_placement(gpu, counts, placement)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests(), st.data())
def test_property_monotone(request, data):
    model, counts = request
    gpu = mig_gpu(model)
    placement = check_layout(model, counts)
    name = data.draw(st.sampled_from(gpu.profile_names))
    more = {**counts, name: counts.get(name, 0) + 1}
    if not placement.ok:
        # Adding an instance to a mix that does not fit never makes it fit.
        assert not check_layout(model, more).ok
    else:
        # Removing an instance from a mix that fits keeps it fitting.
        present = [n for n, c in counts.items() if c]
        if present:
            drop = data.draw(st.sampled_from(present))
            assert check_layout(model, {**counts, drop: counts[drop] - 1}).ok


# --------------------------------------------------------------------------- known cases


@pytest.mark.parametrize(
    "model, counts, ok, reason",
    [
        ("A100-40GB", {"3g.20gb": 1, "4g.20gb": 1}, True, None),
        ("A100-40GB", {"4g.20gb": 1, "3g.20gb": 1}, True, None),
        ("A100-40GB", {"3g.20gb": 2, "1g.5gb": 1}, False, "memory slices needed 9 > 8 on A100-40GB"),
        ("A100-40GB", {"1g.10gb": 4}, True, None),
        ("A100-40GB", {"1g.10gb": 4, "1g.5gb": 1}, False, "memory slices needed 9 > 8"),
        ("H100-80GB", {"1g.10gb": 7}, True, None),
        ("H100-80GB", {"1g.20gb": 4}, True, None),
        ("H100-80GB", {"1g.20gb": 4, "1g.10gb": 1}, False, "memory slices needed 9 > 8 on H100-80GB"),
        ("H100-80GB", {"2g.20gb": 3, "1g.10gb": 1}, True, None),
        ("H100-80GB", {"2g.20gb": 3, "1g.20gb": 1}, True, None),
        ("H100-80GB", {"4g.40gb": 1, "2g.20gb": 2}, False, "compute slices needed 8 > 7 on H100-80GB"),
        ("H100-80GB", {"7g.80gb": 1, "1g.10gb": 1}, False, "compute slices needed 8 > 7"),
        ("H100-80GB", {"1g.10gb": 6, "1g.10gb+me": 1}, True, None),
        ("H100-80GB", {"1g.10gb+me": 2}, False, "1g.10gb+me: 2 requested, at most 1 per GPU"),
        ("H200-141GB", {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}, True, None),
        ("A30-24GB", {"2g.12gb": 2}, True, None),
        ("A30-24GB", {"1g.6gb+me": 1, "2g.12gb+me": 1}, False, "more than one +me instance"),
        ("A30-24GB", {"4g.24gb": 1, "1g.6gb": 1}, False, "compute slices needed 5 > 4 on A30-24GB"),
        ("A30-24GB", {}, True, None),
    ],
)
def test_known_cases(model, counts, ok, reason):
    placement = check_layout(model, counts)
    assert placement.ok is ok, placement.reason
    if ok:
        assert_valid_placement(mig_gpu(model), counts, placement)
    else:
        assert reason in placement.reason


def test_known_placement_starts():
    assert check_layout("H100-80GB", {"1g.20gb": 4}).placements == (
        ("1g.20gb", 0),
        ("1g.20gb", 2),
        ("1g.20gb", 4),
        ("1g.20gb", 6),
    )
    # 3g can only start at 0 or 4; with two 2g beside it, it must take 4.
    placement = check_layout("H100-80GB", {"3g.40gb": 1, "2g.20gb": 2})
    assert ("3g.40gb", 4) in placement.placements
    assert check_layout("A100-40GB", {"3g.20gb": 1, "4g.20gb": 1}).placements == (("4g.20gb", 0), ("3g.20gb", 4))


MIG_PARTED_ALL_BALANCED = {
    # NVIDIA/mig-parted deployments/systemd/config-default.yaml, "all-balanced".
    "A100-40GB": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
    "A100-80GB": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "H100-80GB": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "H200-141GB": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
    "A30-24GB": {"1g.6gb": 2, "2g.12gb": 1},
}


@pytest.mark.parametrize("model", MODELS)
def test_mig_parted_default_configs_fit(model):
    assert check_layout(model, MIG_PARTED_ALL_BALANCED[model]).ok
    for profile in mig_gpu(model).profiles:  # the "all-<profile>" configs
        assert check_layout(model, {profile.name: profile.max_instances}).ok, profile.name


# --------------------------------------------------------------------------- greedy is not enough


def first_fit(gpu: MigGpu, counts: dict[str, int], order: list[str]) -> bool:
    """Naive greedy: instances in a fixed profile order, each at its lowest free allowed start."""
    used: set[int] = set()
    for name in order:
        profile = gpu.profile(name)
        for _ in range(counts.get(name, 0)):
            for start in profile.starts:
                cells = set(range(start, start + profile.memory_slots))
                if not cells & used:
                    used |= cells
                    break
            else:
                return False
    return True


def test_first_fit_in_catalog_order_rejects_a_valid_mix():
    gpu = mig_gpu("H100-80GB")
    counts = {"1g.10gb": 3, "4g.40gb": 1}
    # Small profiles first take slices 0, 1, 2; the 4g can only start at 0.
    assert not first_fit(gpu, counts, list(gpu.profile_names))
    placement = check_layout("H100-80GB", counts)
    assert placement.ok
    assert placement.placements == (("4g.40gb", 0), ("1g.10gb", 4), ("1g.10gb", 5), ("1g.10gb", 6))


def test_first_fit_widest_first_rejects_a_valid_mix():
    gpu = mig_gpu("H100-80GB")
    counts = {"3g.40gb": 1, "2g.20gb": 2}
    widest_first = sorted(gpu.profile_names, key=lambda n: -gpu.profile(n).memory_slots)
    # The 3g takes slices 0-3; the second 2g then finds no free start (0, 2, 4 only).
    assert not first_fit(gpu, counts, widest_first)
    assert check_layout("H100-80GB", counts).ok


def _toy_gpu() -> MigGpu:
    """A made-up 4-slice geometry where counting rules pass but no placement exists."""
    data = mig_gpu("A30-24GB").model_dump(by_alias=True)
    data.update(
        name="TOY-4",
        profiles=[
            dict(name="1g.5gb", memorySlots=1, computeSlices=1, maxInstances=3, starts=[0, 1, 2], memoryGB=5,
                 memoryGiB=None, mediaExtensions=False),
            dict(name="2g.10gb", memorySlots=2, computeSlices=2, maxInstances=1, starts=[0], memoryGB=10,
                 memoryGiB=None, mediaExtensions=False),
        ],
    )
    return MigGpu.model_validate(data)


def test_no_placement_reason_on_a_custom_geometry():
    toy = _toy_gpu()
    placement = check_layout(toy, {"2g.10gb": 1, "1g.5gb": 2})
    assert not placement.ok
    assert placement.reason.startswith("no non-overlapping placement exists on TOY-4")
    assert "2g.10gb (2 slices) can only start at 0" in placement.reason
    assert "1g.5gb (1 slice) can only start at 0, 1 or 2" in placement.reason
    assert placement.ok == oracle(toy, {"2g.10gb": 1, "1g.5gb": 2})
    assert check_layout(toy, {"2g.10gb": 1, "1g.5gb": 1}).ok
    assert set(valid_layouts(toy)) == {
        MigLayout(c)
        for c in ({}, {"1g.5gb": 1}, {"1g.5gb": 2}, {"1g.5gb": 3}, {"2g.10gb": 1}, {"2g.10gb": 1, "1g.5gb": 1})
    }
    assert set(maximal_layouts(toy)) == {MigLayout({"1g.5gb": 3}), MigLayout({"2g.10gb": 1, "1g.5gb": 1})}


# --------------------------------------------------------------------------- errors & normalization


def test_unknown_profile_raises_naming_the_model():
    with pytest.raises(UnknownMigProfileError) as info:
        check_layout("H100-80GB", {"3g.20gb": 1})
    assert info.value.model == "H100-80GB"
    assert "H100-80GB" in str(info.value) and "3g.40gb" in info.value.suggestions


def test_unknown_model_raises():
    with pytest.raises(UnknownMigModelError):
        check_layout("L4", {"1g.5gb": 1})


@pytest.mark.parametrize("value", [-1, 1.5, True, "2", None])
def test_bad_counts_raise(value):
    with pytest.raises(InvalidMigCountError) as info:
        check_layout("A30-24GB", {"1g.6gb": value})
    assert isinstance(info.value, HybridGpuError) and isinstance(info.value, ValueError)
    assert "1g.6gb" in str(info.value) and "A30-24GB" in str(info.value)


def test_counts_must_be_a_mapping():
    with pytest.raises(TypeError):
        check_layout("A30-24GB", [("1g.6gb", 1)])


def test_counts_are_normalized_and_results_cached():
    placement = check_layout("H100-80GB", {"3g.40gb": 1, "1g.10gb": 0, "1g.20gb": 2})
    assert list(placement.counts) == ["1g.20gb", "3g.40gb"]  # profile order, zeros dropped
    assert placement.counts == {"1g.20gb": 2, "3g.40gb": 1}
    assert placement.counts.as_dict() == {"1g.20gb": 2, "3g.40gb": 1}
    assert (placement.memory_slots_used, placement.compute_slices_used) == (8, 5)
    assert check_layout("H100-80GB", {"1g.20gb": 2, "3g.40gb": 1}) is placement
    assert placement.gpu is mig_gpu("H100-80GB")
    with pytest.raises(AttributeError):
        placement.ok = False  # frozen


def test_counts_accept_integer_like_values():
    class Two:
        def __index__(self):
            return 2

    assert check_layout("A30-24GB", {"2g.12gb": Two()}).ok


# --------------------------------------------------------------------------- layouts


@pytest.mark.parametrize("model", MODELS)
def test_valid_layouts_shape(model):
    layouts = valid_layouts(model)
    assert layouts[0] == MigLayout() and len(layouts[0]) == 0
    assert len(set(layouts)) == len(layouts)
    assert valid_layouts(model) is layouts  # cached
    for layout in layouts:
        assert isinstance(layout, MigLayout)
        assert all(count > 0 for count in layout.values())
        assert check_layout(model, layout).ok


@pytest.mark.parametrize("model", MODELS)
def test_maximal_layouts(model):
    gpu = mig_gpu(model)
    valid = set(valid_layouts(model))
    maximal = maximal_layouts(model)
    assert maximal and set(maximal) <= valid
    for layout in maximal:
        for name in gpu.profile_names:
            assert not check_layout(model, {**layout, name: layout[name] + 1}).ok
    # Every valid layout is contained in some maximal one.
    for layout in valid:
        assert any(all(layout[n] <= big[n] for n in layout) for big in maximal), layout


def test_known_maximal_layouts():
    maximal = set(maximal_layouts("H100-80GB"))
    assert MigLayout({"7g.80gb": 1}) in maximal
    assert MigLayout({"1g.10gb": 7}) in maximal
    assert MigLayout({"1g.20gb": 4}) in maximal
    assert MigLayout({"4g.40gb": 1, "3g.40gb": 1}) in maximal
    assert MigLayout({"1g.10gb": 2}) not in maximal
    assert set(maximal_layouts("A30-24GB")) >= {MigLayout({"4g.24gb": 1}), MigLayout({"1g.6gb": 4})}


def test_layout_counts():
    # Same shapes on every 8-slice model; numbers are stable facts of the data.
    for model in ("A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"):
        assert (len(valid_layouts(model)), len(maximal_layouts(model))) == (128, 44)
    assert (len(valid_layouts("A30-24GB")), len(maximal_layouts("A30-24GB"))) == (20, 8)


def test_mig_layout_is_counter_like():
    layout = MigLayout({"1g.10gb": 2, "3g.40gb": 1, "2g.20gb": 0})
    assert layout["1g.10gb"] == 2 and layout["4g.40gb"] == 0
    assert "2g.20gb" not in layout and "1g.10gb" in layout
    assert layout.get("4g.40gb") is None and layout.get("4g.40gb", 7) == 7
    assert len(layout) == 2 and layout.total == 3
    assert sorted(layout.elements()) == ["1g.10gb", "1g.10gb", "3g.40gb"]
    assert layout == {"1g.10gb": 2, "3g.40gb": 1} == MigLayout([("3g.40gb", 1), ("1g.10gb", 2)])
    assert hash(layout) == hash(MigLayout({"3g.40gb": 1, "1g.10gb": 2}))
    assert {layout: 1}[MigLayout({"3g.40gb": 1, "1g.10gb": 2})] == 1
    with pytest.raises(ValueError):
        MigLayout({"1g.10gb": -1})
    with pytest.raises(TypeError):
        layout["1g.10gb"] = 3  # read-only


# --------------------------------------------------------------------------- diagram


def test_slot_diagram_one_gpu():
    placement = check_layout("H100-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})
    assert slot_diagram(placement) == ["|2g.20gb        |1g.10gb|1g.10gb|3g.40gb                        |"]
    assert len(slot_header("H100-80GB")) == len(slot_diagram(placement)[0])


def test_slot_diagram_free_slices_and_short_labels():
    placement = check_layout("A100-40GB", {"1g.5gb+me": 1, "1g.10gb": 1})
    line = slot_diagram(placement, cell_width=4)[0]
    assert line == "|1g.10gb  |1g+m|free|free|free|free|free|"
    assert slot_header("A100-40GB", cell_width=4) == "|0   |1   |2   |3   |4   |5   |6   |7   |"
    assert slot_diagram(check_layout("A30-24GB", {}), cell_width=2) == ["|fr|fr|fr|fr|"]


def test_slot_diagram_many_gpus_one_line_each():
    placements = [check_layout("H100-80GB", {"7g.80gb": 1}), check_layout("A30-24GB", {"2g.12gb": 2})]
    lines = slot_diagram(placements)
    assert lines == [
        "|7g.80gb" + " " * (8 * 7 + 7 - 7) + "|",
        "|2g.12gb        |2g.12gb        |",
    ]
    for line, p in zip(lines, placements):
        assert len(line) == p.gpu.memory_slots * 8 + 1


def test_slot_diagram_refuses_a_layout_that_does_not_fit():
    with pytest.raises(ValueError, match="memory slices needed 9 > 8"):
        slot_diagram(check_layout("H100-80GB", {"1g.20gb": 4, "1g.10gb": 1}))
    with pytest.raises(ValueError, match="cell_width"):
        slot_diagram(check_layout("H100-80GB", {}), cell_width=0)


def test_check_latency_budget():
    # Not a benchmark: a loose guard that an uncached check stays far below 1 ms.
    import time

    from hybridgpu.mig import placement as module

    gpu = mig_gpu("H100-80GB")
    vectors = list(itertools.product(*[range(p.max_instances + 1) for p in gpu.profiles]))[:500]
    module._check_vector.cache_clear()
    start = time.perf_counter()
    for vector in vectors:
        check_layout("H100-80GB", dict(zip(gpu.profile_names, vector)))
    per_check = (time.perf_counter() - start) / len(vectors)
    assert per_check < 1e-3, f"{per_check * 1e6:.0f} us per uncached check"
    assert math.isfinite(per_check)
