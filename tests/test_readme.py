"""The README's first-deploy steps match what the Pulumi CLI does (issue 14).

* ``pulumi stack select dev`` on a fresh backend fails ("no stack named 'dev' found",
  pulumi/pulumi ``pkg/cmd/pulumi/stack/stack_select.go`` and ``pkg/backend/backenderr/backenderr.go``,
  commit 1b59498): the README must create the stack first (``stack init``, as docs/runbook.md
  does, or ``stack select --create``).
* The supported Python range the README states is pyproject's ``requires-python``, and it says
  what ``pulumi install`` does with another ``python3`` (``sdk/python/toolchain/pip.go``).
"""

from __future__ import annotations

import re
import tomllib

from packaging.specifiers import SpecifierSet

from tests.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
RUNBOOK = (ROOT / "docs" / "runbook.md").read_text(encoding="utf-8")


def commands(text: str) -> list[str]:
    """Every shell command in the fenced ``sh`` blocks and inline code spans, split on ``&&``."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        found += [line.split("#")[0].strip() for line in block.splitlines()]
    for span in re.findall(r"`([^`\n]+)`", text):
        found.append(span.strip())
    return [part.strip() for cmd in found for part in cmd.split("&&") if part.strip()]


def test_no_stack_is_selected_before_it_is_created():
    for doc, text in (("README.md", README), ("docs/runbook.md", RUNBOOK)):
        cmds = commands(text)
        selects = [i for i, c in enumerate(cmds) if re.match(r"pulumi stack select (?!--create)(?!-c )\S+$", c)]
        creates = [i for i, c in enumerate(cmds) if c.startswith("pulumi stack init") or re.match(r"pulumi stack select (--create|-c) ", c)]
        assert creates, f"{doc} never creates a stack"
        assert all(min(creates) < i for i in selects), f"{doc}: `pulumi stack select` comes before the stack is created"


def test_readme_states_the_supported_python_range_of_pyproject():
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert f'requires-python = "{requires}"' in README
    spec = SpecifierSet(requires)
    stated = re.search(r"supports Python (3\.\d+) to (3\.\d+)", README)
    assert stated, "README must state the supported Python range"
    low, high = stated.groups()
    assert low in spec and high in spec
    below = f"3.{int(low.split('.')[1]) - 1}"
    above = f"3.{int(high.split('.')[1]) + 1}"
    assert below not in spec and above not in spec, "the stated range must be the whole range"
    assert below in README and above in README, "README must say what happens with a python3 outside the range"


def test_readme_says_what_pulumi_install_does_with_another_python3():
    assert "python3 -m venv .venv" in README and "PULUMI_PYTHON_CMD" in README
    assert "requires a different Python" in README
