"""EDF-FS: earliest deadline first, fastest free slice, full re-evaluation (docs/concepts/mig-model.md)."""

from __future__ import annotations

from wattsched.mig.policies.base import POLICIES, FullReevaluationEdf

__all__ = ["EdfFastestSlice"]


class EdfFastestSlice(FullReevaluationEdf):
    """Every arrival and completion re-ranks all unfinished jobs by deadline; each takes the fastest slice."""

    name = "edf-fs"
    slowest_feasible = False


POLICIES.register("edf-fs")(EdfFastestSlice)
