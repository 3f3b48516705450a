"""``hybridgpu job check STACK FILE...``: check job manifests against a stack before submitting them (hybridgpu.stack.jobs)."""

from __future__ import annotations

import json
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
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document: the files, ok, and each problem with its file, key and fix (exit 2 still).")] = False,
) -> None:
    """Run the policy pack's workload policies and the stack's queue and topology rules over job files; exit 2 on a problem."""
    try:
        loaded = load_stack(stack, root)
    except HybridGpuError as exc:
        fail(exc)
    issues = [issue for path in files for issue in job_file_issues(path, loaded)]
    if as_json:
        problems = [{"file": i.file, "entry": i.entry, "key": i.key, "code": i.code, "message": i.message, "fix": i.fix} for i in issues]
        console().print_json(json.dumps({"stack": stack, "files": [str(f) for f in files], "ok": not issues, "problems": problems}))
        if issues:
            raise typer.Exit(code=2)
        return
    if issues:
        fail("\n".join([f"{len(issues)} problem{'s' if len(issues) > 1 else ''} in job file(s) for stack {stack}:", *issue_lines(issues)]))
    console().print(f"[green]ok[/] {len(files)} job file(s) fit stack {stack}")
