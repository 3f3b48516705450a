"""Generate the policy reference of docs/policies.md from :data:`hybridgpu.policy.registry.POLICIES`.

The reference sits between two marker lines in docs/policies.md; everything else in that file is
written by hand. ``python -m hybridgpu.policy.docs`` rewrites the reference in place;
``--check`` exits 1 when the committed file is stale (a test runs it). docs/policies.md is a
file of the source checkout, not package data: it is found at or above the working directory
(or under ``--root``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybridgpu.checkout import CheckoutFileMissing, find_checkout
from hybridgpu.policy.registry import POLICIES

BEGIN = "<!-- BEGIN GENERATED POLICY REFERENCE (python -m hybridgpu.policy.docs) -->"
END = "<!-- END GENERATED POLICY REFERENCE -->"
#: The policy guide, relative to the root of the source checkout.
DOC = Path("docs") / "policies.md"


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
        lines.append(f"Runs on {'each resource (Analyze)' if p.kind == 'resource' else 'the whole stack (AnalyzeStack)'}; validator `{p.validator.__module__}.{p.validator.__name__}`.")
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
    """Rewrite docs/policies.md (or with ``--check`` report whether it is current).

    Returns:
        0 done (or current), 1 stale (``--check``), 2 when the file or its markers are missing
        (the message on stderr says what and how to fix it).
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/policies.md is stale instead of rewriting it")
    parser.add_argument("--root", type=Path, default=None, help="source checkout holding docs/ (default: found from the working directory)")
    args = parser.parse_args(argv)
    try:
        doc = find_checkout(DOC, root=args.root, needed_by="python -m hybridgpu.policy.docs", option="--root DIR") / DOC
        current = doc.read_text(encoding="utf-8")
        wanted = render(current)
    except (CheckoutFileMissing, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if current != wanted:
            print(f"{doc} is stale: run python -m hybridgpu.policy.docs", file=sys.stderr)
            return 1
        return 0
    doc.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
