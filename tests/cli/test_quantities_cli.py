"""Issue 24: one quantity grammar and one YAML reader on every path, through the CLI.

`hybridgpu job check onprem` (the policy pack, then the on-prem Topology and quota rules of
hybridgpu.stack.topology) and `hybridgpu job check prod` (the policy pack, then the EKS queue rules of
hybridgpu.stack.eks_topology) read the GPU count of docs/examples/onprem-pytorchjob.yaml and
docs/examples/eks-pytorchjob.yaml written in each spelling Kubernetes accepts for 8 (apimachinery
``resource.Quantity``: ``8``, ``8.0``, ``"8"``, ``"8e0"``, ``"8000m"``) with the verdict of ``"8"``, read
``"1k"`` as 1000, and refuse a fraction of a GPU with one message (kubernetes/kubernetes
``pkg/apis/core/validation/validation.go`` ``ValidateResourceQuantityValue``: an extended resource must be an
integer). Before the fix, ``"8e0"`` on the on-prem stack was "a field has the wrong type" (``int("8e0")``).

Job files with YAML merge keys (``<<: *defaults``, https://yaml.org/type/merge.html) are read as
``yaml.safe_load`` reads them; a key written twice in one mapping is still refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

runner = CliRunner(env={"COLUMNS": "400"})

EXAMPLES = {"onprem": ROOT / "docs/examples/onprem-pytorchjob.yaml", "prod": ROOT / "docs/examples/eks-pytorchjob.yaml"}
WRITTEN = 'nvidia.com/gpu: "8"'


def _check(stack: str, text: str, tmp_path: Path, name: str) -> tuple[int, str]:
    """Exit code and output (one line per issue, the file shown as JOB) of `hybridgpu job check <stack> <file>`."""
    path = tmp_path / name / "job.yaml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["job", "check", stack, str(path), "--root", str(ROOT)])
    assert "Traceback" not in result.output
    return result.exit_code, result.output.replace(str(path), "JOB")


def _spelled(stack: str, gpus: str) -> str:
    text = EXAMPLES[stack].read_text(encoding="utf-8")
    assert text.count(WRITTEN) == 2  # the requests and limits of the one GPU container
    return text.replace(WRITTEN, f"nvidia.com/gpu: {gpus}")


@pytest.mark.parametrize("stack", ["onprem", "prod"])
@pytest.mark.parametrize("gpus", ["8", "8.0", '"8.0"', '"8e0"', "8e0", '"8000m"', '"0.008k"'])
def test_every_spelling_of_8_gets_the_verdict_of_8(stack, gpus, tmp_path):
    expected = _check(stack, _spelled(stack, '"8"'), tmp_path, "as-written")
    assert _check(stack, _spelled(stack, gpus), tmp_path, "spelled") == expected
    if stack == "onprem":  # the example asks for 4 x 8 = 32 GPUs while 24 are active: the quota rule counted them
        assert expected[0] != 0 and "asks for 32 GPUs at once" in expected[1]
    else:
        assert expected[0] == 0


@pytest.mark.parametrize("stack", ["onprem", "prod"])
def test_1k_is_1000_gpus(stack, tmp_path):
    code, output = _check(stack, _spelled(stack, '"1k"'), tmp_path, "1k")
    assert (code, output) == _check(stack, _spelled(stack, "1000"), tmp_path, "1000")
    assert code != 0 and "asks for 1000 GPUs per pod" in output


@pytest.mark.parametrize("stack", ["onprem", "prod"])
@pytest.mark.parametrize("gpus", ['"0.5"', '"500m"', "0.5"])
def test_a_fraction_of_a_gpu_is_refused_with_one_message(stack, gpus, tmp_path):
    code, output = _check(stack, _spelled(stack, gpus), tmp_path, "fraction")
    assert code != 0
    assert output.count("is not a whole number of devices (Kubernetes counts extended resources in whole units)") == 2  # requests and limits
    assert "wrong type" not in output


MERGED = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: merged
  namespace: ml-research
  labels: &labels {team: ml-research, project: llm-pretrain, cost-center: cc-4200}
spec:
  template:
    metadata:
      labels:
        <<: *labels
        app.kubernetes.io/name: merged
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: example.com/train:1.0
          resources:
            requests: &gpu {cpu: "8", memory: 64Gi, nvidia.com/gpu: "8e0"}
            limits:
              <<: [*gpu]
              memory: 128Gi
"""


