"""Issue 27, section 1: inventory validation refuses what the hosts refuse.

Each rule below was missing on main (every must-fail fixture validated); the fixtures under
tests/fixtures/inventory/day2-validation/{pass,fail}/ go through ``hybridgpu inventory validate``
and ``render`` (tests/helpers/inventory_cases.py). The upstream behaviour each rule relies on:

* ``kubernetesVersion`` >= 1.31: kubeadm reads ``kubeadm.k8s.io/v1beta4`` (what hybridgpu renders)
  from v1.31 on ("v1.31: v1beta3 read-only, writes only v1beta4 config"); from v1.28 to v1.30 it
  lists v1beta4 in ``experimentalAPIVersions`` and refuses it without ``--allow-experimental-api``
  (kubernetes/kubernetes ``cmd/kubeadm/app/util/config/common.go`` ``validateSupportedVersion``,
  stored snapshots at commits 1601b9e2 and 01b1174c, read 2026-11-26).
* ``controlPlaneEndpoint`` / NFS addresses outside the pod and service ranges: kube-proxy's nftables
  proxier drops new connections to unallocated ClusterIPs (``ip daddr { <service CIDRs> } drop``,
  "Drop traffic to unallocated ClusterIPs", kubernetes/kubernetes ``pkg/proxy/nftables/proxier.go``
  ``setupNFTables``, stored snapshot at commit b0f823e6); Cilium's install guide on conflicting node
  CIDRs (cilium/cilium PR #20208): a node network inside the pod range loses connectivity.
* ``nconnect`` 1..16: torvalds/linux ``fs/nfs/fs_context.c`` (stored snapshot at commit 0961f0c0):
  ``#define NFS_MAX_CONNECTIONS 16``; ``case Opt_nconnect: if (result.uint_32 < 1 || result.uint_32 >
  NFS_MAX_CONNECTIONS) goto out_of_bounds`` -> "NFS: Value for 'nconnect' out of range".
* NVIDIA container toolkit Debian version: NVIDIA/cloud-native-docs ``container-toolkit/install-guide.md``
  (commit 01f0197c): ``export NVIDIA_CONTAINER_TOOLKIT_VERSION=${version}-1`` then
  ``apt-get install nvidia-container-toolkit=${NVIDIA_CONTAINER_TOOLKIT_VERSION}``;
  NVIDIA/nvidia-container-toolkit ``packaging/debian/changelog``: release candidates ``1.3.0~rc.2-1``.
* RoCE priority/PFC per pool: NVIDIA Cumulus Linux 5.14 user guide, "RDMA over Converged Ethernet -
  RoCE" (PFC on one priority, 3 by default; read 2026-11-24).
* ``keySecret.file`` holding a public key: pulumi/pulumi-command ``provider/pkg/provider/remote/connection.go``
  (commit e1fd5afe) parses ``privateKey`` with ``ssh.ParsePrivateKey``, which finds no PEM block in a
  ``ssh-ed25519 AAAA...`` line ("ssh: no key found", golang.org/x/crypto ``ssh/keys.go``).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridgpu.cli import app
from hybridgpu.inventory import InventoryError, inventory_from_documents, load_inventory
from hybridgpu.inventory.checks import CheckInput, check_cluster_range_addresses
from hybridgpu.inventory.models import Cluster
from hybridgpu.inventory.storage import NFS_MAX_CONNECTIONS, SiteStorage
from tests.helpers import ROOT, examples
from tests.helpers.inventory_cases import cases, refusal_tests, relative, runner

FIXTURES = ROOT / "tests" / "fixtures" / "inventory" / "day2-validation"
PASS, FAIL = cases(FIXTURES)


test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass(fixture, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    name = relative(fixture)
    result = runner.invoke(app, ["inventory", "validate", name])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["inventory", "render", name, "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "path",
    ["stacks/inventory/onprem-site-a.yaml", "stacks/inventory/split-example", "examples/inventories/lab.yaml"],
)
def test_the_shipped_inventories_still_validate(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    load_inventory(path)


# --------------------------------------------------------------------------- the rules at their edges


def _docs() -> tuple[dict, dict]:
    site, hosts = list(yaml.safe_load_all((FIXTURES / "pass" / "nfs-on-data-network.yaml").read_text()))
    return site, hosts


def _codes(site: dict, hosts: dict) -> list[tuple[str | None, str | None, str]]:
    try:
        inventory_from_documents([("site.yaml", [site, hosts])])
    except InventoryError as exc:
        return [(i.host, i.field, i.code) for i in exc.issues]
    return []


@pytest.mark.parametrize(("version", "refused"), [("1.30.99", True), ("1.31.0", False), ("1.31.15", False), ("1.9.0", True), ("1.100.0", False)])
def test_kubernetes_version_boundary(version, refused):
    site, hosts = _docs()
    site["cluster"]["kubernetesVersion"] = version
    assert any(field == "cluster.kubernetesVersion" for _, field, _ in _codes(site, hosts)) is refused


@pytest.mark.parametrize("upstream", ["1.17.8", "1.18.2", "1.0.0", "1.18.0~rc.1"])
def test_toolkit_version_without_revision_gets_the_revision_as_fix(upstream):
    site, hosts = _docs()
    site["cluster"]["nvidiaContainerToolkitVersion"] = upstream
    with pytest.raises(InventoryError) as caught:
        inventory_from_documents([("site.yaml", [site, hosts])])
    (issue,) = caught.value.issues
    assert issue.field == "cluster.nvidiaContainerToolkitVersion" and f'"{upstream}-1"' in issue.fix


@pytest.mark.parametrize("number", range(0, NFS_MAX_CONNECTIONS + 3))
def test_nconnect_range_is_the_kernels(number):
    storage = {"type": "nfs", "exportPath": "/d", "servers": [{"address": "10.51.0.1", "readGBps": 10}], "mountOptions": [f"nconnect={number}"]}
    if 1 <= number <= 16:
        SiteStorage.model_validate(storage)
    else:
        with pytest.raises(ValueError, match=f"nconnect={number}"):
            SiteStorage.model_validate(storage)


def test_other_mount_options_are_left_alone():
    """Only ``nconnect`` is judged: an option that merely contains the word is not."""
    options = ["nfsvers=4.1", "hard", "max_connect=4", "rsize=1048576"]
    storage = {"type": "nfs", "exportPath": "/d", "servers": [{"address": "10.51.0.1", "readGBps": 10}], "mountOptions": options}
    assert SiteStorage.model_validate(storage).mount_options == options


def test_endpoint_at_the_service_range_edges():
    """The first and last addresses of the service range are inside; one past the end is not."""
    site, hosts = _docs()
    for endpoint, inside in (("10.96.0.0", True), ("10.111.255.255", True), ("10.112.0.0", False), ("10.95.255.255", False)):
        site["cluster"]["controlPlaneEndpoint"] = f"{endpoint}:6443"
        found = [code for _, _, code in _codes(site, hosts)]
        assert ("endpoint-in-cluster-range" in found) is inside, endpoint


def test_roce_mismatch_on_a_cordoned_host_is_outside_the_pool():
    """A pool is the ACTIVE gpu-workers of one model (the hosts a ResourceFlavor schedules onto); a cordoned
    host with another priority takes no job until restored (and is checked again then)."""
    site, hosts = list(yaml.safe_load_all((FIXTURES / "fail" / "roce-priority-mixed.yaml").read_text()))
    assert ("gpu-02", "network.roce.priority", "roce-mixed-pool") in _codes(site, hosts)
    next(h for h in hosts["hosts"] if h["hostname"] == "gpu-02")["state"] = "cordoned"
    assert _codes(site, hosts) == []


@pytest.mark.parametrize(
    "head",
    [
        "ssh-rsa AAAAB3NzaC1yc2E ops@lab\n",
        "\ufeff  ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 ops@lab\n",
        "ecdsa-sha2-nistp384 AAAAE2VjZHNh ops@lab\n",
        "sk-ssh-ed25519@openssh.com AAAAGnNr ops@lab\n",
        "---- BEGIN SSH2 PUBLIC KEY ----\nComment: x\n",
    ],
)
def test_public_key_content_is_refused_without_showing_it(head, tmp_path):
    key = tmp_path / "id_lab"
    key.write_text(head, encoding="utf-8")
    site, hosts = _docs()
    for host in hosts["hosts"]:
        host["ssh"]["keySecret"] = {"file": str(key)}
    with pytest.raises(InventoryError) as caught:
        inventory_from_documents([("site.yaml", [site, hosts])])
    (issue,) = caught.value.issues
    assert (issue.host, issue.field, issue.code) == ("cp-01", "ssh.keySecret.file", "ssh-public-key")
    assert "AAAA" not in str(caught.value) and "ops@lab" not in str(caught.value)


def test_a_key_file_that_is_not_a_regular_file_is_not_judged(tmp_path):
    site, hosts = _docs()
    for host in hosts["hosts"]:
        host["ssh"]["keySecret"] = {"file": str(tmp_path)}  # a directory
    assert _codes(site, hosts) == []


def test_each_key_file_is_read_once(tmp_path, monkeypatch):
    """10,000 hosts naming one key file read it once, not 10,000 times."""
    key = tmp_path / "id_lab"
    key.write_text("placeholder\n")
    opened: list[Path] = []
    original = Path.open

    def counting_open(self, *args, **kwargs):
        if self == key:
            opened.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    site, hosts = _docs()
    for host in hosts["hosts"]:
        host["ssh"]["keySecret"] = {"file": str(key)}
    assert _codes(site, hosts) == []
    assert len(opened) == 1


# --------------------------------------------------------------------------- properties

_POD, _SERVICE = ipaddress.ip_network("10.244.0.0/16"), ipaddress.ip_network("10.96.0.0/12")


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(min_value=int(ipaddress.ip_address("10.0.0.0")), max_value=int(ipaddress.ip_address("10.255.255.255"))))
def test_an_ip_endpoint_is_refused_exactly_when_a_cluster_range_holds_it(value):
    """Whatever IPv4 address the endpoint has: refused iff it lies in podSubnet or serviceSubnet (ipaddress's membership)."""
    address = ipaddress.ip_address(value)
    cluster = Cluster.model_validate(
        {"kubernetesVersion": "1.35.2", "podSubnet": str(_POD), "serviceSubnet": str(_SERVICE), "cni": "cilium",
         "controlPlaneEndpoint": f"{address}:6443"}
    )
    issues = check_cluster_range_addresses(CheckInput(site_file="site.yaml", cluster=cluster, networks=(), records=()))
    assert bool(issues) is (address in _POD or address in _SERVICE)


@settings(max_examples=examples(100), deadline=None)
@given(
    st.tuples(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)).map(lambda t: ".".join(map(str, t))),
    st.integers(min_value=1, max_value=9),
)
def test_a_toolkit_version_needs_exactly_its_debian_revision(upstream, revision):
    """``X.Y.Z`` is refused with the fix ``X.Y.Z-1``; ``X.Y.Z-N`` is what apt matches, and is accepted."""
    base = {"kubernetesVersion": "1.35.2", "podSubnet": "10.244.0.0/16", "serviceSubnet": "10.96.0.0/12", "cni": "cilium"}
    assert Cluster.model_validate({**base, "nvidiaContainerToolkitVersion": f"{upstream}-{revision}"})
    with pytest.raises(ValueError, match=f"{re.escape(upstream)} has no Debian revision"):
        Cluster.model_validate({**base, "nvidiaContainerToolkitVersion": upstream})
