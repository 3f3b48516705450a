"""Shared shapes of the policy validators: the resource a validator sees, per-stack settings.

Quantities are parsed by :func:`hybridgpu.k8s.parse_quantity` (re-exported here as ``parse_quantity``),
the one parser of every path that reads a request, limit or quota.

Pure: nothing here imports Pulumi or ``pulumi_policy``. The policy pack (``policies/__main__.py``)
wraps the validators in ``pulumi_policy`` policies; the tests call them directly with
:class:`PolicyResource` values built from plain dicts.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, Field

from hybridgpu.config.keys import PROJECT
from hybridgpu.k8s import parse_quantity  # noqa: F401 - re-exported: the validators' one quantity parser
from hybridgpu.modelbase import Model

T = TypeVar("T")

#: Resource types of the Kubernetes objects the validators read (Pulumi type tokens:
#: ``kubernetes:<group>/<version>:<Kind>``, pulumi-kubernetes provider schema).
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
EC2NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
#: Karpenter v1beta1 (Karpenter 0.33-0.37): the same ``spec.limits``, ``spec.template.spec.requirements``
#: and EC2NodeClass ``spec.tags`` / ``blockDeviceMappings`` / ``metadataOptions`` as v1
#: (karpenter-provider-aws ``pkg/apis/v1beta1``; v1 migration guide, karpenter.sh/v1.0/upgrading/v1-migration),
#: so the pack validates them like v1 rather than letting them pass unseen.
NODEPOOL_V1BETA1 = "kubernetes:karpenter.sh/v1beta1:NodePool"
EC2NODECLASS_V1BETA1 = "kubernetes:karpenter.k8s.aws/v1beta1:EC2NodeClass"
NODEPOOL_TYPES = (NODEPOOL, NODEPOOL_V1BETA1)
EC2NODECLASS_TYPES = (EC2NODECLASS, EC2NODECLASS_V1BETA1)
CONFIGMAP = "kubernetes:core/v1:ConfigMap"
SECRET = "kubernetes:core/v1:Secret"
#: pulumi-kubernetes resources that carry other objects in their inputs rather than being one:
#: Helm releases/charts (values), and the v2 YAML and Kustomize components, whose objects are
#: registered as children and checked there (pulumi_kubernetes 4.34 ``helm/v3/Release``,
#: ``helm/v4/Chart``, ``yaml/v2``, ``kustomize/v2``). Workload policies skip them, so an object is
#: reported once, as itself.
KUBERNETES_BUNDLES = (
    "kubernetes:helm.sh/v3:Release",
    "kubernetes:helm.sh/v4:Chart",
    "kubernetes:yaml/v2:ConfigGroup",
    "kubernetes:yaml/v2:ConfigFile",
    "kubernetes:kustomize/v2:Directory",
)
#: The component the on-prem cluster registers for each bare-metal host (hybridgpu/components/onprem.py).
ONPREM_HOST = "hybridgpu:index:OnPremHost"
#: The host record's tokens: :data:`ONPREM_HOST` and ``hybridgpu:onprem:Host``, its token before the
#: components moved to ``index`` tokens (a newer pack may check an older program; docs/components.md).
ONPREM_HOST_TYPES = (ONPREM_HOST, "hybridgpu:onprem:Host")


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
        property_dependencies: top-level input name -> URNs of the resources its value came
            from (``AnalyzeStack`` only: pulumi_policy ``PolicyResource.property_dependencies``,
            pulumi-policy 1.21 ``policy.py``); how a stack policy follows an ASG's
            ``launchTemplate.id`` to the launch template even when the id is unknown.
    """

    type: str
    name: str
    urn: str = ""
    props: Mapping[str, Any] = field(default_factory=dict)
    provider_props: Mapping[str, Any] | None = None
    taggable: bool | None = None
    property_dependencies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def stack(self) -> str:
        """The stack name read from the URN ('' when the URN is not a Pulumi URN)."""
        return stack_of_urn(self.urn)

    @property
    def project(self) -> str:
        """Project name read from the URN ('' when the URN is not a Pulumi URN)."""
        return project_of_urn(self.urn)

    @property
    def hybridgpu(self) -> bool:
        """True when the resource belongs to a hybridgpu project (fix hints may then name
        hybridgpu's stack settings, such as ``hybridgpu:tags``); False for any other project."""
        return is_hybridgpu(self.project)

    @property
    def label(self) -> str:
        """How messages name the resource: ``<type> "<name>"``."""
        return f'{self.type} "{self.name}"'


def stack_of_urn(urn: str) -> str:
    """Stack name of a URN (``urn:pulumi:dev::hybridgpu::...`` -> ``dev``); '' if not a URN."""
    if not urn.startswith("urn:pulumi:"):
        return ""
    return urn[len("urn:pulumi:") :].split("::", 1)[0]


