"""Restricted EDF-SS: EDF-SS that preempts only to save a deadline (docs/concepts/mig-model.md), the
in-configuration scheduler of P1's repartitioning agent.

Running jobs keep their slices. At each arrival or completion the waiting jobs are taken in deadline order
and placed on *free* slices by the EDF-SS slice rule. A waiting job ``w`` that gets no slice, or only a slice
on which it would be late, preempts a running job ``r`` only when (1) ``d_r > d_w``, (2) ``w`` meets its
deadline on ``r``'s slice, and (3) waiting would make ``w`` late: on every slice ``s``,
``free_at(s) + rem(w, s) > d_w``. The victim is the qualifying job with the latest deadline (ties: smaller
compute size, then lower slot); it rejoins the waiting jobs and is placed by the same rule in its turn.
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Sequence

from wattsched.mig.policies.base import POLICIES, DeadlineOrder, edf_ss_slice
from wattsched.mig.view import Assignment, SchedulerView

__all__ = ["RestrictedEdfSlowestSlice"]


def _running_max_deadline(out: Sequence[int], deadline: Sequence[float]) -> float:
    return max([deadline[j] for j in out if j >= 0], default=-math.inf)


class RestrictedEdfSlowestSlice(DeadlineOrder):
    """EDF-SS with preemption only where it directly prevents a deadline miss."""

    name = "edf-ss-restricted"

    def assign(self, view: SchedulerView) -> Assignment | None:
        waiting = view.waiting
        if not waiting:
            return None
        job_on = view.running
        deadline = view.deadline_s
        scan_order = view.scan_order
        free = [s for s in scan_order if job_on[s] < 0]
        # Latest running deadline, as of the start or the last preemption (placements on free slices do not
        # update it). Only read once no slice is free, so computed then (from job_on: ``out`` is a copy).
        max_running_d = math.nan
        if not free:
            max_running_d = _running_max_deadline(job_on, deadline)
            if waiting[0][0] >= max_running_d:
                return None  # no free slice and no running job with a later deadline: nothing can change
        now = view.now_s
        fraction = view.remaining
        durations = view.durations_s
        dix = view.slice_duration_index
        end_s = view.finish_s
        out = list(job_on)
        free_at = [end_s[j] if j >= 0 else now for j in out]
        victims: list[tuple[float, int]] = []
        i = 0
        n_waiting = len(waiting)
        changed = False
        while True:
            if victims and (i >= n_waiting or victims[0] < waiting[i]):
                d, w = victims.pop(0)
            elif i < n_waiting:
                d, w = waiting[i]
                i += 1
            else:
                break
            if not free:
                if max_running_d != max_running_d:  # NaN: not computed yet, nothing was preempted
                    max_running_d = _running_max_deadline(job_on, deadline)
                if d >= max_running_d:
                    break  # later jobs have later deadlines: none can take a slice or preempt
            p = fraction[w]
            dj = durations[w]
            s, meets = edf_ss_slice(now, p, d, dj, free, dix) if free else (-1, False)
            if not meets:
                v = self._victim_slice(view, w, p, d, dj, out, free_at)
                if v >= 0:
                    r = out[v]
                    out[v] = w
                    free_at[v] = now + p * dj[dix[v]]
                    insort(victims, (deadline[r], r))
                    max_running_d = _running_max_deadline(out, deadline)
                    changed = True
                    continue
            if s >= 0:
                out[s] = w
                free.remove(s)
                free_at[s] = now + p * dj[dix[s]]
                changed = True
        return Assignment(out) if changed else None

    @staticmethod
    def _victim_slice(
        view: SchedulerView,
        w: int,
        p: float,
        d: float,
        dj: Sequence[float],
        out: list[int],
        free_at: list[float],
    ) -> int:
        """The slice of the job ``w`` may preempt, or -1 (conditions (1)–(3) of the module docstring)."""
        now = view.now_s
        dix = view.slice_duration_index
        if now + p * min([dj[x] for x in view.duration_indices]) > d:
            return -1  # w is late on every slice: condition (2) fails everywhere
        for s, at in enumerate(free_at):
            if at + p * dj[dix[s]] <= d:
                return -1  # condition (3) fails: w can wait for slice s and still meet its deadline
        deadline = view.deadline_s
        best = -1
        best_d = d  # condition (1): only jobs with a later deadline than w
        for s in view.scan_order:
            r = out[s]
            if r >= 0 and deadline[r] > best_d and now + p * dj[dix[s]] <= d:
                best_d = deadline[r]
                best = s
        return best


POLICIES.register("edf-ss-restricted")(RestrictedEdfSlowestSlice)
