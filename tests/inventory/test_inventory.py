"""On-prem inventory: the sample, every validation rule, split files, renamed fields, inline keys,
and (hypothesis) that malformed input only ever raises InventoryError. Plain pytest; no Pulumi.

Each rule test breaks one thing in a copy of the sample and asserts that the error names the
file, the host (or the cluster section) and the field, and gives a fix.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridgpu.errors import Issue
from hybridgpu.inventory import (
    RENAMED_FIELDS,
    Inventory,
    InventoryError,
    check_inventory,
    inventory_from_documents,
    load_inventory,
)
from tests.helpers import ROOT, examples

SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"
SPLIT_EXAMPLE = ROOT / "stacks" / "inventory" / "split-example"
SAMPLE_DOCS = list(yaml.safe_load_all(SAMPLE.read_text()))


# --------------------------------------------------------------------------- helpers


def sample() -> tuple[dict[str, Any], dict[str, Any]]:
    """Fresh copies of the sample's Site and HostList documents."""
    site, host_list = copy.deepcopy(SAMPLE_DOCS)
    return site, host_list


def host(host_list: dict[str, Any], name: str) -> dict[str, Any]:
    return next(h for h in host_list["hosts"] if h["hostname"] == name)


def write(path: Path, *docs: Any) -> Path:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return path


def failure(paths: Any) -> InventoryError:
    with pytest.raises(InventoryError) as info:
        load_inventory(paths)
    return info.value


def issue_of(error: InventoryError, code: str) -> Issue:
    found = [i for i in error.issues if i.code == code]
    assert found, f"no {code} issue in:\n{error}"
    return found[0]


def assert_named(error: InventoryError, issue: Issue, file: Path | str, host_name: str | None, field: str) -> None:
    """The issue names file, host and field, has a fix, and the error message shows all of it."""
    assert issue.file == str(file)
    assert issue.host == host_name
    assert issue.field == field
    assert issue.fix.strip()
    text = str(error)
    assert str(issue) in text
    line = next(line for line in text.splitlines() if issue.message in line)
    assert str(file) in line and field in line
    if host_name is not None:
        assert f"host {host_name}" in line
    assert f"fix: {issue.fix}" in text


def broken(tmp_path: Path, site: dict[str, Any], host_list: dict[str, Any], code: str) -> tuple[InventoryError, Issue, Path]:
    path = write(tmp_path / "site-a.yaml", site, host_list)
    error = failure(path)
    return error, issue_of(error, code), path


# --------------------------------------------------------------------------- the sample


def test_sample_loads_with_the_documented_hosts():
    inv = load_inventory(SAMPLE)
    assert isinstance(inv, Inventory)
    assert inv.site.name == "site-a"
    assert [h.hostname for h in inv.control_planes] == ["cp-01", "cp-02", "cp-03"]
    dgx = [h for h in inv.gpu_workers if h.gpu and h.gpu.model == "H100-80GB"]
    assert len(dgx) == 4 and all(h.gpu.count == 8 and h.network.fabric == "infiniband" for h in dgx)
    a100 = [h for h in inv.gpu_workers if h.gpu and h.gpu.model == "A100-80GB"]
    assert len(a100) == 2 and all(h.gpu.mig_layouts for h in a100)
    assert a100[0].gpu.mig_layouts[0].gpus == "all"
    assert len(a100[1].gpu.mig_layouts) > 1
    assert [h.hostname for h in inv.hosts if h.role == "cpu-worker"] == ["cpu-01"]
    assert [h.hostname for h in inv.hosts if h.state == "absent"] == ["dgx-h100-04"]
    assert inv.first_control_plane.hostname == "cp-01"
    assert all(h.state == "active" for h in inv.active_hosts())
    assert "dgx-h100-04" not in {h.hostname for h in inv.active_hosts()}
    assert inv.file_of("a100-02") == str(SAMPLE)
    assert inv.site.cluster.kubernetes_version == "1.35.2"
    assert check_inventory(inv) == []


