"""``hybridgpu cost plan --apply``: the optimal plan written into the stack files (issue 28, section 2).

What must hold (docs/economics.md, "Applying a plan"):

* the numbers that several files must agree on are written together, so every touched stack validates
  (``stack/burst.py``: the burst plan's ceiling equals the NodePool ``gpuLimit``; ``stack/teams.py``: the
  teams' cloud quotas within the ceilings, their budgets within the plan's cloud cost), and the policy
  pack's ``stack-gpu-ceiling`` and ``nodepool-gpu-limit`` with the written policy config hold the stack
  to the plan (Karpenter stops launching for a NodePool at ``spec.limits``, karpenter v1 NodePool API,
  ``pkg/apis/v1/nodepool.go``; Kueue admits within ``nominalQuota``, kueue v0.19.2
  ``apis/kueue/v1beta1/clusterqueue_types.go``: the four must be one number);
* comments, key order and every byte but the numbers stay; a second ``--apply`` changes nothing;
* nothing is written on a refusal (bad options, a file that does not parse or cannot be written, a team
  budget the plan exceeds, a demand the burst simulator shows starving a queue);
* ``validate`` warns when a written number or the demand changed since (the lock file).

Cases: ``tests/economics/plan_apply/cases.yaml`` (verdicts written before the first run), through the CLI
in-process (typer's runner on the ``cost`` command group).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from hybridgpu.catalog import load_catalog
from hybridgpu.cli import app
from hybridgpu.cli.cost import cost_app
from hybridgpu.economics.demand import DemandProfile
from hybridgpu.policy.base import NODEPOOL, PolicyResource
from hybridgpu.policy.registry import POLICIES
from hybridgpu.render.karpenter import render_nodepool
from hybridgpu.shell.policy.check import load_policy_config
from hybridgpu.stack.load import load_stack
from hybridgpu.stack.plan_apply import ApplyError, demand_jobs, set_json_value, set_yaml_value, split_limits
from hybridgpu.stack.plan_lock import drift_warnings
from tests.helpers import ROOT
from tests.helpers.cases import runner
from tests.helpers.scratch import PLAN, TEAMS, make_project

HERE = Path(__file__).parent / "plan_apply"
CASES = yaml.safe_load((HERE / "cases.yaml").read_text())
STACKS = ("prod", "hybrid", "onprem")
FILES = (*(f"stacks/Pulumi.{s}.yaml" for s in STACKS), PLAN, TEAMS)
LOCK = "stacks/.hybridgpu-plan.lock"


def project(tmp_path: Path) -> Path:
    """A scratch copy of the example project that keeps every byte of the files it copies (comments too)."""
    root = make_project(tmp_path, copy=FILES)
    (root / "stacks" / "inventory").symlink_to(ROOT / "stacks" / "inventory", target_is_directory=True)
    for demand in HERE.glob("*.csv"):
        shutil.copy(demand, root / demand.name)
    shutil.copy(ROOT / "policies" / "config.example.json", root / "policy.json")
    return root


def snapshot(root: Path) -> dict[str, str]:
    """SHA-256 of every regular file of the project (symlinked data left out)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()
            and "inventory" not in p.parts}


