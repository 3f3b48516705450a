"""The offline policy check: run a stack's program under mocks and put what it registers through
the policy pack's real analyzer, as ``pulumi preview --policy-pack policies`` would.

:func:`check_stacks` previews each stack offline (:func:`hybridgpu.shell.preview.run_preview`),
starts the pack once (:class:`hybridgpu.shell.policy.analyzer.Analyzer`), sends every resource
through ``Analyze`` with its explicit provider and the whole stack through ``AnalyzeStack``, and
returns the violations. Inputs reach the pack exactly as they went over the wire (secrets
marked), so the pack sees what it would see under the CLI.

Formats: :func:`to_json` and :func:`to_github` (workflow-command annotations that GitHub shows
on the pull request's stack file).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hybridgpu.config.keys import PROJECT
from hybridgpu.errors import HybridGpuError
from hybridgpu.shell.policy.analyzer import Analyzer, AnalyzerResource, Diagnostic
from hybridgpu.policy.registry import BY_NAME, PACK_NAME, PolicyConfigError
from hybridgpu.shell.preview import run_preview
from hybridgpu.stack.load import load_stack

LEVELS = ("mandatory", "advisory", "disabled")


class PolicyConfigFileError(HybridGpuError):
    """The ``--policy-pack-config`` file is unreadable or invalid (names the file, the policy and the field)."""


@dataclass(frozen=True)
class Violation:
    """One violation, attributed to a resource (or to the stack when ``urn`` is '').

    Attributes:
        stack: stack name. policy: policy name. level: ``mandatory`` or ``advisory``.
        message: the validator's message (what is wrong and the fix). urn, type, name: the resource.
    """

    stack: str
    policy: str
    level: str
    message: str
    urn: str
    type: str
    name: str


@dataclass(frozen=True)
class StackReport:
    """Result of checking one stack: the violations and how many resources were analyzed."""

    stack: str
    resources: int
    violations: tuple[Violation, ...]

    @property
    def mandatory(self) -> list[Violation]:
        """The violations that block (mandatory level)."""
        return [v for v in self.violations if v.level == "mandatory"]


def load_policy_config(path: Path | None) -> dict[str, tuple[str, dict[str, Any]]]:
    """Read a Pulumi policy-pack config file and validate every entry against its policy.

    Format (Pulumi's ``--policy-pack-config``): a JSON object; ``"all"`` may set the level of
    every policy; each policy name maps to a level string or to an object with an optional
    ``enforcementLevel`` and the policy's properties.

    Returns:
        ``{policy: (level, properties)}`` for every policy of the pack (defaults filled in).

    Raises:
        PolicyConfigFileError: unreadable JSON, an unknown policy or level, or properties
            that do not match the policy's settings.
    """
    raw: Mapping[str, Any] = {}
    label = str(path) if path is not None else "(no policy config)"
    if path is not None:
        try:
            raw = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise PolicyConfigFileError(f"{label}: cannot read the policy config: {exc}") from None
        if not isinstance(raw, Mapping):
            raise PolicyConfigFileError(f"{label}: must be a JSON object of policy name -> settings")
    problems: list[str] = []
    default_level = raw.get("all")
    if default_level is not None and default_level not in LEVELS:
        problems.append(f"all: level {default_level!r} is not one of {', '.join(LEVELS)}")
    for key in raw:
        if key != "all" and key not in BY_NAME:
            problems.append(f"{key}: no such policy (policies: {', '.join(sorted(BY_NAME))})")
    config: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, spec in BY_NAME.items():
        entry = raw.get(name, {})
        level = default_level or spec.enforcement
        props: dict[str, Any] = {}
        if isinstance(entry, str):
            level = entry
        elif isinstance(entry, Mapping):
            props = {k: v for k, v in entry.items() if k != "enforcementLevel"}
            level = entry.get("enforcementLevel", level)
        else:
            problems.append(f"{name}: must be a level string or an object")
            continue
        if level not in LEVELS:
            problems.append(f"{name}.enforcementLevel: {level!r} is not one of {', '.join(LEVELS)}")
            continue
        try:
            spec.parse_settings(props)
        except PolicyConfigError as exc:
            problems.append(str(exc))
            continue
        config[name] = (level, props)
    if problems:
        raise PolicyConfigFileError(f"{label}: " + "; ".join(problems) + ". Fix: see docs/policies.md for each policy's settings.")
    return config


def _analyzer_resources(records: Sequence[Any]) -> list[AnalyzerResource]:
    by_urn = {r.urn: r for r in records}
    out: list[AnalyzerResource] = []
    for r in records:
        provider = None
        if r.provider:
            p = by_urn.get(r.provider.rsplit("::", 1)[0])
            if p is not None:
                provider = AnalyzerResource(type=p.type, name=p.name, urn=p.urn, properties=p.wire if p.wire is not None else p.inputs)
        out.append(
            AnalyzerResource(
                type=r.type, name=r.name, urn=r.urn,
                properties=r.wire if r.wire is not None else r.inputs,
                parent=r.parent or "", dependencies=tuple(r.dependencies), provider=provider,
            )
        )
    return out


def _split(message: str, policy: str) -> str:
    """Drop the policy description pulumi_policy puts before the validator's message."""
    spec = BY_NAME.get(policy)
    if spec is not None and message.startswith(spec.description + "\n"):
        return message[len(spec.description) + 1 :]
    return message


def _violations(stack: str, diagnostics: Sequence[Diagnostic], by_urn: Mapping[str, AnalyzerResource]) -> list[Violation]:
    out = []
    for d in diagnostics:
        r = by_urn.get(d.urn)
        out.append(Violation(stack, d.policy, d.level, _split(d.message, d.policy), d.urn, r.type if r else "", r.name if r else ""))
    return out


def analyze_resources(analyzer: Analyzer, stack: str, resources: Sequence[AnalyzerResource], project: str = "hybridgpu") -> StackReport:
    """Put ``resources`` through a running pack: ``Analyze`` each, then ``AnalyzeStack``."""
    analyzer.configure_stack(project=project, stack=stack)
    diagnostics: list[Diagnostic] = []
    for r in resources:
        diagnostics += analyzer.analyze(r)
    diagnostics += analyzer.analyze_stack(resources)
    by_urn = {r.urn: r for r in resources}
    return StackReport(stack, len(resources), tuple(_violations(stack, diagnostics, by_urn)))


def check_stacks(
    stacks: Sequence[str],
    root: Path,
    *,
    pack_dir: Path | None = None,
    config_file: Path | None = None,
    first_preview: bool = False,
) -> list[StackReport]:
    """Check stacks offline against the policy pack.

    Args:
        stacks: stack names (``<root>/stacks/Pulumi.<stack>.yaml``).
        root: the Pulumi project directory (its ``__main__.py`` is the program that runs).
        pack_dir: the policy pack (default ``<root>/policies``).
        config_file: a ``--policy-pack-config`` JSON file (default: the policies' defaults).
        first_preview: check what the first ``pulumi preview`` of a not yet deployed stack sends
            (every computed value unknown), where fail-closed policies would block.

    Returns:
        One :class:`StackReport` per stack, in order.

    Raises:
        PolicyConfigFileError: a bad policy config (before any stack runs).
        StackConfigError / StackFileError: a stack's config is invalid (before the pack starts).
        AnalyzerError: the pack did not start or failed.
    """
    config = load_policy_config(config_file)
    loaded = [load_stack(name, root) for name in stacks]  # every stack file is sound before any program runs
    previews = [run_preview(s.config.stack, root, program=_entrypoint(root), first_preview=first_preview, loaded=s) for s in loaded]
    reports: list[StackReport] = []
    with Analyzer(pack_dir or root / "policies", project=PROJECT, stack=stacks[0] if stacks else "check") as analyzer:
        analyzer.configure(config)
        for preview in previews:
            reports.append(analyze_resources(analyzer, preview.stack, _analyzer_resources(preview.records), PROJECT))
    return reports


def _entrypoint(root: Path):
    """The project's program as Pulumi runs it: ``<root>/__main__.py`` (run by path)."""
    main = root / "__main__.py"

    def program() -> None:
        import runpy

        runpy.run_path(str(main), run_name="__main__")

    return program if main.is_file() else None


def to_json(reports: Sequence[StackReport]) -> str:
    """Reports as JSON: ``{"pack": ..., "stacks": [{"stack", "resources", "violations": [...]}]}``."""
    return json.dumps(
        {
            "pack": PACK_NAME,
            "stacks": [
                {"stack": r.stack, "resources": r.resources, "mandatory": len(r.mandatory), "violations": [asdict(v) for v in r.violations]}
                for r in reports
            ],
        },
        indent=2,
    )


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def to_github(reports: Sequence[StackReport], stack_file: str = "stacks/Pulumi.{stack}.yaml") -> str:
    """GitHub Actions workflow commands (``::error``/``::warning``), one per violation, on the stack file.

    Source: GitHub Docs, "Workflow commands for GitHub Actions" (error/warning with ``file`` and
    ``title``; ``%``, CR, LF escaped in messages, also ``:`` and ``,`` in properties), 2025.
    """
    lines = []
    for report in reports:
        for v in report.violations:
            kind = "error" if v.level == "mandatory" else "warning"
            what = f"{v.type} {v.name}" if v.name else "stack"
            title = _escape(f"{PACK_NAME}/{v.policy} ({what})", prop=True)
            file = _escape(stack_file.format(stack=report.stack), prop=True)
            lines.append(f"::{kind} file={file},title={title}::{_escape(v.message)}")
    return "\n".join(lines)

