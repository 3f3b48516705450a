"""Offline preview: run the real Pulumi program under Pulumi's mocks and record what it creates.

No cloud credentials and no Pulumi CLI: :func:`run_preview` reads and validates the stack file,
hands its config to Pulumi's runtime exactly as the CLI would (namespaced keys, structured
values as JSON strings, ``secure:`` values as secret placeholders, :func:`encrypted_placeholder`),
installs :class:`HybridMocks` (realistic computed outputs per resource type and answers to the
invokes and component methods the program calls) and a :class:`RecordingMonitor` (which runs
the program's transforms as the engine does and remembers each registration's type, name, parent
and transformed inputs), and runs ``hybridgpu.components.program.main``.

:func:`write_manifests` writes every Kubernetes object the program registered to
``out/<stack>/manifests/`` (one YAML file per object) plus ``helm-releases.yaml`` and
``resources.json``; it writes to a temporary directory and swaps it in, so a failed run
leaves the previous output untouched.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import hashlib
import json
import os
import shutil
import signal
import tempfile
import threading
import typing
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc as pulumi_rpc
from pulumi.runtime._callbacks import _CallbackServicer
from pulumi.runtime.proto import provider_pb2, resource_pb2
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await
from google.protobuf import struct_pb2

from hybridgpu.config.keys import PROJECT
from hybridgpu.k8s import SERVICE_ACCOUNT_TOKEN_SECRET_TYPE
from hybridgpu.components.program import main as program_main
from hybridgpu.shell import invokes
from hybridgpu.shell.outputs import fill_outputs, first_preview_state
from hybridgpu.shell.remote import YAML_V2_TYPES, Opaque, construct, decode_manifests, kubernetes_type  # noqa: F401 - YAML_V2_TYPES re-exported
from hybridgpu.errors import HybridGpuError
from hybridgpu.stack.files import SECRET_PLACEHOLDER, StackValues, find_project_root, pulumi_config_strings
from hybridgpu.stack.load import Stack, load_stack, preloaded
from hybridgpu.config.models import StackConfig
from hybridgpu.render import dump_yaml, dump_yaml_all  # noqa: F401 - re-exported for callers of this module

#: Account id used by the mocks (AWS documentation example account).
MOCK_ACCOUNT = "111122223333"

#: Versions the mocked ``aws.eks.getAddonVersion`` returns: plausible EKS add-on builds. They
#: only shape the preview; a real ``pulumi up`` asks EKS for the newest compatible build.
MOCK_ADDON_VERSIONS = {
    "vpc-cni": "v1.20.4-eksbuild.2",
    "coredns": "v1.12.4-eksbuild.1",
    "kube-proxy": "v1.35.0-eksbuild.2",
    "eks-pod-identity-agent": "v1.3.9-eksbuild.3",
}


def _short_hash(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def _mock_jwt(seed: str) -> str:
    """A deterministic JWT-shaped placeholder service-account token (not a valid token)."""

    def b64(raw: str) -> str:
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    header = json.dumps({"alg": "RS256"})
    payload = json.dumps({"iss": "offline-preview", "sub": seed})
    return ".".join((b64(header), b64(payload), b64("mock-signature-" + seed)))


class HybridMocks(pulumi.runtime.Mocks):
    """Pulumi mocks that return realistic computed outputs for the resource types hybridgpu uses.

    Ids and ARNs are derived from a hash of (type, name), so previews are deterministic.

    Args:
        region: AWS region of the stack (goes into ARNs and endpoints).
        account_id: 12-digit account id (default :data:`MOCK_ACCOUNT`).
    """

    def __init__(self, region: str, account_id: str = MOCK_ACCOUNT):
        self.region = region
        self.account_id = account_id
        #: Tokens answered with derived (made-up, shape-only) values: neither a hand answer nor the
        #: ``--invoke-answers`` file. A program that fails may have read one (:func:`run_preview` names them).
        self.derived: set[str] = set()

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        """Return ``(id, state)``: the inputs plus the outputs AWS/Kubernetes would compute; for a
        remote component, no state (:func:`remote_component_state`)."""
        if args.custom is False:
            return None, remote_component_state()
        typ, name, inputs = args.typ, args.name, dict(args.inputs)
        h = _short_hash(typ, name)
        region, acct = self.region, self.account_id
        state = dict(inputs)
        rid = f"{name}-{h[:8]}"
        if typ == "aws:ec2/vpc:Vpc":
            rid = f"vpc-{h}"
            state.update(arn=f"arn:aws:ec2:{region}:{acct}:vpc/{rid}", defaultSecurityGroupId=f"sg-{h[::-1]}")
        elif typ == "aws:ec2/subnet:Subnet":
            rid = f"subnet-{h}"
            state.update(arn=f"arn:aws:ec2:{region}:{acct}:subnet/{rid}")
        elif typ == "aws:ec2/internetGateway:InternetGateway":
            rid = f"igw-{h}"
        elif typ == "aws:ec2/eip:Eip":
            rid = f"eipalloc-{h}"
            state.update(allocationId=rid, publicIp=f"198.51.100.{int(h[:2], 16) % 250 + 1}")
        elif typ == "aws:ec2/natGateway:NatGateway":
            rid = f"nat-{h}"
        elif typ == "aws:ec2/routeTable:RouteTable":
            rid = f"rtb-{h}"
        elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
            rid = f"lt-{h}"
            state.update(latestVersion=1, defaultVersion=1, arn=f"arn:aws:ec2:{region}:{acct}:launch-template/{rid}")
        elif typ == "aws:kms/key:Key":
            rid = f"{h[:8]}-{h[8:12]}-4{h[12:15]}-8{h[15:17]}{h[:1]}-{h[:12]}"
            state.update(keyId=rid, arn=f"arn:aws:kms:{region}:{acct}:key/{rid}")
        elif typ == "aws:iam/role:Role":
            role_name = inputs.get("name") or f"{name}-{h[:7]}"
            rid = role_name
            state.update(name=role_name, arn=f"arn:aws:iam::{acct}:role/{role_name}", uniqueId=f"AROA{h.upper()[:17]}")
        elif typ == "aws:cloudwatch/logGroup:LogGroup":
            rid = inputs.get("name", name)
            state.update(arn=f"arn:aws:logs:{region}:{acct}:log-group:{rid}")
        elif typ == "aws:eks/cluster:Cluster":
            cluster = inputs.get("name", name)
            rid = cluster
            ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMOCK-CA-FOR-OFFLINE-PREVIEW\n-----END CERTIFICATE-----\n").decode()
            vpc = dict(inputs.get("vpcConfig") or {})
            vpc.update(clusterSecurityGroupId=f"sg-{h}", vpcId=f"vpc-{_short_hash('aws:ec2/vpc:Vpc', 'x')}")
            state.update(
                arn=f"arn:aws:eks:{region}:{acct}:cluster/{cluster}",
                endpoint=f"https://{h.upper()[:32]}.gr7.{region}.eks.amazonaws.com",
                certificateAuthority={"data": ca},
                vpcConfig=vpc,
                status="ACTIVE",
                platformVersion="eks.5",
                identities=[{"oidcs": [{"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/{h.upper()[:32]}"}]}],
            )
        elif typ == "aws:eks/nodeGroup:NodeGroup":
            rid = f"{inputs.get('clusterName')}:{name}"
            state.update(arn=f"arn:aws:eks:{region}:{acct}:nodegroup/{inputs.get('clusterName')}/{name}/{h[:8]}", status="ACTIVE")
        elif typ == "aws:eks/accessEntry:AccessEntry":
            state.update(accessEntryArn=f"arn:aws:eks:{region}:{acct}:access-entry/{inputs.get('clusterName')}/{h[:8]}")
        elif typ == "aws:eks/addon:Addon":
            state.update(arn=f"arn:aws:eks:{region}:{acct}:addon/{inputs.get('clusterName')}/{inputs.get('addonName')}/{h[:8]}")
        elif typ == "aws:eks/podIdentityAssociation:PodIdentityAssociation":
            state.update(associationId=f"a-{h[:17]}", associationArn=f"arn:aws:eks:{region}:{acct}:podidentityassociation/{h[:8]}")
        elif typ == "aws:sqs/queue:Queue":
            queue = inputs.get("name", name)
            rid = f"https://sqs.{region}.amazonaws.com/{acct}/{queue}"
            state.update(arn=f"arn:aws:sqs:{region}:{acct}:{queue}", url=rid, name=queue)
        elif typ == "aws:cloudwatch/eventRule:EventRule":
            rule = inputs.get("name") or f"{name}-{h[:7]}"
            rid = rule
            state.update(name=rule, arn=f"arn:aws:events:{region}:{acct}:rule/{rule}")
        elif typ == "aws:ec2/securityGroup:SecurityGroup":
            rid = f"sg-{h}"
        elif typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
            # What FSx returns: fs-<17 hex>, the DNS name the CSI driver mounts, an 8-character mount name (PERSISTENT_2).
            rid = f"fs-{(h * 2)[:17]}"
            state.update(arn=f"arn:aws:fsx:{region}:{acct}:file-system/{rid}", dnsName=f"{rid}.fsx.{region}.amazonaws.com", mountName=h[:8])
        elif typ == "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation":
            rid = f"dra-{(h * 2)[:17]}"
            state.update(associationId=rid, arn=f"arn:aws:fsx:{region}:{acct}:association/{rid}")
        elif typ == "kubernetes:helm.sh/v3:Release":
            # The release's name is auto-named when not given, ``<logical name>-<8 hex>``
            # (pulumi-kubernetes ``provider/pkg/provider/helm_release.go`` ``assignNameIfAutonameable``:
            # ``resource.NewUniqueHex(urn.Name()+"-", 0, 0)``, commit 94977969), and an empty namespace is
            # the provider's default one (same file, ``release.Namespace == ""``): a program's
            # ``status.namespace`` is a string, never None.
            state.update(
                status={
                    "status": "deployed",
                    "version": 1,
                    "namespace": inputs.get("namespace") or "default",
                    "name": inputs.get("name") or f"{name}-{h[:8]}",
                }
            )
        elif typ in ("random:index/randomString:RandomString", "random:index/randomPassword:RandomPassword"):
            length = int(inputs.get("length", 16))
            alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
            state.update(result="".join(alphabet[int(h[i % len(h)], 16) + (i % 20)] for i in range(length)))
        elif typ in ("random:index/randomId:RandomId", "random:index/randomBytes:RandomBytes"):
            size = int(inputs["byteLength"] if "byteLength" in inputs else inputs.get("length", 32))
            hex_value = (h * 8)[: 2 * size]
            state.update(hex=hex_value, b64Std=base64.b64encode(bytes.fromhex(hex_value)).decode(), dec=str(int(hex_value, 16)))
        elif typ == "command:remote:Command":
            stdout = ""
            if name.endswith("-ca-cert-hash"):
                stdout = "sha256:" + (h * 4)[:64] + "\n"
            elif name.endswith("-admin-kubeconfig"):
                # Shape of kubeadm's admin.conf with placeholder CA and no user credential.
                ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMOCK-ONPREM-CA\n-----END CERTIFICATE-----\n").decode()
                stdout = (
                    "apiVersion: v1\nkind: Config\nclusters:\n- name: kubernetes\n  cluster:\n"
                    f"    server: https://k8s-api-{h[:8]}.onprem.invalid:6443\n    certificate-authority-data: {ca}\n"
                    "contexts:\n- name: kubernetes-admin@kubernetes\n  context: {cluster: kubernetes, user: kubernetes-admin}\n"
                    "current-context: kubernetes-admin@kubernetes\nusers: []\n# offline preview placeholder\n"
                )
            state.update(stdout=stdout, stderr="")
        elif typ.startswith("pulumi:providers:"):
            rid = f"{name}-provider"
        elif typ == "kubernetes:core/v1:Secret" and inputs.get("type") == SERVICE_ACCOUNT_TOKEN_SECRET_TYPE:
            # The token controller fills in the token (JWT-shaped here) and the namespace (the
            # worker kubeconfig takes its CA from the cluster, not from the Secret's ca.crt).
            # The token controller writes ca.crt, namespace and token (Kubernetes docs, "Manually
            # create a long-lived API token for a ServiceAccount"); programs read all three.
            cluster_ca = b"-----BEGIN CERTIFICATE-----\nMOCK-CLUSTER-CA\n-----END CERTIFICATE-----\n"
            given = inputs.get("metadata")
            meta: dict[str, Any] = given if isinstance(given, dict) else {}
            namespace = str(meta.get("namespace") or "kueue-system").encode()
            state["data"] = {
                "ca.crt": base64.b64encode(cluster_ca).decode(),
                "namespace": base64.b64encode(namespace).decode(),
                "token": base64.b64encode(_mock_jwt(h).encode()).decode(),
            }
        elif typ == "pulumi:pulumi:StackReference":
            # Another stack's outputs: what a burst worker stack exports (secret), deterministic per stack name.
            from hybridgpu.burst.kueue import WORKER_KUBECONFIG_OUTPUT, worker_kubeconfig

            target = str(inputs.get("name", name))
            hs = _short_hash("stack", target)
            ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMOCK-WORKER-CA\n-----END CERTIFICATE-----\n").decode()
            kubeconfig = worker_kubeconfig(name=target.replace("/", "-"), server=f"https://{hs}.worker.invalid", ca_data=ca, token=_mock_jwt(hs))
            rid = target
            state.update(name=target, outputs={WORKER_KUBECONFIG_OUTPUT: kubeconfig, "burst_role": "worker"}, secretOutputNames=[WORKER_KUBECONFIG_OUTPUT])
        # Every other output the provider always returns (any type): generated, never over inputs or the above.
        return fill_outputs(typ, name, inputs, state, rid, region=region, account=acct, generic_id=rid == f"{name}-{h[:8]}")

    # Pulumi's MockMonitor takes a plain dict (no check failures) as well as the annotated
    # (result, failures) tuple (pulumi/runtime/mocks.py, `if isinstance(tup, dict)`), and a tuple
    # whose failures are None fails there; the dict is the form its own examples return.
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        """Answer any invoke: the hand answers below (partition, caller identity, session context,
        add-on versions, region, ``kubernetes:yaml:decode``: facts our own program relies on),
        else one derived from the provider SDK's result type (:mod:`hybridgpu.shell.invokes`), in
        the invoke's region (its explicit provider's); an ``--invoke-answers`` file's entry is
        merged over either. A component method (``Call``, token ``<pkg>:<mod>:<Type>/<method>``) is
        answered from the method's result class (:func:`hybridgpu.shell.invokes.answer_call`).

        Raises:
            UnknownInvokeError: no installed SDK has the function (no loaded class has the method)
                and the answers file has no entry.
        """
        token = args.token
        region = invokes.invoke_region(args, self.region)
        given = {k: v for k, v in dict(args.args or {}).items() if k != "__self__"}
        if invokes.is_method_token(token):
            # A component method (RecordingMonitor.Call): from the method's result class.
            answer = invokes.answer_call(token, dict(args.args or {}), region=region, account=self.account_id)
            hand = None
        else:
            hand = self._hand_answer(args, region)
            answer = invokes.answer_invoke(args, hand, region=region, account=self.account_id)
        if answer is None:
            raise UnknownInvokeError(token)
        if hand is None and invokes.user_answer(token, given) is None:
            self.derived.add(token)
        return answer

    def _hand_answer(self, args: pulumi.runtime.MockCallArgs, region: str) -> dict[str, Any] | None:
        token = args.token
        if token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com", "reverseDnsPrefix": "com.amazonaws", "id": "aws"}
        if token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                "accountId": self.account_id,
                "arn": f"arn:aws:sts::{self.account_id}:assumed-role/hybridgpu-deployer/preview",
                "userId": "AROAEXAMPLEDEPLOYER:preview",
                "id": self.account_id,
            }
        if token == "aws:iam/getSessionContext:getSessionContext":
            return {
                "arn": args.args.get("arn"),
                "issuerArn": f"arn:aws:iam::{self.account_id}:role/hybridgpu-deployer",
                "issuerId": "AROAEXAMPLEDEPLOYER",
                "issuerName": "hybridgpu-deployer",
                "sessionName": "preview",
                "id": args.args.get("arn"),
            }
        if token == "aws:eks/getAddonVersion:getAddonVersion":
            name = args.args.get("addonName")
            return {"version": MOCK_ADDON_VERSIONS.get(str(name), "v1.0.0-eksbuild.1"), "addonName": name, "id": name}
        if token == "aws:index/getRegion:getRegion":
            return {"name": region, "region": region, "id": region}
        if token == YAML_DECODE:
            return {"result": decode_manifests(str(args.args.get("text") or ""))}
        return None


#: The invoke pulumi-kubernetes' ``yaml.ConfigFile`` / ``ConfigGroup`` (v1) make to split YAML into
#: objects (pulumi_kubernetes 4.34 ``yaml/yaml.py`` ``_invoke_yaml_decode_async``: args ``{text}``,
#: answer ``{result: [objects]}``); the provider decodes every YAML document and drops empty ones.
YAML_DECODE = "kubernetes:yaml:decode"


class UnknownInvokeError(NotImplementedError):
    """The program called a data source (invoke) the offline mocks cannot answer.

    Args:
        token: the invoke token, e.g. ``aws:ec2/getAmi:getAmi``.
    """

    def __init__(self, token: str):
        self.token = token
        what = (
            f"unknown component method {token}: no loaded resource class has this method"
            if ":" in token and "/" in token.split(":", 2)[-1]
            else f"unknown invoke {token}: no installed provider SDK has this function"
        )
        super().__init__(
            f"{what}, so the offline preview "
            f"cannot derive an answer; give one in a file passed with `hybridgpu check --invoke-answers FILE` "
            f"(YAML: '{token}: {{<result wire name>: <value>}}')"
        )


def engine_urn(stack: str, project: str, parent: str, type_: str, name: str) -> str:
    """A URN as the Pulumi engine builds it: the parent's qualified type chain, ``$``, the type;
    a top-level resource (parent '' or the root stack) carries no parent type.

    Source: pulumi/pulumi ``pkg/resource/deploy/deployment.go`` ``generateURN`` ("don't use the
    root stack type"), Pulumi 3.2xx. Pulumi's Python ``MockMonitor.make_urn`` (pulumi 3.272
    ``runtime/mocks.py``) instead prefixes the root stack's type and keeps only the parent's last
    type, so offline waivers written from ``pulumi stack --show-urns`` would not match.
    """
    parent_type = ""
    if parent:
        qualified = parent.split("::")[2]
        if qualified != "pulumi:pulumi:Stack":
            parent_type = qualified + "$"
    return f"urn:pulumi:{stack}::{project}::{parent_type}{type_}::{name}"


@dataclass
class ResourceRecord:
    """One resource the program registered.

    Attributes:
        urn: the resource URN.
        type: type token, e.g. ``aws:eks/cluster:Cluster`` or ``hybridgpu:cloud:Karpenter``.
        name: logical name.
        parent: parent URN ('' for children of the stack).
        custom: True for provider-managed resources, False for components.
        inputs: the inputs the program passed (secrets unwrapped, as the mock monitor sees them).
        dependencies: URNs of explicit dependencies.
        secret_paths: dotted paths of the inputs that were Pulumi secrets on the wire (e.g.
            ``stdin``, ``connection.privateKey``, ``kubeconfig``).
    """

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    dependencies: list[str] = field(default_factory=list)
    secret_paths: list[str] = field(default_factory=list)
    #: Explicit provider reference (``<provider urn>::<id>``), '' for the default provider.
    provider: str = ""
    #: The ``additional_secret_outputs`` resource option as registered (output names the engine
    #: stores as secrets).
    additional_secret_outputs: list[str] = field(default_factory=list)
    #: The inputs exactly as they went over the wire (a protobuf ``Struct`` with Pulumi's secret
    #: markers): what the policy analyzer receives (``hybridgpu check``).
    wire: Any = field(default=None, repr=False, compare=False)
    #: Top-level input name -> URNs its value depends on (``propertyDependencies`` of the
    #: registration; the engine hands them to ``AnalyzeStack``).
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    #: Where the program registered it: the registration's ``sourcePosition`` (a ``file://`` URI and
    #: a line; the Python SDK sends the first frame outside its own code: pulumi 3.272
    #: ``runtime/resource.py`` ``_get_stack_trace``/``_get_source_position``); '' and 0 when not sent.
    source_uri: str = ""
    source_line: int = 0
    #: Registered with ``remote=True``: a multi-language component whose provider plugin registers
    #: its children in ``Construct`` (:mod:`hybridgpu.shell.remote`).
    remote: bool = False
    #: For a remote component whose children could not be derived offline: why ('' otherwise).
    opaque: str = ""


#: Markers of a secret value in Pulumi's wire format (pulumi/runtime/rpc.py: _special_sig_key,
#: _special_secret_sig; the same constants in every Pulumi SDK).
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def _secret_paths(struct, prefix: str = "") -> list[str]:
    """Dotted paths of the secret values in a serialized property struct."""
    found: list[str] = []
    for key, value in struct.fields.items():
        path = f"{prefix}{key}"
        kind = value.WhichOneof("kind")
        if kind == "struct_value":
            fields = value.struct_value.fields
            if _SIG_KEY in fields and fields[_SIG_KEY].string_value == _SECRET_SIG:
                found.append(path)
            else:
                found += _secret_paths(value.struct_value, path + ".")
    return found


_SECRET_SIG_BYTES = _SECRET_SIG.encode()


def _has_secret(struct) -> bool:
    """Whether a serialized property struct may hold a secret (its wire bytes carry the secret
    signature): most registrations have none, and the byte scan is far cheaper than walking the struct."""
    return _SECRET_SIG_BYTES in struct.SerializeToString()


#: Marker of a resource reference on the wire (pulumi/runtime/rpc.py ``_special_resource_sig``):
#: ``{sig, urn, id?, packageVersion?}``, sent for a Resource object among a registration's inputs.
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_RESOURCE_SIG_BYTES = _RESOURCE_SIG.encode()
#: Pulumi's wire form of an unknown (computed) value (pulumi/runtime/rpc.py ``UNKNOWN``).
_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def without_resource_references(struct: struct_pb2.Struct) -> struct_pb2.Struct:
    """``struct`` with every resource reference replaced as the Pulumi CLI marshals it for a plugin
    that does not keep resources: a custom resource becomes its id (unknown when the id is not yet
    known), a component its URN (pulumi/pulumi ``sdk/go/common/resource/plugin/rpc.go``
    ``MarshalPropertyValue``, ``!opts.KeepResources``; the SDK sends an unknown id as ``""``:
    ``sdk/python/lib/pulumi/runtime/rpc.py`` ``deserialize_resource``). Analyzers get their inputs
    this way (``analyzer_plugin.go`` marshals without ``KeepResources``).

    Returns ``struct`` itself when it holds no reference (checked on its wire bytes), else a copy.
    """
    if _RESOURCE_SIG_BYTES not in struct.SerializeToString():
        return struct
    out = struct_pb2.Struct()
    out.CopyFrom(struct)
    for value in out.fields.values():
        _replace_reference(value)
    return out


def _replace_reference(value: struct_pb2.Value) -> None:
    """Replace the resource references in ``value`` in place (see :func:`without_resource_references`)."""
    kind = value.WhichOneof("kind")
    if kind == "list_value":
        for item in value.list_value.values:
            _replace_reference(item)
    elif kind == "struct_value":
        fields = value.struct_value.fields
        if _SIG_KEY in fields and fields[_SIG_KEY].string_value == _RESOURCE_SIG:
            if "id" in fields:
                ident = struct_pb2.Value()
                ident.CopyFrom(fields["id"])
                if ident.WhichOneof("kind") == "string_value" and ident.string_value == "":
                    ident.string_value = _UNKNOWN
                value.CopyFrom(ident)
            else:
                value.string_value = fields["urn"].string_value
            return
        for item in fields.values():
            _replace_reference(item)


class _InputsTap(pulumi.runtime.Mocks):
    """Wraps the mocks to hand each registration's already-deserialized inputs to the monitor.

    The stock MockMonitor deserializes a registration's inputs once to call ``new_resource``;
    the tap keeps that result (per thread, since registrations run on Pulumi's worker threads)
    so recording needs no second deserialization.
    """

    def __init__(self, inner: pulumi.runtime.Mocks):
        self.inner = inner
        self.local = threading.local()

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):  # noqa: D102 - delegates
        self.local.inputs = args.inputs
        return self.inner.new_resource(args)

    def call(self, args: pulumi.runtime.MockCallArgs):  # noqa: D102 - delegates
        return self.inner.call(args)


def _transform_options(request: Any) -> Any:
    """A registration's options as the engine hands them to transforms (``TransformResourceOptions``,
    pulumi/pulumi ``pkg/resource/deploy/source_eval.go`` ``resmon.RegisterResource``)."""
    opts = resource_pb2.TransformResourceOptions(
        depends_on=list(request.dependencies), ignore_changes=list(request.ignoreChanges),
        replace_on_changes=list(request.replaceOnChanges), version=request.version, provider=request.provider,
        plugin_download_url=request.pluginDownloadURL, deleted_with=request.deletedWith,
        additional_secret_outputs=list(request.additionalSecretOutputs), providers=dict(request.providers),
        aliases=list(request.aliases),
    )
    for name, wire in (("protect", "protect"), ("retainOnDelete", "retain_on_delete")):
        if request.HasField(name):
            setattr(opts, wire, getattr(request, name))
    if request.deleteBeforeReplaceDefined or request.deleteBeforeReplace:
        opts.delete_before_replace = request.deleteBeforeReplace
    if request.HasField("customTimeouts"):
        opts.custom_timeouts.CopyFrom(request.customTimeouts)
    return opts


def _apply_transform_options(request: Any, opts: Any) -> None:
    """Put a transform's options back on the registration (what the engine then registers with)."""
    for name, wire in (
        ("dependencies", "depends_on"), ("ignoreChanges", "ignore_changes"), ("replaceOnChanges", "replace_on_changes"),
        ("additionalSecretOutputs", "additional_secret_outputs"),
    ):
        del getattr(request, name)[:]
        getattr(request, name).extend(getattr(opts, wire))
    request.provider, request.version, request.pluginDownloadURL = opts.provider, opts.version, opts.plugin_download_url
    request.deletedWith = opts.deleted_with
    request.providers.clear()
    request.providers.update(opts.providers)
    for name, wire in (("protect", "protect"), ("retainOnDelete", "retain_on_delete")):
        if opts.HasField(wire):
            setattr(request, name, getattr(opts, wire))
    if opts.HasField("delete_before_replace"):
        request.deleteBeforeReplace, request.deleteBeforeReplaceDefined = opts.delete_before_replace, True


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A MockMonitor that also records every registration (type, name, parent, inputs).

    Attributes:
        records: the registrations, in the order they reached the monitor.
        mocks: the wrapped mocks (``new_resource``/``call`` answer as the given mocks do).
    """

    def __init__(self, mocks: pulumi.runtime.Mocks):
        self._tap = _InputsTap(mocks)
        super().__init__(self._tap)
        self.records: list[ResourceRecord] = []
        #: The event loops of the worker threads registrations ran on (the stock monitor runs one per thread).
        self._loops: set[asyncio.AbstractEventLoop] = set()
        #: Transforms as the engine keeps them (:meth:`_transformed`): each resource's own (by URN),
        #: each resource's parent, the stack's resource and invoke transforms (callbacks into the program).
        self._own_transforms: dict[str, list[Any]] = {}
        self._parents: dict[str, str] = {}
        self._stack_callbacks: list[Any] = []
        self._invoke_callbacks: list[Any] = []
        self._released = threading.Event()

    def release(self) -> None:
        """Cancel whatever the worker threads' event loops still wait for (a registration stuck in
        the stock monitor, or waiting on a transform), so those threads end and the process can exit
        after a timed-out run."""
        self._released.set()
        for loop in list(self._loops):
            if loop.is_running():
                loop.call_soon_threadsafe(_cancel_all, loop)

    def RegisterStackTransform(self, request):  # noqa: N802 - gRPC method name
        """Keep a stack transform (``pulumi.runtime.register_resource_transform``) to run on every later registration."""
        self._stack_callbacks.append(request)
        return super().RegisterStackTransform(request)

    def RegisterStackInvokeTransform(self, request):  # noqa: N802 - gRPC method name
        """Keep a stack invoke transform (``pulumi.runtime.register_invoke_transform``) to run on every later invoke."""
        self._invoke_callbacks.append(request)
        return super().RegisterStackInvokeTransform(request)

    def _callback(self, callback: Any, message: Any, response_type: Any) -> Any:
        """Run a transform callback in the program, as the engine does over the callback server: the
        SDK's own callback (it deserializes, calls the user's function, serializes) on the program's
        event loop, which is free while this worker thread waits.

        Raises:
            the transform's exception; PreviewTimeoutError after :meth:`release`.
        """
        for servicer in list(_CallbackServicer._servicers):
            fn = servicer._callbacks.get(callback.token)
            if fn is None:
                continue
            pending: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(
                typing.cast(Coroutine[Any, Any, Any], fn(message.SerializeToString())), servicer._loop
            )
            while True:
                try:
                    answer = pending.result(timeout=0.2)
                except TimeoutError:
                    if self._released.is_set():
                        pending.cancel()
                        raise PreviewTimeoutError(0) from None
                    continue
                return answer if isinstance(answer, response_type) else response_type.FromString(answer.SerializeToString())
        raise RuntimeError(f"transform callback {callback.token} is not registered with the program")

    def _transformed(self, request: Any) -> Any:
        """``request`` after its transforms, run as the engine runs them before anything else of a
        registration: the resource's own, then each parent's (nearest first), then the stack's, each
        getting the previous one's properties and options (pulumi/pulumi
        ``pkg/resource/deploy/source_eval.go`` ``resmon.RegisterResource``: "First run the transforms
        for this resource, then it's parents, then the stack"; ``wrapTransformCallback``: a response
        without properties or options keeps the previous ones). ``request`` itself when none apply.
        The older ``transformations`` option and ``register_stack_transformation`` run in the SDK
        before the registration is sent (pulumi ``resource.py`` ``Resource.__init__``)."""
        chain = list(request.transforms)
        parent = request.parent
        while parent:
            chain += self._own_transforms.get(parent, [])
            parent = self._parents.get(parent, "")
        chain += self._stack_callbacks
        if not chain or request.type == "pulumi:pulumi:Stack":
            return request
        props = request.object
        opts = _transform_options(request)
        for callback in chain:
            asked = resource_pb2.TransformRequest(
                type=request.type, name=request.name, custom=request.custom, parent=request.parent, properties=props, options=opts
            )
            answer = self._callback(callback, asked, resource_pb2.TransformResponse)
            if answer.HasField("properties"):
                props = answer.properties
            if answer.HasField("options"):
                opts = answer.options
        out = type(request)()
        out.CopyFrom(request)
        out.object.CopyFrom(props)
        _apply_transform_options(out, opts)
        for key in [k for k in out.propertyDependencies if k not in out.object.fields]:
            del out.propertyDependencies[key]
        return out

    def _invoke_transformed(self, request: Any) -> Any:
        """An invoke request after the stack's invoke transforms (``register_invoke_transform``), in
        registration order, as the engine runs them (``resmon.Invoke``, ``wrapInvokeTransformCallback``)."""
        if not self._invoke_callbacks:
            return request
        args = request.args
        opts = resource_pb2.TransformInvokeOptions(provider=request.provider, version=request.version, plugin_download_url=request.pluginDownloadURL)
        for callback in list(self._invoke_callbacks):
            answer = self._callback(
                callback, resource_pb2.TransformInvokeRequest(token=request.tok, args=args, options=opts), resource_pb2.TransformInvokeResponse
            )
            if answer.HasField("args"):
                args = answer.args
            if answer.HasField("options"):
                opts = answer.options
        out = type(request)()
        out.CopyFrom(request)
        out.args.CopyFrom(args)
        out.provider, out.version, out.pluginDownloadURL = opts.provider, opts.version, opts.plugin_download_url
        return out

    def _child_transformed(
        self, type_: str, name: str, parent: str, provider: str, wire: Any, inputs: dict[str, Any], secret_paths: list[str]
    ) -> tuple[Any, dict[str, Any], list[str]]:
        """A child that a remote component's provider registers (:meth:`_construct`), after the
        transforms the engine runs on that registration: its parents' (the component's own first)
        and the stack's (:meth:`_transformed`). Returns its wire inputs, plain inputs and secret paths."""
        asked = resource_pb2.RegisterResourceRequest(type=type_, name=name, parent=parent, custom=True, object=wire, provider=provider)
        done = self._transformed(asked)
        if done is asked:
            return wire, inputs, secret_paths
        return done.object, _plain(pulumi_rpc.deserialize_properties(done.object)), _secret_paths(done.object)

    def Call(self, request):  # noqa: N802 - gRPC method name
        """A component method (``pulumi.runtime.call``): answered by the mocks from the method's result
        class (:func:`hybridgpu.shell.invokes.answer_call`), ``__self__`` as the component's URN;
        returned as the engine returns a provider's ``Call`` (``CallResponse``)."""
        plain = self._plain_request(request, "args")
        args = pulumi_rpc.deserialize_properties(plain.args)
        answer = self.mocks.call(pulumi.runtime.MockCallArgs(token=request.tok, args=args, provider=request.provider))
        ret, failures = (answer, None) if isinstance(answer, dict) else answer  # the stock Invoke's two forms
        response = provider_pb2.CallResponse(failures=[provider_pb2.CheckFailure(property=p, reason=r) for p, r in failures or ()])
        getattr(response, "return").CopyFrom(_sync_await(pulumi_rpc.serialize_properties(ret, {})))
        return response

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The URN the real engine would give (:func:`engine_urn`), not the stock mock's form."""
        return engine_urn(pulumi_settings.get_stack(), pulumi_settings.get_project(), parent, type_, name)

    def _plain_request(self, request: Any, field_name: str) -> Any:
        """``request`` with the resource references of its ``field_name`` Struct replaced
        (:func:`without_resource_references`), or ``request`` itself when it holds none. Noting the
        worker thread's loop (:meth:`release`)."""
        self._loops.add(_ensure_event_loop())  # the loop the stock monitor runs on this thread
        struct = getattr(request, field_name)
        plain = without_resource_references(struct)
        if plain is struct:
            return request
        copy = type(request)()
        copy.CopyFrom(request)
        getattr(copy, field_name).CopyFrom(plain)
        return copy

    def Invoke(self, request):  # noqa: N802 - gRPC method name
        """The stock monitor's invoke after the stack's invoke transforms, its arguments' resource
        references as ids and URNs (see :meth:`RegisterResource`)."""
        return super().Invoke(self._plain_request(self._invoke_transformed(request), "args"))

    def ReadResource(self, request):  # noqa: N802 - gRPC method name
        """The stock monitor's read (``Resource.get``), its properties' resource references as ids and URNs."""
        return super().ReadResource(self._plain_request(request, "properties"))

    def RegisterResource(self, request):  # noqa: N802 - gRPC method name
        """Run the transforms (:meth:`_transformed`), register through the stock mock monitor, then
        record the resource (type, name, transformed inputs, parent)."""
        self._tap.local.inputs = None
        self._loops.add(_ensure_event_loop())  # the loop the stock monitor runs on this thread
        request = self._transformed(request)
        mocked = request
        raw = request.object.SerializeToString() if request.type != "pulumi:pulumi:Stack" else b""
        if _RESOURCE_SIG_BYTES in raw:
            plain = without_resource_references(request.object)
            # The stock monitor would rebuild each referenced resource (``deserialize_resource``
            # constructs it with ``urn=``) on this worker thread's own event loop and then wait for
            # its outputs, which only the program's loop resolves: with unknown ids (a first
            # preview) that wait never ends, and the rebuilt resources' RPCs and outputs land in the
            # runtime's global lists, which the program's loop then awaits ("attached to a different
            # loop" when one is not done yet). The mocks get the references as the engine hands them
            # to a provider that keeps no resources (ids, URNs); the record keeps the wire form.
            mocked = type(request)()
            mocked.CopyFrom(request)
            mocked.object.CopyFrom(plain)
        response = super().RegisterResource(mocked)
        if request.type != "pulumi:pulumi:Stack":
            self._parents[response.urn] = request.parent
            if request.transforms:
                self._own_transforms[response.urn] = list(request.transforms)
        inputs = self._tap.local.inputs
        if request.type != "pulumi:pulumi:Stack" and inputs is not None:
            secret = _SECRET_SIG_BYTES in raw  # what _has_secret checks, on the bytes already serialized
            record = ResourceRecord(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=bool(request.custom),
                # The deserialized inputs are this registration's own objects: normalized where
                # they lie unless a secret must be unwrapped (the mock's stored state shares them).
                inputs=_plain(inputs) if secret else _normalize_numbers(inputs),
                dependencies=sorted(request.dependencies),
                secret_paths=_secret_paths(request.object) if secret else [],
                provider=request.provider,
                additional_secret_outputs=sorted(request.additionalSecretOutputs),
                wire=request.object,
                property_dependencies={k: sorted(v.urns) for k, v in request.propertyDependencies.items() if v.urns},
                remote=bool(request.remote),
                source_uri=request.sourcePosition.uri,
                source_line=request.sourcePosition.line,
            )
            if record.remote:
                self._construct(request, record, _UNKNOWN.encode() in raw)
            self.records.append(record)
        return response

    def _construct(self, request: Any, record: ResourceRecord, unknown: bool) -> None:
        """Record the children a remote component's provider registers in ``Construct``
        (:func:`hybridgpu.shell.remote.construct`), parented to it; when they cannot be derived
        offline, note why on ``record.opaque`` (``hybridgpu check`` reports it).

        Raises:
            ValueError: a file the component names is missing or malformed (the provider fails too).
        """
        ref = request.providers.get("kubernetes") or request.provider
        try:
            children = construct(record.type, record.name, record.inputs, default_namespace=self._kubernetes_namespace(ref), unknown=unknown)
        except Opaque as exc:
            record.opaque = exc.reason
            return
        for child in children:
            wire = struct_pb2.Struct()
            obj = json.loads(json.dumps(child.inputs, default=str))
            for key in child.secret_keys:  # as the provider registers them: pulumi.ToSecret
                obj[key] = {_SIG_KEY: _SECRET_SIG, "value": obj[key]}
            wire.update(obj)
            wire, inputs, secrets = self._child_transformed(child.type, child.name, record.urn, ref, wire, child.inputs, list(child.secret_keys))
            self.records.append(
                ResourceRecord(
                    urn=self.make_urn(record.urn, child.type, child.name), type=child.type, name=child.name, parent=record.urn,
                    custom=True, inputs=inputs, provider=ref, wire=wire, secret_paths=secrets,
                )
            )

    def _kubernetes_namespace(self, ref: str) -> str:
        """The namespace a Kubernetes provider applies to objects that name none: an explicit
        provider's ``namespace`` input, else the stack's ``kubernetes:namespace``, else ``default``
        (the provider's fallback; a kubeconfig context's namespace is not read offline)."""
        urn = ref.rsplit("::", 1)[0] if ref else ""
        if urn:
            provider = next((r for r in list(self.records) if r.urn == urn), None)
            if provider is not None and provider.inputs.get("namespace"):
                return str(provider.inputs["namespace"])
            return "default"
        return str(pulumi.runtime.config.get_config("kubernetes:namespace") or "default")