def apply(root: Path, args: list[str], monkeypatch: pytest.MonkeyPatch, input: str | None = None):
    monkeypatch.chdir(root)
    return runner.invoke(cost_app, ["plan", *args, "--root", str(root)], input=input)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_apply_case(case, tmp_path, monkeypatch):
    root = project(tmp_path)
    for file, (old, new) in (case.get("replace") or {}).items():
        text = (root / file).read_text()
        assert old in text, (case["name"], old)
        (root / file).write_text(text.replace(old, new, 1))
    for file, text in (case.get("files") or {}).items():
        (root / file).write_text(text)
    for file, mode in (case.get("chmod") or {}).items():
        os.chmod(root / file, int(str(mode), 0))
    before = snapshot(root)
    result = apply(root, case["args"], monkeypatch, case.get("input"))
    out = result.output
    assert "Traceback" not in out and (result.exception is None or isinstance(result.exception, SystemExit)), (case["name"], out, result.exception)
    for word in case["expect"]:
        assert word in out, (case["name"], word, out)
    if case["verdict"] == "pass":
        assert result.exit_code == 0, (case["name"], out)
        assert snapshot(root) != before
        validated = re.search(r"validated: ([^)]*)\)", out)  # every stack of the burst plan, with the new texts, before writing
        assert validated is not None and set(validated.group(1).split(", ")) == set(STACKS), out
    else:
        assert result.exit_code == (1 if case["verdict"] == "declined" else 2), (case["name"], out)
        assert out.count("error:") <= 1
        assert snapshot(root) == before, case["name"]  # nothing written, no temporary file left
    for file in (case.get("chmod") or {}):
        os.chmod(root / file, 0o644)


def test_cases_are_enough():
    verdicts = [c["verdict"] for c in CASES]
    assert verdicts.count("pass") >= 10 and verdicts.count("fail") >= 10


def _same_but_numbers(old: str, new: str) -> bool:
    """True when ``new`` differs from ``old`` only in numbers (and the spaces that keep a comment's column)."""
    a, b = old.splitlines(), new.splitlines()
    if len(a) != len(b):
        return False
    norm = re.compile(r"\d+(\.\d+)?")
    for x, y in zip(a, b):
        if x != y and (norm.sub("N", x).split() != norm.sub("N", y).split() or x.split("#")[1:] != y.split("#")[1:]):
            return False
    return True


def test_apply_on_the_example_stacks_validates_keeps_comments_and_is_idempotent(tmp_path, monkeypatch):
    root = project(tmp_path)
    originals = {f: (root / f).read_text() for f in (*FILES, "policy.json")}
    first = apply(root, ["--demand", "week.csv", "--stack", "prod", "--apply", "--yes", "--policy-pack-config", "policy.json"], monkeypatch)
    assert first.exit_code == 0, first.output
    changed = {f for f, text in originals.items() if (root / f).read_text() != text}
    assert changed == {"stacks/Pulumi.prod.yaml", PLAN, TEAMS, "policy.json"}
    for f in changed - {"policy.json"}:  # comments, key order, everything but the numbers: byte for byte
        assert _same_but_numbers(originals[f], (root / f).read_text()), f
    policy = (root / "policy.json").read_text()  # the JSON config: the stack's entries added, nothing else
    assert re.sub(r', "prod": \d+', "", policy) == originals["policy.json"] and policy.count('"prod": ') == 2
    for stack in STACKS:  # through the CLI, as a user checks
        done = runner.invoke(app, ["validate", stack, "--root", str(root)])
        assert done.exit_code == 0 and "warning" not in done.output, done.output
    prod = load_stack("prod", root)
    plan, cloud = prod.burst_plan, prod.config.cloud
    assert plan is not None and cloud is not None
    pools = {p.name: p.gpu_limit for p in cloud.node_pools}
    assert plan.cloud["spot"].gpus == pools["h100-spot"] and plan.cloud["on-demand"].gpus == pools["h100-on-demand"]
    teams = yaml.safe_load((root / TEAMS).read_text())["teams"]
    spot = sum(s["nominalQuota"] for t in teams for s in t.get("cloud", []) if s["capacityType"] == "spot")
    assert spot == pools["h100-spot"]  # every planned GPU is in a team's quota
    after = {f: (root / f).read_bytes() for f in (*FILES, "policy.json", LOCK)}
    second = apply(root, ["--demand", "week.csv", "--stack", "prod", "--apply", "--yes", "--policy-pack-config", "policy.json"], monkeypatch)
    assert second.exit_code == 0 and "nothing to change" in second.output, second.output
    assert {f: (root / f).read_bytes() for f in after} == after


