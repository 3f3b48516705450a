"""One compliant and one non-compliant example per policy, shared by the direct and analyzer tests.

Each case: the policy, its settings (policy-config properties), the compliant resources and the
non-compliant ones with the resource expected in each message. For resource policies every
resource is checked on its own; for stack policies the list is the stack.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from hybridgpu.policy.base import PolicyResource

STACK = "dev"


def res(
    type_: str, name: str, props: dict[str, Any], *, stack: str = STACK, provider: dict[str, Any] | None = None, taggable: bool | None = None
) -> PolicyResource:
    """A resource with a realistic URN in ``stack``; ``taggable`` as the pack would read it from pulumi-aws
    (the analyzer tests ignore it: there the pack reads the installed SDK)."""
    return PolicyResource(type_, name, f"urn:pulumi:{stack}::hybridgpu::{type_}::{name}", props, provider, taggable)


TAGS = {"team": "ml", "project": "llm", "cost-center": "cc-1"}
PROVIDER_WITH_TAGS = {"region": "us-east-1", "defaultTags": '{"tags": {"team": "ml", "project": "llm", "cost-center": "cc-1"}}'}


def nodepool(name: str, *, limit: Any = "8", requirements: list[dict[str, Any]] | None = None, stack: str = STACK) -> PolicyResource:
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                "requirements": requirements
                if requirements is not None
                else [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6.xlarge", "g6.12xlarge"]}],
            }
        }
    }
    if limit is not None:
        spec["limits"] = {"nvidia.com/gpu": limit}
    return res("kubernetes:karpenter.sh/v1:NodePool", name, {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}, stack=stack)


def nodeclass(name: str, *, tags: dict[str, str] | None = None, alias: str = "al2023@v20261112", tokens: str | None = "required", encrypted: Any = True, stack: str = STACK) -> PolicyResource:
    spec: dict[str, Any] = {
        "role": "KarpenterNode",
        "amiSelectorTerms": [{"alias": alias}],
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi", "encrypted": encrypted}}],
        "tags": TAGS if tags is None else tags,
    }
    if tokens is not None:
        spec["metadataOptions"] = {"httpTokens": tokens}
    return res("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", name, {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec}, stack=stack)


def job(name: str, *, labels: dict[str, str] | None = None, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, parallelism: int | None = None) -> PolicyResource:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": dict(TAGS) if labels is None else labels},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "img:1", "resources": resources}]},
        }
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    return res("kubernetes:batch/v1:Job", name, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec})


def kubeconfig(user: dict[str, Any], cluster_extra: dict[str, Any] | None = None) -> str:
    import yaml

    cluster = {"server": "https://10.0.0.1:6443", "certificate-authority-data": "Q0E=", **(cluster_extra or {})}
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "w", "cluster": cluster}],
            "users": [{"name": "w", "user": user}],
            "contexts": [{"name": "w", "context": {"cluster": "w", "user": "w"}}],
            "current-context": "w",
        }
    )


def multikueue(secret_text: str, *, encoded: bool = False) -> list[PolicyResource]:
    data = {"data": {"kubeconfig": base64.b64encode(secret_text.encode()).decode()}} if encoded else {"stringData": {"kubeconfig": secret_text}}
    return [
        res("kubernetes:core/v1:Secret", "worker-secret", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "onprem", "namespace": "kueue-system"}, **data}),
        res(
            "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster",
            "onprem-cluster",
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": "onprem"}, "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "onprem"}}}},
        ),
    ]


@dataclass
class Case:
    """A policy example: ``good`` passes, each of ``bad`` is reported, naming ``bad_names``."""

    policy: str
    good: list[PolicyResource]
    bad: list[PolicyResource]
    bad_names: list[str]
    settings: dict[str, Any] = field(default_factory=dict)
    expect: str = "Fix:"
    id: str = ""


CASES: list[Case] = [
    Case(
        "required-cost-tags",
        good=[
            res("aws:ec2/vpc:Vpc", "vpc-default-tags", {"cidrBlock": "10.0.0.0/16"}, provider=PROVIDER_WITH_TAGS, taggable=True),
            res("aws:ec2/vpc:Vpc", "vpc-own-tags", {"cidrBlock": "10.0.0.0/16", "tags": TAGS}, taggable=True),
            res("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "not-taggable", {"clusterName": "c"}, taggable=False),
            res("aws:batch/computeEnvironment:ComputeEnvironment", "batch-tagged", {"type": "MANAGED", "computeResources": {"type": "EC2", "maxVcpus": 64, "instanceTypes": ["g6.xlarge"], "tags": TAGS}}, provider=PROVIDER_WITH_TAGS, taggable=True),
        ],
        bad=[
            res("aws:ec2/vpc:Vpc", "vpc-untagged", {"cidrBlock": "10.0.0.0/16"}, taggable=True),
            res("aws:sqs/queue:Queue", "queue-partly", {"tags": {"team": "ml", "project": ""}}, provider={"defaultTags": '{"tags": {"cost-center": "cc"}}'}),
            # provider defaultTags reach the compute environment, not the instances it launches
            res("aws:batch/computeEnvironment:ComputeEnvironment", "batch-instances-untagged", {"type": "MANAGED", "computeResources": {"type": "EC2", "maxVcpus": 64, "instanceTypes": ["g6.xlarge"]}}, provider=PROVIDER_WITH_TAGS, taggable=True),
        ],
        bad_names=["vpc-untagged", "queue-partly", "batch-instances-untagged"],
        expect="project",
    ),
    Case(
        "ec2nodeclass-cost-tags",
        good=[nodeclass("tagged")],
        bad=[nodeclass("untagged", tags={"team": "ml"})],
        bad_names=["untagged"],
        expect="cost-center, project",
    ),
    Case(
        "gpu-workload-cost-labels",
        good=[job("labelled", limits={"nvidia.com/gpu": "1"}), job("cpu-only", labels={}, limits={"cpu": "1"})],
        bad=[job("unlabelled", labels={"app": "x"}, limits={"nvidia.com/mig-1g.10gb": "1"})],
        bad_names=["unlabelled"],
        expect="spec.template.metadata.labels",
    ),
    Case(
        "onprem-host-owner",
        good=[res("hybridgpu:index:OnPremHost", "site-a-dgx-01", {"hostname": "dgx-01", "owner": "ml-platform"})],
        bad=[res("hybridgpu:index:OnPremHost", "site-a-dgx-02", {"hostname": "dgx-02", "owner": None})],
        bad_names=["site-a-dgx-02"],
        expect="metadata.owner",
    ),
    Case(
        "nodepool-gpu-limit",
        good=[
            nodepool("bounded", limit="32"),
            nodepool("cpu-only", limit="0"),
            nodepool("cpu-by-category", limit=None, requirements=[{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]}]),
        ],
        bad=[
            nodepool("no-limit", limit=None),
            nodepool("too-many", limit=128),
            nodepool("garbage", limit="lots"),
            nodepool("gpu-category-no-limit", limit=None, requirements=[{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["g"]}]),
        ],
        bad_names=["no-limit", "too-many", "garbage", "gpu-category-no-limit"],
    ),
    Case(
        "nodepool-instance-bounds",
        good=[
            nodepool("types"),
            nodepool(
                "families-bounded",
                requirements=[
                    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]},
                    {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lt", "values": ["5"]},
                ],
            ),
            # Karpenter's instance-category (karpenter-provider-aws pkg/apis/v1/labels.go): a pool of t
            # (or c/m/r) types cannot launch a GPU type, whatever its limits.
            nodepool("cpu-burstable", limit=None, requirements=[{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["t"]}]),
            nodepool("cpu-general", requirements=[
                {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
            ]),
        ],
        bad=[
            nodepool("unbounded", requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]),
            nodepool("gpu-category", requirements=[{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["g", "t"]}]),
            nodepool("not-p-only", requirements=[{"key": "karpenter.k8s.aws/instance-category", "operator": "NotIn", "values": ["p"]}]),
            nodepool("families-only", requirements=[{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]}]),
            nodepool("p5-in-dev", requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}]),
            nodepool("unknown-type", requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g9.xlarge"]}]),
        ],
        bad_names=["unbounded", "gpu-category", "not-p-only", "families-only", "p5-in-dev", "unknown-type"],
        settings={"allowedInstanceFamilies": {"default": ["g5", "g6", "p5"], "dev": ["g5", "g6", "g9"]}, "maxGpusPerInstance": 4},
    ),
    Case(
        "gpu-instance-size",
        good=[
            res("aws:ec2/launchTemplate:LaunchTemplate", "lt-g6", {"instanceType": "g6.xlarge"}),
            res("aws:eks/nodeGroup:NodeGroup", "ng-small", {"instanceTypes": ["g6.12xlarge"], "scalingConfig": {"maxSize": 4, "minSize": 0, "desiredSize": 0}}),
            res("aws:ec2/instance:Instance", "cpu-box", {"instanceType": "m7i.large"}),
            # GPU capacity outside EC2 instances, fleets and ASGs, within the bounds (pulumi-aws 7.51.1 input names).
            res("aws:batch/computeEnvironment:ComputeEnvironment", "batch-cpu", {"type": "MANAGED", "computeResources": {"type": "EC2", "maxVcpus": 4096, "instanceTypes": ["optimal"]}}),
            res("aws:batch/computeEnvironment:ComputeEnvironment", "batch-g6", {"type": "MANAGED", "computeResources": {"type": "SPOT", "maxVcpus": 64, "instanceTypes": ["g6.xlarge"]}}),
            res("aws:sagemaker/endpointConfiguration:EndpointConfiguration", "ep-small", {"productionVariants": [{"variantName": "a", "modelName": "m", "instanceType": "ml.g5.xlarge", "initialInstanceCount": 2}]}),
            res("aws:sagemaker/notebookInstance:NotebookInstance", "nb-g5", {"instanceType": "ml.g5.xlarge", "roleArn": "arn:aws:iam::1:role/r"}),
            res("aws:emr/cluster:Cluster", "emr-small", {"masterInstanceGroup": {"instanceType": "m5.xlarge"}, "coreInstanceGroup": {"instanceType": "g5.2xlarge", "instanceCount": 4}}),
        ],
        bad=[
            res("aws:ec2/instance:Instance", "p5-box", {"instanceType": "p5.48xlarge"}),
            res("aws:eks/nodeGroup:NodeGroup", "ng-huge", {"instanceTypes": ["g6.48xlarge"], "scalingConfig": {"maxSize": 20}}),
            # maxVcpus 1024 / 96 vCPUs of p4d.24xlarge = 11 instances (rounded up) x 8 GPUs, and p4d is not allowed
            res("aws:batch/computeEnvironment:ComputeEnvironment", "batch-p4d", {"type": "MANAGED", "computeResources": {"type": "EC2", "maxVcpus": 1024, "instanceTypes": ["p4d.24xlarge"]}}),
            res("aws:sagemaker/endpointConfiguration:EndpointConfiguration", "ep-big", {"productionVariants": [
                {"variantName": "a", "modelName": "m", "instanceType": "ml.g5.12xlarge", "initialInstanceCount": 2},
                {"variantName": "b", "modelName": "m", "instanceType": "ml.g6.48xlarge", "initialInstanceCount": 1, "managedInstanceScaling": {"maxInstanceCount": 8}}]}),
            res("aws:sagemaker/notebookInstance:NotebookInstance", "nb-p5", {"instanceType": "ml.p5.48xlarge", "roleArn": "arn:aws:iam::1:role/r"}),
            res("aws:emr/instanceFleet:InstanceFleet", "emr-fleet", {"clusterId": "j-1", "instanceTypeConfigs": [{"instanceType": "g5.xlarge"}], "targetSpotCapacity": 100}),
            res("aws:ec2/capacityBlockReservation:CapacityBlockReservation", "capacity-block", {"capacityBlockOfferingId": "cb-0123", "instancePlatform": "Linux/UNIX"}),
            res("aws-native:sagemaker:Cluster", "hyperpod", {"instanceGroups": [{"instanceGroupName": "w", "instanceType": "ml.g6.48xlarge", "instanceCount": 10, "executionRole": "r"}]}),
        ],
        bad_names=["p5-box", "ng-huge", "batch-p4d", "ep-big", "nb-p5", "emr-fleet", "capacity-block", "hyperpod"],
        settings={"allowedInstanceFamilies": ["g5", "g6"]},
    ),
    Case(
        "gpu-workload-requests",
        good=[job("fits", limits={"nvidia.com/gpu": "4"}, requests={"nvidia.com/gpu": "4"}), job("limits-only", limits={"nvidia.com/gpu": "2"}, parallelism=4)],
        bad=[
            job("mismatch", requests={"nvidia.com/gpu": "1"}, limits={"nvidia.com/gpu": "2"}),
            job("requests-only", requests={"nvidia.com/gpu": "1"}),
            job("huge-pod", limits={"nvidia.com/gpu": "16"}),
            job("wide", limits={"nvidia.com/gpu": "8"}, parallelism=16),
        ],
        bad_names=["mismatch", "requests-only", "huge-pod", "wide"],
    ),
    Case(
        "mig-profiles",
        good=[
            res("kubernetes:core/v1:ConfigMap", "mig-ok", {"data": {"config.yaml": "version: v1\nmig-configs:\n  a:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {1g.10gb: 7}\n"}}),
            job("mig-pod", limits={"nvidia.com/mig-3g.40gb": "1"}),
        ],
        bad=[
            res("kubernetes:core/v1:ConfigMap", "mig-whole", {"data": {"config.yaml": "version: v1\nmig-configs:\n  a:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {7g.80gb: 1}\n"}}),
            job("mig-typo", limits={"nvidia.com/mig-9g.99gb": "1"}),
            job("mig-whole-pod", limits={"nvidia.com/mig-7g.80gb": "1"}),
        ],
        bad_names=["mig-whole", "mig-typo", "mig-whole-pod"],
    ),
    Case(
        "stack-gpu-ceiling",
        good=[nodepool("a", limit="64"), nodepool("b", limit="64")],
        bad=[nodepool("a", limit="64"), nodepool("b", limit="64"), res("aws:eks/nodeGroup:NodeGroup", "ng", {"instanceTypes": ["p5.48xlarge"], "scalingConfig": {"maxSize": 2}})],
        bad_names=[""],
        settings={"maxGpusPerStack": 140},
        expect="144 GPUs",
    ),
    Case(
        "burst-budget",
        good=[nodepool("small", limit="4"), nodepool("cpu-by-category", limit=None, requirements=[{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}])],
        bad=[nodepool("small", limit="4"), nodepool("big", limit="64"), nodepool("p5e-unpriced", requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5e.48xlarge"]}])],
        bad_names=["", "p5e-unpriced"],
        settings={"monthlyBudgetUsd": 20000},
        expect="budget",
    ),
    Case(
        "imdsv2-required",
        good=[
            res("aws:ec2/launchTemplate:LaunchTemplate", "lt-v2", {"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1}}),
            nodeclass("default-tokens", tokens=None),
            res("aws:ec2/spotInstanceRequest:SpotInstanceRequest", "spot-v2", {"instanceType": "g5.xlarge", "metadataOptions": {"httpTokens": "required"}}),
        ],
        bad=[
            res("aws:ec2/launchTemplate:LaunchTemplate", "lt-v1", {}),
            nodeclass("optional-tokens", tokens="optional"),
            res("aws:ec2/spotInstanceRequest:SpotInstanceRequest", "spot-v1", {"instanceType": "g5.xlarge", "metadataOptions": {"httpTokens": "optional"}}),
        ],
        bad_names=["lt-v1", "optional-tokens", "spot-v1"],
    ),
    Case(
        "encrypted-volumes",
        good=[
            res("aws:ec2/launchTemplate:LaunchTemplate", "lt-enc", {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}]}),
            nodeclass("enc"),
            res("aws:eks/nodeGroup:NodeGroup", "ng-lt", {"launchTemplate": {"id": "lt-1", "version": "1"}}),
            res("aws:ec2/spotInstanceRequest:SpotInstanceRequest", "spot-enc", {"instanceType": "g5.xlarge", "rootBlockDevice": {"encrypted": True}}),
        ],
        bad=[
            res("aws:ec2/launchTemplate:LaunchTemplate", "lt-plain", {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 100}}]}),
            nodeclass("plain", encrypted=False),
            res("aws:ebs/volume:Volume", "scratch", {"size": 100}),
            res("aws:eks/nodeGroup:NodeGroup", "ng-no-lt", {"instanceTypes": ["m7i.large"]}),
            res("aws:ec2/spotInstanceRequest:SpotInstanceRequest", "spot-plain", {"instanceType": "g5.xlarge", "rootBlockDevice": {"volumeSize": 200}}),
        ],
        bad_names=["lt-plain", "plain", "scratch", "ng-no-lt", "spot-plain"],
    ),
    Case(
        "eks-endpoint-private",
        good=[
            res("aws:eks/cluster:Cluster", "private", {"vpcConfig": {"endpointPublicAccess": False, "endpointPrivateAccess": True}}),
            res("aws:eks/cluster:Cluster", "vpn-only", {"vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}}),
        ],
        bad=[
            res("aws:eks/cluster:Cluster", "default-public", {"vpcConfig": {"subnetIds": ["s-1"]}}),
            res("aws:eks/cluster:Cluster", "open", {"vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}}),
        ],
        bad_names=["default-public", "open"],
    ),
    Case(
        "ami-alias-pinned",
        good=[nodeclass("pinned", stack="prod"), nodeclass("latest-in-dev", alias="al2023@latest")],
        bad=[nodeclass("latest-in-prod", alias="al2023@latest", stack="prod")],
        bad_names=["latest-in-prod"],
        expect="al2023@v",
    ),
    Case(
        "kubeadm-ca-verification",
        good=[
            res("hybridgpu:index:OnPremHost", "pinned-host", {"kubeadmConfig": "discovery:\n  bootstrapToken:\n    caCertHashes: [sha256:abc]\n"}),
            res("command:remote:Command", "join", {"create": "sudo kubeadm join --config /etc/kubeadm.yaml"}),
        ],
        bad=[
            res("hybridgpu:index:OnPremHost", "skip-host", {"kubeadmConfig": "discovery:\n  bootstrapToken:\n    unsafeSkipCAVerification: true\n"}),
            res("command:remote:Command", "skip-flag", {"stdin": "kubeadm join x --discovery-token-unsafe-skip-ca-verification"}),
        ],
        bad_names=["skip-host", "skip-flag"],
    ),
    Case(
        "multikueue-kubeconfig",
        good=multikueue(kubeconfig({"token": "sa-token"}), encoded=True),
        bad=multikueue(kubeconfig({"exec": {"command": "aws"}}, {"insecure-skip-tls-verify": True})),
        bad_names=["worker-secret"],
        expect="exec",
    ),
]


def deployment(name: str, *, gpus: str = "2", replicas: int = 1, namespace: str = "ml") -> PolicyResource:
    """An apps/v1 Deployment whose pods each ask for ``gpus`` nvidia.com/gpu."""
    spec = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name, **TAGS}},
            "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai:v0.11.0", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
        },
    }
    return res("kubernetes:apps/v1:Deployment", name, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace}, "spec": spec})


def hpa(name: str, target: str, max_replicas: int, *, namespace: str = "ml") -> PolicyResource:
    return res(
        "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
        name,
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}, "minReplicas": 1, "maxReplicas": max_replicas},
        },
    )


CASES += [
    Case(
        "gpu-workload-autoscaling",
        good=[deployment("llm"), hpa("llm", "llm", 8)],
        bad=[
            deployment("llm"),
            hpa("llm-hpa", "llm", 50),
            res(
                "kubernetes:keda.sh/v1alpha1:ScaledObject",
                "llm-keda",
                {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "llm-keda", "namespace": "ml"}, "spec": {"scaleTargetRef": {"name": "llm"}}},
            ),
        ],
        bad_names=["llm-hpa", "llm-keda"],
        expect="GPUs",
    ),
    Case(
        "helm-values-capacity",
        good=[
            res("kubernetes:helm.sh/v3:Release", "gpu-operator", {"chart": "gpu-operator", "values": {"devicePlugin": {"config": {"name": "time-slicing"}}, "driver": {"enabled": False}}}),
            # GPU names as label, selector and toleration keys select GPU nodes and request nothing
            # (values of NVIDIA's nvidia-device-plugin chart: nodeSelector, affinity, tolerations).
            res("kubernetes:helm.sh/v3:Release", "device-plugin", {"chart": "nvidia-device-plugin", "values": {
                "nodeSelector": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu": "true"},
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]}}},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "podLabels": {"nvidia.com/gpu.deploy.device-plugin": "true"},
            }}),
        ],
        bad=[
            res("kubernetes:helm.sh/v3:Release", "vllm", {"chart": "vllm", "values": {"resources": {"limits": {"nvidia.com/gpu": 8}}, "replicaCount": 20}}),
            res("kubernetes:helm.sh/v3:Release", "gpu-count", {"chart": "trainer", "values": {"worker": {"gpus": {"nvidia.com/gpu": "4"}}}}),
            res("kubernetes:helm.sh/v3:Release", "pools", {"chart": "karpenter-nodepools", "values": {"nodePools": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "spec": {}}]}}),
        ],
        bad_names=["vllm", "gpu-count", "pools"],
        expect="Helm values",
    ),
]

for case in CASES:
    case.id = case.policy


def efa_job(name: str, *, limits: dict[str, Any], requests: dict[str, Any] | None = None, selector: bool = True, affinity_terms: list[dict[str, Any]] | None = None) -> PolicyResource:
    """A Job whose pod asks for EFA devices (and GPUs), selecting the EFA pool label unless ``selector`` is False."""
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "img:1", "resources": {"limits": limits, **({"requests": requests} if requests else {})}}],
    }
    if selector:
        pod["nodeSelector"] = {"hybridgpu.io/efa": "true"}
    if affinity_terms is not None:
        pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": affinity_terms}}}
    spec = {"template": {"metadata": {"labels": dict(TAGS)}, "spec": pod}}
    return res("kubernetes:batch/v1:Job", name, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec})


_EFA_TERM = {"matchExpressions": [{"key": "hybridgpu.io/efa", "operator": "In", "values": ["true"]}]}
CASES += [
    Case(
        "efa-workload-requests",
        good=[
            efa_job("p5-full", limits={"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}),
            efa_job("p4d-by-affinity", limits={"vpc.amazonaws.com/efa": 4}, requests={"vpc.amazonaws.com/efa": 4}, selector=False, affinity_terms=[_EFA_TERM]),
            job("no-efa", limits={"nvidia.com/gpu": "1"}),
        ],
        bad=[
            efa_job("no-selector", limits={"vpc.amazonaws.com/efa": "32"}, selector=False),
            efa_job("one-term-open", limits={"vpc.amazonaws.com/efa": "32"}, selector=False, affinity_terms=[_EFA_TERM, {"matchExpressions": [{"key": "x", "operator": "Exists"}]}]),
            efa_job("too-many", limits={"vpc.amazonaws.com/efa": "64"}),
            efa_job("half-device", limits={"vpc.amazonaws.com/efa": "500m"}),
            efa_job("requests-differ", limits={"vpc.amazonaws.com/efa": "32"}, requests={"vpc.amazonaws.com/efa": "16"}),
            efa_job("not-a-number", limits={"vpc.amazonaws.com/efa": "all"}),
        ],
        bad_names=["no-selector", "one-term-open", "too-many", "half-device", "requests-differ", "not-a-number"],
        id="efa-workload-requests",
    ),
]


# issue 26: GPU capacity without repair or health detection (advisory by default)
_AGENT = res("aws:eks/addon:Addon", "node-monitoring", {"clusterName": "ml", "addonName": "eks-node-monitoring-agent"})
_KARPENTER_REPAIR = res("kubernetes:helm.sh/v3:Release", "karpenter", {"chart": "oci://public.ecr.aws/karpenter/karpenter", "values": {"settings": {"featureGates": {"nodeRepair": True}}}})
_NVSENTINEL = res("kubernetes:helm.sh/v3:Release", "nvsentinel", {"chart": "oci://ghcr.io/nvidia/nvsentinel", "name": "nvsentinel"})
CASES.append(
    Case(
        "gpu-repair-coverage",
        good=[_AGENT, _KARPENTER_REPAIR, _NVSENTINEL, nodepool("covered-pool"), res("hybridgpu:index:OnPremHost", "covered-host", {"hostname": "h1", "gpuCount": 8.0})],
        bad=[nodepool("bare-pool"), res("hybridgpu:index:OnPremHost", "bare-host", {"hostname": "h2", "gpuCount": 8.0})],
        bad_names=["bare-pool", "bare-host"],
        expect="without repair",
        id="gpu-repair-coverage",
    )
)

