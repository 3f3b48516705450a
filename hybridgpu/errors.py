"""Error types for bad input.

One exception type per kind of bad input. Every error carries where the input came
from (a file), where in it the problem is (a key path in Pulumi config notation such
as ``hybridgpu:cloud.nodePools[1].weight``) and how to fix it, and is raised before
any Pulumi resource is registered.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


class HybridGpuError(Exception):
    """Base class of every error this toolkit raises on purpose for bad input."""


@dataclass(frozen=True)
class ConfigIssue:
    """One problem found in a stack configuration.

    Attributes:
        file: path of the stack file as the user knows it, e.g. ``stacks/Pulumi.dev.yaml``.
        key: key path in Pulumi config notation, e.g. ``hybridgpu:cloud.nodePools[0].weight``.
        message: what is wrong, including the offending value where useful.
        fix: what to change to make it right.
    """

    file: str
    key: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key}: {self.message}\n    fix: {self.fix}"


class StackConfigError(HybridGpuError):
    """A stack configuration is invalid; raised before any resource is registered.

    Args:
        issues: every problem found (all of them are reported at once, not just the first).
    """

    def __init__(self, issues: list[ConfigIssue]):
        if not issues:
            raise ValueError("StackConfigError needs at least one issue")
        self.issues = list(issues)
        count = len(self.issues)
        head = f"{count} problem{'s' if count > 1 else ''} in stack configuration {self.issues[0].file}:"
        super().__init__("\n".join([head, *(f"  - {issue}" for issue in self.issues)]))

    @property
    def keys(self) -> list[str]:
        """The key paths of all issues, in the order found."""
        return [issue.key for issue in self.issues]


class StackFileError(HybridGpuError):
    """A stack file cannot be read at all (missing, not YAML, no ``config`` mapping)."""


def suggest(name: str, options: Iterable[str]) -> str:
    """The close-match hint appended to "unknown name" messages.

    Args:
        name: what the user wrote.
        options: the valid names.

    Returns:
        `` (did you mean a, b?)`` with up to three close matches, or ``""`` when none is close.
    """
    close = difflib.get_close_matches(name, list(options), n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""
