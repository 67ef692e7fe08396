"""EDF-SS: earliest deadline first, slowest slice that meets the deadline, full re-evaluation (§A.5.3)."""

from __future__ import annotations

import math

from wattsched.mig.policies.base import POLICIES, reevaluate_all
from wattsched.mig.state import MigState

__all__ = ["EdfSlowestSlice"]


class EdfSlowestSlice:
    """Unrestricted EDF-SS: every arrival and completion re-ranks all unfinished jobs by deadline.

    Each job, in deadline order, takes the slowest free slice on which it still meets its deadline, or the
    fastest free slice when none does.
    """

    name = "edf-ss"
    critical_laxity_s: float | None = None
    max_critical_events = 0

    def waiting_key(self, state: MigState, job: int) -> float:
        return state.deadline_s[job]

    def critical_time_s(self, state: MigState, job: int) -> float:
        return math.inf

    def assign(self, state: MigState) -> list[int] | None:
        deadline = state.deadline_s
        running = [(deadline[j], j) for j in state.job_on if j >= 0]
        return reevaluate_all(state, running, slowest_feasible=True)


POLICIES.register("edf-ss")(EdfSlowestSlice)
