"""Kubeconfig for an EKS cluster (pure).

The kubeconfig carries no credential: it runs ``aws eks get-token`` (AWS CLI v2) to mint a
short-lived token from the caller's AWS identity. Pulumi still stores it as a secret because
it names the endpoint and CA of a private control plane.
"""

from __future__ import annotations

from typing import Any


def eks_kubeconfig(*, cluster_name: str, endpoint: str, ca_data: str, region: str) -> dict[str, Any]:
    """Return a kubeconfig (as a dict) for an EKS cluster using ``aws eks get-token``.

    Args:
        cluster_name: EKS cluster name.
        endpoint: API server URL (``https://...``).
        ca_data: base64 cluster CA certificate (``certificateAuthority.data``).
        region: AWS region of the cluster.
    """
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "users": [
            {
                "name": cluster_name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
