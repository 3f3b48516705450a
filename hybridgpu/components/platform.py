"""The platform releases of ``hybridgpu:platform`` on a stack's cluster (EKS or on-prem): JupyterHub, MLflow, Harbor.

:func:`build_platform` is the one entry the program calls, once per stack, after the cluster,
its GPU layer and Kueue exist; each release has its own builder module
(:mod:`hybridgpu.components.jupyterhub`, :mod:`hybridgpu.components.mlflow`,
:mod:`hybridgpu.components.harbor`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from hybridgpu.components.harbor import build_harbor
from hybridgpu.components.jupyterhub import build_jupyterhub
from hybridgpu.components.mlflow import build_mlflow
from hybridgpu.stack.load import Stack

__all__ = ["PlatformTarget", "build_platform"]


@dataclass(frozen=True)
class PlatformTarget:
    """Where the platform releases go.

    Attributes:
        kind: ``"eks"`` or ``"onprem"``.
        name: the EKS cluster name or the on-prem site name (prefix of resource names).
        provider: the cluster's Kubernetes provider.
        depends_on: resources the releases wait for (the GPU layer, Kueue, the storage claims).
        aws_opts: the AWS provider's resource options (EKS only; ``None`` on-prem).
        eks: the :class:`~hybridgpu.components.eks.EksCluster` (EKS only).
    """

    kind: str
    name: str
    provider: Any
    depends_on: list[pulumi.Resource]
    aws_opts: pulumi.ResourceOptions | None = None
    eks: Any = None


def build_platform(stack: Stack, target: PlatformTarget) -> None:
    """Build the releases ``hybridgpu:platform`` asks for on ``target`` (nothing without the section)."""
    platform = stack.config.platform
    if platform is None:
        return
    if platform.jupyterhub is not None and platform.jupyterhub.enabled:
        build_jupyterhub(stack, target)
    if platform.mlflow is not None and platform.mlflow.enabled:
        build_mlflow(stack, target)
    if platform.harbor is not None and platform.harbor.enabled:
        build_harbor(stack, target)
