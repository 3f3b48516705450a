"""Start a Pulumi policy pack's gRPC analyzer the way the Pulumi CLI does, and talk to it.

The CLI runs a Python pack as ``python -u -m pulumi.policy <engine address> <pack dir>`` with
``PULUMI_PROJECT``, ``PULUMI_STACK``, ``PULUMI_DRY_RUN`` and ``PULUMI_CONFIG`` in the
environment; the pack's ``PolicyPack(...)`` starts a gRPC server on 127.0.0.1 and prints its
port on stdout. The CLI then calls ``GetAnalyzerInfo``, ``Configure`` (the policy config),
``ConfigureStack``, ``Analyze`` for each resource and ``AnalyzeStack`` with all of them
(pulumi/pulumi ``proto/pulumi/analyzer.proto``, Pulumi 3.2xx). :class:`Analyzer` does the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from hybridgpu.errors import HybridGpuError

_LEVEL_NAMES = {
    analyzer_pb2.ADVISORY: "advisory",
    analyzer_pb2.MANDATORY: "mandatory",
    analyzer_pb2.REMEDIATE: "remediate",
    analyzer_pb2.DISABLED: "disabled",
}
_LEVEL_VALUES = {v: k for k, v in _LEVEL_NAMES.items()}
#: A large stack's AnalyzeStack request carries every resource; Pulumi allows 400 MiB messages.
_MAX_MESSAGE = 400 * 1024 * 1024
#: ``Analyze`` calls :meth:`Analyzer.analyze_each` keeps in flight (measured 2026-11-24, 358
#: resources of the four example stacks on 2 vCPUs: one at a time 1.14 s; see benchmarks/README.md).
ANALYZE_WINDOW = 32
_OPTIONS = [("grpc.max_send_message_length", _MAX_MESSAGE), ("grpc.max_receive_message_length", _MAX_MESSAGE)]


class AnalyzerError(HybridGpuError):
    """The policy pack could not be started or answered with an error (message has its stderr)."""


@dataclass(frozen=True)
class AnalyzerResource:
    """One resource to analyze: what the CLI knows about it.

    Attributes:
        type, name, urn: as registered.
        properties: the inputs as a protobuf ``Struct`` (Pulumi's wire format, secrets marked) or
            a plain dict (converted).
        parent: parent URN ('' for none).
        dependencies: URNs it depends on.
        provider: the resource's provider (type, name, urn, properties): its explicit provider, or
            the default provider the engine builds from the stack config (as the CLI sends it).
        property_dependencies: input name -> URNs its value depends on (``AnalyzeStack``).
    """

    type: str
    name: str
    urn: str
    properties: Any
    parent: str = ""
    dependencies: tuple[str, ...] = ()
    provider: AnalyzerResource | None = None
    property_dependencies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Violation:
    """One policy violation: the one type of a policy result, from the pack's answer to ``hybridgpu check``'s output.

    The validators (:mod:`hybridgpu.policy`) yield only the message; ``pulumi_policy`` carries it
    to the engine as an ``AnalyzeDiagnostic`` (policy name, level, ``description + "\\n" + message``,
    URN); :class:`Analyzer` turns each diagnostic into a ``Violation`` with the resource it is
    attributed to. ``dataclasses.asdict`` of it, in this field order, is one violation of
    ``hybridgpu check --format json``.

    Attributes:
        stack: the stack analyzed (the last :meth:`Analyzer.configure_stack`).
        policy: the policy's name.
        level: ``mandatory``, ``advisory`` (or ``remediate``, ``disabled`` from another pack).
        message: the validator's message (what is wrong and the fix), without the policy
            description ``pulumi_policy`` puts before it.
        urn: the resource ('' for the stack as a whole).
        type, name: the resource's type token and logical name ('' when ``urn`` names no
            resource that was sent).
    """

    stack: str
    policy: str
    level: str
    message: str
    urn: str
    type: str = ""
    name: str = ""

    @property
    def mandatory(self) -> bool:
        """True when the violation blocks (level ``mandatory``)."""
        return self.level == "mandatory"


def _struct(value: Any) -> struct_pb2.Struct:
    if isinstance(value, struct_pb2.Struct):
        return value
    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(value or {})))
    return s


class Analyzer:
    """A running policy pack (context manager; the process is stopped on exit).

    Args:
        pack_dir: the pack directory (holds ``PulumiPolicy.yaml`` and ``__main__.py``).
        project, stack: what ``PULUMI_PROJECT`` / ``PULUMI_STACK`` say.
        python: interpreter that has the pack's requirements (default: this one).
        timeout: seconds to wait for the pack to print its port.

    Raises:
        AnalyzerError: the pack did not start (its stderr is in the message).
    """

    def __init__(self, pack_dir: Path, *, project: str, stack: str, python: str | None = None, timeout: float = 60.0):
        self.pack_dir = Path(pack_dir).resolve()
        #: The stack the violations are attributed to (:meth:`configure_stack` changes it).
        self.stack = stack
        if not (self.pack_dir / "PulumiPolicy.yaml").is_file():
            raise AnalyzerError(f"{self.pack_dir}: not a policy pack (no PulumiPolicy.yaml)")
        env = {
            **os.environ,
            "PULUMI_PROJECT": project,
            "PULUMI_STACK": stack,
            "PULUMI_DRY_RUN": "true",
            "PULUMI_CONFIG": "{}",
            "PYTHONUNBUFFERED": "1",
        }
        self._proc = subprocess.Popen(
            [python or sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", str(self.pack_dir)],
            cwd=self.pack_dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._stderr: list[bytes] = []
        try:
            threading.Thread(target=self._drain, daemon=True).start()
            port = self._read_port(timeout)
            self._channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=_OPTIONS)
            self.stub = analyzer_pb2_grpc.AnalyzerStub(self._channel)
        except BaseException:  # a failed start (or Ctrl-C during it) leaves no pack process behind
            self.close()
            raise

    def _drain(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line)

    def _read_port(self, timeout: float) -> int:
        assert self._proc.stdout is not None
        result: list[bytes] = []
        reader = threading.Thread(target=lambda: result.append(self._proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        line = result[0].strip() if result else b""
        if not line.isdigit():
            self.close()
            stderr = b"".join(self._stderr).decode(errors="replace").strip()
            raise AnalyzerError(f"policy pack {self.pack_dir} did not start: {stderr or line.decode(errors='replace') or 'no output'}")
        return int(line)

    def __enter__(self) -> Analyzer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the pack's process (terminate; kill after 5 s) and wait for it; safe to call twice."""
        channel = getattr(self, "_channel", None)
        if channel is not None:
            channel.close()
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def _call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self.stub, method)(request)
        except grpc.RpcError as exc:
            raise AnalyzerError(f"policy pack {self.pack_dir}: {method} failed: {exc.details() if hasattr(exc, 'details') else exc}") from None

    def info(self) -> analyzer_pb2.AnalyzerInfo:
        """The pack's name, version and policies (with default levels and config schemas)."""
        return self._call("GetAnalyzerInfo", empty_pb2.Empty())

    def configure(self, config: Mapping[str, tuple[str, Mapping[str, Any]]]) -> None:
        """Send the policy config: ``{policy: (enforcement level, properties)}``."""
        request = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, (level, properties) in config.items():
            entry = analyzer_pb2.PolicyConfig(enforcementLevel=_LEVEL_VALUES[level])
            entry.properties.update(json.loads(json.dumps(dict(properties))))
            request.policyConfig[name].CopyFrom(entry)
        self._call("Configure", request)

    def configure_stack(self, *, project: str, stack: str, tags: Mapping[str, str] | None = None) -> None:
        """Tell the pack which stack it analyzes (``ConfigureStack``); later violations carry ``stack``."""
        self.stack = stack
        request = analyzer_pb2.AnalyzerStackConfigureRequest(stack=stack, project=project, organization="organization", dry_run=True)
        for k, v in (tags or {}).items():
            request.tags[k] = v
        self._call("ConfigureStack", request)

    @staticmethod
    def _provider(r: AnalyzerResource) -> analyzer_pb2.AnalyzerProviderResource | None:
        if r.provider is None:
            return None
        p = r.provider
        return analyzer_pb2.AnalyzerProviderResource(type=p.type, name=p.name, urn=p.urn, properties=_struct(p.properties))

    def _analyze_request(self, r: AnalyzerResource) -> analyzer_pb2.AnalyzeRequest:
        request = analyzer_pb2.AnalyzeRequest(
            type=r.type, name=r.name, urn=r.urn, properties=_struct(r.properties),
            options=analyzer_pb2.AnalyzerResourceOptions(parent=r.parent),
        )
        provider = self._provider(r)
        if provider is not None:
            request.provider.CopyFrom(provider)
        return request

    def analyze(self, r: AnalyzerResource) -> list[Violation]:
        """Violations of the resource policies for one resource (``Analyze``)."""
        return [self._violation(d, r.urn, {r.urn: r}) for d in self._call("Analyze", self._analyze_request(r)).diagnostics]

    def analyze_each(self, resources: Sequence[AnalyzerResource], window: int = ANALYZE_WINDOW) -> list[Violation]:
        """Violations of the resource policies for each resource (one ``Analyze`` call each), in
        the order of ``resources``: the same requests and answers as :meth:`analyze` in a loop.

        Up to ``window`` calls are in flight at once (gRPC futures), so this process builds and
        sends the next requests while the pack (a ``grpc.server`` with 4 worker threads:
        pulumi_policy 1.21 ``policy.py``) answers the previous ones, instead of each side
        waiting for the other on every call. The answers are collected in request order.

        Raises:
            AnalyzerError: a call failed (the first failure, in request order).
        """
        by_urn = {r.urn: r for r in resources}
        out: list[Violation] = []
        pending: deque[tuple[AnalyzerResource, Any]] = deque()

        def collect() -> None:
            r, future = pending.popleft()
            try:
                response = future.result()
            except grpc.RpcError as exc:
                for _, rest in pending:
                    rest.cancel()
                pending.clear()
                detail = exc.details() if hasattr(exc, "details") else exc
                raise AnalyzerError(f"policy pack {self.pack_dir}: Analyze failed: {detail}") from None
            out.extend(self._violation(d, r.urn, by_urn) for d in response.diagnostics)

        for r in resources:
            pending.append((r, self.stub.Analyze.future(self._analyze_request(r))))
            if len(pending) >= window:
                collect()
        while pending:
            collect()
        return out

    def analyze_stack(self, resources: Sequence[AnalyzerResource]) -> list[Violation]:
        """Violations of the stack policies (``AnalyzeStack`` with every resource)."""
        request = analyzer_pb2.AnalyzeStackRequest()
        for r in resources:
            item = analyzer_pb2.AnalyzerResource(
                type=r.type, name=r.name, urn=r.urn, properties=_struct(r.properties), parent=r.parent,
                dependencies=list(r.dependencies), options=analyzer_pb2.AnalyzerResourceOptions(parent=r.parent),
            )
            provider = self._provider(r)
            if provider is not None:
                item.provider.CopyFrom(provider)
            for key, urns in sorted(r.property_dependencies.items()):
                item.propertyDependencies[key].urns.extend(urns)
            request.resources.append(item)
        by_urn = {r.urn: r for r in resources}
        return [self._violation(d, "", by_urn) for d in self._call("AnalyzeStack", request).diagnostics]

    def _violation(self, d: Any, default_urn: str, by_urn: Mapping[str, AnalyzerResource]) -> Violation:
        """The :class:`Violation` of one ``AnalyzeDiagnostic`` ``d`` (URN ``default_urn`` when it names none)."""
        urn = d.urn or default_urn
        resource = by_urn.get(urn)
        return Violation(
            stack=self.stack, policy=d.policyName, level=_LEVEL_NAMES.get(d.enforcementLevel, "advisory"),
            message=_validator_message(d.message, d.description), urn=urn,
            type=resource.type if resource is not None else "", name=resource.name if resource is not None else "",
        )


def _validator_message(message: str, description: str) -> str:
    """``message`` without the ``description + "\\n"`` ``pulumi_policy`` puts before a validator's
    message (pulumi-policy 1.21 ``policy.py`` ``_create_report_violation``; the diagnostic carries
    the description on its own too); a message that does not start with it is returned whole."""
    if description and message.startswith(description + "\n"):
        return message[len(description) + 1 :]
    return message
