"""The Pulumi program and its components under Pulumi's mocks (via the offline preview).

Checks resource counts by type, names, parents, IAM trust and scoping, the five interruption
rules, tags, secrets, toggles, and that bad config stops the program before any registration.
"""

from __future__ import annotations

import json

import pulumi
import pytest

from hybridgpu.shell.preview import HybridMocks, RecordingMonitor, run_preview
from tests.helpers import one_record as _one
from tests.helpers.scratch import example_stack, write_stack


def _parent(result, record):
    by_urn = {r.urn: r for r in result.records}
    return by_urn.get(record.parent)


@pytest.mark.parametrize("stack,pools,classes", [("dev", 1, 1), ("prod", 4, 2)])
def test_resource_counts_by_type(previews, stack, pools, classes):
    counts = previews[stack].by_type()
    expected = {
        "hybridgpu:index:Network": 1,
        "hybridgpu:index:EksCluster": 1,
        "hybridgpu:index:Karpenter": 1,
        "hybridgpu:index:GpuNodePools": 1,
        "aws:eks/cluster:Cluster": 1,
        "aws:eks/nodeGroup:NodeGroup": 1,
        # prod also has the eks-node-monitoring-agent add-on (cloud.karpenter.nodeRepair, issue 26)
        "aws:eks/addon:Addon": 5 if stack == "prod" else 4,
        "aws:kms/key:Key": 1,
        "aws:sqs/queue:Queue": 1,
        "aws:cloudwatch/eventRule:EventRule": 5,
        "aws:cloudwatch/eventTarget:EventTarget": 5,
        "aws:iam/rolePolicy:RolePolicy": 5,
        "aws:eks/podIdentityAssociation:PodIdentityAssociation": 1,
        # karpenter-crd, karpenter, gpu-operator (+ kueue on prod, the burst plan's EKS worker)
        # prod: karpenter-crd, karpenter, gpu-operator, kueue, and (issue 14) prometheus-operator-crds
        # for its PrometheusRule and ServiceMonitor; (issue 18) the EFA device plugin of h100-reserved and
        # the FSx CSI driver; (issue 19) OpenCost; (issue 30) the job frameworks the example burst plan
        # enables on every cluster: JobSet, the Kubeflow Trainer, KubeRay.
        "kubernetes:helm.sh/v3:Release": 3 if stack == "dev" else 11,
        "hybridgpu:index:NvidiaLayer": 1,
        "kubernetes:karpenter.sh/v1:NodePool": pools,
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": classes,
        "aws:ec2/subnet:Subnet": 6,
        "aws:ec2/vpc:Vpc": 1,
        "pulumi:providers:aws": 1,
        "pulumi:providers:kubernetes": 1,
    }
    for typ, n in expected.items():
        assert counts.get(typ) == n, (typ, counts.get(typ))
    # EFA (issue 18): the component, its security-group rule and its Kueue queues only where a pool has EFA.
    assert counts.get("hybridgpu:index:Efa", 0) == (stack == "prod")
    assert counts.get("hybridgpu:index:EfaQueues", 0) == (stack == "prod")
    nats = 1 if stack == "dev" else 3
    assert counts["aws:ec2/natGateway:NatGateway"] == nats


def test_children_are_parented_to_their_component(previews):
    result = previews["prod"]
    for typ, component in [
        ("aws:eks/cluster:Cluster", "hybridgpu:index:EksCluster"),
        ("aws:sqs/queue:Queue", "hybridgpu:index:Karpenter"),
        ("aws:ec2/subnet:Subnet", "hybridgpu:index:Network"),
        ("kubernetes:karpenter.sh/v1:NodePool", "hybridgpu:index:GpuNodePools"),
    ]:
        for rec in result.of_type(typ):
            assert _parent(result, rec).type == component
    for rec in result.records:
        if rec.type.startswith("hybridgpu:"):
            assert "::pulumi:pulumi:Stack::" in rec.parent  # components hang off the stack
    # Children are named <component>-<role>.
    for rec in result.records:
        parent = _parent(result, rec)
        if parent is not None:
            assert rec.name.startswith(parent.name + "-"), (rec.name, parent.name)


