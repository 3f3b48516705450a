"""Error types for bad input, the one :class:`Issue` type they carry, and the one translation of
pydantic validation errors into issues.

Every problem with an input (a stack file, an inventory, a burst plan, a trace, a demand CSV,
a packaged data file or an override of one) is an :class:`Issue`: where the input came from (a
file), where in it the problem is (a key path, optionally inside an entry: a data-file entry,
an inventory host or a CSV line), what is wrong and how to fix it. The error classes, all
built on :class:`IssuesError` (a head line, then :func:`issue_lines`),
(:class:`StackConfigError` here, :class:`~hybridgpu.datafile.DataFileError` and its subclasses,
``InventoryError``, ``DemandFileError``) report every issue at once, before any Pulumi resource
is registered.

:func:`issues_from_validation` is the one place a pydantic ``ValidationError`` becomes issues;
:func:`fix_for` is the one fix hint for a pydantic error. Each loader passes a small strategy:
how a location is written as a key path in its kind of file (``key_of``), the entry the model
validated, and the document that describes every key (``reference``).

Pure and import-light: nothing from other :mod:`hybridgpu` packages except :mod:`hybridgpu.modelbase`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ValidationError

from hybridgpu.modelbase import model_at

#: How an issue's ``entry`` is named: a data-file entry (``entry 'g5.xlarge'``), an inventory
#: host (``host gpu-01``) or a 1-based CSV line (``line 3``).
EntryKind = Literal["entry", "host", "line"]
_ENTRY_KINDS = ("entry", "host", "line")

#: The stack configuration reference, named in the fix hints of stack files.
CONFIG_REFERENCE = "docs/config-reference.md"
_MAX_SHOWN_VALUE = 80
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


#: Issues spelled out in an error's message; the rest are counted in one closing line (all of
#: them stay in the error's ``issues``). Issue 17: a 10,000-host inventory with one repeated
#: mistake printed 20,001 lines.
MAX_SHOWN_ISSUES = 50


class HybridGpuError(Exception):
    """Base class of every error this toolkit raises on purpose for bad input."""


def issue_lines(issues: Sequence[Issue], limit: int = MAX_SHOWN_ISSUES) -> list[str]:
    """The message lines of ``issues``: the first ``limit`` as ``  - <issue>``, then ``  ... and N more``.

    Args:
        issues: the issues, in the order to show them.
        limit: how many to spell out (default :data:`MAX_SHOWN_ISSUES`).

    Returns:
        One string per shown issue (each spans two lines: the problem and its fix), plus one
        line counting the rest when there are more than ``limit``.
    """
    lines = [f"  - {issue}" for issue in issues[:limit]]
    if len(issues) > limit:
        rest = len(issues) - limit
        lines.append(f"  ... and {rest} more problem{'s' if rest > 1 else ''} not shown (fix the ones above and run again)")
    return lines


@dataclass(frozen=True)
class Issue:
    """One problem found in an input file, with how to fix it.

    Attributes:
        file: the file as the user knows it, e.g. ``stacks/Pulumi.dev.yaml``,
            ``stacks/inventory/onprem-site-a.yaml`` or a packaged data file's path.
        key: key path of the offending value inside the file (inside ``entry`` when there is
            one); ``None`` for a problem with the file (or the whole entry). Notation per kind
            of file: ``hybridgpu:cloud.nodePools[1].weight`` in stack files,
            ``gpu.migLayouts[1].layout['3g.40gb']`` relative to an inventory host,
            ``profiles[2g.10gb].size`` in a data-file entry, a column name on a CSV line.
        message: what is wrong, with the offending value where useful (never a secret).
        fix: what to change to make it right (required, non-empty).
        code: short machine-readable rule name, e.g. ``schema`` (the default),
            ``duplicate-hostname``, ``renamed-field``, ``yaml``, ``file``.
        entry: the entry the key is inside: a data-file entry's name (or ``#<index>``), an
            inventory host's hostname (or ``hosts[<index>]``), a CSV line number; ``None``
            when the key is relative to the file.
        entry_kind: how ``entry`` (and ``key``) are written (:data:`EntryKind`); ``None``
            for stack files, whose key paths need no entry.

    The per-kind views of the older issue types are properties: :attr:`field` (the key),
    :attr:`host` and :attr:`line`. Build issues with the constructor or with
    :meth:`in_entry`, :meth:`on_host` and :meth:`on_line`.

    Raises:
        ValueError: (on construction) an empty ``fix``, an unknown ``entry_kind``, or an
            ``entry`` without an ``entry_kind``.
    """

    file: str
    key: str | None
    message: str
    fix: str
    code: str = "schema"
    entry: str | None = None
    entry_kind: EntryKind | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.fix, str) or not self.fix.strip():
            raise ValueError(f"an Issue needs a fix (file {self.file!r}, key {self.key!r}: {self.message})")
        if self.entry_kind is not None and self.entry_kind not in _ENTRY_KINDS:
            raise ValueError(f"entry_kind must be one of {', '.join(_ENTRY_KINDS)}, got {self.entry_kind!r}")
        if self.entry is not None and self.entry_kind is None:
            raise ValueError("an Issue with an entry needs an entry_kind")

    @classmethod
    def in_entry(cls, file: str, entry: str | None, field: str | None, message: str, fix: str, code: str = "schema") -> Issue:
        """An issue of a data file: ``entry`` names the entry (None: the file), ``field`` the key in it.

        Printed as ``file: entry 'g5.xlarge': field 'gpuModel': message`` plus the fix line.
        """
        return cls(file, field, message, fix, code, entry, "entry")

    @classmethod
    def on_host(cls, file: str, host: str | None, field: str | None, message: str, fix: str, code: str = "schema") -> Issue:
        """An issue of an inventory: ``host`` (None: the site or the file) and ``field``, its key path.

        Printed as ``file: host gpu-01: gpu.count: message`` plus the fix line.
        """
        return cls(file, field, message, fix, code, host, "host")

    @classmethod
    def on_line(cls, file: str, line: int | None, field: str | None, message: str, fix: str, code: str = "schema") -> Issue:
        """An issue of a CSV file: 1-based ``line`` (None: the file as a whole) and ``field``, the column.

        Printed as ``file: line 3: field 'gpus': message`` plus the fix line.
        """
        return cls(file, field, message, fix, code, None if line is None else str(line), "line")

    @property
    def field(self) -> str | None:
        """The key path (:attr:`key`): the field of a data-file entry, inventory host or CSV line."""
        return self.key

    @property
    def host(self) -> str | None:
        """The inventory host the issue is about (None: not a host issue, or the site/file)."""
        return self.entry if self.entry_kind == "host" else None

    @property
    def line(self) -> int | None:
        """The 1-based CSV line the issue is about (None: not a line issue, or the whole file)."""
        return int(self.entry) if self.entry_kind == "line" and self.entry is not None else None

    @property
    def where(self) -> str:
        """Where the problem is, as printed before the message: ``file[: entry][: key]``."""
        parts = [self.file]
        if self.entry is not None:
            parts.append({"host": f"host {self.entry}", "line": f"line {self.entry}"}.get(self.entry_kind or "", f"entry {self.entry!r}"))
        if self.key is not None:
            parts.append(f"field {self.key!r}" if self.entry_kind in ("entry", "line") else self.key)
        return ": ".join(parts)

    def __str__(self) -> str:
        return f"{self.where}: {self.message}\n    fix: {self.fix}"


class FieldError(ValueError):
    """A model validator's error that names the key at fault (relative to the model validated).

    Raise it from a ``model_validator`` so that :func:`issues_from_validation` reports the
    problem at ``<model's path>.<field>`` instead of at the model as a whole.

    Args:
        field: the key (path) at fault, in the file's spelling, e.g. ``unverifiedFields`` or
            ``profiles[1g.10gb].starts``.
        message: what is wrong.
        fix: how to fix it; None: the generic hint of :func:`fix_for`.
    """

    def __init__(self, field: str, message: str, fix: str | None = None):
        self.field = field
        self.fix = fix
        super().__init__(message)


class IssuesError(HybridGpuError):
    """Base of the errors that report every :class:`Issue` found at once.

    The message is :meth:`head` (one line, from ``issues``), then :func:`issue_lines`.
    Subclasses override :meth:`head` and, to spell out every issue, set :attr:`MAX_SHOWN` to None.

    Args:
        issues: the problems (at least one), in the order to report them.

    Attributes:
        issues: the problems, in the order given.

    Raises:
        ValueError: (on construction) no issue given.
    """

    #: At most this many issues are spelled out in the message (None: all of them).
    MAX_SHOWN: ClassVar[int | None] = MAX_SHOWN_ISSUES

    def __init__(self, issues: Sequence[Issue]):
        if not issues:
            raise ValueError(f"{type(self).__name__} needs at least one issue")
        self.issues = list(issues)
        limit = len(self.issues) if self.MAX_SHOWN is None else self.MAX_SHOWN
        super().__init__("\n".join([self.head(), *issue_lines(self.issues, limit)]))

    @property
    def count_text(self) -> str:
        """``N problem`` or ``N problems``, for :meth:`head`."""
        count = len(self.issues)
        return f"{count} problem{'s' if count > 1 else ''}"

    def head(self) -> str:
        """The message's first line (``self.issues`` is set, non-empty)."""
        return f"{self.count_text}:"


