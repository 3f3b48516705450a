"""On-prem cluster component: kubeadm over SSH from a bare-metal inventory.

Creates:

* the bootstrap token (one ``random:RandomPassword`` of 22 lowercase letters and digits, split
  ``[a-z0-9]{6}.[a-z0-9]{16}``) and the certificate key (``random:RandomBytes``, 32 bytes as
  hex), secrets in the program and in the state;
* per host that is not ``absent`` (``command:remote:Command``, all secrets passed on stdin so they
  never appear in command lines; every command that can see a token, certificate key or
  kubeconfig has ``logging: none`` and secret ``stdout``/``stderr``, :data:`SECRET_LOGGING`):
  the bootstrap script, the kubeadm config (written with mode 0600, skipped on hosts the run
  script verified complete), and ``kubeadm init`` / ``kubeadm join``, ordered first control
  plane -> other control planes -> workers;
* on the first control plane: the CA certificate hash (for worker discovery) and the admin
  kubeconfig, both read back as secrets; and before every join, the join credentials made
  valid again (the token expires after 24 h, uploaded certificates after 2 h), so nodes added
  to the inventory later still join;
* for ``cordoned`` hosts: drain and cordon, run from the first control plane after the join;
* with registry logins in the inventory's ``mirrors`` (:attr:`OnPremPlan.registry_logins`): per host, before its
  bootstrap, ``<host>-registry-auth`` writing them (a secret on stdin) to the root-only file the bootstrap merges
  into containerd's config; the bootstrap re-runs when the file's digest changes;
* on every control plane, once joined: ``<host>-etcd-snapshot-timer``, the scheduled etcd snapshots of
  ``upgrades.etcdSnapshots`` (installed, or removed when disabled);
* when ``upgrades.kubernetes.to`` moves past ``cluster.kubernetesVersion``: the upgrade of the plan
  (:attr:`OnPremPlan.upgrade`) as one ``dependsOn`` chain after every join and drain, each command with
  ``triggers=[<step version>]`` (:meth:`OnPremCluster._upgrade`); nothing when the version does not move;
  with ``upgrades.nvidia``, after it, the GPU workers' driver/toolkit upgrade, ``maxParallel`` nodes at a time
  (check, drain, install, reboot-wait, verify, uncordon per node; a node at the target is not drained), each command
  with ``triggers=[<upgrade tag>]``;
* per host, a ``hybridgpu:index:OnPremHost`` record (``hybridgpu:onprem:Host`` before, kept as its alias) (:class:`OnPremHost`: hostname, role, owner,
  GPUs, the kubeadm config with secret placeholders), so the state and the policy pack
  (``onprem-host-owner``, ``kubeadm-ca-verification``) see each machine;
* a Kubernetes provider built from the admin kubeconfig, and the Cilium CNI Helm release.

:func:`chart_mirror_transformation` (registered by the program) points every Helm release of the stack at the
site's chart mirrors.

The plan (order, scripts, configs) comes from :func:`hybridgpu.onprem.plan_onprem`; this
component only turns it into resources.
"""

import copy
import os
from pathlib import Path
from typing import NotRequired, TypedDict

import pulumi
import pulumi_command as command
import pulumi_kubernetes as k8s
import pulumi_random as random

from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.inputs import OnPremPlanArgs
from hybridgpu.config.models import DEFAULT_CILIUM_VERSION
from hybridgpu.inventory.mirrors import Mirrors, SecretSource
from hybridgpu.onprem import HostStep, OnPremPlan
from hybridgpu.render.bootstrap import (
    COMPLETE_MARKER_PATH,
    KUBEADM_CONFIG_PATH,
    REGISTRY_AUTH_DELETE,
    REGISTRY_AUTH_WRITE,
    join_credentials_script,
    registry_auth_fragment,
)
from hybridgpu.render.chart_repos import chart_source
from hybridgpu.render.cilium import cilium_helm_values
from hybridgpu.render.kubeadm_secrets import BOOTSTRAP_TOKEN, CA_CERT_HASH, CERTIFICATE_KEY, substitute
from hybridgpu.render.upgrade import ScriptRun, fill_from_previous

CILIUM_REPO = "https://helm.cilium.io"