def test_sample_has_a_comment_on_every_field():
    for number, line in enumerate(SAMPLE.read_text().splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped == "---":
            continue
        assert "#" in line, f"{SAMPLE.name}:{number} has no comment: {line!r}"


def test_first_control_plane_skips_inactive_hosts(tmp_path):
    site, hosts = sample()
    host(hosts, "cp-01")["state"] = "absent"
    inv = load_inventory(write(tmp_path / "a.yaml", site, hosts))
    assert inv.first_control_plane.hostname == "cp-02"


def test_directory_loads_only_its_own_yaml_files():
    inv = load_inventory(SAMPLE.parent)
    assert inv.files == (str(SAMPLE),)


# --------------------------------------------------------------------------- split files


def test_split_files_merge_hosts_in_reading_order(tmp_path):
    site, hosts = sample()
    first = {**hosts, "metadata": {"site": "site-a", "name": "control-plane"}, "hosts": hosts["hosts"][:3]}
    second = {**hosts, "metadata": {"site": "site-a", "name": "workers"}, "hosts": hosts["hosts"][3:]}
    write(tmp_path / "00-site.yaml", site)
    write(tmp_path / "10-control-plane.yaml", first)
    write(tmp_path / "20-workers.yaml", second)
    (tmp_path / "notes.txt").write_text("not an inventory file")
    inv = load_inventory(tmp_path)
    assert [h.hostname for h in inv.hosts] == [h["hostname"] for h in hosts["hosts"]]
    assert inv.site_file == str(tmp_path / "00-site.yaml")
    assert inv.file_of("cp-01") == str(tmp_path / "10-control-plane.yaml")
    assert inv.file_of("cpu-01") == str(tmp_path / "20-workers.yaml")
    # the same files as an explicit list, in another order: same hosts, other reading order
    listed = load_inventory([tmp_path / "20-workers.yaml", tmp_path / "00-site.yaml", tmp_path / "10-control-plane.yaml"])
    assert {h.hostname for h in listed.hosts} == {h.hostname for h in inv.hosts}
    assert listed.hosts[0].hostname == "dgx-h100-01"


def test_split_example_in_the_repository_loads():
    inv = load_inventory(SPLIT_EXAMPLE)
    assert inv.site.name == "site-b"
    assert {h.hostname for h in inv.hosts} == {"b-cp-01", "b-cpu-01", "b-l40s-01", "b-a30-01"}
    assert len(inv.files) == 3


def test_duplicate_hostname_across_split_files(tmp_path):
    site, hosts = sample()
    extra = {**hosts, "hosts": [copy.deepcopy(host(hosts, "cpu-01"))]}
    extra["hosts"][0]["addresses"] = {"management": "10.20.3.99"}
    write(tmp_path / "a.yaml", site, hosts)
    second = write(tmp_path / "b.yaml", extra)
    error = failure(tmp_path)
    issue = issue_of(error, "duplicate-hostname")
    assert_named(error, issue, second, "cpu-01", "hostname")
    assert str(tmp_path / "a.yaml") in issue.message


def test_host_list_of_another_site_is_reported(tmp_path):
    site, hosts = sample()
    hosts["metadata"]["site"] = "site-z"
    error, issue, path = broken(tmp_path, site, hosts, "site-mismatch")
    assert_named(error, issue, path, None, "documents[1].metadata.site")
    assert "site-a" in issue.fix


def test_two_sites_and_no_site_are_reported(tmp_path):
    site, hosts = sample()
    write(tmp_path / "a.yaml", site, hosts)
    other = write(tmp_path / "b.yaml", site)
    error = failure(tmp_path)
    assert_named(error, issue_of(error, "multiple-sites"), other, None, "kind")
    only_hosts = write(tmp_path / "hosts.yaml", hosts)
    error = failure(only_hosts)
    assert_named(error, issue_of(error, "no-site"), only_hosts, None, "kind")


# --------------------------------------------------------------------------- uniqueness and networks


def test_duplicate_address_names_both_hosts(tmp_path):
    site, hosts = sample()
    host(hosts, "dgx-h100-02")["addresses"]["data"] = host(hosts, "dgx-h100-01")["addresses"]["data"]
    error, issue, path = broken(tmp_path, site, hosts, "duplicate-address")
    assert_named(error, issue, path, "dgx-h100-02", "addresses.data")
    assert "dgx-h100-01" in issue.message and "10.21.1.1" in issue.message


def test_bmc_address_reused_as_management_address(tmp_path):
    site, hosts = sample()
    cp = host(hosts, "cp-01")
    site["networks"][0]["cidr"] = "10.20.0.0/22"
    cp["addresses"]["bmc"] = "198.51.100.12"  # cp-02's BMC
    error, issue, path = broken(tmp_path, site, hosts, "duplicate-address")
    assert_named(error, issue, path, "cp-02", "addresses.bmc")


def test_address_outside_its_network(tmp_path):
    site, hosts = sample()
    host(hosts, "a100-01")["addresses"]["management"] = "10.21.2.99"  # in the data network
    error, issue, path = broken(tmp_path, site, hosts, "address-outside-network")
    assert_named(error, issue, path, "a100-01", "addresses.management")
    assert "mgmt 10.20.0.0/22" in issue.message


def test_network_address_is_not_a_host_address(tmp_path):
    site, hosts = sample()
    host(hosts, "cpu-01")["addresses"]["data"] = "10.21.0.0"
    error, issue, path = broken(tmp_path, site, hosts, "address-reserved")
    assert_named(error, issue, path, "cpu-01", "addresses.data")


def test_address_without_a_network_of_its_purpose(tmp_path):
    site, hosts = sample()
    site["networks"] = [n for n in site["networks"] if n["purpose"] != "bmc"]
    error, issue, path = broken(tmp_path, site, hosts, "missing-network")
    assert_named(error, issue, path, None, "networks")
    assert "cp-01" in issue.message and "bmc" in issue.fix


def test_networks_overlapping_each_other_and_duplicate_names(tmp_path):
    site, hosts = sample()
    site["networks"].append({"name": "mgmt", "cidr": "10.20.2.0/24", "purpose": "data"})
    error, issue, path = broken(tmp_path, site, hosts, "network-overlap")
    assert_named(error, issue, path, None, "networks[4].cidr")
    assert "10.20.0.0/22" in issue.message
    assert_named(error, issue_of(error, "duplicate-network"), path, None, "networks[4].name")


# --------------------------------------------------------------------------- cluster CIDRs


def test_pod_and_service_subnets_overlap(tmp_path):
    site, hosts = sample()
    site["cluster"]["serviceSubnet"] = "10.244.128.0/20"
    error, issue, path = broken(tmp_path, site, hosts, "cidr-overlap")
    assert_named(error, issue, path, None, "cluster.serviceSubnet")
    assert "podSubnet 10.244.0.0/16" in issue.message
    assert "e.g. 10." in issue.fix  # a free private range is suggested


def test_pod_subnet_overlaps_a_host_network(tmp_path):
    site, hosts = sample()
    site["cluster"]["podSubnet"] = "10.20.0.0/16"
    error, issue, path = broken(tmp_path, site, hosts, "cidr-overlap")
    assert_named(error, issue, path, None, "cluster.podSubnet")
    assert "network mgmt" in issue.message


def test_service_subnet_overlaps_the_linked_cloud_vpc(tmp_path):
    site, hosts = sample()
    site["cluster"]["serviceSubnet"] = "10.64.0.0/20"
    error, issue, path = broken(tmp_path, site, hosts, "cidr-overlap")
    assert_named(error, issue, path, None, "cluster.serviceSubnet")
    assert "linked cloud VPC" in issue.message


def test_site_network_overlaps_the_linked_cloud_vpc(tmp_path):
    site, hosts = sample()
    site["cluster"]["linkedCloudVpcCidr"] = "10.20.0.0/16"
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    fields = {i.field for i in error.issues if i.code == "cidr-overlap"}
    assert "cluster.linkedCloudVpcCidr" in fields


def test_cidr_overlaps_are_reported_even_when_another_cluster_field_is_wrong(tmp_path):
    site, hosts = sample()
    site["cluster"]["podCidr"] = site["cluster"].pop("podSubnet")  # renamed: its value is still checked
    site["cluster"]["serviceSubnet"] = "10.244.128.0/20"
    site["cluster"]["cni"] = "flannel"
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    assert error.codes[0] == "renamed-field"
    assert {"schema", "cidr-overlap"} <= set(error.codes)
    assert "endpoint-missing" not in error.codes  # the endpoint is not judged from a partial cluster


# --------------------------------------------------------------------------- control plane


def test_even_number_of_control_planes(tmp_path):
    site, hosts = sample()
    fourth = copy.deepcopy(host(hosts, "cp-03"))
    fourth.update(hostname="cp-04", addresses={"management": "10.20.0.14"})
    hosts["hosts"].insert(3, fourth)
    error, issue, path = broken(tmp_path, site, hosts, "even-control-planes")
    assert_named(error, issue, path, "cp-04", "role")
    assert "4 control-plane hosts" in issue.message and "quorum of 3" in issue.message


def test_no_control_plane(tmp_path):
    site, hosts = sample()
    hosts["hosts"] = [h for h in hosts["hosts"] if h["role"] != "control-plane"]
    error, issue, path = broken(tmp_path, site, hosts, "no-control-plane")
    assert_named(error, issue, path, None, "hosts")


def test_no_active_control_plane(tmp_path):
    site, hosts = sample()
    for name in ("cp-01", "cp-02", "cp-03"):
        host(hosts, name)["state"] = "cordoned"
    error, issue, path = broken(tmp_path, site, hosts, "no-active-control-plane")
    assert_named(error, issue, path, None, "hosts")


def test_control_plane_endpoint_required_with_several_control_planes(tmp_path):
    site, hosts = sample()
    del site["cluster"]["controlPlaneEndpoint"]
    error, issue, path = broken(tmp_path, site, hosts, "endpoint-missing")
    assert_named(error, issue, path, None, "cluster.controlPlaneEndpoint")
    assert "cp-01" in issue.message
    # one control-plane host: no endpoint needed
    hosts["hosts"] = [h for h in hosts["hosts"] if h["hostname"] not in ("cp-02", "cp-03")]
    assert load_inventory(write(tmp_path / "one.yaml", site, hosts)).site.cluster.control_plane_endpoint is None


def test_control_plane_endpoint_must_not_be_one_hosts_address(tmp_path):
    site, hosts = sample()
    site["cluster"]["controlPlaneEndpoint"] = "10.20.0.11:6443"
    error, issue, path = broken(tmp_path, site, hosts, "endpoint-is-host")
    assert_named(error, issue, path, None, "cluster.controlPlaneEndpoint")
    assert "cp-01" in issue.message


# --------------------------------------------------------------------------- GPUs


def test_unknown_gpu_model_names_the_close_match(tmp_path):
    site, hosts = sample()
    host(hosts, "dgx-h100-03")["gpu"]["model"] = "H100-80G"
    error, issue, path = broken(tmp_path, site, hosts, "unknown-gpu-model")
    assert_named(error, issue, path, "dgx-h100-03", "gpu.model")
    assert "'H100-80GB'" in issue.fix


def test_gpu_section_must_match_the_role(tmp_path):
    site, hosts = sample()
    del host(hosts, "dgx-h100-03")["gpu"]
    host(hosts, "cpu-01")["gpu"] = {"model": "L4", "count": 1}
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    by_host = {i.host: i for i in error.issues if i.code == "gpu-role"}
    assert_named(error, by_host["dgx-h100-03"], tmp_path / "a.yaml", "dgx-h100-03", "gpu")
    assert_named(error, by_host["cpu-01"], tmp_path / "a.yaml", "cpu-01", "role")


def test_pci_ids_one_per_gpu_and_distinct(tmp_path):
    site, hosts = sample()
    gpu = host(hosts, "dgx-h100-01")["gpu"]
    gpu["pciIds"] = gpu["pciIds"][:7] + ["0000:1b:00.0"]  # the first GPU's id, spelled as lspci does
    host(hosts, "dgx-h100-02")["gpu"]["pciIds"] = gpu["pciIds"][:3]
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    by_host = {i.host: i for i in error.issues if i.code == "pci-ids"}
    assert_named(error, by_host["dgx-h100-01"], tmp_path / "a.yaml", "dgx-h100-01", "gpu.pciIds")
    assert "more than once" in by_host["dgx-h100-01"].message
    assert "3 PCI bus id(s) for 8 GPU(s)" in by_host["dgx-h100-02"].message


# --------------------------------------------------------------------------- MIG


def test_mig_unknown_profile_names_the_close_match(tmp_path):
    site, hosts = sample()
    host(hosts, "a100-01")["gpu"]["migLayouts"][0]["layout"] = {"3g.40g": 2}
    error, issue, path = broken(tmp_path, site, hosts, "mig-unknown-profile")
    assert_named(error, issue, path, "a100-01", 'gpu.migLayouts[0].layout["3g.40g"]')
    assert "did you mean '3g.40gb'" in issue.message
    assert "'3g.40gb'" in issue.fix


def test_mig_unplaceable_layout_carries_the_checkers_reason(tmp_path):
    site, hosts = sample()
    host(hosts, "a100-02")["gpu"]["migLayouts"][2]["layout"] = {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}
    error, issue, path = broken(tmp_path, site, hosts, "mig-unplaceable")
    assert_named(error, issue, path, "a100-02", "gpu.migLayouts[2].layout")
    assert "compute slices needed 8 > 7 on A100-80GB" in issue.message
    assert "hybridgpu mig check A100-80GB" in issue.fix


@pytest.mark.parametrize(
    ("layout", "reason"),
    [
        ({"1g.20gb": 4, "1g.10gb": 1}, "memory slices needed 9 > 8 on A100-80GB"),
        ({"1g.10gb": 8}, "1g.10gb: 8 requested, at most 7 per GPU"),
    ],
)
def test_mig_layouts_failing_other_limits(tmp_path, layout, reason):
    site, hosts = sample()
    host(hosts, "a100-01")["gpu"]["migLayouts"][0]["layout"] = layout
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    issue = issue_of(error, "mig-unplaceable")
    assert (issue.host, issue.field) == ("a100-01", "gpu.migLayouts[0].layout")
    assert reason in issue.message


def test_mig_gpu_index_out_of_range(tmp_path):
    site, hosts = sample()
    host(hosts, "a100-02")["gpu"]["migLayouts"][2]["gpus"] = [8]
    error, issue, path = broken(tmp_path, site, hosts, "mig-gpu-index")
    assert_named(error, issue, path, "a100-02", "gpu.migLayouts[2].gpus")
    assert "indices 0-7" in issue.message


def test_mig_overlapping_gpu_indices(tmp_path):
    site, hosts = sample()
    host(hosts, "a100-02")["gpu"]["migLayouts"][1]["gpus"] = [3, 4, 5]
    error, issue, path = broken(tmp_path, site, hosts, "mig-gpu-overlap")
    assert_named(error, issue, path, "a100-02", "gpu.migLayouts[1].gpus")
    assert "GPU 3 in migLayouts[0]" in issue.message
    # "all" overlaps every other entry
    site, hosts = sample()
    host(hosts, "a100-01")["gpu"]["migLayouts"].append({"gpus": [0], "layout": {"7g.80gb": 1}})
    error = failure(write(tmp_path / "b.yaml", site, hosts))
    assert issue_of(error, "mig-gpu-overlap").field == "gpu.migLayouts[1].gpus"


def test_mig_on_a_gpu_without_mig(tmp_path):
    site, hosts = sample()
    gpu = host(hosts, "dgx-h100-03")["gpu"]
    gpu["model"] = "L40S"
    gpu["migLayouts"] = [{"gpus": "all", "layout": {"1g.10gb": 7}}]
    error, issue, path = broken(tmp_path, site, hosts, "mig-unsupported-model")
    assert_named(error, issue, path, "dgx-h100-03", "gpu.migLayouts")


# --------------------------------------------------------------------------- renamed fields, inline keys


@pytest.mark.parametrize(
    ("where", "old", "value", "new"),
    [
        ("cluster", "kubeVersion", "1.35.2", "kubernetesVersion"),
        ("cluster", "podCidr", "10.244.0.0/16", "podSubnet"),
        ("cluster", "serviceCidr", "10.96.0.0/12", "serviceSubnet"),
        ("host", "sshKey", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n", None),
        ("host", "migProfile", "all-1g.10gb", "gpu.migLayouts"),
    ],
)
def test_renamed_or_removed_field_is_reported_first_with_the_fix(tmp_path, where, old, value, new):
    site, hosts = sample()
    if where == "cluster":
        site["cluster"].pop(new, None)
        site["cluster"][old] = value
    else:
        host(hosts, "cpu-01")[old] = value
    host(hosts, "cpu-01")["role"] = "worker"  # a generic error too: the renamed one comes first
    error, issue, path = broken(tmp_path, site, hosts, "renamed-field")
    assert error.issues[0] is issue
    assert RENAMED_FIELDS[old][0] == new
    if where == "cluster":
        assert_named(error, issue, path, None, f"cluster.{old}")
        assert f"rename `{old}` to `{new}`" in issue.fix
        assert not any(i.code == "schema" and i.field == f"cluster.{new}" for i in error.issues), "no 'missing' for the new name"
    else:
        assert_named(error, issue, path, "cpu-01", old)
        assert ("keySecret" if new is None else "migLayouts") in issue.fix
    assert "PRIVATE KEY" not in str(error)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda h: h["ssh"].update(privateKey="-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----"),
        lambda h: h["ssh"].update(key="-----BEGIN RSA PRIVATE KEY-----\nAAAA"),
        lambda h: h["ssh"]["keySecret"].update(key="-----BEGIN RSA PRIVATE KEY-----\nAAAA"),
        lambda h: h.update(privateKey="-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA"),
    ],
    ids=["ssh.privateKey", "ssh.key", "ssh.keySecret.key", "privateKey"],
)
def test_inline_key_is_refused_and_never_echoed(tmp_path, mutate):
    site, hosts = sample()
    mutate(host(hosts, "cp-02"))
    error, issue, path = broken(tmp_path, site, hosts, "inline-secret")
    assert issue.host == "cp-02" and issue.file == str(path)
    assert "never inline a key; use keySecret" in issue.message
    assert "keySecret" in issue.fix
    assert "PRIVATE KEY" not in str(error) and "AAAA" not in str(error)