class StackConfigError(IssuesError):
    """A stack configuration is invalid; raised before any resource is registered.

    Args:
        issues: every problem found (all of them are reported at once, not just the first).

    Raises:
        ValueError: (on construction) no issue given.
    """

    def head(self) -> str:
        return f"{self.count_text} in stack configuration {self.issues[0].file}:"

    @property
    def keys(self) -> list[str]:
        """The key paths of all issues, in the order found."""
        return [issue.key or "" for issue in self.issues]


class StackFileError(HybridGpuError):
    """A stack file cannot be read at all (missing, not YAML, no ``config`` mapping)."""


def suggest(name: str, options: Iterable[str]) -> str:
    """The close-match hint appended to "unknown name" messages.

    Args:
        name: what the user wrote.
        options: the valid names.

    Returns:
        `` (did you mean a, b?)`` with up to three close matches, or ``""`` when none is close.
    """
    close = difflib.get_close_matches(name, list(options), n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""


# --------------------------------------------------------------------------- pydantic errors -> issues


def shown(value: Any, limit: int = _MAX_SHOWN_VALUE) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters (a broken ``repr`` is replaced, never raised)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr must never break error reporting
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_path(loc: Sequence[Any]) -> str:
    """The key path of a pydantic error location, as data files and inventories write it.

    ``("gpu", "migLayouts", 1, "layout", "3g.40gb")`` -> ``gpu.migLayouts[1].layout['3g.40gb']``:
    list indices in brackets, identifier-like keys after dots, other keys quoted in brackets;
    pydantic's ``[key]`` marker (an invalid mapping key) is dropped. ``()`` -> ``""``.
    """
    out = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif part == "[key]":
            continue
        elif isinstance(part, str) and _IDENT.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{shown(part, 40)}]"
    return out


