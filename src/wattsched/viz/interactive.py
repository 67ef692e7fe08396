"""Interactive figures (Plotly) for the HTML report: the same tables as :mod:`wattsched.viz.figures`, with
hover values, zoom and a metric menu. Builders return ``plotly.graph_objects.Figure``; nothing here writes a
file or reaches the network (the page inlines plotly.js, see :mod:`wattsched.viz.html`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from wattsched.units import JOULES_PER_KWH
from wattsched.viz.stats import CONFIDENCE, Metric, group_summary

__all__ = ["bar_chart", "line_chart", "scatter_runs"]

_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_LAYOUT: dict[str, object] = {
    "template": "plotly_white",
    "margin": {"l": 70, "r": 30, "t": 60, "b": 60},
    "height": 420,
    "legend": {"title": {"text": ""}},
    "font": {"size": 12},
}


def _label(columns: Sequence[str], values: Sequence[object]) -> str:
    return ", ".join(str(v) for v in values) if columns else ""


def bar_chart(
    frame: pd.DataFrame, metrics: Sequence[Metric], x: str | None, hue: Sequence[str] = (), title: str = ""
) -> go.Figure:
    """Grouped bars (mean, 95 % t-interval whiskers) of one row per run; with several ``metrics`` a menu
    above the plot switches between them. ``x`` = bar groups, ``hue`` = one colour per combination."""
    by = [c for c in (x, *hue) if c]
    figure = go.Figure()
    buttons = []
    traces_per_metric: list[int] = []
    for index, metric in enumerate(metrics):
        summary = group_summary(frame, metric, by)
        summary["_hue"] = summary[list(hue)].astype(str).agg(", ".join, axis=1) if hue else metric.label
        count = 0
        for color, (name, part) in enumerate(summary.groupby("_hue", sort=False)):
            mean = part["mean"].to_numpy(dtype=float)
            figure.add_bar(
                x=part[x].astype(str).tolist() if x else ["all runs"] * len(part),
                y=mean.tolist(),
                name=str(name),
                marker_color=_PALETTE[color % len(_PALETTE)],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": (part["high"] - part["mean"]).tolist(),
                    "arrayminus": (part["mean"] - part["low"]).tolist(),
                    "thickness": 1.2,
                },
                customdata=np.stack([part["low"], part["high"], part["runs"]], axis=1).tolist(),
                hovertemplate=f"%{{x}}<br>{metric.label}: %{{y:.{metric.decimals}f}}<br>"
                f"{CONFIDENCE:.0%} interval: [%{{customdata[0]:.{metric.decimals}f}}, "
                f"%{{customdata[1]:.{metric.decimals}f}}]<br>runs: %{{customdata[2]}}"
                "<extra>%{fullData.name}</extra>",
                visible=index == 0,
                legendgroup=str(name),
            )
            count += 1
        traces_per_metric.append(count)
    total = sum(traces_per_metric)
    start = 0
    for metric, count in zip(metrics, traces_per_metric, strict=True):
        visible = [start <= i < start + count for i in range(total)]
        buttons.append(
            {
                "label": metric.label,
                "method": "update",
                "args": [{"visible": visible}, {"yaxis": {"title": {"text": metric.label}}}],
            }
        )
        start += count
    layout: dict[str, object] = dict(_LAYOUT)
    layout.update(
        title={"text": title},
        barmode="group",
        xaxis={"title": {"text": x or ""}, "type": "category"},
        yaxis={"title": {"text": metrics[0].label if metrics else ""}},
        legend={"title": {"text": ", ".join(hue)}},
    )
    if len(metrics) > 1:
        layout["updatemenus"] = [
            {
                "buttons": buttons,
                "direction": "down",
                "x": 0.0,
                "xanchor": "left",
                "y": 1.2,
                "yanchor": "top",
                "showactive": True,
            }
        ]
    figure.update_layout(**layout)
    return figure


def scatter_runs(frame: pd.DataFrame, by: Sequence[str], title: str = "") -> go.Figure:
    """Energy (kWh) against average tardiness (min) per run, one colour per group of ``by``."""
    figure = go.Figure()
    groups = frame.groupby(list(by), sort=False) if by else [((), frame)]
    for color, (key, part) in enumerate(groups):
        values = key if isinstance(key, tuple) else (key,)
        hover = part["seed"].astype(str).tolist() if "seed" in part.columns else [""] * len(part)
        figure.add_scatter(
            x=(part["avg_tardiness_s"].to_numpy(dtype=float) / 60.0).tolist(),
            y=(part["energy_j"].to_numpy(dtype=float) / JOULES_PER_KWH).tolist(),
            mode="markers",
            name=_label(by, values) or "runs",
            text=hover,
            marker={"color": _PALETTE[color % len(_PALETTE)], "size": 8, "opacity": 0.8},
            hovertemplate="tardiness %{x:.3f} min<br>energy %{y:.4f} kWh<br>seed %{text}"
            "<extra>%{fullData.name}</extra>",
        )
    layout: dict[str, object] = dict(_LAYOUT)
    layout.update(
        title={"text": title},
        xaxis={"title": {"text": "average tardiness (min)"}},
        yaxis={"title": {"text": "energy (kWh)"}},
        legend={"title": {"text": ", ".join(by)}},
    )
    figure.update_layout(**layout)
    return figure


def line_chart(
    table: pd.DataFrame, x: str, y: str, series: str | None, *, xlabel: str, ylabel: str, title: str = ""
) -> go.Figure:
    """One line per value of ``series`` (or one line) through the points of ``table`` (sorted by ``x``)."""
    figure = go.Figure()
    groups = table.groupby(series, sort=False) if series else [("", table)]
    for color, (name, part) in enumerate(groups):
        part = part.sort_values(x, kind="mergesort")
        figure.add_scatter(
            x=part[x].tolist(),
            y=part[y].astype(float).tolist(),
            mode="lines+markers",
            name=str(name),
            line={"color": _PALETTE[color % len(_PALETTE)]},
        )
    layout: dict[str, object] = dict(_LAYOUT)
    layout.update(
        title={"text": title},
        xaxis={"title": {"text": xlabel}},
        yaxis={"title": {"text": ylabel}},
        legend={"title": {"text": series or ""}},
    )
    figure.update_layout(**layout)
    return figure