def test_key_material_in_a_secret_reference_is_refused_and_never_echoed(tmp_path):
    site, hosts = sample()
    host(hosts, "cp-02")["ssh"]["keySecret"] = {"env": "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA"}
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    issue = next(i for i in error.issues if i.host == "cp-02")
    assert issue.field == "ssh.keySecret.env" and "key material" in issue.message
    assert "AAAA" not in str(error)


def test_secret_reference_needs_exactly_one_source(tmp_path):
    site, hosts = sample()
    host(hosts, "cp-02")["ssh"]["keySecret"] = {"env": "A", "file": "~/.ssh/a"}
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    issue = next(i for i in error.issues if i.host == "cp-02")
    assert issue.field == "ssh.keySecret" and "exactly one" in issue.message


# --------------------------------------------------------------------------- schema errors and malformed files


def test_schema_errors_name_host_and_field_with_a_fix(tmp_path):
    site, hosts = sample()
    host(hosts, "cp-03")["rol"] = host(hosts, "cp-03").pop("role")
    host(hosts, "dgx-h100-01")["gpu"]["count"] = "8"
    host(hosts, "a100-01")["addresses"]["management"] = 167772161  # a number, not an address
    site["cluster"]["kubernetesVersion"] = 1.35
    site["cluster"]["podSubnet"] = "10.244.0.1/16"
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    by_key = {(i.host, i.field): i for i in error.issues}
    assert "did you mean `role`?" in by_key[("cp-03", "rol")].fix
    assert ("cp-03", "role") in by_key  # missing
    assert by_key[("dgx-h100-01", "gpu.count")].fix == "write a whole number without quotes"
    assert "written as a string" in by_key[("a100-01", "addresses.management")].message
    assert "quotes" in by_key[(None, "cluster.kubernetesVersion")].message
    assert "host bits set; the network is 10.244.0.0/16" in by_key[(None, "cluster.podSubnet")].message
    assert all(i.fix for i in error.issues)


