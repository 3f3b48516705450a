"""``hybridgpu validate STACK [--json]``: the configuration checks of a stack, without running the program."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from hybridgpu.cli.common import console, fail, print_wrapped
from hybridgpu.errors import HybridGpuError
from hybridgpu.stack.burst import burst_price_notes
from hybridgpu.stack.capacity_blocks import capacity_block_warnings
from hybridgpu.stack.clusters import cluster_name_clashes
from hybridgpu.stack.files import find_project_root
from hybridgpu.stack.load import load_stack_config
from hybridgpu.stack.plan_lock import plan_drift_warnings


def validate(
    stack: Annotated[str, typer.Argument(help="Stack name (stacks/Pulumi.<stack>.yaml).")],
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="On success, print one JSON document (stack, file, environment, GPU NodePools).")] = False,
) -> None:
    """Check a stack file (schema, cross-field rules, catalog) without running the program; exit 2 naming the file, key and fix on a problem."""
    try:
        config, values = load_stack_config(stack, root)
    except HybridGpuError as exc:
        fail(exc)
    names = [pool.name for pool in config.cloud.node_pools] if config.cloud else []
    for warning in cluster_name_clashes((root or find_project_root()).resolve(), config.stack):
        print_wrapped(console(stderr=True), f"warning: {warning}")
    for warning in plan_drift_warnings((root or find_project_root()).resolve(), config):  # drift from the last `cost plan --apply`
        print_wrapped(console(stderr=True), f"warning: {warning}")
    for warning in capacity_block_warnings(config):
        print_wrapped(console(stderr=True), f"warning: {values.file}: {warning}")
    for note in burst_price_notes(config, (root or find_project_root()).resolve()):  # two prices of one GPU-hour, explained (docs/economics.md)
        print_wrapped(console(stderr=True), f"note: {note}")
    if as_json:
        console().print_json(json.dumps({"stack": config.stack, "file": str(values.file), "environment": config.environment.value, "gpuNodePools": names}))
        return
    pools = len(names)
    console().print(f"[green]ok[/] {values.file}: {config.environment.value} stack, {pools} GPU NodePool(s)")


