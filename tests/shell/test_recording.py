"""The preview's recording of registrations (hybridgpu.shell.preview): the in-place normalization of a
registration's inputs gives what the copying one gives, and the byte scan for secrets finds every
secret the struct walk finds (Pulumi's wire format: pulumi/runtime/rpc.py ``serialize_property``,
secrets as ``{4dabf1...: 1b4706..., value: ...}``)."""

from __future__ import annotations

import copy

from google.protobuf import struct_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridgpu.shell.preview import _SECRET_SIG, _SIG_KEY, _has_secret, _normalize_numbers, _plain, _secret_paths
from tests.helpers import examples

# What deserialized inputs hold: JSON values, every number a float (protobuf Struct carries doubles).
_leaf = st.one_of(st.none(), st.booleans(), st.text(max_size=8), st.floats(allow_nan=False, allow_infinity=False), st.integers(-10, 10).map(float))
_json = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=25)


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.text(max_size=6), _json, max_size=5))
def test_in_place_normalization_equals_the_copy(inputs):
    expected = _plain(copy.deepcopy(inputs))
    assert _normalize_numbers(inputs) == expected
    # Integral floats really became ints (the written manifests say `replicas: 2`, not `2.0`).
    assert repr(_normalize_numbers(copy.deepcopy(inputs))) == repr(expected)


def test_in_place_normalization_keeps_the_containers():
    nested = {"ports": [443.0, 8443.5], "spec": {"replicas": 2.0}}
    out = _normalize_numbers(nested)
    assert out is nested and out["spec"] is nested["spec"]
    assert out == {"ports": [443, 8443.5], "spec": {"replicas": 2}}


def _struct(value: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(value)
    return s


def _secret(value):
    return {_SIG_KEY: _SECRET_SIG, "value": value}


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), _json, max_size=4), st.data())
def test_byte_scan_finds_every_secret_the_walk_finds(inputs, data):
    plain = _struct(inputs)
    assert _has_secret(plain) == bool(_secret_paths(plain))
    if inputs:
        key = data.draw(st.sampled_from(sorted(inputs)))
        marked = _struct({**inputs, key: _secret(inputs[key])})
        assert _has_secret(marked) and _secret_paths(marked) == [key]


def test_nested_secret_is_found_and_placed():
    wire = _struct({"spec": {"token": _secret("t0ken"), "name": "x"}, "n": 1.0})
    assert _has_secret(wire)
    assert _secret_paths(wire) == ["spec.token"]
    assert not _has_secret(_struct({"spec": {"token": "visible"}}))
