"""Benchmark of the offline preview (``hybridgpu.shell.preview.run_preview``).

Prints figures; asserts nothing about time. Run from the project root::

    .venv/bin/python benchmarks/preview_bench.py [--repeat N] [--pools P] [--profile]

Sections (benchmarks/README.md explains each figure):

1/2. Wall time (``time.perf_counter``) of ``run_preview`` for each example stack
     (``stacks/Pulumi.*.yaml``) and for a generated stack ``bench<P>`` (the prod stack with its
     own pools plus generated ones, P in total, default 50; written to a temporary project
     directory): one warm-up run
     excluded, median and min of N runs, resource count, per-resource time.
3.   Our per-resource cost against Pulumi's own mock registration cost, in the same process,
     interleaved round by round. The baselines replay the ``bench<P>`` records (same URNs, type
     tokens, parents, providers, dependencies and inputs) with plain ``pulumi`` resource classes
     under the preview's own ``HybridMocks`` (the same mocks, so the same computed outputs come
     back) and the stock ``MockMonitor``, after the same runtime reset ``run_preview`` uses:
       * SDK classes (Pulumi's floor, judged against the 1.3x goal): every custom resource that
         has a generated ``pulumi_aws``/``pulumi_kubernetes``/``pulumi_command`` class is created
         with that class, and every Kubernetes kind without one (Karpenter, Kueue) with
         ``pulumi_kubernetes.apiextensions.CustomResource``: what Pulumi's SDK, its provider
         packages included, costs a program that registers these resources. Our program pays the
         same classes, so the ratio charges hybridgpu only with hybridgpu's own work;
       * SDK-shaped (a stricter lower bound, printed beside it): the same wire-level work through
         concrete subclasses created as deep in the call stack as ours and declaring the
         generated classes' properties, but without those classes' own Python (argument
         handling, ``ResourceOptions.merge``, typed-input translation), which no program using
         the provider packages avoids (until 2026-11-24, fourth session, the judged floor);
       * bare: ``pulumi.CustomResource(type, name, inputs)`` straight from the program.
     Then the same rounds again with the command line's collector thresholds
     (``hybridgpu.collector.BATCH_THRESHOLDS``) set for ours and every baseline alike: the settings
     a user's ``hybridgpu preview`` runs with. The first block (interpreter defaults) is the one
     judged against the goal.
3b.  Where our time goes: config load+validation, re-validation in the program, rendering,
     recording, mocks, and the rest (Pulumi registration driven by the program).
4.   ``--profile``: cProfile of one warm ``bench<P>`` preview (main thread plus the monitor calls
     Pulumi runs in executor threads): top 15 cumulative, top 15 own time, own time by area
     against the baseline, and the functions with the most extra own time.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import functools
import gc
import io
import platform
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pulumi
import yaml
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

import hybridgpu.shell.preview as preview_mod
from hybridgpu.catalog import load_catalog
from hybridgpu.collector import BATCH_THRESHOLDS
from hybridgpu.config.keys import PROJECT
from hybridgpu.stack.files import clear_stack_file_cache, find_project_root, list_stacks
from hybridgpu.stack.load import load_stack_config
from hybridgpu.config.models import NodePoolConfig
from hybridgpu.shell.preview import PreviewResult, ResourceRecord, _reset_runtime, run_preview
from hybridgpu.render.karpenter import resolve_instance_types

#: Families the generated stack cycles through (one family per pool).
FAMILIES = ["g4dn", "g5", "g6", "g6e", "p4d", "p4de", "p5"]
#: Capacity-type mixes the generated stack cycles through (3 is coprime with 7: every family gets every mix).
CAPACITY_MIXES = [["spot"], ["on-demand"], ["spot", "on-demand"]]
_CAP_ABBR = {"spot": "spot", "on-demand": "od", "reserved": "rsv"}

#: Goal for our per-resource time over Pulumi's mock registration time (the SDK-classes floor).
GOAL_RATIO = 1.3


# --------------------------------------------------------------------------------------------
# Generated stack
# --------------------------------------------------------------------------------------------


def generated_pools(count: int) -> list[dict[str, Any]]:
    """``count`` NodePool entries (stack-file spelling) cycling through families and capacity mixes."""
    catalog = load_catalog()
    pools = []
    for i in range(count):
        family = FAMILIES[i % len(FAMILIES)]
        caps = CAPACITY_MIXES[i % len(CAPACITY_MIXES)]
        pool: dict[str, Any] = {
            "name": f"{family}-{'-'.join(_CAP_ABBR[c] for c in caps)}-{i:02d}",
            "nodeClass": "h100",
            "capacityTypes": list(caps),
            "weight": max(1, 100 - i),
            "instanceFamilies": [family],
            "disruption": {
                "consolidationPolicy": "WhenEmpty" if i % 2 else "WhenEmptyOrUnderutilized",
                "consolidateAfter": f"{10 + i % 50}m",
            },
        }
        resolved = resolve_instance_types(NodePoolConfig.model_validate(pool), catalog)
        fewest = min(t.gpu_count for t in resolved)
        pool["gpuLimit"] = max(fewest, 8) * (1 + i % 4)
        if len(resolved) < 5:
            pool["narrowSpotReason"] = (
                f"{family} has only {len(resolved)} size(s) in the catalog; benchmark pool, jobs checkpoint."
            )
        pools.append(pool)
    return pools


def write_generated_project(src_root: Path, dest: Path, stack: str, pools: int) -> int:
    """Write ``dest/Pulumi.yaml`` (copied) and ``dest/stacks/Pulumi.<stack>.yaml``: the prod stack with ``pools`` NodePools.

    The prod stack's own pools are kept (other sections, e.g. ``hybridgpu:nvidia``, refer to them
    by name) and generated pools are appended up to ``pools`` in total. ``stacks/`` is copied
    whole (the burst plan and inventory prod refers to), and the copied burst plan names the
    generated stack where it named prod.

    Returns:
        The number of generated pools.
    """
    shutil.copy(src_root / "Pulumi.yaml", dest / "Pulumi.yaml")
    # Every file the prod stack refers to (the burst plan under stacks/burst/, which names the
    # other stacks and the on-prem inventory) must be in the temporary root too: issue 14, where
    # `make bench` exited 2 on a clean clone because only Pulumi.yaml was copied.
    shutil.copytree(src_root / "stacks", dest / "stacks", dirs_exist_ok=True)
    prod = yaml.safe_load((src_root / "stacks" / "Pulumi.prod.yaml").read_text())
    doc = copy.deepcopy(prod)
    plan_path = (doc["config"].get("hybridgpu:burst") or {}).get("plan")
    if plan_path:
        # The plan names prod as its EKS worker; the generated stack takes prod's place in the copy.
        plan = yaml.safe_load((dest / plan_path).read_text())
        if plan.get("cloud", {}).get("stack") == "prod":
            plan["cloud"]["stack"] = stack
            (dest / plan_path).write_text(yaml.safe_dump(plan, sort_keys=False))
    cloud = doc["config"]["hybridgpu:cloud"]
    kept = list(cloud.get("nodePools") or [])[:pools]
    generated = generated_pools(pools - len(kept))
    cloud["nodePools"] = kept + generated
    (dest / "stacks").mkdir(exist_ok=True)
    header = (
        f"# Generated by benchmarks/preview_bench.py: the prod stack with {pools} NodePools "
        f"({len(kept)} from prod, {len(generated)} generated).\n"
    )
    (dest / "stacks" / f"Pulumi.{stack}.yaml").write_text(header + yaml.safe_dump(doc, sort_keys=False))
    return len(generated)


# --------------------------------------------------------------------------------------------
# Baseline: bare Pulumi registration of the same resources
# --------------------------------------------------------------------------------------------


def _package(type_token: str) -> str:
    return type_token.split(":", 1)[0]


class _Custom(pulumi.CustomResource):
    """A concrete custom resource class, as generated SDK classes are (``aws.ec2.Vpc`` ...)."""

    def __init__(self, type_: str, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions):
        super().__init__(type_, name, props, opts)


class _Provider(pulumi.ProviderResource):
    """A concrete provider class, as ``aws.Provider`` / ``kubernetes.Provider`` are."""

    def __init__(self, pkg: str, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions):
        super().__init__(pkg, name, props, opts)


class _Component(pulumi.ComponentResource):
    """A concrete component class with the recorded inputs (``hybridgpu:onprem:Host`` has some)
    that registers (empty) outputs, as our components do."""

    def __init__(self, type_: str, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions):
        super().__init__(type_, name, props or None, opts)
        self.register_outputs({})


@functools.lru_cache(maxsize=None)
def sdk_class(type_token: str) -> type | None:
    """The generated ``pulumi_aws`` / ``pulumi_kubernetes`` class of a type token, if there is one.

    ``aws:ec2/subnet:Subnet`` -> ``pulumi_aws.ec2.Subnet``; ``kubernetes:helm.sh/v3:Release`` ->
    ``pulumi_kubernetes.helm.v3.Release``; ``command:remote:Command`` ->
    ``pulumi_command.remote.Command``; ``pulumi:providers:aws`` -> ``pulumi_aws.Provider``.
    Karpenter kinds have no class (the program uses ``apiextensions.CustomResource``, which
    declares nothing beyond the given fields); components are ours.
    """
    import pulumi_aws
    import pulumi_command
    import pulumi_kubernetes

    roots = {"aws": pulumi_aws, "kubernetes": pulumi_kubernetes, "command": pulumi_command}
    try:
        pkg, module, name = type_token.split(":")
    except ValueError:
        return None
    if pkg == "pulumi" and module == "providers":
        root = roots.get(name)
        return getattr(root, "Provider", None) if root else None
    root = roots.get(pkg)
    if root is None:
        return None
    parts = module.split("/")[:1] if pkg == "aws" else [p.split(".")[0] for p in module.split("/")]
    obj: Any = root
    for part in parts:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    cls = getattr(obj, name, None)
    return cls if isinstance(cls, type) else None


@functools.lru_cache(maxsize=None)
def declared_properties(type_token: str) -> tuple[str, ...]:
    """Wire names of the properties the generated class declares (its ``@pulumi.getter`` properties).

    A generated class puts every one of them into ``__props__`` (``None`` when unset), and the SDK
    makes an output (four futures and an ``Output``) and a resolver for each, so a faithful
    baseline registers them too.
    """
    cls = sdk_class(type_token)
    names: list[str] = []
    for klass in cls.__mro__ if cls else ():
        for value in vars(klass).values():
            if isinstance(value, property) and value.fget is not None and hasattr(value.fget, "_pulumi_name"):
                names.append(value.fget._pulumi_name)
    return tuple(dict.fromkeys(names))


def _props(rec: ResourceRecord, shaped: bool) -> dict[str, Any]:
    if not shaped:
        return dict(rec.inputs)
    props: dict[str, Any] = dict.fromkeys(declared_properties(rec.type))
    props.update(rec.inputs)
    return props


def _nested(depth: int, make: Callable[[], pulumi.Resource]) -> pulumi.Resource:
    """Call ``make`` ``depth`` frames deeper (our resources are built inside main() and component constructors)."""
    return make() if depth <= 0 else _nested(depth - 1, make)


@functools.lru_cache(maxsize=None)
def sdk_input_names(type_token: str) -> dict[str, str] | None:
    """Wire name -> Python keyword of the generated class's ``<Class>Args`` (its ``@pulumi.getter(name=...)``
    properties), or None when the type has no generated class (Karpenter kinds, components)."""
    cls = sdk_class(type_token)
    args_cls = getattr(sys.modules.get(cls.__module__), cls.__name__ + "Args", None) if cls is not None else None
    if args_cls is None:
        return None
    names: dict[str, str] = {}
    for klass in args_cls.__mro__:
        for attr, value in vars(klass).items():
            if isinstance(value, property) and value.fget is not None and hasattr(value.fget, "_pulumi_name"):
                names.setdefault(value.fget._pulumi_name, attr)
    return names


def _sdk_kwargs(rec: ResourceRecord) -> dict[str, Any] | None:
    """The recorded inputs as keyword arguments of the generated class (nested values keep their wire
    keys, which the SDK passes through unchanged), or None when an input has no keyword."""
    names = sdk_input_names(rec.type)
    if names is None or any(k not in names for k in rec.inputs):
        return None
    return {names[k]: v for k, v in rec.inputs.items()}


#: Inputs of ``pulumi_kubernetes.apiextensions.CustomResource`` (wire name -> keyword).
_CR_KEYWORDS = {"apiVersion": "api_version", "kind": "kind", "metadata": "metadata", "spec": "spec"}


def _custom_resource_kwargs(rec: ResourceRecord) -> dict[str, Any] | None:
    """Keyword arguments of ``pulumi_kubernetes.apiextensions.CustomResource`` for a Kubernetes kind without
    a generated class (Karpenter's NodePool and EC2NodeClass, Kueue's objects...): what a program
    written against the SDK creates them with. None for other types or other top-level fields."""
    if not rec.type.startswith("kubernetes:") or sdk_class(rec.type) is not None or not rec.custom:
        return None
    if not {"apiVersion", "kind"} <= set(rec.inputs) or any(k not in _CR_KEYWORDS for k in rec.inputs):
        return None
    return {_CR_KEYWORDS[k]: v for k, v in rec.inputs.items()}


def baseline_program(records: list[ResourceRecord], shaped: bool, sdk: bool = False) -> Callable[[], None]:
    """A program registering ``records`` again with plain Pulumi resource classes.

    Same type tokens, names, parents, explicit dependencies and inputs (as plain values). Custom
    resources of package ``aws``/``kubernetes`` get the provider resource of that package, as in
    the real program (the recording does not keep the provider reference; the program uses one
    provider per package). Components call ``register_outputs({})`` as ours do.

    ``shaped=False`` ("bare"): ``pulumi.CustomResource(...)`` etc. called directly from the
    program. The SDK then finds no concrete resource class on the stack and skips the source
    position / stack trace it attaches to each registration.

    ``shaped=True`` ("SDK-shaped"): what the generated ``pulumi_aws``/``pulumi_kubernetes`` classes
    make the SDK do, without their Python argument handling: concrete subclasses created as deep
    in the call stack as ours (one frame for main() plus one per component ancestor), so the SDK
    captures a stack trace of the same depth, and with every property the generated class
    declares (``None`` when not among the recorded inputs), so the SDK builds the same outputs.

    ``sdk=True`` ("SDK classes", with ``shaped``): every resource whose type has a generated
    ``pulumi_aws``/``pulumi_kubernetes``/``pulumi_command`` class is created with that class, the
    recorded inputs as its keyword arguments: what a minimal program written against the SDK
    pays (the class's argument handling, ``ResourceOptions.merge``, typed-input translation) on
    top of the SDK-shaped floor. The rest (Karpenter kinds, components, providers) as SDK-shaped.
    """

    def program() -> None:
        by_urn: dict[str, pulumi.Resource] = {}
        depth: dict[str, int] = {}
        providers: dict[str, pulumi.ProviderResource] = {}
        for rec in records:
            parent = by_urn.get(rec.parent)
            deps = [by_urn[d] for d in rec.dependencies if d in by_urn]
            custom_opts = pulumi.ResourceOptions(parent=parent, depends_on=deps or None)
            if rec.type.startswith("pulumi:providers:"):
                pkg = rec.type[len("pulumi:providers:") :]
                # Providers stay SDK-shaped: pulumi_kubernetes.Provider JSON-encodes some inputs
                # itself (``enableServerSideApply``), so the recorded value would be encoded twice.
                if shaped:
                    res = _nested(depth.get(rec.parent, 1), lambda: _Provider(pkg, rec.name, _props(rec, True), custom_opts))
                else:
                    res = pulumi.ProviderResource(pkg, rec.name, dict(rec.inputs), custom_opts)
                providers.setdefault(pkg, res)  # type: ignore[arg-type]
            elif rec.custom:
                custom_opts.provider = providers.get(_package(rec.type))
                kwargs = _sdk_kwargs(rec) if sdk else None
                cr_kwargs = _custom_resource_kwargs(rec) if sdk and kwargs is None else None
                if kwargs is not None:
                    cls = sdk_class(rec.type)
                    res = _nested(depth.get(rec.parent, 1), lambda: cls(rec.name, opts=custom_opts, **kwargs))
                elif cr_kwargs is not None:
                    from pulumi_kubernetes.apiextensions import CustomResource as K8sCustomResource

                    res = _nested(depth.get(rec.parent, 1), lambda: K8sCustomResource(rec.name, opts=custom_opts, **cr_kwargs))
                elif shaped:
                    res = _nested(depth.get(rec.parent, 1), lambda: _Custom(rec.type, rec.name, _props(rec, True), custom_opts))
                else:
                    res = pulumi.CustomResource(rec.type, rec.name, dict(rec.inputs), custom_opts)
            else:
                if shaped:
                    res = _nested(depth.get(rec.parent, 1), lambda: _Component(rec.type, rec.name, dict(rec.inputs), custom_opts))
                else:
                    res = pulumi.ComponentResource(rec.type, rec.name, dict(rec.inputs) or None, custom_opts)
                    res.register_outputs({})
                depth[rec.urn] = depth.get(rec.parent, 1) + 1
            by_urn[rec.urn] = res

    return program


def run_baseline(records: list[ResourceRecord], stack: str, shaped: bool = True, region: str = "us-east-1", sdk: bool = False) -> int:
    """Register ``records`` with plain resources under the preview's own mocks and the stock MockMonitor; return the count.

    The mocks are ``HybridMocks(region)``, the ones ``run_preview`` installs (the same ids, ARNs
    and computed outputs come back, so the SDK deserializes the same state); the monitor is
    Pulumi's stock ``MockMonitor``: recording what was registered is our preview's own work.
    ``region`` is the stack's ``aws:region`` (``run_preview`` defaults to us-east-1 too).
    """
    _reset_runtime()
    monitor = pulumi_mocks.MockMonitor(preview_mod.HybridMocks(region=region))
    pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    _sync_await(run_pulumi_func(baseline_program(records, shaped, sdk)))
    _reset_runtime()
    # The Stack resource is registered too (by set_mocks) but, as in our records, not counted.
    return sum(1 for urn in monitor.resources if "::pulumi:pulumi:Stack::" not in urn)


# --------------------------------------------------------------------------------------------
# Breakdown instrumentation (installed only for the instrumented runs)
# --------------------------------------------------------------------------------------------


class PhaseTimes:
    """Accumulated seconds per phase (thread-safe)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def add(self, phase: str, seconds: float) -> None:
        with self._lock:
            self.seconds[phase] += seconds
            self.calls[phase] += 1

    def wrap(self, phase: str, fn: Callable[..., Any], clock: Callable[[], float] = time.perf_counter) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(phase, clock() - t0)

        return timed


# Phases. Main-thread phases use perf_counter; the monitor runs in Pulumi's executor threads,
# concurrently with the event loop, so its phases use the thread's CPU clock (thread_time) to
# avoid counting time spent waiting for the GIL.
PH_LOAD = "stack load+validation (load_stack, before the program)"
PH_READ = "stack read in the program (read_stack; the preloaded stack unless the config differs)"
PH_RENDER = "rendering (hybridgpu.render.* called by components)"
PH_RECORD = "recording (RecordingMonitor: the record, number normalization) [thread CPU]"
PH_MOCKS = "HybridMocks.new_resource/call [thread CPU]"
PH_STOCK = "_stock_monitor"  # internal: stock MockMonitor.RegisterResource incl. mocks
PH_MONITOR = "_monitor_total"  # internal: RecordingMonitor.RegisterResource


@contextmanager
def instrumented(times: PhaseTimes) -> Iterator[None]:
    """Patch timing wrappers into the preview, the program and the components; undo on exit.

    Rendering wrappers go into every loaded ``hybridgpu.components.*`` module (the program imports them in
    ``main()``, so run a warm-up preview first).
    """
    import hybridgpu.components.program

    patches: list[tuple[Any, str, Any]] = []

    def patch(obj: Any, name: str, value: Any) -> None:
        patches.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    patch(preview_mod, "load_stack", times.wrap(PH_LOAD, preview_mod.load_stack))
    patch(hybridgpu.components.program, "read_stack", times.wrap(PH_READ, hybridgpu.components.program.read_stack))
    component_modules = [m for n, m in sorted(sys.modules.items()) if n.startswith("hybridgpu.components.") and m is not None]
    for mod in component_modules:
        for name, value in list(vars(mod).items()):
            if callable(value) and getattr(value, "__module__", "").startswith("hybridgpu.render"):
                patch(mod, name, times.wrap(PH_RENDER, value))

    class StockTimed(pulumi_mocks.MockMonitor):
        def RegisterResource(self, request):  # noqa: N802
            t0 = time.thread_time()
            try:
                return super().RegisterResource(request)
            finally:
                times.add(PH_STOCK, time.thread_time() - t0)

    class TimedRecordingMonitor(preview_mod.RecordingMonitor, StockTimed):
        def RegisterResource(self, request):  # noqa: N802
            t0 = time.thread_time()
            try:
                return super().RegisterResource(request)
            finally:
                times.add(PH_MONITOR, time.thread_time() - t0)

    class TimedHybridMocks(preview_mod.HybridMocks):
        def new_resource(self, args):
            t0 = time.thread_time()
            try:
                return super().new_resource(args)
            finally:
                times.add(PH_MOCKS, time.thread_time() - t0)

        def call(self, args):
            t0 = time.thread_time()
            try:
                return super().call(args)
            finally:
                times.add(PH_MOCKS, time.thread_time() - t0)

    patch(preview_mod, "RecordingMonitor", TimedRecordingMonitor)
    patch(preview_mod, "HybridMocks", TimedHybridMocks)
    try:
        yield
    finally:
        for obj, name, old in reversed(patches):
            setattr(obj, name, old)


# --------------------------------------------------------------------------------------------
# Measurement helpers
# --------------------------------------------------------------------------------------------


@dataclass
class Timing:
    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)


