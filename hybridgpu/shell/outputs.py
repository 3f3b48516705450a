"""Generic computed outputs for the offline preview: what the engine would return for any resource type.

:class:`hybridgpu.shell.preview.HybridMocks` answers the ~30 types hybridgpu uses by hand; any
other type (a team's own program: ``aws.s3.Bucket``, ``k8s.core.v1.Namespace``, ...) used to echo
its inputs only, so ``bucket.arn`` was ``None`` and ``ns.metadata["name"]`` raised. This module
fills every output the provider always returns and the inputs do not supply:

- the output properties come from the installed SDK class of the type token (found through the
  resource modules the SDK registers with Pulumi, so any generated Python SDK works) and are read
  once per type (:func:`output_table`, cached);
- values are deterministic (a hash of type and name) and typed like the getter's annotation:
  ARNs, ids, auto-names, regions, DNS names for strings; ``0``, ``False``, ``[]``, ``{}`` otherwise;
  ``Optional[...]`` outputs are left out (a provider may return nothing there);
- auto-names follow the providers: pulumi-aws's ``<name>-<7 hex>`` for the ``name`` property (and
  ``bucket`` of an S3 bucket) when it is not given, ``<namePrefix><26 digits>`` after a
  ``namePrefix``; pulumi-kubernetes's ``<name>-<8 alnum>`` for ``metadata.name``, with
  ``metadata.namespace`` ``default`` for namespaced kinds and a ``metadata.uid``.

:func:`first_preview_state` is the first-preview counterpart: only what the providers' ``Check``
step fills in before anything exists (the auto-names) is known; every other computed output is
left out, which a dry run reports as unknown. The engine calls ``Check`` on every registration, in a
preview too, and the outputs the program then reads start from what the provider answered:

- pulumi-terraform-bridge (pulumi-aws) ``pkg/tfbridge/provider.go`` ``Provider.Check`` (commit
  00001f16) builds the checked inputs with ``makeTerraformInputsWithOptions`` given the URN, the
  random seed and the engine's autonaming options, which fills the ``AutoName`` defaults; its
  ``Create`` with ``preview`` returns the proposed state of those inputs;
- pulumi-kubernetes ``provider/pkg/provider/provider.go`` ``kubeProvider.Check`` (commit 997c0a88)
  calls ``metadata.AssignNameIfAutonamable`` when the object has no previous inputs (a new object), so
  ``metadata.name`` is known in the first preview; ``generateName`` is left to the API server.

Nothing here creates resources; it only computes the state a mock returns.
"""

from __future__ import annotations

import collections.abc
import functools
import importlib
import hashlib
import typing
from typing import Any

import pulumi
from pulumi.runtime import rpc as pulumi_rpc

#: Kubernetes kinds that are not namespaced (``kubectl api-resources --namespaced=false`` on a
#: v1.31 cluster, built-in groups): they get no default ``metadata.namespace``.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace", "Node", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "StorageClass",
        "CSIDriver", "CSINode", "VolumeAttachment", "CustomResourceDefinition", "PriorityClass",
        "RuntimeClass", "IngressClass", "APIService", "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        "FlowSchema", "PriorityLevelConfiguration", "CertificateSigningRequest", "ComponentStatus",
    }
)

#: Id prefixes EC2 gives per resource type (the part after ``aws:ec2/``); other types keep the mock's id.
EC2_ID_PREFIXES = {
    "instance": "i", "securityGroup": "sg", "volume": "vol", "networkInterface": "eni", "keyPair": "key",
    "vpcEndpoint": "vpce", "placementGroup": "pg", "spotInstanceRequest": "sir", "transitGateway": "tgw",
    "networkAcl": "acl", "capacityReservation": "cr", "fleet": "fleet", "ami": "ami",
}

#: Per type, the property pulumi-aws auto-names when it is not set, where it is not ``name``
#: (pulumi-aws ``provider/resources.go``: ``AutoNameWithCustomOptions("bucket", ...)`` for S3 buckets).
AWS_AUTONAME_FIELD = {"aws:s3/bucket:Bucket": "bucket", "aws:s3/bucketV2:BucketV2": "bucket"}

#: AWS services whose ARNs carry no region (IAM, S3 buckets, CloudFront, Route 53) or no account (S3).
_GLOBAL_ARN_SERVICES = {"iam", "s3", "cloudfront", "route53"}


