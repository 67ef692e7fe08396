"""Arrival processes: homogeneous Poisson and P1's Fig. 5 day profile by exact thinning (papers.md §A.3.1)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from wattsched.errors import ConfigError, UnknownNameError
from wattsched.workload.arrivals import PROFILES, ArrivalProfile, poisson_arrivals, profile_arrivals

DAY_S = 86_400.0
# papers.md §A.3.1, hours 0..23, jobs/min.
ALIBABA = (
    0.111,
    0.083,
    0.085,
    0.100,
    0.137,
    0.169,
    0.171,
    0.169,
    0.179,
    0.191,
    0.201,
    0.188,
    0.170,
    0.177,
    0.168,
    0.171,
    0.163,
    0.138,
    0.120,
    0.111,
    0.129,
    0.116,
    0.106,
    0.104,
)
# Hand sum: hours 0-11 give 1.784, hours 12-23 give 1.673, total 3.457 -> 60 * 3.457 = 207.42 jobs/day.
EXPECTED_PER_DAY = 207.42


def test_alibaba_profile_is_the_paper_table() -> None:
    profile = PROFILES.make("alibaba-day")
    assert profile.rates_per_min == ALIBABA
    assert profile.max_rate_per_min == 0.201
    assert profile.expected_count(DAY_S) == pytest.approx(EXPECTED_PER_DAY)
    assert "alibaba-day" in PROFILES.available()


def test_expected_count_partial_hours_and_wrap() -> None:
    profile = PROFILES.make("alibaba-day")
    # 1.5 h: 60 * 0.111 + 30 * 0.083 = 6.66 + 2.49
    assert profile.expected_count(5400.0) == pytest.approx(9.15)
    assert profile.expected_count(2 * DAY_S, multiplier=3.0) == pytest.approx(6 * EXPECTED_PER_DAY)


def test_rate_wraps_by_hour_of_day() -> None:
    profile = PROFILES.make("alibaba-day")
    times = np.array([0.0, 3599.999, 3600.0, 10 * 3600 + 5, 25 * 3600 + 1, 47 * 3600 + 10])
    assert profile.rate_per_min_at(times).tolist() == [0.111, 0.111, 0.083, 0.201, 0.083, 0.104]


def test_unknown_profile_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError, match="alibaba-day"):
        PROFILES.make("weekend")


def test_daily_count_mean_and_variance_match_the_profile() -> None:
    profile = PROFILES.make("alibaba-day")
    counts = np.array([profile_arrivals(profile, DAY_S, np.random.default_rng(s)).size for s in range(400)])
    # Poisson(207.42): standard error of the mean over 400 days = sqrt(207.42/400) = 0.72; allow 4 of them.
    assert abs(counts.mean() - EXPECTED_PER_DAY) < 4 * 0.72
    # Variance of a Poisson count equals its mean; the sample variance over 400 draws is within ~±15 %.
    assert 0.8 * EXPECTED_PER_DAY < counts.var(ddof=1) < 1.2 * EXPECTED_PER_DAY


def test_thinning_follows_the_hourly_rates() -> None:
    profile = PROFILES.make("alibaba-day")
    days = 150
    rng = np.random.default_rng(12345)
    times = profile_arrivals(profile, days * DAY_S, rng)
    hours = (times // 3600).astype(int) % 24
    observed = np.bincount(hours, minlength=24)
    expected = days * 60.0 * np.asarray(ALIBABA)
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    # 23 degrees of freedom: reject only a clearly wrong shape (p < 1e-4, critical value ≈ 56).
    assert stats.chi2.sf(chi2, df=23) > 1e-4
    # The 5:00-17:00 share is 2.117 / 3.457 = 0.612 of the day.
    assert np.mean((hours >= 5) & (hours < 17)) == pytest.approx(2.117 / 3.457, abs=0.01)


def test_zero_rate_hours_get_no_arrivals() -> None:
    rates = [0.0] * 24
    rates[2] = 1.0
    profile = ArrivalProfile("spike", tuple(rates))
    times = profile_arrivals(profile, 2 * DAY_S, np.random.default_rng(3))
    # 60 jobs/hour in hour 2 of each of two days.
    assert 60 < times.size < 180
    assert np.all(((times >= 7200) & (times < 10800)) | ((times >= DAY_S + 7200) & (times < DAY_S + 10800)))
    assert np.any(times >= DAY_S)  # the second day wraps to the same profile


def test_arrivals_are_sorted_inside_the_window() -> None:
    profile = PROFILES.make("alibaba-day")
    for times in (
        profile_arrivals(profile, 5000.0, np.random.default_rng(1), multiplier=20.0),
        poisson_arrivals(2.0, 5000.0, np.random.default_rng(1)),
    ):
        assert times.dtype == np.float64
        assert times.size > 0
        assert np.all(np.diff(times) >= 0)
        assert times[0] >= 0 and times[-1] < 5000.0


def test_rate_multiplier_scales_the_count() -> None:
    profile = PROFILES.make("alibaba-day")
    rngs = [np.random.default_rng(s) for s in range(40)]
    counts = [profile_arrivals(profile, DAY_S, rng, multiplier=5.0).size for rng in rngs]
    # mean 5 * 207.42 = 1037.1; standard error sqrt(1037.1/40) = 5.1
    assert abs(np.mean(counts) - 5 * EXPECTED_PER_DAY) < 4 * 5.1


def test_homogeneous_poisson_count_and_gaps() -> None:
    times = poisson_arrivals(0.5, 200 * DAY_S, np.random.default_rng(8))
    # 0.5/min for 200 days: 144,000 expected, standard deviation 379.
    assert abs(times.size - 144_000) < 4 * 379
    gaps = np.diff(times)
    assert gaps.mean() == pytest.approx(120.0, rel=0.01)  # mean gap 60 / 0.5 s
    assert gaps.std() == pytest.approx(120.0, rel=0.02)  # exponential: std = mean


def test_empty_horizon_and_determinism() -> None:
    assert poisson_arrivals(1.0, 0.0, np.random.default_rng(0)).size == 0
    a = poisson_arrivals(1.0, 3600.0, np.random.default_rng(5))
    b = poisson_arrivals(1.0, 3600.0, np.random.default_rng(5))
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    "call",
    [
        lambda rng: poisson_arrivals(0.0, 10.0, rng),
        lambda rng: poisson_arrivals(float("nan"), 10.0, rng),
        lambda rng: poisson_arrivals(1.0, -1.0, rng),
        lambda rng: poisson_arrivals(1.0, float("inf"), rng),
        lambda rng: profile_arrivals(PROFILES.make("alibaba-day"), 10.0, rng, multiplier=0.0),
        lambda rng: ArrivalProfile("short", (1.0,) * 23),
        lambda rng: ArrivalProfile("negative", (-1.0,) + (1.0,) * 23),
        lambda rng: ArrivalProfile("zero", (0.0,) * 24),
    ],
)
def test_bad_arrival_parameters_raise_config_error(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError):
        call(np.random.default_rng(0))
