"""pyproject.toml's metadata builds without setuptools' deprecation warnings (issue 14).

``project.license`` as a table (``{ text = "Apache-2.0" }``) made every ``pip install -e .``
print setuptools' "`project.license` as a TOML table is deprecated" box (setuptools >= 77,
``setuptools/config/_apply_pyprojecttoml.py``; PEP 639). The license is an SPDX expression
string, which setuptools reads from 77.0 on, so the build requirement says ``setuptools>=77``.
The build here uses this venv's setuptools (the test extras pin ``>=77,<80``), offline.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

from packaging.requirements import Requirement
from packaging.version import Version

from tests.helpers import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_an_spdx_string_and_the_build_requirement_can_read_it():
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    (setuptools,) = [Requirement(r) for r in PYPROJECT["build-system"]["requires"] if Requirement(r).name == "setuptools"]
    assert setuptools.specifier.contains("77.0") and not setuptools.specifier.contains("76.9"), setuptools
    (test_setuptools,) = [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"]["test"] if Requirement(r).name == "setuptools"]
    assert not test_setuptools.specifier.contains("76.9"), "the offline wheel build (--no-build-isolation) needs setuptools>=77 too"


def test_the_build_prints_no_deprecation_and_writes_the_license_expression(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "hybridgpu", src / "hybridgpu", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-v", "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    assert "project.license" not in output, re.findall(r".*project\.license.*", output)[:3]
    assert not re.search(r"(SetuptoolsDeprecationWarning|BuildBackendWarning)", output), re.findall(r".*Warning.*", output)[:5]
    (wheel,) = (tmp_path / "dist").glob("hybridgpu-*.whl")
    metadata = zipfile.ZipFile(wheel).read(f"hybridgpu-{Version(PYPROJECT['project']['version'])}.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
