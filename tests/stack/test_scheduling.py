"""Every workload of every example stack fits a node the stack creates (hybridgpu/stack/scheduling.py, issue 14 point 2).

Fails on the main of 2026-11-24: the Kueue release had ``controllerManager.tolerations: []`` and
the GPU Operator tolerated only the control-plane taint (chart defaults in
hybridgpu/render/charts.py), so on EKS, whose system node group is tainted ``CriticalAddonsOnly``,
they stayed Pending and ``pulumi up`` timed out on the Helm release.
"""

from __future__ import annotations

import pytest

from hybridgpu.catalog import load_catalog
from hybridgpu.render.scheduling import placement_problems
from hybridgpu.stack.load import load_stack
from hybridgpu.stack.scheduling import cluster_workloads, scheduling_issues

STACKS = ("dev", "hybrid", "onprem", "prod")


@pytest.mark.parametrize("name", STACKS)
def test_example_stack_is_schedulable(root, name):
    stack = load_stack(name, root)
    catalog = load_catalog()
    assert scheduling_issues(stack.config, f"stacks/Pulumi.{name}.yaml", catalog, inventory=stack.inventory, burst_plan=stack.burst_plan) == []
    clusters = cluster_workloads(stack.config, catalog, inventory=stack.inventory, burst_plan=stack.burst_plan)
    assert clusters and all(c.workloads for c in clusters)
    for cluster in clusters:
        system = [g for g, _ in cluster.groups if not g.gpu]
        gpu = [g for g, _ in cluster.groups if g.gpu]
        for w in cluster.workloads:
            pod = w.placement
            if pod.kind != "DaemonSet":
                # Controllers fit a non-GPU node group; only Cilium's operator (it tolerates every
                # taint by design) may also land on a GPU node.
                assert any(not placement_problems(pod, g) for g in system), pod.name
                tolerates_all = any(not t.get("key") and t.get("operator") == "Exists" for t in pod.tolerations)
                assert tolerates_all or all(placement_problems(pod, g) for g in gpu), pod.name
            elif pod.gpu_agent:
                assert all(not placement_problems(pod, g) for g in gpu), pod.name


def test_the_workloads_issue_14_names_are_checked(root):
    names = {w.placement.name for c in cluster_workloads(load_stack("prod", root).config, load_catalog(), burst_plan=load_stack("prod", root).burst_plan) for w in c.workloads}
    assert {"kueue/kueue-controller-manager", "gpu-operator/gpu-operator", "karpenter/karpenter", "gpu-operator/nvidia-device-plugin-daemonset"} <= names
    assert "gpu-operator/nvidia-dcgm-exporter-daemonset" in names and "gpu-operator/node-feature-discovery/nfd-worker" in names


def test_eks_clusters_are_checked_against_the_critical_addons_taint(root):
    for name in ("dev", "hybrid", "prod"):
        stack = load_stack(name, root)
        (cluster,) = cluster_workloads(stack.config, load_catalog(), burst_plan=stack.burst_plan)
        system = cluster.groups[0][0]
        assert [t["key"] for t in system.taints] == ["CriticalAddonsOnly"]
        assert system.labels["hybridgpu.io/role"] == ("system",)
