"""``hybridgpu cost``: GPU economics in the terminal.

* ``hybridgpu cost report STACK [--utilization 0.3,0.5,0.8] [--plot DIR] [--json]``: what the
  stack's capacity costs per month at those utilizations, cost per productive GPU-hour, the
  break-even utilization against each cloud option, the burst spend the NodePool limits allow,
  checkpoint egress and right-sizing hints; ``--plot`` writes the two PNGs. With ``--job-gpus N
  --checkpoint-minutes C [--failure-rate ...]``, prices per productive GPU-hour include the work
  lost to failures, and a table lists the GPU-hours and USD lost per month.
* ``hybridgpu cost checkpoint --gpus N --checkpoint-minutes C [--restore-minutes R] [--restart-minutes D]
  [--failure-rate F | --gpu-mtbf-hours H | --failure-source NAME] [--stack S [--capacity K] | --price USD] [--json]``:
  Young's and Daly's checkpoint intervals, the goodput, and the GPU-hours and USD lost per month.
* ``hybridgpu cost plan (--demand CSV | --generate) [--stack STACK | --instance-type T --onprem-gpu M] [--max-wait H] [--json]``:
  the cheapest on-prem / committed / spot / On-Demand mix for an hourly demand (HiGHS), against
  the simple alternatives; with ``--capacity-blocks FILE --demand-start T``, which EC2 Capacity Block
  offers to buy as well (:mod:`hybridgpu.economics.capacity_blocks`).
* ``hybridgpu cost demand OUT.csv [--hours ... --seed N]``: write a generated demand profile.
* ``hybridgpu cost vram PARAMS_B [--mode training --precision bf16 --optimizer adam]``: VRAM
  estimate and the smallest GPU / MIG profile that holds it.
* ``hybridgpu cost showback EXPORT [--stack STACK ... | --price owned=3.1,spot=2.4] [--teams FILE] [--plot DIR] [--json]``:
  per team and project, GPU-hours by side and capacity type, cost, share of idle cost and the
  top idle allocations, from a usage CSV/JSON, an OpenCost allocation export or a Kueue workload list.

Exit code 2 on bad input (the message names the file, field and fix). Nothing here imports Pulumi.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from hybridgpu.errors import HybridGpuError
from hybridgpu.stack.load import load_stack, report_from_stack

cost_app = typer.Typer(no_args_is_help=True, help="GPU economics: cost report, capacity plan, demand profiles, VRAM estimate.")


from hybridgpu.cli.common import Col, print_table, print_wrapped, progress
from hybridgpu.cli.common import console as _console
from hybridgpu.cli.common import fail as _fail


def parse_utilizations(text: str) -> list[float]:
    """Parse ``0.3,0.5,0.8`` (fractions) or ``30%,50%`` into sorted distinct fractions in (0, 1].

    Raises:
        ValueError: an item that is not a number or is outside (0, 1].
    """
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        pct = item.endswith("%")
        try:
            value = float(item[:-1]) / 100 if pct else float(item)
        except ValueError:
            raise ValueError(f"--utilization: {item!r} is not a number (use fractions like 0.5 or percentages like 50%)") from None
        if not 0 < value <= 1:
            raise ValueError(f"--utilization: {item!r} is outside (0, 1] (use fractions like 0.5 or percentages like 50%)")
        out.append(value)
    if not out:
        raise ValueError("--utilization: give at least one value, e.g. 0.3,0.5,0.8")
    return sorted(set(out))


def _usd(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}"


@cost_app.command()
def report(
    stack: Annotated[str, typer.Argument(help="Stack name (stacks/Pulumi.<stack>.yaml).")],
    utilization: Annotated[str | None, typer.Option(help="Utilizations to price, e.g. 0.3,0.5,0.8 (default: hybridgpu:economics.utilizations).")] = None,
    plot: Annotated[Path | None, typer.Option(help="Directory to write <stack>-cost-vs-utilization.png and <stack>-cumulative.png to.")] = None,
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    job_gpus: Annotated[int | None, typer.Option(help="Price lost work: GPUs of a typical job (turns failure accounting on; see `cost checkpoint`).")] = None,
    failure_rate: Annotated[float | None, typer.Option(help="Lost work: failures per GPU-hour (default with --job-gpus: the packaged Llama 3 rate).")] = None,
    gpu_mtbf_hours: Annotated[float | None, typer.Option(help="Lost work: MTBF of one GPU in hours (instead of --failure-rate).")] = None,
    failure_source: Annotated[str | None, typer.Option(help="Lost work: packaged failure rate by name, e.g. llama3-405b-gpu (an unknown name lists the known ones).")] = None,
    checkpoint_minutes: Annotated[float | None, typer.Option(help="Lost work: minutes to write one checkpoint (needed with --job-gpus).")] = None,
    restore_minutes: Annotated[float, typer.Option(help="Lost work: minutes to load a checkpoint.")] = 0.0,
    restart_minutes: Annotated[float, typer.Option(help="Lost work: restart overhead in minutes.")] = 0.0,
) -> None:
    """What the stack's GPU capacity costs, its break-even utilization and burst spend (offline); with --job-gpus, the work lost to failures."""
    failure = None
    try:
        us = parse_utilizations(utilization) if utilization else None
        plan = failure_plan(job_gpus, failure_rate, gpu_mtbf_hours, failure_source, checkpoint_minutes, restore_minutes, restart_minutes)
        rep = report_from_stack(stack, root, us)
        written = write_plots(rep, plot) if plot is not None else []
    except (HybridGpuError, ValueError, KeyError) as exc:
        _fail(str(exc))
    owned = owned_gpu_hour_price(rep)
    if plan is not None:
        from hybridgpu.economics.failure import report_with_failures

        rep, failure = report_with_failures(rep, plan)
    if as_json:
        data = rep.to_dict()
        data["ownedUsdPerGpuHour"] = owned
        data["plots"] = [str(p) for p in written]
        if failure is not None:
            data["failure"] = failure
        _console().print_json(json.dumps(data, default=str))
        return
    print_report(rep)
    if failure is not None:
        print_failure(failure, rep.utilizations)
    if owned is not None:
        _console().print(f"owned GPU-hour (OpenCost's on-prem GPU price, showback's `owned`): {owned:.4f} USD")
    for path in written:
        _console().print(f"wrote {path}")


def failure_plan(job_gpus: int | None, failure_rate: float | None, gpu_mtbf_hours: float | None, failure_source: str | None,
                 checkpoint_minutes: float | None, restore_minutes: float, restart_minutes: float) -> Any:
    """The :class:`~hybridgpu.economics.failure.CheckpointPlan` ``cost report`` prices lost work with, or None when no failure option is given.

    Raises:
        FailureInputError, ValueError: a failure option without ``--job-gpus`` or ``--checkpoint-minutes``, or a bad value (one line).
    """
    from hybridgpu.economics.failure import plan_checkpoint

    given = [o for o, v in (("--job-gpus", job_gpus), ("--failure-rate", failure_rate), ("--gpu-mtbf-hours", gpu_mtbf_hours),
                            ("--failure-source", failure_source), ("--checkpoint-minutes", checkpoint_minutes)) if v is not None]
    if restore_minutes or restart_minutes:
        given.append("--restore-minutes/--restart-minutes")
    if not given:
        return None
    if job_gpus is None or checkpoint_minutes is None:
        raise ValueError(f"{given[0]}: pricing lost work needs --job-gpus N and --checkpoint-minutes M (the typical job's GPUs and checkpoint write time)")
    try:
        inputs, source = failure_inputs(job_gpus, failure_rate, gpu_mtbf_hours, failure_source, checkpoint_minutes, restore_minutes, restart_minutes)
    except ValueError as exc:  # the command's option is --job-gpus, not `cost checkpoint`'s --gpus
        raise ValueError(str(exc).replace("--gpus:", "--job-gpus:", 1)) from None
    return plan_checkpoint(inputs, rate_source=source)


