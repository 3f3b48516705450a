"""Shared plumbing of the packaged data files (GPU catalog, MIG profiles): pure, no Pulumi.

* :class:`DataIssue`: one problem, naming the file, the entry and the field.
* :class:`DataFileError`: base of the per-file errors (``CatalogError``, ``MigDataError``);
  reports every issue at once.
* :func:`load_unique_yaml`: YAML that refuses duplicate keys (PyYAML keeps the last silently).
* :func:`top_level_entries`: the non-empty list under a file's single top-level key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import yaml

from hybridgpu.errors import HybridGpuError


@dataclass(frozen=True)
class DataIssue:
    """One problem found in a data file.

    Attributes:
        file: the data file as a path or resource name.
        entry: the entry's ``name`` (or ``#<index>`` when it has none); ``None`` for a
            problem with the file as a whole (unreadable, not YAML, wrong top level).
        field: the YAML key (path) at fault, e.g. ``gpuMemoryGiB``; ``None`` if not one key.
        message: what is wrong, with the offending value where useful.
    """

    file: str
    entry: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = [self.file]
        if self.entry is not None:
            where.append(f"entry {self.entry!r}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return f"{': '.join(where)}: {self.message}"


class DataFileError(HybridGpuError):
    """A packaged data file is invalid; every problem found is reported, not only the first.

    Subclasses set :attr:`what` (e.g. ``"GPU catalog data"``) for the message head.

    Args:
        issues: the problems (at least one).

    Attributes:
        issues: the problems, in the order found.
        file, entry, field: those of the first issue (shortcuts for the single-problem case).
    """

    what: ClassVar[str] = "data file"

    def __init__(self, issues: list[DataIssue]):
        if not issues:
            raise ValueError(f"{type(self).__name__} needs at least one issue")
        self.issues = list(issues)
        first = self.issues[0]
        self.file = first.file
        self.entry = first.entry
        self.field = first.field
        count = len(self.issues)
        head = f"{count} problem{'s' if count > 1 else ''} in the {self.what}:"
        super().__init__("\n".join([head, *(f"  - {issue}" for issue in self.issues)]))


class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader (the pure-Python one without libyaml) refusing duplicate mapping keys.

    An unhashable key (a list or mapping used as a key) is a YAML error, not a ``TypeError``.
    """


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
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
    """Parse one YAML document like ``yaml.safe_load`` but raise ``yaml.YAMLError`` on a duplicate or unhashable key."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def load_unique_yaml_all(text: str) -> list[Any]:
    """Every non-empty document of a multi-document YAML text (see :func:`load_unique_yaml`)."""
    return [doc for doc in yaml.load_all(text, Loader=UniqueKeyLoader) if doc is not None]  # noqa: S506


def top_level_entries(text: str, file: str, top_key: str, error: type[DataFileError]) -> list[Any]:
    """The non-empty list under ``top_key``, the only top-level key of the file.

    Raises:
        error: (the caller's :class:`DataFileError` subclass) the text is not YAML, has a
            duplicate key, another top level, or an empty/non-list entry list.
    """
    try:
        document = load_unique_yaml(text)
    except yaml.YAMLError as exc:
        raise error([DataIssue(file, None, None, f"not valid YAML: {exc}")]) from exc
    if not isinstance(document, dict) or set(document) != {top_key}:
        keys = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise error([DataIssue(file, None, None, f"the top level must be a mapping with the single key {top_key!r}; got {keys}")])
    entries = document[top_key]
    if not isinstance(entries, list) or not entries:
        raise error([DataIssue(file, None, top_key, "must be a non-empty list of entries")])
    return entries
