"""PNG plots of the cost report (matplotlib ``Figure`` objects rendered by Agg: no display, no pyplot state).

* :func:`plot_cost_vs_utilization`: on-prem cost per productive GPU-hour against utilization,
  each cloud option as a horizontal line, each break-even marked with a point and a label;
* :func:`plot_cumulative`: 3-year cumulative cost, on-prem (servers bought at month 0) against
  each cloud option.

The functions return the :class:`matplotlib.figure.Figure` (so tests can read its lines,
labels and annotations) and :func:`save_figure` writes it. Nothing here imports Pulumi.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from hybridgpu.economics.costmodel import CloudRate, OnPremCostModel, break_even_utilization

__all__ = ["plot_cost_vs_utilization", "plot_cumulative", "save_figure"]

#: Utilization grid of the curve (fractions): 5% to 100% in 1% steps.
_GRID = np.linspace(0.05, 1.0, 96)


def plot_cost_vs_utilization(model: OnPremCostModel, rates: list[CloudRate], title: str) -> Figure:
    """Cost per productive GPU-hour against utilization.

    Args:
        model: the on-prem cost model.
        rates: cloud options (each a horizontal line at its USD per productive GPU-hour).
        title: figure title.

    Returns:
        The figure: one line labelled ``on-prem``, one per cloud option labelled with the
        option, and for each option whose break-even lies in (0, 1] an annotation
        ``break-even <option>: <u>%`` at ``(u*, price)``.
    """
    fig = Figure(figsize=(8, 5), dpi=100)
    ax = fig.add_subplot()
    costs = [model.usd_per_productive_gpu_hour(float(u)) for u in _GRID]
    ax.plot(_GRID * 100, costs, label="on-prem", color="black", linewidth=2.2)
    colors = ["tab:red", "tab:orange", "tab:green", "tab:blue", "tab:purple", "tab:brown", "tab:olive"]
    for i, rate in enumerate(rates):
        color = colors[i % len(colors)]
        ax.plot([_GRID[0] * 100, 100], [rate.usd_per_productive_gpu_hour] * 2, label=rate.option, color=color, linestyle="--")
        u = break_even_utilization(model.fixed_usd_per_gpu_year, rate.usd_per_productive_gpu_hour, model.usd_per_used_gpu_hour)
        if u is not None and 0 < u <= 1:
            ax.plot([u * 100], [rate.usd_per_productive_gpu_hour], marker="o", color=color)
            # Label just above its own line, right of the dot: there the on-prem curve is below
            # the line, and dearer options (higher lines) break even further left.
            ax.annotate(f"break-even {rate.option}: {u:.1%}", xy=(u * 100, rate.usd_per_productive_gpu_hour),
                        xytext=(5, 1.5), textcoords="offset points", fontsize=7.5, color=color, ha="left", va="bottom")
    top = max([*(r.usd_per_productive_gpu_hour for r in rates), model.usd_per_productive_gpu_hour(0.5)]) * 1.6
    ax.set_ylim(0, top)
    ax.set_xlim(_GRID[0] * 100, 100)
    ax.set_xlabel("utilization (% of hours a GPU does productive work)")
    ax.set_ylabel("USD per productive GPU-hour")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_cumulative(curves: dict[str, list[float]], title: str) -> Figure:
    """Cumulative cost by month.

    Args:
        curves: option -> cumulative USD at months 0..N (``on-prem`` drawn solid, the others dashed).
        title: figure title.

    Returns:
        The figure: one line per curve, labelled with its key, x = month, y = USD.
    """
    fig = Figure(figsize=(8, 5), dpi=100)
    ax = fig.add_subplot()
    for name, values in curves.items():
        style = "-" if name == "on-prem" else "--"
        ax.plot(np.arange(len(values)), values, label=name, linestyle=style, linewidth=2.2 if name == "on-prem" else 1.5)
    ax.set_xlabel("month")
    ax.set_ylabel("cumulative USD")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.yaxis.set_major_formatter(FuncFormatter(_usd_tick))
    fig.tight_layout()
    return fig


def _usd_tick(value: float, _pos: int) -> str:
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as PNG to ``path`` (parent directories created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
