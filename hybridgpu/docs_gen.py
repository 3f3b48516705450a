"""Generate ``docs/config-reference.md`` and ``docs/inventory-reference.md`` from the pydantic models (pure, no Pulumi).

The reference walks the models top-down from :class:`~hybridgpu.config.models.StackConfig`
and renders one section per model: a table of every key with its full Pulumi config path
(``hybridgpu:cloud.nodePools[].weight``), type, default and description (the ``Field``
description). The output is deterministic, so CI can compare it with the committed file::

    python -m hybridgpu.docs_gen > docs/config-reference.md                  # regenerate
    python -m hybridgpu.docs_gen --inventory > docs/inventory-reference.md   # regenerate
    python -m hybridgpu.docs_gen --check                                     # exit 1 if either file is stale

The committed files are repository files, not package data: ``--check`` finds them in the
source checkout at or above the working directory (or under ``--root``).

:func:`inventory_reference_markdown` does the same for the on-prem inventory format
(:mod:`hybridgpu.inventory`): the ``Site`` and ``HostList`` documents, described by the
documentation-only models :class:`SiteDocument` and :class:`HostListDocument` (their keys are
the ones the loader accepts), with key paths such as ``hosts[].gpu.migLayouts[].layout``,
then the renamed/removed fields (:data:`~hybridgpu.inventory.loader.RENAMED_FIELDS`) and one
line per validation rule (:data:`~hybridgpu.inventory.checks.RULES`: the summary of its docstring
and the issue codes it reports).

:func:`field_doc_problems` is the documentation lint the tests run: every field needs a
description that states its default (``Default: ...``) or says ``Required``.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import ipaddress
import json
import re
import sys
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from hybridgpu.config.keys import FIELD_TO_KEY, KEY_TO_FIELD, PROJECT
from hybridgpu.config.base import DNS1123, Duration
from hybridgpu.config.models import StackConfig
from hybridgpu.inventory import checks as inventory_checks
from hybridgpu.inventory import models as inventory_models
from hybridgpu.inventory.loader import INLINE_SECRET_KEYS, RENAMED_FIELDS, SAMPLE
from hybridgpu.inventory.models import API_VERSION, Cluster, Host, HostListMetadata, Network, SiteMetadata
from hybridgpu.inventory.power import RackName, RackSpec
from hybridgpu.inventory.remediation import RemediationPolicy
from hybridgpu.inventory.storage import SiteStorage
from hybridgpu.inventory.upgrade import UpgradePolicy
from hybridgpu.inventory.mirrors import Mirrors
from hybridgpu.checkout import CheckoutFileMissing, find_checkout
from hybridgpu.modelbase import Model

#: Where the generated references live: the source checkout's docs/ directory, relative to its
#: root (:func:`hybridgpu.checkout.find_checkout`; an absolute path is used as it is).
DEFAULT_PATH = Path("docs") / "config-reference.md"
INVENTORY_PATH = Path("docs") / "inventory-reference.md"

REGENERATE_CONFIG = "python -m hybridgpu.docs_gen > docs/config-reference.md"
REGENERATE_INVENTORY = "python -m hybridgpu.docs_gen --inventory > docs/inventory-reference.md"

#: StackConfig fields that are not config keys: ``stack`` comes from the file name
#: ``Pulumi.<stack>.yaml``, so it is neither documented as a key nor linted.
DERIVED_FIELDS = frozenset({"stack"})

_DURATION_PATTERN = next(m.pattern for m in typing.get_args(Duration)[1:] if getattr(m, "pattern", None))
_DEFAULT_WORD = re.compile(r"\bDefault\b")
_REQUIRED_WORD = re.compile(r"\bRequired\b")
_RST_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_RST_LITERAL = re.compile(r"``([^`]+)``")
_NONE_TYPE = type(None)
_ISSUE_CODE = re.compile(r"``([a-z0-9]+(?:-[a-z0-9]+)+)``")


def _pattern_of(annotated: Any) -> str:
    """The regex of a constrained-string alias such as ``Annotated[str, StringConstraints(pattern=...)]``."""
    return next(m.pattern for m in typing.get_args(annotated)[1:] if getattr(m, "pattern", None))


#: Regexes with a name: shown as that name instead of the raw pattern.
_NAMED_PATTERNS = {
    DNS1123: "DNS-1123 name",
    _pattern_of(inventory_models.NodeName): "DNS-1123 subdomain",
    _pattern_of(inventory_models.LabelKey): "label key `[prefix/]name`",
    _pattern_of(inventory_models.LabelValue): "label value",
    _pattern_of(inventory_models.PciBusId): "PCI bus id (`domain:bus:device.function`, hex)",
}
_SINGULAR = {"items": "item", "entries": "entry", "characters": "character"}
_IP_TYPES = {
    frozenset({ipaddress.IPv4Address, ipaddress.IPv6Address}): "IP address (IPv4 or IPv6)",
    frozenset({ipaddress.IPv4Network, ipaddress.IPv6Network}): "network (CIDR, no host bits set)",
}


# --------------------------------------------------------------------------- model walk


def _fields(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    """The documented fields of ``model`` in reference order.

    StackConfig lists its config keys in the order of :data:`KEY_TO_FIELD` (``aws:region``,
    ``hybridgpu:environment``, ...), then any other field except :data:`DERIVED_FIELDS`
    (a new top-level section thus shows up, as ``hybridgpu:<alias>``, without extra wiring).
    Every other model keeps its declaration order.
    """
    fields = model.model_fields
    if model is not StackConfig:
        return list(fields.items())
    by_alias = {info.alias or name: name for name, info in fields.items()}
    ordered = [by_alias[alias] for alias in KEY_TO_FIELD.values() if alias in by_alias]
    ordered += [name for name in fields if name not in ordered and name not in DERIVED_FIELDS]
    return [(name, fields[name]) for name in ordered]


def _alias(name: str, info: FieldInfo) -> str:
    return info.alias or name


def _key(model: type[BaseModel], prefix: str, alias: str) -> str:
    """Full key path of a field: top-level StackConfig fields map to Pulumi config keys."""
    if prefix:
        return f"{prefix}.{alias}"
    if model is StackConfig:
        return FIELD_TO_KEY.get(alias, f"{PROJECT}:{alias}")
    return alias


def _strip_annotated(annotation: Any) -> tuple[Any, list[Any]]:
    """Unwrap ``Annotated[T, ...]`` into ``T`` and its metadata (FieldInfo metadata flattened)."""
    metadata: list[Any] = []
    while typing.get_origin(annotation) is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        for item in extra:
            metadata.extend(item.metadata if isinstance(item, FieldInfo) else [item])
        annotation = base
    return annotation, metadata


def _union_args(annotation: Any) -> list[Any] | None:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return list(typing.get_args(annotation))
    return None


def _child_models(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    """Models reachable from a field annotation, with the key suffix that reaches them.

    ``M`` and ``M | None`` give ``(M, "")``; ``list[M]`` gives ``(M, "[]")``;
    ``dict[str, M]`` gives ``(M, ".<name>")``.
    """
    annotation, _ = _strip_annotated(annotation)
    union = _union_args(annotation)
    if union is not None:
        return [child for arg in union for child in _child_models(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, "")]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple, set, frozenset) and args:
        return [(model, "[]" + suffix) for model, suffix in _child_models(args[0])]
    if origin is dict and len(args) == 2:
        return [(model, ".<name>" + suffix) for model, suffix in _child_models(args[1])]
    return []


def iter_models(root: type[BaseModel] = StackConfig) -> list[tuple[type[BaseModel], list[str]]]:
    """Every model reachable from ``root``, depth-first in field order, each once.

    Returns:
        ``[(model, key_prefixes)]``; ``key_prefixes`` are the key paths under which the model's
        fields appear (``[""]`` for the root, e.g. ``["hybridgpu:cloud.nodePools[]"]`` for
        NodePoolConfig). Order: a model comes right before the models its fields lead to.
    """
    order: list[type[BaseModel]] = []
    prefixes: dict[type[BaseModel], list[str]] = {}

    def visit(model: type[BaseModel], prefix: str) -> None:
        first = model not in prefixes
        prefixes.setdefault(model, [])
        if prefix not in prefixes[model]:
            prefixes[model].append(prefix)
        if not first:
            return
        order.append(model)
        for name, info in _fields(model):
            key = _key(model, prefix, _alias(name, info))
            for child, suffix in _child_models(info.annotation):
                visit(child, key + suffix)

    visit(root, "")
    return [(model, prefixes[model]) for model in order]


# --------------------------------------------------------------------------- rendering


def _code(text: str) -> str:
    return f"`{text}`"


def _constraint_notes(metadata: list[Any], *, sized: str) -> tuple[str | None, list[str]]:
    """Read constraints into (special type name or None, notes)."""
    special = None
    notes: list[str] = []
    low = high = None
    for item in metadata:
        pattern = getattr(item, "pattern", None)
        if pattern in _NAMED_PATTERNS:
            special = _NAMED_PATTERNS[pattern]
        elif pattern == _DURATION_PATTERN:
            special = "duration"
            notes.append("e.g. `30m`, `1h30m`")
        elif pattern:
            notes.append(f"pattern {_code(pattern)}")
        for attr in ("min_length", "max_length"):
            value = getattr(item, attr, None)
            if value is not None:
                if attr == "min_length":
                    low = value
                else:
                    high = value
        # annotated_types.Ge/Gt/Le/Lt (what Field(ge=..., le=...) stores) carry one attribute each.
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            bound = getattr(item, attr, None)
            if bound is not None:
                notes.append(f"{sign} {bound}")
    if low is not None and high is not None:
        notes.append(f"{low}..{high} {sized}")
    elif low is not None:
        notes.append(f"at least {low} {sized if low != 1 else _SINGULAR.get(sized, sized)}")
    elif high is not None:
        notes.append(f"at most {high} {sized}")
    # ">= a" and "<= b" read better as one range.
    if any(n.startswith(">= ") for n in notes) and any(n.startswith("<= ") for n in notes):
        ge = next(n for n in notes if n.startswith(">= "))
        le = next(n for n in notes if n.startswith("<= "))
        notes = [n for n in notes if n not in (ge, le)]
        notes.insert(0, f"{ge[3:]}..{le[3:]}")
    return special, notes


def _literal_text(value: Any) -> str:
    return _code(value.value if isinstance(value, Enum) else str(value))


def type_text(annotation: Any, metadata: list[Any] | None = None) -> str:
    """Human-readable type of a field annotation, constraints included."""
    annotation, inner = _strip_annotated(annotation)
    metadata = [*(metadata or []), *inner]
    union = _union_args(annotation)
    if union is not None and all(isinstance(arg, type) for arg in union) and frozenset(union) in _IP_TYPES:
        return _IP_TYPES[frozenset(union)]
    if union is not None:
        parts = [type_text(arg) for arg in union if arg is not _NONE_TYPE]
        text = " or ".join(parts)
        _, notes = _constraint_notes(metadata, sized="items")
        return f"{text} ({', '.join(notes)})" if notes else text
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        if len(args) == 1:
            return _literal_text(args[0])
        return "one of " + ", ".join(_literal_text(a) for a in args)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + ", ".join(_literal_text(m) for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"object ([{annotation.__name__}](#{annotation.__name__.lower()}))"
    if origin in (list, tuple, set, frozenset):
        # Size notes go right after "list" so they cannot be read as the item type's.
        _, notes = _constraint_notes(metadata, sized="items")
        head = f"list ({', '.join(notes)})" if notes else "list"
        return f"{head} of {type_text(args[0])}" if args else head
    if origin is dict:
        _, notes = _constraint_notes(metadata, sized="entries")
        head = f"map ({', '.join(notes)})" if notes else "map"
        return f"{head} of {type_text(args[0])} to {type_text(args[1])}" if args else head
    base = {str: "string", int: "integer", float: "number", bool: "boolean"}.get(annotation, getattr(annotation, "__name__", str(annotation)))
    special, notes = _constraint_notes(metadata, sized="characters")
    text = special or base
    return f"{text} ({', '.join(notes)})" if notes else text


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _dump(value: BaseModel) -> dict[str, Any]:
    full = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if len(_json(full)) <= 80:
        return full
    return value.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def default_text(info: FieldInfo) -> str:
    """The field's default as YAML-compatible text (JSON flow style), or ``**required**``."""
    if info.is_required():
        return "**required**"
    value = info.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, BaseModel):
        dumped = value.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        return "`{}` (every key at its default)" if not dumped else _code(_json(dumped))
    if isinstance(value, Enum):
        return _code(str(value.value))
    if isinstance(value, str):
        return _code(value) if value else '`""`'
    if isinstance(value, (list, tuple)):
        items = [_dump(v) if isinstance(v, BaseModel) else (v.value if isinstance(v, Enum) else v) for v in value]
        return _code(_json(items))
    if isinstance(value, bool):
        return _code("true" if value else "false")
    return _code(_json(value))