def print_failure(failure: dict[str, Any], utilizations: list[float]) -> None:
    """Print the failure section of :func:`hybridgpu.economics.failure.report_with_failures` (lost GPU-hours and USD per month)."""
    console = _console()
    plan = failure["plan"]
    keys = [f"{u:g}" for u in utilizations]
    title = (f"lost to failures: jobs of {plan['gpus']} GPUs, job MTBF {plan['jobMtbfHours']:,.1f} h, checkpoint every "
             f"{plan['dalyIntervalHours'] * 60:,.0f} min (Daly), goodput {plan['goodput']:.2%}; GPU-hours (USD) per month")
    rows = [[line["name"], *(f"{line['lostGpuHoursPerMonth'][k]:,.0f} ({_usd(line['lostUsdPerMonth'][k])})" for k in keys)] for line in failure["lines"]]
    rows.append(["total", *(f"{failure['lostGpuHoursPerMonth'][k]:,.0f} ({_usd(failure['lostUsdPerMonth'][k])})" for k in keys)])
    print_table(console, title, ["capacity", *(Col(f"u={k}", True) for k in keys)], rows)
    console.print(f"prices per productive GPU-hour above include the lost work (divided by the goodput); break-even utilizations do not move "
                  f"(the same rate on both sides). Failure rate: {plan['failuresPerGpuHour']:.4g} per GPU-hour ({plan['rateSource']})")


def owned_gpu_hour_price(rep: Any) -> float | None:
    """The on-prem GPU price OpenCost gets (:func:`hybridgpu.economics.opencost.onprem_gpu_usd_per_hour`), or None without on-prem capacity."""
    from hybridgpu.economics.opencost import OpenCostPriceError, onprem_gpu_usd_per_hour

    try:
        return onprem_gpu_usd_per_hour(rep)
    except OpenCostPriceError:
        return None


#: What ``--plot`` says when matplotlib (the ``plots`` extra, pyproject.toml) is not installed.
PLOTS_MISSING = "--plot needs matplotlib, which is not installed: run `pip install 'hybridgpu[plots]'`"


def _plotting() -> tuple[Any, Any]:
    """The plotting modules, :mod:`hybridgpu.economics.plots` and :mod:`hybridgpu.economics.showback_plot`.

    Raises:
        ValueError: matplotlib is not installed (:data:`PLOTS_MISSING` names the extra to install).
    """
    try:
        from hybridgpu.economics import plots, showback_plot
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "matplotlib":
            raise
        raise ValueError(PLOTS_MISSING) from None
    return plots, showback_plot


def write_plots(rep: Any, directory: Path) -> list[Path]:
    """Write the report's two PNGs to ``directory``; returns their paths (none without on-prem data).

    Raises:
        ValueError: the report has no on-prem cost model or cloud rates to plot, or matplotlib is
            not installed (the message says why, or which extra to install).
    """
    plots, _ = _plotting()
    plot_cost_vs_utilization, plot_cumulative, save_figure = plots.plot_cost_vs_utilization, plots.plot_cumulative, plots.save_figure

    if rep.onprem_model is None or not rep.cloud_rates:
        raise ValueError(f"stack {rep.stack}: nothing to plot ({'; '.join(rep.notes) or 'no on-prem cost model'})")
    title = f"{rep.stack}: {rep.onprem_gpu_model} on-prem vs {rep.break_even_instance_type}"
    a = save_figure(plot_cost_vs_utilization(rep.onprem_model, rep.cloud_rates, title), directory / f"{rep.stack}-cost-vs-utilization.png")
    b = save_figure(
        plot_cumulative(rep.cumulative, f"{rep.stack}: 3-year cumulative cost, {rep.onprem_gpus} x {rep.onprem_gpu_model} at {rep.cumulative_utilization:.0%} utilization"),
        directory / f"{rep.stack}-cumulative.png",
    )
    return [a, b]


def print_report(rep: Any) -> None:
    """Print the report as tables."""
    console = _console()
    keys = [f"{u:g}" for u in rep.utilizations]
    if rep.capacity:
        print_table(
            console,
            f"{rep.stack}: GPU capacity",
            ["capacity", "kind", Col("GPUs", True), "GPU", "priced as", Col("USD/GPU-h", True)],
            [
                [line.name, line.kind, str(line.gpus), line.gpu_model, line.option + (f" ({line.instance_type})" if line.instance_type else ""), f"{line.usd_per_gpu_hour:.2f}"]
                for line in rep.capacity
            ],
        )
        for line in rep.capacity:  # how each price is made (EconomicsData.gpu_hour_price; docs/economics.md)
            if line.instance_type and line.price_basis:
                print_wrapped(console, f"{line.name}: {line.price_basis}")
        rows = [[line.name, *(f"{_usd(line.monthly_usd[k])} ({line.usd_per_productive_gpu_hour[k]:.2f})" for k in keys)] for line in rep.capacity]
        rows.append(["total", *(_usd(rep.monthly_total_usd[k]) for k in keys)])
        print_table(console, "USD per month (USD per productive GPU-hour) at utilization u", ["capacity", *(Col(f"u={k}", True) for k in keys)], rows)
    if rep.break_even:
        print_table(
            console,
            f"break-even utilization: {rep.onprem_gpus} x {rep.onprem_gpu_model} owned vs {rep.break_even_instance_type}",
            ["cloud option", Col("USD/productive GPU-h", True), Col("on-prem cheaper above", True)],
            [
                [b.option, f"{b.usd_per_productive_gpu_hour:.2f}", "never" if b.utilization is None or b.utilization > 1 else f"{b.utilization:.1%}"]
                for b in rep.break_even
            ],
        )
        parts = ["hardware", "ops", "power", "network", "facility", "total"]
        print_table(
            console,
            f"on-prem {rep.onprem_gpu_model} per productive GPU-hour (USD)",
            ["utilization", *(Col(p, True) for p in parts)],
            [[k, *(f"{rep.onprem_breakdown[k][p]:.3f}" for p in parts)] for k in keys],
        )
    if rep.burst:
        print_table(
            console,
            "burst spend the NodePool limits allow",
            ["NodePool", "capacity type", Col("GPU limit", True), Col("USD/hour at the limit", True), Col("USD/month at the limit", True)],
            [[b.name, b.kind, str(b.gpu_limit), _usd(b.usd_per_hour), _usd(b.usd_per_month)] for b in rep.burst],
        )
    if rep.egress_usd_per_month:
        console.print(f"checkpoint egress: {_usd(rep.egress_usd_per_month)} USD/month")
    for h in rep.hints:
        console.print(f"right-sizing {h.workload}: {h.message}")
    for note in rep.notes:
        console.print(f"[yellow]note:[/] {note}")
    if rep.sources:
        console.print("prices: " + "; ".join(f"{s['what']} ({s['date']}{'' if s['verified'] else ', unverified'})" for s in rep.sources))


