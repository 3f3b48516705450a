"""Tests of the MIG profile catalog (hybridgpu.mig.profiles): packaged data, facts, lookups, validation.

Plain pytest; no Pulumi.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from hybridgpu.catalog import load_catalog
from hybridgpu.errors import HybridGpuError
from hybridgpu.mig.profiles import (
    MIG_PROFILES_FILE,
    MigDataError,
    MigGpu,
    MigProfile,
    UnknownMigModelError,
    UnknownMigProfileError,
    load_mig_models,
    mig_gpu,
    mig_models,
)

EXPECTED_MODELS = ["A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "A30-24GB"]

# Profile names per model, smallest first (NVIDIA MIG User Guide v580 tables 5-8).
EXPECTED_PROFILES = {
    "A100-40GB": ["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"],
    "A100-80GB": ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
    "H100-80GB": ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
    "H200-141GB": ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"],
    "A30-24GB": ["1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"],
}

# Instance counts of the "all-<profile>" configs in NVIDIA/mig-parted
# deployments/systemd/config-default.yaml (219e780d, 2026-02-18) = maxInstances.
MIG_PARTED_ALL_COUNTS = {
    "A100-40GB": {"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
    "A100-80GB": {"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    "H100-80GB": {"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    "H200-141GB": {
        "1g.18gb": 7, "1g.18gb+me": 1, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1,
    },
    "A30-24GB": {"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1},
}

# PCI device ids from the same mig-parted file (device-filter groups).
EXPECTED_DEVICE_IDS = {
    "A100-40GB": {"0x20B010DE", "0x20B110DE", "0x20F110DE"},
    "A100-80GB": {"0x20B210DE", "0x20B510DE"},
    "H100-80GB": {"0x233010DE", "0x233110DE"},
    "H200-141GB": {"0x233510DE", "0x233B10DE"},
    "A30-24GB": {"0x20B710DE"},
}

# nvidia-smi mig -lgipp on A100/H100: {starts}:size per kind of profile.
EIGHT_SLOT_GEOMETRY = {
    "1g": ((0, 1, 2, 3, 4, 5, 6), 1),
    "1g-double": ((0, 2, 4, 6), 2),
    "2g": ((0, 2, 4), 2),
    "3g": ((0, 4), 4),
    "4g": ((0,), 4),
    "7g": ((0,), 8),
}
# ... and on A30 (4 memory slices).
A30_GEOMETRY = {"1g.6gb": ((0, 1, 2, 3), 1), "2g.12gb": ((0, 2), 2), "4g.24gb": ((0,), 4)}


@pytest.fixture()
def data_copy(tmp_path: Path) -> Path:
    """A writable copy of the packaged MIG data file."""
    text = resources.files("hybridgpu.mig").joinpath("data").joinpath(MIG_PROFILES_FILE).read_text(encoding="utf-8")
    path = tmp_path / MIG_PROFILES_FILE
    path.write_text(text, encoding="utf-8")
    return path


def _edit(path: Path, edit) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(document["migModels"])
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


def _entry(entries: list, name: str) -> dict:
    return next(e for e in entries if e["name"] == name)


def _profile(entries: list, model: str, profile: str) -> dict:
    return next(p for p in _entry(entries, model)["profiles"] if p["name"] == profile)


# --------------------------------------------------------------------------- packaged data


def test_models_in_data_order():
    assert mig_models() == EXPECTED_MODELS
    assert [g.name for g in load_mig_models()] == EXPECTED_MODELS


def test_packaged_data_is_loaded_once():
    assert load_mig_models() is load_mig_models()
    assert mig_gpu("H100-80GB") is mig_gpu("H100-80GB")


@pytest.mark.parametrize("model", EXPECTED_MODELS)
def test_profile_names_in_order(model):
    gpu = mig_gpu(model)
    assert list(gpu.profile_names) == EXPECTED_PROFILES[model]
    assert [p.name for p in gpu.profiles] == EXPECTED_PROFILES[model]
    sizes = [(p.compute_slices, p.memory_slots) for p in gpu.profiles]
    assert sizes == sorted(sizes), "profiles must be listed smallest first"


@pytest.mark.parametrize("model", EXPECTED_MODELS)
def test_max_instances_match_mig_parted_all_configs(model):
    gpu = mig_gpu(model)
    assert {p.name: p.max_instances for p in gpu.profiles} == MIG_PARTED_ALL_COUNTS[model]


@pytest.mark.parametrize("model", EXPECTED_MODELS)
def test_device_filter_ids(model):
    assert set(mig_gpu(model).device_filter) == EXPECTED_DEVICE_IDS[model]


def test_h100_nvl_is_not_an_h100_80gb_device():
    # 0x232110DE (H100 NVL, 94 GB) has other profiles (1g.12gb ...): it must not be
    # selected by the H100-80GB device-filter.
    for model in mig_models():
        assert "0x232110DE" not in mig_gpu(model).device_filter


def test_device_ids_are_unique_across_models():
    ids = [i for m in mig_models() for i in mig_gpu(m).device_filter]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("model", [m for m in EXPECTED_MODELS if m != "A30-24GB"])
def test_eight_slot_geometry(model):
    gpu = mig_gpu(model)
    assert (gpu.memory_slots, gpu.compute_slices) == (8, 7)
    for profile in gpu.profiles:
        if profile.compute_slices == 1:
            kind = "1g-double" if profile.memory_slots == 2 else "1g"
        else:
            kind = f"{profile.compute_slices}g"
        assert (profile.starts, profile.memory_slots) == EIGHT_SLOT_GEOMETRY[kind], profile.name


def test_a30_geometry():
    gpu = mig_gpu("A30-24GB")
    assert (gpu.memory_slots, gpu.compute_slices) == (4, 4)
    for profile in gpu.profiles:
        assert (profile.starts, profile.memory_slots) == A30_GEOMETRY[profile.base_name], profile.name


@pytest.mark.parametrize("model", EXPECTED_MODELS)
def test_media_extension_profiles_share_the_base_geometry(model):
    gpu = mig_gpu(model)
    me = [p for p in gpu.profiles if p.media_extensions]
    assert me, "every model has at least one +me profile"
    for profile in me:
        base = gpu.profile(profile.base_name)
        assert profile.name.endswith("+me") and not base.media_extensions
        assert (profile.memory_slots, profile.compute_slices, profile.starts) == (
            base.memory_slots,
            base.compute_slices,
            base.starts,
        )
        assert profile.max_instances == 1


@pytest.mark.parametrize("model", EXPECTED_MODELS)
def test_memory_figures(model):
    gpu = mig_gpu(model)
    for profile in gpu.profiles:
        assert profile.name.split(".")[1].startswith(f"{profile.memory_gb}gb")
        if profile.memory_gib is not None:
            # nvidia-smi reports a bit less than the nominal GB (GiB, reserved memory).
            assert 0.8 * profile.memory_gb < profile.memory_gib <= profile.memory_gb


def test_full_gpu_profile_covers_every_slice():
    for model in mig_models():
        gpu = mig_gpu(model)
        full = gpu.profiles[-1]
        assert (full.memory_slots, full.compute_slices, full.starts) == (gpu.memory_slots, gpu.compute_slices, (0,))


def test_every_entry_has_sources_and_a_date():
    for gpu in load_mig_models():
        assert gpu.source and all(s.strip() for s in gpu.source)
        assert any(s.startswith("https://docs.nvidia.com/datacenter/tesla/mig-user-guide/") for s in gpu.source)
        assert any("NVIDIA/mig-parted" in s for s in gpu.source)
        assert gpu.source_date.startswith("20")


def test_h200_starts_are_flagged_unverified():
    h200 = mig_gpu("H200-141GB")
    assert h200.verified is False
    assert "profiles.starts" in h200.unverified_fields


def test_models_agree_with_the_gpu_catalog():
    catalog = load_catalog()
    for gpu in load_mig_models():
        model = catalog.gpu_model(gpu.name)
        assert model.mig_capable
        assert model.max_mig_instances == gpu.compute_slices
        full = gpu.profiles[-1]
        assert full.memory_gb == model.memory_gb


#: MIG-capable GPU models of the catalog whose MIG geometry hybridgpu does not have yet (added 2026-11-27
#: with p6-b200, p6-b300 and g7e; the catalog marks their MIG instance counts unverified): a MIG layout
#: naming one is refused with the models that have data, not planned on guessed slots.
NO_MIG_DATA = {"B200-180GB", "B300-288GB", "RTX-PRO-6000-96GB"}


def test_mig_capable_catalog_models_have_mig_data():
    catalog = load_catalog()
    capable = {m.name for m in catalog.gpu_models if m.mig_capable}
    assert capable - NO_MIG_DATA == set(mig_models())
    for model in NO_MIG_DATA:
        with pytest.raises(UnknownMigModelError, match=f"no MIG geometry for GPU model '{model}'.*models with MIG data: A100-40GB"):
            mig_gpu(model)


def test_models_are_frozen():
    gpu = mig_gpu("A30-24GB")
    with pytest.raises(ValidationError):
        gpu.memory_slots = 8
    with pytest.raises(ValidationError):
        gpu.profiles[0].max_instances = 9


def test_slot_mask():
    profile = mig_gpu("H100-80GB").profile("3g.40gb")
    assert profile.slot_mask(4) == 0b11110000
    assert profile.width == 4
    with pytest.raises(ValueError, match="cannot start at memory slice 2"):
        profile.slot_mask(2)


# --------------------------------------------------------------------------- lookups


def test_unknown_model_lists_known_models():
    with pytest.raises(UnknownMigModelError) as info:
        mig_gpu("H100")
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, HybridGpuError)
    assert "H100-80GB" in err.suggestions
    for model in EXPECTED_MODELS:
        assert model in str(err)


def test_not_mig_capable_model_is_unknown():
    with pytest.raises(UnknownMigModelError, match="no MIG geometry for GPU model 'T4'"):
        mig_gpu("T4")


def test_unknown_profile_names_model_and_suggests():
    gpu = mig_gpu("H100-80GB")
    with pytest.raises(UnknownMigProfileError) as info:
        gpu.profile("3g.20gb")
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, HybridGpuError)
    assert err.model == "H100-80GB"
    assert err.suggestions[0] == "3g.40gb"
    message = str(err)
    assert "H100-80GB" in message and "'3g.20gb'" in message
    for name in EXPECTED_PROFILES["H100-80GB"]:
        assert name in message


@pytest.mark.parametrize(
    "typo, expected", [("MIG 1g.10gb", "1g.10gb"), ("1G.10GB", "1g.10gb"), ("1g.10gb+m", "1g.10gb+me")]
)
def test_profile_suggestions(typo, expected):
    with pytest.raises(UnknownMigProfileError) as info:
        mig_gpu("A100-80GB").profile(typo)
    assert expected in info.value.suggestions


def test_has_profile():
    gpu = mig_gpu("A30-24GB")
    assert gpu.has_profile("2g.12gb+me")
    assert not gpu.has_profile("3g.18gb")


# --------------------------------------------------------------------------- validation


def test_copy_of_the_data_loads(data_copy):
    assert load_mig_models(data_copy) == load_mig_models()


def _load_error(path: Path) -> MigDataError:
    with pytest.raises(MigDataError) as info:
        load_mig_models(path)
    return info.value


def test_unknown_profile_field_is_named(data_copy):
    _edit(data_copy, lambda e: _profile(e, "A100-40GB", "2g.10gb").update(size=2))
    err = _load_error(data_copy)
    assert (err.file, err.entry, err.field) == (str(data_copy), "A100-40GB", "profiles[2g.10gb].size")
    assert "unknown field" in str(err)


def test_snake_case_keys_are_rejected(data_copy):
    _edit(data_copy, lambda e: _entry(e, "A30-24GB").update(memory_slots=_entry(e, "A30-24GB").pop("memorySlots")))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("A30-24GB", "memory_slots")


def test_start_past_last_slice(data_copy):
    _edit(data_copy, lambda e: _profile(e, "H100-80GB", "3g.40gb").update(starts=[0, 4, 6]))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("H100-80GB", "profiles[3g.40gb].starts")
    assert "run past memory slice 7" in str(err)


def test_media_extension_profile_allows_one_instance(data_copy):
    _edit(data_copy, lambda e: _profile(e, "A30-24GB", "1g.6gb+me").update(maxInstances=2))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("A30-24GB", "profiles[1g.6gb+me].maxInstances")


def test_media_extension_geometry_must_match_base(data_copy):
    _edit(data_copy, lambda e: _profile(e, "A100-80GB", "1g.10gb+me").update(starts=[0, 2, 4, 6], maxInstances=1))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("A100-80GB", "profiles[1g.10gb+me].starts")


def test_name_must_match_compute_and_memory(data_copy):
    _edit(data_copy, lambda e: _profile(e, "H200-141GB", "2g.35gb").update(computeSlices=3))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("H200-141GB", "profiles[2g.35gb].computeSlices")


def test_bad_value_names_field_and_value(data_copy):
    _edit(data_copy, lambda e: _profile(e, "A100-40GB", "1g.5gb").update(memoryGiB=-1))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("A100-40GB", "profiles[1g.5gb].memoryGiB")
    assert "-1" in str(err)


def test_every_problem_is_reported(data_copy):
    def edit(entries):
        _profile(entries, "A100-40GB", "1g.5gb").pop("starts")
        _entry(entries, "A30-24GB")["pciDevices"][0]["id"] = "0x20b710de"

    _edit(data_copy, edit)
    err = _load_error(data_copy)
    fields = {(i.entry, i.field) for i in err.issues}
    assert ("A100-40GB", "profiles[1g.5gb].starts") in fields
    assert ("A30-24GB", "pciDevices[0].id") in fields
    assert len(err.issues) == 2


def test_duplicate_model_name(data_copy):
    _edit(data_copy, lambda e: e.append(dict(_entry(e, "A30-24GB"))))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("A30-24GB", "name")


def test_verified_needs_no_unverified_fields(data_copy):
    _edit(data_copy, lambda e: _entry(e, "H200-141GB").update(verified=True))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("H200-141GB", "verified")


def test_unverified_fields_must_name_fields(data_copy):
    _edit(data_copy, lambda e: _entry(e, "H200-141GB").update(unverifiedFields=["profiles.placement"]))
    err = _load_error(data_copy)
    assert (err.entry, err.field) == ("H200-141GB", "unverifiedFields")


@pytest.mark.parametrize(
    "text, message",
    [
        ("migModels: [\n", "not valid YAML"),
        ("gpuModels: []\n", "single key 'migModels'"),
        ("migModels: []\n", "non-empty list"),
        ("migModels:\n  - name: A\n    name: B\n", "duplicate key"),
    ],
)
def test_file_level_errors(tmp_path, text, message):
    path = tmp_path / "mig.yaml"
    path.write_text(text, encoding="utf-8")
    err = _load_error(path)
    assert message in str(err)
    assert err.file == str(path)


def test_missing_file(tmp_path):
    err = _load_error(tmp_path / "absent.yaml")
    assert "cannot read the file" in str(err)


def test_profile_model_rejects_inconsistent_name():
    with pytest.raises(ValidationError, match="name '2g.10gb' says 2"):
        MigProfile(
            name="2g.10gb",
            memorySlots=2,
            computeSlices=1,
            maxInstances=1,
            starts=(0,),
            memoryGB=10,
            memoryGiB=None,
            mediaExtensions=False,
        )


def test_gpu_model_rejects_starts_past_a_smaller_gpu():
    data = mig_gpu("A30-24GB").model_dump(by_alias=True)
    data["memorySlots"] = 2
    with pytest.raises(ValidationError, match="run past memory slice 1"):
        MigGpu.model_validate(data)
