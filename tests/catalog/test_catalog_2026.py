"""The 2026 GPU families (issue 28): what the catalog adds, what it refuses, and why.

Upstream facts, read 2026-11-27:

* EKS user guide, "Use EKS-optimized accelerated AMIs for GPU instances" (ml-eks-optimized-ami): the AL2023
  x86_64 NVIDIA AMI covers p6-b300, p6-b200, p5, p5e, p5en, p4d, p4de, p3, p3dn, g7e, gr6, g6, g6e, g6f, gr6f,
  g5, g4dn; the AL2023 ARM NVIDIA AMI p6e-gb200, p6e-gb300, g5g.
* awslabs/amazon-eks-ami 81fec2e8 (2026-07-23): ``templates/al2023/variables-default.json`` pins NVIDIA driver
  580; ``templates/al2023/runtime/gpu/nvidia-open-supported-devices-580.txt`` lists 0x2901 B200, 0x3182 B300
  SXM6 AC, 0x2BB5 RTX PRO 6000 Blackwell Server Edition, 0x27B8 L4; ``doc/usage/g7-ami.md``: g7's RTX PRO 4500
  needs driver 595.
* aws/karpenter-provider-aws v1.14.1 ``pkg/providers/instancetype/types.go`` ``nvidiaGPUs``: the
  ``nvidia.com/gpu`` capacity is the sum of ``GpuInfo.Gpus[].Count`` of NVIDIA GPUs; EC2 returns ``Count: 0``
  for g6f/gr6f (aws/aws-cli#9659; karpenter-provider-aws#8368, #8324), as Karpenter's generated reference
  shows (``instance-gpu-count`` 0, no ``nvidia.com/gpu``; website/content/en/preview/reference/instance-types.md
  at 692ccdd0, 2026-07-11). Figures below: that reference and the us-east-1 price table generated 2026-07-20
  (``pkg/providers/pricing/zz_generated.pricing_aws.go`` at 6fc13b52).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml

from hybridgpu.catalog import GPU_MODELS_FILE, INSTANCE_TYPES_FILE, UNSUPPORTED_FILE, CatalogError, load_catalog

#: EKS AL2023 x86_64 NVIDIA AMI's instance families (ml-eks-optimized-ami, read 2026-11-27).
EKS_X86_NVIDIA = {"p6-b300", "p6-b200", "p5", "p5e", "p5en", "p4d", "p4de", "p3", "p3dn", "g7e", "gr6", "g6", "g6e", "g6f", "gr6f", "g5", "g4dn"}
EKS_ARM_NVIDIA = {"p6e-gb200", "p6e-gb300", "g5g"}
#: PCI device names of the EKS AMI's 580 open-driver list that the new GPU models are (amazon-eks-ami 81fec2e8).
DRIVER_580_DEVICES = {"B200-180GB": "NVIDIA B200", "B300-288GB": "NVIDIA B300 SXM6 AC", "RTX-PRO-6000-96GB": "NVIDIA RTX PRO 6000 Blackwell Server Edition"}

#: Karpenter's generated reference (EC2 DescribeInstanceTypes): type -> (instance-gpu-count, GPU name,
#: instance-gpu-memory MiB, vpc.amazonaws.com/efa, instance-cpu, instance-memory MiB), and the us-east-1 price.
KARPENTER_REFERENCE = {
    "p6-b200.48xlarge": ((8, "b200", 183359, 8, 192, 2097152), 113.9328),
    "p6-b300.48xlarge": ((8, "b300", 275040, 16, 192, 4194304), 142.416),
    "gr6.4xlarge": ((1, "l4", 22888, 0, 16, 131072), 1.5392),
    "gr6.8xlarge": ((1, "l4", 22888, 1, 32, 262144), 2.4464),
    "g7e.2xlarge": ((1, "rtx-pro-server-6000", 98304, 0, 8, 65536), 3.36312),
    "g7e.8xlarge": ((1, "rtx-pro-server-6000", 98304, 1, 32, 262144), 5.26824),
    "g7e.48xlarge": ((8, "rtx-pro-server-6000", 98304, 4, 192, 2097152), 33.14432),
}
#: EC2 GpuInfo as DescribeInstanceTypes returns it (aws/aws-cli#9659 for g6f.large; the Karpenter reference for the rest).
EC2_GPU_INFO = {
    "g6f.large": [{"Name": "L4", "Manufacturer": "NVIDIA", "Count": 0}],
    "gr6f.4xlarge": [{"Name": "L4", "Manufacturer": "NVIDIA", "Count": 0}],
    "gr6.4xlarge": [{"Name": "L4", "Manufacturer": "NVIDIA", "Count": 1}],
    "p6-b200.48xlarge": [{"Name": "B200", "Manufacturer": "NVIDIA", "Count": 8}],
    "g7e.48xlarge": [{"Name": "RTX PRO Server 6000", "Manufacturer": "NVIDIA", "Count": 8}],
}


def karpenter_nvidia_gpus(gpus: list[dict]) -> int:
    """``nvidiaGPUs`` of karpenter-provider-aws v1.14.1 ``pkg/providers/instancetype/types.go``: the node's
    ``nvidia.com/gpu`` capacity is the sum of ``Count`` over the NVIDIA entries of EC2's ``GpuInfo.Gpus``."""
    return sum(g["Count"] for g in gpus if g["Manufacturer"] == "NVIDIA")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.mark.parametrize("name", sorted(KARPENTER_REFERENCE))
