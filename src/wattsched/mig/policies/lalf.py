"""LALF: least *average* laxity first — laxity against the mean over the configuration's slices
(docs/concepts/mig-model.md)."""

from __future__ import annotations

from collections.abc import Sequence

from wattsched.mig.policies._laxity import LaxityPolicy
from wattsched.mig.policies.base import POLICIES
from wattsched.mig.view import SchedulerView

__all__ = ["LeastAverageLaxityFirst"]


class LeastAverageLaxityFirst(LaxityPolicy):
    """Laxity uses the mean remaining time over all slices of the configuration (with multiplicity).

    Jobs take the fastest free slice. A job running on a slice faster than the mean *gains* laxity, so after a
    preemption its laxity can cross the critical threshold again: here the per-job cap matters.
    """

    name = "lalf"

    def reference_duration_s(self, view: SchedulerView, durations: Sequence[float]) -> float:
        dix = view.slice_duration_index
        return sum([durations[x] for x in dix]) / len(dix)


POLICIES.register("lalf")(LeastAverageLaxityFirst)
