"""Bursting GPU jobs from on-prem to EKS with Kueue MultiKueue (pure core, no Pulumi).

* :mod:`hybridgpu.burst.models`: the ``hybridgpu:burst`` stack section and the burst plan file;
* :mod:`hybridgpu.burst.plan`: :func:`~hybridgpu.burst.plan.plan_burst`, the one place quotas are derived;
* :mod:`hybridgpu.burst.kueue`: Kueue v1beta2 objects, Helm values and exec-free worker kubeconfigs;
* :mod:`hybridgpu.burst.schema`: offline validation of Kueue objects against the v1beta2 CRD constraints;
* :mod:`hybridgpu.burst.trace` and :mod:`hybridgpu.burst.simulate`: demand traces and the burst simulator.

This package imports nothing from Pulumi (tests/burst/test_plan.py checks it).
"""