def test_a_broken_host_does_not_hide_the_others_problems(tmp_path):
    site, hosts = sample()
    host(hosts, "cp-01")["addresses"] = "10.20.0.11"
    host(hosts, "dgx-h100-03")["gpu"]["model"] = "H100"
    error = failure(write(tmp_path / "a.yaml", site, hosts))
    assert {i.host for i in error.issues} >= {"cp-01", "dgx-h100-03"}
    assert "even-control-planes" not in error.codes  # counts are not judged while a host is unreadable


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not UTF-8"),
        (b"apiVersion: [unclosed\nkind: Site\n", "not valid YAML"),
        (b"a: 1\na: 2\n", "duplicate key"),
        (b"? [a, b]\n: 1\n", "unhashable"),
        (b"when: 2026-02-30\n", "not valid YAML"),
        (b"just a string\n", "must be a mapping"),
        (b"- 1\n- 2\n", "must be a mapping"),
        (b"", "holds no YAML document"),
        (b"apiVersion: hybridgpu.io/v1alpha1\nkind: Sight\n", "did you mean `Site`?"),
        (b"apiVersion: v1\nkind: HostList\nmetadata: {site: s}\nhosts: []\n", "unsupported apiVersion"),
        (b"\x00\x01\x02", "not valid YAML"),
    ],
)
def test_malformed_files_are_reported_not_raised(tmp_path, content, expected):
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    error = failure(path)
    assert any(expected in f"{i.message} {i.fix}" for i in error.issues), str(error)
    assert all(i.file == str(path) for i in error.issues)


