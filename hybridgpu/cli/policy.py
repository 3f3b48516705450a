"""``hybridgpu policy build-pack --out DIR``: a policy pack directory that ``pulumi policy publish`` can upload.

The checkout's ``policies/`` runs only next to this checkout (its requirements say ``-e ..``);
the built directory holds the pack, a wheel of hybridgpu and pinned requirements, and installs
from PyPI alone, as the Pulumi CLI installs an enforced pack
(:mod:`hybridgpu.shell.policy.bundle`; docs/policies.md, "Publishing and enabling the pack").

Exit codes: 0 built; 2 the checkout or ``--out`` is not usable (nothing is left in ``--out``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hybridgpu.cli.common import console, fail
from hybridgpu.errors import HybridGpuError
from hybridgpu.shell.policy.bundle import build_pack

policy_app = typer.Typer(no_args_is_help=True, help="The policy pack: build a self-contained directory for `pulumi policy publish`.")


@policy_app.command("build-pack")
def build_pack_command(
    out: Annotated[Path, typer.Option(help="Pack directory to create (must not exist or be empty; not under a .gitignored out/, build/ or dist/).")],
    root: Annotated[Path, typer.Option(help="The hybridgpu source checkout (holds pyproject.toml and policies/).")] = Path("."),
) -> None:
    """Build a self-contained policy pack directory: PulumiPolicy.yaml, __main__.py, a hybridgpu wheel and pinned requirements.txt."""
    try:
        built = build_pack(root, out)
    except HybridGpuError as exc:
        fail(exc)
    out_console = console()
    out_console.print(f"policy pack written to {built.directory}")
    for line in built.requirements:
        out_console.print(f"  {line}")
    for pin in built.pins:
        if pin.conflict:
            console(stderr=True).print(f"warning: not pinned: {pin.conflict}; requirements.txt says {pin.line}", soft_wrap=True)
    out_console.print(f"publish it: cd {built.directory} && pulumi policy publish <org-name>")
