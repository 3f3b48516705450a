"""Helpers of the MLflow and Harbor fixture cases (tests/fixtures/platform/{mlflow,harbor}/cases.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.helpers.cases import EXAMPLE_INVENTORY, apply_set, set_path, validate_edited

#: A placeholder ciphertext for a Pulumi secret (offline validation only checks the key is set).
SECRET = {"secure": "v1:cGxhY2Vob2xkZXI="}


def site_edited_inventory(path: Path, site: dict[str, Any]) -> Path:
    """A copy of the example inventory at ``path`` whose Site document has ``site``'s keys replaced (None removes one)."""
    docs = list(yaml.safe_load_all(EXAMPLE_INVENTORY.read_text()))
    for doc in docs:
        if doc.get("kind") == "Site":
            for key, value in site.items():
                doc.pop(key, None)
                if value is not None:
                    doc[key] = value
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def validate_case(scratch_project: Any, tmp_path: Path, case: dict[str, Any], default_secrets: list[str]) -> Any:
    """``hybridgpu validate`` of the case's stack edited by its ``set``, ``secrets`` and ``inventory`` (CLI, in-process)."""
    inventory = site_edited_inventory(tmp_path / "inventory.yaml", case["inventory"]) if "inventory" in case else None

    def edit(config: dict[str, Any]) -> None:
        for key in case.get("secrets", default_secrets):
            set_path(config, key, SECRET)
        if inventory is not None:
            set_path(config, "hybridgpu:onprem.inventory", [str(inventory)])
        apply_set(config, case)

    return validate_edited(scratch_project, case["stack"], edit)


def leaf_paths(values: Any, free: set[str], prefix: str = "") -> dict[str, Any]:
    """Dotted paths of ``values``' leaves (lists and ``free`` maps are leaves) with their values."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and path not in free:
            out.update(leaf_paths(value, free, path + "."))
        else:
            out[path] = value
    return out


def model_case_keys(platform: dict[str, Any]) -> list[str]:
    """The key paths (relative to ``hybridgpu:platform``) of the issues the ``PlatformConfig`` model reports for ``platform``."""
    from pydantic import ValidationError

    from hybridgpu.config.platform import PlatformConfig
    from hybridgpu.errors import issues_from_validation

    try:
        PlatformConfig.model_validate(platform)
    except ValidationError as exc:
        return [str(i.key) for i in issues_from_validation(exc, file="stack", root=PlatformConfig, reference="docs/config-reference.md")]
    return []
