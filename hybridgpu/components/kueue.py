"""Kueue on one cluster of a burst plan: controller, queues, MultiKueue wiring and worker access.

Creates, through the cluster's Kubernetes provider (all specs rendered by
:mod:`hybridgpu.burst.kueue` from a :class:`~hybridgpu.burst.plan.ClusterPlan`):

* before Kueue, the Helm releases of the plan's job frameworks (JobSet, Kubeflow Trainer, KubeRay:
  :func:`hybridgpu.components.frameworks.framework_releases`), so their CRDs exist before Kueue enables them;
* the Kueue Helm release (pinned chart from ``oci://registry.k8s.io/kueue/charts/kueue``, its
  namespace, the manager ``Configuration`` with the MultiKueue dispatcher on the manager);
* the LocalQueues' namespaces, ResourceFlavors, ClusterQueues and LocalQueues;
* on the manager: MultiKueueClusters, MultiKueueConfigs, AdmissionChecks, and per worker a Secret
  (key ``kubeconfig``) in Kueue's namespace holding the worker's exec-free kubeconfig (a Pulumi
  secret, read from the worker stack's ``burst_worker_kubeconfig`` output);
* with a teams file (:mod:`hybridgpu.burst.teams`): the WorkloadPriorityClasses, the teams'
  ClusterQueues and, on the admission cluster, per team namespace a Role and RoleBinding and per
  team a ValidatingAdmissionPolicy with its binding;
* on a worker: the ServiceAccount, ClusterRole and ClusterRoleBinding the manager acts as, a
  ``kubernetes.io/service-account-token`` Secret, and :attr:`KueueCluster.worker_kubeconfig`: the
  kubeconfig built from that token and the cluster's CA data and endpoint (secret), which the
  program exports for the manager.
"""

import base64
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from hybridgpu.burst.kueue import (
    KUBECONFIG_KEY,
    KUEUE_CHART,
    WORKER_KUBECONFIG_OUTPUT,
    cluster_manifests,
    endpoint_from_kubeconfig,
    kueue_helm_values,
    token_secret_name,
    worker_kubeconfig,
)
from hybridgpu.burst.models import BurstPlanFile
from hybridgpu.burst.plan import ClusterPlan
from hybridgpu.components.base import component_options, section, type_token
from hybridgpu.components.frameworks import framework_releases
from hybridgpu.components.inputs import BurstPlanFileArgs, ClusterPlanArgs
from hybridgpu.k8s import managed_by_labels

#: ``WORKER_KUBECONFIG_OUTPUT`` is re-exported for the program (workers export it, the manager reads it).
__all__ = ["KueueCluster", "KueueClusterArgs", "WORKER_KUBECONFIG_OUTPUT"]


class TopLevelCustomResource(pulumi.CustomResource):
    """A custom resource whose fields sit beside ``metadata`` rather than under ``spec`` (Kueue's WorkloadPriorityClass).

    ``k8s.apiextensions.CustomResource`` takes only ``spec``; pulumi-kubernetes' provider sends every
    input of a ``kubernetes:<apiVersion>:<kind>`` resource as the object's fields, so the whole
    manifest is passed as inputs, as ``CustomResource._internal_init`` does for ``spec``.

    Args:
        name: logical name.
        doc: the manifest (``apiVersion``, ``kind``, ``metadata`` and the top-level fields).
        opts: resource options (provider, parent, dependencies).
    """

    def __init__(self, name: str, doc: dict, opts: pulumi.ResourceOptions | None = None):
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=k8s._utilities.get_version()))
        super().__init__(f"kubernetes:{doc['apiVersion']}:{doc['kind']}", name, dict(doc), opts)


class KueueClusterArgs(TypedDict):
    """Inputs of :class:`KueueCluster`."""

    plan: ClusterPlanArgs
    """This cluster's part of the burst plan (``hybridgpu.burst.plan.derive_plan``): its role, flavors, queues, namespaces, MultiKueue wiring."""
    source: BurstPlanFileArgs
    """The burst plan file (Kueue version, namespace, frameworks)."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    kubeconfig: NotRequired[pulumi.Input[str]]
    """The cluster's kubeconfig (its API server URL and CA data go into ``workerKubeconfig``); required on a worker. Default: none."""
    worker_kubeconfigs: NotRequired[dict[str, pulumi.Input[str]]]
    """On the manager, MultiKueueCluster name -> that worker's kubeconfig (a secret, e.g. from a StackReference). Default: none."""


