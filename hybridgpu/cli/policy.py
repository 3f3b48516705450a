"""``hybridgpu policy``: where the installed pack is, and a pack directory for ``pulumi policy publish``.

* ``hybridgpu policy path``: the policy pack installed with hybridgpu
  (:data:`hybridgpu.shell.policy.pack.PACK_DIR`), for ``pulumi preview --policy-pack "$(hybridgpu policy path)"``;
  ``--python``: the interpreter hybridgpu runs in, for ``PULUMI_PYTHON_CMD`` (the Pulumi CLI starts
  a local Python pack with ``python3`` on PATH otherwise). Exit code 0.
* ``hybridgpu policy build-pack --out DIR``: a directory that holds the pack, a wheel of hybridgpu
  and pinned requirements, and installs from PyPI alone, as the Pulumi CLI installs an enforced
  pack (:mod:`hybridgpu.shell.policy.bundle`; docs/policies.md, "Publishing and enabling the pack").
  Exit codes: 0 built; 2 the checkout or ``--out`` is not usable (nothing is left in ``--out``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from hybridgpu.cli.common import console, fail
from hybridgpu.errors import HybridGpuError
from hybridgpu.shell.policy.bundle import build_pack
from hybridgpu.shell.policy.pack import PACK_DIR

policy_app = typer.Typer(
    no_args_is_help=True, help="The policy pack: where the installed pack is; a self-contained directory for `pulumi policy publish`."
)


@policy_app.command("path")
def path_command(
    python: Annotated[
        bool, typer.Option("--python", help="Print the Python interpreter hybridgpu runs in instead (for PULUMI_PYTHON_CMD).")
    ] = False,
) -> None:
    """Print the policy pack installed with hybridgpu: pulumi preview --policy-pack "$(hybridgpu policy path)"."""
    # Plain print: the path alone on one line, never wrapped or coloured, for "$(...)".
    print(sys.executable if python else PACK_DIR)


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
