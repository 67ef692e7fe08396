"""Hot-path state transitions of the MIG simulator: start, stop, complete, and applying a policy decision.

Kept apart from :mod:`wattsched.mig.simulator` so that module stays readable; these functions reach into the
simulator's private fields on purpose (they are part of it).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import TYPE_CHECKING

from wattsched.mig.policies.base import PolicyError
from wattsched.mig.state import DONE, STOPPED, WAITING

if TYPE_CHECKING:
    from wattsched.mig.simulator import MigSimulation

__all__ = ["COMPLETION", "apply_decision", "complete_job", "start_job", "stop_job"]

#: Event priority of completions (processed first among simultaneous events).
COMPLETION = 0
_EPS_S = 1e-9


def stop_job(sim: MigSimulation, j: int, s: int, now: float) -> None:
    """Take running job ``j`` off slice ``s`` (progress kept); counts one preemption."""
    st = sim._state
    st.fraction[j] -= (now - st.run_start_s[j]) / st.durations_s[j][st.slice_dix[s]]
    st.run_start_s[j] = now
    history = st.history
    if history is not None and now > st.seg_start_s[j]:
        history[j].append((st.seg_start_s[j], now, sim._config.ident, st.slice_slot[s]))
    st.slice_of[j] = STOPPED
    st.end_s[j] = math.inf
    st.preemptions[j] += 1
    sim._preemptions += 1
    sim._units -= st.slice_units[s]


def start_job(sim: MigSimulation, j: int, s: int, now: float) -> None:
    """Run job ``j`` on slice ``s`` from ``now`` and schedule its exact completion."""
    st = sim._state
    queue = sim._queue
    st.slice_of[j] = s
    st.run_start_s[j] = now
    st.seg_start_s[j] = now
    st.timer_s[j] = -1.0
    end = now + st.fraction[j] * st.durations_s[j][st.slice_dix[s]]
    if end < queue.now:  # only for remainders below EPS_S: keep the queue's clock monotone
        end = queue.now
    st.end_s[j] = end
    queue.schedule(end, COMPLETION, j)
    sim._units += st.slice_units[s]


def complete_job(sim: MigSimulation, j: int, t: float) -> None:
    st = sim._state
    s = st.slice_of[j]
    if st.history is not None:
        st.history[j].append((st.seg_start_s[j], t, sim._config.ident, st.slice_slot[s]))
    st.job_on[s] = -1
    sim._units -= st.slice_units[s]
    st.slice_of[j] = DONE
    st.fraction[j] = 0.0
    st.end_s[j] = math.inf
    st.completion_s[j] = t
    sim._completed += 1
    tardiness = t - st.deadline_s[j]
    if tardiness > _EPS_S:
        sim._tardiness_sum_s += tardiness
        sim._late += 1
        if tardiness > sim._tardiness_max_s:
            sim._tardiness_max_s = tardiness


def apply_decision(sim: MigSimulation, decision: list[int], now: float) -> None:
    """Validate a policy's slice assignment and apply it (see :mod:`wattsched.mig.policies.base`).

    All stops happen before all starts, in slot order, so a job moved between slices is stopped first."""
    st = sim._state
    old = st.job_on
    if decision == old:  # the common "nothing moves" outcome of a full re-evaluation
        if st.waiting and -1 in old:
            raise PolicyError("a slice is left idle while jobs wait")
        return
    if len(decision) != len(old):
        raise PolicyError(f"decision has {len(decision)} entries for {len(old)} slices")
    n = len(old)
    stopped = []
    for s in range(n):
        o = old[s]
        if o >= 0 and decision[s] != o:
            stop_job(sim, o, s, now)
            stopped.append(o)
    slice_of = st.slice_of
    waiting = st.waiting
    for s in range(n):
        j = decision[s]
        if j >= 0 and j != old[s]:
            code = slice_of[j]
            if code == WAITING:
                del waiting[bisect_left(waiting, (st.wkey[j], j))]
            elif code != STOPPED:
                raise PolicyError(f"job rank {j} assigned to slice {s} is not waiting or running once "
                                  f"(state {code})")
            start_job(sim, j, s, now)
        elif j < -1:
            raise PolicyError(f"bad job index {j} for slice {s}")
    st.job_on = list(decision)
    for j in stopped:
        if slice_of[j] == STOPPED:
            sim._enqueue(j, now)
    if st.waiting and -1 in decision:
        raise PolicyError("a slice is left idle while jobs wait")