def _cell(text: str) -> str:
    """Table-cell safe text: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _prose(doc: str | None) -> str:
    """A model docstring as Markdown: reST roles and literals become code spans."""
    text = inspect.cleandoc(doc or "")
    text = _RST_ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1]}`", text)
    text = _RST_LITERAL.sub(r"`\1`", text)
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(paragraphs)


def _section(model: type[BaseModel], prefixes: list[str]) -> list[str]:
    lines = [f"## {model.__name__}", ""]
    if model is StackConfig:
        lines += [
            "Top-level keys of `config:` in `stacks/Pulumi.<stack>.yaml`. "
            "The stack name itself comes from the file name.",
            "",
        ]
    elif prefixes == [""]:
        lines += [_prose(model.__doc__), ""]
    else:
        where = ", ".join(_code(p) for p in prefixes)
        lines += [f"Key path: {where}", "", _prose(model.__doc__), ""]
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    for prefix in prefixes[:1]:
        for name, info in _fields(model):
            key = _key(model, prefix, _alias(name, info))
            lines.append(
                "| "
                + " | ".join(
                    _cell(part)
                    for part in (_code(key), type_text(info.annotation, list(info.metadata)), default_text(info), info.description or "")
                )
                + " |"
            )
    lines.append("")
    return lines


def config_reference_markdown() -> str:
    """The full Markdown reference of the stack configuration (deterministic)."""
    models = iter_models(StackConfig)
    lines = [
        "<!-- Generated by `python -m hybridgpu.docs_gen > docs/config-reference.md` from hybridgpu/config/models.py. Do not edit by hand. -->",
        "",
        "# Stack configuration reference",
        "",
        "Every key a stack file `stacks/Pulumi.<stack>.yaml` may set, generated from the pydantic models in "
        "`hybridgpu/config/models.py` (the program validates the same models before it registers any resource). "
        "Keys are camelCase; unknown keys are rejected. A key path such as `hybridgpu:cloud.nodePools[].weight` "
        "means the `weight` key of each entry of the `nodePools` list under the `hybridgpu:cloud` config key. "
        "Defaults are written as YAML flow values. Cross-field rules (for example: GPU pools need `gpuLimit`, "
        "spot pools need enough instance types, `reserved` needs capacity reservations) are checked by "
        "`hybridgpu validate <stack>`.",
        "",
        "Check a stack with `hybridgpu validate <stack>`; regenerate this file with "
        "`python -m hybridgpu.docs_gen > docs/config-reference.md`.",
        "",
        "## Contents",
        "",
    ]
    for model, prefixes in models:
        where = "top-level keys" if model is StackConfig else ", ".join(_code(p) for p in prefixes)
        lines.append(f"- [{model.__name__}](#{model.__name__.lower()}): {where}")
    lines.append("")
    for model, prefixes in models:
        lines += _section(model, prefixes)
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- inventory reference


# SiteDocument and HostListDocument only document the two document shapes: the loader reads a
# document key by key (metadata, cluster, networks / metadata, hosts) with the models below them.
# tests/test_docs_gen.py checks that their keys are the ones the loader accepts.


class SiteDocument(Model):
    """The ``kind: Site`` document: exactly one per site, in any of the site's files."""

    api_version: Literal["hybridgpu.io/v1alpha1"] = Field(description="Schema version of the inventory format. Required.")
    kind: Literal["Site"] = Field(description="Document kind. Required.")
    metadata: SiteMetadata = Field(description="Names the site. Required.")
    cluster: Cluster = Field(description="Cluster settings (what kubeadm's ClusterConfiguration needs). Required.")
    networks: tuple[Network, ...] = Field(
        min_length=1,
        description="The site's IP networks; every host address must lie in a network of the matching purpose. Required.",
    )
    storage: SiteStorage | None = Field(
        default=None,
        description=(
            "Dataset storage the cluster mounts (NFS through csi-driver-nfs; `beegfs`/`lustre` refused as not supported yet), "
            "with the servers' read rates checked against a target. Default: none (no storage installed)."
        ),
    )
    remediation: RemediationPolicy | None = Field(
        default=None,
        description="What happens to a host whose GPUs fail: detector, cordon, drain, reset, repair label. Default: none (no detector installed).",
    )
    upgrades: UpgradePolicy | None = Field(
        default=None,
        description="Upgrades (docs/upgrades.md): each node's drain timeout, scheduled etcd snapshots, the GPU Operator's driver "
        "upgrade policy. Default: none (drain 30m, daily snapshots kept 7, the chart's driver policy).",
    )
    racks: dict[RackName, RackSpec] | None = Field(
        default=None,
        description="Power budget (kW) and cooling per rack name, as hosts write `rack`: the active and cordoned hosts of a declared "
        "rack must not draw more at full load (docs/onprem.md, \"Rack power and cooling\"). Default: none (no rack is checked).",
    )
    mirrors: Mirrors | None = Field(
        default=None,
        description="Sites without internet (docs/onprem.md, \"Sites without internet\"): apt repositories for the Kubernetes and "
        "NVIDIA packages, container registry mirrors (containerd hosts.toml) and Helm chart mirrors. Default: none (the public ones).",
    )


