"""Offline schema validation of rendered manifests (hybridgpu.schemas + tools/schemas).

Needs the tooling installed once: ``npm ci --prefix tools/schemas`` (Node.js >= 20) and
``kubernetes-validate==1.37.0``. Without it the Karpenter and Prometheus Operator tests
fail with SchemaToolMissing naming the install command (on purpose: a skip would hide it).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
from typing import Any

import pytest

from hybridgpu import schemas
from hybridgpu.schemas import (
    CRD_GROUPS,
    KUBERNETES_SCHEMA_VERSION,
    PROMETHEUS_OPERATOR_SCHEMA_PACKAGE,
    PROMETHEUS_OPERATOR_SCHEMA_SOURCE,
    SchemaFinding,
    SchemaToolMissing,
    format_findings,
    validate_all,
    validate_core,
    validate_crds,
    validate_karpenter,
    validate_prometheus_operator,
    schema_tools_dir,
)
from tests.helpers import ROOT

#: tools/schemas of this checkout (repository tooling, found from the root, not package data).
SCHEMA_TOOLS_DIR = schema_tools_dir(ROOT)

CLUSTER = "hybridgpu-dev"

GPU_NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "gpu-l40s", "labels": {"app.kubernetes.io/managed-by": "hybridgpu"}},
    "spec": {
        "template": {
            "metadata": {"labels": {"hybridgpu.io/nodepool": "gpu-l40s", "nvidia.com/gpu.present": "true"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu-al2023"},
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {
                        "key": "karpenter.k8s.aws/instance-family",
                        "operator": "In",
                        "values": ["g6e", "g6", "g5"],
                        "minValues": 2,
                    },
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["g6e.xlarge", "g6e.2xlarge", "g6.xlarge", "g6.2xlarge", "g5.xlarge", "g5.2xlarge"],
                        "minValues": 5,
                    },
                    {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]},
                ],
                "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                "expireAfter": "720h",
                "terminationGracePeriod": "1h",
            },
        },
        "limits": {"nvidia.com/gpu": "16", "cpu": "1000", "memory": "4000Gi"},
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "10m",
            "budgets": [
                {"nodes": "10%"},
                {
                    "nodes": "0",
                    "schedule": "0 9 * * mon-fri",
                    "duration": "8h",
                    "reasons": ["Underutilized", "Drifted"],
                },
            ],
        },
        "weight": 50,
    },
}

GPU_NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "gpu-al2023"},
    "spec": {
        "amiSelectorTerms": [{"alias": "al2023@v20251015"}],
        "role": f"KarpenterNodeRole-{CLUSTER}",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {
                    "volumeSize": "200Gi",
                    "volumeType": "gp3",
                    "encrypted": True,
                    "deleteOnTermination": True,
                    "iops": 3000,
                    "throughput": 125,
                },
            }
        ],
        "kubelet": {"maxPods": 110},
        "tags": {"hybridgpu.io/cluster": CLUSTER, "cost-center": "ml-platform"},
    },
}

NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "gpu-workloads", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}},
}
SERVICE_ACCOUNT = {
    "apiVersion": "v1",
    "kind": "ServiceAccount",
    "metadata": {
        "name": "karpenter",
        "namespace": "kube-system",
        "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/KarpenterController"},
    },
    "automountServiceAccountToken": True,
}
CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
    "data": {
        "any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
    },
}
# A CRD group with no offline schema here (Kueue kinds are validated: see hybridgpu.burst.schema; JobSet,
# TrainJob and Ray kinds too since issue 30: tests/test_framework_crds.py).
OTHER_CRD = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": {"name": "gpu"},
    "spec": {"replicas": 1},
}
NVIDIA_CLUSTER_POLICY = {
    "apiVersion": "nvidia.com/v1",
    "kind": "ClusterPolicy",
    "metadata": {"name": "cluster-policy"},
    "spec": {"driver": {"enabled": False}},
}

GPU_IDLE_RULE: dict[str, Any] = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "PrometheusRule",
    "metadata": {
        "name": "hybridgpu-gpu-idle",
        "namespace": "gpu-operator",
        "labels": {"app.kubernetes.io/managed-by": "hybridgpu", "release": "kube-prometheus-stack"},
    },
    "spec": {
        "groups": [
            {
                "name": "hybridgpu-gpu-utilization",
                "interval": "1m",
                "rules": [
                    {
                        "alert": "HybridGpuIdle",
                        "expr": "avg by (node, gpu, UUID) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[60m])) < 5",
                        "for": "15m",
                        "labels": {"severity": "warning", "team": "ml-platform"},
                        "annotations": {
                            "summary": "GPU {{ $labels.gpu }} on node {{ $labels.node }} is idle",
                            "description": "averaged {{ $value | humanize }}% utilization over the last 60 minutes",
                        },
                    },
                    {"record": "hybridgpu:gpu_util:avg5m", "expr": "avg by (node) (DCGM_FI_DEV_GPU_UTIL)"},
                ],
            }
        ]
    },
}

DCGM_SERVICE_MONITOR: dict[str, Any] = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "ServiceMonitor",
    "metadata": {
        "name": "nvidia-dcgm-exporter",
        "namespace": "gpu-operator",
        "labels": {"app": "nvidia-dcgm-exporter"},
    },
    "spec": {
        "selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
        "namespaceSelector": {"matchNames": ["gpu-operator"]},
        "endpoints": [
            {
                "port": "gpu-metrics",
                "path": "/metrics",
                "scheme": "http",
                "interval": "15s",
                "scrapeTimeout": "10s",
                "honorLabels": True,
                "relabelings": [
                    {
                        "action": "replace",
                        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                        "targetLabel": "node",
                    }
                ],
                "metricRelabelings": [{"action": "drop", "sourceLabels": ["__name__"], "regex": "DCGM_FI_DEV_XID_.*"}],
            }
        ],
        "sampleLimit": 50000,
    },
}

DCGM_POD_MONITOR: dict[str, Any] = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "PodMonitor",
    "metadata": {"name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"},
    "spec": {
        "selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
        "podMetricsEndpoints": [{"port": "metrics", "interval": "30s"}],
    },
}


def edited(manifest: dict[str, Any], path: str, value: Any = None, *, delete: bool = False) -> dict[str, Any]:
    """A deep copy of ``manifest`` with ``path`` (dots; digits index lists) set or deleted."""
    out = copy.deepcopy(manifest)
    *parents, last = path.split(".")
    cur: Any = out
    for part in parents:
        cur = cur[int(part)] if isinstance(cur, list) else cur[part]
    key: Any = int(last) if isinstance(cur, list) else last
    if delete:
        del cur[key]
    else:
        cur[key] = value
    return out


def one(findings: list[SchemaFinding]) -> SchemaFinding:
    assert len(findings) == 1, findings
    return findings[0]


# --------------------------------------------------------------------------- Karpenter


def test_valid_gpu_nodepool_and_nodeclass_pass() -> None:
    findings = validate_karpenter([GPU_NODEPOOL, GPU_NODECLASS])
    assert [(f.kind, f.name, f.api_version, f.ok, f.skipped, f.errors) for f in findings] == [
        ("NodePool", "gpu-l40s", "karpenter.sh/v1", True, False, []),
        ("EC2NodeClass", "gpu-al2023", "karpenter.k8s.aws/v1", True, False, []),
    ]
    assert [f.index for f in findings] == [0, 1]


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        pytest.param(edited(GPU_NODEPOOL, "spec.weight", 101), ["spec.weight: must be <= 100"], id="weight-101"),
        pytest.param(
            edited(GPU_NODEPOOL, "spec.template.spec.nodeClassRef", delete=True),
            ["spec.template.spec.nodeClassRef: required field is missing"],
            id="missing-nodeClassRef",
        ),
        pytest.param(
            edited(GPU_NODEPOOL, "spec.template.spec.nodeClassRef.group", delete=True),
            ["spec.template.spec.nodeClassRef.group: required field is missing"],
            id="missing-nodeClassRef-group",
        ),
        pytest.param(
            edited(GPU_NODEPOOL, "spec.template.spec.foo", "bar"),
            ['spec.template.spec.foo: unknown field "foo"'],
            id="unknown-field-template-spec",
        ),
        pytest.param(
            edited(
                edited(GPU_NODEPOOL, "spec.disruption.consolidateAfter", delete=True),
                "spec.disruption.consolidateAftr",
                "10m",
            ),
            [
                'spec.disruption.consolidateAftr: unknown field "consolidateAftr"',
                "spec.disruption.consolidateAfter: required field is missing",
            ],
            id="misspelled-consolidateAfter",
        ),
        pytest.param(
            edited(GPU_NODEPOOL, "spec.template.spec.requirements.0.operator", "Equals"),
            [
                "spec.template.spec.requirements[0].operator: must be equal to one of the allowed values",
                '(got "Equals")',
            ],
            id="bad-operator",
        ),
        pytest.param(
            edited(GPU_NODEPOOL, "spec.template.spec.requirements.3.minValues", 51),
            ["spec.template.spec.requirements[3].minValues: must be <= 50"],
            id="minValues-too-big",
        ),
        pytest.param(
            edited(GPU_NODEPOOL, "spec.template.spec.taints.0.effect", "NoWay"),
            ["spec.template.spec.taints[0].effect: must be equal to one of the allowed values"],
            id="bad-taint-effect",
        ),
        pytest.param(
            edited(GPU_NODEPOOL, "spec.disruption.budgets.0.nodes", "ten"),
            ["spec.disruption.budgets[0].nodes: must match pattern"],
            id="bad-budget-nodes",
        ),
        pytest.param(
            edited(GPU_NODEPOOL, "spec.template.spec.expireAfter", "30d"),
            ["spec.template.spec.expireAfter: must match pattern"],
            id="bad-expireAfter",
        ),
        pytest.param(
            edited(GPU_NODEPOOL, "metadata.labelz", {"a": "b"}),
            ['metadata.labelz: unknown field "labelz"'],
            id="unknown-field-metadata",
        ),
        pytest.param(
            edited(GPU_NODECLASS, "spec.metadataOptions.httpTokens", "sometimes"),
            ["spec.metadataOptions.httpTokens: must be equal to one of the allowed values", "required"],
            id="nodeclass-bad-httpTokens",
        ),
        pytest.param(
            edited(GPU_NODECLASS, "spec.blockDeviceMappings.0.ebs.volumeType", "gp4"),
            ["spec.blockDeviceMappings[0].ebs.volumeType: must be equal to one of the allowed values"],
            id="nodeclass-bad-volumeType",
        ),
        pytest.param(
            edited(GPU_NODECLASS, "spec.blockDeviceMappings.0.ebs.encrpyted", True),
            ['spec.blockDeviceMappings[0].ebs.encrpyted: unknown field "encrpyted"'],
            id="nodeclass-misspelled-encrypted",
        ),
        pytest.param(
            edited(GPU_NODECLASS, "spec.subnetSelectorTerms", delete=True),
            ["spec.subnetSelectorTerms: required field is missing"],
            id="nodeclass-missing-subnets",
        ),
        pytest.param(
            edited(GPU_NODECLASS, "spec.amiSelectorTerms.0.alias", "al2023@" + "v" * 40),
            ["spec.amiSelectorTerms[0].alias: must NOT be longer than 30 characters"],
            id="nodeclass-alias-too-long",
        ),
    ],
)
def test_broken_karpenter_manifest_fails_naming_the_field(manifest: dict[str, Any], expected: list[str]) -> None:
    finding = one(validate_karpenter([manifest]))
    assert not finding.ok and not finding.skipped and finding.failed
    text = "\n".join(finding.errors)
    for fragment in expected:
        assert fragment in text, text


def test_every_error_is_reported_not_just_the_first() -> None:
    broken = edited(edited(GPU_NODEPOOL, "spec.weight", 0), "spec.template.spec.bogus", 1)
    broken = edited(broken, "spec.disruption.consolidationPolicy", "Sometimes")
    errors = one(validate_karpenter([broken])).errors
    assert any(e.startswith("spec.weight: must be >= 1") for e in errors)
    assert any(e.startswith("spec.template.spec.bogus: unknown field") for e in errors)
    assert any(e.startswith("spec.disruption.consolidationPolicy: must be equal to one of") for e in errors)


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(
            edited(
                GPU_NODEPOOL,
                "spec.template.spec.requirements.5",
                {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["1"]},
            ),
            id="operator-Gte",
        ),
        pytest.param(edited(GPU_NODEPOOL, "spec.disruption.consolidationPolicy", "Balanced"), id="policy-Balanced"),
        pytest.param(edited(GPU_NODECLASS, "spec.connectionTracking", {"tcpEstablishedTimeout": 3600}), id="connTrack"),
        pytest.param(edited(GPU_NODECLASS, "spec.cpuOptions", {"nestedVirtualization": "disabled"}), id="cpuOptions"),
    ],
)
def test_karpenter_v1_14_crd_additions_are_accepted(manifest: dict[str, Any]) -> None:
    finding = one(validate_karpenter([manifest]))
    assert finding.ok, finding.errors


def test_karpenter_v1_14_crd_additions_are_still_checked() -> None:
    manifest = edited(GPU_NODECLASS, "spec.connectionTracking", {"udpTimeout": 5, "udpTimeot": 30})
    errors = one(validate_karpenter([manifest])).errors
    assert errors == [
        "spec.connectionTracking.udpTimeout: must be >= 30 (got 5)",
        'spec.connectionTracking.udpTimeot: unknown field "udpTimeot" (not in the Karpenter v1.14.1 CRD)',
    ]


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(edited(GPU_NODEPOOL, "apiVersion", "karpenter.sh/v1beta1"), id="removed-v1beta1"),
        pytest.param(edited(GPU_NODEPOOL, "kind", "Provisioner"), id="unknown-kind"),
    ],
)
def test_unknown_karpenter_kind_is_an_error_not_a_pass(manifest: dict[str, Any]) -> None:
    finding = one(validate_karpenter([manifest]))
    assert finding.failed
    assert "no schema for" in finding.errors[0]
    assert one(validate_all([manifest])).failed


def test_missing_node_modules_raises_schema_tool_missing(tmp_path) -> None:
    (tmp_path / "validate-crds.mjs").write_text((SCHEMA_TOOLS_DIR / "validate-crds.mjs").read_text())
    with pytest.raises(SchemaToolMissing, match=r"npm ci --prefix tools/schemas"):
        validate_karpenter([GPU_NODEPOOL], tools_dir=tmp_path)
    with pytest.raises(SchemaToolMissing, match=r"@kubernetes-models/prometheus-operator .*npm ci --prefix tools/sch"):
        validate_prometheus_operator([GPU_IDLE_RULE], tools_dir=tmp_path)


def test_missing_node_raises_schema_tool_missing(monkeypatch) -> None:
    monkeypatch.setattr(schemas.shutil, "which", lambda _name: None)
    with pytest.raises(SchemaToolMissing, match=r"node"):
        validate_karpenter([GPU_NODEPOOL])


def test_empty_list_needs_no_tooling(tmp_path) -> None:
    assert validate_karpenter([], tools_dir=tmp_path) == []
    assert validate_all([]) == []


# --------------------------------------------------------------------------- the node script itself


def run_script(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", "validate-karpenter.mjs", *args],
        cwd=SCHEMA_TOOLS_DIR,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_script_cli_contract() -> None:
    proc = run_script(stdin=json.dumps([GPU_NODEPOOL, edited(GPU_NODEPOOL, "spec.weight", 101)]))
    assert proc.returncode == 1, proc.stderr
    results = json.loads(proc.stdout)
    assert [(r["index"], r["kind"], r["name"], r["ok"]) for r in results] == [
        (0, "NodePool", "gpu-l40s", True),
        (1, "NodePool", "gpu-l40s", False),
    ]
    assert results[1]["errors"] == ["spec.weight: must be <= 100 (got 101)"]

    assert run_script(stdin=json.dumps([GPU_NODECLASS])).returncode == 0
    assert run_script(stdin="not json").returncode == 2
    versions = json.loads(run_script("--version").stdout)
    assert versions["@kubernetes-models/karpenter"] == "2.0.0"


def test_package_alone_accepts_unknown_fields_hence_the_strict_check() -> None:
    """@kubernetes-models/karpenter 2.0.0 has no additionalProperties: false anywhere; this
    pins that finding so the strict check is revisited if a new version adds it."""
    code = (
        'import { NodePool } from "@kubernetes-models/karpenter/karpenter.sh/v1/NodePool";'
        "const np = JSON.parse(process.argv[1]);"
        'try { new NodePool(np).validate(); console.log("accepted"); }'
        'catch (e) { console.log("rejected", e.message); }'
    )
    manifest = edited(edited(GPU_NODEPOOL, "spec.template.spec.foo", 1), "spec.disruption.consolidateAftr", "1m")
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", code, json.dumps(manifest)],
        cwd=SCHEMA_TOOLS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.strip() == "accepted", proc.stdout + proc.stderr
    weight = edited(GPU_NODEPOOL, "spec.weight", 101)
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", code, json.dumps(weight)],
        cwd=SCHEMA_TOOLS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.startswith("rejected data/spec/weight must be <= 100"), proc.stdout + proc.stderr


# --------------------------------------------------------------------------- Prometheus Operator


def test_valid_prometheus_rule_service_monitor_and_pod_monitor_pass() -> None:
    findings = validate_prometheus_operator([GPU_IDLE_RULE, DCGM_SERVICE_MONITOR, DCGM_POD_MONITOR])
    assert [(f.index, f.kind, f.name, f.api_version, f.ok, f.skipped, f.errors) for f in findings] == [
        (0, "PrometheusRule", "hybridgpu-gpu-idle", "monitoring.coreos.com/v1", True, False, []),
        (1, "ServiceMonitor", "nvidia-dcgm-exporter", "monitoring.coreos.com/v1", True, False, []),
        (2, "PodMonitor", "nvidia-dcgm-exporter", "monitoring.coreos.com/v1", True, False, []),
    ]


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.expr", 1), id="expr-int-or-string"),
        pytest.param(edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.keep_firing_for", "5m"), id="keep_firing_for"),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.partial_response_strategy", "WARN"), id="re2-case-insensitive"
        ),
        pytest.param(edited(GPU_IDLE_RULE, "spec.groups.0.labels", {"team": "ml"}), id="group-labels"),
        pytest.param(edited(DCGM_SERVICE_MONITOR, "spec.endpoints.0.targetPort", 9400), id="targetPort-int"),
        pytest.param(edited(DCGM_SERVICE_MONITOR, "spec.endpoints.0.params", {"collect[]": ["a"]}), id="params-map"),
        pytest.param(
            {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "e"}, "spec": {}},
            id="rule-no-groups",
        ),
    ],
)
def test_other_valid_prometheus_operator_objects_pass(manifest: dict[str, Any]) -> None:
    finding = one(validate_prometheus_operator([manifest]))
    assert finding.ok, finding.errors


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.severity", "critical"),
            ['spec.groups[0].rules[0].severity: unknown field "severity"'],
            id="unknown-field-rule-severity",
        ),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.for", 15),
            ["spec.groups[0].rules[0].for: must be string (got 15)"],
            id="wrong-type-for",
        ),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.labels.severity", 3),
            ["spec.groups[0].rules[0].labels.severity: must be string (got 3)"],
            id="wrong-type-label-value",
        ),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.rules", {"alert": "x", "expr": "up"}),
            ["spec.groups[0].rules: must be array"],
            id="wrong-type-rules",
        ),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.for", "15 minutes"),
            ["spec.groups[0].rules[0].for: must match pattern", '(got "15 minutes")'],
            id="bad-duration",
        ),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.rules.1.expr", delete=True),
            ["spec.groups[0].rules[1].expr: required field is missing"],
            id="missing-expr",
        ),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.name", ""),
            ["spec.groups[0].name: must NOT be shorter than 1 character"],
            id="empty-group-name",
        ),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.groups.0.partial_response_strategy", "ignore"),
            ["spec.groups[0].partial_response_strategy: must match pattern"],
            id="bad-partial-response-strategy",
        ),
        pytest.param(
            edited(GPU_IDLE_RULE, "spec.group", []),
            ['spec.group: unknown field "group"'],
            id="unknown-field-spec",
        ),
        pytest.param(
            edited(DCGM_SERVICE_MONITOR, "spec.endpoints.0.intervall", "15s"),
            ['spec.endpoints[0].intervall: unknown field "intervall"'],
            id="sm-misspelled-interval",
        ),
        pytest.param(
            edited(DCGM_SERVICE_MONITOR, "spec.endpoints.0.scheme", "grpc"),
            ["spec.endpoints[0].scheme: must be equal to one of the allowed values", '(got "grpc")'],
            id="sm-bad-scheme",
        ),
        pytest.param(
            edited(DCGM_SERVICE_MONITOR, "spec.selector", delete=True),
            ["spec.selector: required field is missing"],
            id="sm-missing-selector",
        ),
        pytest.param(
            edited(DCGM_SERVICE_MONITOR, "spec.selector.matchLabel", {"app": "x"}),
            ['spec.selector.matchLabel: unknown field "matchLabel"'],
            id="sm-unknown-selector-field",
        ),
        pytest.param(
            edited(DCGM_SERVICE_MONITOR, "spec.endpoints.0.relabelings.0.action", "rename"),
            ["spec.endpoints[0].relabelings[0].action: must be equal to one of the allowed values"],
            id="sm-bad-relabel-action",
        ),
        pytest.param(
            edited(DCGM_SERVICE_MONITOR, "spec.sampleLimit", -1),
            ["spec.sampleLimit: must be >= 0 (got -1; prometheus-operator v0.93.0 CRD)"],
            id="sm-negative-limit-v0.93",
        ),
        pytest.param(
            edited(DCGM_SERVICE_MONITOR, "spec.endpoints.0.relabelings.0.modulus", -2),
            ["spec.endpoints[0].relabelings[0].modulus: must be >= 0 (got -2"],
            id="sm-negative-modulus-v0.93",
        ),
        pytest.param(
            edited(DCGM_POD_MONITOR, "spec.podMetricsEndpoints.0.portNumber", "metrics"),
            ["spec.podMetricsEndpoints[0].portNumber: must be integer"],
            id="pm-wrong-type-portNumber",
        ),
        pytest.param(
            edited(DCGM_POD_MONITOR, "spec.podMetricsEndpoint", []),
            ['spec.podMetricsEndpoint: unknown field "podMetricsEndpoint"'],
            id="pm-misspelled-endpoints",
        ),
    ],
)
def test_broken_prometheus_operator_manifest_fails_naming_the_field(
    manifest: dict[str, Any], expected: list[str]
) -> None:
    finding = one(validate_prometheus_operator([manifest]))
    assert not finding.ok and not finding.skipped and finding.failed
    text = "\n".join(finding.errors)
    for fragment in expected:
        assert fragment in text, text


def test_prometheus_rule_reports_every_error() -> None:
    broken = edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.severity", "critical")
    broken = edited(broken, "spec.groups.0.rules.0.for", 15)
    broken = edited(broken, "metadata.labelz", {})
    assert one(validate_prometheus_operator([broken])).errors == [
        "spec.groups[0].rules[0].for: must be string (got 15)",
        'metadata.labelz: unknown field "labelz" (not in the monitoring.coreos.com/v1 PrometheusRule schema)',
        'spec.groups[0].rules[0].severity: unknown field "severity" '
        "(not in the monitoring.coreos.com/v1 PrometheusRule schema)",
    ]


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("monitoring.coreos.com/v1", "Prometheus"),
        ("monitoring.coreos.com/v1", "Alertmanager"),
        ("monitoring.coreos.com/v1alpha1", "ScrapeConfig"),
        ("monitoring.coreos.com/v1beta1", "AlertmanagerConfig"),
    ],
)
def test_unvalidated_prometheus_operator_kinds_are_skipped_not_passed(api_version: str, kind: str) -> None:
    manifest = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": {"bogus": 1}}
    for finding in (one(validate_prometheus_operator([manifest])), one(validate_all([manifest]))):
        assert finding.skipped and not finding.ok and not finding.failed
        assert finding.errors[0].startswith(f"skipped: {api_version} {kind}: "), finding.errors


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(edited(DCGM_SERVICE_MONITOR, "kind", "ServiceMonitors"), id="unknown-kind"),
        pytest.param(edited(GPU_IDLE_RULE, "apiVersion", "monitoring.coreos.com/v2"), id="unknown-version"),
    ],
)
def test_unknown_prometheus_operator_kind_is_an_error_not_a_pass(manifest: dict[str, Any]) -> None:
    finding = one(validate_prometheus_operator([manifest]))
    assert finding.failed
    assert "no schema for" in finding.errors[0] and "@kubernetes-models/prometheus-operator" in finding.errors[0]
    assert one(validate_all([manifest])).failed


def test_each_restricted_validator_rejects_the_other_family() -> None:
    assert "no schema for monitoring.coreos.com/v1 PrometheusRule" in one(validate_karpenter([GPU_IDLE_RULE])).errors[0]
    assert "no schema for karpenter.sh/v1 NodePool" in one(validate_prometheus_operator([GPU_NODEPOOL])).errors[0]
    assert [f.ok for f in validate_crds([GPU_NODEPOOL, GPU_IDLE_RULE])] == [True, True]
    with pytest.raises(ValueError, match="unknown CRD families"):
        validate_crds([GPU_IDLE_RULE], only=("kueue",))


def test_missing_prometheus_package_only_blocks_prometheus_objects(tmp_path) -> None:
    """A checkout whose node_modules predates the prometheus-operator pin still validates
    Karpenter, and says how to fix it for monitoring.coreos.com objects."""
    (tmp_path / "validate-crds.mjs").write_text((SCHEMA_TOOLS_DIR / "validate-crds.mjs").read_text())
    modules = tmp_path / "node_modules"
    (modules / "@kubernetes-models").mkdir(parents=True)
    for entry in (SCHEMA_TOOLS_DIR / "node_modules").iterdir():
        if entry.name != "@kubernetes-models":
            (modules / entry.name).symlink_to(entry)
    for entry in (SCHEMA_TOOLS_DIR / "node_modules" / "@kubernetes-models").iterdir():
        if entry.name != "prometheus-operator":
            (modules / "@kubernetes-models" / entry.name).symlink_to(entry)
    assert one(validate_crds([GPU_NODEPOOL], tools_dir=tmp_path)).ok
    with pytest.raises(SchemaToolMissing, match=r"@kubernetes-models/prometheus-operator is not installed"):
        validate_crds([GPU_NODEPOOL, DCGM_SERVICE_MONITOR], tools_dir=tmp_path)


def test_prometheus_operator_pins() -> None:
    assert PROMETHEUS_OPERATOR_SCHEMA_PACKAGE == "@kubernetes-models/prometheus-operator@6.0.0"
    assert PROMETHEUS_OPERATOR_SCHEMA_SOURCE == "prometheus-operator v0.91.0"
    assert "monitoring.coreos.com" in CRD_GROUPS
    package = json.loads((SCHEMA_TOOLS_DIR / "package.json").read_text())
    assert package["dependencies"]["@kubernetes-models/prometheus-operator"] == "6.0.0"
    lock = json.loads((SCHEMA_TOOLS_DIR / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@kubernetes-models/prometheus-operator"]["version"] == "6.0.0"
    assert lock["packages"][""]["dependencies"] == package["dependencies"]
    installed = json.loads(
        (SCHEMA_TOOLS_DIR / "node_modules" / "@kubernetes-models" / "prometheus-operator" / "package.json").read_text()
    )
    assert installed["version"] == "6.0.0", "run `npm ci --prefix tools/schemas`"


def run_crd_script(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", "validate-crds.mjs", *args],
        cwd=SCHEMA_TOOLS_DIR,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_crd_script_cli_contract() -> None:
    prometheus = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": {"name": "k8s"}}
    proc = run_crd_script(stdin=json.dumps([GPU_NODEPOOL, GPU_IDLE_RULE, prometheus]))
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert [(r["index"], r["kind"], r["ok"], r["skipped"]) for r in results] == [
        (0, "NodePool", True, False),
        (1, "PrometheusRule", True, False),
        (2, "Prometheus", False, True),
    ]
    broken = edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.severity", "critical")
    proc = run_crd_script("--only", "prometheus-operator", stdin=json.dumps([broken, GPU_NODEPOOL]))
    assert proc.returncode == 1
    results = json.loads(proc.stdout)
    assert results[0]["errors"][0].startswith('spec.groups[0].rules[0].severity: unknown field "severity"')
    assert results[1]["errors"][0].startswith("(root): no schema for karpenter.sh/v1 NodePool")
    assert run_crd_script("--only", "kueue", stdin="[]").returncode == 2
    versions = json.loads(run_crd_script("--version").stdout)
    assert versions["@kubernetes-models/prometheus-operator"] == "6.0.0"
    assert versions["@kubernetes-models/karpenter"] == "2.0.0"
    assert "monitoring.coreos.com/v1 ServiceMonitor" in versions["kinds"]


def test_prometheus_package_alone_accepts_unknown_fields_hence_the_strict_check() -> None:
    """@kubernetes-models/prometheus-operator 6.0.0 has no additionalProperties: false either;
    this pins that finding so the strict check is revisited if a new version adds it."""
    code = (
        "import { PrometheusRule } from "
        '"@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";'
        "try { new PrometheusRule(JSON.parse(process.argv[1])).validate(); console.log(\"accepted\"); }"
        "catch (e) { console.log(\"rejected\", e.message); }"
    )
    manifest = edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.severity", "critical")
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", code, json.dumps(manifest)],
        cwd=SCHEMA_TOOLS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.strip() == "accepted", proc.stdout + proc.stderr


# --------------------------------------------------------------------------- core kinds


def test_core_kinds_pass_strict() -> None:
    findings = validate_core([NAMESPACE, SERVICE_ACCOUNT, CONFIG_MAP])
    assert [(f.kind, f.name, f.ok, f.errors) for f in findings] == [
        ("Namespace", "gpu-workloads", True, []),
        ("ServiceAccount", "karpenter", True, []),
        ("ConfigMap", "time-slicing-config", True, []),
    ]


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        pytest.param(
            edited(SERVICE_ACCOUNT, "automountToken", True), 'automountToken: unknown field "automountToken"',
            id="sa-unknown-top-level",
        ),
        pytest.param(
            edited(NAMESPACE, "metadata.labelz", {"a": "b"}),
            'metadata.labelz: unknown field "labelz"',
            id="ns-unknown-meta",
        ),
        pytest.param(
            edited(CONFIG_MAP, "data.replicas", 4), "data.replicas: 4 is not of type 'string'", id="cm-non-string"
        ),
        pytest.param(
            edited(SERVICE_ACCOUNT, "apiVersion", "v2"),
            "v2 ServiceAccount is not a built-in kind of Kubernetes 1.36",
            id="sa-bad-version",
        ),
        pytest.param(
            {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "x"}},
            "policy/v1beta1 PodDisruptionBudget is not a built-in kind",
            id="removed-api",
        ),
    ],
)
def test_broken_core_manifest_fails_naming_the_field(manifest: dict[str, Any], expected: str) -> None:
    finding = one(validate_core([manifest]))
    assert finding.failed
    assert any(expected in e for e in finding.errors), finding.errors


def test_core_version_choice() -> None:
    assert KUBERNETES_SCHEMA_VERSION == "1.36.0"
    for version in ("1.35", "v1.35", "1.35.2", "1.37.0"):
        assert one(validate_core([NAMESPACE], version)).ok
    with pytest.raises(ValueError, match="not supported by kubernetes-validate"):
        validate_core([NAMESPACE], "1.99")
    with pytest.raises(ValueError, match="not supported"):
        validate_core([NAMESPACE], "latest")


# --------------------------------------------------------------------------- dispatch


def test_validate_all_dispatches_by_group_and_skips_other_crds() -> None:
    manifests = [NAMESPACE, GPU_NODEPOOL, OTHER_CRD, SERVICE_ACCOUNT, GPU_NODECLASS, NVIDIA_CLUSTER_POLICY]
    findings = validate_all(manifests)
    assert [(f.index, f.kind, f.ok, f.skipped) for f in findings] == [
        (0, "Namespace", True, False),
        (1, "NodePool", True, False),
        (2, "LeaderWorkerSet", False, True),
        (3, "ServiceAccount", True, False),
        (4, "EC2NodeClass", True, False),
        (5, "ClusterPolicy", False, True),
    ]
    assert "leaderworkerset.x-k8s.io" in findings[2].errors[0] and findings[2].errors[0].startswith("skipped:")
    assert "nvidia.com" in findings[5].errors[0]
    assert not any(f.failed for f in findings)
    assert format_findings(findings).splitlines()[-1] == "4 ok, 0 failed, 2 skipped"


def test_validate_all_validates_prometheus_operator_objects() -> None:
    broken = edited(GPU_IDLE_RULE, "spec.groups.0.rules.0.severity", "critical")
    findings = validate_all([NAMESPACE, GPU_IDLE_RULE, GPU_NODEPOOL, DCGM_SERVICE_MONITOR, broken, OTHER_CRD])
    assert [(f.index, f.kind, f.ok, f.skipped, f.failed) for f in findings] == [
        (0, "Namespace", True, False, False),
        (1, "PrometheusRule", True, False, False),
        (2, "NodePool", True, False, False),
        (3, "ServiceMonitor", True, False, False),
        (4, "PrometheusRule", False, False, True),
        (5, "LeaderWorkerSet", False, True, False),
    ]
    assert findings[4].errors == [
        'spec.groups[0].rules[0].severity: unknown field "severity" '
        "(not in the monitoring.coreos.com/v1 PrometheusRule schema)"
    ]
    assert format_findings(findings).splitlines()[-1] == "4 ok, 1 failed, 1 skipped"


def test_validate_all_reports_failures_from_each_validator() -> None:
    findings = validate_all(
        [edited(GPU_NODEPOOL, "spec.weight", 101), edited(NAMESPACE, "spec", {"finalizerz": []}), NAMESPACE]
    )
    assert [f.failed for f in findings] == [True, True, False]
    assert findings[0].errors == ["spec.weight: must be <= 100 (got 101)"]
    assert findings[1].errors == ['spec.finalizerz: unknown field "finalizerz"']


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        pytest.param("kind: Namespace", "not a mapping", id="string"),
        pytest.param({"apiVersion": "v1", "metadata": {"name": "x"}}, "no string kind", id="no-kind"),
        pytest.param({"kind": "Namespace", "metadata": {"name": "x"}}, "no valid apiVersion", id="no-apiVersion"),
    ],
)
def test_validate_all_rejects_malformed_manifests(manifest: Any, expected: str) -> None:
    finding = one(validate_all([manifest]))
    assert finding.failed and expected in finding.errors[0]


def test_validate_all_checks_kueue_v1beta2_offline() -> None:
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "gpu"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]},
    }
    old = {**queue, "apiVersion": "kueue.x-k8s.io/v1beta1"}
    findings = validate_all([queue, old])
    assert [(f.ok, f.skipped) for f in findings] == [(True, False), (False, False)]
    assert "expected kueue.x-k8s.io/v1beta2" in findings[1].errors[0]


def test_crd_only_lists_need_no_node(monkeypatch) -> None:
    monkeypatch.setattr(schemas.shutil, "which", lambda _name: None)
    assert [f.skipped for f in validate_all([OTHER_CRD, NAMESPACE])] == [True, False]


def test_finding_is_frozen_and_printable() -> None:
    finding = SchemaFinding(kind="NodePool", name="gpu", api_version="karpenter.sh/v1", ok=False, errors=["spec.x: y"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.ok = True  # type: ignore[misc]
    assert str(finding) == "FAIL NodePool/gpu (karpenter.sh/v1)\n    spec.x: y"


# --------------------------------------------------------------------------- command line


def test_cli_reads_yaml_and_sets_exit_status(tmp_path, capsys) -> None:
    import yaml

    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump_all([NAMESPACE, GPU_NODEPOOL, GPU_NODECLASS, OTHER_CRD]))
    assert schemas.main([str(good)]) == 0
    assert schemas.main([str(good), "--fail-on-skipped"]) == 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([edited(GPU_NODEPOOL, "spec.weight", 101)]))
    assert schemas.main([str(bad), "--kubernetes-version", "1.35"]) == 1
    out = capsys.readouterr().out
    assert "FAIL NodePool/gpu-l40s (karpenter.sh/v1)\n    spec.weight: must be <= 100 (got 101)" in out
    assert schemas.main([str(good), "--kubernetes-version", "1.99"]) == 2
