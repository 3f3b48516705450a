"""The layering of docs/architecture.md holds (issue 13).

* ``lint-imports`` (import-linter; the contracts are ``[tool.importlinter]`` in pyproject.toml)
  passes, so a plain pytest run fails on a broken contract as ``make test`` does;
* the contract that keeps Pulumi out of the core names every package below ``hybridgpu.components``
  in the layers contract (a new core package cannot slip past it);
* every module under ``hybridgpu/`` imports on its own in a fresh process (one forked child per
  module, from a server that preloaded the third-party libraries the package imports:
  ``tests/helpers/fresh_imports.py``), and importing a core module loads no Pulumi module;
* the policy validators run without Pulumi (taggability comes from the pack, in the shell).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.fresh_imports import import_each_alone

PACKAGE = ROOT / "hybridgpu"
#: Run in each fresh interpreter: import one module, print the Pulumi modules then loaded
#: (``pulumi`` and every ``pulumi_*`` SDK) as JSON.
_CHILD = (
    "import importlib, json, sys; importlib.import_module(sys.argv[1]); "
    "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'pulumi' or m.startswith('pulumi_'))))"
)


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def _contract(contract_id: str) -> dict:
    return next(c for c in _contracts() if c["id"] == contract_id)


def _below_shell() -> set[str]:
    """The packages in the layers below ``components`` (the lowest layer that imports Pulumi) in the layers contract (``hybridgpu.<name>``)."""
    layers = [[name.strip().strip("()") for name in re.split(r"[|:]", layer)] for layer in _contract("layers")["layers"]]
    lowest_pulumi = next(i for i, layer in enumerate(layers) if "components" in layer)
    return {f"hybridgpu.{name}" for layer in layers[lowest_pulumi + 1 :] for name in layer}


def all_modules() -> list[str]:
    """Every module of the package, from the files under hybridgpu/ (nothing is imported)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def is_core(module: str) -> bool:
    """True for ``hybridgpu`` itself and every module of a package below the shell."""
    top = ".".join(module.split(".")[:2])
    return module == "hybridgpu" or top in _below_shell()


MODULES = all_modules()


def test_import_contracts_hold():
    """``lint-imports`` keeps every contract (layers, no Pulumi in the core, config schema-only, no cycles)."""
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.is_file():
        pytest.fail("lint-imports is not installed: run `make setup` (import-linter is in the test extras)")
    proc = subprocess.run(
        [str(lint), "--no-cache", "--no-logo", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, f"an import contract is broken (see docs/architecture.md):\n{proc.stdout}{proc.stderr}"
    assert re.search(r"Contracts: [1-9][0-9]* kept, 0 broken", proc.stdout), proc.stdout


def test_pulumi_free_contract_names_every_core_package():
    """Every package below the shell in the layers contract is a source of ``core-without-pulumi``."""
    sources = set(_contract("core-without-pulumi")["source_modules"])
    assert sources == _below_shell(), (
        "pyproject.toml: the core-without-pulumi contract must list exactly the packages below hybridgpu.components "
        f"in the layers contract; missing {sorted(_below_shell() - sources)}, extra {sorted(sources - _below_shell())}"
    )


def test_every_module_is_in_a_layer():
    """The module list covers the layers contract's packages, and each top-level package is in it."""
    tops = {".".join(m.split(".")[:2]) for m in MODULES if m != "hybridgpu"}
    layered = {f"hybridgpu.{n.strip().strip('()')}" for layer in _contract("layers")["layers"] for n in re.split(r"[|:]", layer)}
    ignored = {f"hybridgpu.{n}" for n in _contract("layers").get("exhaustive_ignores", [])}
    assert tops - ignored == layered & tops, f"not in a layer: {sorted(tops - ignored - layered)}"


def _import_alone(module: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, module], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr


def _source(module: str) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


@pytest.fixture(scope="module")
def fresh_imports() -> dict[str, tuple[bool, list[str], str]]:
    """``module -> (imported, Pulumi modules loaded, error)`` of importing it first in a fresh process."""
    return import_each_alone(PACKAGE, {m: _source(m) for m in MODULES}, is_core)


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(fresh_imports, module):
    """The module imports first thing in a fresh process (no import-order dependence, no cycle);
    a core module loads no Pulumi module."""
    ok, loaded, err = fresh_imports[module]
    assert ok, f"importing {module} first in a fresh process failed:\n{err[-3000:]}"
    if is_core(module):
        assert loaded == [], f"{module} is below hybridgpu.components but importing it loads Pulumi: {loaded[:5]}"


def test_every_anchor_group_was_checked_with_its_anchor(fresh_imports):
    """The group servers (tests/helpers/fresh_imports.py ``anchor_groups``) preloaded each anchor, and the
    anchor loaded only what its module-level imports say (else the group would be checked without it: right,
    but slow, and a sign the static closure missed an import)."""
    from tests.helpers.fresh_imports import FALLBACKS

    assert FALLBACKS == {}


def test_a_failing_import_is_reported(tmp_path):
    """The forked import reports what a fresh interpreter would: an error, and Pulumi loaded by a core module."""
    pkg = tmp_path / "fresh_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "needs_order.py").write_text("import fresh_probe\nfresh_probe.helper.VALUE\n")
    (pkg / "helper.py").write_text("VALUE = 1\n")
    (pkg / "loads_pulumi.py").write_text("import pulumi\n")
    files = {f"fresh_probe.{p.stem}": p for p in pkg.glob("*.py") if p.stem != "__init__"}
    results = import_each_alone(pkg, files, lambda m: m != "fresh_probe.helper", path=tmp_path)
    assert results["fresh_probe.helper"][0] and not results["fresh_probe.needs_order"][0]
    assert "has no attribute 'helper'" in results["fresh_probe.needs_order"][2]
    assert results["fresh_probe.loads_pulumi"][0] and "pulumi" in results["fresh_probe.loads_pulumi"][1]


def test_core_and_shell_are_both_checked():
    """The split is real: some modules are core, and a shell module does load Pulumi (the check can fail)."""
    assert "hybridgpu.config.models" in MODULES and is_core("hybridgpu.config.models")
    assert not is_core("hybridgpu.shell.preview") and not is_core("hybridgpu.cli.main")
    code, out, _ = _import_alone("hybridgpu.components.program")
    assert code == 0 and "pulumi" in json.loads(out.strip().splitlines()[-1])


def test_policy_validators_run_without_pulumi():
    """``required-cost-tags`` on an AWS resource loads no Pulumi SDK: the pack (shell) supplies ``taggable``."""
    code = (
        "import sys\n"
        "from hybridgpu.policy.base import PolicyResource\n"
        "from hybridgpu.policy.registry import BY_NAME\n"
        "spec = BY_NAME['required-cost-tags']\n"
        "vpc = PolicyResource('aws:ec2/vpc:Vpc', 'v', 'urn:pulumi:dev::hybridgpu::aws:ec2/vpc:Vpc::v', {'cidrBlock': '10.0.0.0/16'}, None, True)\n"
        "assert spec.run_resource(vpc, spec.parse_settings({})), 'an untagged taggable Vpc must be reported'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pulumi' or m.startswith('pulumi_')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