def test_missing_paths_and_empty_directories(tmp_path):
    error = failure([tmp_path / "nope.yaml", tmp_path])
    messages = {i.file: i.message for i in error.issues}
    assert messages[str(tmp_path / "nope.yaml")] == "no such file or directory"
    assert "no *.yaml" in messages[str(tmp_path)]
    assert failure([]).issues[0].message == "no inventory file given"


def test_multi_document_host_lists_are_named_by_position(tmp_path):
    site, hosts = sample()
    extra = {**hosts, "metadata": {"site": "site-a"}, "hosts": []}
    extra["hots"] = []
    error = failure(write(tmp_path / "a.yaml", site, hosts, extra))
    issue = next(i for i in error.issues if i.field and "hots" in i.field)
    assert issue.field == "documents[2].hots" and "did you mean `hosts`?" in issue.fix


def test_error_message_is_capped_but_issues_are_all_kept():
    docs = copy.deepcopy(SAMPLE_DOCS)
    for h in docs[1]["hosts"]:
        h["role"] = "nope"
    many = [copy.deepcopy(docs[1]) for _ in range(15)]
    with pytest.raises(InventoryError) as info:
        inventory_from_documents([("site.yaml", [docs[0], *many])])
    error = info.value
    assert len(error.issues) > InventoryError.MAX_SHOWN
    assert f"and {len(error.issues) - InventoryError.MAX_SHOWN} more" in str(error)


