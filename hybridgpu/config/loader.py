"""Read stack configuration the way the Pulumi CLI does, and validate it.

The Pulumi CLI reads ``Pulumi.yaml`` (project-level ``config`` defaults, keys implicitly in
the project namespace) and ``<stackConfigDir>/Pulumi.<stack>.yaml`` (a ``config:`` mapping of
namespaced keys ``ns:key`` to plain or structured values; ``{secure: ...}`` values are
ciphertext). Inside a program, the SDK hands every value over as a string (structured values
JSON-encoded). This module reproduces that offline:

* :func:`read_stack_file` parses a stack file into namespaced values; ``secure:`` values become
  :data:`SECRET_PLACEHOLDER` and their keys are reported as secret (nothing is decrypted).
* :func:`pulumi_config_strings` turns values into the string map Pulumi's runtime holds.
* :func:`config_from_pulumi_values` validates namespaced values into a :class:`StackConfig`,
  collecting every problem into one :class:`~hybridgpu.errors.StackConfigError` whose issues
  name the file, the key path and the fix.
* :func:`load_stack_config` does both for ``stacks/Pulumi.<stack>.yaml``.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from hybridgpu.config.checks import semantic_issues
from hybridgpu.config.models import StackConfig
from hybridgpu.modelbase import model_at
from hybridgpu.errors import ConfigIssue, StackConfigError, StackFileError

PROJECT = "hybridgpu"

#: What an encrypted ``secure:`` value reads as offline. It is never decrypted.
SECRET_PLACEHOLDER = "[secret]"

#: Pulumi config key -> StackConfig field alias.
KEY_TO_FIELD = {
    "aws:region": "region",
    f"{PROJECT}:environment": "environment",
    f"{PROJECT}:tags": "tags",
    f"{PROJECT}:requiredTagKeys": "requiredTagKeys",
    f"{PROJECT}:cloud": "cloud",
    f"{PROJECT}:onprem": "onprem",
    f"{PROJECT}:nvidia": "nvidia",
    f"{PROJECT}:burst": "burst",
    f"{PROJECT}:economics": "economics",
}
FIELD_TO_KEY = {alias: key for key, alias in KEY_TO_FIELD.items()}

#: libyaml's loader when PyYAML was built with it (several times faster), else the pure-Python one.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Keys of Pulumi.yaml's typed project config (also declared there).
STRUCTURED_KEYS = {f"{PROJECT}:tags", f"{PROJECT}:cloud", f"{PROJECT}:requiredTagKeys", f"{PROJECT}:nvidia", f"{PROJECT}:onprem", f"{PROJECT}:burst", f"{PROJECT}:economics"}


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
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)  # noqa: S506 - a SafeLoader
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


def project_defaults(root: Path) -> dict[str, Any]:
    """Project-level config defaults from ``Pulumi.yaml``, namespaced (``hybridgpu:<key>``)."""
    config = _project_file(root).get("config") or {}
    defaults: dict[str, Any] = {}
    for key, spec in config.items():
        name = key if ":" in key else f"{PROJECT}:{key}"
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
    """Why ``value`` is too large or too deep for a stack file (see the limits above), or None."""
    pending = [(value, 0)]
    seen = 0
    while pending:
        item, depth = pending.pop()
        seen += 1
        if seen > MAX_STACK_FILE_NODES:
            return (
                f"expands to more than {MAX_STACK_FILE_NODES} YAML values (through aliases or sheer size); "
                "a stack file this large is a mistake or an alias bomb: write the values out"
            )
        if depth > MAX_STACK_FILE_DEPTH:
            return f"nests mappings/lists more than {MAX_STACK_FILE_DEPTH} levels deep; flatten the value"
        if isinstance(item, dict):
            pending.extend((child, depth + 1) for child in item.keys())
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            pending.extend((child, depth + 1) for child in item)
    return None


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
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)  # noqa: S506 - a SafeLoader
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
            issues.append(ConfigIssue(shown, repr(key), "empty config key", "remove it, or name it `namespace:key`"))
            continue
        if ":" not in key:
            issues.append(
                ConfigIssue(shown, key, "config keys in a stack file are namespaced", f"write it as `{PROJECT}:{key}`")
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


def _loc_to_key(loc: tuple[Any, ...]) -> str:
    if not loc:
        return f"{PROJECT}:<root>"
    head, *rest = loc
    key = FIELD_TO_KEY.get(str(head), f"{PROJECT}:{head}")
    for part in rest:
        key += f"[{part}]" if isinstance(part, int) else f".{part}"
    return key


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that owns the last element of ``loc`` (to suggest allowed keys)."""
    return model_at(StackConfig, loc)


