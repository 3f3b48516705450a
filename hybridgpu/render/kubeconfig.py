"""Kubeconfigs: one-cluster layout, and the EKS one (pure).

The EKS kubeconfig carries no credential: it runs ``aws eks get-token`` (AWS CLI v2) to mint a
short-lived token from the caller's AWS identity. Pulumi still stores it as a secret because
it names the endpoint and CA of a private control plane.
"""

from __future__ import annotations

from typing import Any


def kubeconfig(*, name: str, server: str, ca_data: str, user: dict[str, Any]) -> dict[str, Any]:
    """Return a one-cluster kubeconfig (as a dict): cluster, context and user all named ``name``.

    Args:
        name: cluster/context/user name.
        server: API server URL (``https://...``).
        ca_data: base64 cluster CA certificate (``certificate-authority-data``).
        user: the ``users[].user`` entry (``exec`` for EKS, ``token`` for a MultiKueue worker).
    """
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [{"name": name, "user": user}],
    }


def eks_kubeconfig(*, cluster_name: str, endpoint: str, ca_data: str, region: str) -> dict[str, Any]:
    """Return a kubeconfig (as a dict) for an EKS cluster using ``aws eks get-token``.

    Args:
        cluster_name: EKS cluster name.
        endpoint: API server URL (``https://...``).
        ca_data: base64 cluster CA certificate (``certificateAuthority.data``).
        region: AWS region of the cluster.
    """
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"],
            "interactiveMode": "Never",
        }
    }
    return kubeconfig(name=cluster_name, server=endpoint, ca_data=ca_data, user=user)
