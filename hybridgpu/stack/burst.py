"""A stack's part in bursting: the burst plan with the stacks it names, checked against the stack (pure).

A burst plan file names an on-prem stack and a cloud stack; deriving it needs their
``hybridgpu:onprem`` and ``hybridgpu:cloud`` sections, read from their stack files (offline and
under ``pulumi up`` alike: the program runs in the project directory). The derivation itself is
:func:`hybridgpu.burst.plan.plan_burst`.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hybridgpu.burst.models import BurstPlanFile
from hybridgpu.burst.plan import BurstPlan, BurstPlanError, plan_burst, read_plan_file
from hybridgpu.catalog import Catalog, InstanceType, load_catalog
from hybridgpu.config.economics import EconomicsConfig
from hybridgpu.config.models import CloudConfig, NodePoolConfig, OnPremConfig, StackConfig
from hybridgpu.economics.prices import EconomicsData, UnknownPriceError
from hybridgpu.economics.report import cloud_price_data, pool_gpu_hour_price
from hybridgpu.errors import HybridGpuError, Issue
from hybridgpu.render.karpenter import resolve_instance_types
from hybridgpu.stack.eks_topology import eks_tas_cold_issues
from hybridgpu.stack.files import read_stack_file, stack_config_dir
from hybridgpu.stack.inventory import load_inventory_of


def _stack_section(root: Path, stack: str, key: str, file: str, field_name: str) -> Any:
    """The schema-validated ``hybridgpu:<key>`` section of another stack named by the plan.

    Only that section is validated: the other stack's own cross-section checks (and its burst
    section, which names this plan) are its own ``validate``'s business.
    """
    path = stack_config_dir(root) / f"Pulumi.{stack}.yaml"
    try:
        values = read_stack_file(path, root=root)
    except HybridGpuError as exc:
        fix = f"name a stack that has a readable stacks/Pulumi.<stack>.yaml in `{field_name}`, or repair {stack!r}'s stack file"
        raise BurstPlanError([Issue.in_entry(file, None, field_name, f"cannot read the stack it names: {exc}", fix, "stack")]) from None
    raw = values.values.get(f"hybridgpu:{key}")
    if raw is None:
        message = f"stack {stack!r} ({values.file}) has no `hybridgpu:{key}` section"
        raise BurstPlanError([Issue.in_entry(file, None, field_name, message, f"name the stack that has `hybridgpu:{key}` in `{field_name}`", "stack")])
    model = CloudConfig if key == "cloud" else OnPremConfig
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        message = f"stack {stack!r} has an invalid `hybridgpu:{key}` ({exc.error_count()} problems)"
        fix = f"run `hybridgpu validate {stack}` and fix what it reports in {values.file}"
        raise BurstPlanError([Issue.in_entry(file, None, field_name, message, fix, "stack")]) from None


def load_burst_plan(plan: str, root: Path, current: StackConfig | None = None, catalog: Catalog | None = None) -> BurstPlan:
    """Read the plan file ``plan`` (relative to ``root``) and derive the :class:`BurstPlan`.

    Args:
        plan: plan file path relative to the project root.
        root: project root.
        current: the stack being validated or built; its own sections are used instead of
            re-reading its file.
        catalog: catalog (default: the packaged one).

    Raises:
        BurstPlanError: the plan file, the stacks it names or the derivation is invalid.
        InventoryError: the on-prem inventory is invalid.
    """
    catalog = catalog or load_catalog()
    source = read_plan_file(root / plan, plan)
    if current is not None and current.stack == source.onprem.stack and current.onprem is not None:
        onprem_cfg = current.onprem
    else:
        onprem_cfg = _stack_section(root, source.onprem.stack, "onprem", plan, "onprem.stack")
    if current is not None and current.stack == source.cloud.stack and current.cloud is not None:
        cloud_cfg = current.cloud
    else:
        cloud_cfg = _stack_section(root, source.cloud.stack, "cloud", plan, "cloud.stack")
    if current is not None and current.stack == source.cloud.stack:
        economics = current.economics
    else:
        economics = _economics_section(root, source.cloud.stack)
    source = priced_plan_source(source, cloud_cfg, economics, plan)
    inventory = load_inventory_of(onprem_cfg, root)
    return plan_burst(source, inventory, cloud_cfg, catalog, file=plan)


#: Opens the part of a capacity's ``price_source`` that gives the cost report's differing price.
PLAN_PRICE_DIFFERS = "[the plan's own price"


def burst_price_notes(config: StackConfig, root: Path) -> list[str]:
    """One note per cloud capacity type whose plan price differs from the cloud stack's cost report (for ``validate``).

    Returns:
        ``"<plan file>: cloud.spot.usdPerGpuHour 3.44 USD/GPU-hour differs from ...: <both prices and sources>"``
        per capacity type; empty without ``hybridgpu:burst``, when the prices agree, or when the plan does not load
        (validation reports that).
    """
    if config.burst is None:
        return []
    try:
        plan = load_burst_plan(config.burst.plan, root, current=config)
    except HybridGpuError:
        return []
    notes = []
    for ctype, cap in plan.cloud.items():
        if PLAN_PRICE_DIFFERS in cap.price_source:
            key = "spot" if ctype == "spot" else "onDemand"
            notes.append(f"{plan.file}: cloud.{key}.usdPerGpuHour {cap.usd_per_gpu_hour:.2f} USD/GPU-hour is not the cost report's price "
                         f"(priceSource: {cap.price_source})")
    return notes


def _economics_section(root: Path, stack: str) -> EconomicsConfig | None:
    """The cloud stack's ``hybridgpu:economics`` (its price overrides), or None when absent or invalid
    (an invalid section is that stack's own ``validate``'s business; its prices are then the packaged ones)."""
    try:
        values = read_stack_file(stack_config_dir(root) / f"Pulumi.{stack}.yaml", root=root)
        raw = values.values.get("hybridgpu:economics")
        return None if raw is None else EconomicsConfig.model_validate(raw)
    except (HybridGpuError, ValidationError):
        return None


def priced_plan_source(source: BurstPlanFile, cloud: CloudConfig, economics: EconomicsConfig | None, file: str) -> BurstPlanFile:
    """The plan file with each cloud capacity type's price decided and explained (pure).

    Every price comes from :meth:`hybridgpu.economics.prices.EconomicsData.gpu_hour_price` with the
    cloud stack's ``hybridgpu:economics`` overrides, as its cost report prices the NodePool:

    * ``spot`` without ``usdPerGpuHour``: the cost report's price of the NodePool (its cheapest
      instance type per GPU x the family's ``spotPriceFraction``); ``priceSource`` says so.
    * ``onDemand`` without ``usdPerGpuHour``: the dearest instance type of the pool at On-Demand
      (so a monthly budget is never exceeded, whichever type Karpenter launches); ``priceSource``
      names it, and the cost report's price when that differs.
    * with ``usdPerGpuHour``: kept (it sets the ceiling and the teams' budgets); when it differs from
      the cost report's price by a cent or more, ``priceSource`` gives both numbers and their sources.

    A NodePool that is missing, does not launch the capacity type or has no price is left as is:
    :func:`hybridgpu.burst.plan.cloud_capacity` reports it.

    Raises:
        EconomicsDataError: the cloud stack's overrides make a price entry invalid.
    """
    data = cloud_price_data(economics, label=f"the cloud stack {source.cloud.stack}'s hybridgpu:economics")
    updates: dict[str, Any] = {}
    for attr, ctype in (("spot", "spot"), ("on_demand", "on-demand")):
        spec = getattr(source.cloud, attr)
        pool = next((p for p in cloud.node_pools if spec is not None and p.name == spec.node_pool), None)
        if spec is None or pool is None or ctype not in {c.value for c in pool.capacity_types}:
            continue
        try:
            price = pool_gpu_hour_price(pool, ctype, data)
        except UnknownPriceError:
            continue
        report = f"the cost report of stack {source.cloud.stack} prices NodePool {pool.name} at {price.usd_per_gpu_hour:.2f} USD/GPU-hour: {price.basis()}"
        if spec.usd_per_gpu_hour is not None:
            if round(spec.usd_per_gpu_hour, 2) != round(price.usd_per_gpu_hour, 2):
                note = (f"{spec.price_source} {PLAN_PRICE_DIFFERS} {spec.usd_per_gpu_hour:.2f} USD/GPU-hour sets the ceiling and the teams' budgets; "
                        f"{report}, which `cost report` and `cost showback` use]")
                updates[attr] = spec.model_copy(update={"price_source": note})
            continue
        if ctype == "spot":
            updates[attr] = spec.model_copy(update={"usd_per_gpu_hour": price.usd_per_gpu_hour, "price_source": report})
            continue
        dearest = max((data.gpu_hour_price(t.name, ctype) for t in _priced_types(pool, data)), key=lambda p: (p.usd_per_gpu_hour, p.instance_type))
        note = f"the dearest instance type of NodePool {pool.name} at On-Demand, so the budget holds whichever type Karpenter launches: {dearest.basis()}"
        if round(dearest.usd_per_gpu_hour, 2) != round(price.usd_per_gpu_hour, 2):
            note += f"; {report}"
        updates[attr] = spec.model_copy(update={"usd_per_gpu_hour": dearest.usd_per_gpu_hour, "price_source": note})
    if not updates:
        return source
    return source.model_copy(update={"cloud": source.cloud.model_copy(update=updates)})


def _priced_types(pool: NodePoolConfig, data: EconomicsData) -> list[InstanceType]:
    """The pool's instance types that have an On-Demand price (with the stack's overrides)."""
    return [t for t in resolve_instance_types(pool, data.catalog) if t.usd_per_gpu_hour is not None]


def burst_issues(config: StackConfig, file: str, root: Path | None = None, catalog: Catalog | None = None) -> tuple[list[Issue], BurstPlan | None]:
    """Problems of a stack's ``hybridgpu:burst`` section, as config issues (empty when sound).

    Checks that the plan loads and derives, that the stack takes part in it, that the stack has
    the cluster its role needs, and (cloud worker) that every burst NodePool's ``gpuLimit``
    equals the ceiling the plan derives.

    Returns:
        ``(issues, plan)``: the derived plan when it loads and the stack takes part in it, else None.
    """
    assert config.burst is not None
    root = root or Path.cwd()
    key = "hybridgpu:burst.plan"
    try:
        plan = load_burst_plan(config.burst.plan, root, current=config, catalog=catalog)
    except HybridGpuError as exc:  # the plan file, a stack it names, or the on-prem inventory
        found: list[Issue] = getattr(exc, "issues", None) or []
        if not found:
            return [Issue(file, key, str(exc), "fix the files it names")], None
        return [Issue(file, key, f"{issue.where}: {issue.message}", issue.fix, issue.code) for issue in found], None
    role = plan.role_of(config.stack)
    if role is None:
        stacks = ", ".join(sorted(plan.clusters))
        return [Issue(file, key, f"stack {config.stack!r} takes no part in {config.burst.plan} (stacks: {stacks})", "remove `hybridgpu:burst` or name this stack in the plan")], None
    issues: list[Issue] = []
    if role in ("onprem-worker", "onprem-manager") and config.onprem is None:
        issues.append(Issue(file, "hybridgpu:onprem", f"the burst plan makes this stack the on-prem cluster ({role})", "add `hybridgpu:onprem` or fix `onprem.stack` in the plan"))
    if role == "cloud-worker" and config.cloud is None:
        issues.append(Issue(file, "hybridgpu:cloud", "the burst plan makes this stack the cloud worker", "add `hybridgpu:cloud` or fix `cloud.stack` in the plan"))
    if role == "manager" and config.cloud is None and config.onprem is None:
        issues.append(
            Issue(file, "hybridgpu:burst", "the spillover manager needs a cluster of its own", "add a small `hybridgpu:cloud` cluster (no GPU NodePools) to this stack")
        )
    if role == "cloud-worker" and config.cloud is not None:
        limits = plan.nodepool_limits()
        for i, pool in enumerate(config.cloud.node_pools):
            want = limits.get(pool.name)
            if want is not None and pool.gpu_limit != want:
                cap = next(c for c in plan.cloud.values() if c.node_pool == pool.name)
                origin = "spot" if cap.capacity_type == "spot" else "onDemand"
                issues.append(
                    Issue(
                        file,
                        f"hybridgpu:cloud.nodePools[{i}].gpuLimit",
                        f"is {pool.gpu_limit} but the burst plan {config.burst.plan} derives {want} GPUs for NodePool {pool.name!r} "
                        f"(cloud.{origin}.{cap.ceiling_from}); Kueue would admit jobs Karpenter cannot place, or leave GPUs unused",
                        f"set `gpuLimit: {want}`, or change cloud.{origin} in {config.burst.plan}",
                    )
                )
        # The EFA pools' topology-aware queues admit only onto nodes that exist from cold (stack/eks_topology.py).
        worker = plan.clusters[config.stack]
        issues += eks_tas_cold_issues(config.cloud, catalog or load_catalog(), file, namespaces=worker.namespaces, prefix=plan.source.kueue.prefix)
    issues += reachability_issues(plan, config, file, root)
    return issues, plan


def _stack_file(root: Path, stack: str) -> str:
    """``stacks/Pulumi.<stack>.yaml`` as the user knows it (relative to the project root)."""
    path = stack_config_dir(root) / f"Pulumi.{stack}.yaml"
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def manager_source_networks(plan: BurstPlan, config: StackConfig, root: Path) -> tuple[list[ipaddress.IPv4Network | ipaddress.IPv6Network], str]:
    """The networks the MultiKueue manager's requests to a worker API come from, and where they are declared.

    A manager on EKS (``hybridgpu:cloud``): its VPC CIDR (``network.new.cidr`` or ``network.existing.cidr``;
    none when an existing VPC's CIDR is not given). A manager on the on-prem cluster: the inventory's
    ``management`` networks (the nodes' addresses, which pod traffic leaves from when the CNI masquerades,
    Cilium's and Calico's default).

    Raises:
        BurstPlanError: the manager stack's section cannot be read.
    """
    stack = plan.source.manager_stack
    cloud = config.cloud if config.stack == stack else None
    onprem = config.onprem if config.stack == stack else None
    if config.stack != stack:
        values = read_stack_file(stack_config_dir(root) / f"Pulumi.{stack}.yaml", root=root)
        if values.values.get("hybridgpu:cloud") is not None:
            cloud = _stack_section(root, stack, "cloud", plan.file, "manager.stack")
        elif values.values.get("hybridgpu:onprem") is not None:
            onprem = _stack_section(root, stack, "onprem", plan.file, "manager.stack")
    if cloud is not None:
        net = cloud.network.new or cloud.network.existing
        cidr = getattr(net, "cidr", None) if net is not None else None
        where = "hybridgpu:cloud.network." + ("new" if cloud.network.new else "existing") + ".cidr"
        return ([ipaddress.ip_network(cidr)] if cidr else []), where
    if onprem is not None:
        inventory = load_inventory_of(onprem, root)
        return [n.cidr for n in inventory.site.networks if n.purpose == "management"], "the inventory's `management` networks"
    return [], "none"


def reachability_issues(plan: BurstPlan, config: StackConfig, file: str, root: Path) -> list[Issue]:
    """The manager cannot reach the EKS worker's API server: one issue naming both stack files and the fix.

    The MultiKueue manager connects to each worker's API server with the kubeconfig of its
    MultiKueueCluster (``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``, Kueue v0.19.2);
    an unreachable worker stays ``Active=False`` and nothing is dispatched to it. The EKS endpoint built
    by :mod:`hybridgpu.components.eks` admits HTTPS on the private endpoint only from its VPC and
    from ``endpoint.privateAccessCidrs`` (cluster security group ingress rules); the public endpoint's
    source address behind NAT is not known offline, so only the private path counts. Checked when
    validating the manager stack and the cloud worker stack.

    Returns:
        Issues (empty when every manager network lies in an allowed CIDR, or the manager's network is not known).
    """
    role = plan.role_of(config.stack)
    if role not in ("manager", "onprem-manager", "cloud-worker"):
        return []
    manager = plan.source.manager_stack
    worker = plan.source.cloud.stack
    try:
        sources, where = manager_source_networks(plan, config, root)
        cloud = config.cloud if config.stack == worker else _stack_section(root, worker, "cloud", plan.file, "cloud.stack")
    except HybridGpuError:
        return []  # reported by the stacks' own validation
    if not sources or cloud is None:
        return []
    endpoint = cloud.cluster.endpoint
    allowed = [ipaddress.ip_network(c) for c in endpoint.private_access_cidrs]
    net = cloud.network.new or cloud.network.existing
    worker_vpc = getattr(net, "cidr", None) if net is not None else None
    missing = [s for s in sources if not endpoint.private_access or not any(s.version == a.version and s.subnet_of(a) for a in allowed)]  # type: ignore[arg-type]
    if not missing:
        return []
    manager_file, worker_file = _stack_file(root, manager), _stack_file(root, worker)
    cidrs = ", ".join(str(m) for m in missing)
    message = (
        f"the MultiKueue manager (stack {manager!r}, {manager_file}: {where} {cidrs}) cannot reach the API server of the EKS worker "
        f"(stack {worker!r}, {worker_file}): its private endpoint admits only "
        f"{', '.join(map(str, allowed)) or 'its own VPC'}{'' if endpoint.private_access else ' and private access is off'}; "
        "the MultiKueueCluster would stay Active=False and nothing would burst"
    )
    fix = (
        f"in {worker_file} add {cidrs} to `hybridgpu:cloud.cluster.endpoint.privateAccessCidrs`"
        f"{'' if endpoint.private_access else ' and set `privateAccess: true`'}, and route {cidrs} to the worker VPC"
        f"{' ' + str(worker_vpc) if worker_vpc else ''} (VPC peering or a Transit Gateway attachment; from on-prem: Direct Connect or VPN to that gateway)"
    )
    key = "hybridgpu:cloud.cluster.endpoint.privateAccessCidrs" if config.stack == worker else "hybridgpu:burst.plan"
    return [Issue(file, key, message, fix, "unreachable-worker")]