class HostListDocument(Model):
    """A ``kind: HostList`` document: any number per site, in any of the site's files.

    The hosts of every HostList that names the site are merged in reading order (files in the
    order given, a directory's ``*.yaml``/``*.yml`` files sorted by name, not recursive).
    """

    api_version: Literal["hybridgpu.io/v1alpha1"] = Field(description="Schema version of the inventory format. Required.")
    kind: Literal["HostList"] = Field(description="Document kind. Required.")
    metadata: HostListMetadata = Field(description="Names the site these hosts belong to. Required.")
    hosts: tuple[Host, ...] = Field(description="The machines; `hosts: []` is allowed. Required.")


#: The inventory's document models, in reference order.
INVENTORY_DOCUMENTS: tuple[type[BaseModel], ...] = (SiteDocument, HostListDocument)


def iter_inventory_models() -> list[tuple[type[BaseModel], list[str]]]:
    """Every inventory model, document by document (see :func:`iter_models`); each model once."""
    seen: set[type[BaseModel]] = set()
    out: list[tuple[type[BaseModel], list[str]]] = []
    for document in INVENTORY_DOCUMENTS:
        for model, prefixes in iter_models(document):
            if model not in seen:
                seen.add(model)
                out.append((model, prefixes))
    return out


def _summary(func: Any) -> str:
    """The first paragraph of a function's docstring, on one line, as Markdown."""
    first = inspect.cleandoc(func.__doc__ or "").split("\n\n", 1)[0]
    return _prose(first)


