"""`hybridgpu mig ...` commands."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.cli.mig import parse_counts

runner = CliRunner(env={"COLUMNS": "200"})


def test_check_fits_draws_slots():
    result = runner.invoke(app, ["mig", "check", "H100-80GB", "3g.40gb=1", "2g.20gb=2"])
    assert result.exit_code == 0, result.output
    assert "fits on one H100-80GB" in result.output
    assert "|2g.20gb        |2g.20gb        |3g.40gb                        |" in result.output
    assert "3g.40gb@4" in result.output


def test_check_does_not_fit_gives_reason_and_exit_1():
    result = runner.invoke(app, ["mig", "check", "A100-40GB", "3g.20gb=2", "1g.5gb"])
    assert result.exit_code == 1
    assert "does not fit" in result.output and "memory slices needed 9 > 8" in result.output


def test_unknown_profile_exit_2_names_model():
    result = runner.invoke(app, ["mig", "check", "H100-80GB", "3g.20gb=1"])
    assert result.exit_code == 2
    assert "H100-80GB" in result.output and "3g.40gb" in result.output


def test_profiles_table():
    result = runner.invoke(app, ["mig", "profiles", "A30-24GB"])
    assert result.exit_code == 0 and "2g.12gb+me" in result.output


@pytest.mark.parametrize("bad", ["=2", "1g.10gb=x", "1g.10gb=-1"])
def test_parse_counts_rejects(bad):
    with pytest.raises(ValueError):
        parse_counts([bad])


def test_parse_counts_sums_and_defaults():
    assert parse_counts(["1g.10gb", "1g.10gb=2", "3g.40gb=0"]) == {"1g.10gb": 3, "3g.40gb": 0}


def test_plan_worked_example_is_optimal():
    result = runner.invoke(app, ["mig", "plan", "H100-80GB", "1g.10gb=20", "3g.40gb=6", "--whole", "3"])
    assert result.exit_code == 0, result.output
    assert "9 x H100-80GB: 6 with MIG + 3 whole" in result.output
    assert "5 GPUs |1g.10gb|1g.10gb|1g.10gb|1g.10gb|3g.40gb" in result.output


def test_plan_yaml_is_mig_parted_v1():
    import yaml

    result = runner.invoke(app, ["mig", "plan", "A30-24GB", "2g.12gb=3", "--pool", "a30:4", "--yaml"])
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.output)
    assert doc["version"] == "v1"
    for entries in doc["mig-configs"].values():
        for entry in entries:
            assert ("mig-devices" in entry) == entry["mig-enabled"]


def test_plan_not_enough_gpus_says_how_many():
    result = runner.invoke(app, ["mig", "plan", "H100-80GB", "1g.10gb=20", "3g.40gb=6", "--whole", "3", "--pool", "dgx:8"])
    assert result.exit_code == 2
    assert "needs 9" in result.output


@pytest.mark.parametrize("bad", ["dgx", "dgx:eight", ":8"])
def test_bad_pool_spec(bad):
    result = runner.invoke(app, ["mig", "plan", "H100-80GB", "1g.10gb=1", "--pool", bad])
    assert result.exit_code == 2 and "pool" in result.output
