"""Stack files are parsed once per file version and process (``hybridgpu.stack.files``, issue 14 speed).

A preview reads the stacks its burst plan names (some twice), and ``hybridgpu preview``/``check``
of every stack reads each file once per stack that names it; the parse is kept per (path, mtime,
size). Behaviour that must hold: what callers get is theirs to change, an edited file is read
again, a broken file keeps failing with its error (nothing cached), and a whole stack validation
parses each file once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import hybridgpu.stack.files as files
from hybridgpu.errors import StackFileError
from hybridgpu.stack.files import clear_stack_file_cache, read_stack_file
from hybridgpu.stack.load import load_stack


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The stack files ``yaml.load`` parsed (by file name), from an empty cache."""
    clear_stack_file_cache()
    seen: list[str] = []
    real = Path.read_text

    def read_text(self: Path, *args, **kwargs):
        if self.name.startswith("Pulumi.") and self.name != "Pulumi.yaml":
            seen.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    yield seen
    clear_stack_file_cache()


def _write(project: Path, text: str) -> Path:
    path = project / "stacks" / "Pulumi.dev.yaml"
    path.write_text(text)
    return path


def test_callers_get_their_own_values(project, parses):
    path = _write(project, "config:\n  aws:region: us-west-2\n  hybridgpu:tags:\n    team: ml\n    owners: [a, b]\n")
    first = read_stack_file(path, root=project)
    first.values["hybridgpu:tags"]["team"] = "changed"
    first.values["hybridgpu:tags"]["owners"].append("c")
    second = read_stack_file(path, root=project)
    assert second.values["hybridgpu:tags"] == {"team": "ml", "owners": ["a", "b"]}
    assert parses == ["Pulumi.dev.yaml"]  # parsed once


def test_an_edited_file_is_read_again(project, parses):
    path = _write(project, "config:\n  aws:region: us-west-2\n")
    assert read_stack_file(path, root=project).values["aws:region"] == "us-west-2"
    path.write_text("config:\n  aws:region: eu-west-1\n")  # same size, new content
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert read_stack_file(path, root=project).values["aws:region"] == "eu-west-1"
    path.write_text("config:\n  aws:region: ap-southeast-2\n")  # other size
    assert read_stack_file(path, root=project).values["aws:region"] == "ap-southeast-2"
    assert parses == ["Pulumi.dev.yaml"] * 3


def test_secure_values_stay_placeholders_from_the_cache(project, parses):
    path = _write(project, "config:\n  onprem:sshKey:\n    secure: AAABAD==\n")
    for _ in range(2):
        values = read_stack_file(path, root=project)
        assert values.values["onprem:sshKey"] == files.SECRET_PLACEHOLDER
        assert values.secret_keys == frozenset({"onprem:sshKey"})
    assert parses == ["Pulumi.dev.yaml"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("config: [unclosed\n", "not readable as YAML"),
        ("config:\n  x: " + "[" * 70 + "]" * 70 + "\n", "levels deep"),
        ("- just\n- a list\n", "YAML mapping"),
    ],
)
def test_a_broken_file_fails_every_time_and_is_read_again_once_fixed(project, parses, text, message):
    path = _write(project, text)
    for _ in range(2):
        with pytest.raises(StackFileError, match=message):
            read_stack_file(path, root=project)
    path.write_text("config:\n  aws:region: us-west-2\n")
    assert read_stack_file(path, root=project).values["aws:region"] == "us-west-2"


def test_a_missing_file_says_so(project, parses):
    with pytest.raises(StackFileError, match="no such stack file"):
        read_stack_file(project / "stacks" / "Pulumi.nosuch.yaml", root=project)


def test_one_stack_validation_parses_each_stack_file_once(root, parses):
    """The prod stack's burst plan names other stacks; the manager-network and reachability checks
    read them again (hybrid twice before the cache). Each file is parsed once now."""
    stacks = {path.name for path in (root / "stacks").glob("Pulumi.*.yaml")}
    plan = (yaml.safe_load((root / "stacks" / "Pulumi.prod.yaml").read_text())["config"].get("hybridgpu:burst") or {}).get("plan")
    parses.clear()
    load_stack("prod", root)
    assert parses and set(parses) <= stacks
    assert sorted(parses) == sorted(set(parses)), parses
    if plan:
        assert len(parses) >= 2  # the stack itself and at least one stack its plan names
