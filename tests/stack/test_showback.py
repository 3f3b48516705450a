"""hybridgpu.stack.showback: what `cost showback --stack` takes from the stacks of a site."""

from __future__ import annotations

import pytest

from hybridgpu.stack.showback import showback_inputs
from tests.helpers import ROOT
from tests.helpers.scratch import example_plan, example_stack, example_teams, write_stack


def test_site_inputs(root):
    inputs = showback_inputs(["onprem", "prod"], root)
    assert set(inputs.prices.usd_per_gpu_hour) == {"owned", "reserved", "spot", "on-demand"}
    assert inputs.teams is not None and {t.name for t in inputs.teams.teams} >= {"ml-research", "ml-platform"}
    assert inputs.flavors["onprem-a100-80gb-mig"] == ("owned", "A100-80GB")
    assert inputs.flavors["eks-on-demand"] == ("on-demand", "H100-80GB")  # one GPU model in h100-on-demand: priced by it
    assert inputs.flavors["eks-spot"] == ("spot", None)  # h100-spot takes H100 and H200: its rows are blended


def test_two_stacks_pricing_owned_gpus_differently_is_refused(scratch_project):
    root = scratch_project(stacks=["onprem"], plan=example_plan(), teams=example_teams())
    other = example_stack("onprem")
    other["config"].pop("hybridgpu:burst")
    other["config"].pop("hybridgpu:teams", None)
    other["config"]["hybridgpu:onprem"]["inventory"] = [str(ROOT / p) for p in other["config"]["hybridgpu:onprem"]["inventory"]]
    other["config"]["hybridgpu:onprem"].setdefault("storage", {})["namespaces"] = ["ml-research"]  # no burst queue names one here
    other["config"]["hybridgpu:economics"] = {"onPrem": {"serverUsdPerGpu": 20000}}
    write_stack(root, "onprem2", other)
    with pytest.raises(ValueError, match="price owned GPU-hours differently"):
        showback_inputs(["onprem", "onprem2"], root)
