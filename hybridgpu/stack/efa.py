"""EFA checks of a stack: node classes and NodePools against the instance catalog (pure, no Pulumi).

They read ``hybridgpu:cloud.nodeClasses``, ``hybridgpu:cloud.nodePools`` and the catalog file
(``hybridgpu/catalog/data/instance_types.yaml``: ``efaSupported``, ``maxEfaInterfaces``), so they live in
the stack layer (docs/architecture.md, rule 1). Each issue names the stack file, the key and the fix.

Rules (why: :mod:`hybridgpu.render.efa`, Karpenter v1.14.1 ``efas`` / ``networkInterfaceCheck``):

* ``efa-unsupported``: a pool on an EFA node class may launch only instance types without EFA;
* ``efa-mixed``: a pool on an EFA node class mixes types with and without EFA (Karpenter drops the
  types without EFA from the class silently, so the pool is not what it says);
* ``efa-interface-count``: the instance types the pools of one EFA class may launch have different
  ``maxEfaInterfaces`` (one EC2NodeClass renders one interface list: types with fewer cards are
  dropped, types with more run below their EFA bandwidth);
* ``efa-interfaces``: ``efa.interfaces`` is set and differs from the catalog's count;
* ``efa-unused``: an EFA class no pool uses and without ``interfaces``: nothing to derive the count from.
"""

from __future__ import annotations

from hybridgpu.catalog import Catalog
from hybridgpu.config.models import CloudConfig
from hybridgpu.errors import Issue
from hybridgpu.render.karpenter import resolve_instance_types

__all__ = ["efa_issues"]

CLOUD = "hybridgpu:cloud"
CATALOG_FILE = "hybridgpu/catalog/data/instance_types.yaml"


def _shown(types: dict[str, int]) -> str:
    return ", ".join(f"{name} ({count})" for name, count in sorted(types.items()))


def efa_issues(cloud: CloudConfig, file: str, catalog: Catalog) -> list[Issue]:
    """Every EFA problem of the cloud section (see the module docstring); empty when EFA is consistent.

    Args:
        cloud: the validated ``hybridgpu:cloud`` section.
        file: the stack file as the user knows it (``stacks/Pulumi.prod.yaml``).
        catalog: the instance catalog.

    Returns:
        Issues with keys ``hybridgpu:cloud.nodePools[i].instanceTypes`` (or ``.instanceFamilies``/``.gpuNames``)
        and ``hybridgpu:cloud.nodeClasses[j].efa.interfaces``.
    """
    issues: list[Issue] = []
    class_index = {nc.name: (j, nc) for j, nc in enumerate(cloud.node_classes)}
    per_class: dict[str, dict[str, int]] = {}
    for i, pool in enumerate(cloud.node_pools):
        found = class_index.get(pool.node_class)
        if found is None or not found[1].efa.enabled:
            continue
        resolved = resolve_instance_types(pool, catalog)
        if not resolved:
            continue  # the pool checks report a pool that resolves to nothing
        key = f"{CLOUD}.nodePools[{i}]." + ("instanceTypes" if pool.instance_types else "instanceFamilies" if pool.instance_families else "gpuNames")
        with_efa = {t.name: t.max_efa_interfaces for t in resolved if t.efa_supported}
        without = sorted(t.name for t in resolved if not t.efa_supported)
        if not with_efa:
            issues.append(
                Issue(
                    file,
                    key,
                    f"NodePool {pool.name!r} uses node class {pool.node_class!r}, which attaches EFA, but none of its instance types "
                    f"has EFA ({', '.join(without)}: `efaSupported: false` in {CATALOG_FILE})",
                    f"use EFA instance types (`hybridgpu catalog` lists `maxEfaInterfaces`, e.g. p5.48xlarge, p4d.24xlarge), "
                    f"or a node class without `efa`",
                    code="efa-unsupported",
                )
            )
            continue
        if without:
            issues.append(
                Issue(
                    file,
                    key,
                    f"NodePool {pool.name!r} on EFA node class {pool.node_class!r} mixes EFA instance types ({', '.join(sorted(with_efa))}) "
                    f"with types without EFA ({', '.join(without)}); Karpenter drops the latter from an EC2NodeClass with EFA interfaces",
                    f"list only the EFA types in the pool ({', '.join(sorted(with_efa))}), or put the others in a pool whose node class has no `efa`",
                    code="efa-mixed",
                )
            )
            continue
        per_class.setdefault(pool.node_class, {}).update(with_efa)
    for name, (j, nc) in class_index.items():
        if not nc.efa.enabled:
            continue
        ckey = f"{CLOUD}.nodeClasses[{j}].efa.interfaces"
        types = per_class.get(name)
        used = any(p.node_class == name for p in cloud.node_pools)
        if not types:
            if not used and nc.efa.interfaces is None:
                issues.append(
                    Issue(
                        file,
                        ckey,
                        f"node class {name!r} attaches EFA but no NodePool uses it, so its interface count cannot be derived from the catalog",
                        "use the node class from a NodePool, set `efa.interfaces`, or remove `efa`",
                        code="efa-unused",
                    )
                )
            continue
        counts = sorted(set(types.values()))
        if len(counts) > 1:
            groups = "; ".join(f"{c}: {', '.join(sorted(t for t, n in types.items() if n == c))}" for c in counts)
            issues.append(
                Issue(
                    file,
                    f"{CLOUD}.nodeClasses[{j}].efa",
                    f"the NodePools of EFA node class {name!r} may launch instance types with different EFA interface counts "
                    f"({groups}); one EC2NodeClass attaches one interface list, so Karpenter drops the types with fewer network cards "
                    "and the others run below their EFA bandwidth",
                    "give each EFA interface count its own node class and pool (e.g. p5.48xlarge/p5e.48xlarge with 32, p5en.48xlarge with 16), "
                    "or restrict the pools' `instanceTypes` to one count",
                    code="efa-interface-count",
                )
            )
            continue
        if nc.efa.interfaces is not None and nc.efa.interfaces != counts[0]:
            issues.append(
                Issue(
                    file,
                    ckey,
                    f"node class {name!r} sets {nc.efa.interfaces} EFA interface(s) but its instance types have {counts[0]} "
                    f"({_shown(types)}, `maxEfaInterfaces` in {CATALOG_FILE}); Karpenter would advertise {nc.efa.interfaces} "
                    "`vpc.amazonaws.com/efa` per node"
                    + (" and drop every type with fewer" if nc.efa.interfaces > counts[0] else ", leaving network cards without EFA"),
                    f"remove `interfaces` (derived: {counts[0]}) or set `interfaces: {counts[0]}`",
                    code="efa-interfaces",
                )
            )
    return issues
