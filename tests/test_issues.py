"""One issue type (issue 13): every loader reports bad input as :class:`hybridgpu.errors.Issue`\\ s with a
fix, and one translator turns pydantic errors into issues for all of them.

* the :class:`Issue` type: a fix is required, and each kind of file keeps its printed form;
* real bad inputs through every loader (stack file, inventory, burst plan, trace, demand CSV,
  catalog data copy, MIG data copy, price data copy and override, policy settings) fail with an
  error whose issues are all :class:`Issue`\\ s naming the file, the key and a non-empty fix;
* good inputs through the same loaders pass;
* an unknown key gets the same fix hint ("did you mean `x`?" and the allowed keys) in a stack
  file, an inventory, a burst plan and a policy config: it comes from one function.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from hybridgpu.burst.models import BurstPlanFile
from hybridgpu.burst.plan import BurstPlanError, read_plan_file
from hybridgpu.burst.trace import TraceError, load_trace, parse_trace
from hybridgpu.catalog import GPU_MODELS_FILE, INSTANCE_TYPES_FILE, CatalogError, load_catalog
from hybridgpu.config.models import NodePoolConfig
from hybridgpu.datafile import DataFileError
from hybridgpu.economics.demand import DemandFileError, parse_demand_csv
from hybridgpu.economics.prices import EconomicsDataError, load_economics_data
from hybridgpu.errors import MAX_SHOWN_ISSUES, FieldError, Issue, IssuesError, StackConfigError, allowed_keys, fix_for, issues_from_validation, unknown_key_fix
from hybridgpu.inventory import Host, InventoryError, inventory_from_documents
from hybridgpu.mig.profiles import MIG_PROFILES_FILE, MigDataError, load_mig_models
from hybridgpu.modelbase import Model
from hybridgpu.policy.registry import BY_NAME, PolicyConfigError
from hybridgpu.render.kubespray import KubesprayExportError
from hybridgpu.stack.load import load_stack_config
from tests.helpers import ROOT
from tests.helpers.scratch import PLAN, example_plan, example_stack, write_stack

INVENTORY = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"
STACK_FILE = "stacks/Pulumi.bad.yaml"


# --------------------------------------------------------------------------- the Issue type


def test_an_issue_needs_a_fix():
    with pytest.raises(ValueError, match="needs a fix"):
        Issue("f.yaml", "a.b", "is wrong", "")
    with pytest.raises(ValueError, match="needs a fix"):
        Issue.in_entry("f.yaml", "e", "a", "is wrong", "   ")
    with pytest.raises(ValueError, match="entry_kind"):
        Issue("f.yaml", "a", "is wrong", "fix it", entry="e")
    with pytest.raises(ValueError, match="entry_kind"):
        Issue("f.yaml", "a", "is wrong", "fix it", entry="e", entry_kind="row")  # type: ignore[arg-type]


def test_each_kind_keeps_its_printed_form_and_attributes():
    config = Issue("stacks/Pulumi.dev.yaml", "hybridgpu:cloud.nodePools[1].weight", "too big", "use a value <= 100")
    assert str(config) == "stacks/Pulumi.dev.yaml: hybridgpu:cloud.nodePools[1].weight: too big\n    fix: use a value <= 100"
    assert (config.key, config.field, config.host, config.line, config.entry, config.code) == (
        "hybridgpu:cloud.nodePools[1].weight", "hybridgpu:cloud.nodePools[1].weight", None, None, None, "schema")

    data = Issue.in_entry("t.csv", "line 6", "burst", "spot needs checkpoints", "set `checkpoint_s`")
    assert str(data) == "t.csv: entry 'line 6': field 'burst': spot needs checkpoints\n    fix: set `checkpoint_s`"
    assert (data.entry, data.field, data.host, data.line) == ("line 6", "burst", None, None)

    host = Issue.on_host("inv.yaml", "gpu-01", "gpu.count", "wrong", "write a whole number without quotes", "schema")
    assert str(host) == "inv.yaml: host gpu-01: gpu.count: wrong\n    fix: write a whole number without quotes"
    assert (host.host, host.field, host.line) == ("gpu-01", "gpu.count", None)
    site = Issue.on_host("inv.yaml", None, "cluster.podSubnet", "overlaps", "pick another range")
    assert str(site).startswith("inv.yaml: cluster.podSubnet: overlaps") and site.host is None

    line = Issue.on_line("demand.csv", 3, "gpus", "'ten' is not a number", "write a plain number")
    assert str(line) == "demand.csv: line 3: field 'gpus': 'ten' is not a number\n    fix: write a plain number"
    assert (line.line, line.field, line.host) == (3, "gpus", None)
    whole = Issue.on_line("demand.csv", None, None, "has a header but no rows", "add rows")
    assert str(whole).startswith("demand.csv: has a header but no rows") and whole.line is None


def test_a_field_error_is_reported_at_its_field_with_its_fix():
    from pydantic import BaseModel, ValidationError, model_validator

    class Pair(BaseModel):
        low: int
        high: int

        @model_validator(mode="after")
        def _ordered(self) -> Pair:
            if self.low > self.high:
                raise FieldError("high", "is below low", "raise `high` to at least `low`")
            return self

    with pytest.raises(ValidationError) as info:
        Pair(low=3, high=1)
    [issue] = issues_from_validation(info.value, file="p.yaml", root=Pair, reference="the docs", entry="e", entry_kind="entry")
    assert (issue.entry, issue.field, issue.message, issue.fix) == ("e", "high", "is below low", "raise `high` to at least `low`")


# --------------------------------------------------------------------------- bad inputs through every loader


def _stack(project: Path, edit: Callable[[dict[str, Any]], None]) -> Callable[[], Any]:
    doc = example_stack("dev")
    edit(doc["config"])
    write_stack(project, "bad", doc)
    return lambda: load_stack_config("bad", project)


def _inventory(edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> Callable[[], Any]:
    site, host_list = copy.deepcopy(list(yaml.safe_load_all(INVENTORY.read_text())))
    edit(site, host_list)
    return lambda: inventory_from_documents([("site-a.yaml", [site, host_list])])


def _host(host_list: dict[str, Any], name: str) -> dict[str, Any]:
    return next(h for h in host_list["hosts"] if h["hostname"] == name)


def _plan(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Callable[[], Any]:
    data = example_plan()
    edit(data)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return lambda: read_plan_file(path, "plan.yaml")


def _data_copy(tmp_path: Path, package: str, names: tuple[str, ...]) -> Path:
    source = resources.files(package).joinpath("data")
    for name in names:
        (tmp_path / name).write_text(source.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


def _catalog(tmp_path: Path, file: str, key: str, name: str, edit: Callable[[dict[str, Any]], None]) -> Callable[[], Any]:
    directory = _data_copy(tmp_path, "hybridgpu.catalog", (GPU_MODELS_FILE, INSTANCE_TYPES_FILE))
    doc = yaml.safe_load((directory / file).read_text(encoding="utf-8"))
    edit(next(e for e in doc[key] if e["name"] == name))
    (directory / file).write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return lambda: load_catalog(directory)


def _mig(tmp_path: Path, model: str, edit: Callable[[dict[str, Any]], None]) -> Callable[[], Any]:
    path = _data_copy(tmp_path, "hybridgpu.mig", (MIG_PROFILES_FILE,)) / MIG_PROFILES_FILE
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(next(e for e in doc["migModels"] if e["name"] == model))
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return lambda: load_mig_models(path)


def _prices(tmp_path: Path, old: str, new: str) -> Callable[[], Any]:
    directory = _data_copy(tmp_path, "hybridgpu.economics", ("cloud_pricing.yaml", "onprem_costs.yaml", "egress.yaml"))
    path = directory / "cloud_pricing.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return lambda: load_economics_data(directory)


def _policy(settings: dict[str, Any]) -> Callable[[], Any]:
    return lambda: BY_NAME["nodepool-gpu-limit"].parse_settings(settings)


#: (id, how to build the failing call from tmp_path and a scratch project, error type,
#:  expected (file suffix, entry, key) of one issue, words of that issue's fix)
BAD_INPUTS: list[tuple[str, Callable[[Path, Path], Callable[[], Any]], type[Exception], tuple[str, str | None, str | None], str]] = [
    (
        "stack-unknown-nested-key",
        lambda tmp, project: _stack(project, lambda c: c["hybridgpu:cloud"]["nodePools"][0].update(gpuLimt=4)),
        StackConfigError,
        (STACK_FILE, None, "hybridgpu:cloud.nodePools[0].gpuLimt"),
        "did you mean `gpuLimit`?",
    ),
    (
        "stack-out-of-range",
        lambda tmp, project: _stack(project, lambda c: c["hybridgpu:cloud"]["nodePools"][0].update(weight=0)),
        StackConfigError,
        (STACK_FILE, None, "hybridgpu:cloud.nodePools[0].weight"),
        "use a value >= 1",
    ),
    (
        "stack-unknown-top-level-key",
        lambda tmp, project: _stack(project, lambda c: c.update({"hybridgpu:clodu": {"x": 1}})),
        StackConfigError,
        (STACK_FILE, None, "hybridgpu:clodu"),
        "did you mean `hybridgpu:cloud`?",
    ),
    (
        "inventory-unknown-host-key",
        lambda tmp, project: _inventory(lambda site, hosts: _host(hosts, "cp-03").update(rol=_host(hosts, "cp-03").pop("role"))),
        InventoryError,
        ("site-a.yaml", "cp-03", "rol"),
        "did you mean `role`?",
    ),
    (
        "inventory-quoted-number",
        lambda tmp, project: _inventory(lambda site, hosts: _host(hosts, "dgx-h100-01")["gpu"].update(count="8")),
        InventoryError,
        ("site-a.yaml", "dgx-h100-01", "gpu.count"),
        "write a whole number without quotes",
    ),
    (
        "inventory-bad-site-section",
        lambda tmp, project: _inventory(lambda site, hosts: site["cluster"].update(cni="flannel-ng")),
        InventoryError,
        ("site-a.yaml", None, "cluster.cni"),
        "use one of",
    ),
    (
        "burst-plan-unknown-key",
        lambda tmp, project: _plan(tmp, lambda d: d["cloud"]["spot"].update(gpuCelling=3)),
        BurstPlanError,
        ("plan.yaml", None, "cloud.spot.gpuCelling"),
        "did you mean `gpuCeiling`?",
    ),
    (
        "burst-plan-wrong-type",
        lambda tmp, project: _plan(tmp, lambda d: d["cloud"]["spot"].update(gpuCeiling="lots")),
        BurstPlanError,
        ("plan.yaml", None, "cloud.spot.gpuCeiling"),
        "whole number",
    ),
    (
        "burst-plan-missing-file",
        lambda tmp, project: (lambda: read_plan_file(tmp / "absent.yaml", "absent.yaml")),
        BurstPlanError,
        ("absent.yaml", None, None),
        "hybridgpu:burst.plan",
    ),
    (
        "trace-spot-without-checkpoints",
        lambda tmp, project: (lambda: parse_trace("submit_s,gpus,duration_s,checkpoint_s,burst\n0,2,60,,spot\n", "t.csv")),
        TraceError,
        ("t.csv", "line 2", "burst"),
        "`burst: on-demand`",
    ),
    (
        "trace-unreadable",
        lambda tmp, project: (lambda: load_trace(tmp / "absent.csv")),
        TraceError,
        ("absent.csv", None, None),
        "check the path",
    ),
    (
        "demand-not-a-number",
        lambda tmp, project: (lambda: parse_demand_csv("hour,gpus,checkpointable\n0,10,2\n1,ten,2\n", "demand.csv")),
        DemandFileError,
        ("demand.csv", "3", "gpus"),
        "plain number",
    ),
    (
        "demand-hour-gap",
        lambda tmp, project: (lambda: parse_demand_csv("hour,gpus,checkpointable\n0,10,2\n2,10,2\n", "demand.csv")),
        DemandFileError,
        ("demand.csv", "3", "hour"),
        "write 1",
    ),
    (
        "catalog-negative-vcpu",
        lambda tmp, project: _catalog(tmp, INSTANCE_TYPES_FILE, "instanceTypes", "g4dn.xlarge", lambda e: e.update(vcpu=-4)),
        CatalogError,
        (INSTANCE_TYPES_FILE, "g4dn.xlarge", "vcpu"),
        "use a value",
    ),
    (
        "catalog-snake-case-key",
        lambda tmp, project: _catalog(tmp, INSTANCE_TYPES_FILE, "instanceTypes", "g5.xlarge", lambda e: e.update(gpu_count=e.pop("gpuCount"))),
        CatalogError,
        (INSTANCE_TYPES_FILE, "g5.xlarge", "gpu_count"),
        "did you mean `gpuCount`?",
    ),
    (
        "catalog-family-mismatch",
        lambda tmp, project: _catalog(tmp, INSTANCE_TYPES_FILE, "instanceTypes", "g6e.xlarge", lambda e: e.update(family="g6")),
        CatalogError,
        (INSTANCE_TYPES_FILE, "g6e.xlarge", "family"),
        "set `family: g6e`",
    ),
    (
        "mig-profile-past-last-slice",
        lambda tmp, project: _mig(tmp, "H100-80GB", lambda e: next(p for p in e["profiles"] if p["name"] == "3g.40gb").update(starts=[0, 4, 6])),
        MigDataError,
        (MIG_PROFILES_FILE, "H100-80GB", "profiles[3g.40gb].starts"),
        "correct the value",
    ),
    (
        "mig-unknown-profile-key",
        lambda tmp, project: _mig(tmp, "A100-40GB", lambda e: next(p for p in e["profiles"] if p["name"] == "2g.10gb").update(sizee=2)),
        MigDataError,
        (MIG_PROFILES_FILE, "A100-40GB", "profiles[2g.10gb].sizee"),
        "remove the key or use one of",
    ),
    (
        "prices-data-out-of-range",
        lambda tmp, project: _prices(tmp, "spotPriceFraction: 0.55", "spotPriceFraction: 1.7"),
        EconomicsDataError,
        ("cloud_pricing.yaml", "p5", "spotPriceFraction"),
        "use a value <=",
    ),
    (
        "prices-override",
        lambda tmp, project: (lambda: load_economics_data().with_overrides(onprem={"H100-80GB": {"pue": 0.5}}, label=STACK_FILE)),
        EconomicsDataError,
        (STACK_FILE, "H100-80GB", "pue"),
        "use a value >=",
    ),
    (
        "prices-override-unknown-family",
        lambda tmp, project: (lambda: load_economics_data().with_overrides(cloud={"p9": {"spotPriceFraction": 0.5}}, label=STACK_FILE)),
        EconomicsDataError,
        (STACK_FILE, "p9", "family"),
        "known families",
    ),
    (
        "policy-unknown-setting",
        lambda tmp, project: _policy({"maxGpuPerNodePool": 8}),
        PolicyConfigError,
        ("policy nodepool-gpu-limit", None, "maxGpuPerNodePool"),
        "did you mean `maxGpusPerNodePool`?",
    ),
]


@pytest.mark.parametrize("build,error_type,where,fix_words", [case[1:] for case in BAD_INPUTS], ids=[case[0] for case in BAD_INPUTS])
def test_bad_input_fails_with_issues_naming_file_key_and_fix(tmp_path, project, build, error_type, where, fix_words):
    call = build(tmp_path, project)
    with pytest.raises(error_type) as info:
        call()
    issues = info.value.issues
    assert issues and all(isinstance(i, Issue) for i in issues), issues
    assert all(i.file and i.message and i.fix.strip() for i in issues), issues
    file, entry, key = where
    matching = [i for i in issues if i.file.endswith(file) and i.entry == entry and i.key == key]
    assert matching, f"no issue at {where} in:\n{info.value}"
    assert any(fix_words in i.fix for i in matching), [i.fix for i in matching]
    text = str(info.value)
    assert all(i.message in text and i.fix in text for i in matching)


def test_every_error_class_holds_issues():
    for error_type in (StackConfigError, InventoryError, DemandFileError, DataFileError, BurstPlanError, TraceError, CatalogError, MigDataError, EconomicsDataError):
        issue = Issue("f", "k", "is wrong", "make it right")
        error = error_type([issue])
        assert error.issues == [issue] and "make it right" in str(error)


def test_every_error_class_is_one_issues_error():
    """The issue-carrying errors share :class:`IssuesError`: none can be built without an issue,
    and only the data-file errors spell out every issue (the others stop at ``MAX_SHOWN_ISSUES``)."""
    issues = [Issue("f", f"k{n}", "is wrong", "make it right") for n in range(MAX_SHOWN_ISSUES + 1)]
    for error_type in (StackConfigError, InventoryError, KubesprayExportError, DemandFileError, DataFileError, CatalogError):
        assert issubclass(error_type, IssuesError)
        with pytest.raises(ValueError, match=f"{error_type.__name__} needs at least one issue"):
            error_type([])
        shown = str(error_type(issues)).count("fix: make it right")
        assert shown == (len(issues) if error_type in (DemandFileError, DataFileError, CatalogError) else MAX_SHOWN_ISSUES)


# --------------------------------------------------------------------------- good inputs pass


def test_good_inputs_pass(tmp_path, project):
    write_stack(project, "good", example_stack("dev"))
    config, _ = load_stack_config("good", project)
    assert config.stack == "good"
    assert inventory_from_documents([("site-a.yaml", list(yaml.safe_load_all(INVENTORY.read_text())))]).site.name
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(example_plan()))
    assert isinstance(read_plan_file(path, "plan.yaml"), BurstPlanFile)
    assert read_plan_file(ROOT / PLAN, PLAN).onprem.stack
    assert load_trace(ROOT / "examples" / "traces" / "small.csv")
    assert parse_demand_csv("hour,gpus,checkpointable\n0,10,2\n1,12,3\n", "demand.csv").hours == 2
    for name in ("catalog", "mig", "prices"):
        (tmp_path / name).mkdir()
    catalog_dir = _data_copy(tmp_path / "catalog", "hybridgpu.catalog", (GPU_MODELS_FILE, INSTANCE_TYPES_FILE))
    assert load_catalog(catalog_dir).instance_types == load_catalog().instance_types
    mig_file = _data_copy(tmp_path / "mig", "hybridgpu.mig", (MIG_PROFILES_FILE,)) / MIG_PROFILES_FILE
    assert load_mig_models(mig_file) == load_mig_models()
    prices_dir = _data_copy(tmp_path / "prices", "hybridgpu.economics", ("cloud_pricing.yaml", "onprem_costs.yaml", "egress.yaml"))
    assert load_economics_data(prices_dir).cloud == load_economics_data().cloud
    assert load_economics_data().with_overrides(onprem={"H100-80GB": {"pue": 1.3}}, label=STACK_FILE).onprem["H100-80GB"].pue == 1.3
    assert BY_NAME["nodepool-gpu-limit"].parse_settings({"maxGpusPerNodePool": 16})


# --------------------------------------------------------------------------- one fix hint for an unknown key


def test_unknown_key_gets_the_same_fix_hint_in_a_stack_file_and_an_inventory(project):
    with pytest.raises(StackConfigError) as stack_error:
        _stack(project, lambda c: c["hybridgpu:cloud"]["nodePools"][0].update(gpuLimt=4))()
    with pytest.raises(InventoryError) as inventory_error:
        _inventory(lambda site, hosts: _host(hosts, "cp-03").update(rol=_host(hosts, "cp-03").pop("role")))()
    stack_issue = next(i for i in stack_error.value.issues if i.key == "hybridgpu:cloud.nodePools[0].gpuLimt")
    inventory_issue = next(i for i in inventory_error.value.issues if (i.host, i.field) == ("cp-03", "rol"))

    # Both come from the one hint: the close match, then every key allowed where the unknown one is.
    assert stack_issue.fix == unknown_key_fix("gpuLimt", allowed_keys(NodePoolConfig))
    assert inventory_issue.fix == unknown_key_fix("rol", allowed_keys(Host))
    prefix = "did you mean `{}`? remove the key or use one of: "
    assert stack_issue.fix.startswith(prefix.format("gpuLimit")) and "weight" in stack_issue.fix
    assert inventory_issue.fix.startswith(prefix.format("role")) and "hostname" in inventory_issue.fix
    # ... and the same message.
    assert stack_issue.message == "unknown key; did you mean `gpuLimit`?"
    assert inventory_issue.message == "unknown key; did you mean `role`?"


def test_the_fix_hint_is_one_function_of_the_error():
    error = {"type": "extra_forbidden", "loc": ("nodePools", 0, "gpuLimt"), "msg": "Extra inputs are not permitted", "input": 4}

    class Root(Model):
        node_pools: list[NodePoolConfig] = []

    assert fix_for(error, Root) == unknown_key_fix("gpuLimt", allowed_keys(NodePoolConfig))
    assert fix_for({"type": "missing", "loc": ("a", "name"), "msg": "Field required"}, None, reference="the sample x.yaml") == (
        "add `name` (the sample x.yaml documents every field)"
    )
    assert fix_for({"type": "greater_than_equal", "loc": ("weight",), "msg": "", "ctx": {"ge": 1}}, None) == "use a value >= 1"
    assert fix_for({"type": "literal_error", "loc": ("cni",), "msg": "", "ctx": {"expected": "'cilium'"}}, None) == "use one of 'cilium'"
    assert fix_for({"type": "string_pattern_mismatch", "loc": ("hostname",), "msg": "", "ctx": {"pattern": "^x$"}}, None) == "match the pattern ^x$"
    assert fix_for({"type": "string_pattern_mismatch", "loc": ("hostname",), "msg": "", "ctx": {"pattern": "^x$"}}, None,
                   pattern_fixes={"hostname": "a host name"}) == "write a host name"
    for kind in ("value_error", "some_future_kind"):
        assert fix_for({"type": kind, "loc": ("x",), "msg": "bad"}, None).strip()