def join_key(prefix: str | None, path: str | None) -> str:
    """``prefix`` and ``path`` joined as one key path (``a`` + ``b`` -> ``a.b``; ``a`` + ``[0]`` -> ``a[0]``)."""
    if not prefix:
        return path or ""
    if not path:
        return prefix
    return prefix + (path if path.startswith("[") else "." + path)


def allowed_keys(model: type[BaseModel]) -> list[str]:
    """The keys ``model`` accepts, as files spell them (aliases), sorted."""
    return sorted(f.alias or n for n, f in model.model_fields.items())


def _close(name: Any, allowed: Sequence[str]) -> str | None:
    found = difflib.get_close_matches(str(name), list(allowed), n=1)
    return found[0] if found else None


def unknown_key_fix(name: Any, allowed: Sequence[str]) -> str:
    """The fix of an unknown key: ``did you mean `x`? remove the key or use one of: ...``.

    Args:
        name: the unknown key as written.
        allowed: the keys allowed where it is (empty: only "remove the key").
    """
    if not allowed:
        return "remove the key"
    close = _close(name, allowed)
    hint = f"did you mean `{close}`? " if close else ""
    return f"{hint}remove the key or use one of: {', '.join(allowed)}"


def fix_for(
    error: Mapping[str, Any],
    root: type[BaseModel] | None,
    *,
    reference: str = CONFIG_REFERENCE,
    pattern_fixes: Mapping[str, str] | None = None,
) -> str:
    """The fix hint of one pydantic error (an entry of ``ValidationError.errors()``).

    Args:
        error: the error; its ``loc`` relative to ``root``.
        root: the model validated (to list the keys allowed next to an unknown one), or None.
        reference: what documents every key of this kind of file, e.g.
            ``docs/config-reference.md`` or ``the sample stacks/inventory/onprem-site-a.yaml``.
        pattern_fixes: friendlier fixes for pattern mismatches by field name (the nearest
            named key of ``loc`` that has one), e.g. ``{"hostname": "lower-case letters ..."}``.

    Returns:
        A concrete instruction, never empty: for an unknown key the close match and the
        allowed keys; for a missing one the key to add; the bound for a range; the values of
        an enum; the expected shape for a wrong type; the ``fix`` of a :class:`FieldError`.
    """
    kind = error["type"]
    ctx = error.get("ctx") or {}
    loc = tuple(error.get("loc", ()))
    names = [p for p in loc if isinstance(p, str) and p != "[key]"]
    last = names[-1] if names else ""
    cause = ctx.get("error")
    if isinstance(cause, FieldError) and cause.fix:
        return cause.fix
    if kind == "extra_forbidden":
        model = model_at(root, loc)
        return unknown_key_fix(loc[-1] if loc else "", allowed_keys(model)) if model is not None else f"remove the key ({reference} documents every field)"
    if kind == "missing":
        return f"add `{last}` ({reference} documents every field)" if last else f"add the missing key ({reference} documents every field)"
    if kind in ("literal_error", "enum"):
        return f"use one of {ctx.get('expected', 'the documented values')}"
    if kind == "string_pattern_mismatch":
        known = next((n for n in reversed(names) if pattern_fixes and n in pattern_fixes), None)
        return f"write {pattern_fixes[known]}" if known is not None and pattern_fixes else f"match the pattern {ctx.get('pattern')}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "write a whole number without quotes"
    if kind in ("float_type", "float_parsing", "decimal_type", "decimal_parsing"):
        return "write a number without quotes"
    if kind in ("bool_type", "bool_parsing"):
        return "write true or false without quotes"
    if kind == "string_type":
        return 'write text; quote values YAML would read as numbers, booleans or dates (e.g. "1.35.2")'
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "write a mapping (`key: value` lines)"
    if kind in ("list_type", "tuple_type", "set_type", "frozen_set_type"):
        return "write a list (`- item` lines or `[a, b]`)"
    if kind in ("greater_than_equal", "greater_than"):
        return f"use a value {'>=' if kind.endswith('equal') else '>'} {ctx.get('ge', ctx.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return f"use a value {'<=' if kind.endswith('equal') else '<'} {ctx.get('le', ctx.get('lt'))}"
    if kind == "multiple_of":
        return f"use a multiple of {ctx.get('multiple_of')}"
    if kind == "finite_number":
        return "write a finite number"
    if kind == "too_short":
        least = ctx.get("min_length", 1)
        return f"give at least {least} entr{'y' if least == 1 else 'ies'}"
    if kind == "too_long":
        return f"give at most {ctx.get('max_length')} entries"
    if kind == "string_too_long":
        return f"shorten it to at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        least = ctx.get("min_length", 1)
        return "give a non-empty value" if least == 1 else f"write at least {least} characters"
    if kind in ("date_type", "date_parsing", "date_from_datetime_parsing"):
        return "write a date as YYYY-MM-DD"
    if kind == "value_error":
        return f"correct the value as the message says ({reference} documents the field)"
    return f"correct the value ({reference} documents the field's type and allowed values)"