def rule_lines() -> list[tuple[str, str, list[str]]]:
    """``(function name, summary, issue codes)`` for each rule of :data:`hybridgpu.inventory.checks.RULES`.

    The summary is the docstring's first paragraph; the codes are the hyphenated ````code````
    literals of its ``Returns:`` section.
    """
    out = []
    for rule in inventory_checks.RULES:
        doc = inspect.cleandoc(rule.__doc__ or "")
        returns = doc.split("Returns:", 1)[1] if "Returns:" in doc else ""
        codes = list(dict.fromkeys(_ISSUE_CODE.findall(returns)))
        out.append((rule.__name__, _summary(rule), codes))
    return out


def _renamed_rows() -> list[str]:
    rows = ["| old key | now | note |", "|---|---|---|"]
    for old, (new, note) in RENAMED_FIELDS.items():
        now = _code(new) if new is not None else "removed"
        rows.append(f"| {_code(old)} | {now} | {_cell(note)} |")
    return rows


def inventory_reference_markdown() -> str:
    """The full Markdown reference of the on-prem inventory format (deterministic)."""
    models = iter_inventory_models()
    lines = [
        f"<!-- Generated by `{REGENERATE_INVENTORY}` from hybridgpu/inventory/. Do not edit by hand. -->",
        "",
        "# Inventory reference",
        "",
        f"Every key of an on-prem site inventory, generated from the pydantic models in `hybridgpu/inventory/models.py`. "
        f"An inventory is YAML: one `kind: Site` document (cluster settings and networks) and any number of "
        f"`kind: HostList` documents (the hosts), each with `apiVersion: {API_VERSION}`, in one file per site or "
        f"split over several files (documents separated by `---`). `{SAMPLE}` is the annotated sample; "
        "[onprem.md](onprem.md) is the guide. Keys are camelCase; unknown keys are rejected; YAML values are taken "
        "strictly (quote versions such as `\"1.35.2\"`; a number is not an address). A key path such as "
        "`hosts[].gpu.migLayouts[].layout` means the `layout` key of each `migLayouts` entry under `gpu` of each "
        "entry of `hosts`. Defaults are written as YAML flow values.",
        "",
        "Check an inventory with `hybridgpu validate <stack>` (the stack's `hybridgpu:onprem.inventory`); "
        f"regenerate this file with `{REGENERATE_INVENTORY}`.",
        "",
        "## Contents",
        "",
    ]
    for model, prefixes in models:
        where = "top-level keys" if prefixes == [""] else ", ".join(_code(p) for p in prefixes)
        lines.append(f"- [{model.__name__}](#{model.__name__.lower()}): {where}")
    lines += [
        "- [Renamed and removed fields](#renamed-and-removed-fields)",
        "- [Validation rules](#validation-rules)",
        "",
    ]
    for model, prefixes in models:
        lines += _section(model, prefixes)
    lines += [
        "## Renamed and removed fields",
        "",
        "Keys of earlier drafts of the format. Wherever one appears, it is reported first, with its new name "
        "(`renamed-field`), before any other problem.",
        "",
        *_renamed_rows(),
        "",
        "Keys that would hold a secret inline are refused without echoing the value (`inline-secret`): "
        + ", ".join(_code(k) for k in sorted(INLINE_SECRET_KEYS))
        + " anywhere in a host, and `key` under `ssh` or `ssh.keySecret`. Values that look like key material "
        "are refused in `keySecret` too.",
        "",
        "## Validation rules",
        "",
        "Beyond the types above, the loader runs these rules (`hybridgpu/inventory/checks.py`, one function per rule, "
        "in this order) and reports every problem at once, each with the file, the host (or site section), the field "
        "and a fix. The loader's own problems (unreadable files, YAML syntax, unknown keys, wrong types) carry codes "
        "such as `file`, `yaml`, `document` and `schema`.",
        "",
        "| rule | checks | issue codes |",
        "|---|---|---|",
    ]
    for name, summary, codes in rule_lines():
        lines.append(f"| {_code(name)} | {_cell(summary)} | {', '.join(_code(c) for c in codes)} |")
    lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- documentation lint


