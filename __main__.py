"""Pulumi entry point (``runtime: python``): see :mod:`components.program`."""

from components.program import main

main()
