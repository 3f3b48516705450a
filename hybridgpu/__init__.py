"""hybridgpu: infrastructure as code for hybrid GPU clusters.

Layers, top to bottom (docs/architecture.md; checked by the import-linter contracts in
``pyproject.toml``):

* ``hybridgpu.cli``: the ``hybridgpu`` command, one module per command group;
* ``hybridgpu.shell``: the offline preview under Pulumi's mocks (``shell.preview``) and the
  policy pack, its gRPC analyzer driver and ``hybridgpu check`` (``shell.policy``);
* ``hybridgpu.components``: the ComponentResources and the program (the Pulumi component
  package ``components/`` hosts them for every Pulumi language); with ``shell``, the only
  modules that import Pulumi;
* ``hybridgpu.stack``: reads stack files and validates what needs more than one section or
  file (inventories, burst plans, other stacks, cost reports);
* the pure core below it: ``policy`` (validators), ``burst``, ``economics``, ``onprem``,
  ``render``, ``config`` (schema and single-section checks), ``inventory``, ``mig``,
  ``catalog``, and the shared ``errors``, ``k8s`` names, ``modelbase`` and ``datafile``.

Nothing below ``hybridgpu.components`` imports Pulumi.
"""

__version__ = "0.1.0"
