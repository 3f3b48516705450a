"""Usage exports for showback (:mod:`hybridgpu.economics.showback`): read and checked into :class:`UsageRecord` rows (pure).

Every problem is an issue naming the file, the row (CSV line or JSON entry) and the column, with a fix
(:class:`UsageError`); the columns of every accepted export are documented in ``docs/teams.md``
("The usage export"). MIG instances are counted as GPU-equivalents here (:func:`gpu_fraction`).

Accepted exports (detected from the content, not the file name):

* **usage CSV / JSON**: one row per allocation, the columns of :data:`CSV_COLUMNS` (a JSON list
  of objects with the same keys, or ``{"allocations": [...]}``).
* **OpenCost allocation API JSON** (``GET /allocation?window=...&aggregate=pod``, optionally
  ``includeIdle=true``): ``{"code": 200, "data": [{"<name>": {allocation}}, ...]}``. Read per
  allocation: ``name``, ``properties.{cluster,node,namespace,pod,labels}``, ``gpuHours``,
  ``gpuRequestAverage``, ``gpuUsageAverage``, ``start``; an allocation named ``__idle__`` (or
  ``<cluster>/__idle__``) is the cluster's unallocated capacity. Source: opencost/opencost
  ``core/pkg/opencost/allocation_json.go`` (``AllocationJSON``), ``allocationprops.go``
  (``AllocationProperties``), ``allocation.go`` (``IdleSuffix = "__idle__"``), v1.112.0-9
  (5f653330), read 2026-11-24; the pinned chart runs OpenCost 1.120.1, whose JSON names are the
  same fields. OpenCost allocations carry no node labels, so the capacity type comes from the
  nodes (``kubectl get nodes -o json``): ``karpenter.sh/capacity-type`` (``on-demand``, ``spot``,
  ``reserved``), which Karpenter sets on every node it launches; a node without it is an owned
  on-prem node.
* **Kueue workload list** (``kubectl get workloads -A -o json``): per admitted Workload,
  ``status.admission.podSetAssignments[].{flavors,resourceUsage}`` (``resourceUsage`` is the
  total of the pod set, kubernetes-sigs/kueue v0.19.2 ``apis/kueue/v1beta2/workload_types.go``)
  and the ``Admitted`` / ``Finished`` conditions' ``lastTransitionTime`` for the hours; a
  ResourceFlavor name maps to a capacity type (and GPU model, for MIG) through ``flavors``.

Nothing here imports Pulumi.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from hybridgpu.datafile import DataFileError
from hybridgpu.errors import Issue
from hybridgpu.catalog import UnknownInstanceTypeError, load_catalog
from hybridgpu.k8s import (
    CAPACITY_TYPE_LABEL,
    GPU_PRODUCT_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    MIG_RESOURCE_PREFIX,
    QuantityError,
    device_count,
    quantity,
)
from hybridgpu.mig.profiles import UnknownMigModelError, UnknownMigProfileError, mig_gpu

__all__ = ["CAPACITY_TYPES", "CSV_COLUMNS", "UsageError", "UsageRecord", "gpu_fraction", "load_nodes", "load_usage", "node_gpu_models", "parse_flavors",
           "parse_usage"]

#: Capacity types and their side. ``owned`` is on-prem; the others are Karpenter's values of
#: ``karpenter.sh/capacity-type`` (aws/karpenter-provider-aws v1.14.1: on-demand, spot, reserved).
CAPACITY_TYPES: dict[str, str] = {"owned": "on-prem", "reserved": "cloud", "spot": "cloud", "on-demand": "cloud"}
#: Columns of the usage CSV (and keys of the usage JSON). Required: namespace, capacity_type, gpus, hours.
CSV_COLUMNS: tuple[str, ...] = (
    "kind", "start", "namespace", "pod", "labels", "capacity_type", "gpu_model", "mig_profile", "gpus", "hours", "gpu_utilization",
)
_REQUIRED = ("capacity_type", "gpus", "hours")
_DOC = "docs/teams.md (section 'The usage export')"
_LABEL_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$")


class UsageError(DataFileError):
    """A usage export is invalid: every issue names the file, the row (CSV line or JSON entry) and the column, with a fix."""

    what = "usage export"


@dataclass(frozen=True)
class UsageRecord:
    """One allocation (or one idle-capacity row) of a usage export.

    Attributes:
        kind: ``allocation`` or ``idle`` (capacity no allocation held).
        name: the allocation's name (``namespace/pod``, the OpenCost name, the Workload name).
        namespace: Kubernetes namespace ("" for idle rows).
        labels: the pod's labels (OpenCost spells ``.`` and ``/`` of a key as ``_``: both spellings are matched).
        capacity_type: ``owned``, ``reserved``, ``spot`` or ``on-demand``.
        gpu_hours: GPU-equivalent hours (MIG instances as their compute fraction of a GPU).
        utilization: average GPU utilization of the allocation (0..1), or None when unknown.
        day: the UTC date the allocation started (``YYYY-MM-DD``), or "" when unknown.
        idle_usd: for an idle row that has a cost but no GPU-hours (an OpenCost ``__idle__``
            allocation: ``computeIdleAllocations`` sets ``gpuCost``, not ``gpuHours``), that cost;
            its GPU-hours are then ``idle_usd / price`` of its capacity type.
        gpu_model: the GPU catalog key the allocation ran on (``H100-80GB``), or None when the export
            does not say: CSV/JSON ``gpu_model``; OpenCost: its node's instance type (or GFD product
            label) through the catalog (:func:`node_gpu_models`); Kueue: the ResourceFlavor's model.
            Showback prices a row by (capacity type, GPU model) when it has one.
    """

    kind: str
    name: str
    namespace: str
    labels: Mapping[str, str]
    capacity_type: str
    gpu_hours: Decimal
    utilization: float | None = None
    day: str = ""
    idle_usd: Decimal | None = None
    gpu_model: str | None = None

    @property
    def side(self) -> str:
        """``on-prem`` or ``cloud``."""
        return CAPACITY_TYPES[self.capacity_type]


# --------------------------------------------------------------------------- GPU fractions


def gpu_fraction(gpu_model: str | None, mig_profile: str | None) -> Decimal:
    """GPU-equivalents of one device: 1 for a whole GPU, ``computeSlices(profile) / computeSlices(GPU)`` for a MIG instance.

    Args:
        gpu_model: MIG catalog GPU model (e.g. ``H100-80GB``); needed with ``mig_profile``.
        mig_profile: MIG profile name (``1g.10gb``; the resource spellings ``nvidia.com/mig-1g.10gb`` and
            ``mig-1g.10gb.me`` for ``1g.10gb+me`` are accepted), or None/"".

    Raises:
        UnknownMigModelError, UnknownMigProfileError: the model or profile is not in the MIG catalog.
        ValueError: a MIG profile without a GPU model.
    """
    if not mig_profile:
        return Decimal(1)
    if not gpu_model:
        raise ValueError("a MIG profile needs its GPU model (the MIG catalog gives the profile's compute slices per GPU model)")
    return _fraction(gpu_model, mig_profile)


_FRACTIONS: dict[tuple[str, str], Decimal] = {}


def _fraction(gpu_model: str, profile: str) -> Decimal:
    key = (gpu_model, profile)
    if key not in _FRACTIONS:
        name = profile.removeprefix(MIG_RESOURCE_PREFIX).removeprefix("mig-")
        gpu = mig_gpu(gpu_model)
        if not gpu.has_profile(name) and name.count(".") > 1:  # the device plugin spells 1g.10gb+me as mig-1g.10gb.me
            head, _, tail = name.rpartition(".")
            name = f"{head}+{tail}"
        _FRACTIONS[key] = Decimal(gpu.profile(name).compute_slices) / Decimal(gpu.compute_slices)
    return _FRACTIONS[key]


# --------------------------------------------------------------------------- parsing


def _num(value: Any) -> Decimal | None:
    """A number of an export (JSON number, or text as a Kubernetes quantity: ``8``, ``"8e0"``, ``"1k"``, ``" 0.5 "``), None when it is not one.

    Text is read by :func:`hybridgpu.k8s.quantity` (surrounding blanks of a CSV cell ignored), the
    grammar of every other path that reads a count.
    """
    try:
        return quantity(value.strip() if isinstance(value, str) else value)
    except QuantityError:
        return None


def _labels_from_text(text: str) -> dict[str, str] | str:
    """``team=a;project=b`` -> dict, or an error message."""
    out: dict[str, str] = {}
    for item in (i.strip() for i in text.split(";")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not _LABEL_RE.match(key.strip()):
            return f"{item!r} is not KEY=VALUE"
        out[key.strip()] = value.strip()
    return out


class _Rows:
    """Collects records and issues while reading one export."""

    def __init__(self, file: str, entry_kind: str):
        self.file, self.entry_kind = file, entry_kind
        self.records: list[UsageRecord] = []
        self.issues: list[Issue] = []
        self.label_cache: dict[str, dict[str, str] | str] = {}  # exports repeat the same label sets: parse each once

    def bad(self, row: str, column: str | None, message: str, fix: str, code: str = "schema") -> None:
        if self.entry_kind == "line":
            self.issues.append(Issue.on_line(self.file, int(row), column, message, fix, code))
        else:
            self.issues.append(Issue.in_entry(self.file, row, column, message, fix, code))


_COLUMN_SET = frozenset(CSV_COLUMNS)


def _flat_row(rows: _Rows, row_id: str, row: Mapping[str, Any], *, check_keys: bool = True) -> None:
    """One row of the usage CSV/JSON (keys :data:`CSV_COLUMNS`; ``check_keys=False`` when the CSV header was checked)."""
    before = len(rows.issues)
    if check_keys and not _COLUMN_SET.issuperset(row):
        for key in sorted(set(row) - _COLUMN_SET):
            rows.bad(row_id, key, "unknown column", f"use only the columns {', '.join(CSV_COLUMNS)} ({_DOC})")
    kind = str(row.get("kind") or "allocation").strip()
    if kind not in ("allocation", "idle"):
        rows.bad(row_id, "kind", f"{kind!r} is not allocation or idle", "write `allocation` (a pod's GPUs) or `idle` (capacity no pod held)")
    for col in _REQUIRED:
        if row.get(col) is None or str(row.get(col)).strip() == "":
            rows.bad(row_id, col, "missing", f"give `{col}` on every row ({_DOC})", "missing")
    namespace = str(row.get("namespace") or "").strip()
    if kind == "allocation" and not namespace:
        rows.bad(row_id, "namespace", "missing on an allocation row", "give the pod's namespace (only `kind: idle` rows have none)", "missing")
    ctype = str(row.get("capacity_type") or "").strip()
    if ctype and ctype not in CAPACITY_TYPES:
        rows.bad(row_id, "capacity_type", f"{ctype!r} is not a capacity type",
                 f"use one of {', '.join(CAPACITY_TYPES)} (on-prem GPUs are `owned`; cloud ones take the node's karpenter.sh/capacity-type)")
    values: dict[str, Decimal] = {}
    for col in ("gpus", "hours"):
        raw = row.get(col)
        if raw is None or str(raw).strip() == "":
            continue
        value = _num(raw)
        if value is None:
            rows.bad(row_id, col, f"{raw!r} is not a number", f"write `{col}` as a number, e.g. 8 or 0.5")
        elif value < 0:
            rows.bad(row_id, col, f"{raw} is negative", f"`{col}` counts {'devices' if col == 'gpus' else 'hours'}: write a number >= 0")
        else:
            values[col] = value
    util = None
    raw_util = row.get("gpu_utilization")
    if raw_util is not None and str(raw_util).strip() != "":
        u = _num(raw_util)
        if u is None or not 0 <= u <= 1:
            rows.bad(row_id, "gpu_utilization", f"{raw_util!r} is not a fraction in [0, 1]", "write the average GPU utilization as a fraction, e.g. 0.35 (not 35)")
        else:
            util = float(u)
    labels_raw = row.get("labels") or {}
    if isinstance(labels_raw, str):
        parsed = rows.label_cache.get(labels_raw)
        if parsed is None:
            parsed = rows.label_cache[labels_raw] = _labels_from_text(labels_raw)
        if isinstance(parsed, str):
            rows.bad(row_id, "labels", parsed, "write labels as key=value pairs separated by `;`, e.g. team=vision;project=detector")
            parsed = {}
        labels = parsed
    elif isinstance(labels_raw, Mapping):
        labels = {str(k): str(v) for k, v in labels_raw.items()}
    else:
        rows.bad(row_id, "labels", f"{labels_raw!r} is not a map", "write labels as an object {\"team\": \"vision\"} (JSON) or team=vision;project=x (CSV)")
        labels = {}
    model = str(row.get("gpu_model") or "").strip() or None
    profile = str(row.get("mig_profile") or "").strip() or None
    fraction = Decimal(1)
    if profile:
        if model is None:
            rows.bad(row_id, "gpu_model", f"missing for MIG profile {profile!r}",
                     "give the GPU model (e.g. H100-80GB): a MIG instance is billed as its compute slices / the GPU's")
        else:
            try:
                fraction = gpu_fraction(model, profile)
            except UnknownMigModelError as exc:
                rows.bad(row_id, "gpu_model", str(exc), "use a GPU model of the MIG catalog (`hybridgpu mig models`)")
            except UnknownMigProfileError as exc:
                rows.bad(row_id, "mig_profile", str(exc), f"use a MIG profile of {model} (`hybridgpu mig profiles {model}`)")
    if len(rows.issues) > before:
        return
    pod = str(row.get("pod") or "").strip()
    start = str(row.get("start") or "").strip()
    rows.records.append(UsageRecord(
        kind=kind,
        name=f"{namespace}/{pod}" if pod else (namespace or f"{kind} {ctype}"),
        namespace=namespace,
        labels=labels,
        capacity_type=ctype,
        gpu_hours=values["gpus"] * values["hours"] * fraction,
        utilization=util,
        day=start[:10],
        gpu_model=model,
    ))


def _read_csv(text: str, file: str) -> list[UsageRecord]:
    rows = _Rows(file, "line")
    lines = [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        rows.bad("1", None, "no header and no rows", f"start with a header line naming the columns, e.g. {','.join(CSV_COLUMNS)}", "empty")
        raise UsageError(rows.issues)
    reader = csv.reader(io.StringIO("\n".join(line for _, line in lines)))
    header = [h.strip() for h in next(reader)]
    header_line = lines[0][0]
    missing = [c for c in ("namespace", *_REQUIRED) if c not in header]
    for col in missing:
        rows.bad(str(header_line), col, "column missing from the header", f"add a `{col}` column ({_DOC})", "missing")
    dupes = sorted({h for h in header if header.count(h) > 1})
    for col in dupes:
        rows.bad(str(header_line), col, "column named twice in the header", "name each column once")
    for col in [h for h in header if h not in _COLUMN_SET]:
        rows.bad(str(header_line), col, "unknown column", f"use only the columns {', '.join(CSV_COLUMNS)} ({_DOC})")
    if rows.issues:
        raise UsageError(rows.issues)
    for (number, _), values in zip(lines[1:], reader, strict=False):
        if len(values) != len(header):
            rows.bad(str(number), None, f"{len(values)} values for {len(header)} columns", "give one value per header column (quote values that contain commas)")
            continue
        _flat_row(rows, str(number), dict(zip(header, values, strict=True)), check_keys=False)
    if rows.issues:
        raise UsageError(rows.issues)
    return rows.records


def load_nodes(path: Path, shown: str | None = None) -> dict[str, str]:
    """Node name -> capacity type from ``kubectl get nodes -o json`` (a ``List`` of ``Node``).

    A node with ``karpenter.sh/capacity-type`` gets its value (``on-demand``, ``spot``,
    ``reserved``); a node without it is an owned on-prem node.

    Raises:
        UsageError: unreadable JSON, not a node list, or an unknown capacity-type value.
    """
    shown = shown or str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError([Issue.in_entry(shown, None, None, f"not readable as JSON: {exc}", "give the output of `kubectl get nodes -o json`", "file")]) from None
    items = data.get("items") if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        raise UsageError([Issue.in_entry(shown, None, "items", "not a node list", "give the output of `kubectl get nodes -o json`")])
    nodes, issues = {}, []
    for i, item in enumerate(items):
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        if not isinstance(meta, Mapping):
            meta = {}
        name = meta.get("name")
        if not isinstance(name, str):
            issues.append(Issue.in_entry(shown, f"items[{i}]", "metadata.name", "missing", "give the output of `kubectl get nodes -o json`", "missing"))
            continue
        ctype = (meta.get("labels") or {}).get(CAPACITY_TYPE_LABEL, "owned")
        if ctype not in CAPACITY_TYPES:
            issues.append(Issue.in_entry(shown, name, f"metadata.labels.{CAPACITY_TYPE_LABEL}", f"{ctype!r} is not a capacity type",
                                         "Karpenter writes on-demand, spot or reserved; correct the label"))
            continue
        nodes[name] = ctype
    if issues:
        raise UsageError(issues)
    return nodes


def node_gpu_models(path: Path) -> dict[str, str]:
    """Node name -> GPU catalog key from ``kubectl get nodes -o json``, for showback's price per GPU model.

    A node's model is its ``node.kubernetes.io/instance-type`` (set on every EKS node) looked up in
    the GPU catalog, else its ``nvidia.com/gpu.product`` label (GPU feature discovery, on-prem nodes)
    matched to a catalog ``productLabel`` (the ``-SHARED`` and MIG suffixes GFD adds are ignored).
    Nodes with neither, or a value the catalog does not know, are left out (their rows are priced
    at the blended rate, and showback says so). Call after :func:`load_nodes`, which reports a bad file.
    """
    try:
        items = json.loads(path.read_text(encoding="utf-8")).get("items") or []
    except (OSError, ValueError, AttributeError):
        return {}
    catalog = load_catalog()
    by_product = {g.product_label: g.name for g in catalog.gpu_models}
    out = {}
    for item in items:
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        if not isinstance(meta, Mapping):
            continue
        name, labels = meta.get("name"), meta.get("labels")
        if not isinstance(labels, Mapping) or not isinstance(name, str):
            continue
        model = None
        itype = labels.get(INSTANCE_TYPE_LABEL)
        if isinstance(itype, str):
            try:
                model = catalog.instance_type(itype).gpu_model
            except (UnknownInstanceTypeError, KeyError):  # a CPU node, or a type the catalog does not know
                model = None
        product = labels.get(GPU_PRODUCT_LABEL)
        if model is None and isinstance(product, str):
            model = next((m for p, m in by_product.items() if product == p or product.startswith(p + "-")), None)
        if model is not None:
            out[name] = model
    return out


def _read_opencost(data: Mapping[str, Any], file: str, nodes: Mapping[str, str] | None, node_models: Mapping[str, str] | None = None) -> list[UsageRecord]:
    rows = _Rows(file, "entry")
    sets = data.get("data")
    if not isinstance(sets, list):
        rows.bad("data", None, "not a list of allocation sets", "export `GET /allocation?window=...&aggregate=pod&includeIdle=true` as is")
        raise UsageError(rows.issues)
    for s, allocation_set in enumerate(sets):
        if allocation_set is None:
            continue
        if not isinstance(allocation_set, Mapping):
            rows.bad(f"data[{s}]", None, "not a map of allocations", "export the OpenCost allocation API's JSON as is")
            continue
        for key, alloc in allocation_set.items():
            row_id = f"data[{s}].{key}"
            if not isinstance(alloc, Mapping):
                rows.bad(row_id, None, "not an allocation object", "export the OpenCost allocation API's JSON as is")
                continue
            _opencost_row(rows, row_id, str(alloc.get("name") or key), alloc, nodes, node_models or {})
    if rows.issues:
        raise UsageError(rows.issues)
    return rows.records


def _opencost_row(rows: _Rows, row_id: str, name: str, alloc: Mapping[str, Any], nodes: Mapping[str, str] | None, node_models: Mapping[str, str]) -> None:
    before = len(rows.issues)
    props = alloc.get("properties") or {}
    if not isinstance(props, Mapping):
        rows.bad(row_id, "properties", "not an object", "export with `aggregate=pod` (or container) so each allocation has its properties")
        return
    hours = _num(alloc.get("gpuHours", 0))
    cost = _num(alloc.get("gpuCost", 0))
    if hours is None:
        rows.bad(row_id, "gpuHours", f"{alloc.get('gpuHours')!r} is not a number", "export the OpenCost allocation API's JSON as is")
    elif hours < 0:
        rows.bad(row_id, "gpuHours", f"{alloc.get('gpuHours')} is negative", "GPU-hours are >= 0: re-export the window")
    idle = name.endswith("__idle__")
    node = str(props.get("node") or "")
    ctype = None
    if nodes is None:
        rows.bad(row_id, "properties.node", "no node list to read the capacity type from",
                 "pass --nodes NODES.json (`kubectl get nodes -o json`): OpenCost allocations carry no node labels", "missing")
    elif node in nodes:
        ctype = nodes[node]
    elif idle and not node:
        rows.bad(row_id, "properties.node", "an idle allocation without its node",
                 "export with `includeIdle=true&idleByNode=true`, so each node's idle capacity is priced by its capacity type", "missing")
    else:
        rows.bad(row_id, "properties.node", f"node {node!r} is not in the node list", "export the nodes of the same cluster and window (`kubectl get nodes -o json`)")
    util = None
    request, usage = _num(alloc.get("gpuRequestAverage")), _num(alloc.get("gpuUsageAverage"))
    if request is not None and usage is not None and request > 0:
        util = max(0.0, min(1.0, float(usage / request)))
    if len(rows.issues) > before or hours is None or ctype is None:
        return
    labels = props.get("labels") or {}
    namespace = "" if idle else str(props.get("namespace") or "")
    if not idle and not namespace:
        rows.bad(row_id, "properties.namespace", "missing", "export with `aggregate=pod` so each allocation names its namespace", "missing")
        return
    rows.records.append(UsageRecord(
        kind="idle" if idle else "allocation",
        name=name,
        namespace=namespace,
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {},
        capacity_type=ctype,
        gpu_hours=hours,
        utilization=util,
        day=str(alloc.get("start") or "")[:10],
        idle_usd=cost if idle and hours == 0 and cost is not None and cost > 0 else None,
        gpu_model=node_models.get(node),
    ))


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _read_kueue(items: list[Any], file: str, flavors: Mapping[str, tuple[str, str | None]] | None, until: datetime | None) -> list[UsageRecord]:
    rows = _Rows(file, "entry")
    if flavors is None:
        rows.bad("items", None, "no flavor map to read the capacity type from",
                 "pass --flavor NAME=CAPACITY_TYPE[:GPU_MODEL] for every ResourceFlavor, e.g. --flavor onprem-h100=owned:H100-80GB", "missing")
        raise UsageError(rows.issues)
    for i, item in enumerate(items):
        meta = item.get("metadata") or {} if isinstance(item, Mapping) else {}
        name = f"{meta.get('namespace', '?')}/{meta.get('name', f'items[{i}]')}"
        status = item.get("status") or {} if isinstance(item, Mapping) else {}
        admission = status.get("admission")
        if not admission:
            continue  # pending workloads hold no GPUs
        conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, Mapping)}
        admitted = conditions.get("Admitted")
        start = _parse_time(admitted.get("lastTransitionTime")) if admitted and admitted.get("status") == "True" else None
        finished = conditions.get("Finished")
        end = _parse_time(finished.get("lastTransitionTime")) if finished and finished.get("status") == "True" else until
        if start is None:
            rows.bad(name, "status.conditions[Admitted].lastTransitionTime", "missing or not a time", "export `kubectl get workloads -A -o json` as is")
            continue
        if end is None:
            rows.bad(name, "status.conditions[Finished]", "the workload is still running", "pass --until TIME (e.g. the end of the billing window) to bill running workloads up to it")
            continue
        hours = Decimal(repr((end - start).total_seconds())) / Decimal(3600)
        if hours < 0:
            rows.bad(name, "status.conditions", "finished before it was admitted", "export `kubectl get workloads -A -o json` as is")
            continue
        for a, psa in enumerate(admission.get("podSetAssignments") or []):
            usage = psa.get("resourceUsage") or {}
            for resource, flavor in (psa.get("flavors") or {}).items():
                if not (resource == GPU_RESOURCE or resource.startswith(MIG_RESOURCE_PREFIX)):
                    continue
                column = f"status.admission.podSetAssignments[{a}].flavors.{resource}"
                if flavor not in flavors:
                    rows.bad(name, column, f"ResourceFlavor {flavor!r} has no capacity type", f"pass --flavor {flavor}=CAPACITY_TYPE[:GPU_MODEL]")
                    continue
                ctype, model = flavors[flavor]
                try:  # whole devices (the API server writes them as plain integers): hybridgpu.k8s.device_count
                    count = Decimal(device_count(usage.get(resource, "0"), resource))
                except QuantityError as exc:
                    rows.bad(name, f"status.admission.podSetAssignments[{a}].resourceUsage.{resource}", exc.problem,
                             f"{exc.fix}; export `kubectl get workloads -A -o json` as is")
                    continue
                try:
                    fraction = gpu_fraction(model, resource) if resource.startswith(MIG_RESOURCE_PREFIX) else Decimal(1)
                except (ValueError, KeyError) as exc:
                    rows.bad(name, column, str(exc), f"pass --flavor {flavor}={ctype}:GPU_MODEL with the MIG catalog's GPU model")
                    continue
                rows.records.append(UsageRecord("allocation", name, str(meta.get("namespace") or ""), dict(meta.get("labels") or {}), ctype,
                                                count * hours * fraction, None, start.date().isoformat(), gpu_model=model))
    if rows.issues:
        raise UsageError(rows.issues)
    return rows.records


def parse_flavors(items: Iterable[str]) -> dict[str, tuple[str, str | None]]:
    """``NAME=CAPACITY_TYPE[:GPU_MODEL]`` items -> ResourceFlavor name -> (capacity type, GPU model).

    Raises:
        ValueError: a malformed item or an unknown capacity type.
    """
    out: dict[str, tuple[str, str | None]] = {}
    for item in items:
        name, sep, rest = item.partition("=")
        ctype, _, model = rest.partition(":")
        if not sep or not name or ctype not in CAPACITY_TYPES:
            raise ValueError(f"--flavor: {item!r} is not NAME=CAPACITY_TYPE[:GPU_MODEL] with a capacity type in {', '.join(CAPACITY_TYPES)}")
        out[name] = (ctype, model or None)
    return out


def parse_usage(text: str, file: str, *, nodes: Mapping[str, str] | None = None, flavors: Mapping[str, tuple[str, str | None]] | None = None,
                until: datetime | None = None, node_models: Mapping[str, str] | None = None) -> list[UsageRecord]:
    """Read a usage export's text (format detected from the content; see the module docstring).

    Args:
        text: the file's content.
        file: the file as the user knows it (named in issues).
        nodes: node name -> capacity type (:func:`load_nodes`), for OpenCost exports.
        flavors: ResourceFlavor -> (capacity type, GPU model) (:func:`parse_flavors`), for Kueue lists.
        until: the end of the window, for Kueue workloads still running.
        node_models: node name -> GPU catalog key (:func:`node_gpu_models`), for OpenCost exports.

    Returns:
        The records, in file order.

    Raises:
        UsageError: every bad row, naming the file, the row (CSV line or JSON entry), the column and the fix.
    """
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return _read_csv(text, file)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError([Issue.in_entry(file, None, None, f"not readable as JSON: {exc}", "export the file again; JSON must be complete", "file")]) from None
    if isinstance(data, Mapping) and "data" in data and ("code" in data or isinstance(data.get("data"), list)):
        return _read_opencost(data, file, nodes, node_models)
    if isinstance(data, Mapping) and isinstance(data.get("items"), list):
        return _read_kueue(data["items"], file, flavors, until)
    rows_data = data.get("allocations") if isinstance(data, Mapping) else data
    if not isinstance(rows_data, list):
        raise UsageError([Issue.in_entry(file, None, None, "not a usage export",
                                         f"give a usage CSV/JSON ({_DOC}), an OpenCost /allocation export or `kubectl get workloads -A -o json`", "file")])
    rows = _Rows(file, "entry")
    for i, row in enumerate(rows_data):
        if not isinstance(row, Mapping):
            rows.bad(f"#{i}", None, "not an object", "write each allocation as an object with the usage columns")
            continue
        _flat_row(rows, f"#{i}", row)
    if rows.issues:
        raise UsageError(rows.issues)
    return rows.records


def load_usage(path: Path, shown: str | None = None, **kwargs: Any) -> list[UsageRecord]:
    """:func:`parse_usage` of a file.

    Raises:
        UsageError: the file cannot be read, or any row is bad.
    """
    shown = shown or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError([Issue.in_entry(shown, None, None, f"cannot be read: {exc.strerror or exc}", "give the path of a usage export", "file")]) from None
    except UnicodeDecodeError as exc:
        raise UsageError([Issue.in_entry(shown, None, None, f"is not UTF-8 text ({exc.reason} at byte {exc.start})",
                                         "give a usage CSV/JSON, an OpenCost export or a Kueue workload list (text, UTF-8)", "file")]) from None
    return parse_usage(text, shown, **kwargs)
