"""The trade-off figure of ``wattsched advise``: energy against late share, the Pareto front joined up.

It draws a table of outcomes (rows of ``energy_kwh``, ``late_share``, ``pareto``, ``label``); it never runs
a simulation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

__all__ = ["pareto_figure"]


def pareto_figure(
    rows: Sequence[Mapping[str, Any]],
    *,
    recommended: str | None,
    baseline: str,
    max_late_share: float,
    title: str,
) -> Figure:
    """Every setting as a point (energy in kWh, late jobs in %), the front as a step line, the budget as a
    dashed line, the baseline and the recommendation (``label`` values) marked."""
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    others = [r for r in rows if not r["pareto"]]
    front = sorted((r for r in rows if r["pareto"]), key=lambda r: (r["energy_kwh"], r["late_share"]))
    ax.scatter(
        [r["energy_kwh"] for r in others],
        [100 * r["late_share"] for r in others],
        s=12,
        color="0.65",
        label="dominated setting",
    )
    ax.step(
        [r["energy_kwh"] for r in front],
        [100 * r["late_share"] for r in front],
        where="post",
        color="tab:blue",
        marker="o",
        markersize=4,
        label="Pareto front",
    )
    ax.axhline(100 * max_late_share, color="tab:red", linestyle="--", linewidth=1, label="late-share budget")
    for label, marker, color, text in (
        (baseline, "s", "black", "baseline"),
        (recommended, "*", "tab:green", "recommended"),
    ):
        row = next((r for r in rows if r["label"] == label), None)
        if row is not None:
            ax.scatter(
                [row["energy_kwh"]],
                [100 * row["late_share"]],
                marker=marker,
                s=90,
                color=color,
                zorder=3,
                label=f"{text}: {label}",
            )
    ax.set_xlabel("energy (kWh)")
    ax.set_ylabel("late jobs (%)")
    ax.set_title(title)
    ax.legend(loc="best", fontsize=7)
    ax.grid(alpha=0.3)
    return fig
