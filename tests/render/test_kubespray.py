"""The kubespray export (hybridgpu.render.kubespray), checked against what kubespray itself reads.

The export is parsed with Ansible's own inventory parser (``ansible-inventory -i <dir>/inventory.ini
--list``, ansible-core from PyPI, as kubespray runs it), and the result is checked against
kubespray's inventory expectations, from kubernetes-sigs/kubespray at commit 46dbdd39
(2026-08-21):

* ``inventory/sample/inventory.ini``: groups ``kube_control_plane``, ``etcd`` (as
  ``[etcd:children]`` of ``kube_control_plane``) and ``kube_node``; ``ansible_host``, ``ip``,
  ``etcd_member_name`` host vars;
* ``roles/dynamic_groups/tasks/main.yml``: ``k8s_cluster`` = ``kube_node`` + ``kube_control_plane``;
* ``roles/validate_inventory/tasks/main.yml``: non-empty ``kube_control_plane``; an odd etcd
  count; ``kube_pods_subnet`` / ``kube_service_addresses`` are networks that do not overlap;
  ``kubelet_max_pods <= 2 ** (32 - kube_network_node_prefix) - 2``; for a CNI other than calico
  ``2 ** (kube_network_node_prefix - <pods prefix>) >= len(groups['k8s_cluster'])``;
  ``container_manager in ['docker', 'crio', 'containerd']``; ``kube_network_plugin`` in its list;
* ``docs/ansible/vars.md``: ``node_labels`` a dict, ``node_taints`` ``key=value:effect`` strings.

The assertions below restate those checks (in Python, on the parsed inventory) rather than
trusting the exporter's own arithmetic.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hybridgpu.inventory import inventory_from_documents, load_inventory
from hybridgpu.render.kubespray import KubesprayExportError, kubespray_files, node_prefix
from tests.helpers import ROOT

SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"
ANSIBLE_INVENTORY = Path(sys.executable).parent / "ansible-inventory"
#: kubespray's validate_inventory lists (roles/validate_inventory/tasks/main.yml, 46dbdd39).
KUBESPRAY_NETWORK_PLUGINS = {"calico", "flannel", "cloud", "cilium", "cni", "kube-ovn", "kube-router", "macvlan", "custom_cni", "none"}
KUBESPRAY_CONTAINER_MANAGERS = {"docker", "crio", "containerd"}
TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}


def _write(files: dict[str, str], out: Path) -> Path:
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    return out


def ansible_list(directory: Path) -> dict:
    """``ansible-inventory -i <dir>/inventory.ini --list`` as JSON (group_vars/host_vars beside it are read)."""
    assert ANSIBLE_INVENTORY.exists() or shutil.which("ansible-inventory"), "ansible-core is a test dependency (pyproject test extras)"
    exe = str(ANSIBLE_INVENTORY) if ANSIBLE_INVENTORY.exists() else "ansible-inventory"
    done = subprocess.run(
        [exe, "-i", str(directory / "inventory.ini"), "--list"],
        capture_output=True,
        text=True,
        check=False,
        env={"ANSIBLE_INVENTORY_UNPARSED_FAILED": "true", "ANSIBLE_INVENTORY_ENABLED": "ini", "PATH": "/usr/bin:/bin", "HOME": str(directory)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "[WARNING]" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def _members(parsed: dict, group: str) -> list[str]:
    """Hosts of ``group``, following ``children`` (as Ansible resolves groups)."""
    entry = parsed.get(group, {})
    hosts = list(entry.get("hosts", []))
    for child in entry.get("children", []):
        hosts += [h for h in _members(parsed, child) if h not in hosts]
    return hosts


def kubespray_validate_inventory(parsed: dict) -> list[str]:
    """kubespray's inventory assertions (validate_inventory, the ones that read the inventory), restated."""
    problems = []
    planes = _members(parsed, "kube_control_plane")
    etcd = _members(parsed, "etcd") or planes
    cluster = _members(parsed, "k8s_cluster")
    if not planes:
        problems.append("kube_control_plane group is empty")
    if len(etcd) % 2 == 0:
        problems.append("even number of etcd hosts")
    for host in cluster:
        hv = parsed["_meta"]["hostvars"][host]
        pods = ipaddress.ip_network(hv["kube_pods_subnet"])
        services = ipaddress.ip_network(hv["kube_service_addresses"])
        prefix = hv["kube_network_node_prefix"]
        if pods.overlaps(services):
            problems.append("kube_pods_subnet collides with kube_service_addresses")
        if not 110 <= 2 ** (32 - prefix) - 2:
            problems.append("more pods per node than addresses")
        if hv["kube_network_plugin"] != "calico" and not 2 ** (prefix - pods.prefixlen) >= len(cluster):
            problems.append("not enough ipv4 IPs for the nodes")
        if hv["container_manager"] not in KUBESPRAY_CONTAINER_MANAGERS or hv["kube_network_plugin"] not in KUBESPRAY_NETWORK_PLUGINS:
            problems.append("unsupported options selected")
        if not isinstance(hv.get("node_labels", {}), dict):
            problems.append(f"{host}: node_labels must be a dict")
        for taint in hv.get("node_taints", []):
            key_value, _, effect = taint.rpartition(":")
            if not key_value or effect not in TAINT_EFFECTS:
                problems.append(f"{host}: node_taints entry {taint!r} is not key=value:effect")
    return sorted(set(problems))


