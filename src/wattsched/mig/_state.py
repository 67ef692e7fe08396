"""The engine's private state of one MIG simulation, laid out as flat lists for speed.

Only the engine (:mod:`wattsched.mig.simulator`, :mod:`wattsched.mig._apply`) writes it. Policies read it as
a :class:`~wattsched.mig.view.SchedulerView` (this class satisfies that Protocol without copies). Internally a
job's place is a code in ``slice_of``: a slice index (running) or one of the negative sentinels below.

The waiting queue is a sorted ``list`` of ``(key, job)`` while it is short and a
:class:`~wattsched.sim.sorted_list.BlockedSortedList` (O(log n) insert and delete) once it grows past
:data:`~wattsched.sim.sorted_list.LARGE` entries; :func:`add_waiting` / :func:`remove_waiting` hide the
difference. A waiting job's key never changes while it waits, so the order is the same in both.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Sequence

from wattsched.mig.view import JobState
from wattsched.sim.sorted_list import LARGE, SMALL, BlockedSortedList

__all__ = [
    "ARRIVAL",
    "BLACKOUT_END",
    "COMPLETION",
    "DONE",
    "NOT_ARRIVED",
    "PER_JOB",
    "STOPPED",
    "TIMER",
    "WAITING",
    "EngineState",
    "WaitingQueue",
    "add_waiting",
    "remove_waiting",
]

#: The waiting queue: ``(rank key, job)`` sorted, best first.
WaitingQueue = list[tuple[float, int]] | BlockedSortedList[tuple[float, int]]

#: Event kinds of the engine's queue (the kernel's priority: lower first among simultaneous events).
COMPLETION, BLACKOUT_END, ARRIVAL, TIMER = 0, 1, 2, 3

WAITING = -1
DONE = -2
NOT_ARRIVED = -3
#: A job just taken off its slice while a decision is applied (internal to the engine).
STOPPED = -4

_STATES = {
    WAITING: JobState.WAITING,
    DONE: JobState.DONE,
    NOT_ARRIVED: JobState.NOT_ARRIVED,
    STOPPED: JobState.WAITING,
}


#: Per-job lists of :class:`EngineState` (indexed by job rank); :func:`wattsched.mig._dynamic.add_job` appends
#: to each of them.
PER_JOB: tuple[str, ...] = (
    "deadline_s",
    "durations_s",
    "remaining",
    "slice_of",
    "finish_s",
    "run_start_s",
    "seg_start_s",
    "completed_at_s",
    "preemptions",
    "crit_count",
    "timer_s",
    "wkey",
)


def add_waiting(state: EngineState, item: tuple[float, int]) -> None:
    """Insert ``(key, job)`` into the waiting queue (a list while short, then the blocked layout)."""
    waiting = state.waiting
    if isinstance(waiting, list):
        insort(waiting, item)
        if len(waiting) > LARGE:
            state.waiting = BlockedSortedList(waiting)
    else:
        waiting.add(item)


def remove_waiting(state: EngineState, item: tuple[float, int]) -> None:
    """Delete ``(key, job)`` from the waiting queue (back to a list once it is short again)."""
    waiting = state.waiting
    if isinstance(waiting, list):
        del waiting[bisect_left(waiting, item)]
    else:
        waiting.remove(item)
        if len(waiting) < SMALL:
            state.waiting = list(waiting)


class EngineState:
    """Flat per-job and per-slice lists (see :class:`~wattsched.mig.view.SchedulerView` for their meaning)."""

    __slots__ = (
        "completed_at_s",
        "crit_count",
        "deadline_s",
        "duration_indices",
        "durations_s",
        "finish_s",
        "history",
        "job_reference_s",
        "now_s",
        "preemptions",
        "remaining",
        "run_start_s",
        "running",
        "scan_order",
        "seg_start_s",
        "slice_compute",
        "slice_duration_index",
        "slice_of",
        "slice_start",
        "timer_s",
        "waiting",
        "wkey",
    )

    def __init__(self, deadline_s: list[float], durations_s: list[tuple[float, ...]], record: bool) -> None:
        n = len(deadline_s)
        self.now_s = 0.0
        self.deadline_s = deadline_s
        self.durations_s = durations_s
        self.remaining = [1.0] * n
        self.slice_of = [NOT_ARRIVED] * n
        self.finish_s = [math.inf] * n
        self.run_start_s = [0.0] * n
        self.seg_start_s = [0.0] * n
        self.completed_at_s = [math.nan] * n
        self.preemptions = [0] * n
        self.crit_count = [0] * n
        self.timer_s = [-1.0] * n
        self.wkey = [0.0] * n
        self.history: list[list[tuple[float, float, int | str, int]]] | None = (
            [[] for _ in range(n)] if record else None
        )
        self.waiting: WaitingQueue = []
        self.slice_compute: list[int] = []
        self.slice_duration_index: list[int] = []
        self.slice_start: list[int] = []
        self.scan_order: list[int] = []
        self.duration_indices: tuple[int, ...] = ()
        self.running: list[int] = []
        self.job_reference_s: Sequence[float] = []

    def install(self, slices: Sequence[tuple[int, int, int]]) -> None:
        """Make ``(compute, start, duration_index)`` slices current, all idle (waiting jobs untouched)."""
        self.slice_compute = [c for c, _, _ in slices]
        self.slice_start = [s for _, s, _ in slices]
        self.slice_duration_index = [d for _, _, d in slices]
        compute, start = self.slice_compute, self.slice_start
        self.scan_order = sorted(range(len(slices)), key=lambda s: (compute[s], start[s]))
        self.duration_indices = tuple(sorted(set(self.slice_duration_index)))
        self.running = [-1] * len(slices)
        self.job_reference_s = []

    def keep_jobs(self, keep: Sequence[int], new_index: Sequence[int]) -> None:
        """Keep only jobs ``keep`` (ascending ranks), renumbered ``0..len(keep)-1`` in the same order
        (``new_index[old]`` is the new rank, -1 for a dropped job); slices and the waiting queue follow."""
        for name in PER_JOB:
            values = getattr(self, name)
            setattr(self, name, [values[j] for j in keep])
        if self.history is not None:
            self.history = [self.history[j] for j in keep]
        if self.job_reference_s:
            reference = self.job_reference_s
            self.job_reference_s = [reference[j] for j in keep]
        self.running = [new_index[j] if j >= 0 else -1 for j in self.running]
        entries = [(key, new_index[j]) for key, j in self.waiting]  # a monotone renumbering keeps the order
        self.waiting = entries if len(entries) <= LARGE else BlockedSortedList(entries)

    def state(self, job: int) -> JobState:
        code = self.slice_of[job]
        return JobState.RUNNING if code >= 0 else _STATES[code]

    def current_remaining(self, job: int, now_s: float, speed: float = 1.0) -> float:
        """Remaining fraction of ``job`` at ``now_s`` (accounts for the run since the last update)."""
        s = self.slice_of[job]
        if s < 0:
            return self.remaining[job]
        elapsed = (now_s - self.run_start_s[job]) * speed
        return self.remaining[job] - elapsed / self.durations_s[job][self.slice_duration_index[s]]

    def copy(self) -> EngineState:
        """An independent copy (for look-ahead forks)."""
        other = EngineState.__new__(EngineState)
        for name in EngineState.__slots__:
            value = getattr(self, name)
            setattr(other, name, value.copy() if isinstance(value, list | BlockedSortedList) else value)
        if self.history is not None:
            other.history = [h.copy() for h in self.history]
        return other
