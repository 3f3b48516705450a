"""Export a validated site inventory as a kubespray inventory (pure, no Pulumi).

:func:`kubespray_files` turns an :class:`~hybridgpu.inventory.Inventory` into the files of a
kubespray inventory directory, laid out like kubespray's own sample
(``inventory/sample/``), so that ``ansible-playbook -i <dir>/inventory.ini cluster.yml`` can
build the same cluster without hybridgpu:

* ``inventory.ini``: ``[kube_control_plane]`` (the control-plane hosts, in the order hybridgpu
  uses: the first active one first), ``[etcd:children]`` = ``kube_control_plane`` (stacked etcd,
  as kubeadm does here), ``[kube_node]`` (every worker), and ``[k8s_cluster:children]`` (the
  union kubespray's ``dynamic_groups`` role builds at run time, written out so that
  ``group_vars/k8s_cluster`` also applies to a static parse). Each host line carries
  ``ansible_host``, ``ip`` and ``access_ip`` (all the management address), ``ansible_user``,
  ``ansible_port`` when not 22, and ``etcd_member_name`` on control planes.
* ``group_vars/k8s_cluster/k8s-cluster.yml``: ``kube_version``, ``kube_pods_subnet``,
  ``kube_service_addresses``, ``kube_network_node_prefix``, ``kube_network_plugin``,
  ``container_manager``.
* ``group_vars/all/all.yml``: the external API load balancer when ``controlPlaneEndpoint`` is
  set (``loadbalancer_apiserver`` for an IP, ``apiserver_loadbalancer_domain_name`` for a name).
* ``host_vars/<host>.yml`` for hosts with labels, taints or a key file: ``node_labels`` (dict)
  and ``node_taints`` (``key=value:effect`` strings), the labels and taints hybridgpu registers
  the node with (:func:`hybridgpu.render.kubeadm.node_labels` / ``node_taints``; the
  ``nvidia.com/mig.config`` label is not exported: it names a mig-parted config that only the
  hybridgpu program creates), and ``ansible_ssh_private_key_file`` for ``keySecret.file``.

Never exported: secrets. A ``keySecret`` of kind ``env`` or ``pulumiConfig`` has no file to
point at; ``inventory.ini`` says which hosts need ``--private-key`` or an ssh-agent. Hosts in
state ``absent`` are left out (listed in a comment); ``cordoned`` hosts are exported as nodes
(kubespray does not cordon: the comment says to run ``kubectl cordon`` after the playbook).

Kubespray's own inventory checks (``roles/validate_inventory/tasks/main.yml``) that the export
must pass are made here, before anything is written: a non-empty ``kube_control_plane``, an
odd etcd count (the inventory rules guarantee both), pods and services not overlapping
(likewise), ``kubelet_max_pods`` (110) <= ``2 ** (32 - kube_network_node_prefix) - 2``, and
for a CNI other than calico ``2 ** (kube_network_node_prefix - <podSubnet prefix>)`` >= the
number of hosts. The node prefix is kubespray's default 24 when that fits, else the
longest prefix that fits; a site that no prefix fits raises :class:`KubesprayExportError`.

Source: kubernetes-sigs/kubespray at commit 46dbdd39 (2026-08-21): ``inventory/sample/inventory.ini``,
``inventory/sample/group_vars/k8s_cluster/k8s-cluster.yml``, ``inventory/sample/group_vars/all/all.yml``,
``roles/dynamic_groups/tasks/main.yml``, ``roles/validate_inventory/tasks/main.yml``,
``docs/ansible/inventory.md``, ``docs/ansible/vars.md`` (``node_labels``, ``node_taints``),
``docs/operations/ha-mode.md`` (external load balancer variables); kube_version 1.35.2 is in its
``roles/kubespray_defaults/vars/main/checksums.yml``. Read 2026-11-24.
"""

from __future__ import annotations

import ipaddress

from hybridgpu.errors import Issue, IssuesError
from hybridgpu.inventory.models import Host, Inventory
from hybridgpu.render import dump_yaml
from hybridgpu.render.kubeadm import node_labels, node_taints
from hybridgpu.render.kubeadm_specs import NodeSpec
from hybridgpu.render.topology import host_node_labels

__all__ = ["KUBELET_MAX_PODS", "KubesprayExportError", "control_plane_order", "kubespray_files", "node_prefix"]

