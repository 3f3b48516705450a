"""Remote (multi-language) components under the offline check: expand what can be expanded
faithfully, name the rest.

A component registered with ``remote=True`` (``pulumi_eks``'s ``Cluster`` and node groups,
``pulumi_awsx``'s ``Vpc``, pulumi-kubernetes' v2 YAML, Kustomize and Helm v4 components, any
``pulumi.ComponentResource(..., remote=True)``) is sent by the engine to its provider plugin's
``Construct``, which registers the children; under ``pulumi preview --policy-pack`` those
children reach the pack. Offline no plugin runs, so :class:`~hybridgpu.shell.preview.RecordingMonitor`
asks :func:`construct` for the children the provider would register:

* ``kubernetes:yaml/v2:ConfigGroup`` / ``ConfigFile``: every object of its files, YAML and objects;
* ``kubernetes:kustomize/v2:Directory``: a local kustomization that uses only ``resources``
  (local files and directories), ``namespace`` and metadata-only ``labels``, built exactly
  (:func:`kustomize_build`);
* anything else raises :class:`Opaque` with the reason, and ``hybridgpu check`` reports the
  component as an ``offline-opaque-component`` finding (:func:`opaque_message`: what the real
  preview would check on its children, with the instance types and sizes read from its inputs).

Children are named as the provider names them: ``<resourcePrefix>:<namespace>/<name>``
(``<resourcePrefix>:<name>`` for a cluster-scoped object; the prefix defaults to the component's
name, and an empty prefix drops it), after the default namespace is applied to namespaced kinds.
Source: pulumi/pulumi-kubernetes ``provider/pkg/provider/yaml/v2/yaml.go`` (``Normalize``,
``register``), ``kustomize/v2/directory.go``, ``helm/v4/chart.go``, ``provider/pkg/clients/clients.go``
(``IsNamespacedKind``), commit 94977969 (2026-07-01); pulumi_kubernetes 4.34.2 SDK docstrings
("resourcePrefix="foo" would produce a resource named "foo:resourceName"").
"""

from __future__ import annotations

import glob
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.catalog import is_accelerator_type, load_catalog
from hybridgpu.catalog.models import UnknownInstanceTypeError
from hybridgpu.datafile import load_yaml, load_yaml_all
from hybridgpu.shell.outputs import CLUSTER_SCOPED_KINDS

__all__ = [
    "HELM_CHART_V4",
    "KUSTOMIZE_DIRECTORY",
    "OPAQUE_POLICY",
    "YAML_V2_TYPES",
    "Child",
    "Opaque",
    "construct",
    "decode_manifests",
    "kubernetes_type",
    "kustomize_build",
    "named_capacity",
    "opaque_message",
]

#: The name of the check's own finding for a remote component whose children it could not see
#: (not a pack policy: under the real CLI the children reach the pack, so a pack rule would block
#: every real preview). ``hybridgpu check --opaque-components advisory|mandatory`` sets its level.
OPAQUE_POLICY = "offline-opaque-component"

#: pulumi-kubernetes' v2 YAML components: remote components the provider expands into one child per
#: object (pulumi_kubernetes 4.34 ``yaml/v2/ConfigGroup.py``, ``ConfigFile.py``).
YAML_V2_TYPES = ("kubernetes:yaml/v2:ConfigGroup", "kubernetes:yaml/v2:ConfigFile")
#: pulumi-kubernetes' Kustomize component (pulumi_kubernetes 4.34 ``kustomize/v2/Directory.py``).
KUSTOMIZE_DIRECTORY = "kubernetes:kustomize/v2:Directory"
#: pulumi-kubernetes' Helm v4 chart: the provider runs ``helm template`` and registers each rendered
#: object as a child (pulumi_kubernetes 4.34 ``helm/v4/Chart.py``; ``helm/v4/chart.go`` Construct).
HELM_CHART_V4 = "kubernetes:helm.sh/v4:Chart"

