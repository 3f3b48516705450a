"""`pulumi up` carries out the inventory's Kubernetes upgrade (``upgrades.kubernetes``) and installs the etcd snapshot timer.

Three parts:

* Fixtures under tests/fixtures/upgrade_pulumi/{pass,fail} (verdicts in their headers, written before the first
  run), through ``hybridgpu inventory validate`` and ``render`` in-process: the plan's checks refuse an upgrade
  kubeadm would refuse, naming the file, ``upgrades.kubernetes`` (or the host) and a fix.
* One run under Pulumi's mocks (:func:`hybridgpu.shell.preview.run_preview` with a program that builds three
  :class:`~hybridgpu.components.onprem.OnPremCluster`): the upgrade commands exist in the plan's order as one
  ``dependsOn`` chain after every join, each with ``triggers: [<step version>]``; nothing upgrades when the
  version does not move; each control plane gets the snapshot timer with the inventory's retention.
* The chain as ``pulumi up`` runs it, in the stub sandbox (tests/helpers/sandbox.py, with the upgrade stubs of
  tests/render/test_upgrade_sandbox.py): a command that fails stops the ones after it; the next ``up`` creates
  the failed command and those after it again (resources created before stay in the state and do not run,
  pulumi/pulumi-command ``provider/pkg/provider/remote/command.go`` v1.2.1: ``Create`` runs only for a resource
  not in the state, ``Update`` only on changed inputs/``triggers``), and the scripts finish the upgrade without
  doing a completed phase twice.
"""

from __future__ import annotations

import shlex

import pytest

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.onprem import plan_onprem
from hybridgpu.render.upgrade import SNAPSHOT_UNIT, ScriptRun
from tests.helpers import ROOT
from tests.helpers.inventory_cases import cases, preview_clusters, refusal_tests, relative, runner

FIXTURES = ROOT / "tests/fixtures/upgrade_pulumi"
PASS, FAIL = cases(FIXTURES)
COMMAND = "command:remote:Command"


test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass(fixture, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["inventory", "validate", relative(fixture)])
    assert result.exit_code == 0, result.output
    plan = plan_onprem(load_inventory(fixture))
    if fixture.stem == "already-there":
        assert plan.upgrade == ()  # `to` is the running version: nothing moves
    else:
        assert plan.upgrade and plan.upgrade[0].phase == "etcd-snapshot"


# --------------------------------------------------------------------------- under Pulumi's mocks


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    """One mocks run with three clusters: ``up`` (1.35.2 -> 1.36.4 -> 1.37.1), ``done`` (``to`` = the running
    version) and ``tuned`` (retention 30, daily at 03:00, one step)."""
    plans = {
        "up": plan_onprem(load_inventory(FIXTURES / "pass/two-minors-via.yaml")),
        "done": plan_onprem(load_inventory(FIXTURES / "pass/already-there.yaml")),
        "tuned": plan_onprem(load_inventory(FIXTURES / "pass/with-policy.yaml")),
    }
    return plans, preview_clusters(plans)


def _commands(result, prefix: str) -> dict[str, object]:
    return {r.name: r for r in result.of_type(COMMAND) if r.name.startswith(prefix)}


def _name(cluster: str, run: ScriptRun) -> str:
    return f"{cluster}-upgrade-{run.version}-{run.host}-{run.phase}"


def test_upgrade_commands_follow_the_plan_as_one_chain(clusters):
    plans, result = clusters
    plan = plans["up"]
    commands = _commands(result, "up-")
    chain = [commands[_name("up", run)] for run in plan.upgrade]
    assert len(chain) == len(plan.upgrade) == 1 + 2 * 4 * 4  # snapshot, then 2 steps x 4 nodes x 4 phases
    assert len([n for n in commands if "-upgrade-" in n]) == len(chain)
    # The etcd snapshot first, on the first control plane, after every kubeadm init/join.
    joins = {commands[n].urn for n in commands if n.endswith(("-kubeadm-init", "-kubeadm-join"))}
    assert chain[0].name == "up-upgrade-1.36.4-cp-01-etcd-snapshot" and joins <= set(chain[0].dependencies)
    # Each command waits for the one before it, and only for it.
    for before, after in zip(chain, chain[1:]):
        assert after.dependencies == [before.urn], after.name
    # The order itself: control planes first (cp-01 applies), one node at a time, kubeadm, drain, kubelet, uncordon.
    order = [(r.version, r.host, r.phase) for r in plan.upgrade[1:]]
    assert order[:4] == [("1.36.4", "cp-01", p) for p in ("kubeadm", "drain", "kubelet", "uncordon")]
    assert [h for v, h, p in order if p == "kubeadm"] == ["cp-01", "cp-02", "cp-03", "gpu-01"] * 2
    assert "kubeadm upgrade apply" in chain[1].inputs["stdin"] and "kubeadm upgrade node" in commands["up-upgrade-1.36.4-cp-02-kubeadm"].inputs["stdin"]


