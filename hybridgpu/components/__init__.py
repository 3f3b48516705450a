"""Pulumi ComponentResources of hybridgpu: thin shells that turn rendered specs into resources.

All logic that needs no Pulumi (config, catalog, renderers) lives in the ``hybridgpu`` package.
"""
