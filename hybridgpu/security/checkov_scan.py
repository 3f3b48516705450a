"""Run checkov's Kubernetes checks over manifests, with documented skips (pure, no Pulumi).

checkov (Bridgecrew/Prisma Cloud, PyPI ``checkov``) is installed by ``make setup`` in its own
venv, ``.venv-tools/`` (it pins many dependencies of its own); :func:`checkov_binary` finds it.
It runs offline with ``--skip-download`` (no guideline download, no platform).

Skips live in ``tools/security/checkov-skips.yaml`` of the source checkout (repository
tooling, not package data: :func:`checkout_root` finds it from the working directory): each names a check id, the objects it
applies to (shell-style patterns over ``<file relative to the scanned directory>::<checkov
resource id>``, e.g. ``examples/docs-runbook.md-1.yaml::Pod.default.gpu-smoke``) and why.
:func:`apply_skips` reports failures no skip covers and skips no failure uses (stale).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.checkout import CheckoutFileMissing, find_checkout
from hybridgpu.datafile import ORDERED, dump_yaml_all, load_unique_yaml
from hybridgpu.workloads import PodSetError, pod_sets, runtimes_of

#: The skips file (check id, objects, justification), relative to the checkout root.
SKIPS_FILE = Path("tools") / "security" / "checkov-skips.yaml"
#: checkov as ``make setup`` installs it, relative to the checkout root.
_TOOLS_CHECKOV = Path(".venv-tools") / "bin" / "checkov"


def checkout_root(root: Path | None = None) -> Path:
    """The source checkout whose ``tools/security`` and docs are scanned: ``root``, else found from the working directory.

    Raises:
        hybridgpu.checkout.CheckoutFileMissing: no checkout holding ``tools/security/checkov-skips.yaml``.
    """
    return find_checkout(SKIPS_FILE, root=root, needed_by="the checkov scan (hybridgpu.security)")


class CheckovMissing(RuntimeError):
    """checkov is not installed where the tests look for it (run ``make setup``)."""


@dataclass(frozen=True)
class CheckResult:
    """One checkov check on one object.

    Attributes:
        check_id: e.g. ``CKV_K8S_23``.
        name: the check's title.
        file: file relative to the scanned directory (no leading slash).
        resource: checkov's resource id, ``<Kind>.<namespace>.<name>``.
    """

    check_id: str
    name: str
    file: str
    resource: str

    @property
    def target(self) -> str:
        """``<file>::<resource>``, what skip patterns match."""
        return f"{self.file}::{self.resource}"

    def __str__(self) -> str:
        return f"{self.check_id} {self.target}: {self.name}"


@dataclass
class CheckovReport:
    """The outcome of one checkov run.

    Attributes:
        resources: objects checkov parsed.
        parsing_errors: files it could not parse.
        passed, failed: the check results.
    """

    resources: int = 0
    parsing_errors: int = 0
    passed: list[CheckResult] = field(default_factory=list)
    failed: list[CheckResult] = field(default_factory=list)


@dataclass(frozen=True)
class Skip:
    """One documented skip.

    Attributes:
        check: checkov check id.
        objects: patterns over :attr:`CheckResult.target`.
        justification: why the check does not apply or is accepted (required, non-empty).
    """

    check: str
    objects: tuple[str, ...]
    justification: str

    def covers(self, result: CheckResult) -> bool:
        """True when this skip applies to the failed ``result``."""
        return result.check_id == self.check and any(fnmatch.fnmatchcase(result.target, p) for p in self.objects)


def checkov_binary() -> Path:
    """The checkov executable: ``$HYBRIDGPU_CHECKOV``, else ``.venv-tools/bin/checkov`` at or above the working directory, else ``checkov`` on PATH.

    Raises:
        CheckovMissing: none found.
    """
    try:
        tools_venv = str(find_checkout(_TOOLS_CHECKOV) / _TOOLS_CHECKOV)
    except CheckoutFileMissing:
        tools_venv = None
    candidates = [os.environ.get("HYBRIDGPU_CHECKOV"), tools_venv, shutil.which("checkov")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise CheckovMissing("checkov not found: run `make setup` (installs it in .venv-tools/ from tools/security/requirements.txt)")


def _result(item: dict[str, Any]) -> CheckResult:
    return CheckResult(item["check_id"], item.get("check_name", ""), str(item["file_path"]).lstrip("/"), item["resource"])


def run_checkov(directory: Path, *, timeout: float = 600) -> CheckovReport:
    """Run every checkov Kubernetes check over the YAML files under ``directory``.

    Returns:
        The parsed report (an empty directory gives an empty report).

    Raises:
        CheckovMissing: checkov not installed.
        RuntimeError: checkov failed or printed something that is not its JSON report.
    """
    binary = checkov_binary()
    proc = subprocess.run(
        [str(binary), "-d", str(directory), "--framework", "kubernetes", "--output", "json", "--skip-download", "--soft-fail"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_NO_VERSION_CHECK": "1"},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"checkov exited {proc.returncode}: {proc.stderr[-2000:]}")
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"checkov printed no JSON report: {proc.stdout[:500]} {proc.stderr[-2000:]}") from exc
    report = CheckovReport()
    for run in data if isinstance(data, list) else [data]:
        if run.get("check_type") != "kubernetes":
            continue  # checkov prints {"passed": 0, ...} alone when nothing was found
        summary = run["summary"]
        report.resources += summary["resource_count"]
        report.parsing_errors += summary["parsing_errors"]
        report.passed += [_result(i) for i in run["results"]["passed_checks"]]
        report.failed += [_result(i) for i in run["results"]["failed_checks"]]
    return report


def load_skips(path: Path | None = None) -> list[Skip]:
    """The skips of ``path`` (a YAML mapping ``skips:`` -> list of ``{check, objects, justification}``).

    Args:
        path: the skips file; default: :data:`SKIPS_FILE` of the checkout (:func:`checkout_root`).

    Raises:
        ValueError: the file is malformed (not YAML, a duplicate key), an entry lacks a
            justification or objects.
        hybridgpu.checkout.CheckoutFileMissing: no path given and no checkout found.
    """
    if path is None:
        path = checkout_root() / SKIPS_FILE
    try:
        data = load_unique_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("skips"), list):
        raise ValueError(f"{path}: expected a mapping with a `skips:` list")
    skips = []
    for index, entry in enumerate(data["skips"]):
        if not isinstance(entry, dict) or set(entry) != {"check", "objects", "justification"}:
            raise ValueError(f"{path}: skips[{index}] must have exactly check, objects, justification")
        if not re.fullmatch(r"CKV2?_K8S_[0-9]+", str(entry["check"])):
            raise ValueError(f"{path}: skips[{index}].check {entry['check']!r} is not a checkov Kubernetes check id")
        objects = entry["objects"]
        if not isinstance(objects, list) or not objects or not all(isinstance(o, str) and "::" in o for o in objects):
            raise ValueError(f"{path}: skips[{index}].objects must be a non-empty list of '<file>::<resource>' patterns")
        if not str(entry["justification"]).strip():
            raise ValueError(f"{path}: skips[{index}].justification is empty")
        skips.append(Skip(entry["check"], tuple(objects), str(entry["justification"]).strip()))
    return skips


def apply_skips(failed: Iterable[CheckResult], skips: Sequence[Skip]) -> tuple[list[CheckResult], list[CheckResult], list[str]]:
    """Split failures by the skips.

    Returns:
        ``(failures no skip covers, failures skipped, stale skip patterns)``; a pattern is
        stale when no failure matches it (``<check> <pattern>``).
    """
    failed = list(failed)
    open_failures = [f for f in failed if not any(s.covers(f) for s in skips)]
    skipped = [f for f in failed if any(s.covers(f) for s in skips)]
    stale = [
        f"{s.check} {pattern}"
        for s in skips
        for pattern in s.objects
        if not any(f.check_id == s.check and fnmatch.fnmatchcase(f.target, pattern) for f in failed)
    ]
    return open_failures, skipped, stale


_FENCE = re.compile(r"^```ya?ml[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _is_kubernetes_object(doc: Any) -> bool:
    """A mapping with ``apiVersion`` and ``kind`` that is not one of hybridgpu's own files (``hybridgpu.io/*``:
    inventories, burst plans, teams files), which the docs show in the same form but no cluster receives."""
    return isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc and not str(doc["apiVersion"]).startswith("hybridgpu.io/")


def framework_pods(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods a job of another framework (JobSet, TrainJob with its runtime, RayJob, RayCluster, ...) runs, as
    Pod objects, so checkov (which checks only the kinds it knows and extracts no pod template of a custom
    kind) checks their containers too; one Pod per Kueue pod set (:func:`hybridgpu.workloads.pod_sets`),
    named ``<job>-<pod set>``. batch Jobs and objects without pods add nothing (checkov reads Jobs itself).
    """
    runtimes = runtimes_of(objects)
    pods = []
    for obj in objects:
        if obj.get("kind") == "Job" and str(obj.get("apiVersion", "")).startswith("batch/"):
            continue
        try:
            sets = pod_sets(obj, runtimes)
        except PodSetError:
            continue
        meta = obj.get("metadata") or {}
        for pod_set in sets or ():
            template = pod_set.template or {}
            pod_meta = {"name": f"{meta.get('name', 'job')}-{pod_set.name}", "namespace": meta.get("namespace", "default")}
            labels = (template.get("metadata") or {}).get("labels")
            if labels:
                pod_meta["labels"] = dict(labels)
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": dict(template.get("spec") or {})})
    return pods


