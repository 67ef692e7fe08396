"""Tidy group summaries for figures: mean and a 95 % interval per group, and the metrics figures show.

A *tidy* frame has one row per run. :func:`group_summary` groups it by factor columns (policy, configuration,
GPU, ...) and gives each group's mean, a Student-t 95 % confidence interval of the mean over its runs
(seeds, days, queues) and the run count. A group of one run has no interval (``low = high = mean``).
The t-interval is symmetric, so for a quantity that cannot be negative (energy, tardiness, counts, ET: every
metric of :data:`METRICS`, ``Metric.non_negative``) its low end can fall below zero when a few runs are far
from the rest; it is then clipped at 0, and the row's ``clipped`` column says so (the high end is kept).
Every :class:`Metric` says which column it reads, how it is shown (kWh, minutes) and the axis label with
its unit, so the conversion from the library's units (J, s) happens here and in no figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from wattsched.errors import ConfigError
from wattsched.units import JOULES_PER_KWH, SECONDS_PER_MINUTE

__all__ = ["CONFIDENCE", "METRICS", "Metric", "group_summary", "varying_columns"]

#: Coverage of the intervals drawn on every bar.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Metric:
    """One quantity of a run table: the ``column`` it reads (library units), the ``factor`` that turns it
    into the shown unit and the axis ``label`` naming that unit."""

    name: str
    column: str
    label: str
    factor: float = 1.0
    #: Shown with this many decimals in tables.
    decimals: int = 3
    #: The quantity is never negative: the low end of its interval is clipped at 0.
    non_negative: bool = False


#: Metrics of a MIG run table (docs/howto/sweep.md sweep columns, Table II/III rows). Energy in kWh, time in
#: minutes.
METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric("et", "et", "ET (P1 Sec. IV-A, lower is better)", non_negative=True),
        Metric("energy", "energy_j", "energy (kWh)", 1.0 / JOULES_PER_KWH, 4, non_negative=True),
        Metric(
            "tardiness",
            "avg_tardiness_s",
            "average tardiness (min)",
            1.0 / SECONDS_PER_MINUTE,
            non_negative=True,
        ),
        Metric(
            "max-tardiness",
            "max_tardiness_s",
            "maximum tardiness (min)",
            1.0 / SECONDS_PER_MINUTE,
            non_negative=True,
        ),
        Metric("late-jobs", "late_jobs", "late jobs (count per run)", 1.0, 1, non_negative=True),
        Metric("preemptions", "preemptions", "preemptions (count per run)", 1.0, 1, non_negative=True),
        Metric("repartitions", "repartitions", "repartitions (count per run)", 1.0, 1, non_negative=True),
    )
}


def varying_columns(frame: pd.DataFrame, candidates: Sequence[str]) -> list[str]:
    """The ``candidates`` present in ``frame`` that take more than one value (in ``candidates`` order)."""
    return [c for c in candidates if c in frame.columns and frame[c].astype(str).nunique() > 1]


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and the two ends of its Student-t interval at :data:`CONFIDENCE` (NaN values dropped)."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if values.size == 1:
        return mean, mean, mean
    half = float(
        stats.t.ppf(0.5 + CONFIDENCE / 2, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size)
    )
    return mean, mean - half, mean + half


def group_summary(frame: pd.DataFrame, metric: Metric, by: Sequence[str]) -> pd.DataFrame:
    """Per group of ``by``: ``mean``, ``low``, ``high`` (95 % t-interval of the mean), ``runs`` and
    ``clipped`` (the low end was below 0 for a ``non_negative`` metric and is shown as 0), in the metric's
    shown unit. Groups keep the order of first appearance; ``by = []`` gives one group.

    Raises ConfigError if ``frame`` lacks the metric's column or a grouping column.
    """
    missing = [c for c in (metric.column, *by) if c not in frame.columns]
    if missing:
        raise ConfigError(f"the run table has no column {', '.join(repr(c) for c in missing)}")
    values = pd.to_numeric(frame[metric.column], errors="coerce").to_numpy(dtype=float) * metric.factor
    keys = frame[list(by)].astype(str) if by else pd.DataFrame(index=frame.index)
    rows: list[dict[str, object]] = []
    if by:
        groups = keys.groupby(list(by), sort=False).indices
        items = [(key if isinstance(key, tuple) else (key,), idx) for key, idx in groups.items()]
    else:
        items = [((), np.arange(len(frame)))]
    for key, index in items:
        mean, low, high = _interval(values[np.asarray(index)])
        clipped = metric.non_negative and low < 0.0
        row: dict[str, object] = dict(zip(by, key, strict=True))
        row.update(
            mean=mean,
            low=0.0 if clipped else low,
            high=high,
            runs=int(np.isfinite(values[np.asarray(index)]).sum()),
            clipped=clipped,
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=[*by, "mean", "low", "high", "runs", "clipped"])
