"""Render Karpenter v1 objects and Helm values from the typed config (pure, no Pulumi).

Creates (as plain dicts, ready for YAML or a Pulumi CustomResource):

* ``karpenter.k8s.aws/v1`` EC2NodeClass per :class:`NodeClassConfig`;
* ``karpenter.sh/v1`` NodePool per :class:`NodePoolConfig`, with the instance-type list
  resolved from the catalog so the sizes a pool may pick are explicit and bounded;
* the values of the ``karpenter`` Helm chart.

API facts: Karpenter v1.14.1, ``aws/karpenter-provider-aws`` default branch at commit
1d927085 (2026-08-21): ``website/content/en/v1.14/concepts/{nodepools,nodeclasses}.md`` and
``charts/karpenter/values.yaml`` (read 2026-11-22). Well-known labels: ``karpenter.sh/capacity-type``,
``node.kubernetes.io/instance-type``, ``karpenter.k8s.aws/instance-family``,
``karpenter.k8s.aws/instance-gpu-name``, ``karpenter.k8s.aws/instance-gpu-count``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hybridgpu.catalog import Catalog, InstanceType
from hybridgpu.config.models import (
    RECOMMENDED_SPOT_INSTANCE_TYPES,
    CapacityType,
    KarpenterConfig,
    NodeClassConfig,
    NodePoolConfig,
)
from hybridgpu.k8s import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    DISCOVERY_TAG,
    GPU_RESOURCE,
    INSTANCE_FAMILY_LABEL,
    INSTANCE_GPU_COUNT_LABEL,
    INSTANCE_GPU_NAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    ROLE_LABEL,
    SYSTEM_ROLE,
    managed_by_labels,
    taint_object,
)
from hybridgpu.render.charts import critical_addons_toleration
from hybridgpu.render.karpenter_static import static_feature_gates, static_nodepool

NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.k8s.aws/v1"
#: Well-known labels of reserved offerings and nodes, and the value of a Capacity Block's type
#: (aws/karpenter-provider-aws v1.14.1 ``pkg/apis/v1/labels.go``, ``ec2nodeclass_status.go``).
CAPACITY_RESERVATION_TYPE_LABEL = "karpenter.k8s.aws/capacity-reservation-type"
CAPACITY_RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
CAPACITY_BLOCK = "capacity-block"


def capacity_block_ids(node_class: str, pools: list[NodePoolConfig]) -> list[str]:
    """Reservation ids of the Capacity Blocks of the pools launching with ``node_class``, sorted, each once.

    The EC2NodeClass must select them (``capacityReservationSelectorTerms``): Karpenter offers reserved
    capacity only from the reservations a node class selects (v1.14.1 ``pkg/providers/capacityreservation``).
    """
    return sorted({b.id for p in pools if p.node_class == node_class for b in p.capacity_blocks})


def resolve_instance_types(pool: NodePoolConfig, catalog: Catalog) -> list[InstanceType]:
    """The catalog instance types a pool may pick, sorted by (GPUs per instance, price).

    Explicit ``instanceTypes`` are taken as given (unknown names are skipped here; the config
    checks report them). Otherwise GPU instance types of ``instanceFamilies`` (all families when
    empty) are filtered by ``gpuNames`` and ``gpuCounts``.

    Returns:
        A list of :class:`InstanceType`, possibly empty.
    """
    if pool.instance_types:
        known = {t.name: t for t in catalog.instance_types}
        chosen = [known[name] for name in pool.instance_types if name in known]
        if pool.gpu_counts:
            chosen = [t for t in chosen if t.gpu_count in pool.gpu_counts]
        if pool.gpu_names:
            chosen = [t for t in chosen if catalog.gpu_model(t.gpu_model).karpenter_gpu_name in pool.gpu_names]
    else:
        chosen = catalog.gpu_instance_types(
            families=pool.instance_families or None,
            gpu_names=pool.gpu_names or None,
            gpu_counts=pool.gpu_counts or None,
        )
    return sorted(chosen, key=lambda t: (t.gpu_count, t.on_demand_usd_per_hour or float("inf"), t.name))


def min_values(pool: NodePoolConfig, resolved: list[InstanceType]) -> int | None:
    """``minValues`` for the instance-type requirement: explicit, or min(5, types) for spot pools."""
    if pool.min_instance_types is not None:
        return pool.min_instance_types
    if CapacityType.spot in pool.capacity_types and resolved:
        return min(RECOMMENDED_SPOT_INSTANCE_TYPES, len(resolved))
    return None


@dataclass(frozen=True)
class NodePoolSummary:
    """What a NodePool may launch at most.

    Attributes:
        name: NodePool name.
        capacity_types: e.g. ``("spot",)``.
        weight: NodePool weight or None.
        gpu_limit: ``nvidia.com/gpu`` limit, in GPUs (the most GPUs the pool may run at once).
        instance_types: names of the instance types it may pick.
        max_instances: most instances at the GPU limit (limit / fewest GPUs per instance), rounded down.
        max_usd_per_hour: on-demand list price of running the whole limit on the priciest GPU (USD/hour),
            an upper bound of the pool's hourly burn (spot and reserved are cheaper); types without a
            catalog price are left out.
        static_nodes: ``replicas`` of a static pool (nodes that run, and are paid, around the clock); 0 otherwise.
        always_on_usd_per_hour: on-demand list price of those static nodes (USD/hour, the cheapest resolved type),
            a floor of the pool's hourly burn whatever the demand; 0.0 for a dynamic pool.
    """

    name: str
    capacity_types: tuple[str, ...]
    weight: int | None
    gpu_limit: int
    instance_types: tuple[str, ...]
    max_instances: int
    max_usd_per_hour: float
    static_nodes: int = 0
    always_on_usd_per_hour: float = 0.0


def summarize_nodepool(pool: NodePoolConfig, catalog: Catalog) -> NodePoolSummary:
    """Summarize the most a pool may launch (see :class:`NodePoolSummary`)."""
    resolved = resolve_instance_types(pool, catalog)
    limit = pool.gpu_limit or 0
    fewest = min((t.gpu_count for t in resolved), default=1)
    per_gpu = max((t.on_demand_usd_per_hour / t.gpu_count for t in resolved if t.on_demand_usd_per_hour), default=0.0)
    return NodePoolSummary(
        name=pool.name,
        capacity_types=tuple(c.value for c in pool.capacity_types),
        weight=pool.weight,
        gpu_limit=limit,
        instance_types=tuple(t.name for t in resolved),
        max_instances=limit // fewest,
        max_usd_per_hour=round(limit * per_gpu, 2),
        static_nodes=pool.replicas or 0,
        always_on_usd_per_hour=round((pool.replicas or 0) * min((t.on_demand_usd_per_hour for t in resolved if t.on_demand_usd_per_hour), default=0.0), 2),
    )


def _requirement(key: str, values: list[str], min_values_: int | None = None) -> dict[str, Any]:
    req: dict[str, Any] = {"key": key, "operator": "In", "values": values}
    if min_values_ is not None:
        req["minValues"] = min_values_
    return req


def render_nodepool(
    pool: NodePoolConfig,
    catalog: Catalog,
    *,
    extra_labels: dict[str, str] | None = None,
    extra_limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Render a ``karpenter.sh/v1`` NodePool.

    Args:
        pool: validated pool config (the config checks guarantee it resolves to >= 1 type).
        catalog: GPU instance catalog.
        extra_labels: more template labels (e.g. NVIDIA layer selectors), merged last.
        extra_limits: more ``spec.limits`` (e.g. MIG resources advertised by NodeOverlays).

    Returns:
        The NodePool manifest as a dict.
    """
    resolved = resolve_instance_types(pool, catalog)
    families = sorted({t.family for t in resolved})
    requirements = [
        _requirement(CAPACITY_TYPE_LABEL, [c.value for c in pool.capacity_types]),
        _requirement(ARCH_LABEL, [pool.architecture]),
        _requirement(OS_LABEL, ["linux"]),
        _requirement(INSTANCE_FAMILY_LABEL, families),
        _requirement(INSTANCE_TYPE_LABEL, [t.name for t in resolved], min_values(pool, resolved)),
    ]
    if pool.gpu_names:
        requirements.append(_requirement(INSTANCE_GPU_NAME_LABEL, sorted(pool.gpu_names)))
    if pool.gpu_counts:
        requirements.append(_requirement(INSTANCE_GPU_COUNT_LABEL, [str(c) for c in sorted(pool.gpu_counts)]))
    if pool.capacity_blocks:
        # Only the capacity-block offerings of these reservations (v1.14.1 instancetype/types.go labels each
        # reserved offering with its id and type; on-demand and spot offerings have neither label).
        requirements.append(_requirement(CAPACITY_RESERVATION_TYPE_LABEL, [CAPACITY_BLOCK]))
        requirements.append(_requirement(CAPACITY_RESERVATION_ID_LABEL, sorted({b.id for b in pool.capacity_blocks})))

    labels = {NODEPOOL_LABEL: pool.name, **pool.labels, **(extra_labels or {})}
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool.node_class},
        "requirements": requirements,
        "expireAfter": pool.expire_after,
    }
    if pool.taints:
        template_spec["taints"] = [taint_object(t.key, t.value, t.effect.value) for t in pool.taints]
    if pool.termination_grace_period:
        template_spec["terminationGracePeriod"] = pool.termination_grace_period

    disruption: dict[str, Any] = {
        "consolidationPolicy": pool.disruption.consolidation_policy,
        "consolidateAfter": pool.disruption.consolidate_after,
        "budgets": [b.model_dump(by_alias=True, exclude_none=True) for b in pool.disruption.budgets],
    }
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": labels}, "spec": template_spec},
        "disruption": disruption,
        "limits": {GPU_RESOURCE: str(pool.gpu_limit or 0), **(extra_limits or {})},
    }
    if pool.weight is not None:
        spec["weight"] = pool.weight
    manifest = {
        "apiVersion": NODEPOOL_API,
        "kind": "NodePool",
        "metadata": {"name": pool.name, "labels": managed_by_labels()},
        "spec": spec,
    }
    return static_nodepool(manifest, pool)  # `replicas`: spec.replicas, no weight or limits (karpenter_static)


