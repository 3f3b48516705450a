"""Topology-aware EFA queues that admit from cold, static NodePools and warm buffers: `hybridgpu validate` and
`hybridgpu job check` on the example stacks (fixtures: tests/fixtures/static_capacity/cases.yaml).

Why the rules exist (read 2026-11-27):

* kubernetes-sigs/kueue v0.19.2 (commit 8eab6877): ``pkg/cache/scheduler/tas_flavor_snapshot.go`` fits a pod set
  only into topology domains built from existing nodes ("no topology domains at level: ..."), and
  ``site/content/en/docs/concepts/topology_aware_scheduling.md`` ("ClusterAutoscaler support") scales a cluster for
  TAS only through the ProvisioningRequest admission check, which Karpenter does not implement;
  ``pkg/scheduler/flavorassigner/tas_flavorassigner.go`` ``isTASImplied``: in a ClusterQueue whose flavors are all
  TAS flavors, every workload is placed by TAS, annotation or not. A suspended Job creates no pod, so Karpenter
  (which provisions for pending pods) never launches the node TAS waits for.
* kubernetes-sigs/karpenter v1.14.1 (commit 6e7eab7a): ``pkg/controllers/static/provisioning/controller.go``
  launches a static pool's ``replicas`` NodeClaims with no pod asking; ``pkg/controllers/provisioning/provisioner.go``
  ``NewScheduler`` leaves static pools out of pod-driven provisioning; ``pkg/controllers/controllers.go`` runs the
  static controllers only with the StaticCapacity gate and the CapacityBuffer controller only with its gate;
  ``pkg/controllers/disruption/emptiness.go`` keeps a node holding buffer (virtual) pods.
* aws/karpenter-provider-aws v1.14.1 ``charts/karpenter-crd/templates/karpenter.sh_nodepools.yaml``: the CEL rules on
  static pools (no ``weight``, only ``limits.nodes``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from hybridgpu.catalog import load_catalog
from hybridgpu.cli import app
from hybridgpu.config.models import CapacityBufferConfig
from hybridgpu.stack.eks_topology import eks_job_issues, eks_tas_cold_issues
from hybridgpu.stack.load import load_stack
from tests.helpers import ROOT
from tests.helpers.cases import apply_set, assert_fixture_counts, assert_verdict, case_ids, load_cases, runner, validate_edited

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/static_capacity/cases.yaml")
CATALOG = load_catalog()
EXAMPLE = ROOT / "docs/examples/eks-pytorchjob.yaml"


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_validate_verdict(scratch_project, case):
    assert_verdict(validate_edited(scratch_project, case["stack"], lambda config: apply_set(config, case)), case)


def test_fixture_counts():
    assert_fixture_counts(CASES)


@pytest.fixture(scope="module")
def prod():
    return load_stack("prod", ROOT)


def _job(nodes: int) -> dict[str, Any]:
    """The example 4 x 8-GPU Job with ``nodes`` ranks (pods)."""
    job = copy.deepcopy(next(d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d["kind"] == "Job"))
    job["spec"]["parallelism"] = job["spec"]["completions"] = nodes
    return job


def _cloud_with_buffer(prod, replicas: int):
    """Prod's cloud section with h100-reserved dynamic and kept warm by a buffer of ``replicas`` nodes (not validated)."""
    cloud = prod.config.cloud
    pools = [p.model_copy(update={"replicas": None, "capacity_buffer": CapacityBufferConfig(replicas=replicas)}) if p.name == "h100-reserved" else p for p in cloud.node_pools]
    return cloud.model_copy(update={"node_pools": pools})


def _job_issues(prod, cloud, job):
    worker = prod.burst_plan.clusters["prod"]
    return eks_job_issues(job, cloud, CATALOG, namespaces=worker.namespaces, prefix=prod.burst_plan.source.kueue.prefix, file="job.yaml")


def test_example_job_is_admitted_from_cold_on_prod():
    """The 4-node example reaches Kueue's TAS flavor over the static h100-reserved pool: 4 nodes exist before it is submitted."""
    result = runner.invoke(app, ["job", "check", "prod", str(EXAMPLE), "--root", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert "ok" in result.output


def test_gang_larger_than_the_warm_nodes_is_refused(prod):
    """With 2 warm nodes (a buffer), a 4-node gang never finds 4 TAS domains; a 2-node gang does."""
    cloud = _cloud_with_buffer(prod, 2)
    refused = [i for i in _job_issues(prod, cloud, _job(4)) if i.code == "tas-cold-start"]
    assert len(refused) == 1
    text = f"{refused[0].key} {refused[0].message} {refused[0].fix}"
    for word in ("32 GPUs", "4 node(s) of NodePool 'h100-reserved'", "2 node(s) from cold", "replicas: 4", "kueue.x-k8s.io/queue-name"):
        assert word in text, (word, text)
    assert not [i for i in _job_issues(prod, cloud, _job(2)) if i.code == "tas-cold-start"]


def test_cold_pool_refuses_every_job(prod):
    """A dynamic EFA pool with nothing warm: even a 1-node job waits forever (TAS is implied for a TAS-only ClusterQueue)."""
    cloud = prod.config.cloud
    pools = [p.model_copy(update={"replicas": None}) if p.name == "h100-reserved" else p for p in cloud.node_pools]
    cold = cloud.model_copy(update={"node_pools": pools})
    job = _job(1)
    del job["spec"]["template"]["metadata"]["annotations"]  # no explicit topology request
    assert "tas-cold-start" in {i.code for i in _job_issues(prod, cold, job)}
    worker = prod.burst_plan.clusters["prod"]
    stack_issues = eks_tas_cold_issues(cold, CATALOG, "stacks/Pulumi.prod.yaml", namespaces=worker.namespaces, prefix=prod.burst_plan.source.kueue.prefix)
    assert [(i.key, i.code) for i in stack_issues] == [("hybridgpu:cloud.nodePools[0]", "tas-cold-start")]
    assert "starts with no nodes" in stack_issues[0].message


def test_static_prod_pool_is_the_tas_queue_capacity(prod):
    """Prod's h100-reserved is static with as many nodes as its queue's quota holds (32 GPUs / 8 per node)."""
    pool = next(p for p in prod.config.cloud.node_pools if p.name == "h100-reserved")
    assert (pool.replicas, pool.weight, pool.gpu_limit) == (4, None, 32)
    assert prod.config.cloud.karpenter.static_capacity is True
    worker = prod.burst_plan.clusters["prod"]
    assert eks_tas_cold_issues(prod.config.cloud, CATALOG, "f", namespaces=worker.namespaces, prefix=prod.burst_plan.source.kueue.prefix) == []


def test_job_check_names_the_stack_fix(tmp_path: Path, prod):
    """`hybridgpu job check` on a 5-rank job: more than the quota and the warm nodes; both rules speak, neither traces back."""
    job = _job(5)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    result = runner.invoke(app, ["job", "check", "prod", str(path), "--root", str(ROOT)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "5 node(s)" in result.output and "4 node(s) from cold" in " ".join(result.output.split())