def field_doc_problems(root: type[BaseModel] = StackConfig) -> list[str]:
    """Fields reachable from ``root`` whose description does not document them.

    Rules: every field has a non-empty description; a field without a default says
    ``Required``; a field with a default states it (``Default: ...``) or says when it is
    ``Required`` (conditionally required fields such as ``gpuLimit``).

    Returns:
        One message per problem, ``Model.field: what is missing``; empty when all is documented.
    """
    problems: list[str] = []
    for model, _prefixes in iter_models(root):
        for name, info in _fields(model):
            where = f"{model.__name__}.{name}"
            description = (info.description or "").strip()
            if not description:
                problems.append(f"{where}: no description")
            elif info.is_required():
                if not _REQUIRED_WORD.search(description):
                    problems.append(f"{where}: has no default, so its description must say 'Required'")
            elif not (_DEFAULT_WORD.search(description) or _REQUIRED_WORD.search(description)):
                problems.append(f"{where}: description must state the default ('Default: ...') or say 'Required'")
    return problems


# --------------------------------------------------------------------------- command line


def _check(path: Path, text: str, regenerate: str) -> bool:
    """Compare ``path`` with the generated ``text``; print the verdict (diff on stderr)."""
    try:
        current = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = ""
    if current == text:
        print(f"{path}: up to date")
        return True
    diff = difflib.unified_diff(current.splitlines(keepends=True), text.splitlines(keepends=True), fromfile=str(path), tofile="generated")
    sys.stderr.write(f"{path} is out of date; regenerate it with: {regenerate}\n")
    sys.stderr.writelines(diff)
    return False