def example_manifests(root: Path | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    """Kubernetes objects shown in the docs (```yaml blocks of README.md and docs/*.md with ``apiVersion`` and ``kind``, and docs/examples/*.yaml).

    Args:
        root: the source checkout (default: :func:`checkout_root`).

    Returns:
        ``[(file name "docs-<doc>-<n>.yaml", objects)]``, one entry per block that holds objects, then
        ``("docs-examples-<file>", objects)`` per example file.
    """
    root = checkout_root(root)
    found = []
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for number, match in enumerate(_FENCE.finditer(text), start=1):
            try:
                objects = [d for d in yaml.safe_load_all(match.group(1)) if _is_kubernetes_object(d)]
            except yaml.YAMLError:
                continue
            if objects:
                found.append((f"docs-{doc.name}-{number}.yaml", objects))
    # Job examples kept as files (docs/examples/*.yaml, linked from docs/multi-node.md).
    for path in sorted((root / "docs" / "examples").glob("*.yaml")):
        objects = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict) and "apiVersion" in d and "kind" in d]
        if objects:
            found.append((f"docs-examples-{path.name}", objects + framework_pods(objects)))
    return found


def write_example_manifests(target: Path, root: Path | None = None) -> int:
    """Write :func:`example_manifests` to ``target`` (one file per block); returns the object count."""
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, objects in example_manifests(root):
        (target / name).write_text(dump_yaml_all(objects, ORDERED, explicit_start=False))
        count += len(objects)
    return count
