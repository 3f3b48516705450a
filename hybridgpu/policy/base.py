"""Shared shapes of the policy validators: the resource a validator sees, per-stack settings, quantities.

Pure: nothing here imports Pulumi or ``pulumi_policy``. The policy pack (``policies/__main__.py``)
wraps the validators in ``pulumi_policy`` policies; the tests call them directly with
:class:`PolicyResource` values built from plain dicts.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import Field

from hybridgpu.modelbase import Model

T = TypeVar("T")

#: Resource types of the Kubernetes objects the validators read (Pulumi type tokens:
#: ``kubernetes:<group>/<version>:<Kind>``, pulumi-kubernetes provider schema).
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
EC2NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
CONFIGMAP = "kubernetes:core/v1:ConfigMap"
SECRET = "kubernetes:core/v1:Secret"
#: The component the on-prem cluster registers for each bare-metal host (hybridgpu/shell/components/onprem.py).
ONPREM_HOST = "hybridgpu:onprem:Host"


@dataclass(frozen=True)
class PolicyResource:
    """One resource as a policy sees it.

    Attributes:
        type: Pulumi type token, e.g. ``aws:ec2/launchTemplate:LaunchTemplate``.
        name: logical name.
        urn: the URN (``urn:pulumi:<stack>::<project>::<type chain>::<name>``); '' when unknown.
        props: the resource's inputs as Pulumi sends them to analyzers (camelCase keys).
        provider_props: inputs of the resource's explicit provider (e.g. the AWS provider's
            ``defaultTags``), or None for the default provider.
        taggable: whether the resource's type takes ``tags``, as the installed provider SDK
            says (the pack fills it in from :func:`hybridgpu.shell.policy.taggable.is_taggable`);
            None when unknown, and validators then go by whether the inputs carry ``tags``.
    """

    type: str
    name: str
    urn: str = ""
    props: Mapping[str, Any] = field(default_factory=dict)
    provider_props: Mapping[str, Any] | None = None
    taggable: bool | None = None

    @property
    def stack(self) -> str:
        """The stack name read from the URN ('' when the URN is not a Pulumi URN)."""
        return stack_of_urn(self.urn)

    @property
    def label(self) -> str:
        """How messages name the resource: ``<type> "<name>"``."""
        return f'{self.type} "{self.name}"'


def stack_of_urn(urn: str) -> str:
    """Stack name of a URN (``urn:pulumi:dev::hybridgpu::...`` -> ``dev``); '' if not a URN."""
    if not urn.startswith("urn:pulumi:"):
        return ""
    return urn[len("urn:pulumi:") :].split("::", 1)[0]


def for_stack(value: T | Mapping[str, T], stack: str) -> T:
    """Resolve a per-stack setting.

    A setting is either one value for every stack, or a mapping from stack-name glob patterns
    (``prod``, ``prod-*``) to values with an optional ``default`` entry. The longest matching
    pattern wins (so ``prod-eu`` beats ``prod-*``), then ``default``.

    Raises:
        KeyError: a mapping matches neither the stack nor has ``default`` (the config models
            below require ``default`` in every mapping, so validated configs never raise).
    """
    if not isinstance(value, Mapping):
        return value
    matches = [p for p in value if p != "default" and fnmatch.fnmatchcase(stack, p)]
    if matches:
        return value[max(matches, key=len)]
    return value["default"]


def check_per_stack(value: Any) -> Any:
    """Pydantic helper: a per-stack mapping must carry a ``default`` entry."""
    if isinstance(value, Mapping) and "default" not in value:
        raise ValueError("a per-stack mapping needs a 'default' entry (e.g. {\"default\": 64, \"dev\": 8})")
    return value


class Exemption(Model):
    """A waiver of one policy for some resources, with the reason kept in the policy config."""

    resource: str = Field(
        min_length=1,
        description="Glob matched against the resource's logical name or its URN (e.g. 'legacy-*'). Required.",
    )
    reason: str = Field(min_length=10, description="Why the resource is exempt (at least 10 characters). Required.")
    stacks: list[str] = Field(default_factory=lambda: ["*"], description="Stack-name globs the waiver applies to. Default: every stack.")

    def covers(self, resource: PolicyResource) -> bool:
        """True when the waiver applies to ``resource``."""
        stack = resource.stack
        if not any(fnmatch.fnmatchcase(stack, s) for s in self.stacks):
            return False
        return fnmatch.fnmatchcase(resource.name, self.resource) or fnmatch.fnmatchcase(resource.urn, self.resource)


class PolicySettings(Model):
    """Settings every policy accepts (its ``--policy-pack-config`` entry; enforcementLevel is Pulumi's own)."""

    exempt_resources: list[Exemption] = Field(
        default_factory=list,
        description="Per-resource waivers, each with a reason. Default: none.",
    )

    def exempt(self, resource: PolicyResource) -> bool:
        """True when a waiver covers ``resource``."""
        return any(e.covers(resource) for e in self.exempt_resources)


_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|m)?$")
_SUFFIX = {
    None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}


def parse_quantity(value: Any) -> float | None:
    """A Kubernetes resource quantity (``8``, ``"64"``, ``"1k"``, ``"500m"``) as a number; None if malformed.

    Source: Kubernetes ``resource.Quantity`` (k8s.io/apimachinery/pkg/api/resource/quantity.go,
    decimal SI and binary IEC suffixes), as of Kubernetes 1.35.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if not match:
        return None
    return float(match[1]) * _SUFFIX[match[2]]


def dig(obj: Any, *path: str | int, default: Any = None) -> Any:
    """``obj[path[0]][path[1]]...`` or ``default`` when a step is missing or of the wrong kind."""
    for key in path:
        if isinstance(key, int):
            if not isinstance(obj, Sequence) or isinstance(obj, str) or key >= len(obj):
                return default
            obj = obj[key]
        else:
            if not isinstance(obj, Mapping) or key not in obj:
                return default
            obj = obj[key]
    return obj


def as_list(value: Any) -> list[Any]:
    """A list value as a list ([] for None or a non-list)."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return []


#: Exceptions meaning "this value is unknown during preview". Empty in plain use; the pack
#: (:mod:`hybridgpu.shell.policy.pack`) registers ``pulumi_policy``'s ``UnknownValueError`` so that
#: best-effort scans can step over unknown values instead of failing closed.
UNKNOWN_ERRORS: list[type[BaseException]] = []


def walk_known_strings(obj: Any) -> Iterator[str]:
    """Every string anywhere inside ``obj`` (dict values, list items), skipping values unknown during preview.

    For best-effort scans only (e.g. command text, whose secret parts are computed): a policy
    that must see a value reads it directly and so fails closed when it is unknown.
    """
    errors = tuple(UNKNOWN_ERRORS)
    if isinstance(obj, str):
        yield obj
        return
    if isinstance(obj, Mapping):
        items: Iterable[Any] = list(obj)
    elif isinstance(obj, Sequence) and not isinstance(obj, bytes):
        items = range(len(obj))
    else:
        return
    for key in items:
        try:
            value = obj[key]
        except errors:  # type: ignore[misc]
            continue
        yield from walk_known_strings(value)


def names(items: Iterable[str]) -> str:
    """``a, b, c`` for messages."""
    return ", ".join(sorted(items))
