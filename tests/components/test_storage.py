"""Shared dataset storage as the program registers it (offline preview under Pulumi's mocks).

* FSx for Lustre, its security group and the Lustre rules exist only when ``hybridgpu:cloud.storage``
  is declared (prod), never in dev; the file system is PERSISTENT_2 SSD in the chosen zone's private
  subnet and waits for its rules; the node rules reference the EKS cluster security group (every node's).
* The S3 data repository association links the file system to the declared prefix.
* The CSI driver per side: aws-fsx-csi-driver on EKS (pinned 1.17.0, region set), csi-driver-nfs on-prem
  (pinned 4.13.4); the PV of every training namespace points at the file system's id and DNS name (FSx)
  or the inventory's NFS endpoint; one ``training-data`` claim per namespace, after its namespace exists.
"""

from __future__ import annotations

from hybridgpu.config.storage import FSX_CSI_CHART_VERSION, NFS_CSI_CHART_VERSION
from hybridgpu.k8s import TRAINING_DATA_CLAIM
from hybridgpu.shell.preview import run_preview
from tests.helpers import one_record
from tests.helpers.scratch import example_stack, write_stack

FSX_TYPES = (
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
)


def _releases(result) -> dict[str, dict]:
    return {r.inputs["name"]: r.inputs for r in result.of_type("kubernetes:helm.sh/v3:Release")}


def test_dev_declares_no_storage_and_gets_none(previews):
    dev = previews["dev"]
    for typ in FSX_TYPES:
        assert dev.of_type(typ) == [], typ
    assert [r.name for r in dev.of_type("aws:ec2/securityGroup:SecurityGroup") if "-fsx-" in r.name] == []
    assert [r for r in dev.records if r.type == "hybridgpu:index:TrainingData"] == []
    assert not {"aws-fsx-csi-driver", "csi-driver-nfs"} & set(_releases(dev))
    assert dev.of_type("kubernetes:core/v1:PersistentVolumeClaim") == []
    # No Lustre port on any security group.
    rules = [*dev.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"), *dev.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")]
    assert [r.name for r in rules if r.inputs.get("fromPort") in (988, 1018)] == []


def test_prod_file_system_is_persistent_2_sized_as_declared(previews):
    fs = one_record(previews["prod"], "aws:fsx/lustreFileSystem:LustreFileSystem")
    assert (fs.inputs["deploymentType"], fs.inputs["storageType"]) == ("PERSISTENT_2", "SSD")
    assert (fs.inputs["storageCapacity"], fs.inputs["perUnitStorageThroughput"]) == (40800, 1000)
    assert fs.inputs["dataCompressionType"] == "LZ4"
    cluster = one_record(previews["prod"], "aws:eks/cluster:Cluster")
    # us-east-1a is the first zone: the first private subnet the control plane uses too.
    assert fs.inputs["subnetIds"] == cluster.inputs["vpcConfig"]["subnetIds"][0]


