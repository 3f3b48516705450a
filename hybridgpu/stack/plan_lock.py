"""The lock file of the last applied capacity plan, and the drift ``hybridgpu validate`` reports against it.

``hybridgpu cost plan --apply`` (:mod:`hybridgpu.stack.plan_apply`) writes the numbers of the optimal
plan into the stack files and records them here, in ``<stackConfigDir>/.hybridgpu-plan.lock``
(``stacks/.hybridgpu-plan.lock`` in the example project): one entry per cloud stack the plan was
applied to, holding

* ``inputs``: what the plan was solved from (the demand file and its SHA-256, the planner's options,
  the prices), and ``inputsSha256``, the SHA-256 of that mapping as canonical JSON;
* ``written``: every number the plan decided, as ``{file, path, value}`` (``path``: the keys from the
  file's top, a ``{field: value}`` mapping selecting a list item by its field, e.g. ``{name: h100-spot}``),
  and ``outputsSha256``, the SHA-256 of that list as canonical JSON.

``hybridgpu validate STACK`` reads the lock (when there is one) and warns, without failing, for each
number of a file the stack reads (its stack file, its burst plan, its teams file) that differs from
the number written, and when the demand file changed since: the files have drifted from the last
applied plan. The lock has no time stamp, so applying the same plan twice writes the same bytes.

Everything here but :func:`plan_drift_warnings` is pure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.config.models import StackConfig
from hybridgpu.datafile import dump_yaml
from hybridgpu.stack.files import stack_config_dir

__all__ = [
    "LOCK_API_VERSION",
    "LOCK_KIND",
    "LOCK_NAME",
    "PathPart",
    "canonical_sha256",
    "display_path",
    "drift_warnings",
    "lock_path",
    "lock_text",
    "plan_drift_warnings",
    "value_at",
]

#: File name of the lock, in the project's stack config directory.
LOCK_NAME = ".hybridgpu-plan.lock"
LOCK_API_VERSION = "hybridgpu.io/v1alpha1"
LOCK_KIND = "PlanLock"
_HEADER = (
    "# Written by `hybridgpu cost plan --apply` (docs/economics.md, Applying a plan): the inputs of the last\n"
    "# applied plan and every number it wrote. `hybridgpu validate` warns when one of these numbers changed in\n"
    "# its file. Do not edit: apply a plan again instead.\n"
)

#: One step of a key path: a mapping key, a list index, or ``{field: value}`` selecting the list item with that field.
PathPart = str | int | Mapping[str, Any]


def canonical_sha256(data: Any) -> str:
    """SHA-256 (hex) of ``data`` as canonical JSON (sorted keys, no spaces): the same data gives the same hash."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def lock_path(root: Path) -> Path:
    """``<stackConfigDir>/.hybridgpu-plan.lock`` of the project at ``root``."""
    return stack_config_dir(root) / LOCK_NAME


def display_path(path: Sequence[PathPart]) -> str:
    """A key path as people read it: ``hybridgpu:cloud.nodePools[name=h100-spot].gpuLimit`` (a stack file's leading ``config`` is left out)."""
    parts = list(path)
    if parts and parts[0] == "config":
        parts = parts[1:]
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, Mapping):
            out += "[" + ",".join(f"{k}={v}" for k, v in part.items()) + "]"
        else:
            out += ("." if out else "") + str(part)
    return out


def value_at(data: Any, path: Sequence[PathPart]) -> Any:
    """The value at ``path`` in parsed YAML/JSON ``data``.

    Raises:
        LookupError: a key, index or selected item is missing (the message names the step).
    """
    node = data
    for part in path:
        if isinstance(part, Mapping):
            items = node if isinstance(node, list) else []
            found = [i for i in items if isinstance(i, Mapping) and all(i.get(k) == v for k, v in part.items())]
            if len(found) != 1:
                raise LookupError(f"no single item {display_path([part])}")
            node = found[0]
        elif isinstance(part, int):
            if not isinstance(node, list) or not -len(node) <= part < len(node):
                raise LookupError(f"no item [{part}]")
            node = node[part]
        else:
            if not isinstance(node, Mapping) or part not in node:
                raise LookupError(f"no key {part!r}")
            node = node[part]
    return node