def test_merge_keys_read_as_safe_load_reads_them(tmp_path):
    import yaml

    merged = _check("onprem", MERGED, tmp_path, "merged")
    plain = _check("onprem", yaml.safe_dump(yaml.safe_load(MERGED), sort_keys=False), tmp_path, "plain")
    assert merged == plain
    assert "not valid YAML" not in merged[1]


def test_a_key_written_twice_is_still_refused(tmp_path):
    code, output = _check("onprem", MERGED.replace("      restartPolicy: Never\n", "      restartPolicy: Never\n      restartPolicy: OnFailure\n"), tmp_path, "twice")
    assert code != 0 and "not valid YAML" in output and "found duplicate key 'restartPolicy'" in output


# --------------------------------------------------------------------------- `hybridgpu cost showback`: usage exports
# A Kueue workload list's resourceUsage (kubernetes-sigs/kueue v0.19.2 workload_types.go: resource.Quantity) and the
# usage CSV's `gpus` column are read by the same grammar: "16e0" is 16; a fraction of a device is refused.

SHOWBACK = ROOT / "tests/fixtures/showback"
KUEUE_ARGS = ["--teams", str(SHOWBACK / "teams.yaml"), "--flavor", "onprem-h100-80gb=owned", "--flavor", "onprem-h100-80gb-mig=owned:H100-80GB",
              "--flavor", "eks-spot=spot", "--price", "owned=3.00,reserved=4.00,spot=2.40,on-demand=6.88"]


def _showback(path: Path, args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, ["cost", "showback", str(path), *args, "--json"], env={"COLUMNS": "240"})
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _respelled_workloads(tmp_path: Path, spell) -> Path:
    import json

    data = json.loads((SHOWBACK / "pass" / "kueue-workloads.json").read_text(encoding="utf-8"))
    for item in data["items"]:
        for psa in (item["status"].get("admission") or {}).get("podSetAssignments") or []:
            psa["resourceUsage"] = {k: spell(v) for k, v in psa["resourceUsage"].items()}
    path = tmp_path / "workloads.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("spell", [lambda v: f"{v}e0", lambda v: float(v), lambda v: f"{int(v) * 1000}m"], ids=["e0", "float", "milli"])
def test_showback_reads_every_spelling_of_a_device_count(spell, tmp_path):
    expected = _showback(SHOWBACK / "pass" / "kueue-workloads.json", KUEUE_ARGS)
    assert expected[0] == 0
    assert _showback(_respelled_workloads(tmp_path, spell), KUEUE_ARGS) == expected


def test_showback_refuses_a_fraction_of_a_device_with_the_same_message(tmp_path):
    code, output = _showback(_respelled_workloads(tmp_path, lambda v: "500m"), KUEUE_ARGS)
    assert code == 2 and "is not a whole number of devices (Kubernetes counts extended resources in whole units)" in " ".join(output.split())


def test_showback_csv_gpus_take_the_quantity_grammar(tmp_path):
    args = ["--teams", str(SHOWBACK / "teams.yaml"), "--onprem-gpus", "1", "--window-hours", "72", "--price", "owned=3.00,reserved=4.00,spot=2.40,on-demand=6.88"]
    text = (SHOWBACK / "pass" / "hand.csv").read_text(encoding="utf-8")
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("kind,"))
    gpus = lines[header].split(",").index("gpus")
    respelled = []
    for i, line in enumerate(lines):
        cells = line.split(",")
        if i > header and len(cells) > gpus and cells[gpus] and "." not in cells[gpus]:
            cells[gpus] = f"{cells[gpus]}e0"
        respelled.append(",".join(cells))
    path = tmp_path / "hand.csv"
    path.write_text("\n".join(respelled) + "\n", encoding="utf-8")
    assert respelled != lines
    assert _showback(path, args) == _showback(SHOWBACK / "pass" / "hand.csv", args)


# --------------------------------------------------------------------------- the burst plan's Kueue objects (hybridgpu.burst.schema)


@pytest.mark.parametrize("nominal", [8, 8.0, "8", "8e0", "8000m"])
def test_kueue_quotas_take_any_spelling_of_a_quantity(nominal):
    from hybridgpu.burst.schema import kueue_errors

    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "q"},
          "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
              {"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": nominal, "lendingLimit": "8e0"}]}]}]}}
    assert kueue_errors(cq) == []
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "1k"  # 1000 > 8: compared, suffix or not
    assert any("lendingLimit must be less than or equal to the nominalQuota" in e for e in kueue_errors(cq))
