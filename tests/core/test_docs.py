"""The generated configuration reference stays in sync with the models, and every field is documented.

Like the README checks of terraform-aws-modules: a changed, added or undocumented input makes
CI fail until ``python -m hybridgpu.docs_gen > docs/config-reference.md`` is rerun and committed.
"""

from __future__ import annotations

import subprocess
import sys

from pydantic import BaseModel, Field

from hybridgpu.config.loader import KEY_TO_FIELD
from hybridgpu.config.models import NodePoolConfig, StackConfig
from hybridgpu.docs_gen import (
    DERIVED_FIELDS,
    config_reference_markdown,
    default_text,
    field_doc_problems,
    iter_models,
    main,
    type_text,
)

REGENERATE = "python -m hybridgpu.docs_gen > docs/config-reference.md"


def test_committed_reference_matches_generated(root):
    committed = (root / "docs" / "config-reference.md").read_text(encoding="utf-8")
    assert committed == config_reference_markdown(), f"docs/config-reference.md is stale; run `{REGENERATE}` and commit it"


def test_generation_is_deterministic():
    assert config_reference_markdown() == config_reference_markdown()


def test_every_model_field_is_documented():
    assert field_doc_problems(StackConfig) == []


class _Inner(BaseModel):
    size: int = Field(default=3, description="How many.")  # default not stated
    label: str = Field(description="A label.")  # required, but does not say so


class _Outer(BaseModel):
    good: int = Field(default=1, description="Fine. Default: 1.")
    bare: int = 2  # no description at all
    inner: _Inner = Field(description="Nested model. Required.")


def test_checker_flags_undocumented_fields_of_a_synthetic_model():
    problems = field_doc_problems(_Outer)
    assert problems == [
        "_Outer.bare: no description",
        "_Inner.size: description must state the default ('Default: ...') or say 'Required'",
        "_Inner.label: has no default, so its description must say 'Required'",
    ]


def test_checker_accepts_a_fully_documented_model():
    class Documented(BaseModel):
        count: int = Field(default=0, description="Count. Default: 0.")
        name: str = Field(description="Name. Required.")

    assert field_doc_problems(Documented) == []


def test_sections_start_at_stackconfig_and_follow_the_config_keys():
    models = iter_models(StackConfig)
    assert models[0] == (StackConfig, [""])
    names = [model.__name__ for model, _ in models]
    assert names.index("CloudConfig") < names.index("ClusterConfig") < names.index("NodePoolConfig") < names.index("Budget")
    assert dict((m.__name__, p) for m, p in models)["NodePoolConfig"] == ["hybridgpu:cloud.nodePools[]"]

    text = config_reference_markdown()
    top = ["aws:region", "hybridgpu:environment", "hybridgpu:tags", "hybridgpu:requiredTagKeys", "hybridgpu:cloud", "hybridgpu:onprem", "hybridgpu:nvidia"]
    rows = [text.index(f"| `{key}` |") for key in top]
    assert rows == sorted(rows)
    assert list(KEY_TO_FIELD) == top


def test_reference_rows_carry_full_key_paths_types_and_defaults():
    text = config_reference_markdown()
    assert "| `hybridgpu:cloud.nodePools[].weight` | integer (1..100) | none |" in text
    assert "| `hybridgpu:cloud.nodePools[].disruption.budgets[].nodes` |" in text
    assert "| `hybridgpu:cloud.nodeClasses[].efa.interfaces` | integer (1..32) | `1` |" in text
    assert "| `hybridgpu:cloud.cluster.name` | string (pattern `^[a-zA-Z][a-zA-Z0-9-]{0,99}$`) | **required** |" in text
    # Every non-derived field of every model has exactly one row.
    for model, prefixes in iter_models(StackConfig):
        if model is StackConfig:
            continue
        for name, info in model.model_fields.items():
            assert text.count(f"| `{prefixes[0]}.{info.alias or name}` |") == 1, (model.__name__, name)


def test_derived_fields_are_not_config_keys():
    assert DERIVED_FIELDS == {"stack"}
    assert not DERIVED_FIELDS & set(KEY_TO_FIELD.values())
    assert "`hybridgpu:stack`" not in config_reference_markdown()


def test_type_and_default_rendering():
    fields = NodePoolConfig.model_fields
    assert type_text(fields["expire_after"].annotation) == "duration (e.g. `30m`, `1h30m`) or `Never`"
    assert type_text(fields["capacity_types"].annotation, list(fields["capacity_types"].metadata)) == (
        "list (at least 1 item) of one of `spot`, `on-demand`, `reserved`"
    )
    assert default_text(fields["taints"]) == '`[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]`'
    assert default_text(fields["disruption"]) == "`{}` (every key at its default)"
    assert default_text(fields["name"]) == "**required**"


def test_check_flag(tmp_path, capsys):
    target = tmp_path / "config-reference.md"
    target.write_text(config_reference_markdown(), encoding="utf-8")
    assert main(["--check", "--file", str(target)]) == 0
    target.write_text(config_reference_markdown() + "| `hybridgpu:undocumented` |\n", encoding="utf-8")
    assert main(["--check", "--file", str(target)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["--check", "--file", str(tmp_path / "missing.md")]) == 1


def test_module_entry_point_prints_the_reference(root):
    result = subprocess.run(
        [sys.executable, "-m", "hybridgpu.docs_gen"], cwd=root, capture_output=True, text=True, check=True, encoding="utf-8"
    )
    assert result.stdout == config_reference_markdown()


def test_generator_does_not_import_pulumi(root):
    code = "import sys, hybridgpu.docs_gen as d; d.config_reference_markdown(); print(any(m == 'pulumi' or m.startswith('pulumi.') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