class KueueCluster(pulumi.ComponentResource):
    """Kueue and the burst queues of one cluster (``hybridgpu:index:KueueCluster``).

    Args:
        name: logical name prefix of the children.
        args: :class:`KueueClusterArgs`.
        opts: resource options. ``depends_on``: what the Kueue release waits for (the cluster's CNI or Karpenter).

    Raises:
        ValueError: a MultiKueue worker has no kubeconfig, or a worker has no ``kubeconfig``.

    Attributes:
        framework_releases: the job-framework Helm releases, in install order (the Kueue release depends on them).
        release: the Kueue Helm release.
        worker_kubeconfig: exec-free kubeconfig of this worker for the manager (secret), or None on a manager.
    """

    worker_kubeconfig: pulumi.Output[str] | None
    """Exec-free kubeconfig of this worker for the manager (secret); unset on a manager."""

    def __init__(self, name: str, args: KueueClusterArgs, opts: pulumi.ResourceOptions | None = None):
        cluster = section(ClusterPlan, args["plan"], component="KueueCluster", name=name, field="plan")
        source = section(BurstPlanFile, args["source"], component="KueueCluster", name=name, field="source")
        provider, kubeconfig, worker_kubeconfigs = args["provider"], args.get("kubeconfig"), args.get("worker_kubeconfigs")
        endpoint = pulumi.Output.from_input(kubeconfig).apply(endpoint_from_kubeconfig) if kubeconfig is not None else None
        own, depends_on = component_options("hybridgpu:burst:KueueCluster", opts)
        super().__init__(type_token("KueueCluster"), name, None, own)
        kueue_ns = source.kueue.namespace
        # The charts of the enabled job frameworks first: Kueue enables an integration only where its CRD is.
        self.framework_releases = framework_releases(name, source.kueue.frameworks, provider=provider, parent=self, depends_on=list(depends_on or []))
        self.release = k8s.helm.v3.Release(
            f"{name}-kueue",
            name="kueue",
            chart=KUEUE_CHART,
            version=source.kueue.version,
            namespace=kueue_ns,
            create_namespace=True,
            values=kueue_helm_values(cluster, source),
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*(depends_on or []), *self.framework_releases]),
        )
        # Kueue objects need the chart's CRDs and webhooks; namespaced objects their namespace.
        after_release = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.release])
        namespaces: dict[str, k8s.core.v1.Namespace] = {}
        flavors_and_checks: list[pulumi.Resource] = []
        cluster_queues: list[pulumi.Resource] = []
        token_secret: k8s.core.v1.Secret | None = None
        service_account: k8s.core.v1.ServiceAccount | None = None
        for doc in cluster_manifests(cluster, source):
            kind, meta = doc["kind"], doc["metadata"]
            ns = meta.get("namespace")
            role = f"{kind.lower()}-{ns + '-' if ns and kind == 'LocalQueue' else ''}{meta['name']}"
            if kind == "Namespace":
                namespaces[meta["name"]] = k8s.core.v1.Namespace(f"{name}-{role}", metadata=meta, opts=pulumi.ResourceOptions(parent=self, provider=provider))
            elif kind == "ServiceAccount":
                service_account = k8s.core.v1.ServiceAccount(f"{name}-{role}", metadata=meta, opts=after_release)
            elif kind == "ClusterRole":
                k8s.rbac.v1.ClusterRole(f"{name}-{role}", metadata=meta, rules=doc["rules"], opts=after_release)
            elif kind == "ClusterRoleBinding":
                k8s.rbac.v1.ClusterRoleBinding(f"{name}-{role}", metadata=meta, role_ref=doc["roleRef"], subjects=doc["subjects"], opts=after_release)
            elif kind in ("Role", "RoleBinding"):
                # A team's access in one of its namespaces (hybridgpu.burst.teams.team_access_manifests).
                in_ns = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespaces[ns]] if ns in namespaces else [])
                role = f"{kind.lower()}-{ns}-{meta['name']}"
                if kind == "Role":
                    k8s.rbac.v1.Role(f"{name}-{role}", metadata=meta, rules=doc["rules"], opts=in_ns)
                else:
                    k8s.rbac.v1.RoleBinding(f"{name}-{role}", metadata=meta, role_ref=doc["roleRef"], subjects=doc["subjects"], opts=in_ns)
            elif kind == "ValidatingAdmissionPolicy":
                k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                    f"{name}-{role}", metadata=meta, spec=doc["spec"], opts=pulumi.ResourceOptions(parent=self, provider=provider)
                )
            elif kind == "ValidatingAdmissionPolicyBinding":
                k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                    f"{name}-{role}", metadata=meta, spec=doc["spec"], opts=pulumi.ResourceOptions(parent=self, provider=provider)
                )
            elif kind == "PrometheusRule":
                # The manager's worker alerts (plan manager.workerAlerts): needs only the release's
                # namespace; nothing Kueue depends on waits for it.
                k8s.apiextensions.CustomResource(
                    f"{name}-{role}", api_version=doc["apiVersion"], kind=kind, metadata=meta, spec=doc["spec"], opts=after_release
                )
            elif kind == "WorkloadPriorityClass":
                # No `spec`: `value` and `description` are top-level fields of the CRD.
                TopLevelCustomResource(f"{name}-{role}", doc, opts=after_release)
            elif kind == "Secret":
                # pulumi-kubernetes waits until the token controller filled in `data` (awaiter for
                # service-account-token Secrets, pulumi/pulumi-kubernetes#2048); the ServiceAccount
                # must exist first (pulumi/pulumi-kubernetes#4396).
                token_secret = k8s.core.v1.Secret(
                    f"{name}-{role}",
                    metadata=meta,
                    type=doc["type"],
                    opts=pulumi.ResourceOptions(
                        parent=self,
                        provider=provider,
                        depends_on=[self.release, *([service_account] if service_account else [])],
                        additional_secret_outputs=["data"],
                    ),
                )
            else:
                if kind == "LocalQueue":
                    deps: list[pulumi.Resource] = [self.release, namespaces[ns], *cluster_queues]
                elif kind == "ClusterQueue":
                    deps = [self.release, *flavors_and_checks]
                else:
                    deps = [self.release]
                resource = k8s.apiextensions.CustomResource(
                    f"{name}-{role}",
                    api_version=doc["apiVersion"],
                    kind=kind,
                    metadata=meta,
                    spec=doc["spec"],
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=deps),
                )
                (cluster_queues if kind == "ClusterQueue" else flavors_and_checks).append(resource)

        if cluster.multikueue is not None:
            missing = [w.name for w in cluster.multikueue.workers if w.name not in (worker_kubeconfigs or {})]
            if missing:
                raise ValueError(f"no kubeconfig given for MultiKueue worker(s) {', '.join(missing)}")
            for worker in cluster.multikueue.workers:
                k8s.core.v1.Secret(
                    f"{name}-secret-{worker.secret}",
                    metadata={"name": worker.secret, "namespace": kueue_ns, "labels": managed_by_labels()},
                    type="Opaque",
                    string_data={KUBECONFIG_KEY: pulumi.Output.secret((worker_kubeconfigs or {})[worker.name])},
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.release], additional_secret_outputs=["stringData", "data"]),
                )

        self.worker_kubeconfig = None
        if cluster.worker_access:
            if token_secret is None or endpoint is None:
                raise ValueError(f"KueueCluster {name!r}: worker cluster {cluster.stack!r} needs the input `kubeconfig` (its API endpoint) and a token Secret in its plan")
            context = f"{cluster.stack}-{token_secret_name()}"

            def build(args: list) -> str:
                (server, ca_data), data = args
                token = base64.b64decode((data or {}).get("token", "")).decode()
                return worker_kubeconfig(name=context, server=server, ca_data=ca_data, token=token)

            self.worker_kubeconfig = pulumi.Output.secret(pulumi.Output.all(endpoint, token_secret.data).apply(build))
        self.register_outputs({"release": self.release.name, "worker_kubeconfig": self.worker_kubeconfig})
