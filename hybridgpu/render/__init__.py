"""Renderers: Karpenter, IAM, network, kubeconfig, NVIDIA, kubeadm and bootstrap text, with no Pulumi.

:func:`dump_yaml` / :func:`dump_yaml_all` are the one YAML style of rendered files (block style,
sorted keys, width 120), used by the renderers and by the offline preview's ``out/`` writer.
"""

from __future__ import annotations

from typing import Any

import yaml


def dump_yaml(doc: Any) -> str:
    """Block-style YAML with sorted keys (the wire format does not keep key order; sorting keeps golden files stable)."""
    return yaml.safe_dump(doc, sort_keys=True, default_flow_style=False, width=120)


def dump_yaml_all(docs: list[Any]) -> str:
    """Multi-document YAML of ``docs`` (see :func:`dump_yaml`)."""
    return yaml.safe_dump_all(docs, sort_keys=True, default_flow_style=False, width=120, explicit_start=True)
