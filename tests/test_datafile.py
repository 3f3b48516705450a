"""hybridgpu.datafile's YAML readers: the same values as ``yaml.safe_load``, with the collector paused
while parsing and left as it was found."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridgpu.datafile import ORDERED, TEMPLATE, dump_yaml, dump_yaml_all, gc_paused, load_unique_yaml, load_unique_yaml_all, load_yaml, load_yaml_all
from tests.helpers import examples

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", sorted([*(ROOT / "stacks").rglob("*.yaml"), *(ROOT / "docs" / "examples").rglob("*.yaml")]), ids=lambda p: str(p.relative_to(ROOT)))
def test_same_values_as_safe_load(path: Path):
    text = path.read_text(encoding="utf-8")
    assert load_yaml_all(text) == list(yaml.safe_load_all(text))
    if len(load_yaml_all(text)) == 1:
        assert load_yaml(text) == yaml.safe_load(text)


def test_yaml_1_1_scalars_resolve_as_safe_load_does():
    text = "a: yes\nb: on\nc: 0o17\nd: 017\ne: 1_000\nf: 2026-11-24\ng: ~\nh: .inf\ni: '012'\n"
    assert load_yaml(text) == yaml.safe_load(text)


def test_collector_is_restored_after_parsing_and_after_errors():
    assert gc.isenabled()
    load_yaml("a: 1")
    assert gc.isenabled()
    with pytest.raises(yaml.YAMLError):
        load_unique_yaml("a: 1\na: 2\n")
    assert gc.isenabled()
    gc.disable()
    try:
        load_yaml("a: 1")
        assert not gc.isenabled()  # found disabled, left disabled
    finally:
        gc.enable()


def test_nested_pauses_leave_the_collector_on():
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


# --------------------------------------------------------------------------- merge keys (<<) and duplicate keys
# The merge key type of YAML 1.1 (https://yaml.org/type/merge.html): ``<<: *a`` or ``<<: [*a, *b]`` inserts the
# keys of the aliased mappings that the mapping does not set itself, the first mapping of a list winning.
# yaml.safe_load implements it (SafeConstructor.flatten_mapping); load_unique_yaml must give the same values.

MERGES = {
    "one-alias": "base: &b {cpu: 1, gpu: 8}\njob:\n  <<: *b\n  gpu: 4\n",
    "list-of-aliases": "a: &a {x: 1, y: 2}\nb: &b {x: 9, z: 3}\nc:\n  <<: [*a, *b]\n  w: 0\n",
    "merge-last": "d: &d {k: v}\ne:\n  own: 1\n  <<: *d\n",
    "nested": "defaults: &defaults\n  labels: &labels {team: ml, project: p}\n  gpus: 8\njobs:\n- <<: *defaults\n  name: a\n- <<: *defaults\n  labels: {<<: *labels, team: infra}\n",
    "two-merge-keys": "a: &a {x: 1}\nb: &b {y: 2}\nc:\n  <<: *a\n  <<: *b\n",
}


@pytest.mark.parametrize("text", MERGES.values(), ids=MERGES.keys())
def test_merge_keys_give_safe_load_values(text: str):
    assert load_unique_yaml(text) == yaml.safe_load(text)
    assert load_unique_yaml_all(text + "---\n" + text) == [yaml.safe_load(text)] * 2


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: 1\nb: 2\na: 3\n", 3),
        ("base: &b {x: 1}\njob:\n  <<: *b\n  y: 1\n  y: 2\n", 5),
        ("base: &b {x: 1, x: 2}\njob: {<<: *b}\n", 1),
    ],
    ids=["top-level", "beside-a-merge", "inside-the-merged-mapping"],
)
def test_duplicate_keys_are_refused_with_their_line(text: str, line: int):
    with pytest.raises(yaml.YAMLError, match="found duplicate key") as info:
        load_unique_yaml(text)
    assert info.value.problem_mark.line + 1 == line  # type: ignore[attr-defined]


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text("abcxyz -:", max_size=6))
_keys = st.text("abcdefgh", min_size=1, max_size=3)
_mappings = st.dictionaries(_keys, _scalars, max_size=5)


@settings(max_examples=examples(200), deadline=None)
@given(bases=st.lists(_mappings, min_size=1, max_size=3), own=_mappings, plain=st.recursive(_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(_keys, c, max_size=3), max_leaves=12))
def test_documents_without_duplicate_keys_read_as_safe_load_does(bases, own, plain):
    # Arbitrary nested data as yaml.safe_dump writes it, then mappings merged from anchors (one alias or a list).
    text = yaml.safe_dump({"plain": plain})
    anchors = "".join(f"base{i}: &b{i} {json.dumps(b)}\n" for i, b in enumerate(bases))
    aliases = "*b0" if len(bases) == 1 else "[" + ", ".join(f"*b{i}" for i in range(len(bases))) + "]"
    merged = anchors + "merged:\n  <<: " + aliases + "\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in own.items())
    for doc in (text, merged):
        assert load_unique_yaml(doc) == yaml.safe_load(doc)


# --------------------------------------------------------------------------- writing YAML: the one writer, byte for byte the calls it replaced


@settings(max_examples=examples(100), deadline=None)
@given(doc=st.recursive(_scalars | st.text(max_size=150), lambda c: st.lists(c, max_size=3) | st.dictionaries(_keys, c, max_size=4), max_leaves=15))
def test_yaml_styles_write_what_pyyaml_wrote(doc):
    assert dump_yaml(doc) == yaml.safe_dump(doc, sort_keys=True, default_flow_style=False, width=120)
    assert dump_yaml(doc, ORDERED) == yaml.safe_dump(doc, sort_keys=False)
    assert dump_yaml_all([doc, doc]) == yaml.safe_dump_all([doc, doc], sort_keys=True, default_flow_style=False, width=120, explicit_start=True)
    assert dump_yaml_all([doc], ORDERED, explicit_start=False) == yaml.safe_dump_all([doc], sort_keys=False)
    assert load_yaml(dump_yaml(doc, TEMPLATE)) == doc


def test_template_style_quotes_placeholders_and_writes_no_aliases():
    shared = {"token": "${BOOTSTRAP_TOKEN}", "port": "6443"}
    text = dump_yaml_all([{"a": shared, "b": shared}], TEMPLATE)
    assert text == '---\na:\n  token: "${BOOTSTRAP_TOKEN}"\n  port: \'6443\'\nb:\n  token: "${BOOTSTRAP_TOKEN}"\n  port: \'6443\'\n'
