"""Offline validation of Kueue ``kueue.x-k8s.io/v1beta2`` objects (pure, no Pulumi).

No maintained installable schema package for Kueue exists (checked 2026-11-22: npm has no
``@kubernetes-models/kueue``; PyPI has none), so the constraints hybridgpu relies on are encoded
here as pydantic models, field for field from the v1beta2 version of the CRDs of
kubernetes-sigs/kueue tag v0.19.2 (commit 8eab6877, 2026-08-20, read 2026-11-22), files
``config/components/crd/bases/kueue.x-k8s.io_<plural>.yaml``:

* ``resourceflavors``: ``spec.nodeLabels`` (maxProperties 8), ``nodeTaints`` (maxItems 8, key
  and effect required, effect in NoSchedule/PreferNoSchedule/NoExecute), ``tolerations``
  (maxItems 8, the five CEL rules on operator/key/value/effect/tolerationSeconds),
  ``topologyName``;
* ``clusterqueues``: ``resourceGroups`` (maxItems 16; ``coveredResources`` 1..64; ``flavors`` 1..64
  with DNS-1123 subdomain names; ``resources`` 1..64 with ``name`` and ``nominalQuota`` required,
  quantities; CEL: as many resources per flavor as covered resources), ``cohortName`` (CEL:
  ``borrowingLimit`` only with a cohort), ``namespaceSelector``, ``queueingStrategy``,
  ``admissionChecksStrategy.admissionChecks`` (1..64, ``name`` 1..316 characters, ``onFlavors``),
  ``stopPolicy``, ``preemption`` (CEL: "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
  ``flavorFungibility``, ``fairSharing`` (``weight``: a quantity, 0 or more than 10^-9);
* ``workloadpriorityclasses``: cluster-scoped, no ``spec``: ``value`` (int32, required) and
  ``description`` (at most 2048 characters) at the top level;
* ``cohorts``: ``spec.parentName``, ``resourceGroups`` (at most 16, as for ClusterQueues),
  ``fairSharing``; limits only under a parent (webhook, ``pkg/webhooks/cohort_webhook.go``);
* ``localqueues``: ``spec.clusterQueue`` (DNS-1123 subdomain, max 253), ``stopPolicy``, ``fairSharing``;
* ``admissionchecks``: ``spec.controllerName`` required (1..253), ``parameters`` with
  ``apiGroup``/``kind``/``name`` required and their patterns;
* ``multikueueconfigs``: ``spec.clusters`` required, 1..20 entries of at most 256 characters, no
  duplicates (CEL), ``quotaManagement`` in Manual/Automated;
* ``topologies``: ``spec.levels`` 1..16 ``{nodeLabel}``, unique, ``kubernetes.io/hostname`` only last
  (:class:`hybridgpu.render.topology.TopologySpec`);
* ``multikueueclusters``: ``spec.clusterSource`` with exactly one of ``kubeConfig`` (``location``
  1..256, ``locationType`` Secret/Path) and ``clusterProfileRef`` (CEL).

Unknown fields are errors (the API server prunes or rejects them). Of Kueue's ClusterQueue
validating webhook (``pkg/webhooks/clusterqueue_webhook.go`` at v0.19.2) these rules are
encoded too: every flavor's resources match ``coveredResources`` by name and order; a resource
and a flavor appear in one resource group only; quotas and limits are not negative;
``lendingLimit`` needs a cohort and is at most ``nominalQuota``. Other webhook rules run only on
a real cluster.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from hybridgpu.errors import key_path
from hybridgpu.k8s import DNS1123_LABEL_PATTERN, DNS1123_SUBDOMAIN_PATTERN, KUEUE_API, Dns1123Subdomain, quantity
from hybridgpu.render.topology import TopologySpec

Subdomain = Dns1123Subdomain


def _quantity(value: Any) -> Any:
    """``value`` unchanged when it is a quantity that is not negative (:func:`hybridgpu.k8s.quantity`: ``8``, ``8.0``, ``"8e0"``, ``"1k"``).

    Raises:
        ValueError: not a quantity, or negative (the message says which, and how to write it).
    """
    if quantity(value) < 0:
        raise ValueError(f"must not be negative (got {value!r})")
    return value


def _value(value: Any) -> Any:
    """The exact value of a quantity already checked by :func:`_quantity`, None when unset."""
    return None if value is None else quantity(value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ObjectMeta(_Strict):
    """The ``metadata`` fields hybridgpu sets."""

    name: Annotated[str, StringConstraints(pattern=DNS1123_SUBDOMAIN_PATTERN, max_length=253)]
    namespace: Annotated[str, StringConstraints(pattern=DNS1123_LABEL_PATTERN, max_length=63)] | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(_Strict):
    key: str
    value: str | None = None
    effect: TaintEffect
    time_added: str | None = Field(default=None, alias="timeAdded")


class Toleration(_Strict):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = Field(default=None, alias="tolerationSeconds")

    @model_validator(mode="after")
    def _cel(self) -> Toleration:
        # The five x-kubernetes-validations of spec.tolerations.
        if self.key is None and self.operator != "Exists":
            raise ValueError("a toleration without key needs operator Exists")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds needs effect NoExecute")
        if self.operator is not None and self.operator not in ("Equal", "Exists"):
            raise ValueError("operator must be Equal or Exists")
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("operator Exists takes no value")
        if self.effect is not None and self.effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError("effect must be NoSchedule, PreferNoSchedule or NoExecute")
        return self


class ResourceFlavorSpec(_Strict):
    node_labels: dict[str, str] | None = Field(default=None, alias="nodeLabels")
    node_taints: list[Taint] | None = Field(default=None, alias="nodeTaints", max_length=8)
    tolerations: list[Toleration] | None = Field(default=None, max_length=8)
    topology_name: Subdomain | None = Field(default=None, alias="topologyName")

    @field_validator("node_labels")
    @classmethod
    def _max8(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and len(value) > 8:
            raise ValueError("at most 8 nodeLabels (maxProperties: 8)")
        return value

    @model_validator(mode="after")
    def _topology(self) -> ResourceFlavorSpec:
        if self.topology_name is not None and not self.node_labels:
            raise ValueError("at least one nodeLabel is required when topology is set")
        return self


class ResourceQuota(_Strict):
    name: str
    nominal_quota: Any = Field(alias="nominalQuota")
    borrowing_limit: Any = Field(default=None, alias="borrowingLimit")
    lending_limit: Any = Field(default=None, alias="lendingLimit")

    @field_validator("nominal_quota", "borrowing_limit", "lending_limit")
    @classmethod
    def _quantities(cls, value: Any) -> Any:
        return value if value is None else _quantity(value)

    @model_validator(mode="after")
    def _nominal_required(self) -> ResourceQuota:
        if self.nominal_quota is None:
            raise ValueError("nominalQuota is required")
        lend, nominal = _value(self.lending_limit), _value(self.nominal_quota)
        if lend is not None and nominal is not None and lend > nominal:
            raise ValueError("lendingLimit must be less than or equal to the nominalQuota")
        return self


class FlavorQuotas(_Strict):
    name: Subdomain
    resources: list[ResourceQuota] = Field(min_length=1, max_length=64)


class ResourceGroup(_Strict):
    covered_resources: list[str] = Field(alias="coveredResources", min_length=1, max_length=64)
    flavors: list[FlavorQuotas] = Field(min_length=1, max_length=64)

    @model_validator(mode="after")
    def _sizes(self) -> ResourceGroup:
        for flavor in self.flavors:
            if len(flavor.resources) != len(self.covered_resources):
                raise ValueError(f"flavor {flavor.name}: must list as many resources as coveredResources")
            # Kueue's ClusterQueue webhook: the same resource names in the same order.
            if [r.name for r in flavor.resources] != self.covered_resources:
                raise ValueError(f"flavor {flavor.name}: resources must match coveredResources in order")
        return self


class LabelSelectorRequirement(_Strict):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(_Strict):
    match_expressions: list[LabelSelectorRequirement] | None = Field(default=None, alias="matchExpressions")
    match_labels: dict[str, str] | None = Field(default=None, alias="matchLabels")


class AdmissionCheckRef(_Strict):
    name: Annotated[str, StringConstraints(min_length=1, max_length=316)]
    on_flavors: list[Subdomain] | None = Field(default=None, alias="onFlavors", max_length=64)


class AdmissionChecksStrategy(_Strict):
    admission_checks: list[AdmissionCheckRef] = Field(alias="admissionChecks", min_length=1, max_length=64)


class BorrowWithinCohort(_Strict):
    policy: Literal["Never", "LowerPriority"] | None = None
    max_priority_threshold: int | None = Field(default=None, alias="maxPriorityThreshold")


class Preemption(_Strict):
    borrow_within_cohort: BorrowWithinCohort | None = Field(default=None, alias="borrowWithinCohort")
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] | None = Field(default=None, alias="reclaimWithinCohort")
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] | None = Field(default=None, alias="withinClusterQueue")

    @model_validator(mode="after")
    def _cel(self) -> Preemption:
        # x-kubernetes-validations of spec.preemption (and validatePreemption of the ClusterQueue webhook), v0.19.2.
        # reclaimWithinCohort defaults to Never in the CRD.
        reclaim = self.reclaim_within_cohort or "Never"
        if reclaim == "Never" and self.borrow_within_cohort is not None and (self.borrow_within_cohort.policy or "Never") != "Never":
            raise ValueError("reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
        return self


class FlavorFungibility(_Strict):
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] | None = Field(default=None, alias="whenCanBorrow")
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] | None = Field(default=None, alias="whenCanPreempt")


class FairSharing(_Strict):
    weight: Any = None

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: Any) -> Any:
        # apis/kueue/v1beta2/fairsharing_types.go (v0.19.2): a quantity; "When not 0, Weight must be greater than 10^-9."
        # pkg/webhooks/common.go validateFairSharing (v0.19.2): not negative; "When not 0, weight must be > 10e-9"
        # (compared with the quantity 1n).
        if value is None:
            return value
        weight = quantity(_quantity(value))
        if weight <= quantity("1n") and weight != 0:
            raise ValueError("weight must be 0 or greater than 10^-9")
        return value


class ClusterQueueSpec(_Strict):
    resource_groups: list[ResourceGroup] | None = Field(default=None, alias="resourceGroups", max_length=16)
    cohort_name: Subdomain | None = Field(default=None, alias="cohortName")
    namespace_selector: LabelSelector | None = Field(default=None, alias="namespaceSelector")
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] | None = Field(default=None, alias="queueingStrategy")
    admission_checks_strategy: AdmissionChecksStrategy | None = Field(default=None, alias="admissionChecksStrategy")
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] | None = Field(default=None, alias="stopPolicy")
    preemption: Preemption | None = None
    flavor_fungibility: FlavorFungibility | None = Field(default=None, alias="flavorFungibility")
    fair_sharing: FairSharing | None = Field(default=None, alias="fairSharing")

    @model_validator(mode="after")
    def _cel(self) -> ClusterQueueSpec:
        if self.cohort_name is None:
            for group in self.resource_groups or []:
                for flavor in group.flavors:
                    if any(r.borrowing_limit is not None for r in flavor.resources):
                        raise ValueError("borrowingLimit must be nil when cohort is empty")
                    if any(r.lending_limit is not None for r in flavor.resources):
                        raise ValueError("lendingLimit must be nil when cohort is empty")
        covered = [r for g in self.resource_groups or [] for r in g.covered_resources]
        if len(covered) != len(set(covered)):
            raise ValueError("a resource may be covered by one resource group only")
        flavors = [f.name for g in self.resource_groups or [] for f in g.flavors]
        if len(flavors) != len(set(flavors)):
            raise ValueError("a flavor may appear once per ClusterQueue")
        return self


class CohortResourceQuota(ResourceQuota):
    """A Cohort's quota: like a ClusterQueue's, but its ``lendingLimit`` may exceed its ``nominalQuota``
    (the Cohort webhook sets ``enforceNominalGreaterThanLending: false``, ``pkg/webhooks/cohort_webhook.go`` v0.19.2)."""

    @model_validator(mode="after")
    def _nominal_required(self) -> CohortResourceQuota:
        if self.nominal_quota is None:
            raise ValueError("nominalQuota is required")
        return self


class CohortFlavorQuotas(FlavorQuotas):
    resources: list[CohortResourceQuota] = Field(min_length=1, max_length=64)  # type: ignore[assignment]


class CohortResourceGroup(ResourceGroup):
    flavors: list[CohortFlavorQuotas] = Field(min_length=1, max_length=64)  # type: ignore[assignment]


class CohortSpec(_Strict):
    """``spec`` of a Cohort (``apis/kueue/v1beta2/cohort_types.go`` at v0.19.2): ``parentName``, up to 16
    ``resourceGroups`` (a shared pool on top of the member ClusterQueues' quotas), ``fairSharing``.
    Webhook: borrowing and lending limits only when the Cohort has a parent."""

    parent_name: Subdomain | None = Field(default=None, alias="parentName")
    resource_groups: list[CohortResourceGroup] | None = Field(default=None, alias="resourceGroups", max_length=16)
    fair_sharing: FairSharing | None = Field(default=None, alias="fairSharing")

    @model_validator(mode="after")
    def _limits_need_a_parent(self) -> CohortSpec:
        if self.parent_name is None:
            for group in self.resource_groups or []:
                for flavor in group.flavors:
                    if any(r.borrowing_limit is not None or r.lending_limit is not None for r in flavor.resources):
                        raise ValueError("borrowingLimit and lendingLimit need parentName (the Cohort webhook rejects them on a root Cohort)")
        covered = [r for g in self.resource_groups or [] for r in g.covered_resources]
        if len(covered) != len(set(covered)):
            raise ValueError("a resource may be covered by one resource group only")
        return self


class LocalQueueSpec(_Strict):
    cluster_queue: Subdomain | None = Field(default=None, alias="clusterQueue")
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] | None = Field(default=None, alias="stopPolicy")
    fair_sharing: FairSharing | None = Field(default=None, alias="fairSharing")


class AdmissionCheckParameters(_Strict):
    api_group: Annotated[str, StringConstraints(pattern=DNS1123_SUBDOMAIN_PATTERN, min_length=1, max_length=253)] = Field(alias="apiGroup")
    kind: Annotated[str, StringConstraints(pattern=r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$", min_length=1, max_length=63)]
    name: Annotated[str, StringConstraints(pattern=DNS1123_LABEL_PATTERN, min_length=1, max_length=63)]


class AdmissionCheckSpec(_Strict):
    controller_name: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(alias="controllerName")
    parameters: AdmissionCheckParameters | None = None


class MultiKueueConfigSpec(_Strict):
    clusters: list[Annotated[str, StringConstraints(max_length=256)]] = Field(min_length=1, max_length=20)
    quota_management: Literal["Manual", "Automated"] | None = Field(default=None, alias="quotaManagement")

    @field_validator("clusters")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("clusters must not repeat")
        return value


class KubeConfigSource(_Strict):
    location: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    location_type: Literal["Secret", "Path"] | None = Field(default=None, alias="locationType")


class ClusterProfileRef(_Strict):
    name: Annotated[str, StringConstraints(min_length=1, max_length=256)]


class ClusterSource(_Strict):
    kube_config: KubeConfigSource | None = Field(default=None, alias="kubeConfig")
    cluster_profile_ref: ClusterProfileRef | None = Field(default=None, alias="clusterProfileRef")

    @model_validator(mode="after")
    def _one(self) -> ClusterSource:
        if (self.kube_config is None) == (self.cluster_profile_ref is None):
            raise ValueError("exactly one of kubeConfig and clusterProfileRef")
        return self


class MultiKueueClusterSpec(_Strict):
    cluster_source: ClusterSource = Field(alias="clusterSource")


class WorkloadPriorityClassBody(_Strict):
    """The top-level fields of a WorkloadPriorityClass besides apiVersion/kind/metadata (it has no ``spec``).

    ``apis/kueue/v1beta2/workloadpriorityclass_types.go`` (v0.19.2): ``value`` int32, required;
    ``description`` at most 2048 characters.
    """

    value: int = Field(ge=-(2**31), le=2**31 - 1)
    description: Annotated[str, StringConstraints(max_length=2048)] | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _int(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"value must be an integer, got {value!r}")
        return value


#: Kinds without ``spec`` whose fields sit at the top level: kind -> model of those fields.
TOP_LEVEL_KINDS: dict[str, type[BaseModel]] = {"WorkloadPriorityClass": WorkloadPriorityClassBody}

#: kind -> (spec model, namespaced)
KINDS: dict[str, tuple[type[BaseModel], bool]] = {
    "ResourceFlavor": (ResourceFlavorSpec, False),
    "ClusterQueue": (ClusterQueueSpec, False),
    "LocalQueue": (LocalQueueSpec, True),
    "Cohort": (CohortSpec, False),
    "AdmissionCheck": (AdmissionCheckSpec, False),
    "MultiKueueConfig": (MultiKueueConfigSpec, False),
    "MultiKueueCluster": (MultiKueueClusterSpec, False),
    # v0.19.2 kueue.x-k8s.io_topologies.yaml, encoded in hybridgpu.render.topology (levels 1..16, unique, hostname last).
    "Topology": (TopologySpec, False),
}


def kueue_errors(manifest: dict[str, Any]) -> list[str]:
    """Errors of one ``kueue.x-k8s.io`` manifest against the v1beta2 CRD constraints (empty: valid).

    Each error starts with the field path, e.g. ``spec.resourceGroups[0].flavors[0].name: ...``.
    A kind not modelled here (Workload, ...) or another version is an error; WorkloadPriorityClass (no ``spec``) is checked by its top-level fields.
    """
    errors: list[str] = []
    if manifest.get("apiVersion") != KUEUE_API:
        return [f"apiVersion: expected {KUEUE_API}, got {manifest.get('apiVersion')!r}"]
    kind = manifest.get("kind")
    if kind in TOP_LEVEL_KINDS:
        body_model = TOP_LEVEL_KINDS[kind]
        body = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata")}
        try:
            meta = ObjectMeta.model_validate(manifest.get("metadata") or {})
            if meta.namespace is not None:
                errors.append("metadata.namespace: must be unset for a cluster-scoped kind")
        except ValidationError as exc:
            errors += [f"{key_path(('metadata', *e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)]
        try:
            body_model.model_validate(body)
        except ValidationError as exc:
            errors += [f"{key_path(e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)]
        return errors
    if kind not in KINDS:
        return [f"kind: {kind!r} is not one of {', '.join(sorted(KINDS))} (the kinds checked offline)"]
    spec_model, namespaced = KINDS[kind]
    extra = set(manifest) - {"apiVersion", "kind", "metadata", "spec"}
    errors += [f"{key}: unknown field" for key in sorted(extra)]
    try:
        meta = ObjectMeta.model_validate(manifest.get("metadata") or {})
        if namespaced and meta.namespace is None:
            errors.append("metadata.namespace: required for a namespaced kind")
        if not namespaced and meta.namespace is not None:
            errors.append("metadata.namespace: must be unset for a cluster-scoped kind")
    except ValidationError as exc:
        errors += [f"{key_path(('metadata', *e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)]
    spec = manifest.get("spec")
    if spec is None and kind in ("AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"):
        errors.append("spec: required")
    else:
        try:
            spec_model.model_validate(spec or {})
        except ValidationError as exc:
            errors += [f"{key_path(('spec', *e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)]
    return errors
