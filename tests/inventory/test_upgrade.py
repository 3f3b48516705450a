"""Upgrades: the inventory's ``upgrades`` section and ``hybridgpu inventory upgrade-plan``, through the CLI.

Fixtures under tests/fixtures/upgrade/{pass,fail}/. Headers: ``# verdict:``; ``# expect: <text>`` (fail: in
the error output); ``# plan: <args>`` (run ``inventory upgrade-plan <file> <args>``; without it a must-fail
fixture is refused by ``inventory validate`` and ``render``); ``# shows: <text>`` (pass: in the plan printed)
and ``# script: <file>: <text>`` (pass: in that script written by ``--out``).

Upstream behaviour relied on (each test names its source):

* kubeadm upgrades one minor version at a time: kubernetes/kubernetes
  ``cmd/kubeadm/app/phases/upgrade/policy.go`` ``MaximumAllowedMinorVersionUpgradeSkew = 1``.
* kubelet not newer than kube-apiserver, at most three minors older: Kubernetes "Version Skew Policy"
  (kubernetes.io/releases/version-skew-policy); kubeadm tolerates it since v1.29 (kubernetes/kubernetes#120825).
* ``driver.upgradePolicy`` keys: NVIDIA/gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml``.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.inventory.upgrade import GpuDriverUpgradePolicy, UpgradePlanError, UpgradePolicy, parse_version, plan_upgrade
from hybridgpu.render.upgrade import gpu_operator_driver_upgrade_values, upgrade_run_order
from tests.helpers import ROOT
from tests.helpers.inventory_cases import assert_headers, assert_refused, cases, header, relative, runner

FIXTURES = ROOT / "tests" / "fixtures" / "upgrade"
PASS, FAIL = cases(FIXTURES)
SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"
UPSTREAM_GPU_OPERATOR = Path("/work/shared/upstream/cloud/gpu-operator-v26.7.0")


def test_there_are_at_least_ten_of_each():
    assert_headers(PASS, FAIL)


def _plan(fixture: Path, *extra: str):
    return runner.invoke(app, ["inventory", "upgrade-plan", relative(fixture), *shlex.split(header(fixture, "plan")[0]), *extra])


@pytest.mark.parametrize("fixture", FAIL, ids=lambda p: p.stem)
def test_must_fail(fixture, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    if not header(fixture, "plan"):
        assert_refused(fixture, tmp_path / "r")
        return
    assert runner.invoke(app, ["inventory", "validate", relative(fixture)]).exit_code == 0  # the inventory itself is fine
    result = _plan(fixture, "--out", str(tmp_path / "r"))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for text in header(fixture, "expect"):
        assert text in result.output, f"{text!r} not in:\n{result.output}"
    assert "fix: " in result.output
    assert not (tmp_path / "r").exists()  # nothing written when a check fails


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass(fixture, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert runner.invoke(app, ["inventory", "validate", relative(fixture)]).exit_code == 0
    out = tmp_path / "r"
    result = _plan(fixture, "--out", str(out))
    assert result.exit_code == 0, result.output
    for text in header(fixture, "shows"):
        assert text in result.output, f"{text!r} not in:\n{result.output}"
    for spec in header(fixture, "script"):
        file, text = spec.split(": ", 1)
        assert text in (out / file).read_text(), f"{text!r} not in {file}"
    order = (out / "run-order.txt").read_text().splitlines()
    assert [line.split()[2] for line in order if not line.startswith("#")] == sorted(
        line.split()[2] for line in order if not line.startswith("#")
    )  # file names sort in run order


def test_plan_fits_80_columns_and_json_matches(monkeypatch):
    monkeypatch.chdir(ROOT)
    fixture = FIXTURES / "pass" / "two-steps-via.yaml"
    text = runner.invoke(app, ["inventory", "upgrade-plan", relative(fixture), "--to", "1.37.1", "--via", "1.36.4"]).output
    assert max(len(line) for line in text.splitlines()) <= 80
    data = json.loads(runner.invoke(app, ["inventory", "upgrade-plan", relative(fixture), "--to", "1.37.1", "--via", "1.36.4", "--json"]).output)
    assert data["ok"] is True and data["from"] == "1.35.2" and data["to"] == "1.37.1"
    assert [s["version"] for s in data["steps"]] == ["1.36.4", "1.37.1"]
    assert [n["hostname"] for n in data["steps"][0]["nodes"]] == ["cp-01", "cp-02", "cp-03", "gpu-01", "cpu-01"]
    assert [n["kubeadm"] for n in data["steps"][0]["nodes"]] == ["upgrade apply"] + ["upgrade node"] * 4


def test_output_is_byte_identical_twice(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    fixture = FIXTURES / "pass" / "two-steps-via.yaml"
    for out in ("a", "b"):
        assert _plan(fixture, "--out", str(tmp_path / out)).exit_code == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 1 + 1 + 2 * 5 * 4  # run-order.txt, the snapshot, 2 steps x 5 nodes x 4 scripts
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


# --------------------------------------------------------------------------- the plan, directly


def test_control_planes_first_then_workers_the_first_one_applies():
    """kubeadm docs "Upgrading kubeadm clusters": `kubeadm upgrade apply` on one control plane, `upgrade node` elsewhere."""
    plan = plan_upgrade(load_inventory(SAMPLE), "1.36.1")
    nodes = plan.steps[0].nodes
    roles = [n.role for n in nodes]
    assert roles == sorted(roles, key=lambda r: r != "control-plane")  # every control plane before any worker
    assert [n.kubeadm for n in nodes].count("apply") == 1 and nodes[0].kubeadm == "apply"
    assert nodes[0].hostname == plan.snapshot_host == "cp-01"
    assert "dgx-h100-04" in plan.skipped and "dgx-h100-04" not in [n.hostname for n in nodes]  # absent in the sample
    assert [n.hostname for n in nodes if not n.uncordon] == ["a100-02"]  # cordoned in the sample: stays cordoned


@pytest.mark.parametrize(
    ("target", "via", "steps", "failed"),
    [
        ("1.36.1", (), ["1.36.1"], None),
        ("1.35.9", (), ["1.35.9"], None),
        # policy.go: newK8sVersion.Minor() > clusterVersion.Minor()+1 is a mandatory error for a released version.
        ("1.37.0", (), [], "one-minor-at-a-time"),
        ("1.37.0", ("1.36.2",), ["1.36.2", "1.37.0"], None),
        ("1.38.0", ("1.37.1", "1.36.2"), ["1.36.2", "1.37.1", "1.38.0"], None),
        ("1.38.0", ("1.36.2",), [], "one-minor-at-a-time"),
        ("1.36.1", ("1.36.0",), [], "via-versions"),
        ("1.38.0", ("1.36.2", "1.36.3", "1.37.1"), [], "via-versions"),  # two releases for one minor
        ("1.34.9", (), [], "newer-version"),
    ],
)
def test_one_minor_at_a_time(target, via, steps, failed):
    plan = plan_upgrade(load_inventory(SAMPLE), target, via=via)  # the sample runs 1.35.2
    assert [s.version for s in plan.steps] == steps
    assert [c.name for c in plan.failures] == ([failed] if failed else [])


@pytest.mark.parametrize(("target", "via", "ok"), [("1.38.2", ("1.36.1", "1.37.1"), True), ("1.39.0", ("1.36.1", "1.37.1", "1.38.1"), False)])
def test_workers_last_keeps_kubelets_within_three_minors(target, via, ok):
    """Version Skew Policy: kubelet may be up to three minor versions older than kube-apiserver."""
    plan = plan_upgrade(load_inventory(SAMPLE), target, via=via, workers_last=True)
    assert plan.ok is ok
    if ok:
        assert all(n.role == "control-plane" for s in plan.steps[:-1] for n in s.nodes)
        assert any(n.role == "gpu-worker" for n in plan.steps[-1].nodes)


@pytest.mark.parametrize("text", ["1.36", "v1.36", "1.36.x", "1.036.1", "", "latest"])
def test_versions_are_exact_releases(text):
    with pytest.raises(UpgradePlanError, match="MAJOR.MINOR.PATCH"):
        parse_version(text)


def test_run_order_refuses_a_failed_plan():
    plan = plan_upgrade(load_inventory(SAMPLE), "1.37.0")
    with pytest.raises(ValueError, match="one-minor-at-a-time"):
        upgrade_run_order(plan, None)


# --------------------------------------------------------------------------- GPU driver upgrade policy


def _keys(values, prefix=""):
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _keys(value, path)
        else:
            yield path


def test_driver_upgrade_values_use_only_keys_the_chart_reads():
    """Every key we set is read by a template of gpu-operator v26.7.0 (template-refs.txt) and present in its values.yaml."""
    refs_file = UPSTREAM_GPU_OPERATOR / "template-refs.txt"
    if not refs_file.is_file():
        pytest.skip("the pinned gpu-operator chart data is not here")
    refs = set(refs_file.read_text().split())
    chart = yaml.safe_load((UPSTREAM_GPU_OPERATOR / "values.yaml").read_text())["driver"]["upgradePolicy"]
    values = gpu_operator_driver_upgrade_values(UpgradePolicy(gpu_driver=GpuDriverUpgradePolicy()))
    keys = set(_keys(values))
    assert keys and keys <= refs
    # Our defaults are the chart's defaults: setting the section changes nothing until a key is changed.
    assert values["driver"]["upgradePolicy"] == chart


def test_no_driver_policy_leaves_the_chart_alone():
    assert gpu_operator_driver_upgrade_values(None) == {}
    assert gpu_operator_driver_upgrade_values(UpgradePolicy()) == {}


def test_the_example_in_docs_upgrades_is_the_commands_output(monkeypatch):
    """docs/upgrades.md's console block: every line shown (``...`` elides) is the command's, in order."""
    monkeypatch.chdir(ROOT)
    text = (ROOT / "docs" / "upgrades.md").read_text()
    block = text.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    command, shown = block[0], [line for line in block[1:] if line != "..."]
    assert command.startswith("$ hybridgpu ")
    output = runner.invoke(app, shlex.split(command)[2:]).output.splitlines()
    positions = [output.index(line) for line in shown]  # ValueError names a line the command does not print
    assert positions == sorted(positions)


def test_program_gives_the_gpu_operator_the_inventorys_driver_upgrade_policy(scratch_project, root):
    """The on-prem program (Pulumi mocks) merges ``upgrades.gpuDriver`` into the GPU Operator release when it runs the driver."""
    from hybridgpu.shell.crds import HELM_RELEASE
    from hybridgpu.shell.preview import run_preview

    def edit(config):
        config["hybridgpu:onprem"]["inventory"] = [str(root / "tests/fixtures/upgrade/pass/driver-tuned.yaml")]
        config["hybridgpu:onprem"].pop("gangs", None)
        config.pop("hybridgpu:burst", None)
        config.pop("hybridgpu:economics", None)
        config["hybridgpu:nvidia"]["driver"] = "operator"

    result = run_preview("onprem", scratch_project(stacks=["onprem"], stack_edits={"onprem": edit}))
    (gpu_operator,) = [r for r in result.of_type(HELM_RELEASE) if r.inputs.get("chart") == "gpu-operator"]
    driver = gpu_operator.inputs["values"]["driver"]
    assert driver["enabled"] is True  # kept: the policy is merged, not a replacement of `driver`
    assert driver["upgradePolicy"]["maxUnavailable"] == 1 and driver["upgradePolicy"]["maxParallelUpgrades"] == 1
    assert driver["upgradePolicy"]["drain"] == {"enable": True, "force": False, "podSelector": "", "timeoutSeconds": 900, "deleteEmptyDir": True}
    assert driver["upgradePolicy"]["waitForCompletion"] == {"timeoutSeconds": 3600, "podSelector": "hybridgpu.io/training=true"}


@pytest.mark.parametrize(
    ("fixture", "hosts", "text"),
    [
        ("snapshot-calendar-time", ["cp-01", "cp-02", "cp-03"], "readonly SCHEDULE='*-*-* 02:00:00'"),
        ("no-section", ["cp-01", "cp-02", "cp-03"], "readonly RETENTION=7"),  # the defaults: daily, keep 7
        ("snapshots-disabled", ["cp-01", "cp-02", "cp-03"], 'systemctl disable --now "${UNIT}.timer"'),
        ("one-control-plane", ["cp-01"], "readonly SCHEDULE=daily"),
    ],
)
def test_render_writes_each_control_planes_snapshot_timer(fixture, hosts, text, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "r"
    result = runner.invoke(app, ["inventory", "render", relative(FIXTURES / "pass" / f"{fixture}.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.parent.name for p in out.glob("*/etcd-snapshot-timer.sh")) == hosts  # control planes only
    assert all(text in (out / h / "etcd-snapshot-timer.sh").read_text() for h in hosts)


def test_the_section_shown_in_docs_upgrades_validates():
    text = (ROOT / "docs" / "upgrades.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    section = yaml.safe_load(block)["upgrades"]
    policy = UpgradePolicy.model_validate(section)
    assert policy.drain_timeout == "1h" and policy.etcd_snapshots.retention == 14
    assert policy.gpu_driver is not None and policy.gpu_driver.drain.timeout_seconds == 900
