"""The ``hybridgpu`` app: every command group joined with typer (the console script ``hybridgpu`` runs it through :mod:`hybridgpu.cli.entry`).

* ``hybridgpu preview``: :mod:`hybridgpu.cli.preview`;
* ``hybridgpu validate``: :mod:`hybridgpu.cli.validate`;
* ``hybridgpu catalog``: :mod:`hybridgpu.cli.catalog`;
* ``hybridgpu check``: :mod:`hybridgpu.cli.check` (the policy pack, offline);
* ``hybridgpu policy build-pack`` / ``policy path``: :mod:`hybridgpu.cli.policy` (a pack directory for ``pulumi policy publish``; the installed pack);
* ``hybridgpu mig ...``, ``hybridgpu burst ...``, ``hybridgpu cost ...``: :mod:`hybridgpu.cli.mig`,
  :mod:`hybridgpu.cli.burst`, :mod:`hybridgpu.cli.cost`;
* ``hybridgpu inventory validate|render|export``: :mod:`hybridgpu.cli.inventory`.

Exit codes: 0 success, 1 a check found problems (``check``), 2 bad input (nothing was done).
"""

from __future__ import annotations

import sys
from importlib.metadata import version as package_version
from typing import Annotated

import typer

from hybridgpu.cli.burst import burst_app
from hybridgpu.cli.catalog import catalog
from hybridgpu.cli.check import check
from hybridgpu.cli.common import PathErrorsGroup
from hybridgpu.cli.cost import cost_app
from hybridgpu.cli.images import images
from hybridgpu.cli.init import init
from hybridgpu.cli.inventory import inventory_app
from hybridgpu.cli.job import job_app
from hybridgpu.cli.mig import mig_app
from hybridgpu.cli.policy import policy_app
from hybridgpu.cli.preview import preview
from hybridgpu.cli.script import script_app
from hybridgpu.cli.validate import validate

app = typer.Typer(
    cls=PathErrorsGroup, add_completion=False, no_args_is_help=True, help="Hybrid GPU clusters on Pulumi: offline preview, checks and catalog."
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hybridgpu {package_version('hybridgpu')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Hybrid GPU clusters on Pulumi: offline preview, checks and catalog."""
app.add_typer(mig_app, name="mig")
app.add_typer(cost_app, name="cost")
app.add_typer(burst_app, name="burst")
app.add_typer(inventory_app, name="inventory")
app.add_typer(policy_app, name="policy")
app.add_typer(job_app, name="job")
app.add_typer(script_app, name="script")
app.command("check")(check)
app.command("preview")(preview)
app.command("validate")(validate)
app.command("catalog")(catalog)
app.command("init")(init)
app.command("images")(images)


if __name__ == "__main__":  # pragma: no cover - `python -m hybridgpu` is the process entry (hybridgpu.cli.entry)
    sys.exit(app())