def test_each_command_triggers_on_its_version_and_runs_where_the_plan_says(clusters):
    plans, result = clusters
    commands = _commands(result, "up-")
    first = commands["up-cp-01-kubeadm-init"].inputs["connection"]["host"]
    address = {s.hostname: s.address for s in plans["up"].steps}
    for run in plans["up"].upgrade:
        rec = commands[_name("up", run)]
        assert rec.inputs["triggers"] == [run.version]
        assert rec.inputs["stdin"] == run.text
        assert "connection" in rec.secret_paths and "stdin" not in rec.secret_paths  # scripts carry no secret
        if run.where == "node":
            assert rec.inputs["connection"]["host"] == address[run.host] and rec.inputs["create"] == "sudo bash -s"
        else:  # drain/uncordon with the admin kubeconfig: nothing logged, outputs secret (SECRET_LOGGING)
            assert rec.inputs["connection"]["host"] == first
            assert rec.inputs["create"] == "sudo KUBECONFIG=/etc/kubernetes/admin.conf bash -s"
            assert rec.inputs["logging"] == "none"


def test_nothing_upgrades_when_the_version_does_not_move(clusters):
    plans, result = clusters
    assert plans["done"].upgrade == ()
    done = _commands(result, "done-")
    assert done and not [n for n in done if "-upgrade-" in n]
    assert not [n for n in _commands(result, "tuned-") if "-1.37" in n]  # one step only


def test_every_control_plane_gets_the_snapshot_timer_with_the_inventorys_retention(clusters):
    plans, result = clusters
    for cluster, retention, schedule in (("done", "7", "daily"), ("tuned", "30", "*-*-* 03:00:00")):
        commands = _commands(result, f"{cluster}-")
        timers = {n: r for n, r in commands.items() if n.endswith("-etcd-snapshot-timer")}
        assert sorted(timers) == [f"{cluster}-cp-0{i}-etcd-snapshot-timer" for i in (1, 2, 3)]  # control planes only
        for name, rec in timers.items():
            host = name[len(cluster) + 1 : -len("-etcd-snapshot-timer")]
            join = commands[f"{cluster}-{host}-kubeadm-{'init' if host == 'cp-01' else 'join'}"]
            assert rec.dependencies == [join.urn]  # after the join: kubeadm's etcd certificates exist
            assert rec.inputs["stdin"] == plans[cluster].etcd_snapshot_timer
            assert f"readonly RETENTION={shlex.quote(retention)}\n" in rec.inputs["stdin"]
            assert f"readonly SCHEDULE={shlex.quote(schedule)}\n" in rec.inputs["stdin"]
            assert f"readonly UNIT={SNAPSHOT_UNIT}\n" in rec.inputs["stdin"] and 'systemctl enable --now "${UNIT}.timer"' in rec.inputs["stdin"]


# --------------------------------------------------------------------------- the chain as `pulumi up` runs it


class _Up:
    """``pulumi up`` over the chain of remote commands, one stub host per node.

    A run "about" host X executes in X's sandbox, also when it runs from the first control plane (drain, uncordon):
    the kubectl stub answers for the node whose box it is in. A command in :attr:`state` (created by an earlier
    ``up`` with the same ``triggers``) does not run again; a failed one is not in the state, and stops the ones after.
    """

    def __init__(self, boxes, runs: tuple[ScriptRun, ...]):
        self.boxes, self.runs, self.state = boxes, runs, set()

    def up(self, **env: str) -> list[tuple[str, str]]:
        calls: list[tuple[str, str]] = []
        for run in self.runs:
            key = (run.name, run.version)
            if key in self.state:
                continue
            box = self.boxes[run.host]
            proc = box.run(run.text.replace("WAIT_TRIES=60\n", "WAIT_TRIES=2\n"), **env)
            calls += [(run.host, c) for c in box.calls]
            if proc.returncode != 0:
                return calls
            self.state.add(key)
        return calls


def test_pulumi_up_after_a_failure_in_the_middle_finishes_the_upgrade(tmp_path):
    """1.35.2 -> 1.36.4 -> 1.37.1 on cp-01 and gpu-01 (cp-02 and cp-03 left out for time): kubeadm upgrade apply v1.37.1 fails
    after its package moved; the next up re-runs that command (no second install of kubeadm 1.37.1) and the rest, the
    third up runs nothing."""
    from tests.render.test_upgrade_sandbox import UpgradeBox

    inventory = load_inventory(FIXTURES / "pass/two-minors-via.yaml")
    runs = tuple(r for r in plan_onprem(inventory).upgrade if r.host in ("cp-01", "gpu-01"))
    boxes = {host: UpgradeBox(tmp_path / host, node=host) for host in ("cp-01", "gpu-01")}
    pulumi = _Up(boxes, runs)

    first = pulumi.up(FAIL_AT="kubeadm upgrade apply v1.37.1")
    assert first[-1] == ("cp-01", "kubeadm upgrade apply v1.37.1 --yes")
    assert boxes["cp-01"].get("cluster-version") == "1.36.4" and boxes["gpu-01"].get("kubelet-running") == "1.36.4"
    assert boxes["cp-01"].get("pkg-kubeadm") == "1.37.1-1.1"  # the phase failed after its package moved

    second = pulumi.up()
    installs = [c for _, c in second if c.startswith("apt-get install")]
    assert "apt-get install -y -qq kubeadm=1.37.1-*" not in [c for h, c in second if h == "cp-01"]  # already there
    assert installs.count("apt-get install -y -qq kubeadm=1.37.1-*") == 1  # gpu-01 only
    assert [c for h, c in second if c.startswith("kubeadm upgrade apply")] == ["kubeadm upgrade apply v1.37.1 --yes"]
    assert not [c for _, c in second if c.startswith("etcdctl")]  # the snapshot was taken once, before 1.36.4
    for host, box in boxes.items():
        assert box.get("kubelet-running") == "1.37.1" and box.get(f"cordoned-{host}") is None, host
    assert boxes["cp-01"].get("cluster-version") == "1.37.1"
    assert len(pulumi.state) == len(runs)

    assert pulumi.up() == []  # everything in the state: nothing runs


