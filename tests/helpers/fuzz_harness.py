"""Fuzzing harness: malformed inputs for every loader and CLI entry point (issue 8, item 5).

A :class:`FuzzTarget` is one entry point: a hypothesis strategy of malformed inputs (mutated
copies of the real example files) and a ``run`` that feeds one input to the entry point in a
scratch project directory. The harness asserts, for every input:

* the entry point returns, or raises one of our errors (``HybridGpuError``: the
  ``StackFileError``/``StackConfigError``/``DataFileError`` family); anything else, a
  traceback, is a bug;
* the error names the file it is about (and, for stack configuration, every issue names a key);
* a CLI run exits 0, 1 (a negative answer, e.g. "does not fit") or 2 (bad input, ``error:``
  printed), never with an exception;
* on failure nothing was written: the scratch project holds exactly the files it held before
  (so no ``out/``).

Adding a target is one entry in :data:`TARGETS` (see the bottom of the file). Mutations:
structural ones on the parsed YAML (drop a key, rename it, replace a value by junk: wrong
types, huge/negative/NaN numbers, unicode, deep nesting; wrap in a list, duplicate a sibling)
and textual ones on the bytes (truncate, binary junk, duplicated lines, i.e. duplicate keys,
tabs, a BOM, Latin-1, an extra document, Python tags, empty file); CSV inputs get cell, column
and line mutations.

The number of inputs per target comes from the hypothesis profile chosen by
``HYBRIDGPU_FUZZ`` (``full``: the dedicated run, ``make fuzz``; unset: the small CI sample);
:data:`CASES` counts the inputs actually run, printed at the end of the pytest session.
"""

from __future__ import annotations

import copy
import functools
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from hybridgpu.errors import HybridGpuError, StackConfigError

#: Inputs run per target in this session (printed by the conftest's terminal summary).
CASES: Counter[str] = Counter()
#: (target, outcome) -> inputs: ``rejected`` (our error, naming the file) or ``accepted`` (valid after all).
OUTCOMES: Counter[tuple[str, str]] = Counter()
#: The target whose inputs are running (set by the test; keys OUTCOMES).
CURRENT = {"target": "?"}


def malformed(target: str) -> int:
    """Inputs of ``target`` that were malformed: run, and neither accepted nor a valid negative answer (CLI exit 1)."""
    return CASES[target] - OUTCOMES[target, "accepted"] - OUTCOMES[target, "exit 1"]

#: The dedicated run feeds at least this many MALFORMED inputs (rejected ones; the few mutants
#: that are still valid do not count), so it runs 15% more inputs than that; CI runs a sample.
_MODE = os.environ.get("HYBRIDGPU_FUZZ", "")
FULL_RUN = _MODE == "full"
FULL_TOTAL = 10_000
#: ``HYBRIDGPU_FUZZ=<n>``: n random inputs per target (exploration between full runs).
CUSTOM_PER_TARGET = int(_MODE) if _MODE.isdigit() else None
RANDOM_RUN = FULL_RUN or CUSTOM_PER_TARGET is not None


# --------------------------------------------------------------------------- mutations

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


def _nest(depth: int) -> Any:
    value: Any = "x"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


#: Junk values that replace a node of a document.
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 10**30, -(10**30)]),
    st.floats(allow_nan=True, allow_infinity=True),
    _TEXT,
    st.sampled_from(
        ["", " ", "~", "null", "yes", "no", "1e400", "0x7fffffff", ".inf", "-.nan", "2026-13-45", "é😀日本", "a" * 5000, "\x00", "../../etc/passwd", "[secret]", "*"]
    ),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=4),
    st.dictionaries(_TEXT, st.integers(), max_size=3),
    st.integers(min_value=30, max_value=400).map(_nest),
)

_STRUCT_OPS = ("delete", "replace", "replace", "rename", "wrap", "add_key", "dup_sibling")


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += _paths(value, prefix + (index,))
    return found


