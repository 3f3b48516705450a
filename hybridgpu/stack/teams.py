"""A stack's teams file checked against the one source of truth: the inventory, the NodePools, the burst plan, the cost keys (pure).

The teams file (:class:`~hybridgpu.teams.models.TeamsFile`) checks its own rules when it loads
(unique teams and namespaces, priority classes defined, limits within quotas). The rules here
read other files, so they live in the stack layer (docs/architecture.md, rule 1):

* ``onprem-flavor``: each on-prem share names a GPU model and resource the inventory's active
  GPU workers offer (the flavors of :func:`hybridgpu.burst.plan.onprem_capacity`);
* ``onprem-capacity``: per GPU model and resource, the teams' ``nominalQuota`` add up to exactly the
  inventory's schedulable capacity (more: Kueue would admit what no node can run; fewer: the rest
  is in no ClusterQueue and Kueue never admits anything on it);
* ``borrowing-capacity``: ``nominalQuota + borrowingLimit`` of a share is at most the cohort's
  capacity of that flavor (what the team could ever hold);
* ``cloud-capacity``: per capacity type, the teams' cloud ``nominalQuota`` add up to at most the
  plan's ceiling, which is the NodePool's ``gpuLimit`` (checked by :mod:`hybridgpu.stack.burst`);
  a cloud share's ``nominalQuota + borrowingLimit`` is at most the teams' shares of that type
  (``borrowing-capacity``: a team borrows only other teams' unused nominal quota);
* ``cloud-type``: a cloud share is for a capacity type the plan configures and one of the team's
  queues bursts to; a queue that bursts has its team's share of that type;
* ``team-budget``: ``sum((nominalQuota + borrowingLimit) x USD per GPU-hour) x hoursPerMonth`` of a
  team's cloud shares is within its ``monthlyCloudBudgetUsd``;
* ``plan-budget``: the teams' budgets add up to at most what the plan's cloud capacity can cost in
  a month (``sum(ceiling x USD per GPU-hour) x hoursPerMonth`` over spot and on-demand);
* ``cost-labels``: each team's ``costLabels`` has exactly the keys the policy pack requires of the
  stack (``hybridgpu:requiredTagKeys``, default :data:`hybridgpu.k8s.DEFAULT_COST_KEYS`: ``team``,
  ``project``, ``cost-center``, which is also the default ``requiredLabels`` of the pack's
  ``gpu-workload-cost-labels`` policy on GPU pods, :mod:`hybridgpu.policy.untagged`);
* ``gang-timeout``: ``waitForPodsReady.timeout`` is longer than the plan's ``karpenterLaunchSeconds``
  (the manager mirrors the worker Job's ready pods, ``SyncJob`` in Kueue v0.19.2
  ``pkg/controller/jobs/job/job_multikueue_adapter.go``, so a burst job's timer includes the node launch);
* ``queue-owner``: every queue of the plan is in a team's namespace, every team namespace holds a
  queue; on the spillover manager a team's queues all burst or none does;
* ``same-teams``: every stack of the burst plan names the same teams file; teams need a burst plan.
"""

from __future__ import annotations

import re
from pathlib import Path

from hybridgpu.burst.plan import BurstPlan
from hybridgpu.burst.teams import apply_teams, team_classes
from hybridgpu.config.models import StackConfig
from hybridgpu.errors import HybridGpuError, Issue
from hybridgpu.k8s import GPU_RESOURCE
from hybridgpu.stack.files import read_stack_file, stack_config_dir
from hybridgpu.teams.models import TeamsError, TeamsFile, read_teams_file

_KEY = "hybridgpu:teams.file"


def _issue(file: str, key: str | None, message: str, fix: str, code: str) -> Issue:
    return Issue(file, key, message, fix, code)


