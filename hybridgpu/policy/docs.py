"""Generate the policy reference of docs/policies.md from :data:`hybridgpu.policy.registry.POLICIES`.

The reference sits between two marker lines in docs/policies.md; everything else in that file is
written by hand. ``python -m hybridgpu.policy.docs`` rewrites the reference in place;
``--check`` exits 1 when the committed file is stale (a test runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybridgpu.policy.registry import POLICIES

BEGIN = "<!-- BEGIN GENERATED POLICY REFERENCE (python -m hybridgpu.policy.docs) -->"
END = "<!-- END GENERATED POLICY REFERENCE -->"
DOC = Path(__file__).resolve().parents[2] / "docs" / "policies.md"


def _type(prop: dict) -> str:
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"])
    t = prop.get("type", "object")
    if t == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if t == "object" and "additionalProperties" in prop and isinstance(prop["additionalProperties"], dict):
        return f"map of {_type(prop['additionalProperties'])}"
    return str(t)


def reference() -> str:
    """The generated Markdown: a summary table, then one section per policy with its settings."""
    lines = [BEGIN, "", "| policy | group | checks | default level |", "|---|---|---|---|"]
    for p in POLICIES:
        lines.append(f"| [`{p.name}`](#{p.name}) | {p.group} | {p.kind} | {p.enforcement} |")
    for p in POLICIES:
        lines += ["", f"### {p.name}", "", f"**Blocks:** {p.description}", "", f"**Why:** {p.why}", ""]
        lines.append(f"Runs on {'each resource (Analyze)' if p.kind == 'resource' else 'the whole stack (AnalyzeStack)'}; validator `hybridgpu.policy.rules.{p.validator.__name__}`.")
        lines += ["", "| setting | type | meaning |", "|---|---|---|"]
        for name, prop in p.config_schema().items():
            meaning = prop.get("description", "").replace("|", "\\|")
            if "default" in prop and prop["default"] not in (None, [], {}):
                meaning += f" (schema default `{json.dumps(prop['default'])}`)"
            lines.append(f"| `{name}` | {_type(prop)} | {meaning} |")
    lines += ["", END]
    return "\n".join(lines)


def render(text: str) -> str:
    """``text`` (docs/policies.md) with its generated section replaced."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"{DOC}: the markers {BEGIN!r} and {END!r} are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + reference() + tail


def main(argv: list[str] | None = None) -> int:
    """Rewrite docs/policies.md (or with ``--check`` report whether it is current)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    current = DOC.read_text()
    wanted = render(current)
    if args.check:
        if current != wanted:
            print(f"{DOC} is stale: run python -m hybridgpu.policy.docs", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
