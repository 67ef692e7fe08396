"""Event-driven, preemptive simulator of one MIG GPU (CONTRACT §4, papers.md §A.5.1).

Events: job arrival, job completion, critical-laxity timer and repartition end, kept in the domain-blind
:class:`~wattsched.sim.EventQueue`. Events closer than :data:`EPS_S` are one *instant*: the simulator
processes all of them, then runs the scheduler once. A job that ran ``Δ`` on a slice with duration
``dur`` loses ``Δ/dur`` of its work; a completion event sits at ``start + remaining·dur`` exactly. Energy is
the piecewise-constant integral of ``P(u)``, ``u`` = compute units of busy slices, from 0 to
``end_s = max(horizon_s, last event)``.

Repartitioning (:meth:`MigSimulation.repartition`) preempts every running job, each counting one preemption
(the MIG instance it ran on is destroyed). ``repartition_mode="blackout"`` (default, papers.md §A.2.4):
no slice exists for ``profile.repartition_s`` seconds, the GPU draws ``P(0)``, arrivals wait, then the new
configuration exists and the scheduler runs at once. ``"deadline_shift"`` (the SMART-MIG alternative): the
change is instantaneous, and the deadline of every arrived, unfinished job is reduced by ``repartition_s``,
for scheduling and for tardiness alike (later arrivals are not shifted).
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left, insort
from collections.abc import Sequence
from heapq import heappop
from typing import Literal

from wattsched.errors import ConfigError
from wattsched.hardware.mig import Configuration, MigProfile, default_profile
from wattsched.mig import _apply
from wattsched.mig._results import JobView, SimResult, SimSnapshot, build_records
from wattsched.mig.policies import POLICIES, SchedulingPolicy
from wattsched.mig.state import WAITING, MigState
from wattsched.sim import EventQueue
from wattsched.sim.kernel import Event
from wattsched.workload.job import Job, JobKind

__all__ = ["EPS_S", "MigSimulation", "RepartitionMode", "resolve_configuration", "resolve_policy", "simulate"]

#: Events closer than this (seconds) form one instant; tardiness below it counts as on time.
EPS_S = 1e-9
_COMPLETION, _BLACKOUT_END, _ARRIVAL, _TIMER = 0, 1, 2, 3
RepartitionMode = Literal["blackout", "deadline_shift"]


def resolve_configuration(profile: MigProfile, configuration: int | str | Configuration) -> Configuration:
    """A :class:`Configuration` from an id (1..12, ``"no-mig"``) or a configuration object."""
    if isinstance(configuration, Configuration):
        return configuration
    return profile.configuration(configuration)


def resolve_policy(policy: str | SchedulingPolicy) -> SchedulingPolicy:
    """A policy object from a registry name (see ``POLICIES.available()``) or a policy object."""
    return POLICIES.make(policy) if isinstance(policy, str) else policy


class MigSimulation:
    """One simulation run, steppable decision epoch by decision epoch (for repartitioning and RL)."""

    def __init__(
        self,
        jobs: Sequence[Job],
        configuration: int | str | Configuration,
        policy: str | SchedulingPolicy,
        *,
        profile: MigProfile | None = None,
        horizon_s: float | None = None,
        record_jobs: bool = False,
        repartition_mode: RepartitionMode = "blackout",
    ) -> None:
        if repartition_mode not in ("blackout", "deadline_shift"):
            raise ConfigError(
                f"unknown repartition_mode '{repartition_mode}'; valid: blackout, deadline_shift"
            )
        self._profile = profile if profile is not None else default_profile()
        self._policy = resolve_policy(policy)
        # Read once: the policy is stateless, and these are consulted at every enqueue.
        self._timed = self._policy.critical_laxity_s is not None
        self._max_critical_events = self._policy.max_critical_events
        self._mode = repartition_mode
        arrivals = [j.arrival_s for j in jobs]
        if all(map(operator.le, arrivals, arrivals[1:])):
            order = list(range(len(jobs)))  # already in (arrival, row) order, as generated traces are
        else:
            order = sorted(range(len(jobs)), key=lambda i: (arrivals[i], i))
            arrivals = [arrivals[i] for i in order]
        self._jobs = [jobs[i] for i in order]
        self._rows = order
        self._arrival_s = arrivals
        self._state = MigState(
            [j.deadline_s for j in self._jobs], [tuple(j.durations_s) for j in self._jobs], record_jobs
        )
        self._inference = [int(job.kind == JobKind.INFERENCE) for job in self._jobs]
        last_arrival = self._jobs[-1].arrival_s if self._jobs else 0.0
        self._horizon_s = float(horizon_s) if horizon_s is not None else last_arrival
        self._queue = EventQueue()
        #: Arrivals are merged from the sorted list (see _next_instant): the next job to arrive.
        self._next_arrival = 0
        self._power_w = self._profile.power_w
        self._busy_time = [0.0] * len(self._power_w)
        self._units = 0
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
        self._config = resolve_configuration(self._profile, configuration)
        self._install(self._config)

    # ------------------------------------------------------------------ public stepping API
    @property
    def now_s(self) -> float:
        return self._now_s

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
        """Energy consumed so far (up to ``now_s``; up to ``end_s`` once finished)."""
        return sum(p * t for p, t in zip(self._power_w, self._busy_time, strict=True))

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
        while (epoch := self._next_instant()) is not None:
            if epoch:
                return True
        self._finish()
        return False

    def run(self) -> SimResult:
        """Run to the end without further repartitions and return the result."""
        if not self._finished:
            # advance() without stopping at each epoch: the same events in the same order, fewer calls.
            while self._next_instant() is not None:
                pass
            self._finish()
        return self.result()

    def result(self) -> SimResult:
        if not self._finished:
            raise RuntimeError("the simulation has not finished; run() it or advance() until False")
        n = len(self._jobs)
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
            busy_time_s=tuple(self._busy_time),
            blackout_s=self._blackout_s,
            records=build_records(self._jobs, self._rows, self._state, EPS_S)
            if self._state.history is not None else None,
        )

    def repartition(self, configuration: int | str | Configuration) -> bool:
        """Change the configuration at the current epoch; ``False`` (and no cost) if it is the current one."""
        config = resolve_configuration(self._profile, configuration)
        if self._in_blackout:
            raise RuntimeError("cannot repartition during a repartition blackout")
        if config == self._config:
            return False
        now = self._now_s
        self._stop_all(now)
        self._repartitions += 1
        if self._mode == "blackout":
            self._install(None)
            self._config = config
            self._in_blackout = True
            self._blackout_s += self._profile.repartition_s
            self._queue.schedule(now + self._profile.repartition_s, _BLACKOUT_END, config)
        else:
            st = self._state
            for j in self._present_jobs():
                st.deadline_s[j] -= self._profile.repartition_s
            self._install(config)
            self._config = config
            self._reschedule(now)
        return True

    def snapshot(self) -> SimSnapshot:
        st = self._state
        now = self._now_s
        present = sorted(self._present_jobs(), key=lambda j: (st.deadline_s[j], j))
        views = []
        for j in present:
            s = st.slice_of[j]
            job = self._jobs[j]
            views.append(JobView(job.job_id, job.arrival_s, st.deadline_s[j], st.current_fraction(j, now),
                                 st.durations_s[j], s if s >= 0 else None))
        return SimSnapshot(
            now_s=now, configuration=self._config.ident, in_blackout=self._in_blackout, jobs=tuple(views),
            energy_j=self.energy_j, accrued_tardiness_s=self.accrued_tardiness_s,
            completed_jobs=self._completed, preemptions=self._preemptions, repartitions=self._repartitions,
        )

    def fork(self) -> MigSimulation:
        """An independent copy for look-ahead (jobs, profile and the stateless policy are shared)."""
        other = MigSimulation.__new__(MigSimulation)
        other.__dict__.update(self.__dict__)
        other._state = self._state.copy()
        other._queue = self._queue.copy()
        other._busy_time = self._busy_time.copy()
        return other

    # ------------------------------------------------------------------ internals
    def _present_jobs(self) -> list[int]:
        st = self._state
        return [j for _, j in st.waiting] + [j for j in st.job_on if j >= 0]

    def _install(self, config: Configuration | None) -> None:
        """Make ``config``'s slices current (``None``: no slice, during a blackout)."""
        st = self._state
        slices = config.slices if config is not None else ()
        st.slice_units = [s.compute_units for s in slices]
        st.slice_dix = [s.duration_index for s in slices]
        st.slice_slot = [s.first_slot for s in slices]
        st.scan_order = sorted(range(len(slices)), key=lambda s: (st.slice_units[s], st.slice_slot[s]))
        st.config_dixes = tuple(sorted(set(st.slice_dix)))
        st.job_on = [-1] * len(slices)
        st.policy_memo = {}
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
        if self._in_blackout or not st.job_on:
            key = st.deadline_s[j]
            st.wkey[j] = key
        else:
            policy = self._policy
            key = policy.waiting_key(st, j)
            st.wkey[j] = key  # before critical_time_s, which may read it (see MigState)
            if self._timed and st.crit_count[j] < self._max_critical_events:
                when = policy.critical_time_s(st, j)
                if when > now + EPS_S and when < math.inf:
                    st.timer_s[j] = when
                    self._queue.schedule(when, _TIMER, j)
        insort(st.waiting, (key, j))

    def _dequeue(self, j: int) -> None:
        st = self._state
        waiting = st.waiting
        i = bisect_left(waiting, (st.wkey[j], j))
        del waiting[i]

    def _stop_all(self, now: float) -> None:
        """Preempt every running job (repartition)."""
        st = self._state
        stopped = []
        for s, j in enumerate(st.job_on):
            if j >= 0:
                _apply.stop_job(self, j, s, now)
                stopped.append(j)
        st.job_on = [-1] * len(st.job_on)
        self._units = 0
        for j in stopped:
            self._enqueue(j, now)

    def _next_instant(self) -> bool | None:
        """Process the next instant: the first live event and every event at most EPS_S after it.

        Returns ``None`` when no event is left, else whether the instant was a decision epoch. Cancelled
        completions and timers at the head of the queue are discarded first, so they never move the clock.
        Arrivals are not in the queue: they are merged from the sorted arrival list as if each were an event
        ``(arrival_s, _ARRIVAL)``, so only stale events ordered before the next arrival are dropped (later
        ones may fall inside its instant, exactly as if the arrival sat in the heap)."""
        heap = self._queue._heap  # popped directly: events come in (time, priority, seq) order
        st = self._state
        arrivals = self._arrival_s
        first = self._next_arrival
        arrival = arrivals[first] if first < len(arrivals) else math.inf
        while heap:
            time, kind, _, j = heap[0]
            if time > arrival or (time == arrival and kind > _ARRIVAL):
                break  # the next arrival comes first
            if kind == _COMPLETION:
                if st.slice_of[j] >= 0 and st.end_s[j] == time:
                    break
            elif kind != _TIMER or (st.slice_of[j] == WAITING and st.timer_s[j] == time):
                break
            heappop(heap)
        else:
            if arrival == math.inf:
                return None
        limit = (heap[0][0] if heap and heap[0][0] <= arrival else arrival) + EPS_S
        batch = []
        while heap and heap[0][0] <= limit:
            batch.append(heappop(heap))
        stop = first
        while stop < len(arrivals) and arrivals[stop] <= limit:
            stop += 1
        self._next_arrival = stop
        # The instant is the latest of its events (stale ones included), so no job starts before it arrives.
        t = batch[-1][0] if batch else -math.inf
        if stop > first and arrivals[stop - 1] > t:
            t = arrivals[stop - 1]
        return self._handle_instant(batch, first, stop, t)

    def _handle_instant(self, batch: list[Event], first: int, stop: int, t: float) -> bool:
        """Handle an instant's events at time ``t`` in event order, then run the scheduler once.

        Returns whether it was a decision epoch (an arrival or completion outside a blackout)."""
        self._queue.now = t
        self._busy_time[self._units] += t - self._last_s
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
                if st.slice_of[payload] >= 0 and st.end_s[payload] == time:
                    _apply.complete_job(self, payload, t)
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

    def _reschedule(self, now: float) -> None:
        st = self._state
        job_on = st.job_on
        if not job_on:
            return
        # Bring running jobs' remaining fractions up to now (inlined: this runs at every scheduling point).
        fraction = st.fraction
        run_start = st.run_start_s
        durations = st.durations_s
        slice_dix = st.slice_dix
        s = 0  # a counter measured faster than zip()/enumerate() here (most slices are idle or up to date)
        for j in job_on:
            if j >= 0:
                start = run_start[j]
                if start != now:
                    fraction[j] -= (now - start) / durations[j][slice_dix[s]]
                    run_start[j] = now
            s += 1  # noqa: SIM113 - see above
        decision = self._policy.assign(st)
        if decision is not None:
            _apply.apply_decision(self, decision, now)

    def _finish(self) -> None:
        end = max(self._horizon_s, self._last_s)
        self._busy_time[self._units] += end - self._last_s
        self._last_s = end
        self._now_s = end
        self._end_s = end
        self._finished = True


def simulate(
    jobs: Sequence[Job],
    configuration: int | str | Configuration,
    policy: str | SchedulingPolicy,
    *,
    profile: MigProfile | None = None,
    horizon_s: float | None = None,
    record_jobs: bool = False,
) -> SimResult:
    """Simulate ``jobs`` on a fixed configuration under an in-configuration policy."""
    return MigSimulation(
        jobs, configuration, policy, profile=profile, horizon_s=horizon_s, record_jobs=record_jobs
    ).run()
