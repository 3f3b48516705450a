"""Checks every job example of docs/examples/ must pass, whichever stack it runs on.

* :func:`assert_passes_resource_policy`: the policy pack's resource policies at their defaults
  (hybridgpu.policy.registry);
* :func:`assert_validates_against_kubernetes_schema`: every object valid, strictly, against the
  Kubernetes schema (hybridgpu.schemas);
* :func:`checkov_skipped`: checkov finds nothing the documented skips (tools/security/checkov-skips.yaml)
  do not cover.

and what the job rules tests of each example share: :func:`example_job`, :func:`job_with` (the example's
Job with one value changed), :func:`set_path` (one value of a manifest set or deleted by its key path) and
:func:`assert_refused` (the issues have the rule's code and name the words).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from hybridgpu.policy.base import PolicyResource
from hybridgpu.schemas import validate_all
from hybridgpu.security.checkov_scan import CheckovMissing, apply_skips, checkov_binary, load_skips, run_checkov


def assert_passes_resource_policy(spec: Any, docs: list[dict[str, Any]], stack: str) -> None:
    """Every object of ``docs`` the resource policy ``spec`` applies to passes it at its default settings
    (each seen as a Pulumi Kubernetes resource of stack ``stack``)."""
    for doc in docs:
        group_version = doc["apiVersion"] if "/" in doc["apiVersion"] else f"core/{doc['apiVersion']}"
        res = PolicyResource(f"kubernetes:{group_version}:{doc['kind']}", doc["metadata"]["name"], f"urn:pulumi:{stack}::hybridgpu::x::{doc['metadata']['name']}", doc)
        if spec.applies(res.type):
            assert spec.run_resource(res, spec.parse_settings(None)) == [], (spec.name, doc["kind"])


def assert_validates_against_kubernetes_schema(docs: list[dict[str, Any]], count: int) -> None:
    """``docs`` holds ``count`` objects the schema check validated, none of them invalid."""
    findings = validate_all(docs)
    assert [f for f in findings if not f.ok] == []
    assert len(findings) == count


def checkov_skipped(tmp_path: Path, example: Path, min_resources: int) -> list[Any]:
    """Run checkov on a copy of ``example`` (under ``tmp_path/examples/``, named after its path in docs/): it parses,
    scans at least ``min_resources`` resources and every failed check is covered by a documented skip.
    Returns the skipped findings. A missing checkov fails the test (``make setup`` installs it)."""
    try:
        checkov_binary()
    except CheckovMissing as exc:
        pytest.fail(str(exc))
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / f"docs-examples-{example.name}").write_text(example.read_text())
    report = run_checkov(tmp_path)
    assert report.resources >= min_resources and report.parsing_errors == 0
    open_failures, skipped, _ = apply_skips(report.failed, load_skips())
    assert open_failures == []
    return skipped


def example_job(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """A deep copy of the Job of an example's ``docs``."""
    return copy.deepcopy(next(d for d in docs if d["kind"] == "Job"))


def job_with(docs: list[dict[str, Any]], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """:func:`example_job` with ``value`` set at ``path`` (keys and list indexes; every parent must exist)."""
    job = example_job(docs)
    node: Any = job
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return job


def assert_refused(issues: list[Any], code: str, words: list[str]) -> None:
    """One of ``issues`` has rule code ``code``, and their keys, messages and fixes together contain every word."""
    assert code in {i.code for i in issues}, issues
    text = " ".join(f"{i.key} {i.message} {i.fix}" for i in issues)
    for word in words:
        assert word in text, (word, text)


#: One part of a key path: a dotted key, or ``[...]`` (a list index when digits, else one key that may hold dots).
_PART = re.compile(r"([^.\[\]]+)|\[([^\]]+)\]")
_LABELS = "metadata.labels."


def set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` of ``doc`` to ``value`` (None: delete it), creating mappings on the way.

    ``path``: dotted keys, ``[i]`` list indexes and ``[key.with/dots]`` single keys
    (``spec.replicatedJobs[0].template.metadata.labels[kueue.x-k8s.io/queue-name]``); after
    ``metadata.labels.`` the rest is one label key (``metadata.labels.kueue.x-k8s.io/queue-name``).
    """
    if path.startswith(_LABELS):
        parts: list[Any] = ["metadata", "labels", path[len(_LABELS) :]]
    else:
        parts = [(int(b) if b.isdigit() else b) if b else a for a, b in _PART.findall(path)]
    node: Any = doc
    for part in parts[:-1]:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})
    if value is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value
