"""The on-prem cluster plan: from a validated inventory to ordered kubeadm steps (pure, no Pulumi).

:func:`plan_onprem` maps an :class:`~hybridgpu.inventory.models.Inventory` onto the kubeadm
renderers and decides, per host, what ``pulumi up`` does over SSH:

* hosts in state ``absent`` (out for repair) are skipped entirely;
* the first control-plane host runs ``kubeadm init``; the other control planes join next
  (with the certificate key), then the workers (with the CA certificate hash);
* hosts in state ``cordoned`` are bootstrapped and joined like the others and then drained and
  cordoned from the first control plane;
* every distinct per-host MIG layout of the inventory becomes a named mig-parted config
  (:class:`~hybridgpu.config.nvidia.MigLayoutConfig`); the host's kubelet registers with
  ``nvidia.com/mig.config=<name>`` so the GPU Operator's mig-manager applies it.

The kubeadm configs carry placeholders for the bootstrap token, certificate key and CA hash;
the Pulumi component fills them with secret Outputs (:func:`hybridgpu.render.kubeadm_secrets.substitute`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from hybridgpu.collector import builds_long_lived
from hybridgpu.config.nvidia import MigDeviceGroup, MigLayoutConfig
from hybridgpu.errors import Issue
from hybridgpu.inventory.models import Host, Inventory, InventoryError
from hybridgpu.inventory.mirrors import Mirrors, RegistryLogin, registry_logins
from hybridgpu.inventory.upgrade import UpgradePolicy
from hybridgpu.render.bootstrap import bootstrap_script, drain_and_cordon_script, kubeadm_run_script
from hybridgpu.render.topology import host_node_labels
from hybridgpu.render.upgrade import ScriptRun, etcd_snapshot_timer_script, requested_upgrade
from hybridgpu.render.kubeadm import init_config, join_config_control_plane, join_config_worker, to_yaml
from hybridgpu.render.kubeadm_secrets import BOOTSTRAP_TOKEN_PLACEHOLDER, CA_CERT_HASH_PLACEHOLDER, CERTIFICATE_KEY_PLACEHOLDER
from hybridgpu.render.kubeadm_specs import ClusterSpec, NodeSpec, SpecError
from hybridgpu.render.shapes import ShapeTemplate, plain_value
from hybridgpu.k8s import TOPOLOGY_BLOCK_LABEL, TOPOLOGY_RACK_LABEL

Stage = Literal["init", "join-control-plane", "join-worker"]


@dataclass(frozen=True)
class HostStep:
    """What ``pulumi up`` does on one host.

    Attributes:
        hostname: the host (= Kubernetes node name).
        address: management IP address SSH connects to.
        ssh_user, ssh_port: SSH login.
        key_ref: ``(kind, name)`` of the private key's secret reference (``env``, ``file``, ``pulumiConfig``).
        stage: ``init`` (first control plane), ``join-control-plane`` or ``join-worker``.
        bootstrap: the host's bootstrap script (no secrets).
        kubeadm_config: the kubeadm YAML with secret placeholders.
        kubeadm_run: the script that runs ``kubeadm init``/``join`` with that config (read from stdin).
        drain: the drain-and-cordon script to run from the first control plane (cordoned hosts), else None.
        mig_config: mig-parted config name the node selects, or None.
        role: ``control-plane``, ``gpu-worker`` or ``cpu-worker``.
        owner: who answers for the host (the host's ``owner``, else the site's), or None.
        gpu_model, gpu_count: the host's GPUs (None and 0 without GPUs).
    """

    hostname: str
    address: str
    ssh_user: str
    ssh_port: int
    key_ref: tuple[str, str]
    stage: Stage
    bootstrap: str
    kubeadm_config: str
    kubeadm_run: str
    drain: str | None
    mig_config: str | None
    role: str = "gpu-worker"
    owner: str | None = None
    gpu_model: str | None = None
    gpu_count: int = 0


@dataclass(frozen=True)
class OnPremPlan:
    """The ordered plan of an on-prem cluster.

    Attributes:
        cluster: the kubeadm cluster settings.
        steps: one step per host that is not ``absent``: the first control plane first, then the
            other control planes, then workers (inventory order within each group).
        skipped: hostnames in state ``absent``.
        mig_layouts: the named MIG layouts derived from the inventory (for the mig-parted ConfigMap).
        gpus: physical GPUs of the hosts in the plan, by GPU model.
        upgrade: the scripts of the Kubernetes upgrade the inventory's ``upgrades.kubernetes`` asks for, in run order
            (:func:`hybridgpu.render.upgrade.requested_upgrade`); empty when nothing moves.
        etcd_snapshot_timer: the script that installs (or, disabled, removes) the scheduled etcd snapshots on each
            control plane (:func:`hybridgpu.render.upgrade.etcd_snapshot_timer_script` of ``upgrades.etcdSnapshots``).
        registry_logins: the registry mirror logins ``pulumi up`` writes to every host as a secret
            (:func:`hybridgpu.inventory.mirrors.registry_logins`; references, never values).
    """

    cluster: ClusterSpec
    steps: tuple[HostStep, ...]
    skipped: tuple[str, ...]
    mig_layouts: tuple[MigLayoutConfig, ...] = field(default=())
    gpus: dict[str, int] = field(default_factory=dict)
    upgrade: tuple[ScriptRun, ...] = field(default=())
    etcd_snapshot_timer: str = ""
    registry_logins: tuple[RegistryLogin, ...] = field(default=())

    @property
    def first(self) -> HostStep:
        """The step of the first control plane (``kubeadm init``)."""
        return self.steps[0]


#: The names of :class:`HostStep`'s fields.
_HOST_STEP_FIELDS = frozenset(f.name for f in fields(HostStep))


def _host_step(**values: Any) -> HostStep:
    """``HostStep(**values)``; with every field given, built the way :mod:`copy` and :mod:`pickle` rebuild a dataclass.

    The frozen dataclass's ``__init__`` sets its 15 fields one ``object.__setattr__`` at a time: 2.2 us a
    step against 0.95 us for handing it the keyword dictionary as its instance dictionary (``timeit``,
    2026-11-27), 13 ms of a 10,000-host plan. Same object either way (attributes, ``==``, ``hash``,
    ``repr``); anything but exactly the fields (a field added later, a misspelt one) goes through
    ``__init__``, which applies defaults and refuses unknown names.
    """
    if values.keys() != _HOST_STEP_FIELDS:
        return HostStep(**values)
    step = object.__new__(HostStep)
    object.__setattr__(step, "__dict__", values)
    return step


def mig_config_name(model: str, groups: Sequence[tuple[Sequence[int], dict[str, int]]]) -> str:
    """A stable mig-parted config name for a host's MIG layout: ``<model>-<8 hex of its content>``."""
    digest = hashlib.sha256(json.dumps([model, groups], sort_keys=True).encode()).hexdigest()[:8]
    return f"{model.lower()}-{digest}"


