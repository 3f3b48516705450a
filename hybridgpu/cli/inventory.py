"""``hybridgpu inventory``: check, render and export an on-prem inventory without a stack.

* ``hybridgpu inventory validate PATH...`` runs every inventory rule and everything the program
  relies on (:func:`hybridgpu.onprem.deployment_issues`: the deployed CNI, the whole plan
  renders), and prints ``ok`` with the host counts and, with a ``racks`` section, each rack's draw
  against its power budget and its cooling (:mod:`hybridgpu.inventory.power`), or every problem (the first 50, then the
  count of the rest) with file, host, field and fix; exit code 2.
* ``hybridgpu inventory render PATH... --out DIR`` writes, per host that is not ``absent``,
  ``DIR/<host>/kubeadm.yaml`` (secrets as ``${BOOTSTRAP_TOKEN}``-style placeholders),
  ``bootstrap.sh``, ``kubeadm-run.sh`` and, for cordoned hosts, ``drain.sh``; and
  ``DIR/plan.txt`` (the order ``pulumi up`` runs the hosts in, and the skipped ones). With a
  ``remediation`` policy, each GPU worker's ``remediate.sh`` (and ``gpu-reset.sh``) and
  ``DIR/gpu-health/nvsentinel-values.yaml`` (:mod:`hybridgpu.render.gpu_health`). Each control plane's
  ``etcd-snapshot-timer.sh`` (the scheduled etcd snapshot of ``upgrades.etcdSnapshots``, :mod:`hybridgpu.render.upgrade`).
* ``hybridgpu inventory upgrade-plan PATH... [--to X.Y.Z]`` prints the order and the checks of a Kubernetes
  upgrade (:func:`hybridgpu.inventory.upgrade.plan_upgrade`; without ``--to`` the inventory's
  ``upgrades.kubernetes``, which ``pulumi up`` runs), ``--json`` as JSON; ``--out DIR`` writes its
  scripts with ``run-order.txt`` (docs/upgrades.md), then the NVIDIA driver/toolkit upgrade of ``upgrades.nvidia``
  (:func:`hybridgpu.inventory.upgrade.plan_nvidia_upgrade`). Exit 2 when a check fails.
* ``hybridgpu inventory export --format kubespray PATH... --out DIR`` writes a kubespray
  inventory directory (:func:`hybridgpu.render.kubespray.kubespray_files`).
* ``hybridgpu inventory cordon|retire|restore HOST PATH...`` sets the host's ``state`` to
  ``cordoned``, ``absent`` or ``active`` in the file that declares it, comments and layout kept,
  after validating the result (:func:`hybridgpu.inventory.lifecycle.set_host_state`).

``PATH`` is an inventory file or directory (several allowed), as in ``hybridgpu:onprem.inventory``.
A stack adds checks of its own (the ``keySecret.pulumiConfig`` keys are set, MIG layouts have the
GPU Operator, no overlap with the stack's VPC): ``hybridgpu validate <stack>`` runs those too.
Exit codes: 0 success, 2 bad input (nothing written).
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from hybridgpu.cli.common import console, fail
from hybridgpu.catalog import load_catalog
from hybridgpu.inventory import Inventory, InventoryError, load_inventory
from hybridgpu.inventory.models import HostState
from hybridgpu.inventory.power import format_kw, rack_loads
from hybridgpu.onprem import OnPremPlan, deployment_issues
from hybridgpu.render.kubespray import KubesprayExportError, kubespray_files

inventory_app = typer.Typer(no_args_is_help=True, help="On-prem inventory: validate, render kubeadm configs and scripts, export for kubespray.")

_PATHS = typer.Argument(metavar="PATH", help="Inventory files or directories (a directory contributes its *.yaml/*.yml files, sorted).")
_TOOLKIT = typer.Option(
    "--nvidia-toolkit/--no-nvidia-toolkit",
    help="Install the NVIDIA container toolkit on gpu-workers (the stack's nvidiaToolkit in hybridgpu:onprem). Default: on.",
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Check an inventory offline: every rule, and that the kubeadm configs and scripts render."""
    inventory, plan = _checked(paths, nvidia_toolkit)
    if as_json:
        console().print_json(json.dumps(_validate_document(inventory, plan)))
        return
    console().print(f"[green]ok[/] {', '.join(inventory.files)}: {_summary(inventory, plan)}", soft_wrap=True)
    for line in _rack_table(inventory):
        console().print(line, markup=False, soft_wrap=True)


