"""Every benchmark script still runs (issue 14): each in its ``--smoke`` mode (one repeat, small sizes).

The scripts print figures and assert nothing about time (benchmarks/README.md); the figures in
the docs come from full runs. This test only keeps the scripts from rotting: each must exit 0
from a clean working directory, print something, and never a traceback. ``preview_bench.py``
exited 2 on a clean clone because its generated stack's burst plan was not copied to its
temporary root; its smoke run goes through the same code.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys

import pytest

from tests.helpers import ROOT

SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


def test_every_benchmark_is_covered():
    assert SCRIPTS == ["burst_bench.py", "economics_bench.py", "inventory_bench.py", "mig_bench.py", "policy_bench.py", "preview_bench.py", "showback_bench.py"]


#: Scripts that touch no process-wide state (no Pulumi runtime, no child processes): their smoke run goes
#: through ``runpy`` in this process, which spares an interpreter start and the package's imports each.
IN_PROCESS = ("burst_bench.py", "economics_bench.py", "mig_bench.py", "showback_bench.py")


@pytest.mark.parametrize("script", IN_PROCESS)
def test_light_benchmark_runs_in_smoke_mode_in_process(script, monkeypatch, capfd):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / script), "--smoke"])
    for key in [k for k in os.environ if k.startswith("HYBRIDGPU_")]:
        monkeypatch.delenv(key)
    try:
        runpy.run_path(str(ROOT / "benchmarks" / script), run_name="__main__")
    except SystemExit as exc:
        assert exc.code in (0, None), f"{script} --smoke exited {exc.code}"
    out = capfd.readouterr().out  # file descriptor 1: HiGHS prints from C
    assert out.strip()
    assert "Running HiGHS" not in out, "the HiGHS banner leaked to stdout"


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s not in IN_PROCESS])
def test_benchmark_runs_in_smoke_mode(script, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRIDGPU_")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--smoke"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, f"{script} --smoke exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.stdout.strip()
    assert "Traceback" not in proc.stderr
    assert "Running HiGHS" not in proc.stdout, "the HiGHS banner leaked to stdout"


@pytest.mark.parametrize("sdk", [False, True], ids=["sdk-shaped", "sdk-classes"])
def test_preview_floor_registers_exactly_what_the_preview_registers(sdk, previews):
    """The floors ``preview_bench.py`` judges the preview against replay the prod stack's records:
    the same URNs, parents, inputs and dependencies, through the same mocks (else the ratio would
    compare different work)."""
    import importlib.util

    import pulumi
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    import hybridgpu.shell.preview as preview
    from hybridgpu.config.keys import PROJECT

    spec = importlib.util.spec_from_file_location("preview_bench", ROOT / "benchmarks" / "preview_bench.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("preview_bench", bench)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules["preview_bench"])
    bench = sys.modules["preview_bench"]
    records = previews["prod"].records  # the session's preview of prod (tests/conftest.py)
    preview._reset_runtime()
    monitor = preview.RecordingMonitor(preview.HybridMocks(region="us-east-1"))
    pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack="prod", preview=False, monitor=monitor)
    try:
        _sync_await(run_pulumi_func(bench.baseline_program(records, True, sdk)))
    finally:
        preview._reset_runtime()
    ours = {r.urn: (r.parent, r.inputs, r.dependencies) for r in records}
    floor = {r.urn: (r.parent, r.inputs, r.dependencies) for r in monitor.records}
    assert set(floor) == set(ours)
    assert [u for u in ours if ours[u] != floor[u]] == []
