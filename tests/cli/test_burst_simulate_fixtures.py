"""`hybridgpu burst simulate` end to end: inputs refused with exit 2 and a message naming the option or
file, and inputs accepted (issue 15, point 4). Each case is what a careless or clever user would type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan

runner = CliRunner(env={"COLUMNS": "400"})
SMALL = str(ROOT / "examples" / "traces" / "small.csv")
MONTH = str(ROOT / "examples" / "traces" / "site-a-month.csv")
MANUAL = ["--onprem-gpus", "4", "--spot-gpus", "8", "--on-demand-gpus", "8", "--spot-price", "1", "--on-demand-price", "2"]


def _trace(tmp_path: Path, text: str, name: str = "t.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _plan_with(edit) -> dict:
    plan = example_plan()
    edit(plan)
    return plan


# (id, args builder (tmp_path, scratch_project) -> args, words in the error; None = accepted)
REFUSED = [
    ("launch-inf", lambda t, s: ["--trace", SMALL, *MANUAL, "--launch-seconds", "inf"], ("--launch-seconds", "finite")),
    ("spot-price-inf", lambda t, s: ["--trace", SMALL, "--onprem-gpus", "4", "--spot-price", "inf"], ("--spot-price",)),
    ("on-demand-price-nan", lambda t, s: ["--trace", SMALL, "--onprem-gpus", "4", "--on-demand-price", "nan"], ("--on-demand-price",)),
    ("interruptions-inf", lambda t, s: ["--trace", SMALL, "--onprem-gpus", "4", "--interruptions", "inf"], ("--interruptions",)),
    ("dispatch-delay-inf", lambda t, s: ["--trace", SMALL, "--onprem-gpus", "4", "--dispatch-delay", "inf"], ("--dispatch-delay",)),
    ("launch-negative", lambda t, s: ["--trace", SMALL, "--onprem-gpus", "4", "--launch-seconds", "-5"], ("--launch-seconds",)),
    ("header-only-trace", lambda t, s: ["--trace", _trace(t, "submit_s,gpus,duration_s,checkpoint_s,burst\n", "empty.csv"), "--onprem-gpus", "4"], ("empty.csv", "no job")),
    ("comment-only-trace", lambda t, s: ["--trace", _trace(t, "# todo\n", "c.csv"), "--onprem-gpus", "4"], ("c.csv", "no header")),
    ("burst-queue-for-onprem-only-job", lambda t, s: ["--trace", _trace(t, "submit_s,gpus,duration_s,checkpoint_s,burst,queue\n0,1,60,,none,burst\n"), "--onprem-gpus", "4"], ("line 2", "queue")),
    (
        "plan-launch-inf",
        lambda t, s: ["--trace", SMALL, "--stack", "hybrid", "--root", str(s(plan=_plan_with(lambda p: p["simulation"].update(karpenterLaunchSeconds=float("inf")))))],
        ("site-a.yaml", "karpenterLaunchSeconds"),
    ),
    (
        "plan-interruptions-nan",
        lambda t, s: ["--trace", SMALL, "--stack", "hybrid", "--root", str(s(plan=_plan_with(lambda p: p["simulation"].update(spotInterruptionsPerInstanceHour=float("nan")))))],
        ("spotInterruptionsPerInstanceHour",),
    ),
    (
        "plan-spot-price-inf",
        lambda t, s: ["--trace", SMALL, "--stack", "hybrid", "--root", str(s(plan=_plan_with(lambda p: p["cloud"]["spot"].update(usdPerGpuHour=float("inf")))))],
        ("usdPerGpuHour",),
    ),
]

ACCEPTED = [
    ("small-manual", lambda t, s: ["--trace", SMALL, *MANUAL, "--launch-seconds", "120", "--interruptions", "0"]),
    ("month-example-plan", lambda t, s: ["--trace", MONTH, "--stack", "hybrid", "--root", str(ROOT)]),
    ("launch-zero", lambda t, s: ["--trace", SMALL, *MANUAL, "--launch-seconds", "0"]),
    ("free-spot", lambda t, s: ["--trace", SMALL, *MANUAL, "--spot-price", "0"]),
    ("per-gpu-instances", lambda t, s: ["--trace", SMALL, *MANUAL, "--gpus-per-instance", "1"]),
    ("no-dispatch-round", lambda t, s: ["--trace", SMALL, *MANUAL, "--dispatch-delay", "0"]),
    ("interrupted-seeded", lambda t, s: ["--trace", SMALL, *MANUAL, "--interruptions", "0.5", "--seed", "3"]),
    ("single-job", lambda t, s: ["--trace", _trace(t, "submit_s,gpus,duration_s\n0,1,60\n"), "--onprem-gpus", "1"]),
    ("queue-column-spillover", lambda t, s: ["--trace", _trace(t, "submit_s,gpus,duration_s,checkpoint_s,burst,queue\n0,8,60,600,spot,burst\n0,8,60,,on-demand,local\n"), *MANUAL]),
    (
        "split-queues-plan",
        lambda t, s: [
            "--trace",
            _trace(t, "submit_s,gpus,duration_s,checkpoint_s,burst,queue\n0,8,3600,600,spot,burst\n0,8,3600,,on-demand,local\n"),
            "--stack",
            "onprem",
            "--root",
            str(
                s(
                    plan=_plan_with(lambda p: (p.update(topology="split-queues"), p["manager"].pop("stack"))),
                    # the on-prem manager's management network must reach the EKS API (issue 15, point 5)
                    stack_edits={"prod": lambda c: c["hybridgpu:cloud"]["cluster"]["endpoint"]["privateAccessCidrs"].append("10.20.0.0/22")},
                )
            ),
        ],
    ),
    ("json", lambda t, s: ["--trace", SMALL, *MANUAL, "--json"]),
]


@pytest.mark.parametrize("case,build,words", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_with_exit_2(tmp_path, scratch_project, case, build, words):
    result = runner.invoke(app, ["burst", "simulate", *build(tmp_path, scratch_project)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    for word in words:
        assert word in output, (word, output)


@pytest.mark.parametrize("case,build", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_accepted(tmp_path, scratch_project, case, build):
    result = runner.invoke(app, ["burst", "simulate", *build(tmp_path, scratch_project)])
    assert result.exit_code == 0, result.output
    if case == "json":
        data = json.loads(result.output)
        assert "whole instances" in data["costModel"] and all("admitted" in r for r in data["results"])
    else:
        assert "never admitted" in result.output and "(admitted jobs)" in result.output and "whole instances" in result.output
    if case == "split-queues-plan":
        assert "split-queues" in result.output


def test_fixture_counts():
    assert len(REFUSED) >= 10 and len(ACCEPTED) >= 10