def efa_network_interfaces(count: int) -> list[dict[str, Any]]:
    """``spec.networkInterfaces`` of an EC2NodeClass with ``count`` EFA devices.

    Card 0 keeps the primary ENA interface (device 0) and gets an EFA-only interface at device 1;
    every further card carries one EFA-only interface at device 0: EC2 User Guide, "Maximize network
    bandwidth on Amazon EC2 instances with multiple network cards" (efa-acc-inst-types, read 2026-11-24).
    Karpenter v1.14.1 then advertises ``vpc.amazonaws.com/efa: count`` on the node (``instancetype/types.go``
    ``efas`` counts the ``efa-only`` entries).

    Raises:
        ValueError: ``count`` below 1.
    """
    if count < 1:
        raise ValueError(f"an EFA node class needs at least 1 EFA interface, got {count}")
    return [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
    ] + [{"networkCardIndex": card, "deviceIndex": 0, "interfaceType": "efa-only"} for card in range(1, count)]


def nodeclass_tags(node_class: NodeClassConfig, cost_tags: dict[str, str]) -> dict[str, str]:
    """Tags on every instance/volume Karpenter launches: cost tags, overridden by the class's own tags."""
    return {**cost_tags, **node_class.tags}


def render_ec2_nodeclass(
    node_class: NodeClassConfig,
    *,
    cluster_name: str,
    node_role_name: str,
    cost_tags: dict[str, str],
    efa_interfaces: int | None = None,
    capacity_block_ids: list[str] | None = None,
) -> dict[str, Any]:
    """Render a ``karpenter.k8s.aws/v1`` EC2NodeClass.

    The class pins an AMI alias, requires IMDSv2 (hop limit 1 by default), encrypts a gp3
    root volume, selects subnets and security groups by the ``karpenter.sh/discovery`` tag,
    optionally attaches EFA interfaces / a cluster placement group / capacity reservations,
    and propagates the cost tags to launched instances.

    Args:
        node_class: validated node class config.
        cluster_name: EKS cluster name (value of the discovery tag).
        node_role_name: IAM role name of Karpenter nodes (Karpenter makes the instance profile).
        cost_tags: the stack's cost tags.
        efa_interfaces: EFA devices of an EFA class, derived from the catalog by
            :func:`hybridgpu.render.efa.derived_efa_interfaces`; None takes ``efa.interfaces``.
        capacity_block_ids: reservation ids of the Capacity Blocks of the pools using this class
            (:func:`capacity_block_ids`), selected besides ``capacityReservationIds``; None: none.

    Returns:
        The EC2NodeClass manifest as a dict.

    Raises:
        ValueError: an EFA class without a count (neither ``efa_interfaces`` nor ``efa.interfaces``).
    """
    device = "/dev/xvda" if node_class.ami_family == "al2023" else "/dev/xvdb"
    ebs: dict[str, Any] = {
        "volumeSize": f"{node_class.root_volume_gib}Gi",
        "volumeType": "gp3",
        "iops": node_class.root_volume_iops,
        "throughput": node_class.root_volume_throughput_mibps,
        "encrypted": True,
        "deleteOnTermination": True,
    }
    if node_class.kms_key_id:
        ebs["kmsKeyID"] = node_class.kms_key_id
    spec: dict[str, Any] = {
        "role": node_role_name,
        "amiSelectorTerms": [{"alias": node_class.ami_alias}],
        "subnetSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster_name}}],
        "securityGroupSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster_name}}],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": node_class.http_put_response_hop_limit,
            "httpTokens": "required",
        },
        "blockDeviceMappings": [{"deviceName": device, "ebs": ebs}],
        "tags": nodeclass_tags(node_class, cost_tags),
    }
    if node_class.instance_store_raid0:
        spec["instanceStorePolicy"] = "RAID0"
    if node_class.efa.enabled:
        count = efa_interfaces if efa_interfaces is not None else node_class.efa.interfaces
        if count is None:
            raise ValueError(f"EC2NodeClass {node_class.name!r} has EFA but no interface count: derive it with hybridgpu.render.efa.derived_efa_interfaces")
        spec["networkInterfaces"] = efa_network_interfaces(count)
        if node_class.efa.placement_group:
            spec["placementGroupSelector"] = {"name": node_class.efa.placement_group}
    ids = list(node_class.capacity_reservation_ids)
    ids += [rid for rid in capacity_block_ids or [] if rid not in ids]
    terms: list[dict[str, Any]] = [{"id": rid} for rid in ids]
    if node_class.capacity_reservation_tags:
        terms.append({"tags": dict(node_class.capacity_reservation_tags)})
    if terms:
        spec["capacityReservationSelectorTerms"] = terms
    return {
        "apiVersion": NODECLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": node_class.name, "labels": managed_by_labels()},
        "spec": spec,
    }


