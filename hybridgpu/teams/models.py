"""The teams file (``apiVersion: hybridgpu.io/v1alpha1``, ``kind: Teams``): who shares the GPUs, and how (pure).

A teams file (e.g. ``stacks/teams/site-a.yaml``) lies beside the burst plan and is referenced
from the stacks that take part with ``hybridgpu:teams: {file: ...}``. Per team it holds the
namespaces, the identity-provider groups allowed to submit, the guaranteed GPU share per flavor
on-prem (whole GPUs ``nvidia.com/gpu`` and MIG profiles ``nvidia.com/mig-<profile>`` of one GPU
model) and per cloud capacity type (``spot``, ``on-demand``), Kueue borrowing and lending limits,
the WorkloadPriorityClasses it may use, a monthly cloud budget in USD, a fair-sharing weight,
and its cost-attribution labels (the keys the policy pack requires, e.g. ``team``, ``project``,
``cost-center``).

Field names are stable (the showback reads :attr:`TeamSpec.cost_labels` and
:attr:`TeamSpec.namespaces`). This module holds the checks that read this file only (unique
names and namespaces, priority classes defined, limits within the nominal quota); the checks
against the inventory, the NodePools, the burst plan and the required cost keys read other
files and live in :mod:`hybridgpu.stack.teams`. The Kueue objects are derived in
:mod:`hybridgpu.burst.teams`.

Kueue vocabulary (kubernetes-sigs/kueue tag v0.19.2, ``apis/kueue/v1beta2/clusterqueue_types.go``
and ``site/content/en/docs/concepts/cluster_queue.md``, read 2026-11-24): ``nominalQuota`` is the
quantity a ClusterQueue has for its own workloads; ``borrowingLimit`` the most it may borrow from
the unused nominal quota of the rest of its cohort (unset: no limit); ``lendingLimit`` the most of
its unused nominal quota the cohort may borrow (unset: all of it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.datafile import DataFileError, read_model_file
from hybridgpu.errors import FieldError
from hybridgpu.k8s import GPU_RESOURCE, MIG_RESOURCE_PREFIX, DeviceCount, Dns1123Name, Dns1123Subdomain, LabelKey, LabelValue
from hybridgpu.modelbase import Duration, Model

#: What documents every key of a teams file (named in fix hints).
TEAMS_REFERENCE = "docs/teams.md"
#: Largest Kueue ``int32`` setting.
_INT32_MAX = 2**31 - 1

# LabelValue (at most 63 characters, alphanumerics with ``-_.`` inside) and LabelKey (optional DNS prefix, then a
# name of at most 63 characters) are hybridgpu.k8s's.
#: ``nvidia.com/gpu`` or ``nvidia.com/mig-<profile>`` (mixed strategy, ``+`` of the profile written as ``.``).
GpuResource = Annotated[str, StringConstraints(pattern=r"^nvidia\.com/(gpu|mig-[1-9][0-9]?g\.[0-9]+gb(\.[a-z]+)*)$")]
#: Kueue's WorkloadPriorityClass ``value`` is an int32 (``apis/kueue/v1beta2/workloadpriorityclass_types.go`` at v0.19.2).
INT32_MAX = 2**31 - 1

PriorityClassName = Dns1123Subdomain


class TeamsError(DataFileError):
    """The teams file is invalid; every issue names the file, the key path and the fix."""

    what = "teams file"


class PriorityClassSpec(Model):
    """A Kueue WorkloadPriorityClass the teams may use (a job picks one with the label ``kueue.x-k8s.io/priority-class``).

    Kueue orders a ClusterQueue's workloads by this value and preempts lower values first
    (``withinClusterQueue: LowerPriority``); it does not change the pods' own scheduling priority
    (``site/content/en/docs/concepts/workload_priority_class.md``, Kueue v0.19.2).
    """

    name: PriorityClassName = Field(description="WorkloadPriorityClass name (cluster-scoped, DNS-1123 subdomain). Required.")
    value: int = Field(ge=-(2**31), le=INT32_MAX, description="Priority (int32); higher wins and may preempt lower. Required.")
    description: str = Field(default="", max_length=1024, description="What the class is for. Default: empty.")


def _check_lending_limit(lending_limit: int | None, nominal_quota: int) -> None:
    """Refuse a ``lendingLimit`` above the share's ``nominalQuota`` (Kueue's ClusterQueue webhook refuses it).

    Raises:
        FieldError: at ``lendingLimit``, with the most it may be.
    """
    if lending_limit is not None and lending_limit > nominal_quota:
        raise FieldError(
            "lendingLimit",
            f"{lending_limit} is more than `nominalQuota` {nominal_quota} (Kueue's ClusterQueue webhook refuses it)",
            f"set `lendingLimit` to at most {nominal_quota}",
        )


class OnPremShare(Model):
    """A team's guaranteed share of one on-prem flavor: one GPU model, whole GPUs or one MIG profile.

    Becomes one ``resources[]`` entry of the team's ClusterQueue, under the on-prem flavor of the
    model (``onprem-<model>`` for ``nvidia.com/gpu``, ``onprem-<model>-mig`` for MIG resources).
    """

    gpu_model: Annotated[str, StringConstraints(min_length=1)] = Field(description="GPU catalog key of the inventory hosts, e.g. `H100-80GB`. Required.")
    resource: GpuResource = Field(
        default=GPU_RESOURCE,
        description="`nvidia.com/gpu` (whole GPUs) or `nvidia.com/mig-<profile>` (MIG instances, mixed strategy). Default: `nvidia.com/gpu`.",
    )
    nominal_quota: DeviceCount = Field(ge=0, description="Guaranteed GPUs (or MIG instances) of the team: Kueue `nominalQuota`. Required.")
    borrowing_limit: DeviceCount | None = Field(
        default=None,
        ge=0,
        description="Most GPUs (instances) the team may borrow from the unused quota of other teams: Kueue `borrowingLimit`. Default: none (up to what the cohort lends).",
    )
    lending_limit: DeviceCount | None = Field(
        default=None,
        ge=0,
        description=(
            "Most of its unused quota other teams may borrow: Kueue `lendingLimit`; `nominalQuota - lendingLimit` is never lent, so it is "
            "free for the team at once without preemption. Default: none (all unused quota is lent, and reclaimed by preemption)."
        ),
    )

    @model_validator(mode="after")
    def _lending_within_nominal(self) -> OnPremShare:
        _check_lending_limit(self.lending_limit, self.nominal_quota)
        return self


class CloudShare(Model):
    """A team's share of one cloud capacity type of the burst plan (whole GPUs in the plan's NodePool).

    Becomes the team's ClusterQueue on the EKS worker (and its cloud flavor on the spillover
    manager). ``borrowingLimit`` is finite (0 by default) so that a team's cloud spending stays
    within its budget: ``(nominalQuota + borrowingLimit) x USD per GPU-hour x hours per month``.
    """

    capacity_type: Literal["spot", "on-demand"] = Field(description="Karpenter capacity type: `spot` or `on-demand` (the burst plan's `cloud.spot` / `cloud.onDemand`). Required.")
    nominal_quota: DeviceCount = Field(ge=0, description="GPUs of this capacity type the team may hold at once: Kueue `nominalQuota`. Required.")
    borrowing_limit: DeviceCount = Field(
        default=0, ge=0, description="GPUs it may borrow from other teams' unused cloud share (counted against its budget). Default: 0."
    )
    lending_limit: DeviceCount | None = Field(
        default=None, ge=0, description="Most of its unused cloud share others may borrow. Default: none (all of it)."
    )

    @model_validator(mode="after")
    def _lending_within_nominal(self) -> CloudShare:
        _check_lending_limit(self.lending_limit, self.nominal_quota)
        return self


class TeamSpec(Model):
    """One team: where it submits, what it is guaranteed, what it may borrow, spend and use, and how it is billed."""

    name: Dns1123Name = Field(description="Team name (DNS-1123 label); names its ClusterQueue `<prefix>-team-<name>`. Required.")
    description: str = Field(default="", max_length=1024, description="Who the team is. Default: empty.")
    namespaces: list[Dns1123Name] = Field(
        min_length=1, description="Namespaces the team submits jobs in (created on every cluster of the plan, labelled with `costLabels`). Required."
    )
    groups: list[Annotated[str, StringConstraints(min_length=1, max_length=256)]] = Field(
        min_length=1,
        description="Identity-provider groups (RBAC subjects of kind `Group`) allowed to submit jobs in the team's namespaces. Required.",
    )
    onprem: list[OnPremShare] = Field(default_factory=list, description="Guaranteed on-prem shares, per GPU model and resource. Default: none.")
    cloud: list[CloudShare] = Field(default_factory=list, description="Cloud shares per capacity type. Default: none (the team does not burst).")
    priority_classes: list[PriorityClassName] = Field(
        min_length=1, description="Names of the file's `priorityClasses` the team's jobs may use (enforced by a ValidatingAdmissionPolicy). Required."
    )
    monthly_cloud_budget_usd: float = Field(
        default=0.0,
        ge=0,
        allow_inf_nan=False,
        description="Most the team's cloud share may cost per month, in USD (spot and on-demand together, at the burst plan's prices). Default: 0.",
    )
    fair_sharing_weight: float = Field(
        default=1.0,
        ge=0,
        le=1000,
        allow_inf_nan=False,
        description=(
            "Kueue `fairSharing.weight` of the team's ClusterQueue: its share of what the cohort lends is weighted by it; 0 means it "
            "always loses to other teams when borrowing. Default: 1."
        ),
    )
    cost_labels: dict[LabelKey, LabelValue] = Field(
        description="Cost-attribution labels (e.g. `team`, `project`, `cost-center`): every key the policy pack requires, nothing else; put on the team's namespaces. Required."
    )

    @field_validator("namespaces", "groups", "priority_classes")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        seen: set[str] = set()
        for item in value:
            if item in seen:
                raise ValueError(f"{item!r} is listed twice")
            seen.add(item)
        return value

    @field_validator("fair_sharing_weight")
    @classmethod
    def _weight(cls, value: float) -> float:
        # apis/kueue/v1beta2/fairsharing_types.go (v0.19.2): "When not 0, Weight must be greater than 10^-9."
        if 0 < value < 0.001:
            raise ValueError("must be 0 or at least 0.001 (written as a Kubernetes quantity in milli-units)")
        return value

    @model_validator(mode="after")
    def _shares_unique(self) -> TeamSpec:
        seen: set[tuple[str, str]] = set()
        for i, share in enumerate(self.onprem):
            key = (share.gpu_model, share.resource)
            if key in seen:
                raise FieldError(f"onprem[{i}]", f"{share.gpu_model} {share.resource} is listed twice", "merge the two entries into one")
            seen.add(key)
        types: set[str] = set()
        for i, cloud in enumerate(self.cloud):
            if cloud.capacity_type in types:
                raise FieldError(f"cloud[{i}].capacityType", f"{cloud.capacity_type} is listed twice", "merge the two entries into one")
            types.add(cloud.capacity_type)
        return self


class RequeuingStrategySpec(Model):
    """When Kueue requeues a workload evicted by ``waitForPodsReady`` and when it stops (``requeuingStrategy``).

    Kueue v0.19.2 (``apis/config/v1beta2/configuration_types.go`` ``RequeuingStrategy``,
    ``pkg/workload/workload.go`` ``UpdateRequeueState``, ``pkg/controller/core/workload_controller.go``
    ``reconcileNotReadyTimeout`` / ``triggerDeactivation``): the n-th requeue waits about
    ``backoffBaseSeconds * 2^(n-1)`` seconds, at most ``backoffMaxSeconds``; when one more eviction
    would exceed ``backoffLimitCount`` requeues the workload is deactivated (``spec.active: false``)
    instead. :func:`hybridgpu.burst.teams.requeue_schedule` computes the delays.
    """

    timestamp: Literal["Eviction", "Creation"] = Field(
        default="Eviction",
        description="Queue position of a requeued workload: `Eviction` (back of the queue, from the eviction time) or `Creation` (its original place). Default: `Eviction`.",
    )
    backoff_base_seconds: int = Field(
        default=60,
        ge=1,
        le=_INT32_MAX,
        description="Seconds before the first requeue; each later one doubles it (Kueue `backoffBaseSeconds`; 0 would readmit a failing gang at once). Default: 60.",
    )
    backoff_max_seconds: int = Field(default=3600, ge=1, le=_INT32_MAX, description="Longest wait between requeues, in seconds (Kueue `backoffMaxSeconds`). Default: 3600.")
    backoff_limit_count: int | None = Field(
        default=None,
        ge=0,
        le=_INT32_MAX,
        description="Requeues before Kueue deactivates the workload (`spec.active: false`, a person must reactivate it) (Kueue `backoffLimitCount`). Default: none (requeued for ever).",
    )

    @model_validator(mode="after")
    def _max_covers_base(self) -> RequeuingStrategySpec:
        if self.backoff_max_seconds < self.backoff_base_seconds:
            raise FieldError(
                "backoffMaxSeconds",
                f"{self.backoff_max_seconds} s is below backoffBaseSeconds {self.backoff_base_seconds} s: Kueue waits {self.backoff_base_seconds} s before the first requeue "
                f"and {self.backoff_max_seconds} s before every later one, so the backoff shrinks instead of growing",
                f"set `backoffMaxSeconds` to at least {self.backoff_base_seconds}, or lower `backoffBaseSeconds`",
            )
        return self


class WaitForPodsReadySpec(Model):
    """Kueue's all-or-nothing admission of multi-pod jobs (``waitForPodsReady`` of the Kueue Configuration).

    An admitted workload whose pods are not all ready within ``timeout`` is evicted and requeued,
    so a gang that cannot start does not hold quota (``apis/config/v1beta2/configuration_types.go``,
    ``WaitForPodsReady``, Kueue v0.19.2; the defaults make it on with 30 minutes,
    ``apis/config/v1beta2/defaults.go``).
    """

    timeout: Duration = Field(default="10m", description="Time for an admitted workload to have every pod ready (Kueue `timeout`). Default: `10m`.")
    block_admission: bool = Field(
        default=False,
        description="Admit nothing else in the cluster until the last admitted workload's pods are ready (Kueue `blockAdmission`; strict gangs, slower admission). Default: false.",
    )
    recovery_timeout: Duration | None = Field(
        default=None, description="Time a running workload may have a pod not ready (e.g. a replaced pod) before it is requeued (Kueue `recoveryTimeout`). Default: `timeout`."
    )
    requeuing_strategy: RequeuingStrategySpec | None = Field(
        default=None,
        description="When an evicted workload is requeued and when Kueue gives up (Kueue `requeuingStrategy`). Default: not rendered, Kueue's own (`Eviction`, 60 s doubling up to 3600 s, no limit).",
    )

    @model_validator(mode="after")
    def _recovery_on(self) -> WaitForPodsReadySpec:
        # "Setting to "0s" disables recovery timeout checking" (configuration_types.go v0.19.2): a gang
        # whose pod died with its node would then hold its quota until someone deletes the job.
        value = self.recovery_timeout
        if value is not None and all(int(n) == 0 for n in re.findall(r"[0-9]+", value)):
            raise FieldError(
                "recoveryTimeout",
                f"{value!r} turns Kueue's recovery timeout off, so a running gang that lost a pod with a failed node holds its quota until someone deletes the job",
                "remove `recoveryTimeout` (Kueue then uses `timeout`) or set a duration such as `10m`",
            )
        return self


#: Kueue `fairSharing.preemptionStrategies` values, in Kueue's default order.
PreemptionStrategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
_KUEUE_PREEMPTION_STRATEGIES: tuple[PreemptionStrategy, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


class FairSharingSpec(Model):
    """Kueue's preemption-based fair sharing (``fairSharing`` of the Kueue Configuration; on when present)."""

    enabled: bool = Field(default=True, description="Render `fairSharing` in the Kueue Configuration (Kueue enables it when the key is present). Default: true.")
    preemption_strategies: list[PreemptionStrategy] = Field(
        default_factory=lambda: list(_KUEUE_PREEMPTION_STRATEGIES),
        min_length=1,
        max_length=2,
        description="Kueue `fairSharing.preemptionStrategies`, tried in order. Default: `[LessThanOrEqualToFinalShare, LessThanInitialShare]` (Kueue's default).",
    )