def _validate_document(inventory: Inventory, plan: OnPremPlan) -> dict[str, Any]:
    """What ``inventory validate --json`` prints: the files, the site, hosts by role and state, GPUs by
    model, the first control plane, and each declared rack's draw against its budget (kW, as decimals)."""
    hosts = inventory.hosts
    loads = rack_loads(inventory.site.racks, hosts, load_catalog())
    declared = inventory.site.racks or {}
    return {
        "ok": True,
        "files": list(inventory.files),
        "site": inventory.site.name,
        "hosts": {
            "total": len(hosts),
            "byRole": {role: sum(h.role == role for h in hosts) for role in ("control-plane", "gpu-worker", "cpu-worker")},
            "byState": {state: sum(h.state == state for h in hosts) for state in ("active", "cordoned", "absent")},
        },
        "gpus": dict(sorted(plan.gpus.items())),
        "kubeadmInit": plan.first.hostname,
        "racks": [
            {"rack": r.name, "cooling": r.cooling, "hosts": len(r.draws), "drawKw": r.draw_watts / 1000, "budgetKw": r.budget_watts / 1000,
             "marginKw": r.margin_watts / 1000, "coolingKw": r.cooling_watts / 1000, "coolingMarginKw": r.cooling_margin_watts / 1000}
            for r in loads
        ],
        "racksNotChecked": sorted({h.rack for h in hosts if h.rack is not None and h.rack not in declared and h.state != "absent"}),
    }


