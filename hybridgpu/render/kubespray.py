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
  ``container_manager``, and ``kube_owner: root`` with Cilium (kubespray's preinstall check
  ``roles/kubernetes/preinstall/tasks/0040-verify-settings.yml`` "Stop if kube_owner is not root
  when using cilium", PR #13385, stops the play with the default ``kube_owner: kube``: Cilium's
  init containers cannot write to ``/opt/cni/bin`` owned by another user).
* ``group_vars/all/all.yml``: with ``controlPlaneEndpoint``, ``loadbalancer_apiserver:
  {address, port}`` (always: kubespray sets ``kubeadm_config_api_fqdn``, the host of kubeadm's
  ``controlPlaneEndpoint``, only when ``loadbalancer_apiserver`` is defined, in
  ``roles/kubernetes/control-plane/tasks/kubeadm-setup.yml``; without it the endpoint is the
  first control plane's ``main_ip`` for good, ``templates/kubeadm-config.v1beta4.yaml.j2``), and
  ``apiserver_loadbalancer_domain_name`` when the endpoint is a DNS name (the default is
  ``loadbalancer_apiserver.address``; ``roles/kubespray_defaults/defaults/main/main.yml``). For a
  name, ``address`` is the name too: at this commit kubespray uses the address only as a
  certificate SAN, a ``no_proxy`` entry and the admin kubeconfig's server, all of which take a
  name (it no longer writes ``/etc/hosts``).
* ``[gpu_nodes]`` (the gpu-workers, a child group of ``kube_node``) and ``group_vars/gpu_nodes/containerd.yml``, with ``nvidia_toolkit``:
  ``containerd_additional_runtimes`` with the ``nvidia`` runtime and ``containerd_default_runtime:
  nvidia``, the runtime hybridgpu's own bootstrap writes (:func:`hybridgpu.render.containerd.containerd_config`),
  in the shape of kubespray's ``containerd_runc_runtime`` (``roles/container-engine/containerd/defaults/main.yml``,
  rendered by ``templates/config.toml.j2``). Only GPU workers get it. Kubespray does not install
  the NVIDIA container toolkit: the file says to install it (at ``cluster.nvidiaContainerToolkitVersion``)
  before ``cluster.yml``; without ``nvidia_toolkit`` the GPU Operator installs it and configures containerd.
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

Also refused: a ``kubernetesVersion`` kubespray at :data:`KUBESPRAY_COMMIT` has no checksums
for (its ``roles/validate_inventory/tasks/main.yml`` "Check if requested Kubernetes are supported"
and the minimum version, the oldest of those checksums).

