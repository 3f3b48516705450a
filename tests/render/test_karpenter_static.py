"""Static NodePools, warm buffers and their feature gates, as Karpenter v1.14.1 reads them (hybridgpu.render.karpenter_static).

Upstream (read 2026-11-27; pinned copies under ../shared/upstream/cloud and tools/schemas/crds):

* aws/karpenter-provider-aws v1.14.1 (commit 1d927085) ``charts/karpenter/values.yaml``
  ``settings.featureGates.staticCapacity`` / ``.capacityBuffer`` (alpha, false) and ``templates/deployment.yaml``
  (``FEATURE_GATES`` ``StaticCapacity=``, ``CapacityBuffer=``); ``charts/karpenter-crd/templates/
  karpenter.sh_nodepools.yaml`` (``spec.replicas``, the static-pool CEL rules) and
  ``autoscaling.x-k8s.io_capacitybuffers.yaml`` (CapacityBuffer v1beta1, its CEL rules).
* kubernetes-sigs/karpenter v1.14.1 (commit 6e7eab7a) ``pkg/controllers/static/provisioning/controller.go`` (static
  NodeClaims up to ``replicas``, capped by ``limits.nodes``), ``pkg/controllers/capacitybuffer/controller.go`` (virtual
  pods of the PodTemplate's shape, ``replicas`` of them), ``pkg/controllers/provisioning/provisioner.go``
  (``NewScheduler`` drops static pools).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hybridgpu.catalog import load_catalog
from hybridgpu.config.models import KarpenterConfig, NodePoolConfig
from hybridgpu.datafile import dump_yaml
from hybridgpu.economics.report import build_report
from hybridgpu.k8s import GPU_RESOURCE, KARPENTER_NODEPOOL_LABEL
from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.registry import POLICIES
from hybridgpu.render.karpenter import karpenter_helm_values, render_nodepool, summarize_nodepool
from hybridgpu.render.karpenter_static import CAPACITY_BUFFER_API, capacity_buffer_manifests, static_nodepool, warm_nodes
from hybridgpu.render.scheduling import NodeGroup, PodPlacement, placement_problems
from hybridgpu.schemas import validate_core, validate_crd_files
from hybridgpu.stack.load import load_stack
from tests.helpers import ROOT

UPSTREAM = ROOT.parent / "shared/upstream/cloud"
CATALOG = load_catalog()
STATIC = NodePoolConfig.model_validate(
    {"name": "h100-reserved", "nodeClass": "h100-efa", "capacityTypes": ["reserved"], "instanceTypes": ["p5.48xlarge"], "gpuLimit": 32, "replicas": 4}
)
BUFFERED = NodePoolConfig.model_validate(
    {"name": "inference", "capacityTypes": ["on-demand"], "weight": 50, "instanceTypes": ["g6e.xlarge"], "gpuLimit": 8, "capacityBuffer": {"replicas": 2}}
)


def _crd_rules(path: Path) -> dict[str, str]:
    """``message -> rule`` of the CEL rules on ``spec`` of a CRD's first version."""
    crd = yaml.safe_load(path.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return {r["message"]: r["rule"] for r in spec.get("x-kubernetes-validations", [])}


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream is not beside the checkout")
def test_static_nodepool_keeps_the_crd_cel_rules():
    """The three CEL rules on static pools hold for what we render: replicas, no weight, no limit but nodes."""
    rules = _crd_rules(UPSTREAM / "karpenter-crds-1.14.1/karpenter.sh_nodepools.yaml")
    assert rules["'weight' is not supported on static NodePools"] == "!has(self.replicas) || !has(self.weight)"
    assert "'nodes' in self.limits" in rules["only 'limits.nodes' is supported on static NodePools"]
    spec = render_nodepool(STATIC.model_copy(update={"weight": None}), CATALOG, extra_limits={"nvidia.com/mig-1g.10gb": "56"})["spec"]
    assert spec["replicas"] == 4
    assert "weight" not in spec and "limits" not in spec  # no GPU/MIG limit (refused), no nodes limit (blocks drift replacements)
    assert spec["template"]["spec"]["requirements"][-1]["values"] == ["p5.48xlarge"]


def test_dynamic_nodepool_is_unchanged():
    dynamic = BUFFERED.model_copy(update={"capacity_buffer": None})
    manifest = render_nodepool(dynamic, CATALOG)
    assert static_nodepool(manifest, dynamic) is manifest
    assert manifest["spec"]["limits"] == {GPU_RESOURCE: "8"} and manifest["spec"]["weight"] == 50 and "replicas" not in manifest["spec"]


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream is not beside the checkout")
def test_feature_gates_are_chart_keys_and_follow_the_config():
    """The gates we set are keys of the pinned chart (values.yaml and the keys its templates read), off by default."""
    chart = yaml.safe_load((UPSTREAM / "karpenter-1.14.1/values.yaml").read_text())["settings"]["featureGates"]
    refs = (UPSTREAM / "karpenter-1.14.1/template-refs.txt").read_text().split()
    off = karpenter_helm_values(KarpenterConfig(), cluster_name="c", interruption_queue="q")["settings"]["featureGates"]
    on = karpenter_helm_values(KarpenterConfig.model_validate({"staticCapacity": True, "capacityBuffer": True}), cluster_name="c", interruption_queue="q")["settings"]["featureGates"]
    for gate in ("staticCapacity", "capacityBuffer"):
        assert chart[gate] is False and f"settings.featureGates.{gate}" in refs
        assert off[gate] is False and on[gate] is True
    assert set(on) <= set(chart)


def test_capacity_buffer_matches_its_crd_and_cel_rules():
    template, buffer = capacity_buffer_manifests(BUFFERED, namespace="kube-system", gpus_per_node=1)
    assert [f.ok for f in validate_crd_files([buffer])] == [True]
    assert [f.errors for f in validate_core([template])] == [[]]
    rules = _crd_rules(ROOT / "tools/schemas/crds/autoscaling.x-k8s.io_capacitybuffers-v1.14.1.yaml")
    assert "has(self.replicas)" in rules["If podTemplateRef is set, replicas or limits must also be set"]
    assert buffer["apiVersion"] == CAPACITY_BUFFER_API
    assert buffer["spec"] == {"podTemplateRef": {"name": template["metadata"]["name"]}, "replicas": 2}
    assert buffer["metadata"]["namespace"] == template["metadata"]["namespace"] == "kube-system"  # podTemplateRef is same-namespace


def test_buffer_chunk_is_one_whole_node_of_its_pool_only():
    """A virtual pod fits a node of its pool (taint tolerated, nodepool label) and no node of another pool, and asks every GPU of it."""
    template, _ = capacity_buffer_manifests(BUFFERED, namespace="kube-system", gpus_per_node=1)
    spec = template["template"]["spec"]
    pod = PodPlacement("buffer", "Deployment", tolerations=tuple(spec["tolerations"]), node_selector=spec["nodeSelector"])
    labels = render_nodepool(BUFFERED, CATALOG)["spec"]["template"]["metadata"]["labels"]
    taints = tuple(render_nodepool(BUFFERED, CATALOG)["spec"]["template"]["spec"]["taints"])
    mine = NodeGroup("inference", {**{k: (v,) for k, v in labels.items()}, KARPENTER_NODEPOOL_LABEL: ("inference",)}, taints, gpu=True)
    other = NodeGroup("other", {KARPENTER_NODEPOOL_LABEL: ("other",)}, taints, gpu=True)
    assert placement_problems(pod, mine) == []
    assert placement_problems(pod, other)
    assert spec["containers"][0]["resources"]["requests"] == {GPU_RESOURCE: "1"}


def test_no_buffer_no_objects_and_bad_chunk_refused():
    assert capacity_buffer_manifests(STATIC, namespace="kube-system", gpus_per_node=8) == []
    with pytest.raises(ValueError, match="at least 1 GPU"):
        capacity_buffer_manifests(BUFFERED, namespace="kube-system", gpus_per_node=0)


def test_warm_nodes():
    assert (warm_nodes(STATIC), warm_nodes(BUFFERED), warm_nodes(BUFFERED.model_copy(update={"capacity_buffer": None}))) == (4, 2, 0)


def test_summary_says_static_nodes_are_paid_around_the_clock():
    price = CATALOG.instance_type("p5.48xlarge").on_demand_usd_per_hour
    assert price is not None
    summary = summarize_nodepool(STATIC, CATALOG)
    assert summary.static_nodes == 4
    assert summary.always_on_usd_per_hour == pytest.approx(4 * price, abs=0.01)
    assert summary.max_usd_per_hour == pytest.approx(summary.always_on_usd_per_hour, abs=0.01)  # 32 GPUs on 4 nodes: floor = ceiling
    dynamic = summarize_nodepool(BUFFERED, CATALOG)
    assert (dynamic.static_nodes, dynamic.always_on_usd_per_hour) == (0, 0.0)


def _policy(name: str):
    return next(p for p in POLICIES if p.name == name)


def _resource(manifest: dict[str, Any]) -> PolicyResource:
    return PolicyResource("kubernetes:karpenter.sh/v1:NodePool", manifest["metadata"]["name"], f"urn:pulumi:prod::p::np::{manifest['metadata']['name']}", manifest)


def test_policy_bounds_a_static_pool_by_its_replicas():
    """No GPU limit on a static pool is not "unbounded": replicas x 8 GPUs counts against the per-pool and per-stack maximums."""
    pool = _resource(render_nodepool(STATIC, CATALOG))
    limit = _policy("nodepool-gpu-limit")
    assert limit.run_resource(pool, limit.parse_settings(None)) == []
    too_many = limit.run_resource(pool, limit.parse_settings({"maxGpusPerNodePool": 16}))
    assert len(too_many) == 1 and "may launch 32 GPUs" in too_many[0]
    as_analyzed = render_nodepool(STATIC, CATALOG)
    as_analyzed["spec"]["replicas"] = 4.0  # the policy analyzer's protobuf Struct carries every number as a double
    assert limit.run_resource(_resource(as_analyzed), limit.parse_settings({"maxGpusPerNodePool": 16}))
    ceiling = _policy("stack-gpu-ceiling")
    found = ceiling.run_stack([pool], ceiling.parse_settings({"maxGpusPerStack": 16}))
    assert len(found) == 1 and "32" in found[0][1]


def test_same_input_same_bytes():
    docs = [render_nodepool(STATIC, CATALOG), *capacity_buffer_manifests(BUFFERED, namespace="kube-system", gpus_per_node=1)]
    assert dump_yaml(docs) == dump_yaml([render_nodepool(STATIC, CATALOG), *capacity_buffer_manifests(BUFFERED, namespace="kube-system", gpus_per_node=1)])


def test_cost_report_bills_a_static_pool_every_hour():
    """`hybridgpu cost report`: prod's h100-on-demand made static (2 nodes) costs the same at every utilization, and leaves the burst spend."""
    config = load_stack("prod", ROOT).config
    assert config.cloud is not None
    pools = [p.model_copy(update={"replicas": 2, "weight": None}) if p.name == "h100-on-demand" else p for p in config.cloud.node_pools]
    static = config.model_copy(update={"cloud": config.cloud.model_copy(update={"node_pools": pools})})
    line = next(c for c in build_report(static).capacity if c.name == "h100-on-demand")
    dynamic = next(c for c in build_report(config).capacity if c.name == "h100-on-demand")
    assert line.pays_when_idle and not dynamic.pays_when_idle
    assert len(set(line.monthly_usd.values())) == 1
    assert max(line.monthly_usd.values()) >= max(dynamic.monthly_usd.values())


def test_buffer_pods_carry_the_cost_labels_the_pack_asks():
    """The chunk requests GPUs, so the pack's gpu-workload-cost-labels reads its pod labels: the stack's cost tags are there."""
    policy = _policy("gpu-workload-cost-labels")
    tags = {"team": "ml", "project": "llm", "cost-center": "cc-1", "hybridgpu.io/stack": "prod", "bad key": "x"}
    template, _ = capacity_buffer_manifests(BUFFERED, namespace="kube-system", gpus_per_node=1, cost_labels=tags)
    assert "bad key" not in template["template"]["metadata"]["labels"]
    res = PolicyResource("kubernetes:core/v1:PodTemplate", "buffer", "urn:pulumi:prod::p::pt::buffer", template)
    assert policy.run_resource(res, policy.parse_settings(None)) == []
    bare, _ = capacity_buffer_manifests(BUFFERED, namespace="kube-system", gpus_per_node=1)
    assert policy.run_resource(PolicyResource("kubernetes:core/v1:PodTemplate", "buffer", "urn:pulumi:prod::p::pt::buffer", bare), policy.parse_settings(None))
