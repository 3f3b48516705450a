"""Values of the zero-to-jupyterhub chart for ``hybridgpu:platform.jupyterhub`` (pure, no Pulumi).

:func:`jupyterhub_values` renders the chart values from the typed config and the spawn profiles
the stack layer derived (:mod:`hybridgpu.stack.jupyterhub`: one :class:`NotebookProfile` per team
and per :class:`GpuOffering` the team's Kueue queue on this cluster admits).

What the values do, and the upstream behaviour each relies on (read 2026-11-27):

* **Chart** ``jupyterhub`` :data:`JUPYTERHUB_CHART_VERSION` from :data:`JUPYTERHUB_REPO`
  (jupyterhub/zero-to-jupyterhub-k8s tag 4.4.0, commit 5c5f5df7, 2026-06-10; JupyterHub 5.5.0,
  KubeSpawner 7.0.0, OAuthenticator 17.4.0, jupyterhub-idle-culler 1.4.0 in ``images/hub/requirements.txt``).
  Every key we set exists in that tag's ``jupyterhub/values.yaml`` (:data:`VALUE_KEYS`, checked by
  ``tests/platform/test_jupyterhub.py``; ``tools/check_jupyterhub_schema.py`` validates the rendered
  values against the tag's ``values.schema.yaml`` given a checkout: 0 errors on 2026-11-27).
* **Sign-in**: ``hub.config.JupyterHub.authenticator_class: generic-oauth`` and the
  ``GenericOAuthenticator`` section (``manage_groups``, ``auth_state_groups_key: oauth_user.<claim>``,
  ``allowed_groups`` = every team's groups and the admin groups). z2jh passes ``hub.config`` sections
  straight to traitlets (``files/hub/jupyterhub_config.py``). The chart default is ``dummy``: always replaced.
* **Profiles**: ``singleuser.profileList`` (KubeSpawner ``profile_list``). Each profile's
  ``kubespawner_override`` sets ``namespace`` (the team's queue namespace: KubeSpawner 7.0.0
  ``_start`` loads the profile before it starts watching pods, and keys its reflectors by
  namespace, so a per-profile namespace works without ``enable_user_namespaces``),
  ``extra_labels`` (merged into the chart's: ``kueue.x-k8s.io/queue-name`` and the team's cost
  labels), ``extra_resource_limits`` (one GPU, MIG slice or share), ``node_selector``,
  ``node_affinity_required`` and ``tolerations``. ``hub.extraConfig`` wraps the list in a callable
  that offers each profile only to members of its team's groups (KubeSpawner ``load_user_options``
  validates a request against the callable's result, so another team's slug is refused).
* **Quota**: Kueue's ``pod`` integration (kubernetes-sigs/kueue v0.19.2 ``pkg/controller/jobs/pod/
  pod_webhook.go``) gates a pod carrying ``kueue.x-k8s.io/queue-name`` in a managed namespace with
  the ``kueue.x-k8s.io/admission`` scheduling gate until its Workload is admitted: a spawn waits
  for the team's quota, so ``singleuser.startTimeout`` is the config's ``startTimeoutSeconds``.
* **Placement**: hub, proxy and user scheduler tolerate the system-node taints
  (:func:`~hybridgpu.render.charts.controller_tolerations`); the image pullers (DaemonSets on every
  user node, and a pre-upgrade hook that waits for them) and the user placeholders are off.
* **Network**: ``hub.networkPolicy.ingress`` admits the notebook pods of the team namespaces
  (label ``hub.jupyter.org/network-access-hub: "true"``, the chart's own rule covers only its namespace).
* **Culler**: ``cull.enabled``, ``cull.timeout``, ``cull.every`` (jupyterhub-idle-culler flags).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hybridgpu.config.jupyterhub import SUPPORTED_AUTHENTICATORS, JupyterHubConfig, memory_guarantee
from hybridgpu.k8s import KUEUE_QUEUE_NAME_LABEL, NAMESPACE_NAME_LABEL
from hybridgpu.render.charts import controller_tolerations

__all__ = [
    "GpuOffering",
    "HUB_ACCESS_LABEL",
    "HUB_SERVICE_ACCOUNT",
    "JUPYTERHUB_CHART",
    "JUPYTERHUB_CHART_VERSION",
    "JUPYTERHUB_REPO",
    "NotebookProfile",
    "SECRET_PLACEHOLDER",
    "VALUE_KEYS",
    "hub_team_role_rules",
    "jupyterhub_values",
    "profile_entry",
    "value_paths",
]

JUPYTERHUB_CHART = "jupyterhub"
#: Chart version (z2jh tag 4.4.0, commit 5c5f5df751588a68a7781ead01d0f62e88e2e72f, 2026-06-10).
JUPYTERHUB_CHART_VERSION = "4.4.0"
#: The chart repository (z2jh ``docs/source/jupyterhub/installation.md`` at 4.4.0).
JUPYTERHUB_REPO = "https://hub.jupyter.org/helm-chart/"
#: The hub's ServiceAccount as the chart names it with ``fullnameOverride: ""`` (``templates/_helpers-names.tpl``).
HUB_SERVICE_ACCOUNT = "hub"
#: Label of pods the hub's NetworkPolicy admits (``templates/hub/netpol.yaml``; ``singleuser.extraLabels`` default).
HUB_ACCESS_LABEL = "hub.jupyter.org/network-access-hub"
#: Stands in for the client secret where no Pulumi output exists (validation, docs); the component passes the secret.
SECRET_PLACEHOLDER = "<pulumi secret>"

#: Dotted value paths we set, each present in z2jh 4.4.0 ``jupyterhub/values.yaml`` (read 2026-11-27).
#: Maps are passed through below ``hub.config`` (traitlets sections), ``hub.extraConfig`` (named snippets),
#: ``hub.networkPolicy.ingress`` and ``singleuser.profileList`` (KubeSpawner objects): the path stops there.
VALUE_KEYS = frozenset(
    {
        "hub.config",
        "hub.extraConfig",
        "hub.tolerations",
        "hub.networkPolicy.ingress",
        "proxy.chp.tolerations",
        "proxy.service.type",
        "singleuser.image.name",
        "singleuser.image.tag",
        "singleuser.startTimeout",
        "singleuser.cpu.guarantee",
        "singleuser.memory.guarantee",
        "singleuser.profileList",
        "scheduling.userScheduler.tolerations",
        "scheduling.userPlaceholder.enabled",
        "prePuller.hook.enabled",
        "prePuller.continuous.enabled",
        "cull.enabled",
        "cull.timeout",
        "cull.every",
    }
)


@dataclass(frozen=True)
class GpuOffering:
    """One kind of GPU a notebook can get on this stack's cluster, and where.

    Attributes:
        kind: ``gpu`` (a whole GPU), ``mig`` (a MIG slice) or ``shared`` (a time-sliced or MPS share).
        resource: the extended resource requested (``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``,
            ``nvidia.com/gpu.shared`` ...), one unit per notebook.
        gpu_model: the catalog GPU model key (``H100-80GB``).
        where: the node group, as a user knows it (``Karpenter NodePool h100-spot``, ``on-prem H100-80GB hosts``).
        slug: a DNS-1123 fragment naming the offering in profile slugs.
        detail: what the unit is, for the profile's description (``MIG 3g.40gb``, ``1 of 4 time-sliced shares``).
        node_selector: the pod's ``nodeSelector``.
        required_terms: the pod's required node affinity terms, or None.
        tolerations: the pod's tolerations (the node group's taints).
    """

    kind: Literal["gpu", "mig", "shared"]
    resource: str
    gpu_model: str
    where: str
    slug: str
    detail: str
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[Mapping[str, Any], ...] | None = None
    tolerations: tuple[Mapping[str, str], ...] = ()


@dataclass(frozen=True)
class NotebookProfile:
    """A spawn profile: a team, a GPU offering and the team's LocalQueue that admits it on this cluster.

    Attributes:
        team: the team's name (teams file).
        groups: the team's identity-provider groups (who sees the profile).
        namespace: the LocalQueue's namespace, where the notebook pod runs.
        queue: the LocalQueue's name (label ``kueue.x-k8s.io/queue-name``).
        cost_labels: the team's cost labels (pod labels).
        offering: the GPU the notebook gets.
    """

    team: str
    groups: tuple[str, ...]
    namespace: str
    queue: str
    cost_labels: Mapping[str, str]
    offering: GpuOffering

    @property
    def slug(self) -> str:
        """``<team>-<offering slug>``: the profile's KubeSpawner slug."""
        return f"{self.team}-{self.offering.slug}"


