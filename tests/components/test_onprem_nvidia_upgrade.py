"""``pulumi up`` upgrades the NVIDIA driver and container toolkit of GPU workers that carry their own driver (``upgrades.nvidia``).

Three parts:

* Fixtures under tests/fixtures/upgrade_nvidia/{pass,fail} (verdicts in their headers, written before the first run),
  through ``hybridgpu inventory validate`` and ``render`` in-process: a driver package or version apt would not find, a
  toolkit version without its Debian revision, a section that moves nothing are refused naming the file, the key path
  under ``upgrades.nvidia`` and a fix.
* One run under Pulumi's mocks with three :class:`~hybridgpu.components.onprem.OnPremCluster`: the NVIDIA commands come
  after the Kubernetes upgrade's, one GPU worker at a time (or ``maxParallel``), each with ``triggers: [<tag>]``; nothing
  without ``upgrades.nvidia``. pulumi/pulumi-command ``provider/pkg/provider/remote/command.go`` v1.2.1: ``Create`` runs
  only for a resource not in the state and ``Update`` only on changed inputs or ``triggers``, so the same versions on the
  next ``up`` run nothing and a failed command (not in the state) runs again with those after it.
* ``hybridgpu inventory upgrade-plan`` shows the NVIDIA order and writes the scripts ``pulumi up`` runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.onprem import plan_onprem
from tests.helpers import ROOT
from tests.helpers.inventory_cases import cases, preview_clusters, refusal_tests, relative, runner

FIXTURES = ROOT / "tests/fixtures/upgrade_nvidia"
PASS, FAIL = cases(FIXTURES)
COMMAND = "command:remote:Command"
PHASES = ["check", "drain", "install", "reboot-wait", "verify", "uncordon"]


test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass(fixture, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["inventory", "validate", relative(fixture)])
    assert result.exit_code == 0, result.output
    runs = [r for r in plan_onprem(load_inventory(fixture)).upgrade if r.kind == "nvidia"]
    hosts = ["gpu-01", "gpu-02"] if fixture.stem == "absent-and-cordoned" else ["gpu-01", "gpu-02", "gpu-03"]
    assert [r.host for r in runs if r.phase == "drain"] == hosts
    assert [r.phase for r in runs] == PHASES * len(hosts)


def test_the_gpu_operators_driver_is_not_touched_on_the_hosts():
    """With the driver from the GPU Operator (``hybridgpu:onprem.nvidiaToolkit: false``) the hosts have no driver package
    of their own: ``upgrades.nvidia`` runs nothing there (the operator's ``upgrades.gpuDriver`` policy applies)."""
    plan = plan_onprem(load_inventory(FIXTURES / "pass/driver-only.yaml"), nvidia_toolkit=False)
    assert plan.upgrade == ()


# --------------------------------------------------------------------------- under Pulumi's mocks


@pytest.fixture(scope="module")
def clusters():
    """One mocks run: ``both`` (Kubernetes 1.35.2 -> 1.36.4, then the driver), ``par`` (``maxParallel: 2``), ``none``
    (no ``upgrades.nvidia``)."""
    plans = {
        "both": plan_onprem(load_inventory(FIXTURES / "pass/after-kubernetes.yaml")),
        "par": plan_onprem(load_inventory(FIXTURES / "pass/max-parallel-two.yaml")),
        "none": plan_onprem(load_inventory(ROOT / "tests/fixtures/upgrade_pulumi/pass/already-there.yaml")),
    }
    return plans, preview_clusters(plans)


def _commands(result: Any, prefix: str) -> dict[str, Any]:
    return {r.name: r for r in result.of_type(COMMAND) if r.name.startswith(prefix)}


def test_after_the_kubernetes_upgrade_one_gpu_worker_at_a_time(clusters):
    plans, result = clusters
    commands = _commands(result, "both-")
    tag = "nvidia-driver-580.95.05-1"
    kubernetes = [r for r in plans["both"].upgrade if r.kind == "kubernetes"]
    last_kubernetes = commands[f"both-upgrade-{kubernetes[-1].version}-{kubernetes[-1].host}-{kubernetes[-1].phase}"]
    names = [f"both-upgrade-{tag}-{host}-{phase}" for host in ("gpu-01", "gpu-02", "gpu-03") for phase in PHASES]
    assert sorted(n for n in commands if f"-upgrade-{tag}-" in n) == sorted(names)
    chain = [commands[n] for n in names]
    assert chain[0].dependencies == [last_kubernetes.urn]  # the driver moves once Kubernetes is done
    for before, after in zip(chain, chain[1:]):
        assert after.dependencies == [before.urn], after.name  # phase after phase, node after node
    for rec in chain:
        assert rec.inputs["triggers"] == [tag]
    gpu = {s.hostname: s.address for s in plans["both"].steps}
    first = commands["both-cp-01-kubeadm-init"].inputs["connection"]["host"]
    for host in ("gpu-01", "gpu-02", "gpu-03"):
        for phase, where in zip(PHASES, (gpu[host], first, gpu[host], first, gpu[host], first)):
            rec = commands[f"both-upgrade-{tag}-{host}-{phase}"]
            assert rec.inputs["connection"]["host"] == where, rec.name
            if where == first:  # with the admin kubeconfig: nothing logged
                assert rec.inputs["logging"] == "none" and rec.inputs["create"] == "sudo KUBECONFIG=/etc/kubernetes/admin.conf bash -s"
    # The drain reads the check's output (a node at the target is not drained): its stdin is computed from it.
    check = commands[f"both-upgrade-{tag}-gpu-01-check"]
    drain = commands[f"both-upgrade-{tag}-gpu-01-drain"]
    assert drain.property_dependencies["stdin"] == [check.urn] and drain.dependencies == [check.urn]
    assert "readonly NODE_STATE=unknown\n" in drain.inputs["stdin"]  # the mocks' check printed no state: the node is drained
    # The wait after the install reads the install's output (the boot id before the reboot): its stdin is computed from it.
    install = commands[f"both-upgrade-{tag}-gpu-01-install"]
    wait = commands[f"both-upgrade-{tag}-gpu-01-reboot-wait"]
    assert wait.property_dependencies["stdin"] == [install.urn] and wait.dependencies == [install.urn]
    assert "readonly BOOT_ID=none\n" in wait.inputs["stdin"]  # the mocks' install printed no boot id: no reboot to wait for
    assert "apt-get install -y -qq --allow-downgrades \"${DRIVER_PACKAGE}=${DRIVER_DEB_VERSION}\"" in install.inputs["stdin"]
    assert "readonly DRIVER_PACKAGE=cuda-drivers-580\n" in install.inputs["stdin"]


def test_max_parallel_runs_groups_side_by_side(clusters):
    plans, result = clusters
    commands = _commands(result, "par-")
    tag = "nvidia-driver-580.95.05-1"
    joins = {commands[n].urn for n in commands if n.endswith(("-kubeadm-init", "-kubeadm-join"))}
    one, two, three = (commands[f"par-upgrade-{tag}-gpu-0{i}-check"] for i in (1, 2, 3))
    assert joins <= set(one.dependencies) and one.dependencies == two.dependencies  # gpu-01 and gpu-02 together
    tails = {commands[f"par-upgrade-{tag}-gpu-0{i}-uncordon"].urn for i in (1, 2)}
    assert set(three.dependencies) == tails  # gpu-03 once both are back


def test_nothing_without_upgrades_nvidia(clusters):
    plans, result = clusters
    assert plans["none"].upgrade == ()
    assert not [n for n in _commands(result, "none-") if "-upgrade-" in n]


def test_upgrade_plan_shows_the_nvidia_order_and_writes_what_pulumi_up_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    fixture = FIXTURES / "pass/after-kubernetes.yaml"
    result = runner.invoke(app, ["inventory", "upgrade-plan", relative(fixture), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "Kubernetes 1.35.2 -> 1.36.4" in result.output and "NVIDIA upgrade, site lab: driver cuda-drivers-580=580.95.05-1" in result.output
    order = [line.split()[2] for line in (tmp_path / "r/run-order.txt").read_text().splitlines() if not line.startswith("#")]
    runs = plan_onprem(load_inventory(fixture)).upgrade
    assert order == [r.name for r in runs]
    assert all((tmp_path / "r" / r.name).read_text() == r.text for r in runs)
    only = runner.invoke(app, ["inventory", "upgrade-plan", relative(FIXTURES / "pass/absent-and-cordoned.yaml"), "--json"])
    assert only.exit_code == 0, only.output
    assert '"hostname": "gpu-02"' in only.output and '"uncordon": false' in only.output and '"skipped": [\n      "gpu-03"' in only.output