def test_cluster_is_private_encrypted_logged_and_api_auth(previews):
    dev = _one(previews["dev"], "aws:eks/cluster:Cluster").inputs
    prod = _one(previews["prod"], "aws:eks/cluster:Cluster").inputs
    assert prod["vpcConfig"]["endpointPrivateAccess"] is True
    assert prod["vpcConfig"]["endpointPublicAccess"] is False
    assert dev["vpcConfig"]["endpointPublicAccess"] is True
    assert dev["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert prod["accessConfig"]["authenticationMode"] == "API"
    assert prod["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False
    assert prod["encryptionConfig"]["resources"] == ["secrets"]
    assert prod["encryptionConfig"]["provider"]["keyArn"].startswith("arn:aws:kms:us-east-1:")
    assert set(prod["enabledClusterLogTypes"]) == {"api", "audit", "authenticator", "controllerManager", "scheduler"}
    assert prod["name"] == "gpu-prod" and prod["version"] == "1.35"


def test_private_endpoint_reachable_from_listed_networks(previews):
    # The EKS component's rules (FSx for Lustre adds Lustre-port rules of its own: tests/components/test_storage.py).
    rules = [r for r in previews["prod"].of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule") if "hybridgpu:index:EksCluster$" in r.urn]
    # The VPN/CI network and the MultiKueue manager's VPC (stack hybrid, issue 15: it must reach this API).
    assert [(r.inputs["cidrIpv4"], r.inputs["fromPort"], r.inputs["toPort"]) for r in rules] == [("10.10.0.0/16", 443, 443), ("10.90.0.0/16", 443, 443)]
    assert {r.inputs["securityGroupId"] for r in rules} == {_one(previews["prod"], "aws:ec2/tag:Tag").inputs["resourceId"]}
    assert not previews["dev"].of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")


def test_addons_and_system_node_group(previews):
    result = previews["prod"]
    addons = {r.inputs["addonName"]: r for r in result.of_type("aws:eks/addon:Addon")}
    # + the node monitoring agent of GPU node repair (issue 26; its version: the newest unless pinned)
    assert set(addons) == {"vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent", "eks-node-monitoring-agent"}
    assert all(a.inputs["addonVersion"] for n, a in addons.items() if n != "eks-node-monitoring-agent")
    group = _one(result, "aws:eks/nodeGroup:NodeGroup").inputs
    assert group["capacityType"] == "ON_DEMAND"
    assert group["version"] == "1.35"  # follows the control plane
    assert group["amiType"] == "AL2023_x86_64_STANDARD"
    assert group["taints"] == [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}]
    lt = _one(result, "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert lt["metadataOptions"]["httpTokens"] == "required"
    assert lt["blockDeviceMappings"][0]["ebs"]["encrypted"] == "true"
    instance_tags = [t["tags"] for t in lt["tagSpecifications"] if t["resourceType"] == "instance"][0]
    assert instance_tags["cost-center"] == "cc-1100" and instance_tags["hybridgpu.io/stack"] == "prod"
    # CoreDNS waits for the system nodes.
    group_urn = _one(result, "aws:eks/nodeGroup:NodeGroup").urn
    assert group_urn in addons["coredns"].dependencies


def test_access_entries_for_admins_deployer_and_karpenter_nodes(previews):
    result = previews["prod"]
    entries = {r.inputs["principalArn"]: r.inputs["type"] for r in result.of_type("aws:eks/accessEntry:AccessEntry")}
    assert entries["arn:aws:iam::111122223333:role/platform-admins"] == "STANDARD"
    assert entries["arn:aws:iam::111122223333:role/hybridgpu-deployer"] == "STANDARD"
    assert entries["arn:aws:iam::111122223333:role/KarpenterNode-gpu-prod"] == "EC2_LINUX"
    policies = {r.inputs["policyArn"] for r in result.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")}
    assert policies == {"arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"}


def test_karpenter_iam_trust_and_scoping(previews):
    result = previews["prod"]
    roles = {r.inputs.get("name") or r.name: r for r in result.of_type("aws:iam/role:Role")}
    controller = json.loads(roles["KarpenterController-gpu-prod"].inputs["assumeRolePolicy"])
    stmt = controller["Statement"][0]
    assert stmt["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert stmt["Condition"]["StringEquals"]["aws:RequestTag/eks-cluster-name"] == "gpu-prod"
    assert stmt["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == "karpenter"
    node = json.loads(roles["KarpenterNode-gpu-prod"].inputs["assumeRolePolicy"])
    assert node["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    docs = {r.name: json.loads(r.inputs["policy"]) for r in result.of_type("aws:iam/rolePolicy:RolePolicy")}
    assert len(docs) == 5
    lifecycle = docs["gpu-prod-karpenter-controller-node-lifecycle"]
    assert "kubernetes.io/cluster/gpu-prod" in json.dumps(lifecycle)
    iam_doc = docs["gpu-prod-karpenter-controller-iam-integration"]
    pass_role = [s for s in iam_doc["Statement"] if s["Action"] == "iam:PassRole"][0]
    assert pass_role["Resource"] == "arn:aws:iam::111122223333:role/KarpenterNode-gpu-prod"
    interruption = docs["gpu-prod-karpenter-controller-interruption"]
    assert interruption["Statement"][0]["Resource"] == "arn:aws:sqs:us-east-1:111122223333:gpu-prod"
    assoc = _one(result, "aws:eks/podIdentityAssociation:PodIdentityAssociation").inputs
    assert (assoc["namespace"], assoc["serviceAccount"]) == ("kube-system", "karpenter")
    assert assoc["roleArn"].endswith("role/KarpenterController-gpu-prod")


def test_interruption_queue_and_five_rules(previews):
    result = previews["dev"]
    queue = _one(result, "aws:sqs/queue:Queue").inputs
    assert queue["name"] == "gpu-dev" and queue["sqsManagedSseEnabled"] is True and queue["messageRetentionSeconds"] == 300
    patterns = sorted(json.loads(r.inputs["eventPattern"])["detail-type"][0] for r in result.of_type("aws:cloudwatch/eventRule:EventRule"))
    assert patterns == sorted(
        [
            "AWS Health Event",
            "EC2 Spot Instance Interruption Warning",
            "EC2 Instance Rebalance Recommendation",
            "EC2 Instance State-change Notification",
            "EC2 Capacity Reservation Instance Interruption Warning",
        ]
    )
    targets = result.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert {t.inputs["arn"] for t in targets} == {"arn:aws:sqs:us-west-2:111122223333:gpu-dev"}
    policy = json.loads(_one(result, "aws:sqs/queuePolicy:QueuePolicy").inputs["policy"])
    assert policy["Statement"][0]["Principal"]["Service"] == ["events.amazonaws.com", "sqs.amazonaws.com"]


def test_helm_releases_pinned_and_wired(previews):
    releases = {r.inputs["name"]: r.inputs for r in previews["prod"].of_type("kubernetes:helm.sh/v3:Release")}
    assert releases["karpenter"]["version"] == releases["karpenter-crd"]["version"] == "1.14.1"
    assert releases["karpenter"]["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert releases["karpenter"]["skipCrds"] is True
    settings = releases["karpenter"]["values"]["settings"]
    assert settings["clusterName"] == "gpu-prod" and settings["interruptionQueue"] == "gpu-prod"


def test_tags_reach_provider_subnets_and_instances(previews):
    result = previews["prod"]
    provider = _one(result, "pulumi:providers:aws").inputs
    default_tags = json.loads(provider["defaultTags"]) if isinstance(provider["defaultTags"], str) else provider["defaultTags"]
    assert {"team": "foundation-models", "project": "llm-pretraining", "cost-center": "cc-1100"}.items() <= default_tags["tags"].items()
    private = [s for s in result.of_type("aws:ec2/subnet:Subnet") if "private" in s.name]
    assert private and all(s.inputs["tags"]["karpenter.sh/discovery"] == "gpu-prod" for s in private)
    for nc in result.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"):
        assert nc.inputs["spec"]["tags"]["cost-center"] == "cc-1100"
    sg_tag = _one(result, "aws:ec2/tag:Tag").inputs
    assert sg_tag["key"] == "karpenter.sh/discovery" and sg_tag["resourceId"].startswith("sg-")


def test_nodepools_wait_for_karpenter(previews):
    result = previews["prod"]
    release = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "karpenter"][0]
    for pool in result.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        assert release.urn in pool.dependencies


def test_kubeconfig_output_is_secret(previews):
    assert previews["prod"].outputs["kubeconfig"] == "[secret]"
    assert previews["prod"].outputs["cluster_name"] == "gpu-prod"


def test_nodepool_outputs(previews):
    pools = previews["prod"].outputs["nodepools"]
    assert pools["h100-reserved"]["gpu_limit"] == 32
    assert pools["h100-reserved"]["max_instances"] == 4
    assert pools["h100-on-demand"]["instance_types"] == ["p5.48xlarge"]


def test_existing_vpc_creates_only_discovery_tags(project):
    data = example_stack("dev")
    data["config"]["hybridgpu:cloud"]["network"] = {
        "existing": {"vpcId": "vpc-0abc", "privateSubnetIds": ["subnet-0a1", "subnet-0b2"], "publicSubnetIds": ["subnet-0c3"]}
    }
    write_stack(project, "byo", data)
    result = run_preview("byo", project)
    network = _one(result, "hybridgpu:index:Network")
    children = [r for r in result.records if r.parent == network.urn]
    assert {r.type for r in children} == {"aws:ec2/tag:Tag"}
    assert sorted(r.inputs["resourceId"] for r in children) == ["subnet-0a1", "subnet-0b2"]
    assert not result.of_type("aws:ec2/vpc:Vpc")
    assert _one(result, "aws:eks/cluster:Cluster").inputs["vpcConfig"]["subnetIds"] == ["subnet-0a1", "subnet-0b2"]


def test_no_cloud_section_creates_nothing(root, project):
    data = {"config": {"hybridgpu:tags": {"team": "t", "project": "p", "cost-center": "c"}}}
    write_stack(project, "empty", data)
    result = run_preview("empty", project)
    assert result.records == []


def test_bad_config_stops_program_before_any_registration():
    """The program itself (as under `pulumi up`) validates first and registers nothing."""
    from pulumi.runtime.config import set_all_config
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from hybridgpu.components.program import main
    from hybridgpu.shell.preview import _reset_runtime

    _reset_runtime()
    monitor = RecordingMonitor(HybridMocks(region="us-west-2"))
    pulumi.runtime.set_mocks(monitor.mocks, project="hybridgpu", stack="broken", preview=False, monitor=monitor)
    cloud = {"cluster": {"name": "c"}, "network": {"new": {"availabilityZones": ["us-west-2a", "us-west-2b"]}},
             "nodePools": [{"name": "p", "capacityTypes": ["spot"], "instanceFamilies": ["g5"], "weight": 101}]}
    set_all_config(
        {
            "aws:region": "us-west-2",
            "hybridgpu:tags": json.dumps({"team": "t", "project": "p", "cost-center": "c"}),
            "hybridgpu:cloud": json.dumps(cloud),
        }
    )
    with pytest.raises(pulumi.RunError) as info:
        _sync_await(run_pulumi_func(main))
    message = str(info.value)
    assert "stacks/Pulumi.broken.yaml" in message
    assert "hybridgpu:cloud.nodePools[0].weight" in message
    assert monitor.records == []
    _reset_runtime()
