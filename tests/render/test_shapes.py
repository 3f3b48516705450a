"""Shape templates (hybridgpu.render.shapes) and the large-inventory fast paths: same bytes as host-by-host work.

The consumers of a filled-in value are PyYAML/libyaml (the kubeadm config, written with
:data:`hybridgpu.datafile.TEMPLATE`) and bash (the scripts, whose values go through ``shlex.quote``):
a value :func:`plain_value` accepts must come out of both verbatim, and a value either would quote
must be refused (the host is then rendered on its own). PyYAML 6.0.3 ``yaml/resolver.py`` (YAML 1.1
bool, int, float, null, timestamp patterns) and CPython 3.11 ``shlex.quote`` (safe characters
``\\w@%+=:,./-``) decide that; the tests ask them.
"""

from __future__ import annotations

import copy
import gc
import shlex
import sys
from collections.abc import Mapping
from typing import Any

import pytest

import hybridgpu.onprem as onprem
from hybridgpu.datafile import TEMPLATE, dump_yaml_all
from hybridgpu.inventory import inventory_from_documents
from hybridgpu.render.shapes import SENTINELS_A, SENTINELS_B, ShapeTemplate, plain_value
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import inventory_bench  # noqa: E402 - the benchmark's generator: the site the speed figures are measured on

# Values with the verdict written before running: (value, plain_value must say).
PLAIN = ["node-00021", "gpu-h100-01", "r12", "rack.0-x_Y", "b1", "10.20.1.22", "192.168.255.254", "yesno", "n", "On1", "1e3", "a.b.c"]
NOT_PLAIN = ["123", "1.5", "2026-01-01", "0x1f", "017", "true", "False", "NULL", "on", "off", "-a", "a b", "a:b", "fd00::1", ""]


@pytest.mark.parametrize("value", PLAIN)
def test_plain_values_come_out_of_yaml_and_shell_verbatim(value: str) -> None:
    assert plain_value(value)
    assert dump_yaml_all([{"name": value}], TEMPLATE) == f"---\nname: {value}\n"
    assert shlex.quote(value) == value


@pytest.mark.parametrize("value", NOT_PLAIN)
def test_values_yaml_or_the_shell_would_quote_are_refused(value: str) -> None:
    assert not plain_value(value)


def test_values_refused_for_yaml_are_the_ones_yaml_quotes() -> None:
    """The refusals above that are shell-safe are refused because PyYAML's emitter would quote them."""
    for value in ("123", "1.5", "2026-01-01", "0x1f", "017", "true", "False", "NULL", "on", "off"):
        assert dump_yaml_all([{"name": value}], TEMPLATE) != f"---\nname: {value}\n"


def test_a_template_fills_in_exactly_what_the_renderer_writes() -> None:
    def render(values: Mapping[str, str]) -> tuple[str, ...]:
        return (f"# for {values['hostname']}\nname: {values['hostname']}\nip: {values['address']} 100%\n", "constant text\n")

    template = ShapeTemplate.build(render)
    assert template is not None and template.slots == {"hostname", "address"}
    values = {"hostname": "node-7", "address": "10.0.0.7"}
    assert template.fill(values) == render(values)


def test_a_template_is_refused_when_a_stand_in_occurs_for_another_reason() -> None:
    """A mirror or endpoint that happens to equal a stand-in would be filled in too: the second render tells."""

    def render(values: Mapping[str, str]) -> tuple[str, ...]:
        return (f"endpoint: {SENTINELS_A['address']}:6443\nnode-ip: {values['address']}\n",)

    assert ShapeTemplate.build(render) is None


def test_a_template_is_refused_when_the_layout_depends_on_the_value() -> None:
    def render(values: Mapping[str, str]) -> tuple[str, ...]:
        return ("x" * len(values["hostname"]) + values["hostname"],)

    assert ShapeTemplate.build(render) is None
    assert len(SENTINELS_A["hostname"]) != len(SENTINELS_B["hostname"])


def _site(n: int, edit: Any = None) -> Any:
    docs = inventory_bench.generate(n)
    if edit is not None:
        docs = copy.deepcopy(docs)
        edit(docs)
    return inventory_from_documents([("generated.yaml", docs)])


def _blocks(docs: list[dict[str, Any]]) -> None:
    for i, host in enumerate(docs[1]["hosts"]):
        host["block"] = f"b{i // 32}"
        if i % 7 == 0:
            host["rack"] = f"rack.{i // 16}-x_Y"


def _quoted_names(docs: list[dict[str, Any]]) -> None:
    for i, name in ((20, "123"), (21, "true"), (22, "1.5"), (23, "null"), (24, "2026-01-01")):
        docs[1]["hosts"][i]["hostname"] = name


