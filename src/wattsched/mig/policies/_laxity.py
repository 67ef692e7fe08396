"""Shared machinery of the laxity policies (LLF, LALF): critical-laxity events and re-evaluation."""

from __future__ import annotations

import math

from wattsched.mig.policies.base import reevaluate_all
from wattsched.mig.state import MigState

__all__ = ["LaxityPolicy"]

_KEY_DECIMALS = 6
_MEMO_KEY = "laxity-reference-s"
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
    """Least laxity first with critical-laxity events (papers.md §A.5.4, CONTRACT §4).

    Laxity of job ``j`` at time ``t``: ``d_j - t - fraction_j * ref_j`` where ``ref_j`` is the job's duration
    on a reference slice of the configuration (subclasses: fastest slice, or mean over slices). Ranking by
    ``d_j - fraction_j * ref_j`` is the same as ranking by laxity. A waiting job's key is constant, so its
    critical-laxity event can be scheduled analytically at ``key - critical_laxity_s``.
    """

    name = "laxity"

    def __init__(self, critical_laxity_s: float = 60.0, max_critical_events: int = 3) -> None:
        self.critical_laxity_s: float | None = float(critical_laxity_s)
        self.max_critical_events = int(max_critical_events)

    def reference_duration_s(self, state: MigState, durations: tuple[float, ...]) -> float:
        raise NotImplementedError

    def _references(self, state: MigState) -> list[float]:
        """Per-job reference durations in the current configuration, filled on first use (NaN: not yet).

        Cached in ``state.policy_memo`` (emptied at every configuration change): a job's reference is a pure
        function of its durations and the configuration, and recomputing it was the bulk of a key's cost."""
        references: list[float] | None = state.policy_memo.get(_MEMO_KEY)
        if references is None:
            references = [math.nan] * len(state.durations_s)
            state.policy_memo[_MEMO_KEY] = references
        return references

    def _key(self, state: MigState, job: int) -> float:
        references: list[float] | None = state.policy_memo.get(_MEMO_KEY)  # _references(), inlined
        if references is None:
            references = self._references(state)
        reference = references[job]
        if reference != reference:  # NaN: first use in this configuration
            reference = references[job] = self.reference_duration_s(state, state.durations_s[job])
        # Rounded to the microsecond so that laxities equal up to float noise tie exactly and fall to the
        # CONTRACT tie-break (earlier arrival, then row). This matters: a job preempted by a critical-laxity
        # event reaches the threshold exactly when its preemptor, running on its reference slice, sits there.
        return _round_micro(state.deadline_s[job] - state.fraction[job] * reference)

    #: A waiting job's key is its laxity key (an alias rather than a wrapper: one call less per arrival).
    waiting_key = _key

    def critical_time_s(self, state: MigState, job: int) -> float:
        threshold = self.critical_laxity_s if self.critical_laxity_s is not None else 0.0
        # The simulator stores a waiting job's key in ``wkey`` before asking for its critical time.
        return state.wkey[job] - threshold

    def assign(self, state: MigState) -> list[int] | None:
        # _key(), inlined for the running jobs (at most one per slice, at every scheduling point).
        references = self._references(state)
        deadline = state.deadline_s
        fraction = state.fraction
        running = []
        for j in state.job_on:
            if j >= 0:
                reference = references[j]
                if reference != reference:  # NaN: first use in this configuration
                    reference = references[j] = self.reference_duration_s(state, state.durations_s[j])
                running.append((_round_micro(deadline[j] - fraction[j] * reference), j))
        return reevaluate_all(state, running, slowest_feasible=False)
