"""Answers to any invoke (data source) a Pulumi program makes under the offline mocks.

A real program calls lookups hybridgpu never wrote an answer for (``aws.ec2.get_ami``,
``aws.get_availability_zones``, ``aws.iam.get_policy_document``, ``aws.eks.get_cluster`` ...).
:func:`derive_answer` builds one from the provider SDK itself: the invoke token names the SDK
function (``aws:ec2/getAmi:getAmi`` -> ``pulumi_aws.ec2.get_ami``), the function's module holds
its ``@pulumi.output_type`` result class (``GetAmiResult``), and Pulumi's own
``pulumi._types.output_type_types`` lists that class's wire names and typed properties. Every
property gets a value of its type, shaped as the service would answer: ids with the resource's
prefix (``ami-``, ``vpc-``, ``subnet-``), ARNs in the region and account, three availability
zones of the region, a ``json`` policy document that is valid IAM JSON of the statements
given, and the arguments the program passed echoed back (a lookup by ``name`` returns that
name). ECR answers are shaped as the service gives them, since container programs parse them: a
token that decodes to ``AWS:<password>``, registry, repository and image URIs
(:func:`_shape_ecr`). Values hash the token and arguments, so the same program gets the same answers.

The region is the invoke's own ``region`` argument, else the region of the explicit provider
the program passed (its recorded inputs), else the stack's ``aws:region``.

Users add or override answers in a YAML/JSON file (``hybridgpu check --invoke-answers FILE``,
:func:`load_answers`): ``token -> answer`` or ``token -> [{match: {arg: value}, answer: ...}]``;
an answer is merged over the derived one (mappings key by key), so it can also answer tokens
no installed SDK knows.

Component methods (``Call``, e.g. pulumi_eks ``Cluster.get_kubeconfig``, token
``eks:index:Cluster/getKubeconfig``) are answered the same way from the method's result class
(:func:`answer_call`), and the answers file overrides them by token too.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import difflib
import hashlib
import importlib
import json
import keyword
import re
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi import _types as pulumi_types
from pulumi.runtime import settings as pulumi_settings

from hybridgpu.errors import HybridGpuError
from hybridgpu.shell.outputs import sdk_class

#: Documented placeholder answers: a fixed date and the AWS documentation example account.
MOCK_DATE = "2025-01-01T00:00:00.000Z"
#: How deep nested result types are filled (result types of some providers refer to themselves).
MAX_DEPTH = 6

#: Id prefixes of AWS resources, by the resource noun of a property (``vpcId`` -> ``vpc``) or of
#: a lookup (``getSubnets`` -> ``subnet``); the EC2 API's documented id forms (``ami-``, ``vpc-``...).
ID_PREFIXES = {
    "ami": "ami", "image": "ami", "vpc": "vpc", "subnet": "subnet", "securitygroup": "sg", "group": "sg",
    "routetable": "rtb", "internetgateway": "igw", "natgateway": "nat", "instance": "i", "volume": "vol",
    "snapshot": "snap", "networkinterface": "eni", "keypair": "key", "launchtemplate": "lt",
    "transitgateway": "tgw", "vpcendpoint": "vpce", "networkacl": "acl", "elasticip": "eipalloc",
    "allocation": "eipalloc", "prefixlist": "pl", "dhcpoptions": "dopt", "peeringconnection": "pcx",
    "vpcpeeringconnection": "pcx", "egressonlyinternetgateway": "eigw", "placementgroup": "pg",
    "capacityreservation": "cr", "ebsvolume": "vol", "ebssnapshot": "snap", "customergateway": "cgw",
    "vpngateway": "vgw", "ipam": "ipam", "ipampool": "ipam-pool", "carriergateway": "cagw",
}


class InvokeAnswersError(HybridGpuError):
    """The invoke answers file is unreadable or malformed (names the file, the token and the fix)."""


@dataclass(frozen=True)
class _Rule:
    match: Mapping[str, Any]
    answer: Mapping[str, Any]


#: The answers file in force (set by :func:`answers_from` around a check); token -> rules.
_ANSWERS: dict[str, list[_Rule]] = {}


def load_answers(path: Path) -> dict[str, list[_Rule]]:
    """Read an invoke answers file.

    Args:
        path: YAML or JSON file: a mapping of invoke token to either an answer (a mapping of the
            result's wire names, e.g. ``{imageId: ami-0abc}``) or a list of ``{match: {arg: value},
            answer: {...}}`` rules (the first rule whose ``match`` args all equal the invoke's wins;
            a rule without ``match`` matches any invoke of the token).

    Returns:
        token -> rules, in file order.

    Raises:
        InvokeAnswersError: the file is missing, not YAML/JSON, or an entry is not of that shape.
    """
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise InvokeAnswersError(f"{path}: cannot read the invoke answers file: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise InvokeAnswersError(f"{path}: not valid YAML/JSON: {' '.join(str(exc).split())}") from exc
    if not isinstance(data, Mapping):
        raise InvokeAnswersError(f"{path}: expected a mapping of invoke token to answer (e.g. 'aws:ec2/getAmi:getAmi: {{imageId: ami-0abc}}'), got {type(data).__name__}")
    rules: dict[str, list[_Rule]] = {}
    for token, entry in data.items():
        if not isinstance(token, str) or token.count(":") < 2:
            raise InvokeAnswersError(f"{path}: key {token!r}: not an invoke token; fix: write the token as the error names it, e.g. 'aws:ec2/getAmi:getAmi'")
        items = entry if isinstance(entry, list) else [{"answer": entry}]
        parsed = []
        for i, item in enumerate(items):
            where = f"{path}: {token}" + (f"[{i}]" if isinstance(entry, list) else "")
            if not isinstance(item, Mapping) or not isinstance(item.get("answer"), Mapping) or set(item) - {"match", "answer"}:
                raise InvokeAnswersError(f"{where}: expected an answer mapping of result wire names to values, or a list of {{match: {{arg: value}}, answer: {{...}}}}; fix the entry")
            match = item.get("match") or {}
            if not isinstance(match, Mapping):
                raise InvokeAnswersError(f"{where}.match: expected a mapping of invoke argument (wire name) to value")
            _check_wire_names(where, token, item["answer"])
            parsed.append(_Rule(match=dict(match), answer=dict(item["answer"])))
        rules[token] = parsed
    return rules


def _check_wire_names(where: str, token: str, answer: Mapping[str, Any]) -> None:
    """An answer for a function the SDK knows may only use its result's wire names (camelCase):
    the SDK drops any other key silently, so ``image_id`` would leave the derived value in place."""
    cls = result_class(token)
    if cls is None:
        return
    known = sorted(pulumi_types.output_type_types(cls))
    for key in answer:
        if key not in known:
            close = difflib.get_close_matches(str(key).replace("_", ""), known, n=1, cutoff=0.6) or difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise InvokeAnswersError(
                f"{where}: answer key {key!r} is not a result property of {token}; {hint}fix: use its wire names ({', '.join(known)})"
            )


@contextlib.contextmanager
def answers_from(path: Path | None) -> Iterator[None]:
    """Use the answers in ``path`` (:func:`load_answers`; ``None``: no file) for the invokes made
    inside the block, and none after it.

    Raises:
        InvokeAnswersError: as :func:`load_answers`.
    """
    loaded = load_answers(path) if path is not None else {}
    previous = dict(_ANSWERS)
    _ANSWERS.clear()
    _ANSWERS.update(loaded)
    try:
        yield
    finally:
        _ANSWERS.clear()
        _ANSWERS.update(previous)


def user_answer(token: str, args: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The answers file's answer for this invoke (the first matching rule), or ``None``."""
    for rule in _ANSWERS.get(token, ()):
        if all(args.get(k) == v for k, v in rule.match.items()):
            return rule.answer
    return None


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


