"""Kueue topology-aware queues of the EFA pools (hybridgpu.burst.eks_tas) and the EKS topology levels.

Behaviour pinned, with its upstream source:

* every object validates against Kueue v0.19.2 (the Topology also against the CRD's own openAPIV3Schema,
  tests/fixtures/crds/kueue.x-k8s.io_topologies-v0.19.2.yaml, plus the CEL rules encoded in
  hybridgpu.burst.schema); a TAS flavor has nodeLabels (CRD CEL "at least one nodeLabel is required when
  topology is set");
* the levels are the labels the AWS cloud controller manager sets (cloud-provider-aws v1.35.2
  ``instances_v2.go``): 3 layers on p4d/p5, none on g-types, so a g6e EFA pool gets no TAS queue;
* the ClusterQueue declares vpc.amazonaws.com/efa, which BlockUndeclared requires for an EFA job.
"""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from hybridgpu.burst.eks_tas import efa_queues, efa_tas_manifests
from hybridgpu.burst.kueue import kueue_configuration
from hybridgpu.burst.schema import kueue_errors
from hybridgpu.catalog import load_catalog
from hybridgpu.config.models import CloudConfig
from hybridgpu.k8s import EFA_LABEL, EFA_RESOURCE, GPU_RESOURCE, HOSTNAME_LABEL, KARPENTER_NODEPOOL_LABEL
from hybridgpu.render.eks_topology import eks_topology_levels, eks_topology_manifest, instance_topology_layers
from tests.helpers import ROOT

CATALOG = load_catalog()
CRD = yaml.safe_load((ROOT / "tests/fixtures/crds/kueue.x-k8s.io_topologies-v0.19.2.yaml").read_text())
V1BETA2 = next(v for v in CRD["spec"]["versions"] if v["name"] == "v1beta2")["schema"]["openAPIV3Schema"]


def _cloud(pools: list[dict]) -> CloudConfig:
    return CloudConfig.model_validate(
        {
            "cluster": {"name": "c1"},
            "network": {"new": {"availabilityZones": ["us-east-1a", "us-east-1b"]}},
            "nodeClasses": [{"name": "efa", "efa": {"enabled": True}}, {"name": "efa16", "efa": {"enabled": True}}, {"name": "plain"}],
            "nodePools": pools,
        }
    )


def _pool(name: str, types: list[str], node_class: str = "efa", limit: int = 32) -> dict:
    return {"name": name, "nodeClass": node_class, "capacityTypes": ["reserved"], "instanceTypes": types, "gpuLimit": limit}


@pytest.mark.parametrize(
    ("instance_type", "layers"),
    [("p5.48xlarge", 3), ("p5e.48xlarge", 3), ("p5en.48xlarge", 3), ("p4d.24xlarge", 3), ("p6-b200.48xlarge", 4), ("p5.4xlarge", 0), ("g6e.48xlarge", 0), ("g5.48xlarge", 0)],
)
def test_layers_per_instance_type(instance_type, layers):
    assert instance_topology_layers(instance_type) == layers


def test_mixed_layers_share_the_common_levels():
    assert eks_topology_levels(["p5.48xlarge", "p6-b200.48xlarge"]) == tuple(f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3))
    assert eks_topology_levels(["p5.48xlarge", "g6e.48xlarge"]) == ()
    assert eks_topology_levels([]) == ()


def test_topology_is_valid_against_the_crd_schema_and_its_rules():
    doc = eks_topology_manifest(eks_topology_levels(["p5.48xlarge"]))
    jsonschema.validate(doc, V1BETA2)
    assert kueue_errors(doc) == []
    assert [lvl["nodeLabel"] for lvl in doc["spec"]["levels"]][-1] == HOSTNAME_LABEL


@pytest.mark.parametrize("levels", [[], ["topology.kubernetes.io/zone"], ["hybridgpu.io/topology-rack"]])
def test_topology_refuses_levels_eks_nodes_do_not_carry(levels):
    with pytest.raises(ValueError):
        eks_topology_manifest(levels)


def test_queue_objects_are_valid_kueue_and_declare_efa():
    cloud = _cloud([_pool("train", ["p5.48xlarge", "p5e.48xlarge"]), _pool("spot", ["p5.48xlarge"], "plain")])
    docs = efa_tas_manifests(cloud, CATALOG, ("ml-research", "ml-platform"), "hybridgpu")
    assert [d["kind"] for d in docs] == ["Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "LocalQueue"]
    for doc in docs:
        assert kueue_errors(doc) == [], doc
    flavor, cq = docs[1], docs[2]
    assert flavor["spec"]["topologyName"] == docs[0]["metadata"]["name"] == "eks"
    assert flavor["spec"]["nodeLabels"] == {KARPENTER_NODEPOOL_LABEL: "train", EFA_LABEL: "true"}
    (group,) = cq["spec"]["resourceGroups"]
    assert group["coveredResources"] == [GPU_RESOURCE, EFA_RESOURCE]
    quotas = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert quotas == {GPU_RESOURCE: 32, EFA_RESOURCE: 4 * 32}  # 32 GPUs = 4 p5 nodes x 32 EFA


def test_block_undeclared_is_why_efa_is_declared():
    from hybridgpu.stack.load import load_stack

    prod = load_stack("prod", ROOT)
    config = kueue_configuration(prod.burst_plan.clusters["prod"], prod.burst_plan.source)
    assert config["resources"]["quotaCheckStrategy"] == "BlockUndeclared"
    assert not any(EFA_RESOURCE.startswith(p) for p in config["resources"]["excludeResourcePrefixes"])


def test_pools_without_topology_labels_get_no_queue():
    cloud = _cloud([_pool("g6e", ["g6e.48xlarge"], limit=8), _pool("p4d", ["p4d.24xlarge"], "efa16")])
    queues = efa_queues(cloud, CATALOG, ("ml",), "hybridgpu")
    assert [q.pool for q in queues] == ["p4d"]
    assert queues[0].efa_per_node == 4
    assert dict(queues[0].cluster_queue.groups[0].flavors[0].nominal) == {GPU_RESOURCE: 32, EFA_RESOURCE: 16}


def test_no_efa_pool_no_objects():
    assert efa_tas_manifests(_cloud([_pool("spot", ["p5.48xlarge"], "plain")]), CATALOG, ("ml",), "hybridgpu") == []


def test_prod_preview_creates_them_after_kueue_and_dev_none(previews):
    prod, dev = previews["prod"], previews["dev"]
    kinds = {r.inputs["kind"]: r for r in prod.records if r.type.startswith("kubernetes:kueue.x-k8s.io") and "efa" in r.name}
    assert {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"} <= set(kinds)
    assert not [r for r in dev.records if r.type == "hybridgpu:index:EfaQueues"]
    topology = next(r for r in prod.records if r.type == "kubernetes:kueue.x-k8s.io/v1beta2:Topology" and r.inputs["metadata"]["name"] == "eks")
    flavor = kinds["ResourceFlavor"]
    assert topology.urn in flavor.dependencies