def _message(error: Mapping[str, Any], root: type[BaseModel] | None, hide_input: Callable[[tuple[Any, ...], Any], bool] | None) -> str:
    kind = error["type"]
    loc = tuple(error.get("loc", ()))
    cause = (error.get("ctx") or {}).get("error")
    if kind == "extra_forbidden":
        model = model_at(root, loc)
        close = _close(loc[-1], allowed_keys(model)) if model is not None and loc else None
        return f"unknown key; did you mean `{close}`?" if close else "unknown key"
    if kind == "string_pattern_mismatch":
        message = "has the wrong format"
    elif kind == "value_error" and isinstance(cause, ValueError):
        message = str(cause)
    else:
        message = str(error["msg"])
    if loc and loc[-1] == "[key]":
        message = f"key: {message}"
    value = error.get("input")
    if kind != "missing" and "input" in error and not isinstance(value, (dict, list, tuple)) and not (hide_input and hide_input(loc, value)):
        message = f"{message} (got {shown(value)})"
    return message


def _nested_too_short(error: Mapping[str, Any], errors: Sequence[Mapping[str, Any]]) -> bool:
    """A ``too_short`` error of a list whose own items failed (those errors say why; this one is noise)."""
    loc = tuple(error.get("loc", ()))
    return error["type"] == "too_short" and any(len(o.get("loc", ())) > len(loc) and tuple(o["loc"][: len(loc)]) == loc for o in errors)