@cost_app.command()
def plan(
    demand: Annotated[Path | None, typer.Option(help="Demand CSV, columns hour, gpus and checkpointable or checkpointable_fraction.")] = None,
    generate: Annotated[bool, typer.Option(help="Use a generated profile instead of --demand (see `cost demand`).")] = False,
    hours: Annotated[int, typer.Option(help="Generated profile: hours.")] = 8760,
    base_gpus: Annotated[float, typer.Option(help="Generated profile: mean GPUs.")] = 48.0,
    seed: Annotated[int, typer.Option(help="Generated profile: random seed.")] = 0,
    stack: Annotated[str | None, typer.Option(help="Take prices (with its hybridgpu:economics overrides), instance type and on-prem GPU from this stack.")] = None,
    instance_type: Annotated[str | None, typer.Option(help="EC2 instance type for cloud capacity (default: the stack's, else p5.48xlarge).")] = None,
    onprem_gpu: Annotated[str | None, typer.Option(help="GPU model for on-prem capacity (default: the stack's, else the instance type's GPU).")] = None,
    no_onprem: Annotated[bool, typer.Option(help="Leave owning GPUs out of the plan.")] = False,
    stack_limits: Annotated[bool, typer.Option(help="With --stack: cap spot and On-Demand GPUs at the sums of the stack's spot / on-demand NodePool limits.")] = False,
    max_wait: Annotated[int, typer.Option(help="Hours checkpointing work may queue (0 = none).")] = 0,
    spot_max: Annotated[float | None, typer.Option(help="Most spot GPUs in any hour.")] = None,
    on_demand_max: Annotated[float | None, typer.Option(help="Most On-Demand GPUs in any hour.")] = None,
    onprem_max: Annotated[float | None, typer.Option(help="Most on-prem GPUs to own.")] = None,
    continuous: Annotated[bool, typer.Option(help="Allow fractional servers/instances (LP) instead of whole ones (MILP).")] = False,
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    timings: Annotated[bool, typer.Option("--timings", help="Print the solver's wall time and model size to stderr.")] = False,
    apply: Annotated[bool, typer.Option("--apply", help="Write the plan into the stack files (NodePool gpuLimits, burst plan, teams, policy ceilings): diff, simulate, confirm (docs/economics.md).")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="With --apply: write without asking.")] = False,
    policy_pack_config: Annotated[Path | None, typer.Option("--policy-pack-config", help="With --apply: also set this policy config's GPU ceilings for the cloud stack.")] = None,
    min_spot_ceiling: Annotated[int, typer.Option(min=0, help="With --apply: write at least this spot ceiling (GPUs), above the plan's peak.")] = 0,
    min_on_demand_ceiling: Annotated[int, typer.Option(min=0, help="With --apply: write at least this On-Demand ceiling (GPUs), e.g. room for work the plan puts on owned GPUs that Kueue gives to whichever queue comes first.")] = 0,
    capacity_blocks: Annotated[Path | None, typer.Option("--capacity-blocks", help="EC2 Capacity Block offers to choose among (YAML/JSON: DescribeCapacityBlockOfferings output, at most 6); needs --demand-start.")] = None,
    demand_start: Annotated[str | None, typer.Option("--demand-start", help="With --capacity-blocks: UTC time of the demand's hour 0, ISO 8601, e.g. 2026-12-01T00:00:00Z.")] = None,
) -> None:
    """The cheapest mix of on-prem, committed, spot and On-Demand GPUs for an hourly demand, against simple alternatives.

    The output depends only on the inputs (same input, same bytes); the solve time goes to stderr with ``--timings``.
    With ``--apply`` the plan is written into the stack files after a diff, a validation of every touched stack and a
    burst simulation of the same demand (refused when it starves a queue)."""
    from hybridgpu.economics.capacity_blocks import offer_comparison, plan_with_blocks, residual_demand
    from hybridgpu.economics.demand import generate_demand, load_demand_csv
    from hybridgpu.economics.planner import PlanConstraints, solve_plan
    from hybridgpu.economics.prices import load_economics_data
    from hybridgpu.economics.report import plan_prices

    try:
        if (demand is None) == (not generate):
            raise ValueError("give either --demand CSV or --generate")
        profile = load_demand_csv(demand) if demand is not None else generate_demand(hours=hours, base_gpus=base_gpus, seed=seed)
        data = load_economics_data()
        cfg = None
        if stack_limits and stack is None:
            raise ValueError("--stack-limits needs --stack")
        if apply:
            apply_option_problems(stack, demand, as_json)
        elif yes or policy_pack_config is not None or min_spot_ceiling or min_on_demand_ceiling:
            given = "--yes" if yes else "--policy-pack-config" if policy_pack_config is not None else "--min-spot-ceiling/--min-on-demand-ceiling"
            raise ValueError(f"{given} goes with --apply (it writes the plan into the stack files)")
        loaded = None
        if stack is not None:
            loaded = load_stack(stack, root)
            rep = loaded.report()  # the report validation built: read and priced once
            cfg = loaded.config.economics
            assert rep.priced_with is not None  # cost_report sets it on every report it returns
            data = rep.priced_with  # the stack's prices, overrides applied
            instance_type = instance_type or rep.break_even_instance_type
            onprem_gpu = onprem_gpu or rep.onprem_gpu_model
            if stack_limits:
                spot_max = spot_max if spot_max is not None else float(rep.pool_limits.get("spot", 0))
                on_demand_max = on_demand_max if on_demand_max is not None else float(rep.pool_limits.get("on-demand", 0))
        instance_type = instance_type or "p5.48xlarge"
        if apply and loaded is not None and onprem_max is None:
            onprem_max = float(owned_gpus_now(loaded))  # the files cannot buy servers: plan for the owned GPUs there are
        gpu = None if no_onprem else (onprem_gpu or data.catalog.instance_type(instance_type).gpu_model)
        kwargs = {}
        if cfg is not None:
            kwargs = {"checkpoint_interval_hours": cfg.checkpoint_interval_hours, "lost_fraction_of_interval": cfg.lost_fraction_of_interval, "restart_hours": cfg.restart_hours}
        prices, _, _ = plan_prices(data, instance_type, gpu, **kwargs)
        constraints = PlanConstraints(max_wait_hours=max_wait, spot_max_gpus=spot_max, on_demand_max_gpus=on_demand_max, onprem_max_gpus=onprem_max, integer=not continuous)
        blocks = None
        if capacity_blocks is not None or demand_start is not None:
            offers = plan_offers(capacity_blocks, demand_start, data.catalog, instance_type, profile, loaded)
            with progress(f"solving the capacity plan with {len(offers)} Capacity Blocks ({profile.hours} h of demand{f', max wait {max_wait} h' if max_wait else ''})"):
                blocks = plan_with_blocks(profile, prices, constraints, offers)
            result = blocks.plan
        else:
            with progress(f"solving the capacity plan ({profile.hours} h of demand{f', max wait {max_wait} h' if max_wait else ''})"):
                result = solve_plan(profile, prices, constraints)
    except (HybridGpuError, ValueError, KeyError) as exc:
        _fail(str(exc))
    d = result.dispatch
    summary = {
        "demand": {"source": profile.source, "hours": profile.hours, "gpuHours": profile.gpu_hours, "peak": profile.peak, "floor": profile.floor},
        "prices": {"instanceType": instance_type, "onPremGpu": gpu, "onDemandUsdPerGpuHour": prices.on_demand_usd_per_gpu_hour,
                   "spotUsdPerProductiveGpuHour": prices.spot_usd_per_productive_gpu_hour, "commitments": dict(prices.commitments),
                   "onPremFixedUsdPerGpuHour": prices.onprem_fixed_usd_per_gpu_hour, "onPremUsdPerUsedGpuHour": prices.onprem_usd_per_used_gpu_hour},
        "plan": {"onPremGpus": d.onprem_gpus, "commitmentGpus": d.commitment_gpus, "spotGpuHours": float(d.spot.sum()),
                 "onDemandGpuHours": float(d.on_demand.sum()), "peakSpotGpus": float(d.spot.max()), "peakOnDemandGpus": float(d.on_demand.max()),
                 "cost": result.cost, "maxWaitHours": max_wait},
        "alternatives": [{"name": a.name, "description": a.description, "totalUsd": a.total} for a in result.alternatives],
        "savings": result.savings(),
        "model": {"variables": result.variables, "rows": result.rows, "identicalHoursMerged": result.aggregated, "method": result.method},
    }
    block_rows: list[dict[str, Any]] = []
    if blocks is not None:
        block_rows = offer_comparison(offers, blocks.blocks, profile, prices)
        summary["capacityBlocks"] = block_summary(blocks, block_rows, demand_start)
        summary["alternatives"], summary["savings"] = block_alternatives(blocks)
    if timings:
        _console(stderr=True).print(f"solved in {result.solve_seconds:.2f} s ({result.variables} variables, {result.rows} rows)")
    if as_json:
        _console().print_json(json.dumps(summary))
        return
    console = _console()
    console.print(f"demand: {profile.source} - {profile.hours} h, {profile.gpu_hours:,.0f} GPU-hours, peak {profile.peak:g}, floor {profile.floor:g} GPUs")
    commits = ", ".join(f"{v:g} GPUs {k}" for k, v in d.commitment_gpus.items() if v) or "none"
    console.print(f"plan: {d.onprem_gpus:g} on-prem GPUs ({gpu or 'no on-prem option'}), commitments: {commits}, "
                  f"spot {d.spot.sum():,.0f} GPU-hours (peak {d.spot.max():g}), On-Demand {d.on_demand.sum():,.0f} GPU-hours (peak {d.on_demand.max():g})"
                  + ("" if blocks is None else f", Capacity Blocks {', '.join(b.name for b in blocks.blocks) or 'none'}"))
    if blocks is None:
        savings = result.savings()
        rows = [[f"optimal plan ({'HiGHS' if result.method == 'milp' else 'exact grid search'})", f"max wait {max_wait} h", _usd(result.cost["total"]), ""]]
        for a in result.alternatives:
            saved = savings[a.name]
            rows.append([a.name, a.description, "infeasible" if a.total is None else _usd(a.total), "" if saved is None else f"{saved:.1%}"])
    else:
        rows = [[f"optimal plan with Capacity Blocks ({'exact' if blocks.exact else 'upper bound: queueing'})", f"max wait {max_wait} h", _usd(blocks.total_usd), ""]]
        alternatives, savings_by_name = block_alternatives(blocks)
        for alt in alternatives:
            saved = savings_by_name[alt["name"]]
            rows.append([alt["name"], alt["description"], "infeasible" if alt["totalUsd"] is None else _usd(alt["totalUsd"]), "" if saved is None else f"{saved:.1%}"])
    print_table(console, f"cost over {profile.hours} h (USD), {instance_type}", ["choice", "how", Col("total USD", True), Col("plan saves", True)], rows)
    if blocks is not None:
        print_blocks(block_rows, prices.spot_usd_per_productive_gpu_hour is not None)
        if not blocks.exact:
            console.print("note: with --max-wait the plan with blocks is a feasible upper bound (queued work could also move into a block's window)")
    if result.method == "fast":
        console.print(f"model: exact grid search over {result.variables} capacity combinations, queueing as path flows (solve time: --timings)")
    else:
        console.print(f"model: {result.variables} variables, {result.rows} rows{', identical hours merged' if result.aggregated else ''} (solve time: --timings)")
    if apply:
        assert loaded is not None and demand is not None  # apply_option_problems
        if blocks is not None:
            new = [b for b in blocks.blocks if not b.bought]
            if new:
                print_block_snippet(new, offers_by_id(capacity_blocks), loaded)
                _fail(f"the plan buys Capacity Block offering{'s' if len(new) > 1 else ''} {', '.join(b.name for b in new)}, which the stack does not hold: "
                      "--apply writes only capacity the stack has (a NodePool needs the reservation id EC2 gives when the block is bought). Fix: buy the "
                      "offering (aws ec2 purchase-capacity-block --capacity-block-offering-id ID --instance-platform Linux/UNIX), add the NodePool above "
                      "with that reservation id, then run --apply again; nothing was written")
            if blocks.blocks:  # the stack's own blocks serve first: the ceilings carry what they leave
                profile = residual_demand(profile, blocks_capacity(blocks.blocks, profile.hours))
                console.print("note: the simulation below runs the demand the stack's Capacity Blocks leave (blocks serve first, prepaid)")
        if max_wait > 0:  # the optimum is degenerate with queueing: write the lowest ceilings that keep it
            from dataclasses import replace as _replace

            from hybridgpu.stack.plan_apply import lowest_peaks

            with progress("finding the lowest spot and On-Demand peaks of the optimal plan"):
                result = lowest_peaks(lambda s, o: solve_plan(profile, prices, _replace(constraints, spot_max_gpus=s, on_demand_max_gpus=o)),
                                      result, spot_max, on_demand_max)
            d = result.dispatch
            console.print(f"lowest peaks at the same cost: spot {d.spot.max():g}, On-Demand {d.on_demand.max():g} GPUs")
        inputs = {"demand": {"file": _shown_path(demand, loaded.root), "sha256": _sha256_file(demand)},
                  "options": {"instanceType": instance_type, "onPremGpu": gpu, "maxWaitHours": max_wait, "spotMaxGpus": spot_max,
                              "onDemandMaxGpus": on_demand_max, "onPremMaxGpus": onprem_max, "integer": not continuous, "stackLimits": stack_limits,
                              "minSpotCeiling": min_spot_ceiling, "minOnDemandCeiling": min_on_demand_ceiling},
                  "prices": summary["prices"]}
        if capacity_blocks is not None:  # the lock records what the plan chose among
            inputs["capacityBlocks"] = {"file": _shown_path(capacity_blocks, loaded.root), "sha256": _sha256_file(capacity_blocks), "demandStart": demand_start,
                                        "blocks": [b.name for b in blocks.blocks] if blocks is not None else []}
        apply_plan(loaded, profile, result, inputs, max_wait=max_wait, checkpoint_hours=cfg.checkpoint_interval_hours if cfg is not None else 1.0,
                   policy_config=policy_pack_config, yes=yes, prices={"spot": prices.spot_usd_per_productive_gpu_hour or 0.0, "on-demand": prices.on_demand_usd_per_gpu_hour},
                   min_ceilings=(min_spot_ceiling, min_on_demand_ceiling))


