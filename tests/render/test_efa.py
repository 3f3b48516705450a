"""EFA renderers and the device plugin's placement (pure).

Behaviour pinned, with its upstream source:

* the chart's scheduling (aws/eks-charts ``stable/aws-efa-k8s-device-plugin`` v0.5.30
  ``templates/daemonset.yaml``): left at its defaults it selects *every* EFA-capable instance type, so
  on prod it would run on h100-spot's p5.48xlarge, which has no EFA device (its node class attaches
  none): the feasibility check reports that; with our values it runs on the EFA pool only;
* the chart's default ``supportedInstanceLabels`` agree with the catalog's ``efaSupported``;
* Karpenter v1.14.1 advertises one ``vpc.amazonaws.com/efa`` per ``efa-only`` entry
  (``pkg/providers/instancetype/types.go`` ``efas``): the rendered count is the catalog's.
"""

from __future__ import annotations

import pytest

from hybridgpu.catalog import load_catalog
from hybridgpu.config.models import CloudConfig, NodeClassConfig
from hybridgpu.k8s import EFA_LABEL, EFA_RESOURCE
from hybridgpu.render.charts import CHARTS, EFA_DEVICE_PLUGIN_DEFAULT_GPU_TYPES, chart_placements
from hybridgpu.render.efa import EFA_DEVICE_PLUGIN_CHART, derived_efa_interfaces, efa_device_plugin_values
from hybridgpu.render.karpenter import efa_network_interfaces, render_ec2_nodeclass
from hybridgpu.stack.scheduling import cluster_workloads, workload_issues
from tests.helpers.scratch import example_stack

CATALOG = load_catalog()


def _cloud(pools: list[dict], efa: dict | None = None) -> CloudConfig:
    return CloudConfig.model_validate(
        {
            "cluster": {"name": "c1"},
            "network": {"new": {"availabilityZones": ["us-east-1a", "us-east-1b"]}},
            "nodeClasses": [{"name": "efa", "efa": efa or {"enabled": True}}, {"name": "plain"}],
            "nodePools": pools,
        }
    )


def _pool(name: str, types: list[str], node_class: str = "efa") -> dict:
    return {"name": name, "nodeClass": node_class, "capacityTypes": ["on-demand"], "instanceTypes": types, "gpuLimit": 64}


def test_chart_default_list_names_exactly_the_catalog_efa_types():
    catalog_efa = {t.name for t in CATALOG.instance_types if t.efa_supported}
    assert set(EFA_DEVICE_PLUGIN_DEFAULT_GPU_TYPES) == catalog_efa


@pytest.mark.parametrize(("types", "count"), [(["p5.48xlarge"], 32), (["p5e.48xlarge", "p5.48xlarge"], 32), (["p5en.48xlarge"], 16), (["p4d.24xlarge", "p4de.24xlarge"], 4), (["g5.48xlarge"], 1)])
def test_count_is_the_catalog_maximum(types, count):
    cloud = _cloud([_pool("p", types)])
    assert derived_efa_interfaces(cloud.node_classes[0], cloud, CATALOG) == count
    spec = render_ec2_nodeclass(cloud.node_classes[0], cluster_name="c1", node_role_name="r", cost_tags={}, efa_interfaces=count)["spec"]
    assert sum(n["interfaceType"] == "efa-only" for n in spec["networkInterfaces"]) == count


@pytest.mark.parametrize("types", [["p5.48xlarge", "p5en.48xlarge"], ["p5.4xlarge", "p5.48xlarge"], ["p5.48xlarge", "g6.xlarge"]])
def test_disagreeing_or_missing_counts_derive_nothing(types):
    cloud = _cloud([_pool("p", types)])
    assert derived_efa_interfaces(cloud.node_classes[0], cloud, CATALOG) is None


def test_class_without_efa_derives_nothing_and_unused_class_keeps_its_count():
    cloud = _cloud([_pool("p", ["p5.48xlarge"], "plain")], efa={"enabled": True, "interfaces": 4})
    assert derived_efa_interfaces(cloud.node_classes[1], cloud, CATALOG) is None
    assert derived_efa_interfaces(cloud.node_classes[0], cloud, CATALOG) == 4


def test_layout_matches_the_ec2_guide():
    assert efa_network_interfaces(2) == [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
    ]
    with pytest.raises(ValueError):
        efa_network_interfaces(0)


def test_efa_class_without_a_count_is_refused_by_the_renderer():
    with pytest.raises(ValueError, match="no interface count"):
        render_ec2_nodeclass(NodeClassConfig(name="x", efa={"enabled": True}), cluster_name="c", node_role_name="r", cost_tags={})


def test_no_efa_pool_no_values():
    assert efa_device_plugin_values(_cloud([_pool("p", ["p5.48xlarge"], "plain")]), CATALOG) is None


def test_placement_from_values_keeps_the_template_expressions():
    values = efa_device_plugin_values(_cloud([_pool("p", ["p5.48xlarge"])]), CATALOG)
    (pod,) = chart_placements(EFA_DEVICE_PLUGIN_CHART, values, "efa")
    assert pod.device == EFA_RESOURCE and pod.kind == "DaemonSet"
    assert pod.node_selector == {EFA_LABEL: "true"}
    (term,) = pod.required_terms
    assert term["matchExpressions"][0] == {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}
    assert term["matchExpressions"][1]["operator"] == "NotIn"  # eks.amazonaws.com/compute-type NotIn [auto]
    assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in pod.tolerations  # fixed by the template


def _prod_eks():
    from hybridgpu.stack.load import config_from_pulumi_values

    doc = example_stack("prod")["config"]
    doc.pop("hybridgpu:burst", None)
    doc.pop("hybridgpu:teams", None)
    doc["hybridgpu:cloud"].pop("storage", None)  # its claims need the burst plan's namespaces
    config = config_from_pulumi_values(doc, stack="prod", file="stacks/Pulumi.prod.yaml")
    (eks,) = [c for c in cluster_workloads(config, CATALOG) if c.cluster.startswith("EKS")]
    return eks


def test_prod_plugin_runs_on_the_efa_pool_and_nowhere_else():
    eks = _prod_eks()
    plugin = [w for w in eks.workloads if w.placement.device == EFA_RESOURCE]
    assert len(plugin) == 1
    assert [i for i in workload_issues(eks, "f") if EFA_DEVICE_PLUGIN_CHART in i.message] == []


def test_chart_defaults_would_put_the_plugin_on_pools_without_efa():
    """The reason for our values: the chart's own selection matches h100-spot's p5.48xlarge nodes, which have no EFA device."""
    eks = _prod_eks()
    (default_pod,) = chart_placements(EFA_DEVICE_PLUGIN_CHART, {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}, "efa")
    from dataclasses import replace

    from hybridgpu.stack.scheduling import Workload

    cluster = replace(eks, workloads=(Workload(default_pod, "hybridgpu:cloud.nodeClasses"),))
    issues = workload_issues(cluster, "stacks/Pulumi.prod.yaml")
    elsewhere = sorted(i.key for i in issues if i.code == "device-plugin-elsewhere")
    assert elsewhere == ["hybridgpu:cloud.nodePools[1].taints", "hybridgpu:cloud.nodePools[2].taints", "hybridgpu:cloud.nodePools[3].taints"]


def test_chart_facts_are_registered_with_their_source():
    facts = CHARTS[EFA_DEVICE_PLUGIN_CHART]
    assert facts.source.version == "v0.5.30" and facts.source.repo == "aws/eks-charts"
    assert facts.defaults["tolerations"] == [] and facts.defaults["nodeSelector"] == {}
