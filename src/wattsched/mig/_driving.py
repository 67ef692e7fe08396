"""The driving API a cluster uses on each GPU's simulation (a mixin of :class:`MigSimulation`).

A cluster gives a GPU its jobs as they are placed (:meth:`ClusterDriving.add_job`), steps it instant by
instant in one global time order (:meth:`~ClusterDriving.next_event_s`, :meth:`~ClusterDriving.step`),
reads what it needs after each instant in one call (:meth:`~ClusterDriving.probe`), drops finished jobs from
memory on long runs (:meth:`~ClusterDriving.compact`) and ends the run at the cluster's end
(:meth:`~ClusterDriving.finish`).
The implementations live in :mod:`wattsched.mig._dynamic`; this class only names them on the simulation.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

from wattsched.mig import _dynamic
from wattsched.mig._dynamic import ClockGovernor, FinishedJobs

if TYPE_CHECKING:
    from wattsched.mig._state import EngineState
    from wattsched.mig.simulator import MigSimulation
    from wattsched.sim import EventQueue
    from wattsched.sim.kernel import Event
    from wattsched.workload.job import Job

__all__ = ["ClusterDriving"]


class ClusterDriving:
    """Methods a cluster drives a GPU's simulation with (see the module docstring)."""

    # The simulation's state these methods read (declared for the type checker; set by MigSimulation).
    _state: EngineState
    _queue: EventQueue
    _jobs: list[Job]
    _arrival_s: list[float]
    _dropped: int
    _completed: int
    _tardiness_sum_s: float
    _busy: int
    _states: int
    _busy_time: list[float]
    _levels_used: set[int]
    _level: int
    _clock: ClockGovernor | None
    _finished: bool
    _horizon_s: float

    def _is_live(self, event: Event) -> bool:
        raise NotImplementedError

    def _finish(self) -> None:
        raise NotImplementedError

    def _simulation(self) -> MigSimulation:
        return cast("MigSimulation", self)

    @property
    def jobs_in_system(self) -> int:
        """Jobs given to the simulation and not completed (not arrived yet, waiting or running)."""
        return len(self._jobs) + self._dropped - self._completed

    @property
    def completed_jobs(self) -> int:
        """Jobs completed so far."""
        return self._completed

    @property
    def total_tardiness_s(self) -> float:
        """Sum of the tardiness of the completed jobs (s)."""
        return self._tardiness_sum_s

    @property
    def busy_state(self) -> int:
        """Index of the current busy state in the GPU's power table (``u`` busy compute slices on GPUs with
        one power curve; see :class:`wattsched.hardware.power.PowerTable`)."""
        return self._busy % self._states

    @property
    def pending_arrivals(self) -> int:
        """Jobs given whose arrival the simulation has not processed yet."""
        return len(self._arrival_s) - self._queue.stream_position

    def time_by_clock_level(self) -> tuple[float, ...]:
        """Seconds spent at each clock level of the governor so far (one level without a governor)."""
        states = self._states
        levels = len(self._busy_time) // states
        used = self._levels_used
        return tuple(
            sum(self._busy_time[level * states : (level + 1) * states]) if level in used else 0.0
            for level in range(levels)
        )

    def probe(self, limit: float) -> tuple[float, bool, int, int, int, int]:
        """What a cluster reads after each instant, in one call: ``(next_event_s(limit), whether that time
        is certain (see :attr:`wattsched.sim.EventQueue.peeked_live`), jobs in the system, pending arrivals,
        busy state, idle slices as a bit mask of compute sizes)``."""
        queue = self._queue
        st = self._state
        nxt = queue.peek_live_time(self._is_live, limit)
        free = 0
        if -1 in st.running:
            compute = st.slice_compute
            s = 0
            for j in st.running:
                if j < 0:
                    free |= 1 << compute[s]
                s += 1  # noqa: SIM113 - as in the engine's loops
        return (
            nxt,
            queue.peeked_live,
            len(self._jobs) + self._dropped - self._completed,
            len(self._arrival_s) - queue.stream_position,
            self._busy % self._states,
            free,
        )

    def free_compute(self) -> tuple[int, ...]:
        """Compute sizes of the idle slices, distinct and ascending (none during a blackout)."""
        st = self._state
        compute = st.slice_compute
        return tuple(sorted({compute[s] for s, j in enumerate(st.running) if j < 0}))

    @property
    def clock_level(self) -> int:
        """Index of the clock level in force (0 without a clock governor)."""
        return self._level

    #: ``add_job(job, arrival_s=None)``: see :func:`wattsched.mig._dynamic.add_job` (the function itself,
    #: not a wrapper: it runs once per job a cluster places).
    add_job = _dynamic.add_job

    def next_event_s(self, limit: float = math.inf) -> float:
        """Time of the next instant (its first live event or arrival), ``inf`` when nothing is pending.

        ``limit``: the earliest time a job may still be added; stale events after it are kept (see
        :meth:`wattsched.sim.EventQueue.peek_live_time`), so the value may be early: peek again later."""
        return self._queue.peek_live_time(self._is_live, limit)

    @property
    def next_event_certain(self) -> bool:
        """Whether the last :meth:`next_event_s` returned a live event's or an arrival's time."""
        return self._queue.peeked_live

    def step(self) -> bool | None:
        """Process the next instant. ``None`` when nothing was pending, else whether it was a decision epoch
        (an arrival or completion outside a blackout; a partitioner may :meth:`repartition` now)."""
        raise NotImplementedError  # MigSimulation.step

    def finish(self, end_s: float | None = None) -> None:
        """End the run at ``max(end_s, horizon, last event)`` (no event may be pending)."""
        if self._finished:
            return
        if self._queue:
            raise RuntimeError("finish() with events pending: step() until next_event_s() is inf")
        if end_s is not None:
            self._horizon_s = max(self._horizon_s, float(end_s))
        self._finish()

    def compact(self, keep: bool = True) -> int:
        """Drop completed jobs from memory (their totals are kept; their outcomes move to
        :meth:`finished_jobs` unless ``keep`` is false); the rest are renumbered in the same order, so
        nothing else changes. Returns how many were dropped."""
        return _dynamic.compact(self._simulation(), keep)

    def finished_jobs(self) -> FinishedJobs:
        """Outcomes of every completed job so far (arrays by completion batch; see :class:`FinishedJobs`)."""
        return _dynamic.finished_jobs(self._simulation())
