"""Shared fixtures: the project root, example stacks and their offline previews (run once per session),
scratch projects and golden-file comparison."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.helpers")

from tests.helpers import ROOT  # noqa: E402 - after the assert-rewrite registration
from tests.helpers.scratch import make_project  # noqa: E402

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


@pytest.fixture(scope="session")
def all_previews(previews, root):
    """:func:`previews` plus the ``hybrid`` stack (the burst manager): every stack under ``stacks/``."""
    from hybridgpu.shell.preview import run_preview

    return {**previews, "hybrid": run_preview("hybrid", root)}


@pytest.fixture
def scratch_project(tmp_path) -> Callable[..., Path]:
    """Make a scratch project in ``tmp_path`` and return its root: ``scratch_project(stacks=..., stack_edits=...,
    plan=..., copy=..., link_data=...)`` (see ``tests.helpers.scratch.make_project``)."""
    return functools.partial(make_project, tmp_path)


@pytest.fixture
def project(scratch_project) -> Path:
    """A scratch project: a copy of Pulumi.yaml and an empty stacks/ directory."""
    return scratch_project()


def _assert_golden(text: str, path: Path, what: str) -> None:
    """``text`` equals the golden file ``path`` (rewritten first when HYBRIDGPU_UPDATE_GOLDEN=1).

    ``what`` names the rendered text in the failure message ("rendered <what> differs from <path>").
    """
    if os.environ.get("HYBRIDGPU_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with HYBRIDGPU_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"rendered {what} differs from {path}"


@pytest.fixture(scope="session")
def assert_golden() -> Callable[[str, Path, str], None]:
    """Compare rendered text with its golden file: ``assert_golden(text, path, what)``; review the diff after
    ``HYBRIDGPU_UPDATE_GOLDEN=1 pytest ...`` rewrote the files."""
    return _assert_golden