def _plain(value: Any) -> Any:
    """Strip Pulumi wrappers so values can be dumped as YAML/JSON."""
    kind = type(value)
    if kind is str or value is None or kind is bool or kind is int:  # the common leaves first
        return value
    if isinstance(value, dict):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            # A secret on the wire: {sig: secret, value: ...}; the record keeps the value and
            # notes the path in ``secret_paths``.
            return _plain(value.get("value"))
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        # Pulumi's wire format (protobuf Struct) carries every number as a double.
        return int(value)
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, pulumi.output.Unknown):
        # A computed value in a dry run: the engine's wire marker, the same in every run (the
        # object's repr carries its address).
        return _UNKNOWN
    return str(value)


def _normalize_numbers(value: Any) -> Any:
    """:func:`_plain` of a value holding no secret, done in place: integral floats become ints and
    values that are not JSON-like become strings; mappings and lists are kept, not copied (bench50's
    records hold 1,807 mappings and lists among 4,678 values, counted 2026-11-24; copies would only add
    garbage-collector work)."""
    if isinstance(value, dict):
        slots: Any = value.items()
    elif isinstance(value, list):
        slots = enumerate(value)
    else:
        return _plain(value)
    for key, item in slots:  # replacing an existing key's or index's value never resizes the container
        kind = type(item)
        if kind is dict or kind is list:
            _normalize_numbers(item)
        elif not (kind is str or item is None or kind is bool or kind is int):
            value[key] = _plain(item)
    return value