def _cloud_issues(plan: BurstPlan, teams: TeamsFile, file: str) -> list[Issue]:
    """The ``cloud-type``, ``team-budget``, ``cloud-capacity``, ``borrowing-capacity`` (cloud) and ``plan-budget`` issues of ``teams`` (see the module docstring)."""
    issues: list[Issue] = []
    hours = plan.source.cloud.hours_per_month
    cloud_totals: dict[str, int] = {}
    cloud_last: dict[str, str] = {}
    for t, team in enumerate(teams.teams):
        classes = team_classes(plan, team)
        spend = 0.0
        parts = []
        for c, share in enumerate(team.cloud):
            where = f"teams[{t}].cloud[{c}]"
            ctype = share.capacity_type
            key = "spot" if ctype == "spot" else "onDemand"
            cap = plan.cloud.get(ctype)
            if cap is None:
                issues.append(
                    _issue(file, f"{where}.capacityType", f"the burst plan {plan.file} configures no `cloud.{key}`", f"remove this share, or add `cloud.{key}` to {plan.file}", "cloud-type")
                )
                continue
            if ctype not in classes:
                message = f"no queue of team {team.name!r} (namespaces {', '.join(team.namespaces)}) bursts to {ctype} in {plan.file}"
                fix = f"remove this share, or set `burst: {ctype}` on one of the team's queues in {plan.file}"
                issues.append(_issue(file, f"{where}.capacityType", message, fix, "cloud-type"))
            cloud_totals[ctype] = cloud_totals.get(ctype, 0) + share.nominal_quota
            cloud_last[ctype] = f"{where}.nominalQuota"
            held = share.nominal_quota + share.borrowing_limit
            cost = held * cap.usd_per_gpu_hour * hours
            spend += cost
            parts.append(f"{held} {ctype} GPUs x {cap.usd_per_gpu_hour:g} USD/GPU-hour")
        if spend > team.monthly_cloud_budget_usd + 1e-6:
            message = (
                f"team {team.name!r}'s cloud shares can cost {spend:,.2f} USD a month ({' + '.join(parts)}, x {hours:g} h), "
                f"more than its monthlyCloudBudgetUsd {team.monthly_cloud_budget_usd:,.2f}"
            )
            fix = f"raise `monthlyCloudBudgetUsd` to at least {spend:,.2f}, or lower the team's cloud `nominalQuota`/`borrowingLimit`"
            issues.append(_issue(file, f"teams[{t}].monthlyCloudBudgetUsd", message, fix, "team-budget"))
        for cls in classes:
            if cls != "none" and cls in plan.cloud and not any(s.capacity_type == cls for s in team.cloud):
                message = f"team {team.name!r} has a queue that bursts to {cls} but no {cls} share: Kueue would never admit its jobs in the cloud"
                fix = f"add `{{capacityType: {cls}, nominalQuota: <GPUs>}}` to the team's `cloud`, or set `burst: none` on the queue in {plan.file}"
                issues.append(_issue(file, f"teams[{t}].cloud", message, fix, "cloud-type"))
    for kind, got in sorted(cloud_totals.items()):
        cap = plan.cloud[kind]
        if got > cap.gpus:
            message = f"the teams' {kind} nominalQuota add up to {got} GPUs, more than the plan's ceiling {cap.gpus} (NodePool {cap.node_pool} gpuLimit)"
            issues.append(_issue(file, cloud_last[kind], message, f"lower the teams' {kind} `nominalQuota` by {got - cap.gpus} in total", "cloud-capacity"))
            continue
        # A team borrows only the others' unused nominal quota: GPUs of the ceiling in no team's share are in no ClusterQueue.
        for t, team in enumerate(teams.teams):
            for c, share in enumerate(team.cloud):
                if share.capacity_type != kind or share.nominal_quota + share.borrowing_limit <= got:
                    continue
                message = (
                    f"nominalQuota + borrowingLimit = {share.nominal_quota + share.borrowing_limit} {kind} GPUs, but the teams' {kind} shares add up to {got} "
                    f"(of the plan's ceiling {cap.gpus}): a team borrows only other teams' unused nominal quota"
                )
                fix = f"set `borrowingLimit` to at most {got - share.nominal_quota}, or give the other {cap.gpus - got} {kind} GPUs of the ceiling to teams' `nominalQuota`"
                issues.append(_issue(file, f"teams[{t}].cloud[{c}].borrowingLimit", message, fix, "borrowing-capacity"))
    plan_spend = sum(c.gpus * c.usd_per_gpu_hour * hours for c in plan.cloud.values())
    budgets = sum(t.monthly_cloud_budget_usd for t in teams.teams)
    if budgets > plan_spend + 1e-6:
        detail = " + ".join(f"{c.gpus} {c.capacity_type} GPUs x {c.usd_per_gpu_hour:g} USD/GPU-hour" for c in plan.cloud.values()) or "no cloud capacity"
        message = (
            f"the teams' monthlyCloudBudgetUsd add up to {budgets:,.2f} USD, more than the plan's cloud capacity can cost in a month: "
            f"{plan_spend:,.2f} ({detail}, x {hours:g} h)"
        )
        fix = f"lower the teams' budgets by {budgets - plan_spend:,.2f} USD in total, or raise the plan's ceilings/budgets in {plan.file}"
        issues.append(_issue(file, f"teams[{len(teams.teams) - 1}].monthlyCloudBudgetUsd", message, fix, "plan-budget"))
    return issues


