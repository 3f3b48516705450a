"""Check job manifests against a stack before they are submitted (``hybridgpu job check``; pure, no Pulumi).

A job file (one or more YAML documents: the Job, its Service, NetworkPolicy ...) is checked with

* the policy pack's resource policies for Kubernetes objects, at their default settings (cost labels,
  GPU requests, ``efa-workload-requests``, MIG profiles ...), as ``pulumi preview`` would if the job were
  part of a stack (:data:`hybridgpu.policy.registry.POLICIES`);
* on a stack whose EKS cluster is the burst plan's cloud worker: the EFA queue and Topology rules
  (:func:`hybridgpu.stack.eks_topology.eks_job_issues`);
* on a stack with an on-prem inventory: the on-prem Topology rules
  (:func:`hybridgpu.stack.topology.job_topology_issues`).

Each problem is an :class:`~hybridgpu.errors.Issue` naming the job file, the object and key, and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.catalog import load_catalog
from hybridgpu.datafile import describe_yaml_error, load_unique_yaml_all, unreadable_issue
from hybridgpu.errors import Issue
from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.registry import POLICIES
from hybridgpu.policy.workloads import pod_templates
from hybridgpu.schemas import CORE_GROUPS, validate_core
from hybridgpu.stack.eks_topology import eks_job_issues
from hybridgpu.stack.load import Stack
from hybridgpu.stack.topology import job_topology_issues

__all__ = ["job_file_issues", "object_issues"]


def _type_token(doc: Mapping[str, Any]) -> str:
    api = str(doc.get("apiVersion") or "")
    return f"kubernetes:{api if '/' in api else 'core/' + api}:{doc.get('kind')}"


def _split_fix(message: str) -> tuple[str, str]:
    head, sep, fix = message.partition(" Fix: ")
    return (head, fix) if sep else (message, "see docs/policies.md for the policy")


def object_issues(doc: Mapping[str, Any], stack: Stack, file: str) -> list[Issue]:
    """The problems of one Kubernetes object of a job file on ``stack`` (see the module docstring).

    A built-in kind (``batch/v1`` Job, ``v1`` Service ...) is first validated against the Kubernetes
    schema (strict, :func:`hybridgpu.schemas.validate_core`): a malformed object gets that error only.
    A custom kind (JobSet, PyTorchJob) has no offline schema: a value of the wrong type where the
    rules read it (a list for ``metadata``, a string for ``containers``) is reported as a schema issue.
    """
    raw_meta = doc.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    label = f"{doc.get('kind')}/{meta.get('name')}"
    api = doc.get("apiVersion")
    group = api.split("/")[0] if isinstance(api, str) and "/" in api else ""
    if group in CORE_GROUPS:
        finding = validate_core([dict(doc)])[0]
        if not finding.ok:
            return [Issue(file, label, f"not a valid {doc.get('kind')}: {'; '.join(finding.errors)}", "fix the field named (Kubernetes 1.35 schema)", code="schema")]
    try:
        return _checked(doc, meta, label, stack, file)
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
        return [Issue(file, label, f"a field has the wrong type for a {doc.get('kind')} ({type(exc).__name__}: {exc})", "compare the object with its kind's API reference", code="schema")]


def _checked(doc: Mapping[str, Any], meta: Mapping[str, Any], label: str, stack: Stack, file: str) -> list[Issue]:
    res = PolicyResource(_type_token(doc), str(meta.get("name")), f"urn:pulumi:{stack.config.stack}::job::{_type_token(doc)}::{meta.get('name')}", dict(doc))
    issues: list[Issue] = []
    for spec in POLICIES:
        if spec.kind != "resource" or not spec.applies(res.type):
            continue
        for message in spec.run_resource(res, spec.parse_settings(None)):
            text, fix = _split_fix(message)
            issues.append(Issue(file, label, f"policy {spec.name}: {text}", fix, code=spec.name))
    if not pod_templates(doc):
        return issues
    config, plan = stack.config, stack.burst_plan
    if config.cloud is not None and plan is not None and config.stack in plan.clusters and plan.clusters[config.stack].role == "cloud-worker":
        worker = plan.clusters[config.stack]
        found = eks_job_issues(doc, config.cloud, load_catalog(), namespaces=worker.namespaces, prefix=plan.source.kueue.prefix, file=file)
        issues += [Issue(file, f"{label} {i.key}", i.message, i.fix, code=i.code) for i in found]
    if stack.inventory is not None:
        found = job_topology_issues(doc, stack.inventory, file)
        issues += [Issue(file, f"{label} {i.key}", i.message, i.fix, code=i.code) for i in found]
    return issues


def job_file_issues(path: Path, stack: Stack, shown: str | None = None) -> list[Issue]:
    """Every problem of the objects in the job file ``path`` on ``stack``; empty when it may be submitted.

    Args:
        path: the YAML file (one or more documents).
        stack: the validated stack (:func:`hybridgpu.stack.load.load_stack`).
        shown: the file as named in issues (default: ``path`` as given).
    """
    file = shown or str(path)
    text: str | None = None
    try:
        text = path.read_text(encoding="utf-8")
        docs = load_unique_yaml_all(text)
    except (OSError, UnicodeDecodeError) as exc:
        return [unreadable_issue(file, exc, "the job file")]
    except yaml.YAMLError as exc:
        return [Issue(file, None, f"not valid YAML: {describe_yaml_error(exc, text)}", "fix the YAML syntax (duplicate keys are refused too)", code="yaml")]
    issues: list[Issue] = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, Mapping) or not doc.get("kind") or not doc.get("apiVersion"):
            issues.append(Issue(file, f"document {i + 1}", "not a Kubernetes object (needs apiVersion and kind)", "give each YAML document apiVersion, kind and metadata", code="schema"))
            continue
        issues += object_issues(doc, stack, file)
    return issues
