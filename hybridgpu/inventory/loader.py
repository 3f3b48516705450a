"""Read an inventory (one site, one or several YAML files) and validate it offline.

* :func:`load_inventory` reads files or a directory, parses every YAML document (several
  per file allowed, separated by ``---``), validates them with the models of
  :mod:`hybridgpu.inventory.models` and the rules of :mod:`hybridgpu.inventory.checks`, and
  returns an :class:`~hybridgpu.inventory.models.Inventory`.
* :func:`inventory_from_documents` does the same for documents already parsed.

Whatever is wrong with the input (a missing file, binary junk, a YAML syntax error, a
document that is not a mapping, a wrong type, a broken rule) ends as ONE
:class:`~hybridgpu.inventory.models.InventoryError` listing every problem found, each naming
the file, the host (or the site section) and the field, with a fix; never as a traceback.
Renamed and removed fields (:data:`RENAMED_FIELDS`) are reported first, with their new
name, and a field that holds an inline SSH key is refused without echoing its value.

Layout of the files::

    apiVersion: hybridgpu.io/v1alpha1
    kind: Site                       # exactly one per site
    metadata: {name: site-a}
    cluster: {...}                   # models.Cluster
    networks: [...]                  # models.Network
    ---
    apiVersion: hybridgpu.io/v1alpha1
    kind: HostList                   # any number, in any of the files
    metadata: {site: site-a}
    hosts: [...]                     # models.Host

Hosts of every ``HostList`` naming the site are merged in reading order (files in the order
given; a directory's ``*.yaml``/``*.yml`` files sorted by name, not recursive).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from hybridgpu.catalog import Catalog
from hybridgpu.collector import gc_paused, promote_to_oldest
from hybridgpu.datafile import describe_yaml_error, load_unique_yaml_all
from hybridgpu.errors import Issue, issues_from_validation, join_key, key_path, shown, unknown_key_fix
from hybridgpu.inventory.checks import CheckInput, run_checks
from hybridgpu.inventory.power import RackSpec
from hybridgpu.inventory.remediation import RemediationPolicy
from hybridgpu.inventory.storage import SiteStorage
from hybridgpu.inventory.upgrade import UpgradePolicy
from hybridgpu.inventory.mirrors import Mirrors
from hybridgpu.inventory.models import (
    API_VERSION,
    KINDS,
    Cluster,
    Host,
    HostListMetadata,
    HostRecord,
    Inventory,
    InventoryError,
    IpNetwork,
    Network,
    Site,
    SiteMetadata,
    looks_like_key_material,
)

__all__ = ["INLINE_SECRET_KEYS", "RENAMED_FIELDS", "SAMPLE", "inventory_from_documents", "load_inventory"]

#: Fields of earlier drafts of the format: old key -> (new key path or None if removed, note).
#: Reported (wherever the old key appears) before any generic unknown-key error, with the fix.
RENAMED_FIELDS: dict[str, tuple[str | None, str]] = {
    "kubeVersion": ("kubernetesVersion", "renamed in v1alpha1"),
    "sshKey": (None, "removed: use ssh.keySecret"),
    "podCidr": ("podSubnet", "renamed in v1alpha1 (kubeadm's networking.podSubnet)"),
    "serviceCidr": ("serviceSubnet", "renamed in v1alpha1 (kubeadm's networking.serviceSubnet)"),
    "migProfile": ("gpu.migLayouts", "replaced in v1alpha1 by per-GPU layouts"),
}

#: Keys that would hold a secret inline. Refused anywhere in a host; ``key`` only under
#: ``ssh``/``ssh.keySecret`` (a taint also has a ``key``).
INLINE_SECRET_KEYS = frozenset({"privateKey", "privateKeyPem", "sshPrivateKey", "password", "bmcPassword"})
_SSH_ONLY_SECRET_KEYS = frozenset({"key"})

#: The annotated sample inventory; documents every field.
SAMPLE = "stacks/inventory/onprem-site-a.yaml"

_SITE_KEYS = ("apiVersion", "kind", "metadata", "cluster", "networks", "storage", "remediation", "upgrades", "racks", "mirrors")
_HOSTLIST_KEYS = ("apiVersion", "kind", "metadata", "hosts")
_PASS_FILES = "pass the inventory file(s) or the directory holding them"

_HOSTS = TypeAdapter(list[Host])
_NETWORKS = TypeAdapter(tuple[Network, ...])


# --------------------------------------------------------------------------- YAML


def _parse(text: str) -> list[Any]:
    """Every document of ``text`` (empty documents dropped).

    Raises:
        yaml.YAMLError, ValueError (an impossible date), RecursionError, OverflowError.
    """
    return load_unique_yaml_all(text)


# --------------------------------------------------------------------------- pydantic errors -> issues


#: Friendlier fixes for pattern mismatches, by the field's (last) key.
_PATTERN_FIXES = {
    "hostname": "lower-case letters, digits and '-' (dots between labels), starting and ending with a letter or digit, e.g. `gpu-h100-01`",
    "name": "a DNS-1123 label: lower-case letters, digits and '-', at most 63 characters, e.g. `site-a`",
    "site": "the Site's `metadata.name` (a DNS-1123 label), e.g. `site-a`",
    "kubernetesVersion": 'MAJOR.MINOR.PATCH in quotes, e.g. "1.35.2"',
    "nvidiaContainerToolkitVersion": 'a Debian package version in quotes, e.g. "1.18.2-1" (`apt-cache madison nvidia-container-toolkit` lists them)',
    "user": "a POSIX user name: lower-case letters, digits, '_' and '-', e.g. `ubuntu`",
    "pciIds": "domain:bus:device.function in hex, as nvidia-smi prints it, e.g. `00000000:18:00.0`",
    "env": "an environment variable name, e.g. `SITE_A_SSH_KEY`",
    "pulumiConfig": "a Pulumi config key, e.g. `onprem:sshKey`",
    "labels": "keys `[prefix/]name` and values of letters, digits, '-', '_' and '.' (<= 63 characters)",
    "key": "`[prefix/]name`, e.g. `nvidia.com/gpu`",
    "value": "letters, digits, '-', '_' and '.' (<= 63 characters)",
}


def _inline_secret(loc: Sequence[Any]) -> bool:
    if not loc:
        return False
    last = loc[-1]
    parent = loc[-2] if len(loc) > 1 else None
    return last in INLINE_SECRET_KEYS or (last in _SSH_ONLY_SECRET_KEYS and parent in ("ssh", "keySecret"))


@dataclass
class _Report:
    """Issues found so far: renamed/removed fields apart (they are reported first)."""

    renamed: list[Issue] = field(default_factory=list)
    other: list[Issue] = field(default_factory=list)

    def add(self, issue: Issue) -> None:
        (self.renamed if issue.code == "renamed-field" else self.other).append(issue)

    def all(self) -> list[Issue]:
        return self.renamed + self.other


#: Fixes for entries of :data:`RENAMED_FIELDS` that need more than "rename old to new".
_RENAMED_FIXES = {
    "sshKey": "delete `sshKey` and set `ssh.keySecret` to where the key is kept: {env: VAR}, {file: path} or {pulumiConfig: key} "
    "(never inline a key; rotate it if this file was ever committed)",
    "migProfile": "replace it with `gpu.migLayouts: [{gpus: all, layout: {<profile>: <count>}}]` (one entry per group of GPUs)",
}


def _file_issue(file: str, message: str, fix: str, code: str = "file") -> Issue:
    """An issue of a whole file (no host, no field)."""
    return Issue.on_host(file, None, None, message, fix, code)


def _renamed_issue(file: str, host: str | None, field_path: str, old: str) -> Issue:
    new, note = RENAMED_FIELDS[old]
    fix = _RENAMED_FIXES.get(old) or f"rename `{old}` to `{new}`"
    if new is None:
        message = f"`{old}` was {note} (the value is not shown)"
    else:
        message = f"`{old}` was {note}; it is now `{new}`"
    return Issue.on_host(file, host, field_path, message, fix, "renamed-field")


def _secret_issue(file: str, host: str | None, field_path: str) -> Issue:
    return Issue.on_host(
        file,
        host,
        field_path,
        "never inline a key; use keySecret (the value is not shown)",
        "delete this field and set `ssh.keySecret` to where the key is kept: {env: VAR}, {file: path} or {pulumiConfig: key}; "
        "rotate the key if this file was ever committed",
        "inline-secret",
    )


def _validation_issues(
    errors: Sequence[Mapping[str, Any]], file: str, host: str | None, prefix: str, root: type[BaseModel] | None, report: _Report
) -> None:
    """Turn pydantic errors (``ValidationError.errors()`` entries) into issues.

    Args:
        errors: the errors, their ``loc`` relative to the value validated against ``root``.
        file, host: where (host None for site sections).
        prefix: key path of the validated value in its document (``cluster``), "" for a host.
        root: the model validated (to list allowed keys for unknown ones), if any.
        report: collects the issues.
    """
    renamed_targets: set[tuple[tuple[Any, ...], str]] = set()
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden" and loc and loc[-1] in RENAMED_FIELDS:
            new = RENAMED_FIELDS[loc[-1]][0]
            if new is not None:
                renamed_targets.add((loc[:-1], new.split(".")[-1]))
    rest = []
    for error in errors:
        loc = tuple(error["loc"])
        kind = error["type"]
        where = join_key(prefix, key_path(loc))
        if kind == "extra_forbidden" and loc and _inline_secret(loc):
            report.add(_secret_issue(file, host, where))
        elif kind == "extra_forbidden" and loc and loc[-1] in RENAMED_FIELDS:
            report.add(_renamed_issue(file, host, where, str(loc[-1])))
        elif not (kind == "missing" and loc and (loc[:-1], loc[-1]) in renamed_targets):  # else: the old spelling is reported
            rest.append({**error, "loc": loc})
    for issue in issues_from_validation(
        rest,
        file=file,
        root=root,
        reference=f"the sample {SAMPLE}",
        key_of=lambda loc: join_key(prefix, key_path(loc)),
        entry=host,
        entry_kind="host",
        pattern_fixes=_PATTERN_FIXES,
        hide_input=_hide_input,
    ):
        report.add(issue)


def _hide_input(loc: tuple[Any, ...], value: Any) -> bool:
    """True when a value at ``loc`` must not be echoed in a message (SSH settings, key material)."""
    return "ssh" in loc or "keySecret" in loc or "credentials" in loc or looks_like_key_material(value)


def _validate(model: Any, value: Any, file: str, prefix: str, report: _Report) -> Any:
    """A site section validated by ``model`` (a model class, or :data:`_NETWORKS`); None (and issues) if invalid."""
    try:
        if model is _NETWORKS:
            return _NETWORKS.validate_python(value)
        return model.model_validate(value)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    if model is not _NETWORKS:
        _validation_issues(errors, file, None, prefix, model, report)
        return None
    # (index, key...) locations: the Network model owns what follows the index.
    by_index: dict[Any, list[dict[str, Any]]] = {}
    for error in errors:
        loc = tuple(error["loc"])
        head = loc[0] if loc and isinstance(loc[0], int) else None
        by_index.setdefault(head, []).append({**error, "loc": loc[1:] if head is not None else loc})
    for index, group in by_index.items():
        where = prefix if index is None else join_key(prefix, f"[{index}]")
        _validation_issues(group, file, None, where, None if index is None else Network, report)
    return None


# --------------------------------------------------------------------------- documents


@dataclass
class _SiteParts:
    file: str
    metadata: SiteMetadata | None = None
    cluster: Cluster | None = None
    networks: tuple[Network, ...] | None = None
    cluster_complete: bool = True  # False: `cluster` holds only the CIDRs that validated
    storage: SiteStorage | None = None  # the optional `storage` section (None: absent or invalid)
    remediation: RemediationPolicy | None = None  # the optional `remediation` section (None: absent or invalid)
    upgrades: UpgradePolicy | None = None  # the optional `upgrades` section (None: absent or invalid)
    racks: dict[str, RackSpec] | None = None  # the optional `racks` section (None: absent or invalid)
    mirrors: Mirrors | None = None  # the optional `mirrors` section (None: absent or invalid)


_NETWORK = TypeAdapter(IpNetwork)

#: Cluster attribute -> the keys it may be spelled with (renamed keys included) for the
#: partial cluster of :func:`_partial_cluster`.
_CIDR_KEYS = {
    "pod_subnet": ("podSubnet", "pod_subnet", "podCidr"),
    "service_subnet": ("serviceSubnet", "service_subnet", "serviceCidr"),
    "linked_cloud_vpc_cidr": ("linkedCloudVpcCidr", "linked_cloud_vpc_cidr"),
}


def _partial_cluster(value: Any) -> Cluster | None:
    """The CIDRs of an invalid ``cluster`` section that are valid on their own (None if none).

    So that the CIDR overlap rule still runs (and its issues come in the same report) when
    another cluster field is wrong; a renamed key's value (``podCidr``) is used too. Only
    :func:`~hybridgpu.inventory.checks.check_cidr_overlaps` looks at such a cluster.
    """
    if not isinstance(value, dict):
        return None
    found: dict[str, Any] = {}
    for attr, keys in _CIDR_KEYS.items():
        key = next((k for k in keys if k in value), None)
        if key is None:
            continue
        try:
            found[attr] = _NETWORK.validate_python(value[key])
        except ValidationError:
            continue
    if not found:
        return None
    # A partial model on purpose: model_construct does not validate, and the one reader of such a
    # cluster (check_cidr_overlaps) takes a missing CIDR as None.
    return Cluster.model_construct(
        kubernetes_version="",
        control_plane_endpoint=None,
        pod_subnet=found.get("pod_subnet"),  # type: ignore[arg-type]
        service_subnet=found.get("service_subnet"),  # type: ignore[arg-type]
        cni="cilium",
        container_runtime="containerd",
        linked_cloud_vpc_cidr=found.get("linked_cloud_vpc_cidr"),
    )


@dataclass
class _State:
    report: _Report = field(default_factory=_Report)
    sites: list[_SiteParts] = field(default_factory=list)
    host_lists: list[tuple[str, str, HostListMetadata | None]] = field(default_factory=list)
    records: list[HostRecord] = field(default_factory=list)
    hosts_complete: bool = True
    unreadable: bool = False  # some file could not be read or parsed (its documents are unknown)


def _host_label(raw: Any, index: int) -> str:
    name = raw.get("hostname") if isinstance(raw, dict) else None
    if isinstance(name, str) and name.strip() and len(name) <= 253 and name.isprintable():
        return name
    return f"hosts[{index}]"


def _top_level_keys(doc: dict[Any, Any], allowed: Sequence[str], file: str, prefix: str, state: _State) -> None:
    for key in doc:
        if key in allowed:
            continue
        where = join_key(prefix, key_path([key]))
        if key in RENAMED_FIELDS:
            state.report.add(_renamed_issue(file, None, where, key))
        elif key in INLINE_SECRET_KEYS:
            state.report.add(_secret_issue(file, None, where))
        else:
            close = difflib.get_close_matches(str(key), list(allowed), n=1)
            message = f"unknown key; did you mean `{close[0]}`?" if close else "unknown key"
            state.report.add(Issue.on_host(file, None, where, message, unknown_key_fix(key, list(allowed)), "schema"))


def _site_document(doc: dict[Any, Any], file: str, prefix: str, state: _State) -> None:
    report = state.report
    _top_level_keys(doc, _SITE_KEYS, file, prefix, state)
    parts = _SiteParts(file)
    for key, model in (("metadata", SiteMetadata), ("cluster", Cluster), ("networks", _NETWORKS)):
        where = join_key(prefix, key)
        if key not in doc:
            report.add(Issue.on_host(file, None, where, "missing", f"add `{key}` (the sample {SAMPLE} documents every field)", "schema"))
            continue
        value = doc[key]
        if key == "networks" and (not isinstance(value, list) or not value):
            report.add(
                Issue.on_host(
                    file,
                    None,
                    where,
                    f"must be a non-empty list of networks (got {shown(value)})",
                    "list the site's networks: `- {name, cidr, purpose}`",
                    "schema",
                )
            )
            continue
        setattr(parts, key, _validate(model, value, file, where, report))
        if key == "cluster" and parts.cluster is None:
            parts.cluster, parts.cluster_complete = _partial_cluster(value), False
    if "storage" in doc:  # optional: the dataset storage (hybridgpu.inventory.storage)
        parts.storage = _validate(SiteStorage, doc["storage"], file, join_key(prefix, "storage"), report)
    if "remediation" in doc:  # optional: the GPU failure policy (hybridgpu.inventory.remediation)
        parts.remediation = _validate(RemediationPolicy, doc["remediation"], file, join_key(prefix, "remediation"), report)
    if "upgrades" in doc:  # optional: upgrades (hybridgpu.inventory.upgrade)
        parts.upgrades = _validate(UpgradePolicy, doc["upgrades"], file, join_key(prefix, "upgrades"), report)
    if "mirrors" in doc:  # optional: package, image and chart mirrors (hybridgpu.inventory.mirrors)
        parts.mirrors = _validate(Mirrors, doc["mirrors"], file, join_key(prefix, "mirrors"), report)
    if "racks" in doc:  # optional: rack power budgets (hybridgpu.inventory.power)
        parts.racks = _racks(doc["racks"], file, join_key(prefix, "racks"), report)
    state.sites.append(parts)


def _racks(value: Any, file: str, where: str, report: _Report) -> dict[str, RackSpec] | None:
    """The ``racks`` section: rack name -> :class:`RackSpec`; None (and issues) if any rack is invalid."""
    if not isinstance(value, dict) or not value:
        report.add(Issue.on_host(
            file, None, where, f"must be a non-empty mapping of rack name to its power (got {shown(value)})",
            "write `racks: {r12: {powerKw: 40, cooling: air}}`, keyed by the hosts' `rack` names", "schema",
        ))
        return None
    racks: dict[str, RackSpec] = {}
    valid = True
    for name, spec in value.items():
        if not isinstance(name, str) or not 1 <= len(name) <= 63:
            report.add(Issue.on_host(
                file, None, join_key(where, str(name)), f"a rack name is a string of 1 to 63 characters, as hosts write `rack` (got {shown(name)})",
                f"quote the name (`\"{name}\":`), spelled as the hosts' `rack`", "schema",
            ))
            valid = False
            continue
        rack = _validate(RackSpec, spec, file, join_key(where, name), report)
        if rack is None:
            valid = False
        else:
            racks[name] = rack
    return racks if valid else None


def _host_list_document(doc: dict[Any, Any], file: str, prefix: str, state: _State) -> None:
    report = state.report
    _top_level_keys(doc, _HOSTLIST_KEYS, file, prefix, state)
    metadata = None
    if "metadata" not in doc:
        fix = "add `metadata: {site: <the Site's metadata.name>}`"
        report.add(Issue.on_host(file, None, join_key(prefix, "metadata"), "missing", fix, "schema"))
    else:
        metadata = _validate(HostListMetadata, doc["metadata"], file, join_key(prefix, "metadata"), report)
    state.host_lists.append((file, prefix, metadata))
    raw_hosts = doc.get("hosts")
    if not isinstance(raw_hosts, list):
        state.hosts_complete = False
        report.add(
            Issue.on_host(
                file,
                None,
                join_key(prefix, "hosts"),
                "missing" if "hosts" not in doc else f"must be a list of hosts (got {shown(raw_hosts)})",
                "list the hosts under `hosts:` (`- hostname: ...`); an empty list is `hosts: []`",
                "schema",
            )
        )
        return
    try:
        hosts = _HOSTS.validate_python(raw_hosts)
        good: Sequence[int] = range(len(raw_hosts))
    except ValidationError as exc:
        state.hosts_complete = False
        by_index: dict[int, list[dict[str, Any]]] = {}
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            by_index.setdefault(int(loc[0]), []).append({**error, "loc": loc[1:]})  # list[Host]: loc starts with the index
        for index, errors in by_index.items():
            _validation_issues(errors, file, _host_label(raw_hosts[index], index), "", Host, report)
        good = [i for i in range(len(raw_hosts)) if i not in by_index]
        hosts = _HOSTS.validate_python([raw_hosts[i] for i in good])
    state.records.extend(HostRecord(host, file, index) for host, index in zip(hosts, good, strict=True))


def _document(doc: Any, file: str, position: int, many: bool, state: _State) -> None:
    report = state.report
    prefix = f"documents[{position}]" if many else ""
    if not isinstance(doc, dict):
        report.add(
            Issue.on_host(
                file,
                None,
                prefix or None,
                f"a document must be a mapping with apiVersion and kind, got a {type(doc).__name__} ({shown(doc, 40)})",
                f"start the document with `apiVersion: {API_VERSION}` and `kind: Site` or `kind: HostList`",
                "document",
            )
        )
        return
    api = doc.get("apiVersion")
    if api != API_VERSION:
        got = "missing" if "apiVersion" not in doc else f"unsupported apiVersion {shown(api)}"
        report.add(Issue.on_host(file, None, join_key(prefix, "apiVersion"), got, f"set `apiVersion: {API_VERSION}`", "document"))
    kind = doc.get("kind")
    if kind not in KINDS:
        close = difflib.get_close_matches(str(kind), list(KINDS), n=1) if isinstance(kind, str) else []
        hint = f"did you mean `{close[0]}`? " if close else ""
        got = "missing" if "kind" not in doc else f"unknown kind {shown(kind)}"
        report.add(Issue.on_host(file, None, join_key(prefix, "kind"), got, f"{hint}set `kind: Site` or `kind: HostList`", "document"))
        return
    if kind == "Site":
        _site_document(doc, file, "", state)  # one Site per inventory: its keys need no document index
    else:
        _host_list_document(doc, file, prefix, state)


def _assemble(state: _State, files: Sequence[str], catalog: Catalog | None) -> Inventory:
    report = state.report
    site_file = state.sites[0].file if state.sites else (files[0] if files else "<inventory>")
    if not state.sites:
        if files and not state.unreadable:
            report.add(
                Issue.on_host(
                    site_file,
                    None,
                    "kind",
                    f"no Site document among {', '.join(files)}",
                    "add a document with `kind: Site` (cluster and networks), or also pass the file that holds it",
                    "no-site",
                )
            )
    for extra in state.sites[1:]:
        report.add(
            Issue.on_host(
                extra.file,
                None,
                "kind",
                f"a second Site document (the first is in {state.sites[0].file}); one inventory is one site",
                "load each site's files separately (one Site per load_inventory call)",
                "multiple-sites",
            )
        )
    site = state.sites[0] if state.sites else None
    site_name = site.metadata.name if site is not None and site.metadata is not None else None
    if site is not None and site_name is not None:
        for file, prefix, metadata in state.host_lists:
            if metadata is not None and metadata.site != site_name:
                report.add(
                    Issue.on_host(
                        file,
                        None,
                        join_key(prefix, "metadata.site"),
                        f"this HostList belongs to site {metadata.site!r}, but the Site is {site_name!r} ({site.file})",
                        f"set `metadata.site: {site_name}`, or load this file with its own site",
                        "site-mismatch",
                    )
                )
    if site is not None:
        data = CheckInput(
            site_file=site.file,
            cluster=site.cluster,
            networks=site.networks,
            records=tuple(state.records),
            hosts_complete=state.hosts_complete,
            cluster_complete=site.cluster_complete,
            storage=site.storage,
            racks=site.racks,
        )
        for issue in run_checks(data, catalog):
            report.add(issue)
    issues = report.all()
    if issues:
        raise InventoryError(issues)
    # No issue means every part validated.
    assert site is not None and site.metadata is not None and site.cluster is not None and site.networks is not None
    assert site.cluster_complete
    built = Site(
        name=site.metadata.name,
        description=site.metadata.description,
        owner=site.metadata.owner,
        cluster=site.cluster,
        networks=site.networks,
        storage=site.storage,
        remediation=site.remediation,
        upgrades=site.upgrades,
        racks=site.racks,
        mirrors=site.mirrors,
    )
    return Inventory(site=built, records=tuple(state.records), site_file=site.file, files=tuple(files))


def inventory_from_documents(documents: Sequence[tuple[str, Sequence[Any]]], *, catalog: Catalog | None = None) -> Inventory:
    """Validate already-parsed inventory documents into an :class:`Inventory`.

    Args:
        documents: ``(file name, documents of that file)`` pairs, in reading order; each
            document as ``yaml.safe_load`` gives it (``None`` documents are skipped).
        catalog: GPU catalog (default: the packaged one).

    Returns:
        The validated inventory.

    Raises:
        InventoryError: every problem found (see :func:`load_inventory`).
    """
    with gc_paused():
        inventory = _build(documents, catalog, _Report(), unreadable=False)
        promote_to_oldest()  # the inventory lives on: no young-generation passes over its ~30 objects per host
        return inventory


def _build(documents: Sequence[tuple[str, Sequence[Any]]], catalog: Catalog | None, report: _Report, *, unreadable: bool) -> Inventory:
    state = _State(report=report, hosts_complete=not unreadable, unreadable=unreadable)
    for file, docs in documents:
        present = [d for d in docs if d is not None]
        for position, doc in enumerate(present):
            _document(doc, file, position, len(present) > 1, state)
    return _assemble(state, [file for file, _ in documents], catalog)


def _expand(paths: Path | str | os.PathLike[str] | Sequence[Path | str | os.PathLike[str]], report: _Report) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: list[Path] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        try:
            if path.is_dir():
                found = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
                if not found:
                    report.add(_file_issue(str(path), "directory holds no *.yaml or *.yml file", _PASS_FILES))
            elif path.exists():
                found = [path]
            else:
                report.add(_file_issue(str(path), "no such file or directory", f"check the path; {_PASS_FILES}"))
                continue
        except (OSError, ValueError) as exc:
            report.add(_file_issue(str(path), f"cannot read: {exc}", "check the path and its permissions"))
            continue
        for p in found:
            key = p.resolve()
            if key not in seen:
                seen.add(key)
                out.append(p)
    return out


def _read(path: Path, report: _Report) -> list[Any] | None:
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        report.add(_file_issue(file, f"cannot read the file: {exc.strerror or exc}", "check the path and its permissions"))
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        report.add(
            _file_issue(
                file,
                f"not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); is it a binary file?",
                "save the inventory as UTF-8 YAML",
                "yaml",
            )
        )
        return None
    try:
        docs = _parse(text)
    except yaml.YAMLError as exc:
        detail = describe_yaml_error(exc, text)
        report.add(_file_issue(file, f"not valid YAML: {detail[:300]}", "correct the YAML syntax at the position shown", "yaml"))
        return None
    except (ValueError, OverflowError) as exc:
        report.add(_file_issue(file, f"not valid YAML: {str(exc)[:200]}", "quote values that YAML reads as dates or numbers", "yaml"))
        return None
    except RecursionError:
        fix = "flatten the structure; an inventory is a few levels deep"
        report.add(_file_issue(file, "not valid YAML: nested too deeply", fix, "yaml"))
        return None
    if not docs:
        report.add(_file_issue(file, "the file holds no YAML document", f"write a Site or HostList document (see {SAMPLE})", "document"))
    return docs


def load_inventory(
    paths: Path | str | os.PathLike[str] | Sequence[Path | str | os.PathLike[str]], *, catalog: Catalog | None = None
) -> Inventory:
    """Read and validate one site's inventory, offline, before anything else happens.

    Args:
        paths: an inventory file, a directory (its ``*.yaml``/``*.yml`` files, sorted, not
            recursive) or a sequence of files and directories. Together they must hold exactly
            one ``Site`` document and any number of ``HostList`` documents for that site; the
            hosts are merged in reading order. Files are named in issues as given here.
        catalog: GPU catalog for the model check (default: the packaged one).

    Returns:
        The validated :class:`~hybridgpu.inventory.models.Inventory`.

    Raises:
        InventoryError: every problem found at once, each naming file, host (or site section)
            and field with a fix: missing/unreadable/empty files or directories, non-UTF-8
            (binary) content, YAML syntax errors and duplicate keys, documents that are not
            mappings or lack apiVersion/kind, renamed or removed fields (reported first),
            inline SSH keys, unknown keys, wrong types and values, and every rule of
            :mod:`hybridgpu.inventory.checks`. No other exception escapes for bad input.
    """
    report = _Report()
    files = _expand(paths, report)
    if not files and not report.all():
        report.add(_file_issue("<inventory>", "no inventory file given", _PASS_FILES))
    parsed: list[tuple[str, list[Any]]] = []
    with gc_paused():
        for path in files:
            docs = _read(path, report)
            if docs is not None:
                parsed.append((str(path), docs))
        inventory = _build(parsed, catalog, report, unreadable=bool(report.all()))
        promote_to_oldest()  # as in inventory_from_documents
        return inventory