# --- the SDK function and result class of a token ----------------------------------------


@cache
def result_class(token: str) -> type | None:
    """The ``@pulumi.output_type`` result class of the SDK function an invoke token names, or
    ``None`` when no installed SDK has it.

    ``<pkg>:<module>:<name>`` -> ``pulumi_<pkg>.<module with / as .>``'s function whose name
    without underscores equals ``<name>`` (``getAmi`` -> ``get_ami``); ``index`` is the package
    itself. Its result class is ``<Name>Result`` in the function's module.
    """
    try:
        pkg, mod, name = token.split(":", 2)
    except ValueError:
        return None
    mod = mod.split("/")[0] if mod.startswith("index/") or mod == "index" else mod
    if "/" in mod and mod.rsplit("/", 1)[1].lower() == name.lower():  # aws:ec2/getAmi:getAmi
        mod = mod.rsplit("/", 1)[0]
    # The generator appends "_" to Python keywords (aws:lambda/... -> pulumi_aws.lambda_).
    parts = [f"pulumi_{pkg.replace('-', '_')}"] + [p + "_" if keyword.iskeyword(p) else p for p in mod.split("/") if p and p != "index"]
    try:
        module = importlib.import_module(".".join(parts))
    except ImportError:
        return None
    getattr(module, "_utilities", None)  # SDK modules load lazily: dir() lists their names only once one is read
    wanted = name.lower()
    fn = next((getattr(module, a) for a in dir(module) if a.replace("_", "").lower() == wanted and callable(getattr(module, a))), None)
    if fn is None:
        return None
    home = importlib.import_module(fn.__module__)
    cls_name = name[0].upper() + name[1:] + "Result"
    cls = next((getattr(home, a) for a in dir(home) if a.lower() == cls_name.lower()), None)
    return cls if isinstance(cls, type) and pulumi_types.is_output_type(cls) else None