def test_the_policy_pack_holds_the_stack_to_the_applied_plan(tmp_path, monkeypatch):
    """The pack's own validators (what ``hybridgpu check`` runs on each NodePool and the stack) with the
    applied policy config: the applied stack passes; a gpuLimit raised above the plan fails both ceilings."""
    root = project(tmp_path)
    assert apply(root, ["--demand", "week.csv", "--stack", "prod", "--apply", "--yes", "--policy-pack-config", "policy.json"], monkeypatch).exit_code == 0
    config = load_policy_config(root / "policy.json")
    specs = {p.name: p for p in POLICIES}
    catalog = load_catalog()

    def verdicts(cloud) -> tuple[list[str], list[str]]:
        resources = [PolicyResource(NODEPOOL, p.name, f"urn:pulumi:prod::hybridgpu::{NODEPOOL}::{p.name}", render_nodepool(p, catalog)) for p in cloud.node_pools]
        per_pool = specs["nodepool-gpu-limit"].parse_settings(config["nodepool-gpu-limit"][1])
        stack = specs["stack-gpu-ceiling"].parse_settings(config["stack-gpu-ceiling"][1])
        return ([m for r in resources for m in specs["nodepool-gpu-limit"].validator(r, per_pool)],
                [m for _, m in specs["stack-gpu-ceiling"].validator(resources, stack)])

    cloud = load_stack("prod", root).config.cloud
    assert cloud is not None
    assert verdicts(cloud) == ([], [])
    spot = next(i for i, p in enumerate(cloud.node_pools) if p.name == "h100-spot")
    pools = list(cloud.node_pools)
    pools[spot] = pools[spot].model_copy(update={"gpu_limit": (pools[spot].gpu_limit or 0) + 8})
    per_pool, stack = verdicts(cloud.model_copy(update={"node_pools": pools}))
    assert any("h100-spot" in m for m in per_pool) and stack and "above" in stack[0]


def test_validate_warns_when_the_files_drift_from_the_applied_plan(tmp_path, monkeypatch):
    root = project(tmp_path)
    assert apply(root, ["--demand", "week.csv", "--stack", "prod", "--apply", "--yes"], monkeypatch).exit_code == 0
    spot = load_stack("prod", root).burst_plan.cloud["spot"].gpus  # type: ignore[union-attr]
    for file, key in ((PLAN, "gpuCeiling"), ("stacks/Pulumi.prod.yaml", "gpuLimit")):  # raised together: still valid, but not the plan
        text = (root / file).read_text()
        at = text.index("h100-spot")
        at = text.index(f"{key}: {spot}", at)
        (root / file).write_text(text[:at] + f"{key}: {spot + 8}" + text[at + len(f"{key}: {spot}") :])
    done = runner.invoke(app, ["validate", "prod", "--root", str(root)])
    assert done.exit_code == 0, done.output
    assert f"cloud.spot.gpuCeiling is {spot + 8}" in done.output and f"nodePools[name=h100-spot].gpuLimit is {spot + 8}" in done.output
    assert LOCK in done.output and "the demand" not in done.output
    (root / "week.csv").write_text((root / "week.csv").read_text() + "# edited\n")
    done = runner.invoke(app, ["validate", "hybrid", "--root", str(root)])
    assert "the demand week.csv" in done.output and "changed" in done.output, done.output


def test_drift_warnings_compare_only_the_files_given():
    lock = {"kind": "PlanLock", "plans": {"prod": {"stack": "prod", "inputs": {"demand": {"file": "d.csv", "sha256": "a"}},
                                                   "written": [{"file": "f.yaml", "path": ["x", {"name": "p"}, "n"], "value": 8}]}}}
    same = {"f.yaml": {"x": [{"name": "p", "n": 8}]}}
    assert drift_warnings(lock, "L", same, {"d.csv": "a"}) == []
    assert drift_warnings(lock, "L", {}, {"d.csv": "b"}) == []  # the stack reads no file the plan wrote
    [w] = drift_warnings(lock, "L", {"f.yaml": {"x": [{"name": "p", "n": 16}]}}, {"d.csv": "a"})
    assert "x[name=p].n is 16" in w and "wrote 8" in w
    assert "changed" in drift_warnings(lock, "L", same, {"d.csv": "b"})[0]
    assert "not a plan lock" in drift_warnings({"kind": "x"}, "L", same, {})[0]


