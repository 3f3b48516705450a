"""Every example in docs/onprem.md runs, and its output is the code's (issue 17, section 7).

* ```` ```console ```` blocks: each ``$ <command>`` line is run (``hybridgpu`` through typer's
  CliRunner, in the project root, with the ``VAR=value`` prefixes as environment) and its output
  must equal the lines that follow it, byte for byte (the project root's absolute path is written
  as a relative one). ``HYBRIDGPU_UPDATE_DOCS=1`` rewrites those outputs from the code instead;
  review the diff.
* ```` ```sh ```` blocks: every ``hybridgpu`` command runs and exits 0; every
  ``.venv/bin/python -c "..."`` snippet runs and prints a script; every other command is one
  that needs a real cluster or the Pulumi CLI (``pulumi``, ``kubectl``, ``ssh`` ...), listed in
  :data:`NEEDS_A_CLUSTER`, so that no new kind of example slips in untested.
* ```` ```yaml ```` blocks: the stack snippet's ``hybridgpu:onprem`` parses with the config model and
  every inventory it names (including the alternative in its comment) validates.
* Every repository path the page names in backquotes exists.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.config.models import OnPremConfig
from hybridgpu.inventory import load_inventory
from tests.helpers import ROOT

DOC = ROOT / "docs" / "onprem.md"
UPDATE = os.environ.get("HYBRIDGPU_UPDATE_DOCS") == "1"
#: Commands of the page that need hosts, a cluster or the Pulumi CLI (none of which exist in CI).
NEEDS_A_CLUSTER = frozenset({"pulumi", "kubectl", "export", "bash", "ssh", "chmod"})
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
_HYBRIDGPU = (".venv/bin/hybridgpu", "hybridgpu")


def _blocks(kind: str) -> list[tuple[int, str]]:
    text = DOC.read_text(encoding="utf-8")
    return [(text[: m.start()].count("\n") + 1, m.group(2)) for m in _BLOCK.finditer(text) if m.group(1) == kind]


def _split_env(line: str) -> tuple[dict[str, str], list[str]]:
    words = shlex.split(line, comments=True)
    env = {}
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def _run_hybridgpu(args: list[str], env: dict[str, str], monkeypatch) -> tuple[int, str]:
    monkeypatch.chdir(ROOT)
    result = CliRunner(env={"COLUMNS": "150", **env}).invoke(app, args)
    return result.exit_code, result.output.replace(f"{ROOT}/", "")


def _console_examples() -> list[tuple[int, str, str]]:
    out = []
    for line_no, body in _blocks("console"):
        lines = body.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        assert starts and starts[0] == 0, f"docs/onprem.md:{line_no}: a console block starts with `$ <command>`"
        for k, i in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(lines)
            out.append((line_no + 1 + i, lines[i][2:], "\n".join(lines[i + 1 : end])))
    return out


CONSOLE = _console_examples()


def test_the_page_has_runnable_examples():
    assert len(CONSOLE) >= 8
    commands = [command for _, command, _ in CONSOLE]
    for needed in ("inventory validate", "inventory render", "inventory export --format kubespray", "validate onprem", "preview onprem"):
        assert any(needed in c for c in commands), needed


@pytest.mark.parametrize(("line", "command", "expected"), CONSOLE, ids=[f"line{line}" for line, _, _ in CONSOLE])
def test_console_example(line, command, expected, monkeypatch):
    env, words = _split_env(command)
    assert words[0] in _HYBRIDGPU, f"docs/onprem.md:{line}: only hybridgpu commands go in console blocks"
    code, output = _run_hybridgpu(words[1:], env, monkeypatch)
    output = output.rstrip("\n")
    if UPDATE and output != expected:
        text = DOC.read_text(encoding="utf-8")
        old = f"$ {command}\n{expected}\n" if expected else f"$ {command}\n"
        assert text.count(old) == 1, f"docs/onprem.md:{line}: cannot find the example to update"
        DOC.write_text(text.replace(old, f"$ {command}\n{output}\n"), encoding="utf-8")
        return
    assert output == expected, f"docs/onprem.md:{line}: `{command}` prints something else (HYBRIDGPU_UPDATE_DOCS=1 rewrites it):\n{output}"
    assert code in (0, 2) and ("error:" in output) == (code == 2)


def _sh_commands() -> list[tuple[int, str]]:
    out = []
    for line_no, body in _blocks("sh"):
        joined = body.replace("\\\n", " ")
        for i, line in enumerate(joined.splitlines()):
            if line.strip() and not line.lstrip().startswith("#"):
                out.append((line_no + 1 + i, line))
    return out


SH = _sh_commands()


@pytest.mark.parametrize(("line", "command"), SH, ids=[f"line{line}" for line, _ in SH])
def test_sh_example(line, command, monkeypatch):
    env, words = _split_env(command)
    words = words[: next((i for i, w in enumerate(words) if w in ("|", ">", "&&", ";")), len(words))]
    if words[0] in _HYBRIDGPU:
        code, output = _run_hybridgpu(words[1:], env, monkeypatch)
        assert code == 0, f"docs/onprem.md:{line}: `{command}` failed:\n{output}"
    elif words[:2] == [".venv/bin/python", "-c"]:
        done = subprocess.run([sys.executable, "-c", words[2]], cwd=ROOT, capture_output=True, text=True, check=False, timeout=60)
        assert done.returncode == 0 and done.stdout.startswith("#!"), f"docs/onprem.md:{line}: {done.stderr}"
    else:
        assert words[0] in NEEDS_A_CLUSTER, f"docs/onprem.md:{line}: `{words[0]}` is neither run here nor listed in NEEDS_A_CLUSTER"


def test_yaml_examples_validate():
    blocks = [yaml.safe_load(body) for _, body in _blocks("yaml")]
    stacks = [b for b in blocks if isinstance(b, dict) and "hybridgpu:onprem" in (b.get("config") or {})]
    assert stacks
    for block in stacks:
        onprem = OnPremConfig.model_validate(block["config"]["hybridgpu:onprem"])
        for path in onprem.inventory:
            load_inventory(ROOT / path)
    alternatives = re.findall(r"# or a directory: (\S+)", DOC.read_text(encoding="utf-8"))
    assert alternatives
    for path in alternatives:
        load_inventory(ROOT / path)


def test_named_paths_exist():
    text = DOC.read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:stacks|examples|hybridgpu|docs|benchmarks|tests)/[^`\s]+?)`", text))
    assert paths
    missing = sorted(p for p in paths if not (ROOT / p.split("#")[0]).exists())
    assert missing == []
