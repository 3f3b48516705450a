"""``hybridgpu job check STACK FILE...``: check job manifests against a stack before submitting them (hybridgpu.stack.jobs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hybridgpu.cli.common import console, fail
from hybridgpu.errors import HybridGpuError, issue_lines
from hybridgpu.stack.jobs import job_file_issues
from hybridgpu.stack.load import load_stack

job_app = typer.Typer(no_args_is_help=True, help="Check job manifests against a stack (policies, EFA queues, topology) before submitting them.")


@job_app.command("check")
def check(
    stack: Annotated[str, typer.Argument(help="Stack the jobs run on (stacks/Pulumi.<stack>.yaml).")],
    files: Annotated[list[Path], typer.Argument(help="Job files (YAML, one or more documents each).")],
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
) -> None:
    """Run the policy pack's workload policies and the stack's queue and topology rules over job files; exit 2 on a problem."""
    try:
        loaded = load_stack(stack, root)
    except HybridGpuError as exc:
        fail(exc)
    issues = [issue for path in files for issue in job_file_issues(path, loaded)]
    if issues:
        fail("\n".join([f"{len(issues)} problem{'s' if len(issues) > 1 else ''} in job file(s) for stack {stack}:", *issue_lines(issues)]))
    console().print(f"[green]ok[/] {len(files)} job file(s) fit stack {stack}")
