"""Renderers: Karpenter, IAM, network, kubeconfig, NVIDIA, kubeadm and bootstrap text, with no Pulumi.

:func:`dump_yaml` / :func:`dump_yaml_all` are the one YAML style of rendered files (block style,
sorted keys, width 120: :data:`hybridgpu.datafile.SORTED`), used by the renderers and by the offline
preview's ``out/`` writer; they are :mod:`hybridgpu.datafile`'s, the one YAML writer.
"""

from __future__ import annotations

from hybridgpu.datafile import dump_yaml, dump_yaml_all

__all__ = ["dump_yaml", "dump_yaml_all"]
