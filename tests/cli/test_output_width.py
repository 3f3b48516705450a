"""Output that fits a CI log and an 80-column terminal (issue 29, "Output").

Every command is run through the CLI (typer's CliRunner: output is not a terminal) with
``COLUMNS=80``, as a CI log or ``| less`` sees it. Rich cuts a cell that does not fit with ``…`` (the
default ``overflow="ellipsis"``) or folds it mid-word (``g6.xlar│ge,``); here no value may be cut
and no line may be wider than the console unless it is one unbreakable token
(:func:`width_problems`). ``preview`` leads with the GPU NodePools; progress goes to stderr only
when stderr is a terminal; ``--help`` shows no ``<bool>`` and no ``--no-no-...``.
"""

from __future__ import annotations

import json

import pytest
import typer.main
from rich.console import Console
from typer.testing import CliRunner

from hybridgpu.cli import app
from hybridgpu.cli.common import column_widths, print_table, progress
from hybridgpu.cli.preview import print_summary, summary_of

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

runner = CliRunner(env={"COLUMNS": "80"})


def width_problems(text: str, width: int = 80) -> list[str]:
    """Lines of ``text`` that cut a value (``…``) or are wider than ``width`` without being one unbreakable token
    (a line over the width is allowed only when its longest word alone, after a label, is what makes it long)."""
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        if "…" in line:
            problems.append(f"line {n} cuts a value: {line!r}")
        if len(line) > width:
            words = line.split()
            label = line[: len(line) - len(line.lstrip())] + " ".join(words[:-1])
            if len(words[-1]) <= width - len(label) - 1 or len(words) > 3:
                problems.append(f"line {n} is {len(line)} wide: {line!r}")
    return problems


