"""Group means and 95 % t-intervals (wattsched.viz.stats), checked against hand-computed values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from wattsched.errors import ConfigError
from wattsched.viz.stats import METRICS, Metric, group_summary, varying_columns

T_975_DF2 = 4.302652729911275  # Student t, 97.5 % quantile, 2 degrees of freedom (tables)


def test_interval_of_three_runs_is_the_t_interval() -> None:
    frame = pd.DataFrame({"policy": ["a", "a", "a"], "x": [1.0, 2.0, 3.0]})
    summary = group_summary(frame, Metric("x", "x", "x (unit)"), ["policy"])
    half = T_975_DF2 * 1.0 / math.sqrt(3)  # sd of 1, 2, 3 is 1
    row = summary.iloc[0]
    assert (row["policy"], row["runs"]) == ("a", 3)
    assert row["mean"] == pytest.approx(2.0)
    assert (row["low"], row["high"]) == pytest.approx((2.0 - half, 2.0 + half))


def test_energy_is_shown_in_kwh_and_tardiness_in_minutes() -> None:
    frame = pd.DataFrame({"energy_j": [3.6e6, 7.2e6], "avg_tardiness_s": [60.0, 180.0]})
    assert group_summary(frame, METRICS["energy"], [])["mean"].iloc[0] == pytest.approx(1.5)
    assert group_summary(frame, METRICS["tardiness"], [])["mean"].iloc[0] == pytest.approx(2.0)
    assert "kWh" in METRICS["energy"].label and "min" in METRICS["tardiness"].label


def test_one_run_has_no_interval_and_groups_keep_their_order() -> None:
    frame = pd.DataFrame({"g": ["b", "a", "b"], "x": [5.0, 7.0, 5.0]})
    summary = group_summary(frame, Metric("x", "x", "x"), ["g"])
    assert summary["g"].tolist() == ["b", "a"]
    single = summary.iloc[1]
    assert single["mean"] == single["low"] == single["high"] == 7.0
    zero_spread = summary.iloc[0]
    assert zero_spread["low"] == zero_spread["high"] == 5.0


def test_nan_values_are_left_out_of_the_count() -> None:
    frame = pd.DataFrame({"x": [1.0, float("nan"), 3.0]})
    summary = group_summary(frame, Metric("x", "x", "x"), [])
    assert summary["runs"].iloc[0] == 2 and summary["mean"].iloc[0] == pytest.approx(2.0)


def test_missing_columns_are_named() -> None:
    with pytest.raises(ConfigError, match="'energy_j'"):
        group_summary(pd.DataFrame({"x": [1.0]}), METRICS["energy"], [])
    with pytest.raises(ConfigError, match="'policy'"):
        group_summary(pd.DataFrame({"energy_j": [1.0]}), METRICS["energy"], ["policy"])


def test_varying_columns_keeps_candidate_order_and_drops_constants() -> None:
    frame = pd.DataFrame({"gpu": ["x", "x"], "policy": ["a", "b"], "configuration": [3, "no-mig"]})
    assert varying_columns(frame, ["configuration", "gpu", "policy", "absent"]) == ["configuration", "policy"]


def test_intervals_of_non_negative_metrics_are_clipped_at_zero_and_say_so() -> None:
    # Tardiness 0, 0, 0.6 min (0, 0, 36 s): mean 0.2, sd 0.3464, t-interval 0.2 ± 4.3027 * 0.3464 / sqrt(3)
    # = 0.2 ± 0.8606 -> [-0.6606, 1.0606]; tardiness cannot be negative, so the low end is 0.
    frame = pd.DataFrame({"g": ["a"] * 3 + ["b"] * 3, "avg_tardiness_s": [0.0, 0.0, 36.0, 60, 66, 72]})
    summary = group_summary(frame, METRICS["tardiness"], ["g"]).set_index("g")
    half = T_975_DF2 * math.sqrt(0.12) / math.sqrt(3)  # variance of 0, 0, 0.6 is 0.12
    assert summary.loc["a", "mean"] == pytest.approx(0.2)
    assert summary.loc["a", "low"] == 0.0 and summary.loc["a", "high"] == pytest.approx(0.2 + half)
    assert bool(summary.loc["a", "clipped"]) is True
    # 1, 1.1, 1.2 min: 1.1 ± 0.2484, above 0, untouched.
    assert summary.loc["b", "low"] == pytest.approx(1.1 - T_975_DF2 * 0.1 / math.sqrt(3))
    assert bool(summary.loc["b", "clipped"]) is False
    # Every shipped metric is a count, energy, time or ET: none can be negative, every one is clipped.
    assert all(metric.non_negative for metric in METRICS.values())
    assert not Metric("x", "x", "x").non_negative  # a quantity that may be negative keeps its interval
