"""Helpers shared by the tests, imported as ``tests.helpers...`` (the project root is on ``pythonpath``).

Test modules run under ``--import-mode=importlib`` and cannot import each other; what several of
them share lives here (data for parametrization, the fuzzing harness, scratch projects, the
fixture-driven CLI cases of ``cases.py``, the job example checks of ``job_examples.py``) or in a
``conftest.py`` fixture (``root``, ``previews``, ``scratch_project``, ``project``, ``assert_golden``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: The project root (holds Pulumi.yaml, stacks/, examples/).
ROOT = Path(__file__).resolve().parents[2]
#: Golden files: ``tests/golden/<what>/...``.
GOLDEN = ROOT / "tests" / "golden"
#: True under ``make test`` (``HYBRIDGPU_REQUIRE_TOOLS``) and in CI (``CI``): tests that need an
#: external tool ``make setup`` installs (shellcheck, promtool) then fail when it is missing
#: instead of being skipped, so a broken set-up cannot hide them.
TOOLS_REQUIRED = bool(os.environ.get("CI") or os.environ.get("HYBRIDGPU_REQUIRE_TOOLS"))


#: ``HYBRIDGPU_FUZZ=full`` (``make fuzz``): every property test draws its full number of examples;
#: otherwise (the suite, CI) a third of them, at least 30: the suite stays under its 4-minute budget
#: and every run still draws new random inputs (tests/helpers/fuzz_harness.py has the same switch).
FULL_PROPERTY_RUNS = os.environ.get("HYBRIDGPU_FUZZ", "") == "full"


def examples(full: int) -> int:
    """Hypothesis ``max_examples`` for a property test whose dedicated run (``make fuzz``) draws ``full``."""
    return full if FULL_PROPERTY_RUNS else max(30, full // 3)


def import_fresh(*modules: str) -> subprocess.CompletedProcess[str]:
    """Import ``modules`` in a fresh interpreter (in the project root); it prints the Pulumi modules
    (``pulumi``, ``pulumi_*``) they loaded and exits 1 when there are any."""
    code = (
        f"import sys; import {', '.join(modules)}; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'pulumi' or m.startswith('pulumi_')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def one_record(result, typ: str, name_part: str = ""):
    """The one resource of type ``typ`` (whose name contains ``name_part``) a preview registered."""
    found = [r for r in result.of_type(typ) if name_part in r.name]
    assert len(found) == 1, [r.name for r in found]
    return found[0]