def _host_mig(host: Host) -> tuple[str, MigLayoutConfig] | None:
    gpu = host.gpu
    if gpu is None or not gpu.mig_layouts:
        return None
    groups = sorted((tuple(spec.indices(gpu.count)), dict(sorted(spec.layout.items()))) for spec in gpu.mig_layouts)
    name = mig_config_name(gpu.model, [(list(g), layout) for g, layout in groups])
    if len(groups) == 1 and groups[0][0] == tuple(range(gpu.count)):
        layout = MigLayoutConfig(name=name, gpu_model=gpu.model, layout=groups[0][1])
    else:
        covered = {i for g, _ in groups for i in g}
        devices = [MigDeviceGroup(gpus=list(g), layout=layout) for g, layout in groups]
        rest = [i for i in range(gpu.count) if i not in covered]
        if rest:
            devices.append(MigDeviceGroup(gpus=rest, mig_enabled=False))
        layout = MigLayoutConfig(name=name, gpu_model=gpu.model, devices=devices)
    return name, layout


#: Where the inventory writes each :class:`ClusterSpec` field (key paths in the site file).
CLUSTER_SPEC_KEYS = {
    "name": "metadata.name",
    "kubernetes_version": "cluster.kubernetesVersion",
    "control_plane_endpoint": "cluster.controlPlaneEndpoint",
    "pod_subnet": "cluster.podSubnet",
    "service_subnet": "cluster.serviceSubnet",
    "cni": "cluster.cni",
    "kubelet_server_tls_bootstrap": "cluster.kubeletServerTlsBootstrap",
}
#: Where the inventory writes each :class:`NodeSpec` field (key paths relative to the host).
NODE_SPEC_KEYS = {
    "hostname": "hostname",
    "advertise_address": "addresses.management",
    "role": "role",
    "labels": "labels",
    "taints": "taints",
    "gpu_model": "gpu.model",
    "gpu_count": "gpu.count",
    "mig_config": "gpu.migLayouts",
}
#: What a render issue adds to the renderer's fix: the inventory rules should have refused it first.
_REPORT = "; please also report it, since validation should have caught it"