#: The namespaces every Kubernetes cluster starts with (kubernetes.io, "Namespaces: Initial
#: namespaces", read 2026-11-24): the toolkit never creates or deletes these.
INITIAL_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


def karpenter_namespace_manifest(config: KarpenterConfig) -> dict[str, Any] | None:
    """The Namespace the Karpenter releases go into, or None when it is one the cluster starts with.

    Helm installs a release into an existing namespace only (``helm install`` without
    ``--create-namespace`` fails with "namespaces ... not found"), and the EKS Pod Identity
    association names the namespace of the ``karpenter`` service account; so a
    ``hybridgpu:cloud.karpenter.namespace`` other than an initial namespace is created, before
    both, and deleted with the stack.

    Returns:
        A ``v1/Namespace`` manifest (labelled managed-by hybridgpu), or None for ``kube-system`` and
        the other :data:`INITIAL_NAMESPACES`.
    """
    if config.namespace in INITIAL_NAMESPACES:
        return None
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": config.namespace, "labels": managed_by_labels()}}


def karpenter_helm_values(config: KarpenterConfig, *, cluster_name: str, interruption_queue: str) -> dict[str, Any]:
    """Values for the ``oci://public.ecr.aws/karpenter/karpenter`` chart.

    Karpenter runs on the system node group (it tolerates ``CriticalAddonsOnly`` and avoids
    nodes it manages), authenticates with an EKS Pod Identity association for the
    ``karpenter`` service account (so no IRSA annotation), and reads interruption events from
    the SQS queue. CRDs come from the separate ``karpenter-crd`` chart so they are upgraded.

    Returns:
        The Helm values dict.
    """
    return {
        "replicas": config.replicas,
        "serviceAccount": {"create": True, "name": "karpenter"},
        "settings": {
            "clusterName": cluster_name,
            "interruptionQueue": interruption_queue,
            "eksControlPlane": True,
            # Strict minValues refuses to launch when fewer types than minValues fit a pod (an
            # 8-GPU pod fits only the largest sizes); BestEffort keeps the diversity where it
            # can and still launches.
            "minValuesPolicy": "BestEffort",
            "featureGates": {
                "reservedCapacity": True,
                "spotToSpotConsolidation": config.spot_to_spot_consolidation,
                "nodeOverlay": config.node_overlay,
                # Karpenter repairs only what the node monitoring agent reports; both follow this one switch.
                "nodeRepair": config.node_repair.enabled,
                **static_feature_gates(config),
            },
        },
        "tolerations": [critical_addons_toleration()],
        "nodeSelector": {OS_LABEL: "linux", ROLE_LABEL: SYSTEM_ROLE},
        "controller": {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}},
    }