def _get(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _mutate_tree(draw: Callable, doc: Any) -> Any:
    paths = [p for p in _paths(doc) if p]
    if not paths:
        return draw(JUNK)
    path = draw(st.sampled_from(paths))
    parent = _get(doc, path[:-1])
    key = path[-1]
    op = draw(st.sampled_from(_STRUCT_OPS))
    if op == "delete":
        del parent[key]
    elif op == "replace":
        parent[key] = draw(JUNK)
    elif op == "wrap":
        parent[key] = [parent[key]]
    elif op == "rename" and isinstance(parent, dict):
        new = draw(st.one_of(st.just(str(key) + "x"), st.just(str(key).upper()), st.just(str(key)[:-1]), _TEXT))
        parent[new] = parent.pop(key)
    elif op == "add_key" and isinstance(parent, dict):
        parent[draw(_TEXT)] = draw(JUNK)
    elif op == "dup_sibling" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    else:
        parent[key] = draw(JUNK)
    return doc


_TEXT_OPS = ("none", "none", "none", "truncate", "junk_bytes", "dup_line", "del_line", "tabs", "bom", "latin1", "extra_doc", "python_tag", "empty", "swap_lines")


@st.composite
def text_mutation(draw: Callable, text: str) -> bytes:
    """One textual mutation of ``text`` (possibly none), as bytes."""
    op = draw(st.sampled_from(_TEXT_OPS))
    lines = text.splitlines(keepends=True)
    if op == "truncate":
        return text.encode()[: draw(st.integers(0, max(0, len(text.encode()) - 1)))]
    if op == "junk_bytes":
        data = text.encode()
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=32)) + data[at:]
    if op in ("dup_line", "del_line", "swap_lines") and lines:
        i = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, len(lines) - 1))
        if op == "dup_line":
            lines.insert(i, lines[i])
        elif op == "del_line":
            del lines[i]
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "".join(lines).encode()
    if op == "tabs":
        return text.replace("  ", "\t", draw(st.integers(1, 5))).encode()
    if op == "bom":
        return b"\xef\xbb\xbf" + text.encode()
    if op == "latin1":
        return (text + "\n# caf\u00e9\n").encode("latin-1", errors="replace")
    if op == "extra_doc":
        return (text + "\n---\n" + draw(st.sampled_from(["[1, 2", "x: y", "- a", "{", "!!binary AAAA"]))).encode()
    if op == "python_tag":
        return (text + "\nevil: !!python/object/apply:os.system ['true']\n").encode()
    if op == "empty":
        return draw(st.sampled_from([b"", b"\n", b"---\n", b"null\n", b"[]\n", b"42\n"]))
    return text.encode()


@functools.lru_cache(maxsize=None)
def _parsed(text: str) -> list[Any]:
    return list(yaml.safe_load_all(text))


@st.composite
def mutated_yaml(draw: Callable, seeds: tuple[str, ...]) -> bytes:
    """A mutated copy of one of the YAML ``seeds``: 0-3 structural mutations, then a textual one."""
    text = draw(st.sampled_from(seeds))
    docs = copy.deepcopy(_parsed(text))
    for _ in range(draw(st.integers(0, 3))):
        index = draw(st.integers(0, len(docs) - 1)) if docs else 0
        if docs:
            docs[index] = _mutate_tree(draw, docs[index])
    try:
        dumped = yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True) if len(docs) != 1 else yaml.safe_dump(docs[0], sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, RecursionError):
        dumped = text
    return draw(text_mutation(dumped))


@st.composite
def mutated_json(draw: Callable, seeds: tuple[str, ...]) -> bytes:
    """A mutated copy of one of the JSON ``seeds``: 0-3 structural mutations, then a textual one."""
    import json

    doc = json.loads(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 3))):
        doc = _mutate_tree(draw, doc)
    try:
        dumped = json.dumps(doc, indent=2)
    except (TypeError, ValueError, RecursionError):
        dumped = json.dumps({"all": "advisory"})
    return draw(text_mutation(dumped))


_CELLS = st.one_of(
    st.sampled_from(["", " ", "-1", "0", "1e999", "nan", "inf", "-inf", "1.5", "x", "9" * 40, "1,2", '"', "None", "spot", "on-demand", "é"]),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    _TEXT.filter(lambda s: "\n" not in s and "\r" not in s),
)


