"""Interactive views of ``reproduce``'s raw rows (``raw/<study>.parquet``), one factory per study, registered
in :data:`wattsched.experiments.study.STUDY_VIEWS` for the page of :mod:`wattsched.viz.html`.

Each view redraws a study's results from its stored rows with intervals and hover values; the study's
own figures (``figures/*.png``) and tables stay in the page beside them. ET here is pooled over the rows a
study pools it (the pool of one comparison): per condition over P1's four policies for Table II,
over the paper's four methods for Table III (per load condition for its sensitivity part), per workload for
the real workloads. Views read rows; none runs a simulation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from wattsched.experiments.presets import DEFAULT_PRESET
from wattsched.experiments.study import STUDY_VIEWS, View
from wattsched.metrics import et_coefficient, et_values
from wattsched.studies.dvfs import dvfs_savings
from wattsched.studies.table2_analysis import PAPER_POLICIES
from wattsched.studies.table3_analysis import ET_POOL
from wattsched.viz.interactive import bar_chart, line_chart
from wattsched.viz.stats import METRICS, Metric

__all__ = ["with_et"]


def with_et(
    rows: pd.DataFrame, pool_by: Sequence[str] = (), *, column: str | None = None, pool: Sequence[str] = ()
) -> pd.DataFrame:
    """``rows`` plus an ``et`` column. Within each group of ``pool_by`` (default: all rows) the coefficient
    ``a`` is pooled over the rows whose ``column`` is in ``pool`` (the comparison's reference methods, as
    the study pools them), or over every row of the group if none is given or none matches."""
    out = rows.reset_index(drop=True).copy()
    et = np.full(len(out), np.nan)
    groups = out.groupby(list(pool_by), sort=False).indices.values() if pool_by else [np.arange(len(out))]
    for index in groups:
        part = out.iloc[index]
        reference = part[part[column].isin(list(pool))] if column is not None else part
        reference = reference if len(reference) else part
        a = et_coefficient(reference["energy_j"], reference["avg_tardiness_s"])
        et[index] = et_values(part["energy_j"], part["avg_tardiness_s"], a)
    out["et"] = et
    return out


def _metrics(*names: str) -> list[Metric]:
    return [METRICS[name] for name in names]


def _main_variant(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the default preset's variant (Table II and III run one table per preset, deadline rule and
    GPU; ``summary.json``'s top-level keys are the default preset's)."""
    if "variant" not in rows or not rows["variant"].notna().any():
        return rows
    names = list(dict.fromkeys(rows["variant"].dropna()))
    return rows[rows["variant"] == (DEFAULT_PRESET if DEFAULT_PRESET in names else names[0])]


@STUDY_VIEWS.register("table2")
def _table2(rows: pd.DataFrame) -> list[View]:
    frame = with_et(_main_variant(rows), ["condition"], column="policy", pool=PAPER_POLICIES)
    metrics = _metrics("et", "energy", "tardiness", "preemptions", "late-jobs")
    # ET is pooled per condition, so its scale differs between conditions: one figure per condition.
    default = frame[frame["condition"] == "default"] if (frame["condition"] == "default").any() else frame
    views: list[View] = [
        (
            f"Table II: policies, condition {default['condition'].iloc[0]} (mean of configurations, queues)",
            bar_chart(default, metrics, "policy"),
        )
    ]
    for condition, part in frame.groupby("condition", sort=False):
        views.append(
            (
                f"Figs. 7–10: configuration × policy, condition {condition}",
                bar_chart(part, metrics, "config", ["policy"]),
            )
        )
    return views


@STUDY_VIEWS.register("table3")
def _table3(rows: pd.DataFrame) -> list[View]:
    views: list[View] = []
    days = _main_variant(rows[rows["kind"] == "day"])
    if len(days):
        frame = with_et(days, column="method", pool=ET_POOL)
        views.append(
            (
                "Table III: repartitioning methods over held-out days",
                bar_chart(
                    frame, _metrics("et", "energy", "tardiness", "repartitions", "late-jobs"), "method"
                ),
            )
        )
        per_hour = _per_hour(frame)
        if per_hour is not None:
            views.append(
                (
                    "Repartitions per hour of the day (mean over days)",
                    line_chart(
                        per_hour,
                        "hour",
                        "repartitions",
                        "method",
                        xlabel="hour of the day (h)",
                        ylabel="repartitions started (count per hour)",
                    ),
                )
            )
    sensitivity = rows[rows["kind"] == "sens-day"]
    if len(sensitivity):
        frame = with_et(sensitivity, ["condition"], column="method", pool=ET_POOL)
        views.append(
            (
                "Load sensitivity (not in P1): methods per load condition",
                bar_chart(frame, _metrics("et", "energy", "tardiness"), "condition", ["method"]),
            )
        )
    return views