def project_of_urn(urn: str) -> str:
    """Project name of a URN (``urn:pulumi:dev::hybridgpu::...`` -> ``hybridgpu``); '' if not a URN."""
    if not urn.startswith("urn:pulumi:"):
        return ""
    parts = urn[len("urn:pulumi:") :].split("::")
    return parts[1] if len(parts) > 1 else ""


def is_hybridgpu(project: str) -> bool:
    """True for hybridgpu's own project name (:data:`hybridgpu.config.keys.PROJECT`, the namespace its
    program reads config from); also for '' (no URN, e.g. a resource built in a test), where
    hybridgpu's wording is kept."""
    return project in ("", PROJECT)


def fix_for(resources: PolicyResource | Iterable[PolicyResource], ours: str, theirs: str) -> str:
    """The fix text that works in the checked project: ``ours`` (names hybridgpu's settings) for a
    hybridgpu project, ``theirs`` (names what any Pulumi program has: ``aws:defaultTags``, the
    resource's own arguments) for any other. Given several resources, the first one's project decides."""
    first = resources if isinstance(resources, PolicyResource) else next(iter(resources), None)
    return ours if first is None or first.hybridgpu else theirs


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


#: Settings fields that take one value, or per stack ``{"default": ..., "<stack glob>": ...}`` (:func:`for_stack`).
PerStackInt = Annotated[int | dict[str, int], AfterValidator(check_per_stack)]
PerStackFloat = Annotated[float | dict[str, float] | None, AfterValidator(check_per_stack)]
PerStackList = Annotated[list[str] | dict[str, list[str]], AfterValidator(check_per_stack)]
PerStackOptList = Annotated[list[str] | dict[str, list[str]] | None, AfterValidator(check_per_stack)]

#: What a resource validator yields: one message per problem. Not a result type of its own: the
#: message is what ``pulumi_policy``'s ``report_violation`` carries to the engine, and the analyzer
#: makes it a :class:`hybridgpu.shell.policy.analyzer.Violation` (policy, level, resource added).
Findings = Iterator[str]
#: What a stack validator yields: ``(resource, or None for the whole stack, message)``; the
#: resource becomes the URN ``report_violation`` is given.
StackFindings = Iterator[tuple[PolicyResource | None, str]]


def _has_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain text, not only whitespace")
    return value


class Exemption(Model):
    """A waiver of one policy for some resources, with the reason kept in the policy config."""

    resource: str = Field(
        min_length=1,
        description="Glob matched against the resource's logical name or its URN (e.g. 'legacy-*'). Required.",
    )
    reason: Annotated[str, AfterValidator(_has_text)] = Field(
        min_length=10, description="Why the resource is exempt (at least 10 characters, not only whitespace). Required."
    )
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


def dig(obj: Any, *path: str | int, default: Any = None) -> Any:
    """``obj[path[0]][path[1]]...`` or ``default`` when a step is missing or of the wrong kind."""
    for key in path:
        obj = _step(obj, key)
        if obj is _MISSING:
            return default
    return obj


_MISSING = object()


def _step(obj: Any, key: str | int) -> Any:
    """``obj[key]`` for a list index or a mapping key, or :data:`_MISSING` when it is not there."""
    if isinstance(key, int):
        if not isinstance(obj, Sequence) or isinstance(obj, str) or key >= len(obj):
            return _MISSING
        return obj[key]
    if not isinstance(obj, Mapping) or key not in obj:
        return _MISSING
    return obj[key]


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
        except errors:
            continue
        yield from walk_known_strings(value)


class Unknown:
    """A value that is unknown during preview (what :func:`known` returns for it)."""

    def __init__(self, path: str):
        self.path = path

    def __repr__(self) -> str:
        return f"<unknown {self.path}>"


def known(obj: Any, *path: str | int, default: Any = None) -> Any:
    """Like :func:`dig`, but a value unknown during preview comes back as an :class:`Unknown`
    (naming its path) instead of raising, so a policy can fail closed on exactly the values it
    needs and step over the ones it does not (a computed ``Name`` tag, a computed namespace)."""
    errors = tuple(UNKNOWN_ERRORS)
    steps: list[str] = []
    for key in path:
        steps.append(f"[{key}]" if isinstance(key, int) else (f".{key}" if steps else str(key)))
        try:
            obj = _step(obj, key)
        except errors:
            return Unknown("".join(steps))
        if obj is _MISSING:
            return default
    return obj


def names(items: Iterable[str]) -> str:
    """``a, b, c`` for messages."""
    return ", ".join(sorted(items))
