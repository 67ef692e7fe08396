"""Results to look at: publication figures (matplotlib), interactive figures (Plotly) and the offline HTML
report. Everything here draws tables (sweep runs, reproduce rows, run files); nothing runs a simulation.

Public names are imported on first use (PEP 562): importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattsched._lazy import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FORMATS": "wattsched.viz.figures",
        "PNG_DPI": "wattsched.viz.figures",
        "bar_figure": "wattsched.viz.figures",
        "gantt_figure": "wattsched.viz.figures",
        "power_figure": "wattsched.viz.figures",
        "render": "wattsched.viz.figures",
        "METRICS": "wattsched.viz.stats",
        "Metric": "wattsched.viz.stats",
        "group_summary": "wattsched.viz.stats",
        "Sweep": "wattsched.viz.sweep",
        "read_sweep": "wattsched.viz.sweep",
        "TIMELINE_COLUMNS": "wattsched.viz.timeline",
        "power_series": "wattsched.viz.timeline",
        "read_timeline": "wattsched.viz.timeline",
        "timeline_frame": "wattsched.viz.timeline",
    },
)
