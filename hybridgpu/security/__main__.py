"""``python -m hybridgpu.security``: print the figures of docs/security.md.

Previews every example stack offline (into a scratch out/), then counts: IAM policy documents
linted with parliament (the ones the stacks register, and every one ``hybridgpu.render.iam``
builds in three partitions, as ``tests/security/test_sec_iam.py`` does) and the findings left
(each with its justification), manifests checked with checkov (passed checks per directory:
rendered by the stacks, example workloads of the docs) and the skips used, shell scripts
shellchecked, files scanned for secrets and the hits. Needs the test tools (``make setup``).
The fuzzing figures come from ``make fuzz``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path


def main() -> int:
    """Print the figures; exit 1 when a check has an open problem (unjustified finding, unskipped failure, hit).

    Runs from a source checkout (its stacks, docs, ``tools/security`` and golden files); exit 2
    with what is missing when the working directory is not in one or checkov is not installed.
    """
    from hybridgpu.checkout import CheckoutFileMissing
    from hybridgpu.stack.files import list_stacks
    from hybridgpu.shell.preview import run_preview, write_manifests
    from hybridgpu.render import iam
    from hybridgpu.security.checkov_scan import (
        SKIPS_FILE,
        CheckovMissing,
        apply_skips,
        checkout_root,
        checkov_binary,
        load_skips,
        run_checkov,
        write_example_manifests,
    )
    from hybridgpu.security.iam_lint import LintReport, lint_policies, policies_of_records, renderer_policies, unjustified
    from hybridgpu.security.scripts import scripts_of_records, shellcheck
    from hybridgpu.security.secrets_scan import scan_files

    try:
        root = checkout_root()
        checkov_binary()
    except (CheckoutFileMissing, CheckovMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    skips = load_skips(root / SKIPS_FILE)
    stacks = list_stacks(root)
    problems = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        results = {}
        for stack in stacks:
            results[stack] = run_preview(stack, root)
            write_manifests(results[stack], out)
        print(f"stacks: {len(stacks)} ({', '.join(stacks)})")

        program = lint_policies([p for s, r in results.items() for p in policies_of_records(s, r.records)])
        renderer = lint_policies(renderer_policies())
        report = LintReport(
            policies=program.policies + renderer.policies,
            statements=program.statements + renderer.statements,
            findings=program.findings + renderer.findings,
            not_applicable=program.not_applicable + renderer.not_applicable,
        )
        missing, stale = unjustified(report, iam.PARLIAMENT_JUSTIFICATIONS)
        problems += len(missing) + len(stale)
        distinct = sorted({(f.sid, f.issue) for f in report.findings})
        for label, part in (("registered by the stacks", program), ("from hybridgpu.render.iam (3 partitions)", renderer)):
            print(
                f"IAM (parliament), {label}: {part.policies} policy documents, {part.statements} statements; "
                f"{len(part.findings)} findings left, {len(part.not_applicable)} not applicable (Resource in trust policies)"
            )
        print(
            f"IAM (parliament), together: {report.policies} policy documents, {report.statements} statements; "
            f"{len(report.findings)} findings left ({len(distinct)} distinct statement/issue pairs, "
            f"{len(distinct) - len({(m.sid, m.issue) for m in missing})} justified; {len(missing)} unjustified findings, "
            f"{len(stale)} unused justifications), {len(report.not_applicable)} not applicable (Resource in trust policies)"
        )
        for sid, issue in distinct:
            print(f"  {sid}: {issue}")

        scan = Path(tmp) / "checkov"
        for stack in stacks:
            (scan / stack).mkdir(parents=True)
            (out / stack / "manifests").rename(scan / stack / "manifests")
        examples = write_example_manifests(scan / "examples", root)
        checkov = run_checkov(scan)
        open_failures, skipped, stale_skips = apply_skips(checkov.failed, skips)
        problems += len(open_failures) + len(stale_skips)
        print(
            f"Kubernetes (checkov): {checkov.resources} objects ({checkov.resources - examples} rendered, {examples} from the docs), "
            f"{len(checkov.passed)} checks passed, {len(checkov.failed)} failed, of which {len(skipped)} covered by "
            f"{len(skips)} documented skips; {len(open_failures)} open"
        )
        for label, belongs in (("rendered", lambda r: not r.file.startswith("examples/")), ("examples", lambda r: r.file.startswith("examples/"))):
            passed = [r for r in checkov.passed if belongs(r)]
            failed = [r for r in checkov.failed if belongs(r)]
            kinds = sorted({r.resource.split(".", 1)[0] for r in passed})
            print(f"  {label}: {len(passed)} checks passed, {len(failed)} failed; passed on kinds {', '.join(kinds) or 'none'}")
        scripts = [s for st, r in results.items() for s in scripts_of_records(st, r.records)]
        unique = {s.text for s in scripts}
        dirty = sum(1 for text in unique if shellcheck(text))
        problems += dirty
        print(f"Scripts (shellcheck, every severity): {len(scripts)} scripts ({len(unique)} distinct), {dirty} with findings")
        files, hits = scan_files([Path(tmp), root / "tests" / "golden"])
        problems += len(hits)
        print(f"Secrets: {files} files scanned (out/ of every stack, golden files), {len(hits)} hits")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
