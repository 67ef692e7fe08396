"""The engine's driving API for a cluster: jobs given while it runs, compaction, and a GPU-wide clock.

Kept apart from :mod:`wattsched.mig.simulator` so that module stays readable; these functions are part of the
engine and write its private state, like :mod:`wattsched.mig._apply`.

* :func:`add_job`: one more job, appended to every per-job list (its rank is the next index, so the CONTRACT
  tie-break "earlier arrival, then row" becomes "earlier arrival, then the order jobs were given") and to the
  kernel's arrival stream.
* :func:`compact`: drops completed jobs and renumbers the rest in the same order (job ranks, waiting keys,
  queued events and the arrival stream alike). Every comparison the engine and its policies make between two
  kept jobs has the same outcome before and after, so a compacted run is bit-identical to one that is not.
* :class:`ClockGovernor` and :func:`choose_clock`: a GPU-wide clock level. On a MIG GPU the SM clock is one
  setting for the whole GPU, so the level is chosen per scheduling decision from all running jobs: the
  governor gets the tightest *slack ratio* ``min_j (d_j − now) / (remaining time of j at the default clock)``
  and returns a level; every running job then runs at ``speed[level]`` and the busy power above idle is
  scaled by ``power_scale[level]`` (idle power is unchanged). :mod:`wattsched.cluster.clocks` builds the
  governor from P2's model.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from wattsched.hardware.power import PowerTable
from wattsched.mig._results import JobRecord, new_job_record
from wattsched.mig._state import BLACKOUT_END, DONE, NOT_ARRIVED, EngineState
from wattsched.workload.job import Job, JobKind

if TYPE_CHECKING:
    from wattsched.mig.simulator import MigSimulation
    from wattsched.sim.kernel import Event

__all__ = [
    "ClockGovernor",
    "FinishedJobs",
    "add_job",
    "choose_clock",
    "clock_tables",
    "compact",
    "finished_jobs",
    "merged_records",
]

_INFERENCE = JobKind.INFERENCE

_EPS_S = 1e-9


class ClockGovernor(Protocol):
    """Chooses a GPU-wide clock level (see the module docstring)."""

    @property
    def speed(self) -> Sequence[float]:
        """Speed of every running job at each level, relative to the default clock (1.0)."""

    @property
    def power_scale(self) -> Sequence[float]:
        """Busy power above idle at each level, relative to the default clock (1.0)."""

    @property
    def initial_level(self) -> int:
        """The level before the first decision."""

    def level_for(self, slack_ratio: float) -> int:
        """The level for the tightest slack ratio of the running jobs (``inf``: no running job)."""
        ...


@dataclass
class FinishedJobs:
    """Outcomes of completed jobs: the order each was given (``row``), completion time and tardiness (s;
    below 1 ns counts as 0), as flat arrays (8 bytes a job, for runs of millions of jobs)."""

    rows: array[int] = field(default_factory=lambda: array("q"))
    completion_s: array[float] = field(default_factory=lambda: array("d"))
    tardiness_s: array[float] = field(default_factory=lambda: array("d"))

    def copy(self) -> FinishedJobs:
        return FinishedJobs(
            array("q", self.rows), array("d", self.completion_s), array("d", self.tardiness_s)
        )

    def extend(self, rows: Sequence[int], completion_s: Sequence[float], deadline_s: Sequence[float]) -> None:
        self.rows.extend(rows)
        self.completion_s.extend(completion_s)
        for completion, deadline in zip(completion_s, deadline_s, strict=True):
            late = completion - deadline
            self.tardiness_s.append(late if late > _EPS_S else 0.0)

    def __len__(self) -> int:
        return len(self.rows)


def clock_tables(
    table: PowerTable, clock: ClockGovernor
) -> tuple[tuple[float, ...], tuple[float, ...], int]:
    """Power and speed of every (level, busy state), indexed ``level · states + state``, and the first
    level (computed once per table and governor: a cluster builds thousands of identical GPUs)."""
    # NaN (unreachable states) never equals itself: key on a NaN-free copy.
    key = (tuple(w if w == w else -1.0 for w in table.power_w), table.speed, id(clock))
    cached = _TABLES.get(key)
    if cached is not None and cached[0] is clock:
        return cached[1]
    tables = _clock_tables(table, clock)
    if len(_TABLES) >= 64:  # a bounded cache: schedules are few (one per GPU model and clock model)
        _TABLES.clear()
    _TABLES[key] = (clock, tables)
    return tables


_TABLES: dict[tuple[Any, ...], tuple[ClockGovernor, tuple[tuple[float, ...], tuple[float, ...], int]]] = {}


def _clock_tables(
    table: PowerTable, clock: ClockGovernor
) -> tuple[tuple[float, ...], tuple[float, ...], int]:
    idle = table.power_w[0]
    power: list[float] = []
    speed: list[float] = []
    for scale, level_speed in zip(clock.power_scale, clock.speed, strict=True):
        for state, watts in enumerate(table.power_w):
            power.append(watts if watts != watts else idle + (watts - idle) * scale)  # NaN: unreachable
            throttle = table.speed[state] if table.speed is not None else 1.0
            speed.append(throttle * level_speed)
    if not 0 <= clock.initial_level < len(clock.speed):
        raise ValueError(f"initial clock level {clock.initial_level} is not one of {len(clock.speed)}")
    return tuple(power), tuple(speed), clock.initial_level


def choose_clock(sim: MigSimulation, now: float) -> None:
    """Ask the governor for the level of this decision (called after the scheduler, before re-timing)."""
    st = sim._state
    ratio = math.inf
    remaining = st.remaining
    durations = st.durations_s
    slice_dix = st.slice_duration_index
    deadline = st.deadline_s
    s = 0
    for j in st.running:
        if j >= 0:
            need = remaining[j] * durations[j][slice_dix[s]]
            if need > 0.0:
                r = (deadline[j] - now) / need
                if r < ratio:
                    ratio = r
        s += 1  # noqa: SIM113 - as in the engine's loops
    assert sim._clock is not None
    level = sim._clock.level_for(ratio)
    if level != sim._level:
        sim._busy += (level - sim._level) * sim._states
        sim._level = level
        sim._levels_used.add(level)


def visited(sim: MigSimulation, values: Sequence[float]) -> Iterator[tuple[float, float]]:
    """``(value, busy time)`` of every state of the clock levels entered so far, in state order (the other
    levels have no busy time)."""
    states = sim._states
    busy = sim._busy_time
    for level in sorted(sim._levels_used):
        start = level * states
        yield from zip(values[start : start + states], busy[start : start + states], strict=True)


class _OneJobView:
    """The engine's view with one job's per-job sequences only: a policy's ``on_configuration`` computes that
    job's per-job value from it (it must derive each job's value from that job's data alone)."""

    __slots__ = ("_state", "deadline_s", "durations_s", "finish_s", "remaining")

    def __init__(self, state: EngineState, deadline_s: float, durations_s: tuple[float, ...]) -> None:
        self._state = state
        self.deadline_s = [deadline_s]
        self.durations_s = [durations_s]
        self.remaining = [1.0]
        self.finish_s = [math.inf]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)


