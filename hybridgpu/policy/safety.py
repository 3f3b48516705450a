"""Policies of the ``safety`` group: unsafe settings (pure validators and their settings).

:func:`imdsv2_required`, :func:`encrypted_volumes`, :func:`eks_endpoint_private`,
:func:`ami_alias_pinned`, :func:`kubeadm_ca_verification`, :func:`multikueue_kubeconfig`
(``efa-workload-requests`` is :mod:`hybridgpu.policy.efa`).

Each validator takes a :class:`~hybridgpu.policy.base.PolicyResource` (or the stack's resources)
and its settings, and yields messages that name the resource and say how to fix it (never
quoting secrets); :data:`hybridgpu.policy.registry.POLICIES` lists them with their names and enforcement.
"""

from __future__ import annotations

import base64
import fnmatch
import ipaddress
import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from hybridgpu.burst.kueue import kubeconfig_problems
from hybridgpu.k8s import KUEUE_API, KUEUE_GROUP
from hybridgpu.policy import capacity as cap_mod
from hybridgpu.policy.base import (
    CONFIGMAP,
    EC2NODECLASS_TYPES,
    ONPREM_HOST_TYPES,
    SECRET,
    Findings,
    PolicyResource,
    PolicySettings,
    StackFindings,
    as_list,
    dig,
    fix_for,
    known,
    names,
    walk_known_strings,
)


def imdsv2_required(res: PolicyResource, cfg: PolicySettings) -> Findings:
    """Instances require IMDSv2 session tokens (``httpTokens: required``): launch templates, EC2
    instances and spot instance requests must say so (EC2's default is ``optional``: EC2 API reference,
    InstanceMetadataOptions, read 2026-11-22); an EC2NodeClass may omit it (Karpenter defaults
    it to ``required``: EC2NodeClass ``MetadataOptions`` of the Karpenter v1 CRD, as packaged in
    @kubernetes-models/karpenter 2.0.0) but must not set anything else."""
    if res.type in (cap_mod.LAUNCH_TEMPLATE, cap_mod.INSTANCE, cap_mod.SPOT_INSTANCE):
        tokens = dig(res.props, "metadataOptions", "httpTokens")
        if tokens != "required":
            said = "does not set metadataOptions.httpTokens" if tokens is None else f"has metadataOptions.httpTokens {tokens!r}"
            yield (
                f"{res.label} {said}: IMDSv1 lets any process or SSRF read the "
                "instance role's credentials. Fix: set metadataOptions.httpTokens to \"required\"."
            )
    elif res.type in EC2NODECLASS_TYPES:
        tokens = dig(res.props, "spec", "metadataOptions", "httpTokens")
        if tokens is not None and tokens != "required":
            yield f"{res.label} sets spec.metadataOptions.httpTokens {tokens!r}. Fix: set it to \"required\" (IMDSv2)."


def _encrypted(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def encrypted_volumes(res: PolicyResource, cfg: PolicySettings) -> Findings:
    """EBS volumes are encrypted: launch template and EC2NodeClass block device mappings, EC2
    instance and spot instance request root and EBS devices, standalone EBS volumes; node groups use a launch template
    (otherwise their disks follow the account default)."""
    fix = "Fix: set encrypted: true on it."
    if res.type == "aws:ec2/launchTemplate:LaunchTemplate":
        for i, m in enumerate(as_list(res.props.get("blockDeviceMappings"))):
            if dig(m, "ebs") is not None and not _encrypted(dig(m, "ebs", "encrypted")):
                yield f"{res.label} blockDeviceMappings[{i}] ({dig(m, 'deviceName')}) is not encrypted. {fix}"
    elif res.type in EC2NODECLASS_TYPES:
        for i, m in enumerate(as_list(dig(res.props, "spec", "blockDeviceMappings"))):
            if not _encrypted(dig(m, "ebs", "encrypted")):
                yield f"{res.label} spec.blockDeviceMappings[{i}] ({dig(m, 'deviceName')}) is not encrypted. {fix}"
    elif res.type in (cap_mod.INSTANCE, cap_mod.SPOT_INSTANCE):  # a spot request takes an instance's arguments (pulumi-aws 7.51.1 ec2/spot_instance_request.py)
        if not _encrypted(dig(res.props, "rootBlockDevice", "encrypted")):
            yield f"{res.label} rootBlockDevice is not encrypted. Fix: set rootBlockDevice.encrypted: true."
        for i, d in enumerate(as_list(res.props.get("ebsBlockDevices"))):
            if not _encrypted(dig(d, "encrypted")):
                yield f"{res.label} ebsBlockDevices[{i}] is not encrypted. {fix}"
    elif res.type == "aws:ebs/volume:Volume":
        if not _encrypted(res.props.get("encrypted")):
            yield f"{res.label} is not encrypted. Fix: set encrypted: true (and a kmsKeyId)."
    elif res.type == "aws:eks/nodeGroup:NodeGroup" and not res.props.get("launchTemplate"):
        yield (
            f"{res.label} has no launch template, so its root volumes follow the account's default encryption. "
            "Fix: give it a launch template with encrypted block devices."
        )


_OPEN = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))


