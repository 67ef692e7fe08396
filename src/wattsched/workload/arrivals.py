"""Job arrival processes: homogeneous Poisson and the hourly day profile of P1 Fig. 5.

Rates are in jobs per minute (P1's unit); times are seconds. Every function takes an explicit
``numpy.random.Generator`` and returns a sorted float64 array of arrival times in ``[0, horizon_s)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from wattsched.errors import ConfigError
from wattsched.registry import Registry
from wattsched.units import SECONDS_PER_HOUR, SECONDS_PER_MINUTE

__all__ = [
    "HOURS_PER_DAY",
    "MAX_ARRIVALS",
    "PROFILES",
    "ArrivalProfile",
    "poisson_arrivals",
    "profile_arrivals",
]

HOURS_PER_DAY = 24
#: Most arrivals one draw may expect (rate x horizon); beyond it a run would not fit in memory or time.
MAX_ARRIVALS = 10_000_000


@dataclass(frozen=True)
class ArrivalProfile:
    """A piecewise-constant arrival rate: ``rates_per_min[h]`` jobs/min during hour h of the day.

    Horizons longer than a day wrap around by hour of day.
    """

    name: str
    rates_per_min: tuple[float, ...]
    source: str = ""

    def __post_init__(self) -> None:
        rates = tuple(float(r) for r in self.rates_per_min)
        object.__setattr__(self, "rates_per_min", rates)
        if len(rates) != HOURS_PER_DAY:
            raise ConfigError(
                f"arrival profile '{self.name}': expected {HOURS_PER_DAY} hourly rates, got {len(rates)}"
            )
        if not all(math.isfinite(r) and r >= 0 for r in rates) or max(rates) <= 0:
            raise ConfigError(f"arrival profile '{self.name}': rates must be finite, >= 0 and not all 0")

    @property
    def max_rate_per_min(self) -> float:
        return max(self.rates_per_min)

    def rate_per_min_at(self, time_s: np.ndarray) -> np.ndarray:
        """The rate in force at each time (hour of day = floor(t / 3600) mod 24)."""
        hours = np.floor_divide(np.asarray(time_s, dtype=np.float64), SECONDS_PER_HOUR).astype(np.int64)
        return np.asarray(self.rates_per_min, dtype=np.float64)[hours % HOURS_PER_DAY]

    def expected_count(self, horizon_s: float, multiplier: float = 1.0) -> float:
        """Mean number of arrivals in ``[0, horizon_s)``: the integral of the rate."""
        full_hours, rest_s = divmod(horizon_s, SECONDS_PER_HOUR)
        rates = self.rates_per_min
        total_min = sum(rates[h % HOURS_PER_DAY] for h in range(int(full_hours))) * 60.0
        total_min += rates[int(full_hours) % HOURS_PER_DAY] * rest_s / SECONDS_PER_MINUTE
        return multiplier * total_min


#: Named arrival profiles; ``PROFILES.make("alibaba-day")``.
PROFILES: Registry[ArrivalProfile] = Registry("arrival profile")


@PROFILES.register("alibaba-day")
def alibaba_day() -> ArrivalProfile:
    """P1 Fig. 5: hourly rates read from the group's simulator, ≈ 207 jobs/day."""
    return ArrivalProfile(
        "alibaba-day",
        (
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
        ),
        source="P1 Fig. 5 via the 'interarrivals' table of the group's notebook",
    )


def _check_horizon(horizon_s: float) -> None:
    if not (math.isfinite(horizon_s) and horizon_s >= 0):
        raise ConfigError(f"horizon_s must be finite and >= 0, got {horizon_s!r}")


def poisson_arrivals(rate_per_min: float, horizon_s: float, rng: np.random.Generator) -> np.ndarray:
    """Homogeneous Poisson arrivals at ``rate_per_min`` over ``[0, horizon_s)``.

    Drawn as a Poisson count followed by sorted uniform times, which is exact and vectorised.
    """
    if not (math.isfinite(rate_per_min) and rate_per_min > 0):
        raise ConfigError(f"arrival rate must be finite and > 0 jobs/min, got {rate_per_min!r}")
    _check_horizon(horizon_s)
    expected = rate_per_min * horizon_s / SECONDS_PER_MINUTE
    if expected > MAX_ARRIVALS:
        raise ConfigError(
            f"{rate_per_min:g} jobs/min over {horizon_s:g} s expects {expected:.3g} arrivals; "
            f"at most {MAX_ARRIVALS:,} per workload (lower the rate or the hours)"
        )
    count = int(rng.poisson(expected))
    times = rng.random(count) * horizon_s
    times.sort()
    return times


def profile_arrivals(
    profile: ArrivalProfile, horizon_s: float, rng: np.random.Generator, multiplier: float = 1.0
) -> np.ndarray:
    """Non-homogeneous Poisson arrivals following ``profile`` (times ``multiplier``) by exact thinning.

    Candidates come from a homogeneous process at the envelope ``λ_max``; each is kept with probability
    ``λ(t) / λ_max`` (Lewis and Shedler). The multiplier scales envelope and rate alike, so it cancels in
    the acceptance ratio.
    """
    if not (math.isfinite(multiplier) and multiplier > 0):
        raise ConfigError(f"rate_multiplier must be finite and > 0, got {multiplier!r}")
    candidates = poisson_arrivals(profile.max_rate_per_min * multiplier, horizon_s, rng)
    accept = rng.random(candidates.size) * profile.max_rate_per_min < profile.rate_per_min_at(candidates)
    return candidates[accept]
