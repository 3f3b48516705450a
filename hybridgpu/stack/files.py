"""Read stack files the way the Pulumi CLI does (no validation: see :mod:`hybridgpu.stack.load`).

The Pulumi CLI reads ``Pulumi.yaml`` (project-level ``config`` defaults, keys implicitly in
the project namespace) and ``<stackConfigDir>/Pulumi.<stack>.yaml`` (a ``config:`` mapping of
namespaced keys ``ns:key`` to plain or structured values; ``{secure: ...}`` values are
ciphertext). Inside a program, the SDK hands every value over as a string (structured values
JSON-encoded). This module reproduces that offline:

* :func:`find_project_root`, :func:`stack_config_dir`, :func:`list_stacks`, :func:`project_defaults`;
* :func:`read_stack_file` parses a stack file into namespaced values; ``secure:`` values become
  :data:`SECRET_PLACEHOLDER` and their keys are reported as secret (nothing is decrypted);
* :func:`pulumi_config_strings` turns values into the string map Pulumi's runtime holds.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.config.keys import PROJECT
from hybridgpu.datafile import load_yaml
from hybridgpu.errors import Issue, StackConfigError, StackFileError

#: What an encrypted ``secure:`` value reads as offline. It is never decrypted.
SECRET_PLACEHOLDER = "[secret]"




@dataclass(frozen=True)
class StackValues:
    """Config values of one stack as the Pulumi CLI would hand them to the program.

    Attributes:
        stack: stack name.
        file: stack file path as shown to users (relative to the project root when possible).
        values: namespaced key -> plain Python value (dicts/lists for structured config).
        secret_keys: keys whose value (or part of it) was a ``secure:`` ciphertext.
    """

    stack: str
    file: str
    values: dict[str, Any]
    secret_keys: frozenset[str] = field(default_factory=frozenset)


def find_project_root(start: Path | None = None) -> Path:
    """Return the nearest directory at or above ``start`` (default: cwd) holding ``Pulumi.yaml``.

    Raises:
        StackFileError: no ``Pulumi.yaml`` up to the filesystem root.
    """
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Pulumi.yaml").is_file():
            return candidate
    raise StackFileError(f"no Pulumi.yaml found at or above {here}; run from the hybridgpu project directory")


@functools.lru_cache(maxsize=32)
def _project_file_cached(path: Path, mtime_ns: int) -> dict[str, Any]:
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise StackFileError(f"{path}: cannot read the project file: {exc}") from exc
    except RecursionError:
        raise StackFileError(f"{path}: cannot read the project file: nested too deeply") from None
    if not isinstance(data, dict):
        raise StackFileError(f"{path}: the project file must be a YAML mapping")
    return data


def _project_file(root: Path) -> dict[str, Any]:
    """``Pulumi.yaml`` of ``root`` as a mapping (parsed once per file version)."""
    path = (root / "Pulumi.yaml").resolve()
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise StackFileError(f"{path}: cannot read the project file: {exc}") from exc
    return _project_file_cached(path, mtime)


def stack_config_dir(root: Path) -> Path:
    """The directory holding stack files (``stackConfigDir`` of ``Pulumi.yaml``, default the root)."""
    return root / str(_project_file(root).get("stackConfigDir") or ".")


def list_stacks(root: Path) -> list[str]:
    """Names of the stacks that have a ``Pulumi.<stack>.yaml`` in the stack config directory, sorted."""
    directory = stack_config_dir(root)
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in directory.glob("Pulumi.*.yaml"))


def project_name(root: Path) -> str:
    """The project's ``name`` in its ``Pulumi.yaml`` (the namespace of its un-prefixed config keys and
    the project part of its URNs); :data:`~hybridgpu.config.keys.PROJECT` when the file names none."""
    name = _project_file(root).get("name")
    return str(name) if isinstance(name, str) and name.strip() else PROJECT


def project_defaults(root: Path) -> dict[str, Any]:
    """Project-level config defaults from ``Pulumi.yaml``, namespaced (``<project name>:<key>``)."""
    config = _project_file(root).get("config") or {}
    defaults: dict[str, Any] = {}
    project = project_name(root)
    for key, spec in config.items():
        name = key if ":" in key else f"{project}:{key}"
        if isinstance(spec, dict) and "default" in spec:
            defaults[name] = spec["default"]
        elif isinstance(spec, dict) and "value" in spec:
            defaults[name] = spec["value"]
        elif not isinstance(spec, dict):
            defaults[name] = spec
    return defaults


def _strip_secrets(value: Any) -> tuple[Any, bool]:
    """Replace ``{secure: ...}`` nodes with the placeholder; report whether any were found."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return SECRET_PLACEHOLDER, True
        found = False
        out = {}
        for k, v in value.items():
            out[k], hit = _strip_secrets(v)
            found = found or hit
        return out, found
    if isinstance(value, list):
        found = False
        items = []
        for v in value:
            item, hit = _strip_secrets(v)
            items.append(item)
            found = found or hit
        return items, found
    return value, False


#: Most YAML values (mappings, lists, keys and scalars, aliases counted each time they are used)
#: a stack file may expand to. Real stack files have a few hundred; the limit stops an alias
#: bomb ("billion laughs") before validation or JSON encoding walks it (found by the fuzzing
#: in tests/security).
MAX_STACK_FILE_NODES = 100_000
#: Deepest nesting of mappings/lists a stack file may have (real ones: under 10). Deeper input
#: would exhaust Python's recursion limit in the checks (found by the fuzzing in tests/security).
MAX_STACK_FILE_DEPTH = 64


