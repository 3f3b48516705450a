"""Offline schema validation of rendered Kubernetes manifests (pure, no Pulumi).

Checks the plain-dict manifests that ``hybridgpu.render`` produces before anything is
sent to a cluster, with no network and no cluster:

* built-in Kubernetes kinds (``v1``, ``apps/v1``, ``rbac.authorization.k8s.io/v1``, ...)
  against the OpenAPI-derived JSON schemas shipped by the PyPI package
  ``kubernetes-validate`` 1.37.0, in strict mode (unknown fields are errors), for
  Kubernetes :data:`KUBERNETES_SCHEMA_VERSION` unless told otherwise;
* Karpenter kinds (``karpenter.sh/v1`` NodePool and NodeClaim, ``karpenter.sh/v1alpha1``
  NodeOverlay, ``karpenter.k8s.aws/v1`` EC2NodeClass) with the Node.js script
  ``tools/schemas/validate-crds.mjs`` (``validate-karpenter.mjs`` is the same restricted to
  Karpenter), which uses the npm package ``@kubernetes-models/karpenter`` 2.0.0 (schemas
  generated from the Go API types of aws/karpenter-provider-aws v1.12.1 and
  sigs.k8s.io/karpenter v1.12.0), adds a strict
  unknown-field check the package lacks, and patches in the CRD changes up to Karpenter
  v1.14.1 (Gte/Lte operators, ``Balanced`` consolidation, EC2NodeClass
  ``connectionTracking``/``cpuOptions``);
* Prometheus Operator kinds (``monitoring.coreos.com/v1`` PrometheusRule, ServiceMonitor,
  PodMonitor and Probe) with the same script, which uses the npm package
  ``@kubernetes-models/prometheus-operator`` 6.0.0 (schemas generated from the Go API
  types of prometheus-operator v0.91.0, kubebuilder markers included), the
  same strict unknown-field check, and the constraints the CRDs tightened up to
  prometheus-operator v0.93.0 (``minimum: 0`` on scrape limits and relabeling ``modulus``,
  an ``http(s)://`` pattern on oauth2 ``tokenUrl``; those four CRDs gained no field from
  v0.91.0 to v0.93.0). The other ``monitoring.coreos.com`` kinds (Prometheus,
  PrometheusAgent, Alertmanager, AlertmanagerConfig, ThanosRuler, ScrapeConfig) gained
  fields after v0.91.0 and are reported as *skipped*; a kind the group does not have
  (e.g. ``ServiceMonitors``) is an error;
* kinds with a CRD file under ``tools/schemas/crds/`` (:data:`CRD_FILES`: the NVIDIA Network
  Operator's ``mellanox.com/v1alpha1`` NicClusterPolicy of v26.4.1; Karpenter v1.14.1's
  ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer; JobSet v0.12.0, the Kubeflow Trainer v2.2.1's
  TrainJob and ClusterTrainingRuntime, KubeRay v1.6.2's RayJob and RayCluster) against that CRD's
  ``openAPIV3Schema`` with jsonschema, unknown fields refused (:func:`validate_crd_files`);
* Kueue kinds (``kueue.x-k8s.io/v1beta2`` ResourceFlavor, ClusterQueue, LocalQueue,
  AdmissionCheck, MultiKueueConfig, MultiKueueCluster) against the CRD constraints encoded in
  :mod:`hybridgpu.burst.schema` (Kueue v0.19.2 CRDs; no installable schema package exists);
* every other API group (NVIDIA GPU Operator, ...) has no offline schema here and
  is reported as a *skipped* finding with the reason, never as valid.

Not covered: CEL rules (``x-kubernetes-validations``) of the CRDs and admission webhooks
(e.g. the Prometheus Operator's, which parses the PromQL ``expr``; here ``expr`` is only
checked to be a string or integer); only a real cluster runs them.

Sources (checked 2026-11): kubernetes-validate 1.37.0 (PyPI; ships schemas for
Kubernetes 1.25-1.37); @kubernetes-models/karpenter 2.0.0 and
@kubernetes-models/prometheus-operator 6.0.0 (npm; 6.0.0 is that package's ``latest``,
and its CHANGELOG and ``go.mod`` in tommy351/kubernetes-models-ts
``third-party/prometheus-operator`` say the types come from prometheus-operator v0.91.0;
both pinned exactly in ``tools/schemas/package.json`` + ``package-lock.json``); the CRD
YAMLs of prometheus-operator v0.91.0 (2026-05-05) and v0.93.0 (2026-07-28, the newest tag
in the upstream snapshot read, of 2026-08-08) in ``example/prometheus-operator-crd/``.

Setup on a fresh machine (from the repository root)::

    pip install 'kubernetes-validate==1.37.0'   # or: pip install -e '.[test]'
    npm ci --prefix tools/schemas               # Node.js >= 20

Command line::

    python -m hybridgpu.schemas [--kubernetes-version 1.35] [--fail-on-skipped] [--tools-dir DIR] FILE...

reads YAML (multi-document) or JSON files (``-`` for stdin), prints one line per
manifest and exits 1 if any manifest is invalid. ``tools/schemas`` is repository tooling, not
package data: it is found at or above the working directory (or given with ``--tools-dir``).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.checkout import CheckoutFileMissing, find_checkout
from hybridgpu.datafile import SAFE_LOADER
from hybridgpu.k8s import KUEUE_GROUP

#: Kubernetes version whose built-in schemas :func:`validate_core` uses by default.
#:
#: Why 1.36: kubernetes-validate 1.37.0 ships schemas for 1.25-1.37. Of those, 1.36 is the
#: newest that the whole stack supports in late 2026: EKS has offered it since 2026-06-02
#: (standard support until mid 2027) and Karpenter v1.14 (the version hybridgpu deploys)
#: supports Kubernetes 1.30-1.36. 1.37 exists upstream but Karpenter v1.14 does not
#: support it; 1.34 leaves EKS standard support on 2026-12-02. Built-in kinds that
#: hybridgpu renders (Namespace, ServiceAccount, ConfigMap, RBAC, ...) have the same
#: schema in 1.34-1.37. Pass the cluster's own version (e.g. the stack's
#: ``kubernetesVersion``, default 1.35) to validate for exactly that cluster.
KUBERNETES_SCHEMA_VERSION = "1.36.0"

#: The npm package (and exact version) whose schemas validate Karpenter kinds.
KARPENTER_SCHEMA_PACKAGE = "@kubernetes-models/karpenter@2.0.0"

#: The npm package (and exact version) whose schemas validate Prometheus Operator kinds.
PROMETHEUS_OPERATOR_SCHEMA_PACKAGE = "@kubernetes-models/prometheus-operator@6.0.0"

#: The prometheus-operator release whose Go API types :data:`PROMETHEUS_OPERATOR_SCHEMA_PACKAGE`
#: was generated from (its CHANGELOG for 6.0.0). Constraints tightened up to v0.93.0 are
#: checked on top (see ``tools/schemas/validate-crds.mjs``).
PROMETHEUS_OPERATOR_SCHEMA_SOURCE = "prometheus-operator v0.91.0"

#: ``tools/schemas`` of the source checkout (package.json, lock file and the Node.js script),
#: relative to the checkout root. Not package data: see :func:`schema_tools_dir`.
SCHEMA_TOOLS = Path("tools") / "schemas"

#: API groups validated by :func:`validate_karpenter`.
KARPENTER_GROUPS = frozenset({"karpenter.sh", "karpenter.k8s.aws"})

#: API groups validated by :func:`validate_prometheus_operator`.
PROMETHEUS_OPERATOR_GROUPS = frozenset({"monitoring.coreos.com"})

#: CRD API groups validated by :func:`validate_crds` (one ``node`` process for all).
CRD_GROUPS = KARPENTER_GROUPS | PROMETHEUS_OPERATOR_GROUPS

#: Built-in API groups (as in the Kubernetes OpenAPI), validated by :func:`validate_core`.
#: ``""`` is the core group (``apiVersion: v1``). A group outside this set and
#: :data:`CRD_GROUPS` is a CRD group and is reported as skipped by :func:`validate_all`.
CORE_GROUPS = frozenset(
    {
        "",
        "admission.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "imagepolicy.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)

#: CRDs kept as files under ``tools/schemas/crds/`` (copied from the pinned upstream release), validated with
#: :func:`validate_crd_files` (jsonschema over the CRD's ``openAPIV3Schema``, unknown fields refused):
#: ``(group, kind) -> file``. NicClusterPolicy: Mellanox/network-operator v26.4.1 (85afd6d9)
#: ``deployment/network-operator/crds/mellanox.com_nicclusterpolicies.yaml``, read 2026-11-24.
CRD_FILES: dict[tuple[str, str], str] = {
    ("mellanox.com", "NicClusterPolicy"): "mellanox.com_nicclusterpolicies-v26.4.1.yaml",
    # Karpenter v1.14.1's CapacityBuffer (aws/karpenter-provider-aws v1.14.1 pkg/apis/crds/, read 2026-11-27): the
    # npm Karpenter package predates it.
    ("autoscaling.x-k8s.io", "CapacityBuffer"): "autoscaling.x-k8s.io_capacitybuffers-v1.14.1.yaml",
    # The job frameworks' CRDs at the pins of hybridgpu.burst.frameworks (read 2026-11-27; field descriptions
    # removed): the kinds of docs/examples/ and of jobs `hybridgpu job check` reads.
    ("jobset.x-k8s.io", "JobSet"): "jobset.x-k8s.io_jobsets-v0.12.0.yaml",
    ("trainer.kubeflow.org", "TrainJob"): "trainer.kubeflow.org_trainjobs-v2.2.1.yaml",
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"): "trainer.kubeflow.org_clustertrainingruntimes-v2.2.1.yaml",
    ("ray.io", "RayJob"): "ray.io_rayjobs-v1.6.2.yaml",
    ("ray.io", "RayCluster"): "ray.io_rayclusters-v1.6.2.yaml",
}
#: API groups validated by :func:`validate_crd_files`.
CRD_FILE_GROUPS = frozenset(group for group, _ in CRD_FILES)

_CRD_SCRIPT = "validate-crds.mjs"
_NPM_FIX = "npm ci --prefix tools/schemas"

#: Families of ``validate-crds.mjs`` (its ``--only`` values): API groups and npm package.
_CRD_FAMILIES: dict[str, tuple[frozenset[str], str]] = {
    "karpenter": (KARPENTER_GROUPS, "@kubernetes-models/karpenter"),
    "prometheus-operator": (PROMETHEUS_OPERATOR_GROUPS, "@kubernetes-models/prometheus-operator"),
}


class SchemaToolMissing(RuntimeError):
    """A tool the validation needs is not installed (Node.js, the npm packages, or
    kubernetes-validate). The message says which command installs it."""


def schema_tools_dir(root: Path | str | None = None) -> Path:
    """``tools/schemas`` of the hybridgpu source checkout (the CRD script and its ``node_modules``).

    The npm schema tools are repository tooling, not part of the installed package.

    Args:
        root: the checkout root; default: found from the working directory (the nearest
            directory at or above it that holds ``tools/schemas/validate-crds.mjs``).

    Raises:
        SchemaToolMissing: no such checkout; the message says how to fix it.
    """
    try:
        found = find_checkout(SCHEMA_TOOLS / _CRD_SCRIPT, root=root, needed_by="validating Karpenter and Prometheus Operator kinds")
    except CheckoutFileMissing as exc:
        raise SchemaToolMissing(
            f"{exc}, or give its tools/schemas with --tools-dir (tools_dir= in Python), set up once with `{_NPM_FIX}`"
        ) from None
    return found / SCHEMA_TOOLS


class SchemaToolError(RuntimeError):
    """The CRD validation script (``tools/schemas/validate-crds.mjs``) failed to run or
    answered something unreadable (a crash, a time-out, or output that is not the expected
    JSON)."""


@dataclass(frozen=True)
class SchemaFinding:
    """The verdict on one manifest.

    A verdict (ok, skipped or failed), not a problem type: it is given for every manifest,
    valid ones included. It checks the toolkit's own rendered output; where the manifest is a
    user's input (a job file, ``hybridgpu job check``), the caller turns a failed verdict into
    a :class:`hybridgpu.errors.Issue` naming the file (:func:`hybridgpu.stack.jobs.object_issues`).

    Attributes:
        kind: the manifest's ``kind`` ("" when missing).
        name: ``metadata.name`` ("" when missing).
        api_version: the manifest's ``apiVersion`` ("" when missing).
        ok: True only if the manifest was validated and has no error. Always False when
            ``skipped``.
        skipped: True if no offline schema exists for the manifest's API group, or the
            group is validated but not this kind (e.g. ``monitoring.coreos.com/v1``
            Prometheus); ``errors`` then holds the reason.
        errors: one message per problem, each starting with the field path, e.g.
            ``spec.weight: must be <= 100 (got 101)`` or
            ``spec.template.spec.foo: unknown field "foo" (...)``.
        index: position of the manifest in the list given to the validator (-1 if unknown).
    """

    kind: str
    name: str
    api_version: str
    ok: bool
    skipped: bool = False
    errors: list[str] = field(default_factory=list)
    index: int = -1

    @property
    def failed(self) -> bool:
        """True if the manifest was validated and has at least one error."""
        return not self.ok and not self.skipped

    def __str__(self) -> str:
        status = "OK  " if self.ok else "SKIP" if self.skipped else "FAIL"
        head = f"{status} {self.kind or '?'}/{self.name or '?'} ({self.api_version or '?'})"
        return "\n".join([head, *(f"    {e}" for e in self.errors)])


def format_findings(findings: Sequence[SchemaFinding]) -> str:
    """Render findings one per block plus a closing count line, for logs and the CLI.

    Returns:
        Text such as ``FAIL NodePool/gpu (karpenter.sh/v1)`` / indented errors ... /
        ``2 ok, 1 failed, 1 skipped``.
    """
    ok = sum(f.ok for f in findings)
    failed = sum(f.failed for f in findings)
    skipped = sum(f.skipped for f in findings)
    return "\n".join([*(str(f) for f in findings), f"{ok} ok, {failed} failed, {skipped} skipped"])


# --------------------------------------------------------------------------- helpers


def _api_group(api_version: object) -> str | None:
    """``"v1"`` -> ``""``, ``"apps/v1"`` -> ``"apps"``; None if not a usable apiVersion."""
    if not isinstance(api_version, str) or not api_version or api_version.count("/") > 1:
        return None
    return api_version.split("/")[0] if "/" in api_version else ""


def _meta(manifest: Any) -> tuple[str, str, str]:
    if not isinstance(manifest, Mapping):
        return "", "", ""
    meta = manifest.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    kind, api_version = manifest.get("kind"), manifest.get("apiVersion")
    return (
        kind if isinstance(kind, str) else "",
        name if isinstance(name, str) else "",
        api_version if isinstance(api_version, str) else "",
    )


def _finding(manifest: Any, index: int, *, ok: bool, errors: list[str], skipped: bool = False) -> SchemaFinding:
    kind, name, api_version = _meta(manifest)
    return SchemaFinding(
        kind=kind, name=name, api_version=api_version, ok=ok, skipped=skipped, errors=errors, index=index
    )


def _shape_error(manifest: Any) -> str | None:
    """Why a manifest cannot be dispatched at all, or None."""
    if not isinstance(manifest, Mapping):
        return f"(root): manifest is not a mapping (got {type(manifest).__name__})"
    if not isinstance(manifest.get("kind"), str) or not manifest.get("kind"):
        return "(root): manifest has no string kind"
    if _api_group(manifest.get("apiVersion")) is None:
        return f"(root): manifest has no valid apiVersion (got {manifest.get('apiVersion')!r})"
    return None


_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


def _format_path(parts: Sequence[object]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(str(part))}]"
    return out or "(root)"


def _load_kubernetes_validate() -> Any:
    try:
        import kubernetes_validate
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SchemaToolMissing(
            "kubernetes-validate (a dependency of hybridgpu) is not installed: reinstall hybridgpu "
            "(`pip install hybridgpu`, or `pip install -e .` in a checkout)"
        ) from exc
    return kubernetes_validate


def _normalize_version(kubernetes_version: str, kv: Any) -> str:
    """``"v1.35"``/``"1.35"``/``"1.35.2"`` -> ``"1.35.0"``; ValueError if not shipped."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", str(kubernetes_version).strip())
    minors = {".".join(v.split(".")[:2]) for v in kv.utils.all_versions()}
    shipped = sorted(minors, key=lambda v: tuple(map(int, v.split("."))))
    if not match or f"{match[1]}.{match[2]}" not in shipped:
        raise ValueError(
            f"kubernetes_version {kubernetes_version!r} is not supported by kubernetes-validate "
            f"{kv.__version__}: use one of {', '.join(shipped)}"
        )
    return f"{match[1]}.{match[2]}.0"