Source: kubernetes-sigs/kubespray at commit 46dbdd39 (2026-08-21, :data:`KUBESPRAY_COMMIT`, 96 commits
after v2.31.0, with PR #13385): ``inventory/sample/inventory.ini``,
``inventory/sample/group_vars/k8s_cluster/k8s-cluster.yml``, ``inventory/sample/group_vars/all/all.yml``,
``roles/dynamic_groups/tasks/main.yml``, ``roles/validate_inventory/tasks/main.yml``,
``docs/ansible/inventory.md``, ``docs/ansible/vars.md`` (``node_labels``, ``node_taints``),
``docs/operations/ha-mode.md`` (external load balancer variables),
``roles/kubernetes/preinstall/tasks/0040-verify-settings.yml``, ``roles/kubespray_defaults/defaults/main/main.yml``,
``roles/kubernetes/control-plane/tasks/kubeadm-setup.yml`` and ``templates/kubeadm-config.v1beta4.yaml.j2``,
``roles/container-engine/containerd/defaults/main.yml`` and ``templates/config.toml.j2``; the Kubernetes
versions are the keys of ``kubeadm_checksums`` / ``kubelet_checksums`` / ``kubectl_checksums`` (amd64) in
``roles/kubespray_defaults/vars/main/checksums.yml``. Read 2026-11-24 and 2026-11-26.
"""

from __future__ import annotations

import ipaddress

from hybridgpu.errors import Issue, IssuesError
from hybridgpu.inventory.models import Host, Inventory
from hybridgpu.render import dump_yaml
from hybridgpu.render.containerd import NVIDIA_RUNTIME_BINARY
from hybridgpu.render.kubeadm import node_labels, node_taints
from hybridgpu.render.kubeadm_specs import NodeSpec
from hybridgpu.render.topology import host_node_labels

__all__ = [
    "GPU_GROUP",
    "KUBELET_MAX_PODS",
    "KUBESPRAY_COMMIT",
    "KUBESPRAY_KUBE_VERSIONS",
    "KubesprayExportError",
    "control_plane_order",
    "kubespray_files",
    "node_prefix",
    "nvidia_runtime_vars",
]

#: The kubespray commit the export targets (kubernetes-sigs/kubespray master of 2026-08-21, 96 commits after
#: v2.31.0; it has PR #13385's Cilium ``kube_owner`` check, which v2.31.0 lacks). Named in docs/onprem.md.
KUBESPRAY_COMMIT = "46dbdd3994b32640bcd806b0097f50e8fdf1d514"
#: Kubernetes versions kubespray at :data:`KUBESPRAY_COMMIT` installs: the amd64 keys of ``kubeadm_checksums``,
#: ``kubelet_checksums`` and ``kubectl_checksums`` (the same 26) in ``roles/kubespray_defaults/vars/main/checksums.yml``;
#: the oldest is its ``kube_version_min_required``.
KUBESPRAY_KUBE_VERSIONS: tuple[str, ...] = (
    *(f"1.34.{p}" for p in range(12)),
    *(f"1.35.{p}" for p in range(9)),
    *(f"1.36.{p}" for p in range(5)),
)
#: The inventory group of the GPU workers (``group_vars/<GPU_GROUP>/`` holds their containerd runtime).
GPU_GROUP = "gpu_nodes"

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


def nvidia_runtime_vars() -> dict[str, object]:
    """Kubespray containerd variables that give a host the ``nvidia`` runtime hybridgpu's bootstrap writes.

    Returns:
        ``containerd_additional_runtimes`` (one runc-v2 runtime named ``nvidia`` with
        ``BinaryName`` :data:`~hybridgpu.render.containerd.NVIDIA_RUNTIME_BINARY`, ``SystemdCgroup``
        following kubespray's ``containerd_use_systemd_cgroup`` as its runc runtime does, and runc's
        ``cri-base.json`` base spec) and ``containerd_default_runtime: nvidia`` (hybridgpu's default:
        the device plugin's pods need no RuntimeClass). kubespray's ``config.toml.j2`` writes a string
        option ``"true"``/``"false"`` as a TOML boolean.
    """
    return {
        "containerd_default_runtime": "nvidia",
        "containerd_additional_runtimes": [
            {
                "name": "nvidia",
                "type": "io.containerd.runc.v2",
                "base_runtime_spec": "cri-base.json",
                "options": {
                    "BinaryName": NVIDIA_RUNTIME_BINARY,
                    "SystemdCgroup": "{{ containerd_use_systemd_cgroup | ternary('true', 'false') }}",
                },
            }
        ],
    }


def _version_ranges() -> str:
    """:data:`KUBESPRAY_KUBE_VERSIONS` per minor, e.g. ``1.34.0 to 1.34.11, 1.35.0 to 1.35.8``."""
    minors: dict[str, list[str]] = {}
    for version in KUBESPRAY_KUBE_VERSIONS:
        minors.setdefault(version.rsplit(".", 1)[0], []).append(version)
    return ", ".join(f"{v[0]} to {v[-1]}" for v in minors.values())


def _version_issue(inventory: Inventory) -> Issue | None:
    version = inventory.site.cluster.kubernetes_version
    if version in KUBESPRAY_KUBE_VERSIONS:
        return None
    return Issue.on_host(
        inventory.site_file,
        None,
        "cluster.kubernetesVersion",
        f"kubespray {KUBESPRAY_COMMIT[:8]} has no checksums for Kubernetes {version}: its validate_inventory stops the play",
        f"set kubernetesVersion to one it installs: {_version_ranges()}",
        "kubespray-kube-version",
    )


def kubespray_files(inventory: Inventory, *, kubelet_max_pods: int = KUBELET_MAX_PODS, nvidia_toolkit: bool = True) -> dict[str, str]:
    """The files of a kubespray inventory directory for ``inventory``.

    Args:
        inventory: a validated inventory (single-stack IPv4, odd control-plane count: the
            inventory rules guarantee what kubespray's checks need except the node prefix).
        kubelet_max_pods: ``kubelet_max_pods`` the prefix must leave room for (kubespray's default 110).
        nvidia_toolkit: the NVIDIA container toolkit is on the GPU workers (installed by the
            operator before kubespray runs; the stack's ``hybridgpu:onprem.nvidiaToolkit``): give
            them the ``nvidia`` containerd runtime. False when the GPU Operator installs the toolkit.

    Returns:
        Relative path -> text, in a fixed order (same inventory, same bytes): ``inventory.ini``,
        ``group_vars/k8s_cluster/k8s-cluster.yml``, ``group_vars/all/all.yml``, with GPU workers
        ``group_vars/gpu_nodes/containerd.yml`` (comments only without ``nvidia_toolkit``), then
        ``host_vars/<host>.yml`` in inventory order.

    Raises:
        KubesprayExportError: no ``kube_network_node_prefix`` passes kubespray's checks (the pod
            subnet is too small for the hosts), naming ``cluster.podSubnet``, or a
            ``kubernetesVersion`` kubespray does not install, naming ``cluster.kubernetesVersion``;
            each with the fix.
    """
    cluster = inventory.site.cluster
    planes = control_plane_order(inventory)
    workers = [h for h in inventory.hosts if h.role != "control-plane" and h.state != "absent"]
    absent = [h.hostname for h in inventory.hosts if h.state == "absent"]
    cordoned = [h.hostname for h in [*planes, *workers] if h.state == "cordoned"]
    count = len(planes) + len(workers)
    prefix = node_prefix(cluster.pod_subnet.prefixlen, count, cluster.cni, kubelet_max_pods)
    issues = [issue for issue in [_version_issue(inventory)] if issue is not None]
    if prefix is None:
        need = max(count, 1).bit_length()
        issues.append(
            Issue.on_host(
                inventory.site_file,
                None,
                "cluster.podSubnet",
                f"podSubnet {cluster.pod_subnet} cannot give {count} nodes a /25 or shorter block each "
                f"({kubelet_max_pods} pods per node), which kubespray's inventory checks require",
                f"widen podSubnet to a /{max(8, 25 - need)} or shorter",
                "kubespray-node-prefix",
            )
        )
    if issues:
        raise KubesprayExportError(issues)
    gpu_nodes = [h for h in workers if h.role == "gpu-worker"]
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
    if gpu_nodes and nvidia_toolkit:
        ini.append(
            f"# [{GPU_GROUP}] get the nvidia containerd runtime (group_vars/{GPU_GROUP}/containerd.yml): install "
            f"nvidia-container-toolkit {cluster.nvidia_container_toolkit_version} on them before cluster.yml"
        )
    ini += ["", "[kube_control_plane]"]
    ini += [_host_line(h, f" etcd_member_name=etcd{i}") for i, h in enumerate(planes, 1)]
    ini += ["", "[etcd:children]", "kube_control_plane", "", "[kube_node]"]
    ini += [_host_line(h) for h in workers]
    if gpu_nodes:
        # A child of kube_node, not of all: its group_vars beat k8s_cluster's, and the play order
        # (Ansible lists the hosts of shallower groups first) still starts with the control planes.
        ini += ["", f"[{GPU_GROUP}]", *(h.hostname for h in gpu_nodes), "", "[kube_node:children]", GPU_GROUP]
    ini += ["", "[k8s_cluster:children]", "kube_control_plane", "kube_node", ""]

    k8s_cluster = {
        "kube_version": cluster.kubernetes_version,
        "kube_pods_subnet": str(cluster.pod_subnet),
        "kube_service_addresses": str(cluster.service_subnet),
        "kube_network_node_prefix": prefix,
        "kube_network_plugin": cluster.cni,
        "container_manager": cluster.container_runtime,
    }
    if cluster.cni == "cilium":
        # 0040-verify-settings.yml stops the play otherwise (Cilium's init containers run as root
        # without CAP_DAC_OVERRIDE and must write to /opt/cni/bin).
        k8s_cluster["kube_owner"] = "root"
    all_vars: dict[str, object] = {}
    endpoint = cluster.endpoint_host
    if endpoint is not None and cluster.control_plane_endpoint is not None:
        port = int(cluster.control_plane_endpoint.rsplit(":", 1)[1])
        try:
            address = str(ipaddress.ip_address(endpoint))
        except ValueError:
            address = endpoint
            all_vars["apiserver_loadbalancer_domain_name"] = endpoint
        all_vars["loadbalancer_apiserver"] = {"address": address, "port": port}
    if all_vars:
        all_text = (
            "# Exported by hybridgpu: the API server endpoint (cluster.controlPlaneEndpoint), kubeadm's\n"
            "# controlPlaneEndpoint and every client's server (kubespray docs/operations/ha-mode.md).\n" + dump_yaml(all_vars)
        )
    else:
        all_text = "# Exported by hybridgpu. No controlPlaneEndpoint: kubeadm's is the first control plane's address, nodes use kubespray's localhost load balancer.\n"

    files = {
        "inventory.ini": "\n".join(ini),
        "group_vars/k8s_cluster/k8s-cluster.yml": "# Exported by hybridgpu from the Site's cluster settings.\n" + dump_yaml(k8s_cluster),
        "group_vars/all/all.yml": all_text,
    }
    if gpu_nodes and nvidia_toolkit:
        files[f"group_vars/{GPU_GROUP}/containerd.yml"] = (
            "# Exported by hybridgpu: the nvidia containerd runtime of the GPU workers, as hybridgpu's bootstrap writes it.\n"
            "# Kubespray does not install the NVIDIA container toolkit: install nvidia-container-toolkit\n"
            f"# {cluster.nvidia_container_toolkit_version} (cluster.nvidiaContainerToolkitVersion) on these hosts first.\n"
            + dump_yaml(nvidia_runtime_vars())
        )
    elif gpu_nodes:
        # Written all the same, so that exporting again into the same directory replaces a runtime file.
        files[f"group_vars/{GPU_GROUP}/containerd.yml"] = (
            "# Exported by hybridgpu without the nvidia runtime (--no-nvidia-toolkit): the GPU Operator installs the\n"
            "# NVIDIA container toolkit and configures containerd on these hosts.\n"
        )
    for host in [*planes, *workers]:
        files[f"host_vars/{host.hostname}.yml"] = dump_yaml(_host_vars(host))
    return files