# --- region --------------------------------------------------------------------------------


def invoke_region(args: pulumi.runtime.MockCallArgs, default: str) -> str:
    """The region an invoke runs in: its ``region`` argument, else its explicit provider's
    ``region`` input (from the mock monitor's registered resources), else ``default``."""
    if isinstance(args.args.get("region"), str) and args.args["region"]:
        return args.args["region"]
    ref = args.provider or ""
    urn = ref.rsplit("::", 1)[0] if ref else ""  # a provider reference is "<urn>::<id>"
    monitor = pulumi_settings.get_monitor()
    resources = getattr(monitor, "resources", None) or {}
    reg = resources.get(urn)
    region = (getattr(reg, "state", None) or {}).get("region") if reg is not None else None
    return region if isinstance(region, str) and region else default


# --- deriving an answer --------------------------------------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True)
class _Ctx:
    token: str
    service: str  # ec2, iam, eks ...
    noun: str  # the looked-up thing: ami, vpc, subnet, securitygroup, cluster ...
    kind: str  # the same as ARNs write it: security-group, cluster, role ...
    region: str
    account: str
    seed: str

    def h(self, *parts: str, n: int = 17) -> str:
        return hashlib.sha256("/".join((self.seed, *parts)).encode()).hexdigest()[:n]

    @property
    def azs(self) -> list[str]:
        return [f"{self.region}{c}" for c in "abc"]

    @property
    def az_ids(self) -> list[str]:
        short = re.sub(r"([a-z]+)-([a-z]+)-(\d+)", lambda m: m[1] + "".join(w[0] for w in m[2].split("-")) + m[3], self.region)
        return [f"{short}-az{i}" for i in (1, 2, 3)]


def _id_for(noun: str, ctx: _Ctx, salt: str = "") -> str:
    key = noun.lower().replace("_", "")
    prefix = ID_PREFIXES.get(key)
    if prefix:
        return f"{prefix}-{ctx.h(key, salt)}"
    if key in ("owner", "account", "caller"):
        return ctx.account
    if key in ("zone", "availabilityzone"):
        return ctx.az_ids[0]
    if key in ("hostedzone",):
        return "Z" + ctx.h(key, salt, n=20).upper()
    if key in ("kmskey", "key"):
        hx = ctx.h(key, salt, n=32)
        return f"{hx[:8]}-{hx[8:12]}-{hx[12:16]}-{hx[16:20]}-{hx[20:32]}"
    return f"{noun or 'id'}-{ctx.h(key, salt, n=8)}"


def _arn(ctx: _Ctx, args: Mapping[str, Any]) -> str:
    """``arn:aws:<service>:<region>:<account>:<kind>/<name>``; IAM has no region, S3 neither
    region nor account, and EC2 ARNs end in the id (``security-group/sg-...``)."""
    name = args.get("name") or args.get("roleName") or args.get("clusterName") or f"{ctx.kind}-{ctx.h('arn', n=8)}"
    if ctx.service in ("iam",):
        return f"arn:aws:iam::{ctx.account}:{ctx.kind}/{name}"
    if ctx.service == "s3":
        return f"arn:aws:s3:::{args.get('bucket') or name}"
    if ctx.noun in ID_PREFIXES:
        name = _id_for(ctx.noun, ctx)
    return f"arn:aws:{ctx.service}:{ctx.region}:{ctx.account}:{ctx.kind}/{name}"


