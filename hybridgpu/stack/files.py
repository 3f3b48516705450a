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
from hybridgpu.datafile import describe_yaml_error, load_yaml
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


@dataclass(frozen=True)
class ProjectFile:
    """The fields of ``Pulumi.yaml`` that decide how the Pulumi CLI runs a project.

    Attributes:
        path: the ``Pulumi.yaml`` file.
        name: ``name``.
        runtime: ``runtime`` (the string, or the ``name`` of the ``{name, options}`` form).
        options: ``runtime.options`` (``virtualenv``, ``toolchain``, ...), ``{}`` when absent.
        main: ``main`` as written (a directory or a file, relative to the project directory), or None.
        stack_config_dir: ``stackConfigDir`` as written (or the legacy string ``config:``), or None.
    """

    path: Path
    name: str
    runtime: str
    options: dict[str, Any]
    main: str | None
    stack_config_dir: str | None


def _project_error(path: Path, field_name: str, problem: str, fix: str) -> StackFileError:
    return StackFileError(f"{path}: {field_name}: {problem}. Fix: {fix}")


def read_project(root: Path) -> ProjectFile:
    """``<root>/Pulumi.yaml`` read as the Pulumi CLI reads it (pulumi/pulumi v3.259.0
    ``sdk/go/common/workspace/project.go``: ``runtime`` is a
    string or ``{name, options}`` (``ProjectRuntimeInfo.UnmarshalYAML``); ``main`` and ``stackConfigDir``
    are strings; a string ``config:`` is the old spelling of ``stackConfigDir``
    (``RewriteConfigPathIntoStackConfigDir``); ``name`` and ``runtime`` are required (``Project.Validate``:
    "project is missing a 'name' attribute", "... a 'runtime' attribute").

    Args:
        root: the project directory.

    Returns:
        The project's runtime, options, main and stack config directory.

    Raises:
        StackFileError: no readable ``Pulumi.yaml``, or a field of the wrong kind (names the file,
            the field and the fix); ``name`` or ``runtime`` missing (the CLI refuses such a project too).
    """
    data = _project_file(root)
    path = root / "Pulumi.yaml"
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():  # the CLI: "project is missing a 'name' attribute"
        raise _project_error(path, "name", "missing (the Pulumi CLI refuses a project without a name)", "add `name: <project>`")
    runtime = data.get("runtime")
    options: Any = {}
    if isinstance(runtime, dict):
        options = runtime.get("options") or {}
        runtime = runtime.get("name")
    if runtime is None:
        raise _project_error(path, "runtime", "missing", "add `runtime: python` (hybridgpu check runs Python programs)")
    if not isinstance(runtime, str) or not runtime.strip():
        raise _project_error(path, "runtime", "must be a string or an object with name and options attributes", "write `runtime: python`")
    if not isinstance(options, dict):
        raise _project_error(path, "runtime.options", "must be a mapping", "write e.g. `options: {virtualenv: venv}`")
    fields: dict[str, str | None] = {}
    for key in ("main", "stackConfigDir"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise _project_error(path, key, f"must be a non-empty path (relative to {root}), not {value!r}", f"give a directory or remove `{key}`")
        fields[key] = value
    legacy = data.get("config")
    if isinstance(legacy, str):
        if fields["stackConfigDir"] is not None:
            raise _project_error(path, "config", "a string `config` is the old spelling of stackConfigDir and cannot be used with it", "remove `config`")
        fields["stackConfigDir"] = legacy
    return ProjectFile(
        path=path, name=project_name(root), runtime=runtime.strip(), options=dict(options),
        main=fields["main"], stack_config_dir=fields["stackConfigDir"],
    )


def stack_config_dir(root: Path) -> Path:
    """The directory holding stack files: ``stackConfigDir`` of ``Pulumi.yaml`` (or the legacy string
    ``config:``), relative to the project directory; default the project directory itself (pulumi/pulumi
    ``sdk/go/common/workspace/paths.go`` ``ProjectStackPath``, v3.259.0)."""
    data = _project_file(root)
    directory = data.get("stackConfigDir")
    if directory is None and isinstance(data.get("config"), str):
        directory = data["config"]
    return root / str(directory or ".")


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
    if not isinstance(config, dict):  # a string is the legacy stackConfigDir (stack_config_dir)
        return {}
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
    text: str | None = None
    try:
        text = path.read_text(encoding="utf-8")
        data = load_yaml(text)
    except FileNotFoundError as exc:
        raise StackFileError(f"{shown}: no such stack file") from exc
    except UnicodeDecodeError as exc:
        raise StackFileError(f"{shown}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the stack file as UTF-8") from None
    except yaml.YAMLError as exc:
        raise StackFileError(f"{shown}: not readable as YAML: {describe_yaml_error(exc, text)}") from exc
    except OSError as exc:
        raise StackFileError(f"{shown}: cannot read the stack file: {exc.strerror or exc}") from exc
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
                Issue(shown, key, "config keys in a stack file are namespaced", f"write it as `{project_name(root)}:{key}`")
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




def _path_parts(path: str) -> list[str | int]:
    """``a.b[1].c`` -> ``["a", "b", 1, "c"]``; a bracketed key that is not a number stays a string
    (``annotations[kueue.x-k8s.io/x]``)."""
    parts: list[str | int] = []
    name = ""
    i = 0
    while i < len(path):
        char = path[i]
        if char == "." and name:
            parts.append(name)
            name = ""
        elif char == "[":
            if name:
                parts.append(name)
                name = ""
            end = path.find("]", i)
            if end < 0:
                break
            inner = path[i + 1 : end].strip("'\"")
            parts.append(int(inner) if inner.isdigit() else inner)
            i = end
        elif char != ".":
            name += char
        i += 1
    if name:
        parts.append(name)
    return parts


def config_key_line(path: Path, key: str) -> int | None:
    """The 1-based line of config key ``key`` in stack file ``path`` (a key path as issues name it:
    ``hybridgpu:cloud.nodePools[1].weight``; the deepest part of it that exists), or None when the file
    cannot be read or has no such key under ``config:``."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None
    node = _child(root, "config")
    if node is None or not isinstance(node, yaml.MappingNode):
        return None
    keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
    top = max((k for k in keys if key == k or key.startswith(k + ".") or key.startswith(k + "[")), key=len, default=None)
    if top is None:
        return None
    line: int | None = None
    current: Any = node
    for part in [top, *_path_parts(key[len(top) :])]:
        found = _child(current, part, with_key=True)
        if found is None:
            break
        mark, current = found
        line = mark.line + 1
    return line


def _child(node: Any, part: str | int, with_key: bool = False) -> Any:
    """The value node of ``part`` in a mapping (or item ``part`` of a sequence) node; with
    ``with_key``, ``(the start mark of its key or item, the value node)``."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                return (k.start_mark, v) if with_key else v
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        item = node.value[part]
        return (item.start_mark, item) if with_key else item
    return None
