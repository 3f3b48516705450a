"""The hybridgpu policy pack: :data:`hybridgpu.policy.registry.POLICIES` as ``pulumi_policy`` policies.

The pack's one home. :data:`PACK_DIR` is the pack directory installed with hybridgpu (package data:
``PulumiPolicy.yaml`` and a ``__main__.py`` that calls :func:`serve`), which ``hybridgpu check``
runs unless ``--pack`` names another and ``hybridgpu policy path`` prints for
``pulumi preview --policy-pack``; the checkout's ``policies/__main__.py`` and the directory
``hybridgpu policy build-pack`` writes carry the same ``__main__.py``. :func:`serve` builds the
``PolicyPack`` from :func:`build_policies`. Three things happen here that the plain validators do
not do:

* **fail closed**: ``pulumi_policy`` turns an unknown value met during a preview into an
  advisory note, so a mandatory check would silently pass in a pull request. Each validator
  runs inside a guard that reports such a case as a violation of the policy itself (at the
  policy's enforcement level), naming the unknown property;
* **settings**: each policy's ``--policy-pack-config`` entry is validated by its pydantic
  model; an invalid entry is reported as a violation rather than crashing the analyzer;
* **the SDK as data**: each resource's ``taggable`` comes from the installed pulumi-aws
  classes (:mod:`hybridgpu.shell.policy.taggable`), which the pure validators cannot import.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from hybridgpu.policy import base
from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.registry import PACK_NAME, POLICIES, PolicyConfigError, PolicySpec
from hybridgpu.shell.policy.taggable import is_taggable

if UnknownValueError not in base.UNKNOWN_ERRORS:
    base.UNKNOWN_ERRORS.append(UnknownValueError)

_LEVELS = {"mandatory": EnforcementLevel.MANDATORY, "advisory": EnforcementLevel.ADVISORY}

#: The policy pack installed with hybridgpu (a wheel carries it as package data).
PACK_DIR = Path(__file__).resolve().parent / "pulumi_pack"
#: What the pack's ``PolicyPack`` says it does (``pulumi preview`` prints it).
PACK_DESCRIPTION = "Blocks untagged and oversized GPU resources and unsafe cluster settings (hybridgpu)."


def _unknown_message(spec: PolicySpec, what: str, exc: UnknownValueError) -> str:
    # pulumi_policy names the sentinel's kind ("string value at ..."), but the engine marks every
    # computed input with the string sentinel, whatever its type: say "unknown value" instead.
    where = "." + ".".join(str(p) for p in exc.props)
    return (
        f"{what}: policy {spec.name} cannot be verified because the value at {where} is an unknown value during "
        "preview. It fails closed: a mandatory "
        "check does not pass what it cannot see. Fix: make the value known at preview (a literal or a config "
        "value rather than another resource's output), or waive the resource in the policy config with a reason."
    )


def _resource(args: Any) -> PolicyResource:
    provider = getattr(args, "provider", None)
    deps = getattr(args, "property_dependencies", None) or {}
    return PolicyResource(
        type=args.resource_type,
        name=args.name,
        urn=args.urn,
        props=args.props,
        provider_props=provider.props if provider is not None else None,
        taggable=is_taggable(args.resource_type),
        property_dependencies={k: tuple(d.urn for d in v) for k, v in deps.items()},
    )


@functools.lru_cache(maxsize=256)
def _settings(spec: PolicySpec, raw: str) -> Any:
    """Parsed settings, cached per policy and config text (the pack sees one config per run)."""
    return spec.parse_settings(json.loads(raw))


def _config_key(args: Any) -> str:
    return json.dumps(dict(args.get_config()), sort_keys=True, default=str)


# report_violation(message, urn): urn None blames the resource (or stack) under validation.
def _resource_validate(spec: PolicySpec):
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if not spec.applies(args.resource_type):
            return
        resource = _resource(args)
        try:
            settings = _settings(spec, _config_key(args))
        except PolicyConfigError as exc:
            report_violation(f"{resource.label}: {exc}. Fix: correct the policy pack config.", None)
            return
        try:
            messages = spec.run_resource(resource, settings)
        except UnknownValueError as exc:
            messages = [_unknown_message(spec, resource.label, exc)]
        for message in messages:
            report_violation(message, None)

    return validate


def _stack_validate(spec: PolicySpec):
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        try:
            settings = _settings(spec, _config_key(args))
        except PolicyConfigError as exc:
            report_violation(f"{exc}. Fix: correct the policy pack config.", None)
            return
        resources = [_resource(r) for r in args.resources]
        try:
            findings = spec.run_stack(resources, settings)
        except UnknownValueError as exc:
            findings = [(None, _unknown_message(spec, "the stack", exc))]
        for resource, message in findings:
            report_violation(message, resource.urn if resource is not None and resource.urn else None)

    return validate


def build_policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    """One ``pulumi_policy`` policy per entry of :data:`POLICIES`, with its config schema and level."""
    built: list[ResourceValidationPolicy | StackValidationPolicy] = []
    for spec in POLICIES:
        schema = PolicyConfigSchema(properties=spec.config_schema())
        level = _LEVELS[spec.enforcement]
        if spec.kind == "resource":
            built.append(
                ResourceValidationPolicy(
                    name=spec.name, description=spec.description, validate=_resource_validate(spec),
                    enforcement_level=level, config_schema=schema,
                )
            )
        else:
            built.append(
                StackValidationPolicy(
                    name=spec.name, description=spec.description, validate=_stack_validate(spec),
                    enforcement_level=level, config_schema=schema,
                )
            )
    return built


def serve() -> None:
    """Run the hybridgpu policy pack: the whole of every pack ``__main__.py`` of hybridgpu's.

    Constructing ``PolicyPack`` starts its gRPC analyzer on 127.0.0.1, prints the port on stdout
    and serves until the Pulumi CLI (or :class:`hybridgpu.shell.policy.analyzer.Analyzer`) stops
    the process; it takes its project and stack from ``PULUMI_PROJECT`` / ``PULUMI_STACK``.
    Returns only when the server stops.
    """
    policies: list[Policy] = list(build_policies())
    PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=policies, description=PACK_DESCRIPTION)


def project_pack_note(root: Path) -> str | None:
    """Say so when ``root`` (a Pulumi project) has a policy pack of its own in ``policies/``.

    ``hybridgpu check`` runs hybridgpu's pack (:data:`PACK_DIR`) unless ``--pack`` names another,
    whatever the project holds: a project's own pack would otherwise replace the gate's rules
    without a word. A ``policies/`` whose ``__main__.py`` imports this module is hybridgpu's pack
    (this checkout's, or an older copy of it) and gets no note.

    Args:
        root: the project directory.

    Returns:
        One sentence naming the project's pack, the pack that runs and the ``--pack`` that would
        run the project's instead; ``None`` when ``root/policies`` is no pack or is hybridgpu's.
    """
    own = root / "policies"
    if not (own / "PulumiPolicy.yaml").is_file():
        return None
    try:
        main = (own / "__main__.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        main = ""
    if "hybridgpu.shell.policy.pack" in main:
        return None
    return (
        f"{own} is a policy pack of this project; hybridgpu check runs hybridgpu's pack ({PACK_DIR}), not that one. "
        f"To run the project's pack instead, pass --pack {own}."
    )