def add_job(sim: MigSimulation, job: Job, arrival_s: float | None = None) -> int:
    """Give the simulation one more job, arriving at ``arrival_s`` (default ``job.arrival_s``; never before
    the last arrival given nor the clock). Returns its rank. Tardiness counts against ``job.deadline_s``.
    (:meth:`MigSimulation.add_job <wattsched.mig.simulator.MigSimulation.add_job>` is this function.)"""
    if sim._finished:
        raise RuntimeError("cannot add a job to a finished simulation")
    if arrival_s is None:
        arrival_s = job.arrival_s
    if not (math.isfinite(arrival_s) and arrival_s >= 0.0):
        raise ValueError(f"arrival time must be a finite number >= 0, got {arrival_s!r}")
    st = sim._state
    durations = job.durations_for(sim._gpu.compute_sizes)
    j = len(sim._jobs)
    if len(sim._arrival_s) != j:
        raise AssertionError("the arrival stream and the job list disagree")  # an engine bug
    sim._queue.append_stream(float(arrival_s))  # raises (and adds nothing) when out of order
    # One entry in every per-job list of the state (_state.PER_JOB), inline: this runs once per job.
    st.deadline_s.append(job.deadline_s)
    st.durations_s.append(durations)
    st.remaining.append(1.0)
    st.slice_of.append(NOT_ARRIVED)
    st.finish_s.append(math.inf)
    st.run_start_s.append(0.0)
    st.seg_start_s.append(0.0)
    st.completed_at_s.append(math.nan)
    st.preemptions.append(0)
    st.crit_count.append(0)
    st.timer_s.append(-1.0)
    st.wkey.append(0.0)
    if st.history is not None:
        st.history.append([])
    sim._jobs.append(job)
    sim._rows.append(j + sim._dropped)
    kind = job.kind
    sim._inference.append(int(kind is _INFERENCE))
    sim._weight.append(sim._kind_weight[kind])
    reference = st.job_reference_s
    if sim._reference and len(reference) == j:  # values of the configuration in force: extend them
        value = sim._policy.on_configuration(_OneJobView(st, job.deadline_s, durations))
        if not isinstance(reference, list):
            st.job_reference_s = reference = list(reference)
        reference.append(value[0] if value else math.nan)
    return j


