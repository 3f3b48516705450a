"""Policies for hybrid GPU stacks: untagged and oversized GPU resources, and unsafe settings.

* :mod:`hybridgpu.policy.rules`: the validators (pure functions) and their settings models;
* :mod:`hybridgpu.policy.registry`: :data:`~hybridgpu.policy.registry.POLICIES`, the pack's
  contents (name, group, description, validator, settings, default enforcement);
* :mod:`hybridgpu.shell.policy.analyzer`: start the pack's gRPC analyzer as Pulumi does and talk to it;
* :mod:`hybridgpu.shell.policy.check`: the offline check (``hybridgpu check``): preview under mocks,
  every resource through ``Analyze``, the stack through ``AnalyzeStack``, a report.

The Pulumi policy pack itself is ``policies/`` (``pulumi preview --policy-pack policies``).
Nothing in rules/registry/base/workloads imports Pulumi.
"""
