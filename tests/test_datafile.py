"""hybridgpu.datafile's YAML readers: the same values as ``yaml.safe_load``, with the collector paused
while parsing and left as it was found."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import yaml

from hybridgpu.datafile import gc_paused, load_unique_yaml, load_yaml, load_yaml_all

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