def _render_issue(inventory: Inventory, host: Host | None, exc: ValueError) -> Issue:
    """A renderer's refusal as an issue (code ``render``) where the inventory wrote the value.

    A :class:`SpecError` names its spec and field: cluster fields are put on the site file,
    node fields on the host's file and host, in the inventory's key paths
    (:data:`CLUSTER_SPEC_KEYS`, :data:`NODE_SPEC_KEYS`). Any other ``ValueError`` of a renderer
    is put on the host being rendered (or the site), without a field.
    """
    prefix = "rendering the kubeadm configuration and scripts failed: "
    if isinstance(exc, SpecError):
        if exc.spec == "cluster" or host is None:
            issue = exc.located(inventory.site_file, None, CLUSTER_SPEC_KEYS if exc.spec == "cluster" else {})
        else:
            issue = exc.located(inventory.file_of(host.hostname), host.hostname, NODE_SPEC_KEYS)
        return Issue.on_host(issue.file, issue.host, issue.field, prefix + issue.message, issue.fix + _REPORT, "render")
    file = inventory.file_of(host.hostname) if host is not None else inventory.site_file
    return Issue.on_host(file, host.hostname if host else None, None, prefix + str(exc), "correct the value named in the message" + _REPORT, "render")


def cluster_spec(inventory: Inventory) -> ClusterSpec:
    """The kubeadm :class:`ClusterSpec` of an inventory's site.

    Raises:
        SpecError: a value kubeadm would refuse (on the spec field: :data:`CLUSTER_SPEC_KEYS` maps it to the site file).
    """
    c = inventory.site.cluster
    return ClusterSpec(
        name=inventory.site.name,
        kubernetes_version=c.kubernetes_version,
        control_plane_endpoint=c.control_plane_endpoint,
        pod_subnet=str(c.pod_subnet),
        service_subnet=str(c.service_subnet),
        cni=c.cni,
        kubelet_server_tls_bootstrap=c.kubelet_server_tls_bootstrap,
    )


def node_spec(
    host: Host, mig_config: str | None, hostname: str | None = None, address: str | None = None, labels: dict[str, str] | None = None
) -> NodeSpec:
    """The kubeadm :class:`NodeSpec` of an inventory host (``hostname``/``address``/``labels`` override its own).

    Raises:
        SpecError: a value kubeadm or the kubelet would refuse (on the spec field: :data:`NODE_SPEC_KEYS` maps it to the host).
    """
    return NodeSpec(
        hostname=hostname or host.hostname,
        advertise_address=address or str(host.addresses.management),
        role=host.role,
        labels=host_node_labels(host) if labels is None else labels,
        taints=[(t.key, t.value, str(getattr(t.effect, "value", t.effect))) for t in host.taints],
        gpu_model=host.gpu.model if host.gpu else None,
        gpu_count=host.gpu.count if host.gpu else 0,
        mig_config=mig_config,
    )


#: The node labels whose values a shape template leaves open (slot name, label key): see :mod:`hybridgpu.render.shapes`.
_LABEL_SLOTS = (("rack", TOPOLOGY_RACK_LABEL), ("block", TOPOLOGY_BLOCK_LABEL))