#: Process CPU seconds (all threads) of the last :func:`timed` call: a second opinion when the
#: machine is noisy (stolen or shared CPU shows up in wall time, much less in CPU time).
LAST_CPU = [0.0]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds (perf_counter) of ``fn()`` after a full collection, and its value."""
    gc.collect()
    c0 = time.process_time()
    t0 = time.perf_counter()
    value = fn()
    wall = time.perf_counter() - t0
    LAST_CPU[0] = time.process_time() - c0
    return wall, value


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.1f} ms"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:8.0f} us"


def fresh_preview(stack: str, root: Path) -> PreviewResult:
    """``run_preview`` paying for the stack files as a new process does: the process-wide cache of
    parsed stack files (``hybridgpu.stack.files``) is emptied first, so only the re-reads within
    the one preview (the stacks a burst plan names) are saved, not the parses of earlier runs."""
    clear_stack_file_cache()
    return run_preview(stack, root=root)


def region_of(result: PreviewResult) -> str:
    """The region ``run_preview`` gave the mocks (``aws:region``, default us-east-1)."""
    return (result.config.region if result.config is not None else None) or "us-east-1"


#: The warm-up preview of :func:`measure_stack`; off in ``--smoke`` (its figures are not used).
WARM_UP = [True]


def measure_stack(stack: str, root: Path, repeat: int) -> tuple[Timing, PreviewResult]:
    if WARM_UP[0]:
        run_preview(stack, root=root)  # warm-up: imports, catalog cache, pulumi_aws modules
    samples = []
    result = None
    for _ in range(repeat):
        seconds, result = timed(lambda: fresh_preview(stack, root))
        samples.append(seconds)
    assert result is not None
    return Timing(samples), result


@dataclass
class Breakdown:
    phases: dict[str, float]  # median seconds per phase
    total: float  # median instrumented total
    rest: float  # median of (total - phases) per run
    invokes: int
    rest_over_baseline: float | None  # median over rounds of rest / baseline run of the same round


def measure_breakdown(stack: str, root: Path, repeat: int, baseline: Callable[[], Any] | None = None) -> Breakdown:
    """Instrumented runs of ``stack``; with ``baseline``, one baseline run per round for paired ratios."""
    per_phase: dict[str, list[float]] = defaultdict(list)
    totals, rests, ratios = [], [], []
    invokes = 0
    for _ in range(repeat):
        times = PhaseTimes()
        with instrumented(times):
            seconds, result = timed(lambda: fresh_preview(stack, root))
        totals.append(seconds)
        invokes = times.calls[PH_MOCKS] - len(result.records)  # new_resource once per non-Stack resource
        phases = dict(times.seconds)
        phases[PH_RECORD] = phases.pop(PH_MONITOR, 0.0) - phases.pop(PH_STOCK, 0.0)
        for key in (PH_LOAD, PH_READ, PH_RENDER, PH_RECORD, PH_MOCKS):
            per_phase[key].append(phases.get(key, 0.0))
        rest = seconds - sum(per_phase[key][-1] for key in (PH_LOAD, PH_READ, PH_RENDER, PH_RECORD, PH_MOCKS))
        rests.append(rest)
        if baseline is not None:
            ratios.append(rest / timed(baseline)[0])
    return Breakdown(
        phases={k: statistics.median(v) for k, v in per_phase.items()},
        total=statistics.median(totals),
        rest=statistics.median(rests),
        invokes=invokes,
        rest_over_baseline=statistics.median(ratios) if ratios else None,
    )


def print_stack_row(label: str, timing: Timing, count: int) -> None:
    print(
        f"  {label:<18} {count:>5}  {ms(timing.median)}  {ms(timing.min)}  {us(timing.median / count)}  {us(timing.min / count)}"
    )


def print_header() -> None:
    print(f"  {'stack':<18} {'res.':>5}  {'median':>11}  {'min':>11}  {'median/res':>11}  {'min/res':>11}")


# --------------------------------------------------------------------------------------------
# Profile
# --------------------------------------------------------------------------------------------


def _area(filename: str) -> str:
    f = filename.replace("\\", "/")
    for needle, area in (
        ("/hybridgpu/components/", "hybridgpu.components (our program)"),
        ("/hybridgpu/shell/preview", "hybridgpu.shell.preview (mocks, recording)"),
        ("/hybridgpu/render/", "hybridgpu.render"),
        ("/hybridgpu/config/", "hybridgpu.config"),
        ("/hybridgpu/stack/", "hybridgpu.stack"),
        ("/hybridgpu/catalog/", "hybridgpu.catalog"),
        ("/pulumi_aws/", "pulumi_aws (generated classes)"),
        ("/pulumi_kubernetes/", "pulumi_kubernetes (generated classes)"),
        ("/pulumi/runtime/rpc", "pulumi.runtime.rpc (serialize/deserialize)"),
        ("/pulumi/runtime/", "pulumi.runtime (other)"),
        ("/pulumi/", "pulumi (resource, output)"),
        ("/google/protobuf/", "protobuf"),
        ("/pydantic", "pydantic"),
        ("/yaml/", "yaml"),
        ("/asyncio/", "asyncio"),
        ("/concurrent/", "concurrent.futures"),
        ("/threading.py", "threading"),
    ):
        if needle in f:
            return area
    if f.startswith("~") or f == "":
        return "builtins/C"
    return "other python"


@contextmanager
def profiling_all_threads() -> Iterator[Callable[[], pstats.Stats]]:
    """cProfile the main thread and every monitor call Pulumi runs in its executor threads.

    cProfile only sees the thread that enabled it, and Pulumi calls the (mock) monitor from
    ``loop.run_in_executor`` worker threads, so the monitor's gRPC-style methods are wrapped to run
    under a per-call profiler (the outermost call per thread only); everything is merged at the end.
    Yields a function returning the merged :class:`pstats.Stats`.
    """
    lock = threading.Lock()
    local = threading.local()
    profiles: list[cProfile.Profile] = []
    main_prof = cProfile.Profile()

    def profiled(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(self: Any, request: Any) -> Any:
            if threading.current_thread() is threading.main_thread() or getattr(local, "active", False):
                return method(self, request)
            prof = cProfile.Profile()
            local.active = True
            prof.enable()
            try:
                return method(self, request)
            finally:
                prof.disable()
                local.active = False
                with lock:
                    profiles.append(prof)

        return wrapper

    patched = []
    for cls in (pulumi_mocks.MockMonitor, preview_mod.RecordingMonitor):
        for name in ("RegisterResource", "Invoke", "RegisterResourceOutputs"):
            if name in vars(cls):
                patched.append((cls, name, vars(cls)[name]))
                setattr(cls, name, profiled(vars(cls)[name]))

    def merged() -> pstats.Stats:
        stats = pstats.Stats(main_prof, stream=io.StringIO())
        for prof in profiles:
            stats.add(prof)
        return stats

    main_prof.enable()
    try:
        yield merged
    finally:
        main_prof.disable()
        for cls, name, method in reversed(patched):
            setattr(cls, name, method)


def _own_time_by_area(stats: pstats.Stats) -> dict[str, float]:
    by_area: dict[str, float] = defaultdict(float)
    for (filename, _line, _func), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        by_area[_area(filename)] += tt
    return by_area


def run_profile(stack: str, root: Path, top: int = 15) -> None:
    """cProfile one warm preview of ``stack`` (all threads) and, for comparison, one warm baseline run."""
    result = run_preview(stack, root=root)  # warm
    run_baseline(result.records, stack, region=region_of(result))
    # A long GIL switch interval keeps the profiler from charging the main thread's waits for the
    # GIL (while a monitor thread runs) to whatever function it happened to be in.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        _profile_pair(stack, root, result.records, top, region_of(result))
    finally:
        sys.setswitchinterval(switch)


def _profile_pair(stack: str, root: Path, records: list[ResourceRecord], top: int, region: str = "us-east-1") -> None:
    gc.collect()
    clear_stack_file_cache()
    t0 = time.perf_counter()
    with profiling_all_threads() as ours_stats:
        result = run_preview(stack, root=root)
    wall = time.perf_counter() - t0
    gc.collect()
    t0 = time.perf_counter()
    with profiling_all_threads() as base_stats:
        run_baseline(records, stack, region=region)
    base_wall = time.perf_counter() - t0
    stats, bstats = ours_stats(), base_stats()

    print(f"\n== 4. cProfile of one warm preview of {stack} ({len(result.records)} resources; {ms(wall).strip()} under the profiler,")
    print(f"   baseline {ms(base_wall).strip()}). Main thread + monitor calls in executor threads, merged: thread times overlap")
    print("   the main thread's, and the profiler inflates Python-heavy code several times, so read proportions, not ms.")
    print("   (GIL switch interval set to 1 s while profiling, so waits for the GIL are not charged to random functions.)")
    for sort, title in (("cumulative", "cumulative time"), ("tottime", "own time")):
        buf = io.StringIO()
        stats.stream = buf  # type: ignore[attr-defined]
        stats.sort_stats(sort).print_stats(top)
        text = buf.getvalue()
        start = text.find("   ncalls")
        print(f"\n-- ours: top {top} by {title}")
        print(text[start:].rstrip() if start >= 0 else text.rstrip())

    ours_area, base_area = _own_time_by_area(stats), _own_time_by_area(bstats)
    ours_total, base_total = sum(ours_area.values()), sum(base_area.values())
    print("\n-- own time by area, ours vs baseline (profiled ms, all threads)")
    print(f"  {'area':<45} {'ours':>11}  {'baseline':>11}  {'extra':>11}")
    for area in sorted(set(ours_area) | set(base_area), key=lambda a: -(ours_area.get(a, 0) - base_area.get(a, 0))):
        o, b = ours_area.get(area, 0.0), base_area.get(area, 0.0)
        print(f"  {area:<45} {ms(o)}  {ms(b)}  {ms(o - b)}")
    print(f"  {'total':<45} {ms(ours_total)}  {ms(base_total)}  {ms(ours_total - base_total)}")

    # The functions whose own time grew most over the baseline: where the extra goes.
    ours_own = {k: v[2] for k, v in stats.stats.items()}  # type: ignore[attr-defined]
    base_own = {k: v[2] for k, v in bstats.stats.items()}  # type: ignore[attr-defined]
    ours_calls = {k: v[1] for k, v in stats.stats.items()}  # type: ignore[attr-defined]
    base_calls = {k: v[1] for k, v in bstats.stats.items()}  # type: ignore[attr-defined]
    rows = sorted(((ours_own[k] - base_own.get(k, 0.0), k) for k in ours_own), reverse=True)[:top]
    print(f"\n-- ours vs baseline: top {top} functions by extra own time (profiled ms; calls ours/baseline)")
    for extra, key in rows:
        filename, line, func = key
        print(f"  {ms(extra)}  {ours_calls[key]:>7}/{base_calls.get(key, 0):<7} {_short(filename)}:{line}({func})")


def _short(filename: str) -> str:
    """Path of a profiled file relative to site-packages, the project or the stdlib."""
    import re

    project = re.escape(str(Path(__file__).resolve().parents[1])) + "/"
    for pattern in (r".*/site-packages/", project, r".*/lib/python3\.\d+/"):
        short = re.sub(pattern, "", filename, count=1)
        if short != filename:
            return short
    return filename


def interleaved_rounds(
    records: list[ResourceRecord], stack: str, root: Path, region: str, repeat: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``repeat`` rounds of ours then each baseline (SDK-shaped, SDK classes, bare), each after a full
    collection (:func:`timed`): wall seconds and process CPU seconds per run, keyed ours/shaped/sdk/bare."""
    n = len(records)
    samples: dict[str, list[float]] = {"ours": [], "shaped": [], "sdk": [], "bare": []}
    cpu: dict[str, list[float]] = {"ours": [], "shaped": [], "sdk": [], "bare": []}
    for _ in range(repeat):
        samples["ours"].append(timed(lambda: fresh_preview(stack, root))[0])
        cpu["ours"].append(LAST_CPU[0])
        for key, shaped, sdk in (("shaped", True, False), ("sdk", True, True), ("bare", False, False)):
            seconds, count = timed(lambda: run_baseline(records, stack, shaped=shaped, region=region, sdk=sdk))
            samples[key].append(seconds)
            cpu[key].append(LAST_CPU[0])
            if count != n:
                print(f"  warning: baseline ({key}) registered {count} resources, ours {n}")
    return samples, cpu


