"""A stack's part in bursting: the burst plan with the stacks it names, checked against the stack (pure).

A burst plan file names an on-prem stack and a cloud stack; deriving it needs their
``hybridgpu:onprem`` and ``hybridgpu:cloud`` sections, read from their stack files (offline and
under ``pulumi up`` alike: the program runs in the project directory). The derivation itself is
:func:`hybridgpu.burst.plan.plan_burst`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hybridgpu.burst.plan import BurstPlan, BurstPlanError, plan_burst, read_plan_file
from hybridgpu.catalog import Catalog, load_catalog
from hybridgpu.config.models import CloudConfig, OnPremConfig, StackConfig
from hybridgpu.errors import HybridGpuError, Issue
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
    inventory = load_inventory_of(onprem_cfg, root)
    return plan_burst(source, inventory, cloud_cfg, catalog, file=plan)


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
    return issues, plan
