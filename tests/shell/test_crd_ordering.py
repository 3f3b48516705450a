"""Every custom resource of every example stack has its CRD installed earlier in the same program, or declared (issue 14, point 3).

pulumi-kubernetes, on create, retries "no matches for kind" and then fails
(pulumi/pulumi-kubernetes ``provider/pkg/await/await.go``, read 2026-11-24), so on a first
``pulumi up`` of a new cluster the CRD must come from a release the resource depends on. Fails on
the main of 2026-11-24: prod's PrometheusRule (idle-GPU alert) depended only on the GPU Operator
release, which does not ship the ``monitoring.coreos.com`` CRDs.
"""

from __future__ import annotations

import dataclasses

import pytest

from hybridgpu.render.nvidia import declared_crds
from hybridgpu.shell.crds import HELM_RELEASE, chart_crds, crd_problems, custom_kind
from hybridgpu.shell.preview import run_preview
from hybridgpu.stack.load import load_stack
from tests.helpers.scratch import example_plan

STACKS = ("dev", "hybrid", "onprem", "prod")


@pytest.mark.parametrize("name", STACKS)
def test_every_custom_resource_has_its_crd_first(all_previews, root, name):
    nvidia = load_stack(name, root).config.nvidia
    declared = declared_crds(nvidia) if nvidia else ()
    assert crd_problems(all_previews[name].records, declared) == []


def test_the_custom_resources_are_the_ones_we_know(all_previews):
    kinds = {custom_kind(r) for run in all_previews.values() for r in run.records} - {None}
    assert kinds == {
        ("karpenter.k8s.aws", "EC2NodeClass"),
        ("karpenter.sh", "NodePool"),
        ("karpenter.sh", "NodeOverlay"),
        ("monitoring.coreos.com", "PrometheusRule"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "LocalQueue"),
        ("kueue.x-k8s.io", "MultiKueueCluster"),
        ("kueue.x-k8s.io", "MultiKueueConfig"),
        ("kueue.x-k8s.io", "AdmissionCheck"),
        ("kueue.x-k8s.io", "WorkloadPriorityClass"),  # the teams file's priority classes (issue 19)
        ("kueue.x-k8s.io", "Topology"),  # topology-aware scheduling: EKS EFA pools and on-prem racks (issue 18)
        ("mellanox.com", "NicClusterPolicy"),  # on-prem RDMA: the NVIDIA Network Operator's policy (issue 18)
    }
    for kind in kinds:  # each has a chart hybridgpu can install it from
        assert any(kind in chart_crds(c) for c in ("karpenter-crd", "kueue", "prometheus-operator-crds", "network-operator")), kind


def test_prod_installs_the_prometheus_crds_before_the_rule(all_previews):
    records = all_previews["prod"].records
    rule = next(r for r in records if custom_kind(r) == ("monitoring.coreos.com", "PrometheusRule"))
    crds = next(r for r in records if r.type == HELM_RELEASE and str(r.inputs["chart"]).endswith("/prometheus-operator-crds"))
    assert crds.urn in rule.dependencies and crds.inputs["version"] == "31.0.1"
    operator = next(r for r in records if r.type == HELM_RELEASE and r.inputs["chart"] == "gpu-operator")
    assert crds.urn in operator.dependencies  # the operator finds the ServiceMonitor CRD on its first reconcile


def test_a_missing_crd_release_is_reported(all_previews):
    """Without the CRD release in the dependency path the rule is reported (the check is not vacuous)."""
    records = [r for r in all_previews["prod"].records if not str(r.inputs.get("chart", "")).endswith("/prometheus-operator-crds")]
    problems = crd_problems(records)
    assert len(problems) == 1 and "PrometheusRule (monitoring.coreos.com)" in problems[0]
    # Nor does a NodePool pass when it no longer waits for the Karpenter release.
    pools = [dataclasses.replace(r, dependencies=[]) if custom_kind(r) == ("karpenter.sh", "NodePool") else r for r in all_previews["dev"].records]
    assert any("NodePool (karpenter.sh)" in p for p in crd_problems(pools))


def test_preinstalled_is_a_declared_precondition(scratch_project):
    def edit(config):
        config["hybridgpu:nvidia"]["dcgm"]["prometheusOperatorCrds"] = "preinstalled"

    root = scratch_project(stacks=["prod"], plan=example_plan(), stack_edits={"prod": edit})
    run = run_preview("prod", root)
    assert not any(str(r.inputs.get("chart", "")).endswith("/prometheus-operator-crds") for r in run.records)
    nvidia = load_stack("prod", root).config.nvidia
    assert declared_crds(nvidia) == (("monitoring.coreos.com", "PrometheusRule"), ("monitoring.coreos.com", "ServiceMonitor"))
    assert crd_problems(run.records, declared_crds(nvidia)) == []
    assert crd_problems(run.records) != []  # undeclared, the same program would fail on a new cluster
