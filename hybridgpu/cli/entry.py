"""The process entry of the command line (console script ``hybridgpu`` and ``python -m hybridgpu``).

:func:`main` sets the garbage collector up for a short batch run
(:func:`hybridgpu.collector.tune_for_batch_run`), then imports and runs the joined app
(:mod:`hybridgpu.cli.main`). It is its own module so that the collector is tuned before the first
import of the Pulumi SDK (``import hybridgpu.cli.main`` alone takes some 0.7 s, and the
collector's full passes start during it), and so that importing the CLI (tests,
``from hybridgpu.cli import app``) changes no process-wide setting.
"""

from __future__ import annotations

from hybridgpu.collector import tune_for_batch_run


def main() -> None:  # pragma: no cover - console entry point (run as a process in tests/cli/test_entry.py)
    """Run the command line: the collector tuned, then the joined typer app (exit codes as :mod:`hybridgpu.cli.main`)."""
    tune_for_batch_run()
    from hybridgpu.cli.main import app

    app()