#: Built-in kinds that are cluster-scoped: one list (:data:`hybridgpu.shell.outputs.CLUSTER_SCOPED_KINDS`,
#: ``kubectl api-resources --namespaced=false``). Every other kind of a built-in group is namespaced,
#: as the API server tells the provider (pulumi-kubernetes ``provider/pkg/clients/clients.go``
#: ``IsNamespacedKind``: its known kinds, else the cluster's discovery) and as kustomize's namespace
#: transformer assumes.
#: The file names kustomize looks for in a kustomization directory, in its order
#: (kubernetes-sigs/kustomize ``api/konfig/general.go`` ``RecognizedKustomizationFileNames``).
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
#: The kustomization fields built exactly offline; any other field makes the Directory opaque.
KUSTOMIZE_FIELDS = ("apiVersion", "kind", "resources", "namespace", "labels")
#: Kinds whose other fields kustomize's namespace transformer also rewrites (role binding subjects,
#: webhook and API service references): a kustomization that sets ``namespace`` on them is opaque.
_NAMESPACE_REFERENCING_KINDS = frozenset(
    ("RoleBinding", "ClusterRoleBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "CustomResourceDefinition")
)


class Opaque(Exception):
    """The children of a remote component cannot be derived offline; ``reason`` says why (names the
    input or kustomization field)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Child:
    """One child a provider's ``Construct`` registers: type token, logical name, inputs (the object),
    and the top-level inputs it marks secret (a Secret's ``data``/``stringData``)."""

    type: str
    name: str
    inputs: dict[str, Any]
    secret_keys: tuple[str, ...] = ()


def decode_manifests(text: str) -> list[dict[str, Any]]:
    """Every non-empty YAML document of ``text``, as ``kubernetes:yaml:decode`` answers.

    Raises:
        ValueError: the text is not YAML, or a document is not a mapping (names the document).
    """
    try:
        docs = load_yaml_all(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"kubernetes:yaml:decode: the manifest is not valid YAML: {exc}") from None
    out = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ValueError(f"kubernetes:yaml:decode: document {i} is not a Kubernetes object (a mapping)")
        out.append(doc)
    return out


def kubernetes_type(obj: dict[str, Any]) -> str:
    """The pulumi-kubernetes type token of a manifest: ``apps/v1`` + ``Deployment`` ->
    ``kubernetes:apps/v1:Deployment``; the core group is ``core`` (``v1`` -> ``core/v1``)."""
    api = str(obj.get("apiVersion") or "")
    group_version = api if "/" in api else f"core/{api}"
    return f"kubernetes:{group_version}:{obj.get('kind')}"


def construct(type_: str, name: str, inputs: dict[str, Any], *, default_namespace: str = "default", unknown: bool = False) -> list[Child]:
    """The children the provider's ``Construct`` registers for a remote component.

    Args:
        type_, name: the component's type token and logical name.
        inputs: its inputs (plain values, secrets unwrapped), camelCase as on the wire.
        default_namespace: the Kubernetes provider's namespace (its ``namespace`` setting, else
            ``default``), applied to namespaced objects that name none.
        unknown: some input is unknown (a first preview): the provider then registers no child
            ("Input properties have unknown values. Preview is incomplete.").

    Returns:
        The children, in the order the objects were read.

    Raises:
        Opaque: the children cannot be derived offline (any type other than the v2 YAML and
            Kustomize components, unknown inputs, a remote source, a kustomization field not
            built offline); the reason names the input or field.
        ValueError: a file the component names is missing or malformed (the provider fails too).
    """
    if type_ in YAML_V2_TYPES:
        if unknown:
            raise Opaque("some of its inputs are unknown at preview, and the provider then registers no child")
        objects = _yaml_v2_objects(type_, name, inputs)
    elif type_ == KUSTOMIZE_DIRECTORY:
        if unknown:
            raise Opaque("some of its inputs are unknown at preview, and the provider then registers no child")
        directory = str(inputs.get("directory") or "")
        if _is_remote(directory):
            raise Opaque(f"directory {directory} is a remote kustomization; the offline check does not fetch it (use a local directory)")
        objects = kustomize_build(Path(directory))
        if inputs.get("namespace"):
            default_namespace = str(inputs["namespace"])
    elif type_ == HELM_CHART_V4:
        chart = inputs.get("chart") or "?"
        version = f" {inputs['version']}" if inputs.get("version") else ""
        raise Opaque(f"chart {chart}{version} is rendered by `helm template` inside the kubernetes plugin, and there is no helm offline")
    else:
        package = type_.split(":", 1)[0]
        raise Opaque(f"the `{package}` plugin does not run offline")
    prefix = str(inputs["resourcePrefix"]) if inputs.get("resourcePrefix") is not None else name
    return [_child(obj, prefix) for obj in _normalize(objects, default_namespace)]


def _is_remote(location: str) -> bool:
    """Whether a kustomize resource or directory is fetched from elsewhere (a URL, a git address)."""
    return "://" in location or location.startswith(("git@", "github.com/", "gitlab.com/", "bitbucket.org/")) or "?ref=" in location


def _yaml_v2_objects(type_: str, name: str, inputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of a v2 ConfigGroup/ConfigFile: its ``file``/``files`` (globs expanded), ``yaml`` texts, ``objs``.

    Raises:
        Opaque: a file is a URL (not fetched offline).
        ValueError: a file cannot be read or is not YAML objects.
    """
    texts: list[str] = []
    for pattern in ([inputs["file"]] if inputs.get("file") else []) + list(inputs.get("files") or []):
        pattern = str(pattern)
        if "://" in pattern:
            raise Opaque(f"{pattern} is a URL; the offline check does not fetch it (use a local file)")
        matches = sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        for path in matches:
            try:
                texts.append(Path(path).read_text(encoding="utf-8"))
            except OSError as exc:
                raise ValueError(f"{type_} {name!r}: cannot read {path}: {exc.strerror}") from None
    if inputs.get("yaml"):
        texts += [str(t) for t in (inputs["yaml"] if isinstance(inputs["yaml"], list) else [inputs["yaml"]])]
    return [o for t in texts for o in decode_manifests(t)] + [o for o in inputs.get("objs") or [] if isinstance(o, dict)]


def _namespaced(obj: dict[str, Any], objects: list[dict[str, Any]]) -> bool | None:
    """Whether the provider applies a namespace to ``obj``: built-in kinds by their scope, custom
    kinds by a CustomResourceDefinition among ``objects``; None for a custom kind without one (the
    provider asks the cluster; without one it leaves the namespace unset, and so does this)."""
    kind = str(obj.get("kind") or "").removesuffix("List")
    api = str(obj.get("apiVersion") or "")
    group = api.split("/", 1)[0] if "/" in api else ""
    if group == "" or "." not in group or group.endswith(".k8s.io"):
        return kind not in CLUSTER_SCOPED_KINDS
    for crd in objects:
        spec = crd.get("spec") or {}
        if crd.get("kind") == "CustomResourceDefinition" and spec.get("group") == group and (spec.get("names") or {}).get("kind") == kind:
            return spec.get("scope") == "Namespaced"
    return None


def _normalize(objects: list[dict[str, Any]], default_namespace: str) -> list[dict[str, Any]]:
    """The provider's ``Normalize``: List kinds expanded, kind/apiVersion/name required, the default
    namespace applied to namespaced objects that name none.

    Raises:
        ValueError: an object has no kind, apiVersion or metadata.name (the provider's message).
    """
    expanded: list[dict[str, Any]] = []
    for obj in objects:
        if str(obj.get("kind") or "").endswith("List") and isinstance(obj.get("items"), list):
            expanded += [i for i in obj["items"] if isinstance(i, dict)]
        else:
            expanded.append(obj)
    out = []
    for obj in expanded:
        if not obj.get("kind") or not obj.get("apiVersion"):
            raise ValueError(f"Kubernetes resources require a kind and apiVersion: {obj}")
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ValueError(f"Kubernetes resources require a .metadata.name: {obj}")
        if not meta.get("namespace") and _namespaced(obj, expanded):
            obj = {**obj, "metadata": {**meta, "namespace": default_namespace}}
        out.append(obj)
    return out


def _child(obj: dict[str, Any], prefix: str) -> Child:
    """The child the provider registers for one normalized object (``yaml.go`` ``register``)."""
    meta = obj["metadata"]
    ident = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])
    secret: tuple[str, ...] = ()
    if obj.get("apiVersion") == "v1" and obj.get("kind") == "Secret":  # always secret (raw YAML must not leak)
        secret = tuple(k for k in ("data", "stringData") if k in obj)
    return Child(kubernetes_type(obj), f"{prefix}:{ident}" if prefix else ident, obj, secret)


def kustomize_build(directory: Path) -> list[dict[str, Any]]:
    """The objects ``kustomize build <directory>`` produces, for a kustomization that uses only
    ``resources`` (local YAML files and local kustomization directories), ``namespace`` and ``labels``
    whose entries set neither ``includeSelectors``, ``includeTemplates`` nor ``fields`` (metadata
    labels only). Objects keep the order of ``resources`` (the provider builds with
    ``krusty.ReorderOptionNone``). Source: kubernetes-sigs/kustomize ``api/krusty``; the labels
    field specs ``api/internal/target/kusttarget_configplugin.go``; the namespace transformer
    ``api/filters/namespace`` (kinds it does not know are namespaced).

    Raises:
        Opaque: any other kustomization field (``patches``, ``images``, generators, ``helmCharts``,
            ``components``, ``namePrefix``, ``commonLabels`` ...), a remote resource, ``kind:
            Component``, or ``namespace`` over a kind whose references it rewrites; names the file and field.
        ValueError: no kustomization file, an unreadable or malformed file (kustomize fails too).
    """
    return _build(directory, ())


def _build(directory: Path, seen: tuple[Path, ...]) -> list[dict[str, Any]]:
    resolved = directory.resolve()
    if resolved in seen:
        raise ValueError(f"kustomization {directory}: cycle through {' -> '.join(map(str, seen + (resolved,)))}")
    file = next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)
    if file is None:
        raise ValueError(f"kustomize build error: {directory}: no {', '.join(KUSTOMIZATION_FILES)} (is it a kustomization directory?)")
    try:
        spec = load_yaml(file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"kustomize build error: {file}: {exc}") from None
    if not isinstance(spec, dict):
        raise ValueError(f"kustomize build error: {file}: not a mapping")
    for key in spec:
        if key not in KUSTOMIZE_FIELDS:
            raise Opaque(f"{file}: `{key}` is not built offline (only {', '.join(KUSTOMIZE_FIELDS[2:])} are)")
    if spec.get("kind", "Kustomization") != "Kustomization":
        raise Opaque(f"{file}: `kind: {spec['kind']}` is not built offline")
    objects: list[dict[str, Any]] = []
    for i, entry in enumerate(spec.get("resources") or []):
        entry = str(entry)
        if _is_remote(entry):
            raise Opaque(f"{file}: `resources[{i}]` {entry} is remote; the offline check does not fetch it")
        path = directory / entry
        if path.is_dir():
            objects += _build(path, seen + (resolved,))
        elif path.is_file():
            try:
                objects += decode_manifests(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise ValueError(f"kustomize build error: {path}: {exc}") from None
        else:
            raise ValueError(f"kustomize build error: {file}: resources[{i}] {entry}: no such file or directory")
    labels: dict[str, str] = {}
    for i, entry in enumerate(spec.get("labels") or []):
        if not isinstance(entry, dict):
            raise ValueError(f"kustomize build error: {file}: labels[{i}] is not a mapping")
        for option in ("includeSelectors", "includeTemplates", "fields"):
            if entry.get(option):
                raise Opaque(f"{file}: `labels[{i}].{option}` is not built offline (only metadata labels are)")
        labels.update({str(k): str(v) for k, v in (entry.get("pairs") or {}).items()})
    namespace = spec.get("namespace")
    out = []
    for obj in objects:
        meta = dict(obj.get("metadata") or {})
        if labels:
            meta["labels"] = {**(meta.get("labels") or {}), **labels}
        if namespace:
            if obj.get("kind") in _NAMESPACE_REFERENCING_KINDS:
                raise Opaque(f"{file}: `namespace` also rewrites references inside {obj.get('kind')} objects, which is not built offline")
            if obj.get("kind") not in CLUSTER_SCOPED_KINDS:
                meta["namespace"] = str(namespace)
        out.append({**obj, "metadata": meta})
    return out


# --- What a reviewer is told about an opaque component ------------------------------------------

#: pulumi-eks defaults (pulumi/pulumi-eks ``provider/cmd/pulumi-resource-eks/schema.json``, commit
#: 7bf0c1b1, 2026-08-12): instance type ``t3.medium``; node group ``maxSize`` 2 (``scalingConfig``
#: of a managed node group: desiredSize 2, minSize 1, maxSize 2).
EKS_DEFAULT_INSTANCE_TYPE = "t3.medium"
EKS_DEFAULT_MAX_SIZE = 2

#: What the pack would check on the children of well-known remote components (under the real CLI).
_CHECKS = {
    "eks:index:Cluster": "the EKS cluster (eks-endpoint-private, required-cost-tags), its IAM roles and security groups "
    "(required-cost-tags) and, unless skipDefaultNodeGroup/fargate/autoMode, its default node group's launch template "
    "and Auto Scaling group (gpu-instance-size, stack-gpu-ceiling, imdsv2-required, encrypted-volumes)",
    "eks:index:ManagedNodeGroup": "the aws.eks.NodeGroup and its launch template (gpu-instance-size, stack-gpu-ceiling, "
    "required-cost-tags, imdsv2-required, encrypted-volumes)",
    "eks:index:NodeGroupV2": "the launch template and Auto Scaling group (gpu-instance-size, stack-gpu-ceiling, "
    "required-cost-tags, imdsv2-required, encrypted-volumes)",
    "eks:index:NodeGroup": "the launch configuration and Auto Scaling group (gpu-instance-size, stack-gpu-ceiling, "
    "required-cost-tags, imdsv2-required, encrypted-volumes)",
    "awsx:ec2:Vpc": "the VPC, subnets, route tables, internet and NAT gateways and Elastic IPs: no GPU capacity, "
    "but each is checked for cost tags (required-cost-tags)",
    HELM_CHART_V4: "every object the chart renders (Deployments, Jobs, NodePools...: the GPU workload, NodePool and "
    "cost-label policies); its values are checked here by helm-values-capacity",
    KUSTOMIZE_DIRECTORY: "every object the kustomization builds (the GPU workload, NodePool and cost-label policies)",
}


def _gpus(n: float) -> str:
    return f"{n:g} GPU" + ("" if n == 1 else "s")


def _instance_gpus(instance_type: str) -> str:
    """``p5.48xlarge (8 GPUs each)``, ``g6.8xlarge (1 GPU each)``, ``t3.medium (no GPU)``, or the type
    with a note when the catalog lacks it."""
    try:
        return f"{instance_type} ({_gpus(load_catalog().instance_type(instance_type).gpu_count)} each)"
    except UnknownInstanceTypeError:
        if is_accelerator_type(instance_type):
            return f"{instance_type} (GPU capacity of a size the catalog does not know)"
        return f"{instance_type} (no GPU)"


def _gpu_count(instance_type: str) -> int | None:
    try:
        return load_catalog().instance_type(instance_type).gpu_count
    except UnknownInstanceTypeError:
        return None


def _capacity(types: list[str], max_size: Any, where: tuple[str, str]) -> str:
    """``instanceTypes [p5.48xlarge (8 GPUs each)], scalingConfig.maxSize 100: up to 800 GPUs``."""
    text = f"{where[0]} [{', '.join(_instance_gpus(t) for t in types)}], {where[1]} {max_size}"
    counts = [_gpu_count(t) for t in types]
    if isinstance(max_size, (int, float)) and not isinstance(max_size, bool) and any(counts):
        most = max(c or 0 for c in counts) * math.ceil(max_size)
        text += f": up to {_gpus(most)}"
    return text


#: Input keys that size a group of instances in any component's inputs (camelCase on the wire, or a
#: component's own snake_case): the most instances of the group, else (none given) how many it wants.
_MAX_SIZE_KEYS = ("maxSize", "max_size", "maxCount", "max_count", "maxCapacity", "max_capacity", "maxNodes", "max_nodes")
_DESIRED_SIZE_KEYS = ("desiredSize", "desired_size", "desiredCapacity", "desired_capacity", "desiredCount", "desired_count")
#: An EC2 instance type as a string (``g6.8xlarge``, ``p4d.24xlarge``, ``g4dn.metal``), or SageMaker's ``ml.`` form.
_INSTANCE_TYPE = re.compile(r"(?:ml\.)?[a-z][a-z0-9-]*\.(?:\d*x?large|medium|small|micro|nano|metal(?:-\d+xl)?)")


def _gpu_type(text: str) -> str | None:
    """The EC2 type of ``text`` when it is an instance type the GPU catalog knows or one of an
    accelerator family (``ml.g5.xlarge`` -> ``g5.xlarge``); None for anything else."""
    if not _INSTANCE_TYPE.fullmatch(text):
        return None
    ec2 = text.removeprefix("ml.")
    return ec2 if _gpu_count(ec2) is not None or is_accelerator_type(ec2) else None


def _scan(value: Any, path: str, types: dict[str, None], sizes: list[tuple[str, float]]) -> None:
    """Collect the GPU instance types named anywhere in ``value`` and, per mapping, its group size
    (a max-size key, else a desired-size key), with the path that holds it."""
    if isinstance(value, dict):
        for keys in (_MAX_SIZE_KEYS, _DESIRED_SIZE_KEYS):
            found = [(k, value[k]) for k in keys if isinstance(value.get(k), (int, float)) and not isinstance(value.get(k), bool)]
            if found:
                sizes.append((f"{path}.{found[0][0]}".lstrip("."), float(found[0][1])))
                break
        for key, item in value.items():
            _scan(item, f"{path}.{key}", types, sizes)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _scan(item, f"{path}[{i}]", types, sizes)
    elif isinstance(value, str):
        ec2 = _gpu_type(value.strip())
        if ec2 is not None:
            types.setdefault(ec2)


def named_capacity(inputs: dict[str, Any]) -> str:
    """What an unfamiliar component's inputs say about GPU capacity, read generically: the GPU
    instance types named anywhere in them and the group sizes beside them, e.g. ``name g6.8xlarge
    (1 GPU each), scalingConfig.maxSize 3: up to 3 GPUs`` ('' when they name no GPU type).

    The bound multiplies the largest GPU count of the named types by the sum of the sizes found (one
    group: its size; several: a bound that holds whichever type each group uses).
    """
    types: dict[str, None] = {}
    sizes: list[tuple[str, float]] = []
    _scan(inputs, "", types, sizes)
    if not types:
        return ""
    text = f"name {', '.join(_instance_gpus(t) for t in types)}"
    if not sizes:
        return text + " and no group size"
    text += ", " + ", ".join(f"{where} {size:g}" for where, size in sizes)
    counts = [c for c in (_gpu_count(t) for t in types) if c]
    if counts:
        text += f": up to {_gpus(max(counts) * math.ceil(sum(size for _, size in sizes)))}"
    return text


def _sizes(type_: str, inputs: dict[str, Any]) -> str:
    """What the component's inputs say about the capacity its children launch ('' when nothing)."""
    if type_ == "eks:index:ManagedNodeGroup":
        types = [str(t) for t in inputs.get("instanceTypes") or [EKS_DEFAULT_INSTANCE_TYPE]]
        scaling = inputs.get("scalingConfig") or {}
        return _capacity(types, scaling.get("maxSize", EKS_DEFAULT_MAX_SIZE), ("instanceTypes", "scalingConfig.maxSize"))
    if type_ in ("eks:index:NodeGroupV2", "eks:index:NodeGroup"):
        return _capacity([str(inputs.get("instanceType") or EKS_DEFAULT_INSTANCE_TYPE)], inputs.get("maxSize", EKS_DEFAULT_MAX_SIZE), ("instanceType", "maxSize"))
    if type_ == "eks:index:Cluster":
        if inputs.get("skipDefaultNodeGroup") or inputs.get("fargate") or inputs.get("autoMode"):
            return "no default node group"
        options = inputs.get("nodeGroupOptions") or {}
        instance = options.get("instanceType") or inputs.get("instanceType") or EKS_DEFAULT_INSTANCE_TYPE
        most = options.get("maxSize", inputs.get("maxSize", EKS_DEFAULT_MAX_SIZE))
        return "default node group " + _capacity([str(instance)], most, ("instanceType", "maxSize"))
    return ""


def opaque_message(type_: str, name: str, inputs: dict[str, Any], reason: str) -> str:
    """The finding for a remote component whose children the offline check did not see: the
    component, why, what its inputs say about its capacity, what ``pulumi preview --policy-pack``
    would check on its children, and the fix."""
    package = type_.split(":", 1)[0]
    sizes = _sizes(type_, inputs)
    named = named_capacity(inputs) if type_ not in _CHECKS else ""
    checks = _CHECKS.get(type_, "whatever it creates (every policy of the pack applies to its children)")
    return (
        f"{type_} {name!r} is a remote component: its children are registered by the `{package}` plugin's Construct "
        f"and are not visible offline ({reason})."
        + (f" Its inputs: {sizes}." if sizes else "")
        + (f" Its inputs {named}." if named else "")
        + f" Under `pulumi preview --policy-pack` the pack checks {checks}."
        + " Fix: run `pulumi preview --policy-pack policies` on this stack with the plugin installed, or, once reviewed, "
        "pass `hybridgpu check --opaque-components advisory`."
    )