def test_yaml_and_json_edits_change_only_the_number():
    text = "a:\n  # keep\n  items:\n    - name: p   # first\n      limit: 64       # the limit\n    - name: q\n      limit: 8\n"
    new = set_yaml_value(text, ["a", "items", {"name": "p"}, "limit"], 128, "t.yaml")
    assert new == text.replace("limit: 64       #", "limit: 128      #")
    added = set_yaml_value(text, ["a", "items", {"name": "q"}, "weight"], 5, "t.yaml")
    assert added == text + "      weight: 5\n"
    with pytest.raises(ApplyError, match="missing"):
        set_yaml_value(text, ["a", "other", "x"], 1, "t.yaml")
    with pytest.raises(ApplyError, match="line 2"):
        set_yaml_value("a: [1\nb: 2\n", ["a"], 1, "t.yaml")
    doc = '{\n  "p": {"m": {"default": 1, "dev": 2}},\n  "q": 3\n}\n'
    assert set_json_value(doc, ["p", "m", "prod"], 9, "c.json") == doc.replace('"dev": 2}', '"dev": 2, "prod": 9}')
    assert set_json_value(doc, ["p", "m", "dev"], 4, "c.json") == doc.replace('"dev": 2', '"dev": 4')
    assert json.loads(set_json_value(doc, ["r", "s"], 1, "c.json"))["r"] == {"s": 1}


def test_split_follows_the_current_limits_in_whole_instances():
    assert split_limits(48, [("a", 32, 8), ("b", 16, 8)]) == {"a": 32, "b": 16}
    assert split_limits(40, [("a", 32, 8), ("b", 16, 8)]) == {"a": 24, "b": 16}  # 26.7 / 13.3: a is further below its share
    assert split_limits(10, [("a", 0, 8), ("b", 0, 8)]) == {"a": 8, "b": 8}  # equal shares, whole instances, never below
    assert split_limits(0, [("a", 32, 8)]) == {"a": 0}


def test_demand_jobs_carry_the_demand():
    """The jobs replay exactly the demand's GPU-hours per class (the simulator's input is the planner's input)."""
    rng = np.random.default_rng(3)
    gpus = rng.integers(0, 40, 72).astype(float)
    ckpt = np.floor(gpus * rng.random(72))
    jobs, labels = demand_jobs(DemandProfile(gpus, ckpt), gpus_per_instance=8, checkpoint_s=3600.0, spot_queue=("t", "spot"), other_queue=("e", "on-demand"))
    hours = {"t": 0.0, "e": 0.0}
    for job, label in zip(jobs, labels):
        hours[label] += job.gpus * job.duration_s / 3600
        assert job.gpus <= 8 and (job.checkpoint_s is not None) == (label == "t")
    assert hours == {"t": ckpt.sum(), "e": (gpus - ckpt).sum()}
    assert [j.submit_s for j in jobs] == sorted(j.submit_s for j in jobs)


def test_a_failed_rename_puts_back_the_files_already_replaced(tmp_path, monkeypatch):
    """All or nothing: the second of five renames fails; the first file is restored, no temporary file is left."""
    import hybridgpu.stack.plan_apply as plan_apply

    root = project(tmp_path)
    before = snapshot(root)
    calls = []
    real = os.replace

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise PermissionError(13, "Permission denied", str(dst))
        return real(src, dst)

    monkeypatch.setattr(plan_apply.os, "replace", flaky)
    result = apply(root, ["--demand", "week.csv", "--stack", "prod", "--apply", "--yes"], monkeypatch)
    assert result.exit_code == 2 and "put back" in result.output, result.output
    assert len(calls) == 2 and snapshot(root) == before
