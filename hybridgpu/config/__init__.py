"""Typed stack configuration: models, loader and checks (pure, no Pulumi)."""

from hybridgpu.config.loader import (
    config_from_pulumi_values,
    list_stacks,
    load_stack_config,
    read_stack_file,
)
from hybridgpu.config.models import CloudConfig, Environment, NodeClassConfig, NodePoolConfig, StackConfig

__all__ = [
    "CloudConfig",
    "Environment",
    "NodeClassConfig",
    "NodePoolConfig",
    "StackConfig",
    "config_from_pulumi_values",
    "list_stacks",
    "load_stack_config",
    "read_stack_file",
]