def eks_endpoint_private(res: PolicyResource, cfg: PolicySettings) -> Findings:
    """An EKS API endpoint is private, or public only to listed CIDRs.

    EKS defaults ``endpointPublicAccess`` to true and ``publicAccessCidrs`` to ``0.0.0.0/0``
    (Amazon EKS API reference, VpcConfigRequest; EKS User Guide, "Cluster API server endpoint";
    read 2026-11-22), so an unset field counts as open.
    """
    if res.type != "aws:eks/cluster:Cluster":
        return
    vpc = res.props.get("vpcConfig") or {}
    public = vpc.get("endpointPublicAccess", True)
    if public is False or (isinstance(public, str) and public.lower() == "false"):
        return
    cidrs = [str(c) for c in as_list(vpc.get("publicAccessCidrs"))]
    open_cidrs = []
    for c in cidrs:
        try:
            if ipaddress.ip_network(c, strict=False) in _OPEN:
                open_cidrs.append(c)
        except ValueError:
            open_cidrs.append(c)
    if not cidrs or open_cidrs:
        yield (
            f"{res.label} has a public API endpoint open to {names(open_cidrs) if open_cidrs else '0.0.0.0/0 (EKS default)'}. "
            "Fix: set vpcConfig.endpointPublicAccess to false (hybridgpu's default), or list narrow publicAccessCidrs."
        )


class AmiSettings(PolicySettings):
    """Settings of ``ami-alias-pinned``."""

    production_stacks: list[str] = Field(
        default_factory=lambda: ["prod", "prod-*", "*-prod", "production*"],
        description="Stack-name globs treated as production. Default: prod, prod-*, *-prod, production*.",
    )


def ami_alias_pinned(res: PolicyResource, cfg: AmiSettings) -> Findings:
    """Production EC2NodeClasses pin their AMI (``al2023@v20261112``), never ``@latest``: a new AMI
    would roll every GPU node through drift replacement without review."""
    if res.type not in EC2NODECLASS_TYPES or not any(fnmatch.fnmatchcase(res.stack, p) for p in cfg.production_stacks):
        return
    for i, term in enumerate(as_list(dig(res.props, "spec", "amiSelectorTerms"))):
        alias = dig(term, "alias")
        if isinstance(alias, str) and alias.endswith("@latest"):
            yield (
                f"{res.label} in production stack {res.stack} selects the floating AMI alias {alias} "
                f"(amiSelectorTerms[{i}]). Fix: pin a version, e.g. {alias.split('@')[0]}@v20261112."
            )


#: EC2 resources whose user data may run ``kubeadm join``: ``userData`` (plain on instances,
#: base64 on launch templates: pulumi-aws 7.51.1 ``ec2/launch_template.py`` user_data "The
#: base64-encoded user data") and ``userDataBase64``.
_USER_DATA_TYPES = (cap_mod.INSTANCE, cap_mod.SPOT_INSTANCE, cap_mod.LAUNCH_TEMPLATE, cap_mod.LAUNCH_CONFIGURATION)


def _user_data_texts(text: str) -> list[str]:
    """The user data as given and, when it is base64 of UTF-8 text, decoded (gzip is not read)."""
    out = [text]
    try:
        out.append(base64.b64decode(text.strip(), validate=True).decode())
    except (ValueError, UnicodeDecodeError):
        pass
    return out


_SKIP_CA = re.compile(r"unsafeSkipCAVerification\"?\s*:\s*\"?true|discovery-token-unsafe-skip-ca-verification", re.I)


