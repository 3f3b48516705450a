"""Shared fixtures: the project root, example stacks and their offline previews (run once per session)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_STACKS = ("dev", "onprem", "prod")


@pytest.fixture(scope="session")
def root() -> Path:
    """The project root (holds Pulumi.yaml)."""
    return ROOT


@pytest.fixture(scope="session")
def previews(root):
    """Offline preview results of every example stack, keyed by stack name."""
    from hybridgpu.shell.preview import run_preview

    return {stack: run_preview(stack, root) for stack in EXAMPLE_STACKS}


@pytest.fixture
def project(tmp_path) -> Path:
    """A scratch project: a copy of Pulumi.yaml and an empty stacks/ directory."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    return tmp_path
