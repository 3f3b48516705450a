"""The package declares what it imports (issue 24): a plain ``pip install`` runs every command.

``hybridgpu job check`` needed kubernetes-validate, which only the test extra installed (a plain
install gave a traceback), and ``hybridgpu.schemas`` imported jsonschema without declaring it.
Here every third-party module the package's ``import`` statements name (read from the sources)
must come from a distribution that ``[project.dependencies]`` names directly, except the few
listed below with the reason. The distribution of a module is the installed one
(``importlib.metadata.packages_distributions``).
"""

from __future__ import annotations

import importlib.metadata as md
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers import ROOT
from tests.helpers.fresh_imports import external_imports

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE = ROOT / "hybridgpu"
#: Only the PNG plots import matplotlib; it is the ``plots`` extra (``--plot`` says so without it).
PLOT_MODULES = {"hybridgpu/economics/plots.py", "hybridgpu/economics/showback_plot.py"}
#: Imported but not declared, and why.
NOT_DECLARED = {
    "grpc": "the policy analyzer talks to the pack over Pulumi's gRPC: grpcio comes with pulumi, which pins it",
    "google": "protobuf structs of the same gRPC protocol: protobuf comes with pulumi, which pins it",
    "pydantic_core": "PydanticUndefined, part of pydantic's own API surface; pydantic pins pydantic-core exactly",
    "parliament": "the IAM lint (hybridgpu.security.iam_lint) of the test suite; the test extra installs it",
}


def _declared(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def _third_party(files) -> set[str]:
    tops = {name.split(".")[0] for name in external_imports(PACKAGE, files)}
    return {t for t in tops if t not in sys.stdlib_module_names}


def test_every_imported_distribution_is_a_runtime_dependency():
    runtime = _declared(PYPROJECT["project"]["dependencies"])
    providers = md.packages_distributions()
    files = [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(ROOT).as_posix() not in PLOT_MODULES]
    missing = {}
    for module in sorted(_third_party(files) - set(NOT_DECLARED)):
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        assert dists, f"{module} is imported by hybridgpu but not installed here: run `make setup`"
        if not dists & runtime:
            missing[module] = sorted(dists)
    assert missing == {}, f"pyproject.toml [project.dependencies]: declare the distributions of these imports: {missing}"


def test_matplotlib_is_the_plots_extra_and_only_the_plots_import_it():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "matplotlib" in _declared(extras["plots"]) and "matplotlib" not in _declared(PYPROJECT["project"]["dependencies"])
    importers = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py") if "matplotlib" in _third_party([p])}
    assert importers == PLOT_MODULES


def test_job_check_needs_nothing_from_an_extra():
    runtime = _declared(PYPROJECT["project"]["dependencies"])
    assert {"kubernetes-validate", "jsonschema"} <= runtime
    # The tests pin the version inside the runtime range.
    pinned = next(Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"]["test"] if Requirement(r).name == "kubernetes-validate")
    ranged = next(Requirement(r) for r in PYPROJECT["project"]["dependencies"] if Requirement(r).name == "kubernetes-validate")
    (version,) = [s.version for s in pinned.specifier]
    assert ranged.specifier.contains(version)
