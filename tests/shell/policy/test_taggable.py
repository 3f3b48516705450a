"""Which AWS types take tags, read from the installed pulumi-aws (shell), and how the pack hands it over."""

from __future__ import annotations

from types import SimpleNamespace

from hybridgpu.shell.policy.pack import _resource
from hybridgpu.shell.policy.taggable import is_taggable


def test_taggable_types_come_from_the_sdk():
    assert is_taggable("aws:ec2/vpc:Vpc") is True
    assert is_taggable("aws:eks/accessPolicyAssociation:AccessPolicyAssociation") is False
    assert is_taggable("aws:ec2/noSuchThing:NoSuchThing") is None
    assert is_taggable("aws:noSuchModule/x:X") is None
    assert is_taggable("pulumi:providers:aws") is None
    assert is_taggable("kubernetes:core/v1:ConfigMap") is None


def test_the_pack_puts_taggable_on_each_resource():
    args = SimpleNamespace(resource_type="aws:ec2/vpc:Vpc", name="v", urn="urn:pulumi:dev::hybridgpu::aws:ec2/vpc:Vpc::v", props={}, provider=None)
    assert _resource(args).taggable is True
    args.resource_type = "kubernetes:core/v1:ConfigMap"
    assert _resource(args).taggable is None
