"""Rack power and cooling of an on-prem site (the ``racks`` section of the ``Site`` document), each host's draw, and the rack rules.

The bare-metal seed's third pitfall: an 8 x A100 node draws 5-6 kW, most data-centre racks are
provisioned for 6-10 kW, so the rack's power is planned with the provider before hardware is
ordered. The inventory already knows racks (``hosts[].rack``), GPU models and counts; this module
adds the rest:

* ``racks`` (:class:`RackSpec`), keyed by the rack name the hosts use: the power the provider
  supplies to the rack (``powerKw``), how it is cooled (``cooling: air|liquid``) and the heat its
  cooling removes (``coolingKw``, default ``powerKw``: providers sell power and cooling separately).
* The draw of a host at full load (:func:`host_draw`): its own ``powerKw`` when it sets one, else
  GPU board power x count + the platform's own draw, both from the GPU catalog
  (``hybridgpu/catalog/data/gpu_models.yaml`` ``tdpWatts`` and ``platforms.yaml``, each with its
  source and date). A host whose GPUs match no catalog platform (another GPU count, a PCIe
  server, a CPU or control-plane host) has no draw until it sets ``powerKw``.
* What a host needs to be cooled by (:attr:`HostDraw.cooling`): its own ``cooling`` when it sets one,
  else its catalog platform's (``platforms.yaml`` ``cooling``; ``either`` and no platform: nothing).
* The rules (:func:`rack_power_issues`): the ``active`` and ``cordoned`` hosts of a declared rack
  (``absent`` hosts are out of the rack) must not draw more than its power budget, nor give off more
  heat than its cooling removes (a server turns all the power it draws into heat, so heat = draw);
  every counted host needs a draw; a host that needs ``liquid`` cooling sits only in a rack declared
  ``cooling: liquid``. An ``air`` host fits a ``liquid`` rack: direct-liquid-cooled racks are hybrid
  (NVIDIA's DGX GB200 compute trays cool their CPUs and GPUs through cold plates and their NICs and
  drives with fans; its SuperPOD reference architecture calls the rack "hybrid cooling"), and their
  heat is counted against ``coolingKw`` like any other. A rack whose only liquid is a rear-door heat
  exchanger cools its servers' exhaust air, not their chips: it is an ``air`` rack with a large
  ``coolingKw``. A rack no host names is fine; hosts whose rack is not declared are not checked.
* The one home of the draw for everyone else: ``hybridgpu inventory validate`` prints
  :func:`rack_loads`, and ``hybridgpu cost report`` bills power per GPU from
  :func:`gpu_draw_by_model`.

Draws are summed in whole watts, so ``4 x 10.2 kW`` is exactly ``40.8 kW`` against a 40.8 kW
budget (no floating-point margin). Pure: imports no other inventory module at run time (the
models import this one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, NamedTuple, Protocol

from pydantic import Field, StringConstraints

from hybridgpu.catalog import Catalog, UnknownGpuModelError
from hybridgpu.errors import Issue
from hybridgpu.modelbase import Model


# What this module reads of a host and of a host record (hybridgpu.inventory.models.Host and
# HostRecord; the models import this module, so it names them by shape).
class _Gpus(Protocol):
    @property
    def model(self) -> str: ...
    @property
    def count(self) -> int: ...


class Host(Protocol):
    """The fields of :class:`hybridgpu.inventory.models.Host` the power rule reads."""

    @property
    def hostname(self) -> str: ...
    @property
    def rack(self) -> str | None: ...
    @property
    def state(self) -> str: ...
    @property
    def gpu(self) -> _Gpus | None: ...
    @property
    def power_kw(self) -> float | None: ...
    @property
    def cooling(self) -> str | None: ...


class HostRecord(Protocol):
    """The fields of :class:`hybridgpu.inventory.models.HostRecord` the power rule reads."""

    @property
    def host(self) -> Host: ...
    @property
    def file(self) -> str: ...

__all__ = [
    "COUNTED_STATES",
    "MAX_HOST_KW",
    "MAX_RACK_KW",
    "GpuDraw",
    "HostDraw",
    "RackLoad",
    "RackName",
    "RackSpec",
    "format_kw",
    "gpu_draw_by_model",
    "host_draw",
    "rack_loads",
    "rack_power_issues",
]

#: Host states that draw from their rack: ``absent`` hosts are out for repair (hybridgpu.inventory.lifecycle).
COUNTED_STATES = ("active", "cordoned")
#: Largest rack budget accepted, kW: well above today's densest liquid-cooled racks, and low enough
#: that a budget written in watts (``powerKw: 40000``) is refused instead of passing every check.
MAX_RACK_KW = 1000
#: Largest host draw accepted, kW (the DGX H100's maximum is 10.2 kW): a draw written in watts is refused.
MAX_HOST_KW = 100
#: How many hosts an over-budget message names before it counts the rest.
_NAMED_HOSTS = 12

#: A rack name as hosts write it in ``rack`` (the same constraint as :attr:`hybridgpu.inventory.models.Host.rack`).
RackName = Annotated[str, StringConstraints(min_length=1, max_length=63)]


class RackSpec(Model):
    """One rack of the site (a ``racks.<name>`` entry of the ``Site`` document)."""

    power_kw: float = Field(
        strict=True,
        gt=0,
        le=MAX_RACK_KW,
        allow_inf_nan=False,
        description=f"Power the provider supplies to the rack, in kW (e.g. `40`); the active and cordoned hosts' draw at full "
        f"load must stay within it. At most {MAX_RACK_KW}. Required.",
    )
    cooling: Literal["air", "liquid"] | None = Field(
        default=None,
        description="How the rack is cooled: `air` (room air, containment or a rear-door heat exchanger: it takes air-cooled servers) "
        "or `liquid` (coolant piped to the servers' cold plates through rack manifolds from a coolant distribution unit: it "
        "takes liquid-cooled and air-cooled servers). A host that needs liquid cooling is refused in any other rack. Default: none.",
    )
    cooling_kw: float | None = Field(
        default=None,
        strict=True,
        gt=0,
        le=MAX_RACK_KW,
        allow_inf_nan=False,
        description=f"Heat the rack's cooling removes, in kW (e.g. `30`; at most {MAX_RACK_KW}); the active and cordoned hosts' "
        "draw at full load, all of which ends as heat, must stay within it. Default: `powerKw`.",
    )


def _watts(kw: float) -> int:
    return round(kw * 1000)


def format_kw(watts: int) -> str:
    """Whole watts as kW without rounding or trailing zeros: ``40800`` -> ``"40.8"``, ``6250`` -> ``"6.25"``, ``-300`` -> ``"-0.3"``."""
    sign = "-" if watts < 0 else ""
    whole, rest = divmod(abs(watts), 1000)
    return sign + (f"{whole}.{rest:03d}".rstrip("0").rstrip(".") if rest else str(whole))


class HostDraw(NamedTuple):
    """What one host draws at full load (a named tuple: the rule builds one per host of a declared rack).

    Attributes:
        hostname: the host.
        watts: the draw in whole watts, or None when nothing gives one.
        basis: where the figure comes from (``"powerKw"``, ``"8 x H100-80GB 700 W + DGX-H100 platform 4.6 kW"``),
            or why there is none.
        gpu_watts: the GPUs' board power (count x ``tdpWatts``; 0 without GPUs or with an unknown model).
        cooling: what the host must be cooled by: ``"liquid"``, ``"air"``, or None when nothing says
            (no ``cooling`` on the host, and no catalog platform or one sold as ``either``).
        cooling_basis: where ``cooling`` comes from (``"cooling"`` for the host's own, else the platform's name).
    """

    hostname: str
    watts: int | None
    basis: str
    gpu_watts: int
    cooling: str | None = None
    cooling_basis: str = ""


#: What the catalog says of some GPUs, by (GPU model, count): (draw in W or None, basis, board power in W,
#: the platform's name and cooling, or None and None without a platform).
_Facts = tuple[int | None, str, int, str | None, str | None]
_GpuFacts = dict[tuple[str, int], _Facts]


def _gpu_facts(catalog: Catalog, model_name: str, count: int) -> _Facts:
    try:
        model = catalog.gpu_model(model_name)
    except UnknownGpuModelError:
        return None, f"GPU model {model_name!r} is not in the catalog", 0, None, None
    gpu_watts = count * model.tdp_watts
    platform = catalog.platform_for(model.name, count)
    if platform is None:
        known = ", ".join(f"{p.gpu_count} x {p.gpu_model}" for p in catalog.platforms) or "none"
        return None, f"no catalog platform has {count} x {model.name} (known: {known})", gpu_watts, None, None
    platform_watts = catalog.platform_watts(platform)
    basis = f"{count} x {model.name} {model.tdp_watts} W + {platform.name} platform {format_kw(platform_watts)} kW"
    return gpu_watts + platform_watts, basis, gpu_watts, platform.name, platform.cooling


def host_draw(host: Host, catalog: Catalog, memo: _GpuFacts | None = None) -> HostDraw:
    """The host's draw at full load (see the module docstring for the rule).

    Args:
        host: an inventory host.
        catalog: the GPU catalog (GPU ``tdpWatts`` and platforms).
        memo: a dict to keep the catalog's answers in across calls with the same catalog (the callers
            that walk every host pass one: a catalog lookup costs more than the rest of the rule).

    Returns:
        The draw; ``watts`` is None for a host without ``powerKw`` whose GPUs match no catalog
        platform, or whose GPU model the catalog does not know (rule ``unknown-gpu-model`` reports that).
        ``cooling`` is the host's own ``cooling``, else its platform's (None for ``either`` or no platform).
    """
    gpu = host.gpu
    if gpu is None:
        facts: _Facts = (None, "no GPUs, so no catalog platform", 0, None, None)
    else:
        key = (gpu.model, gpu.count)
        cached = memo.get(key) if memo is not None else None
        facts = cached if cached is not None else _gpu_facts(catalog, *key)
        if memo is not None and cached is None:
            memo[key] = facts
    watts, basis, gpu_watts, platform, platform_cooling = facts
    cooling: str | None
    cooling_basis: str
    if host.cooling is not None:
        cooling, cooling_basis = host.cooling, "cooling"
    elif platform is not None and platform_cooling != "either":
        cooling, cooling_basis = platform_cooling, platform
    else:
        cooling, cooling_basis = None, ""
    if host.power_kw is not None:
        return HostDraw(host.hostname, _watts(host.power_kw), "powerKw", gpu_watts, cooling, cooling_basis)
    return HostDraw(host.hostname, watts, basis, gpu_watts, cooling, cooling_basis)


@dataclass(frozen=True)
class RackLoad:
    """A declared rack's draw against its budget.

    Attributes:
        name: the rack.
        budget_watts: ``powerKw`` in whole watts.
        cooling: ``air``, ``liquid`` or None.
        draws: the counted (active and cordoned) hosts' draws, in file order.
        cooling_watts: the heat the rack's cooling removes (``coolingKw``, else ``powerKw``), in whole watts.
    """

    name: str
    budget_watts: int
    cooling: str | None
    draws: tuple[HostDraw, ...]
    cooling_watts: int

    @property
    def cooling_margin_watts(self) -> int:
        """Cooling capacity less the heat of the draw (W): negative when the hosts give off more than the cooling removes."""
        return self.cooling_watts - self.draw_watts

    @property
    def needs_liquid(self) -> tuple[HostDraw, ...]:
        """Counted hosts that must be cooled by liquid."""
        return tuple(d for d in self.draws if d.cooling == "liquid")

    @property
    def draw_watts(self) -> int:
        """The known draws added up (W)."""
        return sum(d.watts for d in self.draws if d.watts is not None)

    @property
    def margin_watts(self) -> int:
        """Budget less draw (W): negative when over budget."""
        return self.budget_watts - self.draw_watts

    @property
    def unknown(self) -> tuple[HostDraw, ...]:
        """Counted hosts without a draw."""
        return tuple(d for d in self.draws if d.watts is None)


def rack_loads(racks: Mapping[str, RackSpec] | None, hosts: Iterable[Host], catalog: Catalog) -> list[RackLoad]:
    """Every declared rack with the draws of its active and cordoned hosts, in declaration order.

    Args:
        racks: the site's ``racks`` (None or empty: no racks).
        hosts: the inventory's hosts (any state; ``absent`` ones are left out here).
        catalog: the GPU catalog.

    Returns:
        One :class:`RackLoad` per declared rack (a rack no host names has no draws).
    """
    if not racks:
        return []
    members: dict[str, list[HostDraw]] = {name: [] for name in racks}
    memo: _GpuFacts = {}
    for host in hosts:
        if host.rack in members and host.state in COUNTED_STATES:
            members[host.rack].append(host_draw(host, catalog, memo))
    return [
        RackLoad(name, _watts(spec.power_kw), spec.cooling, tuple(members[name]), _watts(spec.cooling_kw if spec.cooling_kw is not None else spec.power_kw))
        for name, spec in racks.items()
    ]


def _named(draws: Sequence[HostDraw]) -> str:
    shown = ", ".join(f"{d.hostname} {format_kw(d.watts or 0)} kW" for d in draws[:_NAMED_HOSTS])
    rest = len(draws) - _NAMED_HOSTS
    return shown + (f" and {rest} more" if rest > 0 else "")


def rack_power_issues(
    racks: Mapping[str, RackSpec] | None, records: Sequence[HostRecord], site_file: str, catalog: Catalog, *, hosts_complete: bool = True
) -> list[Issue]:
    """The power and cooling rules of the declared racks.

    Args:
        racks: the site's ``racks`` (None: the section is absent or invalid; nothing to check).
        records: every validated host with its file.
        site_file: the file of the ``Site`` document (rack issues point at ``racks.<name>.<field>`` there).
        catalog: the GPU catalog.
        hosts_complete: False when some host failed validation: the budget sums would be wrong, so
            only the per-host ``rack-power-unknown`` and the ``rack-cooling-type`` issues are reported.

    Returns:
        ``rack-power-unknown`` on each counted host of a declared rack that has no draw (field
        ``powerKw``); ``rack-cooling-type`` on each rack not declared ``cooling: liquid`` whose counted
        hosts include some that need liquid cooling (field ``racks.<name>.cooling``, naming those hosts
        and where their need comes from); then, per rack, ``rack-power-budget`` when its counted hosts
        draw more than its ``powerKw`` and ``rack-cooling-capacity`` when they give off more heat than
        its ``coolingKw`` and that is below ``powerKw`` (otherwise the budget issue already says it),
        each naming the hosts with their draws and the margin in kW.
    """
    if not racks:
        return []
    issues: list[Issue] = []
    loads = rack_loads(racks, (r.host for r in records), catalog)
    file_of: dict[str, str] = {}
    for load in loads:
        for draw in load.unknown:
            if draw.basis.startswith("GPU model "):
                continue  # rule gpu-model reports the unknown model
            file_of = file_of or {r.host.hostname: r.file for r in records}
            issues.append(
                Issue.on_host(
                    file_of[draw.hostname],
                    draw.hostname,
                    "powerKw",
                    f"counts against rack {load.name}'s power budget ({format_kw(load.budget_watts)} kW) but has no draw: {draw.basis}",
                    "set `powerKw` to the host's maximum draw at full load in kW (its datasheet's maximum system power), "
                    "or mark it `state: absent` if it is out of the rack",
                    "rack-power-unknown",
                )
            )
    for load in loads:
        if load.cooling != "liquid" and load.needs_liquid:
            issues.append(_cooling_type_issue(load, site_file))
    if not hosts_complete:
        return issues
    for load in loads:
        counted = sorted((d for d in load.draws if d.watts is not None), key=lambda d: -(d.watts or 0))
        known_only = " at least" if load.unknown else ""
        if load.cooling_margin_watts < 0 and load.cooling_watts < load.budget_watts:
            over = -load.cooling_margin_watts
            issues.append(
                Issue.on_host(
                    site_file,
                    None,
                    f"racks.{load.name}.coolingKw",
                    f"rack {load.name}: its active and cordoned hosts give off{known_only} {format_kw(load.draw_watts)} kW of heat at "
                    f"full load (all they draw: {_named(counted)}), {format_kw(over)} kW more than the {format_kw(load.cooling_watts)} kW "
                    f"its cooling removes (its power budget is {format_kw(load.budget_watts)} kW)",
                    f"move hosts out of rack {load.name} until {format_kw(over)} kW of heat is freed (the largest: {counted[0].hostname}), "
                    f"mark one `state: absent`, or raise `racks.{load.name}.coolingKw` if the provider's cooling removes more "
                    "(its rated heat removal for the rack, in kW)",
                    "rack-cooling-capacity",
                )
            )
        if load.margin_watts >= 0:
            continue
        over = -load.margin_watts
        issues.append(
            Issue.on_host(
                site_file,
                None,
                f"racks.{load.name}.powerKw",
                f"rack {load.name}: its active and cordoned hosts draw{known_only} {format_kw(load.draw_watts)} kW at full load "
                f"({_named(counted)}), {format_kw(over)} kW over its {format_kw(load.budget_watts)} kW budget",
                f"move hosts out of rack {load.name} until {format_kw(over)} kW is freed (the largest: {counted[0].hostname}), "
                f"mark one `state: absent`, or raise `racks.{load.name}.powerKw` if the provider supplies more",
                "rack-power-budget",
            )
        )
    return issues


def _cooling_type_issue(load: RackLoad, site_file: str) -> Issue:
    """``rack-cooling-type``: hosts that need liquid cooling in a rack not declared ``cooling: liquid``."""
    hosts = load.needs_liquid
    named = ", ".join(
        f"{d.hostname} ({'its `cooling: liquid`' if d.cooling_basis == 'cooling' else f'platform {d.cooling_basis}, liquid-cooled'})"
        for d in hosts[:_NAMED_HOSTS]
    )
    rest = len(hosts) - _NAMED_HOSTS
    named += f" and {rest} more" if rest > 0 else ""
    rack = f"is cooled by {load.cooling}" if load.cooling else "does not declare its cooling"
    return Issue.on_host(
        site_file,
        None,
        f"racks.{load.name}.cooling",
        f"rack {load.name} {rack}, but {len(hosts)} of its active and cordoned hosts {'needs' if len(hosts) == 1 else 'need'} liquid "
        f"cooling (coolant piped to cold plates): {named}",
        f"move them to a rack declared `cooling: liquid`, or set `racks.{load.name}.cooling: liquid` if this rack's manifolds "
        "deliver coolant to the servers (a rear-door heat exchanger cools exhaust air only: such a rack is `air`); "
        "a host that is in fact air-cooled sets `cooling: air`",
        "rack-cooling-type",
    )


@dataclass(frozen=True)
class GpuDraw:
    """The draw of one GPU model's hosts, for the power bill.

    Attributes:
        gpu_model: the GPU catalog key.
        gpus: GPUs of that model on non-absent hosts.
        watts: their hosts' draw at full load (W): :func:`host_draw`, or the GPUs' board power alone
            for a host without one.
        board_power_only: hosts billed at their GPUs' board power alone (no ``powerKw``, no catalog platform).
        platforms: the catalog platforms whose draw was used, by name, sorted (for the report's sources).
    """

    gpu_model: str
    gpus: int
    watts: int
    board_power_only: tuple[str, ...]
    platforms: tuple[str, ...] = ()

    @property
    def kw_per_gpu(self) -> float:
        """``watts / gpus / 1000``: the draw per GPU at full load (kW), platform share included."""
        return self.watts / self.gpus / 1000


def gpu_draw_by_model(hosts: Iterable[Host], catalog: Catalog) -> dict[str, GpuDraw]:
    """The draw of the GPU hosts per GPU model, for the on-prem power bill (``hybridgpu cost report``).

    Args:
        hosts: the inventory's hosts; ``absent`` hosts and hosts without GPUs or with a GPU model
            the catalog does not know are left out.
        catalog: the GPU catalog.

    Returns:
        GPU model -> :class:`GpuDraw`, sorted by model.
    """
    gpus: dict[str, int] = {}
    watts: dict[str, int] = {}
    partial: dict[str, list[str]] = {}
    used: set[tuple[str, int]] = set()
    memo: _GpuFacts = {}
    for host in hosts:
        if host.state == "absent" or host.gpu is None:
            continue
        draw = host_draw(host, catalog, memo)
        if draw.watts is None and draw.gpu_watts == 0:
            continue  # unknown GPU model
        model = host.gpu.model
        gpus[model] = gpus.get(model, 0) + host.gpu.count
        watts[model] = watts.get(model, 0) + (draw.watts if draw.watts is not None else draw.gpu_watts)
        if draw.watts is None:
            partial.setdefault(model, []).append(host.hostname)
        elif draw.basis != "powerKw":
            used.add((model, host.gpu.count))
    platforms: dict[str, set[str]] = {}
    for model, count in used:
        platform = catalog.platform_for(model, count)
        if platform is not None:
            platforms.setdefault(model, set()).add(platform.name)
    return {m: GpuDraw(m, gpus[m], watts[m], tuple(partial.get(m, ())), tuple(sorted(platforms.get(m, ())))) for m in sorted(gpus)}