def apply_option_problems(stack: str | None, demand: Path | None, as_json: bool) -> None:
    """Refuse ``--apply`` without the inputs it needs.

    Raises:
        ValueError: no ``--stack`` (which files to write), ``--generate`` instead of ``--demand`` (the lock records
            the demand file's hash), or ``--json`` (the diff and the question need the terminal).
    """
    if stack is None:
        raise ValueError("--apply needs --stack STACK: the stack (or the burst plan it takes part in) whose files take the plan")
    if demand is None:
        raise ValueError("--apply needs --demand CSV instead of --generate: the lock file records the demand file's hash, so that `validate` can tell when it changed")
    if as_json:
        raise ValueError("--apply and --json do not go together: --apply prints diffs and asks before writing; run --json without --apply to read the plan")


def plan_offers(path: Path | None, start: str | None, catalog: Any, instance_type: str, profile: Any, loaded: Any) -> list[Any]:
    """The Capacity Blocks ``cost plan --capacity-blocks`` chooses among: the stack's bought blocks of the plan's GPU model, then the offers.

    Args:
        path: the offers file (``--capacity-blocks``).
        start: ``--demand-start``, the UTC time of the demand's hour 0 (ISO 8601 with an offset).
        catalog: the instance catalog.
        instance_type: the plan's cloud instance type (its GPU model is the demand's).
        profile: the demand profile (its length).
        loaded: the ``--stack`` stack, or None; its NodePools' ``capacityBlocks`` are bought (fee counted, always in).

    Returns:
        :class:`~hybridgpu.economics.capacity_blocks.BlockOffer` s, bought first.

    Raises:
        ValueError: one option without the other, or a start that is not ISO 8601 with a UTC offset.
        OfferFileError: the offers file is invalid (every problem, with key path and fix).
    """
    from hybridgpu.config.capacity_blocks import parse_utc_time
    from hybridgpu.economics.capacity_blocks import bought_blocks, read_offers_file

    if path is None:
        raise ValueError("--demand-start goes with --capacity-blocks FILE (it places the offers' windows on the demand's hours)")
    if start is None:
        raise ValueError("--capacity-blocks needs --demand-start: the UTC time of the demand's hour 0, e.g. --demand-start 2026-12-01T00:00:00Z")
    zero = parse_utc_time(start, f"--demand-start {start!r} (the UTC time of the demand's hour 0)", "--demand-start 2026-12-01T00:00:00Z")
    gpu_model = catalog.instance_type(instance_type).gpu_model
    offers = read_offers_file(path, str(path), catalog=catalog, gpu_model=gpu_model, profile_start=zero, profile_hours=profile.hours)
    bought = []
    if loaded is not None and loaded.config.cloud is not None:
        models = {t.name: t.gpu_model for t in catalog.instance_types}
        pools = [p.model_copy(update={"capacity_blocks": [b for b in p.capacity_blocks if models.get(b.instance_type) == gpu_model]})
                 for p in loaded.config.cloud.node_pools if p.capacity_blocks]
        bought = [b for b in bought_blocks(pools, catalog, zero) if b.capacity(profile.hours).any()]
    return [*bought, *offers]


