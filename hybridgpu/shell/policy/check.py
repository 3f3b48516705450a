"""The offline policy check: run a stack's program under mocks and put what it registers through
the policy pack's real analyzer, as ``pulumi preview --policy-pack policies`` would.

:func:`check_stacks` previews each stack offline (:func:`hybridgpu.shell.preview.run_preview`),
starts the pack once (:class:`hybridgpu.shell.policy.analyzer.Analyzer`), sends every resource
through ``Analyze`` with its provider (explicit, or the default provider the engine builds from
the stack config) and the whole stack through ``AnalyzeStack`` (with property dependencies), and
returns the violations (:class:`~hybridgpu.shell.policy.analyzer.Violation`, the one policy-result
type, attributed by the analyzer). Inputs reach the pack exactly as they went over the wire (secrets
marked), with URNs of the engine's form, so the pack sees what it would see under the CLI. Any
Pulumi Python project can be checked (:func:`is_hybridgpu_project` decides whether hybridgpu's
stack validation runs); a program that fails under the mocks is a one-line :class:`ProgramError`.

The project is read as the Pulumi CLI reads it (:mod:`hybridgpu.shell.project`: ``runtime``,
``main``, the project's virtualenv); stack references are answered from ``--stack-outputs`` or
left unknown (:mod:`hybridgpu.shell.references`, :func:`reference_findings`).

Formats: :func:`to_json` and :func:`to_github` (workflow-command annotations that GitHub shows
on the program line that registered the resource, or on the stack file: :func:`violation_location`).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import sys
import threading
import traceback
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hybridgpu.config.keys import PROJECT
from hybridgpu.errors import HybridGpuError, Issue
from hybridgpu.shell.policy.analyzer import Analyzer, AnalyzerResource, Violation
from hybridgpu.shell.policy.pack import PACK_DIR
from hybridgpu.policy.registry import BY_NAME, PACK_NAME, PolicyConfigError
from hybridgpu.shell.project import ProgramExit, ProjectProgram, missing_module, missing_module_fix, project_program
from hybridgpu.shell.references import STACK_REFERENCE_TYPE, UNKNOWN_REFERENCE_POLICY, reference_message, watch_references
from hybridgpu.shell.preview import PreviewResult, PreviewTimeoutError, engine_urn, run_preview, without_resource_references
from hybridgpu.shell.remote import OPAQUE_POLICY, opaque_message
from hybridgpu.stack.files import config_key_line, find_project_root, project_name, pulumi_config_strings, read_stack_file, stack_config_dir
from hybridgpu.stack.load import load_stack
from hybridgpu.stack.sources import resource_key, violation_key

LEVELS = ("mandatory", "advisory", "disabled")


#: The fix of every problem with a policy's entry in a policy config file.
POLICY_CONFIG_FIX = "see docs/policies.md for each policy's settings"


class PolicyConfigFileError(HybridGpuError):
    """The ``--policy-pack-config`` file is unreadable or invalid (names the file, the policy and the field).

    Args:
        issues: every problem (at least one): ``file`` the config file, ``key`` the policy (and
            its field), ``code`` ``file`` (unreadable, not an object), ``config`` (an unknown
            policy or level, an entry of the wrong kind) or ``settings`` (the policy's
            settings do not validate; ``message`` is the whole
            :class:`~hybridgpu.policy.registry.PolicyConfigError` text).

    Attributes:
        issues: as given.

    The message is one line: ``<file>: <problem>; <problem>. Fix: <fix>.`` (a ``file`` issue:
    ``<file>: <problem>``).

    Raises:
        ValueError: (on construction) no issue given.
    """

    def __init__(self, issues: Sequence[Issue]):
        if not issues:
            raise ValueError("PolicyConfigFileError needs at least one issue")
        self.issues = list(issues)
        first = self.issues[0]
        if first.code == "file":
            text = f"{first.file}: {first.message}"
        else:
            parts = [i.message if i.code == "settings" or i.key is None else f"{i.key}: {i.message}" for i in self.issues]
            text = f"{first.file}: " + "; ".join(parts) + f". Fix: {first.fix}."
        super().__init__(text)


class ProgramError(HybridGpuError):
    """The project's program failed under the offline mocks (a missing mock answer, an exception
    in the program). The message is one line: the program file and line, the stack, the
    resource being registered when known, and the cause; ``__cause__`` keeps the original
    exception (``hybridgpu check --debug`` prints its traceback)."""


#: Seconds a stack's program may run under the offline mocks (``check_stacks(timeout=...)``, or the
#: ``HYBRIDGPU_CHECK_TIMEOUT`` environment variable); our largest stack runs in about a second.
DEFAULT_TIMEOUT = 120.0
TIMEOUT_ENV = "HYBRIDGPU_CHECK_TIMEOUT"


def _timeout(timeout: float | None) -> float:
    """The time limit: ``timeout``, else ``$HYBRIDGPU_CHECK_TIMEOUT``, else :data:`DEFAULT_TIMEOUT`.

    Raises:
        HybridGpuError: the environment variable is not a positive number (names it and the fix).
    """
    if timeout is not None:
        return timeout
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise HybridGpuError(f"{TIMEOUT_ENV}={text!r} is not a positive number of seconds; set it to e.g. 300 or unset it (default {DEFAULT_TIMEOUT:g})")
    return value


@dataclass(frozen=True)
class StackReport:
    """Result of checking one stack: the violations and how many resources were analyzed."""

    stack: str
    resources: int
    violations: tuple[Violation, ...]
    #: URN -> (program file, line) where the program registered the resource (its own files only).
    locations: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    #: The stack file (``<stackConfigDir>/Pulumi.<stack>.yaml``), absolute; '' when unknown.
    stack_file: str = ""
    #: (policy, URN) -> the stack-file key path the violation is fixed at (hybridgpu projects:
    #: :func:`hybridgpu.stack.sources.violation_key`); absent when nothing in the file is to blame.
    keys: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @property
    def mandatory(self) -> list[Violation]:
        """The violations that block (mandatory level)."""
        return [v for v in self.violations if v.mandatory]


def load_policy_config(path: Path | None) -> dict[str, tuple[str, dict[str, Any]]]:
    """Read a Pulumi policy-pack config file and validate every entry against its policy.

    Format (Pulumi's ``--policy-pack-config``): a JSON object; ``"all"`` may set the level of
    every policy; each policy name maps to a level string or to an object with an optional
    ``enforcementLevel`` and the policy's properties.

    Returns:
        ``{policy: (level, properties)}`` for every policy of the pack (defaults filled in).

    Raises:
        PolicyConfigFileError: unreadable JSON, an unknown policy or level, properties the Pulumi
            CLI would refuse against the pack's published config schema (``"64"`` for an integer:
            :meth:`~hybridgpu.policy.registry.PolicySpec.schema_problems`, key ``<policy>.<setting>``),
            or properties that do not match the policy's settings (every problem, as :class:`~hybridgpu.errors.Issue`).
    """
    raw: Mapping[str, Any] = {}
    label = str(path) if path is not None else "(no policy config)"
    if path is not None:
        try:
            raw = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            fix = "give a readable JSON file (Pulumi's --policy-pack-config format, docs/policies.md)"
            raise PolicyConfigFileError([Issue(label, None, f"cannot read the policy config: {exc}", fix, code="file")]) from None
        if not isinstance(raw, Mapping):
            fix = "write a JSON object whose keys are policy names (or all)"
            raise PolicyConfigFileError([Issue(label, None, "must be a JSON object of policy name -> settings", fix, code="file")])
    problems: list[Issue] = []

    def problem(key: str, message: str) -> None:
        problems.append(Issue(label, key, message, POLICY_CONFIG_FIX, code="config"))

    default_level = raw.get("all")
    if default_level is not None and default_level not in LEVELS:
        problem("all", f"level {default_level!r} is not one of {', '.join(LEVELS)}")
    for key in raw:
        if key != "all" and key not in BY_NAME:
            close = difflib.get_close_matches(str(key), list(BY_NAME), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problem(str(key), f"no such policy{hint} (policies: {', '.join(sorted(BY_NAME))})")
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
            problem(name, "must be a level string or an object")
            continue
        if level not in LEVELS:
            problem(f"{name}.enforcementLevel", f"{level!r} is not one of {', '.join(LEVELS)}")
            continue
        schema_problems = spec.schema_problems(props)  # what the Pulumi CLI would refuse
        for where, message in schema_problems:
            problem(f"{name}.{where}", message)
        if schema_problems:
            continue
        try:
            spec.parse_settings(props)
        except PolicyConfigError as exc:
            problems.append(Issue(label, name, str(exc), POLICY_CONFIG_FIX, code="settings"))
            continue
        config[name] = (level, props)
    if problems:
        raise PolicyConfigFileError(problems)
    return config


def default_provider(package: str, stack: str, project: str, values: Mapping[str, Any]) -> AnalyzerResource:
    """The default provider of ``package`` as the engine builds it and sends it to analyzers: URN
    ``urn:pulumi:<stack>::<project>::pulumi:providers:<package>::default`` (pulumi/pulumi
    ``pkg/resource/deploy/deployment.go`` ``defaultProviderURN``), inputs the stack config of the
    package's namespace with the namespace dropped, values as the strings the CLI holds
    (structured values JSON-encoded, e.g. ``aws:defaultTags``)."""
    prefix = f"{package}:"
    strings = pulumi_config_strings({k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)})
    typ = f"pulumi:providers:{package}"
    return AnalyzerResource(type=typ, name="default", urn=f"urn:pulumi:{stack}::{project}::{typ}::default", properties=strings)


def _wire(record: Any) -> Any:
    """A record's inputs as the engine sends them to analyzers: the wire form (secrets marked) with
    resource references replaced by ids and URNs (:func:`~hybridgpu.shell.preview.without_resource_references`:
    the CLI marshals analyzer inputs without ``KeepResources``, and ``pulumi_policy`` cannot read a reference)."""
    return without_resource_references(record.wire) if record.wire is not None else record.inputs


def _analyzer_resources(records: Sequence[Any], preview: PreviewResult | None = None) -> list[AnalyzerResource]:
    """The records as the engine sends them to analyzers: each custom resource with its provider
    (explicit, or the package's default provider built from the stack config) and its property
    dependencies; resource references in the inputs become ids and URNs (:func:`_wire`)."""
    by_urn = {r.urn: r for r in records}
    defaults: dict[str, AnalyzerResource] = {}
    out: list[AnalyzerResource] = []
    for r in records:
        provider = None
        if r.provider:
            p = by_urn.get(r.provider.rsplit("::", 1)[0])
            if p is not None:
                provider = AnalyzerResource(type=p.type, name=p.name, urn=p.urn, properties=_wire(p))
        elif preview is not None and r.custom and not r.type.startswith("pulumi:"):
            package = r.type.split(":", 1)[0]
            if package not in defaults:
                defaults[package] = default_provider(package, preview.stack, preview.project, preview.values)
            provider = defaults[package]
        out.append(
            AnalyzerResource(
                type=r.type, name=r.name, urn=r.urn,
                properties=_wire(r),
                parent=r.parent or "", dependencies=tuple(r.dependencies), provider=provider,
                property_dependencies={k: tuple(v) for k, v in getattr(r, "property_dependencies", {}).items()},
            )
        )
    return out


def analyze_resources(analyzer: Analyzer, stack: str, resources: Sequence[AnalyzerResource], project: str = PROJECT) -> StackReport:
    """Put ``resources`` through a running pack: ``Analyze`` each, then ``AnalyzeStack``."""
    analyzer.configure_stack(project=project, stack=stack)
    violations = analyzer.analyze_each(resources) + analyzer.analyze_stack(resources)
    return StackReport(stack, len(resources), tuple(violations))


def check_stacks(
    stacks: Sequence[str],
    root: Path,
    *,
    pack_dir: Path | None = None,
    config_file: Path | None = None,
    first_preview: bool = False,
    analyzer: Analyzer | None = None,
    timeout: float | None = None,
    opaque_components: str = "mandatory",
) -> list[StackReport]:
    """Check stacks offline against the policy pack.

    Works on any Pulumi Python project: the project name comes from its ``Pulumi.yaml``, and
    hybridgpu's own stack validation runs only when the project is hybridgpu's
    (:func:`is_hybridgpu_project`); other projects' stack files are read as the CLI reads them.

    Args:
        stacks: stack names (``<stackConfigDir>/Pulumi.<stack>.yaml``).
        root: the Pulumi project directory (the program that runs is the one its ``Pulumi.yaml``
            names: ``main``, else ``__main__.py``; :func:`_entrypoint`).
        pack_dir: the policy pack (default: the one installed with hybridgpu, :data:`hybridgpu.shell.policy.pack.PACK_DIR`,
            whatever ``root`` holds).
        config_file: a ``--policy-pack-config`` JSON file (default: the policies' defaults).
        first_preview: check what the first ``pulumi preview`` of a not yet deployed stack sends
            (every computed value unknown), where fail-closed policies would block.
        analyzer: a pack already running (reused, e.g. across many projects); default: start
            ``pack_dir`` for this call and stop it afterwards.
        timeout: seconds each stack's program may run (default :func:`_timeout`: ``$HYBRIDGPU_CHECK_TIMEOUT``
            or :data:`DEFAULT_TIMEOUT`); the pack this call started is stopped on every way out
            (a failure, a timeout, Ctrl-C).
        opaque_components: the level (``mandatory`` or ``advisory``) of the ``offline-opaque-component``
            finding for each remote component whose children the offline run cannot see
            (:func:`opaque_findings`).

    Returns:
        One :class:`StackReport` per stack, in order.

    Raises:
        PolicyConfigFileError: a bad policy config (before any stack runs).
        StackConfigError / StackFileError: a stack's config is invalid, or ``Pulumi.yaml`` is not a
            Python project's, names a ``main`` or a virtualenv that does not exist (before the pack starts).
        StackOutputsError: the ``--stack-outputs`` file in force is malformed (raised by the CLI's
            :func:`~hybridgpu.shell.references.stack_outputs_from`).
        ProgramError: the program failed under the mocks (one line: file, stack, cause; a module in
            neither environment is named with the fix), exited
            with a non-zero code (``sys.exit(n)``, as the CLI fails the update), did not finish
            within the time limit, or registered no resource (nothing would be checked).
        AnalyzerError: the pack did not start or failed.
    """
    config = load_policy_config(config_file)
    limit = _timeout(timeout)
    project = project_name(root)
    program = _entrypoint(root)
    if is_hybridgpu_project(root):
        loaded = [load_stack(name, root) for name in stacks]  # every stack file is sound before any program runs
        runs: list[dict[str, Any]] = [dict(stack=s.config.stack, loaded=s) for s in loaded]
    else:
        if program is None:
            raise ProgramError(f"{root}: no __main__.py and no `main:` in Pulumi.yaml; hybridgpu check runs Pulumi Python projects (runtime: python)")
        directory = stack_config_dir(root)
        runs = [dict(stack=name, raw=read_stack_file(directory / f"Pulumi.{name}.yaml", root=root)) for name in stacks]
    if analyzer is not None:
        previews = [_preview(root, program, first_preview, project, limit, **run) for run in runs]
        return check_previews(previews, config, analyzer, opaque_components)
    # Start the pack (a second process: about a second of imports) while the programs run.
    starting = _StartInBackground(Path(pack_dir or PACK_DIR).resolve(), project, stacks[0] if stacks else "check")
    try:
        previews = [_preview(root, program, first_preview, project, limit, **run) for run in runs]
        with starting.result() as started:
            return check_previews(previews, config, started, opaque_components)
    finally:
        starting.close()


class _StartInBackground:
    """Start an :class:`Analyzer` on a thread; :meth:`result` waits for it (re-raising its error)."""

    def __init__(self, pack_dir: Path, project: str, stack: str):
        self._analyzer: Analyzer | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, args=(pack_dir, project, stack), daemon=True)
        self._thread.start()

    def _start(self, pack_dir: Path, project: str, stack: str) -> None:
        try:
            self._analyzer = Analyzer(pack_dir, project=project, stack=stack)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._error = exc

    def result(self) -> Analyzer:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._analyzer is not None
        return self._analyzer

    def close(self) -> None:
        """Stop the pack if it started (also when a program failed first)."""
        self._thread.join()
        if self._analyzer is not None:
            self._analyzer.close()


def check_previews(
    previews: Sequence[PreviewResult], config: Mapping[str, tuple[str, Mapping[str, Any]]], analyzer: Analyzer, opaque_components: str = "mandatory"
) -> list[StackReport]:
    """Put finished previews through a running pack (``Configure``, then each stack), and add the
    :func:`opaque_findings` of each at level ``opaque_components``.

    The resources go in URN order: the mocks record registrations in a thread-dependent order,
    and the report (which follows the order the resources are sent in) must be the same in every run.
    """
    analyzer.configure(config)
    reports = []
    for p in previews:
        report = analyze_resources(analyzer, p.stack, _analyzer_resources(sorted(p.records, key=lambda r: r.urn), p), p.project)
        found = report.violations + tuple(opaque_findings(p, opaque_components)) + tuple(getattr(p, "check_findings", ()))
        reports.append(
            StackReport(report.stack, report.resources, found, getattr(p, "check_locations", {}), getattr(p, "stack_file", ""), _config_keys(p, found))
        )
    return reports


def _config_keys(preview: PreviewResult, violations: Sequence[Violation]) -> dict[tuple[str, str], str]:
    """(policy, URN) -> the stack-file key path of each violation of a hybridgpu stack whose fix is in
    its stack file (:func:`hybridgpu.stack.sources.violation_key`); {} for other projects."""
    if preview.config is None:
        return {}
    entries = {r.urn: resource_key(preview.config, r.type, r.inputs) for r in preview.records}
    keys = {}
    for v in violations:
        key = violation_key(preview.config, v.policy, entries.get(v.urn))
        if key is not None:
            keys[(v.policy, v.urn)] = key
    return keys


def opaque_findings(preview: PreviewResult, level: str = "mandatory") -> list[Violation]:
    """One ``offline-opaque-component`` finding (:data:`~hybridgpu.shell.remote.OPAQUE_POLICY`) per
    remote component whose children the offline run could not derive (``ResourceRecord.opaque``), in
    URN order: under the real CLI its provider's ``Construct`` registers children the pack checks,
    offline nothing of them was seen (:func:`hybridgpu.shell.remote.opaque_message` says what).

    Not a pack policy (the pack would then block real previews, where the children are seen): a
    verdict of the offline check, at ``level`` (``mandatory`` blocks, ``advisory`` is printed).
    """
    return [
        Violation(
            stack=preview.stack, policy=OPAQUE_POLICY, level=level, message=opaque_message(r.type, r.name, r.inputs, r.opaque),
            urn=r.urn, type=r.type, name=r.name,
        )
        for r in sorted(preview.records, key=lambda r: r.urn)
        if getattr(r, "opaque", "")
    ]


def is_hybridgpu_project(root: Path) -> bool:
    """True when ``root`` is a hybridgpu project: its ``Pulumi.yaml`` names the project
    ``hybridgpu`` (the namespace hybridgpu's program reads its config from), so its stack files
    get hybridgpu's validation before the program runs."""
    return project_name(root) == PROJECT


def _preview(root: Path, program: Any, first_preview: bool, project: str, timeout: float | None = None, *, stack: str, **kwargs: Any) -> PreviewResult:
    """One offline preview; a failing program becomes a one-line :class:`ProgramError`, and so do
    a non-zero ``sys.exit``, a run longer than ``timeout`` seconds and a run that registers no
    resource (fail closed: nothing would be checked)."""
    main = getattr(program, "file", None) or root / "__main__.py"
    try:
        environment = program.environment() if isinstance(program, ProjectProgram) else contextlib.nullcontext()
        with watch_references(unknown_when_unanswered="raw" in kwargs) as watch, environment:
            # The program's own prints go to stderr: stdout carries the report (`--format json`
            # must parse). Both modes are dry runs, as `pulumi preview` is.
            with contextlib.redirect_stdout(sys.stderr):
                result = run_preview(
                    stack, root, program=program, first_preview=first_preview, project=project, timeout=timeout, dry_run=True, **kwargs
                )
    except HybridGpuError:
        raise
    except PreviewTimeoutError as exc:
        raise ProgramError(
            f"{main}: stack {stack}: the program did not finish within {exc.seconds:g} s under the offline mocks "
            f"(it waits on something the mocks never answer, or loops); nothing was checked. Fix: run it with --debug "
            f"to see where it waits, or raise the limit with {TIMEOUT_ENV}"
        ) from exc
    except ProgramExit as exc:
        why = f" ({exc.message})" if exc.message else ""
        raise ProgramError(
            f"{main}: stack {stack}: the program exited with non-zero exit code: {exc.code}{why}; "
            "the Pulumi CLI fails the preview (Program exited with non-zero exit code), so nothing was checked"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - any failure of the user's program is reported, not a crash
        missing = missing_module(exc)
        if missing is not None and missing.name:
            where = _program_failure(root, stack, exc, main).split(": stack ", 1)[0]
            raise ProgramError(
                f"{where}: stack {stack}: the program imports {missing.name!r}, which is neither installed with hybridgpu "
                f"nor in the project's virtualenv ({getattr(program, 'venv', None) or 'none configured in Pulumi.yaml'}). "
                f"Fix: {missing_module_fix(program, missing.name)}"
            ) from exc
        raise ProgramError(_program_failure(root, stack, exc, main)) from exc
    if not result.records:
        raise ProgramError(
            f"{main}: stack {stack}: the program registered 0 resources under the offline mocks: nothing was checked. "
            "Fix: check that the stack's config selects what the program creates"
        )
    result.check_findings = reference_findings(result, watch)  # type: ignore[attr-defined]  # read by check_previews
    result.stack_file = str((stack_config_dir(root) / f"Pulumi.{stack}.yaml").resolve())  # type: ignore[attr-defined]
    created = {  # where each unanswered StackReference was created: its finding is shown there
        engine_urn(stack, project, "", STACK_REFERENCE_TYPE, name): (Path(file).resolve().as_uri(), line) for name, file, line in watch.created.values()
    }
    result.check_locations = _locations(result, root, program, created)  # type: ignore[attr-defined]
    return result


def _locations(preview: PreviewResult, root: Path, program: Any, extra: Mapping[str, tuple[str, int]] | None = None) -> dict[str, tuple[str, int]]:
    """URN -> (file, line) of each registration whose ``sourcePosition`` (a ``file://`` URI) lies in the
    project's own files: inside ``root``, but not in its virtualenv, the interpreter's environment or
    hybridgpu's package (a resource a library registers is driven by the stack's config: shown on the
    stack file); ``extra``: more ``URN -> (URI, line)`` (where unanswered stack references were created)."""
    inside = root.resolve()
    outside = [Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, Path(__file__).parents[2])]
    if getattr(program, "venv", None) is not None:
        outside.append(Path(program.venv).resolve())
    cache: dict[str, str | None] = {}
    found: dict[str, tuple[str, int]] = {}
    positions = [(r.urn, getattr(r, "source_uri", ""), getattr(r, "source_line", 0)) for r in preview.records]
    for urn, uri, line in positions + [(u, *where) for u, where in (extra or {}).items()]:
        if not uri or not line:
            continue
        if uri not in cache:
            parsed = urllib.parse.urlparse(uri)
            path = Path(urllib.request.url2pathname(parsed.path)).resolve() if parsed.scheme == "file" else None
            ok = path is not None and path.is_relative_to(inside) and not any(path.is_relative_to(o) for o in outside)
            cache[uri] = str(path) if ok else None
        shown = cache[uri]
        if shown is not None:
            found[urn] = (shown, int(line))
    return found


def reference_findings(preview: PreviewResult, watch: Any) -> list[Violation]:
    """One ``offline-unknown-stack-reference`` finding (:data:`~hybridgpu.shell.references.UNKNOWN_REFERENCE_POLICY`)
    per stack reference whose outputs were unknown offline (no ``--stack-outputs`` entry), sorted by name:
    **mandatory** when a callback given to ``.apply`` on them did not run (under the Pulumi CLI the
    outputs are known and the callback runs: resources it registers were not checked), **advisory**
    otherwise (every resource was registered; only values were unknown, and the policies that need
    them fail closed on their own). Not a pack policy: under the CLI the outputs are known.
    """
    found = []
    for label in sorted(watch.unknown):
        name = watch.created[label][0] if label in watch.created else label
        level = "mandatory" if watch.skipped.get(label) else "advisory"
        found.append(
            Violation(
                stack=preview.stack, policy=UNKNOWN_REFERENCE_POLICY, level=level, message=reference_message(preview.stack, watch, label),
                urn=engine_urn(preview.stack, preview.project, "", STACK_REFERENCE_TYPE, name), type=STACK_REFERENCE_TYPE, name=name,
            )
        )
    return found


def _program_failure(root: Path, stack: str, exc: BaseException, main: Path | None = None) -> str:
    """``<file>:<line>: stack <stack>: the program failed: <Type>: <message>`` from the deepest
    traceback frame inside the project (the Pulumi runtime's frames are skipped); ``main``: the
    program file named when no frame is (default ``<root>/__main__.py``)."""
    where = str(main or root / "__main__.py")
    frames: list[traceback.FrameSummary] = list(traceback.extract_tb(exc.__traceback__))
    cause: BaseException = exc
    seen = {id(exc)}
    while (nxt := cause.__cause__ or cause.__context__) is not None and id(nxt) not in seen:  # chains can loop
        seen.add(id(nxt))
        frames = list(traceback.extract_tb(nxt.__traceback__)) + frames
        cause = nxt
    resolved = str(root.resolve())
    inside = [f for f in frames if str(Path(f.filename).resolve()).startswith(resolved)]
    if inside:
        last = inside[-1]
        where = f"{last.filename}:{last.lineno}"
        if last.line:
            where += f" ({last.line.strip()[:120]})"
    # Object reprs in the SDK's messages (``<pulumi.output.Output object at 0x7f...>``) carry an
    # address that differs between runs: dropped, so the same failure prints the same line.
    text = re.sub(r" at 0x[0-9a-fA-F]+>", ">", " ".join(str(exc).split())) or type(exc).__name__
    notes = "".join(f"; {' '.join(str(n).split())}" for n in getattr(exc, "__notes__", ()))  # e.g. derived invoke answers
    return f"{where}: stack {stack}: the program failed under the offline mocks: {type(exc).__name__}: {text[:500]}{notes}"


def _entrypoint(root: Path) -> ProjectProgram | None:
    """The project's program as the Pulumi CLI runs it (:func:`hybridgpu.shell.project.project_program`:
    ``runtime: python`` only, ``main``, the project's virtualenv importable after hybridgpu's own
    packages; hybridgpu's own project runs in hybridgpu's interpreter). ``sys.exit(0)`` ends it
    normally; a non-zero ``sys.exit`` raises :class:`ProgramExit`.

    Returns:
        The program, or None when the project sets no ``main`` and has no ``__main__.py``.

    Raises:
        StackFileError: ``Pulumi.yaml`` is invalid, its runtime is not python, its ``main`` does not
            exist, or its virtualenv does not (names the file, the field and the fix).
    """
    return project_program(root, own_environment=is_hybridgpu_project(root))


def _shown(path: str) -> str:
    """``path`` as GitHub names a file: relative to ``$GITHUB_WORKSPACE`` (the repository's checkout in a
    workflow), else to the working directory, when inside it; otherwise absolute."""
    base = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()
    where = Path(path).resolve()
    return where.relative_to(base).as_posix() if where.is_relative_to(base) else str(where)


def violation_location(report: StackReport, violation: Violation) -> tuple[str, int | None] | None:
    """Where a violation is shown: the program line that registered its resource (the registration's
    ``sourcePosition``, when that line is in the project's own files), else the stack file
    (``<stackConfigDir>/Pulumi.<stack>.yaml``: stack-level violations, and resources registered by
    library code such as hybridgpu's components, which the stack's config drives), at the line of the
    key the violation is fixed at (:func:`violation_config_key`; no line when none is known); paths as
    :func:`_shown`. None when neither is known."""
    source = report.locations.get(violation.urn) if violation.urn else None
    if source is not None:
        return _shown(source[0]), source[1]
    if report.stack_file:
        key = report.keys.get((violation.policy, violation.urn))
        return _shown(report.stack_file), config_key_line(Path(report.stack_file), key) if key else None
    return None


def violation_config_key(report: StackReport, violation: Violation) -> str | None:
    """The stack-file key path a violation is fixed at (``hybridgpu:cloud.nodePools[1].gpuLimit``), or None
    when the program registered the resource itself or nothing in the stack file is to blame."""
    if violation.urn and violation.urn in report.locations:
        return None
    return report.keys.get((violation.policy, violation.urn))


def to_json(reports: Sequence[StackReport]) -> str:
    """Reports as JSON: ``{"pack": ..., "stacks": [{"stack", "resources", "mandatory", "violations": [...]}]}``;
    each violation has the :class:`~hybridgpu.shell.policy.analyzer.Violation` fields, then ``file``,
    ``line`` (:func:`violation_location`; both null when unknown, ``line`` null on a stack file when no
    key is to blame) and ``key`` (:func:`violation_config_key`: the stack-file key path, or null)."""

    def one(report: StackReport, v: Violation) -> dict[str, Any]:
        where = violation_location(report, v)
        return {**asdict(v), "file": where[0] if where else None, "line": where[1] if where else None, "key": violation_config_key(report, v)}

    return json.dumps(
        {
            "pack": PACK_NAME,
            "stacks": [
                {"stack": r.stack, "resources": r.resources, "mandatory": len(r.mandatory), "violations": [one(r, v) for v in r.violations]}
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
    """GitHub Actions workflow commands (``::error``/``::warning``), one per violation, on the file and
    line of :func:`violation_location` (the program line that registered the resource, else the stack
    file); ``stack_file`` (``{stack}`` filled in) when a report knows neither.

    Source: GitHub Docs, "Workflow commands for GitHub Actions" (error/warning with ``file``, ``line``
    and ``title``; ``%``, CR, LF escaped in messages, also ``:`` and ``,`` in properties), 2025.
    """
    lines = []
    for report in reports:
        for v in report.violations:
            kind = "error" if v.level == "mandatory" else "warning"
            what = f"{v.type} {v.name}" if v.name else "stack"
            title = _escape(f"{PACK_NAME}/{v.policy} ({what})", prop=True)
            where = violation_location(report, v) or (stack_file.format(stack=report.stack), None)
            place = f"file={_escape(where[0], prop=True)}" + (f",line={where[1]}" if where[1] else "")
            lines.append(f"::{kind} {place},title={title}::{_escape(v.message)}")
    return "\n".join(lines)


_LEADING_FILE = re.compile(r"^(?P<file>[^\s:]+)(?::(?P<line>\d+))?(?=[:\s])")


def error_annotations(exc: BaseException, root: Path | None) -> str:
    """``::error`` workflow commands for a check that could not run (exit 2), so the pull request
    shows the cause where it is: each :class:`~hybridgpu.errors.Issue` of a stack config error on its
    stack file, at the line of its config key (:func:`~hybridgpu.stack.files.config_key_line`); any
    other error on the file (and line) its message starts with (``Pulumi.yaml``, the program line),
    else without a file. Paths as :func:`_shown`."""
    title = _escape("hybridgpu check (could not run)", prop=True)
    if root is None:
        with contextlib.suppress(HybridGpuError):
            root = find_project_root()
    lines = []
    for issue in getattr(exc, "issues", None) or ():
        path = Path(issue.file)
        if not path.is_absolute() and root is not None:
            path = root / path
        line = config_key_line(path, issue.key) if issue.key and path.is_file() else None
        place = f"file={_escape(_shown(str(path)), prop=True)}" + (f",line={line}" if line else "") if path.is_file() else ""
        text = f"{issue.where}: {issue.message}. Fix: {issue.fix}"
        lines.append(f"::error {place + ',' if place else ''}title={title}::{_escape(text)}")
    if lines:
        return "\n".join(lines)
    text = " ".join(str(exc).split())
    match = _LEADING_FILE.match(text)
    place = ""
    if match and Path(match["file"]).is_file():
        place = f"file={_escape(_shown(match['file']), prop=True)}" + (f",line={match['line']}" if match["line"] else "") + ","
    return f"::error {place}title={title}::{_escape(text)}"
