"""Hot-path state transitions of the MIG simulator: start, stop, complete, and applying a policy decision.

Kept apart from :mod:`wattsched.mig.simulator` so that module stays readable; these functions are part of the
engine and write its private state (policies only ever read it, through the view).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import TYPE_CHECKING

from wattsched.mig._state import DONE, STOPPED, WAITING
from wattsched.mig.policies.base import PolicyError
from wattsched.mig.view import Assignment
from wattsched.sim.sorted_list import SMALL

if TYPE_CHECKING:
    from wattsched.mig.simulator import MigSimulation

__all__ = ["COMPLETION", "apply_decision", "complete_job", "start_moved", "stop_job"]

#: Event priority of completions (processed first among simultaneous events).
COMPLETION = 0
_EPS_S = 1e-9


def stop_job(sim: MigSimulation, j: int, s: int, now: float, *, preemption: bool = True) -> None:
    """Take running job ``j`` off slice ``s``: a preemption (progress kept, counted once) or, with
    ``preemption=False``, a start the model planned that never happened for real (``MigSimulation.
    observe_start``): its progress on the slice is undone (exactly so without a power cap or clock levels)."""
    st = sim._state
    duration = st.durations_s[j][st.slice_duration_index[s]]
    if preemption:
        st.remaining[j] -= (now - st.run_start_s[j]) / duration
        history = st.history
        if history is not None and now > st.seg_start_s[j]:
            history[j].append((st.seg_start_s[j], now, sim._config.ident, st.slice_start[s]))
        st.preemptions[j] += 1
        sim._preemptions += 1
    else:
        st.remaining[j] += (st.run_start_s[j] - st.seg_start_s[j]) / duration
    st.run_start_s[j] = now
    st.slice_of[j] = STOPPED
    st.finish_s[j] = math.inf
    sim._busy -= st.slice_compute[s] * sim._weight[j]


def complete_job(sim: MigSimulation, j: int, t: float) -> None:
    st = sim._state
    s = st.slice_of[j]
    if st.history is not None:
        st.history[j].append((st.seg_start_s[j], t, sim._config.ident, st.slice_start[s]))
    st.running[s] = -1
    sim._busy -= st.slice_compute[s] * sim._weight[j]
    st.slice_of[j] = DONE
    st.remaining[j] = 0.0
    st.finish_s[j] = math.inf
    st.completed_at_s[j] = t
    sim._completed += 1
    tardiness = t - st.deadline_s[j]
    if tardiness > _EPS_S:
        sim._tardiness_sum_s += tardiness
        sim._late += 1
        sim._late_inference += sim._inference[j]
        if tardiness > sim._tardiness_max_s:
            sim._tardiness_max_s = tardiness


def apply_decision(sim: MigSimulation, decision: Assignment, now: float) -> None:
    """Validate a policy's slice assignment and apply it (see :mod:`wattsched.mig.policies.base`).

    All stops happen before all starts, in slot order, so a job moved between slices is stopped first.
    Called only right after the running jobs' fractions were brought up to ``now``, so a stop needs no
    progress update (it would subtract exactly 0.0). Stops and starts are inlined: this is
    the hottest path of the full re-evaluation policies, which move jobs between slices at most scheduling
    points."""
    st = sim._state
    old = st.running
    # One plain list: it becomes the running list (CPython indexes exact lists faster than tuple subclasses).
    new = list(decision)
    if new == old:  # "nothing moves" (full re-evaluations say so with None, other policies may not)
        if st.waiting and -1 in old:
            raise PolicyError("a slice is left idle while jobs wait")
        return
    n = len(old)
    if len(new) != n:
        raise PolicyError(f"decision has {len(new)} entries for {n} slices")
    slice_of = st.slice_of
    end_s = st.finish_s
    units = st.slice_compute
    weight = sim._weight
    history = st.history
    seg_start = st.seg_start_s
    busy = sim._busy
    stopped = []
    for s in range(n):
        o = old[s]
        if o >= 0 and new[s] != o:
            if history is not None and now > seg_start[o]:
                history[o].append((seg_start[o], now, sim._config.ident, st.slice_start[s]))
            slice_of[o] = STOPPED
            end_s[o] = math.inf
            st.preemptions[o] += 1
            busy -= units[s] * weight[o]
            stopped.append(o)
    sim._preemptions += len(stopped)
    busy = start_moved(sim, new, old, now, busy)
    sim._busy = busy
    st.running = new
    for j in stopped:
        if slice_of[j] == STOPPED:
            sim._enqueue(j, now)
    if st.waiting and -1 in new:
        raise PolicyError("a slice is left idle while jobs wait")


def start_moved(sim: MigSimulation, decision: list[int], old: list[int], now: float, busy: int) -> int:
    """Start every job the decision puts on a new slice, from ``now``, with its exact completion event;
    returns the busy state."""
    st = sim._state
    queue = sim._queue
    schedule = queue.schedule
    floor = queue.now
    slice_of = st.slice_of
    waiting = st.waiting
    wkey = st.wkey
    fraction = st.remaining
    durations = st.durations_s
    dix = st.slice_duration_index
    units = st.slice_compute
    weight = sim._weight
    run_start = st.run_start_s
    seg_start = st.seg_start_s
    timer = st.timer_s
    end_s = st.finish_s
    short = type(waiting) is list
    s = 0  # a counter measured faster than enumerate() on these short lists
    for j in decision:
        if j >= 0 and j != old[s]:
            code = slice_of[j]
            if code == WAITING:
                if isinstance(waiting, list):
                    del waiting[bisect_left(waiting, (wkey[j], j))]
                else:  # a long queue (wattsched.sim.sorted_list); back to a list below when short again
                    waiting.remove((wkey[j], j))
                timer[j] = -1.0  # a stopped job ran, so its timer is already cleared
            elif code != STOPPED:
                raise PolicyError(f"job rank {j} assigned to slice {s} is not waiting or running once "
                                  f"(state {code})")
            slice_of[j] = s
            run_start[j] = now
            seg_start[j] = now
            end = now + fraction[j] * durations[j][dix[s]]
            if end < floor:  # only for remainders below EPS_S: keep the queue's clock monotone
                end = floor
            end_s[j] = end
            schedule(end, COMPLETION, j)
            busy += units[s] * weight[j]
        elif j < -1:
            raise PolicyError(f"bad job index {j} for slice {s}")
        s += 1  # noqa: SIM113 - see above
    if not short and len(waiting) < SMALL:
        st.waiting = list(waiting)
    return busy
