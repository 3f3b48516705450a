"""Shared dataset storage components: FSx for Lustre on AWS, and the CSI driver + training claims on a cluster.

Creates (specs from :mod:`hybridgpu.render.storage`):

* :class:`FsxLustre` (``hybridgpu:cloud:FsxLustre``, only when ``hybridgpu:cloud.storage`` is set):
  a security group in the cluster's VPC with the Lustre rules (TCP 988 and 1018-1023 among the
  file servers and with the nodes, both ways), the ingress rules on the EKS cluster security
  group from the file servers, a ``PERSISTENT_2`` SSD ``aws.fsx.LustreFileSystem`` in one
  private subnet, and optionally an ``aws.fsx.DataRepositoryAssociation`` with an S3 prefix;
* :class:`TrainingData` (``hybridgpu:storage:TrainingData``, on EKS for FSx and on-prem for the
  inventory's NFS storage): the CSI driver's Helm release (pinned chart), the training
  namespaces no burst queue creates, the ``training-data`` StorageClass, and per namespace a
  static PersistentVolume pre-bound to the ``training-data`` claim.
"""

from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from hybridgpu.burst.kueue import namespace_manifest
from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import FsxLustreConfigArgs, VolumeSourceArgs
from hybridgpu.config.storage import FSX_LUSTRE_PERSISTENT_2, FsxLustreConfig
import hybridgpu.render.storage as storage_render
from hybridgpu.render.storage import CSI_NAMESPACE, fsx_security_group_rules, storage_manifests


class FsxLustreArgs(TypedDict):
    """Inputs of :class:`FsxLustre`."""

    fsx_lustre: FsxLustreConfigArgs
    """The ``hybridgpu:cloud.storage.fsxLustre`` section: capacity, throughput, backups, S3 data repository."""
    vpc_id: pulumi.Input[str]
    """The cluster's VPC."""
    subnet_id: pulumi.Input[str]
    """The private subnet the file system lives in (one subnet; its zone is the file system's)."""
    node_security_group_id: pulumi.Input[str]
    """The EKS cluster security group every node is in."""


class FsxLustre(pulumi.ComponentResource):
    """An FSx for Lustre file system that the cluster's nodes can mount (``hybridgpu:index:FsxLustre``).

    Args:
        name: logical name prefix of the children.
        args: :class:`FsxLustreArgs`.
        opts: resource options (pass the AWS provider through ``providers``).

    Attributes:
        file_system_id, dns_name, mount_name, security_group_id: ``Output[str]``.
    """

    file_system_id: pulumi.Output[str]
    """File system id (the PVs' ``volumeHandle``)."""
    dns_name: pulumi.Output[str]
    """DNS name of the file system."""
    mount_name: pulumi.Output[str]
    """Lustre mount name."""
    security_group_id: pulumi.Output[str]
    """The file system's security group."""

    def __init__(self, name: str, args: FsxLustreArgs, opts: pulumi.ResourceOptions | None = None):
        config = section(FsxLustreConfig, args["fsx_lustre"], component="FsxLustre", name=name, field="fsxLustre")
        vpc_id, subnet_id, node_security_group_id = args["vpc_id"], args["subnet_id"], args["node_security_group_id"]
        own, _ = component_options("hybridgpu:cloud:FsxLustre", opts)
        super().__init__(type_token("FsxLustre"), name, None, own)
        child = pulumi.ResourceOptions(parent=self)
        group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=vpc_id,
            description="FSx for Lustre: Lustre TCP 988 and 1018-1023 with the cluster's nodes",
            tags={"Name": f"{name}-fsx"},
            opts=child,
        )
        groups = {"fsx": group.id, "nodes": node_security_group_id}
        rules: list[pulumi.Resource] = []
        for rule in fsx_security_group_rules():
            kind = aws.vpc.SecurityGroupIngressRule if rule.direction == "ingress" else aws.vpc.SecurityGroupEgressRule
            rules.append(
                kind(
                    f"{name}-{rule.role}",
                    security_group_id=groups[rule.group],
                    referenced_security_group_id=groups[rule.peer],
                    ip_protocol="tcp",
                    from_port=rule.from_port,
                    to_port=rule.to_port,
                    description=rule.description,
                    opts=child,
                )
            )
        fs = aws.fsx.LustreFileSystem(
            f"{name}-fs",
            deployment_type=FSX_LUSTRE_PERSISTENT_2.deployment_type,
            storage_type="SSD",
            storage_capacity=config.storage_capacity_gib,
            per_unit_storage_throughput=config.per_unit_storage_throughput,
            subnet_ids=subnet_id,
            security_group_ids=[group.id],
            data_compression_type=config.data_compression_type,
            kms_key_id=config.kms_key_id,
            automatic_backup_retention_days=config.automatic_backup_retention_days,
            tags={"Name": f"{name}-fsx"},
            # The rules first: the file servers must reach each other while the file system is created.
            opts=pulumi.ResourceOptions(parent=self, depends_on=rules),
        )
        repo = config.data_repository
        if repo is not None:
            aws.fsx.DataRepositoryAssociation(
                f"{name}-s3",
                file_system_id=fs.id,
                data_repository_path=repo.data_repository_path,
                file_system_path=repo.file_system_path,
                batch_import_meta_data_on_create=repo.import_metadata_on_create,
                s3=aws.fsx.DataRepositoryAssociationS3Args(
                    auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(events=list(repo.auto_import_events))
                    if repo.auto_import_events
                    else None,
                    auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=list(repo.auto_export_events))
                    if repo.auto_export_events
                    else None,
                ),
                opts=child,
            )
        self.file_system_id = fs.id
        self.dns_name = fs.dns_name
        self.mount_name = fs.mount_name
        self.security_group_id = group.id
        self.register_outputs(
            {"file_system_id": self.file_system_id, "dns_name": self.dns_name, "mount_name": self.mount_name, "security_group_id": self.security_group_id}
        )


