"""Finding the source checkout's repository tooling (hybridgpu.checkout), and its messages."""

from __future__ import annotations

import pytest

from hybridgpu.checkout import CheckoutFileMissing, find_checkout
from hybridgpu.errors import HybridGpuError


def test_found_at_or_above_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "policies.md").write_text("x")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert find_checkout("docs/policies.md") == tmp_path.resolve()


def test_an_explicit_root_must_hold_the_file(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "policies.md").write_text("x")
    assert find_checkout("docs/policies.md", root=tmp_path) == tmp_path.resolve()
    with pytest.raises(CheckoutFileMissing, match=r"tools/schemas/validate-crds.mjs does not exist: the schema check needs"):
        find_checkout("tools/schemas/validate-crds.mjs", root=tmp_path, needed_by="the schema check")


def test_missing_says_what_where_and_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckoutFileMissing) as info:
        find_checkout("docs/config-reference.md", needed_by="python -m hybridgpu.docs_gen --check", option="--root DIR")
    message = str(info.value)
    assert message.startswith(f"no docs/config-reference.md at or above {tmp_path.resolve()}: python -m hybridgpu.docs_gen --check needs")
    assert "fix: run it from a checkout of the hybridgpu repository, or give the checkout's root with --root DIR" in message
    assert isinstance(info.value, HybridGpuError)
