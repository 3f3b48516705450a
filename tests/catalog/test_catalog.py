"""Tests of the GPU catalog (hybridgpu.catalog): packaged data, lookups, validation, prices.

Plain pytest; no Pulumi.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hybridgpu.catalog import (
    GPU_MODELS_FILE,
    INSTANCE_TYPES_FILE,
    Catalog,
    CatalogError,
    InstanceType,
    UnknownGpuModelError,
    UnknownInstanceFamilyError,
    UnknownInstanceTypeError,
    load_catalog,
)
from hybridgpu.errors import HybridGpuError
from tests.helpers import examples

EXPECTED_SIZES = {
    "g4dn": {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "metal"},
    "g5": {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
    "g6": {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
    "g6e": {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
    "p4d": {"24xlarge"},
    "p4de": {"24xlarge"},
    "p5": {"4xlarge", "48xlarge"},
    "p5e": {"48xlarge"},
    "p5en": {"48xlarge"},
    "gr6": {"4xlarge", "8xlarge"},
    "g7e": {"2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge"},
    "p6-b200": {"48xlarge"},
    "p6-b300": {"48xlarge"},
}

EXPECTED_GPU_MODELS = {"T4", "A10G", "L4", "L40S", "A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "B200-180GB", "B300-288GB", "RTX-PRO-6000-96GB"}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture()
def data_copy(tmp_path: Path) -> Path:
    """A writable copy of the packaged data files in a temp directory."""
    data = resources.files("hybridgpu.catalog").joinpath("data")
    for name in (GPU_MODELS_FILE, INSTANCE_TYPES_FILE):
        (tmp_path / name).write_text(data.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


def _edit(directory: Path, file: str, edit) -> None:
    path = directory / file
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _entry(doc: dict, key: str, name: str) -> dict:
    return next(e for e in doc[key] if e["name"] == name)


# --------------------------------------------------------------------------- packaged data


def test_loads_and_is_cached(catalog: Catalog) -> None:
    assert load_catalog() is load_catalog()
    assert len(catalog.instance_types) == sum(len(s) for s in EXPECTED_SIZES.values())


def test_every_family_with_expected_sizes(catalog: Catalog) -> None:
    assert catalog.families() == set(EXPECTED_SIZES)
    for family, sizes in EXPECTED_SIZES.items():
        members = catalog.family(family)
        assert {it.size for it in members} == sizes, family
        assert all(it.family == family and it.name.startswith(family + ".") for it in members)


def test_required_gpu_models_present(catalog: Catalog) -> None:
    names = {m.name for m in catalog.gpu_models}
    assert EXPECTED_GPU_MODELS <= names
    for model in catalog.gpu_models:
        assert model.vendor == "nvidia"
        assert model.product_label and model.driver_memory_mib > 0


def test_p5_48xlarge(catalog: Catalog) -> None:
    it = catalog.instance_type("p5.48xlarge")
    assert (it.gpu_model, it.gpu_count, it.vcpu, it.memory_gib) == ("H100-80GB", 8, 192, 2048)
    assert it.efa_supported and it.max_efa_interfaces == 32
    assert it.gpu_memory_gib == 640
    assert it.network_gbps == 3200
    gpu = catalog.gpu_model_of("p5.48xlarge")
    assert gpu.karpenter_gpu_name == "h100"
    assert gpu.product_label == "NVIDIA-H100-80GB-HBM3"
    assert gpu.architecture == "Hopper" and gpu.mig_capable


def test_p4d_24xlarge(catalog: Catalog) -> None:
    it = catalog.instance_type("p4d.24xlarge")
    assert (it.gpu_model, it.gpu_count, it.vcpu, it.memory_gib) == ("A100-40GB", 8, 96, 1152)
    assert it.efa_supported and it.max_efa_interfaces == 4
    assert catalog.gpu_model("A100-40GB").product_label == "NVIDIA-A100-SXM4-40GB"


def test_g5_xlarge(catalog: Catalog) -> None:
    it = catalog.instance_type("g5.xlarge")
    assert (it.gpu_model, it.gpu_count, it.vcpu, it.memory_gib) == ("A10G", 1, 4, 16)
    assert it.gpu_memory_gib == 24
    assert catalog.gpu_model("A10G").memory_gb == 24
    assert not it.efa_supported and it.max_efa_interfaces == 0


def test_other_well_known_facts(catalog: Catalog) -> None:
    assert catalog.instance_type("p5en.48xlarge").max_efa_interfaces == 16
    assert catalog.instance_type("p5e.48xlarge").gpu_model == "H200-141GB"
    p5_small = catalog.instance_type("p5.4xlarge")
    assert (p5_small.gpu_count, p5_small.gpu_model) == (1, "H100-80GB")
    assert catalog.instance_type("g4dn.12xlarge").gpu_count == 4
    assert catalog.instance_type("g6e.48xlarge").gpu_memory_gib == 384
    assert catalog.gpu_model("T4").memory_mib == 16384
    assert catalog.gpu_model("T4").driver_memory_mib == 15360
    assert catalog.gpu_model("A100-80GB").karpenter_gpu_name == "a100"


def test_prices_are_post_june_2025_cut(catalog: Catalog) -> None:
    p5 = catalog.instance_type("p5.48xlarge")
    assert p5.price_region == "us-east-1"
    assert p5.on_demand_usd_per_hour == pytest.approx(55.04)
    assert "June 2025" in (p5.price_note or "")
    assert catalog.instance_type("p4d.24xlarge").on_demand_usd_per_hour < 25
    assert catalog.instance_type("g5.xlarge").usd_per_gpu_hour == pytest.approx(1.006)


def test_every_entry_consistent(catalog: Catalog) -> None:
    for it in catalog.instance_types:
        model = catalog.gpu_model(it.gpu_model)
        assert it.gpu_memory_gib == pytest.approx(it.gpu_count * model.memory_gb, abs=0.5)
        assert it.efa_supported == (it.max_efa_interfaces > 0)
        assert it.source and it.source_date
        price = it.on_demand_usd_per_hour
        assert price is None or (math.isfinite(price) and price > 0)
        assert it.price_note or price is not None  # a missing price is always explained
        assert it.verified or it.unverified_fields


def test_round_trip_by_alias(catalog: Catalog) -> None:
    it = catalog.instance_type("g6.xlarge")
    dumped = it.model_dump(by_alias=True)
    assert "gpuMemoryGiB" in dumped and "onDemandUsdPerHour" in dumped
    assert InstanceType.model_validate(dumped) == it


def test_models_are_frozen(catalog: Catalog) -> None:
    it = catalog.instance_type("g5.xlarge")
    with pytest.raises(ValidationError, match="frozen"):
        it.vcpu = 8  # type: ignore[misc]


# --------------------------------------------------------------------------- lookups


def test_unknown_instance_type_suggests(catalog: Catalog) -> None:
    with pytest.raises(UnknownInstanceTypeError) as info:
        catalog.instance_type("p5.48xlarg")
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, HybridGpuError)
    assert "p5.48xlarge" in err.suggestions
    assert "p5.48xlarge" in str(err)


def test_unknown_instance_type_wrong_case_suggests(catalog: Catalog) -> None:
    with pytest.raises(UnknownInstanceTypeError) as info:
        catalog.instance_type("G5.XLARGE")
    assert info.value.suggestions[0] == "g5.xlarge"


def test_unknown_gpu_model_and_family(catalog: Catalog) -> None:
    with pytest.raises(UnknownGpuModelError) as info:
        catalog.gpu_model("h100")
    assert "H100-80GB" in info.value.suggestions
    with pytest.raises(UnknownInstanceFamilyError) as finfo:
        catalog.family("g7x")
    assert isinstance(finfo.value, KeyError)
    with pytest.raises(UnknownInstanceFamilyError):
        catalog.gpu_instance_types(families=["p9"])
    with pytest.raises(UnknownGpuModelError):
        catalog.gpu_instance_types(gpu_names=["b900"])


def test_gpu_instance_types_filters(catalog: Catalog) -> None:
    assert [it.name for it in catalog.gpu_instance_types(gpu_names="a100")] == ["p4d.24xlarge", "p4de.24xlarge"]
    assert [it.name for it in catalog.gpu_instance_types(gpu_names=["A100-80GB"])] == ["p4de.24xlarge"]
    h = catalog.gpu_instance_types(gpu_names=["h100", "h200"], gpu_counts=8)
    assert {it.name for it in h} == {"p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"}
    assert catalog.gpu_instance_types(families="g5", gpu_counts=[4]) == [
        catalog.instance_type("g5.12xlarge"),
        catalog.instance_type("g5.24xlarge"),
    ]
    assert catalog.gpu_instance_types() == list(catalog.instance_types)
    assert catalog.gpu_instance_types(gpu_counts=[]) == []


def test_gpu_instance_types_answers_are_remembered_but_not_shared(catalog: Catalog) -> None:
    # Validation and the program ask the same questions once per NodePool; a remembered answer is
    # the same answer, and a caller changing its list changes no later answer.
    first = catalog.gpu_instance_types(families=["p5", "g5"], gpu_counts=[8, 1])
    again = catalog.gpu_instance_types(families=("g5", "p5"), gpu_counts=(1, 8))
    assert first == again and first is not again
    first.clear()
    assert catalog.gpu_instance_types(families=["p5", "g5"], gpu_counts=[8, 1]) == again
    # Errors are not remembered as answers.
    for _ in range(2):
        with pytest.raises(UnknownInstanceFamilyError):
            catalog.gpu_instance_types(families=["p9"])


# --------------------------------------------------------------------------- prices


def test_price_override(catalog: Catalog) -> None:
    before = catalog.instance_type("g5.xlarge").on_demand_usd_per_hour
    overridden = catalog.with_price_overrides({"g5.xlarge": 0.5, "p5e.48xlarge": 40.0})
    assert overridden is not catalog
    assert overridden.instance_type("g5.xlarge").on_demand_usd_per_hour == 0.5
    assert overridden.instance_type("p5e.48xlarge").on_demand_usd_per_hour == 40.0
    assert "Overridden" in (overridden.instance_type("g5.xlarge").price_note or "")
    # the original (cached) catalog is untouched, other entries carried over
    assert catalog.instance_type("g5.xlarge").on_demand_usd_per_hour == before
    assert load_catalog().instance_type("g5.xlarge").on_demand_usd_per_hour == before
    assert overridden.instance_type("g6.xlarge") == catalog.instance_type("g6.xlarge")
    assert catalog.with_price_overrides({}) is catalog


def test_price_override_rejects_bad_input(catalog: Catalog) -> None:
    with pytest.raises(UnknownInstanceTypeError):
        catalog.with_price_overrides({"g5.xlarg": 1.0})
    for bad in (-1.0, float("nan"), float("inf"), "1.0", True):
        with pytest.raises(ValueError):
            catalog.with_price_overrides({"g5.xlarge": bad})  # type: ignore[dict-item]


# --------------------------------------------------------------------------- bad data files


def test_override_dir_with_pristine_copy_loads(data_copy: Path, catalog: Catalog) -> None:
    copy = load_catalog(data_copy)
    assert copy is not catalog
    assert copy.instance_types == catalog.instance_types
    assert copy.instance_types_file == str(data_copy / INSTANCE_TYPES_FILE)


def test_rejects_unknown_gpu_model(data_copy: Path) -> None:
    _edit(data_copy, INSTANCE_TYPES_FILE, lambda d: _entry(d, "instanceTypes", "g5.xlarge").update(gpuModel="A10X"))
    with pytest.raises(CatalogError) as info:
        load_catalog(data_copy)
    err = info.value
    assert err.file == str(data_copy / INSTANCE_TYPES_FILE)
    assert (err.entry, err.field) == ("g5.xlarge", "gpuModel")
    assert "A10G" in str(err)


def test_rejects_wrong_gpu_memory(data_copy: Path) -> None:
    _edit(data_copy, INSTANCE_TYPES_FILE, lambda d: _entry(d, "instanceTypes", "p5.48xlarge").update(gpuMemoryGiB=600))
    with pytest.raises(CatalogError) as info:
        load_catalog(data_copy)
    assert (info.value.entry, info.value.field) == ("p5.48xlarge", "gpuMemoryGiB")
    assert INSTANCE_TYPES_FILE in info.value.file


def test_rejects_gpu_model_memory_change(data_copy: Path) -> None:
    # Changing a model's memory makes every instance type with that GPU inconsistent.
    _edit(data_copy, GPU_MODELS_FILE, lambda d: _entry(d, "gpuModels", "L4").update(memoryGB=32))
    with pytest.raises(CatalogError) as info:
        load_catalog(data_copy)
    assert {issue.entry for issue in info.value.issues} == {f"{f}.{s}" for f in ("g6", "gr6") for s in EXPECTED_SIZES[f]}
    assert {issue.field for issue in info.value.issues} == {"gpuMemoryGiB"}


def test_rejects_family_mismatch(data_copy: Path) -> None:
    _edit(data_copy, INSTANCE_TYPES_FILE, lambda d: _entry(d, "instanceTypes", "g6e.xlarge").update(family="g6"))
    with pytest.raises(CatalogError) as info:
        load_catalog(data_copy)
    assert (info.value.entry, info.value.field) == ("g6e.xlarge", "family")


def test_rejects_efa_mismatch(data_copy: Path) -> None:
    _edit(data_copy, INSTANCE_TYPES_FILE, lambda d: _entry(d, "instanceTypes", "p4d.24xlarge").update(maxEfaInterfaces=0))
    with pytest.raises(CatalogError) as info:
        load_catalog(data_copy)
    assert (info.value.entry, info.value.field) == ("p4d.24xlarge", "efaSupported")


def test_rejects_bad_field_values(data_copy: Path) -> None:
    def edit(doc: dict) -> None:
        _entry(doc, "instanceTypes", "g4dn.xlarge")["vcpu"] = -4
        _entry(doc, "instanceTypes", "g4dn.2xlarge")["sourceDate"] = "2026-13"
        _entry(doc, "instanceTypes", "g4dn.4xlarge")["colour"] = "blue"
        del _entry(doc, "instanceTypes", "g4dn.8xlarge")["priceRegion"]
        _entry(doc, "instanceTypes", "g5.xlarge")["gpu_count"] = 1

    _edit(data_copy, INSTANCE_TYPES_FILE, edit)
    with pytest.raises(CatalogError) as info:
        load_catalog(data_copy)
    found = {(issue.entry, issue.field) for issue in info.value.issues}
    assert found == {
        ("g4dn.xlarge", "vcpu"),
        ("g4dn.2xlarge", "sourceDate"),
        ("g4dn.4xlarge", "colour"),
        ("g4dn.8xlarge", "priceRegion"),
        ("g5.xlarge", "gpu_count"),
    }
    assert all(issue.file.endswith(INSTANCE_TYPES_FILE) for issue in info.value.issues)


def test_rejects_bad_gpu_model_entry(data_copy: Path) -> None:
    def edit(doc: dict) -> None:
        _entry(doc, "gpuModels", "T4")["migCapable"] = True
        _entry(doc, "gpuModels", "L4")["verified"] = True
        _entry(doc, "gpuModels", "L4")["unverifiedFields"] = ["tdpWatts"]

    _edit(data_copy, GPU_MODELS_FILE, edit)
    with pytest.raises(CatalogError) as info:
        load_catalog(data_copy)
    found = {(issue.entry, issue.field) for issue in info.value.issues}
    assert found == {("T4", "maxMigInstances"), ("L4", "verified")}
    assert info.value.file.endswith(GPU_MODELS_FILE)


def test_rejects_duplicate_names(data_copy: Path) -> None:
    def edit(doc: dict) -> None:
        doc["instanceTypes"].append(dict(_entry(doc, "instanceTypes", "g5.xlarge")))

    _edit(data_copy, INSTANCE_TYPES_FILE, edit)
    with pytest.raises(CatalogError) as info:
        load_catalog(data_copy)
    assert (info.value.entry, info.value.field) == ("g5.xlarge", "name")


def test_rejects_duplicate_yaml_keys_and_bad_yaml(data_copy: Path) -> None:
    path = data_copy / GPU_MODELS_FILE
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("    tdpWatts: 70\n", "    tdpWatts: 70\n    tdpWatts: 75\n", 1), encoding="utf-8")
    with pytest.raises(CatalogError, match="duplicate key"):
        load_catalog(data_copy)
    path.write_text("gpuModels: [unclosed\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="not valid YAML") as info:
        load_catalog(data_copy)
    assert info.value.file == str(path) and info.value.entry is None


def test_rejects_wrong_top_level_and_missing_file(data_copy: Path) -> None:
    (data_copy / INSTANCE_TYPES_FILE).write_text("instance_types: []\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="instanceTypes"):
        load_catalog(data_copy)
    (data_copy / INSTANCE_TYPES_FILE).unlink()
    with pytest.raises(CatalogError, match="cannot read") as info:
        load_catalog(data_copy)
    assert info.value.file.endswith(INSTANCE_TYPES_FILE)


def test_catalog_constructor_checks_consistency(catalog: Catalog) -> None:
    broken = catalog.instance_type("g5.xlarge").model_copy(update={"gpu_model": "nope"})
    with pytest.raises(CatalogError) as info:
        Catalog(gpu_models=catalog.gpu_models, instance_types=(broken,))
    assert (info.value.entry, info.value.field) == ("g5.xlarge", "gpuModel")


# --------------------------------------------------------------------------- properties


_FAMILIES = sorted(EXPECTED_SIZES)
_GPU_NAMES = sorted(EXPECTED_GPU_MODELS | {"a100", "h100", "h200", "t4", "l4", "l40s", "a10g"})


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    families=st.none() | st.lists(st.sampled_from(_FAMILIES), unique=True),
    gpu_names=st.none() | st.lists(st.sampled_from(_GPU_NAMES), unique=True),
    gpu_counts=st.none() | st.lists(st.sampled_from([1, 2, 3, 4, 8, 16]), unique=True),
)
def test_filter_matches_brute_force(catalog: Catalog, families, gpu_names, gpu_counts) -> None:
    got = catalog.gpu_instance_types(families=families, gpu_names=gpu_names, gpu_counts=gpu_counts)

    def gpu_ok(it: InstanceType) -> bool:
        if gpu_names is None:
            return True
        model = catalog.gpu_model(it.gpu_model)
        return any(n.lower() in (model.name.lower(), model.karpenter_gpu_name) for n in gpu_names)

    expected = [
        it
        for it in catalog.instance_types
        if (families is None or it.family in families)
        and gpu_ok(it)
        and (gpu_counts is None or it.gpu_count in gpu_counts)
    ]
    assert got == expected
    if gpu_counts is not None:
        assert all(it.gpu_count in gpu_counts for it in got)


@settings(max_examples=examples(100), deadline=None)
@given(prices=st.dictionaries(st.sampled_from(sorted(EXPECTED_SIZES)), st.floats(0, 500), max_size=5))
def test_price_override_only_touches_named_types(prices) -> None:
    catalog = load_catalog()
    mapping = {catalog.family(fam)[0].name: price for fam, price in prices.items()}
    overridden = catalog.with_price_overrides(mapping)
    for it in catalog.instance_types:
        new = overridden.instance_type(it.name)
        if it.name in mapping:
            assert new.on_demand_usd_per_hour == mapping[it.name]
        else:
            assert new == it


def test_data_files_are_package_data() -> None:
    data = resources.files("hybridgpu.catalog").joinpath("data")
    assert data.joinpath(GPU_MODELS_FILE).is_file()
    assert data.joinpath(INSTANCE_TYPES_FILE).is_file()