def _string(wire: str, ctx: _Ctx, args: Mapping[str, Any], salt: str) -> str:
    low = wire.lower()
    if wire == "id":
        return _id_for(ctx.noun, ctx) if ctx.noun in ID_PREFIXES else str(args.get("name") or args.get("bucket") or _id_for(ctx.noun, ctx))
    if low == "arn" or low.endswith("arn"):
        return _arn(ctx, args) if low == "arn" else f"arn:aws:{ctx.service}:{ctx.region}:{ctx.account}:{_snake(wire[:-3]).replace('_', '-')}/{ctx.h(wire, salt, n=8)}"
    if low in ("region", "regionname"):
        return ctx.region
    if low in ("accountid", "ownerid"):
        return ctx.account
    if ctx.noun == "availabilityzone" and low in ("name", "zoneid"):
        return ctx.azs[0] if low == "name" else ctx.az_ids[0]
    if low in ("availabilityzone", "zonename"):
        return ctx.azs[0]
    if low in ("availabilityzoneid", "zoneid"):
        return ctx.az_ids[0]
    if low.endswith("id") and len(wire) > 2:
        return _id_for(wire[:-2], ctx, salt)
    if low == "cidrblock" or low.endswith("cidr") or low.endswith("cidrblock"):
        return "10.0.0.0/16" if ctx.noun == "vpc" else "10.0.1.0/24"
    if low in ("endpoint", "url") or low.endswith("endpoint") or low.endswith("url"):
        return f"https://{ctx.h(wire, salt, n=32).upper()}.mock.{ctx.region}.{ctx.service}.amazonaws.com"
    if low in ("state", "status"):
        return "available" if ctx.service == "ec2" else "ACTIVE"
    if "date" in low or "time" in low or low.endswith("at"):
        return MOCK_DATE
    if low == "architecture":
        return "x86_64"
    if low in ("version", "kubernetesversion", "platformversion"):
        return "1.31" if ctx.service == "eks" else "1"
    if low in ("data", "certificateauthoritydata"):
        return "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1PQ0sKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
    if low == "token":
        return f"k8s-aws-v1.{ctx.h('token', n=40)}"
    if low == "partition":
        return "aws"
    if low in ("name", "names"):
        return f"{ctx.noun}-{ctx.h(wire, salt, n=8)}"
    return f"mock-{_snake(wire).replace('_', '-')}-{ctx.h(wire, salt, n=8)}"


def _value(typ: Any, wire: str, ctx: _Ctx, args: Mapping[str, Any], depth: int, salt: str = "") -> Any:
    typ = pulumi_types.unwrap_type(typ)
    origin = typing.get_origin(typ)
    low = wire.lower()
    if typ is str:
        return _string(wire, ctx, args, salt)
    if typ is bool:
        return False
    if typ is int:
        return 1
    if typ is float:
        return 1.0
    if origin in (list, Sequence, typing.Sequence, tuple) or typ in (list, tuple):
        (item,) = typing.get_args(typ)[:1] or (Any,)
        item = pulumi_types.unwrap_type(item)
        if item is str:
            if (low == "names" and ctx.noun == "availabilityzone") or low in ("zonenames", "availabilityzones"):
                return ctx.azs
            if low in ("zoneids", "availabilityzoneids"):
                return ctx.az_ids
            if low in ("ids",):
                return [_id_for(ctx.noun, ctx, str(i)) for i in range(3)]
            singular = wire[:-1] if wire.endswith("s") else wire
            return [_string(singular, ctx, args, salt)]
        if isinstance(item, type) and pulumi_types.is_output_type(item) and depth < MAX_DEPTH:
            return [_object(item, ctx, {}, depth + 1, salt=f"{salt}/{wire}")]
        return []
    if origin in (dict, Mapping, typing.Mapping) or typ is dict:
        return {}
    if isinstance(typ, type) and pulumi_types.is_output_type(typ) and depth < MAX_DEPTH:
        return _object(typ, ctx, {}, depth + 1, salt=f"{salt}/{wire}")
    return None