def _sentinel_endpoint(docs: list[dict[str, Any]]) -> None:
    docs[0]["cluster"]["controlPlaneEndpoint"] = f"{SENTINELS_A['address']}:6443"


def _sentinel_host(docs: list[dict[str, Any]]) -> None:
    docs[1]["hosts"][30]["hostname"] = SENTINELS_A["hostname"]
    docs[1]["hosts"][31]["hostname"] = SENTINELS_B["hostname"]


def _one_control_plane(docs: list[dict[str, Any]]) -> None:
    del docs[0]["cluster"]["controlPlaneEndpoint"]
    docs[1]["hosts"] = [h for h in docs[1]["hosts"] if h["role"] != "control-plane" or h["hostname"] == "node-00000"]


def _label_order(docs: list[dict[str, Any]]) -> None:
    for i, host in enumerate(docs[1]["hosts"]):
        host["labels"] = {"example.com/a": "1", "example.com/b": "2"} if i % 2 else {"example.com/b": "2", "example.com/a": "1"}


def _no_racks(docs: list[dict[str, Any]]) -> None:
    for host in docs[1]["hosts"]:
        host.pop("rack")
    docs[0].pop("racks")


# Inventories whose plan must be byte-identical with and without templates (verdict: same plan).
CASES = {
    "generated": None,
    "blocks-and-odd-rack-names": _blocks,
    "names-yaml-would-quote": _quoted_names,
    "endpoint-equals-a-stand-in": _sentinel_endpoint,
    "hosts-named-like-the-stand-ins": _sentinel_host,
    "one-control-plane-no-endpoint": _one_control_plane,
    "labels-in-two-orders": _label_order,
    "no-racks": _no_racks,
}


@pytest.mark.parametrize("case", CASES)
def test_templated_plan_is_the_host_by_host_plan(case: str) -> None:
    inventory = _site(96, CASES[case])
    fast = onprem.plan_onprem(inventory)
    assert fast == onprem.plan_onprem(inventory, use_templates=False)
    assert len({s.kubeadm_config for s in fast.steps}) == len(fast.steps)


def test_racks_do_not_multiply_the_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers differing only in rack share a template: 2,000 hosts in 125 racks need a handful of renders, not one per rack."""
    calls: list[int] = []
    real = onprem._render_host

    def counted(*args: Any, **kwargs: Any) -> tuple[str, str, str]:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(onprem, "_render_host", counted)
    plan = onprem.plan_onprem(_site(2000))
    assert len(plan.steps) == 1960
    assert len(calls) <= 3 + 2 * 4  # the three control planes, two renders for each of the four worker shapes


def test_validation_leaves_the_inventory_in_the_oldest_generation() -> None:
    """hybridgpu.collector.promote_to_oldest: no young-generation pass walks a validated inventory again."""
    inventory = _site(50)
    young = {id(o) for generation in (0, 1) for o in gc.get_objects(generation=generation)}
    assert id(inventory) not in young and id(inventory.records[0].host) not in young
    assert gc.get_freeze_count() == 0


def test_validation_unfreezes_nothing_it_did_not_freeze(monkeypatch) -> None:
    """While someone keeps objects frozen, validating and planning never call ``gc.unfreeze``.

    (The freeze count itself is no measure: a frozen object freed by reference counting leaves the
    permanent generation, so the count may drop by itself; it did in a CI run.)"""
    unfrozen: list[int] = []
    real_unfreeze = gc.unfreeze
    gc.freeze()
    try:
        monkeypatch.setattr(gc, "unfreeze", lambda: unfrozen.append(gc.get_freeze_count()))
        _site(10)
    finally:
        monkeypatch.undo()
        real_unfreeze()
    assert unfrozen == []


def test_host_steps_built_fast_are_the_dataclass_instances() -> None:
    values: dict[str, Any] = dict(
        hostname="n1", address="10.0.0.1", ssh_user="ubuntu", ssh_port=22, key_ref=("env", "K"), stage="join-worker", bootstrap="b",
        kubeadm_config="c", kubeadm_run="r", drain=None, mig_config=None, role="gpu-worker", owner="ml", gpu_model="H100-80GB", gpu_count=8,
    )
    fast, slow = onprem._host_step(**values), onprem.HostStep(**values)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow) and vars(fast) == vars(slow)
    with pytest.raises(AttributeError):
        fast.hostname = "other"  # type: ignore[misc]
    del values["owner"], values["gpu_model"], values["gpu_count"]
    assert onprem._host_step(**values) == onprem.HostStep(**values)  # defaults: through __init__
    with pytest.raises(TypeError):
        onprem._host_step(**values, hostnmae="x")
