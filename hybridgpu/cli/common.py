"""Console and error helpers shared by the ``hybridgpu`` command modules."""

from __future__ import annotations

import errno
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import typer
from typer import rich_utils
from typer.core import TyperGroup, TyperOption
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text


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
    ``error: <path>: <reason>; fix: ...`` with exit code 2, never a traceback. It also tidies the
    ``--help`` of every command below it (:func:`tidy_flags`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tidy_flags(self)

    def invoke(self, ctx: Any) -> Any:
        """Run the command; an ``OSError`` with a path becomes :func:`fail` with :func:`path_error_message`."""
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.filename is None and exc.errno is None:
                raise
            fail(path_error_message(exc))


class _HelpOptionsTable(Table):
    """The table of a ``--help`` options panel, with the option names never cut.

    typer 0.29 (``rich_utils._print_options_panel``) lays the names, types and help out in a rich
    table that shrinks every column alike when the terminal is narrow, so a long option name becomes
    ``--failure-restart-se…``. Here a column of option names does not wrap (rich then narrows only the
    wrapping columns: the types and the help), and a word wider than its column is folded onto the next
    line instead of cut. Used through :func:`tidy_flags`.
    """

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        """Add a row, then keep each column whose cells are all option names on one line."""
        for cell in renderables:  # a word wider than its column breaks across lines, never "…"
            for text in (cell, *getattr(cell, "renderables", ())):  # the help is a rich Columns of Texts
                if isinstance(text, Text):
                    text.overflow = "fold"
        super().add_row(*renderables, **kwargs)
        for index, column in enumerate(self.columns):
            cells = [c for c in column.cells if not isinstance(c, (str, Text)) or str(c).strip()]
            plain = [str(c) for c in cells]
            if plain and all(isinstance(c, (str, Text)) for c in cells) and all(t.startswith("-") for t in plain):
                column.no_wrap = True


def tidy_flags(command: Any) -> None:
    """Make the boolean flags of ``command`` and every command below it read plainly in ``--help``.

    typer 0.29 shows every flag's type (``--json <bool>``, ``--help <bool>``) and gives a flag named
    ``no_x`` the negative ``--no-no-x``. Here a flag shows no type (``metavar=""``; a flag takes no
    value), a flag that is off unless given shows no ``[default: no-x]``, and a flag that is itself a
    negative (``--no-onprem``) loses its ``--no-no-...`` twin.
    Takes a click command or group; changes its options in place, returns nothing.
    """
    rich_utils.Table = _HelpOptionsTable  # type: ignore[misc]  # option names never cut
    commands = getattr(command, "commands", None)
    for sub in (commands or {}).values():
        tidy_flags(sub)
    # typer builds a command's --help option on first use (and keeps it): build it here to tidy it too.
    help_option = command.get_help_option(typer.Context(command)) if hasattr(command, "get_help_option") else None
    for param in [*getattr(command, "params", []), *([help_option] if help_option is not None else [])]:
        if not (isinstance(param, TyperOption) and param.is_flag):
            continue
        param.metavar = ""
        if param.default is False:  # off unless given: "[default: no-json]" says nothing
            param.show_default = False
        if any(opt.startswith("--no-") for opt in param.opts):
            param.secondary_opts = [opt for opt in param.secondary_opts if not opt.startswith("--no-no-")]


# --------------------------------------------------------------------------- tables that fit

#: A value longer than this may wrap (at spaces) in a table cell; a shorter one keeps its line. A
#: table whose columns cannot each get this much (or their longest word) is printed as records.
WRAP_FLOOR = 24


@dataclass(frozen=True)
class Col:
    """A table column: its header and whether its values are right-aligned (numbers)."""

    header: str
    right: bool = False


Cell = str | Text


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _needs(text: str) -> tuple[int, int]:
    """``(narrowest, widest)`` cells a value needs: at least its longest word, or the whole value when it is
    no longer than :data:`WRAP_FLOOR`; at most its longest line."""
    lines = text.splitlines() or [""]
    widest = max(cell_len(line) for line in lines)
    word = max((cell_len(w) for line in lines for w in line.split()), default=0)
    return (widest if widest <= WRAP_FLOOR else max(word, WRAP_FLOOR)), widest


#: Table layouts :func:`print_table` tries, in order: ``(box, columns taken by rules and padding for n columns)``.
#: The boxed table; the same without rules, columns two spaces apart (as ``kubectl get`` prints them).
_LAYOUTS = ((box.HEAVY_HEAD, lambda n: 3 * n + 1), (None, lambda n: 2 * (n - 1)))


def column_widths(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, overhead: int | None = None) -> list[int] | None:
    """Content widths for a table of ``rows`` under ``headers`` in ``width`` console columns, or None when it does not fit.

    A table fits when every column can be as wide as its longest word (header words included) and every
    value of up to :data:`WRAP_FLOOR` cells keeps one line; rich then wraps longer values at spaces and
    never cuts one. Spare width goes to the columns that would wrap, in proportion to what they lack.
    ``overhead`` is what rules and padding take (default: a boxed table's ``3 n + 1``). Same input, same widths.
    """
    n = len(headers)
    avail = width - (3 * n + 1 if overhead is None else overhead)
    least, most = [], []
    for i, header in enumerate(headers):
        needs = [_needs(row[i]) for row in rows]
        least.append(max([max((cell_len(w) for w in header.split()), default=0), *(lo for lo, _ in needs)]))
        most.append(max([cell_len(header), *(hi for _, hi in needs)]))
    if sum(least) > avail:
        return None
    if sum(most) <= avail:
        return most
    widths = list(least)
    lack = [hi - lo for lo, hi in zip(least, most)]
    spare, total = avail - sum(least), sum(lack)
    for i in range(n):
        widths[i] += spare * lack[i] // total
    left = avail - sum(widths)
    for i in sorted(range(n), key=lambda i: (widths[i] - most[i], i))[:left]:  # the column furthest from its width first
        widths[i] += 1
    return widths


def print_table(out: Console, title: str | None, columns: Sequence[str | Col], rows: Sequence[Sequence[Cell]], *, show_lines: bool = False) -> None:
    """Print a table on ``out`` so that no value is ever cut: the one table helper of every command.

    When the table fits the console's width (:func:`column_widths`; a console that is not a terminal is
    as wide as ``COLUMNS``, else 80), a rich table with those column widths, long values wrapped at
    spaces; when only its rules are too many, the same table without them (columns two spaces apart).
    When neither fits, records: the title, then one ``header: value`` block per row (empty values left
    out, long values wrapped at spaces under the value column), a blank line after each.

    Args:
        out: the console to print on (:func:`console`).
        title: the table's title, or None.
        columns: headers (``str``, left-aligned) or :class:`Col`.
        rows: one sequence of cells per row, as many as ``columns``; a cell is plain text (never markup)
            or a rich ``Text`` (its style is kept).
    """
    cols = [c if isinstance(c, Col) else Col(c) for c in columns]
    headers = [c.header for c in cols]
    plain = [[_plain(cell) for cell in row] for row in rows]
    for table_box, overhead in _LAYOUTS:
        widths = column_widths(headers, plain, out.width, overhead(len(cols)))
        if widths is not None:
            break
    if widths is not None:
        if table_box is None:
            # Without rules, a blank line stands for show_lines' rule between rows.
            table = Table(title=escape(title) if title else None, box=None, pad_edge=False, leading=1 if show_lines else 0)
        else:
            table = Table(title=escape(title) if title else None, box=table_box, show_lines=show_lines)
        for col, w in zip(cols, widths):
            table.add_column(Text(col.header), justify="right" if col.right else "left", width=w, overflow="fold")
        for row in rows:
            table.add_row(*(cell if isinstance(cell, Text) else Text(str(cell)) for cell in row))
        out.print(table)
        return
    print_records(out, title, headers, rows)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` wrapped at spaces to ``width`` cells; a word longer than that stays whole on its own line."""
    lines = []
    for line in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(line, max(width, 1), break_long_words=False, break_on_hyphens=False) or [""])
    return lines


def print_wrapped(out: Console, text: str) -> None:
    """Print plain ``text`` (no markup) on ``out`` wrapped at spaces to the console width; a word longer than
    a line (a path) stays whole on its own line, never cut or folded."""
    for line in _wrap(text, out.width):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def print_records(out: Console, title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> None:
    """Print ``rows`` as records: the title, then per row one ``header: value`` line per non-empty cell, values
    aligned and wrapped at spaces to the console width (a word longer than the line stays whole), and a
    blank line after each row; a cell under an empty header is the row's name, printed alone first.
    Used by :func:`print_table` when a table does not fit."""
    width = out.width
    if title:
        for line in _wrap(title, width):
            out.print(Text(line, style="bold"), soft_wrap=True)
    key = max((cell_len(h) for h in headers), default=0) + 2
    indent = key if key <= width // 2 else 4
    for row in rows:
        for header, cell in zip(headers, row):
            value = _plain(cell)
            if not value.strip():
                continue
            style = cell.style if isinstance(cell, Text) else ""
            if not header.strip():  # a column without a header holds the row's name: it heads the block
                for piece in _wrap(value, width):
                    out.print(Text(piece, style=style or "bold"), soft_wrap=True)
                continue
            label = f"{header}:"
            if indent == key:
                first, rest = label.ljust(key), " " * key
                pieces = _wrap(value, width - key)
            else:  # headers too long to align under: the value starts on the next line
                out.print(label, markup=False, highlight=False, soft_wrap=True)
                first = rest = " " * indent
                pieces = _wrap(value, width - indent)
            for i, piece in enumerate(pieces):
                out.print(Text(first if i == 0 else rest) + Text(piece, style=style), soft_wrap=True)
        out.print()


def print_heading(out: Console, text: str, note: str = "") -> None:
    """A section heading: ``text`` in bold then ``note``, centred in a rule when it fits the console, else
    wrapped at spaces on lines of its own (rich's rule would cut a long title with ``…``). Plain text, not markup."""
    whole = f"{text} {note}".strip()
    if cell_len(whole) + 6 <= out.width:
        out.rule(Text(text, style="bold") + Text(f" {note}" if note else ""))
        return
    for line in _wrap(whole, out.width):
        out.print(Text(line, style="bold"), soft_wrap=True)


# --------------------------------------------------------------------------- progress


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (``isatty``; ``FORCE_COLOR`` and the like do not count: a CI log is not one)."""
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


@contextmanager
def progress(message: str) -> Iterator[Callable[[str], None]]:
    """A spinner with ``message`` on stderr while the block runs, only when stderr is a terminal; nothing otherwise.

    Yields a function that replaces the message (e.g. ``update("previewing prod (3/4)")``). The spinner
    is transient (erased at the end) and leaves stdout alone, so piped output stays as it is.
    """
    if not stderr_is_terminal():
        yield lambda _message: None
        return
    spinner = Spinner("dots", text=message)
    with Live(spinner, console=console(stderr=True), transient=True, redirect_stdout=False, refresh_per_second=10):
        yield lambda text: spinner.update(text=text)
