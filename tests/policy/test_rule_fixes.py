"""Rule fixes of issue 25, called directly: config schema as the Pulumi CLI checks it, GPU pools
read from Karpenter's instance-category, GPU counts of Batch / SageMaker / EMR capacity, and fixes
worded for the project being checked."""

from __future__ import annotations

import pytest

from hybridgpu.policy import capacity
from hybridgpu.policy.base import PolicyResource
from hybridgpu.policy.oversized import _may_pick_gpus
from hybridgpu.policy.registry import BY_NAME
from tests.helpers.policy_cases import nodepool, res

CATEGORY = "karpenter.k8s.aws/instance-category"


@pytest.mark.parametrize(
    ("raw", "problems"),
    [
        ({"maxGpusPerNodePool": 64}, []),
        ({"maxGpusPerNodePool": {"default": 64, "prod-*": 128}}, []),
        # pulumi/pulumi pkg/resource/analyzer/config.go validates against the published schema:
        # a string is not an integer there, though pydantic's lax mode would accept it.
        ({"maxGpusPerNodePool": "64"}, [("maxGpusPerNodePool", "write 64, without quotes")]),
        ({"maxGpusPerNodePool": {"default": "8"}}, [("maxGpusPerNodePool.default", "write 8, without quotes")]),
        ({"allowedInstanceFamilies": "g6"}, [("allowedInstanceFamilies", "array or object")]),
    ],
)
def test_config_is_checked_against_the_published_schema(raw, problems):
    got = BY_NAME["nodepool-gpu-limit"].schema_problems(raw)
    assert [p for p, _ in got] == [p for p, _ in problems]
    for (_, message), (_, text) in zip(got, problems):
        assert text in message


@pytest.mark.parametrize(
    ("requirements", "gpu"),
    [
        ([{"key": CATEGORY, "operator": "In", "values": ["t"]}], False),
        ([{"key": CATEGORY, "operator": "In", "values": ["c", "m", "r"]}], False),
        ([{"key": CATEGORY, "operator": "NotIn", "values": ["g", "p"]}], True),  # gr, dl, trn, inf remain
        ([{"key": CATEGORY, "operator": "In", "values": ["g"]}], True),
        ([{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i", "c7g"]}], False),
        ([{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["trn2"]}], True),  # not in the catalog
        ([{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lt", "values": ["1"]}], False),
        ([{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m7i.large", "g6.xlarge"]}], True),
        ([{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}], True),
    ],
)
def test_gpu_pool_is_read_from_its_requirements(requirements, gpu):
    assert _may_pick_gpus(nodepool("p", limit=None, requirements=requirements)) is gpu


def test_sagemaker_types_are_the_ec2_type_behind_ml():
    p5 = capacity.instance_type("ml.p5.48xlarge")
    assert p5 is not None and p5.gpu_count == 8
    assert capacity.family_of("ml.g5.xlarge") == "g5" and capacity.is_gpu_type("ml.trn1.32xlarge")


@pytest.mark.parametrize(
    ("props", "gpus"),
    [
        # ceil(1024 vCPUs / 96 vCPUs per p4d.24xlarge) = 11 instances x 8 GPUs
        ({"computeResources": {"type": "EC2", "maxVcpus": 1024, "instanceTypes": ["p4d.24xlarge"]}}, 88),
        # a family lets Batch pick any size; the worst case counts (g5.48xlarge: ceil(16/192) = 1 x 8)
        ({"computeResources": {"type": "SPOT", "maxVcpus": 16, "instanceTypes": ["g5"]}}, 8),
        ({"computeResources": {"type": "FARGATE", "maxVcpus": 1024}}, 0),
    ],
)
def test_batch_gpus_from_max_vcpus(props, gpus):
    [cap] = capacity.capacities([res(capacity.BATCH_COMPUTE_ENVIRONMENT, "b", props)])
    assert cap.gpus() == gpus


def test_grouped_capacity_adds_its_groups():
    emr = res(capacity.EMR_CLUSTER, "emr", {
        "masterInstanceGroup": {"instanceType": "g5.xlarge"},
        "coreInstanceGroup": {"instanceType": "g5.2xlarge", "instanceCount": 2, "autoscalingPolicy": '{"Constraints": {"MinCapacity": 1, "MaxCapacity": 10}}'},
    })
    [cap] = capacity.capacities([emr])
    assert cap.gpus() == 1 + 10


def _foreign(resource: PolicyResource) -> PolicyResource:
    return PolicyResource(resource.type, resource.name, resource.urn.replace("::hybridgpu::", "::team-infra::"), resource.props, resource.provider_props, resource.taggable)


def test_fixes_name_what_works_in_the_checked_project():
    bucket = res("aws:s3/bucket:Bucket", "data", {}, taggable=True)
    tags = BY_NAME["required-cost-tags"]
    settings = tags.parse_settings({})
    [ours] = tags.run_resource(bucket, settings)
    [theirs] = tags.run_resource(_foreign(bucket), settings)
    assert "hybridgpu:tags" in ours and "hybridgpu:tags" not in theirs and "aws:defaultTags" in theirs
    pool = nodepool("gpu", limit=None)
    limit = BY_NAME["nodepool-gpu-limit"]
    [ours] = limit.run_resource(pool, limit.parse_settings({}))
    [theirs] = limit.run_resource(_foreign(pool), limit.parse_settings({}))
    assert "gpuLimit" in ours and "gpuLimit" not in theirs and 'spec.limits["nvidia.com/gpu"]' in theirs