def _core_errors(error: Any) -> list[str]:
    """kubernetes-validate's ValidationError -> field-path messages."""
    path = list(error.absolute_path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        declared = set(schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in declared]
        if unknown:
            return [f'{_format_path([*path, k])}: unknown field "{k}"' for k in unknown]
    return [f"{_format_path(path)}: {error.message}"]


# --------------------------------------------------------------------------- validators


def crd_json_schema(crd: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of a CRD version (default: the storage version) as a strict JSON Schema.

    Strict as the API server's field validation is (``kubectl``/server-side apply default ``Strict``
    since Kubernetes 1.27): an object schema that lists ``properties`` refuses other keys unless it
    has ``additionalProperties`` or ``x-kubernetes-preserve-unknown-fields``;
    ``x-kubernetes-int-or-string`` becomes "integer or string"; ``metadata`` is any object. CEL rules
    (``x-kubernetes-validations``) are dropped: only a cluster evaluates them.

    Raises:
        KeyError: no such version.
    """
    versions = crd["spec"]["versions"]
    chosen = next(v for v in versions if (v["name"] == version if version else v.get("storage")))

    def strict(node: Any) -> Any:
        if isinstance(node, Mapping):
            out = {k: strict(v) for k, v in node.items() if not str(k).startswith("x-kubernetes-")}
            if "properties" in out and "additionalProperties" not in out and not node.get("x-kubernetes-preserve-unknown-fields"):
                out["additionalProperties"] = False
            if node.get("x-kubernetes-int-or-string"):
                out.pop("type", None)
                out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
            return out
        if isinstance(node, list):
            return [strict(v) for v in node]
        return node

    schema = strict(chosen["schema"]["openAPIV3Schema"])
    schema.setdefault("properties", {})["metadata"] = {"type": "object"}
    return schema


@functools.lru_cache(maxsize=None)
def _crd_schema(path: str) -> dict[str, Any]:
    """The JSON schema of the CRD file at ``path`` (:func:`crd_json_schema`), read once per process with
    libyaml when PyYAML has it (the framework CRDs are megabytes: the pure-Python loader took seconds)."""
    with open(path, encoding="utf-8") as handle:
        return crd_json_schema(yaml.load(handle.read(), Loader=SAFE_LOADER))


def validate_crd_files(manifests: Sequence[Mapping[str, Any]], *, tools_dir: Path | str | None = None) -> list[SchemaFinding]:
    """Validate kinds of :data:`CRD_FILES` against their CRD (``tools/schemas/crds/``) with jsonschema, strictly.

    A kind of such a group that has no CRD file here is an error. Errors name the field path.

    Raises:
        SchemaToolMissing: no checkout with ``tools/schemas``, or ``jsonschema`` is not installed
            (a dependency of hybridgpu: reinstall it).
    """
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SchemaToolMissing("jsonschema (a dependency of hybridgpu) is not installed: reinstall hybridgpu (`pip install hybridgpu`, or `pip install -e .` in a checkout)") from exc
    crds_dir = (Path(tools_dir) if tools_dir is not None else schema_tools_dir()) / "crds"
    validators: dict[str, Any] = {}
    findings = []
    for index, manifest in enumerate(manifests):
        group = _api_group(manifest.get("apiVersion"))
        file = CRD_FILES.get((str(group), str(manifest.get("kind"))))
        if file is None:
            findings.append(_finding(manifest, index, ok=False, errors=[f"kind: no CRD of {manifest.get('kind')!r} in group {group!r} under {crds_dir}"]))
            continue
        if file not in validators:
            validators[file] = jsonschema.Draft7Validator(_crd_schema(str(crds_dir / file)))
        errors = [f"{_format_path(list(e.absolute_path))}: {e.message}" for e in validators[file].iter_errors(dict(manifest))]
        findings.append(_finding(manifest, index, ok=not errors, errors=errors))
    return findings



def validate_core(
    manifests: Sequence[Mapping[str, Any]], kubernetes_version: str = KUBERNETES_SCHEMA_VERSION
) -> list[SchemaFinding]:
    """Validate built-in Kubernetes kinds with kubernetes-validate in strict mode.

    Strict mode uses the ``-strict`` schemas, whose objects forbid unknown properties, so a
    misspelled or invented field is an error. An apiVersion/kind the chosen Kubernetes
    version does not serve (e.g. ``policy/v1beta1`` PodDisruptionBudget, or a CRD kind
    given here by mistake) is an error too. kubernetes-validate stops at the first error,
    so each finding holds at most one.

    Args:
        manifests: manifests as plain dicts (e.g. from ``yaml.safe_load_all``).
        kubernetes_version: ``"1.36"``, ``"1.36.0"`` or ``"v1.36"``; any version
            kubernetes-validate 1.37.0 ships (1.25-1.37). Default :data:`KUBERNETES_SCHEMA_VERSION`.

    Returns:
        One :class:`SchemaFinding` per manifest, in input order (``skipped`` is always False).

    Raises:
        ValueError: ``kubernetes_version`` is malformed or not shipped by kubernetes-validate.
        SchemaToolMissing: kubernetes-validate is not installed.
    """
    kv = _load_kubernetes_validate()
    version = _normalize_version(kubernetes_version, kv)
    findings: list[SchemaFinding] = []
    for index, manifest in enumerate(manifests):
        problem = _shape_error(manifest)
        if problem:
            findings.append(_finding(manifest, index, ok=False, errors=[problem]))
            continue
        try:
            kv.validate(dict(manifest), version, strict=True)
        except kv.ValidationError as exc:
            findings.append(_finding(manifest, index, ok=False, errors=_core_errors(exc)))
        except kv.SchemaNotFoundError:
            errors = [
                f"(root): {manifest['apiVersion']} {manifest['kind']} is not a built-in kind of "
                f"Kubernetes {version[:-2]} (kubernetes-validate {kv.__version__} has no schema for it)"
            ]
            findings.append(_finding(manifest, index, ok=False, errors=errors))
        else:
            findings.append(_finding(manifest, index, ok=True, errors=[]))
    return findings


def validate_crds(
    manifests: Sequence[Mapping[str, Any]],
    *,
    tools_dir: Path | str | None = None,
    timeout: float = 120.0,
    only: Sequence[str] | None = None,
) -> list[SchemaFinding]:
    """Validate Karpenter and Prometheus Operator manifests with ``tools/schemas/validate-crds.mjs``.

    Runs one ``node`` process for the whole list. Checks types, enums, required fields,
    bounds and patterns from the pinned npm packages (:data:`KARPENTER_SCHEMA_PACKAGE`,
    :data:`PROMETHEUS_OPERATOR_SCHEMA_PACKAGE`), rejects unknown fields at any depth, and
    follows the newer CRDs (Karpenter v1.14.1, prometheus-operator v0.93.0). Kinds:

    * ``karpenter.sh/v1`` NodePool, NodeClaim; ``karpenter.sh/v1alpha1`` NodeOverlay;
      ``karpenter.k8s.aws/v1`` EC2NodeClass;
    * ``monitoring.coreos.com/v1`` PrometheusRule, ServiceMonitor, PodMonitor, Probe. The
      group's other kinds (Prometheus, Alertmanager, ThanosRuler, PrometheusAgent,
      ScrapeConfig, AlertmanagerConfig) come back ``skipped``: their CRDs gained fields
      after the package's prometheus-operator v0.91.0.

    Any other apiVersion/kind (including one outside :data:`CRD_GROUPS`) is an error.

    Args:
        manifests: JSON-serializable manifests as plain dicts.
        tools_dir: directory holding the script and its ``node_modules``
            (default: :func:`schema_tools_dir`, ``tools/schemas`` of the checkout found from
            the working directory).
        timeout: seconds before the node process is abandoned.
        only: restrict to these script families (``"karpenter"``,
            ``"prometheus-operator"``); a manifest of another family is then an error.
            Default: both.

    Returns:
        One :class:`SchemaFinding` per manifest, in input order.

    Raises:
        SchemaToolMissing: ``node`` is not on PATH, or the npm package a manifest needs is
            not installed in ``tools_dir/node_modules`` (fix: ``npm ci --prefix tools/schemas``),
            or no ``tools_dir`` was given and the working directory is not in a source checkout.
        SchemaToolError: the script crashed, timed out or printed unexpected output.
        TypeError: a manifest is not JSON-serializable (e.g. holds a Pulumi Output).
        ValueError: ``only`` names an unknown family.
    """
    manifests = list(manifests)
    if not manifests:
        return []
    families = list(_CRD_FAMILIES) if only is None else list(only)
    unknown = [f for f in families if f not in _CRD_FAMILIES]
    if unknown or not families:
        raise ValueError(f"only: unknown CRD families {unknown}; use some of {', '.join(_CRD_FAMILIES)}")
    tools = Path(tools_dir) if tools_dir is not None else schema_tools_dir()
    script = tools / _CRD_SCRIPT
    if not script.is_file():
        raise SchemaToolMissing(f"{script} is missing: this checkout lacks tools/schemas")
    groups = {_api_group(m.get("apiVersion")) for m in manifests if isinstance(m, Mapping)}
    for family in families:
        family_groups, package = _CRD_FAMILIES[family]
        if groups & family_groups and not (tools / "node_modules" / package / "package.json").is_file():
            raise SchemaToolMissing(
                f"{package} is not installed in {tools / 'node_modules'}: run `{_NPM_FIX}` from the "
                "repository root (needs Node.js >= 20 and npm)"
            )
    node = shutil.which("node")
    if node is None:
        raise SchemaToolMissing(f"`node` is not on PATH: install Node.js >= 20, then run `{_NPM_FIX}`")
    try:
        payload = json.dumps(manifests)
    except TypeError as exc:
        raise TypeError(f"CRD manifests must be JSON-serializable plain data: {exc}") from exc
    command = [node, str(script)]
    if only is not None:
        command += ["--only", ",".join(families)]
    try:
        proc = subprocess.run(
            command,
            input=payload,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=tools,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SchemaToolError(f"{script.name} did not finish within {timeout:g}s") from exc
    if proc.returncode not in (0, 1):
        raise SchemaToolError(f"{script.name} failed with exit status {proc.returncode}: {proc.stderr.strip()}")
    try:
        results = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise SchemaToolError(f"{script.name} printed no JSON: {proc.stdout[:200]!r} {proc.stderr.strip()}") from exc
    if not isinstance(results, list) or len(results) != len(manifests):
        got = len(results) if isinstance(results, list) else "no"
        raise SchemaToolError(f"{script.name} returned {got} results for {len(manifests)} manifests")
    findings = []
    for index, (manifest, result) in enumerate(zip(manifests, results)):
        if not isinstance(result, Mapping):
            raise SchemaToolError(f"{script.name} returned a non-object result: {result!r}")
        errors = [str(e) for e in result.get("errors", [])]
        skipped = bool(result.get("skipped")) and not result.get("ok")
        ok = bool(result.get("ok")) and not errors and not skipped
        findings.append(_finding(manifest, index, ok=ok, skipped=skipped, errors=errors))
    return findings


def validate_karpenter(
    manifests: Sequence[Mapping[str, Any]],
    *,
    tools_dir: Path | str | None = None,
    timeout: float = 120.0,
) -> list[SchemaFinding]:
    """Validate Karpenter manifests: :func:`validate_crds` restricted to Karpenter.

    Checks types, enums, required fields, bounds and patterns from
    ``@kubernetes-models/karpenter`` 2.0.0, rejects unknown fields at any depth, and
    accepts the Karpenter v1.14.1 CRD additions. Any apiVersion/kind other than
    karpenter.sh/v1 NodePool|NodeClaim, karpenter.sh/v1alpha1 NodeOverlay and
    karpenter.k8s.aws/v1 EC2NodeClass is reported as an error.

    Returns:
        One :class:`SchemaFinding` per manifest, in input order (``skipped`` is always False).

    Raises:
        SchemaToolMissing, SchemaToolError, TypeError: as :func:`validate_crds`.
    """
    return validate_crds(manifests, tools_dir=tools_dir, timeout=timeout, only=("karpenter",))


def validate_prometheus_operator(
    manifests: Sequence[Mapping[str, Any]],
    *,
    tools_dir: Path | str | None = None,
    timeout: float = 120.0,
) -> list[SchemaFinding]:
    """Validate Prometheus Operator manifests: :func:`validate_crds` restricted to them.

    ``monitoring.coreos.com/v1`` PrometheusRule, ServiceMonitor, PodMonitor and Probe are
    checked against ``@kubernetes-models/prometheus-operator`` 6.0.0 (prometheus-operator
    v0.91.0 types) plus the v0.93.0 CRD tightenings, unknown fields rejected at any depth
    (e.g. ``spec.groups[0].rules[0].severity``, which belongs under ``labels``). The
    group's other kinds come back ``skipped``; anything else is an error.

    Returns:
        One :class:`SchemaFinding` per manifest, in input order.

    Raises:
        SchemaToolMissing, SchemaToolError, TypeError: as :func:`validate_crds`.
    """
    return validate_crds(manifests, tools_dir=tools_dir, timeout=timeout, only=("prometheus-operator",))


def validate_all(
    manifests: Sequence[Mapping[str, Any]], kubernetes_version: str = KUBERNETES_SCHEMA_VERSION, *, tools_dir: Path | str | None = None
) -> list[SchemaFinding]:
    """Validate a mixed list of manifests, each with the validator for its API group.

    * :data:`CRD_GROUPS` (Karpenter, Prometheus Operator) -> :func:`validate_crds` (one node
      process for all; kinds of ``monitoring.coreos.com`` it does not check come back
      ``skipped``);
    * :data:`CORE_GROUPS` -> :func:`validate_core` at ``kubernetes_version``;
    * ``kueue.x-k8s.io`` -> :func:`hybridgpu.burst.schema.kueue_errors`;
    * any other group (a CRD such as ``nvidia.com``) -> a finding with
      ``skipped=True``, ``ok=False`` and the reason in ``errors``;
    * a manifest that is not a mapping or lacks kind/apiVersion -> a failed finding.

    Args:
        manifests: manifests as plain dicts.
        kubernetes_version: Kubernetes version for the built-in kinds (see :func:`validate_core`).
        tools_dir: ``tools/schemas`` for the CRD kinds (default: :func:`schema_tools_dir`).

    Returns:
        One :class:`SchemaFinding` per manifest, in input order, ``index`` set.

    Raises:
        ValueError: ``kubernetes_version`` is not supported (see :func:`validate_core`).
        SchemaToolMissing: a needed tool is not installed (Node.js and an npm package only
            when the list holds a manifest of its CRD group).
        SchemaToolError: the CRD validation script failed.
    """
    manifests = list(manifests)
    slots: list[SchemaFinding | None] = [None] * len(manifests)
    crds: list[int] = []
    core: list[int] = []
    for index, manifest in enumerate(manifests):
        problem = _shape_error(manifest)
        if problem:
            slots[index] = _finding(manifest, index, ok=False, errors=[problem])
            continue
        group = _api_group(manifest["apiVersion"])
        if group in CRD_GROUPS:
            crds.append(index)
        elif group in CORE_GROUPS:
            core.append(index)
        elif group in CRD_FILE_GROUPS:
            slots[index] = replace(validate_crd_files([manifest], tools_dir=tools_dir)[0], index=index)
        elif group == KUEUE_GROUP:
            # No installable Kueue schema package exists; the v1beta2 CRD constraints are encoded
            # as models in hybridgpu.burst.schema (citing the CRD files of Kueue v0.19.2).
            from hybridgpu.burst.schema import kueue_errors

            errors = kueue_errors(dict(manifest))
            slots[index] = _finding(manifest, index, ok=not errors, errors=errors)
        else:
            reason = (
                f"skipped: no offline schema for API group {group!r} ({manifest['apiVersion']} "
                f"{manifest['kind']}); validate it against its CRD on a cluster"
            )
            slots[index] = _finding(manifest, index, ok=False, skipped=True, errors=[reason])
    for indices, run in ((core, lambda ms: validate_core(ms, kubernetes_version)), (crds, lambda ms: validate_crds(ms, tools_dir=tools_dir))):
        if not indices:
            continue
        for index, finding in zip(indices, run([manifests[i] for i in indices])):
            slots[index] = SchemaFinding(
                kind=finding.kind,
                name=finding.name,
                api_version=finding.api_version,
                ok=finding.ok,
                skipped=finding.skipped,
                errors=finding.errors,
                index=index,
            )
    return [finding for finding in slots if finding is not None]


# --------------------------------------------------------------------------- CLI


def _read_manifests(path: str) -> list[Any]:
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    if path.endswith(".json"):
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    docs: list[Any] = []
    for doc in yaml.safe_load_all(text):
        if doc is None:
            continue
        if isinstance(doc, Mapping) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            docs.extend(doc["items"])
        else:
            docs.append(doc)
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hybridgpu.schemas [--kubernetes-version V] [--fail-on-skipped] [--tools-dir DIR] FILE...``

    Returns:
        0 if nothing failed (skipped manifests count as failures only with
        ``--fail-on-skipped``), 1 if a manifest is invalid, 2 on a usage or tool error.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m hybridgpu.schemas", description="Validate rendered Kubernetes manifests offline."
    )
    parser.add_argument("files", nargs="+", help="YAML (multi-document) or .json files; - for stdin")
    parser.add_argument("--kubernetes-version", default=KUBERNETES_SCHEMA_VERSION)
    parser.add_argument("--fail-on-skipped", action="store_true", help="exit 1 if a manifest has no offline schema")
    parser.add_argument("--tools-dir", default=None, help="tools/schemas of a source checkout (default: found from the working directory)")
    args = parser.parse_args(argv)
    manifests: list[Any] = []
    try:
        for path in args.files:
            manifests.extend(_read_manifests(path))
        findings = validate_all(manifests, args.kubernetes_version, tools_dir=args.tools_dir)
    except (OSError, ValueError, yaml.YAMLError, SchemaToolMissing, SchemaToolError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_findings(findings))
    bad = any(f.failed for f in findings) or (args.fail_on_skipped and any(f.skipped for f in findings))
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