#: Top-level fields of the Kubernetes objects the program creates, kept in the written manifests:
#: ``spec``-style kinds, Secrets/ConfigMaps (``type``, ``data``), RBAC (``rules``, ``subjects``, ``roleRef``)
#: StorageClass (``provisioner``, ``reclaimPolicy``, ``volumeBindingMode``, ``parameters``, ``mountOptions``)
#: and (Workload)PriorityClass (``value``, ``description``).
_MANIFEST_KEYS = (
    "apiVersion", "kind", "type", "metadata", "spec", "data", "rules", "subjects", "roleRef",
    "provisioner", "parameters", "reclaimPolicy", "volumeBindingMode", "mountOptions", "allowVolumeExpansion",
    "value", "description",
    "template",  # v1 PodTemplate (a CapacityBuffer's chunk shape, hybridgpu.render.karpenter_static)
)

@dataclass
class PreviewResult:
    """What the offline preview of one stack produced.

    Attributes:
        stack: stack name.
        config: the validated stack config.
        records: every registered resource, in registration order.
        outputs: stack outputs (secret outputs replaced by ``[secret]``).
    """

    stack: str
    config: StackConfig | None
    records: list[ResourceRecord]
    outputs: dict[str, Any]
    #: The Pulumi project name (``name`` of its Pulumi.yaml) and the stack's raw config values
    #: (namespaced key -> value, as the CLI hands them over); the policy check builds the
    #: default providers' inputs from them.
    project: str = PROJECT
    values: dict[str, Any] = field(default_factory=dict)

    def by_type(self) -> dict[str, int]:
        """Count of resources per type token, sorted by type."""
        counts: dict[str, int] = {}
        for r in self.records:
            counts[r.type] = counts.get(r.type, 0) + 1
        return dict(sorted(counts.items()))

    def _stable(self) -> list[ResourceRecord]:
        """The records sorted by URN: registrations arrive in a thread-dependent order, listings must not."""
        return sorted(self.records, key=lambda r: r.urn)

    def of_type(self, typ: str) -> list[ResourceRecord]:
        """All records of a type token, sorted by URN (the same order in every run)."""
        return [r for r in self._stable() if r.type == typ]

    def kubernetes_manifests(self) -> list[dict[str, Any]]:
        """Every Kubernetes object (not Helm releases or providers) as an apply-able manifest, sorted by URN."""
        manifests = []
        for r in self._stable():
            if not r.type.startswith("kubernetes:") or r.type == "kubernetes:helm.sh/v3:Release":
                continue
            doc = {k: r.inputs[k] for k in _MANIFEST_KEYS if k in r.inputs}
            manifests.append(doc)
        return manifests

    def helm_releases(self) -> list[dict[str, Any]]:
        """Helm releases (name, namespace, chart, version and values), sorted by URN."""
        out = []
        for r in self._stable():
            if r.type != "kubernetes:helm.sh/v3:Release":
                continue
            keys = ("name", "namespace", "chart", "version", "skipCrds", "values")
            out.append({k: r.inputs[k] for k in keys if k in r.inputs})
        return out


