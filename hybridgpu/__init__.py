"""hybridgpu: infrastructure as code for hybrid GPU clusters.

The package is the pure core: typed configuration, the GPU catalog, renderers for
Karpenter/IAM/network specs and the offline preview runner. Nothing under
``hybridgpu.config``, ``hybridgpu.catalog`` or ``hybridgpu.render`` imports Pulumi;
the Pulumi ComponentResources live in the top-level ``components`` package.
"""

__version__ = "0.1.0"