def _render_host(
    cluster: ClusterSpec,
    node: NodeSpec,
    stage: Stage,
    toolkit: bool,
    join_endpoint: str | None,
    toolkit_version: str | None = None,
    mirrors: Mirrors | None = None,
    upgrade_to: str | None = None,
    toolkit_upgrade_to: str | None = None,
) -> tuple[str, str, str]:
    """(kubeadm config YAML, bootstrap script, kubeadm run script) of one host."""
    if stage == "init":
        docs = init_config(cluster, node, token_placeholder=BOOTSTRAP_TOKEN_PLACEHOLDER, certificate_key_placeholder=CERTIFICATE_KEY_PLACEHOLDER)
    elif stage == "join-control-plane":
        docs = join_config_control_plane(
            cluster,
            node,
            token_placeholder=BOOTSTRAP_TOKEN_PLACEHOLDER,
            certificate_key_placeholder=CERTIFICATE_KEY_PLACEHOLDER,
            ca_cert_hash_placeholder=CA_CERT_HASH_PLACEHOLDER,
        )
    else:
        docs = join_config_worker(
            cluster,
            node,
            token_placeholder=BOOTSTRAP_TOKEN_PLACEHOLDER,
            ca_cert_hash_placeholder=CA_CERT_HASH_PLACEHOLDER,
            api_server_endpoint=join_endpoint,
        )
    bootstrap = bootstrap_script(
        cluster, node, nvidia_toolkit=toolkit, nvidia_toolkit_version=toolkit_version if toolkit else None, mirrors=mirrors, upgrade_to=upgrade_to,
        nvidia_toolkit_upgrade_to=toolkit_upgrade_to if toolkit else None,
    )
    return to_yaml(docs), bootstrap, kubeadm_run_script(node, first=stage == "init")


def _shape_template(host: Host, labels: dict[str, str], mig_name: str | None, cluster: ClusterSpec, stage: Stage, *args: Any) -> ShapeTemplate | None:
    """The :class:`ShapeTemplate` of ``host``'s shape (``labels``: its node labels, the open ones' values ignored), or None.

    ``args`` are :func:`_render_host`'s after ``stage``. None when the shape cannot be templated
    (:meth:`ShapeTemplate.build`) or a renderer refuses the stand-ins: the hosts of the shape are
    then rendered one by one, so a refusal names the real host and value.
    """
    slot_keys = [(slot, key) for slot, key in _LABEL_SLOTS if key in labels]

    def render(values: Mapping[str, str]) -> tuple[str, ...]:
        shaped = {**labels, **{key: values[slot] for slot, key in slot_keys}}
        return _render_host(cluster, node_spec(host, mig_name, values["hostname"], values["address"], shaped), stage, *args)

    try:
        return ShapeTemplate.build(render)
    except ValueError:
        return None


