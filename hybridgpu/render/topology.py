"""Kueue Topology Aware Scheduling: the ``Topology`` object, its offline schema, and the node labels it reads (pure).

Creates plain dicts ready for YAML or a Pulumi ``kubernetes`` resource:

* a ``kueue.x-k8s.io/v1beta2`` ``Topology`` (:func:`topology_manifest`): ``spec.levels[].nodeLabel``
  from the broadest level to the narrowest, ``kubernetes.io/hostname`` last, so a job can ask
  for "all pods in one rack" (``kueue.x-k8s.io/podset-required-topology: <rack label>``) or
  "one node" (the hostname level);
* the topology labels of an on-prem host (:func:`host_topology_labels`) from its inventory
  ``block`` and ``rack``; they reach the Node through kubelet ``--node-labels`` (kubeadm
  ``nodeRegistration.kubeletExtraArgs``, :mod:`hybridgpu.render.kubeadm`);
* the levels of an inventory (:func:`onprem_topology_levels`) and its domains
  (:func:`topology_domains`: level label -> domain value -> GPUs) for the "required topology
  larger than any domain" check.

Reuse (H1, EKS): ``topology_manifest(name, ["topology.k8s.aws/network-node-layer-1", ...])``
returns the Topology with ``kubernetes.io/hostname`` appended; ``topology_errors(manifest)``
validates it; :class:`TopologySpec` is registered in :data:`hybridgpu.burst.schema.KINDS`.

Function signatures::

    topology_manifest(name: str, levels: Sequence[str]) -> dict[str, Any]
    topology_errors(manifest: Mapping[str, Any]) -> list[str]
    host_topology_labels(host: Host) -> dict[str, str]
    host_node_labels(host: Host) -> dict[str, str]
    onprem_topology_levels(hosts: Iterable[Host]) -> tuple[str, ...]
    topology_domains(hosts: Iterable[Host], level: str, gpu_model: str | None = None) -> dict[str, int]

Upstream (kubernetes-sigs/kueue tag v0.19.2, commit 8eab6877, read 2026-11-24):

* ``config/components/crd/bases/kueue.x-k8s.io_topologies.yaml`` (version v1beta2): ``spec.levels``
  required, 1..16 items, ``nodeLabel`` required, 1..316 characters, pattern
  ``^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$``;
  CEL: levels unique, and ``kubernetes.io/hostname`` only as the lowest level. A copy of that
  CRD is test data (``tests/fixtures/crds/kueue.x-k8s.io_topologies-v0.19.2.yaml``). The model checks
  ``nodeLabel`` with :data:`hybridgpu.k8s.LABEL_KEY_PATTERN`, which also bounds the name to 63 characters
  (as the API server does for the node label the level names).
* ``kueue.x-k8s.io_resourceflavors.yaml``: ``spec.topologyName`` needs at least one
  ``nodeLabel`` (CEL "at least one nodeLabel is required when topology is set"), encoded in
  :class:`hybridgpu.burst.schema.ResourceFlavorSpec`.
* ``apis/kueue/v1beta2/topology_types.go``: the pod-set annotations
  ``kueue.x-k8s.io/podset-required-topology`` and ``-preferred-topology`` whose value is a level's node label.
* ``pkg/features/kube_features.go``: ``TopologyAwareScheduling`` is beta and on by default since 0.14.

Label keys: the kubelet may set only a short allow-list of ``kubernetes.io``/``k8s.io`` labels on
its own Node (NodeRestriction admission plugin, ``plugin/pkg/admission/noderestriction`` and
``staging/src/k8s.io/kubelet/pkg/apis/well_known_labels.go``; :func:`hybridgpu.k8s.is_kubelet_settable_label`),
so the levels use the project's own prefix: :data:`hybridgpu.k8s.TOPOLOGY_BLOCK_LABEL`,
:data:`hybridgpu.k8s.TOPOLOGY_RACK_LABEL`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from hybridgpu.inventory.models import Host
from hybridgpu.k8s import HOSTNAME_LABEL, KUEUE_API, KUEUE_GROUP, LABEL_KEY_PATTERN, TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL, managed_by_labels
from hybridgpu.render.network_operator import host_fabric_labels

__all__ = [
    "LEVEL_LABELS",
    "ONPREM_TOPOLOGY",
    "REQUIRED_TOPOLOGY_ANNOTATION",
    "PREFERRED_TOPOLOGY_ANNOTATION",
    "TopologySpec",
    "host_node_labels",
    "host_topology_labels",
    "onprem_topology_levels",
    "topology_domains",
    "topology_errors",
    "topology_manifest",
]

#: Name of the on-prem Topology (and the ``topologyName`` of the on-prem ResourceFlavors).
ONPREM_TOPOLOGY = "onprem"
#: Pod-set annotation: every pod of the pod set in one domain of this level (v0.19.2 ``topology_types.go``).
REQUIRED_TOPOLOGY_ANNOTATION = f"{KUEUE_GROUP}/podset-required-topology"
#: Pod-set annotation: as few domains of this level as possible (best effort).
PREFERRED_TOPOLOGY_ANNOTATION = f"{KUEUE_GROUP}/podset-preferred-topology"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TopologyLevel(_Strict):
    """One ``spec.levels[]`` entry: ``nodeLabel`` (required, 1..316 characters, a label key)."""

    node_label: Annotated[str, StringConstraints(pattern=LABEL_KEY_PATTERN, min_length=1, max_length=316)] = Field(alias="nodeLabel")


class TopologySpec(_Strict):
    """``spec`` of a Kueue v1beta2 Topology, with the CRD's CEL rules (levels unique; hostname only last)."""

    levels: list[TopologyLevel] = Field(min_length=1, max_length=16)

    @model_validator(mode="after")
    def _cel(self) -> TopologySpec:
        labels = [level.node_label for level in self.levels]
        if len(set(labels)) != len(labels):
            raise ValueError("must be unique")
        if HOSTNAME_LABEL in labels and labels[-1] != HOSTNAME_LABEL:
            raise ValueError("the kubernetes.io/hostname label can only be used at the lowest level of topology")
        return self


