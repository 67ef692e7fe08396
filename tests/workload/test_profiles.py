"""Hourly arrival profiles derived from arrival times (hand-computed rates) and their registration."""

from __future__ import annotations

import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.workload.arrivals import PROFILES, ArrivalProfile
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.profiles import derive_profile, hourly_observed_minutes, register_profile

H = 3600.0


def test_observed_minutes_of_a_day_and_a_half() -> None:
    minutes = hourly_observed_minutes(0.0, 1.5 * 24 * H)
    # Hours 0–11 are seen twice (120 min), hours 12–23 once (60 min).
    assert list(minutes) == [120.0] * 12 + [60.0] * 12
    # [0:30, 2:15): 30 min of hour 0, 60 of hour 1, 15 of hour 2.
    part = hourly_observed_minutes(0.5 * H, 2.25 * H)
    assert list(part[:3]) == [30.0, 60.0, 15.0] and part[3:].sum() == 0


def test_rates_by_hand() -> None:
    arrivals = [10.0, 100.0, 24 * H + 5.0, 13.5 * H, 11.9 * H]
    profile = derive_profile(arrivals, "hand", start_s=0.0, end_s=1.5 * 24 * H)
    rates = profile.rates_per_min
    assert rates[0] == pytest.approx(3 / 120)  # 3 arrivals in hour 0, seen 120 minutes
    assert rates[11] == pytest.approx(1 / 120)
    assert rates[13] == pytest.approx(1 / 60)  # seen once (60 minutes)
    assert sum(r > 0 for r in rates) == 3


def test_default_window_and_normalisation() -> None:
    # Default window: whole days around the data → one day; 6 arrivals in hour 5 → 0.1 jobs/min there.
    profile = derive_profile([5 * H + i for i in range(6)], "norm", target_mean_rate_per_min=0.2)
    # Before normalising: rate 0.1 at hour 5 and 0 elsewhere, mean 0.1/24; scaled so that the mean is 0.2.
    assert profile.rates_per_min[5] == pytest.approx(0.2 * 24)
    assert sum(profile.rates_per_min) / 24 == pytest.approx(0.2)


def test_clock_offset_shifts_hours() -> None:
    # With the trace clock starting at 22:00, an arrival at t = 0 falls in hour 22.
    profile = derive_profile([0.0], "offset", start_s=0.0, end_s=24 * H, clock_offset_s=22 * H)
    assert profile.rates_per_min[22] == pytest.approx(1 / 60)


def test_errors() -> None:
    with pytest.raises(InputError):
        derive_profile([], "none")
    with pytest.raises(ConfigError, match="does not cover"):
        derive_profile([10.0], "short", start_s=0.0, end_s=H)
    with pytest.raises(ConfigError):
        derive_profile([10.0], "x", target_mean_rate_per_min=-1.0)


def test_register_and_generate() -> None:
    profile = derive_profile([h * H + 1 for h in range(24)], "test-derived-flat")
    assert profile.rates_per_min == pytest.approx((1 / 60,) * 24)
    register_profile(profile)
    register_profile(profile)  # the same profile again: no-op
    assert PROFILES.make("test-derived-flat") == profile
    jobs = generate_jobs(WorkloadSpec(profile="test-derived-flat", hours=24.0), seed=0)
    assert 0 < len(jobs) < 3 * 24  # ≈ 24 expected
    with pytest.raises(ConfigError, match="already registered"):
        register_profile(ArrivalProfile("test-derived-flat", (0.5,) * 24))