@builds_long_lived  # the plan of every host lives on: no young-generation passes over it (hybridgpu.collector)
def plan_onprem(inventory: Inventory, *, nvidia_toolkit: bool = True, use_templates: bool = True) -> OnPremPlan:
    """Plan the kubeadm bring-up of a validated inventory.

    Args:
        inventory: a validated inventory (:func:`hybridgpu.inventory.load_inventory`).
        nvidia_toolkit: install the NVIDIA container toolkit on GPU workers (drivers preinstalled,
            e.g. DGX OS). Default: true.
        use_templates: render each worker shape once and fill in name, address and rack/block label values per
            host (:mod:`hybridgpu.render.shapes`; the same text as rendering every host). Default: true.

    Returns:
        The :class:`OnPremPlan` (hosts in order, MIG configs, skipped hosts).

    Raises:
        InventoryError: a value the renderers refuse (issue code ``render`` on the file, host and
            field the inventory wrote it in), or no active or cordoned control-plane host; the
            inventory checks normally catch all of these first.
    """
    try:
        cluster = cluster_spec(inventory)
    except SpecError as exc:
        raise InventoryError([_render_issue(inventory, None, exc)]) from None
    toolkit_version = inventory.site.cluster.nvidia_container_toolkit_version
    wanted = inventory.site.upgrades.kubernetes if inventory.site.upgrades is not None else None
    upgrade_to = wanted.to if wanted is not None else None  # bootstrap leaves packages this upgrade moved
    nvidia_wanted = inventory.site.upgrades.nvidia if inventory.site.upgrades is not None else None
    toolkit_upgrade_to = nvidia_wanted.toolkit_version if nvidia_wanted is not None and nvidia_toolkit else None  # nor the toolkit this one moves
    control: list[Host] = []
    workers: list[Host] = []
    absent: list[str] = []
    for h in inventory.hosts:  # one pass, inventory order kept in each list
        if h.state == "absent":
            absent.append(h.hostname)
        elif h.role == "control-plane":
            control.append(h)
        else:
            workers.append(h)
    skipped = tuple(absent)
    if not control:
        raise InventoryError(
            [Issue.on_host(inventory.site_file, None, None, "no control-plane host that is active or cordoned", "make a control-plane host active", "render")]
        )
    # kubeadm init runs on the first ACTIVE control plane (a cordoned one joins later, then drains).
    active = [h for h in control if h.state == "active"]
    if active:
        control.remove(active[0])
        control.insert(0, active[0])
    # Without a controlPlaneEndpoint (one control plane) nodes join the first one's API server.
    join_endpoint = None if cluster.control_plane_endpoint else f"{control[0].addresses.management}:6443"
    layouts: dict[str, MigLayoutConfig] = {}
    steps = []
    gpus: dict[str, int] = {}
    templates: dict[tuple, ShapeTemplate | None] = {}
    # Hosts of one kind share model, count and layouts: each distinct combination is named once.
    migs: dict[tuple, tuple[str, MigLayoutConfig] | None] = {}
    plain: dict[str, bool] = {}  # rack and block values: few distinct ones
    for index, host in enumerate([*control, *workers]):
        gpu = host.gpu
        if gpu is None or not gpu.mig_layouts:
            mig = None
        else:
            mig_key = (gpu.model, gpu.count, tuple([(spec.gpus, tuple(spec.layout.items())) for spec in gpu.mig_layouts]))
            if mig_key not in migs:
                migs[mig_key] = _host_mig(host)
            mig = migs[mig_key]
        mig_name = None
        if mig is not None:
            mig_name, layout = mig
            layouts.setdefault(mig_name, layout)
        if host.gpu is not None:
            gpus[host.gpu.model] = gpus.get(host.gpu.model, 0) + host.gpu.count
        if index == 0:
            stage: Stage = "init"
        elif host.role == "control-plane":
            stage = "join-control-plane"
        else:
            stage = "join-worker"
        toolkit = nvidia_toolkit and host.role == "gpu-worker"
        address = str(host.addresses.management)
        texts: tuple[str, ...] | None = None
        try:
            if use_templates and stage == "join-worker":
                # Workers of one shape (role, label keys and other label values, taints, GPUs, MIG config) differ only
                # in name, address and topology label values: render the shape once, then fill those in per host
                # (hybridgpu.render.shapes). A dotted-quad address is always a plain YAML string and a shell word.
                values = {"hostname": host.hostname, "address": address}
                labels = host_node_labels(host)
                fillable = host.addresses.management.version == 4 and plain_value(host.hostname)
                for slot, key in _LABEL_SLOTS:
                    value = labels.get(key)
                    if value is not None:
                        values[slot] = value
                        labels[key] = ""  # open in the shape key; the template renders a stand-in there
                        ok = plain.get(value)
                        if ok is None:
                            ok = plain[value] = plain_value(value)
                        fillable = fillable and ok
                if fillable:
                    shape = (
                        host.role,
                        tuple(labels.items()),
                        tuple([(t.key, t.value, t.effect) for t in host.taints]),
                        gpu.model if gpu else None,
                        gpu.count if gpu else 0,
                        mig_name,
                        toolkit,
                    )
                    if shape not in templates:
                        templates[shape] = _shape_template(
                            host, labels, mig_name, cluster, stage, toolkit, join_endpoint, toolkit_version, inventory.site.mirrors, upgrade_to,
                            toolkit_upgrade_to,
                        )
                    template = templates[shape]
                    if template is not None:
                        texts = template.fill(values)
            if texts is None:
                texts = _render_host(
                    cluster, node_spec(host, mig_name), stage, toolkit, join_endpoint, toolkit_version, inventory.site.mirrors, upgrade_to, toolkit_upgrade_to
                )
            config, bootstrap, run = texts
        except ValueError as exc:
            # The renderers name the spec field they refuse (SpecError); it is put where the inventory wrote it.
            raise InventoryError([_render_issue(inventory, host, exc)]) from None
        steps.append(
            _host_step(
                hostname=host.hostname,
                address=address,
                ssh_user=host.ssh.user,
                ssh_port=host.ssh.port,
                key_ref=(host.ssh.key_secret.kind, host.ssh.key_secret.name),
                stage=stage,
                bootstrap=bootstrap,
                kubeadm_config=config,
                kubeadm_run=run,
                drain=drain_and_cordon_script(host.hostname) if host.state == "cordoned" else None,
                mig_config=mig_name,
                role=host.role,
                owner=host.owner or inventory.site.owner,
                gpu_model=gpu.model if gpu else None,
                gpu_count=host.gpu_count,
            )
        )
    upgrade_plan, upgrade = requested_upgrade(inventory, host_driver=nvidia_toolkit)
    if upgrade_plan is not None and not upgrade_plan.ok:
        # A check on the site (not a host) is about what upgrades.kubernetes asks for.
        raise InventoryError(
            [
                c.issue
                if c.issue.entry is not None
                else replace(c.issue, key="upgrades.kubernetes", fix=c.issue.fix.replace("--via ", "via: ").replace("--workers-last", "workersLast"))
                for c in upgrade_plan.failures
                if c.issue is not None
            ]
        )
    policy = inventory.site.upgrades if inventory.site.upgrades is not None else UpgradePolicy()
    return OnPremPlan(
        cluster=cluster,
        steps=tuple(steps),
        skipped=skipped,
        mig_layouts=tuple(layouts.values()),
        gpus=gpus,
        upgrade=upgrade,
        etcd_snapshot_timer=etcd_snapshot_timer_script(policy.etcd_snapshots),
        registry_logins=registry_logins(inventory.site.mirrors),
    )