def compact(sim: MigSimulation, keep_outcomes: bool = True) -> int:
    """See :meth:`MigSimulation.compact`."""
    st = sim._state
    slice_of = st.slice_of
    n = len(slice_of)
    keep = [j for j in range(n) if slice_of[j] != DONE]
    dropped = n - len(keep)
    if not dropped:
        return 0
    done = [j for j in range(n) if slice_of[j] == DONE]
    rows = sim._rows
    if keep_outcomes:
        sim._finished_jobs.extend(
            [rows[j] for j in done], [st.completed_at_s[j] for j in done], [st.deadline_s[j] for j in done]
        )
    if st.history is not None:
        sim._done_records.extend(_records_of(sim, done))
    new_index = [-1] * n
    for new, old in enumerate(keep):
        new_index[old] = new
    arrived = sim._queue.stream_position
    position = sum(1 for j in keep if j < arrived)

    def payload(event: Event) -> Any:
        if event[1] == BLACKOUT_END:
            return event[3]  # a configuration, not a job
        new = new_index[event[3]]
        return new if new >= 0 else None  # a finished job's events are stale: dropped

    stream = [sim._arrival_s[j] for j in keep]
    sim._queue.remap(payload, stream, position)
    sim._arrival_s = stream
    st.keep_jobs(keep, new_index)
    sim._jobs = [sim._jobs[j] for j in keep]
    sim._rows = [rows[j] for j in keep]
    sim._inference = [sim._inference[j] for j in keep]
    sim._weight = [sim._weight[j] for j in keep]
    sim._dropped += dropped
    return dropped


def finished_jobs(sim: MigSimulation) -> FinishedJobs:
    """See :meth:`MigSimulation.finished_jobs`."""
    out = sim._finished_jobs.copy()
    st = sim._state
    done = [j for j, code in enumerate(st.slice_of) if code == DONE]
    out.extend([sim._rows[j] for j in done], [st.completed_at_s[j] for j in done],
               [st.deadline_s[j] for j in done])
    return out


def _records_of(sim: MigSimulation, jobs: Sequence[int]) -> list[tuple[int, JobRecord]]:
    st = sim._state
    history = st.history
    assert history is not None
    out = []
    for j in jobs:
        job = sim._jobs[j]
        segments = history[j]
        tardiness = st.completed_at_s[j] - st.deadline_s[j]
        record = new_job_record(
            job.job_id,
            job.arrival_s,
            st.deadline_s[j],
            segments[0][0] if segments else math.nan,
            st.completed_at_s[j],
            tardiness if tardiness > _EPS_S else 0.0,
            st.preemptions[j],
            tuple(segments),
        )
        out.append((sim._rows[j], record))
    return out


def merged_records(sim: MigSimulation) -> tuple[JobRecord, ...]:
    """Every job's record in the order the jobs were given, after compactions."""
    pairs = sim._done_records + _records_of(sim, range(len(sim._jobs)))
    pairs.sort(key=lambda pair: pair[0])
    return tuple(record for _, record in pairs)
