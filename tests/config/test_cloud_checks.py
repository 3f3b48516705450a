"""AWS names and EKS access entries, end to end through ``hybridgpu validate`` (hybridgpu.config.cloud_checks).

The cases are tests/config/fixtures/aws-names-cases.yaml: realistic edits of the example stacks
(the longest allowed cluster name, one over it, EKS's own maximum of 100, characters EKS allows
but the toolkit does not, an admin listed twice or in another case, the Karpenter node role as an
admin, an own Karpenter namespace, ...), each with the verdict ``hybridgpu validate`` must give
and, for a refusal, the key and a fragment of the message it must print. The check functions are
also called directly, because the schema bounds the cluster name first and the name check is
the guard that keeps the table and the bound in step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli.main import app
from hybridgpu.config.aws_names import CLUSTER_NAME_MAX_LENGTH
from hybridgpu.config.models import CloudConfig
from hybridgpu.config.cloud_checks import access_entry_issues, aws_name_issues
from tests.helpers.scratch import example_plan, example_stack

CASES = yaml.safe_load((Path(__file__).parent / "fixtures" / "aws-names-cases.yaml").read_text())
runner = CliRunner()


def _set(config: dict[str, Any], path: str, value: Any) -> None:
    """Set ``config[<config key>][k1][k2]... = value`` for ``path`` = ``<config key>.k1.k2``."""
    ns, _, rest = path.partition(".")
    keys = [ns, *rest.split(".")] if rest else [ns]
    node = config
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def _validate(scratch_project, case: dict[str, Any]):
    edits = {case["base"]: lambda config: [_set(config, p, v) for p, v in (case.get("set") or {}).items()]}
    project = scratch_project(stacks=[case["base"]], stack_edits=edits, plan=example_plan())
    return runner.invoke(app, ["validate", case["base"], "--root", str(project)])


def test_the_fixtures_are_at_least_ten_each():
    assert len(CASES["pass"]) >= 10 and len(CASES["fail"]) >= 10


@pytest.mark.parametrize("case", CASES["pass"], ids=[c["id"] for c in CASES["pass"]])
def test_validate_accepts(scratch_project, case):
    result = _validate(scratch_project, case)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("case", CASES["fail"], ids=[c["id"] for c in CASES["fail"]])
def test_validate_refuses(scratch_project, case):
    result = _validate(scratch_project, case)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if f"stacks/Pulumi.{case['base']}.yaml: {case['key']}: " in line]
    assert lines, result.output
    assert any(case["message"] in line for line in lines), result.output
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------------ the check functions


def _cloud(**cluster: Any) -> CloudConfig:
    doc = example_stack("dev")["config"]["hybridgpu:cloud"]
    doc["cluster"].update(cluster)
    return CloudConfig.model_validate(doc)


def test_example_clouds_have_no_name_or_access_issues():
    for stack in ("dev", "hybrid", "prod"):
        cloud = CloudConfig.model_validate(example_stack(stack)["config"]["hybridgpu:cloud"])
        assert aws_name_issues(cloud, "f") == [] and access_entry_issues(cloud, "f") == []


def test_name_check_refuses_what_the_schema_bound_lets_through():
    # model_construct skips the schema: the case the bound would miss if the table gained a longer name.
    cloud = _cloud()
    long_cluster = cloud.cluster.model_construct(**{**dict(cloud.cluster), "name": "x" * (CLUSTER_NAME_MAX_LENGTH + 1)})
    issues = aws_name_issues(cloud.model_construct(**{**dict(cloud), "cluster": long_cluster}), "stacks/Pulumi.dev.yaml")
    assert {i.key for i in issues} == {"hybridgpu:cloud.cluster.name"}
    assert {i.code for i in issues} == {"aws-name-length"}
    assert any("Karpenter controller role" in i.message and "over the limit of 64" in i.message for i in issues)
    assert all(i.fix == f"shorten `hybridgpu:cloud.cluster.name` to at most {CLUSTER_NAME_MAX_LENGTH} characters" for i in issues)