class PreviewTimeoutError(TimeoutError):
    """The program did not finish within the time limit of :func:`run_preview` (``seconds``)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        super().__init__(f"the program did not finish within {seconds:g} s under the offline mocks")


@contextlib.contextmanager
def _alarm(seconds: float | None):
    """Raise :class:`PreviewTimeoutError` in the main thread after ``seconds`` (SIGALRM): it stops a
    program blocked in its own code as well as one waiting on the event loop. Elsewhere (another
    thread, no SIGALRM) nothing is armed; :func:`run_preview` also bounds the wait on the loop."""
    if seconds is None or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    limit = seconds

    def expired(signum: int, frame: Any) -> None:
        raise PreviewTimeoutError(limit)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


async def _bounded(coro: Any, seconds: float | None) -> Any:
    """Await ``coro``, at most ``seconds`` (then :class:`PreviewTimeoutError`)."""
    if seconds is None:
        return await coro
    try:
        return await asyncio.wait_for(coro, seconds)
    except asyncio.TimeoutError:
        raise PreviewTimeoutError(seconds) from None


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel every task of ``loop`` (called on that loop's thread)."""
    for task in asyncio.all_tasks(loop):
        task.cancel()


def _unretrieved_dropped(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The program loop's exception handler: drops "exception was never retrieved" reports, passes the
    rest to asyncio's default handler. After a failed run (already reported as one line) the outputs of
    the resources that never registered hold the failure; asyncio reports each when the garbage
    collector frees it, at any later allocation, and formatting that traceback inside another
    ``ast.parse`` (Python 3.11 ``traceback`` parses source lines) fails it with "AST constructor
    recursion depth mismatch". A successful run retrieves every output (``wait_for_rpcs``)."""
    if str(context.get("message", "")).endswith("exception was never retrieved"):
        return
    loop.default_exception_handler(context)


def _reset_runtime() -> None:
    pulumi_settings.ROOT.set(None)
    pulumi_settings.SETTINGS.rpc_manager.clear()
    pulumi_settings.SETTINGS.outputs.clear()


def encrypted_placeholder(key: str) -> str:
    """What the program reads for the ``secure:`` value of ``key`` offline (never decrypted): a fixed
    string naming the key, e.g. ``[secret acme:dbPassword]``; ``config.require_secret`` returns it as
    a secret Output (the key is listed as secret, as the CLI lists it in ``PULUMI_CONFIG_SECRET_KEYS``)."""
    return f"[secret {key}]"


class EncryptedConfigError(HybridGpuError):
    """The program parses a config value that is encrypted in the stack file (``{secure: v1:...}``),
    which the offline check cannot decrypt: one line naming the stack file, the key and the fix."""

    @classmethod
    def of(cls, exc: BaseException, values: StackValues) -> EncryptedConfigError | None:
        """The error for a program failure caused by parsing an encrypted value, else None: a
        ``pulumi.config.ConfigTypeError`` on a secret key (``require_secret_int``, ``get_object``...),
        or any exception in ``exc``'s chain whose message or parsed text (``json.JSONDecodeError.doc``)
        holds a key's placeholder (:func:`encrypted_placeholder`, or the shared ``[secret]`` when only
        one key is encrypted)."""
        keys = sorted(values.secret_keys)
        if not keys:
            return None
        seen: set[int] = set()
        cause: BaseException | None = exc
        while cause is not None and id(cause) not in seen:
            seen.add(id(cause))
            key = getattr(cause, "key", None)
            if isinstance(cause, pulumi.config.ConfigTypeError) and key in values.secret_keys:
                return cls(values.file, str(key), f"read as {cause.expect_type}")
            text = f"{cause} {getattr(cause, 'doc', '')}"
            for key in keys:
                if encrypted_placeholder(key) in text or (len(keys) == 1 and SECRET_PLACEHOLDER in text):
                    return cls(values.file, key, f"{type(cause).__name__}: {' '.join(str(cause).split())[:200]}")
            cause = cause.__cause__ or cause.__context__
        return None

    def __init__(self, file: str, key: str, how: str):
        self.file, self.key = file, key
        super().__init__(
            f"{file}: {key}: the value is encrypted (secure:) and cannot be read offline, and the program parses it "
            f"({how}). Fix: check a stack file that gives {key} a plaintext value (a test stack), or read the key "
            f"with config.require_secret/get_secret without parsing it"
        )


def derived_invokes_note(tokens: Sequence[str]) -> str:
    """The note a failed program's error carries when invokes were answered with derived values:
    their shape comes from the SDK's result type, their contents are made up (a secret's string is
    not the JSON the program parses, a token is not the base64 it decodes)."""
    return (
        f"the offline run answered {len(tokens)} invoke(s) with made-up values of the right shape "
        f"({', '.join(tokens[:6])}{', ...' if len(tokens) > 6 else ''}); if the program reads one, give its answer "
        "with `hybridgpu check --invoke-answers FILE`"
    )


def remote_component_state() -> dict[str, Any]:
    """The state of a remote (multi-language) component: empty, so every output is unknown in a dry run.

    Only remote components reach the mocks with ``custom`` False (a local component registers
    nothing with a provider). Under the engine their outputs are what the provider plugin's
    ``Construct`` returns, mostly resource references and values derived from the children it
    registers (pulumi/pulumi ``pkg/resource/deploy/source_eval.go`` ``RegisterResource`` with
    ``remote``); offline there is no plugin, so they are not known. Echoing the inputs, as the mocks
    do for a custom resource, gave outputs of the wrong type (awsx ``Vpc`` ``natGateways`` in,
    ``NatGateway`` resources out) and failed the program. The component itself is reported
    (``offline-opaque-component``) unless it was expanded offline.
    """
    return {}


class FirstPreviewMocks(pulumi.runtime.Mocks):
    """Mocks for a *first* ``pulumi preview``: no resource exists yet, so every computed output
    (ids, ARNs, endpoints, generated secrets) is unknown and only the inputs are known.

    Wraps other mocks: invokes and stack references (whose stacks do exist) are answered by
    them; every other resource returns no id and its inputs as its state, which under
    ``preview=True`` leaves the rest of its outputs unknown, as the engine would.
    """

    def __init__(self, inner: pulumi.runtime.Mocks):
        self.inner = inner

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        """StackReferences from the wrapped mocks; any other resource: no id, its inputs plus the
        auto-names the providers assign at Check (:func:`hybridgpu.shell.outputs.first_preview_state`) as its state."""
        if args.typ == "pulumi:pulumi:StackReference":
            return self.inner.new_resource(args)
        if args.custom is False:
            return None, remote_component_state()
        return None, first_preview_state(args.typ, args.name, dict(args.inputs))

    def call(self, args: pulumi.runtime.MockCallArgs):
        """Invokes go to the wrapped mocks (data sources exist before the stack does). A component
        method's result is unknown unless the ``--invoke-answers`` file gives it: under the engine the
        component's provider runs the method in the preview (pulumi/pulumi
        ``pkg/resource/deploy/source_eval.go`` ``resmon.Call`` passes ``DryRun`` in ``CallInfo``) on a
        component whose children do not exist yet, so what it computes from their outputs (a
        kubeconfig from the cluster's endpoint) is unknown; what the method computes from known inputs
        alone cannot be told apart offline, so it is unknown too (fail closed). A provider's own method
        (``pulumi:providers:aws/terraformConfig``) reads only its configuration, which a preview has:
        answered as in plain mode."""
        if not invokes.is_method_token(args.token) or args.token.startswith("pulumi:providers:"):
            return self.inner.call(args)
        if invokes.user_answer(args.token, {k: v for k, v in dict(args.args or {}).items() if k != "__self__"}) is not None:
            return self.inner.call(args)
        answer = self.inner.call(args)  # raises for a method nothing describes, as in plain mode
        return {key: _UNKNOWN for key in answer} or {"result": _UNKNOWN}


def run_preview(
    stack: str,
    root: Path | None = None,
    program: Callable[[], None] | None = None,
    *,
    first_preview: bool = False,
    loaded: Stack | None = None,
    raw: StackValues | None = None,
    project: str = PROJECT,
    timeout: float | None = None,
    dry_run: bool | None = None,
) -> PreviewResult:
    """Run the Pulumi program of ``stack`` under mocks.

    Args:
        stack: stack name (``stacks/Pulumi.<stack>.yaml``).
        root: project root (default: found from the working directory).
        program: the program to run (default: ``hybridgpu.components.program.main``; the policy check
            passes the project's own ``__main__.py``).
        first_preview: simulate the first ``pulumi preview`` of the stack (:class:`FirstPreviewMocks`,
            dry run): computed values reach the recorded inputs as Pulumi's unknown markers.
        loaded: the stack, already loaded with :func:`hybridgpu.stack.load_stack` (default: loaded
            here). The program is handed this validated stack, so a preview validates once.
        raw: for a program that is not hybridgpu's (``hybridgpu check`` on any Pulumi project): the
            stack file's values, read without hybridgpu's validation (``loaded`` is then not used).
        project: the Pulumi project name (URNs, ``pulumi.get_project()``).
        timeout: seconds the program may run (default: no limit).
        dry_run: what ``pulumi.runtime.is_dry_run()`` tells the program (default: ``first_preview``).
            ``hybridgpu check`` stands for ``pulumi preview``, a dry run in both of its modes: a
            program's "only on `pulumi up`" branch is not taken, and an output the mocks leave out
            (a resource reference, a service-keyed map, a remote component's outputs) is unknown,
            as the engine reports an output it does not know in a preview, not ``None``.

    Returns:
        The recorded resources and stack outputs.

    Raises:
        StackFileError / StackConfigError: the stack file is unreadable or invalid (raised
            before the program runs, so nothing is registered).
        PreviewTimeoutError: the program did not finish within ``timeout`` seconds.
        EncryptedConfigError: the program failed parsing an encrypted (``secure:``) config value.
        pulumi.RunError and other exceptions the program raises.
    """
    root = root or find_project_root()
    config: StackConfig | None
    preload: Stack | None = None  # the validated stack the program reads instead of loading it again
    if raw is not None:
        config, values = None, raw
        region = str(raw.values.get("aws:region") or "us-east-1")
    else:
        preload = loaded if loaded is not None and loaded.config.stack == stack else load_stack(stack, root)
        assert preload.values is not None  # load_stack keeps the values read from the stack file
        config, values = preload.config, preload.values
        region = config.region or "us-east-1"
    _reset_runtime()
    mocks: pulumi.runtime.Mocks = HybridMocks(region=region)
    if first_preview:
        mocks = FirstPreviewMocks(mocks)
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=first_preview if dry_run is None else dry_run, monitor=monitor)
    strings = pulumi_config_strings(values.values)
    if raw is not None:
        # Another team's program: each encrypted value reads as its own placeholder, so a failure to
        # parse it names the key (hybridgpu's own program gets the values it was validated with).
        strings.update({k: encrypted_placeholder(k) for k in values.secret_keys if strings.get(k) == SECRET_PLACEHOLDER})
    set_all_config(strings, sorted(values.secret_keys))

    if program is None:
        program = program_main

    captured: dict[str, Any] = {}

    _ensure_event_loop().set_exception_handler(_unretrieved_dropped)
    previous = os.getcwd()
    previous_flag = os.environ.get("HYBRIDGPU_OFFLINE_PREVIEW")
    os.chdir(root)
    os.environ["HYBRIDGPU_OFFLINE_PREVIEW"] = "1"  # SSH keys from env/file are not read offline
    try:
        with _alarm(timeout):
            if preload is None:
                _sync_await(_bounded(run_pulumi_func(program), timeout))
            else:
                with preloaded(preload):
                    _sync_await(_bounded(run_pulumi_func(program), timeout))
    except PreviewTimeoutError:
        monitor.release()
        raise
    except Exception as exc:
        unreadable = EncryptedConfigError.of(exc, values)
        if unreadable is not None:
            raise unreadable from exc
        derived = sorted(getattr(getattr(mocks, "inner", mocks), "derived", ()))
        # Only failures a made-up value can cause (parsing, lookups, types); not a missing module
        # or attribute of the program's own dependencies.
        if derived and isinstance(exc, (ValueError, KeyError, IndexError, TypeError)):
            exc.add_note(derived_invokes_note(derived))
        raise
    finally:
        os.chdir(previous)
        if previous_flag is None:
            os.environ.pop("HYBRIDGPU_OFFLINE_PREVIEW", None)
        else:
            os.environ["HYBRIDGPU_OFFLINE_PREVIEW"] = previous_flag
    root_resource = pulumi_settings.get_root_resource()
    outputs_map = getattr(root_resource, "outputs", None) or {}
    if outputs_map:
        # One pass of the event loop for every output, not one per output.
        captured.update(zip(outputs_map, _sync_await(_resolve_outputs(list(outputs_map.values())))))
    _reset_runtime()
    return PreviewResult(stack=stack, config=config, records=monitor.records, outputs=captured, project=project, values=dict(values.values))


