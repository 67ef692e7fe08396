"""EDF-SS: earliest deadline first, slowest slice that meets the deadline, full re-evaluation
(docs/concepts/mig-model.md)."""

from __future__ import annotations

from wattsched.mig.policies.base import POLICIES, FullReevaluationEdf

__all__ = ["EdfSlowestSlice"]


class EdfSlowestSlice(FullReevaluationEdf):
    """Unrestricted EDF-SS: every arrival and completion re-ranks all unfinished jobs by deadline.

    Each job, in deadline order, takes the slowest free slice on which it still meets its deadline, or the
    fastest free slice when none does.
    """

    name = "edf-ss"
    slowest_feasible = True


POLICIES.register("edf-ss")(EdfSlowestSlice)
