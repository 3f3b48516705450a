"""The showback core (hybridgpu.economics.showback): a hand-computed case to the cent, the MIG rule, attribution, and idle sharing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridgpu.economics.showback import UNATTRIBUTED, ShowbackPrices, compute_showback
from hybridgpu.economics.usage import UsageError, UsageRecord, gpu_fraction, load_usage, parse_usage
from hybridgpu.teams.models import read_teams_file
from tests.helpers import examples

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "showback"
PRICES = ShowbackPrices.parse("owned=3.00,spot=2.40,on-demand=6.88")


def test_hand_computed_two_teams_three_days_to_the_cent():
    """tests/fixtures/showback/pass/hand.csv, priced owned 3.00, spot 2.40, on-demand 6.88 USD/GPU-hour; fleet 1 owned GPU over 72 h.

    MIG rule: an instance counts as its compute slices / the GPU's (H100-80GB has 7): 1g.10gb = 1/7, 3g.40gb = 3/7.

    Usage (GPU-hours = devices x hours x fraction):
      day 1  vision train-a  owned      1 GPU x 10 h            = 10     -> 30.00  (utilization 0.5: 5 GPU-h idle, 15.00)
      day 1  nlp    chat-mig owned      2 x 1g.10gb x 14 h x 1/7 = 4      -> 12.00
      day 2  vision train-b  spot       8 GPUs x 3 h            = 24     -> 57.60
      day 2  nlp    eval-3g  owned      1 x 3g.40gb x 7 h x 3/7  = 3      ->  9.00  (utilization 0.2: 2.4 GPU-h idle, 7.20)
      day 3  nlp    batch    on-demand  1 GPU x 2.5 h           = 2.5    -> 17.20
      day 3  vision train-c  owned      1 GPU x 8 h             = 8      -> 24.00
    Idle capacity:
      owned: 1 GPU x 72 h - (10 + 4 + 3 + 8) = 47 GPU-h x 3.00 = 141.00, split by owned GPU-hours
             vision 18/25 x 141 = 101.52, nlp 7/25 x 141 = 39.48
      spot:  idle row 8 GPUs x 1 h = 8 GPU-h x 2.40 = 19.20, all vision's (the only spot user)
    Totals:
      vision: owned 54.00 + spot 57.60 + idle 101.52 + 19.20 = 232.32
      nlp:    owned 21.00 + on-demand 17.20 + idle 39.48     =  77.68
      all:    310.00 = 72 x 3.00 + (24 + 8) x 2.40 + 2.5 x 6.88 (every owned hour, every spot hour held, every on-demand hour)
    """
    teams = read_teams_file(FIXTURES / "teams.yaml", "teams.yaml")
    show = compute_showback(load_usage(FIXTURES / "pass" / "hand.csv"), PRICES, teams=teams, onprem_gpus=1, window_hours=72)
    out = show.to_dict()
    rows = {r["team"]: r for r in out["rows"]}
    assert rows["vision"]["project"] == "detector" and rows["nlp"]["project"] == "chat"  # nlp's project from its costLabels
    assert rows["vision"]["gpuHours"] == {"owned": 18.0, "spot": 24.0}
    assert rows["vision"]["gpuHoursBySide"] == {"on-prem": 18.0, "cloud": 24.0}
    assert rows["nlp"]["gpuHours"] == {"owned": 7.0, "on-demand": 2.5}
    assert rows["vision"]["costUsd"] == {"owned": 54.00, "spot": 57.60}
    assert rows["nlp"]["costUsd"] == {"owned": 21.00, "on-demand": 17.20}
    assert rows["vision"]["idleShareUsd"] == 120.72 and rows["nlp"]["idleShareUsd"] == 39.48
    assert rows["vision"]["totalUsd"] == 232.32 and rows["nlp"]["totalUsd"] == 77.68
    assert out["idle"] == {"owned": {"gpuHours": 47.0, "usd": 141.00}, "spot": {"gpuHours": 8.0, "usd": 19.20}}
    assert out["totalUsd"] == 310.00
    assert [(a["name"], a["idleGpuHours"], a["idleUsd"]) for a in out["topIdleAllocations"]] == [("vision/train-a", 5.0, 15.00), ("nlp/eval-3g", 2.4, 7.20)]
    assert out["days"] == ["2026-11-01", "2026-11-02", "2026-11-03"]


@pytest.mark.parametrize(("model", "profile", "fraction"), [
    ("H100-80GB", "1g.10gb", Decimal(1) / 7), ("H100-80GB", "3g.40gb", Decimal(3) / 7), ("H100-80GB", "7g.80gb", Decimal(1)),
    ("H100-80GB", "1g.20gb", Decimal(1) / 7),  # memory is not counted: same compute as 1g.10gb
    ("A100-80GB", "nvidia.com/mig-2g.20gb", Decimal(2) / 7), ("A30-24GB", "1g.6gb", Decimal(1) / 4), ("A30-24GB", "2g.12gb", Decimal(2) / 4),
    ("H100-80GB", "mig-1g.10gb.me", Decimal(1) / 7), (None, "", Decimal(1)),
])
def test_mig_fraction_is_compute_slices_over_the_gpus(model, profile, fraction):
    assert gpu_fraction(model, profile) == fraction


def test_mig_profile_needs_a_known_model_and_profile():
    with pytest.raises(ValueError, match="needs its GPU model"):
        gpu_fraction(None, "1g.10gb")
    with pytest.raises(KeyError):
        gpu_fraction("L4", "1g.10gb")
    with pytest.raises(KeyError):
        gpu_fraction("H100-80GB", "2g.40gb")


def test_without_a_teams_file_the_team_label_attributes_and_unlabelled_usage_is_unattributed():
    text = "namespace,labels,capacity_type,gpus,hours\na,team=red;project=p1,owned,1,1\nb,,owned,1,1\nc,hybridgpu_io_x=1,owned,1,1\n"
    out = compute_showback(parse_usage(text, "u.csv"), PRICES).to_dict()
    assert [(r["team"], r["project"]) for r in out["rows"]] == [("red", "p1"), (UNATTRIBUTED, "(none)")]
    assert out["rows"][1]["gpuHours"] == {"owned": 2.0}


def test_with_a_teams_file_an_unknown_team_label_is_unattributed():
    """A team label naming no team of the file is not trusted: the row is (unattributed), so it shows up."""
    teams = read_teams_file(FIXTURES / "teams.yaml", "teams.yaml")
    out = compute_showback(parse_usage("namespace,labels,capacity_type,gpus,hours\nx,team=ghost,owned,1,1\n", "u.csv"), PRICES, teams=teams).to_dict()
    assert [r["team"] for r in out["rows"]] == [UNATTRIBUTED]


def test_opencost_label_spelling_matches_cost_labels():
    """OpenCost writes label keys Prometheus-style (`cost-center` -> `cost_center`); the teams file's cost labels still match."""
    teams = read_teams_file(FIXTURES / "teams.yaml", "teams.yaml")
    rec = UsageRecord("allocation", "x/p", "x", {"team": "nlp", "project": "chat", "cost_center": "cc-2"}, "owned", Decimal(1))
    assert compute_showback([rec], PRICES, teams=teams).rows[0].team == "nlp"