def test_sample_export_parses_with_ansible_and_passes_kubespray_checks(tmp_path):
    inventory = load_inventory(SAMPLE)
    parsed = ansible_list(_write(kubespray_files(inventory), tmp_path))
    assert kubespray_validate_inventory(parsed) == []
    assert parsed["kube_control_plane"]["hosts"] == ["cp-01", "cp-02", "cp-03"]
    assert parsed["etcd"]["children"] == ["kube_control_plane"]
    workers = {"dgx-h100-01", "dgx-h100-02", "dgx-h100-03", "a100-01", "a100-02", "cpu-01"}
    assert set(parsed["kube_node"]["hosts"]) == workers  # dgx-h100-04 is absent: left out
    assert set(_members(parsed, "k8s_cluster")) == workers | {"cp-01", "cp-02", "cp-03"}
    hostvars = parsed["_meta"]["hostvars"]
    cp = hostvars["cp-01"]
    assert (cp["ansible_host"], cp["ip"], cp["access_ip"], cp["etcd_member_name"]) == ("10.20.0.11", "10.20.0.11", "10.20.0.11", "etcd1")
    assert hostvars["cpu-01"]["ansible_port"] == 2222
    cluster = inventory.site.cluster
    for host in hostvars.values():  # group_vars/k8s_cluster reach every host
        assert host["kube_version"] == cluster.kubernetes_version == "1.35.2"
        assert host["kube_pods_subnet"] == str(cluster.pod_subnet)
        assert host["kube_service_addresses"] == str(cluster.service_subnet)
        assert host["container_manager"] == "containerd"
        assert host["kube_network_plugin"] == "cilium"
        assert host["apiserver_loadbalancer_domain_name"] == "k8s-api.site-a.example.internal"
    gpu = hostvars["dgx-h100-01"]
    assert gpu["node_labels"]["nvidia.com/gpu.present"] == "true" and gpu["node_labels"]["hybridgpu.io/gpu-model"] == "H100-80GB"
    assert gpu["node_taints"] == ["nvidia.com/gpu=true:NoSchedule"]
    assert gpu["ansible_ssh_private_key_file"] == "~/.ssh/site-a-dgx"


def test_no_secret_is_exported(tmp_path):
    text = "".join(kubespray_files(load_inventory(SAMPLE)).values())
    assert "PRIVATE KEY" not in text and "SITE_A_SSH_KEY" not in text and "onprem:sshKey" not in text


def test_export_is_byte_identical():
    inventory = load_inventory(SAMPLE)
    assert kubespray_files(inventory) == kubespray_files(load_inventory(SAMPLE))


def _docs(hosts: int, pod_subnet: str = "10.244.0.0/16", cni: str = "cilium", endpoint: str | None = "10.20.0.10:6443") -> list[dict]:
    site, host_list = list(yaml.safe_load_all(SAMPLE.read_text()))[:2]
    site = copy.deepcopy(site)
    site["cluster"]["podSubnet"] = pod_subnet
    site["cluster"]["cni"] = cni
    site["networks"][0]["cidr"] = "10.20.0.0/16"
    site["cluster"].pop("controlPlaneEndpoint")
    if endpoint:
        site["cluster"]["controlPlaneEndpoint"] = endpoint
    cp = host_list["hosts"][0]
    worker = next(h for h in host_list["hosts"] if h["role"] == "cpu-worker")
    out = []
    for i in range(hosts):
        host = copy.deepcopy(cp if i < 3 else worker)
        host["hostname"] = f"node-{i:05d}"
        host["addresses"] = {"management": f"10.20.{1 + i // 250}.{1 + i % 250}"}
        out.append(host)
    return [site, {**host_list, "hosts": out}]


def test_node_prefix_follows_kubespray_checks_at_scale(tmp_path):
    """600 hosts in a /16 pod subnet: a /24 per node gives 256 node blocks, a /25 512, and a /26
    leaves 62 addresses for 110 pods; kubespray would refuse every prefix, so the export does.
    300 hosts fit with a /25 (512 blocks of 126 addresses): Ansible parses it and kubespray's checks pass."""
    inventory = inventory_from_documents([("big.yaml", _docs(600))])
    with pytest.raises(KubesprayExportError, match=r"cluster.podSubnet.*600 nodes"):
        kubespray_files(inventory)
    fits = inventory_from_documents([("big.yaml", _docs(300))])
    parsed = ansible_list(_write(kubespray_files(fits), tmp_path))
    assert kubespray_validate_inventory(parsed) == []
    assert parsed["_meta"]["hostvars"]["node-00000"]["kube_network_node_prefix"] == 25
    assert parsed["_meta"]["hostvars"]["node-00000"]["loadbalancer_apiserver"] == {"address": "10.20.0.10", "port": 6443}


@pytest.mark.parametrize(
    ("pods", "hosts", "cni", "expected"),
    [
        (16, 3, "cilium", 24),  # kubespray's default fits
        (16, 300, "cilium", 25),  # 2**(24-16) = 256 < 300; /25: 512 nodes, 126 pods
        (16, 600, "cilium", None),  # /25 holds 512 nodes, /26 too few pods
        (16, 600, "calico", 24),  # calico: only the pods-per-node check
        (24, 1, "cilium", 24),
        (25, 1, "cilium", 25),
        (26, 1, "cilium", None),  # a /26 pod subnet cannot hold 110 pods on one node
    ],
)
def test_node_prefix_table(pods, hosts, cni, expected):
    assert node_prefix(pods, hosts, cni) == expected