def teams_file_issues(plan: BurstPlan, teams: TeamsFile, file: str, required_keys: list[str]) -> list[Issue]:
    """Every problem of ``teams`` against the derived burst plan (capacities, ceilings, prices) and the required cost keys.

    Args:
        plan: the derived burst plan (on-prem capacity from the inventory, cloud ceilings and prices).
        teams: the validated teams file.
        file: the teams file as the user knows it (named in every issue).
        required_keys: the cost keys the policy pack requires of the stack.

    Returns:
        Issues in the teams file, each with its key path (``teams[0].onprem[1].nominalQuota``) and a fix.
    """
    issues: list[Issue] = []
    onprem = plan.onprem
    capacity: dict[tuple[str, str], int] = {(m, GPU_RESOURCE): n for m, n in onprem.gpus.items()}
    for model, per in onprem.mig.items():
        for res, n in per.items():
            capacity[(model, res)] = n
    offered = ", ".join(f"{m} {r}" for m, r in sorted(capacity)) or "none"
    totals: dict[tuple[str, str], int] = {}
    last: dict[tuple[str, str], str] = {}
    for t, team in enumerate(teams.teams):
        for s, share in enumerate(team.onprem):
            where = f"teams[{t}].onprem[{s}]"
            key = (share.gpu_model, share.resource)
            if key not in capacity:
                issues.append(
                    _issue(
                        file,
                        f"{where}.resource" if any(m == share.gpu_model for m, _ in capacity) else f"{where}.gpuModel",
                        f"the inventory's active GPU workers offer no {share.resource} of {share.gpu_model} (offered: {offered})",
                        f"use one of: {offered}; or change the hosts' GPUs/MIG layouts in the inventory",
                        "onprem-flavor",
                    )
                )
                continue
            totals[key] = totals.get(key, 0) + share.nominal_quota
            last[key] = f"{where}.nominalQuota"
    for key, cap in sorted(capacity.items()):
        got = totals.get(key, 0)
        if got == cap:
            continue
        model, res = key
        if got > cap:
            message = f"the teams' nominalQuota of {model} {res} add up to {got}, but the inventory's active hosts have {cap}: Kueue would admit jobs no node can run"
            fix = f"lower the teams' `nominalQuota` of {model} {res} by {got - cap} in total"
        else:
            message = f"the teams' nominalQuota of {model} {res} add up to {got} of the {cap} the inventory's active hosts have: the other {cap - got} are in no ClusterQueue and Kueue never admits a job on them"
            fix = f"give the remaining {cap - got} to one or more teams' `onprem` shares of {model} {res}"
        issues.append(_issue(file, last.get(key, "teams"), message, fix, "onprem-capacity"))
    for t, team in enumerate(teams.teams):
        for s, share in enumerate(team.onprem):
            key = (share.gpu_model, share.resource)
            cohort = totals.get(key, 0)
            if key in capacity and share.borrowing_limit is not None and share.nominal_quota + share.borrowing_limit > cohort:
                issues.append(
                    _issue(
                        file,
                        f"teams[{t}].onprem[{s}].borrowingLimit",
                        f"{share.borrowing_limit} lets team {team.name!r} hold {share.nominal_quota + share.borrowing_limit} {res_name(share.resource)} of {share.gpu_model}, but the cohort has {cohort}",
                        f"set `borrowingLimit` to at most {cohort - share.nominal_quota}, or leave it out (no limit: up to what the others lend)",
                        "borrowing-capacity",
                    )
                )

    issues += _cloud_issues(plan, teams, file)

    # ---- gang admission: the pods of a burst job start only after Karpenter launched a node
    sim = plan.source.simulation
    timeout = duration_seconds(teams.wait_for_pods_ready.timeout)
    if sim is not None and plan.cloud and timeout <= sim.karpenter_launch_seconds:
        message = (
            f"waitForPodsReady.timeout {teams.wait_for_pods_ready.timeout} ({timeout:g} s) is not longer than the burst plan's "
            f"karpenterLaunchSeconds ({sim.karpenter_launch_seconds:g} s): every job that bursts would be evicted before its node is ready, "
            "and requeued again and again (the manager mirrors the worker Job's ready pods)"
        )
        fix = f"set `waitForPodsReady.timeout` well above {sim.karpenter_launch_seconds:g} s plus the image pull, e.g. `{max(10, int(sim.karpenter_launch_seconds // 60) * 2 + 5)}m`"
        issues.append(_issue(file, "waitForPodsReady.timeout", message, fix, "gang-timeout"))

    # ---- cost labels
    required = list(required_keys)
    for t, team in enumerate(teams.teams):
        missing = [k for k in required if k not in team.cost_labels]
        extra = [k for k in team.cost_labels if k not in required]
        if missing:
            issues.append(
                _issue(
                    file,
                    f"teams[{t}].costLabels",
                    f"misses {', '.join(missing)}: the policy pack requires {', '.join(required)} on GPU pods, and showback attributes cost by them",
                    f"add {', '.join(f'`{k}: <value>`' for k in missing)} to `costLabels`",
                    "cost-labels",
                )
            )
        for k in extra:
            issues.append(
                _issue(
                    file,
                    f"teams[{t}].costLabels.{k}",
                    f"{k!r} is not a cost key the policy pack requires of this stack ({', '.join(required)})",
                    f"remove {k!r}, or add it to `hybridgpu:requiredTagKeys` of every stack of {plan.file}",
                    "cost-labels",
                )
            )

    # ---- queues and namespaces
    queue_ns = {q.namespace for q in plan.source.queues}
    for i, q in enumerate(plan.source.queues):
        if teams.team_of_namespace(q.namespace) is None:
            message = f"queue {q.namespace}/{q.name} of {plan.file} (queues[{i}]) is in no team's namespace: no team ClusterQueue would admit it"
            issues.append(_issue(file, "teams", message, f"add {q.namespace!r} to a team's `namespaces`", "queue-owner"))
    for t, team in enumerate(teams.teams):
        for n, ns in enumerate(team.namespaces):
            if ns not in queue_ns:
                message = f"namespace {ns!r} holds no queue of {plan.file}: jobs there would find no LocalQueue"
                fix = f"add a queue with `namespace: {ns}` to {plan.file}, or remove {ns!r} from the team"
                issues.append(_issue(file, f"teams[{t}].namespaces[{n}]", message, fix, "queue-owner"))
        classes = team_classes(plan, team)
        if plan.source.topology == "spillover" and "none" in classes and len(classes) > 1:
            message = (
                f"team {team.name!r} has queues that burst ({', '.join(c for c in classes if c != 'none')}) and queues that stay on-prem; on the "
                "spillover manager a ClusterQueue has one MultiKueue admission check, so the team's one ClusterQueue cannot do both"
            )
            fix = "give the on-prem-only queues' namespace to a team of its own, or make the team's queues all burst (or all `burst: none`)"
            issues.append(_issue(file, f"teams[{t}].namespaces", message, fix, "queue-owner"))
    return issues


