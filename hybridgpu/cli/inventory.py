"""``hybridgpu inventory``: check, render and export an on-prem inventory without a stack.

* ``hybridgpu inventory validate PATH...`` runs every inventory rule and everything the program
  relies on (:func:`hybridgpu.onprem.deployment_issues`: the deployed CNI, the whole plan
  renders), and prints ``ok`` with the host counts, or every problem (the first 50, then the
  count of the rest) with file, host, field and fix; exit code 2.
* ``hybridgpu inventory render PATH... --out DIR`` writes, per host that is not ``absent``,
  ``DIR/<host>/kubeadm.yaml`` (secrets as ``${BOOTSTRAP_TOKEN}``-style placeholders),
  ``bootstrap.sh``, ``kubeadm-run.sh`` and, for cordoned hosts, ``drain.sh``; and
  ``DIR/plan.txt`` (the order ``pulumi up`` runs the hosts in, and the skipped ones).
* ``hybridgpu inventory export --format kubespray PATH... --out DIR`` writes a kubespray
  inventory directory (:func:`hybridgpu.render.kubespray.kubespray_files`).

``PATH`` is an inventory file or directory (several allowed), as in ``hybridgpu:onprem.inventory``.
A stack adds checks of its own (the ``keySecret.pulumiConfig`` keys are set, MIG layouts have the
GPU Operator, no overlap with the stack's VPC): ``hybridgpu validate <stack>`` runs those too.
Exit codes: 0 success, 2 bad input (nothing written).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from hybridgpu.cli.common import console, fail
from hybridgpu.inventory import Inventory, InventoryError, load_inventory
from hybridgpu.onprem import OnPremPlan, deployment_issues
from hybridgpu.render.kubespray import KubesprayExportError, kubespray_files

inventory_app = typer.Typer(no_args_is_help=True, help="On-prem inventory: validate, render kubeadm configs and scripts, export for kubespray.")

_PATHS = typer.Argument(metavar="PATH", help="Inventory files or directories (a directory contributes its *.yaml/*.yml files, sorted).")
_TOOLKIT = typer.Option(
    "--nvidia-toolkit/--no-nvidia-toolkit",
    help="Install the NVIDIA container toolkit on gpu-workers (the stack's hybridgpu:onprem.nvidiaToolkit). Default: on.",
)


class ExportFormat(str, Enum):
    """Formats of ``hybridgpu inventory export``."""

    kubespray = "kubespray"


def _checked(paths: list[Path], nvidia_toolkit: bool) -> tuple[Inventory, OnPremPlan]:
    """The validated inventory and its plan; exits with code 2 and every issue otherwise."""
    try:
        inventory = load_inventory(paths)
    except InventoryError as exc:
        fail(exc)
    plan, issues = deployment_issues(inventory, nvidia_toolkit=nvidia_toolkit)
    if issues or plan is None:
        fail(InventoryError(issues))
    return inventory, plan


def _summary(inventory: Inventory, plan: OnPremPlan) -> str:
    hosts = inventory.hosts
    roles = {role: sum(h.role == role for h in hosts) for role in ("control-plane", "gpu-worker", "cpu-worker")}
    gpus = ", ".join(f"{n} x {model}" for model, n in sorted(plan.gpus.items())) or "no GPUs"
    return (
        f"site {inventory.site.name}: {len(hosts)} host(s) ({roles['control-plane']} control-plane, {roles['gpu-worker']} gpu-worker, "
        f"{roles['cpu-worker']} cpu-worker; {len(plan.skipped)} absent), {gpus}; kubeadm init on {plan.first.hostname}"
    )


@inventory_app.command("validate")
def validate_command(
    paths: Annotated[list[Path], _PATHS],
    nvidia_toolkit: Annotated[bool, _TOOLKIT] = True,
) -> None:
    """Check an inventory offline: every rule, and that the kubeadm configs and scripts render."""
    inventory, plan = _checked(paths, nvidia_toolkit)
    console().print(f"[green]ok[/] {', '.join(inventory.files)}: {_summary(inventory, plan)}", soft_wrap=True)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


@inventory_app.command("render")
def render_command(
    paths: Annotated[list[Path], _PATHS],
    out: Annotated[Path, typer.Option(help="Directory to write into (one subdirectory per host).")] = Path("out/inventory"),
    nvidia_toolkit: Annotated[bool, _TOOLKIT] = True,
) -> None:
    """Write each host's kubeadm config (secrets as placeholders) and scripts, as `pulumi up` would run them."""
    inventory, plan = _checked(paths, nvidia_toolkit)
    lines = [f"# hosts in the order pulumi up runs them ({inventory.site.name}); secrets are ${{...}} placeholders"]
    for index, step in enumerate(plan.steps, 1):
        host_dir = out / step.hostname
        _write(host_dir / "kubeadm.yaml", step.kubeadm_config, 0o600)
        _write(host_dir / "bootstrap.sh", step.bootstrap, 0o755)
        _write(host_dir / "kubeadm-run.sh", step.kubeadm_run, 0o755)
        if step.drain is not None:
            _write(host_dir / "drain.sh", step.drain, 0o755)
        then = " then drain + cordon" if step.drain is not None else ""
        lines.append(f"{index} {step.hostname} {step.address} {step.stage}{then}")
    lines += [f"skipped {name} (state absent)" for name in plan.skipped]
    _write(out / "plan.txt", "\n".join(lines) + "\n")
    console().print(f"[green]ok[/] {_summary(inventory, plan)}", soft_wrap=True)
    console().print(f"{len(plan.steps)} host(s) rendered to {out} (kubeadm.yaml, bootstrap.sh, kubeadm-run.sh; plan.txt)", soft_wrap=True)


@inventory_app.command("export")
def export_command(
    paths: Annotated[list[Path], _PATHS],
    format: Annotated[ExportFormat, typer.Option("--format", help="Output format.")] = ExportFormat.kubespray,  # noqa: A002
    out: Annotated[Path, typer.Option(help="Inventory directory to write (inventory.ini, group_vars/, host_vars/).")] = Path("out/kubespray"),
) -> None:
    """Export the inventory for another installer (kubespray: inventory.ini, group_vars, host_vars)."""
    try:
        inventory = load_inventory(paths)
        files = kubespray_files(inventory)
    except (InventoryError, KubesprayExportError) as exc:
        fail(exc)
    for name, text in files.items():
        _write(out / name, text)
    hosts = sum(1 for name in files if name.startswith("host_vars/"))
    console().print(
        f"[green]ok[/] {format.value} inventory of site {inventory.site.name} ({hosts} host(s)) written to {out}/inventory.ini",
        soft_wrap=True,
    )