def profile_entry(profile: NotebookProfile) -> dict[str, Any]:
    """The KubeSpawner ``profile_list`` entry of ``profile`` (``display_name``, ``slug``, ``description``, ``kubespawner_override``)."""
    o = profile.offering
    unit = {"gpu": "1 GPU", "mig": "1 MIG slice", "shared": "1 GPU share"}[o.kind]
    override: dict[str, Any] = {
        "namespace": profile.namespace,
        "extra_labels": {KUEUE_QUEUE_NAME_LABEL: profile.queue, **dict(sorted(profile.cost_labels.items()))},
        "extra_resource_limits": {o.resource: "1"},
        "node_selector": dict(o.node_selector),
        "tolerations": [dict(t) for t in o.tolerations],
    }
    if o.required_terms is not None:
        override["node_affinity_required"] = [dict(t) for t in o.required_terms]
    return {
        "display_name": f"{profile.team}: {unit}, {o.gpu_model} ({o.where})",
        "slug": profile.slug,
        "description": (
            f"{o.detail} on {o.where}; counts against queue {profile.namespace}/{profile.queue} of team {profile.team}. "
            "The spawn waits while the team's quota is in use."
        ),
        "kubespawner_override": override,
    }


def _profile_filter(profiles: Sequence[NotebookProfile]) -> str:
    """``hub.extraConfig`` snippet: each profile is listed only for members of its team's groups."""
    groups = {p.slug: sorted(p.groups) for p in profiles}
    return (
        "# hybridgpu: a notebook profile is offered only to the identity-provider groups of its team (docs/notebooks.md).\n"
        f"_hybridgpu_profile_groups = {json.dumps(groups, sort_keys=True)}\n"
        "_hybridgpu_profiles = list(c.KubeSpawner.profile_list)\n"
        "\n"
        "def _hybridgpu_profile_list(spawner):\n"
        "    groups = {g.name for g in spawner.user.groups}\n"
        "    return [p for p in _hybridgpu_profiles if groups.intersection(_hybridgpu_profile_groups.get(p['slug'], ()))]\n"
        "\n"
        "c.KubeSpawner.profile_list = _hybridgpu_profile_list\n"
    )


