"""Typed stack configuration: the schema of every ``hybridgpu:`` section and the checks that read
one section only (pure, no Pulumi, nothing above it). Reading and validating a whole stack is
:mod:`hybridgpu.stack`'s work.
"""

from hybridgpu.config.models import CloudConfig, Environment, NodeClassConfig, NodePoolConfig, StackConfig

__all__ = [
    "CloudConfig",
    "Environment",
    "NodeClassConfig",
    "NodePoolConfig",
    "StackConfig",
]
