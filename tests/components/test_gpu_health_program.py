"""The on-prem program installs the GPU health detector the inventory's `remediation` policy asks for (Pulumi mocks).

* ``detector: nvsentinel``: one ``nvsentinel`` Helm release (pinned OCI chart, its own namespace), a child of the
  site's NVIDIA layer, after the GPU Operator release, whose values gain ``dcgm.enabled`` (the standalone DCGM
  the detector reads: :mod:`hybridgpu.render.gpu_health`);
* no ``remediation`` section, or ``detector: none``: no release, GPU Operator values unchanged.
"""

from __future__ import annotations

from hybridgpu.render.gpu_health import NVSENTINEL_CHART, NVSENTINEL_VERSION
from hybridgpu.shell.crds import HELM_RELEASE
from hybridgpu.shell.preview import run_preview

FIXTURES = "tests/fixtures/remediation/pass"


def _preview(scratch_project, root, inventory: str):
    def edit(config):
        config["hybridgpu:onprem"]["inventory"] = [str(root / FIXTURES / inventory)]
        config["hybridgpu:onprem"].pop("gangs", None)
        config.pop("hybridgpu:burst", None)
        config.pop("hybridgpu:economics", None)

    return run_preview("onprem", scratch_project(stacks=["onprem"], stack_edits={"onprem": edit}))


def _release(result, chart):
    return [r for r in result.of_type(HELM_RELEASE) if r.inputs.get("chart") == chart]


def test_nvsentinel_after_the_gpu_operator_with_standalone_dcgm(scratch_project, root):
    result = _preview(scratch_project, root, "reset-gpu-reset.yaml")
    (release,) = _release(result, NVSENTINEL_CHART)
    (gpu_operator,) = _release(result, "gpu-operator")
    assert release.inputs["version"] == NVSENTINEL_VERSION and release.inputs["namespace"] == "nvsentinel"
    assert gpu_operator.urn in release.dependencies
    assert release.parent is not None and release.parent == gpu_operator.parent  # a child of the site's NvidiaLayer
    assert gpu_operator.inputs["values"]["dcgm"] == {"enabled": True}
    values = release.inputs["values"]
    assert values["global"]["janitor"] == {"enabled": True}
    assert values["gpu-health-monitor"]["dcgm"]["service"]["endpoint"] == "nvidia-dcgm.gpu-operator.svc"


def test_no_detector_no_release(scratch_project, root):
    for inventory in ("no-policy.yaml", "detector-none.yaml"):
        result = _preview(scratch_project, root, inventory)
        assert not _release(result, NVSENTINEL_CHART), inventory
        (gpu_operator,) = _release(result, "gpu-operator")
        assert "dcgm" not in gpu_operator.inputs["values"], inventory


def test_stack_without_the_gpu_operator_refuses_the_detector(scratch_project, root):
    from typer.testing import CliRunner

    from hybridgpu.cli import app

    def edit(inventory: str):
        def apply(config):
            config["hybridgpu:onprem"]["inventory"] = [str(root / FIXTURES / inventory)]
            config["hybridgpu:onprem"].pop("gangs", None)
            config.pop("hybridgpu:burst", None)
            config.pop("hybridgpu:economics", None)
            config["hybridgpu:nvidia"] = {"install": "device-plugin"}

        return apply

    runner = CliRunner(env={"COLUMNS": "400"})
    project = scratch_project(stacks=["onprem"], stack_edits={"onprem": edit("defaults.yaml")})
    result = runner.invoke(app, ["validate", "onprem", "--root", str(project)])
    assert result.exit_code == 2, result.output
    assert "hybridgpu:nvidia: the inventory's `remediation.detector: nvsentinel`" in result.output
    assert "set `hybridgpu:nvidia.install: gpu-operator`, or `remediation.detector: none`" in result.output
    project = scratch_project(stacks=["onprem"], stack_edits={"onprem": edit("detector-none.yaml")})
    assert runner.invoke(app, ["validate", "onprem", "--root", str(project)]).exit_code == 0