def _hash(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


class _Kind:
    """Markers for the output value kinds :func:`output_table` derives from a getter's annotation."""

    STR, INT, FLOAT, BOOL, LIST, MAP, OBJECT = "str", "int", "float", "bool", "list", "map", "object"


def _kind(annotation: Any, globalns: dict[str, Any] | None = None) -> str | None:
    """The value kind of a getter's ``pulumi.Output[T]`` annotation, or None for ``Optional[T]``, a
    resource (or a list of resources) and anything unknown: those are left out of the state, which a
    dry run reports as unknown. ``globalns``: the getter's module globals, to resolve string annotations."""
    args = typing.get_args(annotation)
    inner = args[0] if typing.get_origin(annotation) is pulumi.Output and args else annotation
    origin = typing.get_origin(inner)
    if origin is typing.Union:  # Optional[T]: the provider may leave it out, so do we
        return None
    if origin is typing.Literal:
        return None  # apiVersion/kind: always inputs
    if origin in (list, tuple, collections.abc.Sequence):
        element = typing.get_args(inner)
        # A list of resources or of objects (ACM ``domainValidationOptions``: one per domain) is
        # left out: an empty list fails the program's ``[0]``, and its entries cannot be made up.
        return None if element and _names_class(element[0], globalns) else _Kind.LIST
    if origin in (dict, collections.abc.Mapping):
        return _Kind.MAP
    if isinstance(inner, (typing.ForwardRef, str)):
        resolved = _resolve(inner, globalns)
        # A resource (``pulumi.Output['pulumi_aws.ec2.InternetGateway']``: the engine returns a
        # resource reference) or a name that does not resolve: left out, never a made-up ``{}``
        # the SDK cannot turn into that class.
        return _Kind.OBJECT if isinstance(resolved, type) and hasattr(resolved, "_pulumi_output_type") else None
    if isinstance(inner, type) and issubclass(inner, pulumi.Resource):
        return None
    if isinstance(inner, type) and hasattr(inner, "_pulumi_output_type"):
        return _Kind.OBJECT
    return {str: _Kind.STR, int: _Kind.INT, float: _Kind.FLOAT, bool: _Kind.BOOL}.get(inner)


def _resolve(ref: Any, globalns: dict[str, Any] | None) -> Any:
    """The class a string or ``ForwardRef`` annotation names, evaluated in the getter's module
    (``'pulumi_aws.ec2.InternetGateway'``, ``'outputs.ClusterNodeGroup'``), or None when it does
    not resolve there."""
    text = ref.__forward_arg__ if isinstance(ref, typing.ForwardRef) else ref
    try:
        return eval(text, dict(globalns or {}))  # noqa: S307 - a generated SDK's own annotation text
    except Exception:  # noqa: BLE001 - an annotation that does not resolve is simply not filled
        return None


def _names_class(annotation: Any, globalns: dict[str, Any] | None) -> bool:
    """True when a list element annotation names a resource class (the engine returns references)
    or an output type (an object), or a name that does not resolve."""
    if isinstance(annotation, (typing.ForwardRef, str)):
        inner = _resolve(annotation, globalns)
        if inner is None:
            return True
    else:
        inner = annotation
    args = typing.get_args(inner)
    if typing.get_origin(inner) is pulumi.Output and args:  # Sequence[pulumi.Output['...Subnet']]
        return _names_class(args[0], globalns)
    return isinstance(inner, type) and (issubclass(inner, pulumi.Resource) or hasattr(inner, "_pulumi_output_type"))


#: Type token -> (module name, class name), and how many resource modules it was built from.
_TYPE_CLASSES: dict[str, tuple[str, str]] = {}
_TYPE_CLASSES_FROM = [-1]


def _type_classes() -> dict[str, tuple[str, str]]:
    """Type token -> (module name, class name) of every resource class the imported SDKs registered
    (generated SDKs register their modules with Pulumi on import, ``_utilities.register``); rebuilt
    only when an SDK registered more modules since the last build."""
    registered = getattr(pulumi_rpc, "_RESOURCE_MODULES", {})  # pulumi/runtime/rpc.py register_resource_module
    if len(registered) != _TYPE_CLASSES_FROM[0]:
        _TYPE_CLASSES_FROM[0] = len(registered)
        for modules in list(registered.values()):
            for module in modules:
                info = getattr(module, "mod_info", None)
                if isinstance(info, dict):
                    for token, cls in (info.get("classes") or {}).items():
                        _TYPE_CLASSES.setdefault(token, (info["fqn"], cls))
    return _TYPE_CLASSES


def sdk_class(typ: str) -> type | None:
    """The SDK resource class of a type token (``aws:s3/bucket:Bucket`` -> ``pulumi_aws.s3.Bucket``),
    or None when no imported SDK registered it."""
    found = _type_classes().get(typ)
    if found is None:
        return None
    try:
        return getattr(importlib.import_module(found[0]), found[1], None)
    except ImportError:
        return None


def _getters(cls: type) -> list[tuple[str, property]]:
    """The ``@pulumi.getter`` properties of a generated class (base classes first) with their wire
    names (the getter stores it on the function as ``_pulumi_name``, pulumi ``_types.getter``)."""
    found = []
    for base in reversed(cls.__mro__):
        for value in vars(base).values():
            wire = getattr(value.fget, "_pulumi_name", None) if isinstance(value, property) else None
            if isinstance(wire, str):
                found.append((wire, value))
    return found


@functools.cache
def output_table(typ: str) -> tuple[tuple[str, str], ...]:
    """The always-returned output properties of a type: ``(wire name, kind)`` pairs in SDK order.

    Returns an empty tuple for a type no installed SDK describes (its outputs stay the inputs).
    """
    cls = sdk_class(typ)
    if cls is None:
        return ()
    table = []
    for wire, prop in _getters(cls):
        if wire in ("id", "urn") or (wire == "status" and typ.startswith("kubernetes:")):
            continue
        kind = _kind((getattr(prop.fget, "__annotations__", None) or {}).get("return"), getattr(prop.fget, "__globals__", None))
        if kind is not None:
            table.append((wire, kind))
    return tuple(table)


def _service(typ: str) -> str:
    """``aws:s3/bucket:Bucket`` -> ``s3``; ``aws:index/...`` -> ``aws``."""
    module = typ.split(":")[1].split("/")[0]
    return "aws" if module == "index" else module.lower()


def _resource_kind(typ: str) -> str:
    """``aws:ec2/securityGroup:SecurityGroup`` -> ``security-group`` (the resource part of its ARN)."""
    cls = typ.rsplit(":", 1)[-1]
    return "".join("-" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(cls))


def aws_autoname(typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, str] | None:
    """The property pulumi-aws auto-names on this resource and its value, or None.

    ``name`` (``bucket`` for S3 buckets) when the type has it as an output and it is not set:
    ``<namePrefix><26 digits>`` after a ``namePrefix`` input, else ``<logical name>-<7 hex>``
    (lower case for S3). Deterministic: a hash of type and name stands for the random part.
    """
    field_name = AWS_AUTONAME_FIELD.get(typ, "name")
    if inputs.get(field_name) is not None or (field_name, _Kind.STR) not in output_table(typ):
        return None
    h = _hash(typ, name)
    prefix = inputs.get(f"{field_name}Prefix")
    if isinstance(prefix, str):
        return field_name, prefix + str(int(h, 16))[:26]
    value = f"{name}-{h[:7]}"
    return field_name, value.lower() if _service(typ) == "s3" else value


def kubernetes_metadata(typ: str, name: str, inputs: dict[str, Any], *, computed: bool) -> dict[str, Any]:
    """``metadata`` as the Kubernetes provider returns it: the given metadata, ``name`` auto-named
    ``<logical name>-<8 alnum>`` when not given, with the ``pulumi.com/autonamed`` annotation
    (pulumi-kubernetes ``metadata.AssignNameIfAutonamable``, run at Check, so known in a preview) or
    ``generateName`` plus 5 characters; ``namespace`` ``default`` for namespaced kinds; ``uid``,
    ``resourceVersion``, ``generation`` and ``creationTimestamp`` (what the API server sets). With
    ``computed`` False (first preview) the server-set values are Pulumi's unknown marker."""
    given = inputs.get("metadata")
    meta = dict(given) if isinstance(given, dict) else {}
    h = _hash(typ, name)
    if not meta.get("name"):
        if meta.get("generateName"):
            # The API server appends 5 random characters to generateName (Kubernetes API
            # conventions, "Idempotency"); before the object exists the name is unknown.
            meta["name"] = f"{meta['generateName']}{h[:5]}" if computed else pulumi_rpc.UNKNOWN
        else:
            meta["name"] = f"{name}-{h[:8]}"
            meta["annotations"] = {**(meta.get("annotations") or {}), "pulumi.com/autonamed": "true"}
    kind = typ.rsplit(":", 1)[-1]
    if "namespace" not in meta and kind not in CLUSTER_SCOPED_KINDS and not typ.endswith("List"):
        meta["namespace"] = "default"
    server_set = {
        "uid": f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}",
        "resourceVersion": str(int(h[:6], 16)),
        "generation": 1,
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    for key, value in server_set.items():
        # Before the object exists (first preview) these are unknown, not missing: a program's
        # metadata["uid"] gets an unknown, as under the engine, instead of a KeyError.
        meta.setdefault(key, value if computed else pulumi_rpc.UNKNOWN)
    if computed:
        meta.setdefault("labels", {})
        meta.setdefault("annotations", {})
    return meta


def _string(typ: str, name: str, wire: str, rid: str, region: str, account: str, state: dict[str, Any]) -> str:
    """A plausible value of string output ``wire``."""
    h = _hash(typ, name, wire)
    service = _service(typ)
    lower = wire.lower()
    if lower == "arn" or wire.endswith("Arn"):
        # EC2 ARNs end in the resource id (security-group/sg-...), the others in its name.
        resource = rid if service == "ec2" else state.get(AWS_AUTONAME_FIELD.get(typ, "name")) or rid
        if service == "s3":
            return f"arn:aws:s3:::{resource}"
        scope = "" if service in _GLOBAL_ARN_SERVICES else region
        return f"arn:aws:{service}:{scope}:{account}:{_resource_kind(typ)}/{resource}"
    if lower in ("region", "bucketregion"):
        return region
    if lower in ("ownerid", "accountid"):
        return account
    if lower == "availabilityzone":
        return f"{region}a"
    if lower.endswith("publicip"):
        return f"198.51.100.{int(h[:2], 16) % 250 + 1}"
    if lower.endswith("ip"):
        return f"10.0.{int(h[:2], 16)}.{int(h[2:4], 16) % 250 + 1}"
    if lower.endswith(("dnsname", "domainname", "endpoint", "hostname")):
        return f"{rid}.{service}.{region}.amazonaws.com"
    if lower.endswith("url"):
        return f"https://{rid}.{service}.{region}.amazonaws.com"
    if wire.endswith("Id"):
        return f"{wire[:-2].lower()[:8]}-{h[:17]}"
    if wire.endswith("Name"):
        return f"{name}-{h[:8]}"
    # Free text (policies, descriptions, prefixes, statuses): empty, as providers return for unset fields.
    return ""


def fill_outputs(
    typ: str, name: str, inputs: dict[str, Any], state: dict[str, Any], rid: str | None, *, region: str, account: str, generic_id: bool
) -> tuple[str | None, dict[str, Any]]:
    """Add every always-returned output missing from ``state`` (plain mode).

    Args:
        typ, name: the resource's type token and logical name.
        inputs: its inputs (they always win: nothing given is replaced).
        state: the state so far (inputs plus hand-written outputs, which win too); updated in place.
        rid: the id so far.
        region, account: the stack's AWS region and account id (ARNs).
        generic_id: ``rid`` is the mocks' fallback id, not a hand-written one: it may be replaced by
            the form the service gives (EC2 prefixes, a bucket's name).

    Returns:
        ``(id, state)``.
    """
    if typ.startswith("pulumi:") or not typ.count(":") == 2:
        return rid, state
    if typ.startswith("kubernetes:") and "metadata" in dict(output_table(typ)):
        state["metadata"] = kubernetes_metadata(typ, name, state, computed=True)
    named = aws_autoname(typ, name, state) if typ.startswith("aws:") else None
    if named:
        state[named[0]] = named[1]
    if generic_id and typ.startswith("aws:"):
        module, _, kind = typ.split(":")[1].partition("/")
        if module == "ec2" and kind in EC2_ID_PREFIXES:
            rid = f"{EC2_ID_PREFIXES[kind]}-{_hash(typ, name)[:17]}"
        elif named:
            rid = named[1]
    for wire, kind in output_table(typ):
        if wire in state:
            continue
        if kind == _Kind.STR:
            state[wire] = _string(typ, name, wire, rid or name, region, account, state)
        elif kind == _Kind.INT:
            state[wire] = 0
        elif kind == _Kind.FLOAT:
            state[wire] = 0.0
        elif kind == _Kind.BOOL:
            state[wire] = False
        elif kind == _Kind.LIST:
            state[wire] = []
        elif kind == _Kind.MAP:
            # tagsAll: the resource's tags (provider default tags are merged by the engine, not here).
            # Any other map's keys are the service's (AppSync ``uris["GRAPHQL"]``): an empty map would
            # fail the program's lookup, so it is left out (unknown in the check's dry run).
            if wire == "tagsAll":
                state[wire] = dict(state.get("tags") or {})
        elif kind == _Kind.OBJECT:
            state[wire] = {}
    return rid, state


def first_preview_state(typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The state a first preview knows: the inputs plus the auto-names the providers' ``Check`` assigns
    before anything exists (so ``ns.metadata["name"]`` and ``bucket.bucket`` are known, as in
    ``pulumi preview``); every other computed output is left out, which a dry run makes unknown."""
    state = dict(inputs)
    if typ.startswith("kubernetes:") and "metadata" in dict(output_table(typ)):
        state["metadata"] = kubernetes_metadata(typ, name, inputs, computed=False)
    elif typ.startswith("aws:"):
        named = aws_autoname(typ, name, inputs)
        if named:
            state[named[0]] = named[1]
    return state
