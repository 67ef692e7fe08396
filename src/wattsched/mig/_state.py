"""The engine's private state of one MIG simulation, laid out as flat lists for speed.

Only the engine (:mod:`wattsched.mig.simulator`, :mod:`wattsched.mig._apply`) writes it. Policies read it as
a :class:`~wattsched.mig.view.SchedulerView` (this class satisfies that Protocol without copies). Internally a
job's place is a code in ``slice_of``: a slice index (running) or one of the negative sentinels below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from wattsched.mig.view import JobState

__all__ = ["DONE", "NOT_ARRIVED", "STOPPED", "WAITING", "EngineState"]

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
        self.waiting: list[tuple[float, int]] = []
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
            setattr(other, name, value.copy() if isinstance(value, list) else value)
        if self.history is not None:
            other.history = [h.copy() for h in self.history]
        return other