def _in_checkout(path: Path, root: Path | None) -> Path:
    """``path`` if absolute, else ``path`` under the source checkout (``root`` or found from the cwd)."""
    if path.is_absolute():
        return path
    return find_checkout(path, root=root, needed_by="python -m hybridgpu.docs_gen --check", option="--root DIR") / path


def main(argv: list[str] | None = None) -> int:
    """``python -m hybridgpu.docs_gen [--inventory] [--check] [--file PATH]``.

    Without ``--check`` the stack configuration reference (with ``--inventory``: the inventory
    reference) goes to stdout. ``--check`` compares the committed files with the generated
    text: both ``docs/config-reference.md`` and ``docs/inventory-reference.md`` of the source
    checkout (found at or above the working directory, or ``--root DIR``), or only the one
    selected by ``--inventory``, or ``--file PATH`` against the selected reference. Exit 0 when
    equal, 1 with a diff on stderr when not, 2 (with what is missing and the fix) when the
    checkout's docs are not found.
    """
    parser = argparse.ArgumentParser(
        prog="python -m hybridgpu.docs_gen", description="Generate the stack configuration reference or the inventory reference (Markdown)."
    )
    parser.add_argument("--inventory", action="store_true", help="the inventory reference instead of the stack configuration reference")
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed reference differs from the generated one")
    parser.add_argument("--file", type=Path, default=None, help="reference file for --check (default: both files under docs/)")
    parser.add_argument("--root", type=Path, default=None, help="source checkout holding docs/ (default: found from the working directory)")
    args = parser.parse_args(argv)
    config = (DEFAULT_PATH, config_reference_markdown, REGENERATE_CONFIG)
    inventory = (INVENTORY_PATH, inventory_reference_markdown, REGENERATE_INVENTORY)
    selected = inventory if args.inventory else config
    if not args.check:
        sys.stdout.write(selected[1]())
        return 0
    if args.file is not None:
        targets = [(args.file, selected[1], selected[2])]
    else:
        try:
            targets = [(_in_checkout(path, args.root), render, regen) for path, render, regen in ([inventory] if args.inventory else [config, inventory])]
        except CheckoutFileMissing as exc:
            sys.stderr.write(f"error: {exc}, or give the file with --file\n")
            return 2
    results = [_check(path, render(), regenerate) for path, render, regenerate in targets]
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
