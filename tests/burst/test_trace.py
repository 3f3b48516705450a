"""Demand traces: the CSV loader's errors (file, line, column) and the reproducible generator."""

from __future__ import annotations

import pytest

from hybridgpu.burst.trace import Job, TraceError, generate_trace, load_trace, parse_trace, write_trace
from tests.helpers import ROOT


def test_small_sample_loads():
    jobs = load_trace(ROOT / "examples" / "traces" / "small.csv")
    assert jobs == [
        Job(0.0, 4, 3600.0, None, "on-demand"),
        Job(0.0, 2, 3600.0, 1800.0, "spot"),
        Job(600.0, 2, 1800.0, None, "none"),
    ]


def test_month_sample_loads_sorted():
    jobs = load_trace(ROOT / "examples" / "traces" / "site-a-month.csv")
    assert len(jobs) == 941
    assert [j.submit_s for j in jobs] == sorted(j.submit_s for j in jobs)
    assert {j.burst for j in jobs} == {"spot", "on-demand", "none"}
    assert all(j.checkpoint_s is not None for j in jobs if j.burst == "spot")


def test_defaults_and_sorting():
    jobs = parse_trace("submit_s,gpus,duration_s,checkpoint_s\n50,1,10,none\n10,2,20,5\n", "t.csv")
    assert jobs == [Job(10.0, 2, 20.0, 5.0, "spot"), Job(50.0, 1, 10.0, None, "on-demand")]


def test_every_bad_cell_is_reported_with_line_and_column():
    text = "# comment\nsubmit_s,gpus,duration_s,checkpoint_s,burst\n0,1.5,60,,\n-1,2,0,,\n5,2,60,0,\n6,2,60,,spot\n7,2,60,,cloud\n8,2\n"
    with pytest.raises(TraceError) as err:
        parse_trace(text, "t.csv")
    found = {(i.entry, i.field) for i in err.value.issues}
    assert found == {
        ("line 3", "gpus"),
        ("line 4", "submit_s"),
        ("line 4", "duration_s"),
        ("line 5", "checkpoint_s"),
        ("line 6", "burst"),
        ("line 7", "burst"),
        ("line 8", None),
    }
    assert all(i.file == "t.csv" for i in err.value.issues)
    assert "t.csv: entry 'line 6': field 'burst': spot needs checkpoints" in str(err.value)


@pytest.mark.parametrize(
    "text,words",
    [
        ("", "no header row"),
        ("gpus,duration_s\n1,2\n", "required column(s) missing"),
        ("submit_s,gpus,duration_s,priority\n0,1,1,a\n", "unknown column(s)"),
    ],
)
def test_header_errors(text, words):
    with pytest.raises(TraceError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_trace(text, "t.csv")


def test_unreadable_file(tmp_path):
    with pytest.raises(TraceError, match="cannot read the trace"):
        load_trace(tmp_path / "nope.csv")


def test_generator_is_reproducible_and_round_trips(tmp_path):
    a = generate_trace(jobs=500, days=7, seed=3)
    assert a == generate_trace(jobs=500, days=7, seed=3)
    assert a != generate_trace(jobs=500, days=7, seed=4)
    assert 400 < len(a) < 600
    assert all(0 <= j.submit_s < 7 * 86400 and j.gpus >= 1 and j.duration_s >= 60 for j in a)
    # Weekday working hours carry about three times the rate of nights.
    day = sum(1 for j in a if 9 <= (j.submit_s % 86400) / 3600 < 18 and (j.submit_s // 86400) % 7 < 5)
    night = sum(1 for j in a if not 9 <= (j.submit_s % 86400) / 3600 < 18 and (j.submit_s // 86400) % 7 < 5)
    assert day / 9 > 2 * night / 15
    path = tmp_path / "t.csv"
    write_trace(a, path)
    assert load_trace(path) == a
