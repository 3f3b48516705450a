"""Pure renderers: Karpenter objects, IAM documents, subnet plans, kubeconfig."""

from __future__ import annotations

import ipaddress
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridgpu.catalog import load_catalog
from hybridgpu.config.models import CapacityType, NodeClassConfig, NodePoolConfig
from hybridgpu.render import iam
from hybridgpu.render.karpenter import (
    karpenter_helm_values,
    render_ec2_nodeclass,
    render_nodepool,
    resolve_instance_types,
    summarize_nodepool,
)
from hybridgpu.render.kubeconfig import eks_kubeconfig
from hybridgpu.render.network import plan_subnets
from tests.helpers import import_fresh, examples

CATALOG = load_catalog()


def _reqs(manifest):
    return {r["key"]: r for r in manifest["spec"]["template"]["spec"]["requirements"]}


def test_nodepool_lists_resolved_instance_types_and_limit():
    pool = NodePoolConfig(name="spot", capacity_types=[CapacityType.spot], instance_families=["g5", "g6"], gpu_counts=[1], gpu_limit=8, weight=50)
    manifest = render_nodepool(pool, CATALOG)
    reqs = _reqs(manifest)
    types = reqs["node.kubernetes.io/instance-type"]["values"]
    assert types and all(CATALOG.instance_type(t).gpu_count == 1 for t in types)
    assert {CATALOG.instance_type(t).family for t in types} == {"g5", "g6"}
    assert reqs["node.kubernetes.io/instance-type"]["minValues"] == 5
    assert reqs["karpenter.sh/capacity-type"]["values"] == ["spot"]
    assert reqs["karpenter.k8s.aws/instance-gpu-count"]["values"] == ["1"]
    assert manifest["spec"]["limits"] == {"nvidia.com/gpu": "8"}
    assert manifest["spec"]["weight"] == 50
    assert manifest["spec"]["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert manifest["spec"]["template"]["metadata"]["labels"]["hybridgpu.io/nodepool"] == "spot"


def test_on_demand_pool_has_no_min_values_and_no_weight_when_unset():
    pool = NodePoolConfig(name="od", capacity_types=[CapacityType.on_demand], instance_types=["p5.48xlarge"], gpu_limit=16)
    manifest = render_nodepool(pool, CATALOG)
    assert "minValues" not in _reqs(manifest)["node.kubernetes.io/instance-type"]
    assert "weight" not in manifest["spec"]


def test_gpu_name_filter_selects_hopper_types():
    pool = NodePoolConfig(name="h", capacity_types=[CapacityType.spot], gpu_names=["h100"], gpu_limit=8, narrow_spot_reason="x")
    names = [t.name for t in resolve_instance_types(pool, CATALOG)]
    assert names and all(CATALOG.gpu_model_of(n).karpenter_gpu_name == "h100" for n in names)
    assert "p5.48xlarge" in names


def test_summary_bounds_instances_and_cost():
    pool = NodePoolConfig(name="od", capacity_types=[CapacityType.on_demand], instance_types=["p5.48xlarge"], gpu_limit=16)
    summary = summarize_nodepool(pool, CATALOG)
    price = CATALOG.instance_type("p5.48xlarge").on_demand_usd_per_hour
    assert summary.max_instances == 2
    assert summary.max_usd_per_hour == pytest.approx(2 * price, rel=1e-3)


def test_nodeclass_hardening_and_tags():
    nc = NodeClassConfig(name="gpu", tags={"team": "override", "extra": "1"})
    manifest = render_ec2_nodeclass(nc, cluster_name="c1", node_role_name="KarpenterNode-c1", cost_tags={"team": "t", "project": "p"})
    spec = manifest["spec"]
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
    ebs = spec["blockDeviceMappings"][0]["ebs"]
    assert ebs["encrypted"] is True and ebs["volumeType"] == "gp3" and ebs["volumeSize"] == "200Gi"
    assert spec["amiSelectorTerms"] == [{"alias": nc.ami_alias}]
    assert spec["role"] == "KarpenterNode-c1"
    assert spec["tags"] == {"team": "override", "project": "p", "extra": "1"}
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "c1"}}]
    assert "networkInterfaces" not in spec and "capacityReservationSelectorTerms" not in spec


def test_nodeclass_efa_and_reservations():
    nc = NodeClassConfig(name="efa", efa={"enabled": True, "interfaces": 4, "placementGroup": "pg"}, capacity_reservation_ids=["cr-0123abcd"])
    spec = render_ec2_nodeclass(nc, cluster_name="c", node_role_name="r", cost_tags={})["spec"]
    nics = spec["networkInterfaces"]
    assert [(n["networkCardIndex"], n["deviceIndex"]) for n in nics] == [(0, 0), (0, 1), (1, 0), (2, 0), (3, 0)]
    assert [n["interfaceType"] for n in nics] == ["interface"] + ["efa-only"] * 4  # one EFA device per requested interface
    assert spec["placementGroupSelector"] == {"name": "pg"}
    assert spec["capacityReservationSelectorTerms"] == [{"id": "cr-0123abcd"}]