def lock_text(previous: Mapping[str, Any] | None, target: str, entry: Mapping[str, Any]) -> str:
    """The lock file's text with ``entry`` as the plan of cloud stack ``target`` (other stacks' entries kept, sorted by stack).

    ``entry`` holds ``stack``, ``inputs`` and ``written``; the two hashes are added here.
    """
    plans = dict((previous or {}).get("plans") or {}) if isinstance(previous, Mapping) else {}
    full = dict(entry)
    full["inputsSha256"] = canonical_sha256(entry["inputs"])
    full["outputsSha256"] = canonical_sha256(entry["written"])
    plans[target] = full
    doc = {"apiVersion": LOCK_API_VERSION, "kind": LOCK_KIND, "plans": {k: plans[k] for k in sorted(plans)}}
    return _HEADER + dump_yaml(doc)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))
    return bool(a == b)


def drift_warnings(lock: Any, lock_file: str, files: Mapping[str, Any], demand_sha256: Mapping[str, str | None]) -> list[str]:
    """Warnings for the numbers of ``files`` that differ from what the applied plans in ``lock`` wrote (pure).

    Args:
        lock: the parsed lock file.
        lock_file: the lock file as the user knows it (named in the warnings).
        files: file (as recorded in the lock) -> its parsed content, or an ``OSError``/``yaml.YAMLError``
            instance when it cannot be read; only the written numbers of these files are compared.
        demand_sha256: demand file (as recorded) -> its SHA-256 now, or None when it is gone.

    Returns:
        One line per drifted number, and per plan whose demand file changed; empty when nothing drifted.
    """
    if not isinstance(lock, Mapping) or lock.get("kind") != LOCK_KIND or not isinstance(lock.get("plans"), Mapping):
        return [f"{lock_file} is not a plan lock (kind: {LOCK_KIND}); re-run `hybridgpu cost plan --apply` to write it again, or delete it"]
    out: list[str] = []
    for target, entry in sorted(lock["plans"].items()):
        if not isinstance(entry, Mapping):
            continue
        inputs = entry.get("inputs") or {}
        rerun = f"`hybridgpu cost plan --demand {inputs.get('demand', {}).get('file', 'DEMAND')} --stack {entry.get('stack', target)} --apply`"
        touched = False
        for item in entry.get("written") or []:
            if not isinstance(item, Mapping) or item.get("file") not in files:
                continue
            touched = True
            content = files[item["file"]]
            where = f"{item['file']}: {display_path(item.get('path') or [])}"
            if isinstance(content, Exception):
                continue  # the file's own validation reports it
            try:
                now = value_at(content, item.get("path") or [])
            except LookupError:
                now = None
            if now is None or not _same(now, item.get("value")):
                out.append(
                    f"{where} is {'missing' if now is None else now} but the capacity plan applied for stack {target} wrote {item.get('value')} "
                    f"({lock_file}); the files have drifted from the plan: re-run {rerun} (the plan decides), or apply a new plan with the inputs you want"
                )
        demand = inputs.get("demand") if isinstance(inputs, Mapping) else None
        if touched and isinstance(demand, Mapping) and demand.get("file") in demand_sha256:
            now_hash = demand_sha256[demand["file"]]
            if now_hash != demand.get("sha256"):
                state = "is gone" if now_hash is None else "changed"
                out.append(f"the demand {demand['file']} the plan for stack {target} was solved from {state} since it was applied ({lock_file}); re-run {rerun}")
    return out


def _read(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        return exc


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def plan_drift_warnings(root: Path, config: StackConfig) -> list[str]:
    """The drift warnings of stack ``config`` against the project's lock file (none without a lock).

    Compares the numbers recorded for the stack's own file, its burst plan and its teams file
    (:func:`drift_warnings`). An unreadable lock is one warning, not an error.
    """
    path = lock_path(root)
    if not path.exists():
        return []
    try:
        rel_lock = str(path.relative_to(root))
    except ValueError:
        rel_lock = str(path)
    lock = _read(path)
    if isinstance(lock, Exception):
        return [f"cannot read {rel_lock} ({type(lock).__name__}); re-run `hybridgpu cost plan --apply` to write it again, or delete it"]
    names = [str((stack_config_dir(root) / f"Pulumi.{config.stack}.yaml").relative_to(root)) if stack_config_dir(root).is_relative_to(root) else ""]
    if config.burst is not None:
        names.append(config.burst.plan)
    if config.teams is not None:
        names.append(config.teams.file)
    files = {n: _read(root / n) for n in names if n}
    demand: dict[str, str | None] = {}
    for entry in (lock.get("plans") or {}).values() if isinstance(lock, Mapping) and isinstance(lock.get("plans"), Mapping) else ():
        d = ((entry or {}).get("inputs") or {}).get("demand") if isinstance(entry, Mapping) else None
        if isinstance(d, Mapping) and isinstance(d.get("file"), str):
            demand[d["file"]] = _sha256(root / d["file"])
    return drift_warnings(lock, rel_lock, files, demand)