#: Set by the offline preview so that SSH keys from env/file references are not read.
OFFLINE_ENV = "HYBRIDGPU_OFFLINE_PREVIEW"

#: Prints ``sha256:<hex>`` of the cluster CA's public key (kubeadm's discovery pin; kubeadm docs,
#: "kubeadm join", section "Token-based discovery with CA pinning", read 2026-11-22).
CA_HASH_SCRIPT = (
    "set -euo pipefail\n"
    "openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt"
    " | openssl rsa -pubin -outform der 2>/dev/null"
    " | openssl dgst -sha256 -hex | sed 's/^.* /sha256:/'\n"
)


def secret_source(source: SecretSource, what: str) -> pulumi.Output[str]:
    """Resolve a ``mirrors`` credential reference (:class:`~hybridgpu.inventory.mirrors.SecretSource`) to a secret Output.

    ``pulumiConfig`` reads a ``secure:`` value of ``pulumi config`` (``ns:key`` or a key of the project namespace);
    ``env`` an environment variable of the machine running Pulumi (not read under the offline preview, like SSH keys).

    Args:
        source: the reference.
        what: what it is for, named in the error (e.g. ``mirrors.charts[0].credentials``).

    Raises:
        pulumi.RunError: the variable is not set (names the reference, never a value).
    """
    if source.pulumi_config is not None:
        namespace, _, key = source.pulumi_config.rpartition(":")
        return pulumi.Config(namespace or None).require_secret(key)
    assert source.env is not None
    if os.environ.get(OFFLINE_ENV) == "1":
        return pulumi.Output.secret(f"offline-preview:[env {source.env} not read]")
    value = os.environ.get(source.env)
    if value is None:
        raise pulumi.RunError(f"{what}: env {source.env!r} is not set on the machine running Pulumi (it holds user:password)")
    return pulumi.Output.secret(value)


def _login(value: str) -> tuple[str, str]:
    """``user:password`` split at the first colon; a value without one is a token (empty user)."""
    user, sep, password = value.partition(":")
    return (user, password) if sep else ("", value)


#: The type token of a Helm release (pulumi-kubernetes ``helm.v3.Release``).
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


