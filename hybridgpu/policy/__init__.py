"""Policies for hybrid GPU stacks: untagged and oversized GPU resources, and unsafe settings.

* the validators (pure functions) and their settings models, one module per group:
  :mod:`hybridgpu.policy.untagged`, :mod:`hybridgpu.policy.oversized`, :mod:`hybridgpu.policy.safety`
  (and :mod:`hybridgpu.policy.efa`), on the shared shapes of :mod:`hybridgpu.policy.base`;
* :mod:`hybridgpu.policy.registry`: :data:`~hybridgpu.policy.registry.POLICIES`, the pack's
  contents (name, group, description, validator, settings, default enforcement);
* :mod:`hybridgpu.shell.policy.analyzer`: start the pack's gRPC analyzer as Pulumi does and talk to it;
* :mod:`hybridgpu.shell.policy.check`: the offline check (``hybridgpu check``): preview under mocks,
  every resource through ``Analyze``, the stack through ``AnalyzeStack``, a report.

The Pulumi policy pack itself is ``policies/`` (``pulumi preview --policy-pack policies``).
Nothing in this package imports Pulumi.
"""
