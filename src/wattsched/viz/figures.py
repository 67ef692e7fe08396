"""Publication figures (matplotlib, Agg): grouped bars with 95 % intervals, a Gantt of one run, power and
energy over time. Figures draw tables; they never run a simulation.

Defaults chosen for papers: PNG at :data:`PNG_DPI` (200) dpi, SVG with text kept as text, PDF with embedded
TrueType fonts, 9–10 pt text, a unit on every axis. Output bytes are deterministic for the same table (no
date or software stamp), so figures can be committed and compared.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from wattsched.hardware.mig import MigGpu, default_gpu
from wattsched.units import JOULES_PER_KWH
from wattsched.viz.stats import CONFIDENCE, Metric
from wattsched.viz.timeline import REPARTITION, RUN, configuration_slices

__all__ = ["FORMATS", "PNG_DPI", "bar_figure", "gantt_figure", "power_figure", "render", "time_axis"]

#: File formats :func:`render` writes.
FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
#: Resolution of PNG output (publishers ask for at least 200-300 dpi).
PNG_DPI = 200
# Typed Any: matplotlib's stubs want literal rc keys, which a shared dict cannot carry.
_STYLE: Any = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "svg.fonttype": "none",
    "svg.hashsalt": "wattsched",
    "pdf.fonttype": 42,
}
_METADATA: dict[str, dict[str, str | None]] = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
}


def render(fig: Figure, formats: Sequence[str] = ("png",)) -> dict[str, bytes]:
    """The figure's bytes in each format (PNG at :data:`PNG_DPI` dpi); closes the figure."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown format(s) {unknown}; valid: {', '.join(FORMATS)}")
    out: dict[str, bytes] = {}
    try:
        with plt.rc_context(_STYLE):
            for fmt in dict.fromkeys(formats):
                buffer = io.BytesIO()
                fig.savefig(buffer, format=fmt, dpi=PNG_DPI, metadata=_METADATA[fmt], bbox_inches="tight")
                out[fmt] = buffer.getvalue()
    finally:
        plt.close(fig)
    return out


def time_axis(span_s: float) -> tuple[float, str]:
    """Divisor and axis label for a time span: hours from 3 h, minutes from 3 min, else seconds."""
    if span_s >= 3 * 3600.0:
        return 3600.0, "time (h)"
    if span_s >= 180.0:
        return 60.0, "time (min)"
    return 1.0, "time (s)"


def _new_figure(width: float, height: float) -> Figure:
    with plt.rc_context(_STYLE):
        return plt.figure(figsize=(width, height))


def bar_figure(
    summary: pd.DataFrame, metric: Metric, x: str | None, hue: Sequence[str] = (), title: str = ""
) -> Figure:
    """Grouped bars of ``summary`` (from :func:`~wattsched.viz.stats.group_summary`): one bar group per value
    of ``x``, one bar per combination of ``hue`` columns, error bars from ``low`` to ``high``."""
    table = summary.copy()
    x_values = list(dict.fromkeys(table[x].astype(str))) if x else [""]
    table["_x"] = table[x].astype(str) if x else ""
    table["_hue"] = table[list(hue)].astype(str).agg(", ".join, axis=1) if hue else metric.name
    hue_values = list(dict.fromkeys(table["_hue"]))
    fig = _new_figure(max(3.4, 0.42 * len(x_values) * max(1, len(hue_values)) ** 0.6 + 1.8), 2.9)
    with plt.rc_context(_STYLE):
        ax = fig.add_subplot()
        width = 0.8 / max(1, len(hue_values))
        positions = np.arange(len(x_values), dtype=float)
        colors = plt.get_cmap("tab10" if len(hue_values) <= 10 else "tab20")
        for i, name in enumerate(hue_values):
            part = table[table["_hue"] == name].set_index("_x").reindex(x_values)
            mean = part["mean"].to_numpy(dtype=float)
            err = np.vstack(
                [mean - part["low"].to_numpy(dtype=float), part["high"].to_numpy(dtype=float) - mean]
            )
            ax.bar(
                positions + (i - (len(hue_values) - 1) / 2) * width,
                mean,
                width,
                yerr=err,
                capsize=2,
                label=name,
                color=colors(i % colors.N),
                error_kw={"elinewidth": 0.8},
            )
        ax.set_xticks(
            positions,
            x_values,
            rotation=30 if max(map(len, x_values)) > 8 else 0,
            ha="right" if max(map(len, x_values)) > 8 else "center",
        )
        ax.set_xlabel(x if x else "")
        ax.set_ylabel(metric.label)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        if hue:
            ax.legend(
                title=", ".join(hue),
                frameon=False,
                ncols=1 if len(hue_values) <= 6 else 2,
                loc="upper left",
                bbox_to_anchor=(1.0, 1.0),
            )
        note = f"bars: mean; whiskers: {CONFIDENCE:.0%} t-interval over runs"
        ax.set_title(f"{title}\n{note}" if title else note, fontsize=8 if not title else None)
    return fig