def test_prod_lustre_rules_reference_the_fsx_and_node_groups(previews):
    prod = previews["prod"]
    node_sg = one_record(prod, "aws:ec2/tag:Tag", "cluster-sg-discovery").inputs["resourceId"]
    mine = "hybridgpu:index:FsxLustre$"  # other components (EFA) add rules of their own
    ingress = [r for r in prod.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule") if mine in r.urn]
    egress = [r for r in prod.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule") if mine in r.urn]
    assert len(ingress) == 6 and len(egress) == 4
    for rule in [*ingress, *egress]:
        assert rule.inputs["ipProtocol"] == "tcp"
        assert (rule.inputs["fromPort"], rule.inputs["toPort"]) in {(988, 988), (1018, 1023)}
    on_nodes = [r for r in ingress if r.inputs["securityGroupId"] == node_sg]
    assert len(on_nodes) == 2 and all(r.inputs["referencedSecurityGroupId"] != node_sg for r in on_nodes)
    fsx_sg = on_nodes[0].inputs["referencedSecurityGroupId"]
    assert {r.inputs["referencedSecurityGroupId"] for r in ingress if r.inputs["securityGroupId"] == fsx_sg} == {fsx_sg, node_sg}
    assert {r.inputs["referencedSecurityGroupId"] for r in egress} == {fsx_sg, node_sg}
    fs = one_record(prod, "aws:fsx/lustreFileSystem:LustreFileSystem")
    assert fs.inputs["securityGroupIds"] == [fsx_sg]
    assert {r.urn for r in [*ingress, *egress] if r.inputs["securityGroupId"] == fsx_sg} <= set(fs.dependencies)


def test_prod_s3_association(previews):
    dra = one_record(previews["prod"], "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
    assert dra.inputs["dataRepositoryPath"] == "s3://acme-llm-datasets/pretraining/"
    assert dra.inputs["fileSystemPath"] == "/datasets"
    assert dra.inputs["s3"]["autoImportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
    assert "autoExportPolicy" not in dra.inputs["s3"]
    assert dra.inputs["fileSystemId"].startswith("fs-")


def test_prod_csi_driver_and_claims(previews):
    prod = previews["prod"]
    release = _releases(prod)["aws-fsx-csi-driver"]
    assert (release["chart"], release["version"], release["namespace"]) == ("aws-fsx-csi-driver", FSX_CSI_CHART_VERSION, "kube-system")
    assert release["repositoryOpts"]["repo"] == "https://kubernetes-sigs.github.io/aws-fsx-csi-driver"
    assert release["values"]["controller"]["region"] == "us-east-1"
    assert "csi-driver-nfs" not in _releases(prod)
    fs_id = one_record(prod, "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation").inputs["fileSystemId"]
    pv = one_record(prod, "kubernetes:core/v1:PersistentVolume").inputs["spec"]["csi"]
    assert pv["volumeHandle"] == fs_id
    assert pv["volumeAttributes"]["dnsname"] == f"{fs_id}.fsx.us-east-1.amazonaws.com"
    # The EKS side of the burst plan: only the queues that may burst (ml-research) run there.
    claims = prod.of_type("kubernetes:core/v1:PersistentVolumeClaim")
    assert [(c.inputs["metadata"]["namespace"], c.inputs["metadata"]["name"]) for c in claims] == [("ml-research", TRAINING_DATA_CLAIM)]
    # Its namespace comes from the burst queues (a dependency on the Kueue component waits for its children).
    namespace = one_record(prod, "kubernetes:core/v1:Namespace", "prod-burst-namespace-ml-research")
    assert namespace.urn in claims[0].dependencies


def test_onprem_nfs_driver_and_a_claim_per_queue_namespace(previews):
    onprem = previews["onprem"]
    for typ in FSX_TYPES:
        assert onprem.of_type(typ) == [], typ
    release = _releases(onprem)["csi-driver-nfs"]
    assert (release["version"], release["namespace"]) == (NFS_CSI_CHART_VERSION, "kube-system")
    claims = sorted(c.inputs["metadata"]["namespace"] for c in onprem.of_type("kubernetes:core/v1:PersistentVolumeClaim"))
    assert claims == ["ml-platform", "ml-research"]
    for pv in onprem.of_type("kubernetes:core/v1:PersistentVolume"):
        attrs = pv.inputs["spec"]["csi"]["volumeAttributes"]
        assert attrs == {"server": "datasets.site-a.example.internal", "share": "/exports/datasets"}


def test_zone_picks_its_private_subnet_and_declared_namespace_is_created(project):
    doc = example_stack("dev")
    doc["config"]["hybridgpu:cloud"]["storage"] = {
        "fsxLustre": {"storageCapacityGib": 2400, "perUnitStorageThroughput": 500, "availabilityZone": doc["config"]["hybridgpu:cloud"]["network"]["new"]["availabilityZones"][1]},
        "target": {"readGBps": 1.2},
        "namespaces": ["datasets"],
    }
    write_stack(project, "fsx", doc)
    result = run_preview("fsx", project)
    fs = one_record(result, "aws:fsx/lustreFileSystem:LustreFileSystem")
    assert fs.inputs["subnetIds"] == one_record(result, "aws:eks/cluster:Cluster").inputs["vpcConfig"]["subnetIds"][1]
    assert result.of_type("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation") == []
    namespace = one_record(result, "kubernetes:core/v1:Namespace", "namespace-datasets")
    claim = one_record(result, "kubernetes:core/v1:PersistentVolumeClaim")
    assert claim.inputs["metadata"]["namespace"] == "datasets" and namespace.urn in claim.dependencies


def test_existing_vpc_takes_the_declared_subnet(project):
    doc = example_stack("dev")
    cloud = doc["config"]["hybridgpu:cloud"]
    cloud["network"] = {"existing": {"vpcId": "vpc-0abc1234", "privateSubnetIds": ["subnet-0a1a1a1a", "subnet-0b2b2b2b"]}}
    cloud["storage"] = {
        "fsxLustre": {"storageCapacityGib": 1200, "perUnitStorageThroughput": 250, "subnetId": "subnet-0b2b2b2b"},
        "target": {"readGBps": 0.3},
        "namespaces": ["ml"],
    }
    write_stack(project, "byo", doc)
    result = run_preview("byo", project)
    assert one_record(result, "aws:fsx/lustreFileSystem:LustreFileSystem").inputs["subnetIds"] == "subnet-0b2b2b2b"
    assert one_record(result, "aws:ec2/securityGroup:SecurityGroup", "-fsx-").inputs["vpcId"] == "vpc-0abc1234"
