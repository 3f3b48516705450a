"""``hybridgpu preview [STACK ...]``: the real Pulumi program under Pulumi's mocks, summarised.

Offline preview of stacks (all example stacks when none is named): prints resources by type
and parent and, per NodePool, the most GPUs it may launch and the instance types it can pick;
writes every Kubernetes manifest to ``out/<stack>/``. Exit code 0 on success, 2 on bad
configuration (every named stack is validated before any runs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.tree import Tree

from hybridgpu.cli.common import console, fail
from hybridgpu.errors import HybridGpuError
from hybridgpu.k8s import CAPACITY_TYPE_LABEL, GPU_RESOURCE, INSTANCE_TYPE_LABEL
from hybridgpu.shell.preview import PreviewResult, run_preview, write_manifests
from hybridgpu.stack.files import find_project_root, list_stacks
from hybridgpu.stack.load import load_stack


def preview(
    stacks: Annotated[list[str] | None, typer.Argument(help="Stacks to preview (default: every stacks/Pulumi.<stack>.yaml).")] = None,
    out: Annotated[Path, typer.Option(help="Directory for rendered manifests (one subdirectory per stack).")] = Path("out"),
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary instead of tables.")] = False,
) -> None:
    """Show what `pulumi up` would create, offline (no cloud credentials, no Pulumi CLI)."""
    try:
        project = (root or find_project_root()).resolve()
        names = stacks or list_stacks(project)
        if not names:
            fail(HybridGpuError(f"no stack files in {project}/stacks"))
        # Validate every named stack before running any, so a typo in the last one costs nothing.
        loaded = [load_stack(name, project) for name in names]
        summaries = []
        for stack in loaded:
            result = run_preview(stack.config.stack, project, loaded=stack)
            target = write_manifests(result, out if out.is_absolute() else project / out)
            summaries.append(summary_of(result, target))
    except HybridGpuError as exc:
        fail(exc)
    if as_json:
        console().print_json(json.dumps(summaries))
        return
    for summary in summaries:
        print_summary(summary)


def summary_of(result: PreviewResult, target: Path) -> dict:
    """JSON-able summary of a preview: counts by type, the parent tree, NodePools."""
    pools = []
    for rec in result.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        spec = rec.inputs["spec"]
        reqs = {r["key"]: r for r in spec["template"]["spec"]["requirements"]}
        types = reqs.get(INSTANCE_TYPE_LABEL, {}).get("values", [])
        pools.append(
            {
                "name": rec.inputs["metadata"]["name"],
                "capacityTypes": reqs[CAPACITY_TYPE_LABEL]["values"],
                "weight": spec.get("weight"),
                "maxGpus": int(spec["limits"][GPU_RESOURCE]),
                "instanceTypes": types,
                "minValues": reqs.get(INSTANCE_TYPE_LABEL, {}).get("minValues"),
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
                onprem.append({"host": host, "address": rec.inputs["connection"]["host"], "step": stage})
    drained = {r.name.rsplit("-onprem-", 1)[-1][: -len("-drain")] for r in result.of_type("command:remote:Command") if r.name.endswith("-drain")}
    order = {h: i for i, h in enumerate(result.outputs.get("onprem_hosts") or [])}
    onprem.sort(key=lambda h: (order.get(h["host"], len(order)), h["host"], h["step"]))
    for step in onprem:
        step["drainAfterJoin"] = step["host"] in drained
    # Registrations reach the mock monitor in a thread-dependent order (issue 14): every listing
    # is sorted by a stable key (the tree by parent, then type and name), so the same stack gives
    # the same bytes.
    by_urn = {r.urn: r for r in result.records}
    branches: dict[str, list[str]] = {}
    for r in result.records:
        parent = by_urn.get(r.parent)
        branches.setdefault(f"{parent.type}::{parent.name}" if parent else "stack", []).append(f"{r.type}::{r.name}")
    tree = {key: sorted(kids) for key, kids in sorted(branches.items())}
    return {
        "stack": result.stack,
        "environment": result.config.environment.value if result.config is not None else None,  # None: raw values, not validated
        "resources": len(result.records),
        "byType": result.by_type(),
        "tree": tree,
        "nodePools": pools,
        "onprem": onprem,
        "onpremSkipped": result.outputs.get("onprem_skipped_hosts") or [],
        "outDir": str(target),
        "manifests": len(result.kubernetes_manifests()),
    }


def print_summary(summary: dict) -> None:
    """Print one preview summary (:func:`summary_of`) as rich tables: resources by type, the parent tree, NodePools."""
    out = console()
    out.rule(f"[bold]stack {summary['stack']}[/] ({summary['environment']}): {summary['resources']} resources")
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
    out.print(tree)
    table = Table(title="Resources by type")
    table.add_column("type", overflow="fold")
    table.add_column("count", justify="right")
    for typ, n in summary["byType"].items():
        table.add_row(typ, str(n))
    out.print(table)
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
        out.print(pools)
    if summary["onprem"]:
        hosts = Table(title="On-prem hosts, in the order pulumi up runs them over SSH")
        for col in ("#", "host", "address", "step", "then"):
            hosts.add_column(col)
        for i, h in enumerate(summary["onprem"], 1):
            hosts.add_row(str(i), h["host"], h["address"], h["step"], "drain + cordon" if h["drainAfterJoin"] else "")
        out.print(hosts)
        if summary["onpremSkipped"]:
            out.print(f"skipped (state absent): {', '.join(summary['onpremSkipped'])}")
    out.print(f"{summary['manifests']} Kubernetes manifests written to {summary['outDir']}")


