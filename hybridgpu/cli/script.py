"""``hybridgpu script drain|reset``: print an on-prem host's lifecycle script to stdout (docs/onprem.md, "Taking a host out").

* ``hybridgpu script drain HOST [--timeout 1h] [--delete-node]``: cordon and drain the Node (and delete it),
  run where ``kubectl`` reaches the cluster (:func:`hybridgpu.render.bootstrap.drain_and_cordon_script`);
* ``hybridgpu script reset``: ``kubeadm reset`` on the host itself, as root
  (:func:`hybridgpu.render.bootstrap.reset_script`).

The script is the only thing on stdout, so it can be redirected to a file or piped to ``ssh HOST sudo bash -s``.
Exit codes: 0 printed, 2 bad input (nothing printed).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from hybridgpu.cli.common import fail
from hybridgpu.render.bootstrap import CRI_SOCKET, drain_and_cordon_script, reset_script

script_app = typer.Typer(no_args_is_help=True, help="Print an on-prem host's lifecycle script (drain, reset) to stdout.")


@script_app.command("drain")
def drain_command(
    host: Annotated[str, typer.Argument(metavar="HOST", help="The Node name (the host's hostname in the inventory).")],
    timeout: Annotated[str, typer.Option(metavar="DURATION", help="`kubectl drain --timeout`, e.g. 15m, 1h or 1h30m; long GPU jobs may need more.")] = "15m",
    delete_node: Annotated[bool, typer.Option("--delete-node", help="Delete the Node object after the drain (before `script reset` on the host).")] = False,
) -> None:
    """Print the script that cordons and drains HOST (run it where kubectl reaches the cluster)."""
    try:
        text = drain_and_cordon_script(host, timeout=timeout, delete_node=delete_node)
    except ValueError as exc:
        fail(f"{exc}; fix: give the host's Kubernetes node name (lowercase, e.g. dgx-h100-04) and a timeout like 15m or 1h30m")
    sys.stdout.write(text)


@script_app.command("reset")
def reset_command(
    cri_socket: Annotated[str, typer.Option(metavar="SOCKET", help="The container runtime's socket.")] = CRI_SOCKET,
) -> None:
    """Print the script that undoes kubeadm init/join on a host (run it on the host, as root); packages and containerd stay."""
    try:
        text = reset_script(cri_socket=cri_socket)
    except ValueError as exc:
        fail(f"{exc}; fix: give a unix:/// socket path, e.g. {CRI_SOCKET}")
    sys.stdout.write(text)