def test_scripts_themselves_resume_when_a_command_is_retried_from_its_start(tmp_path):
    """A command retried by hand (``pulumi up --target``, or ``--refresh`` dropping it) runs the whole script again: a
    kubelet phase whose restart failed re-runs without reinstalling, and one that completed says so and does nothing."""
    from tests.render.test_upgrade_sandbox import UpgradeBox

    inventory = load_inventory(FIXTURES / "pass/one-minor.yaml")
    runs = {(r.host, r.phase): r for r in plan_onprem(inventory).upgrade}
    box = UpgradeBox(tmp_path, node="gpu-01")
    assert box.run(runs[("gpu-01", "kubeadm")].text).returncode == 0
    failed = box.run(runs[("gpu-01", "kubelet")].text, FAIL_AT="systemctl restart kubelet")
    assert failed.returncode != 0 and box.get("pkg-kubelet") == "1.36.4-1.1"
    again = box.run(runs[("gpu-01", "kubelet")].text)
    assert again.returncode == 0 and not [c for c in box.calls if c.startswith("apt-get install")]
    assert "systemctl restart kubelet" in box.calls
    third = box.run(runs[("gpu-01", "kubelet")].text)
    assert third.returncode == 0 and "already done" in third.stderr + third.stdout and "systemctl restart kubelet" not in box.calls


@pytest.mark.parametrize(("installed", "ok"), [("1.36.4", True), ("1.36.1", True), ("1.37.0", False), ("1.34.9", False)])
def test_bootstrap_rerun_on_a_host_the_upgrade_moved(tmp_path, installed, ok):
    """While ``to`` (1.36.4) is ahead of ``kubernetesVersion`` (1.35.2), a bootstrap run again on a host whose packages
    the upgrade moved leaves them (nothing installed); a version outside 1.35.2..1.36.4 still stops it."""
    from tests.helpers.sandbox import Sandbox

    plan = plan_onprem(load_inventory(FIXTURES / "pass/one-minor.yaml"))
    step = next(s for s in plan.steps if s.hostname == "gpu-01")
    box = Sandbox(tmp_path, node="gpu-01")
    stub = box.base / "bin" / "dpkg-query"
    stub.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "dpkg-query $*" >>"${{SANDBOX}}/calls"\nprintf "installed {installed}-1.1"\n')
    proc = box.run(step.bootstrap.replace("nvidia-smi", "true"))
    installs = [c for c in box.calls if c.startswith("apt-get install") and "kubelet=" in c]
    if ok:
        assert proc.stderr.count("moved by the upgrade to 1.36.4") == 3 and not installs, proc.stderr[-600:]
        assert "not this script" not in proc.stderr
    else:
        assert proc.returncode != 0 and "upgrade with kubeadm upgrade, not this script" in proc.stderr
    assert "1.36.4" not in bootstrap_of(FIXTURES / "pass/already-there.yaml")  # no upgrade: the script is as before


def bootstrap_of(path) -> str:
    return next(s.bootstrap for s in plan_onprem(load_inventory(path)).steps if s.hostname == "gpu-01")


def test_upgrade_plan_without_to_shows_what_pulumi_up_runs(tmp_path, monkeypatch):
    """``hybridgpu inventory upgrade-plan PATH`` (no ``--to``) plans ``upgrades.kubernetes``: its scripts, in its
    run order, are the commands' scripts; ``to`` at the running version says there is nothing to do."""
    monkeypatch.chdir(ROOT)
    fixture = FIXTURES / "pass/two-minors-via.yaml"
    result = runner.invoke(app, ["inventory", "upgrade-plan", relative(fixture), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "Kubernetes 1.35.2 -> 1.37.1" in result.output
    order = [line.split()[2] for line in (tmp_path / "r/run-order.txt").read_text().splitlines() if not line.startswith("#")]
    runs = plan_onprem(load_inventory(fixture)).upgrade
    assert order == [r.name for r in runs]
    assert all((tmp_path / "r" / r.name).read_text() == r.text for r in runs)
    done = runner.invoke(app, ["inventory", "upgrade-plan", relative(FIXTURES / "pass/already-there.yaml")])
    assert done.exit_code == 0 and "nothing to upgrade" in done.output
