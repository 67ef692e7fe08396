"""Results to look at: publication figures (matplotlib), interactive figures (Plotly) and the offline HTML
report. Everything here draws tables (sweep runs, reproduce rows, run files); nothing runs a simulation.
"""

from __future__ import annotations

from wattsched.viz.figures import FORMATS, PNG_DPI, bar_figure, gantt_figure, power_figure, render
from wattsched.viz.stats import METRICS, Metric, group_summary
from wattsched.viz.sweep import Sweep, read_sweep
from wattsched.viz.timeline import TIMELINE_COLUMNS, power_series, read_timeline, timeline_frame

__all__ = [
    "FORMATS",
    "METRICS",
    "PNG_DPI",
    "TIMELINE_COLUMNS",
    "Metric",
    "Sweep",
    "bar_figure",
    "gantt_figure",
    "group_summary",
    "power_figure",
    "power_series",
    "read_sweep",
    "read_timeline",
    "render",
    "timeline_frame",
]
