"""The in-configuration scheduling policy interface, its registry and the shared slice rules.

A policy is a small stateless object with four hooks, each given the engine's read-only
:class:`~wattsched.mig.view.SchedulerView`:

* :meth:`~SchedulingPolicy.on_configuration` — once per configuration: per-job values the policy derives from
  it (e.g. a laxity reference duration), which the view then offers as ``job_reference_s``;
* :meth:`~SchedulingPolicy.rank` — the priority key of a job that starts waiting (lower first; constant while
  it waits, so the engine keeps waiting jobs sorted);
* :meth:`~SchedulingPolicy.critical_time_s` — when a waiting job with that key needs a re-evaluation (``inf``:
  never);
* :meth:`~SchedulingPolicy.assign` — at every scheduling point: an :class:`~wattsched.mig.view.Assignment`
(the
  job to run on each slice, -1 idle) or ``None`` to keep the current one.

The simulator validates a decision (each job at most once, only waiting or running jobs, a slice idles only
when no job waits) and applies it: any job moved off its slice counts one preemption. The simulator knows no
policy by name. :func:`wattsched.mig.checks.check_policy` checks a policy against these rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from wattsched.errors import WattschedError
from wattsched.mig.view import Assignment, SchedulerView
from wattsched.registry import Registry

__all__ = [
    "POLICIES",
    "DeadlineOrder",
    "FullReevaluationEdf",
    "PolicyError",
    "SchedulingPolicy",
    "StarvedJobsError",
    "edf_ss_slice",
    "fastest_slice",
    "reevaluate_all",
]


class PolicyError(RuntimeError):
    """A policy returned a decision the simulator cannot apply (a bug in the policy, not a user error)."""


class StarvedJobsError(PolicyError, WattschedError):
    """A policy left jobs waiting while slices were free and nothing else was pending: they would wait
    forever (:func:`wattsched.mig.checks.check_not_starved`). One line at the CLI, exit status 2."""


@runtime_checkable
class SchedulingPolicy(Protocol):
    """An in-configuration scheduler (docs/concepts/mig-model.md)."""

    #: Registry name, e.g. ``"edf-ss"``.
    name: str
    #: Critical-laxity threshold in seconds, or ``None`` when the policy uses no critical-laxity events.
    critical_laxity_s: float | None
    #: A waiting job's critical-laxity event triggers a re-evaluation only while it has had fewer events.
    max_critical_events: int

    def on_configuration(self, view: SchedulerView) -> Sequence[float] | None:
        """Per-job values derived from a new configuration (``view.job_reference_s``), or ``None``."""
        ...

    def rank(self, view: SchedulerView, job: int) -> float:
        """Priority key of a job that starts waiting (lower first); must not change while the job waits."""
        ...

    def critical_time_s(self, view: SchedulerView, job: int, key: float) -> float:
        """Time at which the waiting ``job`` (ranked ``key``) reaches its critical laxity (``inf``: never)."""
        ...

    def assign(self, view: SchedulerView) -> Assignment | None:
        """The job to run on each slice (-1 idle), or ``None`` to keep the current assignment."""
        ...


POLICIES: Registry[SchedulingPolicy] = Registry("scheduling policy", entry_points="wattsched.policies")


def fastest_slice(durations: Sequence[float], free: list[int], slice_dix: Sequence[int]) -> int:
    """The free slice with the least remaining time (``free`` in scan order, so ties go to smaller g/slot)."""
    best = -1
    best_dur = math.inf
    for s in free:
        d = durations[slice_dix[s]]
        if d < best_dur:
            best_dur = d
            best = s
    return best


def edf_ss_slice(
    now_s: float,
    fraction: float,
    deadline_s: float,
    durations: Sequence[float],
    free: list[int],
    slice_dix: Sequence[int],
) -> tuple[int, bool]:
    """EDF-SS slice rule: the slowest free slice that meets the deadline, else the fastest free slice.

    Returns ``(slice, meets_deadline)``; ``(-1, False)`` when ``free`` is empty.
    """
    slow = -1
    slow_dur = -1.0
    fast = -1
    fast_dur = math.inf
    budget = deadline_s - now_s
    for s in free:
        d = durations[slice_dix[s]]
        if fraction * d <= budget:
            if d > slow_dur:
                slow_dur = d
                slow = s
        elif d < fast_dur:
            fast_dur = d
            fast = s
    if slow >= 0:
        return slow, True
    return fast, False


def reevaluate_all(
    view: SchedulerView, running: list[tuple[float, int]], slowest_feasible: bool
) -> Assignment | None:
    """Full re-evaluation (docs/concepts/mig-model.md): rank all unfinished jobs, place them in order on free
    slices.

    Only the best ``n_slices`` jobs can get a slice, so the candidates are the running jobs, given keyed as
    ``running`` (a fresh list of ``(key, job)``; it is extended in place), and the first ``n_slices`` waiting
    jobs. ``slowest_feasible`` selects the EDF-SS slice rule, otherwise the fastest free slice is used.
    Returns ``None`` when the placement is the current one (nothing moves: the common outcome).
    """
    n = len(view.running)
    candidates = running
    candidates.extend(view.waiting[:n])
    candidates.sort()
    del candidates[n:]
    free = list(view.scan_order)
    out = [-1] * n
    slice_dix = view.slice_duration_index
    durations = view.durations_s
    if slowest_feasible:
        now = view.now_s
        fraction = view.remaining
        deadline = view.deadline_s
        for _, j in candidates:
            s, _ = edf_ss_slice(now, fraction[j], deadline[j], durations[j], free, slice_dix)
            out[s] = j
            free.remove(s)
    else:
        for _, j in candidates:
            # fastest_slice(), inlined: this loop is the hottest of the EDF-FS/LLF/LALF runs.
            dj = durations[j]
            best = -1
            best_dur = math.inf
            for s in free:
                d = dj[slice_dix[s]]
                if d < best_dur:
                    best_dur = d
                    best = s
            out[best] = j
            free.remove(best)
    if out == view.running:  # a list (the engine's) when nothing moves
        return None
    return Assignment(out)


class DeadlineOrder:
    """The shared half of the EDF policies: waiting jobs ranked by deadline, no critical-laxity events."""

    critical_laxity_s: float | None = None
    max_critical_events = 0

    def on_configuration(self, view: SchedulerView) -> Sequence[float] | None:
        return None

    def rank(self, view: SchedulerView, job: int) -> float:
        return view.deadline_s[job]

    def critical_time_s(self, view: SchedulerView, job: int, key: float) -> float:
        return math.inf


class FullReevaluationEdf(DeadlineOrder):
    """Unrestricted EDF: every arrival and completion re-ranks all unfinished jobs by deadline and places them
    in turn; ``slowest_feasible`` picks the slice rule (EDF-SS) over the fastest free slice (EDF-FS)."""

    slowest_feasible: bool

    def assign(self, view: SchedulerView) -> Assignment | None:
        deadline = view.deadline_s
        running = [(deadline[j], j) for j in view.running if j >= 0]
        return reevaluate_all(view, running, slowest_feasible=self.slowest_feasible)
