"""Rendered manifests of the example stacks: golden files and upstream schema validation.

Golden files live in ``tests/golden/<stack>/karpenter.yaml`` (every NodePool and EC2NodeClass
the program registers, sorted by kind and name). Regenerate them after an intended change with
``HYBRIDGPU_UPDATE_GOLDEN=1 pytest tests/shell/test_manifests.py`` and review the diff.
"""

from __future__ import annotations

import pytest

from hybridgpu.shell.preview import dump_yaml_all
from hybridgpu.schemas import validate_all
from tests import helpers

GOLDEN = helpers.GOLDEN
KARPENTER_KINDS = ("EC2NodeClass", "NodePool")


def karpenter_yaml(result) -> str:
    docs = [m for m in result.kubernetes_manifests() if m["kind"] in KARPENTER_KINDS]
    docs.sort(key=lambda m: (m["kind"], m["metadata"]["name"]))
    return dump_yaml_all(docs)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_karpenter_golden(previews, stack, assert_golden):
    assert_golden(karpenter_yaml(previews[stack]), GOLDEN / stack / "karpenter.yaml", f"Karpenter YAML of {stack}")


@pytest.mark.parametrize("stack", ["dev", "onprem", "prod"])
def test_every_rendered_manifest_validates_upstream(previews, stack):
    result = previews[stack]
    manifests = result.kubernetes_manifests()
    assert manifests
    version = f"{result.config.cloud.cluster.kubernetes_version}.0" if result.config.cloud else "1.35.2"
    findings = validate_all(manifests, kubernetes_version=version)
    assert len(findings) == len(manifests)
    problems = [f for f in findings if not f.ok or f.skipped]
    assert not problems, "\n".join(f"{f.kind}/{f.name}: {f.errors}" for f in problems)
    kinds = {f.kind for f in findings}
    assert ({"NodePool", "EC2NodeClass"} if result.config.cloud else {"Namespace", "ConfigMap"}) <= kinds


def test_schema_validation_catches_a_broken_nodepool(previews):
    """The same check fails when a rendered NodePool is corrupted (so the test above can fail)."""
    import copy

    pool = copy.deepcopy(next(m for m in previews["dev"].kubernetes_manifests() if m["kind"] == "NodePool"))
    pool["spec"]["weight"] = 101
    pool["spec"]["template"]["spec"]["nodeClassRefx"] = pool["spec"]["template"]["spec"].pop("nodeClassRef")
    finding = validate_all([pool])[0]
    assert not finding.ok
    assert any("weight" in e for e in finding.errors)


def test_no_secret_material_in_rendered_output(previews, tmp_path):
    from hybridgpu.shell.preview import write_manifests

    for result in previews.values():
        target = write_manifests(result, tmp_path)
        blob = "\n".join(p.read_text() for p in target.rglob("*") if p.is_file())
        for needle in ("certificate-authority-data", "BEGIN CERTIFICATE", "MOCK-CA", "get-token", "aws_secret_access_key"):
            assert needle not in blob
