"""Scan text and files for secret material (pure, no Pulumi).

What counts as secret material (the shapes of the credentials this toolkit handles):

* kubeadm bootstrap token ``[a-z0-9]{6}.[a-z0-9]{16}`` (kubeadm reference, "Authenticating with
  Bootstrap Tokens", kubernetes.io, read 2026-11-22);
* kubeadm certificate key: 32 bytes as 64 hex characters (``kubeadm init --certificate-key``);
* PEM private keys (``-----BEGIN ... PRIVATE KEY-----``, RFC 7468 labels incl. OpenSSH);
* kubeconfig credentials: a ``token:`` with a value, ``client-key-data:``, ``password:``;
* service-account tokens and other JWTs (three base64url parts, the first two JSON ``eyJ``);
* AWS access key ids (``AKIA``/``ASIA`` + 16) and ``aws_secret_access_key`` assignments;
* the concrete values a caller knows (e.g. the offline preview's mock token), anywhere.

A 64-hex string right after ``sha256:`` or ``@sha256:`` is a digest (container image, CA
public-key hash format), not a key, and is not reported by the pattern; pass the CA hash as a
known value to find it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: Pattern name -> compiled regex. Each names one kind of secret material.
PATTERNS: dict[str, re.Pattern[str]] = {
    "kubeadm bootstrap token": re.compile(r"(?<![A-Za-z0-9])[a-z0-9]{6}\.[a-z0-9]{16}(?![A-Za-z0-9])"),
    "certificate key (64 hex)": re.compile(r"(?<![0-9A-Za-z:])[0-9a-fA-F]{64}(?![0-9A-Za-z])"),
    "PEM private key": re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    "kubeconfig token": re.compile(r"^\s*(?:-\s+)?token:\s*[\"']?[A-Za-z0-9._~+/=-]{8,}", re.MULTILINE),
    "kubeconfig client key": re.compile(r"client-key-data:\s*[\"']?[A-Za-z0-9+/=]{8,}"),
    "kubeconfig password": re.compile(r"^\s*password:\s*[\"']?\S{4,}", re.MULTILINE),
    "JWT (service-account token)": re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    "AWS access key id": re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    "AWS secret access key": re.compile(r"aws_secret_access_key\s*[=:]\s*\S+", re.IGNORECASE),
}


@dataclass(frozen=True)
class SecretHit:
    """One match of secret material.

    Attributes:
        source: file path or the label of a text (e.g. ``hybridgpu preview output``).
        line: 1-based line number of the match.
        kind: the :data:`PATTERNS` name, or ``known value <label>``.
        excerpt: the matched text shortened to its first 6 characters (never the whole secret).
    """

    source: str
    line: int
    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.kind} ({self.excerpt}...)"


def scan_text(text: str, source: str, known: Mapping[str, str] | None = None) -> list[SecretHit]:
    """Every secret-material match in ``text``.

    Args:
        text: the text to scan.
        source: what to name in the hits (file path or label).
        known: label -> concrete secret value to look for verbatim (values shorter than 8
            characters are refused: they would match by chance).

    Returns:
        The hits in pattern order, then known values; empty when clean.

    Raises:
        ValueError: a known value is shorter than 8 characters.
    """
    hits: list[SecretHit] = []

    def line_of(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    for kind, pattern in PATTERNS.items():
        for match in pattern.finditer(text):
            hits.append(SecretHit(source, line_of(match.start()), kind, match.group(0).strip()[:6]))
    for label, value in (known or {}).items():
        if len(value) < 8:
            raise ValueError(f"known secret {label!r} is shorter than 8 characters; it would match by chance")
        start = text.find(value)
        while start != -1:
            hits.append(SecretHit(source, line_of(start), f"known value {label}", value[:6]))
            start = text.find(value, start + 1)
    return hits


def scan_files(paths: Iterable[Path], known: Mapping[str, str] | None = None, *, relative_to: Path | None = None) -> tuple[int, list[SecretHit]]:
    """Scan files (directories are walked recursively; binary files are read as UTF-8 with replacement).

    Returns:
        ``(files scanned, hits)``.
    """
    count = 0
    hits: list[SecretHit] = []
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            count += 1
            shown = str(file.relative_to(relative_to)) if relative_to and file.is_relative_to(relative_to) else str(file)
            hits += scan_text(file.read_bytes().decode("utf-8", errors="replace"), shown, known)
    return count, hits
