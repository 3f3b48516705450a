"""The hybridgpu policy pack: blocks untagged and oversized GPU resources and unsafe settings.

Run it with the Pulumi CLI::

    pulumi preview --policy-pack policies [--policy-pack-config policies/config.example.json]

or offline, without cloud credentials or the CLI::

    hybridgpu check [STACK ...]

The validators live in :mod:`hybridgpu.policy` (docs/policies.md describes each); this module
only assembles them into the pack. Constructing ``PolicyPack`` starts the gRPC analyzer,
prints its port and serves until the CLI stops it.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from hybridgpu.shell.policy.pack import build_policies
from hybridgpu.policy.registry import PACK_NAME

PolicyPack(
    name=PACK_NAME,
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=build_policies(),
    description="Blocks untagged and oversized GPU resources and unsafe cluster settings (hybridgpu).",
)
