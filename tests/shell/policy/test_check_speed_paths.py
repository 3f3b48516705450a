"""What the speed work on ``hybridgpu check`` (issue 14) must not change, tested as behaviour.

* :meth:`Analyzer.analyze_each` keeps several ``Analyze`` calls in flight; the pack answers them on
  its 4 gRPC threads. Its answers must equal one-at-a-time :meth:`Analyzer.analyze` calls, in the
  same order, on a freshly started pack (cold caches: the first run of the pipelined check dropped
  ``required-cost-tags`` on an EC2 instance, because pulumi_aws's lazily loaded submodules are not
  thread-safe on Python < 3.12.3, CPython gh-114763; ``taggable.py`` now serialises the first
  look-up per module).
* The policy validators parse quantities with the Kubernetes client's own ``parse_quantity``
  (``kubernetes/utils/quantity.py``, kubernetes 36.0.3 installed here), loaded without importing the
  ``kubernetes`` package (0.27 s of start-up): the same function, and the package stays unimported.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from hybridgpu.shell.policy.analyzer import Analyzer, AnalyzerResource
from hybridgpu.shell.policy.check import load_policy_config
from tests.helpers import ROOT
from tests.helpers.policy_cases import CASES


def _resources() -> list[AnalyzerResource]:
    """Every resource of every policy case (good and bad), as the analyzer gets them: many AWS
    types from different pulumi_aws submodules, Kubernetes objects and on-prem records."""
    out = []
    for case in CASES:
        for r in [*case.good, *case.bad]:
            provider = None
            if r.provider_props is not None:
                provider = AnalyzerResource(
                    type="pulumi:providers:aws", name="aws", urn="urn:pulumi:dev::hybridgpu::pulumi:providers:aws::aws", properties=dict(r.provider_props)
                )
            out.append(AnalyzerResource(type=r.type, name=r.name, urn=r.urn, properties=dict(r.props), provider=provider))
    return out


def test_pipelined_analyze_answers_as_one_call_at_a_time_on_a_cold_pack():
    resources = _resources()
    assert len({r.type.split(":")[1].split("/")[0] for r in resources if r.type.startswith("aws:")}) >= 4
    with Analyzer(ROOT / "policies", project="hybridgpu", stack="dev") as cold:
        cold.configure(load_policy_config(None))
        cold.configure_stack(project="hybridgpu", stack="dev")
        pipelined = cold.analyze_each(resources, window=32)
    with Analyzer(ROOT / "policies", project="hybridgpu", stack="dev") as fresh:
        fresh.configure(load_policy_config(None))
        fresh.configure_stack(project="hybridgpu", stack="dev")
        one_by_one = [d for r in resources for d in fresh.analyze(r)]
        # A window of 1 is the plain loop.
        assert fresh.analyze_each(resources, window=1) == one_by_one
    assert pipelined == one_by_one
    assert any(d.policy == "required-cost-tags" for d in one_by_one)


_TAGGABLE_RUN = textwrap.dedent(
    """
    import json, sys, threading
    from hybridgpu.shell.policy.taggable import is_taggable
    types = json.loads(sys.argv[1])
    answers = {}
    def look(t):
        answers[t] = is_taggable(t)
    if sys.argv[2] == "threads":
        threads = [threading.Thread(target=look, args=(t,)) for t in types for _ in range(4)]
        for th in threads: th.start()
        for th in threads: th.join()
    else:
        for t in types: look(t)
    print(json.dumps(answers, sort_keys=True))
    """
)


def test_taggable_answers_the_same_from_many_threads_in_a_fresh_process():
    import json

    types = [
        "aws:ec2/instance:Instance", "aws:ec2/vpc:Vpc", "aws:iam/role:Role", "aws:eks/cluster:Cluster", "aws:sqs/queue:Queue",
        "aws:kms/key:Key", "aws:cloudwatch/eventRule:EventRule", "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
        "aws:fsx/lustreFileSystem:LustreFileSystem", "aws:s3/bucket:Bucket",
    ]

    def run(mode: str) -> dict:
        proc = subprocess.run([sys.executable, "-c", _TAGGABLE_RUN, json.dumps(types), mode], capture_output=True, text=True, check=True, cwd=ROOT)
        return json.loads(proc.stdout)

    sequential = run("sequential")
    assert sequential["aws:ec2/instance:Instance"] is True and sequential["aws:eks/accessPolicyAssociation:AccessPolicyAssociation"] is False
    for _ in range(3):
        assert run("threads") == sequential


def test_quantities_are_parsed_by_the_kubernetes_client_without_importing_its_package():
    code = textwrap.dedent(
        """
        import sys
        import hybridgpu.cli.main  # the whole CLI, `hybridgpu check` included
        import hybridgpu.shell.policy.pack  # what the pack's process imports
        from hybridgpu.policy.base import parse_quantity
        assert "kubernetes" not in sys.modules, "the kubernetes package was imported"
        samples = ["1", "8", "0.5", "100m", "200Mi", "2Gi", "1.5Ti", "3k", "12E", "5n"]
        ours = [parse_quantity(s) for s in samples]
        from kubernetes.utils.quantity import parse_quantity as upstream
        assert ours == [float(upstream(s)) for s in samples], ours
        for bad in ["", " 8", "8 ", "abc", "1.5.5", "Gi", True, None, float("nan")]:
            assert parse_quantity(bad) is None, bad
        print("ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"
