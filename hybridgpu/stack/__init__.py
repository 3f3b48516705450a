"""The stack layer: everything that reads more than one section of a stack, or more than one file.

Above :mod:`hybridgpu.config` (schema and single-section checks), :mod:`hybridgpu.burst`,
:mod:`hybridgpu.economics` and :mod:`hybridgpu.render`; below the Pulumi shell and the CLI.

* :mod:`hybridgpu.stack.files`: reading ``Pulumi.yaml`` and stack files as the Pulumi CLI does;
* :mod:`hybridgpu.stack.load`: :func:`load_stack` / :func:`validate_stack`, the one validation of a stack;
* :mod:`hybridgpu.stack.checks`: the cross-section checks;
* :mod:`hybridgpu.stack.inventory`, :mod:`hybridgpu.stack.burst`, :mod:`hybridgpu.stack.economics`:
  the inventory, the burst plan (with the other stacks it names) and the cost report of a stack.
"""

from hybridgpu.stack.files import StackValues, find_project_root, list_stacks, read_stack_file
from hybridgpu.stack.load import Stack, config_from_pulumi_values, load_stack, load_stack_config, report_from_stack, validate_stack

__all__ = [
    "Stack",
    "StackValues",
    "config_from_pulumi_values",
    "find_project_root",
    "list_stacks",
    "load_stack",
    "load_stack_config",
    "read_stack_file",
    "report_from_stack",
    "validate_stack",
]
