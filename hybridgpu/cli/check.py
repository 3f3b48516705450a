"""``hybridgpu check``: the policy pack, offline, on every stack (or the named ones).

Runs each stack's program under Pulumi's mocks, starts hybridgpu's policy pack (the one installed
with it, ``hybridgpu policy path``, or ``--pack DIR``) as the Pulumi CLI does and puts every
resource through it (``Analyze``, then ``AnalyzeStack``). Prints the violations as a table, JSON
(``--format json``) or GitHub annotations (``--format github``).

Works on any Pulumi Python project (``--root``): the project name comes from its Pulumi.yaml,
and hybridgpu's stack validation runs only for hybridgpu's own project. The project is read as the
Pulumi CLI reads it (:mod:`hybridgpu.shell.project`: ``runtime``, ``main``, its virtualenv,
``stackConfigDir``); other stacks' outputs for ``StackReference`` come from ``--stack-outputs``
(:mod:`hybridgpu.shell.references`; unknown without it).

Exit codes: 0 no mandatory violation (advisory ones may be printed); 1 mandatory violations,
and only then (an ``offline-opaque-component`` finding, a remote component whose children the
offline run cannot see, is one unless ``--opaque-components advisory``); 2 the check could not run: a bad stack or policy config, the pack failed to
start, ``Pulumi.yaml`` is not a Python project's (``runtime``), names a ``main`` or virtualenv that
does not exist, or the program failed under the offline mocks (a missing mock answer for an invoke, a
module in neither hybridgpu's nor the project's environment, an
exception in the program, a non-zero ``sys.exit``, no end within ``$HYBRIDGPU_CHECK_TIMEOUT``
seconds (default 120), no resource registered). Exit 2 prints one line naming the file, the resource or stack and
the cause; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from hybridgpu.cli.common import console as make_console
from hybridgpu.cli.common import fail, print_table, progress
from hybridgpu.errors import HybridGpuError
from hybridgpu.shell.invokes import answers_from
from hybridgpu.shell.references import stack_outputs_from
from hybridgpu.shell.policy.analyzer import Violation
from hybridgpu.shell.policy.check import (
    ProgramError,
    StackReport,
    check_stacks,
    error_annotations,
    to_github,
    to_json,
    violation_config_key,
    violation_location,
)
from hybridgpu.shell.policy.pack import project_pack_note
from hybridgpu.stack.files import find_project_root, list_stacks, stack_config_dir


class OutputFormat(str, Enum):
    """How ``hybridgpu check`` prints violations."""

    table = "table"
    json = "json"
    github = "github"


class OpaqueLevel(str, Enum):
    """Level of the ``offline-opaque-component`` finding (a remote component whose children the offline run cannot see)."""

    mandatory = "mandatory"
    advisory = "advisory"


def check(
    stacks: Annotated[list[str] | None, typer.Argument(help="Stacks to check (default: every stacks/Pulumi.<stack>.yaml).")] = None,
    policy_config: Annotated[
        Path | None, typer.Option("--policy-pack-config", help="Policy config JSON, as for `pulumi preview --policy-pack-config`.")
    ] = None,
    pack: Annotated[Path | None, typer.Option(help="Policy pack directory (default: the pack installed with hybridgpu, `hybridgpu policy path`).")] = None,
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
    output: Annotated[OutputFormat, typer.Option("--format", help="table, json or github (workflow annotations).")] = OutputFormat.table,
    first_preview: Annotated[
        bool, typer.Option("--first-preview", help="Check what a first `pulumi preview` sends: every computed value unknown.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="On a failure (exit 2), also print the Python traceback.")] = False,
    invoke_answers: Annotated[
        Path | None,
        typer.Option("--invoke-answers", help="YAML/JSON file of answers to invokes (token -> answer), merged over the derived ones."),
    ] = None,
    opaque_components: Annotated[
        OpaqueLevel,
        typer.Option(
            "--opaque-components",
            help="Level of the offline-opaque-component finding for a remote component (pulumi_eks, pulumi_awsx, helm.v4.Chart...) "
            "whose children the offline run cannot see: mandatory (exit 1) or advisory (printed, exit 0).",
        ),
    ] = OpaqueLevel.mandatory,
    stack_outputs: Annotated[
        Path | None,
        typer.Option(
            "--stack-outputs",
            help="YAML/JSON file of other stacks' outputs for StackReferences ('org/proj/stack': {output: value, secret: {secret: value}}); "
            "without it their outputs are unknown.",
        ),
    ] = None,
) -> None:
    """Check stacks against the policy pack offline (no cloud credentials, no Pulumi CLI)."""
    try:
        project = (root or find_project_root()).resolve()
        names = stacks or list_stacks(project)
        if pack is None and (note := project_pack_note(project)):
            make_console(stderr=True).print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
        if not names:
            raise HybridGpuError(f"no stack files (Pulumi.<stack>.yaml) in {stack_config_dir(project)}")
        with answers_from(invoke_answers), stack_outputs_from(stack_outputs), progress(f"checking {', '.join(names)} against the policy pack"):
            reports = check_stacks(
                names, project, pack_dir=pack.resolve() if pack else None, config_file=policy_config, first_preview=first_preview,
                opaque_components=opaque_components.value,
            )
    except HybridGpuError as exc:
        if debug:
            make_console(stderr=True).print("".join(traceback.format_exception(exc.__cause__ or exc)), markup=False, highlight=False)
        if output is OutputFormat.github:  # the cause on the pull request too, on its file and line
            print(error_annotations(exc, root))
        fail(" ".join(str(exc).split()) if isinstance(exc, ProgramError) else exc)
    except Exception as exc:  # noqa: BLE001 - a crash of the check itself: one line, exit 2, traceback with --debug
        if debug:
            make_console(stderr=True).print(traceback.format_exc(), markup=False, highlight=False)
        fail(f"hybridgpu check failed: {type(exc).__name__}: {' '.join(str(exc).split())[:500]} (run with --debug for the traceback)")
    console = make_console()
    if output is OutputFormat.json:
        console.print_json(to_json(reports))
    elif output is OutputFormat.github:
        text = to_github(reports)
        if text:
            print(text)
    else:
        for report in reports:
            if not report.violations:
                console.print(f"[green]{report.stack}[/]: {report.resources} resources, no violations", highlight=False)
                continue
            print_table(
                console,
                f"{report.stack}: {len(report.violations)} violations ({len(report.mandatory)} mandatory)",
                ["level", "policy", "resource", "message"],
                [
                    [Text(v.level, style="red" if v.level == "mandatory" else "yellow"), v.policy, _resource_cell(report, v), v.message]
                    for v in report.violations
                ],
                show_lines=True,
            )
    if any(r.mandatory for r in reports):
        raise typer.Exit(code=1)


def _resource_cell(report: StackReport, violation: Violation) -> str:
    """The violating resource (``(stack)`` for the whole stack), then where its fix goes: the stack
    file's key path and line (``Pulumi.prod.yaml:41 hybridgpu:cloud.nodePools[1].gpuLimit``)."""
    what = f"{violation.type} {violation.name}" if violation.name else "(stack)"
    key = violation_config_key(report, violation)
    where = violation_location(report, violation)
    if key is None or where is None:
        return what
    return f"{what}\nfix at {Path(where[0]).name}{f':{where[1]}' if where[1] else ''}:\n{key}"
