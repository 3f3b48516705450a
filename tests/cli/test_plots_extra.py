"""``--plot`` without matplotlib (issue 24): matplotlib is the ``plots`` extra, not a runtime
dependency, so a plain install must say which extra to install, in one line, never a traceback.

Each command runs in a fresh interpreter where ``import matplotlib`` fails as it does when the
package is absent (``sys.modules["matplotlib"] = None`` makes the import raise ``ImportError``
naming ``matplotlib``; Python docs, "The module cache", importlib reference).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hybridgpu.cli.cost import PLOTS_MISSING
from tests.helpers import ROOT

SHOWBACK = ROOT / "tests" / "fixtures" / "showback" / "pass" / "hand.csv"
#: Block matplotlib, then run the CLI as ``python -m hybridgpu`` does.
_CHILD = "import runpy, sys; sys.modules['matplotlib'] = None; sys.argv[0] = 'hybridgpu'; runpy.run_module('hybridgpu', run_name='__main__')"


def _without_matplotlib(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", _CHILD, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(
    "args",
    [
        ("cost", "report", "prod", "--plot"),
        ("cost", "showback", str(SHOWBACK), "--price", "owned=3.00,spot=2.40,on-demand=6.88", "--plot"),
    ],
    ids=["report", "showback"],
)
def test_plot_without_matplotlib_names_the_extra(args, tmp_path):
    proc = _without_matplotlib(*args, str(tmp_path / "plots"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "pip install 'hybridgpu[plots]'" in proc.stderr
    assert not (tmp_path / "plots").exists()


def test_without_plot_matplotlib_is_not_needed():
    proc = _without_matplotlib("cost", "report", "prod", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "matplotlib" not in proc.stdout + proc.stderr


def test_the_message_names_the_extra_declared_in_pyproject():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(r.startswith("matplotlib") for r in extras["plots"])
    assert "hybridgpu[plots]" in PLOTS_MISSING and "hybridgpu[plots]" in extras["test"]