def test_idle_of_a_type_nobody_used_stays_unattributed():
    recs = [UsageRecord("allocation", "a/p", "a", {"team": "red"}, "owned", Decimal(2)), UsageRecord("idle", "spot idle", "", {}, "spot", Decimal(5))]
    out = compute_showback(recs, PRICES).to_dict()
    rows = {r["team"]: r for r in out["rows"]}
    assert rows[UNATTRIBUTED]["idleShareUsd"] == 12.00 and rows["red"]["idleShareUsd"] == 0
    assert out["totalUsd"] == 18.00


def test_every_bad_row_is_reported_not_only_the_first():
    text = "namespace,capacity_type,gpus,hours\na,owned,-1,1\nb,cloud,1,1\nc,owned,1,x\n"
    with pytest.raises(UsageError) as info:
        parse_usage(text, "u.csv")
    assert [(i.line, i.field) for i in info.value.issues] == [(2, "gpus"), (3, "capacity_type"), (4, "hours")]


def test_price_option_rejects_nonsense():
    for bad in ("owned", "gpu=3", "owned=-1", "owned=abc", "owned=nan", ""):
        with pytest.raises(ValueError, match="--price"):
            ShowbackPrices.parse(bad)


kinds = st.sampled_from(["owned", "spot", "on-demand", "reserved"])
records = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), kinds, st.integers(0, 10_000)), min_size=1, max_size=40)
idles = st.lists(st.tuples(kinds, st.integers(0, 10_000)), max_size=4)


@settings(max_examples=examples(200), deadline=None)
@given(records, idles)
def test_idle_cost_is_shared_exactly_and_nothing_is_lost(usage, idle):
    """Sum over rows of (usage + idle share) equals every GPU-hour used or idle times its price (before rounding)."""
    prices = ShowbackPrices.parse("owned=3.00,spot=2.40,on-demand=6.88,reserved=4.10")
    recs = [UsageRecord("allocation", f"{ns}/p", ns, {"team": ns}, k, Decimal(h) / 100) for ns, k, h in usage]
    recs += [UsageRecord("idle", "idle", "", {}, k, Decimal(h) / 100) for k, h in idle]
    show = compute_showback(recs, prices)
    expected = sum((r.gpu_hours * prices.usd_per_gpu_hour[r.capacity_type] for r in recs), Decimal(0))
    got = sum((row.total_usd for row in show.rows), Decimal(0))
    assert abs(got - expected) < Decimal("1e-20")
    for kind, usd in show.idle_usd.items():
        assert abs(sum((row.idle_usd.get(kind, Decimal(0)) for row in show.rows), Decimal(0)) - usd) < Decimal("1e-20")


def test_team_label_naming_a_team_of_the_file_attributes_outside_its_namespaces():
    """A pod in a shared namespace labelled team=vision (no other cost labels) is vision's; the file names the team."""
    teams = read_teams_file(FIXTURES / "teams.yaml", "teams.yaml")
    text = "namespace,labels,capacity_type,gpus,hours\nshared,team=vision,owned,1,2\n"
    out = compute_showback(parse_usage(text, "u.csv"), PRICES, teams=teams).to_dict()
    assert [(r["team"], r["project"]) for r in out["rows"]] == [("vision", "detector")]


def test_opencost_idle_cost_without_gpu_hours_becomes_gpu_hours_at_the_price():
    """OpenCost's __idle__ allocation carries gpuCost only (pkg/costmodel/costmodel.go computeIdleAllocations): 144 USD at 3.00 = 48 GPU-h."""
    rec = UsageRecord("idle", "c/n/__idle__", "", {}, "owned", Decimal(0), idle_usd=Decimal(144))
    use = UsageRecord("allocation", "a/p", "a", {"team": "red"}, "owned", Decimal(10))
    out = compute_showback([use, rec], PRICES).to_dict()
    assert out["idle"] == {"owned": {"gpuHours": 48.0, "usd": 144.0}} and out["totalUsd"] == 174.0
