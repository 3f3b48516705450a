"""Pulumi entry point (``runtime: python``): see :mod:`hybridgpu.shell.components.program`."""

from hybridgpu.shell.components.program import main

main()
