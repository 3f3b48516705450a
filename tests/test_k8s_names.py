"""Kubernetes names (hybridgpu.k8s): one definition, project defaults that agree, kubelet label rules.

* the cost keys named by Pulumi.yaml, the config models, the policy pack and the example
  stacks are :data:`hybridgpu.k8s.DEFAULT_COST_KEYS`;
* no module under ``hybridgpu/`` other than ``hybridgpu/k8s.py`` spells one of the names
  defined there as a string literal (docstrings and comments may mention them): labels, taints, the
  Kueue API version, and the DNS-1123, label and quantity patterns;
* no module spells the DNS-1123 label regex in any anchoring (``^...$``, ``\\A...\\Z``, ``re.fullmatch``);
* the labels the kubeadm renderer puts on nodes through kubelet ``--node-labels`` pass the
  kubelet's self-labelling rule, and the rule refuses what the kubelet refuses.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hybridgpu import k8s
from hybridgpu.config.models import StackConfig
from hybridgpu.k8s import DEFAULT_COST_KEYS, is_kubelet_settable_label
from hybridgpu.policy.untagged import CostTagSettings, WorkloadLabelSettings
from hybridgpu.render.kubeadm import init_config, join_config_worker, node_labels
from hybridgpu.render.kubeadm_specs import ClusterSpec, NodeSpec
from tests.helpers import ROOT

PACKAGE = ROOT / "hybridgpu"

# --------------------------------------------------------------------------- (a) defaults agree


def test_pulumi_yaml_required_tag_keys_default_is_the_cost_keys():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["config"]["requiredTagKeys"]["default"] == list(DEFAULT_COST_KEYS)


def test_config_model_default_is_the_cost_keys():
    assert StackConfig(stack="x").required_tag_keys == list(DEFAULT_COST_KEYS)


def test_policy_pack_defaults_are_the_cost_keys():
    assert CostTagSettings().required_tag_keys == list(DEFAULT_COST_KEYS)
    assert WorkloadLabelSettings().required_labels == list(DEFAULT_COST_KEYS)


def test_policy_config_example_names_the_cost_keys():
    example = json.loads((ROOT / "policies" / "config.example.json").read_text())
    assert example["required-cost-tags"]["requiredTagKeys"] == list(DEFAULT_COST_KEYS)


@pytest.mark.parametrize("stack_file", sorted((ROOT / "stacks").glob("Pulumi.*.yaml")), ids=lambda p: p.name)
def test_example_stacks_carry_their_required_cost_tags(stack_file):
    config = yaml.safe_load(stack_file.read_text())["config"]
    required = config.get("hybridgpu:requiredTagKeys", list(DEFAULT_COST_KEYS))
    tags = config.get("hybridgpu:tags") or {}
    assert [k for k in required if not tags.get(k)] == []


# --------------------------------------------------------------------------- (b) one definition

#: Names that are prefixes or label namespaces: only a literal equal to one of them counts (as a
#: part of a longer string they are the start of other, legitimate names and API groups).
_WHOLE_ONLY = {
    *k8s.RESERVED_TAG_PREFIXES,
    *k8s.KUBELET_ALLOWED_LABEL_NAMESPACES,
    *k8s.KUBELET_RESTRICTED_LABEL_NAMESPACES,
    k8s.NODE_RESTRICTION_NAMESPACE,
    k8s.KUEUE_GROUP,  # the group of Kueue's own names (kueue.x-k8s.io/queue-name, ...), which modules may spell
}
#: Constants of hybridgpu.k8s whose values are ordinary words ("team", "system", "hybridgpu"),
#: not names a scan can find; test (a) and the defaults' own constants cover them.
_NOT_SCANNED = {"DEFAULT_COST_KEYS", "MANAGED_BY", "SYSTEM_ROLE"}
#: (module path, name) -> why that module may spell the name. Keep it short.
ALLOWED: dict[tuple[str, str], str] = {}


def _names() -> set[str]:
    names: set[str] = set()
    for attr, value in vars(k8s).items():
        if not attr.isupper() or attr in _NOT_SCANNED:
            continue
        if isinstance(value, str):
            names.add(value)
        elif isinstance(value, k8s.TaintSpec):
            names.add(value.key)
        elif isinstance(value, tuple | frozenset):
            names.update(v for v in value if isinstance(v, str))
    return names


NAMES = _names()
# Longest first, so "nvidia.com/gpu.present" is reported as itself and not as "nvidia.com/gpu".
_SUBSTRING_NAMES = sorted(NAMES - _WHOLE_ONLY, key=len, reverse=True)
_NAME_CHARS = re.compile(r"[A-Za-z0-9._-]")
#: Any of the names anywhere in a string: most literals hold none, and one search says so at once.
_ANY_NAME = re.compile("|".join(re.escape(n) for n in _SUBSTRING_NAMES))


def _names_in(value: str) -> set[str]:
    """The names ``value`` spells: all of it, or (in a string without whitespace, such as an IAM
    condition key ``aws:ResourceTag/karpenter.sh/nodepool``) a part of it that is delimited as a name."""
    if value in NAMES:
        return {value}
    if any(c.isspace() for c in value):
        return set()  # prose: error messages and field descriptions may mention names
    found: set[str] = set()
    if not _ANY_NAME.search(value):
        return found
    for name in _SUBSTRING_NAMES:
        for match in re.finditer(re.escape(name), value):
            before = value[match.start() - 1] if match.start() else ""
            after = value[match.end()] if match.end() < len(value) else ""
            if before and (_NAME_CHARS.match(before) and before != "_"):
                continue
            if not name.endswith(("/", "-")) and after and _NAME_CHARS.match(after):
                continue
            found.add(name)
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are documentation: bare string statements (module, class and
    function docstrings, attribute docstrings)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The parsed module (once per test process: three scans below read every module)."""
    return ast.parse(path.read_text(), filename=str(path))


