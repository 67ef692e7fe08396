"""The mutable state of one MIG simulation, laid out as flat lists for speed.

Policies receive this object as a *read-only view* (they must not mutate it; the simulator validates and
applies their decisions). Jobs are indexed by their *rank*: the position in the trace sorted by
(arrival, row), so comparing ranks is the CONTRACT §4 priority tie-break (earlier arrival, then row order).

Fields a policy may read:

* ``now_s`` — the current time;
* per job ``j``: ``deadline_s[j]`` (the deadline used for scheduling), ``durations_s[j]`` (6-tuple, see
  :class:`wattsched.workload.job.Job`), ``fraction[j]`` (remaining fraction of the work, up to date for
  running jobs when a policy is called), ``slice_of[j]`` (slice index, or :data:`WAITING`, :data:`DONE`,
  :data:`NOT_ARRIVED`), ``end_s[j]`` (completion time of a running job);
* per slice ``s`` of the current configuration (slot order): ``slice_units[s]``, ``slice_dix[s]`` (index into
  ``durations_s[j]``), ``job_on[s]`` (running job or -1); ``scan_order`` (slice indices sorted by compute
  size, then slot: scanning in this order with strict comparisons implements the slice tie-break);
  ``config_dixes`` (the distinct duration indices of the configuration);
* ``policy_memo``: scratch space for values a policy derives from the configuration (e.g. per-job reference
  durations), emptied whenever the configuration changes. The one field a policy may write, and only to
  cache what it could recompute (a pure function of the configuration and the jobs);
* ``waiting``: the waiting jobs as a sorted list of ``(key, j)`` where ``key`` is the policy's
  :meth:`waiting_key`; the first entries have the highest priority. ``wkey[j]`` is a waiting job's key; the
  simulator sets it before it calls :meth:`critical_time_s` for that job.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["DONE", "NOT_ARRIVED", "STOPPED", "WAITING", "MigState"]

WAITING = -1
DONE = -2
NOT_ARRIVED = -3
#: Internal: a job just taken off its slice while a decision is applied.
STOPPED = -4


class MigState:
    """Flat per-job and per-slice lists; see the module docstring for what policies may read."""

    __slots__ = (
        "completion_s",
        "config_dixes",
        "crit_count",
        "deadline_s",
        "durations_s",
        "end_s",
        "fraction",
        "history",
        "job_on",
        "now_s",
        "policy_memo",
        "preemptions",
        "run_start_s",
        "scan_order",
        "seg_start_s",
        "slice_dix",
        "slice_of",
        "slice_slot",
        "slice_units",
        "timer_s",
        "waiting",
        "wkey",
    )

    def __init__(self, deadline_s: list[float], durations_s: list[tuple[float, ...]], record: bool) -> None:
        n = len(deadline_s)
        self.now_s = 0.0
        self.deadline_s = deadline_s
        self.durations_s = durations_s
        self.fraction = [1.0] * n
        self.slice_of = [NOT_ARRIVED] * n
        self.end_s = [math.inf] * n
        self.run_start_s = [0.0] * n
        self.seg_start_s = [0.0] * n
        self.completion_s = [math.nan] * n
        self.preemptions = [0] * n
        self.crit_count = [0] * n
        self.timer_s = [-1.0] * n
        self.wkey = [0.0] * n
        self.history: list[list[tuple[float, float, int | str, int]]] | None = (
            [[] for _ in range(n)] if record else None
        )
        self.waiting: list[tuple[float, int]] = []
        self.slice_units: list[int] = []
        self.slice_dix: list[int] = []
        self.slice_slot: list[int] = []
        self.scan_order: list[int] = []
        self.config_dixes: tuple[int, ...] = ()
        self.job_on: list[int] = []
        self.policy_memo: dict[str, Any] = {}

    def current_fraction(self, job: int, now_s: float) -> float:
        """Remaining fraction of ``job`` at ``now_s`` (accounts for the run since the last update)."""
        s = self.slice_of[job]
        if s < 0:
            return self.fraction[job]
        return self.fraction[job] - (now_s - self.run_start_s[job]) / self.durations_s[job][self.slice_dix[s]]

    def copy(self) -> MigState:
        """An independent copy (for look-ahead forks)."""
        other = MigState.__new__(MigState)
        for name in MigState.__slots__:
            value = getattr(self, name)
            setattr(other, name, value.copy() if isinstance(value, list) else value)
        if self.history is not None:
            other.history = [h.copy() for h in self.history]
        other.policy_memo = {
            key: value.copy() if isinstance(value, list) else value for key, value in self.policy_memo.items()
        }
        return other
