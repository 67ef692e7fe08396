"""LLF: least laxity first against the fastest slice of the configuration (docs/concepts/mig-model.md)."""

from __future__ import annotations

from collections.abc import Sequence

from wattsched.mig.policies._laxity import LaxityPolicy
from wattsched.mig.policies.base import POLICIES
from wattsched.mig.view import SchedulerView

__all__ = ["LeastLaxityFirst"]


class LeastLaxityFirst(LaxityPolicy):
    """Laxity uses the job's remaining time on the fastest slice of the configuration (occupied or not).

    Jobs take the fastest free slice. With the configuration fixed, a job's laxity never rises (it falls at
    rate 1 while waiting and at rate ``1 - dur_fast/dur_s`` while running), so each job has at most one
    critical-laxity event per configuration; the cap of 3 binds only after repartitions raise laxity.
    """

    name = "llf"

    def reference_duration_s(self, view: SchedulerView, durations: Sequence[float]) -> float:
        return min([durations[x] for x in view.duration_indices])


POLICIES.register("llf")(LeastLaxityFirst)