def _fix_for(error: dict[str, Any]) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    loc = tuple(error["loc"])
    if kind == "extra_forbidden":
        model = _model_at(loc)
        if model is not None:
            allowed = sorted(f.alias or n for n, f in model.model_fields.items())
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            return f"{hint}remove the key or use one of: {', '.join(allowed)}"
        return "remove the key"
    if kind == "missing":
        return "add this key (see docs/config-reference.md)"
    if kind in ("less_than_equal", "less_than"):
        return f"use a value {'<=' if kind.endswith('equal') else '<'} {ctx.get('le', ctx.get('lt'))}"
    if kind in ("greater_than_equal", "greater_than"):
        return f"use a value {'>=' if kind.endswith('equal') else '>'} {ctx.get('ge', ctx.get('gt'))}"
    if kind in ("enum", "literal_error"):
        return f"use one of {ctx.get('expected', 'the documented values')}"
    if kind == "string_pattern_mismatch":
        return f"match the pattern {ctx.get('pattern')}"
    if kind in ("too_short", "too_long"):
        return "adjust the number of entries (see docs/config-reference.md)"
    if kind == "value_error":
        return "see the message; docs/config-reference.md documents the field"
    return "see docs/config-reference.md for the field's type and allowed values"


def _issues_from_validation(exc: ValidationError, file: str) -> list[ConfigIssue]:
    issues = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        if error["type"] not in ("missing", "extra_forbidden") and "input" in error and not isinstance(error["input"], (dict, list)):
            message = f"{message} (got {error['input']!r})"
        issues.append(ConfigIssue(file, _loc_to_key(loc), message, _fix_for(error)))
    return issues


def config_from_pulumi_values(values: dict[str, Any], *, stack: str, file: str, root: Path | None = None) -> StackConfig:
    """Validate namespaced config values into a :class:`StackConfig`.

    Args:
        values: ``ns:key`` -> value; structured values may be given as dicts/lists or as the JSON
            strings the Pulumi runtime holds. Keys of other namespaces (``aws:profile``,
            ``kubernetes:context``...) are ignored except ``aws:region``.
        stack: stack name.
        file: stack file path to name in errors.
        root: project root for relative paths in the config (inventories); default: the working directory.

    Returns:
        The validated, frozen configuration.

    Raises:
        StackConfigError: every problem found: unknown ``hybridgpu:`` keys, schema errors
            (unknown keys, out-of-range values, wrong types) and semantic errors (see
            :mod:`hybridgpu.config.checks`), each with file, key path and fix.
    """
    data: dict[str, Any] = {"stack": stack}
    issues: list[ConfigIssue] = []
    for key, value in values.items():
        if key in KEY_TO_FIELD:
            if key in STRUCTURED_KEYS and isinstance(value, str):
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    issues.append(ConfigIssue(file, key, "expected a structured (mapping/list) value", "write the value as YAML mapping/list"))
                    continue
            data[KEY_TO_FIELD[key]] = value
        elif key.startswith(f"{PROJECT}:"):
            known = sorted(KEY_TO_FIELD)
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            issues.append(ConfigIssue(file, key, "unknown configuration key", f"{hint}known keys: {', '.join(known)}"))
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as exc:
        raise StackConfigError(issues + _issues_from_validation(exc, file)) from None
    issues += semantic_issues(config, file, root=root)
    if issues:
        raise StackConfigError(issues)
    return config


def load_stack_config(stack: str, root: Path | None = None) -> tuple[StackConfig, StackValues]:
    """Read and validate ``<stackConfigDir>/Pulumi.<stack>.yaml``.

    Returns:
        ``(config, values)``: the validated config and the raw values (to hand to Pulumi's runtime).

    Raises:
        StackFileError: unreadable file; StackConfigError: invalid configuration.
    """
    root = root or find_project_root()
    path = stack_config_dir(root) / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        available = ", ".join(list_stacks(root)) or "none"
        raise StackFileError(f"{path.relative_to(root)}: no such stack file (stacks here: {available})")
    values = read_stack_file(path, root=root)
    return config_from_pulumi_values(values.values, stack=values.stack, file=values.file, root=root), values