def issues_from_validation(
    errors: ValidationError | Iterable[Mapping[str, Any]],
    *,
    file: str,
    root: type[BaseModel] | None,
    reference: str,
    key_of: Callable[[tuple[Any, ...]], str | None] = key_path,
    entry: str | None = None,
    entry_kind: EntryKind | None = None,
    pattern_fixes: Mapping[str, str] | None = None,
    hide_input: Callable[[tuple[Any, ...], Any], bool] | None = None,
    code: str = "schema",
) -> list[Issue]:
    """The issues of a pydantic validation failure: one per error, each with key path, message and fix.

    Args:
        errors: the ``ValidationError`` (or entries of its ``errors()``), locations relative to ``root``.
        file: the file the validated value came from, as the user knows it.
        root: the model validated (to name the keys allowed next to an unknown one), or None.
        reference: what documents every key of this kind of file (see :func:`fix_for`).
        key_of: the file kind's key-path notation for a location (default :func:`key_path`);
            ``""``/None means the validated value itself.
        entry, entry_kind: the entry validated (a data-file entry, an inventory host), if any.
        pattern_fixes: friendlier fixes for pattern mismatches by field name (:func:`fix_for`).
        hide_input: ``(loc, value) -> True`` when the offending value must not be shown (a secret).
        code: the issues' rule code.

    Returns:
        The issues, in pydantic's order. Unknown keys read ``unknown key; did you mean `x`?``;
        a :class:`FieldError` raised by a model validator is reported at its field, with its
        message (and its fix, if it has one); a list's ``too_short`` error is dropped when its
        own items' errors are reported.

    Raises:
        Nothing for any pydantic error: every error becomes an issue with a fix (:func:`fix_for`
        never returns an empty hint).
    """
    found = errors.errors(include_url=False) if isinstance(errors, ValidationError) else list(errors)
    issues = []
    for error in found:
        if _nested_too_short(error, found):
            continue
        loc = tuple(error.get("loc", ()))
        key = key_of(loc)
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, FieldError):
            key = join_key(key, cause.field)
        fix = fix_for(error, root, reference=reference, pattern_fixes=pattern_fixes)
        issues.append(Issue(file, key or None, _message(error, root, hide_input), fix, code, entry, entry_kind))
    return issues