# --------------------------------------------------------------------------- hypothesis: only InventoryError

yaml_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["all", "10.20.0.11", "10.0.0.0/8", "1.35.2", "H100-80GB", "3g.40gb", "-----BEGIN PRIVATE KEY-----", "~", ""]),
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12) | st.integers(0, 9), children, max_size=4),
    max_leaves=25,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*prefix, index))
    return out


SAMPLE_PATHS = _paths(SAMPLE_DOCS)[1:]


@st.composite
def mutated_samples(draw) -> list[Any]:
    """The sample's documents with 1-4 mutations: a key deleted, a value replaced by a random
    YAML value or a junk string, a list item duplicated, a mapping turned into a list."""
    docs = copy.deepcopy(SAMPLE_DOCS)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(SAMPLE_PATHS))
        parent: Any = docs
        try:
            for part in path[:-1]:
                parent = parent[part]
            target = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(parent, (dict, list)):  # an earlier mutation left a string (indexable, not assignable) here
            continue
        action = draw(st.sampled_from(["delete", "replace", "junk", "duplicate", "wrap"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "replace":
            parent[path[-1]] = draw(yaml_values)
        elif action == "junk":
            parent[path[-1]] = draw(st.text(min_size=1, max_size=30))
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(target))
        else:
            parent[path[-1]] = [target]
    return docs


def _only_inventory_error(call) -> None:
    try:
        result = call()
    except InventoryError as exc:
        assert exc.issues
        for issue in exc.issues:
            assert isinstance(issue.file, str) and issue.message and issue.fix
        str(exc)
    else:
        assert isinstance(result, Inventory)


@settings(max_examples=examples(250), deadline=None)
@given(docs=mutated_samples())
def test_mutated_samples_only_raise_inventory_error(tmp_path_factory, docs):
    path = tmp_path_factory.getbasetemp() / "mutated.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    _only_inventory_error(lambda: load_inventory(path))


@settings(max_examples=examples(200), deadline=None)
@given(docs=st.lists(yaml_values, max_size=3), kinds=st.lists(st.sampled_from(["Site", "HostList", None]), max_size=3))
def test_random_structures_only_raise_inventory_error(docs, kinds):
    shaped = []
    for doc, kind in zip(docs, kinds, strict=False):
        if kind is not None and isinstance(doc, dict):
            doc = {"apiVersion": "hybridgpu.io/v1alpha1", "kind": kind, **doc}
        shaped.append(doc)
    shaped += docs[len(kinds) :]
    _only_inventory_error(lambda: inventory_from_documents([("random.yaml", shaped)]))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)), keep_sample=st.booleans())
def test_random_bytes_only_raise_inventory_error(tmp_path_factory, content, keep_sample):
    base = tmp_path_factory.getbasetemp()
    junk = base / "junk.yaml"
    junk.write_bytes(content)
    paths = [SAMPLE, junk] if keep_sample else [junk]
    _only_inventory_error(lambda: load_inventory(paths))
