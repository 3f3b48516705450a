"""Scripts: every shell script the program hands to a host passes shellcheck (issue 8, item 3).

Severity enforced: ``style``, i.e. every shellcheck finding (error, warning, info, style) fails,
stricter than the issue's "no warnings". The scripts come from the recorded remote commands of
every stack (``create``/``update``/``delete`` lines and ``bash -s`` stdin scripts, join
credentials included), so a new command resource is covered without editing this file.
"""

from __future__ import annotations

import shutil

import pytest

from hybridgpu.security.scripts import scripts_of_records, shellcheck
from tests.helpers import TOOLS_REQUIRED

pytestmark = pytest.mark.skipif(
    shutil.which("shellcheck") is None and not TOOLS_REQUIRED, reason="shellcheck not installed (`make setup` installs it; `make test` fails without it)"
)


@pytest.fixture(scope="module")
def scripts(all_previews):
    found = []
    for stack, result in all_previews.items():
        found += scripts_of_records(stack, result.records)
    return found


def test_scripts_are_found(scripts, all_previews):
    commands = [r for result in all_previews.values() for r in result.records if r.type == "command:remote:Command"]
    # The onprem example stack registers its SSH commands: none at all is a regression, not a skip.
    assert commands, "no stack registers remote commands (the onprem stack must)"
    assert len(scripts) > len(commands), "every command has at least its create line, most a stdin script"
    assert any(s.origin.endswith("-join-credentials.stdin") for s in scripts)
    assert any(s.origin.endswith("-bootstrap.stdin") for s in scripts)


def test_every_script_is_shellcheck_clean(scripts):
    unique = {s.text: s.origin for s in scripts}
    problems = []
    for text, origin in unique.items():
        found = shellcheck(text)
        if found:
            problems.append(f"{origin}:\n{found}")
    assert not problems, "\n\n".join(problems)


def test_shellcheck_catches_a_bad_script():
    """Planted positive: an unquoted variable and a useless cat are reported."""
    found = shellcheck('#!/usr/bin/env bash\nrm -rf $DIR/cache\ncat file | grep x\n')
    assert "SC2086" in found and "SC2002" in found


def test_data_on_stdin_is_not_a_script():
    class Rec:
        type = "command:remote:Command"
        name = "h-kubeadm-config"
        inputs = {"create": "sudo sh -c 'umask 077; cat > /etc/kubernetes/hybridgpu/kubeadm.yaml'", "stdin": "apiVersion: kubeadm.k8s.io/v1beta4\n"}

    found = scripts_of_records("s", [Rec()])
    assert [s.origin for s in found] == ["s: h-kubeadm-config.create"]
