"""Other stacks' outputs under the offline check: ``pulumi.StackReference`` without a Pulumi service.

Under the Pulumi CLI a ``StackReference("org/proj/stack")`` (type ``pulumi:pulumi:StackReference``)
reads the referenced stack's outputs from the backend, in ``pulumi preview`` as in ``pulumi up``: its
``outputs`` are known, and a callback given to ``.apply`` on one of them runs (and may register
resources). Offline there is no backend, so:

* ``hybridgpu check --stack-outputs FILE`` gives them (:func:`load_stack_outputs`): a YAML/JSON
  mapping of referenced stack name to its outputs, ``{secret: value}`` for a secret output;
* a reference the file does not answer has **unknown** outputs in a project that is not
  hybridgpu's (hybridgpu's own program reads its burst workers' kubeconfigs, which
  :class:`hybridgpu.shell.preview.HybridMocks` answers): inputs built from them reach the pack as
  Pulumi's unknown marker, and the policies that need them fail closed. Callbacks given to
  ``.apply`` on such an unknown value do not run, so resources they would register are not seen:
  :class:`ReferenceWatch` notes each such callback (its file and line), and the check turns every
  unanswered reference into an ``offline-unknown-stack-reference`` finding, mandatory when a
  callback was skipped (resources may be missing), advisory otherwise (everything registered was
  seen; only values were unknown).

How: while a program runs, :func:`watch_references` wraps ``StackReference.__init__`` (the answered
or unknown ``outputs`` and ``secret_output_names`` replace the mock's; ``pulumi`` 3.272
``stack_reference.py`` reads only those two in ``get_output``/``require_output``/``get_output_details``)
and, for unknown references, ``Output.apply`` (a done-callback on the applied output's data notes a
callback skipped on an unknown value that depends on such a reference; ``pulumi`` 3.272 ``output.py``
``Output.apply`` skips ``func`` when the value is unknown).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml

from hybridgpu.datafile import load_yaml
from hybridgpu.errors import HybridGpuError

#: The name of the check's finding for a reference whose outputs were unknown (not a pack policy:
#: under the real CLI the outputs are known).
UNKNOWN_REFERENCE_POLICY = "offline-unknown-stack-reference"

#: The type token of a stack reference.
STACK_REFERENCE_TYPE = "pulumi:pulumi:StackReference"

_FIX = "write it as `<org>/<project>/<stack>: {<output>: <value>, <secret output>: {secret: <value>}}`"


class StackOutputsError(HybridGpuError):
    """The ``--stack-outputs`` file is unreadable or malformed (names the file, the entry and the fix)."""


@dataclass(frozen=True)
class StackOutputs:
    """One referenced stack's outputs, as given in the file.

    Attributes:
        outputs: output name -> value (secret ones unwrapped).
        secret_names: the names of the outputs given as ``{secret: value}``, sorted.
    """

    outputs: Mapping[str, Any]
    secret_names: tuple[str, ...] = ()


def load_stack_outputs(path: Path | None) -> dict[str, StackOutputs]:
    """Read a ``--stack-outputs`` file.

    Args:
        path: YAML or JSON: ``{"<org>/<project>/<stack>": {"<output>": <value>, "<secret output>":
            {"secret": <value>}}}`` (the names as the program passes them to ``StackReference``);
            None: no file.

    Returns:
        Referenced stack name -> its outputs.

    Raises:
        StackOutputsError: the file is missing, not YAML/JSON, or an entry is not of that shape.
    """
    if path is None:
        return {}
    try:
        data = load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise StackOutputsError(f"{path}: cannot read the stack outputs file: {getattr(exc, 'strerror', None) or exc}") from None
    except yaml.YAMLError as exc:
        raise StackOutputsError(f"{path}: not valid YAML/JSON: {' '.join(str(exc).split())}") from None
    data = data or {}
    if not isinstance(data, Mapping):
        raise StackOutputsError(f"{path}: expected a mapping of referenced stack name to its outputs. Fix: {_FIX}")
    out: dict[str, StackOutputs] = {}
    for name, outputs in data.items():
        if not isinstance(name, str) or not name.strip():
            raise StackOutputsError(f"{path}: key {name!r}: not a stack name. Fix: {_FIX}")
        if not isinstance(outputs, Mapping):
            raise StackOutputsError(f"{path}: {name}: expected a mapping of output name to value, got {type(outputs).__name__}. Fix: {_FIX}")
        values: dict[str, Any] = {}
        secret: list[str] = []
        for key, value in outputs.items():
            if not isinstance(key, str):
                raise StackOutputsError(f"{path}: {name}: output name {key!r} is not a string. Fix: {_FIX}")
            if isinstance(value, Mapping) and set(value) == {"secret"}:
                value = value["secret"]
                secret.append(key)
            values[key] = value
        out[name] = StackOutputs(values, tuple(sorted(secret)))
    return out


#: The stack outputs file in force (set by :func:`stack_outputs_from` around a check).
_ANSWERS: dict[str, StackOutputs] = {}


@contextlib.contextmanager
def stack_outputs_from(path: Path | None) -> Iterator[None]:
    """Use the outputs in ``path`` (:func:`load_stack_outputs`; None: no file) for the stack
    references of the programs run inside the block, and none after it.

    Raises:
        StackOutputsError: as :func:`load_stack_outputs`.
    """
    loaded = load_stack_outputs(path)
    previous = dict(_ANSWERS)
    _ANSWERS.clear()
    _ANSWERS.update(loaded)
    try:
        yield
    finally:
        _ANSWERS.clear()
        _ANSWERS.update(previous)


@dataclass
class ReferenceWatch:
    """What one program run did with stack references the file did not answer.

    Attributes:
        unknown: referenced stack name -> the output names the program asked for (sorted on read).
        skipped: referenced stack name -> ``file:line`` of each callback that did not run because
            its value depended on that reference's unknown outputs (resources it would register
            are not seen).
    """

    unknown: dict[str, set[str]] = field(default_factory=dict)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    #: referenced stack name -> (the StackReference's resource name, the file and line that created it).
    created: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    _names: dict[int, str] = field(default_factory=dict, repr=False)


async def _value(value: Any) -> Any:
    return value


def _output(resource: pulumi.Resource, value: Any, known: bool) -> pulumi.Output:
    """An output of ``resource`` with ``value`` (or unknown), as the engine's resolution makes it."""
    return pulumi.Output({resource}, _value(value), _value(known), _value(False))