@st.composite
def mutated_csv(draw: Callable, seeds: tuple[str, ...]) -> bytes:
    """A mutated copy of one of the CSV ``seeds``: cell, column and line mutations, then a textual one."""
    lines = draw(st.sampled_from(seeds)).splitlines()
    for _ in range(draw(st.integers(0, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        cells = lines[i].split(",")
        op = draw(st.sampled_from(["cell", "cell", "cell", "drop_col", "add_col", "drop_line", "dup_line", "header_case"]))
        if op == "cell":
            cells[draw(st.integers(0, len(cells) - 1))] = draw(_CELLS)
        elif op == "drop_col" and len(cells) > 1:
            del cells[draw(st.integers(0, len(cells) - 1))]
        elif op == "add_col":
            cells.append(draw(_CELLS))
        elif op == "drop_line":
            del lines[i]
            continue
        elif op == "dup_line":
            lines.insert(i, lines[i])
            continue
        elif op == "header_case":
            cells = [c.upper() for c in cells]
        lines[i] = ",".join(cells)
    return draw(text_mutation("\n".join(lines) + "\n"))


# --------------------------------------------------------------------------- checks


class Bug(AssertionError):
    """A fuzz input broke a promise of the harness (see the module docstring)."""


def _snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.rglob("*") if not p.is_symlink()}


def _names_a_file(exc: HybridGpuError, file: str, project: Path) -> bool:
    """The error names ``file``, or each of its issues names a file that exists (an input the
    mutated file pointed to, e.g. another inventory file of the site)."""
    if file in str(exc):
        return True
    issues = getattr(exc, "issues", None)
    return bool(issues) and all(getattr(i, "file", None) and (project / str(i.file)).exists() for i in issues)


def expect_our_error(call: Callable[[], Any], file: str, project: Path) -> HybridGpuError | None:
    """Run ``call``: it may succeed or raise HybridGpuError naming ``file``; nothing written on failure.

    Returns:
        The error raised, or None on success. Any other exception propagates (a bug).
    """
    before = _snapshot(project)
    try:
        call()
    except HybridGpuError as exc:
        message = str(exc)
        if not _names_a_file(exc, file, project):
            raise Bug(f"error does not name the file {file!r}: {message[:500]}") from exc
        if isinstance(exc, StackConfigError) and not all(issue.key for issue in exc.issues):
            raise Bug(f"a stack configuration issue names no key: {message[:500]}") from exc
        if _snapshot(project) != before:
            raise Bug("the failed call wrote or changed files") from exc
        OUTCOMES[CURRENT["target"], "rejected"] += 1
        return exc
    OUTCOMES[CURRENT["target"], "accepted"] += 1
    return None


def expect_clean_exit(result: Any, project: Path | None, before: dict | None, codes: tuple[int, ...] = (0, 1, 2)) -> None:
    """A CliRunner result: an allowed exit code, no exception but SystemExit, ``error:`` on 2, nothing written on failure."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise Bug(f"CLI raised {type(result.exception).__name__}: {result.exception}\n{result.output[-2000:]}") from result.exception
    if result.exit_code not in codes:
        raise Bug(f"CLI exit code {result.exit_code} not in {codes}: {result.output[-2000:]}")
    if "Traceback" in result.output:
        raise Bug(f"CLI printed a traceback: {result.output[-2000:]}")
    if result.exit_code == 2 and "error" not in result.output.lower():
        raise Bug(f"exit code 2 without an error message: {result.output[-2000:]}")
    if result.exit_code != 0 and project is not None and before is not None and _snapshot(project) != before:
        raise Bug("the failed CLI run wrote or changed files")
    OUTCOMES[CURRENT["target"], "accepted" if result.exit_code == 0 else f"exit {result.exit_code}"] += 1


def read_seeds(paths: list[Path], max_lines: int | None = None) -> tuple[str, ...]:
    """Seed texts (optionally the first ``max_lines`` lines of each)."""
    texts = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if max_lines is not None:
            text = "\n".join(text.splitlines()[:max_lines]) + "\n"
        texts.append(text)
    return tuple(texts)


@dataclass(frozen=True)
class FuzzTarget:
    """One entry point under fuzzing.

    Attributes:
        name: target name (test id and counter key).
        strategy: hypothesis strategy of inputs (usually bytes of a malformed file).
        run: feeds one input to the entry point; raises :class:`Bug` (or any non-HybridGpuError) on a bug.
    """

    name: str
    strategy: st.SearchStrategy
    run: Callable[[Any], None]
