"""The JupyterHub release of ``hybridgpu:platform`` (issue 30): GPU notebooks that count against the teams' Kueue quotas.

Creates, through the cluster's Kubernetes provider (EKS, or on-prem without ``hybridgpu:cloud``),
after what the platform target waits for (the GPU layer, Kueue and the team namespaces it creates):

* the hub namespace (``jupyterhub.namespace``);
* in each team namespace notebooks run in, a Role and RoleBinding ``hybridgpu-jupyterhub`` giving the
  hub's ServiceAccount what the chart's own Role gives it in its namespace (pods, claims, secrets,
  services, events: :func:`~hybridgpu.render.jupyterhub.hub_team_role_rules`);
* the ``jupyterhub`` Helm release (pinned :data:`~hybridgpu.render.jupyterhub.JUPYTERHUB_CHART_VERSION`)
  with the values of :func:`hybridgpu.stack.jupyterhub.notebook_plan`; the OAuth client secret is read
  with ``require_secret`` from the Pulumi config key the section names, so it stays a Pulumi secret.

Everything is decided by the pure layers; this module only turns it into resources.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.catalog import load_catalog
from hybridgpu.components.base import type_token
from hybridgpu.k8s import managed_by_labels
from hybridgpu.render.jupyterhub import (
    HUB_SERVICE_ACCOUNT,
    JUPYTERHUB_CHART,
    JUPYTERHUB_CHART_VERSION,
    JUPYTERHUB_REPO,
    hub_team_role_rules,
    jupyterhub_values,
)
from hybridgpu.stack.jupyterhub import notebook_plan
from hybridgpu.stack.load import Stack
from hybridgpu.stack.teams import load_teams

__all__ = ["JupyterHub", "build_jupyterhub"]

#: Name of the hub's Role and RoleBinding in each team namespace.
TEAM_ROLE = "hybridgpu-jupyterhub"


class JupyterHub(pulumi.ComponentResource):
    """JupyterHub on one cluster (``hybridgpu:index:JupyterHub``).

    Args:
        name: logical name prefix (children ``<name>-namespace``, ``<name>-role-<ns>``, ``<name>-rolebinding-<ns>``, ``<name>-release``).
        namespace: the hub's namespace.
        team_namespaces: the namespaces notebooks run in (they exist: Kueue's component creates them).
        values: the chart values, the client secret in place (a Pulumi secret output).
        provider: the cluster's Kubernetes provider.
        depends_on: what must exist first.
        opts: resource options of the component.
    """

    release: k8s.helm.v3.Release
    """The Helm release."""

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        team_namespaces: tuple[str, ...],
        values: dict[str, Any],
        provider: Any,
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(type_token("JupyterHub"), name, None, opts)
        base = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on))
        ns = k8s.core.v1.Namespace(f"{name}-namespace", metadata={"name": namespace, "labels": managed_by_labels()}, opts=base)
        access: list[pulumi.Resource] = [ns]
        rules: Any = hub_team_role_rules()
        subjects: Any = [{"kind": "ServiceAccount", "name": HUB_SERVICE_ACCOUNT, "namespace": namespace}]
        role_ref: Any = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TEAM_ROLE}
        for team_ns in team_namespaces:
            meta: Any = {"name": TEAM_ROLE, "namespace": team_ns, "labels": managed_by_labels()}
            role = k8s.rbac.v1.Role(f"{name}-role-{team_ns}", metadata=meta, rules=rules, opts=base)
            access.append(
                k8s.rbac.v1.RoleBinding(
                    f"{name}-rolebinding-{team_ns}",
                    metadata=meta,
                    role_ref=role_ref,
                    subjects=subjects,
                    opts=pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[role])),
                )
            )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="jupyterhub",
            chart=JUPYTERHUB_CHART,
            version=JUPYTERHUB_CHART_VERSION,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=JUPYTERHUB_REPO),
            namespace=namespace,
            values=values,
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*access, *depends_on]),
        )
        self.register_outputs({"release": self.release.status})


def build_jupyterhub(stack: Stack, target: Any) -> JupyterHub:
    """Build the JupyterHub release on ``target`` (a :class:`~hybridgpu.components.platform.PlatformTarget`).

    Validation (:func:`hybridgpu.stack.jupyterhub.jupyterhub_issues`) already refused a stack without
    teams, outside the burst plan, without Kueue's ``pod`` integration, or without any profile.

    Raises:
        ValueError: the stack has no burst plan or no enabled JupyterHub (validation refuses both first).
    """
    config = stack.config
    hub = config.platform.jupyterhub if config.platform else None
    if hub is None or hub.auth is None or stack.burst_plan is None:
        raise ValueError("build_jupyterhub needs a validated stack with JupyterHub, its auth and a burst plan")
    teams = load_teams(config, stack.root)
    plan = notebook_plan(config, load_catalog(), teams, stack.burst_plan, inventory=stack.inventory, onprem_plan=stack.onprem_plan)
    namespace, _, key = hub.auth.client_secret_pulumi_config.partition(":")
    secret = pulumi.Config(namespace).require_secret(key)
    values = jupyterhub_values(hub, plan.profiles, client_secret=secret)
    return JupyterHub(
        f"{target.name}-jupyterhub",
        namespace=hub.namespace,
        team_namespaces=plan.team_namespaces,
        values=values,
        provider=target.provider,
        depends_on=list(target.depends_on),
    )