def print_ratios(samples: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    """Ours over each baseline: the median of the paired rounds' ratios, with the ratio of medians, of
    minimums and of process CPU time beside it; the SDK-classes floor's is judged against :data:`GOAL_RATIO`."""
    ours = Timing(samples["ours"])
    for label, key in (("SDK classes", "sdk"), ("SDK-shaped", "shaped"), ("bare", "bare")):
        t = Timing(samples[key])
        paired = statistics.median(a / b for a, b in zip(ours.samples, t.samples))
        paired_cpu = statistics.median(a / b for a, b in zip(cpu["ours"], cpu[key]))
        if key == "sdk":
            verdict = f"goal <= {GOAL_RATIO}x: " + ("within goal" if paired <= GOAL_RATIO else "ABOVE goal")
        else:
            verdict = "(reference: " + ("stricter lower bound)" if key == "shaped" else "SDK minimum, no source positions)")
        print(
            f"  ours / {label + ' baseline:':<24} {paired:.3f}x (median of paired rounds; medians {ours.median / t.median:.2f}x,"
            f" mins {ours.min / t.min:.2f}x; process CPU time {paired_cpu:.2f}x)  {verdict}"
        )


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure after one warm-up (default 5)")
    parser.add_argument("--pools", type=int, default=50, help="NodePools in the generated stack (default 50)")
    parser.add_argument("--profile", action="store_true", help="also cProfile one generated-stack preview and print the top entries")
    parser.add_argument("--profile-only", action="store_true", help="only the profile (skip the timings)")
    parser.add_argument("--smoke", action="store_true", help="one repeat, small sizes: checks the script still runs (tests/test_benchmarks.py); figures come from full runs")
    args = parser.parse_args(argv)
    # --smoke previews one example stack (dev) besides the generated one: the code path, not the figures.
    stacks = list_stacks(find_project_root(Path(__file__).resolve().parent))
    if args.smoke:
        args.repeat, args.pools = 1, 6
        WARM_UP[0] = False
        stacks = stacks[:1]
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    root = find_project_root(Path(__file__).resolve().parent)
    gen_stack = f"bench{args.pools}"
    print(
        f"hybridgpu offline preview benchmark - python {platform.python_version()}, pulumi {pulumi_version()}, "
        f"{platform.machine()}, {_cpu_count()} CPU(s); repeat={args.repeat} after 1 warm-up run"
    )

    with tempfile.TemporaryDirectory(prefix="hybridgpu-bench-") as tmp:
        gen_root = Path(tmp)
        generated = write_generated_project(root, gen_root, gen_stack, args.pools)
        config, _values = load_stack_config(gen_stack, gen_root)  # fail early (and loudly) if the generated stack is invalid
        assert config.cloud is not None
        print(
            f"generated stack {gen_stack}: {len(config.cloud.node_pools)} NodePools ({len(config.cloud.node_pools) - generated} from prod,"
            f" {generated} generated) in {gen_root}/stacks/Pulumi.{gen_stack}.yaml"
        )

        if args.profile_only:
            run_profile(gen_stack, gen_root)
            return 0

        # 1 + 2: wall time per stack
        print("\n== 1/2. run_preview wall time (perf_counter; warm-up excluded)")
        print_header()
        results: dict[str, PreviewResult] = {}
        for stack in stacks:
            timing, result = measure_stack(stack, root, args.repeat)
            results[stack] = result
            print_stack_row(stack, timing, len(result.records))
        gen_timing, gen_result = measure_stack(gen_stack, gen_root, args.repeat)
        results[gen_stack] = gen_result
        print_stack_row(gen_stack, gen_timing, len(gen_result.records))

        # 3: ours vs bare Pulumi registration, interleaved in the same process
        records = gen_result.records
        n = len(records)
        kinds: dict[str, int] = defaultdict(int)
        for r in records:
            kinds["provider" if r.type.startswith("pulumi:providers:") else "custom" if r.custom else "component"] += 1
        resolved = sum(1 for r in records if declared_properties(r.type))
        region = region_of(gen_result)
        run_baseline(records, gen_stack, shaped=True, region=region)  # warm-up
        run_baseline(records, gen_stack, shaped=False, region=region)
        run_baseline(records, gen_stack, shaped=True, region=region, sdk=True)
        # What every run shares (imported modules: pulumi_aws alone is some 300k objects) goes to the
        # permanent generation, for ours and the baselines alike. Otherwise whichever run happens to
        # cross the full-collection threshold pays ~150 ms to walk those modules, and the ratio
        # measures that threshold rather than registration work (Python docs, gc.freeze).
        gc.collect()
        gc.freeze()
        samples, cpu = interleaved_rounds(records, gen_stack, gen_root, region, args.repeat)
        ours, shaped_t, bare_t, sdk_t = Timing(samples["ours"]), Timing(samples["shaped"]), Timing(samples["bare"]), Timing(samples["sdk"])
        with_class = sum(1 for r in records if r.custom and not r.type.startswith("pulumi:providers:") and _sdk_kwargs(r) is not None)
        with_cr = sum(1 for r in records if _sdk_kwargs(r) is None and _custom_resource_kwargs(r) is not None)
        print(f"\n== 3. per-resource cost, {gen_stack} ({n} resources: {dict(kinds)}), {args.repeat} interleaved rounds")
        print("  baselines register the same URNs, inputs, parents, providers and dependencies under the same HybridMocks + stock MockMonitor;")
        print(f"  SDK-shaped also declares the generated classes' properties ({resolved} resources have a pulumi_aws/kubernetes class);")
        print(
            f"  SDK classes creates {with_class} of them with their generated class (the recorded inputs as its keyword arguments)"
            f" and {with_cr} Kubernetes kinds without one (Karpenter, Kueue) with apiextensions.CustomResource"
        )
        print(f"  {'':<48} {'median':>11}  {'min':>11}  {'median/res':>11}  {'min/res':>11}")
        for label, t in (
            ("ours: run_preview", ours),
            ("baseline, SDK classes (Pulumi's floor, judged)", sdk_t),
            ("baseline, SDK-shaped (stricter lower bound)", shaped_t),
            ("baseline, bare CustomResource", bare_t),
        ):
            print(f"  {label:<48} {ms(t.median)}  {ms(t.min)}  {us(t.median / n)}  {us(t.min / n)}")
        print_ratios(samples, cpu)
        # The same rounds under the collector settings of the command line (hybridgpu.cli.entry),
        # for ours and every baseline alike: what a user's `hybridgpu preview` runs with.
        previous = gc.get_threshold()
        gc.set_threshold(*BATCH_THRESHOLDS)
        try:
            cli_samples, cli_cpu = interleaved_rounds(records, gen_stack, gen_root, region, args.repeat)
        finally:
            gc.set_threshold(*previous)
        print(f"  the same {args.repeat} rounds with the CLI's collector thresholds {BATCH_THRESHOLDS} (hybridgpu.collector) for all four:")
        print_ratios(cli_samples, cli_cpu)
        # Breakdown of our time
        print(f"\n== 3b. where our time goes (medians of {args.repeat} instrumented runs; instrumentation adds a little)")
        for stack, stack_root in [*((s, root) for s in stacks), (gen_stack, gen_root)]:
            run_preview(stack, root=stack_root)
            is_gen = stack == gen_stack
            bd = measure_breakdown(stack, stack_root, args.repeat, (lambda: run_baseline(records, gen_stack, region=region, sdk=True)) if is_gen else None)
            count = len(results[stack].records)
            print(f"  {stack}: total {ms(bd.total).strip()} ({count} resources, {bd.invokes} invokes)")
            for key in (PH_LOAD, PH_READ, PH_RENDER, PH_RECORD, PH_MOCKS):
                print(f"    {key:<68} {ms(bd.phases[key])}  {bd.phases[key] / bd.total * 100:5.1f}%")
            label = "program registration (rest: Pulumi SDK driven by components)"
            print(f"    {label:<68} {ms(bd.rest)}  {bd.rest / bd.total * 100:5.1f}%  = {us(bd.rest / count).strip()}/resource")
            if bd.rest_over_baseline is not None:
                print(f"    rest / SDK-classes floor run of the same round: {bd.rest_over_baseline:.2f}x (median of paired rounds)")

        if args.profile:
            run_profile(gen_stack, gen_root)
    return 0


def pulumi_version() -> str:
    try:
        from importlib.metadata import version

        return version("pulumi")
    except Exception:  # pragma: no cover - informational only
        return "?"


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


if __name__ == "__main__":
    sys.exit(main())
