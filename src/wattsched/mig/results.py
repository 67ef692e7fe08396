"""What a MIG simulation reports: its totals (:class:`SimResult`), per-job records, the snapshot a
repartitioning policy decides on, and the outcomes of jobs a long run dropped from memory."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wattsched.mig._state import EPS_S, JobTable

if TYPE_CHECKING:
    from wattsched.hardware.mig import MigGpu
    from wattsched.mig.simulator import MigSimulation
    from wattsched.workload.job import JobKind, Scaling

__all__ = [
    "FinishedJobs",
    "JobRecord",
    "JobView",
    "SimResult",
    "SimSnapshot",
    "SliceSegment",
    "UnfinishedJobsWarning",
    "job_records",
    "new_job_record",
    "warn_unfinished",
]

#: One stretch a job ran on one slice: ``(start_s, end_s, configuration id, slice start)`` (the slice's
#: memory-slot start, as NVML places it: it names the slice within its configuration).
SliceSegment = tuple[float, float, int | str, int]


@dataclass(frozen=True, slots=True)
class JobRecord:
    """What happened to one job. ``deadline_s`` is the deadline used for tardiness (shifted in
    ``deadline_shift`` mode); ``start_s`` is the first time the job ran (a placement undone at the same
    instant by a repartition is not a run: zero-length stretches are not recorded)."""

    job_id: str
    arrival_s: float
    deadline_s: float
    start_s: float
    completion_s: float
    tardiness_s: float
    preemptions: int
    slices: tuple[SliceSegment, ...]


_new_object = object.__new__
(
    _set_job_id,
    _set_arrival,
    _set_deadline,
    _set_start,
    _set_completion,
    _set_tardiness,
    _set_preemptions,
    _set_slices,
) = (getattr(JobRecord, name).__set__ for name in JobRecord.__slots__)


def new_job_record(
    job_id: str,
    arrival_s: float,
    deadline_s: float,
    start_s: float,
    completion_s: float,
    tardiness_s: float,
    preemptions: int,
    slices: tuple[SliceSegment, ...],
) -> JobRecord:
    """``JobRecord(...)`` without the frozen ``__init__``'s ``object.__setattr__`` per field: about 1.6x
    faster, which shows when a run records every job (the Table II study does; benchmarks/bench_table2.py).
    Same object, fully set."""
    record = _new_object(JobRecord)
    _set_job_id(record, job_id)
    _set_arrival(record, arrival_s)
    _set_deadline(record, deadline_s)
    _set_start(record, start_s)
    _set_completion(record, completion_s)
    _set_tardiness(record, tardiness_s)
    _set_preemptions(record, preemptions)
    _set_slices(record, slices)
    return record


def job_records(table: JobTable, ranks: Sequence[int]) -> list[JobRecord]:
    """The record of each job of ``ranks`` (finished or not; tardiness below :data:`EPS_S` counts as on
    time)."""
    history = table.history
    jobs, deadline_s, completed_at_s = table.jobs, table.deadline_s, table.completed_at_s
    preemptions = table.preemptions
    nan = math.nan
    out = []
    for j in ranks:
        job = jobs[j]
        segments = history[j] if history is not None else []
        tardiness = completed_at_s[j] - deadline_s[j]
        out.append(
            new_job_record(
                job.job_id,
                job.arrival_s,
                deadline_s[j],
                segments[0][0] if segments else nan,
                completed_at_s[j],
                tardiness if tardiness > EPS_S else 0.0,
                preemptions[j],
                tuple(segments),
            )
        )
    return out


@dataclass
class FinishedJobs:
    """Outcomes of completed jobs: the order each was given (``row``), completion time and tardiness (s;
    below :data:`EPS_S` counts as 0), as flat arrays (8 bytes a job, for runs of millions of jobs)."""

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
            self.tardiness_s.append(late if late > EPS_S else 0.0)

    def extend_from(self, table: JobTable, ranks: Sequence[int]) -> None:
        """Add the outcomes of the completed jobs ``ranks`` of ``table``."""
        self.extend(
            [table.rows[j] for j in ranks],
            [table.completed_at_s[j] for j in ranks],
            [table.deadline_s[j] for j in ranks],
        )

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True, slots=True)
class SimResult:
    """Totals of one simulation (units: s, J)."""

    energy_j: float
    avg_tardiness_s: float
    max_tardiness_s: float
    jobs: int
    late_jobs: int
    preemptions: int
    repartitions: int
    end_s: float
    #: Time spent with u = 0..U busy compute slices over [0, end_s] (sums to end_s).
    busy_time_s: tuple[float, ...]
    #: Total time without slices because of repartitions.
    blackout_s: float
    records: tuple[JobRecord, ...] | None = None
    #: Late jobs of kind ``inference`` (P1: "LLF pushes more short jobs late"), without needing records.
    late_inference_jobs: int = 0
    #: Jobs given that had not completed when the run ended (0 for every run that runs to its end; a run
    #: stopped early, ``stop_s``, leaves some). Its tardiness and ET are then not results: ET refuses them.
    unfinished_jobs: int = 0

    def metrics(self) -> dict[str, float | int]:
        """The per-run metrics every result table carries, as plain Python scalars, in a fixed order."""
        return {
            "energy_j": float(self.energy_j),
            "avg_tardiness_s": float(self.avg_tardiness_s),
            "max_tardiness_s": float(self.max_tardiness_s),
            "jobs": int(self.jobs),
            "late_jobs": int(self.late_jobs),
            "preemptions": int(self.preemptions),
            "repartitions": int(self.repartitions),
        }

    def to_dict(self) -> dict[str, float | int | list[float]]:
        """JSON-able scalars (and ``busy_time_s`` as a list); per-job records are left out."""
        return {
            **self.metrics(),
            "unfinished_jobs": int(self.unfinished_jobs),
            "end_s": self.end_s,
            "busy_time_s": list(self.busy_time_s),
            "blackout_s": self.blackout_s,
        }


class UnfinishedJobsWarning(UserWarning):
    """A run ended with jobs that never completed: its tardiness and ET describe only part of the work."""


def warn_unfinished(unfinished: int, jobs: int, what: str = "the run", stacklevel: int = 3) -> None:
    """One warning line when ``unfinished`` of ``jobs`` jobs did not complete (nothing when 0)."""
    import warnings

    if unfinished > 0:
        warnings.warn(
            f"{unfinished} of {jobs} jobs did not finish in {what}: its tardiness and ET leave them out "
            "(ET refuses such a result)",
            UnfinishedJobsWarning,
            stacklevel=stacklevel,
        )


@dataclass(frozen=True, slots=True)
class JobView:
    """An unfinished job as seen in a :class:`SimSnapshot`."""

    job_id: str
    arrival_s: float
    deadline_s: float
    remaining_fraction: float
    durations_s: tuple[float, ...]
    #: Index of the slice (in the configuration's placement order) the job runs on, or ``None`` if it waits.
    slice_index: int | None
    kind: JobKind | None = None
    scaling: Scaling | None = None

    @property
    def remaining_s(self) -> tuple[float, ...]:
        """Remaining run time alone on each compute size of the GPU, then the full GPU (``durations_s``)."""
        return tuple(self.remaining_fraction * d for d in self.durations_s)


@dataclass(frozen=True, slots=True)
class SimSnapshot:
    """Read-only state at the current epoch, for repartitioning policies and RL observations/rewards."""

    now_s: float
    #: The configuration in force (during a blackout: the one being created).
    configuration: int | str
    in_blackout: bool
    #: Arrived, unfinished jobs sorted by (deadline, arrival, row).
    jobs: tuple[JobView, ...]
    #: Energy consumed over [0, now_s].
    energy_j: float
    #: Σ over jobs of the time spent past their deadline while unfinished (up to now_s), plus completed
    #: tardiness.
    accrued_tardiness_s: float
    completed_jobs: int
    preemptions: int
    repartitions: int
    #: The simulated GPU (its configurations are the ids a partitioner may choose).
    gpu: MigGpu | None = None
    #: A copy of the simulation at this epoch holding only the jobs that have arrived (no future arrival),
    #: for planners that simulate ahead (:class:`wattsched.mig.partition.rollout.RolloutPartitioner`); call it
    #: before the epoch is left (``RuntimeError`` after). ``None``: the snapshot does not come from a
    #: simulation (a live GPU).
    fork_arrived: Callable[[], MigSimulation] | None = field(default=None, compare=False, repr=False)
