"""Event-driven, preemptive simulator of one MIG GPU (docs/concepts/mig-model.md).

Events: job arrival, job completion, critical-laxity timer and repartition end, kept in the domain-blind
:class:`~wattsched.sim.EventQueue` (arrivals as its sorted stream). Events closer than :data:`EPS_S` are one
*instant*: the simulator processes all of them, then runs the scheduler once. A job that ran ``Δ`` on a slice
with duration ``dur`` loses ``Δ/dur`` of its work; a completion event sits at ``start + remaining·dur``
exactly. Energy is the piecewise-constant integral of the GPU's power in its busy state (P1: ``P(u)``, ``u`` =
compute slices of busy slices; per job kind on GPUs whose power model says so, see
:mod:`wattsched.hardware.power`) from 0 to ``end_s = max(horizon_s, last event)``.

The GPU is any catalogue entry (``gpu="h200-141gb"``, a path, or a :class:`~wattsched.hardware.mig.MigGpu`;
default P1's A100-40GB). A job's run time on a slice is its duration for the slice's compute size
(:meth:`wattsched.workload.job.Job.duration_for_size`).

Power cap (``power_cap=True``): a busy state whose uncapped power exceeds the GPU's cap runs every busy slice
slower by the power model's shared speed factor; progress is settled at every change of state and the
completions re-timed. Off by default (P1's A100 curve never exceeds its cap, so results there are unchanged).

Repartitioning (:meth:`MigSimulation.repartition`) preempts every running job, each counting one preemption
(the MIG instance it ran on is destroyed) unless it was placed at that instant and never ran.
``repartition_mode="blackout"`` (default, docs/concepts/mig-model.md): no slice exists for the GPU's
``repartition_s`` seconds, the GPU draws idle power, arrivals wait, then the new configuration exists and the
scheduler runs at once. ``"deadline_shift"`` (the SMART-MIG alternative): the change is instantaneous, and the
deadline of every arrived, unfinished job is reduced by ``repartition_s``, for scheduling and for tardiness
alike (later arrivals are not shifted).

A cluster drives one simulation per GPU (:mod:`wattsched.cluster`) through its driving API
(:meth:`~MigSimulation.add_job`, :meth:`~MigSimulation.probe`, :meth:`~MigSimulation.step`,
:meth:`~MigSimulation.compact`, :meth:`~MigSimulation.finish`): jobs given as they are placed, instants
stepped in one global time order, finished jobs dropped from memory, the run ended at the cluster's end. Jobs
given one by one that way run exactly as the same jobs given at once (a hypothesis test), and a run that uses
none of it is unchanged (the golden check). A GPU-wide clock level (``clock=``, :mod:`wattsched.mig.clock`)
scales every running job's speed and the busy power above idle.

Where the state lives: every fact about a job is a column of the job table (:class:`~wattsched.mig._state.
JobTable`, part of the :class:`~wattsched.mig._state.EngineState` policies read); the events are the kernel's
(:class:`~wattsched.sim.EventQueue`, arrivals as its stream); everything else is an attribute of
:class:`MigSimulation`, each declared with its type at the top of the class. :meth:`MigSimulation.fork` copies
every attribute that is not declared shared (:data:`_SHARED`), so a fork never shares mutable state.
"""

from __future__ import annotations

import math
import operator
from bisect import insort
from collections.abc import Callable, Mapping, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Literal

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import Configuration, MigGpu
from wattsched.hardware.power import PowerTable
from wattsched.mig._state import (
    ARRIVAL,
    BLACKOUT_END,
    COMPLETION,
    DONE,
    EPS_S,
    NOT_ARRIVED,
    STOPPED,
    TIMER,
    WAITING,
    EngineState,
    OneJobView,
)
from wattsched.mig.clock import ClockGovernor, clock_tables, tightest_slack_ratio
from wattsched.mig.policies import POLICIES, PolicyError, SchedulingPolicy
from wattsched.mig.results import (
    FinishedJobs,
    JobRecord,
    JobView,
    SimResult,
    SimSnapshot,
    job_records,
    warn_unfinished,
)
from wattsched.mig.view import Assignment
from wattsched.sim import EventQueue
from wattsched.sim.kernel import Event
from wattsched.sim.sorted_list import LARGE, BlockedSortedList
from wattsched.workload.job import Job, JobKind

__all__ = [
    "EPS_S",
    "OVERDUE_S",
    "ClockGovernor",
    "FinishedJobs",
    "MigSimulation",
    "RepartitionMode",
    "resolve_configuration",
    "resolve_policy",
    "simulate",
]

_COMPLETION, _BLACKOUT_END, _ARRIVAL, _TIMER = COMPLETION, BLACKOUT_END, ARRIVAL, TIMER
RepartitionMode = Literal["blackout", "deadline_shift"]
#: A run's power selection: ``None`` (the GPU's default), a curve name, ``"kind"``, or a mix ``{curve:
# weight}``.
PowerSelection = str | Mapping[str, float] | None


def resolve_configuration(gpu: MigGpu, configuration: int | str | Configuration) -> Configuration:
    """A :class:`Configuration` from an id (as ``mig configs`` lists them, ``"no-mig"``) or itself."""
    return gpu.configuration(configuration)


def resolve_policy(policy: str | SchedulingPolicy) -> SchedulingPolicy:
    """A policy object from a registry name (see ``POLICIES.available()``) or a policy object."""
    return POLICIES.make(policy) if isinstance(policy, str) else policy


#: Observed-events mode: a running job past its predicted end, not reported finished, is assumed to end this
#: much later (s), again at each decision while it runs (:attr:`MigSimulation.overdue_s`).
OVERDUE_S = 10.0

#: Attributes a fork shares with its parent: set at construction and never changed in place.
_SHARED = frozenset({"_gpu", "_policy", "_power_table", "_kind_weight", "_clock"})