def topology_manifest(name: str, levels: Sequence[str]) -> dict[str, Any]:
    """A Kueue ``Topology`` named ``name`` with ``levels`` (node label keys, broadest first) and ``kubernetes.io/hostname`` last.

    Args:
        name: the Topology's name (DNS-1123 subdomain); ResourceFlavors refer to it with ``spec.topologyName``.
        levels: node label keys from the broadest domain (block) to the narrowest above the node (rack);
            ``kubernetes.io/hostname`` is appended unless it is already last.

    Returns:
        The manifest as a plain dict.

    Raises:
        ValueError: the result breaks the v0.19.2 CRD (no level, more than 16, a repeated level,
            a malformed label key); the message lists :func:`topology_errors`.
    """
    keys = list(levels)
    if not keys or keys[-1] != HOSTNAME_LABEL:
        keys.append(HOSTNAME_LABEL)
    manifest = {
        "apiVersion": KUEUE_API,
        "kind": "Topology",
        "metadata": {"name": name, "labels": managed_by_labels()},
        "spec": {"levels": [{"nodeLabel": key} for key in keys]},
    }
    errors = topology_errors(manifest)
    if errors:
        raise ValueError(f"Topology {name!r}: " + "; ".join(errors))
    return manifest


def topology_errors(manifest: Mapping[str, Any]) -> list[str]:
    """Errors of a ``Topology`` manifest against the Kueue v0.19.2 v1beta2 CRD (empty: valid); each starts with its field path."""
    errors: list[str] = []
    if manifest.get("apiVersion") != KUEUE_API or manifest.get("kind") != "Topology":
        errors.append(f"apiVersion/kind: expected {KUEUE_API} Topology, got {manifest.get('apiVersion')!r} {manifest.get('kind')!r}")
    extra = set(manifest) - {"apiVersion", "kind", "metadata", "spec"}
    errors += [f"{key}: unknown field" for key in sorted(extra)]
    if not (manifest.get("metadata") or {}).get("name"):
        errors.append("metadata.name: required")
    if (manifest.get("metadata") or {}).get("namespace") is not None:
        errors.append("metadata.namespace: must be unset for a cluster-scoped kind")
    try:
        TopologySpec.model_validate(manifest.get("spec") or {})
    except ValidationError as exc:
        for e in exc.errors(include_url=False):
            loc = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in ("spec", *e["loc"])).replace(".[", "[")
            errors.append(f"{loc}: {e['msg']}")
    return errors