def test_new_types_match_karpenters_view(catalog, name):
    """What Karpenter advertises for the type is what the catalog says (GPU limits and EFA counts are derived from it)."""
    (count, gpu_name, gpu_mib, efa, cpu, mem_mib), price = KARPENTER_REFERENCE[name]
    it = catalog.instance_type(name)
    model = catalog.gpu_model(it.gpu_model)
    assert (it.gpu_count, model.karpenter_gpu_name, model.memory_mib) == (count, gpu_name, gpu_mib)
    assert (it.max_efa_interfaces, it.vcpu, it.memory_gib * 1024) == (efa, cpu, mem_mib)
    assert it.on_demand_usd_per_hour == pytest.approx(price)
    assert it.source and it.source_date


def test_every_catalog_family_runs_on_the_x86_eks_nvidia_ami(catalog):
    """hybridgpu renders amd64 GPU pools with the AL2023 NVIDIA alias: every family it provisions is on that AMI's list."""
    assert catalog.families() <= EKS_X86_NVIDIA
    for model in ("B200-180GB", "B300-288GB", "RTX-PRO-6000-96GB"):
        assert catalog.gpu_model(model).architecture == "Blackwell"
        assert model in DRIVER_580_DEVICES  # the default 580 driver drives it


def test_fractional_gpus_have_no_gpu_capacity_in_karpenter(catalog):
    """Karpenter counts g6f/gr6f as 0 GPUs, so a GPU pool could neither launch them for nvidia.com/gpu pods nor bound
    them with its GPU limit: the catalog refuses them with that reason; whole-GPU types count as the catalog says."""
    for name in ("g6f.large", "gr6f.4xlarge"):
        assert karpenter_nvidia_gpus(EC2_GPU_INFO[name]) == 0
        refused = catalog.unsupported_family(name)
        assert refused is not None and refused.reason == "fractional-gpu"
        assert "nvidia.com/gpu" in refused.consequence and "GPU count of 0" in refused.consequence
    for name in ("gr6.4xlarge", "p6-b200.48xlarge", "g7e.48xlarge"):
        assert karpenter_nvidia_gpus(EC2_GPU_INFO[name]) == catalog.instance_type(name).gpu_count


def test_refused_families_and_their_reasons(catalog):
    reasons = {u.name: (u.reason, u.architecture) for u in catalog.unsupported}
    assert reasons == {
        "g6f": ("fractional-gpu", "amd64"),
        "gr6f": ("fractional-gpu", "amd64"),
        "g7": ("driver", "amd64"),
        "p6e-gb200": ("ultraserver", "arm64"),
        "p6e-gb300": ("ultraserver", "arm64"),
    }
    for name, (_, arch) in reasons.items():
        assert (name in EKS_ARM_NVIDIA) == (arch == "arm64")
    assert "g7" not in EKS_X86_NVIDIA  # the EKS AMI lists g7e, not g7 (driver 595)
    assert catalog.unsupported_family("p6e-gb200.36xlarge").name == "p6e-gb200"
    assert catalog.unsupported_family("g6") is None and catalog.unsupported_family("p5") is None


def _copy(tmp_path: Path) -> Path:
    data = resources.files("hybridgpu.catalog").joinpath("data")
    for name in (GPU_MODELS_FILE, INSTANCE_TYPES_FILE, UNSUPPORTED_FILE):
        (tmp_path / name).write_text(data.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


def test_a_family_is_either_provisioned_or_refused(tmp_path):
    directory = _copy(tmp_path)
    path = directory / UNSUPPORTED_FILE
    doc = yaml.safe_load(path.read_text())
    doc["unsupportedFamilies"][0]["name"] = "g6"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(CatalogError) as info:
        load_catalog(directory)
    issue = info.value.issues[0]
    assert (issue.entry, issue.field) == ("g6", "name") and "unsupported.yaml" in issue.file


def test_refusal_entry_needs_reason_and_fix(tmp_path):
    directory = _copy(tmp_path)
    path = directory / UNSUPPORTED_FILE
    doc = yaml.safe_load(path.read_text())
    del doc["unsupportedFamilies"][1]["instead"]
    doc["unsupportedFamilies"][2]["reason"] = "unknown"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(CatalogError) as info:
        load_catalog(directory)
    assert {(i.entry, i.field) for i in info.value.issues} == {("gr6f", "instead"), ("g7", "reason")}


def test_asking_for_a_refused_family_says_why(catalog):
    from hybridgpu.catalog.models import RefusedFamilyError

    with pytest.raises(RefusedFamilyError) as info:
        catalog.family("p6e-gb200")
    assert "cannot be provisioned" in str(info.value) and "UltraServers" in str(info.value) and "fix: use p6-b200" in str(info.value)
    with pytest.raises(KeyError):  # still an unknown-family error for callers that catch those
        catalog.gpu_instance_types(families=["g6f"])