@functools.cache
def _literals(path: Path) -> tuple[tuple[int, str], ...]:
    """(line, text) of every string literal of the module that is not documentation."""
    tree = _tree(path)
    docs = _docstrings(tree)
    return tuple((node.lineno, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs)


def test_the_scan_sees_the_names():
    # Guards against a scan that silently finds nothing.
    assert {k8s.GPU_RESOURCE, k8s.ROLE_LABEL, k8s.CRITICAL_ADDONS_TAINT.key, k8s.HOSTNAME_LABEL} <= NAMES
    assert _names_in("aws:ResourceTag/karpenter.sh/nodepool") == {"karpenter.sh/nodepool"}
    assert _names_in("kubernetes.io/cluster/gpu-dev") == {"kubernetes.io/cluster/"}
    assert _names_in("nvidia.com/gpu.shared") == set()
    assert _names_in("beta.kubernetes.io/os") == {"beta.kubernetes.io/os"}
    assert _names_in("kubernetes:karpenter.sh/v1:NodePool") == set()
    assert _names_in("the nvidia.com/gpu limit") == set()


def test_no_module_but_k8s_spells_a_kubernetes_name():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "hybridgpu/k8s.py":
            continue
        for line, value in _literals(path):
            for name in sorted(_names_in(value)):
                if (rel, name) not in ALLOWED:
                    found.append(f"{rel}:{line}: {value!r} spells {name!r}")
    assert found == [], "import these names from hybridgpu.k8s:\n" + "\n".join(found)


#: The DNS-1123 label and host-name label regexes as written in source text (any anchoring or quoting).
_NAME_REGEXES = (k8s.DNS1123_LABEL_FMT, "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", k8s.LABEL_NAME_FMT, "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def test_no_module_but_k8s_spells_a_name_regex():
    # The literal scan above sees a regex only where it is delimited like a name; this one reads the text.
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "hybridgpu/k8s.py":
            continue
        for line, value in _literals(path):
            found += [f"{rel}:{line}: {value!r}" for regex in _NAME_REGEXES if regex in value]
    assert found == [], "use the patterns and validators of hybridgpu.k8s (DNS1123_*, HOSTNAME_*, LABEL_*):\n" + "\n".join(found)


def test_cost_keys_are_not_listed_elsewhere():
    cost = set(DEFAULT_COST_KEYS)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "hybridgpu/k8s.py":
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.List | ast.Tuple | ast.Set):
                values = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if cost <= values:
                    found.append(f"{rel}:{node.lineno}")
    assert found == [], "use hybridgpu.k8s.DEFAULT_COST_KEYS:\n" + "\n".join(found)


def test_k8s_imports_nothing_from_hybridgpu():
    tree = ast.parse((PACKAGE / "k8s.py").read_text())
    imported = {
        alias.name if isinstance(node, ast.Import) else node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not {m for m in imported if m.startswith("hybridgpu")}
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, hybridgpu.k8s; print(sorted(m for m in sys.modules if m.startswith('hybridgpu')))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert loaded.strip() == "['hybridgpu', 'hybridgpu.k8s']"


# --------------------------------------------------------------------------- (c) kubelet label rule

CLUSTER = ClusterSpec(name="onprem-gpu", kubernetes_version="1.35.2", control_plane_endpoint="10.0.0.10:6443")
NODES = [
    NodeSpec("cp-1", "10.0.0.11", "control-plane"),
    NodeSpec("gpu-01", "10.0.1.21", "gpu-worker", gpu_model="H100-80GB", gpu_count=8, mig_config="h100-balanced"),
    NodeSpec("gpu-02", "10.0.1.22", "gpu-worker", gpu_model="A100 40GB", gpu_count=4),
    NodeSpec("cpu-01", "10.0.2.31", "cpu-worker", labels={k8s.ZONE_LABEL: "rack-a"}),
]


def _rendered_node_labels(node: NodeSpec) -> list[str]:
    docs = init_config(CLUSTER, node) if node.role == "control-plane" else join_config_worker(CLUSTER, node)
    registration = next(d["nodeRegistration"] for d in docs if "nodeRegistration" in d)
    args = {a["name"]: a["value"] for a in registration["kubeletExtraArgs"]}
    return [item.split("=", 1)[0] for item in args["node-labels"].split(",")]


@pytest.mark.parametrize("node", NODES, ids=lambda n: n.hostname)
def test_labels_kubeadm_puts_on_nodes_are_kubelet_settable(node):
    keys = _rendered_node_labels(node)
    assert keys == list(node_labels(node))
    assert [k for k in keys if not is_kubelet_settable_label(k)] == []


def test_our_node_labels_are_kubelet_settable():
    ours = [k8s.ROLE_LABEL, k8s.GPU_MODEL_LABEL, k8s.GPU_COUNT_LABEL, k8s.GPU_PRESENT_LABEL, k8s.MIG_CONFIG_LABEL, k8s.DEVICE_PLUGIN_CONFIG_LABEL]
    assert [k for k in ours if not is_kubelet_settable_label(k)] == []
    gpu = _rendered_node_labels(NODES[1])
    assert {k8s.ROLE_LABEL, k8s.GPU_MODEL_LABEL, k8s.GPU_COUNT_LABEL, k8s.GPU_PRESENT_LABEL, k8s.MIG_CONFIG_LABEL} <= set(gpu)


@pytest.mark.parametrize(
    "key",
    [
        *sorted(k8s.KUBELET_ALLOWED_LABELS),
        "kubelet.kubernetes.io/anything",
        "sub.kubelet.kubernetes.io/x",
        "node.kubernetes.io/exclude-from-external-load-balancers",
        "example.com/team",
        "plain",
    ],
)
def test_kubelet_may_set(key):
    assert is_kubelet_settable_label(key)


@pytest.mark.parametrize(
    "key",
    [
        "node-role.kubernetes.io/worker",
        k8s.CONTROL_PLANE_TAINT.key,
        "kubernetes.io/role",
        "example.k8s.io/x",
        "k8s.io/x",
        f"{k8s.NODE_RESTRICTION_NAMESPACE}/pool",
        f"sub.{k8s.NODE_RESTRICTION_NAMESPACE}/pool",
    ],
)
def test_kubelet_may_not_set(key):
    assert not is_kubelet_settable_label(key)


def test_kubeadm_refuses_a_label_the_kubelet_cannot_set():
    with pytest.raises(ValueError, match="cannot be self-set by the kubelet"):
        node = NodeSpec("gpu-09", "10.0.1.29", "gpu-worker", gpu_count=1, labels={"node-role.kubernetes.io/worker": ""})
        join_config_worker(CLUSTER, node)
