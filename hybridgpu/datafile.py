"""Shared plumbing of the packaged data files (GPU catalog, MIG profiles, prices) and other data inputs: pure, no Pulumi.

* :class:`DataFileError`: base of the per-file errors (``CatalogError``, ``MigDataError``,
  ``EconomicsDataError``, ``BurstPlanError``, ``TraceError``); reports every
  :class:`~hybridgpu.errors.Issue` at once.
* :data:`SAFE_LOADER`, :func:`load_yaml`, :func:`load_yaml_all`: ``yaml.safe_load`` with libyaml's parser
  (the same safe constructors, several times faster), the one YAML reader of stack files, kubeconfigs and manifests.
* every YAML reader here parses with the collector paused (:func:`hybridgpu.collector.gc_paused`).
* :func:`load_unique_yaml`: YAML that refuses duplicate keys (PyYAML keeps the last silently) and
  accepts merge keys (``<<: *defaults``) as ``yaml.safe_load`` does.
* :func:`dump_yaml`, :func:`dump_yaml_all`: the one YAML writer, in one of the :class:`YamlStyle` s
  the consumers need (:data:`SORTED`, :data:`ORDERED`, :data:`TEMPLATE`).
* :func:`top_level_entries`: the non-empty list under a file's single top-level key.
* :func:`read_model_file`: a user's YAML file (burst plan, teams file) validated by its pydantic model.
* :func:`stray_key_issue`, :func:`not_a_mapping_issue`, :func:`unreadable_issue`: the issues
  every data-file loader reports the same way; :func:`describe_yaml_error`: a YAML syntax error as
  one line (position, the usual slip), for the caller to prefix with the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from hybridgpu.collector import gc_paused
from hybridgpu.errors import EntryKind, Issue, IssuesError, issues_from_validation, unknown_key_fix

_M = TypeVar("_M", bound=BaseModel)


class DataFileError(IssuesError):
    """A packaged data file is invalid; every problem found is reported, not only the first.

    Subclasses set :attr:`what` (e.g. ``"GPU catalog data"``) for the message head.

    Args:
        issues: the problems (at least one), each an :class:`~hybridgpu.errors.Issue` naming the
            file, the entry (data-file entry or CSV line) and the field, with a fix.

    Attributes:
        issues: the problems, in the order found.
        file, entry, field: those of the first issue (shortcuts for the single-problem case).

    Raises:
        ValueError: (on construction) no issue given.
    """

    what: ClassVar[str] = "data file"
    MAX_SHOWN = None

    def __init__(self, issues: list[Issue]):
        super().__init__(issues)
        first = self.issues[0]
        self.file = first.file
        self.entry = first.entry
        self.field = first.field

    def head(self) -> str:
        return f"{self.count_text} in the {self.what}:"


#: The loader of :func:`load_yaml`: PyYAML's safe constructors and resolver (so the same values as
#: ``yaml.safe_load``), with libyaml's parser when PyYAML was built with it (several times faster).
SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)`` with :data:`SAFE_LOADER`, the collector paused (:func:`gc_paused`).

    Raises:
        yaml.YAMLError: invalid YAML.
    """
    with gc_paused():
        return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 - a SafeLoader


def load_yaml_all(text: str) -> list[Any]:
    """``list(yaml.safe_load_all(text))`` with :data:`SAFE_LOADER` (every document, empty ones as None), the collector paused.

    Raises:
        yaml.YAMLError: invalid YAML.
    """
    with gc_paused():
        return list(yaml.load_all(text, Loader=SAFE_LOADER))  # noqa: S506 - a SafeLoader


class UniqueKeyLoader(SAFE_LOADER):
    """libyaml's safe loader (the pure-Python one without libyaml) refusing duplicate mapping keys.

    An unhashable key (a list or mapping used as a key) is a YAML error, not a ``TypeError``.
    """


#: Tag of the merge key ``<<`` (YAML 1.1 merge key type, https://yaml.org/type/merge.html).
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    """The mapping of ``node``, refusing a key written twice in it.

    Merge keys (``<<: *a``, ``<<: [*a, *b]``) are not duplicates: the constructor's own
    ``flatten_mapping`` merges them as ``yaml.safe_load`` does (the mapping's own keys win, then
    the merged mappings in order), so only the keys written in the mapping itself are compared.
    """
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found an unhashable key (a list or mapping)", key_node.start_mark
            ) from None
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_unique_yaml(text: str) -> Any:
    """Parse one YAML document like ``yaml.safe_load`` but raise ``yaml.YAMLError`` on a duplicate or unhashable key.

    Merge keys (``<<: *defaults``) are accepted, with ``yaml.safe_load``'s result.

    The collector is paused while parsing (:func:`gc_paused`).

    Raises:
        yaml.YAMLError: invalid YAML, a duplicate or an unhashable mapping key.
    """
    with gc_paused():
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def load_unique_yaml_all(text: str) -> list[Any]:
    """Every non-empty document of a multi-document YAML text (see :func:`load_unique_yaml`).

    Raises:
        yaml.YAMLError: invalid YAML, a duplicate or an unhashable mapping key.
    """
    with gc_paused():
        return [doc for doc in yaml.load_all(text, Loader=UniqueKeyLoader) if doc is not None]  # noqa: S506