def kubeadm_ca_verification(res: PolicyResource, cfg: PolicySettings) -> Findings:
    """No kubeadm join skips CA verification (``unsafeSkipCAVerification: true`` or
    ``--discovery-token-unsafe-skip-ca-verification``): a joining node would trust any API server.

    Reads the non-secret kubeadm config each on-prem host records (``kubeadmConfig`` of
    ``hybridgpu:onprem:Host``; fails closed when unknown), and the known strings of
    remote/local commands and ConfigMaps (best effort: unknown parts, such as stdin computed
    from the join token, are skipped). The message never quotes the text (it may hold secrets).
    """
    if res.type in ONPREM_HOST_TYPES:
        texts = [res.props.get("kubeadmConfig") or ""]
    elif res.type in _USER_DATA_TYPES:
        texts = []
        for key in ("userData", "userDataBase64"):
            value = known(res.props, key)
            if isinstance(value, str):
                texts += _user_data_texts(value)
    elif res.type.startswith("command:") or res.type == CONFIGMAP:
        # Best effort: command stdin usually holds computed secrets (the join token), unknown
        # during a first preview; the Host record above is the check that must see its value.
        texts = list(walk_known_strings(res.props))
    else:
        return
    if any(_SKIP_CA.search(t) for t in texts if isinstance(t, str)):
        yield (
            f"{res.label} joins a node with kubeadm CA verification switched off. Fix: remove "
            "unsafeSkipCAVerification / --discovery-token-unsafe-skip-ca-verification and pass caCertHashes "
            + fix_for(res, "(hybridgpu computes the hash from the first control plane).",
                      "(--discovery-token-ca-cert-hash sha256:<hash>, as `kubeadm token create --print-join-command` prints it).")
        )



class MultiKueueSettings(PolicySettings):
    """Settings of ``multikueue-kubeconfig``."""

    kueue_namespace: str = Field(default="kueue-system", description="Namespace of Kueue's manager (where worker kubeconfig Secrets live). Default: kueue-system.")


_MKC_TYPES = (f"kubernetes:{KUEUE_API}:MultiKueueCluster", f"kubernetes:{KUEUE_GROUP}/v1beta1:MultiKueueCluster")


def _kubeconfig_text(secret: PolicyResource) -> str | None:
    text = dig(secret.props, "stringData", "kubeconfig")
    if isinstance(text, str):
        return text
    data = dig(secret.props, "data", "kubeconfig")
    if isinstance(data, str):
        try:
            return base64.b64decode(data, validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            return None
    return None


def multikueue_kubeconfig(resources: Sequence[PolicyResource], cfg: MultiKueueSettings) -> StackFindings:
    """Every MultiKueueCluster's kubeconfig Secret is in this stack and holds an exec-free
    kubeconfig with an inline token and CA data (what the MultiKueue manager accepts). Messages
    never quote the kubeconfig."""
    secrets = {
        (dig(r.props, "metadata", "namespace") or "default", dig(r.props, "metadata", "name")): r
        for r in resources
        if r.type == SECRET
    }
    for res in resources:
        if res.type not in _MKC_TYPES or cfg.exempt(res):
            continue
        source = dig(res.props, "spec", "clusterSource", "kubeConfig") or dig(res.props, "spec", "kubeConfig") or {}
        location, kind = source.get("location"), source.get("locationType", "Secret")
        if kind != "Secret":
            yield res, f"{res.label} reads its kubeconfig from a {kind}. Fix: use locationType Secret (hybridgpu builds it)."
            continue
        secret = secrets.get((cfg.kueue_namespace, location))
        if secret is None:
            yield res, (
                f"{res.label} uses Secret {cfg.kueue_namespace}/{location}, which this stack does not manage, so its "
                "kubeconfig cannot be checked. "
                + fix_for(res, "Fix: let hybridgpu create it (burst config), or waive with a reason.",
                          "Fix: manage the Secret in this stack, or waive with a reason.")
            )
            continue
        text = _kubeconfig_text(secret)
        if text is None:
            yield secret, f"{secret.label} has no readable `kubeconfig` key. Fix: store the worker kubeconfig under data.kubeconfig."
            continue
        problems = kubeconfig_problems(text)
        if problems:
            yield secret, (
                f"{secret.label} (kubeconfig of {res.label}) would be refused by MultiKueue or is unsafe: "
                f"{'; '.join(problems)}. Fix: use a service-account token and inline CA data (no exec plugins, "
                "files or insecure TLS)."
            )
