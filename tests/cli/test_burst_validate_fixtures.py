"""What a real Kueue 0.19 deployment needs, refused or accepted end to end by `hybridgpu validate` (issue 15).

Each case edits the example burst plan (stacks/burst/site-a.yaml) or a stack taking part in it,
the way a user would, and runs ``hybridgpu validate <stack>`` through the CLI. Verdicts:

* frameworks (point 1): Kueue v0.19.2 builds a MultiKueue adapter for every enabled integration
  (kubernetes-sigs/kueue ``cmd/kueue/main.go``, ``jobframework.GetMultiKueueAdapters``); a worker
  without the integration's CRD fails the connection (``pkg/controller/admissionchecks/multikueue/
  multikueuecluster.go``, "let's not accept this for now") and nothing is dispatched
  (kubernetes-sigs/kueue#3582). The toolkit installs the charts of the frameworks in
  hybridgpu/burst/frameworks.py on every cluster (issue 30) and refuses any other (tests/burst/test_frameworks.py).
* ``kueue.version`` (point 5): the renderer writes the v0.19 Configuration
  (``incrementalDispatcherConfig``, ``quotaCheckStrategy``: ``apis/config/v1beta2/configuration_types.go``
  at v0.19.2), which Kueue decodes strictly; 0.18 has no ``incrementalDispatcherConfig``.
* reachability (point 5): the manager (stack hybrid, VPC 10.90.0.0/16) must reach the EKS worker's
  private endpoint (stack prod), i.e. lie in ``privateAccessCidrs``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers.scratch import example_plan

runner = CliRunner(env={"COLUMNS": "400"})


def _kueue(**fields: Any) -> Callable[[dict], None]:
    return lambda plan: plan.setdefault("kueue", {}).update(fields)


def _endpoint(**fields: Any) -> Callable[[dict], None]:
    return lambda config: config["hybridgpu:cloud"]["cluster"]["endpoint"].update(fields)


def _manager_vpc(cidr: str) -> Callable[[dict], None]:
    return lambda config: config["hybridgpu:cloud"]["network"]["new"].update(cidr=cidr)


def _split(plan: dict) -> None:
    plan["topology"] = "split-queues"
    plan["manager"].pop("stack")


# (case id, plan edit, {stack: stack edit}, stack validated, words every error must contain; None = accepted)
CASES: list[tuple[str, Callable[[dict], None] | None, dict[str, Callable[[dict], None]], str, tuple[str, ...] | None]] = [
    # --- must fail
    ("kubeflow-pytorch", _kueue(frameworks=["batch/job", "kubeflow.org/pytorchjob"]), {}, "onprem", ("kubeflow.org/pytorchjob",)),
    ("duplicate-framework", _kueue(frameworks=["batch/job", "batch/job"]), {}, "hybrid", ("listed twice",)),
    ("kueue-0.18", _kueue(version="0.18.3"), {}, "hybrid", ("kueue.version", "0.19.x", "0.18.3")),
    ("kueue-0.20", _kueue(version="0.20.0"), {}, "prod", ("0.19.x",)),
    ("kueue-0.14", _kueue(version="0.14.1"), {}, "onprem", ("outside the supported range",)),
    ("kueue-1.0", _kueue(version="1.0.0"), {}, "hybrid", ("kueue.version",)),
    ("prod-endpoint-without-manager-vpc", None, {"prod": _endpoint(privateAccessCidrs=["10.10.0.0/16"])}, "prod", ("Pulumi.hybrid.yaml", "Pulumi.prod.yaml", "add 10.90.0.0/16", "Transit Gateway")),
    ("same-seen-from-the-manager", None, {"prod": _endpoint(privateAccessCidrs=["10.10.0.0/16"])}, "hybrid", ("Pulumi.prod.yaml", "privateAccessCidrs", "10.90.0.0/16")),
    ("manager-vpc-moved", None, {"hybrid": _manager_vpc("10.91.0.0/16")}, "prod", ("add 10.91.0.0/16",)),
    ("private-endpoint-off", None, {"prod": _endpoint(privateAccess=False, publicAccessCidrs=["203.0.113.0/24"])}, "prod", ("private access is off", "`privateAccess: true`")),
    ("narrower-allowed-cidr", None, {"prod": _endpoint(privateAccessCidrs=["10.10.0.0/16", "10.90.0.0/24"])}, "prod", ("10.90.0.0/16",)),
    ("split-queues-onprem-manager-not-allowed", _split, {}, "onprem", ("the inventory's `management` networks 10.20.0.0/22", "Pulumi.prod.yaml", "add 10.20.0.0/22")),
    # --- must pass
    ("split-queues-onprem-manager-allowed", _split, {"prod": _endpoint(privateAccessCidrs=["10.10.0.0/16", "10.20.0.0/22"])}, "prod", None),
    ("example-hybrid", None, {}, "hybrid", None),
    ("example-prod", None, {}, "prod", None),
    ("example-onprem", None, {}, "onprem", None),
    ("batch-job-explicit", _kueue(frameworks=["batch/job"]), {}, "hybrid", None),
    # installed on every cluster since issue 30 (the JobSet, Trainer and KubeRay charts; `pod` is built in)
    ("jobset-default-of-old-main", _kueue(frameworks=["batch/job", "jobset.x-k8s.io/jobset"]), {}, "hybrid", None),
    ("jobset-only", _kueue(frameworks=["jobset.x-k8s.io/jobset"]), {}, "prod", None),
    ("ray", _kueue(frameworks=["ray.io/rayjob"]), {}, "hybrid", None),
    ("pod-integration", _kueue(frameworks=["batch/job", "pod"]), {}, "hybrid", None),
    ("kueue-0.19.0", _kueue(version="0.19.0"), {}, "prod", None),
    ("kueue-0.19.1", _kueue(version="0.19.1"), {}, "hybrid", None),
    ("kueue-0.19.9-future-patch", _kueue(version="0.19.9"), {}, "onprem", None),
    ("allowed-by-a-supernet", None, {"prod": _endpoint(privateAccessCidrs=["10.0.0.0/8"])}, "prod", None),
    ("manager-in-an-allowed-range", None, {"hybrid": _manager_vpc("10.10.0.0/16")}, "hybrid", None),
    ("onprem-untouched-by-endpoint", None, {"prod": _endpoint(privateAccessCidrs=["10.10.0.0/16"])}, "onprem", None),
]


@pytest.mark.parametrize("case,plan_edit,stack_edits,stack,words", CASES, ids=[c[0] for c in CASES])
def test_validate_verdict(scratch_project, case, plan_edit, stack_edits, stack, words):
    plan = example_plan()
    if plan_edit is not None:
        plan_edit(plan)
    root = scratch_project(plan=plan, stack_edits=stack_edits)
    result = runner.invoke(app, ["validate", stack, "--root", str(root)])
    output = " ".join(result.output.split())
    if words is None:
        assert result.exit_code == 0, output
        return
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    for word in words:
        assert word in output, (word, output)


def test_fixture_counts():
    refused = [c for c in CASES if c[4] is not None]
    accepted = [c for c in CASES if c[4] is None]
    assert len(refused) >= 10 and len(accepted) >= 10