def offers_by_id(path: Path | None) -> dict[str, Any]:
    """The offers file's offerings by id (already validated by :func:`plan_offers`)."""
    from hybridgpu.datafile import load_unique_yaml
    from hybridgpu.economics.capacity_blocks import CapacityBlockOfferings, normalized

    if path is None:
        return {}
    data = normalized(load_unique_yaml(path.read_text()))
    return {o.capacity_block_offering_id: o for o in CapacityBlockOfferings.model_validate(data).capacity_block_offerings}


def blocks_capacity(blocks: Any, hours: int) -> Any:
    """GPUs the blocks hold together in each hour (:func:`hybridgpu.economics.capacity_blocks.block_capacity`)."""
    from hybridgpu.economics.capacity_blocks import block_capacity

    return block_capacity(blocks, hours)


def block_summary(blocks: Any, rows: list[dict[str, Any]], demand_start: str | None) -> dict[str, Any]:
    """The ``capacityBlocks`` section of ``cost plan --json``: the blocks bought, their fees, the totals with and without the offers, and per block
    its cost against On-Demand and spot for the same hours (:func:`~hybridgpu.economics.capacity_blocks.offer_comparison`)."""
    without = dict(blocks.candidates).get(tuple(b.name for b in blocks.blocks if b.bought))
    return {"demandStart": demand_start, "chosen": [b.name for b in blocks.blocks], "blockUsd": blocks.block_usd, "totalUsd": blocks.total_usd,
            "withoutOffersUsd": without, "exact": blocks.exact, "blocks": rows}


def block_alternatives(blocks: Any) -> tuple[list[dict[str, Any]], dict[str, float | None]]:
    """The simple alternatives next to a plan with Capacity Blocks: the plan without the offers, then each alternative of that
    plan (the bought blocks' fees added: they are paid in every choice), and the fraction the plan saves against each."""
    fees = sum(b.upfront_usd for b in blocks.blocks if b.bought)
    bought = tuple(b.name for b in blocks.blocks if b.bought)
    base = dict(blocks.candidates).get(bought)
    out: list[dict[str, Any]] = [{"name": "without the offers", "description": "the optimal plan buying none of the offered blocks", "totalUsd": base}]
    if blocks.baseline is not None:
        out += [{"name": a.name, "description": a.description, "totalUsd": None if a.total is None else a.total + fees} for a in blocks.baseline.alternatives]
    savings = {a["name"]: (None if a["totalUsd"] is None or a["totalUsd"] <= 0 else 1 - blocks.total_usd / a["totalUsd"]) for a in out}
    return out, savings


def print_blocks(rows: list[dict[str, Any]], spot: bool) -> None:
    """Print the Capacity Blocks of the plan: bought or not, their fee against On-Demand (and spot) GPUs for the same hours, GPU-hours served."""
    def usd(x: float | None) -> str:
        return "" if x is None else _usd(x)

    print_table(
        _console(),
        "Capacity Blocks: the fee against the same GPUs for the same hours (USD; hours inside the demand, usable until 40 min before the end)",
        ["block", "in the plan", Col("GPUs", True), Col("hours", True), Col("fee", True), Col("USD/GPU-h", True), Col("On-Demand", True),
         *([Col("spot", True)] if spot else []), Col("GPU-h served", True)],
        [[r["name"], "already bought" if r["alreadyBought"] else "buy" if r["chosen"] else "no", str(r["gpus"]), str(r["hours"]), usd(r["upfrontUsd"]),
          "" if r["usdPerGpuHour"] is None else f"{r['usdPerGpuHour']:.2f}", usd(r["onDemandUsd"]), *([usd(r["spotUsd"])] if spot else []),
          f"{r['servedGpuHours']:,.0f}"] for r in rows],
    )


def block_snippet(new: list[Any], offerings: dict[str, Any], loaded: Any) -> str:
    """The ``hybridgpu:cloud.nodePools`` entry (YAML) that launches into the bought offers, one NodePool per instance type.

    The reservation id is a placeholder (``cr-`` + the offering id's digits is NOT it): EC2 gives it when the block is bought.
    """
    from hybridgpu.config.capacity_blocks import iso_utc
    from hybridgpu.datafile import ORDERED, dump_yaml

    node_class = "gpu"
    if loaded is not None and loaded.config.cloud is not None and loaded.config.cloud.node_pools:
        node_class = loaded.config.cloud.node_pools[0].node_class
    by_type: dict[str, list[Any]] = {}
    for b in new:
        o = offerings[b.name]
        by_type.setdefault(o.instance_type, []).append((b, o))
    pools = []
    for itype, items in by_type.items():
        pools.append({
            "name": f"{itype.split('.')[0]}-block",
            "nodeClass": node_class,
            "capacityTypes": ["reserved"],
            "instanceTypes": [itype],
            "gpuLimit": sum(b.gpus for b, _ in items),
            "capacityBlocks": [{"id": "cr-REPLACE-WITH-RESERVATION-ID", "instanceType": itype, "instanceCount": o.instance_count,
                                "start": iso_utc(o.start_date), "end": iso_utc(o.end), "upfrontFeeUsd": o.upfront_fee} for _, o in items],
        })
    return dump_yaml(pools, ORDERED)


def print_block_snippet(new: list[Any], offerings: dict[str, Any], loaded: Any) -> None:
    """Print :func:`block_snippet` with where it goes."""
    stack = loaded.config.stack if loaded is not None else "STACK"
    typer.echo(f"# after buying, add to hybridgpu:cloud.nodePools of stacks/Pulumi.{stack}.yaml (docs/cloud.md, Capacity Blocks); "
               "replace each id with the block's reservation id (aws ec2 describe-capacity-reservations)")
    typer.echo(block_snippet(new, offerings, loaded), nl=False)


def owned_gpus_now(loaded: Any) -> int:
    """Whole GPUs owned now: the on-prem side of the stack's burst plan, else the on-prem fleet of its cost report (0 without)."""
    if loaded.burst_plan is not None:
        return int(sum(loaded.burst_plan.onprem.gpus.values()))
    rep = loaded.report()
    return int(rep.onprem_gpus or 0)


def _shown_path(path: Path, root: Path) -> str:
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(root))
    except ValueError:
        return str(resolved)