#: Documented commands (README "Try it") whose text output is checked at 80 columns. Each must exit 0
#: (``check prod`` exits 1 on mandatory violations; it has none today).
COMMANDS = {
    "validate": ["validate", "dev"],
    "catalog": ["catalog"],
    "mig check": ["mig", "check", "H100-80GB", "3g.40gb=1", "2g.20gb=2"],
    "mig plan": ["mig", "plan", "H100-80GB", "1g.10gb=20", "3g.40gb=6", "--whole", "3"],
    "mig profiles": ["mig", "profiles", "H100-80GB"],
    "burst plan": ["burst", "plan", "hybrid"],
    "burst simulate": ["burst", "simulate", "--trace", "examples/traces/site-a-month.csv", "--stack", "hybrid"],
    "cost report": ["cost", "report", "prod", "--job-gpus", "512", "--checkpoint-minutes", "5"],
    "cost plan": ["cost", "plan", "--demand", "examples/demand/sample.csv"],
    "cost showback": ["cost", "showback", "examples/usage/site-a-week.csv", "--stack", "onprem", "--stack", "prod", "--onprem-gpus", "40", "--window-hours", "168"],
    "cost checkpoint": ["cost", "checkpoint", "--gpus=1024", "--checkpoint-minutes=5", "--stack", "prod"],
    "job check": ["job", "check", "prod", "docs/examples/eks-pytorchjob.yaml"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_documented_command_fits_80_columns_and_cuts_nothing(name, root, monkeypatch):
    monkeypatch.chdir(root)
    result = runner.invoke(app, COMMANDS[name])
    assert result.exit_code == 0, result.output
    assert width_problems(result.stdout) == [], result.stdout
    assert result.stderr == ""  # no progress: stderr is not a terminal


def test_preview_leads_with_the_gpu_nodepools_and_fits_80_columns(previews, tmp_path, monkeypatch, capsys):
    """The dev stack's NodePool table was 38 rows of fragments (`g6.xlar│ge,`); now every instance type is whole."""
    monkeypatch.setenv("COLUMNS", "80")
    for stack, result in previews.items():
        summary = summary_of(result, tmp_path)
        print_summary(summary)
        text = capsys.readouterr().out
        assert width_problems(text) == [], f"{stack}:\n{text}"
        assert "Resources by type" not in text  # behind --verbose
        if summary["nodePools"]:
            assert text.splitlines()[1].startswith("GPU NodePools"), text[:400]
            words = set(text.replace(",", " ").split())
            assert {t for p in summary["nodePools"] for t in p["instanceTypes"]} <= words
        print_summary(summary, verbose=True)
        assert "Resources by type" in capsys.readouterr().out


def test_preview_verbose_flag_through_the_cli(root, tmp_path):
    plain = runner.invoke(app, ["preview", "dev", "--root", str(root), "--out", str(tmp_path)])
    verbose = runner.invoke(app, ["preview", "dev", "--root", str(root), "--out", str(tmp_path), "--verbose"])
    assert plain.exit_code == verbose.exit_code == 0, plain.output + verbose.output
    assert "Resources by type" not in plain.stdout and "--verbose" in plain.stdout
    assert "Resources by type" in verbose.stdout
    assert plain.stdout.index("GPU NodePools") < plain.stdout.index("hybridgpu:index:")
    assert plain.stderr == ""
    assert width_problems(plain.stdout) == width_problems(verbose.stdout) == []


def test_check_messages_are_whole_at_80_columns(root, monkeypatch):
    """`check` squeezed violation messages into 20 characters; at 80 columns it prints records, each message whole."""
    monkeypatch.chdir(root)
    result = runner.invoke(app, ["check", "dev"])
    assert result.exit_code in (0, 1), result.output
    assert width_problems(result.stdout) == []
    assert "message:" in result.stdout and "nodeRepair" in result.stdout
    assert result.stderr == ""


# --------------------------------------------------------------------------- the table helper


def render(columns, rows, width, title="t"):
    out = Console(width=width, record=True, emoji=False, highlight=False, force_terminal=False)
    with out.capture() as captured:
        print_table(out, title, columns, rows)
    return captured.get()


def test_a_table_that_fits_is_a_table_and_one_that_does_not_is_records():
    rows = [["spot-g5-g6", "g6.xlarge, g6.2xlarge, g5.xlarge, g5.2xlarge, g6.4xlarge, g5.4xlarge, g6.8xlarge"]]
    wide = render(["NodePool", "instance types"], rows, 200)
    assert "┃ NodePool" in wide and "g6.8xlarge" in wide
    narrow = render(["NodePool", "a header", "another", "more", "instance types"], [[rows[0][0], "x" * 20, "y" * 20, "z" * 20, rows[0][1]]], 80)
    assert "NodePool:       spot-g5-g6" in narrow and "┃" not in narrow
    assert width_problems(narrow) == []


def test_a_value_is_never_cut_or_folded_mid_word():
    long_word = "arn:aws:iam::123456789012:role/a-very-long-role-name-that-cannot-break-anywhere-at-all"
    text = render(["resource", "message"], [["r", f"the role {long_word} is wrong"]], 80)
    assert long_word in text  # whole, on a line of its own when it must overflow
    assert "…" not in text


def test_column_widths_are_the_same_for_the_same_input_and_none_when_words_do_not_fit():
    headers, rows = ["a", "b"], [["one two three four five six seven eight nine ten", "x"]]
    assert column_widths(headers, rows, 40) == column_widths(headers, rows, 40)
    assert sum(column_widths(headers, rows, 40)) + 3 * 2 + 1 <= 40
    assert column_widths(headers, [["w" * 50, "x"]], 40) is None


def test_burst_plan_is_tables_at_160_columns(root, monkeypatch):
    """`burst plan hybrid` cut 21 cells at 160 columns; now one table per cluster and team, nothing cut."""
    monkeypatch.chdir(root)
    result = CliRunner(env={"COLUMNS": "160"}).invoke(app, ["burst", "plan", "hybrid"])
    assert result.exit_code == 0, result.output
    assert width_problems(result.stdout, 160) == []
    assert result.stdout.count("┃ ClusterQueue") >= 3 and "multikueue-onprem-a100-80gb-mig" in result.stdout


def test_progress_on_a_terminal_runs_the_block_and_leaves_stdout_alone(monkeypatch, capsys):
    monkeypatch.setattr("hybridgpu.cli.common.stderr_is_terminal", lambda: True)
    with progress("working") as update:
        update("still working")
        print("result")
    assert capsys.readouterr().out == "result\n"


def test_progress_is_silent_when_stderr_is_not_a_terminal(capsys):
    with progress("working") as update:
        update("still working")
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


# --------------------------------------------------------------------------- --json and --help


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "dev", "--json"],
        ["catalog", "--family", "p5", "--json"],
        ["mig", "profiles", "A30-24GB", "--json"],
        ["mig", "check", "H100-80GB", "3g.40gb=1", "--json"],
        ["mig", "plan", "H100-80GB", "1g.10gb=20", "3g.40gb=6", "--whole", "3", "--json"],
        ["job", "check", "prod", "docs/examples/eks-pytorchjob.yaml", "--json"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_new_json_options_print_one_document(args, root, monkeypatch):
    monkeypatch.chdir(root)
    result = CliRunner(env={"COLUMNS": "40"}).invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict) and doc


def test_mig_check_json_says_why_a_mix_does_not_fit_and_exits_1():
    result = runner.invoke(app, ["mig", "check", "A100-40GB", "3g.20gb=2", "1g.5gb", "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["fits"] is False and "memory slices needed 9 > 8" in doc["reason"]


def test_job_check_json_lists_the_problems_and_exits_2(root, tmp_path):
    bad = tmp_path / "job.yaml"
    bad.write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]}}}\n")
    result = runner.invoke(app, ["job", "check", "prod", str(bad), "--root", str(root), "--json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == (2 if doc["problems"] else 0)
    assert doc["ok"] is (not doc["problems"])
    assert all(p["file"] and p["fix"] for p in doc["problems"])


def every_command_path() -> list[list[str]]:
    paths: list[list[str]] = []

    def walk(cmd, prefix):
        paths.append(prefix)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*prefix, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_help_shows_no_bool_metavar_no_double_negative_and_no_module_paths():
    """Every ``--help`` at 80 columns: no type on flags, no ``--no-no-``, no module paths, and nothing cut:
    no ``…`` (rich's mark of a cut cell) and no line over 80 characters. typer 0.29 squeezes every
    column of the options panel alike; ``--failure-restart-seconds`` was shown as
    ``--failure-restart-se…`` (hybridgpu/cli/common.py ``_HelpOptionsTable``)."""
    for path in every_command_path():
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        for noise in ("<bool>", "--no-no-", "hybridgpu.", "[default: no-"):
            assert noise not in result.output, f"hybridgpu {' '.join(path)} --help shows {noise!r}:\n{result.output}"
        cut = [line for line in result.output.splitlines() if "…" in line or len(line) > 80]
        assert cut == [], f"hybridgpu {' '.join(path)} --help at 80 columns: {cut}"
        if path == ["burst", "simulate"]:
            assert "--failure-restart-seconds" in result.output


def test_a_negative_flag_still_works_without_its_double_negative():
    result = runner.invoke(app, ["cost", "plan", "--demand", "examples/demand/sample.csv", "--no-no-onprem"])
    assert result.exit_code == 2 and "No such option" in result.output
