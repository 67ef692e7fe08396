"""Shared machinery of the laxity policies (LLF, LALF): critical-laxity events and re-evaluation."""

from __future__ import annotations

import math
from collections.abc import Sequence

from wattsched.mig.policies.base import reevaluate_all
from wattsched.mig.view import Assignment, SchedulerView

__all__ = ["LaxityPolicy"]

_KEY_DECIMALS = 6
_FAST_ROUND_LIMIT = 2.0**40


def _round_micro(x: float) -> float:
    """``round(x, 6)`` bit for bit, about twice as fast (keys are computed at every scheduling point).

    ``round`` yields the double nearest to ``k / 10**6`` where ``k`` is ``x·10**6`` rounded half-even. For
    ``|x·10**6| < 2**40`` the float product is within ``2**-13`` of the exact one, so when its fractional part
    is not within 0.001 of one half, ``floor``/``floor + 1`` is that ``k``; ``k`` is exact as a float and
    IEEE division by the exact ``1e6`` rounds to the nearest double, as ``round``'s string round trip does.
    Near-ties, huge values, NaN and zero (whose sign ``round`` keeps) take ``round`` itself."""
    y = x * 1e6
    if -_FAST_ROUND_LIMIT < y < _FAST_ROUND_LIMIT:
        k = math.floor(y)
        part = y - k
        if part < 0.499:
            if k:
                return k / 1e6
        elif part > 0.501:
            k += 1
            if k:
                return k / 1e6
    return round(x, _KEY_DECIMALS)


class LaxityPolicy:
    """Least laxity first with critical-laxity events (docs/concepts/mig-model.md).

    Laxity of job ``j`` at time ``t``: ``d_j - t - fraction_j * ref_j`` where ``ref_j`` is the job's duration
    on a reference slice of the configuration (subclasses: fastest slice, or mean over slices). Ranking by
    ``d_j - fraction_j * ref_j`` is the same as ranking by laxity. A waiting job's key is constant, so its
    critical-laxity event can be scheduled analytically at ``key - critical_laxity_s``.
    """

    name = "laxity"

    def __init__(self, critical_laxity_s: float = 60.0, max_critical_events: int = 3) -> None:
        self.critical_laxity_s: float | None = float(critical_laxity_s)
        self.max_critical_events = int(max_critical_events)

    def reference_duration_s(self, view: SchedulerView, durations: Sequence[float]) -> float:
        raise NotImplementedError

    def on_configuration(self, view: SchedulerView) -> Sequence[float] | None:
        """Every job's reference duration in the new configuration: a pure function of its durations and the
        configuration, and the bulk of a key's cost if recomputed at every scheduling point."""
        reference = self.reference_duration_s
        return [reference(view, durations) for durations in view.durations_s]

    def rank(self, view: SchedulerView, job: int) -> float:
        # Rounded to the microsecond so that laxities equal up to float noise tie exactly and fall to the
        # priority tie-break (earlier arrival, then row). This matters: a job preempted by a critical-laxity
        # event reaches the threshold exactly when its preemptor, running on its reference slice, sits there.
        return _round_micro(view.deadline_s[job] - view.remaining[job] * view.job_reference_s[job])

    def critical_time_s(self, view: SchedulerView, job: int, key: float) -> float:
        threshold = self.critical_laxity_s if self.critical_laxity_s is not None else 0.0
        return key - threshold

    def assign(self, view: SchedulerView) -> Assignment | None:
        # rank(), inlined for the running jobs (at most one per slice, at every scheduling point).
        references = view.job_reference_s
        deadline = view.deadline_s
        fraction = view.remaining
        running = [
            (_round_micro(deadline[j] - fraction[j] * references[j]), j) for j in view.running if j >= 0
        ]
        return reevaluate_all(view, running, slowest_feasible=False)
