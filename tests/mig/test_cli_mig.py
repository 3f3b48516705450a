"""`hybridgpu mig ...` commands."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.cli_mig import parse_counts

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