class TrainingDataArgs(TypedDict):
    """Inputs of :class:`TrainingData`."""

    chart: str
    """The CSI driver's Helm chart (``aws-fsx-csi-driver``, ``csi-driver-nfs``)."""
    repo: str
    """The chart's repository URL."""
    version: str
    """The chart version (pinned)."""
    values: NotRequired[dict[str, Any]]
    """The release's values (free-form chart values, hence untyped; ``hybridgpu.render.storage.fsx_csi_values`` / ``nfs_csi_values``). Default: none."""
    source: VolumeSourceArgs
    """The file system the PVs point at (``hybridgpu.render.storage.fsx_volume`` / ``nfs_volume``)."""
    namespaces: list[str]
    """The training namespaces that get the ``training-data`` claim."""
    create_namespaces: NotRequired[list[str]]
    """Those of ``namespaces`` this component creates (the others must exist or come from a component in ``dependsOn``). Default: none."""
    capacity_gib: int
    """Capacity written on PVs and claims, GiB."""
    pv_prefix: str
    """Prefix of the (cluster-scoped) PV names, e.g. the cluster or site name."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class TrainingData(pulumi.ComponentResource):
    """The CSI driver of a shared file system and the ``training-data`` claims of the training namespaces (``hybridgpu:index:TrainingData``).

    Args:
        name: logical name prefix of the children.
        args: :class:`TrainingDataArgs`.
        opts: resource options. ``depends_on``: what the release and the claims in namespaces this
            component does not create wait for (the CNI or Karpenter; the KueueCluster that creates
            the burst queues' namespaces).

    Attributes:
        release: the CSI driver's Helm release.
    """

    def __init__(self, name: str, args: TrainingDataArgs, opts: pulumi.ResourceOptions | None = None):
        source = section(storage_render.VolumeSource, args["source"], component="TrainingData", name=name, field="source")
        chart, repo, version, values = args["chart"], args["repo"], args["version"], args.get("values") or {}
        capacity_gib, pv_prefix, provider = args["capacity_gib"], args["pv_prefix"], args["provider"]
        claim_namespaces, create = tuple(args["namespaces"]), tuple(args.get("create_namespaces") or ())
        own, depends_on = component_options("hybridgpu:storage:TrainingData", opts)
        super().__init__(type_token("TrainingData"), name, None, own)
        self.release = k8s.helm.v3.Release(
            f"{name}-csi",
            name=chart,
            chart=chart,
            version=version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo),
            namespace=CSI_NAMESPACE,
            values=values,
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or [])),
        )
        created: dict[str, k8s.core.v1.Namespace] = {}
        for ns in create:
            created[ns] = k8s.core.v1.Namespace(
                f"{name}-namespace-{ns}", metadata=namespace_manifest(ns)["metadata"], opts=pulumi.ResourceOptions(parent=self, provider=provider)
            )
        owner = list(depends_on)
        volumes: dict[str, k8s.core.v1.PersistentVolume] = {}
        for doc in storage_manifests(pv_prefix, source, claim_namespaces, capacity_gib):
            kind, meta = doc["kind"], doc["metadata"]
            if kind == "StorageClass":
                k8s.storage.v1.StorageClass(
                    f"{name}-storageclass",
                    metadata=meta,
                    provisioner=doc["provisioner"],
                    reclaim_policy=doc["reclaimPolicy"],
                    volume_binding_mode=doc["volumeBindingMode"],
                    opts=pulumi.ResourceOptions(parent=self, provider=provider),
                )
            elif kind == "PersistentVolume":
                ns = doc["spec"]["claimRef"]["namespace"]
                volumes[ns] = k8s.core.v1.PersistentVolume(
                    f"{name}-pv-{ns}", metadata=meta, spec=doc["spec"], opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.release])
                )
            else:
                ns = meta["namespace"]
                deps: list[pulumi.Resource] = [volumes[ns], *([created[ns]] if ns in created else owner)]
                k8s.core.v1.PersistentVolumeClaim(
                    f"{name}-pvc-{ns}", metadata=meta, spec=doc["spec"], opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=deps)
                )
        self.register_outputs({"release": self.release.name})