def duration_seconds(text: str) -> float:
    """Seconds of a Go duration as the models accept it (``10m``, ``1h30m``, ``90s``)."""
    units = {"s": 1, "m": 60, "h": 3600}
    return float(sum(int(n) * units[u] for n, u in re.findall(r"([0-9]+)(s|m|h)", text)))


def res_name(resource: str) -> str:
    """``GPUs`` for ``nvidia.com/gpu``, else the resource itself (for messages)."""
    return "GPUs" if resource == GPU_RESOURCE else resource


def _other_stacks_teams(plan: BurstPlan, config: StackConfig, root: Path, file: str) -> list[Issue]:
    """Every stack of the plan names the same teams file as ``config`` (one issue per stack that does not)."""
    assert config.teams is not None
    issues = []
    for stack in sorted(plan.clusters):
        if stack == config.stack:
            continue
        path = stack_config_dir(root) / f"Pulumi.{stack}.yaml"
        try:
            values = read_stack_file(path, root=root)
        except HybridGpuError:
            continue  # the burst plan's own check reports an unreadable stack
        raw = values.values.get("hybridgpu:teams")
        other = raw.get("file") if isinstance(raw, dict) else None
        if other != config.teams.file:
            said = f"names {other!r}" if other else "has no `hybridgpu:teams`"
            message = f"stack {stack!r} ({values.file}) of the burst plan {plan.file} {said}: its cluster would not have the teams' queues"
            fix = f"set `hybridgpu:teams: {{file: {config.teams.file}}}` in {values.file} (every stack of the plan names the same teams file)"
            issues.append(Issue(file, _KEY, message, fix, "same-teams"))
    return issues


