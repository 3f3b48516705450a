"""Shared fixtures: the project root, example stacks and their offline previews (run once per session,
shared by the pytest-xdist workers), scratch projects and golden-file comparison."""

from __future__ import annotations

import fcntl
import functools
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.helpers")

from tests.helpers import ROOT  # noqa: E402 - after the assert-rewrite registration
from tests.helpers.scratch import make_project  # noqa: E402
# Debian's containerd .deb, fetched once per test process for every test that runs the real binary
# (a session fixture imported into several test modules would be fetched once per module).
from tests.helpers.sandbox import debian_containerd  # noqa: E402,F401

EXAMPLE_STACKS = ("dev", "onprem", "prod")


@pytest.fixture(scope="session")
def root() -> Path:
    """The project root (holds Pulumi.yaml)."""
    return ROOT


def _preview_once(stack: str, root: Path, tmp_path_factory: pytest.TempPathFactory):
    """``run_preview(stack, root)``, run once per test session even with pytest-xdist workers.

    Under xdist (``PYTEST_XDIST_WORKER`` set) the first worker to ask previews the stack and
    pickles the result into the session's shared temporary directory (the parent of every
    worker's base temporary directory), under a lock; the others load it. A plain run previews.
    """
    from hybridgpu.shell.preview import run_preview

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return run_preview(stack, root)
    shared = tmp_path_factory.getbasetemp().parent
    cache = shared / f"preview-{stack}.pickle"
    with open(shared / f"preview-{stack}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cache.exists():
            return pickle.loads(cache.read_bytes())
        result = run_preview(stack, root)
        cache.write_bytes(pickle.dumps(result))
        return result


@pytest.fixture(scope="session")
def previews(root, tmp_path_factory):
    """Offline preview results of every example stack, keyed by stack name (once per session)."""
    return {stack: _preview_once(stack, root, tmp_path_factory) for stack in EXAMPLE_STACKS}


@pytest.fixture(scope="session")
def all_previews(previews, root, tmp_path_factory):
    """:func:`previews` plus the ``hybrid`` stack (the burst manager): every stack under ``stacks/``."""
    return {**previews, "hybrid": _preview_once("hybrid", root, tmp_path_factory)}


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


class _SharedPacks:
    """Running policy packs kept for the test process, one per pack directory (each start costs a
    process and about a second of imports; a check's own start is tested where it matters:
    ``tests/shell/policy/test_robustness.py``, ``test_check_speed_paths.py``, ``test_bundle.py``)."""

    def __init__(self) -> None:
        self._running: dict[Path, object] = {}

    def get(self, pack_dir: Path):
        from hybridgpu.shell.policy.analyzer import Analyzer

        pack_dir = Path(pack_dir).resolve()
        analyzer = self._running.get(pack_dir)
        if analyzer is None or analyzer._proc.poll() is not None:  # a pack a test broke is started again
            analyzer = self._running[pack_dir] = Analyzer(pack_dir, project="shared", stack="dev")
        return analyzer

    def close(self) -> None:
        for analyzer in self._running.values():
            analyzer.close()


@pytest.fixture(scope="session")
def running_packs():
    """The test process's :class:`_SharedPacks` (stopped at the end of the session)."""
    packs = _SharedPacks()
    yield packs
    packs.close()


@pytest.fixture
def shared_pack(running_packs, monkeypatch):
    """``hybridgpu check`` in this test takes a pack already running instead of starting one.

    Only the pack's start is skipped: ``check_previews`` still sends the whole policy config
    (``Configure`` replaces the pack's config: pulumi_policy 1.21 ``policy.py`` ``Configure``) and
    ``ConfigureStack`` per stack, and the policies read neither ``PULUMI_PROJECT`` nor
    ``PULUMI_STACK`` (the only difference of a pack started for the project). A directory that is
    not a policy pack goes to the real start, so its error is the CLI's own.
    """
    import contextlib

    from hybridgpu.shell.policy import check as check_mod

    real = check_mod._StartInBackground

    class Shared:
        def __init__(self, pack_dir: Path, project: str, stack: str):
            self._real = None if (Path(pack_dir) / "PulumiPolicy.yaml").is_file() else real(pack_dir, project, stack)
            self._pack_dir = pack_dir

        def result(self):
            if self._real is not None:
                return self._real.result()
            return contextlib.nullcontext(running_packs.get(self._pack_dir))

        def close(self) -> None:
            if self._real is not None:
                self._real.close()

    monkeypatch.setattr(check_mod, "_StartInBackground", Shared)
    return running_packs
