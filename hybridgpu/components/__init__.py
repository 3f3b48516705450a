"""Pulumi ComponentResources of hybridgpu: thin shells that turn rendered specs into resources.

All logic that needs no Pulumi (config, catalog, renderers) lives in the ``hybridgpu`` package.
Each component takes ``(name, args: <Class>Args, opts)`` and registers as ``hybridgpu:index:<Class>``
(:mod:`hybridgpu.components.base`); :mod:`hybridgpu.components.public` lists those the component
package ``components/`` hosts for other languages (docs/components.md).
"""
