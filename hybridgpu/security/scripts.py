"""Every shell script the program hands to a host, for shellcheck (pure, no Pulumi).

Taken from the recorded ``command:remote:Command`` registrations of a preview (see
``hybridgpu.shell.preview.ResourceRecord``): the ``create``, ``update`` and ``delete``
command lines (run by the remote login shell) and the ``stdin`` of a command whose
``create`` ends in ``bash -s``/``sh -s`` (the script the shell reads). A ``stdin`` fed to
anything else (``cat > file``: kubeadm configuration) is data, not a script.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

#: Record types whose inputs carry shell commands (pulumi-command's remote and local Command).
COMMAND_TYPES = ("command:remote:Command", "command:local:Command")
_READS_SCRIPT = re.compile(r"\b(?:ba)?sh\s+-s\s*$")


@dataclass(frozen=True)
class Script:
    """One shell script.

    Attributes:
        origin: ``<stack>: <resource name>.<input>``.
        text: the script.
    """

    origin: str
    text: str


class Record(Protocol):
    """What is read of a registration (``hybridgpu.shell.preview.ResourceRecord`` has it)."""

    @property
    def type(self) -> str: ...  # noqa: D102 - the type token
    @property
    def name(self) -> str: ...  # noqa: D102 - the logical name
    @property
    def inputs(self) -> Mapping[str, Any]: ...  # noqa: D102 - the inputs as registered


def scripts_of_records(stack: str, records: Iterable[Record]) -> list[Script]:
    """The shell scripts in the inputs of the command resources among ``records``."""
    found: list[Script] = []
    for record in records:
        if record.type not in COMMAND_TYPES:
            continue
        inputs = record.inputs
        for key in ("create", "update", "delete"):
            if isinstance(inputs.get(key), str) and inputs[key].strip():
                found.append(Script(f"{stack}: {record.name}.{key}", inputs[key] + "\n"))
        create = inputs.get("create")
        if isinstance(inputs.get("stdin"), str) and isinstance(create, str) and _READS_SCRIPT.search(create.strip()):
            found.append(Script(f"{stack}: {record.name}.stdin", inputs["stdin"]))
    return found


def shellcheck(text: str, *, severity: str = "style") -> str:
    """shellcheck's findings for a bash script at ``severity`` and above (``style`` = every check); '' when clean.

    Raises:
        FileNotFoundError: shellcheck is not installed (``make setup`` installs it).
    """
    binary = shutil.which("shellcheck")
    if binary is None:
        raise FileNotFoundError("shellcheck not installed: run `make setup` (apt-get install shellcheck)")
    proc = subprocess.run(
        [binary, "--shell=bash", f"--severity={severity}", "--format=gcc", "-"], input=text, capture_output=True, text=True, check=False
    )
    return (proc.stdout + proc.stderr).strip()
