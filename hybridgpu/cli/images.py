"""``hybridgpu images STACK [--json]``: every chart, image and package version the stack installs, for a mirroring tool.

Runs the offline preview (:func:`hybridgpu.shell.preview.run_preview`), takes chart, version and
repository from its Helm Release records, and lists them with the charts' images and the on-prem
packages, those the inventory's upgrades install included (:func:`hybridgpu.stack.images.list_images`): one
reference per line under ``# charts``, ``# images`` and ``# packages``, then a ``# unpinned: ...`` line for
anything not pinned; ``--json`` prints the same as JSON. The same stack gives the same bytes. Exit code 0, or 2 on a bad stack.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from hybridgpu.cli.common import fail
from hybridgpu.errors import HybridGpuError
from hybridgpu.shell.preview import run_preview
from hybridgpu.stack.files import find_project_root
from hybridgpu.render.chart_repos import upstream_release
from hybridgpu.stack.images import list_images
from hybridgpu.stack.load import load_stack

#: The Pulumi type of a Helm release (pulumi-kubernetes).
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def images(
    stack: Annotated[str, typer.Argument(help="Stack whose charts, images and packages to list (stacks/Pulumi.<stack>.yaml).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (charts, images, packages, unpinned) instead of lines.")] = False,
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
) -> None:
    """List every chart, container image and package version STACK installs, pinned, one per line (for mirroring)."""
    try:
        project = (root or find_project_root()).resolve()
        loaded = load_stack(stack, project)
        result = run_preview(loaded.config.stack, project, loaded=loaded)
    except HybridGpuError as exc:
        fail(exc)
    # What a mirroring tool copies: the upstream charts, also of the releases the site's chart mirrors serve.
    mirrors = loaded.inventory.site.mirrors if loaded.inventory is not None else None
    releases = [upstream_release(record.inputs, mirrors) for record in sorted(result.of_type(HELM_RELEASE), key=lambda r: r.urn)]
    # The toolkit and upgrades.nvidia run on the hosts only when they carry their own driver (onprem.nvidiaToolkit).
    host_driver = loaded.config.onprem.nvidia_toolkit if loaded.config.onprem is not None else True
    listing = list_images(releases, loaded.inventory, host_driver=host_driver)
    sys.stdout.write(listing.json() if as_json else listing.text())
