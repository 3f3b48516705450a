"""The Kubernetes grammar of hybridgpu.k8s: quantities, device counts, DNS-1123 names, taints and tolerations.

Upstream sources, each test says which it follows:

* quantities: the Kubernetes Python client's ``kubernetes.utils.quantity.parse_quantity`` (kubernetes 36.0.3,
  installed here) computes the value; the grammar is apimachinery's ``pkg/api/resource/quantity.go``, as the
  pattern controller-gen writes into CRDs (Kueue v0.19.2 ``kueue.x-k8s.io_clusterqueues.yaml``);
* whole devices: kubernetes/kubernetes ``pkg/apis/core/validation/validation.go`` ``ValidateResourceQuantityValue``
  (an integer resource such as ``nvidia.com/gpu`` must be an integer: ``isNotIntegerErrorMsg``);
* names: apimachinery ``pkg/util/validation/validation_test.go`` ``TestIsDNS1123Label`` and
  ``TestIsDNS1123Subdomain`` (their good and bad cases);
* tolerations: kubernetes/api ``core/v1/toleration.go`` ``Toleration.ToleratesTaint`` (master at 10b39a39,
  2026-07-24, read 2026-11-26), which :func:`hybridgpu.render.scheduling.tolerates` transcribes.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity as client_parse_quantity

from hybridgpu import k8s
from hybridgpu.k8s import (
    QuantityError,
    device_count,
    is_dns1123_label,
    is_dns1123_subdomain,
    parse_quantity,
    quantity,
    taint_object,
    toleration_for,
)
from hybridgpu.render.scheduling import tolerates
from tests.helpers import examples

# --------------------------------------------------------------------------- quantities

_digits = st.text("0123456789", min_size=1, max_size=4)
_number = st.one_of(_digits, st.builds(lambda a, b: f"{a}.{b}", _digits, st.text("0123456789", max_size=3)), _digits.map(lambda d: "." + d))
_suffix = st.one_of(
    st.sampled_from(["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"]),
    st.builds(lambda e, s, n: f"{e}{s}{n}", st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), st.text("0123456789", min_size=1, max_size=2)),
)


@settings(max_examples=examples(300), deadline=None)
@given(sign=st.sampled_from(["", "+", "-"]), number=_number, suffix=_suffix)
def test_every_string_of_the_grammar_has_the_clients_value(sign, number, suffix):
    text = f"{sign}{number}{suffix}"
    assert re.match(k8s.QUANTITY_PATTERN, text)
    assert quantity(text) == client_parse_quantity(text)
    assert parse_quantity(text) == float(client_parse_quantity(text))


@pytest.mark.parametrize(("value", "expected"), [(8, 8), (8.0, 8), ("8", 8), ("8e0", 8), ("8E0", 8), ("1k", 1000), ("500m", Decimal("0.5")), ("1Ki", 1024), ("2e3", 2000), ("12E", 12 * 10**18), ("+8", 8)])
def test_numbers_and_strings_alike(value, expected):
    assert quantity(value) == expected


@pytest.mark.parametrize("value", ["", " 8", "8 ", "8 GPUs", "one", "1e", "e3", "1.5.5", "Gi", "1ki", "Infinity", "NaN", "1_000", "0x10", True, None, float("nan"), float("inf"), [8], {"n": 8}])
def test_what_the_grammar_refuses(value):
    # The client alone accepts some of these ("Infinity", "1_000": Python's Decimal); the grammar does not.
    with pytest.raises(QuantityError, match="is not a Kubernetes quantity"):
        quantity(value)
    assert parse_quantity(value) is None


def test_loaded_without_importing_the_kubernetes_package_yet_the_clients_function():
    # When the package is imported (this test module imports it), its own module is used; either way the same code.
    assert k8s._client_parse_quantity()("64Gi") == client_parse_quantity("64Gi")


@pytest.mark.parametrize("value", [8, 8.0, "8", "8e0", "8.0", "0.008k", "8000m"])
def test_device_counts_read_any_spelling_of_a_whole_number(value):
    assert device_count(value) == 8


@pytest.mark.parametrize("value", ["0.5", "500m", 0.5, -1, "-8", "8 GPUs", "1e", None, True])
def test_device_counts_refuse_fractions_negatives_and_non_quantities_with_one_message(value):
    with pytest.raises(QuantityError) as info:
        device_count(value, k8s.GPU_RESOURCE)
    assert info.value.problem == f"nvidia.com/gpu {value!r} is not a whole number of devices (Kubernetes counts extended resources in whole units)"
    assert "8e0" in info.value.fix


# --------------------------------------------------------------------------- DNS-1123 names (apimachinery validation_test.go cases)

GOOD_LABELS = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2", "a" * 63]
BAD_LABELS = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", "a" * 64]
GOOD_SUBDOMAINS = [*GOOD_LABELS[:-1], "a.a", "ab.a", "a--1--2--b.a", "a.1", "0.a", "1--a--b--2.1", "a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "a" * 253]
BAD_SUBDOMAINS = ["", "A", "aBc", "-", "a-", "-a", "_", "a_b", ".", "a.", ".a", "a..b", "1..2", " ", "a b", "A.a", "ab.A", "0.A", "A.B.C.D.E", "a.B.c.d.e", "a@b", "a,b", "a;b", "a:b", "a%b", "a?b", "a$b", "a" * 254]


@pytest.mark.parametrize("name", GOOD_LABELS)
def test_dns1123_label_good(name):
    assert is_dns1123_label(name)


@pytest.mark.parametrize("name", BAD_LABELS)
def test_dns1123_label_bad(name):
    assert not is_dns1123_label(name)


@pytest.mark.parametrize("name", GOOD_SUBDOMAINS)
def test_dns1123_subdomain_good(name):
    assert is_dns1123_subdomain(name)


@pytest.mark.parametrize("name", BAD_SUBDOMAINS)
def test_dns1123_subdomain_bad(name):
    assert not is_dns1123_subdomain(name)


def test_host_names_are_subdomains_with_dns_label_lengths():
    assert k8s.is_hostname("gpu-01.site-a.example.com")
    assert is_dns1123_subdomain("a" * 64 + ".b") and not k8s.is_hostname("a" * 64 + ".b")


def test_the_pydantic_types_use_the_same_patterns():
    from pydantic import TypeAdapter, ValidationError

    for good in GOOD_LABELS:
        TypeAdapter(k8s.Dns1123Name).validate_python(good)
    for bad in BAD_LABELS:
        with pytest.raises(ValidationError):
            TypeAdapter(k8s.Dns1123Name).validate_python(bad)
    TypeAdapter(k8s.LabelKey).validate_python("kueue.x-k8s.io/queue-name")
    with pytest.raises(ValidationError):
        TypeAdapter(k8s.LabelKey).validate_python("example.com/" + "n" * 64)


# --------------------------------------------------------------------------- taints and tolerations (toleration.go ToleratesTaint)


def test_a_taint_with_an_empty_value_gets_an_equal_toleration_with_an_empty_value():
    assert toleration_for("dedicated", "", "NoSchedule") == {"key": "dedicated", "operator": "Equal", "value": "", "effect": "NoSchedule"}
    # Equal "" tolerates the taint written with value "" and the same taint without a value (Go's "" either way) ...
    assert tolerates(toleration_for("dedicated", "", "NoSchedule"), taint_object("dedicated", "", "NoSchedule"))
    assert tolerates(toleration_for("dedicated", "", "NoSchedule"), {"key": "dedicated", "effect": "NoSchedule"})
    # ... and no taint of that key with another value.
    assert not tolerates(toleration_for("dedicated", "", "NoSchedule"), taint_object("dedicated", "gpu", "NoSchedule"))


def test_a_taint_without_a_value_gets_exists_which_carries_no_value():
    toleration = toleration_for("node-role.kubernetes.io/control-plane", None, "NoSchedule")
    assert toleration == {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
    assert "value" not in toleration  # the API refuses a value with Exists ("value must be empty when `operator` is 'Exists'")


def test_taint_objects_leave_out_an_empty_value():
    assert taint_object("nvidia.com/gpu", "true", "NoSchedule") == {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    assert taint_object("k", "", "NoExecute") == taint_object("k", None, "NoExecute") == {"key": "k", "effect": "NoExecute"}


_label = st.text("abcdefgh-.", min_size=1, max_size=8)


@settings(max_examples=examples(200), deadline=None)
@given(key=_label, value=st.none() | st.text("abc", max_size=3), effect=st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]), other=st.text("abc", max_size=3))
def test_the_toleration_of_a_taint_tolerates_it_and_not_other_keys_or_effects(key, value, effect, other):
    toleration = toleration_for(key, value, effect)
    assert tolerates(toleration, taint_object(key, value, effect))
    assert not tolerates(toleration, taint_object(key + "x", value, effect))
    assert not tolerates(toleration, taint_object(key, value, "NoExecute" if effect != "NoExecute" else "NoSchedule"))
    # Equal tolerates exactly its value; Exists any value.
    assert tolerates(toleration, taint_object(key, other, effect)) == (value is None or (value or "") == other)