def hub_team_role_rules() -> list[dict[str, Any]]:
    """The hub's Role rules in each team namespace: the chart's own Role in its namespace (``templates/hub/rbac.yaml`` at 4.4.0)."""
    return [
        {"apiGroups": [""], "resources": ["pods", "persistentvolumeclaims", "secrets", "services"], "verbs": ["get", "watch", "list", "create", "delete"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "watch", "list"]},
    ]


def jupyterhub_values(config: JupyterHubConfig, profiles: Sequence[NotebookProfile], client_secret: Any = SECRET_PLACEHOLDER) -> dict[str, Any]:
    """The chart values for ``config`` with ``profiles``.

    Args:
        config: an enabled, checked JupyterHub config (``auth`` and ``image`` set).
        profiles: the spawn profiles, in the order users see them (:mod:`hybridgpu.stack.jupyterhub`).
        client_secret: the OAuth client secret (a Pulumi secret output in the component;
            :data:`SECRET_PLACEHOLDER` elsewhere).

    Returns:
        A values mapping (same input, same output: profiles keep their order, maps are sorted).

    Raises:
        ValueError: ``config`` has no ``auth`` or no ``image`` (the config checks refuse that first).
    """
    auth, image = config.auth, config.image
    if auth is None or image is None:
        raise ValueError("jupyterhub_values needs a checked config with `auth` and `image`")
    teams_groups = sorted({g for p in profiles for g in p.groups})
    namespaces = sorted({p.namespace for p in profiles})
    section = SUPPORTED_AUTHENTICATORS[auth.authenticator]
    oauth: dict[str, Any] = {
        "client_id": auth.client_id,
        "client_secret": client_secret,
        "oauth_callback_url": auth.oauth_callback_url,
        "authorize_url": auth.authorize_url,
        "token_url": auth.token_url,
        "userdata_url": auth.userdata_url,
        "scope": list(auth.scope),
        "username_claim": auth.username_claim,
        "manage_groups": True,
        "auth_state_groups_key": f"oauth_user.{auth.groups_claim}",
        "allowed_groups": sorted({*teams_groups, *auth.admin_groups}),
        "admin_groups": sorted(auth.admin_groups),
    }
    ingress = []
    if namespaces:
        ingress.append(
            {
                "ports": [{"port": "http"}],
                "from": [
                    {
                        "namespaceSelector": {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": namespaces}]},
                        "podSelector": {"matchLabels": {HUB_ACCESS_LABEL: "true"}},
                    }
                ],
            }
        )
    return {
        "hub": {
            "config": {"JupyterHub": {"authenticator_class": auth.authenticator}, section: oauth},
            "extraConfig": {"hybridgpu-team-profiles": _profile_filter(profiles)},
            "tolerations": controller_tolerations(),
            "networkPolicy": {"ingress": ingress},
        },
        "proxy": {"chp": {"tolerations": controller_tolerations()}, "service": {"type": config.proxy_service_type}},
        "singleuser": {
            "image": {"name": image.name, "tag": image.tag},
            "startTimeout": config.start_timeout_seconds,
            "cpu": {"guarantee": config.cpu_guarantee},
            "memory": {"guarantee": memory_guarantee(config.memory_guarantee_gib)},
            "profileList": [profile_entry(p) for p in profiles],
        },
        "scheduling": {"userScheduler": {"tolerations": controller_tolerations()}, "userPlaceholder": {"enabled": False}},
        "prePuller": {"hook": {"enabled": False}, "continuous": {"enabled": False}},
        "cull": {"enabled": True, "timeout": config.idle_timeout_seconds, "every": config.cull_every_seconds},
    }


def value_paths(values: Mapping[str, Any], prefix: str = "") -> set[str]:
    """The dotted paths of ``values`` down to a leaf or to a pass-through key of :data:`VALUE_KEYS`."""
    found: set[str] = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        if path in VALUE_KEYS or not isinstance(value, Mapping) or not value:
            found.add(path)
        else:
            found |= value_paths(value, path + ".")
    return found