def test_bottlerocket_uses_data_volume():
    nc = NodeClassConfig(name="br", ami_alias="bottlerocket@v1.50.0")
    spec = render_ec2_nodeclass(nc, cluster_name="c", node_role_name="r", cost_tags={})["spec"]
    assert spec["blockDeviceMappings"][0]["deviceName"] == "/dev/xvdb"


def test_helm_values_wire_cluster_and_queue():
    from hybridgpu.config.models import KarpenterConfig

    values = karpenter_helm_values(KarpenterConfig(), cluster_name="c1", interruption_queue="c1")
    assert values["settings"]["clusterName"] == "c1"
    assert values["settings"]["interruptionQueue"] == "c1"
    assert values["serviceAccount"]["name"] == "karpenter"
    assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in values["tolerations"]


def test_five_interruption_rules():
    kinds = {(r.source, r.detail_type) for r in iam.INTERRUPTION_RULES}
    assert kinds == {
        ("aws.health", "AWS Health Event"),
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
    }


def _controller_docs():
    return iam.karpenter_controller_policies(
        partition="aws",
        region="us-west-2",
        account_id="111122223333",
        cluster_name="c1",
        node_role_arn="arn:aws:iam::111122223333:role/KarpenterNode-c1",
        queue_arn="arn:aws:sqs:us-west-2:111122223333:c1",
    )


def test_controller_policies_scoped_to_cluster():
    docs = _controller_docs()
    statements = [s for d in docs.values() for s in d["Statement"]]
    for s in statements:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        mutating = {"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "ec2:CreateTags", "iam:AddRoleToInstanceProfile"}
        if mutating & set(actions):
            assert "kubernetes.io/cluster/c1" in json.dumps(s["Condition"])
    pass_role = [s for s in statements if s["Action"] == "iam:PassRole"]
    assert pass_role == [
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": "arn:aws:iam::111122223333:role/KarpenterNode-c1",
            "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        }
    ]
    sqs = docs["interruption"]["Statement"][0]
    assert sqs["Resource"] == "arn:aws:sqs:us-west-2:111122223333:c1"
    wildcard = [s["Sid"] for s in statements if s["Resource"] == "*"]
    assert set(wildcard) == {"AllowUnscopedInstanceProfileListAction", "AllowRegionalReadActions", "AllowPricingReadActions"}


def test_pod_identity_trust_pins_service_account():
    doc = iam.pod_identity_trust_policy(account_id="111122223333", cluster_name="c1", namespace="kube-system", service_account="karpenter")
    stmt = doc["Statement"][0]
    assert stmt["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(stmt["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    cond = stmt["Condition"]["StringEquals"]
    assert cond["aws:RequestTag/eks-cluster-name"] == "c1"
    assert cond["aws:RequestTag/kubernetes-service-account"] == "karpenter"
    assert cond["aws:SourceAccount"] == "111122223333"


def test_queue_policy_denies_plain_http():
    doc = iam.interruption_queue_policy("arn:q")
    deny = [s for s in doc["Statement"] if s["Effect"] == "Deny"]
    assert deny and deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


@settings(max_examples=examples(200), deadline=None)
@given(
    vpc_prefix=st.integers(min_value=16, max_value=20),
    zones=st.integers(min_value=2, max_value=6),
    private_extra=st.integers(min_value=0, max_value=6),
    public_extra=st.integers(min_value=0, max_value=8),
    second_octet=st.integers(min_value=0, max_value=255),
)
def test_subnets_never_overlap_and_stay_inside_vpc(vpc_prefix, zones, private_extra, public_extra, second_octet):
    vpc = ipaddress.IPv4Network(f"10.{second_octet}.0.0/{vpc_prefix}", strict=False)
    private_prefix = min(vpc_prefix + private_extra, 24)
    public_prefix = min(private_prefix + public_extra, 28)
    names = [f"us-west-2{chr(ord('a') + i)}" for i in range(zones)]
    try:
        plan = plan_subnets(str(vpc), names, private_prefix=private_prefix, public_prefix=public_prefix, cluster_name="c")
    except ValueError:
        # Refused only when the subnets really cannot fit (aligned blocks make greedy layout exact).
        assert zones * (2 ** (32 - private_prefix)) + zones * (2 ** (32 - public_prefix)) > vpc.num_addresses
        return
    nets = [ipaddress.IPv4Network(s.cidr) for s in plan]
    assert len(nets) == 2 * zones
    assert all(n.subnet_of(vpc) for n in nets)
    for a, b in itertools.combinations(nets, 2):
        assert not a.overlaps(b)
    assert [s.zone for s in plan if s.tier == "private"] == names


def test_kubeconfig_uses_exec_not_a_token():
    cfg = eks_kubeconfig(cluster_name="c", endpoint="https://x", ca_data="Q0E=", region="us-west-2")
    user = cfg["users"][0]["user"]
    assert "token" not in user and user["exec"]["command"] == "aws"
    assert "--region" in user["exec"]["args"]


def test_pure_core_imports_no_pulumi():
    proc = import_fresh(
        "hybridgpu.config", "hybridgpu.catalog", "hybridgpu.render.karpenter", "hybridgpu.render.iam", "hybridgpu.render.network",
        "hybridgpu.render.kubeconfig", "hybridgpu.economics.report", "hybridgpu.economics.planner", "hybridgpu.economics.plots",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