async def _resolve_outputs(values: list[Any]) -> list[Any]:
    return list(await asyncio.gather(*(_resolve_output(v) for v in values)))


async def _resolve_output(value: Any) -> Any:
    if isinstance(value, pulumi.Output):
        if await value.is_secret():
            return "[secret]"
        return _plain(await value.future())
    return _plain(value)


def write_manifests(result: PreviewResult, out_dir: Path) -> Path:
    """Write the preview's Kubernetes manifests, Helm releases and resource list to ``out_dir/<stack>``.

    Files: ``manifests/<kind>-<name>.yaml`` per object (``<kind>-<namespace>-<name>.yaml`` when
    two objects share kind and name), ``helm-releases.yaml``, ``resources.json``; every listing
    sorted by URN, so the same stack writes the same bytes.
    The directory is built beside the target and renamed into place, so an interrupted write
    never leaves a half-written directory.

    Returns:
        The stack's output directory.
    """
    target = out_dir / result.stack
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{result.stack}-", dir=out_dir))
    try:
        manifests_dir = staging / "manifests"
        manifests_dir.mkdir()
        docs = result.kubernetes_manifests()
        plain = [f"{d['kind'].lower()}-{d['metadata']['name']}.yaml" for d in docs]
        for doc, fname in zip(docs, plain, strict=True):
            if plain.count(fname) > 1:
                # Same kind and name in two namespaces: one file each, never one overwriting the other.
                fname = f"{doc['kind'].lower()}-{doc['metadata'].get('namespace') or 'cluster'}-{doc['metadata']['name']}.yaml"
            (manifests_dir / fname).write_text(dump_yaml(doc))
        (staging / "helm-releases.yaml").write_text(dump_yaml_all(result.helm_releases()))
        # Registrations arrive in a thread-dependent order; sort for a stable file.
        resources = sorted(
            ({"urn": r.urn, "type": r.type, "name": r.name, "parent": r.parent, "custom": r.custom} for r in result.records),
            key=lambda r: str(r["urn"]),
        )
        (staging / "resources.json").write_text(json.dumps(resources, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


