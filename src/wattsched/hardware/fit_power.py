"""Fitting a catalogue power curve to measurements of power against busy SMs (the H200 files, ``gpu
calibrate``).

A measurement is whole-card power with a fraction ``x`` of the SMs busy (k/7 of them in ``power_levels.csv``,
16
… 132 SMs in ``partitions.csv``). :func:`fit_curve` turns points ``(x, watts)`` into the catalogue's
``busy_w``
(``u = 1..U`` busy compute slices, ``x = u / U``):

1. points taken at a lowered clock (the card at its power cap) are dropped: the catalogue curve is the
   *uncapped* power, the cap is applied by the model (:mod:`wattsched.hardware.power`);
2. the rest are made monotone (pool-adjacent-violators: a dip such as the H200's streaming kernel at 6/7 is
   measurement noise, power does not fall when more SMs work);
3. ``busy_w[u]`` is the piecewise-linear interpolation at ``x = u / U``, extrapolated past the last point with
   the slope of the last two points (and no lower than the last point).

:func:`fit_cap_exponent` fits α of the throttling rule ``P_dyn,capped = P_dyn · s^α`` (``s``: speed factor of
every busy slice) to runs with several slices busy at the cap (``concurrent.json``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["fit_cap_exponent", "fit_curve", "monotone"]


def monotone(values: Sequence[float]) -> list[float]:
    """The non-decreasing least-squares fit of ``values`` (pool adjacent violators, equal weights)."""
    blocks: list[list[float]] = []  # [mean, count]
    for value in values:
        blocks.append([float(value), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            previous = blocks[-1]
            total = previous[1] + count
            previous[0] = (previous[0] * previous[1] + mean * count) / total
            previous[1] = total
    out: list[float] = []
    for mean, count in blocks:
        out.extend([mean] * int(count))
    return out


def fit_curve(points: Sequence[tuple[float, float, bool]], units: int) -> tuple[float, ...]:
    """``busy_w`` for ``u = 1..units`` from ``(busy fraction, watts, throttled)`` points (see the module
    docstring); at least two unthrottled points are needed."""
    kept = sorted((x, w) for x, w, throttled in points if not throttled)
    if len(kept) < 2:
        raise ValueError("a power curve needs at least two measurements at full clock")
    xs = [x for x, _ in kept]
    ws = monotone([w for _, w in kept])
    out = []
    for u in range(1, units + 1):
        x = u / units
        if x <= xs[0]:
            # Below the first point: interpolate from the first two (a slice is never below zero dynamic
            # power).
            watts = ws[0] + (x - xs[0]) * (ws[1] - ws[0]) / (xs[1] - xs[0])
        elif x >= xs[-1]:
            slope = (ws[-1] - ws[-2]) / (xs[-1] - xs[-2])
            watts = ws[-1] + max(slope, 0.0) * (x - xs[-1])
        else:
            i = next(k for k in range(1, len(xs)) if xs[k] >= x)
            watts = ws[i - 1] + (x - xs[i - 1]) * (ws[i] - ws[i - 1]) / (xs[i] - xs[i - 1])
        out.append(watts)
    return tuple(monotone(out))


def fit_cap_exponent(runs: Sequence[tuple[float, float]], idle_w: float, cap_w: float) -> float:
    """α from ``(uncapped watts, measured speed factor)`` pairs of runs held at the cap: least squares through
    the origin of ``ln((cap − idle) / (P − idle)) = α · ln(s)``."""
    num = den = 0.0
    for watts, speed in runs:
        if watts <= cap_w or not 0.0 < speed < 1.0:
            continue
        ratio = (cap_w - idle_w) / (watts - idle_w)
        num += math.log(ratio) * math.log(speed)
        den += math.log(speed) ** 2
    if den == 0.0:
        raise ValueError("no throttled run to fit the cap exponent")
    return num / den


def read_power_levels(path: str, *, units: int = 7) -> dict[str, tuple[float, ...]]:
    """Curves from a ``power_levels.csv`` (the H200 file, or ``gpu calibrate``'s output): one per ``kind``
    (rows with ``busy_sevenths`` 1..7 or ``busy_units`` 1..U), keyed by kind; idle rows are skipped."""
    import csv

    points: dict[str, list[tuple[float, float, bool]]] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    top_clock = max(float(r["sm_clock_mhz"]) for r in rows if r.get("sm_clock_mhz"))
    for row in rows:
        busy = row.get("busy_units") or row.get("busy_sevenths") or "0"
        kind = row.get("curve") or row.get("kind") or ""
        if not kind or kind.startswith("idle") or int(busy) == 0 or row.get("blocks", "x") == "":
            continue
        scale = 7 if "busy_sevenths" in row else units
        throttled = float(row.get("sm_clock_mhz") or top_clock) < top_clock
        points.setdefault(kind, []).append((int(busy) / scale, float(row["power_w"]), throttled))
    return {kind: fit_curve(pts, units) for kind, pts in points.items()}


def read_partitions(path: str, total_sms: int, *, units: int = 7) -> dict[str, tuple[float, ...]]:
    """Curves from a ``partitions.csv`` (whole-card power of one workload on k of ``total_sms`` SMs), one per
    workload; points at a lowered SM clock count as throttled (dropped, see :func:`fit_curve`)."""
    import csv

    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    top_clock = max(float(r["sm_clock_mhz"]) for r in rows)
    points: dict[str, list[tuple[float, float, bool]]] = {}
    for row in rows:
        throttled = float(row["sm_clock_mhz"]) < top_clock
        points.setdefault(row["workload"], []).append(
            (float(row["sms"]) / total_sms, float(row["power_w"]), throttled)
        )
    return {name: fit_curve(pts, units) for name, pts in points.items()}


def read_concurrent_cap_exponent(path: str, idle_w: float, cap_w: float, workload: str) -> float:
    """α (:func:`fit_cap_exponent`) from a ``concurrent.json``: ``u`` equal partitions busy with ``workload``.

    The uncapped power of ``u`` busy partitions is the least-squares line through the runs at full clock; the
    speed factor of a throttled run is its rate per partition over the mean rate of the full-clock runs."""
    import json

    with open(path, encoding="utf-8") as handle:
        rows = [r for r in json.load(handle)["rows"] if r["workload"] == workload]
    top_clock = max(r["sm_clock_mhz"] for r in rows)
    full = [r for r in rows if r["sm_clock_mhz"] == top_clock]
    if len(full) < 2:
        raise ValueError(f"{path}: '{workload}' needs two runs at full clock")
    n = len(full)
    mean_u = sum(r["busy"] for r in full) / n
    mean_p = sum(r["power_w"] for r in full) / n
    slope = sum((r["busy"] - mean_u) * (r["power_w"] - mean_p) for r in full) / sum(
        (r["busy"] - mean_u) ** 2 for r in full
    )
    rate = sum(r["rate_per_partition_per_s"] for r in full) / n
    runs = [
        (mean_p + slope * (r["busy"] - mean_u), r["rate_per_partition_per_s"] / rate)
        for r in rows
        if r["sm_clock_mhz"] < top_clock
    ]
    return fit_cap_exponent(runs, idle_w, cap_w)
