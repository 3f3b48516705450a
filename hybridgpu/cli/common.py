"""Console and error helpers shared by the ``hybridgpu`` command modules."""

from __future__ import annotations

import errno
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup
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


#: What to do about a file-system error, by errno (the message names the path and the reason).
_PATH_FIXES = {
    errno.EEXIST: "a file is in the way where a directory is needed: choose another path or remove that file",
    errno.ENOTDIR: "a part of the path is a file, not a directory: choose a path under a directory",
    errno.EISDIR: "that is a directory where a file is expected: name a file inside it",
    errno.ENOENT: "a directory on the path does not exist: create it first or choose another path",
    errno.EACCES: "no permission there: choose a path you can write to",
    errno.EPERM: "not permitted there: choose a path you can write to",
    errno.EROFS: "the file system is read-only: choose a path on a writable one",
    errno.ENOSPC: "the disk is full: free space or choose another disk",
}


def path_error_message(exc: OSError) -> str:
    """``<path>: <reason>`` and the fix for a file-system error a command hit (an ``--out``, ``--plot`` or
    input path), e.g. ``README.md: File exists; fix: a file is in the way ...``."""
    path = exc.filename if exc.filename is not None else "(path)"
    reason = exc.strerror or str(exc)
    fix = _PATH_FIXES.get(exc.errno or 0, "check the path and its permissions")
    return f"{path}: {reason}; fix: {fix}"


class PathErrorsGroup(TyperGroup):
    """The root command group: a file-system error escaping any command (an output path that names an
    existing file, a directory where a file is expected, a path that cannot be created) ends as
    ``error: <path>: <reason>; fix: ...`` with exit code 2, never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        """Run the command; an ``OSError`` with a path becomes :func:`fail` with :func:`path_error_message`."""
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.filename is None and exc.errno is None:
                raise
            fail(path_error_message(exc))