def _per_hour(frame: pd.DataFrame) -> pd.DataFrame | None:
    """Long table (method, hour, repartitions) from the ``repartitions_per_hour`` array column."""
    if "repartitions_per_hour" not in frame:
        return None
    parts = []
    for method, group in frame.groupby("method", sort=False):
        mean = np.stack([np.asarray(v, dtype=float) for v in group["repartitions_per_hour"]]).mean(axis=0)
        parts.append(pd.DataFrame({"method": method, "hour": np.arange(mean.size), "repartitions": mean}))
    return pd.concat(parts, ignore_index=True) if parts else None


@STUDY_VIEWS.register("real-workloads")
def _real_workloads(rows: pd.DataFrame) -> list[View]:
    views: list[View] = []
    in_config = rows[rows["part"] == "in-config"]
    if len(in_config):
        frame = with_et(in_config, ["workload"])
        views.append(
            (
                "Policies on replayed and synthetic workloads",
                bar_chart(
                    frame, _metrics("et", "energy", "tardiness", "preemptions"), "workload", ["policy"]
                ),
            )
        )
    repartition = rows[rows["part"] == "repartition"]
    if len(repartition):
        frame = with_et(repartition, ["workload"])
        views.append(
            (
                "Repartitioning methods per workload",
                bar_chart(frame, _metrics("et", "energy", "tardiness"), "workload", ["method"]),
            )
        )
    profiles = rows[rows["part"] == "profile"]
    if len(profiles):
        table = (
            profiles.groupby(["workload", "hour"], sort=False)["rate_profile_per_min"].mean().reset_index()
        )
        views.append(
            (
                "Hourly arrival profiles",
                line_chart(
                    table,
                    "hour",
                    "rate_profile_per_min",
                    "workload",
                    xlabel="hour of the day (h)",
                    ylabel="arrival rate (jobs/min)",
                ),
            )
        )
    return views


@STUDY_VIEWS.register("dvfs")
def _dvfs(rows: pd.DataFrame) -> list[View]:
    views: list[View] = []
    runs = rows[rows["mode"].isin(["offline", "online"])].copy()
    for column in ("rules", "constants", "idle_accounting"):  # rows written before the like-for-like rules
        if column not in runs.columns:
            runs[column] = {"rules": "p2", "constants": "paper", "idle_accounting": "continuous"}[column]
    if len(runs):
        every = dvfs_savings(runs)
        # P2's rules at the paper's constants (the like-for-like variants are in the report's tables).
        savings = every[(every["rules"] == "p2") & (every["constants"] == "paper")].copy()
        savings["saving_pct"] = 100.0 * savings["saving"]
        saving = [Metric("saving", "saving_pct", "DVFS energy saving (%)", 1.0, 1)]
        edl = savings[(savings["algo"] == "edl") & np.isclose(savings["theta"].astype(float), 1.0)]
        for mode in ("offline", "online"):
            part = edl[edl["mode"] == mode].copy()
            if len(part):
                part["l"] = part["l"].astype(int).astype(str)
                part["util"] = part["util"].map(lambda u: f"{float(u):g}")
                views.append(
                    (
                        f"{mode.capitalize()} EDL, θ = 1: saving per utilisation U and pairs per server l",
                        bar_chart(part, saving, "util", ["l", "grouping"]),
                    )
                )
        by_algo = savings.copy()
        by_algo["theta"] = by_algo["theta"].map(lambda t: f"{float(t):g}")
        views.append(
            ("Saving per algorithm and θ (all U, l)", bar_chart(by_algo, saving, "algo", ["mode", "theta"]))
        )
    fits = rows[rows["mode"] == "fit"]
    if len(fits):
        table = fits.melt(
            id_vars=["gpu", "app"],
            value_vars=["saving_wide", "saving_narrow"],
            var_name="interval",
            value_name="saving",
        )
        table["saving_pct"] = 100.0 * table["saving"]
        views.append(
            (
                "Optimal single-task saving of the fitted applications",
                bar_chart(
                    table,
                    [Metric("saving", "saving_pct", "optimal single-task saving (%)", 1.0, 1)],
                    "app",
                    ["gpu", "interval"],
                ),
            )
        )
    return views