def _where(func: Any) -> str:
    """``file:line`` of a callback (relative to the working directory when inside it)."""
    code = getattr(func, "__code__", None) or getattr(getattr(func, "__func__", None), "__code__", None)
    if code is None:
        return repr(func)
    name = code.co_filename
    with contextlib.suppress(ValueError):
        name = os.path.relpath(name) if Path(name).resolve().is_relative_to(Path.cwd().resolve()) else name
    return f"{name}:{code.co_firstlineno}"


def _is_sdk(func: Any) -> bool:
    """A callback of the Pulumi SDK itself (lifting ``.attr``/``[key]``, ``Output.all``/``concat``/
    ``format``, ``get_output``): it only reshapes values and never registers a resource."""
    module = getattr(func, "__module__", None) or ""
    return module == "pulumi" or module.startswith("pulumi.")


@contextlib.contextmanager
def watch_references(*, unknown_when_unanswered: bool) -> Iterator[ReferenceWatch]:
    """Answer the stack references made inside the block from the file in force
    (:func:`stack_outputs_from`); with ``unknown_when_unanswered``, give the others unknown outputs
    and note what the program did with them.

    Args:
        unknown_when_unanswered: make an unanswered reference's outputs unknown (a project that
            is not hybridgpu's); otherwise the mocks' answer stands.

    Yields:
        The :class:`ReferenceWatch` of the run (complete when the block ends).
    """
    watch = ReferenceWatch()
    cls = pulumi.StackReference
    original_init = cls.__init__
    original_get, original_require = cls.get_output, cls.require_output
    original_apply = pulumi.Output.apply
    unknown_refs: dict[pulumi.Resource, str] = {}

    def init(self: Any, name: str, stack_name: Any = None, opts: Any = None) -> None:
        original_init(self, name, stack_name, opts)
        target = stack_name if stack_name is not None else name
        answer = _ANSWERS.get(target) if isinstance(target, str) else None
        if answer is not None:
            self.outputs = _output(self, dict(answer.outputs), True)
            self.secret_output_names = _output(self, list(answer.secret_names), True)
        elif unknown_when_unanswered:
            label = target if isinstance(target, str) else f"{name} (a computed stack name)"
            watch.unknown.setdefault(label, set())
            caller = sys._getframe(1)
            watch.created.setdefault(label, (name, caller.f_code.co_filename, caller.f_lineno))
            unknown_refs[self] = label
            self.outputs = _output(self, None, False)
            self.secret_output_names = _output(self, None, False)

    def note(self: Any, output_name: Any) -> None:
        label = unknown_refs.get(self)
        if label is not None:
            watch.unknown[label].add(output_name if isinstance(output_name, str) else "(a computed name)")

    def get_output(self: Any, name: Any) -> Any:
        note(self, name)
        return original_get(self, name)

    def require_output(self: Any, name: Any) -> Any:
        note(self, name)
        return original_require(self, name)

    def apply(self: Any, func: Any, run_with_unknowns: bool = False) -> Any:
        result = original_apply(self, func, run_with_unknowns)
        if unknown_refs and not run_with_unknowns and not _is_sdk(func):
            data = self._data

            def done(future: asyncio.Future) -> None:
                if future.cancelled() or future.exception() is not None:
                    return
                resolved = future.result()
                if resolved.is_known:
                    return
                for resource in resolved.resources:
                    label = unknown_refs.get(resource)
                    if label is not None:
                        watch.skipped.setdefault(label, []).append(_where(func))

            data.add_done_callback(done)
        return result

    cls.__init__ = init  # type: ignore[method-assign]
    cls.get_output = get_output  # type: ignore[method-assign]
    cls.require_output = require_output  # type: ignore[method-assign]
    if unknown_when_unanswered:
        pulumi.Output.apply = apply  # type: ignore[method-assign]
    try:
        yield watch
    finally:
        cls.__init__ = original_init  # type: ignore[method-assign]
        cls.get_output = original_get  # type: ignore[method-assign]
        cls.require_output = original_require  # type: ignore[method-assign]
        pulumi.Output.apply = original_apply  # type: ignore[method-assign]


def reference_message(stack: str, watch: ReferenceWatch, label: str) -> str:
    """The finding's message for unanswered reference ``label``: what was unknown, what was not run, the fix."""
    read = sorted(watch.unknown.get(label, ()))
    asked = f" (outputs read: {', '.join(read)})" if read else ""
    fix = f"give its outputs with `hybridgpu check --stack-outputs FILE` ({label}: {{<output>: <value>}}; docs/policies.md)"
    skipped = sorted(set(watch.skipped.get(label, ())))
    if skipped:
        return (
            f"stack {stack}: StackReference {label}: its outputs are unknown offline{asked}, so the callbacks given to "
            f".apply on them did not run ({', '.join(skipped)}): resources they register under the Pulumi CLI were not "
            f"checked. Fix: {fix}"
        )
    return (
        f"stack {stack}: StackReference {label}: its outputs are unknown offline{asked}; every resource was registered "
        f"and inputs built from them reached the pack as unknown (policies that need them fail closed). Fix: {fix}"
    )
