"""Move a host through its lifecycle (``active`` -> ``cordoned`` -> ``absent`` and back) by rewriting its inventory file.

:func:`set_host_state` is what ``hybridgpu inventory cordon|retire|restore HOST`` runs, so that a
failed host changes state without anyone editing YAML by hand in a hurry. The edit is textual:
PyYAML's composer gives the position of the host's ``state`` value (or of its ``hostname``, after
which a ``state`` key is inserted), only those bytes change, and every comment, key order, quote
and flow mapping of the file stays as written. The edited inventory is validated as a whole
(every rule of :func:`hybridgpu.inventory.load_inventory`: e.g. retiring the last active control
plane is refused) before the file is replaced atomically (a temporary file in the same directory,
``fsync``, ``os.replace``, the original file mode kept). Nothing is written when the host is
already in the wanted state or the result is invalid.

Nothing here imports Pulumi.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hybridgpu.datafile import load_unique_yaml_all
from hybridgpu.errors import Issue
from hybridgpu.inventory.loader import inventory_from_documents, load_inventory
from hybridgpu.inventory.models import HostState, Inventory, InventoryError

__all__ = ["StateChange", "set_host_state", "state_edit"]


@dataclass(frozen=True)
class StateChange:
    """The outcome of :func:`set_host_state`.

    Attributes:
        hostname: the host.
        file: the inventory file that declares it (as given).
        before: its state before.
        after: its state now.
        written: False when it already was in ``after`` (nothing written).
        inventory: the inventory as it is now (validated).
    """

    hostname: str
    file: str
    before: str
    after: str
    written: bool
    inventory: Inventory


def _is_key(node: yaml.Node, key: str) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.value == key


def _host_node(text: str, hostname: str) -> yaml.MappingNode | None:
    """The mapping node of ``hostname`` among the ``hosts`` of the HostList documents of ``text``."""
    for doc in yaml.compose_all(text, Loader=yaml.SafeLoader):
        if not isinstance(doc, yaml.MappingNode):
            continue
        for key, value in doc.value:
            if not (_is_key(key, "hosts") and isinstance(value, yaml.SequenceNode)):
                continue
            for item in value.value:
                if isinstance(item, yaml.MappingNode) and any(
                    _is_key(k, "hostname") and isinstance(v, yaml.ScalarNode) and v.value == hostname for k, v in item.value
                ):
                    return item
    return None


def state_edit(text: str, hostname: str, state: HostState) -> str:
    """``text`` (one inventory file) with ``hostname``'s ``state`` set to ``state``; every other byte kept.

    Args:
        text: the file's text.
        hostname: a host declared in it.
        state: ``active``, ``cordoned`` or ``absent``.

    Returns:
        The new text: the existing ``state`` value replaced, or ``state: <state>`` added after the
        ``hostname`` (its own line in a block mapping, ``, state: ...`` in a flow mapping).

    Raises:
        KeyError: the file declares no such host.
        yaml.YAMLError: the text is not YAML.
    """
    node = _host_node(text, hostname)
    if node is None:
        raise KeyError(hostname)
    for key, value in node.value:
        if _is_key(key, "state"):
            start, end = value.start_mark.index, value.end_mark.index
            return text[:start] + state + text[end:]
    key, value = next((k, v) for k, v in node.value if _is_key(k, "hostname"))
    end = value.end_mark.index
    if node.flow_style:
        return text[:end] + f", state: {state}" + text[end:]
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    newline = "\n"
    if line_end > 0 and text[line_end - 1] == "\r":  # a CRLF file stays CRLF
        line_end, newline = line_end - 1, "\r\n"
    indent = " " * key.start_mark.column
    return text[:line_end] + f"{newline}{indent}state: {state}" + text[line_end:]


def _write_atomically(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def set_host_state(paths: Sequence[Path | str], hostname: str, state: HostState) -> StateChange:
    """Set ``hostname``'s lifecycle ``state`` in the inventory file that declares it, after validating the result.

    Args:
        paths: the inventory's files or directories (as for :func:`hybridgpu.inventory.load_inventory`).
        hostname: the host (its ``hostname``).
        state: ``active`` (restore), ``cordoned`` or ``absent`` (out for repair).

    Returns:
        What changed (``written`` False when the host already was in ``state``).

    Raises:
        InventoryError: the inventory is invalid now, has no such host, or would be invalid with the
            change (every issue, naming file, host and field); nothing is written then.
    """
    inventory = load_inventory(list(paths))
    try:
        host, file = inventory.host(hostname), inventory.file_of(hostname)
    except KeyError:
        known = ", ".join(h.hostname for h in inventory.hosts)
        raise InventoryError(
            [Issue.on_host(inventory.files[0], hostname, None, "no such host in this inventory", f"name one of: {known}", "unknown-host")]
        ) from None
    if host.state == state:
        return StateChange(hostname, file, host.state, state, False, inventory)
    path = Path(file).resolve()  # a symlinked inventory: replace its target, keep the link
    raw = path.read_bytes()
    bom = raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode("utf-8-sig")
    new_text = state_edit(text, hostname, state)
    documents: list[tuple[str, list[Any]]] = []
    for name in inventory.files:
        source = new_text if name == file else Path(name).read_text(encoding="utf-8-sig")
        documents.append((name, load_unique_yaml_all(source)))
    edited = inventory_from_documents(documents)  # raises InventoryError: nothing written
    if edited.host(hostname).state != state:  # the text edit must have done exactly this
        raise AssertionError(f"state edit of {hostname} in {file} did not take")
    _write_atomically(path, ("\ufeff" if bom else "") + new_text)
    return StateChange(hostname, file, host.state, state, True, edited)