def _size_problem(value: Any) -> str | None:
    """Why ``value`` is too large or too deep for a stack file (see the limits above), or None.

    Counts every value once per use (the root, each mapping's keys and values, each list's items;
    a safe-loaded document's keys are scalars) and visits only the containers.
    """
    too_many = (
        f"expands to more than {MAX_STACK_FILE_NODES} YAML values (through aliases or sheer size); "
        "a stack file this large is a mistake or an alias bomb: write the values out"
    )
    too_deep = f"nests mappings/lists more than {MAX_STACK_FILE_DEPTH} levels deep; flatten the value"
    seen = 1
    pending = [(value, 0)] if isinstance(value, (dict, list)) else []
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item
        if not children:
            continue
        seen += 2 * len(item) if isinstance(item, dict) else len(item)
        if seen > MAX_STACK_FILE_NODES:
            return too_many
        if depth >= MAX_STACK_FILE_DEPTH:  # its children are deeper than the limit
            return too_deep
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return None


#: Parsed stack files by (resolved path, mtime in ns, size): a preview of one stack reads the
#: stacks its burst plan names (twice for some), and ``hybridgpu preview``/``check`` of every
#: stack reads each file once per stack that names it. Only parses that succeeded are kept;
#: callers never see the cached object itself (:func:`read_stack_file` builds new containers
#: from it in ``_strip_secrets``), so it is never mutated.
_STACK_FILE_CACHE: dict[tuple[str, int, int], Any] = {}
#: Entries kept before the cache starts over (a process reads a handful of stack files).
_STACK_FILE_CACHE_SIZE = 64


def clear_stack_file_cache() -> None:
    """Forget every parsed stack file (the next :func:`read_stack_file` of each parses it again).

    The benchmarks call it before each timed run, so a run pays the parses a fresh process pays.
    """
    _STACK_FILE_CACHE.clear()


def _parsed_stack_file(path: Path, shown: str) -> Any:
    """The YAML of stack file ``path``, size-checked (parsed once per file version and process).

    Raises:
        StackFileError: missing, not UTF-8, not YAML, too deep or too large (named as ``shown``).
    """
    try:
        st = path.stat()
        key: tuple[str, int, int] | None = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None  # the read below raises the error the user sees
    if key is not None and key in _STACK_FILE_CACHE:
        return _STACK_FILE_CACHE[key]
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise StackFileError(f"{shown}: no such stack file") from exc
    except UnicodeDecodeError as exc:
        raise StackFileError(f"{shown}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the stack file as UTF-8") from None
    except (OSError, yaml.YAMLError) as exc:
        raise StackFileError(f"{shown}: not readable as YAML: {exc}") from exc
    except RecursionError:
        raise StackFileError(f"{shown}: not readable as YAML: nested too deeply") from None
    problem = _size_problem(data)
    if problem:
        raise StackFileError(f"{shown}: {problem}")
    if key is not None:
        if len(_STACK_FILE_CACHE) >= _STACK_FILE_CACHE_SIZE:
            _STACK_FILE_CACHE.clear()
        _STACK_FILE_CACHE[key] = data
    return data


def read_stack_file(path: Path, *, root: Path | None = None) -> StackValues:
    """Parse ``Pulumi.<stack>.yaml`` into namespaced values, merged over project defaults.

    Args:
        path: the stack file.
        root: project root (for project defaults and for the displayed file name); default: found from ``path``.

    Returns:
        The stack's values; secret values replaced by :data:`SECRET_PLACEHOLDER`.

    Raises:
        StackFileError: the file is missing, is not UTF-8 YAML, is nested deeper than
            :data:`MAX_STACK_FILE_DEPTH` or expands to more than :data:`MAX_STACK_FILE_NODES`
            values, or has no ``config`` mapping.
        StackConfigError: a key is not namespaced (``ns:key``).
    """
    root = root or find_project_root(path.parent)
    try:
        shown = str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        shown = str(path)
    name = path.name
    if not (name.startswith("Pulumi.") and name.endswith(".yaml")):
        raise StackFileError(f"{shown}: stack files are named Pulumi.<stack>.yaml")
    stack = name[len("Pulumi.") : -len(".yaml")]
    data = _parsed_stack_file(path, shown)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StackFileError(f"{shown}: a stack file is a YAML mapping with a `config:` key")
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise StackFileError(f"{shown}: `config` must be a mapping of `namespace:key` to values")

    values = project_defaults(root)
    secret_keys: set[str] = set()
    issues = []
    for key, raw in config.items():
        key = str(key)
        if not key.strip():  # an empty key would leave the issue without a key path (found by fuzzing)
            issues.append(Issue(shown, repr(key), "empty config key", "remove it, or name it `namespace:key`"))
            continue
        if ":" not in key:
            issues.append(
                Issue(shown, key, "config keys in a stack file are namespaced", f"write it as `{PROJECT}:{key}`")
            )
            continue
        value, secret = _strip_secrets(raw)
        values[key] = value
        if secret:
            secret_keys.add(key)
    if issues:
        raise StackConfigError(issues)
    return StackValues(stack=stack, file=shown, values=values, secret_keys=frozenset(secret_keys))


def pulumi_config_strings(values: dict[str, Any]) -> dict[str, str]:
    """The ``key -> string`` map the Pulumi runtime holds: strings as-is, everything else JSON."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}


