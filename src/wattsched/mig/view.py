"""What an in-configuration policy sees and returns: a read-only view of the engine and a typed decision.

The engine owns its state. A policy reads it through :class:`SchedulerView` — a Protocol of read-only
properties and sequences (mypy rejects writes), satisfied by the engine's private state object without copies,
so that policies run at the engine's speed — and returns an :class:`Assignment` (or ``None``: keep the current
one). :func:`build_view` makes a view by hand, so a policy can be tested without a simulation.

Jobs are indexed by *rank*: the position in the trace sorted by (arrival, row), so comparing ranks is the
docs/concepts/mig-model.md priority tie-break. Slices are indexed in placement order of the current
configuration.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Assignment", "JobState", "SchedulerView", "ViewJob", "build_view"]


class JobState(enum.Enum):
    NOT_ARRIVED = "not-arrived"
    WAITING = "waiting"
    RUNNING = "running"
    DONE = "done"


class SchedulerView(Protocol):
    """The read-only state a policy decides on (see the module docstring)."""

    @property
    def now_s(self) -> float: ...
    # ---- the current configuration, slices in placement order
    @property
    def slice_compute(self) -> Sequence[int]:
        """Compute slices of each slice."""

    @property
    def slice_start(self) -> Sequence[int]:
        """Memory-slot start of each slice (NVML placement)."""

    @property
    def slice_duration_index(self) -> Sequence[int]:
        """Index into a job's ``durations_s`` row of each slice's run time."""

    @property
    def scan_order(self) -> Sequence[int]:
        """Slices by (compute, start): scanning them in this order with strict comparisons breaks ties."""

    @property
    def duration_indices(self) -> Sequence[int]:
        """The distinct ``slice_duration_index`` values of the configuration, ascending."""

    @property
    def running(self) -> Sequence[int]:
        """The job running on each slice, or -1."""

    # ---- jobs, by rank
    @property
    def deadline_s(self) -> Sequence[float]:
        """Deadline used for scheduling (shifted in ``deadline_shift`` repartition mode)."""

    @property
    def durations_s(self) -> Sequence[Sequence[float]]:
        """Per job: run time alone on each of the GPU's compute sizes, then on the MIG-disabled GPU."""

    @property
    def remaining(self) -> Sequence[float]:
        """Remaining fraction of each job's work (up to date for running jobs when a policy is called)."""

    @property
    def finish_s(self) -> Sequence[float]:
        """Expected completion time of a running job (``inf`` otherwise)."""

    @property
    def waiting(self) -> Sequence[tuple[float, int]]:
        """Waiting jobs as ``(rank key, job)``, best first (keys from the policy's :meth:`rank`)."""

    @property
    def job_reference_s(self) -> Sequence[float]:
        """What the policy's ``on_configuration`` returned for this configuration (empty if nothing)."""

    def state(self, job: int) -> JobState:
        """Where a job is."""
        ...


class Assignment(tuple[int, ...]):
    """A policy's decision: the job to run on each slice (-1: idle), in placement order.

    A tuple of job ranks (``Assignment([3, -1, 5])``): cheap to build at every scheduling point."""

    __slots__ = ()


@dataclass(frozen=True)
class ViewJob:
    """One job of a hand-built view: ``slice`` is its slice index when running (``state`` RUNNING)."""

    deadline_s: float
    durations_s: tuple[float, ...]
    remaining: float = 1.0
    state: JobState = JobState.WAITING
    slice: int | None = None


def build_view(
    now_s: float,
    slices: Sequence[tuple[int, int, int]],
    jobs: Sequence[ViewJob],
    *,
    rank: object = None,
) -> SchedulerView:
    """A view for testing a policy by hand.

    ``slices``: ``(compute, start, duration_index)`` per slice in placement order; ``jobs`` by rank. Waiting
    jobs are keyed with ``rank.rank(view, job)`` when ``rank`` (a policy) is given, else by deadline. A
    running
    job's ``finish_s`` is ``now + remaining · duration`` on its slice.
    """
    from wattsched.mig._state import DONE, NOT_ARRIVED, WAITING, EngineState

    n = len(jobs)
    state = EngineState(
        record=False,
        jobs=[None] * n,  # a hand-built view has no trace jobs (policies never read them)
        rows=list(range(n)),
        deadline_s=[j.deadline_s for j in jobs],
        durations_s=[j.durations_s for j in jobs],
        is_inference=[0] * n,
        weight=[1] * n,
    )
    state.now_s = now_s
    state.install([(c, start, d) for c, start, d in slices])
    for index, job in enumerate(jobs):
        state.remaining[index] = job.remaining
        if job.state is JobState.RUNNING:
            if job.slice is None or state.running[job.slice] != -1:
                raise ValueError(f"running job {index} needs a free slice index, got {job.slice}")
            state.running[job.slice] = index
            state.slice_of[index] = job.slice
            duration = job.durations_s[state.slice_duration_index[job.slice]]
            state.finish_s[index] = now_s + job.remaining * duration
        elif job.state is JobState.DONE:
            state.slice_of[index] = DONE
        elif job.state is JobState.NOT_ARRIVED:
            state.slice_of[index] = NOT_ARRIVED
        else:
            state.slice_of[index] = WAITING
    if rank is not None:
        on_configuration = getattr(rank, "on_configuration", None)
        if on_configuration is not None:
            state.job_reference_s = on_configuration(state) or []
    keys = []
    for index, job in enumerate(jobs):
        if job.state is JobState.WAITING:
            key = rank.rank(state, index) if rank is not None else job.deadline_s  # type: ignore[attr-defined]
            keys.append((key, index))
            state.wkey[index] = key
    state.waiting = sorted(keys)
    if any(math.isnan(k) for k, _ in keys):
        raise ValueError("a waiting job's key is NaN")
    return state
