"""Publication figures (wattsched.viz.figures): formats, resolution, units on every axis, determinism, and
that bars and whiskers show the group summary."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from viz_fixtures import sweep_runs

from wattsched.mig import MigSimulation, simulate
from wattsched.viz.figures import PNG_DPI, bar_figure, gantt_figure, power_figure, render, time_axis
from wattsched.viz.stats import METRICS, group_summary
from wattsched.viz.timeline import power_series, timeline_frame
from wattsched.workload.generators import WorkloadSpec, generate_jobs


def _png_dpi(data: bytes) -> float:
    """Horizontal resolution from the PNG pHYs chunk (pixels per metre -> dots per inch)."""
    index = data.index(b"pHYs")
    per_metre, _, unit = struct.unpack(">IIB", data[index + 4 : index + 13])
    assert unit == 1  # metres
    return per_metre * 0.0254


def _timeline():  # type: ignore[no-untyped-def]
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 3)
    return timeline_frame(simulate(jobs, 3, "edf-ss-restricted", horizon_s=3600, record_jobs=True))


def test_png_is_200_dpi_and_every_format_has_its_signature() -> None:
    summary = group_summary(sweep_runs(), METRICS["energy"], ["policy", "configuration"])
    files = render(bar_figure(summary, METRICS["energy"], "policy", ["configuration"]), ["png", "svg", "pdf"])
    assert files["png"].startswith(b"\x89PNG") and _png_dpi(files["png"]) == pytest.approx(PNG_DPI, abs=0.1)
    assert b"<svg" in files["svg"][:2000] and files["pdf"].startswith(b"%PDF")
    assert b"energy (kWh)" in files["svg"]  # text kept as text in SVG


def test_same_table_gives_the_same_bytes() -> None:
    def draw() -> dict[str, bytes]:
        summary = group_summary(sweep_runs(), METRICS["et"], ["policy"])
        return render(bar_figure(summary, METRICS["et"], "policy"), ["png", "svg", "pdf"])

    assert draw() == draw()


def test_bars_and_whiskers_are_the_group_means_and_intervals() -> None:
    summary = group_summary(sweep_runs(), METRICS["energy"], ["policy", "configuration"])
    figure = bar_figure(summary, METRICS["energy"], "policy", ["configuration"])
    ax = figure.axes[0]
    heights = sorted(round(p.get_height(), 9) for p in ax.patches)
    assert heights == sorted(round(v, 9) for v in summary["mean"])
    # edf-fs on configuration 3: 1, 2, 3 kWh -> whisker 2 ± t(0.975, 2)/sqrt(3).
    row = summary[(summary["policy"] == "edf-fs") & (summary["configuration"] == "3")].iloc[0]
    assert row["high"] - row["mean"] == pytest.approx(4.302652729911275 / np.sqrt(3))
    segments = [seg for collection in ax.collections for seg in collection.get_segments()]
    spans = {(round(s[0][1], 9), round(s[1][1], 9)) for s in segments}
    assert (round(row["low"], 9), round(row["high"], 9)) in spans
    assert ax.get_ylabel() == "energy (kWh)" and ax.get_xlabel() == "policy"
    render(figure)


def test_gantt_and_power_axes_carry_units() -> None:
    timeline = _timeline()
    gantt = gantt_figure(timeline)
    assert gantt.axes[0].get_xlabel() == "time (min)"  # a one-hour run
    assert gantt.axes[0].get_ylabel() == "memory slot (NVML placement)"
    power = power_figure(power_series(timeline))
    left, right = power.axes
    assert (left.get_xlabel(), left.get_ylabel(), right.get_ylabel()) == (
        "time (min)",
        "board power (W)",
        "cumulative energy (kWh)",
    )
    for figure in (gantt, power):
        assert render(figure, ["png"])["png"].startswith(b"\x89PNG")


def test_gantt_draws_one_bar_per_stretch_and_shades_blackouts() -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 3)
    sim = MigSimulation(jobs, 3, "edf-ss-restricted", horizon_s=3600, record_jobs=True)
    changes = []
    while sim.advance():
        target = 6 if sim.now_s < 1800 else 2
        if not sim.in_blackout and sim.repartition(target):
            changes.append((sim.now_s, target))
    timeline = timeline_frame(sim.result(), repartitions=changes)
    assert len(changes) == 2  # 3 -> 6 at the first epoch, 6 -> 2 after half an hour
    figure = gantt_figure(timeline)
    ax = figure.axes[0]
    bars = sum(len(c.get_paths()) for c in ax.collections)
    assert bars == int((timeline["kind"] == "run").sum())
    shaded = [p for p in ax.patches if p.get_facecolor()[:3] == pytest.approx(to_rgb("tab:red"))]
    assert len(shaded) == 2
    render(figure)


@pytest.mark.parametrize(
    ("span_s", "expected"), [(10.0, "time (s)"), (600.0, "time (min)"), (86_400.0, "time (h)")]
)
def test_time_axis_unit(span_s: float, expected: str) -> None:
    assert time_axis(span_s)[1] == expected


def test_unknown_format_is_refused() -> None:
    summary = group_summary(sweep_runs(), METRICS["et"], [])
    with pytest.raises(ValueError, match="unknown format"):
        render(bar_figure(summary, METRICS["et"], None), ["jpg"])