def _sha256_file(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def apply_plan(loaded: Any, profile: Any, result: Any, inputs: dict[str, Any], *, max_wait: int, checkpoint_hours: float,
               policy_config: Path | None, yes: bool, prices: dict[str, float], min_ceilings: tuple[int, int] = (0, 0)) -> None:
    """``--apply``: derive the files' new numbers (:func:`hybridgpu.stack.plan_apply.propose_apply`), print the diffs,
    the notes and the simulation next to the plan's estimate, refuse a plan that starves a queue, then write
    everything (:func:`~hybridgpu.stack.plan_apply.commit`) after confirmation or with ``--yes``. Exits 2 on a refusal
    (nothing written), 1 when the answer is no."""
    from hybridgpu.shell.policy.check import load_policy_config
    from hybridgpu.stack.plan_apply import PlannedCapacity, commit, propose_apply

    d = result.dispatch
    planned = PlannedCapacity(
        owned_gpus=d.onprem_gpus, committed_gpus=float(sum(d.commitment_gpus.values())), spot_gpus=max(float(d.spot.max()), float(min_ceilings[0])),
        on_demand_gpus=max(float(d.on_demand.max()), float(min_ceilings[1])), max_wait_hours=max_wait, spot_usd=result.cost.get("spot", 0.0),
        on_demand_usd=result.cost.get("on-demand", 0.0), checkpoint_s=checkpoint_hours * 3600.0,
    )
    console = _console()
    try:
        with progress("checking the plan against the stack files (validate, simulate)"):
            proposal = propose_apply(loaded, profile, planned, inputs, policy_config=policy_config,
                                     check_policy_config=load_policy_config, prices=prices)
    except (HybridGpuError, ValueError, KeyError, OSError) as exc:
        _fail(str(exc))
    print_simulation(proposal.simulation)
    for note in proposal.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
    if proposal.simulation.starving:
        _fail("refusing to write a plan the burst simulator shows starving a queue: " + "; ".join(proposal.simulation.starving)
              + ". Fix: give the starved queue's capacity type room (--min-on-demand-ceiling N or --min-spot-ceiling N), allow a longer "
              "--max-wait, or add owned capacity; nothing was written")
    if not proposal.changes:
        console.print(f"nothing to change: the files already hold this plan (validated: {', '.join(proposal.validated)})")
        return
    for change in proposal.changes:
        typer.echo(change.diff(), nl=False)  # as it is: no wrapping, no markup
    files = ", ".join(c.file for c in proposal.changes)
    if not yes and not typer.confirm(f"write {files}?", default=False):
        console.print("nothing written")
        raise typer.Exit(code=1)
    try:
        commit(proposal)
    except HybridGpuError as exc:
        _fail(str(exc))
    console.print(f"wrote {files} (validated: {', '.join(proposal.validated)})")


def print_simulation(sim: Any) -> None:
    """Print the ``--apply`` simulation: per queue jobs, never admitted and p95 wait; cloud cost next to the plan's estimate."""
    console = _console()
    p = sim.params
    print_table(
        console,
        f"burst simulation of the demand under the new limits: on-prem {p.onprem_gpus} GPUs, spot <= {p.spot_gpus}, on-demand <= {p.on_demand_gpus}",
        ["queue", "bursts to", Col("jobs", True), Col("never admitted", True), Col("p95 wait (h)", True), Col("longest wait (h)", True)],
        [[q.queue, q.burst, str(q.jobs), str(q.never_admitted), f"{q.wait_p95_s / 3600:.2f}", f"{q.wait_max_s / 3600:.2f}"] for q in sim.queues],
    )
    r = sim.result
    console.print(f"cloud cost: simulated {_usd(r.total_cost_usd)} USD (spot {_usd(r.cost_usd.get('spot', 0.0))}, on-demand "
                  f"{_usd(r.cost_usd.get('on-demand', 0.0))}; whole instances from launch), the plan's estimate {_usd(sim.plan_cloud_usd)} USD; "
                  f"p95 wait allowed {sim.allowed_wait_s / 3600:g} h", markup=False, highlight=False)


@cost_app.command("demand")
def demand_cmd(
    out: Annotated[Path, typer.Argument(help="CSV file to write.")],
    hours: Annotated[int, typer.Option(help="Hours.")] = 8760,
    base_gpus: Annotated[float, typer.Option(help="Mean GPUs.")] = 48.0,
    diurnal: Annotated[float, typer.Option(help="Daily swing (relative).")] = 0.25,
    weekly: Annotated[float, typer.Option(help="Weekly swing (relative).")] = 0.15,
    seasonal: Annotated[float, typer.Option(help="Yearly swing (relative).")] = 0.2,
    noise: Annotated[float, typer.Option(help="Hourly noise (relative standard deviation).")] = 0.1,
    checkpointable: Annotated[float, typer.Option(help="Share of work that checkpoints (0..1).")] = 0.7,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Write a generated hourly demand profile (diurnal, weekly, seasonal + noise; seeded) as CSV."""
    from hybridgpu.economics.demand import generate_demand, write_demand_csv

    try:
        profile = generate_demand(hours, base_gpus, diurnal, weekly, seasonal, noise, checkpointable, seed)
        write_demand_csv(profile, out, comment=f"hybridgpu cost demand: {profile.source}")
    except (ValueError, OSError) as exc:
        _fail(str(exc))
    _console().print(f"wrote {out}: {profile.hours} h, peak {profile.peak:g}, floor {profile.floor:g}, {profile.gpu_hours:,.0f} GPU-hours")


@cost_app.command()
def vram(
    params_billions: Annotated[float, typer.Argument(help="Model parameters in billions, e.g. 7.")],
    mode: Annotated[str, typer.Option(help="inference or training.")] = "inference",
    precision: Annotated[str, typer.Option(help="fp32, fp16, bf16, fp8, int8 or int4.")] = "bf16",
    optimizer: Annotated[str, typer.Option(help="Training optimizer: adam, adamw, sgd-momentum, sgd, none.")] = "adam",
    no_master_weights: Annotated[bool, typer.Option(help="Training: no fp32 master weights.")] = False,
    activation_gb: Annotated[float | None, typer.Option(help="Training activations (GB; default: as large as the weights).")] = None,
    gpu_model: Annotated[str | None, typer.Option(help="Also say how many of this GPU it needs (sharded) and its smallest MIG profile.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Estimate VRAM and name the smallest GPU and MIG profile that hold it."""
    from hybridgpu.catalog import load_catalog
    from hybridgpu.economics.vram import estimate_vram, fitting_gpus, fitting_mig_profiles, min_gpus

    try:
        kw = {"master_weights": not no_master_weights, "activation_gb": activation_gb}
        est = estimate_vram(params_billions, mode, precision, optimizer, **kw)  # type: ignore[arg-type]
        catalog = load_catalog()
        gpus = fitting_gpus(est, catalog)
        migs = fitting_mig_profiles(est, gpu_model)
        needed = None
        if gpu_model is not None:
            mem = catalog.gpu_model(gpu_model).memory_gib
            needed = min_gpus(lambda n: estimate_vram(params_billions, mode, precision, optimizer, shards=n, **kw), mem)  # type: ignore[arg-type]
    except (HybridGpuError, ValueError, KeyError) as exc:
        _fail(str(exc))
    out = {"parts": est.parts, "totalGB": est.total_gb, "totalGiB": est.total_gib,
           "smallestGpu": gpus[0].label if gpus else None, "smallestMig": migs[0].label if migs else None,
           "gpus": [f.label for f in gpus], "migProfiles": [f.label for f in migs[:8]], "gpusNeeded": needed}
    if as_json:
        _console().print_json(json.dumps(out))
        return
    console = _console()
    console.print(f"{params_billions:g}B {mode} {precision}: " + ", ".join(f"{k} {v:.1f} GB" for k, v in est.parts.items())
                  + f" = {est.total_gb:.1f} GB ({est.total_gib:.1f} GiB)")
    console.print(f"smallest whole GPU: {out['smallestGpu'] or 'none - shard it'}; smallest MIG profile: {out['smallestMig'] or 'none'}")
    if needed is not None:
        console.print(f"on {gpu_model}: {needed} GPU{'s' if needed > 1 else ''} (sharded with FSDP/ZeRO-3 when more than one)")


@cost_app.command()
def showback(
    export: Annotated[Path, typer.Argument(help="Usage export: usage CSV/JSON, OpenCost /allocation JSON, or `kubectl get workloads -A -o json` (docs/teams.md).")],
    stack: Annotated[list[str] | None, typer.Option(help="Price with this stack's cost report (the prices OpenCost gets) and attribute with its teams file; repeat for the stacks of a site (on-prem and EKS).")] = None,
    price: Annotated[str | None, typer.Option(help="USD per GPU-hour by capacity type, e.g. owned=3.10,spot=2.41 (over the stack's).")] = None,
    teams: Annotated[Path | None, typer.Option(help="Teams file (default: the stack's `hybridgpu:teams.file`).")] = None,
    nodes: Annotated[Path | None, typer.Option(help="OpenCost exports: `kubectl get nodes -o json` (capacity type from karpenter.sh/capacity-type).")] = None,
    flavor: Annotated[list[str] | None, typer.Option(help="Kueue lists: NAME=CAPACITY_TYPE[:GPU_MODEL] per ResourceFlavor (repeat; --stack maps its burst plan's flavors).")] = None,
    until: Annotated[str | None, typer.Option(help="Kueue lists: bill running workloads up to this time (ISO 8601).")] = None,
    onprem_gpus: Annotated[
        int | None,
        typer.Option(help="Owned GPUs of the fleet: with --window-hours, adds the owned GPU-hours nobody held to the idle cost (default: the --stack inventories' GPUs).")
    ] = None,
    window_hours: Annotated[float | None, typer.Option(help="Hours of the export's window: adds the owned fleet's unused GPU-hours to the idle cost.")] = None,
    top: Annotated[int, typer.Option(help="How many idle allocations to list.")] = 10,
    plot: Annotated[Path | None, typer.Option(help="Directory to write showback.png (stacked bars per team) to.")] = None,
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the showback as JSON (stable keys, sorted rows, USD to the cent).")] = False,
) -> None:
    """Per team and project: GPU-hours by side and capacity type, their cost, the share of idle cost, and the top idle allocations."""
    from datetime import datetime

    from hybridgpu.economics.showback import ShowbackPrices, compute_showback
    from hybridgpu.economics.usage import load_nodes, load_usage, node_gpu_models, parse_flavors
    from hybridgpu.stack.showback import showback_inputs
    from hybridgpu.teams.models import read_teams_file

    try:
        if onprem_gpus is not None and onprem_gpus < 0 or window_hours is not None and not window_hours > 0:
            raise ValueError("--onprem-gpus must be >= 0 and --window-hours > 0")
        inputs = showback_inputs(list(stack or []), root)
        onprem_gpus = _owned_fleet(onprem_gpus, window_hours, inputs)
        prices, teams_file = inputs.prices, inputs.teams
        if price is not None:
            prices = prices.merged(ShowbackPrices.parse(price))
        if not prices.usd_per_gpu_hour:
            raise ValueError("give --stack STACK (its cost report prices the GPU-hours) or --price owned=USD,spot=USD,...")
        if teams is not None:
            teams_file = read_teams_file(teams, str(teams))
        until_time = None
        if until is not None:
            try:
                until_time = datetime.fromisoformat(until.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"--until: {until!r} is not an ISO 8601 time, e.g. 2026-11-30T00:00:00Z") from None
        node_map = load_nodes(nodes) if nodes is not None else None
        node_models = node_gpu_models(nodes) if nodes is not None else None  # showback prices by GPU model (docs/teams.md)
        flavors = {**inputs.flavors, **parse_flavors(flavor or [])} or None
        with progress(f"reading and pricing {export}"):
            records = load_usage(export, nodes=node_map, flavors=flavors, until=until_time, node_models=node_models)
            result = compute_showback(records, prices, teams=teams_file, onprem_gpus=onprem_gpus, window_hours=window_hours, top=top, file=str(export))
        written = []
        if plot is not None:
            plots, showback_plot = _plotting()
            save_figure, plot_showback = plots.save_figure, showback_plot.plot_showback
            days = f" {result.days[0]} to {result.days[-1]}" if result.days else ""
            written.append(save_figure(plot_showback(result, f"GPU showback{days} (USD)"), plot / "showback.png"))
    except (HybridGpuError, ValueError, KeyError, OSError) as exc:
        _fail(str(exc))
    out = result.to_dict()
    if as_json:
        out["plots"] = [str(p) for p in written]
        _console().print_json(json.dumps(out))
        return
    print_showback(out)
    for path in written:
        _console().print(f"wrote {path}")


def _owned_fleet(given: int | None, window_hours: float | None, inputs: Any) -> int | None:
    """The owned GPUs ``cost showback`` counts idle hours of: ``--onprem-gpus``, else the ``--stack``
    inventories' GPUs (:attr:`~hybridgpu.stack.showback.ShowbackInputs.owned_gpus`). Says on stderr where the
    number comes from, and warns when ``--onprem-gpus`` differs from the inventories (the idle cost changes
    with it: 40 instead of 56 GPUs halves it).

    Raises:
        ValueError: ``--onprem-gpus`` without ``--window-hours``, or ``--window-hours`` with neither it nor a
            stack with an inventory.
    """
    if given is not None and window_hours is None:
        raise ValueError("--onprem-gpus needs --window-hours (the owned fleet's GPU-hours in the export's window)")
    if window_hours is None:
        return None
    err = _console(stderr=True)
    stacks = ", ".join(inputs.owned_from)
    if given is None:
        if inputs.owned_gpus is None:
            raise ValueError("--window-hours needs the owned fleet's size: --onprem-gpus N, or --stack STACK of a stack with an inventory")
        print_wrapped(err, f"note: owned fleet: {inputs.owned_gpus} GPUs, from the inventory of {stacks} (active and cordoned hosts)")
        return int(inputs.owned_gpus)
    if inputs.owned_gpus is not None and given != inputs.owned_gpus:
        print_wrapped(
            err,
            f"warning: --onprem-gpus {given} differs from the {inputs.owned_gpus} GPUs of the inventory of {stacks} "
            f"(active and cordoned hosts); the idle cost uses {given}. Fix: drop --onprem-gpus to use the inventory",
        )
    return given


def print_showback(out: dict[str, Any]) -> None:
    """Print :meth:`Showback.to_dict` output as tables (GPU-hours and USD per team and project, idle, top idle allocations)."""
    console = _console()
    kinds = [k for k in ("owned", "reserved", "spot", "on-demand") if k in out["pricesUsdPerGpuHour"]]
    days = f" ({out['days'][0]} to {out['days'][-1]})" if out["days"] else ""
    rows = [
        [row["team"], row["project"], f"{row['gpuHoursBySide']['on-prem']:,.2f}", f"{row['gpuHoursBySide']['cloud']:,.2f}",
         *(f"{row['costUsd'].get(k, 0):,.2f}" for k in kinds), f"{row['idleShareUsd']:,.2f}", f"{row['totalUsd']:,.2f}"]
        for row in out["rows"]
    ]
    rows.append(["total", "", "", "", *("" for _ in kinds), "", f"{out['totalUsd']:,.2f}"])
    print_table(
        console,
        f"GPU showback{days}: GPU-hours and USD",
        ["team", "project", Col("on-prem GPU-h", True), Col("cloud GPU-h", True), *(Col(f"{k} USD", True) for k in kinds), Col("idle share USD", True), Col("total USD", True)],
        rows,
    )
    if out["idle"]:
        console.print("idle capacity: " + "; ".join(f"{k} {v['gpuHours']:,.2f} GPU-h = {v['usd']:,.2f} USD" for k, v in out["idle"].items())
                      + " (shared pro rata to each team's GPU-hours of that capacity type)")
    if out["topIdleAllocations"]:
        print_table(
            console,
            "allocations holding idle GPUs",
            ["allocation", "team", "capacity type", Col("GPU-h", True), Col("utilization", True), Col("idle GPU-h", True), Col("idle USD", True)],
            [
                [a["name"], a["team"], a["capacityType"], f"{a['gpuHours']:,.2f}", f"{a['utilization']:.0%}", f"{a['idleGpuHours']:,.2f}", f"{a['idleUsd']:,.2f}"]
                for a in out["topIdleAllocations"]
            ],
        )
    console.print("prices (USD/GPU-hour): " + ", ".join(f"{k} {v:.4f}" for k, v in out["pricesUsdPerGpuHour"].items()))
    by_model = out.get("pricesByGpuModel") or {}
    if by_model:
        print_wrapped(console, "prices by GPU model (USD/GPU-hour): " + "; ".join(f"{k} " + ", ".join(f"{m} {v:.4f}" for m, v in per.items()) for k, per in by_model.items()))
    from hybridgpu.economics.showback import blended_note, unattributed_note  # issue 29: what matched no team, never silent

    if note := blended_note(out.get("blended") or {}):  # issue 29: a rate mixing GPU models is never silent either
        print_wrapped(console, f"note: {note}")

    if note := unattributed_note(out.get("unattributed") or {}):
        console.print(f"note: {note}", markup=False, highlight=False)


#: Capacity types `cost checkpoint --stack` prices the job at, in the order it picks the default.
CHECKPOINT_CAPACITY = ("owned", "reserved", "on-demand", "spot")


def failure_inputs(gpus: int, failure_rate: float | None, gpu_mtbf_hours: float | None, failure_source: str | None,
                   checkpoint_minutes: float, restore_minutes: float, restart_minutes: float, interval_minutes: float | None = None) -> tuple[Any, str]:
    """Validated :class:`~hybridgpu.economics.failure.CheckpointInputs` and where the failure rate came from.

    The rate is ``failure_rate`` (failures per GPU-hour), else ``1 / gpu_mtbf_hours``, else the
    packaged entry ``failure_source`` (default: the packaged default entry); at most one of the three.

    Raises:
        FailureInputError: more than one rate given, a value out of range or infeasible (one line: option, value, fix).
    """
    from hybridgpu.economics.failure import CheckpointInputs, FailureInputError, failure_source as packaged

    given = [o for o, v in (("--failure-rate", failure_rate), ("--gpu-mtbf-hours", gpu_mtbf_hours), ("--failure-source", failure_source)) if v is not None]
    if len(given) > 1:
        raise FailureInputError(f"{' and '.join(given)} both set the failure rate: give one")
    if gpu_mtbf_hours is not None:
        if not (gpu_mtbf_hours > 1 and gpu_mtbf_hours < float("inf")):
            raise FailureInputError(f"--gpu-mtbf-hours: must be a finite number of hours > 1, got {gpu_mtbf_hours!r}; give the mean hours between failures of one GPU, e.g. 50000")
        rate, source = 1.0 / gpu_mtbf_hours, f"--gpu-mtbf-hours {gpu_mtbf_hours:g}"
    elif failure_rate is not None:
        rate, source = failure_rate, f"--failure-rate {failure_rate:g}"
    else:
        entry = packaged(failure_source)
        rate, source = entry.failures_per_gpu_hour, f"{entry.name}, hybridgpu/economics/data/failure_rates.yaml"
    inputs = CheckpointInputs.from_options(gpus=gpus, failures_per_gpu_hour=rate, checkpoint_minutes=checkpoint_minutes,
                                           restore_minutes=restore_minutes, restart_minutes=restart_minutes, interval_minutes=interval_minutes)
    return inputs, source


@cost_app.command()
def checkpoint(
    gpus: Annotated[int, typer.Option(help="GPUs of one job (a synchronous job stops when any of them fails).")],
    checkpoint_minutes: Annotated[float, typer.Option(help="Minutes to write one checkpoint (the job pauses).")],
    restore_minutes: Annotated[float, typer.Option(help="Minutes to load the last checkpoint after a failure.")] = 0.0,
    restart_minutes: Annotated[float, typer.Option(help="Restart overhead in minutes: detect, drain or replace the node, reschedule, initialise.")] = 0.0,
    failure_rate: Annotated[float | None, typer.Option(help="Failures per GPU-hour (default: the packaged Llama 3 rate, 1.97e-5).")] = None,
    gpu_mtbf_hours: Annotated[float | None, typer.Option(help="Mean time between failures of one GPU, hours (instead of --failure-rate).")] = None,
    failure_source: Annotated[str | None, typer.Option(help="Packaged failure rate by name, e.g. llama3-405b-gpu (an unknown name lists the known ones).")] = None,
    interval_minutes: Annotated[float | None, typer.Option(help="The job's current minutes of work between checkpoints, priced next to the optimum.")] = None,
    stack: Annotated[str | None, typer.Option(help="Price the lost GPU-hours with this stack's cost report.")] = None,
    capacity: Annotated[str | None, typer.Option(help="With --stack: capacity type the job runs on: owned, reserved, on-demand or spot (default: the first the stack has, in that order).")] = None,
    price: Annotated[float | None, typer.Option(help="USD per GPU-hour of the job's capacity (instead of --stack).")] = None,
    root: Annotated[Path | None, typer.Option(help="Project root (default: nearest Pulumi.yaml).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Optimal checkpoint interval (Young, Daly), expected goodput and the GPU-hours and USD lost to failures per month."""
    from hybridgpu.economics.failure import plan_checkpoint
    from hybridgpu.economics.showback import ShowbackPrices

    try:
        inputs, rate_source = failure_inputs(gpus, failure_rate, gpu_mtbf_hours, failure_source, checkpoint_minutes, restore_minutes, restart_minutes, interval_minutes)
        usd, price_source = None, None
        if price is not None and stack is not None:
            raise ValueError("--price and --stack both set the GPU-hour price: give one")
        if capacity is not None and stack is None:
            raise ValueError("--capacity needs --stack (it picks one of the stack's capacity types)")
        if capacity is not None and capacity not in CHECKPOINT_CAPACITY:
            raise ValueError(f"--capacity: {capacity!r} is not a capacity type; use one of {', '.join(CHECKPOINT_CAPACITY)}")
        if price is not None:
            usd, price_source = price, f"--price {price:g}"
        elif stack is not None:
            prices = ShowbackPrices.from_report(report_from_stack(stack, root)).usd_per_gpu_hour
            have = [k for k in CHECKPOINT_CAPACITY if k in prices]
            kind = capacity or (have[0] if have else None)
            if kind is None or kind not in prices:
                raise ValueError(f"stack {stack}: its cost report prices no {kind or 'GPU'} capacity (has: {', '.join(have) or 'none'}); "
                                 f"pick --capacity from those, or give --price USD")
            usd, price_source = float(prices[kind]), f"stack {stack} cost report, {kind}"
        plan = plan_checkpoint(inputs, rate_source=rate_source, usd_per_gpu_hour=usd, price_source=price_source)
    except (HybridGpuError, ValueError, KeyError) as exc:
        _fail(str(exc))
    if as_json:
        _console().print_json(json.dumps(plan.to_dict()))
        return
    print_checkpoint(plan)


def print_checkpoint(plan: Any) -> None:
    """Print a :class:`~hybridgpu.economics.failure.CheckpointPlan` as a table and two lines."""
    console = _console()
    console.print(f"{plan.gpus} GPUs at {plan.failures_per_gpu_hour:.4g} failures per GPU-hour (MTBF per GPU {plan.gpu_mtbf_hours:,.0f} h; {plan.rate_source})")
    console.print(f"job MTBF {plan.job_mtbf_hours:,.2f} h; checkpoint {plan.checkpoint_hours * 60:g} min, restore {plan.restore_hours * 60:g} min, restart {plan.restart_hours * 60:g} min")

    def usd(x: float | None) -> str:
        return "" if x is None else _usd(x)

    rows = [
        ["Daly (first order): sqrt(2CM) - C", f"{plan.daly_interval_hours * 60:,.1f}", f"{plan.goodput:.2%}", f"{plan.lost_gpu_hours_per_month:,.0f}", usd(plan.lost_usd_per_month)],
        ["Young: sqrt(2CM)", f"{plan.young_interval_hours * 60:,.1f}", "", "", ""],
    ]
    if plan.interval_hours is not None:
        rows.append(["yours (--interval-minutes)", f"{plan.interval_hours * 60:,.1f}", f"{plan.goodput_at_interval:.2%}",
                     f"{plan.lost_gpu_hours_per_month_at_interval:,.0f}", usd(plan.lost_usd_per_month_at_interval)])
    print_table(
        console,
        "checkpoint interval (work between checkpoints) and goodput",
        ["interval", Col("minutes", True), Col("goodput", True), Col("GPU-hours lost per month", True), Col("USD lost per month", True)],
        rows,
    )
    console.print(f"waste at Daly's interval: {plan.checkpoint_share:.2%} writing checkpoints, {plan.failure_share:.2%} lost to failures (restart, restore, re-done work)")
    if plan.usd_per_gpu_hour is not None:
        console.print(f"price: {plan.usd_per_gpu_hour:.4f} USD per GPU-hour ({plan.price_source})")
