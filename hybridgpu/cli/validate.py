"""``hybridgpu validate STACK``: the configuration checks of a stack, without running the program."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hybridgpu.cli.common import console, fail
from hybridgpu.errors import HybridGpuError
from hybridgpu.stack.load import load_stack_config


def validate(
    stack: Annotated[str, typer.Argument(help="Stack name (stacks/Pulumi.<stack>.yaml).")],
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
) -> None:
    """Check a stack file (schema, cross-field rules, catalog) without running the program."""
    try:
        config, values = load_stack_config(stack, root)
    except HybridGpuError as exc:
        fail(exc)
    pools = len(config.cloud.node_pools) if config.cloud else 0
    console().print(f"[green]ok[/] {values.file}: {config.environment.value} stack, {pools} GPU NodePool(s)")


