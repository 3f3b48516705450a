"""JupyterHub against the rest of the stack: GPU offerings, team profiles and the checks (pure, no Pulumi).

:func:`notebook_plan` derives what ``hybridgpu:platform.jupyterhub`` installs on the stack's
cluster (EKS when the stack has ``hybridgpu:cloud``, else the on-prem cluster, as
:func:`hybridgpu.components.program.main` places the platform releases):

* the **GPU offerings** (:func:`gpu_offerings`): on EKS, per Karpenter NodePool and GPU model of
  its instance types (:func:`hybridgpu.render.karpenter.resolve_instance_types`), every NVIDIA
  resource a node advertises (:func:`hybridgpu.render.nvidia.node_capacity`: whole GPUs, MIG
  slices ``nvidia.com/mig-<profile>`` under the pool's ``migConfig``, time-sliced shares under
  its ``deviceConfig``), selected by ``karpenter.sh/nodepool`` and, for a pool of several GPU
  models, an instance-type affinity; on-prem, per GPU model of the active GPU workers, whole GPUs
  and the MIG slices of their ``gpu.migLayouts`` (``migStrategy: mixed``), selected by
  ``hybridgpu.io/gpu-model``; each tolerating its nodes' taints;
* the **profiles** (:func:`notebook_profiles`): for each team of the teams file and each offering,
  the team's first LocalQueue on this cluster whose ClusterQueue declares the offering's resource
  in a flavor whose node labels the offering's nodes carry (Kueue ``BlockUndeclared``: an
  undeclared resource is never admitted; a flavor's node labels are injected into the admitted
  pod, so they must match the offering's nodes), and that has no MultiKueue admission check
  (MultiKueue would run the notebook on a worker cluster, out of the hub's reach).

:func:`jupyterhub_issues` refuses, naming the key and the fix: a hub without the teams file;
a stack outside the burst plan or on its MultiKueue manager; a plan whose Kueue does not manage
``pod`` (the queue label would be ignored and notebooks would take GPUs outside every quota); no
profile at all; a profile pod that fits no GPU node group; the client secret's Pulumi config key
unset. The hub, proxy and user scheduler are placed on the system nodes by the stack's scheduling
check (:func:`hybridgpu.stack.scheduling.cluster_workloads` lists them, chart facts in
:data:`hybridgpu.render.charts.CHARTS` ``jupyterhub``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hybridgpu.burst.plan import BurstPlan, ClusterPlan, Flavor
from hybridgpu.catalog import Catalog
from hybridgpu.config.jupyterhub import JupyterHubConfig
from hybridgpu.config.models import CloudConfig, StackConfig
from hybridgpu.config.nvidia import NvidiaConfig
from hybridgpu.errors import Issue
from hybridgpu.inventory.models import Inventory
from hybridgpu.k8s import (
    GPU_MODEL_LABEL,
    GPU_PRODUCT_LABEL,
    GPU_RESOURCE,
    INSTANCE_GPU_NAME_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER_NODEPOOL_LABEL,
    MIG_RESOURCE_PREFIX,
    MIG_STRATEGY_LABEL,
    mig_resource_name,
    toleration_for,
)
from hybridgpu.onprem import OnPremPlan, node_spec
from hybridgpu.render.jupyterhub import JUPYTERHUB_CHART, GpuOffering, NotebookProfile, jupyterhub_values
from hybridgpu.render.karpenter import resolve_instance_types
from hybridgpu.render.kubeadm import node_taints
from hybridgpu.render.kubeadm_specs import label_value_from
from hybridgpu.render.nvidia import node_capacity
from hybridgpu.render.scheduling import NodeGroup, PodPlacement, placement_problems
from hybridgpu.stack.scheduling import ClusterWorkloads, cluster_workloads
from hybridgpu.stack.teams import load_teams
from hybridgpu.teams.models import TeamsFile

__all__ = ["KEY", "NotebookPlan", "gpu_offerings", "jupyterhub_issues", "notebook_plan", "notebook_profiles"]

#: The stack key of the section.
KEY = "hybridgpu:platform.jupyterhub"
#: Kueue's name of the plain-pod integration (``pkg/controller/jobs/pod/pod_controller.go`` ``FrameworkName``, v0.19.2).
POD_FRAMEWORK = "pod"


@dataclass(frozen=True)
class NotebookPlan:
    """What the JupyterHub release of a stack is made of.

    Attributes:
        target: ``eks`` or ``onprem``: the cluster it is installed on.
        offerings: every GPU offering of that cluster.
        profiles: the spawn profiles (team x offering x LocalQueue), in display order.
        skipped: ``(team, offering slug, reason)`` for each pair no queue of the team admits.
        values: the chart values with :data:`~hybridgpu.render.jupyterhub.SECRET_PLACEHOLDER` as client secret.
    """

    target: str
    offerings: tuple[GpuOffering, ...]
    profiles: tuple[NotebookProfile, ...]
    skipped: tuple[tuple[str, str, str], ...]
    values: Mapping[str, Any]

    @property
    def team_namespaces(self) -> tuple[str, ...]:
        """The namespaces notebooks run in (the hub needs a Role there)."""
        return tuple(sorted({p.namespace for p in self.profiles}))


def _slug(text: str) -> str:
    return label_value_from(text).lower().replace(".", "-").replace("_", "-")


def _classify(resource: str, shared: set[str]) -> tuple[Literal["gpu", "mig", "shared"], str]:
    if resource in shared or resource.endswith(".shared"):
        return "shared", "a time-sliced share of a GPU"
    if resource.startswith(MIG_RESOURCE_PREFIX):
        return "mig", f"MIG {resource[len(MIG_RESOURCE_PREFIX):]}"
    return "gpu", "a whole GPU"


def _eks_offerings(cloud: CloudConfig, nvidia: NvidiaConfig | None, catalog: Catalog) -> list[GpuOffering]:
    found: list[GpuOffering] = []
    for pool in cloud.node_pools:
        types = resolve_instance_types(pool, catalog)
        models = sorted({t.gpu_model for t in types})
        tolerations = tuple(toleration_for(t.key, t.value, t.effect.value) for t in pool.taints)
        settings = nvidia.node_pools.get(pool.name) if nvidia else None
        sharing = nvidia.sharing_config(settings.device_config) if nvidia and settings else None
        replicas = {r.name: r.replicas for r in sharing.resources} if sharing else {}
        shared = {f"{n}.shared" if sharing and sharing.rename_by_default else n for n in replicas}
        layout = nvidia.layout(settings.mig_config) if nvidia and settings else None
        # Under `migStrategy: single` every MIG device is advertised as nvidia.com/gpu (render.nvidia.node_capacity).
        single_mig = nvidia is not None and nvidia.mig_strategy == "single" and layout is not None and layout.mig_enabled
        for model in models:
            of_model = [t for t in types if t.gpu_model == model]
            resources: set[str] = set()
            for t in of_model:
                caps = node_capacity(nvidia, pool.name, t.gpu_count) if nvidia else {GPU_RESOURCE: t.gpu_count}
                resources |= {name for name, count in caps.items() if count > 0}
            terms = None
            if len(models) > 1:
                terms = ({"matchExpressions": [{"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": sorted(t.name for t in of_model)}]},)
            for resource in sorted(resources):
                kind, detail = _classify(resource, shared)
                if kind == "gpu" and single_mig:
                    kind, detail = "mig", "a MIG slice (migStrategy single: advertised as nvidia.com/gpu)"
                if kind == "shared":
                    base = resource.removesuffix(".shared")
                    how = "MPS" if sharing is not None and sharing.sharing == "mps" else "time-sliced"
                    detail = f"1 of {replicas.get(base, replicas.get(resource, 0))} {how} shares of a GPU"
                found.append(
                    GpuOffering(
                        kind=kind,
                        resource=resource,
                        gpu_model=model,
                        where=f"Karpenter NodePool {pool.name}",
                        slug=_slug(f"{pool.name}-{model}-{resource.split('/', 1)[1]}"),
                        detail=detail,
                        node_selector={KARPENTER_NODEPOOL_LABEL: pool.name},
                        required_terms=terms,
                        tolerations=tolerations,
                    )
                )
    return found


def _onprem_offerings(inventory: Inventory, nvidia: NvidiaConfig | None, onprem_plan: OnPremPlan | None) -> list[GpuOffering]:
    mig_configs = {step.hostname: step.mig_config for step in onprem_plan.steps} if onprem_plan else {}
    mixed = nvidia is not None and nvidia.mig_strategy == "mixed"
    resources: dict[str, set[str]] = {}
    tolerations: dict[str, dict[tuple[str, str | None, str], dict[str, str]]] = {}
    for host in inventory.hosts:
        if host.state != "active" or host.role != "gpu-worker" or host.gpu is None:
            continue
        model = host.gpu.model
        covered: set[int] = set()
        for spec in host.gpu.mig_layouts if mixed else ():
            indices = spec.indices(host.gpu.count)
            covered.update(indices)
            resources.setdefault(model, set()).update(mig_resource_name(p) for p, n in spec.layout.items() if n)
        if host.gpu.count > len(covered):
            resources.setdefault(model, set()).add(GPU_RESOURCE)
        taints = node_taints(node_spec(host, mig_configs.get(host.hostname))) or []
        for t in taints:
            tolerations.setdefault(model, {})[(t["key"], t.get("value"), t["effect"])] = toleration_for(t["key"], t.get("value"), t["effect"])
    found = []
    for model in sorted(resources):
        tol = tuple(v for _, v in sorted(tolerations.get(model, {}).items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])))
        for resource in sorted(resources[model]):
            kind, detail = _classify(resource, set())
            found.append(
                GpuOffering(
                    kind=kind,
                    resource=resource,
                    gpu_model=model,
                    where=f"on-prem {model} hosts",
                    slug=_slug(f"onprem-{model}-{resource.split('/', 1)[1]}"),
                    detail=detail,
                    node_selector={GPU_MODEL_LABEL: label_value_from(model)},
                    tolerations=tol,
                )
            )
    return found


def gpu_offerings(
    config: StackConfig, catalog: Catalog, *, inventory: Inventory | None = None, onprem_plan: OnPremPlan | None = None
) -> list[GpuOffering]:
    """Every kind of GPU a notebook can get on the cluster JupyterHub goes to (see the module docstring).

    Args:
        config: a checked stack config.
        catalog: the instance and GPU catalog.
        inventory: the stack's inventory (on-prem stacks).
        onprem_plan: the rendered on-prem plan (its MIG config per host), when the caller has it.

    Returns:
        The offerings, sorted by node group, GPU model and resource; empty when the cluster has no GPUs.
    """
    if config.cloud is not None:
        return _eks_offerings(config.cloud, config.nvidia, catalog)
    if inventory is not None:
        return _onprem_offerings(inventory, config.nvidia, onprem_plan)
    return []


def offering_placement(offering: GpuOffering) -> PodPlacement:
    """The scheduling fields of a notebook pod of ``offering`` (a one-pod workload: kind ``Pod``)."""
    return PodPlacement(
        name=f"{JUPYTERHUB_CHART} notebook {offering.slug}",
        kind="Pod",
        tolerations=tuple(offering.tolerations),
        node_selector=dict(offering.node_selector),
        required_terms=offering.required_terms,
        source="hybridgpu.render.jupyterhub profile",
    )


def _flavor_fits(flavor: Flavor, offering: GpuOffering, groups: Sequence[NodeGroup], catalog: Catalog, mig_strategy: str | None) -> bool:
    """True if the labels Kueue injects for ``flavor`` hold on some node group the offering's pod fits.

    Labels the NVIDIA layer sets at run time (GFD's ``nvidia.com/gpu.product`` and ``nvidia.com/mig.strategy``,
    Karpenter's ``instance-gpu-name``) are compared with the offering's GPU model; the others with the groups' labels.
    """
    model = catalog.gpu_model(offering.gpu_model)
    derived = {
        GPU_PRODUCT_LABEL: model.product_label,
        INSTANCE_GPU_NAME_LABEL: model.karpenter_gpu_name,
        MIG_STRATEGY_LABEL: mig_strategy,
    }
    for group in groups:
        if all((derived[k] == v) if k in derived else (v in group.labels.get(k, ())) for k, v in flavor.node_labels.items()):
            return True
    return False


def notebook_profiles(
    offerings: Sequence[GpuOffering],
    cluster: ClusterPlan,
    teams: TeamsFile,
    groups: Sequence[NodeGroup],
    catalog: Catalog,
    mig_strategy: str | None,
) -> tuple[list[NotebookProfile], list[tuple[str, str, str]]]:
    """The spawn profiles: each team x each offering its queues on ``cluster`` admit (see the module docstring).

    Args:
        offerings: the cluster's GPU offerings.
        cluster: this stack's cluster in the burst plan (teams applied).
        teams: the teams file.
        groups: the cluster's GPU node groups (:func:`hybridgpu.stack.scheduling.cluster_workloads`).
        catalog: the GPU catalog.
        mig_strategy: the NVIDIA section's ``migStrategy`` (None without it).

    Returns:
        ``(profiles, skipped)``: profiles team by team (teams-file order), offerings in order;
        ``skipped`` has ``(team, offering slug, reason)`` for each pair no queue admits.
    """
    cqs = {cq.name: cq for cq in cluster.cluster_queues}
    flavors = {f.name: f for f in cluster.flavors}
    fitting = {o.slug: [g for g in groups if not placement_problems(offering_placement(o), g)] for o in offerings}
    profiles: list[NotebookProfile] = []
    skipped: list[tuple[str, str, str]] = []
    for team in teams.teams:
        queues = [lq for lq in cluster.local_queues if lq.namespace in team.namespaces]
        for offering in offerings:
            reason = "no LocalQueue of the team on this cluster" if not queues else ""
            chosen = None
            for lq in queues:
                cq = cqs.get(lq.cluster_queue)
                if cq is None:
                    continue
                if cq.admission_check is not None:
                    reason = f"queue {lq.namespace}/{lq.name} dispatches through MultiKueue ({cq.name})"
                    continue
                declared = [fq for rg in cq.groups if offering.resource in rg.covered for fq in rg.flavors]
                if not declared:
                    reason = reason or f"ClusterQueue {cq.name} declares no {offering.resource}"
                    continue
                if not any(fq.flavor in flavors and _flavor_fits(flavors[fq.flavor], offering, fitting[offering.slug], catalog, mig_strategy) for fq in declared):
                    reason = reason or f"no flavor of ClusterQueue {cq.name} for {offering.resource} selects {offering.where}"
                    continue
                chosen = lq
                break
            if chosen is None:
                skipped.append((team.name, offering.slug, reason or "no queue admits it"))
                continue
            profiles.append(
                NotebookProfile(team.name, tuple(team.groups), chosen.namespace, chosen.name, dict(team.cost_labels), offering)
            )
    return profiles, skipped


def _cluster(clusters: Sequence[ClusterWorkloads], target: str) -> ClusterWorkloads | None:
    prefix = "EKS cluster" if target == "eks" else "on-prem cluster"
    return next((c for c in clusters if c.cluster.startswith(prefix)), None)


def _secret_issues(hub: JupyterHubConfig, config_values: Mapping[str, Any] | None, file: str) -> list[Issue]:
    """The client secret's Pulumi config key is set in the stack (whether it is encrypted cannot be told from the values the Pulumi runtime hands over: docs/notebooks.md says to use ``--secret``)."""
    if config_values is None or hub.auth is None:
        return []
    key = hub.auth.client_secret_pulumi_config
    where = f"{KEY}.auth.clientSecretPulumiConfig"
    if key not in config_values:
        return [
            Issue(
                file,
                where,
                f"the OAuth client secret {key!r} is not set in the stack: the program reads it with `require_secret` and `pulumi up` would fail",
                f"run `pulumi config set --secret {key} <client secret>` for this stack",
                code="secret-missing",
            )
        ]
    return []


def notebook_plan(
    config: StackConfig,
    catalog: Catalog,
    teams: TeamsFile,
    plan: BurstPlan,
    *,
    inventory: Inventory | None = None,
    onprem_plan: OnPremPlan | None = None,
    clusters: Sequence[ClusterWorkloads] | None = None,
) -> NotebookPlan:
    """The JupyterHub release of a checked stack: offerings, profiles and values (see the module docstring).

    Raises:
        ValueError: the stack has no enabled JupyterHub, or its cluster is not in ``plan``
            (:func:`jupyterhub_issues` refuses both first).
    """
    hub = config.platform.jupyterhub if config.platform else None
    if hub is None or not hub.enabled:
        raise ValueError("the stack has no enabled `hybridgpu:platform.jupyterhub`")
    target = "eks" if config.cloud is not None else "onprem"
    cluster_plan = plan.clusters.get(config.stack)
    if cluster_plan is None:
        raise ValueError(f"stack {config.stack} is not in the burst plan")
    if clusters is None:
        clusters = cluster_workloads(config, catalog, inventory=inventory, burst_plan=plan, onprem_plan=onprem_plan)
    cluster = _cluster(clusters, target)
    gpu_groups = [g for g, _ in cluster.groups if g.gpu] if cluster else []
    offerings = gpu_offerings(config, catalog, inventory=inventory, onprem_plan=onprem_plan)
    strategy = config.nvidia.mig_strategy if config.nvidia else None
    profiles, skipped = notebook_profiles(offerings, cluster_plan, teams, gpu_groups, catalog, strategy)
    return NotebookPlan(target, tuple(offerings), tuple(profiles), tuple(skipped), jupyterhub_values(hub, profiles))


def jupyterhub_issues(
    config: StackConfig,
    file: str,
    catalog: Catalog,
    *,
    root: Path,
    plan: BurstPlan | None,
    inventory: Inventory | None = None,
    onprem_plan: OnPremPlan | None = None,
    config_values: Mapping[str, Any] | None = None,
) -> list[Issue]:
    """Every problem of an enabled ``hybridgpu:platform.jupyterhub`` against the rest of the stack (empty when sound or off).

    Args:
        config: a checked stack config (the other sections are sound: called after their checks).
        file: the stack file named in issues.
        catalog: the catalog.
        root: the project root (the teams file is relative to it).
        plan: the burst plan with the teams' queues (None without ``hybridgpu:burst``).
        inventory: the on-prem inventory, if any.
        onprem_plan: the rendered on-prem plan, if any.
        config_values: the stack's ``namespace:key`` values (None skips the client-secret check).

    Returns:
        Issues naming ``hybridgpu:platform.jupyterhub`` (or the plan's key) and the fix.
    """
    hub = config.platform.jupyterhub if config.platform else None
    if hub is None or not hub.enabled:
        return []
    issues = _secret_issues(hub, config_values, file)
    if config.teams is None or plan is None:
        return issues + [
            Issue(
                file,
                KEY,
                "notebooks must count against team quotas, and this stack has no teams file (`hybridgpu:teams`) and burst plan (`hybridgpu:burst`) whose Kueue queues would admit them",
                "add `hybridgpu:burst: {plan: ...}` and `hybridgpu:teams: {file: ...}` (docs/teams.md), or set `enabled: false`",
                code="jupyterhub-needs-teams",
            )
        ]
    if config.stack not in plan.clusters:
        return issues + [
            Issue(file, KEY, f"stack {config.stack} is not a cluster of the burst plan {plan.file}: no Kueue runs here to admit notebooks",
                  "install JupyterHub on a stack the plan names (its on-prem or cloud stack)", code="jupyterhub-needs-teams")
        ]
    frameworks = list(plan.source.kueue.frameworks)
    if POD_FRAMEWORK not in frameworks:
        issues.append(
            Issue(
                file,
                KEY,
                f"the burst plan {plan.file} does not enable Kueue's `{POD_FRAMEWORK}` integration (kueue.frameworks: {', '.join(frameworks)}): "
                "Kueue would ignore the notebooks' `kueue.x-k8s.io/queue-name` label and they would take GPUs outside every team quota",
                f"add `{POD_FRAMEWORK}` to `kueue.frameworks` in {plan.file} (`frameworks: [{', '.join([*frameworks, POD_FRAMEWORK])}]`)",
                code="jupyterhub-needs-pod-integration",
            )
        )
        return issues
    teams = load_teams(config, root)
    clusters = cluster_workloads(config, catalog, inventory=inventory, burst_plan=plan, onprem_plan=onprem_plan)
    notebooks = notebook_plan(config, catalog, teams, plan, inventory=inventory, onprem_plan=onprem_plan, clusters=clusters)
    cluster_plan = plan.clusters[config.stack]
    if cluster_plan.multikueue is not None:
        issues.append(
            Issue(
                file,
                KEY,
                f"stack {config.stack} is the MultiKueue manager of {plan.file}: its queues dispatch workloads to worker clusters, so a notebook "
                "would run on another cluster, out of the hub's reach",
                f"install JupyterHub on a worker stack of the plan ({', '.join(sorted(s for s in plan.clusters if s != config.stack))}) and set `enabled: false` here",
                code="jupyterhub-on-manager",
            )
        )
        return issues
    if not notebooks.profiles:
        why = "; ".join(f"{team} / {slug}: {reason}" for team, slug, reason in notebooks.skipped[:6]) or "the cluster has no GPU node group"
        issues.append(
            Issue(
                file,
                KEY,
                f"no notebook profile: no team queue on this cluster admits a GPU the stack offers ({why})",
                "give a team a LocalQueue on this cluster whose ClusterQueue declares the GPUs of a NodePool or host (`queues` in the burst plan, "
                "shares in the teams file), or add GPU capacity",
                code="jupyterhub-no-profile",
            )
        )
        return issues
    cluster = _cluster(clusters, notebooks.target)
    if cluster is not None:
        gpu_groups = [(g, k) for g, k in cluster.groups if g.gpu]
        for profile in notebooks.profiles:
            pod = offering_placement(profile.offering)
            if not any(not placement_problems(pod, g) for g, _ in gpu_groups):
                refusals = " | ".join(f"{g.name}: {'; '.join(placement_problems(pod, g))}" for g, _ in gpu_groups)
                issues.append(
                    Issue(file, KEY, f"{cluster.cluster}: notebook profile {profile.slug} fits no GPU node group ({refusals})",
                          "check the taints and labels of the node group it comes from", code="unschedulable")
                )
    return issues