#: kubespray's default ``kubelet_max_pods`` (and the kubelet's ``maxPods`` default).
KUBELET_MAX_PODS = 110
#: kubespray's default ``kube_network_node_prefix`` (``inventory/sample/group_vars/k8s_cluster/k8s-cluster.yml``).
DEFAULT_NODE_PREFIX = 24


class KubesprayExportError(IssuesError):
    """The inventory cannot be exported as a kubespray inventory kubespray would accept.

    Args:
        issues: the problems (at least one), each naming the inventory file and field.

    Raises:
        ValueError: (on construction) no issue given.
    """

    def head(self) -> str:
        return f"{len(self.issues)} problem(s) exporting {self.issues[0].file} for kubespray:"


def control_plane_order(inventory: Inventory) -> list[Host]:
    """The control-plane hosts that are not ``absent``, the first ``active`` one first (where
    hybridgpu runs ``kubeadm init``; kubespray initialises on the first of ``kube_control_plane``)."""
    first = inventory.first_control_plane
    return [first, *(h for h in inventory.control_planes if h.state != "absent" and h is not first)]


def node_prefix(pod_prefixlen: int, hosts: int, cni: str, max_pods: int = KUBELET_MAX_PODS) -> int | None:
    """The ``kube_network_node_prefix`` kubespray's inventory checks accept, or None.

    Args:
        pod_prefixlen: prefix length of ``kube_pods_subnet`` (IPv4).
        hosts: hosts in ``k8s_cluster``.
        cni: ``kube_network_plugin`` (calico allocates blocks itself: only the pods-per-node check applies).
        max_pods: ``kubelet_max_pods``.

    Returns:
        :data:`DEFAULT_NODE_PREFIX` when it passes, else the longest prefix that passes
        (more addresses per node), None when none does.
    """

    def fits(prefix: int) -> bool:
        enough_pods = max_pods <= 2 ** (32 - prefix) - 2
        enough_nodes = cni == "calico" or 2 ** (prefix - pod_prefixlen) >= hosts
        return prefix >= pod_prefixlen and enough_pods and enough_nodes

    if fits(DEFAULT_NODE_PREFIX):
        return DEFAULT_NODE_PREFIX
    return next((p for p in range(32, pod_prefixlen - 1, -1) if fits(p)), None)


def _host_line(host: Host, extra: str = "") -> str:
    address = str(host.addresses.management)
    line = f"{host.hostname} ansible_host={address} ip={address} access_ip={address} ansible_user={host.ssh.user}"
    if host.ssh.port != 22:
        line += f" ansible_port={host.ssh.port}"
    return line + extra


def _host_vars(host: Host) -> dict[str, object]:
    node = NodeSpec(
        hostname=host.hostname,
        advertise_address=str(host.addresses.management),
        role=host.role,
        labels=host_node_labels(host),
        taints=[(t.key, t.value, str(t.effect)) for t in host.taints],
        gpu_model=host.gpu.model if host.gpu else None,
        gpu_count=host.gpu_count,
    )
    out: dict[str, object] = {"node_labels": node_labels(node)}
    taints = node_taints(node)
    if taints:
        out["node_taints"] = [f"{t['key']}{'=' + t['value'] if 'value' in t else ''}:{t['effect']}" for t in taints]
    if host.ssh.key_secret.file is not None:
        out["ansible_ssh_private_key_file"] = host.ssh.key_secret.file
    return out


