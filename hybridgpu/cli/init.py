"""``hybridgpu init NAME``: write a new stack file from the template, with the sections asked for.

The file (``<stackConfigDir>/Pulumi.NAME.yaml``) is written only when it validates as ``hybridgpu
validate NAME`` would validate it; an existing stack file is never overwritten. Exit codes: 0 written,
2 bad input (nothing written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated


import typer

from hybridgpu.cli.common import console, fail, print_wrapped
from hybridgpu.config.models import Environment
from hybridgpu.errors import HybridGpuError
from hybridgpu.k8s import DEFAULT_COST_KEYS
from hybridgpu.stack.clusters import claim_of, unused_cluster_name, unused_vpc_cidr
from hybridgpu.stack.files import find_project_root, project_defaults, stack_config_dir
from hybridgpu.stack.load import validate_stack
from hybridgpu.stack.template import StackTemplate, cluster_name_for, render_stack, stack_name_problem


def _tags(given: list[str], required: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` options as a mapping, every required key present (raises ValueError naming the fix)."""
    tags: dict[str, str] = {}
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--tag {item!r}: write KEY=VALUE, e.g. --tag team=ml-platform")
        if key.strip() in tags:
            raise ValueError(f"--tag {key.strip()}: given twice; give each tag once")
        tags[key.strip()] = value.strip()
    missing = [k for k in required if k not in tags]
    if missing:
        example = " ".join(f"--tag {k}=NAME" for k in missing)
        raise ValueError(f"the project requires the cost tags {', '.join(required)}; missing {', '.join(missing)}: add {example}")
    return tags


def _project_path(given: Path, root: Path) -> str:
    """A file path (inventory, burst plan) as the stack file holds it: relative to the project root when inside it."""
    path = given if given.is_absolute() else Path.cwd() / given
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path.resolve())


def init(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The new stack's name (Pulumi's rule: letters, digits, -, _ and .).")],
    cloud: Annotated[bool, typer.Option("--cloud", help="Add an EKS cluster with one spot GPU NodePool.")] = False,
    onprem: Annotated[list[Path] | None, typer.Option(metavar="INVENTORY", help="Add an on-prem kubeadm cluster from this inventory file (repeat for more).")] = None,
    nvidia: Annotated[bool, typer.Option("--nvidia", help="Add the NVIDIA GPU Operator.")] = False,
    burst: Annotated[
        Path | None, typer.Option(metavar="PLAN", help="Take part in this burst plan file (it must name the stack: docs/bursting.md).")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option(metavar="KEY=VALUE", help="A cost tag (repeat); the project's required keys must be given.")] = None,
    region: Annotated[str, typer.Option(metavar="REGION", help="AWS region of the EKS cluster (with --cloud).")] = "us-west-2",
    cluster_name: Annotated[str | None, typer.Option(metavar="NAME", help="EKS cluster name (with --cloud; default gpu-NAME, made unique in the project).")] = None,
    environment: Annotated[Environment, typer.Option(help="Kind of stack.")] = Environment.development,
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
) -> None:
    """Write stacks/Pulumi.NAME.yaml from a template with the sections asked for; it validates, or nothing is written."""
    try:
        problem = stack_name_problem(name)
        if problem:
            raise ValueError(f"{problem}. Fix: choose another name, e.g. `my-gpus`")
        if not cloud and not onprem:
            raise ValueError("a stack needs --cloud (an EKS cluster) or --onprem INVENTORY (a kubeadm cluster), or both")
        if not cloud and (cluster_name is not None):
            raise ValueError("--cluster-name names the EKS cluster: give --cloud too")
        base = (root or find_project_root()).resolve()
        directory = stack_config_dir(base)
        path = directory / f"Pulumi.{name}.yaml"
        shown = path.relative_to(base).as_posix()
        if path.exists():
            raise ValueError(f"{shown} exists; init never overwrites a stack file: edit it, or choose another name")
        defaults = project_defaults(base)
        required = defaults.get("hybridgpu:requiredTagKeys") or list(DEFAULT_COST_KEYS)
        tags = _tags(list(tag or []), [str(k) for k in required])
        chosen = None
        if cloud:
            if cluster_name is not None:
                clash = claim_of(base, cluster_name, region)
                if clash is not None:
                    raise ValueError(f"--cluster-name {cluster_name}: {clash.file} already creates that EKS cluster in {region} "
                                     f"(names are unique per account and region); choose another name")
                chosen = cluster_name
            else:
                chosen = unused_cluster_name(base, cluster_name_for(name), region)
        template = StackTemplate(
            stack=name, environment=environment.value, tags=tags, region=region if cloud else None, cluster_name=chosen,
            vpc_cidr=unused_vpc_cidr(base) if cloud else "10.64.0.0/16", cloud=cloud,
            onprem=tuple(_project_path(p, base) for p in onprem or []), nvidia=nvidia,
            burst=_project_path(burst, base) if burst is not None else None,
        )
        values, text = render_stack(template)
        validate_stack({**defaults, **values}, stack=name, file=shown, root=base)
        directory.mkdir(parents=True, exist_ok=True)  # an OSError names the path (cli.common.PathErrorsGroup: exit 2)
        try:
            with path.open("x", encoding="utf-8") as handle:  # "x": a file that appeared meanwhile is not overwritten
                handle.write(text)
        except FileExistsError:
            raise ValueError(f"{shown} exists; init never overwrites a stack file: edit it, or choose another name") from None
    except (HybridGpuError, ValueError) as exc:
        fail(f"{exc}\nnothing written")
    parts = [
        f"EKS cluster `{chosen}` in {region}" if cloud else None, "on-prem cluster" if onprem else None, "NVIDIA GPU Operator" if nvidia else None,
        f"burst plan {template.burst}" if template.burst else None,
    ]
    out = console()
    print_wrapped(out, f"wrote {shown}: {', '.join(p for p in parts if p)}")
    print_wrapped(out, f"next: hybridgpu validate {name}; hybridgpu preview {name}")