def load_teams(config: StackConfig, root: Path) -> TeamsFile:
    """The stack's teams file (``hybridgpu:teams.file`` relative to ``root``).

    Raises:
        TeamsError: the file is missing or invalid.
    """
    assert config.teams is not None
    return read_teams_file(root / config.teams.file, config.teams.file)


def teams_issues(config: StackConfig, file: str, plan: BurstPlan | None, *, root: Path) -> tuple[list[Issue], BurstPlan | None]:
    """Problems of a stack's ``hybridgpu:teams`` as config issues, and the burst plan with the teams' queues.

    Args:
        config: the stack's config (with ``teams``).
        file: the stack file.
        plan: the stack's derived burst plan (None when it has no ``hybridgpu:burst``).
        root: project root.

    Returns:
        ``(issues, plan)``: the plan with one ClusterQueue per team (:func:`hybridgpu.burst.teams.apply_teams`)
        when there are no issues, else the plan unchanged.
    """
    assert config.teams is not None
    if plan is None:
        message = "teams share the GPUs through Kueue, which the toolkit installs from a burst plan; this stack has no `hybridgpu:burst`"
        fix = "add `hybridgpu:burst: {plan: stacks/burst/<site>.yaml}` naming the plan whose stacks the teams share, or remove `hybridgpu:teams`"
        return [Issue(file, _KEY, message, fix, "teams-need-burst")], plan
    try:
        teams = load_teams(config, root)
    except TeamsError as exc:
        return [Issue(file, _KEY, f"{issue.where}: {issue.message}", issue.fix, issue.code) for issue in exc.issues], plan
    found = teams_file_issues(plan, teams, config.teams.file, list(config.required_tag_keys))
    issues = [Issue(file, _KEY, f"{issue.where}: {issue.message}", issue.fix, issue.code) for issue in found]
    issues += _other_stacks_teams(plan, config, root, file)
    if issues:
        return issues, plan
    return [], apply_teams(plan, teams)