def kubespray_files(inventory: Inventory, *, kubelet_max_pods: int = KUBELET_MAX_PODS) -> dict[str, str]:
    """The files of a kubespray inventory directory for ``inventory``.

    Args:
        inventory: a validated inventory (single-stack IPv4, odd control-plane count: the
            inventory rules guarantee what kubespray's checks need except the node prefix).
        kubelet_max_pods: ``kubelet_max_pods`` the prefix must leave room for (kubespray's default 110).

    Returns:
        Relative path -> text, in a fixed order (same inventory, same bytes): ``inventory.ini``,
        ``group_vars/k8s_cluster/k8s-cluster.yml``, ``group_vars/all/all.yml``, then
        ``host_vars/<host>.yml`` in inventory order.

    Raises:
        KubesprayExportError: no ``kube_network_node_prefix`` passes kubespray's checks (the pod
            subnet is too small for the hosts), naming ``cluster.podSubnet`` with the fix.
    """
    cluster = inventory.site.cluster
    planes = control_plane_order(inventory)
    workers = [h for h in inventory.hosts if h.role != "control-plane" and h.state != "absent"]
    absent = [h.hostname for h in inventory.hosts if h.state == "absent"]
    cordoned = [h.hostname for h in [*planes, *workers] if h.state == "cordoned"]
    count = len(planes) + len(workers)
    prefix = node_prefix(cluster.pod_subnet.prefixlen, count, cluster.cni, kubelet_max_pods)
    if prefix is None:
        need = max(count, 1).bit_length()
        raise KubesprayExportError(
            [
                Issue.on_host(
                    inventory.site_file,
                    None,
                    "cluster.podSubnet",
                    f"podSubnet {cluster.pod_subnet} cannot give {count} nodes a /25 or shorter block each "
                    f"({kubelet_max_pods} pods per node), which kubespray's inventory checks require",
                    f"widen podSubnet to a /{max(8, 25 - need)} or shorter",
                    "kubespray-node-prefix",
                )
            ]
        )
    no_key = [h.hostname for h in [*planes, *workers] if h.ssh.key_secret.file is None]

    ini = [
        f"# kubespray inventory of site {inventory.site.name}, exported by `hybridgpu inventory export --format kubespray`",
        f"# from {', '.join(inventory.files)}. Layout of kubespray's inventory/sample/inventory.ini; cluster",
        "# settings in group_vars/, node labels, taints and key files in host_vars/. No secret is written here.",
    ]
    if absent:
        ini.append(f"# Left out (state absent): {', '.join(absent)}")
    if cordoned:
        ini.append(f"# Cordoned in the inventory (kubespray does not cordon; run `kubectl cordon` afterwards): {', '.join(cordoned)}")
    if no_key:
        shown = ", ".join(no_key[:10]) + (f" and {len(no_key) - 10} more" if len(no_key) > 10 else "")
        ini.append(f"# SSH key kept in an env variable or Pulumi config (pass --private-key or use ssh-agent): {shown}")
    ini += ["", "[kube_control_plane]"]
    ini += [_host_line(h, f" etcd_member_name=etcd{i}") for i, h in enumerate(planes, 1)]
    ini += ["", "[etcd:children]", "kube_control_plane", "", "[kube_node]"]
    ini += [_host_line(h) for h in workers]
    ini += ["", "[k8s_cluster:children]", "kube_control_plane", "kube_node", ""]

    k8s_cluster = {
        "kube_version": cluster.kubernetes_version,
        "kube_pods_subnet": str(cluster.pod_subnet),
        "kube_service_addresses": str(cluster.service_subnet),
        "kube_network_node_prefix": prefix,
        "kube_network_plugin": cluster.cni,
        "container_manager": cluster.container_runtime,
    }
    all_vars: dict[str, object] = {}
    endpoint = cluster.endpoint_host
    if endpoint is not None and cluster.control_plane_endpoint is not None:
        port = int(cluster.control_plane_endpoint.rsplit(":", 1)[1])
        try:
            all_vars["loadbalancer_apiserver"] = {"address": str(ipaddress.ip_address(endpoint)), "port": port}
        except ValueError:
            all_vars["apiserver_loadbalancer_domain_name"] = endpoint
    all_text = "# Exported by hybridgpu: the API server endpoint (cluster.controlPlaneEndpoint).\n"
    if "apiserver_loadbalancer_domain_name" in all_vars:
        all_text += (
            "# Add the load balancer's address for kubespray's /etc/hosts entry (docs/operations/ha-mode.md):\n"
            f"# loadbalancer_apiserver: {{address: <VIP of {endpoint}>, port: {port}}}\n"
        )
    all_text += dump_yaml(all_vars) if all_vars else "# (no controlPlaneEndpoint: kubespray's localhost load balancer is used)\n"

    files = {
        "inventory.ini": "\n".join(ini),
        "group_vars/k8s_cluster/k8s-cluster.yml": "# Exported by hybridgpu from the Site's cluster settings.\n" + dump_yaml(k8s_cluster),
        "group_vars/all/all.yml": all_text,
    }
    for host in [*planes, *workers]:
        files[f"host_vars/{host.hostname}.yml"] = dump_yaml(_host_vars(host))
    return files
