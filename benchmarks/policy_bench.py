"""Benchmark of the policy pack: the offline check per example stack, and analyzer throughput.

Prints figures; asserts nothing about time. Run from the project root::

    .venv/bin/python benchmarks/policy_bench.py [--repeat N] [--resources R]

Sections (benchmarks/README.md explains each figure):

1. Offline check per example stack (``hybridgpu.shell.policy.check.check_stacks`` pieces): the preview
   under mocks, then every resource through ``Analyze`` and the stack through ``AnalyzeStack``
   on an already running pack; plus the pack's start-up (process spawn, imports, gRPC server),
   which ``hybridgpu check`` pays once per run. Median of N runs after one warm-up.
2. Analyzer throughput on a generated stack of R resources (default 5,000): a mix of the types
   the policies read (AWS resources behind a provider with default tags, NodePools,
   EC2NodeClasses, GPU Jobs, ConfigMaps, remote commands, on-prem hosts). Resources per second
   through ``Analyze`` (one gRPC call each, all 17 policies; one at a time, and pipelined as
   ``hybridgpu check`` sends them) and through one ``AnalyzeStack``.
3. The whole command (issue 14's goal: ``hybridgpu check`` of every example stack in at most 5 s
   on 2 cores): ``python -m hybridgpu check`` as its own process, as a user runs it (Python
   start-up, imports, the pack's process, exit), wall time and CPU time (user + system of the
   command and the pack), median / min / max of N runs after one warm-up, with the load average.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hybridgpu.config.keys import PROJECT  # noqa: E402
from hybridgpu.stack.files import list_stacks  # noqa: E402
from hybridgpu.shell.preview import run_preview  # noqa: E402
from hybridgpu.shell.policy.analyzer import Analyzer, AnalyzerResource  # noqa: E402
from hybridgpu.shell.policy.check import _analyzer_resources, analyze_resources, load_policy_config  # noqa: E402


#: One warm-up run before the timed ones; off in --smoke (the figures are not used there).
WARM_UP = True


def timed(fn, repeat: int) -> tuple[float, object]:
    if WARM_UP:
        fn()  # warm-up
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def generated(n: int) -> list[AnalyzerResource]:
    """``n`` resources cycling through the kinds the policies read; each compliant on its own
    (together their NodePools exceed the default 256-GPU stack ceiling: one stack violation)."""
    tags = {"team": "ml", "project": "bench", "cost-center": "cc-1"}
    provider = AnalyzerResource(
        "pulumi:providers:aws", "aws", "urn:pulumi:bench::hybridgpu::pulumi:providers:aws::aws", {"region": "us-east-1", "defaultTags": '{"tags": {"team": "ml", "project": "bench", "cost-center": "cc-1"}}'}
    )

    def urn(t: str, name: str) -> str:
        return f"urn:pulumi:bench::hybridgpu::{t}::{name}"

    kinds = [
        ("aws:ec2/subnet:Subnet", lambda i: {"cidrBlock": f"10.{i % 250}.0.0/24", "vpcId": "vpc-1"}),
        ("aws:iam/role:Role", lambda i: {"assumeRolePolicy": "{}", "tags": tags}),
        ("aws:ec2/launchTemplate:LaunchTemplate", lambda i: {"instanceType": "g6.xlarge", "metadataOptions": {"httpTokens": "required"}, "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}]}),
        ("kubernetes:karpenter.sh/v1:NodePool", lambda i: {"spec": {"limits": {"nvidia.com/gpu": "1"}, "template": {"spec": {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6.xlarge", "g6.2xlarge"]}]}}}}),
        ("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", lambda i: {"spec": {"amiSelectorTerms": [{"alias": "al2023@v20261112"}], "tags": tags, "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": True}}]}}),
        ("kubernetes:batch/v1:Job", lambda i: {"spec": {"template": {"metadata": {"labels": tags}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}),
        ("kubernetes:core/v1:ConfigMap", lambda i: {"data": {"config.yaml": "version: v1\nmig-configs:\n  a:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {1g.10gb: 7}\n"}}),
        ("command:remote:Command", lambda i: {"create": "sudo bash -s", "stdin": "kubeadm join --config /etc/kubernetes/kubeadm.yaml\n" * 20}),
        ("hybridgpu:onprem:Host", lambda i: {"hostname": f"h{i}", "owner": "ml", "kubeadmConfig": "discovery:\n  bootstrapToken:\n    caCertHashes: [sha256:x]\n" * 10}),
    ]
    out = [provider]
    for i in range(n - 1):
        t, props = kinds[i % len(kinds)]
        out.append(AnalyzerResource(t, f"r{i}", urn(t, f"r{i}"), props(i), provider=provider if t.startswith("aws:") else None))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--resources", type=int, default=5000)
    parser.add_argument("--smoke", action="store_true", help="one repeat, small sizes: checks the script still runs (tests/test_benchmarks.py); figures come from full runs")
    args = parser.parse_args()
    if args.smoke:
        global WARM_UP
        args.repeat, args.resources, WARM_UP = 1, 50, False
    print(f"# policy pack benchmark  python {platform.python_version()}  {platform.machine()}  repeat={args.repeat}")
    config = load_policy_config(ROOT / "policies" / "config.example.json")

    start = time.perf_counter()
    analyzer = Analyzer(ROOT / "policies", project=PROJECT, stack="bench")
    analyzer.configure(config)
    startup = time.perf_counter() - start
    try:
        print(f"\n## 1. offline check per example stack (pack start-up, once per run: {startup * 1000:.0f} ms)")
        print(f"{'stack':10} {'resources':>9} {'preview ms':>11} {'analyze ms':>11} {'total ms':>9} {'violations':>10}")
        for stack in list_stacks(ROOT)[: 1 if args.smoke else None]:  # --smoke: one stack (the code path, not the figures)
            t_prev, preview = timed(lambda s=stack: run_preview(s, ROOT), args.repeat)
            resources = _analyzer_resources(preview.records, preview)  # with default providers, as hybridgpu check sends them
            t_an, report = timed(lambda: analyze_resources(analyzer, stack, resources, PROJECT), args.repeat)
            print(f"{stack:10} {len(resources):9d} {t_prev * 1000:11.0f} {t_an * 1000:11.0f} {(t_prev + t_an) * 1000:9.0f} {len(report.violations):10d}")  # type: ignore[attr-defined]

        print(f"\n## 2. analyzer throughput, generated stack of {args.resources} resources")
        resources = generated(args.resources)
        analyzer.configure_stack(project=PROJECT, stack="bench")

        def each() -> int:
            return sum(len(analyzer.analyze(r)) for r in resources)

        def stack_call() -> str:
            found = [d.policy for d in analyzer.analyze_stack(resources)]
            return f"{len(found)}: {', '.join(sorted(set(found)))}" if found else "0"

        def pipelined() -> int:
            return len(analyzer.analyze_each(resources))

        repeat = max(1, args.repeat // 2)
        t_each, found = timed(each, repeat)
        t_pipe, found_pipe = timed(pipelined, repeat)
        t_stack, found_stack = timed(stack_call, repeat)
        print(f"Analyze, one call per resource: {t_each:6.2f} s  {len(resources) / t_each:8.0f} resources/s  ({found} violations)")
        print(f"Analyze, pipelined (analyze_each, as hybridgpu check): {t_pipe:6.2f} s  {len(resources) / t_pipe:8.0f} resources/s  ({found_pipe} violations)")
        print(f"AnalyzeStack, one call:         {t_stack:6.2f} s  {len(resources) / t_stack:8.0f} resources/s  ({found_stack} violations)")
        print(f"both (what `pulumi preview` asks): {t_each + t_stack:6.2f} s  {len(resources) / (t_each + t_stack):8.0f} resources/s")
    finally:
        analyzer.close()
    # --smoke times `hybridgpu --version` (the timing code path; `hybridgpu check` has its own tests).
    time_command(args.repeat, ["--version"] if args.smoke else ["check"])


def time_command(repeat: int, args: list[str]) -> None:
    """``python -m hybridgpu ARGS`` (``check``: every example stack) as its own process: wall and CPU time."""
    command = [sys.executable, "-m", "hybridgpu", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRIDGPU_")}

    def once() -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"hybridgpu check exited {proc.returncode}: {proc.stderr[-2000:]}")
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    if WARM_UP:
        once()  # warm-up (bytecode caches)
    runs = [once() for _ in range(repeat)]
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    print(f"\n## 3. the whole command: {' '.join(command[1:])} in {ROOT}, {repeat} runs after {1 if WARM_UP else 0} warm-up, load average {os.getloadavg()[0]:.1f}")
    goal = f"; goal <= 5 s on 2 cores: {'met' if statistics.median(walls) <= 5 else 'NOT met'}" if args == ["check"] else ""
    print(f"wall: median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}){goal}")
    print(f"CPU (user + system, the command and the pack): median {statistics.median(cpus):.2f} s (min {min(cpus):.2f}, max {max(cpus):.2f})")


if __name__ == "__main__":
    main()
