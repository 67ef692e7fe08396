"""The state of one MIG simulation's jobs and slices: a job table, the slices in force and the waiting queue.

:class:`JobTable` holds one column per fact about a job, indexed by the job's *rank* (its position in the
simulation's job order). Each column is declared once, with its type and the value a new job starts with;
appending a job, copying the table for a fork, keeping some rows (compaction) and dropping the last rows
(a fork that forgets the jobs still to arrive) are written once, over the declarations. A job's arrival
time is not a column: it is the kernel's arrival stream (:class:`~wattsched.sim.EventQueue`), which the
simulation keeps beside the table.

:class:`EngineState` is the table plus the slices of the configuration in force and the waiting queue.
Only the simulation (:mod:`wattsched.mig.simulator`) writes it. Policies read it as a
:class:`~wattsched.mig.view.SchedulerView` (this class satisfies that Protocol without copies). A job's place
is a code in ``slice_of``: a slice index (running) or one of the negative sentinels below.

The waiting queue is a sorted ``list`` of ``(key, job)`` while it is short and a
:class:`~wattsched.sim.sorted_list.BlockedSortedList` (O(log n) insert and delete) once it grows past
:data:`~wattsched.sim.sorted_list.LARGE` entries (``MigSimulation._enqueue`` and
:meth:`EngineState.remove_waiting` hide the difference). A waiting job's key never changes while it waits, so
the order is the same in both.
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from wattsched.mig.view import JobState
from wattsched.sim.sorted_list import LARGE, SMALL, BlockedSortedList

if TYPE_CHECKING:
    from wattsched.mig.results import SliceSegment
    from wattsched.workload.job import Job

__all__ = [
    "ARRIVAL",
    "BLACKOUT_END",
    "COMPLETION",
    "DONE",
    "EPS_S",
    "NOT_ARRIVED",
    "STOPPED",
    "TIMER",
    "WAITING",
    "EngineState",
    "JobTable",
    "OneJobView",
    "WaitingQueue",
]

#: Events closer than this (seconds) form one instant; tardiness below it counts as on time.
EPS_S = 1e-9

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

#: A column without a starting value: every job gives its own (``JobTable.append``).
_GIVEN = object()


def _column(start: object = _GIVEN, *, per_job_object: bool = False) -> Any:
    """Declare a column: ``start`` is a new job's value (``_GIVEN``: the job gives it); with
    ``per_job_object``, ``start`` is a factory called once per job, whose values are mutable and copied one by
    one for a fork."""
    metadata = {"start": start, "per_job_object": per_job_object}
    return dataclasses.field(default_factory=list, metadata=metadata)


@dataclass(slots=True, eq=False, repr=False)
class JobTable:
    """One column per fact about a job, by rank (see the module docstring). An optional column is ``None``
    when the run does not keep it."""

    #: The job (id, arrival, kind, scaling) as it was given.
    jobs: list[Job] = _column()
    #: The order the job was given in (its row in the trace; over compactions, counted from the first job).
    rows: list[int] = _column()
    #: Deadline used for scheduling and tardiness (shifted in ``deadline_shift`` repartition mode).
    deadline_s: list[float] = _column()
    #: Run time alone on each of the GPU's compute sizes, then on the MIG-disabled GPU.
    durations_s: list[tuple[float, ...]] = _column()
    #: 1 for a job of kind ``inference`` (counted among late inference jobs), else 0.
    is_inference: list[int] = _column()
    #: Busy-state increment per compute slice the job runs on (1 unless power is per job kind).
    weight: list[int] = _column()
    #: Remaining fraction of the work, as of ``run_start_s`` for a running job.
    remaining: list[float] = _column(1.0)
    #: A slice index (running) or ``WAITING`` / ``DONE`` / ``NOT_ARRIVED`` / ``STOPPED``.
    slice_of: list[int] = _column(NOT_ARRIVED)
    #: Time of a running job's completion event (``inf`` otherwise).
    finish_s: list[float] = _column(math.inf)
    #: When ``remaining`` was last brought up to date.
    run_start_s: list[float] = _column(0.0)
    #: When the job started on its current slice (a stretch of the records).
    seg_start_s: list[float] = _column(0.0)
    completed_at_s: list[float] = _column(math.nan)
    preemptions: list[int] = _column(0)
    #: Critical-laxity events the job has had while waiting.
    crit_count: list[int] = _column(0)
    #: Time of the waiting job's critical-laxity event (-1: none).
    timer_s: list[float] = _column(-1.0)
    #: The job's key in the waiting queue.
    wkey: list[float] = _column(0.0)
    #: The stretches the job ran (``record_jobs``; ``None``: not recorded).
    history: list[list[SliceSegment]] | None = _column(list, per_job_object=True)

    def __len__(self) -> int:
        return len(self.deadline_s)

    def fill(self, record: bool) -> None:
        """Give every column not given yet (empty) its starting value for each of the given jobs; the
        ``history`` column only when ``record``."""
        n = len(self.deadline_s)
        for name, start, per_job_object in _COLUMNS:
            column = getattr(self, name)
            if name == "history" and not record:
                setattr(self, name, None)
            elif len(column) == n:
                continue
            elif start is _GIVEN or column:
                raise ValueError(f"column {name!r} has {len(column)} rows, not {n}")
            else:
                setattr(self, name, [start() for _ in range(n)] if per_job_object else [start] * n)

    def append(
        self,
        jobs: Job | None,
        rows: int,
        deadline_s: float,
        durations_s: tuple[float, ...],
        is_inference: int,
        weight: int,
    ) -> None:
        """One more job: the columns it gives (every column declared without a starting value, in declaration
        order: the parameters), the starting value in the others."""
        # Appends by C-level map, the given values as a tuple rather than keywords (a cluster appends once per
        # job placed: benchmarks/bench_cluster.py --cost).
        given = (jobs, rows, deadline_s, durations_s, is_inference, weight)
        _consume(map(list.append, _given_columns(self), given))
        _consume(map(list.append, _started_columns(self), _STARTS))
        for name, factory in _PER_JOB_OBJECTS:
            column = getattr(self, name)
            if column is not None:
                column.append(factory())

    def copy_columns_to(self, other: JobTable) -> None:
        """Give ``other`` an independent copy of every column (and of every per-job object in them)."""
        for name, _, per_job_object in _COLUMNS:
            column = getattr(self, name)
            if column is not None:
                column = [cell.copy() for cell in column] if per_job_object else column.copy()
            setattr(other, name, column)

    def keep_rows(self, keep: Sequence[int]) -> None:
        """Keep only rows ``keep`` (ascending), renumbered ``0..len(keep)-1`` in the same order."""
        for name, _, _ in _COLUMNS:
            column = getattr(self, name)
            if column is not None:
                setattr(self, name, [column[j] for j in keep])

    def truncate(self, rows: int) -> None:
        """Drop every row from ``rows`` on."""
        for name, _, _ in _COLUMNS:
            column = getattr(self, name)
            if column is not None:
                del column[rows:]


#: ``(name, starting value, per_job_object)`` of every column, in declaration order.
_COLUMNS: tuple[tuple[str, Any, bool], ...] = tuple(
    (f.name, f.metadata["start"], f.metadata["per_job_object"]) for f in dataclasses.fields(JobTable)
)
COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _COLUMNS)
_GIVEN_NAMES = tuple(name for name, start, _ in _COLUMNS if start is _GIVEN)
_STARTED = tuple(
    (name, start) for name, start, per_job_object in _COLUMNS if start is not _GIVEN and not per_job_object
)
_given_columns = attrgetter(*_GIVEN_NAMES)
_APPEND_PARAMETERS = JobTable.append.__code__.co_varnames[1 : 1 + len(_GIVEN_NAMES)]
if _APPEND_PARAMETERS != _GIVEN_NAMES:  # pragma: no cover - a column added without its parameter
    raise AssertionError("JobTable.append's parameters must be the given columns, in declaration order")
_started_columns = attrgetter(*(name for name, _ in _STARTED))
_STARTS = tuple(start for _, start in _STARTED)
_PER_JOB_OBJECTS = tuple((name, start) for name, start, per_job_object in _COLUMNS if per_job_object)
_consume = deque[object](maxlen=0).extend


class EngineState(JobTable):
    """The job table plus the slices in force and the waiting queue (see
    :class:`~wattsched.mig.view.SchedulerView` for what each means to a policy)."""

    __slots__ = (
        "duration_indices",
        "job_reference_s",
        "now_s",
        "running",
        "scan_order",
        "slice_compute",
        "slice_duration_index",
        "slice_start",
        "waiting",
    )

    def __init__(self, *, record: bool, **columns: list[Any]) -> None:
        """A state of the jobs given as ``columns`` (every column declared without a starting value, one
        entry per job), none arrived yet; ``record``: keep every job's stretches (``history``)."""
        for name in COLUMN_NAMES:
            setattr(self, name, columns.pop(name, []))
        if columns:
            raise TypeError(f"not a column of the job table: {sorted(columns)}")
        self.fill(record)
        self.now_s = 0.0
        self.waiting: WaitingQueue = []
        self.slice_compute: list[int] = []
        self.slice_duration_index: list[int] = []
        self.slice_start: list[int] = []
        self.scan_order: list[int] = []
        self.duration_indices: tuple[int, ...] = ()
        self.running: list[int] = []
        #: What the policy's ``on_configuration`` returned for the configuration in force: empty, or one
        #: value per job.
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
        self.keep_rows(keep)
        if self.job_reference_s:
            reference = self.job_reference_s
            self.job_reference_s = [reference[j] for j in keep]
        self.running = [new_index[j] if j >= 0 else -1 for j in self.running]
        entries = [(key, new_index[j]) for key, j in self.waiting]  # a monotone renumbering keeps the order
        self.waiting = entries if len(entries) <= LARGE else BlockedSortedList(entries)

    def forget_jobs_from(self, rank: int) -> None:
        """Drop jobs ``rank`` and later, none of which has arrived (nothing else refers to them)."""
        self.truncate(rank)
        if len(self.job_reference_s) > rank:
            self.job_reference_s = list(self.job_reference_s[:rank])

    def copy(self) -> EngineState:
        """An independent copy (for look-ahead forks): no list is shared with this state."""
        other = EngineState.__new__(EngineState)
        self.copy_columns_to(other)
        for name in EngineState.__slots__:
            value = getattr(self, name)
            setattr(other, name, value.copy() if isinstance(value, list | BlockedSortedList) else value)
        return other

    def remove_waiting(self, item: tuple[float, int]) -> None:
        """Delete ``(key, job)`` from the waiting queue (back to a list once it is short again)."""
        waiting = self.waiting
        if isinstance(waiting, list):
            del waiting[bisect_left(waiting, item)]
        else:
            waiting.remove(item)
            if len(waiting) < SMALL:
                self.waiting = list(waiting)

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


class OneJobView:
    """The engine's view with one job's columns only: a policy's ``on_configuration`` computes that job's
    per-job value from it when the job is added (it must derive each job's value from that job's data
    alone)."""

    __slots__ = ("_state", "deadline_s", "durations_s", "finish_s", "remaining")

    def __init__(self, state: EngineState, deadline_s: float, durations_s: tuple[float, ...]) -> None:
        self._state = state
        self.deadline_s = [deadline_s]
        self.durations_s = [durations_s]
        self.remaining = [1.0]
        self.finish_s = [math.inf]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)