# --------------------------------------------------------------------------- writing YAML


class _TemplateDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe dumper (libyaml's emitter when PyYAML has it) that writes no anchors or aliases (a dict used twice is written twice: kubeadm
    reads every document on its own) and double-quotes every string holding a ``${NAME}`` placeholder,
    so a substituted value stays a string (an all-digit token or key would otherwise read as a number)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if "${" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_TemplateDumper.add_representer(str, _represent_str)


@dataclass(frozen=True)
class YamlStyle:
    """How :func:`dump_yaml` writes: always block style (``default_flow_style=False``) with PyYAML's safe representers.

    Attributes:
        sort_keys: keys sorted (True) or in insertion order (False).
        width: the preferred line width (PyYAML folds long plain scalars at it).
        dumper: the dumper class (a :class:`yaml.SafeDumper` subclass).
    """

    sort_keys: bool
    width: int
    dumper: type = yaml.SafeDumper


#: Rendered manifests, chart values and golden files: sorted keys (the wire format keeps no order; sorting keeps output stable), width 120.
SORTED = YamlStyle(sort_keys=True, width=120)
#: Documents a person reads in the order written (Kueue Configuration, audit policy, PulumiPolicy.yaml): insertion order, PyYAML's width 80.
ORDERED = YamlStyle(sort_keys=False, width=80)
#: Templates with ``${NAME}`` placeholders substituted later (kubeadm configs): insertion order, no line folding, no aliases.
TEMPLATE = YamlStyle(sort_keys=False, width=4096, dumper=_TemplateDumper)


def dump_yaml(doc: Any, style: YamlStyle = SORTED) -> str:
    """``doc`` as one YAML document in ``style`` (default :data:`SORTED`).

    Raises:
        yaml.representer.RepresenterError: ``doc`` holds a value YAML's safe representers cannot write.
    """
    return yaml.dump(doc, Dumper=style.dumper, sort_keys=style.sort_keys, default_flow_style=False, width=style.width)


def dump_yaml_all(docs: Iterable[Any], style: YamlStyle = SORTED, *, explicit_start: bool = True) -> str:
    """``docs`` as a multi-document YAML text in ``style``; ``explicit_start``: ``---`` before the first document too.

    Raises:
        yaml.representer.RepresenterError: a document holds a value YAML's safe representers cannot write.
    """
    return yaml.dump_all(list(docs), Dumper=style.dumper, sort_keys=style.sort_keys, default_flow_style=False, width=style.width, explicit_start=explicit_start)


def top_level_entries(text: str, file: str, top_key: str, error: type[DataFileError]) -> list[Any]:
    """The non-empty list under ``top_key``, the only top-level key of the file.

    Args:
        text: the file's text.
        file: the file as named in issues.
        top_key: the file's only top-level key, e.g. ``gpuModels``.
        error: the :class:`DataFileError` subclass to raise.

    Returns:
        The entries (each still to be validated by the caller).

    Raises:
        error: (the caller's :class:`DataFileError` subclass) the text is not YAML, has a
            duplicate key, another top level, or an empty/non-list entry list.
    """
    try:
        document = load_unique_yaml(text)
    except yaml.YAMLError as exc:
        raise error([Issue.in_entry(file, None, None, f"not valid YAML: {describe_yaml_error(exc, text)}", "correct the YAML syntax at the position shown", "yaml")]) from exc
    if not isinstance(document, dict) or set(document) != {top_key}:
        keys = sorted(document, key=str) if isinstance(document, dict) else type(document).__name__
        fix = f"make `{top_key}:` the file's only top-level key, holding the list of entries"
        raise error([Issue.in_entry(file, None, None, f"the top level must be a mapping with the single key {top_key!r}; got {keys}", fix, "document")])
    entries = document[top_key]
    if not isinstance(entries, list) or not entries:
        fix = f"list the entries under `{top_key}:`, one `- name: ...` mapping each"
        raise error([Issue.in_entry(file, None, top_key, "must be a non-empty list of entries", fix, "document")])
    return entries


