"""Every listing the offline preview writes is in a stable order, whatever order the resources
registered in (issue 14): registrations reach the mock monitor from executor threads."""

from __future__ import annotations

import hashlib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from hybridgpu.shell.preview import PreviewResult, ResourceRecord, write_manifests

STACK_URN = "urn:pulumi:s::hybridgpu::"


def _record(kind: str, name: str, namespace: str | None, *, release: bool = False) -> ResourceRecord:
    if release:
        typ, inputs = "kubernetes:helm.sh/v3:Release", {"name": name, "namespace": namespace or "default", "chart": name, "version": "1.0.0", "values": {"a": 1}}
    else:
        metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
        typ, inputs = f"kubernetes:core/v1:{kind}", {"apiVersion": "v1", "kind": kind, "metadata": metadata, "data": {"k": name}}
    logical = f"{namespace or 'cluster'}-{kind}-{name}"
    return ResourceRecord(urn=f"{STACK_URN}{typ}::{logical}", type=typ, name=logical, parent="", custom=True, inputs=inputs)


RECORDS = [
    _record("ConfigMap", "settings", "kueue-system"),
    _record("ConfigMap", "settings", "gpu-operator"),  # same kind and name, other namespace
    _record("Namespace", "kueue-system", None),
    _record("ConfigMap", "time-slicing", "gpu-operator"),
    _record("Release", "kueue", "kueue-system", release=True),
    _record("Release", "gpu-operator", "gpu-operator", release=True),
]


def _digest(directory) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_written_files_do_not_depend_on_registration_order(tmp_path_factory, seed):
    shuffled = RECORDS[:]
    random.Random(seed).shuffle(shuffled)
    out_a, out_b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    write_manifests(PreviewResult("s", None, RECORDS, {}), out_a)  # type: ignore[arg-type]
    write_manifests(PreviewResult("s", None, shuffled, {}), out_b)  # type: ignore[arg-type]
    written = _digest(out_a / "s")
    assert written, "nothing written: equal digests would prove nothing"
    assert written == _digest(out_b / "s")


def test_same_kind_and_name_in_two_namespaces_get_two_files(tmp_path):
    target = write_manifests(PreviewResult("s", None, RECORDS, {}), tmp_path)  # type: ignore[arg-type]
    names = sorted(p.name for p in (target / "manifests").iterdir())
    assert names == [
        "configmap-gpu-operator-settings.yaml",
        "configmap-kueue-system-settings.yaml",
        "configmap-time-slicing.yaml",
        "namespace-kueue-system.yaml",
    ]
    releases = (target / "helm-releases.yaml").read_text()
    assert releases.index("name: gpu-operator") < releases.index("name: kueue")
