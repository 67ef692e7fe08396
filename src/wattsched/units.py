"""One unit system: seconds, joules, watts. Conversions happen only at the edges (reports, paper tables)."""

from __future__ import annotations

__all__ = [
    "JOULES_PER_KWH",
    "SECONDS_PER_HOUR",
    "SECONDS_PER_MINUTE",
    "joules_to_kwh",
    "minutes_to_seconds",
    "per_minute_to_per_second",
    "seconds_to_minutes",
]

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6


def minutes_to_seconds(minutes: float) -> float:
    return minutes * SECONDS_PER_MINUTE


def seconds_to_minutes(seconds: float) -> float:
    return seconds / SECONDS_PER_MINUTE


def per_minute_to_per_second(rate_per_min: float) -> float:
    return rate_per_min / SECONDS_PER_MINUTE


def joules_to_kwh(energy_j: float) -> float:
    return energy_j / JOULES_PER_KWH
