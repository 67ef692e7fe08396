"""EDF-FS: earliest deadline first, fastest free slice, full re-evaluation (papers.md §A.5.2)."""

from __future__ import annotations

import math

from wattsched.mig.policies.base import POLICIES, reevaluate_all
from wattsched.mig.state import MigState

__all__ = ["EdfFastestSlice"]


class EdfFastestSlice:
    """Every arrival and completion re-ranks all unfinished jobs by deadline; each takes the fastest slice."""

    name = "edf-fs"
    critical_laxity_s: float | None = None
    max_critical_events = 0

    def waiting_key(self, state: MigState, job: int) -> float:
        return state.deadline_s[job]

    def critical_time_s(self, state: MigState, job: int) -> float:
        return math.inf

    def assign(self, state: MigState) -> list[int] | None:
        deadline = state.deadline_s
        running = [(deadline[j], j) for j in state.job_on if j >= 0]
        return reevaluate_all(state, running, slowest_feasible=False)


POLICIES.register("edf-fs")(EdfFastestSlice)
