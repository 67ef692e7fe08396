"""What the planners that simulate ahead share (:mod:`~wattsched.mig.partition.lookahead`,
:mod:`~wattsched.mig.partition.rollout`): their defaults, the cost of a simulated window and the sampled days
whose arrivals join a plan.

Cost of a window: ``a·E_dyn + L / N`` — ``E_dyn`` energy above idle in joules, ``L`` lateness in minutes,
``N`` the expected jobs per day (the DQN reward's scalarisation), ``a`` ET's coefficient per joule (from pilot
runs). A plan never sees the day's real future arrivals: the sampled days are drawn from the workload spec
(the same profile and load the day's jobs come from) with the planner's seed.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np

from wattsched.units import SECONDS_PER_MINUTE
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job

__all__ = ["ET_COEFFICIENT", "JOBS_NORM", "WINDOW_S", "SampledDays", "window_cost"]

#: ET's ``a`` per joule, from pilot runs at P1's literal load.
ET_COEFFICIENT = 3.5e-8
#: Expected jobs per day at P1's literal load.
JOBS_NORM = 207.0
#: How far ahead sampled arrivals join a plan (s).
WINDOW_S = 1800.0


def window_cost(et_coefficient: float, jobs_norm: float, dynamic_j: float, lateness_s: float) -> float:
    """``a·E_dyn + L / N`` with ``L`` in minutes (see the module docstring)."""
    return et_coefficient * dynamic_j + lateness_s / SECONDS_PER_MINUTE / jobs_norm


@dataclass(frozen=True)
class SampledDays:
    """Days of jobs drawn from a workload spec, each sorted by arrival."""

    days: tuple[list[Job], ...] = ()
    arrival_s: tuple[list[float], ...] = ()

    @classmethod
    def draw(cls, workload: Any, seed: int | None, count: int, key: int) -> SampledDays:
        """``count`` days of ``workload`` (``None``: P1's Fig. 5 profile at multiplier 1), from the seed
        sequence ``(seed or 0, spawn_key=(key,))`` (each planner has its own ``key``)."""
        spec = workload or WorkloadSpec(profile="alibaba-day")
        root = np.random.SeedSequence(0 if seed is None else seed, spawn_key=(key,))
        days = tuple(generate_jobs(spec, child) for child in root.spawn(count))
        return cls(days, tuple([j.arrival_s for j in jobs] for jobs in days))

    def arrivals(self, now_s: float, window_s: float) -> list[list[Job]]:
        """Per day, its jobs arriving in ``(now_s, now_s + window_s]``; ``[[]]`` (one empty scenario) when no
        day was drawn."""
        out = []
        for jobs, times in zip(self.days, self.arrival_s, strict=True):
            start = bisect.bisect_right(times, now_s)
            stop = bisect.bisect_right(times, now_s + window_s)
            out.append(jobs[start:stop])
        return out or [[]]

    def __len__(self) -> int:
        return len(self.days)
