"""The values the program really passes to each Helm release give the placements the stack check checked (issue 14, point 2).

``hybridgpu validate`` checks placements computed from the renderers
(``hybridgpu/stack/scheduling.py``); this test recomputes them from the ``values`` input of every
``kubernetes:helm.sh/v3:Release`` the offline preview recorded, so a component that passed other
values than the check assumed would fail here. The Network Operator's operands are recomputed from the
``NicClusterPolicy`` the preview recorded (the operator creates them from its spec).
"""

from __future__ import annotations

import pytest

from hybridgpu.catalog import load_catalog
from hybridgpu.render.charts import CHARTS, chart_placements
from hybridgpu.render.network_operator import nic_policy_placements
from hybridgpu.shell.crds import HELM_RELEASE
from hybridgpu.stack.load import load_stack
from hybridgpu.stack.scheduling import cluster_workloads

STACKS = ("dev", "hybrid", "onprem", "prod")


@pytest.mark.parametrize("name", STACKS)
def test_recorded_release_values_match_the_checked_placements(all_previews, root, name):
    recorded = {}
    for release in all_previews[name].of_type(HELM_RELEASE):
        chart = str(release.inputs["chart"]).rpartition("/")[2]
        if CHARTS.get(chart) is None or not CHARTS[chart].workloads:
            continue
        for pod in chart_placements(chart, release.inputs.get("values") or {}, release.inputs["name"]):
            recorded[pod.name] = pod
    # The Network Operator's operands come from the NicClusterPolicy the program creates, not from Helm values.
    for policy in all_previews[name].of_type("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"):
        for pod in nic_policy_placements({"spec": policy.inputs["spec"]}):
            recorded[pod.name] = pod
    stack = load_stack(name, root)
    checked = {w.placement.name: w.placement for c in cluster_workloads(stack.config, load_catalog(), inventory=stack.inventory, burst_plan=stack.burst_plan) for w in c.workloads}
    assert recorded.keys() == checked.keys()
    for key, pod in recorded.items():
        assert (pod.tolerations, pod.node_selector, pod.required_terms) == (checked[key].tolerations, checked[key].node_selector, checked[key].required_terms), key
