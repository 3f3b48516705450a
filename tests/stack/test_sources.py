"""Where a policy violation is fixed in a stack file (``hybridgpu/stack/sources.py``): the key path of the
entry that made the resource, refined to the field the policy checks when the file sets it."""

from __future__ import annotations

import pytest

from hybridgpu.stack.load import load_stack
from hybridgpu.stack.sources import resource_key, violation_key
from tests.helpers import ROOT

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


@pytest.fixture(scope="module")
def prod():
    return load_stack("prod", ROOT).config


def _meta(name: str) -> dict:
    return {"metadata": {"name": name}}


def test_resource_keys_follow_the_entries_by_name(prod):
    names = [p.name for p in prod.cloud.node_pools]
    index = names.index("h100-spot")
    assert resource_key(prod, NODEPOOL, _meta("h100-spot")) == f"hybridgpu:cloud.nodePools[{index}]"
    assert resource_key(prod, NODECLASS, _meta("h100")) == "hybridgpu:cloud.nodeClasses[1]"
    assert resource_key(prod, "aws:eks/cluster:Cluster", {}) == "hybridgpu:cloud.cluster"
    # A NodePool no entry made (the user's own, or an unknown name), other types, and no metadata: no key.
    assert resource_key(prod, NODEPOOL, _meta("not-in-the-file")) is None
    assert resource_key(prod, NODEPOOL, {"metadata": "x"}) is None
    assert resource_key(prod, "aws:s3/bucket:Bucket", {}) is None


def test_violation_keys_name_the_field_the_policy_checks_when_the_file_sets_it(prod):
    pool = resource_key(prod, NODEPOOL, _meta("h100-spot"))
    assert violation_key(prod, "nodepool-gpu-limit", pool) == f"{pool}.gpuLimit"
    assert violation_key(prod, "burst-budget", pool) == f"{pool}.gpuLimit"
    assert violation_key(prod, "nodepool-instance-bounds", pool) in (f"{pool}.instanceTypes", f"{pool}.instanceFamilies", f"{pool}.gpuNames")
    assert violation_key(prod, "gpu-workload-requests", pool) == pool  # no field of its own: the entry
    klass = resource_key(prod, NODECLASS, _meta("h100"))
    assert violation_key(prod, "ami-alias-pinned", klass) == f"{klass}.amiAlias"
    # Cost tags are the stack's: fixed at hybridgpu:tags, which prod sets.
    assert violation_key(prod, "required-cost-tags", pool) == "hybridgpu:tags"
    # A whole-stack violation: the section its policy reads, when the file has it.
    assert violation_key(prod, "stack-gpu-ceiling", None) == "hybridgpu:cloud.nodePools"
    assert violation_key(prod, "burst-budget", None) == "hybridgpu:burst"
    assert violation_key(prod, "mig-profiles", None) == "hybridgpu:nvidia"
    # Sections the stack does not set, and policies about nothing in the file: no key.
    assert violation_key(prod, "onprem-host-owner", None) is None
    assert violation_key(prod, "offline-opaque-component", None) is None


def test_the_dev_stack_without_burst_or_tags_fields_gets_no_invented_key():
    dev = load_stack("dev", ROOT).config
    assert violation_key(dev, "burst-budget", None) is None
    pool = resource_key(dev, NODEPOOL, _meta(dev.cloud.node_pools[0].name))
    assert pool == "hybridgpu:cloud.nodePools[0]"
    assert violation_key(dev, "nodepool-gpu-limit", pool) == f"{pool}.gpuLimit"
