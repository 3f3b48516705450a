"""The secrets of the kubeadm configs: placeholders, and their substitution at apply time (pure, no Pulumi).

Secrets are never rendered. Bootstrap tokens, certificate keys and CA public-key hashes appear
as placeholders such as ``${BOOTSTRAP_TOKEN}`` (see :data:`BOOTSTRAP_TOKEN`); the caller fills
them at apply time with :func:`substitute`, which checks each value's format and refuses
unknown or missing placeholders. A placeholder name tells its kind by prefix
(``BOOTSTRAP_TOKEN``, ``CERTIFICATE_KEY``, ``CA_CERT_HASH``), so per-pool names such as
``${BOOTSTRAP_TOKEN_GPU}`` work too. The renderers are :mod:`hybridgpu.render.kubeadm`.

API facts (read 2026-11-22):

* Bootstrap token ``BootstrapTokenPattern = \\A([a-z0-9]{6})\\.([a-z0-9]{16})\\z``
  (``k8s.io/cluster-bootstrap`` token API); BootstrapToken {token, description, ttl, expires,
  usages, groups} (``cmd/kubeadm/app/apis/bootstraptoken/v1/types.go``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: Placeholder names; each marks a secret that :func:`substitute` fills at apply time.
BOOTSTRAP_TOKEN = "BOOTSTRAP_TOKEN"
CERTIFICATE_KEY = "CERTIFICATE_KEY"
CA_CERT_HASH = "CA_CERT_HASH"

#: The placeholders as they appear in rendered text.
BOOTSTRAP_TOKEN_PLACEHOLDER = "${" + BOOTSTRAP_TOKEN + "}"
CERTIFICATE_KEY_PLACEHOLDER = "${" + CERTIFICATE_KEY + "}"
CA_CERT_HASH_PLACEHOLDER = "${" + CA_CERT_HASH + "}"

#: Bootstrap token format (``BootstrapTokenPattern`` of k8s.io/cluster-bootstrap).
TOKEN_RE = re.compile(r"\A[a-z0-9]{6}\.[a-z0-9]{16}\Z")
#: Certificate key: a 32-byte AES key, hex encoded (64 hex digits).
CERTIFICATE_KEY_RE = re.compile(r"\A[0-9a-f]{64}\Z")
#: CA public-key pin: ``sha256:`` + hex SHA-256 of the CA's SubjectPublicKeyInfo.
CA_CERT_HASH_RE = re.compile(r"\Asha256:[0-9a-f]{64}\Z")

_PLACEHOLDER_NAME = r"[A-Z][A-Z0-9_]*"
_PLACEHOLDER_RE = re.compile(r"\$\{(" + _PLACEHOLDER_NAME + r")\}")
#: Anything that looks like an attempted placeholder (to catch ``${lower}`` or ``${A-B}`` too).
_PLACEHOLDER_LIKE_RE = re.compile(r"\$\{([^}\s]*)\}")

#: Placeholder kinds by name prefix.
SECRET_KINDS: tuple[str, ...] = (BOOTSTRAP_TOKEN, CERTIFICATE_KEY, CA_CERT_HASH)


def placeholder(name: str) -> str:
    """``${NAME}`` for a placeholder name whose prefix is one of :data:`SECRET_KINDS`."""
    secret_kind(name)
    return "${" + name + "}"


def secret_kind(name: str) -> str:
    """The kind (one of :data:`SECRET_KINDS`) of a placeholder name, from its prefix.

    ``BOOTSTRAP_TOKEN``, ``BOOTSTRAP_TOKEN_GPU`` -> ``BOOTSTRAP_TOKEN``, and so on.

    Raises:
        ValueError: the name is malformed or has no known prefix.
    """
    if not re.fullmatch(_PLACEHOLDER_NAME, name):
        raise ValueError(f"placeholder name {name!r} must match {_PLACEHOLDER_NAME}")
    for kind in SECRET_KINDS:
        if name == kind or name.startswith(kind + "_"):
            return kind
    raise ValueError(f"unknown placeholder {name!r}: names must start with one of {', '.join(SECRET_KINDS)}")


def check_placeholder(value: str, kind: str, what: str) -> str:
    """Make sure ``value`` is a placeholder of ``kind`` (and so never a real secret)."""
    m = _PLACEHOLDER_RE.fullmatch(value)
    if not m or secret_kind(m.group(1)) != kind:
        raise ValueError(
            f"{what} must be a placeholder like ${{{kind}}} (secrets are never rendered; fill them with substitute()), got {value!r}"
        )
    return value


def _normalize_secret(kind: str, name: str, value: str) -> str:
    """Check (and for CA hashes normalize) one secret value for :func:`substitute`."""
    if not isinstance(value, str):
        raise ValueError(f"value of ${{{name}}} must be a string")
    if kind == BOOTSTRAP_TOKEN:
        if not TOKEN_RE.match(value):
            raise ValueError(f"${{{name}}}: a bootstrap token must match [a-z0-9]{{6}}.[a-z0-9]{{16}}")
        return value
    if kind == CERTIFICATE_KEY:
        if not CERTIFICATE_KEY_RE.match(value):
            raise ValueError(f"${{{name}}}: a certificate key must be 64 lowercase hex digits (a 32-byte AES key)")
        return value
    # CA_CERT_HASH: accept bare hex or sha256:<hex>, either case; render sha256:<lowercase hex>.
    candidate = value.strip()
    if re.fullmatch(r"[0-9a-fA-F]{64}", candidate):
        candidate = "sha256:" + candidate
    if candidate.lower().startswith("sha256:"):
        candidate = "sha256:" + candidate[len("sha256:") :].lower()
    if not CA_CERT_HASH_RE.match(candidate):
        raise ValueError(f"${{{name}}}: a CA cert hash must be sha256:<64 hex digits> (the SPKI pin kubeadm prints)")
    return candidate


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Fill the secret placeholders of rendered text at apply time.

    Args:
        text: rendered text (e.g. :func:`to_yaml` output) with ``${NAME}`` placeholders.
        values: placeholder name (without ``${}``) -> secret value. Bootstrap tokens must match
            ``[a-z0-9]{6}.[a-z0-9]{16}``; certificate keys 64 lowercase hex digits; CA cert
            hashes ``sha256:<64 hex>`` (bare hex is accepted and prefixed).

    Returns:
        The text with every placeholder replaced.

    Raises:
        ValueError: an unknown placeholder (in ``text`` or ``values``), a malformed one, a
            placeholder without a value, or a value of the wrong format. Messages never
            contain the secret values.
    """
    for key in values:
        secret_kind(key)
    for m in _PLACEHOLDER_LIKE_RE.finditer(text):
        secret_kind(m.group(1))
    present = {m.group(1) for m in _PLACEHOLDER_RE.finditer(text)}
    missing = sorted(present - set(values))
    if missing:
        raise ValueError(f"no value for placeholder(s): {', '.join(missing)}")
    clean = {name: _normalize_secret(secret_kind(name), name, values[name]) for name in present}
    return _PLACEHOLDER_RE.sub(lambda m: clean[m.group(1)], text)
