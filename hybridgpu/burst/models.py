"""Typed burst configuration: the stack section ``hybridgpu:burst`` and the burst plan file.

Bursting has ONE source of truth: a burst plan file (``stacks/burst/<name>.yaml``, kind
``BurstPlan``) that names the stacks taking part, the topology, the queues and the cloud GPU
ceilings or budgets. Every stack that takes part points at it with ``hybridgpu:burst.plan``;
:func:`hybridgpu.burst.plan.plan_burst` derives every quota from it and the on-prem inventory,
so the on-prem ClusterQueue, the EKS NodePool limits, the EKS worker ClusterQueues and the
manager ClusterQueues cannot disagree.

Conventions are those of the stack config (:class:`hybridgpu.modelbase.Model`): camelCase keys,
unknown keys rejected, frozen, every field with unit and default.

Upstream facts (Kueue v0.19.2, kubernetes-sigs/kueue tag v0.19.2, commit 8eab6877, 2026-08-20,
read 2026-11-22): chart ``charts/kueue/Chart.yaml`` version 0.19.2; the Incremental dispatcher
waits ``incrementalDispatcherRoundTimeout = 5 * time.Minute`` before nominating the next
batch of workers (``pkg/controller/workloaddispatcher/incrementaldispatcher.go``); the worker
lost timeout defaults to 15 minutes (``apis/config/v1beta2/defaults.go``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.burst.frameworks import FRAMEWORKS, charts_for, unknown_framework_message
from hybridgpu.k8s import Dns1123Name, LabelKey, LabelValue
from hybridgpu.modelbase import Duration, Model

#: Kueue Helm chart / controller version deployed by default (kubernetes-sigs/kueue
#: ``charts/kueue/Chart.yaml`` at tag v0.19.2, 2026-08-20: version 0.19.2, appVersion v0.19.2).
KUEUE_VERSION = "0.19.2"

#: Kueue minor versions whose API (``kueue.x-k8s.io/v1beta2``) and ``Configuration``
#: (``config.kueue.x-k8s.io/v1beta2`` with ``multiKueue.dispatcherName``,
#: ``incrementalDispatcherConfig`` and ``resources.quotaCheckStrategy``/``excludeResourcePrefixes``)
#: the renderer writes. Kueue decodes its Configuration strictly (unknown fields fail start-up),
#: and 0.18 has no ``incrementalDispatcherConfig``; the ``QuotaCheckStrategy`` gate is beta and on
#: from 0.19 (``pkg/features/kube_features.go`` at v0.19.2). Checked 2026-11-24.
SUPPORTED_KUEUE_MINORS = ("0.19",)

#: Job integrations a plan may enable (Kueue ``FrameworkName``s): the table of
#: :mod:`hybridgpu.burst.frameworks`. Kueue builds a MultiKueue adapter for every enabled integration
#: (``cmd/kueue/main.go``: ``jobframework.GetMultiKueueAdapters(cfg.Integrations.Frameworks)``), and a
#: worker without an integration's CRD fails the connection (``pkg/controller/admissionchecks/multikueue/
#: multikueuecluster.go`` at v0.19.2), which leaves the MultiKueueCluster ``Active=False`` and dispatches
#: nothing (kubernetes-sigs/kueue#3582). The toolkit therefore installs the chart of every enabled
#: framework on every cluster of the plan, before Kueue (:mod:`hybridgpu.components.frameworks`), and
#: a plan may enable only these.
INSTALLED_FRAMEWORKS = tuple(FRAMEWORKS)
#: Namespaces Kueue never manages jobs in, besides its own (the default ``managedJobsNamespaceSelector``
#: excludes ``kube-system`` and ``cfg.Namespace``, ``apis/config/v1beta2/defaults.go`` at v0.19.2; "A Kueue
#: managed Pod cannot be created in kube-system or kueue-system", ``site/content/en/docs/tasks/run/plain_pods.md``).
KUEUE_UNMANAGED_NAMESPACES = ("kube-system",)

#: Seconds the Incremental dispatcher waits for the nominated workers to admit a workload before
#: it nominates the next ones (Kueue v0.19.2 ``incrementalDispatcherRoundTimeout``, 5 minutes).
INCREMENTAL_DISPATCH_SECONDS = 300

#: A fully qualified Pulumi stack name for ``pulumi.StackReference``: ``org/project/stack``.
StackReferenceName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]
StackName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$", min_length=1, max_length=100)]

BurstClass = Literal["spot", "on-demand", "none"]


class WorkerAlertsSpec(Model):
    """Alerts on the MultiKueue manager when a worker is inactive (plan ``manager.workerAlerts``).

    Renders the PrometheusRule ``hybridgpu-multikueue-workers``
    (:func:`hybridgpu.render.gpu_alerts.multikueue_worker_rule`) on the manager cluster. Its
    metric comes from kube-state-metrics, which needs the values in docs/bursting.md (Alerts on
    the manager); the rule's ``monitoring.coreos.com`` CRD must be installed there (e.g. by
    kube-prometheus-stack).
    """

    enabled: bool = Field(
        default=False,
        description=(
            "Create the PrometheusRule `hybridgpu-multikueue-workers` on the manager: a worker whose MultiKueueCluster has "
            "not been `Active` for 5 minutes, and kube-state-metrics not exporting MultiKueueClusters for 30 minutes "
            "(docs/bursting.md). Needs the Prometheus operator's CRDs on the manager. Default: false."
        ),
    )
    namespace: Dns1123Name | None = Field(
        default=None,
        description="Namespace of the PrometheusRule (one your Prometheus selects rules from). Default: the Kueue namespace (`kueue.namespace`).",
    )
    prometheus_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="Labels on the PrometheusRule so the cluster's Prometheus selects it, e.g. `{release: kube-prometheus-stack}`. Default: none.",
    )


class ManagerSide(Model):
    """The MultiKueue manager cluster (plan ``manager``)."""

    stack: StackName | None = Field(
        default=None,
        description=(
            "Stack whose cluster is the MultiKueue manager. `spillover`: a stack of its own (the manager cannot be "
            "its own worker), required. `split-queues`: must be the on-prem stack or unset. Default: none."
        ),
    )
    worker_lost_timeout: Duration = Field(
        default="15m",
        description=(
            "How long a workload stays admitted on the manager after its worker became unreachable "
            "(Kueue `multiKueue.workerLostTimeout`); then it is requeued elsewhere. Default: `15m` (Kueue's default)."
        ),
    )
    gc_interval: Duration = Field(
        default="1m", description="Garbage collection of orphaned remote objects (Kueue `multiKueue.gcInterval`). Default: `1m`."
    )
    worker_alerts: WorkerAlertsSpec = Field(
        default_factory=WorkerAlertsSpec, description="Alerts on the manager when a MultiKueue worker is inactive. Default: off."
    )


class OnPremSide(Model):
    """The on-prem kubeadm cluster (plan ``onprem``); its capacity comes from its inventory."""

    stack: StackName = Field(description="Stack with the `hybridgpu:onprem` section (its inventory gives the GPU capacity). Required.")
    stack_reference: StackReferenceName = Field(
        description="Fully qualified name `org/project/stack` that other stacks read its outputs with (`pulumi.StackReference`). Required."
    )
    cluster_name: Dns1123Name = Field(default="onprem", description="MultiKueueCluster name of this cluster on the manager. Default: `onprem`.")


class CapacitySpec(Model):
    """Cloud GPUs of one Karpenter capacity type: a NodePool and its ceiling and/or monthly budget."""

    node_pool: Dns1123Name = Field(description="NodePool of the cloud stack (`hybridgpu:cloud.nodePools[].name`) this capacity type launches in. Required.")
    gpu_ceiling: int | None = Field(
        default=None, ge=0, description="Most GPUs of this capacity type at once, in GPUs. Default: none (the budget decides)."
    )
    monthly_budget_usd: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description=(
            "Monthly budget in USD; the ceiling becomes floor(budget / (USD per GPU-hour x hoursPerMonth)), "
            "rounded down to whole instances. Default: none (the ceiling decides)."
        ),
    )
    usd_per_gpu_hour: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description=(
            "Price in USD per GPU-hour, for the ceiling from `monthlyBudgetUsd` and the teams' budgets. Default: the cloud "
            "stack's price (its `hybridgpu:economics` overrides applied): spot, the cost report's price of the NodePool "
            "(cheapest type per GPU x the family's spot fraction); on-demand, the pool's dearest type's On-Demand price. "
            "When set and different, `burst plan` and `validate` show both prices and their sources."
        ),
    )
    price_source: str | None = Field(
        default=None, description="Where `usdPerGpuHour` comes from (URL or report) and its date. Required with `usdPerGpuHour`."
    )

    @model_validator(mode="after")
    def _bounded(self) -> CapacitySpec:
        if self.gpu_ceiling is None and self.monthly_budget_usd is None:
            raise ValueError("give `gpuCeiling`, `monthlyBudgetUsd` or both")
        if self.usd_per_gpu_hour is not None and not self.price_source:
            raise ValueError("`usdPerGpuHour` needs `priceSource` (URL or report, with its date)")
        return self


class CloudSide(Model):
    """The EKS cluster that bursts (plan ``cloud``)."""

    stack: StackName = Field(description="Stack with the `hybridgpu:cloud` section (EKS + Karpenter). Required.")
    stack_reference: StackReferenceName = Field(description="Fully qualified name `org/project/stack` for `pulumi.StackReference`. Required.")
    cluster_name: Dns1123Name = Field(default="eks", description="MultiKueueCluster name of this cluster on the manager. Default: `eks`.")
    spot: CapacitySpec | None = Field(default=None, description="Spot GPUs, for queues whose jobs checkpoint. Default: none.")
    on_demand: CapacitySpec | None = Field(default=None, description="On-demand GPUs, for queues whose jobs cannot be interrupted. Default: none.")
    hours_per_month: float = Field(default=730.0, gt=0, le=744, description="Hours in a billing month for budget ceilings. Default: 730 (8760 / 12).")


class KueueSpec(Model):
    """The Kueue installation on every cluster that takes part (plan ``kueue``)."""

    version: Annotated[str, StringConstraints(pattern=r"^0\.[0-9]+\.[0-9]+$")] = Field(
        default=KUEUE_VERSION,
        description=f"Kueue Helm chart version (pinned), within {', '.join(m + '.x' for m in SUPPORTED_KUEUE_MINORS)}. Default: `{KUEUE_VERSION}`.",
    )
    namespace: Dns1123Name = Field(default="kueue-system", description="Namespace of the controller and of the worker kubeconfig Secrets. Default: `kueue-system`.")
    frameworks: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        default_factory=lambda: ["batch/job"],
        min_length=1,
        description=(
            "Job integrations Kueue manages (`integrations.frameworks`), spelt as Kueue spells them: `batch/job`, `pod` "
            "(plain pods, e.g. notebooks; Kueue then manages pods only in the plan's queue namespaces), "
            "`jobset.x-k8s.io/jobset` (installs the JobSet chart), `trainer.kubeflow.org/trainjob` (the Kubeflow Trainer v2 "
            "chart, with JobSet), `ray.io/rayjob`, `ray.io/raycluster`, `ray.io/rayservice` (the KubeRay operator chart). "
            "The charts are installed on every cluster of the plan before Kueue (docs/bursting.md, Job frameworks). "
            "Default: `[batch/job]`."
        ),
    )
    prefix: Dns1123Name = Field(default="hybridgpu", description="Prefix of the cluster-scoped Kueue object names. Default: `hybridgpu`.")

    @field_validator("version")
    @classmethod
    def _supported_version(cls, value: str) -> str:
        minor = value.rsplit(".", 1)[0]
        if minor not in SUPPORTED_KUEUE_MINORS:
            supported = ", ".join(f"{m}.x" for m in SUPPORTED_KUEUE_MINORS)
            raise ValueError(
                f"Kueue {value} is outside the supported range {supported}: the rendered v1beta2 objects and Configuration "
                f"(incrementalDispatcherConfig, quotaCheckStrategy) are those of {supported}, and Kueue refuses unknown "
                f"Configuration fields; set `version: {KUEUE_VERSION}`"
            )
        return value

    @field_validator("frameworks")
    @classmethod
    def _installed_frameworks(cls, value: list[str]) -> list[str]:
        unknown = [f for f in value if f not in FRAMEWORKS]
        if unknown:
            raise ValueError(
                "; ".join(unknown_framework_message(f) for f in unknown)
                + ". The toolkit installs only these on every cluster of the plan; MultiKueue would fail to watch another on "
                "a worker without its CRD and dispatch nothing (kubernetes-sigs/kueue#3582)"
            )
        if len(set(value)) != len(value):
            raise ValueError("a framework is listed twice")
        return value


class QueueSpec(Model):
    """One LocalQueue, mirrored on every cluster it may run on."""

    namespace: Dns1123Name = Field(description="Namespace of the LocalQueue (created on every cluster involved). Required.")
    name: Dns1123Name = Field(description="LocalQueue name; jobs set `kueue.x-k8s.io/queue-name: <name>`. Required.")
    burst: BurstClass = Field(
        description=(
            "Where the queue's jobs may go beyond on-prem: `spot` (they checkpoint), `on-demand` (they cannot be "
            "interrupted) or `none` (on-prem only). Required."
        )
    )


class SimulationSpec(Model):
    """Inputs of the burst simulator that are facts about the environment (plan ``simulation``)."""

    karpenter_launch_seconds: float = Field(
        ge=0,
        allow_inf_nan=False, description="Seconds from a Karpenter NodeClaim to a Ready GPU node (measure yours: GPU AMIs and images are large). Required."
    )
    spot_interruptions_per_instance_hour: float = Field(
        ge=0,
        allow_inf_nan=False,
        description="Spot interruptions per instance-hour of the pool's instance types (e.g. from the Spot placement/interruption history). Required.",
    )
    gpus_per_instance: int = Field(ge=1, le=64, description="GPUs per cloud instance (how many instances a job spans). Required.")
    source: str = Field(min_length=1, description="Where these figures come from, with a date. Required.")


class BurstPlanFile(Model):
    """A burst plan file (``apiVersion: hybridgpu.io/v1alpha1``, ``kind: BurstPlan``)."""

    api_version: Literal["hybridgpu.io/v1alpha1"] = Field(description="Schema version: `hybridgpu.io/v1alpha1`. Required.")
    kind: Literal["BurstPlan"] = Field(description="`BurstPlan`. Required.")
    topology: Literal["spillover", "split-queues"] = Field(
        description=(
            "`spillover`: a small manager cluster with workers [on-prem, EKS] and the Incremental dispatcher (on-prem "
            "first, EKS after about 5 minutes). `split-queues`: the on-prem cluster is the manager; each queue gets a "
            "local LocalQueue `<name>` and a burst LocalQueue `<name>-burst`. Required."
        )
    )
    manager: ManagerSide = Field(default_factory=ManagerSide, description="The manager cluster. Default: see fields.")
    onprem: OnPremSide = Field(description="The on-prem cluster. Required.")
    cloud: CloudSide = Field(description="The EKS cluster. Required.")
    kueue: KueueSpec = Field(default_factory=KueueSpec, description="Kueue installation. Default: pinned version in `kueue-system`.")
    queues: list[QueueSpec] = Field(min_length=1, description="LocalQueues and where they may burst. Required.")
    simulation: SimulationSpec | None = Field(default=None, description="Environment figures for `hybridgpu burst simulate`. Default: none.")

    @field_validator("queues")
    @classmethod
    def _unique_queues(cls, value: list[QueueSpec]) -> list[QueueSpec]:
        seen: set[tuple[str, str]] = set()
        for q in value:
            if (q.namespace, q.name) in seen:
                raise ValueError(f"queue {q.namespace}/{q.name} is listed twice")
            seen.add((q.namespace, q.name))
            if len(q.name) > 63 - len("-burst"):
                raise ValueError(f"queue name {q.name!r} leaves no room for the `-burst` suffix (at most 57 characters)")
        return value

    @model_validator(mode="after")
    def _roles(self) -> BurstPlanFile:
        if self.onprem.stack == self.cloud.stack:
            raise ValueError("`onprem.stack` and `cloud.stack` must be different stacks")
        if self.onprem.cluster_name == self.cloud.cluster_name:
            raise ValueError("`onprem.clusterName` and `cloud.clusterName` must differ (they name MultiKueueClusters)")
        if self.topology == "spillover":
            if self.manager.stack is None:
                raise ValueError("`spillover` needs `manager.stack`: a stack of its own (a MultiKueue manager cannot be its own worker)")
            if self.manager.stack in (self.onprem.stack, self.cloud.stack):
                raise ValueError(
                    "`spillover`: `manager.stack` must differ from the worker stacks (a MultiKueue manager cannot be its own worker); "
                    "use `split-queues` to make the on-prem cluster the manager"
                )
        elif self.manager.stack not in (None, self.onprem.stack):
            raise ValueError("`split-queues`: the on-prem cluster is the manager; leave `manager.stack` unset or set it to `onprem.stack`")
        return self

    @model_validator(mode="after")
    def _queue_namespaces(self) -> BurstPlanFile:
        # Kueue never manages jobs in kube-system or its own namespace (its default
        # managedJobsNamespaceSelector, apis/config/v1beta2/defaults.go at v0.19.2): a queue there
        # would let jobs run without quota.
        reserved = {*KUEUE_UNMANAGED_NAMESPACES, self.kueue.namespace}
        bad = sorted({q.namespace for q in self.queues if q.namespace in reserved})
        if bad:
            raise ValueError(
                f"queue namespace {', '.join(bad)} is one Kueue never manages jobs in (kube-system and `kueue.namespace`); "
                "jobs there would run without quota: put the queues in your teams' namespaces"
            )
        if "pod" in self.kueue.frameworks:
            # With `pod` enabled the chart's pod webhook has failurePolicy Fail over the
            # managedJobsNamespaceSelector (charts/kueue/templates/webhook/manifests.yaml, v0.19.2), which
            # the renderer sets to the queue namespaces: a controller there could not start a pod while
            # Kueue is down.
            controllers = {c.namespace: c.key for c in charts_for(self.kueue.frameworks)}
            clash = sorted({q.namespace for q in self.queues if q.namespace in controllers})
            if clash:
                raise ValueError(
                    f"`pod` is enabled and queue namespace {', '.join(clash)} is where the {', '.join(controllers[n] for n in clash)} "
                    "controller runs: Kueue's pod webhook (failurePolicy Fail) would gate the controller's own pods; "
                    "put the queues in your teams' namespaces"
                )
        return self

    @property
    def manager_stack(self) -> str:
        """The stack whose cluster runs the MultiKueue manager."""
        return self.manager.stack if self.topology == "spillover" and self.manager.stack else self.onprem.stack
