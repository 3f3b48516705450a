"""The generated references stay in sync with the models, and every field is documented.

Like the README checks of terraform-aws-modules: a changed, added or undocumented input makes
CI fail until ``python -m hybridgpu.docs_gen > docs/config-reference.md`` (stack config) or
``python -m hybridgpu.docs_gen --inventory > docs/inventory-reference.md`` (inventory) is rerun
and committed.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import typing

from pydantic import BaseModel, Field

from hybridgpu.config.keys import KEY_TO_FIELD
from hybridgpu.config.models import NodePoolConfig, StackConfig
from hybridgpu.docs_gen import (
    DERIVED_FIELDS,
    INVENTORY_DOCUMENTS,
    HostListDocument,
    SiteDocument,
    config_reference_markdown,
    default_text,
    field_doc_problems,
    inventory_reference_markdown,
    iter_inventory_models,
    iter_models,
    main,
    rule_lines,
    type_text,
)
from hybridgpu.inventory import checks as inventory_checks
from hybridgpu.inventory import loader as inventory_loader
from hybridgpu.inventory.models import API_VERSION, HostAddresses, MigLayoutSpec, Network, SecretRef

REGENERATE = "python -m hybridgpu.docs_gen > docs/config-reference.md"
REGENERATE_INVENTORY = "python -m hybridgpu.docs_gen --inventory > docs/inventory-reference.md"


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
    top = ["aws:region", "hybridgpu:environment", "hybridgpu:tags", "hybridgpu:requiredTagKeys", "hybridgpu:cloud", "hybridgpu:onprem", "hybridgpu:nvidia", "hybridgpu:burst", "hybridgpu:teams", "hybridgpu:economics", "hybridgpu:platform"]
    rows = [text.index(f"| `{key}` |") for key in top]
    assert rows == sorted(rows)
    assert list(KEY_TO_FIELD) == top


def test_reference_rows_carry_full_key_paths_types_and_defaults():
    text = config_reference_markdown()
    assert "| `hybridgpu:cloud.nodePools[].weight` | integer (1..100) | none |" in text
    assert "| `hybridgpu:cloud.nodePools[].disruption.budgets[].nodes` |" in text
    # Issue 18: the EFA interface count is derived from the catalog (no fixed default); an optional int keeps its bounds.
    assert "| `hybridgpu:cloud.nodeClasses[].efa.interfaces` | integer (1..32) | none |" in text
    # Issue 14: the length bound (44, from the AWS name table) is a validator with its own message, not part of the pattern.
    assert "| `hybridgpu:cloud.cluster.name` | string (pattern `^[a-zA-Z][a-zA-Z0-9-]*$`) | **required** |" in text
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


def test_check_flag_without_file_checks_both_references(tmp_path, monkeypatch, capsys):
    import hybridgpu.docs_gen as docs_gen

    config = tmp_path / "config-reference.md"
    inventory = tmp_path / "inventory-reference.md"
    config.write_text(config_reference_markdown(), encoding="utf-8")
    inventory.write_text(inventory_reference_markdown(), encoding="utf-8")
    monkeypatch.setattr(docs_gen, "DEFAULT_PATH", config)
    monkeypatch.setattr(docs_gen, "INVENTORY_PATH", inventory)
    assert main(["--check"]) == 0
    inventory.write_text(inventory_reference_markdown().replace("hosts[].gpu.count", "hosts[].gpu.cnt"), encoding="utf-8")
    assert main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "inventory-reference.md is out of date" in err and REGENERATE_INVENTORY in err
    assert main(["--check", "--inventory", "--file", str(tmp_path / "missing.md")]) == 1
    config.unlink()
    assert main(["--check", "--inventory"]) == 1  # only the inventory file, still stale
    inventory.write_text(inventory_reference_markdown(), encoding="utf-8")
    assert main(["--check", "--inventory"]) == 0


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


# --------------------------------------------------------------------------- inventory reference


def test_committed_inventory_reference_matches_generated(root):
    committed = (root / "docs" / "inventory-reference.md").read_text(encoding="utf-8")
    assert committed == inventory_reference_markdown(), f"docs/inventory-reference.md is stale; run `{REGENERATE_INVENTORY}` and commit it"


def test_inventory_generation_is_deterministic():
    assert inventory_reference_markdown() == inventory_reference_markdown()


def _inventory_doc_problems() -> list[str]:
    return [problem for document in INVENTORY_DOCUMENTS for problem in field_doc_problems(document)]


def test_every_inventory_model_field_is_documented():
    assert _inventory_doc_problems() == []


def test_document_models_have_the_keys_the_loader_accepts():
    def aliases(model: type[BaseModel]) -> tuple[str, ...]:
        return tuple(info.alias or name for name, info in model.model_fields.items())

    assert aliases(SiteDocument) == inventory_loader._SITE_KEYS
    assert aliases(HostListDocument) == inventory_loader._HOSTLIST_KEYS
    for document, kind in ((SiteDocument, "Site"), (HostListDocument, "HostList")):
        fields = document.model_fields
        assert typing.get_args(fields["api_version"].annotation) == (API_VERSION,)
        assert typing.get_args(fields["kind"].annotation) == (kind,)


def test_inventory_sections_cover_both_documents_and_every_nested_model():
    models = iter_inventory_models()
    names = [model.__name__ for model, _ in models]
    assert names[0] == "SiteDocument" and names.index("Network") < names.index("HostListDocument") < names.index("Host")
    assert dict((m.__name__, p) for m, p in models)["MigLayoutSpec"] == ["hosts[].gpu.migLayouts[]"]
    text = inventory_reference_markdown()
    for model, prefixes in models:
        assert f"## {model.__name__}\n" in text
        for name, info in model.model_fields.items():
            key = info.alias or name
            path = f"{prefixes[0]}.{key}" if prefixes[0] else key
            count = text.count(f"| `{path}` |")
            # metadata.name is a key of both documents' metadata (SiteMetadata and HostListMetadata).
            assert count == (2 if path in ("apiVersion", "kind", "metadata", "metadata.name") else 1), (model.__name__, name, count)


def test_inventory_rows_carry_key_paths_types_and_defaults():
    text = inventory_reference_markdown()
    assert "| `hosts[].gpu.migLayouts[].layout` | map (at least 1 entry) of string to integer (>= 0) | **required** |" in text
    assert "| `hosts[].gpu.count` | integer (1..64) | **required** |" in text
    assert "| `hosts[].ssh.port` | integer (1..65535) | `22` |" in text
    assert "| `hosts[].state` | one of `active`, `cordoned`, `absent` | `active` |" in text
    assert "| `hosts[].addresses.management` | IP address (IPv4 or IPv6) | **required** |" in text
    assert "| `cluster.podSubnet` | network (CIDR, no host bits set) | **required** |" in text
    assert "| `networks` | list (at least 1 item) of object ([Network](#network)) | **required** |" in text
    assert "| `hosts[].hostname` | DNS-1123 subdomain (at most 253 characters) | **required** |" in text
    assert type_text(HostAddresses.model_fields["data"].annotation) == "IP address (IPv4 or IPv6)"
    assert type_text(Network.model_fields["cidr"].annotation) == "network (CIDR, no host bits set)"
    layout = MigLayoutSpec.model_fields["layout"]
    assert type_text(layout.annotation, list(layout.metadata)) == "map (at least 1 entry) of string to integer (>= 0)"
    assert default_text(SecretRef.model_fields["env"]) == "none"


def test_inventory_reference_lists_renamed_fields_and_inline_secret_keys():
    text = inventory_reference_markdown()
    section = text.split("## Renamed and removed fields", 1)[1].split("## Validation rules", 1)[0]
    for old, (new, note) in inventory_loader.RENAMED_FIELDS.items():
        assert f"| `{old}` | {f'`{new}`' if new else 'removed'} | {note} |" in section
    for key in inventory_loader.INLINE_SECRET_KEYS:
        assert f"`{key}`" in section


def test_inventory_reference_lists_every_rule_with_its_summary_and_codes():
    rules = rule_lines()
    assert [name for name, _, _ in rules] == [rule.__name__ for rule in inventory_checks.RULES]
    section = inventory_reference_markdown().split("## Validation rules", 1)[1]
    for rule, (name, summary, codes) in zip(inventory_checks.RULES, rules, strict=True):
        first_line = inspect.cleandoc(rule.__doc__).splitlines()[0].replace("``", "`")
        assert summary.startswith(first_line), name
        assert codes, f"{name}: its docstring's Returns section names no issue code"
        assert f"| `{name}` | {summary} | " in section
    by_name = {name: codes for name, _, codes in rules}
    assert by_name["check_control_plane_count"] == ["no-control-plane", "even-control-planes", "no-active-control-plane"]
    assert by_name["check_mig_layouts"][2] == "mig-unplaceable"
    # The codes found in the rules' docstrings are those of the checks module's own rule table.
    table_codes = set(re.findall(r"``([a-z0-9]+(?:-[a-z0-9]+)+)``", inventory_checks.__doc__))
    assert table_codes == {code for _, _, codes in rules for code in codes}


def test_module_entry_point_prints_the_inventory_reference(root):
    result = subprocess.run(
        [sys.executable, "-m", "hybridgpu.docs_gen", "--inventory"], cwd=root, capture_output=True, text=True, check=True, encoding="utf-8"
    )
    assert result.stdout == inventory_reference_markdown()


def test_inventory_generator_does_not_import_pulumi(root):
    code = "import sys, hybridgpu.docs_gen as d; d.inventory_reference_markdown(); print(any(m == 'pulumi' or m.startswith('pulumi.') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