def _object(cls: type, ctx: _Ctx, args: Mapping[str, Any], depth: int, salt: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for wire, typ in sorted(pulumi_types.output_type_types(cls).items()):
        given = args.get(wire)
        out[wire] = copy.deepcopy(given) if given is not None else _value(typ, wire, ctx, args, depth, salt)
    return out


def _noun(name: str) -> str:
    """``getAmi`` -> ``ami``, ``getSubnets`` -> ``subnet``, ``getSecurityGroup`` -> ``securitygroup``."""
    base = re.sub(r"^get", "", name)
    base = re.sub(r"(Ids|s)$", "", base) if base not in ("Ids",) else base
    return (base[:1].lower() + base[1:]).lower() if base else name.lower()


def derive_answer(token: str, args: Mapping[str, Any], region: str, account: str) -> dict[str, Any] | None:
    """A plausible answer to ``token`` shaped by its SDK result class, or ``None`` when no
    installed SDK has the function.

    Args:
        token: the invoke token, e.g. ``aws:ec2/getAmi:getAmi``.
        args: the invoke's arguments, by wire name (echoed where the result has the same name).
        region: region for AZs, ARNs and endpoints.
        account: account id for ARNs and owner ids.

    Returns:
        The result's wire names -> values (deterministic for the same token, args and region).
    """
    cls = result_class(token)
    if cls is None:
        return None
    _, mod, name = token.split(":", 2)
    service = mod.split("/")[0] if mod.split("/")[0] != "index" else "ec2"  # index: AZs, regions, IP ranges
    seed = token + json.dumps(args, sort_keys=True, default=lambda o: type(o).__name__)  # no addresses: deterministic
    noun = _noun(name)
    kind = re.sub(r"(-ids|s)$", "", _snake(re.sub(r"^get", "", name)).replace("_", "-"))  # getSecurityGroups -> security-group
    ctx = _Ctx(token=token, service=service, noun=noun, kind=kind, region=region, account=account, seed=seed)
    answer = _object(cls, ctx, args, 0)
    if name == "getPolicyDocument":
        doc = policy_document(args)
        answer["json"] = json.dumps(doc, indent=2)
        answer["minifiedJson"] = json.dumps(doc, separators=(",", ":"))
    if token.startswith("aws:ecr/"):
        _shape_ecr(answer, name, ctx, args)
    return answer


# --- ECR ---------------------------------------------------------------------------------------
# Container programs log in to and pull from ECR, and parse what they get: ``docker login`` takes the
# token decoded and split at ":" (pulumi/examples aws-py-voting-app:
# ``base64.b64decode(creds.authorization_token).decode().split(":")``). The generic strings above would
# not decode, and no docstring marks the property as base64 in every SDK version (pulumi-aws 7
# ``ecr/get_credentials.py`` has none), so these answers are shaped by hand, as the service answers:
# ECR API reference, GetAuthorizationToken / AuthorizationData
# (https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_AuthorizationData.html):
# ``authorizationToken`` "A base64-encoded string that contains authorization data for the specified
# Amazon ECR registry. When the string is decoded, it is presented in the format user:password";
# the user is ``AWS``; ``proxyEndpoint`` "The registry URL to use for this authorization token in a
# docker login command", ``https://<account>.dkr.ecr.<region>.amazonaws.com``; ``expiresAt`` 12 hours
# later. A repository's URI is ``<account>.dkr.ecr.<region>.amazonaws.com/<name>`` (pulumi-aws
# ``ecr/get_repository.py`` ``repository_url``), and terraform-provider-aws ``internal/service/ecr/
# image_data_source.go`` sets an image's id to its digest and ``image_uri`` to ``<repository URI>@<digest>``.

#: The user name inside every ECR authorization token (ECR API ``AuthorizationData``).
ECR_USER = "AWS"


def _shape_ecr(answer: dict[str, Any], name: str, ctx: _Ctx, args: Mapping[str, Any]) -> None:
    """Rewrite the ECR values of a derived answer as the service gives them (see the comment above)."""
    registry = str(args.get("registryId") or ctx.account)
    host = f"{registry}.dkr.ecr.{ctx.region}.amazonaws.com"
    if "registryId" in answer:
        answer["registryId"] = registry
    repo = args.get("repositoryName") or args.get("name")
    if "repositoryUrl" in answer and repo:
        answer["repositoryUrl"] = f"{host}/{repo}"
    if "authorizationToken" in answer:
        password = f"mock-ecr-password-{ctx.h('password', n=32)}"
        answer.update(
            authorizationToken=base64.b64encode(f"{ECR_USER}:{password}".encode()).decode(),
            proxyEndpoint=f"https://{host}",
            userName=ECR_USER,
            password=password,
        )
    if name == "getImage":
        digest = str(args.get("imageDigest") or f"sha256:{ctx.h('digest', n=64)}")
        answer.update(id=digest, imageDigest=digest, imageUri=f"{host}/{repo}@{digest}")
        if args.get("imageTag"):
            answer["imageTags"] = [args["imageTag"]]


def answer_invoke(args: pulumi.runtime.MockCallArgs, known: Mapping[str, Any] | None, *, region: str, account: str) -> dict[str, Any] | None:
    """The answer to an invoke: ``known`` (a hand-written answer) else :func:`derive_answer`,
    with the answers file's entry merged over it. ``None`` when there is neither."""
    token, call_args = args.token, dict(args.args or {})
    base = dict(known) if known is not None else derive_answer(token, call_args, region, account)
    user = user_answer(token, call_args)
    if user is not None:
        return _merge(base or {}, user)
    return base


# --- IAM policy documents ------------------------------------------------------------------
# As terraform-provider-aws (which pulumi-aws wraps) renders ``aws_iam_policy_document``:
# internal/service/iam/iam_policy_model.go: ``Sid`` always written (``"Sid": ""``), a one-element
# list written as the bare string and longer lists sorted in reverse (``iamPolicyDecodeConfigStringList``),
# ``{"*": ["*"]}`` principals written as ``"*"``, condition values in their order, statements with
# the same ``Sid`` replaced on merge (``IAMPolicyDoc.Merge``), JSON indented by two spaces.


def _one_or_list(values: Sequence[Any], keep_order: bool = False) -> Any:
    values = list(values)
    if len(values) == 1:
        return values[0]
    return values if keep_order else sorted(values, reverse=True)


def _statement(s: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"Sid": s.get("sid") or "", "Effect": s.get("effect") or "Allow"}
    for key, wire in (("Action", "actions"), ("NotAction", "notActions"), ("Resource", "resources"), ("NotResource", "notResources")):
        if s.get(wire):
            out[key] = _one_or_list(s[wire])
    for key, wire in (("Principal", "principals"), ("NotPrincipal", "notPrincipals")):
        if s.get(wire):
            principals: dict[str, list[Any]] = {}
            for p in s[wire]:
                principals.setdefault(p.get("type"), []).extend(sorted(p.get("identifiers") or [], reverse=True))
            if set(principals) == {"*"} and principals["*"] == ["*"]:
                out[key] = "*"
            else:
                out[key] = {t: ids[0] if len(ids) == 1 else ids for t, ids in sorted(principals.items())}
    if s.get("conditions"):
        cond: dict[str, dict[str, Any]] = {}
        for c in s["conditions"]:
            cond.setdefault(c.get("test"), {})[c.get("variable")] = _one_or_list(c.get("values") or [], keep_order=True)
        out["Condition"] = cond
    return out


def policy_document(args: Mapping[str, Any]) -> dict[str, Any]:
    """The IAM policy document ``aws.iam.get_policy_document`` renders from its arguments:
    ``sourcePolicyDocuments`` statements, then ``statements`` (a same-``sid`` one replaces the
    source's), then ``overridePolicyDocuments`` (replacing by ``sid``).

    Raises:
        ValueError: a source/override document is not valid JSON.
    """
    statements: list[dict[str, Any]] = []

    def put(st: dict[str, Any]) -> None:
        sid = st.get("Sid")
        for i, old in enumerate(statements):
            if sid and old.get("Sid") == sid:
                statements[i] = st
                return
        statements.append(st)

    for text in [args.get("sourceJson")] + list(args.get("sourcePolicyDocuments") or []):
        if text:
            for st in json.loads(text).get("Statement", []):
                put(st if isinstance(st, dict) else {})
    for s in args.get("statements") or []:
        put(_statement(s))
    for text in [args.get("overrideJson")] + list(args.get("overridePolicyDocuments") or []):
        if text:
            for st in json.loads(text).get("Statement", []):
                put(st if isinstance(st, dict) else {})
    doc: dict[str, Any] = {"Version": args.get("version") or "2012-10-17"}
    if args.get("policyId"):
        doc["Id"] = args["policyId"]
    doc["Statement"] = statements
    return doc


# --- component methods (Call) -----------------------------------------------------------------
# A method of a (remote) component is a ``Call``: ``eks:index:Cluster/getKubeconfig`` is pulumi_eks
# ``Cluster.get_kubeconfig``, which calls ``pulumi.runtime.call(token, {"__self__": self, ...},
# res=self, typ=Cluster.GetKubeconfigResult)``: Pulumi's Python codegen nests the result class in the
# resource class as ``<Method>Result`` (as in pulumi_aws 7.51.1 ``provider.py``: ``Provider.terraform_config``
# calls ``pulumi:providers:aws/terraformConfig`` with ``typ=Provider.TerraformConfigResult``); a
# method with no result calls without ``typ``. The engine hands the
# call to the component's provider (pulumi/pulumi ``pkg/resource/deploy/source_eval.go``
# ``resmon.Call``, which passes ``DryRun`` in ``CallInfo``); offline the answer is derived from that
# result class as an invoke's is from its function's.


def is_method_token(token: str) -> bool:
    """Whether ``token`` names a component method (``<pkg>:<module>:<Type>/<method>``), not a function."""
    parts = token.split(":", 2)
    return len(parts) == 3 and "/" in parts[2]


def _resource_classes(cls: type) -> Iterator[type]:
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        yield sub
        yield from _resource_classes(sub)


def method_result_class(token: str) -> tuple[bool, type | None]:
    """The result class of the component method ``token`` names.

    The resource class is the one an installed SDK registered for ``<pkg>:<module>:<Type>``
    (:func:`hybridgpu.shell.outputs.sdk_class`), else any loaded ``pulumi.Resource`` subclass named
    ``<Type>`` that has the method (a component defined in the program itself). Not cached: a program's
    own classes are new objects in every run.

    Returns:
        ``(found, result class)``: ``(True, None)`` for a method with no result class (it returns
        nothing); ``(False, None)`` when no loaded class has the method.
    """
    if not is_method_token(token):
        return False, None
    pkg, mod, member = token.split(":", 2)
    type_name, method = member.split("/", 1)
    if (pkg, mod) == ("pulumi", "providers"):
        # A provider's own method (pulumi_aws ``Provider.terraform_config``: ``pulumi:providers:aws/terraformConfig``).
        try:
            registered = getattr(importlib.import_module(f"pulumi_{type_name.replace('-', '_')}"), "Provider", None)
        except ImportError:
            registered = None
        type_name = "Provider"
    else:
        registered = sdk_class(f"{pkg}:{mod}:{type_name}")
    candidates = [registered] if registered is not None else []
    candidates += sorted(
        {c for c in _resource_classes(pulumi.Resource) if c.__name__ == type_name and c is not registered},
        key=lambda c: f"{c.__module__}.{c.__qualname__}",
    )
    wanted = method.replace("_", "").lower()
    result_name = (method[:1].upper() + method[1:] + "Result").lower()
    for cls in candidates:
        if not any(a.replace("_", "").lower() == wanted and callable(getattr(cls, a, None)) for a in vars(cls)):
            continue
        result = next((getattr(cls, a) for a in vars(cls) if a.lower() == result_name), None)
        return True, result if isinstance(result, type) and pulumi_types.is_output_type(result) else None
    return False, None


def answer_call(token: str, args: Mapping[str, Any], *, region: str, account: str) -> dict[str, Any] | None:
    """The answer to a component method call: derived from its result class (:func:`method_result_class`;
    ``{}`` for a method with no result) with the answers file's entry for ``token`` merged over it.

    Args:
        token: the method token, e.g. ``eks:index:Cluster/getKubeconfig``.
        args: the call's arguments by wire name (``__self__`` is the component's URN).
        region, account: as for :func:`derive_answer`.

    Returns:
        The result's wire names -> values, or ``None`` when no loaded class has the method and the
        answers file has no entry for it.
    """
    call_args = {k: v for k, v in args.items() if k != "__self__"}
    found, cls = method_result_class(token)
    base: dict[str, Any] | None = None
    if found:
        base = {}
        if cls is not None:
            pkg, mod, member = token.split(":", 2)
            type_name, method = member.split("/", 1)
            seed = token + str(args.get("__self__") or "") + json.dumps(call_args, sort_keys=True, default=lambda o: type(o).__name__)
            service = pkg if mod == "index" else mod.split("/")[0]
            ctx = _Ctx(token=token, service=service, noun=_noun(method), kind=_snake(type_name).replace("_", "-"), region=region, account=account, seed=seed)
            base = _object(cls, ctx, call_args, 0)
    user = user_answer(token, call_args)
    if user is not None:
        return _merge(base or {}, user)
    return base
