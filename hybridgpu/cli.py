"""``hybridgpu`` command line.

Commands:

* ``hybridgpu preview [STACK ...]``: offline preview of stacks (all example stacks when none
  is named): runs the real Pulumi program under mocks, prints resources by type and parent and,
  per NodePool, the most GPUs it may launch and the instance types it can pick; writes every
  Kubernetes manifest to ``out/<stack>/``. Exit code 0 on success, 2 on bad configuration.
* ``hybridgpu validate STACK``: configuration checks only.
* ``hybridgpu catalog``: the GPU instance catalog with prices and sources.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.tree import Tree

from hybridgpu.errors import HybridGpuError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Hybrid GPU clusters on Pulumi: offline preview, checks and catalog.")


def _register_subcommands() -> None:
    from hybridgpu.cli_mig import mig_app

    app.add_typer(mig_app, name="mig")

    from hybridgpu.cli_cost import cost_app

    app.add_typer(cost_app, name="cost")

    from hybridgpu.cli_burst import burst_app

    app.add_typer(burst_app, name="burst")

    from hybridgpu.cli_check import check

    app.command("check")(check)


_register_subcommands()


from hybridgpu.cli_common import console as _console  # noqa: E402
from hybridgpu.cli_common import fail as _fail  # noqa: E402


@app.command()
def preview(
    stacks: Annotated[list[str] | None, typer.Argument(help="Stacks to preview (default: every stacks/Pulumi.<stack>.yaml).")] = None,
    out: Annotated[Path, typer.Option(help="Directory for rendered manifests (one subdirectory per stack).")] = Path("out"),
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary instead of tables.")] = False,
) -> None:
    """Show what `pulumi up` would create, offline (no cloud credentials, no Pulumi CLI)."""
    from hybridgpu.config.loader import find_project_root, list_stacks
    from hybridgpu.offline.preview import run_preview, write_manifests

    try:
        project = (root or find_project_root()).resolve()
        names = stacks or list_stacks(project)
        if not names:
            _fail(HybridGpuError(f"no stack files in {project}/stacks"))
        # Validate every named stack before running any, so a typo in the last one costs nothing.
        from hybridgpu.config.loader import load_stack_config

        for name in names:
            load_stack_config(name, project)
        summaries = []
        for name in names:
            result = run_preview(name, project)
            target = write_manifests(result, out if out.is_absolute() else project / out)
            summaries.append(_summary(result, target))
    except HybridGpuError as exc:
        _fail(exc)
        return
    if as_json:
        _console().print_json(json.dumps(summaries))
        return
    for summary in summaries:
        _print_summary(summary)


def _summary(result, target: Path) -> dict:
    """JSON-able summary of a preview: counts by type, the parent tree, NodePools."""
    from hybridgpu.render.karpenter import GPU_RESOURCE

    pools = []
    for rec in result.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        spec = rec.inputs["spec"]
        reqs = {r["key"]: r for r in spec["template"]["spec"]["requirements"]}
        types = reqs.get("node.kubernetes.io/instance-type", {}).get("values", [])
        pools.append(
            {
                "name": rec.inputs["metadata"]["name"],
                "capacityTypes": reqs["karpenter.sh/capacity-type"]["values"],
                "weight": spec.get("weight"),
                "maxGpus": int(spec["limits"][GPU_RESOURCE]),
                "instanceTypes": types,
                "minValues": reqs.get("node.kubernetes.io/instance-type", {}).get("minValues"),
            }
        )
    pools.sort(key=lambda p: (-(p["weight"] or 0), p["name"]))
    nodepool_outputs = result.outputs.get("nodepools") or {}
    for pool in pools:
        extra = nodepool_outputs.get(pool["name"], {})
        pool["maxInstances"] = extra.get("max_instances")
        pool["maxUsdPerHour"] = extra.get("max_usd_per_hour")
    onprem = []
    stage_of = {"init": "kubeadm init", "join": "kubeadm join"}
    for rec in result.of_type("command:remote:Command"):
        for suffix, stage in stage_of.items():
            if rec.name.endswith(f"-kubeadm-{suffix}"):
                host = rec.name[: -len(f"-kubeadm-{suffix}")].rsplit("-onprem-", 1)[-1]
                onprem.append({"host": host, "address": rec.inputs["connection"]["host"], "step": stage, "deps": len(rec.dependencies)})
    drained = {r.name.rsplit("-onprem-", 1)[-1][: -len("-drain")] for r in result.of_type("command:remote:Command") if r.name.endswith("-drain")}
    order = {h: i for i, h in enumerate(result.outputs.get("onprem_hosts") or [])}
    onprem.sort(key=lambda h: order.get(h["host"], len(order)))
    for host in onprem:
        host["drainAfterJoin"] = host["host"] in drained
        del host["deps"]
    by_urn = {r.urn: r for r in result.records}
    tree: dict[str, list[str]] = {}
    for r in result.records:
        parent = by_urn.get(r.parent)
        tree.setdefault(f"{parent.type}::{parent.name}" if parent else "stack", []).append(f"{r.type}::{r.name}")
    return {
        "stack": result.stack,
        "environment": result.config.environment.value,
        "resources": len(result.records),
        "byType": result.by_type(),
        "tree": tree,
        "nodePools": pools,
        "onprem": onprem,
        "onpremSkipped": result.outputs.get("onprem_skipped_hosts") or [],
        "outDir": str(target),
        "manifests": len(result.kubernetes_manifests()),
    }


def _print_summary(summary: dict) -> None:
    console = _console()
    console.rule(f"[bold]stack {summary['stack']}[/] ({summary['environment']}): {summary['resources']} resources")
    tree = Tree("stack")
    children = summary["tree"]

    def grow(node: Tree, key: str) -> None:
        kids = children.get(key, [])
        counts: dict[str, int] = {}
        for kid in kids:
            typ = kid.split("::")[0]
            if typ.startswith("hybridgpu:") or typ.startswith("pulumi:providers"):
                continue
            counts[typ] = counts.get(typ, 0) + 1
        for kid in kids:
            typ, name = kid.split("::", 1)
            if typ.startswith("hybridgpu:") or typ.startswith("pulumi:providers"):
                branch = node.add(f"[bold cyan]{typ}[/] {name}")
                grow(branch, kid)
        for typ, n in sorted(counts.items()):
            node.add(f"{typ} x{n}")

    grow(tree, "stack")
    console.print(tree)
    table = Table(title="Resources by type")
    table.add_column("type", overflow="fold")
    table.add_column("count", justify="right")
    for typ, n in summary["byType"].items():
        table.add_row(typ, str(n))
    console.print(table)
    if summary["nodePools"]:
        pools = Table(title="GPU NodePools: the most each may launch")
        for col in ("NodePool", "capacity", "weight", "max GPUs", "max instances", "USD/h ceiling", "minValues", "instance types"):
            pools.add_column(col, overflow="fold")
        for p in summary["nodePools"]:
            pools.add_row(
                p["name"],
                ",".join(p["capacityTypes"]),
                str(p["weight"] if p["weight"] is not None else "-"),
                str(p["maxGpus"]),
                str(p["maxInstances"]),
                f"{p['maxUsdPerHour']:.2f}" if p["maxUsdPerHour"] is not None else "-",
                str(p["minValues"] or "-"),
                ", ".join(p["instanceTypes"]),
            )
        console.print(pools)
    if summary["onprem"]:
        hosts = Table(title="On-prem hosts, in the order pulumi up runs them over SSH")
        for col in ("#", "host", "address", "step", "then"):
            hosts.add_column(col)
        for i, h in enumerate(summary["onprem"], 1):
            hosts.add_row(str(i), h["host"], h["address"], h["step"], "drain + cordon" if h["drainAfterJoin"] else "")
        console.print(hosts)
        if summary["onpremSkipped"]:
            console.print(f"skipped (state absent): {', '.join(summary['onpremSkipped'])}")
    console.print(f"{summary['manifests']} Kubernetes manifests written to {summary['outDir']}")


@app.command()
def validate(
    stack: Annotated[str, typer.Argument(help="Stack name (stacks/Pulumi.<stack>.yaml).")],
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
) -> None:
    """Check a stack file (schema, cross-field rules, catalog) without running the program."""
    from hybridgpu.config.loader import load_stack_config

    try:
        config, values = load_stack_config(stack, root)
    except HybridGpuError as exc:
        _fail(exc)
        return
    pools = len(config.cloud.node_pools) if config.cloud else 0
    console = _console()
    console.print(f"[green]ok[/] {values.file}: {config.environment.value} stack, {pools} GPU NodePool(s)")


@app.command()
def catalog(
    family: Annotated[list[str] | None, typer.Option(help="Only these instance families.")] = None,
) -> None:
    """List the GPU instance catalog (GPUs, memory, EFA, on-demand USD/hour, source date)."""
    from hybridgpu.catalog import load_catalog

    cat = load_catalog()
    console = _console()
    table = Table(title="GPU instance types (on-demand list price, Linux, us-east-1)")
    for col in ("type", "GPU", "GPUs", "GPU mem GiB", "vCPU", "mem GiB", "EFA", "USD/h", "source date"):
        table.add_column(col, overflow="fold")
    for t in cat.instance_types:
        if family and t.family not in family:
            continue
        table.add_row(
            t.name,
            t.gpu_model,
            str(t.gpu_count),
            f"{t.gpu_memory_gib:g}",
            str(t.vcpu),
            f"{t.memory_gib:g}",
            str(t.max_efa_interfaces) if t.efa_supported else "-",
            f"{t.on_demand_usd_per_hour:.4f}" if t.on_demand_usd_per_hour is not None else "n/a",
            t.source_date,
        )
    console.print(table)


def main() -> None:  # pragma: no cover - console entry point
    """Entry point for ``python -m hybridgpu``."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
