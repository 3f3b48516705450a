"""Property-based fuzzing of every loader and CLI entry point (issue 8, item 5).

Each target in :data:`TARGETS` gets malformed inputs from the harness (tests/helpers/
fuzz_harness.py: mutated copies of the real example files) and must answer with our own
validation error naming the file (no traceback) and write nothing. The CI suite runs a small,
derandomized sample per target; ``make fuzz`` (``HYBRIDGPU_FUZZ=full``) runs at least 10,000
malformed inputs in total (15% more inputs, since a few mutants stay valid) and prints the
count per target. Inputs that found a bug are kept as
``@example`` regressions (see ``test_regressions``).

Adding a target: one ``FuzzTarget(name, strategy, run)`` entry in :data:`TARGETS`.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hybridgpu.cli import app
from tests.helpers import ROOT
from tests.helpers.fuzz_harness import (
    CASES,
    CURRENT,
    CUSTOM_PER_TARGET,
    FULL_RUN,
    RANDOM_RUN,
    FULL_TOTAL,
    FuzzTarget,
    _snapshot,
    expect_clean_exit,
    expect_our_error,
    mutated_csv,
    mutated_json,
    mutated_yaml,
    read_seeds,
)
from tests.helpers.scratch import temporary_project

# Every `hybridgpu check` here takes a pack already running (tests/conftest.py shared_pack).
pytestmark = pytest.mark.usefixtures("shared_pack")

RUNNER = CliRunner()
STACK_FILES = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
STACK_SEEDS = read_seeds(STACK_FILES)


def _write(root: Path, relative: str, data: bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------- targets: loaders


def run_stack_config(data: bytes) -> None:
    """hybridgpu.stack.files.load_stack_config on a malformed stack file (any example stack as seed)."""
    from hybridgpu.stack.load import load_stack_config

    with temporary_project(link_data=True) as root:
        _write(root, "stacks/Pulumi.fuzz.yaml", data)
        expect_our_error(lambda: load_stack_config("fuzz", root), "stacks/Pulumi.fuzz.yaml", root)


def run_burst_plan(data: bytes) -> None:
    """A malformed burst plan file, read through the stack that names it (load_stack_config of `hybrid`)."""
    from hybridgpu.stack.load import load_stack_config

    with temporary_project(link_data=True) as root:
        (root / "stacks" / "burst").unlink()
        _write(root, "stacks/burst/site-a.yaml", data)
        for stack_file in STACK_FILES:  # the plan names the stacks of its sides
            _write(root, f"stacks/{stack_file.name}", stack_file.read_bytes())
        expect_our_error(lambda: load_stack_config("hybrid", root), "stacks/burst/site-a.yaml" if data.strip() else "stacks/", root)


def _run_file_loader(load, name: str, data: bytes) -> None:
    """``load`` on one malformed file ``name`` (``data``) in a scratch project."""
    with temporary_project(link_data=True) as root:
        path = _write(root, name, data)
        expect_our_error(lambda: load(path), str(path), root)


def _dir_strategy(files: list[Path]) -> st.SearchStrategy:
    """(index of the file to break, its malformed bytes) over a set of YAML files."""
    return st.integers(0, len(files) - 1).flatmap(lambda i: st.tuples(st.just(i), mutated_yaml(read_seeds([files[i]]))))


def _run_dir_loader(files: list[Path], load, case: tuple[int, bytes], subdir: str = "data") -> None:
    index, data = case
    with temporary_project(link_data=True) as root:
        for i, source in enumerate(files):
            _write(root, f"{subdir}/{source.name}", data if i == index else source.read_bytes())
        broken = str(root / subdir / files[index].name)
        expect_our_error(lambda: load(root / subdir), broken if data.strip() else str(root / subdir), root)


INVENTORY_SPLIT = sorted((ROOT / "stacks" / "inventory" / "split-example").glob("*.yaml"))
INVENTORY_ONE = [ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"]
CATALOG_FILES = [ROOT / "hybridgpu" / "catalog" / "data" / n for n in ("gpu_models.yaml", "instance_types.yaml")]
MIG_FILE = ROOT / "hybridgpu" / "mig" / "data" / "mig_profiles.yaml"
ECONOMICS_FILES = sorted((ROOT / "hybridgpu" / "economics" / "data").glob("*.yaml"))


def run_inventory(case: tuple[bool, int, bytes]) -> None:
    """hybridgpu.inventory.load_inventory on a site whose file (single) or one of whose files (split) is malformed."""
    from hybridgpu.inventory.loader import load_inventory

    split, index, data = case
    files = INVENTORY_SPLIT if split else INVENTORY_ONE
    _run_dir_loader(files, load_inventory, (index % len(files), data), subdir="inventory")


def run_catalog(case: tuple[int, bytes]) -> None:
    """hybridgpu.catalog.load_catalog with one malformed catalog file."""
    from hybridgpu.catalog import load_catalog

    _run_dir_loader(CATALOG_FILES, load_catalog, case)


def run_mig_data(data: bytes) -> None:
    """hybridgpu.mig.profiles.load_mig_models on a malformed MIG geometry file."""
    from hybridgpu.mig.profiles import load_mig_models

    _run_file_loader(load_mig_models, "mig_profiles.yaml", data)


def run_economics_data(case: tuple[int, bytes]) -> None:
    """hybridgpu.economics.prices.load_economics_data with one malformed price file."""
    from hybridgpu.economics.prices import load_economics_data

    _run_dir_loader(ECONOMICS_FILES, load_economics_data, case)


def run_trace(data: bytes) -> None:
    """hybridgpu.burst.trace.load_trace on a malformed demand trace CSV."""
    from hybridgpu.burst.trace import load_trace

    _run_file_loader(load_trace, "trace.csv", data)


def run_demand(data: bytes) -> None:
    """hybridgpu.economics.demand.load_demand_csv on a malformed hourly demand CSV."""
    from hybridgpu.economics.demand import load_demand_csv

    _run_file_loader(load_demand_csv, "demand.csv", data)


SHOWBACK_PRICES = "owned=3.00,reserved=4.00,spot=2.40,on-demand=6.88"


def _showback(path: Path, **kwargs) -> None:
    from hybridgpu.economics.showback import ShowbackPrices, compute_showback
    from hybridgpu.economics.usage import load_usage

    compute_showback(load_usage(path, **kwargs), ShowbackPrices.parse(SHOWBACK_PRICES), onprem_gpus=1024, window_hours=720, file=str(path))


def run_showback_usage(data: bytes) -> None:
    """hybridgpu.economics.usage.load_usage and showback.compute_showback on a malformed usage CSV."""
    _run_file_loader(_showback, "usage.csv", data)


def run_showback_opencost(data: bytes) -> None:
    """hybridgpu.economics.usage on a malformed OpenCost /allocation export (with a valid node list)."""
    from hybridgpu.economics.usage import load_nodes

    nodes = load_nodes(ROOT / "tests" / "fixtures" / "showback" / "nodes.json")
    _run_file_loader(lambda path: _showback(path, nodes=nodes), "allocation.json", data)


def run_policy_config(data: bytes) -> None:
    """hybridgpu.shell.policy.check.load_policy_config on a malformed policy-pack config (JSON)."""
    from hybridgpu.shell.policy.check import load_policy_config

    _run_file_loader(load_policy_config, "policy-config.json", data)


# --------------------------------------------------------------------------- targets: CLI


def run_cli_validate_preview(data: bytes) -> None:
    """`hybridgpu validate` and, when the file is invalid, `hybridgpu preview`: exit 2 with an error, no out/.

    Which file the error names is checked by the stack-config target (the same loader, same inputs).
    """
    from hybridgpu.stack.load import load_stack_config
    from hybridgpu.errors import HybridGpuError

    with temporary_project(link_data=True) as root:
        _write(root, "stacks/Pulumi.fuzz.yaml", data)
        before = _snapshot(root)
        result = RUNNER.invoke(app, ["validate", "fuzz", "--root", str(root)], env={"COLUMNS": "200"})
        expect_clean_exit(result, root, before, codes=(0, 2))
        try:
            load_stack_config("fuzz", root)
        except HybridGpuError:
            pass
        else:
            return  # valid after all: a preview would run the whole program, not a malformed-input case
        assert result.exit_code == 2 and "error" in result.output, result.output
        result = RUNNER.invoke(app, ["preview", "fuzz", "--root", str(root), "--out", "out"], env={"COLUMNS": "200"})
        expect_clean_exit(result, root, before, codes=(2,))
        assert not (root / "out").exists(), "preview wrote out/ for an invalid stack"


_PROFILES = st.sampled_from(["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.12gb", "3g.47gb", "1g.5gb", "", "x"])
_COUNTS = st.one_of(
    st.integers(min_value=-3, max_value=40).map(str),
    st.sampled_from(["", "1.5", "1e9", "99999999999999999999", "0x10", " 2", "-0", "nan", "=", "é"]),
)
_ARG = st.one_of(
    st.tuples(_PROFILES, st.sampled_from(["=", "", "==", ":"]), _COUNTS).map("".join),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20),
)
_MODELS = st.one_of(st.sampled_from(["H100-80GB", "A100-40GB", "A100-80GB", "A30-24GB", "H200-141GB", "h100-80gb", "L40S", ""]), st.text(max_size=12))
_POOL = st.one_of(
    st.tuples(st.sampled_from(["dgx", "a", "Node", "", "x" * 300]), st.sampled_from([":", "", "::"]), st.sampled_from(["8", "8x4", "0", "-1", "8x0", "x", "8x100000000", "1e3"])).map("".join),
    st.text(max_size=12),
)
MIG_ARGS = st.tuples(
    st.sampled_from(["check", "plan"]),
    _MODELS,
    st.lists(_ARG, min_size=0, max_size=5),
    st.one_of(st.none(), st.integers(min_value=-2, max_value=10**9).map(str), st.just("1.5")),
    st.lists(_POOL, max_size=2),
)


def run_cli_mig(case: tuple) -> None:
    """`hybridgpu mig check|plan MODEL PROFILE=COUNT... [--whole N] [--pool NAME:GPUSxNODES]`: exit 0/1/2, never a traceback."""
    command, model, profiles, whole, pools = case
    # A leading "-" would make click read an option (a usage error, also exit 2); strip it so the
    # value reaches our parsing.
    model, profiles = model.lstrip("-"), [p.lstrip("-") for p in profiles]
    args = ["mig", command, model or "H100-80GB", *(profiles or ["1g.10gb=1"])]
    if command == "plan":
        args += (["--whole", whole] if whole is not None else []) + [a for pool in pools for a in ("--pool", pool)]
    result = RUNNER.invoke(app, args, env={"COLUMNS": "200"})
    expect_clean_exit(result, None, None)


def run_cli_burst_simulate(data: bytes) -> None:
    """`hybridgpu burst simulate --trace FILE ...` on a malformed trace: exit 0 or 2 naming the file, no traceback."""
    with temporary_project(link_data=True) as root:
        path = _write(root, "trace.csv", data)
        before = _snapshot(root)
        args = ["burst", "simulate", "--trace", str(path), "--onprem-gpus", "4", "--spot-gpus", "8", "--on-demand-gpus", "8",
                "--spot-price", "1", "--on-demand-price", "2", "--launch-seconds", "120", "--interruptions", "0", "--json"]
        result = RUNNER.invoke(app, args, env={"COLUMNS": "200"})
        expect_clean_exit(result, root, before, codes=(0, 2))
        if result.exit_code == 2:
            assert "trace.csv" in result.output, result.output


def run_cli_job_check(data: bytes) -> None:
    """`hybridgpu job check prod FILE` on a malformed job file (issue 18): exit 0 or 2 naming the file, no traceback."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.yaml"
        path.write_bytes(data)
        result = RUNNER.invoke(app, ["job", "check", "prod", str(path), "--root", str(ROOT)], env={"COLUMNS": "200"})
        expect_clean_exit(result, None, None, codes=(0, 2))
        if result.exit_code == 2:
            assert "job.yaml" in result.output, result.output