def chart_mirror_transformation(mirrors: Mirrors | None) -> pulumi.ResourceTransformation:
    """A stack transformation that points every Helm release at the site's chart mirror (``mirrors.charts``).

    Each ``kubernetes:helm.sh/v3:Release`` registered after it whose repository (``repositoryOpts.repo``, or the
    ``oci://`` chart's own registry path) has a mirror gets the mirror's location from
    :func:`hybridgpu.render.chart_repos.chart_source` and, with ``credentials``, ``repositoryOpts.username`` and
    ``password`` as secrets. Releases without a mirror, and any other resource, pass unchanged. One home for every
    release of the stack (those of other components and ones added later included), registered once by the
    program before the on-prem cluster (:func:`hybridgpu.components.program.build_onprem`).

    Args:
        mirrors: the inventory's ``mirrors`` (None or no ``charts``: every release passes unchanged).

    Returns:
        The transformation, for ``pulumi.runtime.register_stack_transformation``.
    """
    logins: dict[int, tuple[pulumi.Output[str], pulumi.Output[str]]] = {}

    def transform(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if args.type_ != RELEASE_TYPE or mirrors is None or not mirrors.charts:
            return None
        props = args.props if isinstance(args.props, dict) else vars(args.props)
        chart, options = props.get("chart"), props.get("repository_opts")
        repo = options.get("repo") if isinstance(options, dict) else getattr(options, "repo", None)
        if not isinstance(chart, str) or not (repo is None or isinstance(repo, str)):
            return None  # an Output: not known here (none of ours)
        try:
            source = chart_source(repo, chart, mirrors)
        except ValueError:
            return None
        if source.mirror is None:
            return None
        username: pulumi.Input[str] | None = None
        password: pulumi.Input[str] | None = None
        if source.credentials is not None:
            key = id(source.mirror)
            if key not in logins:
                index = mirrors.charts.index(source.mirror)
                value = secret_source(source.credentials, f"mirrors.charts[{index}].credentials")
                logins[key] = (pulumi.Output.secret(value.apply(lambda v: _login(v)[0])), pulumi.Output.secret(value.apply(lambda v: _login(v)[1])))
            username, password = logins[key]
        new = dict(props) if isinstance(args.props, dict) else copy.copy(args.props)
        changes = {"chart": source.chart, "repository_opts": k8s.helm.v3.RepositoryOptsArgs(repo=source.repo, username=username, password=password)}
        if isinstance(new, dict):
            new.update(changes)
        else:
            vars(new).update(changes)
        return pulumi.ResourceTransformationResult(props=new, opts=args.opts)

    return transform


def ssh_private_key(kind: str, name: str) -> pulumi.Output[str]:
    """Resolve a host's ``ssh.keySecret`` to a secret Output.

    ``pulumiConfig`` reads ``pulumi config`` (a ``secure:`` value; ``ns:key`` or a key of the
    project namespace); ``env`` reads an environment variable of the machine running Pulumi;
    ``file`` reads a file there. The value is never logged and is a Pulumi secret.

    Under the offline preview (``HYBRIDGPU_OFFLINE_PREVIEW=1``, set by ``hybridgpu preview``)
    ``env`` and ``file`` references are not read: no key material is needed to show the plan.

    Raises:
        pulumi.RunError: the variable or file does not exist (names the reference, not the key).
    """
    if kind != "pulumiConfig" and os.environ.get(OFFLINE_ENV) == "1":
        return pulumi.Output.secret(f"[offline preview: {kind} {name} not read]")
    if kind == "pulumiConfig":
        namespace, _, key = name.rpartition(":")
        return pulumi.Config(namespace or None).require_secret(key)
    if kind == "env":
        value = os.environ.get(name)
        if value is None:
            raise pulumi.RunError(f"ssh.keySecret env {name!r} is not set on the machine running Pulumi")
        return pulumi.Output.secret(value)
    path = Path(name).expanduser()
    try:
        return pulumi.Output.secret(path.read_text())
    except OSError as exc:
        raise pulumi.RunError(f"ssh.keySecret file {name!r} cannot be read: {exc.strerror}") from None


#: Options of every command that can see a bootstrap token, certificate key or kubeconfig: no
#: logging of stdout/stderr (pulumi-command logs both when ``logging`` is unset:
#: ``provider/pkg/provider/remote/logging.go`` v1.2.1, ``ShouldLogStdout``/``ShouldLogStderr``
#: return true for nil) and both outputs secret in the state. ``additionalSecretOutputs`` alone
#: does not stop the logging. On failure the provider still copies stdout+stderr into the error
#: (``commandOutputs.go`` ``run``: ``"%w: running %q:\n%s"``), so these commands must not print a
#: secret at all: kubeadm init runs with ``--skip-token-print --skip-certificate-key-print``,
#: token/upload-certs output goes to /dev/null, configs travel on stdin.
SECRET_LOGGING = command.remote.Logging.NONE
#: How a script runs on the first control plane with the admin kubeconfig (drains, uncordons).
ADMIN_SHELL = "sudo KUBECONFIG=/etc/kubernetes/admin.conf bash -s"
SECRET_OUTPUTS = ["stdout", "stderr"]


def _secret_opts(parent: pulumi.Resource, depends_on: list[pulumi.Resource]) -> pulumi.ResourceOptions:
    """Resource options of a command that can see a secret (see :data:`SECRET_LOGGING`)."""
    return pulumi.ResourceOptions(parent=parent, depends_on=depends_on, additional_secret_outputs=list(SECRET_OUTPUTS))


class OnPremHost(pulumi.ComponentResource):
    """One bare-metal host of the on-prem cluster, as a record in the stack (no cloud resource).

    Its inputs are what the policy pack and ``pulumi stack`` show about the machine:
    ``hostname``, ``address`` (management IP), ``role``, ``stage`` (init / join-control-plane /
    join-worker), ``owner``, ``gpuModel``, ``gpuCount``, ``migConfig`` and ``kubeadmConfig``
    (the kubeadm YAML with ``${BOOTSTRAP_TOKEN}``-style placeholders: no secret values).

    Args:
        name: logical name (``<cluster>-<hostname>``).
        step: the host's step of the plan.
        opts: resource options (parent: the cluster).
    """

    def __init__(self, name: str, step: HostStep, opts: pulumi.ResourceOptions | None = None):
        props = {
            "hostname": step.hostname,
            "address": step.address,
            "role": step.role,
            "stage": step.stage,
            "owner": step.owner,
            "gpuModel": step.gpu_model,
            "gpuCount": step.gpu_count,
            "migConfig": step.mig_config,
            "kubeadmConfig": step.kubeadm_config,
        }
        own, _ = component_options("hybridgpu:onprem:Host", opts)
        super().__init__(type_token("OnPremHost"), name, props, own)
        self.register_outputs({})


class OnPremClusterArgs(TypedDict):
    """Inputs of :class:`OnPremCluster`."""

    plan: OnPremPlanArgs
    """The ordered plan of the cluster (``hybridgpu.onprem.plan_onprem`` of the inventory): kubeadm settings, one step per host with its scripts."""
    cilium_version: NotRequired[str]
    """Cilium chart version (the CNI). Default: the pinned ``hybridgpu:onprem.ciliumVersion`` default."""


class OnPremCluster(pulumi.ComponentResource):
    """A kubeadm cluster on bare metal, driven over SSH (``hybridgpu:index:OnPremCluster``).

    Args:
        name: logical name prefix of the children.
        args: :class:`OnPremClusterArgs`.
        opts: resource options.

    Attributes:
        kubeconfig: admin kubeconfig (``Output[str]``, secret).
        provider: Kubernetes provider of the cluster.
        joined: every ``kubeadm init``/``join`` command, by hostname (workloads wait for them).
    """

    kubeconfig: pulumi.Output[str]
    """Admin kubeconfig (secret)."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster (pass it to the Kubernetes-side components)."""

    def __init__(self, name: str, args: OnPremClusterArgs, opts: pulumi.ResourceOptions | None = None):
        plan = section(OnPremPlan, args["plan"], component="OnPremCluster", name=name, field="plan")
        cilium_version = args.get("cilium_version") or DEFAULT_CILIUM_VERSION
        own, _ = component_options("hybridgpu:onprem:OnPremCluster", opts)
        super().__init__(type_token("OnPremCluster"), name, None, own)
        child = pulumi.ResourceOptions(parent=self)
        # RandomPassword/RandomBytes keep their values secret in the state (RandomString/RandomId
        # do not). One 22-character value is split into the token's id and secret, so the two can
        # only be rotated together.
        raw_token = random.RandomPassword(f"{name}-bootstrap-token", length=22, upper=False, special=False, opts=child)
        token: pulumi.Output[str] = pulumi.Output.secret(raw_token.result.apply(lambda r: f"{r[:6]}.{r[6:]}"))
        cert_key = random.RandomBytes(f"{name}-certificate-key", length=32, opts=child)
        certificate_key: pulumi.Output[str] = pulumi.Output.secret(cert_key.hex)

        first = plan.first
        # One secret Output per SSH key reference, shared by every host that names it (an
        # inventory names one key per site or group, not one per host): resolving it per host
        # made 1,000 secret Outputs for 1,000 hosts with the same key (issue 17 speed goal).
        self._keys: dict[tuple[str, str], pulumi.Output[str]] = {}
        first_conn = self._connection(first)
        self._first_conn = first_conn
        self._credentials: dict[bool, pulumi.Output[str]] = {}
        self._secret_values: dict[int, pulumi.Output[list[str]]] = {}
        self.joined: dict[str, command.remote.Command] = {}
        self._registry_auth = self._registry_logins(plan)
        init = self._host(name, first, first_conn, token, certificate_key, None, [])
        ca_hash = command.remote.Command(
            f"{name}-{first.hostname}-ca-cert-hash",
            connection=first_conn,
            create="sudo bash -s",
            stdin=CA_HASH_SCRIPT,
            logging=SECRET_LOGGING,
            opts=_secret_opts(self, [init]),
        )
        ca_cert_hash: pulumi.Output[str] = pulumi.Output.secret(ca_hash.stdout.apply(str.strip))
        admin = command.remote.Command(
            f"{name}-{first.hostname}-admin-kubeconfig",
            connection=first_conn,
            create="sudo cat /etc/kubernetes/admin.conf",
            logging=SECRET_LOGGING,
            opts=_secret_opts(self, [init]),
        )
        self.kubeconfig = pulumi.Output.secret(admin.stdout)

        control_joins: list[pulumi.Resource] = [init]
        for step in plan.steps[1:]:
            if step.stage == "join-control-plane":
                control_joins.append(self._host(name, step, self._connection(step), token, certificate_key, ca_cert_hash, list(control_joins)))
        for step in plan.steps[1:]:
            if step.stage == "join-worker":
                self._host(name, step, self._connection(step), token, certificate_key, ca_cert_hash, list(control_joins))

        drains: list[pulumi.Resource] = []
        for step in plan.steps:
            OnPremHost(f"{name}-{step.hostname}", step, opts=pulumi.ResourceOptions(parent=self))
            if step.drain:
                drains.append(
                    command.remote.Command(
                        f"{name}-{step.hostname}-drain",
                        connection=first_conn,
                        create=ADMIN_SHELL,
                        stdin=step.drain,
                        logging=SECRET_LOGGING,
                        opts=_secret_opts(self, [self.joined[step.hostname]]),
                    )
                )
        # Scheduled etcd snapshots (upgrades.etcdSnapshots): the timer installed, or removed when disabled, on every
        # control plane once it has joined (it reads kubeadm's etcd client certificate). A new schedule or retention
        # changes the script, so the command runs again; the script itself changes nothing on a second run.
        self.etcd_snapshot_timers: dict[str, command.remote.Command] = {}
        for step in plan.steps:
            if step.role == "control-plane" and plan.etcd_snapshot_timer:
                self.etcd_snapshot_timers[step.hostname] = command.remote.Command(
                    f"{name}-{step.hostname}-etcd-snapshot-timer",
                    connection=self._connection(step),
                    create="sudo bash -s",
                    stdin=plan.etcd_snapshot_timer,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[self.joined[step.hostname]]),
                )
        self.upgrade = self._upgrade(name, plan, [*self.joined.values(), *drains])

        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.joined.values())),
        )
        self.cni = k8s.helm.v3.Release(
            f"{name}-cilium",
            name="cilium",
            chart="cilium",
            version=cilium_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=CILIUM_REPO),
            namespace="kube-system",
            values=cilium_helm_values(str(plan.cluster.pod_subnet)),
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )
        self.register_outputs(
            {
                "kubeconfig": self.kubeconfig,
                "hosts": [s.hostname for s in plan.steps],
                "skipped": list(plan.skipped),
                "upgradingTo": next((r.version for r in reversed(plan.upgrade) if r.kind == "kubernetes"), None),
                "nvidiaUpgradingTo": next((r.version for r in plan.upgrade if r.kind == "nvidia"), None),
            }
        )

    def _upgrade(self, name: str, plan: OnPremPlan, after: list[pulumi.Resource]) -> list[command.remote.Command]:
        """The Kubernetes upgrade of ``plan.upgrade`` as one chain of commands, each after the one before it.

        Order (the plan's, :func:`hybridgpu.render.upgrade.upgrade_run_order`): the etcd snapshot on the first
        control plane, then per step and node kubeadm (on the node), drain (first control plane), kubelet (node),
        uncordon (first control plane). Every command has ``triggers=[<step version>]`` and a name holding the
        version, so moving ``upgrades.kubernetes.to`` again makes new commands and re-running the same target
        runs nothing that succeeded. After a failure in the middle, the next ``pulumi up`` creates the failed
        command and those after it again; the scripts skip a phase whose stamp says it completed
        (``/var/lib/hybridgpu/upgrade/<version>/<phase>``) and a package already at the version.

        Then the NVIDIA driver/toolkit upgrade of ``upgrades.nvidia`` (runs of kind ``nvidia``, after the last Kubernetes
        command): per GPU worker check, drain, install, reboot-wait, verify, uncordon, one after the other; the workers of
        one group (``ScriptRun.batch``, ``maxParallel`` of them) side by side, the next group after the last command of each
        worker of this one. Each has ``triggers=[<tag>]`` (the versions). The drain's script is filled from the check's
        ``stdout`` (a node at the target is not drained) and the reboot-wait's from the install's (the boot id printed
        before the reboot): :func:`hybridgpu.render.upgrade.fill_from_previous`.

        Commands run from the first control plane use the admin kubeconfig: :data:`SECRET_LOGGING`. Node
        scripts carry no secret and log as the bootstrap does.

        Args:
            name: the component's name prefix.
            plan: the plan (``plan.upgrade`` empty: nothing is created).
            after: what the first command waits for (every join and drain).

        Returns:
            The commands, in run order.
        """
        by_host = {s.hostname: s for s in plan.steps}
        chain: list[command.remote.Command] = []
        previous: list[pulumi.Resource] = list(after)
        # NVIDIA runs come in groups (ScriptRun.batch): a node's runs follow each other, the nodes of a group run side by
        # side, and the next group (or anything after) waits for the last command of every node of the group.
        batch: int | None = None
        tails: dict[str, command.remote.Command] = {}
        for run in plan.upgrade:
            if run.batch != batch:
                if tails:
                    previous = list(tails.values())
                tails, batch = {}, run.batch
            depends: list[pulumi.Resource] = [tails[run.host]] if run.batch is not None and run.host in tails else list(previous)
            resource = f"{name}-upgrade-{run.version}-{run.host}-{run.phase}"
            if run.where == "node":
                cmd = command.remote.Command(
                    resource,
                    connection=self._connection(by_host[run.host]),
                    create="sudo bash -s",
                    stdin=run.text,
                    triggers=[run.version],
                    opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
                )
            else:
                stdin: str | pulumi.Output[str] = run.text
                if run.phase in ("drain", "reboot-wait") and run.host in tails:
                    # The drain skips a node its check found at the target; the wait waits for the reboot the install
                    # printed (its boot id before the reboot; none: only Ready).
                    def fill(out: str | None, this: ScriptRun = run) -> str:
                        return fill_from_previous(this, out)

                    stdin = tails[run.host].stdout.apply(fill)
                cmd = command.remote.Command(
                    resource,
                    connection=self._first_conn,
                    create=ADMIN_SHELL,
                    stdin=stdin,
                    triggers=[run.version],
                    logging=SECRET_LOGGING,
                    opts=_secret_opts(self, depends),
                )
            chain.append(cmd)
            if run.batch is None:
                previous = [cmd]
            else:
                tails[run.host] = cmd
        return chain

    @staticmethod
    def _registry_logins(plan: OnPremPlan) -> pulumi.Output[str] | None:
        """The content of the hosts' registry login file (:func:`hybridgpu.render.bootstrap.registry_auth_fragment` of
        ``plan.registry_logins`` with their values), a secret Output; None without logins. Each credential reference
        is read once."""
        if not plan.registry_logins:
            return None
        sources: dict[tuple[str | None, str | None], pulumi.Output[str]] = {}
        values = []
        for login in plan.registry_logins:
            ref = (login.credentials.env, login.credentials.pulumi_config)
            if ref not in sources:
                sources[ref] = secret_source(login.credentials, login.key)
            values.append(sources[ref])
        hosts = [login.host for login in plan.registry_logins]
        return pulumi.Output.secret(pulumi.Output.all(*values).apply(lambda got: registry_auth_fragment(list(zip(hosts, got)))))

    def _connection(self, step: HostStep) -> command.remote.ConnectionArgs:
        """The SSH connection of a host; its private key is the Output shared by its key reference."""
        key = self._keys.get(step.key_ref)
        if key is None:
            key = self._keys[step.key_ref] = ssh_private_key(*step.key_ref)
        return command.remote.ConnectionArgs(host=step.address, port=step.ssh_port, user=step.ssh_user, private_key=key)

    def _host(
        self,
        name: str,
        step: HostStep,
        conn: command.remote.ConnectionArgs,
        token: pulumi.Output[str],
        certificate_key: pulumi.Output[str],
        ca_cert_hash: pulumi.Output[str] | None,
        after: list[pulumi.Resource],
    ) -> command.remote.Command:
        prefix = f"{name}-{step.hostname}"
        bootstrap_opts = pulumi.ResourceOptions(parent=self)
        triggers: pulumi.Output[list[str]] | None = None
        if self._registry_auth is not None:
            # The registry logins (mirrors.registries[].credentials): a root-only file the bootstrap merges into
            # containerd's config. Values only on stdin, nothing logged, the printed digest secret; a new digest
            # (credentials rotated) runs the bootstrap again, which restarts containerd with them.
            auth = command.remote.Command(
                f"{prefix}-registry-auth",
                connection=conn,
                create=REGISTRY_AUTH_WRITE,
                delete=REGISTRY_AUTH_DELETE,
                stdin=self._registry_auth,
                logging=SECRET_LOGGING,
                opts=_secret_opts(self, []),
            )
            bootstrap_opts = pulumi.ResourceOptions(parent=self, depends_on=[auth])
            triggers = pulumi.Output.secret(auth.stdout.apply(lambda digest: [digest]))  # a digest of secrets: secret too
        bootstrap = command.remote.Command(
            f"{prefix}-bootstrap",
            connection=conn,
            create="sudo bash -s",
            stdin=step.bootstrap,
            triggers=triggers,
            opts=bootstrap_opts,
        )
        secrets: list[pulumi.Output[str]] = [token, certificate_key] + ([ca_cert_hash] if ca_cert_hash is not None else [])

        def fill(values: list[str]) -> str:
            mapping = {BOOTSTRAP_TOKEN: values[0], CERTIFICATE_KEY: values[1]}
            if len(values) > 2:
                mapping[CA_CERT_HASH] = values[2]
            used = {k: v for k, v in mapping.items() if "${" + k + "}" in step.kubeadm_config}
            return substitute(step.kubeadm_config, used)

        # One gathered Output of the secrets per kind of host, shared (each host only applies its fill).
        key = len(secrets)
        if key not in self._secret_values:
            self._secret_values[key] = pulumi.Output.all(*secrets)
        config_text: pulumi.Output[str] = pulumi.Output.secret(self._secret_values[key].apply(fill))
        directory = os.path.dirname(KUBEADM_CONFIG_PATH)
        ready: list[pulumi.Resource] = [bootstrap, *after]
        if step.stage != "init":
            # The init token expires after 24 h and uploaded certificates after 2 h: make them
            # valid again on the first control plane before this node joins (nodes added later).
            # Two scripts in all (control plane / worker): fill each once and share the Output.
            control_plane = step.stage == "join-control-plane"
            if control_plane not in self._credentials:
                script = join_credentials_script(control_plane=control_plane)

                def credentials(values: list[str], script: str = script) -> str:
                    return substitute(script, {k: v for k, v in zip((BOOTSTRAP_TOKEN, CERTIFICATE_KEY), values) if "${" + k + "}" in script})

                self._credentials[control_plane] = pulumi.Output.secret(pulumi.Output.all(token, certificate_key).apply(credentials))
            ready.append(
                command.remote.Command(
                    f"{prefix}-join-credentials",
                    connection=self._first_conn,
                    create="sudo bash -s",
                    stdin=self._credentials[control_plane],
                    logging=SECRET_LOGGING,
                    opts=_secret_opts(self, list(after)),
                )
            )
        write = command.remote.Command(
            f"{prefix}-kubeadm-config",
            connection=conn,
            # A host the run script verified complete gets no config written (it would only leave
            # the token and key on disk: the run step does nothing there). A half-built host
            # (kubelet.conf but no marker) does get it, so the run step can retry.
            create=(
                f"if sudo test -e {COMPLETE_MARKER_PATH}; then cat >/dev/null; exit 0; fi; "
                f"sudo install -d -m 0700 {directory} && sudo sh -c 'umask 077; cat > {KUBEADM_CONFIG_PATH}'"
            ),
            stdin=config_text,
            logging=SECRET_LOGGING,
            opts=_secret_opts(self, ready),
        )
        run = command.remote.Command(
            f"{prefix}-kubeadm-{'init' if step.stage == 'init' else 'join'}",
            connection=conn,
            create="sudo bash -s",
            stdin=step.kubeadm_run,
            # kubeadm runs with the filled config on this host: nothing it prints is logged.
            logging=SECRET_LOGGING,
            opts=_secret_opts(self, [write]),
        )
        self.joined[step.hostname] = run
        return run
