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

Formats: :func:`to_json` and :func:`to_github` (workflow-command annotations that GitHub shows
on the pull request's stack file).
"""

from __future__ import annotations

import difflib
import json
import os
import runpy
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hybridgpu.config.keys import PROJECT
from hybridgpu.errors import HybridGpuError, Issue
from hybridgpu.shell.policy.analyzer import Analyzer, AnalyzerResource, Violation
from hybridgpu.policy.registry import BY_NAME, PACK_NAME, PolicyConfigError
from hybridgpu.shell.preview import PreviewResult, PreviewTimeoutError, run_preview, without_resource_references
from hybridgpu.stack.files import project_name, pulumi_config_strings, read_stack_file, stack_config_dir
from hybridgpu.stack.load import load_stack

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


class ProgramExit(Exception):
    """The program called ``sys.exit`` with a non-zero code (``code``: the exit status, 1 for a
    message, as Python exits)."""

    def __init__(self, code: int, message: str = ""):
        self.code = code
        self.message = message
        super().__init__(f"exit code {code}" + (f": {message}" if message else ""))


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
) -> list[StackReport]:
    """Check stacks offline against the policy pack.

    Works on any Pulumi Python project: the project name comes from its ``Pulumi.yaml``, and
    hybridgpu's own stack validation runs only when the project is hybridgpu's
    (:func:`is_hybridgpu_project`); other projects' stack files are read as the CLI reads them.

    Args:
        stacks: stack names (``<stackConfigDir>/Pulumi.<stack>.yaml``).
        root: the Pulumi project directory (its ``__main__.py`` is the program that runs).
        pack_dir: the policy pack (default ``<root>/policies``).
        config_file: a ``--policy-pack-config`` JSON file (default: the policies' defaults).
        first_preview: check what the first ``pulumi preview`` of a not yet deployed stack sends
            (every computed value unknown), where fail-closed policies would block.
        analyzer: a pack already running (reused, e.g. across many projects); default: start
            ``pack_dir`` for this call and stop it afterwards.
        timeout: seconds each stack's program may run (default :func:`_timeout`: ``$HYBRIDGPU_CHECK_TIMEOUT``
            or :data:`DEFAULT_TIMEOUT`); the pack this call started is stopped on every way out
            (a failure, a timeout, Ctrl-C).

    Returns:
        One :class:`StackReport` per stack, in order.

    Raises:
        PolicyConfigFileError: a bad policy config (before any stack runs).
        StackConfigError / StackFileError: a stack's config is invalid (before the pack starts).
        ProgramError: the program failed under the mocks (one line: file, stack, cause), exited
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
            raise ProgramError(f"{root}: no __main__.py; hybridgpu check runs Pulumi Python projects (runtime: python)")
        directory = stack_config_dir(root)
        runs = [dict(stack=name, raw=read_stack_file(directory / f"Pulumi.{name}.yaml", root=root)) for name in stacks]
    if analyzer is not None:
        previews = [_preview(root, program, first_preview, project, limit, **run) for run in runs]
        return check_previews(previews, config, analyzer)
    # Start the pack (a second process: about a second of imports) while the programs run.
    starting = _StartInBackground(Path(pack_dir or root / "policies").resolve(), project, stacks[0] if stacks else "check")
    try:
        previews = [_preview(root, program, first_preview, project, limit, **run) for run in runs]
        with starting.result() as started:
            return check_previews(previews, config, started)
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


def check_previews(previews: Sequence[PreviewResult], config: Mapping[str, tuple[str, Mapping[str, Any]]], analyzer: Analyzer) -> list[StackReport]:
    """Put finished previews through a running pack (``Configure``, then each stack).

    The resources go in URN order: the mocks record registrations in a thread-dependent order,
    and the report (which follows the order the resources are sent in) must be the same in every run.
    """
    analyzer.configure(config)
    return [analyze_resources(analyzer, p.stack, _analyzer_resources(sorted(p.records, key=lambda r: r.urn), p), p.project) for p in previews]


def is_hybridgpu_project(root: Path) -> bool:
    """True when ``root`` is a hybridgpu project: its ``Pulumi.yaml`` names the project
    ``hybridgpu`` (the namespace hybridgpu's program reads its config from), so its stack files
    get hybridgpu's validation before the program runs."""
    return project_name(root) == PROJECT


def _preview(root: Path, program: Any, first_preview: bool, project: str, timeout: float | None = None, *, stack: str, **kwargs: Any) -> PreviewResult:
    """One offline preview; a failing program becomes a one-line :class:`ProgramError`, and so do
    a non-zero ``sys.exit``, a run longer than ``timeout`` seconds and a run that registers no
    resource (fail closed: nothing would be checked)."""
    main = root / "__main__.py"
    try:
        result = run_preview(stack, root, program=program, first_preview=first_preview, project=project, timeout=timeout, **kwargs)
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
        raise ProgramError(_program_failure(root, stack, exc)) from exc
    if not result.records:
        raise ProgramError(
            f"{main}: stack {stack}: the program registered 0 resources under the offline mocks: nothing was checked. "
            "Fix: check that the stack's config selects what the program creates"
        )
    return result


def _program_failure(root: Path, stack: str, exc: BaseException) -> str:
    """``<file>:<line>: stack <stack>: the program failed: <Type>: <message>`` from the deepest
    traceback frame inside the project (the Pulumi runtime's frames are skipped)."""
    where = str(root / "__main__.py")
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
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{where}: stack {stack}: the program failed under the offline mocks: {type(exc).__name__}: {text[:500]}"


def _entrypoint(root: Path):
    """The project's program as Pulumi runs it: ``<root>/__main__.py`` (run by path, with the
    project directory first on ``sys.path`` as the Python language host puts it). ``sys.exit(0)``
    ends it normally; a non-zero ``sys.exit`` raises :class:`ProgramExit`."""
    main = root / "__main__.py"

    def program() -> None:
        path = str(root.resolve())
        added = path not in sys.path
        if added:
            sys.path.insert(0, path)
        # Each stack runs in a fresh language host under the CLI: the project's own modules
        # (`import vpc`) must register their resources again in every run, so they are forgotten
        # after each (a cached module would register nothing the second time).
        before = set(sys.modules)
        try:
            runpy.run_path(str(main), run_name="__main__")
        except SystemExit as exc:
            # As under the Pulumi CLI: exit status 0 ends the program normally (what it registered
            # is checked); any other status fails the run.
            if exc.code is None or exc.code == 0:
                return
            if isinstance(exc.code, int):
                raise ProgramExit(exc.code) from None
            raise ProgramExit(1, str(exc.code)) from None
        finally:
            if added and path in sys.path:
                sys.path.remove(path)
            for name in _project_modules(set(sys.modules) - before, path):
                del sys.modules[name]

    return program if main.is_file() else None


def _project_modules(names: set[str], root: str) -> list[str]:
    """The modules among ``names`` that are the project's own files: inside ``root`` but neither in
    the interpreter's environment (a ``.venv`` inside the project holds the SDKs, whose lazily
    loaded modules must stay) nor hybridgpu itself (a checkout of hybridgpu is its own project)."""
    environments = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    found = []
    for name in sorted(names):
        file = getattr(sys.modules.get(name), "__file__", None)
        if not file or name.split(".")[0] == "hybridgpu":
            continue
        try:
            where = Path(file).resolve()
        except OSError:
            continue
        if where.is_relative_to(root) and not any(where.is_relative_to(env) for env in environments):
            found.append(name)
    return found


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