def _configuration_periods(timeline: pd.DataFrame, finish_s: float) -> list[tuple[float, float, str]]:
    """``(start_s, end_s, configuration)`` spans: the first run row's configuration until the first
    repartition, then each repartition's new configuration from the blackout's end."""
    runs = timeline[timeline["kind"] == RUN]
    changes = timeline[timeline["kind"] == REPARTITION]
    first = str(runs["configuration"].iloc[0]) if len(runs) else ""
    periods: list[tuple[float, float, str]] = []
    start_s, current = 0.0, first
    for blackout_start, blackout_end, new in zip(
        changes["start_s"], changes["end_s"], changes["configuration"], strict=True
    ):
        periods.append((start_s, float(blackout_start), current))
        start_s, current = float(blackout_end), str(new)
    periods.append((start_s, finish_s, current))
    return [p for p in periods if p[2] and p[1] > p[0]]


def gantt_figure(timeline: pd.DataFrame, gpu: MigGpu | None = None, title: str = "") -> Figure:
    """Slice placements over time: y = the GPU's memory slots (NVML placements ``(start, size)``), one bar
    per stretch a job ran (colour per job), thin outlines for the slices of the configuration in force,
    repartition blackouts shaded red. ``gpu``: the GPU the run simulated (default P1's A100-40GB)."""
    gpu = gpu if gpu is not None else default_gpu()
    finish_s = float(timeline["end_s"].max())
    scale, xlabel = time_axis(finish_s)
    fig = _new_figure(7.0, 2.8)
    with plt.rc_context(_STYLE):
        ax = fig.add_subplot()
        for start_s, end_s, ident in _configuration_periods(timeline, finish_s):
            for place in configuration_slices(gpu.configuration(ident)):
                ax.add_patch(
                    plt.Rectangle(
                        (start_s / scale, place.start),
                        (end_s - start_s) / scale,
                        place.size,
                        fill=False,
                        edgecolor="0.6",
                        linewidth=0.4,
                    )
                )
        runs = timeline[timeline["kind"] == RUN]
        job_color = {job: i for i, job in enumerate(dict.fromkeys(runs["job_id"]))}
        cmap = plt.get_cmap("tab20")
        for _, part in runs.groupby(["slice_start", "slice_size"], sort=True):
            slot, size = int(part["slice_start"].iloc[0]), int(part["slice_size"].iloc[0])
            spans = list(zip(part["start_s"] / scale, (part["end_s"] - part["start_s"]) / scale, strict=True))
            colors = [cmap(job_color[j] % cmap.N) for j in part["job_id"]]
            ax.broken_barh(spans, (slot + 0.06, size - 0.12), facecolors=colors, linewidth=0)
        blackouts = timeline[timeline["kind"] == REPARTITION]
        for start_s, end_s in zip(blackouts["start_s"], blackouts["end_s"], strict=True):
            ax.axvspan(start_s / scale, end_s / scale, color="tab:red", alpha=0.35, linewidth=0)
            ax.axvline(start_s / scale, color="tab:red", linewidth=0.5, alpha=0.7)
        ax.set_xlim(0, finish_s / scale)
        slots = gpu.memory_slots
        ax.set_ylim(0, slots)
        ax.set_yticks(np.arange(slots) + 0.5, [str(s) for s in range(slots)])
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        ax.set_ylabel("memory slot (NVML placement)")
        handles = [
            Patch(facecolor=cmap(0), label=f"job stretch ({len(runs)} on {len(job_color)} jobs)"),
            Patch(fill=False, edgecolor="0.6", label="slice of the configuration"),
        ]
        if len(blackouts):
            handles.append(Patch(facecolor="tab:red", alpha=0.35, label=f"repartition ({len(blackouts)})"))
        ax.legend(handles=handles, frameon=False, loc="upper left", bbox_to_anchor=(0.0, -0.22), ncols=3)
        ax.set_title(title or f"slice placements on {gpu.product}")
    return fig


def power_figure(series: pd.DataFrame, title: str = "") -> Figure:
    """Board power (W, step line, left axis) and cumulative energy (kWh, right axis) over time, from
    :func:`~wattsched.viz.timeline.power_series`."""
    times = series["start_s"].to_numpy(dtype=float)
    scale, xlabel = time_axis(float(times[-1]) if times.size else 0.0)
    power = series["power_w"].to_numpy(dtype=float)
    fig = _new_figure(7.0, 2.6)
    with plt.rc_context(_STYLE):
        ax = fig.add_subplot()
        if times.size > 1:
            ax.stairs(power[:-1], times / scale, color="tab:blue", linewidth=0.7, label="power (W)")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("board power (W)", color="tab:blue")
        ax.set_ylim(0, max(1.0, float(np.nanmax(power)) if times.size > 1 else 1.0) * 1.08)
        ax.set_xlim(0, (times[-1] if times.size else 1.0) / scale)
        right = ax.twinx()
        right.plot(
            times / scale,
            series["energy_j"].to_numpy(dtype=float) / JOULES_PER_KWH,
            color="tab:orange",
            linewidth=1.2,
        )
        right.set_ylabel("cumulative energy (kWh)", color="tab:orange")
        right.set_ylim(bottom=0)
        total_kwh = float(series["energy_j"].iloc[-1]) / JOULES_PER_KWH if len(series) else 0.0
        ax.set_title(title or f"power and energy ({total_kwh:.3f} kWh in all)")
    return fig
