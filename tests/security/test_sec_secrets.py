"""Secrets: nothing secret in out/, in what the CLI prints, or in the golden files (issue 8, item 4).

The offline preview's mocks produce known values for the on-prem bootstrap token
(RandomPassword), certificate key (RandomBytes), CA certificate hash and admin kubeconfig; the
scan looks for those values verbatim and for the shapes of every kind of secret material
(hybridgpu.security.secrets_scan.PATTERNS) in every file ``hybridgpu preview`` writes for every
stack, in everything it prints (tables and --json), and in tests/golden/**. Zero hits. Then, in
the program, every input that carries one of those values must be a Pulumi secret on the wire
(RecordingMonitor.secret_paths), and no stack output may show one in clear.
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pytest

from hybridgpu.shell.preview import HybridMocks
from hybridgpu.security.secrets_scan import PATTERNS, scan_files, scan_text
from tests.helpers import ROOT


def known_secrets(all_previews) -> dict[str, str]:
    """Label -> value of every secret the mocks produced in any stack."""
    known: dict[str, str] = {}
    for stack, result in all_previews.items():
        mocks = HybridMocks(region=result.config.region or "us-east-1")
        for record in result.records:
            label = f"{stack}/{record.name}"
            if record.type == "random:index/randomPassword:RandomPassword":
                _, state = mocks.new_resource(pulumi.runtime.MockResourceArgs(record.type, record.name, record.inputs))
                value = state["result"]
                known[label] = value
                if "bootstrap-token" in record.name:
                    known[f"{label} (token id.secret)"] = f"{value[:6]}.{value[6:]}"
            elif record.type == "random:index/randomBytes:RandomBytes":
                _, state = mocks.new_resource(pulumi.runtime.MockResourceArgs(record.type, record.name, record.inputs))
                known[f"{label} (hex)"] = state["hex"]
                known[f"{label} (base64)"] = state["b64Std"]
            elif record.type == "command:remote:Command" and record.name.endswith("-ca-cert-hash"):
                _, state = mocks.new_resource(pulumi.runtime.MockResourceArgs(record.type, record.name, record.inputs))
                known[f"{label} (stdout)"] = state["stdout"].strip()
    return known


@pytest.fixture(scope="module")
def known(all_previews) -> dict[str, str]:
    return known_secrets(all_previews)


def test_the_mocks_produce_secrets_to_look_for(known, all_stacks):
    if "onprem" in all_stacks:
        assert any("bootstrap-token (token id.secret)" in k for k in known)
        assert any("certificate-key (hex)" in k for k in known)
    # Each known value has the shape the patterns look for, so the pattern scan would see it too.
    for label, value in known.items():
        if label.endswith("(token id.secret)"):
            assert PATTERNS["kubeadm bootstrap token"].fullmatch(value)
        if label.endswith("(hex)") and len(value) == 64:
            assert PATTERNS["certificate key (64 hex)"].fullmatch(value)


def test_out_dir_and_output_are_clean(preview_out, known):
    count, hits = scan_files([preview_out.out], known, relative_to=preview_out.out)
    assert count >= 3 * len([p for p in preview_out.out.iterdir() if p.is_dir()])
    hits += scan_text(preview_out.output, "hybridgpu preview output", known)
    assert not hits, "secret material:\n" + "\n".join(map(str, hits))


def test_golden_files_are_clean(known):
    count, hits = scan_files([ROOT / "tests" / "golden"], known, relative_to=ROOT)
    assert count > 0
    assert not hits, "secret material in golden files:\n" + "\n".join(map(str, hits))


def _paths_with(value: Any, needles: list[str], prefix: str = "") -> list[str]:
    """Dotted paths (as in ResourceRecord.secret_paths) of the strings that contain a needle."""
    if isinstance(value, str):
        return [prefix] if any(n in value for n in needles) else []
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths_with(item, needles, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list):
        for item in value:
            found += _paths_with(item, needles, prefix)
    return found


def test_secret_values_are_pulumi_secrets(all_previews, known):
    needles = list(known.values())
    carried = 0
    for result in all_previews.values():
        for record in result.records:
            for path in _paths_with(record.inputs, needles):
                carried += 1
                covered = any(path == s or path.startswith(s + ".") for s in record.secret_paths)
                assert covered, f"{record.type} {record.name}: input {path} carries a secret value but is not a Pulumi secret"
        outputs = scan_text(repr(result.outputs), f"{result.stack} stack outputs", known)
        assert not outputs, outputs
    if known:
        assert carried > 0, "the secrets reach no resource input; the check would prove nothing"


def test_scanner_finds_planted_secrets(tmp_path):
    """Planted positives: one of each kind, and a known value, in files and text."""
    samples = {
        "kubeadm bootstrap token": "token: abcdef.0123456789abcdef",
        "certificate key (64 hex)": "certificateKey: " + "a1" * 32,
        "PEM private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
        "kubeconfig token": "users:\n- name: x\n  user:\n    token: k8s-aws-v1.aHR0cHM6Ly9zdHMu",
        "kubeconfig client key": "    client-key-data: LS0tLS1CRUdJTiBSU0E=",
        "kubeconfig password": "    password: hunter2hunter2",
        "JWT (service-account token)": "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJlLXNpZw",
        "AWS access key id": "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "AWS secret access key": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }
    assert set(samples) == set(PATTERNS), "one planted sample per pattern"
    for kind, text in samples.items():
        path = tmp_path / f"{kind.split()[0]}.txt"
        path.write_text(f"before\n{text}\nafter\n")
        _, hits = scan_files([path])
        assert kind in {h.kind for h in hits}, kind
        assert all(h.line >= 2 for h in hits if h.kind == kind)
        assert all(len(h.excerpt) <= 6 for h in hits), "hits must not print the secret"
    hits = scan_text("x s3cr3t-v4lue y", "t", {"planted": "s3cr3t-v4lue"})
    assert [h.kind for h in hits] == ["known value planted"]
    with pytest.raises(ValueError):
        scan_text("x", "t", {"short": "abc"})


def test_digests_are_not_keys():
    """Image digests and the CA hash format are not reported by the 64-hex pattern (no false alarm)."""
    digest = "sha256:" + "0f" * 32
    assert scan_text(f"image: nvcr.io/nvidia/gpu-operator@{digest}\nhash: {digest}\n", "t") == []


_SENSITIVE_KEY = re.compile(r"^(kubeconfig|privatekey|password|token|secretaccesskey|certificatekey)$", re.IGNORECASE)


def _string_inputs(value: Any, prefix: str = ""):
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            if isinstance(item, str):
                yield path, key, item
            yield from _string_inputs(item, path)


def test_credential_inputs_are_pulumi_secrets(all_previews):
    """By name: every string input called kubeconfig/privateKey/password/token..., and every Kubernetes
    Secret's data/stringData, is a Pulumi secret on the wire, in every stack."""
    checked = 0
    for stack, result in all_previews.items():
        for record in result.records:
            paths = [path for path, key, value in _string_inputs(record.inputs) if value and _SENSITIVE_KEY.match(key)]
            if record.type == "kubernetes:core/v1:Secret":
                paths += [key for key in ("data", "stringData") if record.inputs.get(key)]
            for path in paths:
                checked += 1
                covered = any(path == s or path.startswith(s + ".") for s in record.secret_paths)
                assert covered, f"{stack}: {record.type} {record.name}: input {path} is not a Pulumi secret"
    assert checked > 0


def test_secret_manifests_in_out_carry_no_data(preview_out):
    """A Kubernetes Secret written to out/ has no data/stringData (base64 would hide it from the pattern scan)."""
    import yaml

    secrets = 0
    for path in sorted(preview_out.out.glob("*/manifests/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "Secret":
                secrets += 1
                assert not doc.get("data") and not doc.get("stringData"), f"{path}: Secret with data in out/"
    # Some example stack renders a Secret; with none, this test would check nothing.
    assert secrets, "no stack renders a Secret to out/: the check above ran on nothing"
