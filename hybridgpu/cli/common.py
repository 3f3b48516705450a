"""Console and error helpers shared by the ``hybridgpu`` command modules."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape


def console(stderr: bool = False) -> Console:
    """A rich console, built per call so the terminal width (COLUMNS) is read when printing."""
    return Console(emoji=False, stderr=stderr, highlight=False)


def fail(message: object) -> NoReturn:
    """Print ``error: <message>`` to stderr and exit with code 2 (bad input; nothing was done)."""
    # The message is data (issue keys like `annotations[kueue.x-k8s.io/...]`, fixes like `instanceTypes: [p5.48xlarge]`):
    # escaped, or rich would take its square brackets for markup tags and drop them.
    console(stderr=True).print(f"[bold red]error:[/] {escape(str(message))}", markup=True, soft_wrap=True)
    raise typer.Exit(code=2)