class TeamsFile(Model):
    """A teams file (``apiVersion: hybridgpu.io/v1alpha1``, ``kind: Teams``)."""

    api_version: Literal["hybridgpu.io/v1alpha1"] = Field(description="Schema version: `hybridgpu.io/v1alpha1`. Required.")
    kind: Literal["Teams"] = Field(description="`Teams`. Required.")
    cohort: Dns1123Name = Field(default="hybridgpu-teams", description="Kueue cohort of the teams' ClusterQueues (one per cluster). Default: `hybridgpu-teams`.")
    priority_classes: list[PriorityClassSpec] = Field(min_length=1, description="WorkloadPriorityClasses created on every cluster of the plan. Required.")
    wait_for_pods_ready: WaitForPodsReadySpec = Field(default_factory=WaitForPodsReadySpec, description="Gang admission of multi-pod jobs. Default: see fields.")
    fair_sharing: FairSharingSpec = Field(default_factory=FairSharingSpec, description="Fair sharing between teams. Default: on, Kueue's strategies.")
    teams: list[TeamSpec] = Field(min_length=1, description="The teams. Required.")

    @model_validator(mode="after")
    def _cross_team(self) -> TeamsFile:
        names = [p.name for p in self.priority_classes]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise FieldError(f"priorityClasses[{i}].name", f"{name!r} is defined twice", "give each WorkloadPriorityClass a unique name")
        defined = set(names)
        owner: dict[str, str] = {}
        team_names: set[str] = set()
        for t, team in enumerate(self.teams):
            if team.name in team_names:
                raise FieldError(f"teams[{t}].name", f"team {team.name!r} is listed twice", "give each team a unique name, or merge the entries")
            team_names.add(team.name)
            for n, ns in enumerate(team.namespaces):
                if ns in owner:
                    raise FieldError(
                        f"teams[{t}].namespaces[{n}]",
                        f"namespace {ns!r} belongs to team {owner[ns]!r} already; a namespace's jobs are charged to one team and admitted by one ClusterQueue",
                        f"remove {ns!r} from one of the two teams",
                    )
                owner[ns] = team.name
            for c, cls in enumerate(team.priority_classes):
                if cls not in defined:
                    raise FieldError(
                        f"teams[{t}].priorityClasses[{c}]",
                        f"no priority class {cls!r} in `priorityClasses` (defined: {', '.join(sorted(defined))})",
                        f"define {cls!r} under `priorityClasses`, or use one of: {', '.join(sorted(defined))}",
                    )
        return self

    def team_of_namespace(self, namespace: str) -> TeamSpec | None:
        """The team that owns ``namespace``, or None."""
        return next((t for t in self.teams if namespace in t.namespaces), None)


def read_teams_file(path: Path, shown: str) -> TeamsFile:
    """Read and validate a teams file (this file's own rules only; see :mod:`hybridgpu.stack.teams` for the rest).

    Args:
        path: the file to read.
        shown: the file as the user knows it (relative to the project root), named in issues.

    Returns:
        The validated :class:`TeamsFile`.

    Raises:
        TeamsError: missing/unreadable file, YAML errors, duplicate keys, schema errors; each issue
            names the file, the key path (e.g. ``teams[1].onprem[0].lendingLimit``) and a fix.
    """
    return read_model_file(
        path,
        shown,
        TeamsFile,
        TeamsError,
        what="teams file",
        missing_fix="fix `hybridgpu:teams.file`: a teams file path relative to the project root, e.g. `stacks/teams/site-a.yaml`",
        reference=TEAMS_REFERENCE,
    )


def is_mig_resource(resource: str) -> bool:
    """True for a MIG resource (``nvidia.com/mig-...``), False for whole GPUs."""
    return resource.startswith(MIG_RESOURCE_PREFIX)