#: The one CNI the program deploys (:class:`hybridgpu.components.onprem.OnPremCluster`
#: installs the Cilium chart); the inventory format also names ``calico``.
DEPLOYED_CNI = "cilium"


def deployment_issues(inventory: Inventory, *, nvidia_toolkit: bool = True) -> tuple[OnPremPlan | None, list[Issue]]:
    """What the program needs of a validated inventory beyond its own rules, and the plan.

    Runs the checks the Pulumi program relies on that the inventory rules
    (:mod:`hybridgpu.inventory.checks`) cannot make on their own: the CNI is the one deployed
    (:data:`DEPLOYED_CNI`), and the whole plan renders (:func:`plan_onprem`: every kubeadm
    config, bootstrap and run script). The inventory rules are meant to catch everything the
    renderers refuse; a refusal that still gets through is an issue (code ``render``) on the
    file, host and field the inventory wrote the value in (:func:`plan_onprem`), instead of a
    traceback in ``preview`` or ``pulumi up``. ``hybridgpu validate`` (the stack checks, which
    keep the plan for the program), ``hybridgpu inventory validate`` and ``render`` call it.

    Args:
        inventory: a validated inventory.
        nvidia_toolkit: as for :func:`plan_onprem` (the stack's ``hybridgpu:onprem.nvidiaToolkit``).

    Returns:
        ``(plan, issues)``: the plan (None when rendering failed) and the issues (``cni`` on
        ``cluster.cni``, ``render`` on the host or site), empty when the program can run.
    """
    issues: list[Issue] = []
    cluster = inventory.site.cluster
    if cluster.cni != DEPLOYED_CNI:
        issues.append(
            Issue.on_host(
                inventory.site_file,
                None,
                "cluster.cni",
                f"CNI {cluster.cni!r} is not deployed by hybridgpu yet (only {DEPLOYED_CNI})",
                f"set `cni: {DEPLOYED_CNI}`",
                "cni",
            )
        )
    try:
        plan = plan_onprem(inventory, nvidia_toolkit=nvidia_toolkit)
    except InventoryError as exc:
        return None, [*issues, *exc.issues]
    return plan, issues

