"""The Pulumi shell above the components: the offline preview and the policy pack.

Everything of hybridgpu that imports Pulumi lives here or in :mod:`hybridgpu.components` (the
ComponentResources and the program; ``__main__.py`` calls :func:`hybridgpu.components.program.main`):

* :mod:`hybridgpu.shell.preview`: the program under Pulumi's own mocks (``hybridgpu preview``);
* :mod:`hybridgpu.shell.policy`: the ``pulumi_policy`` pack assembled from the pure validators
  of :mod:`hybridgpu.policy`, the gRPC analyzer driver and ``hybridgpu check``.

The shell turns what the core computes into resources; it decides nothing the core could.
"""
