"""Text rendered once per host *shape* and filled in per host (pure, no Pulumi).

Workers of one shape (role, label keys, taints, GPUs, MIG config, toolkit) get the same kubeadm
config and scripts except for a few per-host values: the hostname, the management address and
the values of the topology labels (rack, block). :class:`ShapeTemplate` renders a shape twice,
with two different sets of stand-in values (:data:`SENTINELS_A`, :data:`SENTINELS_B`: different
lengths and characters), and keeps the result only when both renders split into the same literal
text around the stand-ins in the same order; filling a host in is then one ``str.join`` of the
literal parts and the host's values per text (a copy of the text, no rendering). A stand-in that also occurs in the text for another
reason (an endpoint or mirror that happens to equal it), or text whose layout depends on a
value's length, makes the two renders disagree: :meth:`ShapeTemplate.build` returns None and the
caller renders those hosts one by one.

A value is filled in only when it is written the same way wherever it lands (:func:`plain_value`):
YAML writes it as a plain scalar (a hostname such as ``123``, ``true`` or ``null`` would be quoted)
and the shell scripts leave it unquoted (``shlex``'s safe characters). Other values are rendered
host by host. ``tests/render/test_shapes.py`` checks the filled text against host-by-host
rendering, byte for byte.

Functions::

    ShapeTemplate.build(render: Callable[[Mapping[str, str]], tuple[str, ...]]) -> ShapeTemplate | None
    ShapeTemplate.fill(values: Mapping[str, str]) -> tuple[str, ...]
    plain_value(value: str) -> bool
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import yaml

__all__ = ["SENTINELS_A", "SENTINELS_B", "SLOTS", "ShapeTemplate", "plain_value"]

#: The per-host values a template leaves open: hostname, management address, rack and block label values.
SLOTS = ("hostname", "address", "rack", "block")

#: First stand-ins: a DNS-1123 name, an address of TEST-NET-1 (RFC 5737) and label values.
SENTINELS_A = {"hostname": "hybridgpu-shape-template-node", "address": "192.0.2.254", "rack": "hybridgpu-shape-rack", "block": "hybridgpu-shape-block"}
#: Second stand-ins, of other lengths and characters (TEST-NET-2 address, a dotted name, ``_`` and upper case in labels).
SENTINELS_B = {"hostname": "q7.hybridgpu-b", "address": "198.51.100.77", "rack": "R_b9.z", "block": "Blk-b-00042"}

#: A value YAML and the shell write as is: letters, digits, ``.``, ``_``, ``-``; a letter or digit at both ends.
_PLAIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
#: The words PyYAML's resolver reads as booleans or null (``yaml/resolver.py``, PyYAML 6.0.3: YAML 1.1 bool and null) in every
#: spelling it accepts; any other value starting with a letter resolves to a string.
_YAML_WORDS = frozenset(
    spelling
    for word in ("yes", "no", "true", "false", "on", "off", "null")
    for spelling in (word, word.capitalize(), word.upper())
)
_RESOLVER = yaml.resolver.Resolver()


def plain_value(value: str) -> bool:
    """True when ``value`` is written verbatim in every rendered text: a plain YAML string scalar and an unquoted shell word.

    Letters, digits, ``.``, ``_`` and ``-`` only (all of them in ``shlex.quote``'s safe set), a letter or
    digit at both ends, and not a value PyYAML's resolver reads as anything but a string (``123``, ``1.5``,
    ``2026-01-01``, ``true``, ``null`` ... are written quoted, so a host with such a name is rendered on its own).
    """
    if not _PLAIN.fullmatch(value):
        return False
    if value[0].isalpha() and value not in _YAML_WORDS:
        return True  # the resolver's only patterns for a leading letter are those words (bool, null)
    return bool(_RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _RESOLVER.DEFAULT_SCALAR_TAG)


def _split(text: str, sentinels: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """``text`` cut at every occurrence of a stand-in: (literal parts, slot names in order); len(parts) = len(slots) + 1."""
    by_text = {v: k for k, v in sentinels.items()}
    pattern = re.compile("|".join(re.escape(v) for v in sorted(by_text, key=len, reverse=True)))
    parts: list[str] = []
    slots: list[str] = []
    start = 0
    for match in pattern.finditer(text):
        parts.append(text[start : match.start()])
        slots.append(by_text[match.group()])
        start = match.end()
    parts.append(text[start:])
    return parts, slots


@dataclass(frozen=True)
class ShapeTemplate:
    """The texts of one shape with the per-host values left open.

    Attributes:
        pieces: per text, its literal parts with an empty string wherever a per-host value goes.
        holes: per text, ``(position in pieces, slot name)`` of each value to put in; empty for a text that is the
            same for every host of the shape.
        slots: the slot names the texts use (a subset of :data:`SLOTS`).
    """

    pieces: tuple[tuple[str, ...], ...]
    holes: tuple[tuple[tuple[int, str], ...], ...]
    slots: frozenset[str]

    @classmethod
    def build(cls, render: Callable[[Mapping[str, str]], tuple[str, ...]]) -> ShapeTemplate | None:
        """Render the shape with :data:`SENTINELS_A` and :data:`SENTINELS_B`; the template, or None when they disagree.

        Args:
            render: the shape's renderer: given a value per slot (:data:`SLOTS`), returns its texts.

        Returns:
            The template; None when the two renders do not cut into the same literal text and
            slots (the caller renders each host of the shape on its own).

        Raises:
            Whatever ``render`` raises (e.g. :class:`hybridgpu.render.kubeadm_specs.SpecError`).
        """
        first, second = render(SENTINELS_A), render(SENTINELS_B)
        if len(first) != len(second):
            return None
        pieces: list[tuple[str, ...]] = []
        holes: list[tuple[tuple[int, str], ...]] = []
        used: set[str] = set()
        for a, b in zip(first, second, strict=True):
            parts, slots = _split(a, SENTINELS_A)
            if _split(b, SENTINELS_B) != (parts, slots):
                return None
            used.update(slots)
            text: list[str] = [parts[0]]
            for slot, part in zip(slots, parts[1:], strict=True):
                text += ("", part)
            pieces.append(tuple(text))
            holes.append(tuple((2 * i + 1, slot) for i, slot in enumerate(slots)))
        return cls(tuple(pieces), tuple(holes), frozenset(used))

    def fill(self, values: Mapping[str, str]) -> tuple[str, ...]:
        """The texts of one host: ``values`` (one per slot the texts use, each :func:`plain_value`) put in the slots."""
        out = []
        for pieces, holes in zip(self.pieces, self.holes, strict=True):
            if not holes:
                out.append(pieces[0])
                continue
            text = list(pieces)
            for position, slot in holes:
                text[position] = values[slot]
            out.append("".join(text))
        return tuple(out)