class MigSimulation:
    """One simulation run, steppable decision epoch by decision epoch (for repartitioning and RL)."""

    # ---- set at construction (shared by forks when listed in _SHARED)
    _gpu: MigGpu
    _policy: SchedulingPolicy  # stateless
    #: Read once from the policy: whether it uses critical-laxity timers, and how many a job may have.
    _timed: bool
    _max_critical_events: int
    _mode: RepartitionMode
    _power_table: PowerTable
    #: Busy-state increment per compute slice of each job kind (1 everywhere unless power is per job kind).
    _kind_weight: Mapping[JobKind, int]
    #: Power (W) and speed (``None``: every state at full speed) of each state ``level · states + busy``.
    _power_w: tuple[float, ...]
    _speed: tuple[float, ...] | None
    #: Busy states per clock level (one level without a clock governor).
    _states: int
    _clock: ClockGovernor | None
    _horizon_s: float
    # ---- the jobs and their events
    #: Every fact about each job, the slices in force and the waiting queue (policies read it).
    _state: EngineState
    #: Arrival time of each job, by rank: the kernel's stream (the queue holds this list).
    _arrival_s: list[float]
    _queue: EventQueue
    #: Completed jobs dropped from memory by compact(), their outcomes and (row, record) pairs.
    _dropped: int
    _finished_jobs: FinishedJobs
    _done_records: list[tuple[int, JobRecord]]
    # ---- the GPU
    _config: Configuration  # in force (during a blackout: the one being created)
    _in_blackout: bool
    #: Whether the policy keeps per-job values for the configuration (extended for each job added).
    _reference: bool
    _level: int  # the clock level in force
    _levels_used: set[int]  # clock levels entered so far (busy time is zero at every other level)
    _busy: int  # the state: ``level · states + busy state`` (an index into _power_w)
    _busy_time: list[float]  # seconds spent in each state
    _entered: list[int]  # the states whose busy time may be non-zero, ascending (energy_j sums only those)
    # ---- the clock and the totals
    _last_s: float  # time up to which busy time is counted
    _now_s: float
    _end_s: float
    _finished: bool
    _preemptions: int
    _repartitions: int
    _blackout_s: float
    _completed: int
    _tardiness_sum_s: float
    _tardiness_max_s: float
    _late: int
    _late_inference: int
    # ---- observed-events mode (a real GPU's model)
    #: Ranks whose real completion was reported (never re-planned as overdue), and whether an observation
    #: changed the state since the scheduler last ran.
    _observed_done: set[int]
    #: Ranks the policy may not take off their slice while they run (:meth:`pin`).
    _pinned: set[int]
    _replan_due: bool
    _overdue_s: float
    # Slots, not an instance dict: the attributes above and nothing else (and a slot is read faster than a
    # key of a 39-key instance dict, which CPython does not share between instances: bench_instructions.py).
    __slots__ = tuple(__annotations__)

    def __init__(
        self,
        jobs: Sequence[Job],
        configuration: int | str | Configuration,
        policy: str | SchedulingPolicy,
        *,
        gpu: MigGpu | str | None = None,
        horizon_s: float | None = None,
        record_jobs: bool = False,
        repartition_mode: RepartitionMode = "blackout",
        power_curve: PowerSelection = None,
        power_cap: bool = False,
        clock: ClockGovernor | None = None,
    ) -> None:
        if repartition_mode not in ("blackout", "deadline_shift"):
            raise ConfigError(
                f"unknown repartition_mode '{repartition_mode}'; valid: blackout, deadline_shift"
            )
        if horizon_s is not None and not (math.isfinite(horizon_s) and horizon_s >= 0):
            raise ConfigError(f"horizon_s must be a finite number >= 0, got {horizon_s!r}")
        self._gpu = load_gpu(gpu)
        self._policy = resolve_policy(policy)
        self._timed = self._policy.critical_laxity_s is not None
        self._max_critical_events = self._policy.max_critical_events
        self._mode = repartition_mode
        arrivals = [j.arrival_s for j in jobs]
        if all(map(operator.le, arrivals, arrivals[1:])):
            order = list(range(len(jobs)))  # already in (arrival, row) order, as generated traces are
        else:
            order = sorted(range(len(jobs)), key=lambda i: (arrivals[i], i))
            arrivals = [arrivals[i] for i in order]
        ordered = [jobs[i] for i in order]
        table = self._gpu.power.table(power_curve, throttle=power_cap)
        self._power_table = table
        self._kind_weight = {kind: table.kind_weight[kind.value] for kind in JobKind}
        inference = JobKind.INFERENCE
        if table.per_kind:
            weights = self._kind_weight
            weight = [weights[job.kind] for job in ordered]
        else:
            weight = [self._kind_weight[inference]] * len(ordered)
        sizes = self._gpu.compute_sizes
        self._state = EngineState(
            record=record_jobs,
            jobs=ordered,
            rows=order,
            deadline_s=[j.deadline_s for j in ordered],
            # durations_for() inlined for the usual case (the job gives the GPU's sizes): one row per job
            durations_s=[
                (*j.durations_s, j.dur_full_s) if j.sizes == sizes else j.durations_for(sizes)
                for j in ordered
            ],
            is_inference=[int(job.kind is inference) for job in ordered],
            weight=weight,
        )
        self._speed = table.speed
        last_arrival = ordered[-1].arrival_s if ordered else 0.0
        self._horizon_s = float(horizon_s) if horizon_s is not None else last_arrival
        self._arrival_s = arrivals
        self._queue = EventQueue(stream=arrivals, stream_priority=_ARRIVAL)
        self._power_w = table.power_w
        self._states = len(table.power_w)
        self._clock = clock
        self._level = 0
        if clock is not None:
            self._power_w, self._speed, self._level = clock_tables(table, clock)
        self._busy_time = [0.0] * len(self._power_w)
        self._busy = self._level * self._states
        self._levels_used = {self._level}
        self._entered = []
        self._dropped = 0
        self._reference = False
        self._finished_jobs = FinishedJobs()
        self._done_records = []
        self._last_s = 0.0
        self._now_s = 0.0
        self._in_blackout = False
        self._preemptions = 0
        self._repartitions = 0
        self._blackout_s = 0.0
        self._completed = 0
        self._tardiness_sum_s = 0.0
        self._tardiness_max_s = 0.0
        self._late = 0
        self._late_inference = 0
        self._end_s = math.nan
        self._finished = False
        self._observed_done = set()
        self._pinned = set()
        self._replan_due = False
        self._overdue_s = OVERDUE_S
        self._config = resolve_configuration(self._gpu, configuration)
        self._install(self._config)

    # ------------------------------------------------------------------ public stepping API
    @property
    def gpu(self) -> MigGpu:
        return self._gpu

    @property
    def now_s(self) -> float:
        return self._now_s

    @property
    def policy(self) -> SchedulingPolicy:
        """The in-configuration policy the run schedules with."""
        return self._policy

    @property
    def configuration(self) -> Configuration:
        """The configuration in force (during a blackout: the one being created)."""
        return self._config

    @property
    def in_blackout(self) -> bool:
        return self._in_blackout

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def energy_j(self) -> float:
        """Energy consumed so far (up to ``now_s``; up to ``end_s`` once finished): Σ power × busy time over
        the states in index order; with a clock governor, that sum per clock level, the levels added in
        order. Only the states entered are visited (the others' busy time is zero), in the same order."""
        busy = self._busy_time
        power = self._power_w
        if self._clock is None:
            return sum(power[i] * busy[i] for i in self._entered if busy[i])
        states = self._states
        total = 0.0
        for _, indices in groupby(self._entered, key=lambda i: i // states):
            total += sum(power[i] * busy[i] for i in indices if busy[i])
        return total

    def _count_busy(self, seconds: float) -> None:
        """Add ``seconds`` to the busy time of the state in force."""
        state = self._busy
        if not self._busy_time[state] and state not in self._entered:
            insort(self._entered, state)
        self._busy_time[state] += seconds

    @property
    def accrued_tardiness_s(self) -> float:
        """Completed tardiness plus the time arrived unfinished jobs have spent past their deadline."""
        st = self._state
        now = self._now_s
        total = self._tardiness_sum_s
        for j in self._present_jobs():
            late = now - st.deadline_s[j]
            if late > 0.0:
                total += late
        return total

    def advance(self) -> bool:
        """Process events up to and including the next decision epoch (an arrival or completion outside a
        blackout, after the scheduler has handled it). Returns ``False`` once the run is finished."""
        if self._finished:
            return False
        while (epoch := self.step()) is not None:
            if epoch:
                return True
        self._finish()
        return False

    # ------------------------------------------------------------------ driving API (a GPU of a cluster)
    def run(self, stop_s: float | None = None) -> SimResult:
        """Run to the end without further repartitions and return the result.

        ``stop_s``: end the run at this time even if jobs remain (instants at ``stop_s`` are processed;
        energy integrates up to it; the jobs not completed count in ``unfinished_jobs``). Default: run until
        nothing is pending."""
        if not self._finished:
            if stop_s is not None:
                self._run_until(stop_s)
                return self.result()
            # advance() without stopping at each epoch: the same events in the same order, fewer calls.
            handle = self._handle_instant if self._speed is None else self._handle_capped
            self._queue.drain(EPS_S, self._is_live, handle)
            self._finish()
        return self.result()

    def _run_until(self, stop_s: float) -> None:
        if not (math.isfinite(stop_s) and stop_s >= 0):
            raise ConfigError(f"stop_s must be a finite number >= 0, got {stop_s!r}")
        while self.next_event_s() <= stop_s:
            self.step()
        pending = math.isfinite(self.next_event_s())
        end = stop_s if pending else min(max(self._horizon_s, self._last_s), stop_s)
        self._bring_clock_to(max(end, self._last_s))
        self._end_s = self._last_s
        self._finished = True

    def waiting_without_events(self) -> tuple[int, int]:
        """``(jobs waiting, free slices)`` when nothing more is pending (no event, no arrival): jobs a policy
        left waiting forever. ``(0, free slices)`` while anything is pending or no job waits."""
        st = self._state
        free = sum(1 for j in st.running if j < 0)
        if math.isfinite(self.next_event_s()) or self._in_blackout:
            return 0, free
        return len(st.waiting), free

    def result(self) -> SimResult:
        if not self._finished:
            raise RuntimeError("the simulation has not finished; run() it or advance() until False")
        n = len(self._state) + self._dropped
        return SimResult(
            energy_j=self.energy_j,
            avg_tardiness_s=self._tardiness_sum_s / n if n else 0.0,
            max_tardiness_s=self._tardiness_max_s,
            jobs=n,
            late_jobs=self._late,
            late_inference_jobs=self._late_inference,
            preemptions=self._preemptions,
            repartitions=self._repartitions,
            end_s=self._end_s,
            busy_time_s=self._busy_time_by_units(),
            blackout_s=self._blackout_s,
            records=self._records() if self._state.history is not None else None,
            unfinished_jobs=n - self._completed,
        )

    def _records(self) -> tuple[JobRecord, ...]:
        """Every job's record in the order the jobs were given (over compactions too)."""
        st = self._state
        pairs = self._done_records + list(zip(st.rows, job_records(st, range(len(st))), strict=True))
        pairs.sort(key=itemgetter(0))
        return tuple(record for _, record in pairs)

    def repartition(self, configuration: int | str | Configuration) -> bool:
        """Change the configuration at the current epoch; ``False`` (and no cost) if it is the current one."""
        config = resolve_configuration(self._gpu, configuration)
        if self._in_blackout:
            raise RuntimeError("cannot repartition during a repartition blackout")
        if config == self._config:
            return False
        now = self._now_s
        self._stop_all(now)
        self._repartitions += 1
        repartition_s = self._gpu.repartition_s
        if self._mode == "blackout":
            self._install(None)
            self._config = config
            self._in_blackout = True
            self._blackout_s += repartition_s
            self._queue.schedule(now + repartition_s, _BLACKOUT_END, config)
        else:
            st = self._state
            for j in self._present_jobs():
                st.deadline_s[j] -= repartition_s
            self._install(config)
            self._config = config
            self._reschedule(now)
            if self._speed is not None:
                if self._clock is not None:
                    self._choose_clock(now)
                self._retime(now)
        return True

    def snapshot(self) -> SimSnapshot:
        st = self._state
        now = self._now_s
        speed = self._speed[self._busy] if self._speed is not None else 1.0
        present = sorted(self._present_jobs(), key=lambda j: (st.deadline_s[j], j))
        views = []
        for j in present:
            s = st.slice_of[j]
            job = st.jobs[j]
            views.append(
                JobView(
                    job.job_id,
                    job.arrival_s,
                    st.deadline_s[j],
                    st.current_remaining(j, now, speed),
                    st.durations_s[j],
                    s if s >= 0 else None,
                    job.kind,
                    job.scaling,
                )
            )
        return SimSnapshot(
            now_s=now,
            configuration=self._config.ident,
            in_blackout=self._in_blackout,
            jobs=tuple(views),
            energy_j=self.energy_j,
            accrued_tardiness_s=self.accrued_tardiness_s,
            completed_jobs=self._completed,
            preemptions=self._preemptions,
            repartitions=self._repartitions,
            gpu=self._gpu,
            fork_arrived=self._arrived_fork_at_this_epoch(),
        )

    def _arrived_fork_at_this_epoch(self) -> Callable[[], MigSimulation]:
        """``fork(arrived_only=True)``, refused once the simulation has left the epoch it was made at."""
        epoch = self._epoch_key()

        def fork_arrived() -> MigSimulation:
            if self._epoch_key() != epoch:
                raise RuntimeError(
                    "the simulation has moved past this snapshot's epoch; fork it from a new one"
                )
            return self.fork(arrived_only=True)

        return fork_arrived

    def _epoch_key(self) -> tuple[float, int, int, int, bool]:
        return (self._now_s, self._queue.stream_position, self._completed, self._repartitions, self._finished)

    def fork(self, *, arrived_only: bool = False) -> MigSimulation:
        """An independent copy for look-ahead (the GPU, the stateless policy and what else :data:`_SHARED`
        names are shared; every other attribute is copied).

        ``arrived_only``: the copy holds only the jobs that have arrived by now (finished, running or
        waiting), not the ones still to come, so a planner that runs it on knows no more than the present;
        it may :meth:`add_job` jobs of its own (sampled arrivals) after now."""
        other = MigSimulation.__new__(MigSimulation)
        for name in MigSimulation.__slots__:
            value = getattr(self, name)
            if name not in _SHARED and name != "_queue" and hasattr(value, "copy"):
                value = value.copy()
            setattr(other, name, value)
        other._queue = self._queue.copy(stream=other._arrival_s)
        if arrived_only:
            # The jobs whose arrival has not been processed have no event in the heap yet: only their rows.
            arrived = other._queue.stream_position
            other._state.forget_jobs_from(arrived)
            other._queue.truncate_stream(arrived)
        return other

    # ------------------------------------------------------------------ driving API (a GPU of a cluster)
    # A cluster gives a GPU its jobs as they are placed (add_job), steps it instant by instant in one global
    # time order (next_event_s / probe, step), drops finished jobs from memory on long runs (compact) and
    # ends the run at the cluster's end (finish).
    @property
    def jobs_in_system(self) -> int:
        """Jobs given to the simulation and not completed (not arrived yet, waiting or running)."""
        return len(self._arrival_s) + self._dropped - self._completed

    @property
    def completed_jobs(self) -> int:
        """Jobs completed so far."""
        return self._completed

    @property
    def total_tardiness_s(self) -> float:
        """Sum of the tardiness of the completed jobs (s)."""
        return self._tardiness_sum_s

    @property
    def pending_arrivals(self) -> int:
        """Jobs given whose arrival the simulation has not processed yet."""
        return len(self._arrival_s) - self._queue.stream_position

    @property
    def clock_level(self) -> int:
        """Index of the clock level in force (0 without a clock governor)."""
        return self._level

    def time_by_clock_level(self) -> tuple[float, ...]:
        """Seconds spent at each clock level of the governor so far (one level without a governor)."""
        states = self._states
        levels = len(self._busy_time) // states
        used = self._levels_used
        return tuple(
            sum(self._busy_time[level * states : (level + 1) * states]) if level in used else 0.0
            for level in range(levels)
        )

    def add_job(self, job: Job, arrival_s: float | None = None) -> int:
        """Give the simulation one more job, arriving at ``arrival_s`` (default ``job.arrival_s``; never
        before the last arrival given nor the clock). Returns its rank (the next one, so the tie-break
        "earlier arrival, then row" becomes "earlier arrival, then the order jobs were given"). Tardiness
        counts against ``job.deadline_s``."""
        if self._finished:
            raise RuntimeError("cannot add a job to a finished simulation")
        if arrival_s is None:
            arrival_s = job.arrival_s
        if not (math.isfinite(arrival_s) and arrival_s >= 0.0):
            raise ValueError(f"arrival time must be a finite number >= 0, got {arrival_s!r}")
        st = self._state
        durations = job.durations_for(self._gpu.compute_sizes)
        j = len(self._arrival_s)
        if len(st.jobs) != j:
            raise AssertionError("the arrival stream and the job table disagree")  # an engine bug
        self._queue.append_stream(float(arrival_s))  # raises (and adds nothing) when out of order
        kind = job.kind
        st.append(
            job,
            j + self._dropped,
            job.deadline_s,
            durations,
            int(kind is JobKind.INFERENCE),
            self._kind_weight[kind],
        )
        reference = st.job_reference_s
        if self._reference and len(reference) == j:  # values of the configuration in force: extend them
            value = self._policy.on_configuration(OneJobView(st, job.deadline_s, durations))
            if not isinstance(reference, list):
                st.job_reference_s = reference = list(reference)
            reference.append(value[0] if value else math.nan)
        return j

    def next_event_s(self, limit: float = math.inf) -> float:
        """Time of the next instant (its first live event or arrival), ``inf`` when nothing is pending.

        ``limit``: the earliest time a job may still be added; stale events after it are kept (see
        :meth:`wattsched.sim.EventQueue.peek_live_time`), so the value may be early: peek again later."""
        return self._queue.peek_live_time(self._is_live, limit)

    @property
    def next_event_certain(self) -> bool:
        """Whether the last :meth:`next_event_s` returned a live event's or an arrival's time."""
        return self._queue.peeked_live

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
            len(self._arrival_s) + self._dropped - self._completed,
            len(self._arrival_s) - queue.stream_position,
            self._busy % self._states,
            free,
        )

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
        :meth:`finished_jobs` unless ``keep`` is false); the rest are renumbered in the same order (job
        ranks, waiting keys, queued events and the arrival stream alike), so every comparison the engine and
        its policies make between two kept jobs has the same outcome: nothing else changes. Returns how many
        were dropped."""
        st = self._state
        slice_of = st.slice_of
        n = len(slice_of)
        keep_ranks = [j for j in range(n) if slice_of[j] != DONE]
        dropped = n - len(keep_ranks)
        if not dropped:
            return 0
        done = [j for j in range(n) if slice_of[j] == DONE]
        if keep:
            self._finished_jobs.extend_from(st, done)
        if st.history is not None:
            self._done_records.extend(zip([st.rows[j] for j in done], job_records(st, done), strict=True))
        new_index = [-1] * n
        for new, old in enumerate(keep_ranks):
            new_index[old] = new
        arrived = self._queue.stream_position
        position = sum(1 for j in keep_ranks if j < arrived)

        def payload(event: Event) -> object:
            if event[1] == _BLACKOUT_END:
                return event[3]  # a configuration, not a job
            new = new_index[event[3]]
            return new if new >= 0 else None  # a finished job's events are stale: dropped

        stream = [self._arrival_s[j] for j in keep_ranks]
        self._queue.remap(payload, stream, position)
        self._arrival_s = stream
        st.keep_jobs(keep_ranks, new_index)
        self._dropped += dropped
        return dropped

    def finished_jobs(self) -> FinishedJobs:
        """Outcomes of every completed job so far (arrays by completion batch; see :class:`FinishedJobs`)."""
        out = self._finished_jobs.copy()
        st = self._state
        out.extend_from(st, [j for j, code in enumerate(st.slice_of) if code == DONE])
        return out

    # ------------------------------------------------------------------ observed events (a real GPU's model)
    # A controller of a real GPU keeps a simulation as its model of the present: it reports what really
    # happened, in time order, and asks for the decision. Nothing below runs in a plain simulation.
    def observe_arrival(self, job: Job, at_s: float | None = None) -> int:
        """A job arrived at ``at_s`` (default ``job.arrival_s``; an arrival dated before the model's clock
        counts from the clock). Returns its rank. It is handled at the next :meth:`decide`."""
        at = job.arrival_s if at_s is None else at_s
        last = self._arrival_s[-1] if self._arrival_s else 0.0
        return self.add_job(job, max(float(at), self._queue.now, last))

    def observe_completion(self, rank: int, at_s: float) -> None:
        """Running job ``rank`` really finished at ``at_s`` (earlier or later than predicted); handled at the
        next :meth:`decide`, with every event before it in time order."""
        st = self._state
        if st.slice_of[rank] < 0:
            raise ValueError(f"job rank {rank} is not running in the model; report its start first")
        at = max(float(at_s), self._queue.now)
        if st.finish_s[rank] != at:
            st.finish_s[rank] = at
            self._queue.schedule(at, _COMPLETION, rank)
        self._observed_done.add(rank)

    def observe_start(
        self, rank: int, slice_index: int, at_s: float, *, remaining: float | None = None
    ) -> None:
        """Job ``rank`` really runs on slice ``slice_index`` from ``at_s``. Nothing changes when the model
        already runs it there (its planned start stands); otherwise it is placed there at ``at_s`` (with
        ``remaining`` of its work left, a fraction in (0, 1], when given), a job the model had planned on that
        slice goes back to waiting (not a preemption: it never ran for real) and the next :meth:`decide`
        re-plans."""
        st = self._state
        if remaining is not None and not 0.0 < remaining <= 1.0:
            raise ValueError(f"remaining must be a fraction in (0, 1], got {remaining!r}")
        if not 0 <= slice_index < len(st.running):
            raise ValueError(f"slice {slice_index} is not one of the {len(st.running)} slices in force")
        if st.slice_of[rank] == slice_index:
            return
        if st.slice_of[rank] in (DONE, NOT_ARRIVED):
            raise ValueError(f"job rank {rank} has not arrived or has finished; it cannot start")
        at = self._observed_clock(at_s)
        old = st.running
        new = list(old)
        stopped = []
        for s in (slice_index, st.slice_of[rank]):
            if s >= 0 and old[s] >= 0:
                self._stop(old[s], s, at, preemption=False)
                stopped.append(old[s])
                new[s] = -1
        before = list(new)
        new[slice_index] = rank
        if remaining is not None:
            st.remaining[rank] = remaining
        self._busy = self._start_moved(new, before, at, self._busy)  # starts ``rank`` alone
        st.running = new
        for j in stopped:
            if st.slice_of[j] == STOPPED:
                self._enqueue(j, at)
        self._replan_due = True

    def pin(self, rank: int) -> None:
        """Job ``rank``, whenever it runs, stays on its slice: a real job that cannot be preempted (a job
        that takes no checkpoint, or preemption off). A policy decision that moves it is applied with the job
        kept where it runs: the job the policy put in its place takes the pinned job's planned slot (or
        waits, where the policy gave the pinned job none). Nothing else of the decision changes; a
        repartition of the model is not held back (the real one waits for or requeues the job by its own
        rules)."""
        if not 0 <= rank < len(self._state.slice_of):
            raise ValueError(f"no job rank {rank}")
        self._pinned.add(rank)

    def observe_requeue(self, rank: int, at_s: float, remaining: float | None = None) -> None:
        """Job ``rank`` was taken off its slice at ``at_s`` and waits again (one preemption), with
        ``remaining`` of its work left (a fraction in (0, 1]; default: the model's own progress)."""
        st = self._state
        if remaining is not None and not 0.0 < remaining <= 1.0:
            raise ValueError(f"remaining must be a fraction in (0, 1], got {remaining!r}")
        if st.slice_of[rank] in (DONE, NOT_ARRIVED):
            raise ValueError(f"job rank {rank} has not arrived or has finished; it cannot be requeued")
        at = self._observed_clock(at_s)
        s = st.slice_of[rank]
        if s >= 0:
            self._stop(rank, s, at)
            st.running = [-1 if k == s else j for k, j in enumerate(st.running)]
        else:
            self._dequeue(rank)
        if remaining is not None:
            st.remaining[rank] = remaining
        self._enqueue(rank, at)
        self._replan_due = True

    def observe_cancel(self, rank: int, at_s: float) -> None:
        """Job ``rank`` left without finishing its work (cancelled, failed): a waiting job leaves the queue
        and is counted as completed at ``at_s``; a running one as :meth:`observe_completion`."""
        st = self._state
        if st.slice_of[rank] >= 0:
            self.observe_completion(rank, at_s)
            return
        if st.slice_of[rank] != WAITING:
            raise ValueError(f"job rank {rank} is not waiting or running; it cannot be cancelled")
        at = self._observed_clock(at_s)
        self._dequeue(rank)
        st.slice_of[rank] = DONE
        st.completed_at_s[rank] = at
        st.deadline_s[rank] = max(st.deadline_s[rank], at)  # a cancelled job is never late
        self._completed += 1
        self._replan_due = True

    def observe_clock_level(self, level: int, at_s: float) -> None:
        """The GPU's clock was set to ``level`` (an index into the clock governor's levels) at ``at_s``: the
        running jobs' progress up to then counts at the old level's speed, their completions are re-timed at
        the new one (a reported completion stands). Needs a governor (``clock=``); the governor's own choice
        at a later decision replaces this level, so a controller that sets the clock itself gives a governor
        that keeps the level it was told."""
        if self._clock is None:
            raise ValueError("this simulation has no clock levels (it was made without clock=)")
        levels = len(self._clock.speed)
        if isinstance(level, bool) or not 0 <= level < levels:
            raise ValueError(f"clock level {level!r} is not one of the governor's {levels} levels")
        at = self._observed_clock(at_s)
        if level == self._level:
            return
        self._busy += (level - self._level) * self._states
        self._level = level
        self._levels_used.add(level)
        self._retime(at)

    @property
    def overdue_s(self) -> float:
        """How much later than now an overdue job is assumed to end (s; default :data:`OVERDUE_S`)."""
        return self._overdue_s

    @overdue_s.setter
    def overdue_s(self, seconds: float) -> None:
        if not (math.isfinite(seconds) and seconds > 0.0):
            raise ValueError(f"overdue_s must be a finite number > 0, got {seconds!r}")
        self._overdue_s = float(seconds)

    def decide(self, at_s: float) -> Assignment:
        """The job rank on each slice (``-1``: idle) once everything up to ``at_s`` is handled: the model's
        own events (timers, repartition ends) and what was reported. Report every event up to ``at_s``
        first. A running job not reported finished by its predicted time is *overdue*: the model assumes it
        ends :attr:`overdue_s` later, and assumes so again at each call while it runs."""
        self._advance_observed(float(at_s), before=False)
        if self._replan_due and not self._finished:
            self._replan_due = False
            at = max(float(at_s), self._queue.now)
            self._bring_clock_to(at)
            if not self._in_blackout:
                self._reschedule(at)
            if self._speed is not None:
                if self._clock is not None:
                    self._choose_clock(at)
                self._retime(at)
        return Assignment(self._state.running)

    def duration_on(self, rank: int, slice_index: int) -> float:
        """Run time of job ``rank`` alone on slice ``slice_index`` of the configuration in force (s)."""
        st = self._state
        return st.durations_s[rank][st.slice_duration_index[slice_index]]

    def predicted_completions(self) -> dict[int, float]:
        """Predicted completion time of every running job, by rank."""
        st = self._state
        return {j: st.finish_s[j] for j in st.running if j >= 0}

    def _observed_clock(self, at_s: float) -> float:
        """Handle the instants before ``at_s`` and move the clock there; returns the time an observation made
        now takes effect (never before the clock)."""
        self._advance_observed(float(at_s), before=True)
        at = max(float(at_s), self._queue.now)
        self._bring_clock_to(at)
        return at

    def _advance_observed(self, t: float, *, before: bool) -> None:
        """Process the instants that start before ``t`` (and at ``t`` unless ``before``), never completing a
        job whose completion was not reported: one predicted before ``t`` is overdue (see :meth:`decide`)."""
        while not self._finished:
            self._retime_overdue(t, inclusive=not before)
            next_s = self._queue.peek_live_time(self._is_live)
            if next_s > t or (before and next_s >= t):
                return
            self.step()

    def _retime_overdue(self, t: float, *, inclusive: bool) -> None:
        """Re-plan the running jobs whose end was not reported and is predicted before ``t`` — or within the
        instant at ``t`` when it is about to be handled (``inclusive``), for a job started before it (see
        :meth:`decide`)."""
        st = self._state
        speed = self._speed[self._busy] if self._speed is not None else 1.0
        for s, j in enumerate(st.running):
            if j < 0 or j in self._observed_done:
                continue
            end_s = st.finish_s[j]
            if end_s < t or (inclusive and end_s <= t + EPS_S and st.seg_start_s[j] < t):
                end = t + self._overdue_s
                # remaining is kept as of run_start: the work left that ends the job at ``end``.
                duration = st.durations_s[j][st.slice_duration_index[s]]
                st.remaining[j] = (end - st.run_start_s[j]) * speed / duration
                st.finish_s[j] = end
                self._queue.schedule(end, _COMPLETION, j)

    def _bring_clock_to(self, t: float) -> None:
        """Move the clock to ``t`` between instants (busy time and, with speeds, progress brought to it)."""
        if t == self._last_s:
            return
        self._queue.advance_to(t)
        if self._speed is not None:
            self._settle(t)
        self._count_busy(t - self._last_s)
        self._last_s = t
        self._now_s = t
        self._state.now_s = t

    # ------------------------------------------------------------------ internals
    def _busy_time_by_units(self) -> tuple[float, ...]:
        table = self._power_table
        if not table.per_kind and self._clock is None:
            return tuple(self._busy_time)
        out = [0.0] * (table.units + 1)
        states = self._states
        for level in sorted(self._levels_used):
            for state, seconds in enumerate(self._busy_time[level * states : (level + 1) * states]):
                if seconds:
                    out[table.busy_units(state)] += seconds
        return tuple(out)

    def _present_jobs(self) -> list[int]:
        st = self._state
        return [j for _, j in st.waiting] + [j for j in st.running if j >= 0]

    def _install(self, config: Configuration | None) -> None:
        """Make ``config``'s slices current (``None``: no slice, during a blackout)."""
        st = self._state
        slices = config.slices if config is not None else ()
        st.install([(s.compute, s.start, s.duration_index) for s in slices])
        if slices:
            reference = self._policy.on_configuration(st)
            self._reference = reference is not None
            st.job_reference_s = reference or []
        # Keys (LLF/LALF) depend on the configuration: re-key the waiting jobs and their timers.
        entries = [j for _, j in st.waiting]
        st.waiting = []
        for j in entries:
            self._enqueue(j, st.now_s)

    def _enqueue(self, j: int, now: float) -> None:
        """Add job ``j`` to the waiting list and schedule its critical-laxity event if it has one."""
        st = self._state
        st.slice_of[j] = WAITING
        st.timer_s[j] = -1.0
        if self._in_blackout or not st.running:
            key = st.deadline_s[j]
        else:
            policy = self._policy
            key = policy.rank(st, j)
            if self._timed and st.crit_count[j] < self._max_critical_events:
                when = policy.critical_time_s(st, j, key)
                if when > now + EPS_S and when < math.inf:
                    st.timer_s[j] = when
                    self._queue.schedule(when, _TIMER, j)
        st.wkey[j] = key
        waiting = st.waiting
        # EngineState.remove_waiting's counterpart, inlined (benchmarks/bench_instructions.py --engine):
        if isinstance(waiting, list):  # short queues: one C call (see wattsched.sim.sorted_list)
            insort(waiting, (key, j))
            if len(waiting) > LARGE:
                st.waiting = BlockedSortedList(waiting)
        else:
            waiting.add((key, j))

    def _dequeue(self, j: int) -> None:
        st = self._state
        st.remove_waiting((st.wkey[j], j))

    def _stop_all(self, now: float) -> None:
        """Preempt every running job (repartition)."""
        st = self._state
        stopped = []
        for s, j in enumerate(st.running):
            if j >= 0:
                self._stop(j, s, now)
                stopped.append(j)
        st.running = [-1] * len(st.running)
        self._busy = self._level * self._states
        for j in stopped:
            self._enqueue(j, now)

    def _is_live(self, event: Event) -> bool:
        """Whether a queued completion or timer still stands (the kernel asks about stale heads)."""
        time, kind, _, j = event
        st = self._state
        if kind == _COMPLETION:
            return st.slice_of[j] >= 0 and st.finish_s[j] == time
        return kind != _TIMER or (st.slice_of[j] == WAITING and st.timer_s[j] == time)

    def step(self) -> bool | None:
        """Process the next instant (:meth:`EventQueue.handle_next`). ``None`` when nothing was pending (or
        the run is finished), else whether it was a decision epoch (an arrival or completion outside a
        blackout; a partitioner may :meth:`repartition` now)."""
        if self._finished:
            return None
        handle = self._handle_instant if self._speed is None else self._handle_capped
        return self._queue.handle_next(EPS_S, self._is_live, handle)

    def _handle_capped(self, batch: list[Event], first: int, stop: int, t: float) -> bool:
        """:meth:`_handle_instant` with speeds (power cap, clock levels): progress settled at the old state's
        speed first, completions re-timed at the new one after."""
        self._settle(t)
        epoch = self._handle_instant(batch, first, stop, t)
        if self._clock is not None:
            self._choose_clock(t)
        self._retime(t)
        return epoch

    def _handle_instant(self, batch: list[Event], first: int, stop: int, t: float) -> bool:
        """Handle an instant's events at time ``t`` in event order, then run the scheduler once.

        Returns whether it was a decision epoch (an arrival or completion outside a blackout). Speeds are
        :meth:`_handle_capped`'s."""
        self._count_busy(t - self._last_s)
        self._last_s = t
        self._now_s = t
        st = self._state
        st.now_s = t
        schedule = epoch = False
        pending = stop > first  # the instant's arrivals, handled where their event would sort
        arrival = self._arrival_s[first] if pending else math.inf
        for time, kind, _, payload in batch:
            if pending and (arrival < time or (arrival == time and kind > _ARRIVAL)):
                pending = False
                arrived = self._arrive(first, stop, t)
                schedule |= arrived
                epoch |= arrived
            if kind == _COMPLETION:
                if st.slice_of[payload] >= 0 and st.finish_s[payload] == time:
                    self._complete(payload, t)
                    schedule = epoch = True
            elif kind == _TIMER:
                if st.slice_of[payload] == WAITING and st.timer_s[payload] == time:  # else cancelled
                    st.timer_s[payload] = -1.0
                    st.crit_count[payload] += 1
                    schedule = True
            else:
                self._in_blackout = False
                self._install(payload)
                schedule = True
        if pending:
            arrived = self._arrive(first, stop, t)
            schedule |= arrived
            epoch |= arrived
        if schedule and not self._in_blackout:
            self._reschedule(t)
        return epoch

    def _arrive(self, first: int, stop: int, t: float) -> bool:
        """Enqueue jobs ``first..stop-1``; returns whether this is a decision epoch (not in a blackout)."""
        for j in range(first, stop):
            self._enqueue(j, t)
        return not self._in_blackout

    def _reschedule(self, now: float, speed: float = 1.0, *, assign: bool = True) -> None:
        """Bring the running jobs' remaining fractions up to ``now`` at ``speed``, then (``assign``) run the
        policy and apply its decision. A reschedule runs at full speed: with speeds (power cap, clock levels)
        the instant began by settling at the state's speed (:meth:`_settle`), so nothing is left to add."""
        st = self._state
        running = st.running
        if not running:
            return
        # One loop for both uses, inline here (benchmarks/bench_instructions.py --engine: a call cost ~5 %).
        remaining = st.remaining
        run_start = st.run_start_s
        durations = st.durations_s
        slice_dix = st.slice_duration_index
        s = 0  # a counter measured faster than zip()/enumerate() here (most slices are idle or up to date)
        for j in running:
            if j >= 0:
                start = run_start[j]
                if start != now:
                    remaining[j] -= (now - start) * speed / durations[j][slice_dix[s]]
                    run_start[j] = now
            s += 1  # noqa: SIM113 - see above
        if assign:
            decision = self._policy.assign(st)
            if decision is not None:
                self._apply(decision, now)

    def _settle(self, now: float) -> None:
        """With speeds (power cap, clock levels): bring every running job's progress up to ``now`` at the
        current state's speed."""
        assert self._speed is not None
        self._reschedule(now, self._speed[self._busy], assign=False)

    def _retime(self, now: float) -> None:
        """Power-cap mode: completion times of the running jobs at the current state's speed."""
        st = self._state
        assert self._speed is not None
        speed = self._speed[self._busy]
        observed = self._observed_done
        for s, j in enumerate(st.running):
            if j >= 0 and not (observed and j in observed):  # a reported completion time stands
                end = now + st.remaining[j] * st.durations_s[j][st.slice_duration_index[s]] / speed
                end = max(end, self._queue.now)
                if end != st.finish_s[j]:
                    st.finish_s[j] = end
                    self._queue.schedule(end, _COMPLETION, j)

    # ------------------------------------------------------------------ job transitions
    def _stop(self, j: int, s: int, now: float, *, preemption: bool = True) -> None:
        """Take running job ``j`` off slice ``s``: a preemption (progress kept, counted once if the job ran on
        the slice: one placed at this instant, as at a repartition, never did) or, with
        ``preemption=False``, a start the model planned that never happened for real (:meth:`observe_start`):
        its progress on the slice is undone (exactly so without a power cap or clock levels)."""
        st = self._state
        duration = st.durations_s[j][st.slice_duration_index[s]]
        if preemption:
            st.remaining[j] -= (now - st.run_start_s[j]) / duration
            if now > st.seg_start_s[j]:
                history = st.history
                if history is not None:
                    history[j].append((st.seg_start_s[j], now, self._config.ident, st.slice_start[s]))
                st.preemptions[j] += 1
                self._preemptions += 1
        else:
            st.remaining[j] += (st.run_start_s[j] - st.seg_start_s[j]) / duration
        st.run_start_s[j] = now
        st.slice_of[j] = STOPPED
        st.finish_s[j] = math.inf
        self._busy -= st.slice_compute[s] * st.weight[j]

    def _complete(self, j: int, t: float) -> None:
        st = self._state
        s = st.slice_of[j]
        if st.history is not None:
            st.history[j].append((st.seg_start_s[j], t, self._config.ident, st.slice_start[s]))
        st.running[s] = -1
        self._busy -= st.slice_compute[s] * st.weight[j]
        st.slice_of[j] = DONE
        st.remaining[j] = 0.0
        st.finish_s[j] = math.inf
        st.completed_at_s[j] = t
        self._completed += 1
        tardiness = t - st.deadline_s[j]
        if tardiness > EPS_S:
            self._tardiness_sum_s += tardiness
            self._late += 1
            self._late_inference += st.is_inference[j]
            if tardiness > self._tardiness_max_s:
                self._tardiness_max_s = tardiness

    def _apply(self, decision: Assignment, now: float) -> None:
        """Validate a policy's slice assignment and apply it (see :mod:`wattsched.mig.policies.base`).

        All stops happen before all starts, in slot order, so a job moved between slices is stopped first.
        Called only right after the running jobs' fractions were brought up to ``now``, so a stop needs no
        progress update (it would subtract exactly 0.0), which is why the stops are not :meth:`_stop`."""
        st = self._state
        old = st.running
        # One plain list: it becomes the running list (CPython indexes exact lists faster than tuple
        # subclasses).
        new = list(decision)
        if self._pinned:
            self._keep_pinned(new, old)
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
        weight = st.weight
        history = st.history
        seg_start = st.seg_start_s
        busy = self._busy
        stopped = []
        for s in range(n):
            o = old[s]
            if o >= 0 and new[s] != o:
                if now > seg_start[o]:  # a preemption only if it ran (as in :meth:`_stop`)
                    if history is not None:
                        history[o].append((seg_start[o], now, self._config.ident, st.slice_start[s]))
                    st.preemptions[o] += 1
                    self._preemptions += 1
                slice_of[o] = STOPPED
                end_s[o] = math.inf
                busy -= units[s] * weight[o]
                stopped.append(o)
        self._busy = self._start_moved(new, old, now, busy)
        st.running = new
        for j in stopped:
            if slice_of[j] == STOPPED:
                self._enqueue(j, now)
        if st.waiting and -1 in new:
            raise PolicyError("a slice is left idle while jobs wait")

    def _keep_pinned(self, new: list[int], old: list[int]) -> None:
        """Repair decision ``new`` in place so that every pinned job running in ``old`` keeps its slice
        (:meth:`pin`): the job the decision put there swaps with it."""
        pinned = self._pinned
        for s, j in enumerate(old):
            if j >= 0 and j in pinned and new[s] != j:
                planned = new.index(j) if j in new else -1
                if planned >= 0:
                    new[planned] = new[s]
                new[s] = j

    def _start_moved(self, decision: list[int], old: list[int], now: float, busy: int) -> int:
        """Start every job the decision puts on a new slice, from ``now``, with its exact completion event;
        returns the busy state."""
        st = self._state
        queue = self._queue
        schedule = queue.schedule
        floor = queue.now
        slice_of = st.slice_of
        wkey = st.wkey
        fraction = st.remaining
        durations = st.durations_s
        dix = st.slice_duration_index
        units = st.slice_compute
        weight = st.weight
        run_start = st.run_start_s
        seg_start = st.seg_start_s
        timer = st.timer_s
        end_s = st.finish_s
        s = 0  # a counter measured faster than enumerate() on these short lists
        for j in decision:
            if j >= 0 and j != old[s]:
                code = slice_of[j]
                if code == WAITING:
                    st.remove_waiting((wkey[j], j))
                    timer[j] = -1.0  # a stopped job ran, so its timer is already cleared
                elif code != STOPPED:
                    raise PolicyError(
                        f"job rank {j} assigned to slice {s} is not waiting or running once (state {code})"
                    )
                slice_of[j] = s
                run_start[j] = now
                seg_start[j] = now
                end = now + fraction[j] * durations[j][dix[s]]
                if end < floor:  # only for remainders below EPS_S: keep the queue's clock monotone
                    end = floor
                end_s[j] = end
                schedule(end, _COMPLETION, j)
                busy += units[s] * weight[j]
            elif j < -1:
                raise PolicyError(f"bad job index {j} for slice {s}")
            s += 1  # noqa: SIM113 - see above
        return busy

    def _choose_clock(self, now: float) -> None:
        """Ask the governor for the level of this decision (called after the scheduler, before re-timing)."""
        assert self._clock is not None
        level = self._clock.level_for(tightest_slack_ratio(self._state, now))
        if level != self._level:
            self._busy += (level - self._level) * self._states
            self._level = level
            self._levels_used.add(level)

    def _finish(self) -> None:
        end = max(self._horizon_s, self._last_s)
        self._count_busy(end - self._last_s)
        self._last_s = end
        self._now_s = end
        self._end_s = end
        self._finished = True


def simulate(
    jobs: Sequence[Job],
    configuration: int | str | Configuration,
    policy: str | SchedulingPolicy,
    *,
    gpu: MigGpu | str | None = None,
    horizon_s: float | None = None,
    record_jobs: bool = False,
    repartition_mode: RepartitionMode = "blackout",
    power_curve: PowerSelection = None,
    power_cap: bool = False,
    stop_s: float | None = None,
) -> SimResult:
    """Simulate ``jobs`` on a fixed configuration under an in-configuration policy.

    Args:
        jobs: the trace (:func:`wattsched.workload.generate_jobs`, :func:`wattsched.workload.read_trace`).
        configuration: an id as ``wattsched mig configs --gpu G`` lists them (A100-40GB: P1's 1..12), or
            ``"no-mig"`` for the MIG-disabled GPU.
        policy: ``edf-fs``, ``edf-ss``, ``edf-ss-restricted``, ``llf``, ``lalf`` (``POLICIES.available()``) or
            a policy object.
        gpu: a catalogue name (``a100-40gb`` default, ``a100-80gb``, ``h100-80gb``, ``h200-141gb``), a path to
            a catalogue ``.toml``, or a :class:`~wattsched.hardware.mig.MigGpu`.
        horizon_s: end of the arrival window in seconds (energy runs to ``max(horizon_s, last completion)``);
            default the last arrival.
        record_jobs: keep per-job records (``SimResult.records``).
        repartition_mode: ``blackout`` (default) or ``deadline_shift`` (only matters when repartitioning).
        power_curve: ``None`` (the GPU's default: per job kind where it declares kind curves), a curve name,
            ``"kind"``, or a mix ``{curve: weight}``.
        power_cap: model the GPU's power cap as a shared slow-down of every busy slice (default off).
        stop_s: end the run at this time even if jobs remain (default: run until every job completes).
            Jobs not completed by then count in ``unfinished_jobs`` and a warning says how many.

    Returns:
        The run's :class:`~wattsched.mig.SimResult` (energy in J, tardiness in s).

    Raises:
        wattsched.mig.policies.StarvedJobsError: the policy left jobs waiting while slices were free and
            nothing else was pending (they would wait forever); the message is the one
            :func:`~wattsched.mig.checks.check_policy` gives for it.
    """
    sim = MigSimulation(
        jobs,
        configuration,
        policy,
        gpu=gpu,
        horizon_s=horizon_s,
        record_jobs=record_jobs,
        repartition_mode=repartition_mode,
        power_curve=power_curve,
        power_cap=power_cap,
    )
    result = sim.run(stop_s)
    if result.unfinished_jobs:
        from wattsched.mig.checks import check_not_starved  # the checker's rule (it imports this module)

        check_not_starved(sim)
        warn_unfinished(result.unfinished_jobs, result.jobs, "the simulation")
    return result
