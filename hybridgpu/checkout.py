"""Files of the hybridgpu source checkout that are not package data: ``docs/`` and ``tools/``.

Package data (the GPU catalog, MIG profiles, prices) ships in the wheel and is read with
:mod:`importlib.resources`. Repository tooling is not in the wheel: the generated references
under ``docs/`` (``python -m hybridgpu.docs_gen``, ``python -m hybridgpu.policy.docs``), the
npm schema tools under ``tools/schemas`` (:mod:`hybridgpu.schemas`) and checkov's skips under
``tools/security`` (:mod:`hybridgpu.security`). Those commands find the checkout from the
working directory, as the Pulumi CLI finds ``Pulumi.yaml``, or take its root as an argument;
when the file is not there, :class:`CheckoutFileMissing` says what is missing and how to fix it.
"""

from __future__ import annotations

from pathlib import Path

from hybridgpu.errors import HybridGpuError


class CheckoutFileMissing(HybridGpuError):
    """A file of the hybridgpu source checkout (``docs/``, ``tools/``) is not where it was looked for."""


def find_checkout(marker: str | Path, *, root: Path | str | None = None, needed_by: str = "this command", option: str | None = None) -> Path:
    """The root of the source checkout that holds ``marker`` (a path relative to the root).

    Args:
        marker: a file every checkout has, e.g. ``tools/schemas/validate-crds.mjs``.
        root: the checkout root, if the caller was given one (it must hold ``marker``);
            default: the nearest directory at or above the working directory that holds it.
        needed_by: what needs the file, for the error message (e.g. ``python -m hybridgpu.docs_gen --check``).
        option: the command-line option that gives the root (e.g. ``--root DIR``), named in the fix.

    Returns:
        The root directory (absolute).

    Raises:
        CheckoutFileMissing: ``marker`` is not under ``root``, or not at or above the working
            directory; the message names the file, where it looked and the fix.
    """
    marker = Path(marker)
    if root is not None:
        base = Path(root).resolve()
        if (base / marker).exists():
            return base
        raise CheckoutFileMissing(f"{base / marker} does not exist: {needed_by} needs {marker} of a hybridgpu source checkout; give the checkout's root")
    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        if (candidate / marker).exists():
            return candidate
    hint = f", or give the checkout's root with {option}" if option else ""
    raise CheckoutFileMissing(
        f"no {marker} at or above {here}: {needed_by} needs a hybridgpu source checkout (repository tooling is not "
        f"part of the installed package); fix: run it from a checkout of the hybridgpu repository{hint}"
    )