#: Inventory field of each on-prem level -> its node label (``host`` is the kubelet's own hostname label).
LEVEL_LABELS: dict[str, str] = {"block": TOPOLOGY_BLOCK_LABEL, "rack": TOPOLOGY_RACK_LABEL, "host": HOSTNAME_LABEL}


def host_topology_labels(host: Host) -> dict[str, str]:
    """The topology node labels of an on-prem host: ``{TOPOLOGY_BLOCK_LABEL: block, TOPOLOGY_RACK_LABEL: rack}``, each only when set.

    The values are the inventory's ``block`` and ``rack`` as written (the inventory rule
    ``topology-label-value`` refuses values that are not label values). The hostname level needs
    no label of ours: the kubelet sets ``kubernetes.io/hostname`` itself.
    """
    labels: dict[str, str] = {}
    if host.block is not None:
        labels[TOPOLOGY_BLOCK_LABEL] = host.block
    if host.rack is not None:
        labels[TOPOLOGY_RACK_LABEL] = host.rack
    return labels


def host_node_labels(host: Host) -> dict[str, str]:
    """The labels of a host besides the role/GPU ones kubeadm's renderer adds: topology levels (block, rack), the
    fabric (:func:`hybridgpu.render.network_operator.host_fabric_labels`), then the host's own ``labels``.

    Used by the kubeadm plan (:mod:`hybridgpu.onprem`) and the kubespray export, so both register the same
    labels. A host's own labels cannot clash: the inventory refuses them on these keys (``generated-label``).
    """
    return {**host_topology_labels(host), **host_fabric_labels(host), **host.labels}


def onprem_topology_levels(hosts: Iterable[Host]) -> tuple[str, ...]:
    """Node label keys of the on-prem Topology, broadest first (hostname not included): block if any GPU worker has one, rack likewise.

    Returns ``()`` when no GPU worker declares a rack or block: then no Topology is rendered.
    """
    workers = [h for h in hosts if h.role == "gpu-worker"]
    levels = []
    if any(h.block is not None for h in workers):
        levels.append(TOPOLOGY_BLOCK_LABEL)
    if any(h.rack is not None for h in workers):
        levels.append(TOPOLOGY_RACK_LABEL)
    return tuple(levels)


def topology_domains(hosts: Iterable[Host], level: str, gpu_model: str | None = None) -> dict[str, int]:
    """GPUs per domain of ``level`` over the active GPU workers (of ``gpu_model`` if given): domain value -> GPU count.

    ``level`` is a node label key of :func:`onprem_topology_levels` or ``kubernetes.io/hostname``
    (each host its own domain). Hosts without the level's label belong to no domain: Kueue's TAS
    considers only nodes carrying every level label of the Topology (kubernetes-sigs/kueue v0.19.2
    ``pkg/util/tas/node.go`` ``NodeMatchesFlavor``).
    """
    domains: dict[str, int] = {}
    for host in hosts:
        if host.role != "gpu-worker" or host.state != "active" or host.gpu is None:
            continue
        if gpu_model is not None and host.gpu.model != gpu_model:
            continue
        value = host.hostname if level == HOSTNAME_LABEL else host_topology_labels(host).get(level)
        if value is None:
            continue
        # A rack name repeats across blocks only as the same rack (rule topology-rack-in-two-blocks).
        domains[value] = domains.get(value, 0) + host.gpu_count
    return domains