JOB_SEEDS = read_seeds(sorted((ROOT / "docs" / "examples").glob("*.yaml")))
TRACE_SEEDS = read_seeds(sorted((ROOT / "examples" / "traces").glob("*.csv")), max_lines=30)
DEMAND_SEEDS = read_seeds(sorted((ROOT / "examples" / "demand").glob("*.csv")), max_lines=30)
SHOWBACK_SEEDS = read_seeds([ROOT / "examples" / "usage" / "site-a-week.csv", *sorted((ROOT / "tests" / "fixtures" / "showback" / "pass").glob("*.csv"))], max_lines=30)

#: Every entry point under fuzzing. One entry per target.
#: Commands that write where the user says (issue 29), with "{out}" for the drawn path. The first two write
#: one file and, like a shell's ``>``, replace a file already there; the others write a directory.
OUTPUT_COMMANDS = (
    ["burst", "trace", "--jobs", "3", "--days", "1", "--out", "{out}"],
    ["cost", "demand", "{out}", "--hours", "24"],
    ["inventory", "render", str(ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"), "--out", "{out}"],
    ["inventory", "export", "--format", "kubespray", str(ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"), "--out", "{out}"],
)
WRITES_ONE_FILE = (0, 1)
#: Shapes of an output path, relative to a scratch directory holding a file ``taken`` and a directory ``room``.
OUTPUT_SHAPES = ("taken", "taken/inside", "room", "missing/deeper/{name}", "{name}", "room/{name}", "/proc/hybridgpu-{name}", "{long}")
OUTPUT_PATHS = st.tuples(
    st.integers(0, len(OUTPUT_COMMANDS) - 1),
    st.integers(0, len(OUTPUT_SHAPES) - 1),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40),
)


def run_cli_output_paths(case: tuple[int, int, str]) -> None:
    """An output path that names a file, a directory, a missing or unwritable place, or odd characters (a NUL,
    a slash, 300 characters): exit 0 or 2 with ``error:``, no traceback, nothing written on failure (issue 29)."""
    import tempfile

    command, shape, name = case
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "taken").write_text("keep\n")
        (base / "room").mkdir()
        out = OUTPUT_SHAPES[shape].replace("{name}", name).replace("{long}", "x" * 300)
        target = out if out.startswith("/") else str(base / out)
        before = _snapshot(base)
        result = RUNNER.invoke(app, [a.replace("{out}", target) for a in OUTPUT_COMMANDS[command]], env={"COLUMNS": "200"})
        expect_clean_exit(result, base, before, codes=(0, 2))
        if not (command in WRITES_ONE_FILE and out == "taken"):
            assert (base / "taken").read_text() == "keep\n"


TARGETS: list[FuzzTarget] = [
    FuzzTarget("stack-config", mutated_yaml(STACK_SEEDS), run_stack_config),
    FuzzTarget("burst-plan", mutated_yaml(read_seeds(sorted((ROOT / "stacks" / "burst").glob("*.yaml")))), run_burst_plan),
    FuzzTarget("inventory", st.tuples(st.booleans(), st.integers(0, 10)).flatmap(
        lambda t: st.tuples(st.just(t[0]), st.just(t[1]), mutated_yaml(read_seeds([(INVENTORY_SPLIT if t[0] else INVENTORY_ONE)[t[1] % len(INVENTORY_SPLIT if t[0] else INVENTORY_ONE)]])))
    ), run_inventory),
    FuzzTarget("catalog-data", _dir_strategy(CATALOG_FILES), run_catalog),
    FuzzTarget("mig-data", mutated_yaml(read_seeds([MIG_FILE])), run_mig_data),
    FuzzTarget("economics-data", _dir_strategy(ECONOMICS_FILES), run_economics_data),
    FuzzTarget("burst-trace", mutated_csv(TRACE_SEEDS), run_trace),
    FuzzTarget("economics-demand", mutated_csv(DEMAND_SEEDS), run_demand),
    FuzzTarget("showback-usage", mutated_csv(SHOWBACK_SEEDS), run_showback_usage),
    FuzzTarget("showback-opencost", mutated_json(read_seeds([ROOT / "tests" / "fixtures" / "showback" / "pass" / "opencost-allocation.json"])), run_showback_opencost),
    FuzzTarget("policy-config", mutated_json(read_seeds([ROOT / "policies" / "config.example.json"])), run_policy_config),
    FuzzTarget("cli-validate-preview", mutated_yaml(STACK_SEEDS), run_cli_validate_preview),
    FuzzTarget("cli-mig", MIG_ARGS, run_cli_mig),
    FuzzTarget("cli-burst-simulate", mutated_csv(TRACE_SEEDS), run_cli_burst_simulate),
    FuzzTarget("cli-job-check", mutated_yaml(JOB_SEEDS), run_cli_job_check),
    FuzzTarget("cli-output-paths", OUTPUT_PATHS, run_cli_output_paths),
]

PER_TARGET = math.ceil(FULL_TOTAL * 1.15 / len(TARGETS)) if FULL_RUN else (CUSTOM_PER_TARGET or 12)
FUZZ_SETTINGS = settings(
    max_examples=PER_TARGET,
    deadline=None,
    derandomize=not RANDOM_RUN,
    database=settings.default.database if RANDOM_RUN else None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
)


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_fuzz(target: FuzzTarget) -> None:
    @FUZZ_SETTINGS
    @given(case=target.strategy)
    def check(case) -> None:
        CASES[target.name] += 1
        CURRENT["target"] = target.name
        target.run(case)

    check()
    assert CASES[target.name] >= PER_TARGET


def test_targets_cover_every_loader_and_entry_point():
    """The registry names each loader and CLI entry point the issue lists (and the new ones)."""
    names = {t.name for t in TARGETS}
    assert {"stack-config", "inventory", "mig-data", "cli-mig", "cli-validate-preview", "burst-trace", "economics-demand"} <= names
    assert len(names) == len(TARGETS)
    if FULL_RUN and all(CASES[t.name] for t in TARGETS):  # after the fuzz tests (file order)
        from tests.helpers.fuzz_harness import malformed

        total = sum(malformed(t.name) for t in TARGETS)
        assert total >= FULL_TOTAL, f"only {total} malformed inputs; raise the 15% margin"


def test_seeds_are_valid():
    """Every seed is a valid input, so the malformed ones are the mutations, not the seeds."""
    from hybridgpu.burst.trace import parse_trace
    from hybridgpu.stack.files import list_stacks
    from hybridgpu.stack.load import load_stack_config
    from hybridgpu.economics.demand import parse_demand_csv

    for stack in list_stacks(ROOT):
        load_stack_config(stack, ROOT)
    for text in TRACE_SEEDS:
        assert parse_trace(text, "seed")
    for text in DEMAND_SEEDS:
        parse_demand_csv(text, "seed")
    assert STACK_SEEDS and all(STACK_SEEDS)


def _alias_bomb(levels: int = 9) -> bytes:
    lines = ["config:", "  hybridgpu:tags:", "    a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


#: Inputs that found bugs (fixed in the loader named), kept as regressions: (target, input, what was wrong).
REGRESSIONS = [
    ("stack-config", b"\x83\xf1config:\n  aws:region: us-west-2\n", "UnicodeDecodeError traceback (config/loader.py)"),
    ("stack-config", b"config:\n  hybridgpu:tags: " + b"[" * 20000 + b"]" * 20000 + b"\n", "RecursionError traceback (config/loader.py)"),
    ("stack-config", b"config:\n  hybridgpu:tags: " + b"[" * 900 + b"]" * 900 + b"\n", "RecursionError in _strip_secrets (config/loader.py)"),
    ("stack-config", _alias_bomb(), "alias bomb: minutes and GBs before an error (config/loader.py)"),
    ("cli-validate-preview", _alias_bomb(), "alias bomb through the CLI"),
    ("catalog-data", (0, b"\x80gpuModels: []\n"), "UnicodeDecodeError traceback (catalog/__init__.py)"),
    ("mig-data", b"migModels: []\n# caf\xe9\n", "UnicodeDecodeError traceback (mig/profiles.py)"),
    ("economics-data", (0, b"cloudPricing: []\n# caf\xe9\n"), "UnicodeDecodeError traceback (economics/prices.py)"),
    ("stack-config", b"config:\n  '': x\n", "issue with an empty key path (config/loader.py)"),
    ("stack-config", b"config:\n  hybridgpu:environment: production\n  hybridgpu:tags: {team: a, project: b, cost-center: c}\n  hybridgpu:onprem:\n    inventory: [s]\n",
     "a missing inventory path named as the stack configuration file (config/checks.py)"),
    ("inventory", (True, 0, (ROOT / "stacks/inventory/split-example/hosts-r01.yaml").read_bytes().replace(b"control-plane", b"cpu-worker")),
     "harness: a cross-file rule names the site file, not the mutated one"),
    ("cli-mig", ("plan", "H100-80GB", ["1g.10gb=100000000"], None, []), "planner ran for minutes / GBs (mig/planner.py MAX_PLAN_GPUS)"),
    ("cli-mig", ("plan", "H100-80GB", ["1g.10gb=7"], "100000000", []), "planner ran for minutes / GBs (whole GPUs)"),
    ("cli-mig", ("plan", "H100-80GB", ["1g.10gb=7"], None, ["a:8x100000000"]), "pool of 800M GPUs expanded node by node"),
]


@pytest.mark.parametrize("name,case,bug", REGRESSIONS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(REGRESSIONS)])
def test_regressions(name, case, bug):
    """Each input that once found a bug now ends in our error (or a clean CLI exit 2)."""
    from tests.helpers.fuzz_harness import OUTCOMES

    target = next(t for t in TARGETS if t.name == name)
    CURRENT["target"] = f"regression:{name}"
    before = sum(n for (t, outcome), n in OUTCOMES.items() if t == CURRENT["target"] and outcome in ("rejected", "exit 2"))
    target.run(case)
    after = sum(n for (t, outcome), n in OUTCOMES.items() if t == CURRENT["target"] and outcome in ("rejected", "exit 2"))
    assert after > before, f"expected the input to be rejected ({bug})"
