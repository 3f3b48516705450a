"""``hybridgpu preview [STACK ...]``: the real Pulumi program under Pulumi's mocks, summarised.

Offline preview of stacks (all example stacks when none is named): prints, per GPU NodePool,
the most GPUs it may launch and the instance types it can pick, then the on-prem hosts and the
resources by parent (``--verbose`` adds their count by type); writes every Kubernetes manifest
to ``out/<stack>/``. Exit code 0 on success, 2 on bad
configuration (every named stack is validated before any runs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.tree import Tree

from hybridgpu.cli.common import Col, console, fail, print_heading, print_table, progress
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
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also count the resources by type.")] = False,
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
        with progress("previewing") as update:
            for i, stack in enumerate(loaded, 1):
                update(f"previewing stack {stack.config.stack} ({i}/{len(loaded)})")
                result = run_preview(stack.config.stack, project, loaded=stack)
                target = write_manifests(result, out if out.is_absolute() else project / out)
                summaries.append(summary_of(result, target))
    except HybridGpuError as exc:
        fail(exc)
    if as_json:
        console().print_json(json.dumps(summaries))
        return
    for summary in summaries:
        print_summary(summary, verbose)


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
                # A static pool (spec.replicas) has no GPU limit: its bound comes from the nodepools output below.
                "maxGpus": int(spec["limits"][GPU_RESOURCE]) if GPU_RESOURCE in (spec.get("limits") or {}) else None,
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
        if pool["maxGpus"] is None:
            pool["maxGpus"] = extra.get("gpu_limit")
        if extra.get("static_nodes"):
            pool["staticNodes"] = extra["static_nodes"]
            pool["alwaysOnUsdPerHour"] = extra.get("always_on_usd_per_hour")
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


def print_summary(summary: dict, verbose: bool = False) -> None:
    """Print one preview summary (:func:`summary_of`): the GPU NodePools first, then the on-prem hosts, the
    resources by parent (a tree); with
    ``verbose``, also the resources counted by type. Tables that do not fit the console are
    printed as records (:func:`~hybridgpu.cli.common.print_table`)."""
    out = console()
    print_heading(out, f"stack {summary['stack']}", f"({summary['environment']}): {summary['resources']} resources")
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
                branch = node.add(f"[bold cyan]{escape(typ)}[/] {escape(name)}")
                grow(branch, kid)
        for typ, n in sorted(counts.items()):
            node.add(escape(f"{typ} x{n}"))

    if summary["nodePools"]:
        print_table(
            out,
            "GPU NodePools: the most each may launch",
            ["NodePool", "capacity", Col("weight", True), Col("max GPUs", True), Col("max instances", True), Col("USD/h ceiling", True),
             Col("minValues", True), "instance types"],
            [
                [
                    p["name"],
                    ",".join(p["capacityTypes"]),
                    str(p["weight"] if p["weight"] is not None else "-"),
                    str(p["maxGpus"]),
                    str(p["maxInstances"]),
                    f"{p['maxUsdPerHour']:.2f}" if p["maxUsdPerHour"] is not None else "-",
                    str(p["minValues"] or "-"),
                    ", ".join(p["instanceTypes"]),
                ]
                for p in summary["nodePools"]
            ],
        )
    if summary["onprem"]:
        print_table(
            out,
            "On-prem hosts, in the order pulumi up runs them over SSH",
            [Col("#", True), "host", "address", "step", "then"],
            [[str(i), h["host"], h["address"], h["step"], "drain + cordon" if h["drainAfterJoin"] else ""] for i, h in enumerate(summary["onprem"], 1)],
        )
        if summary["onpremSkipped"]:
            out.print(f"skipped (state absent): {', '.join(summary['onpremSkipped'])}", markup=False, highlight=False)
    grow(tree, "stack")
    out.print(tree)
    if verbose:
        print_table(out, "Resources by type", ["type", Col("count", True)], [[typ, str(n)] for typ, n in summary["byType"].items()])
    else:
        out.print(f"{summary['resources']} resources of {len(summary['byType'])} types (--verbose counts them by type)", markup=False, highlight=False)
    out.print(f"{summary['manifests']} Kubernetes manifests written to {summary['outDir']}", markup=False, highlight=False)


