"""The showback's stacked-bar plot per team (matplotlib ``Figure`` rendered by Agg; no pyplot state).

One bar per team (``(unattributed)`` last), stacked by what the team pays for: GPU-hours used
per capacity type (``owned``, ``reserved``, ``spot``, ``on-demand``) and its share of idle cost.
Written by ``hybridgpu cost showback --plot DIR`` as ``showback.png``. Nothing here imports Pulumi.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from hybridgpu.economics.plots import _usd_tick
from hybridgpu.economics.showback import Showback
from hybridgpu.economics.usage import CAPACITY_TYPES

__all__ = ["SEGMENTS", "plot_showback"]

#: Stacking order, bottom to top: the capacity types, then the idle share.
SEGMENTS: tuple[str, ...] = (*CAPACITY_TYPES, "idle")
_COLORS = {"owned": "#4c72b0", "reserved": "#8172b2", "spot": "#55a868", "on-demand": "#dd8452", "idle": "#c0c0c0"}


def plot_showback(showback: Showback, title: str) -> Figure:
    """Stacked bars of USD per team.

    Args:
        showback: the computed showback.
        title: figure title.

    Returns:
        The figure: one container of bars per segment present (labelled ``owned``, ``spot``,
        ``idle share``...), one bar per team, bar heights in USD.
    """
    teams = showback.teams()
    names = sorted(teams, key=lambda t: (t == "(unattributed)", t))
    fig = Figure(figsize=(max(5.0, 1.2 * len(names) + 2), 4.5))
    ax = fig.add_subplot()
    bottom = [0.0] * len(names)
    for segment in SEGMENTS:
        heights = [float(teams[n].get(segment, 0)) for n in names]
        if not any(heights):
            continue
        ax.bar(names, heights, bottom=bottom, label="idle share" if segment == "idle" else segment, color=_COLORS[segment])
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_ylabel("USD")
    ax.set_title(title)
    ax.yaxis.set_major_formatter(FuncFormatter(_usd_tick))
    if names:
        ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    return fig