def describe_yaml_error(exc: yaml.YAMLError, text: str | None = None) -> str:
    """One line saying where and why ``exc`` stopped the parse, without PyYAML's ``in "<unicode string>"``
    (the caller names the file), and what the usual slip is.

    Args:
        exc: the error from a loader of this module.
        text: the parsed text, to recognise a tab at the error position (YAML 1.1 section 5.5:
            tabs are not indentation).

    Returns:
        E.g. ``line 3, column 1: a tab character; YAML indents with spaces only, replace the tab with spaces``.
    """
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or ""
    context = getattr(exc, "context", None) or ""
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    line = ""
    if mark is not None and text is not None:
        lines = text.splitlines()
        line = lines[mark.line] if mark.line < len(lines) else ""
    if "\t" in line[: (mark.column + 1) if mark is not None else 0] or "found character '\\t'" in problem:
        return f"{where}a tab character; YAML indents with spaces only, replace the tab with spaces"
    if problem == "mapping values are not allowed here" or problem.startswith("mapping values are not allowed"):
        return f"{where}a `key:` where YAML expects none: check the indentation of this line against the line above, or quote a value containing `: `"
    if "expected <block end>" in problem or "did not find expected key" in problem:
        return f"{where}{problem} ({context}): the indentation of this line does not match its siblings"
    text_ = " ".join(p for p in (context, problem) if p) or " ".join(str(exc).split())
    return f"{where}{text_}"


def stray_key_issue(file: str, entry: str, field: str, name: str, allowed: Iterable[str]) -> Issue:
    """The issue of a key an entry of a data file may not have (unknown, or snake_case instead of camelCase).

    Args:
        file: the data file.
        entry: the entry's label.
        field: the key path of the stray key in the entry, e.g. ``profiles[2g.10gb].size``.
        name: the stray key as written.
        allowed: the keys allowed where it is.

    Returns:
        ``unknown field`` with the fix of :func:`~hybridgpu.errors.unknown_key_fix`
        (``did you mean `x`? remove the key or use one of: ...``).
    """
    return Issue.in_entry(file, entry, field, "unknown field", unknown_key_fix(name, sorted(allowed)))


def not_a_mapping_issue(file: str, entry: str, value: Any) -> Issue:
    """The issue of an entry of a data file that is not a mapping (e.g. a bare string in the list).

    Args:
        file: the data file.
        entry: the entry's label (``#<index>`` when it has no name).
        value: the entry as parsed (its type is named in the message).
    """
    return Issue.in_entry(file, entry, None, f"must be a mapping, got {type(value).__name__}", "write the entry as `key: value` lines under its `- `", "schema")


def unreadable_issue(file: str, exc: BaseException, what: str = "the file") -> Issue:
    """The issue of a data file that cannot be read (missing, no permission, not UTF-8).

    Args:
        file: the file as named in issues.
        exc: the error reading it.
        what: how the message names it, e.g. ``the packaged file`` or ``the trace``.

    Returns:
        ``cannot read <what>: <exc>`` with code ``file`` and a fix.
    """
    return Issue.in_entry(file, None, None, f"cannot read {what}: {exc}", "check the path and its permissions; the file must be UTF-8 text", "file")


def read_model_file(
    path: Path,
    shown: str,
    model: type[_M],
    error: type[DataFileError],
    *,
    what: str,
    missing_fix: str,
    reference: str,
    entry_kind: EntryKind | None = None,
) -> _M:
    """Read the YAML file ``path`` (duplicate keys refused) and validate it with ``model``.

    Args:
        path: the file to read.
        shown: the file as the user knows it (relative to the project root), named in issues.
        model: the pydantic model of the whole file.
        error: the :class:`DataFileError` subclass to raise.
        what: the kind of file in the missing-file message (``no such <what>``), e.g. ``teams file``.
        missing_fix: the fix of a missing file (which stack key names it, and how).
        reference: what documents the file's keys (:func:`~hybridgpu.errors.issues_from_validation`).
        entry_kind: passed to :func:`~hybridgpu.errors.issues_from_validation`.

    Returns:
        The validated model.

    Raises:
        error: a missing file (code ``file``), an unreadable one or invalid YAML or a duplicate key (code
            ``yaml``), schema errors (one issue each, naming the key path and a fix).
    """
    text: str | None = None
    try:
        text = path.read_text()
        data = load_unique_yaml(text)
    except FileNotFoundError:
        raise error([Issue.in_entry(shown, None, None, f"no such {what}", missing_fix, "file")]) from None
    except Exception as exc:  # noqa: BLE001 - YAML and OS errors alike become one issue
        fix = "correct the YAML syntax at the position shown (a key may appear once per mapping)"
        detail = describe_yaml_error(exc, text) if isinstance(exc, yaml.YAMLError) else str(exc)
        raise error([Issue.in_entry(shown, None, None, f"not readable as YAML: {detail}", fix, "yaml")]) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(issues_from_validation(exc, file=shown, root=model, reference=reference, entry_kind=entry_kind)) from None