def _rack_table(inventory: Inventory) -> list[str]:
    """Each declared rack's draw at full load against its power budget, then its cooling (``air``,
    ``liquid`` or ``-``) and the heat its cooling removes against the same draw (hybridgpu.inventory.power),
    as text lines.

    Columns are as wide as their longest value (nothing is cut); with rack names up to 8 characters
    a line is at most 80 characters. The racks hosts name but ``racks`` does not declare follow on one
    line. Empty without a ``racks`` section.
    """
    loads = rack_loads(inventory.site.racks, inventory.hosts, load_catalog())
    if not loads:
        return []
    head = ("rack", "hosts", "draw kW", "budget kW", "margin kW", "cooling", "cooling kW", "margin kW")
    rows = [
        (r.name, str(len(r.draws)), format_kw(r.draw_watts), format_kw(r.budget_watts), format_kw(r.margin_watts), r.cooling or "-",
         format_kw(r.cooling_watts), format_kw(r.cooling_margin_watts))
        for r in loads
    ]
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    text_columns = (0, 5)
    lines = ["racks: active and cordoned hosts at full load (absent ones left out; heat = draw)"]
    for row in (head, *rows):
        cells = [cell.ljust(width) if i in text_columns else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  " + "  ".join(cells).rstrip())
    racks = inventory.site.racks or {}
    unchecked = sorted({h.rack for h in inventory.hosts if h.rack is not None and h.rack not in racks and h.state != "absent"})
    if unchecked:
        lines.append(f"  not checked (no `racks` entry): {', '.join(unchecked)}")
    return lines


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
    _write_gpu_health(inventory, out)
    _write_etcd_snapshots(inventory, out)
    console().print(f"[green]ok[/] {_summary(inventory, plan)}", soft_wrap=True)
    console().print(f"{len(plan.steps)} host(s) rendered to {out} (kubeadm.yaml, bootstrap.sh, kubeadm-run.sh; plan.txt)", soft_wrap=True)


def _write_gpu_health(inventory: Inventory, out: Path) -> None:
    """With a ``remediation`` policy: each GPU worker's ``remediate.sh`` (and ``gpu-reset.sh`` when it may reset), and
    ``gpu-health/nvsentinel-values.yaml`` for ``detector: nvsentinel`` (GPU Operator in its default namespace)."""
    from hybridgpu.datafile import dump_yaml
    from hybridgpu.render.gpu_health import gpu_reset_script, nvsentinel_values, remediation_script

    policy = inventory.site.remediation
    if policy is None:
        return
    if policy.cordon:
        for host in inventory.gpu_workers:
            if host.state == "absent" or host.gpu is None:
                continue
            reset = host.remediation.reset if host.remediation is not None else policy.reset
            _write(out / host.hostname / "remediate.sh", remediation_script(host.hostname, policy, reset=reset), 0o755)
            if reset != "none" and policy.drain:
                _write(out / host.hostname / "gpu-reset.sh", gpu_reset_script(host.hostname, host.gpu.count, reset), 0o755)
    if policy.detector == "nvsentinel":
        _write(out / "gpu-health" / "nvsentinel-values.yaml", dump_yaml(nvsentinel_values(policy, gpu_operator_namespace="gpu-operator")))


def _write_etcd_snapshots(inventory: Inventory, out: Path) -> None:
    """Each control plane's ``etcd-snapshot-timer.sh`` (root, on the host): the scheduled etcd snapshot of the
    inventory's ``upgrades.etcdSnapshots`` (defaults without the section), or its removal when disabled."""
    from hybridgpu.inventory.upgrade import UpgradePolicy
    from hybridgpu.render.upgrade import etcd_snapshot_timer_script

    policy = inventory.site.upgrades if inventory.site.upgrades is not None else UpgradePolicy()
    script = etcd_snapshot_timer_script(policy.etcd_snapshots)
    for host in inventory.control_planes:
        if host.state != "absent":
            _write(out / host.hostname / "etcd-snapshot-timer.sh", script, 0o755)


@inventory_app.command("export")
def export_command(
    paths: Annotated[list[Path], _PATHS],
    format: Annotated[ExportFormat, typer.Option("--format", help="Output format.")] = ExportFormat.kubespray,  # noqa: A002
    out: Annotated[Path, typer.Option(help="Inventory directory to write (inventory.ini, group_vars/, host_vars/).")] = Path("out/kubespray"),
    nvidia_toolkit: Annotated[bool, _TOOLKIT] = True,
) -> None:
    """Export the inventory for another installer (kubespray: inventory.ini, group_vars, host_vars)."""
    try:
        inventory = load_inventory(paths)
        files = kubespray_files(inventory, nvidia_toolkit=nvidia_toolkit)
    except (InventoryError, KubesprayExportError) as exc:
        fail(exc)
    for name, text in files.items():
        _write(out / name, text)
    hosts = sum(1 for name in files if name.startswith("host_vars/"))
    console().print(
        f"[green]ok[/] {format.value} inventory of site {inventory.site.name} ({hosts} host(s)) written to {out}/inventory.ini",
        soft_wrap=True,
    )


_HOST = typer.Argument(metavar="HOST", help="The host's hostname (its Kubernetes node name).")
_NEXT = {
    "cordoned": "next: `hybridgpu inventory render` and run {host}/drain.sh (or `pulumi up`), then `hybridgpu inventory retire {host}` for repair",
    "absent": "next: `pulumi up` leaves the host out; when it is back, `hybridgpu inventory restore {host}` (docs/gpu-health.md)",
    "active": "next: `pulumi up` joins the host again and uncordons it; check `kubectl get node {host}` before sending work",
}


def _set_state(host: str, paths: list[Path], state: HostState) -> None:
    """Write ``state`` for ``host`` into its inventory file (validated first); exit 2 on bad input."""
    from hybridgpu.inventory.lifecycle import set_host_state

    try:
        change = set_host_state(paths, host, state)
    except InventoryError as exc:
        fail(exc)
    if not change.written:
        console().print(f"[green]ok[/] {host} is already {state} in {change.file}; nothing written", soft_wrap=True)
        return
    console().print(f"[green]ok[/] {host}: {change.before} -> {change.after} in {change.file}", soft_wrap=True)
    console().print(_NEXT[state].format(host=host), soft_wrap=True)


@inventory_app.command("cordon")
def cordon_command(host: Annotated[str, _HOST], paths: Annotated[list[Path], _PATHS]) -> None:
    """Set HOST's state to `cordoned` in its inventory file (joined, drained, unschedulable)."""
    _set_state(host, paths, "cordoned")


@inventory_app.command("retire")
def retire_command(host: Annotated[str, _HOST], paths: Annotated[list[Path], _PATHS]) -> None:
    """Set HOST's state to `absent` in its inventory file (out for repair/RMA; its GPUs leave every quota)."""
    _set_state(host, paths, "absent")


@inventory_app.command("restore")
def restore_command(host: Annotated[str, _HOST], paths: Annotated[list[Path], _PATHS]) -> None:
    """Set HOST's state back to `active` in its inventory file (repaired or replaced; rack and block kept)."""
    _set_state(host, paths, "active")


@inventory_app.command("upgrade-plan")
def upgrade_plan_command(
    paths: Annotated[list[Path], _PATHS],
    to: Annotated[
        str | None,
        typer.Option("--to", help="Kubernetes release to reach, MAJOR.MINOR.PATCH, e.g. 1.36.1. Default: the inventory's upgrades.kubernetes (what pulumi up runs)."),
    ] = None,
    via: Annotated[list[str] | None, typer.Option("--via", help="Release of each minor version crossed on the way, e.g. 1.35.4 (repeat).")] = None,
    workers_last: Annotated[
        bool, typer.Option("--workers-last", help="Move the workers once, in the last step (at most 3 minors behind meanwhile).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    out: Annotated[Path | None, typer.Option(help="Also write every script of the upgrade here, with run-order.txt.")] = None,
) -> None:
    """Show the order and the checks of a Kubernetes upgrade (one minor at a time, control planes first) and of the inventory's
    NVIDIA driver/toolkit upgrade (upgrades.nvidia); exit 2 if a check fails."""
    import json

    from hybridgpu.inventory.upgrade import UpgradePlan, UpgradePlanError, plan_nvidia_upgrade, plan_upgrade
    from hybridgpu.render.upgrade import ScriptRun, nvidia_run_order, upgrade_run_order

    plan: UpgradePlan | None = None
    try:
        inventory = load_inventory(paths)
        wanted = inventory.site.upgrades.kubernetes if inventory.site.upgrades is not None else None
        nvidia = plan_nvidia_upgrade(inventory)
        if nvidia is not None and nvidia.issues:
            raise InventoryError(list(nvidia.issues))
        if to is None and wanted is None and nvidia is None:
            fail(
                "give --to X.Y.Z, or set upgrades.kubernetes.to or upgrades.nvidia in the inventory (the upgrades pulumi up runs; "
                "docs/upgrades.md)"
            )
        if to is None and wanted is not None:  # exactly what pulumi up carries out
            to, via, workers_last = wanted.to, list(wanted.via), wanted.workers_last
            if wanted.to == inventory.site.cluster.kubernetes_version:
                typer.echo(f"upgrades.kubernetes.to is {wanted.to}, the version that runs: nothing to upgrade")
                to = None
        if to is not None:
            plan = plan_upgrade(inventory, to, via=via or (), workers_last=workers_last)
    except (InventoryError, UpgradePlanError) as exc:
        fail(exc)
    document: dict[str, object] = {}
    if plan is not None:
        document = plan.to_dict()
        if not as_json:
            typer.echo(plan.text(80), nl=False)
    if nvidia is not None:
        document["nvidia"] = nvidia.to_dict()
        if not as_json:
            typer.echo(nvidia.text(80), nl=False)
    if as_json:
        console().print_json(json.dumps(document))
    if plan is not None and not plan.ok:
        fail(InventoryError([c.issue for c in plan.failures if c.issue is not None]))
    if out is not None:
        runs: tuple[ScriptRun, ...] = upgrade_run_order(plan, inventory.site.upgrades, mirrors=inventory.site.mirrors) if plan is not None else ()
        runs += nvidia_run_order(nvidia) if nvidia is not None else ()
        for run in runs:
            _write(out / run.name, run.text, 0o755)
        what = f"{plan.current} -> {plan.target}" if plan is not None else ""
        if nvidia is not None:
            what = f"{what}, then {nvidia.target}" if what else nvidia.target
        lines = [
            f"# {inventory.site.name}: {what}, in this order. node: as root on the host;",
            "# first-control-plane: as root there, KUBECONFIG=/etc/kubernetes/admin.conf.",
            "# After a failure, fix the cause and start again from the top: done steps skip.",
        ]
        if nvidia is not None:
            lines.append("# NVIDIA drain: set NODE_STATE to what the node's check script printed (at-target: it is not drained).")
            lines.append("# NVIDIA reboot-wait: set BOOT_ID to the boot id the install script printed (none: it did not reboot).")
        lines += [f"{run.where} {run.host} {run.name}" for run in runs]
        _write(out / "run-order.txt", "\n".join(lines) + "\n")
        if not as_json:
            typer.echo(f"{len(runs)} script(s) written to {out} (run-order.txt)")
