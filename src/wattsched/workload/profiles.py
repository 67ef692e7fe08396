"""Hourly arrival profiles derived from a trace's arrival times (what P1 did with Alibaba's trace).

``rates_per_min[h]`` = (arrivals whose hour of day is h) / (minutes of the observation window that fall in
hour h of the day). Counting the observed minutes per hour makes partial days exact: a window of 1.5 days
observes hours 0-11 twice and hours 12-23 once. Hour of day is ``floor((t + clock_offset_s) / 3600) mod 24``:
adapters put midnight at t = 0 for Philly (its clock starts at midnight of day 0); Alibaba's trace publishes
no time of day, so its "hours" are hours since the trace start modulo 24.

``target_mean_rate_per_min`` rescales the 24 rates so that their mean is that value (the shape is kept; the
mean rate of a day). :func:`register_profile` adds a profile to ``arrivals.PROFILES`` at run time so that
generators (``WorkloadSpec(profile=name)``) and ``wattsched mig generate --profile`` can use it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from wattsched.errors import ConfigError, InputError
from wattsched.units import SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from wattsched.workload.arrivals import HOURS_PER_DAY, PROFILES, ArrivalProfile
from wattsched.workload.job import Job

__all__ = ["derive_profile", "hourly_observed_minutes", "profile_from_jobs", "register_profile"]

_SECONDS_PER_DAY = HOURS_PER_DAY * SECONDS_PER_HOUR


def hourly_observed_minutes(start_s: float, end_s: float, clock_offset_s: float = 0.0) -> np.ndarray:
    """Minutes of ``[start_s, end_s)`` falling in each hour of the day (24 values)."""
    if not end_s > start_s:
        raise ConfigError(f"observation window must have end > start, got [{start_s}, {end_s})")
    lo, hi = start_s + clock_offset_s, end_s + clock_offset_s
    first, last = math.floor(lo / SECONDS_PER_HOUR), math.ceil(hi / SECONDS_PER_HOUR)
    hour_starts = np.arange(first, last, dtype=np.float64) * SECONDS_PER_HOUR
    overlap = np.minimum(hour_starts + SECONDS_PER_HOUR, hi) - np.maximum(hour_starts, lo)
    minutes = np.zeros(HOURS_PER_DAY)
    np.add.at(
        minutes, np.arange(first, last) % HOURS_PER_DAY, np.clip(overlap, 0.0, None) / SECONDS_PER_MINUTE
    )
    return minutes


def derive_profile(
    arrivals_s: Iterable[float],
    name: str,
    *,
    start_s: float | None = None,
    end_s: float | None = None,
    clock_offset_s: float = 0.0,
    target_mean_rate_per_min: float | None = None,
    source: str = "",
) -> ArrivalProfile:
    """A 24-hour profile of jobs/min from arrival times in seconds.

    The window defaults to the whole days around the arrivals:
    ``[floor(min/day)·day, (floor(max/day)+1)·day)``.
    Arrivals outside the window are ignored. Every hour of the day must be observed at least once.
    """
    times = np.asarray(list(arrivals_s), dtype=np.float64)
    if times.size == 0:
        raise InputError("cannot derive an arrival profile from no arrivals")
    if not np.isfinite(times).all():
        raise InputError("arrival times must be finite")
    if start_s is None:
        start_s = math.floor(float(times.min()) / _SECONDS_PER_DAY) * _SECONDS_PER_DAY
    if end_s is None:
        end_s = (math.floor(float(times.max()) / _SECONDS_PER_DAY) + 1) * _SECONDS_PER_DAY
    minutes = hourly_observed_minutes(start_s, end_s, clock_offset_s)
    if (minutes <= 0).any():
        missing = [h for h in range(HOURS_PER_DAY) if minutes[h] <= 0]
        raise ConfigError(
            f"the window [{start_s}, {end_s}) s does not cover hours {missing} of the day; "
            "a profile needs every hour observed"
        )
    inside = times[(times >= start_s) & (times < end_s)]
    hours = np.floor_divide(inside + clock_offset_s, SECONDS_PER_HOUR).astype(np.int64) % HOURS_PER_DAY
    counts = np.bincount(hours, minlength=HOURS_PER_DAY).astype(np.float64)
    rates = counts / minutes
    if target_mean_rate_per_min is not None:
        if not (math.isfinite(target_mean_rate_per_min) and target_mean_rate_per_min > 0):
            raise ConfigError(f"target mean rate must be > 0 jobs/min, got {target_mean_rate_per_min!r}")
        if rates.sum() <= 0:
            raise InputError("no arrival falls in the window; nothing to normalise")
        rates = rates * (target_mean_rate_per_min / rates.mean())
    return ArrivalProfile(name, tuple(float(r) for r in rates), source=source)


def profile_from_jobs(jobs: Iterable[Job], name: str, **kwargs: object) -> ArrivalProfile:
    """:func:`derive_profile` over the jobs' arrival times (keyword options as there)."""
    return derive_profile((j.arrival_s for j in jobs), name, **kwargs)  # type: ignore[arg-type]


def register_profile(profile: ArrivalProfile) -> None:
    """Make ``PROFILES.make(profile.name)`` return ``profile``.

    Registering the same profile twice is a no-op; a different profile under a taken name is an error.
    """
    if profile.name in PROFILES:
        if PROFILES.make(profile.name) == profile:
            return
        raise ConfigError(
            f"arrival profile '{profile.name}' is already registered with other rates; pick another name"
        )
    PROFILES.register(profile.name)(lambda: profile)
