"""Online P2 scheduling: Alg. 4 (slots, DRS turn-off after ρ idle slots) and Alg. 5 (per-slot assignment).

Tasks arrive on slot boundaries (an arrival inside a slot is handled at the next boundary; its window is
then ``deadline − T``). At T = 0 the offline algorithm (Alg. 2 + 3) places the initial batch on freshly
turned-on servers (``initial_placement = "one-per-pair"``: the authors' rule, see ``cluster``). At each later
slot T: (a) queued tasks run back to back (or from the next slot boundary, ``next_start = "next-slot"``;
nothing to do here), (b) DRS turns off every ON server whose pairs have all been idle ρ slots — at slot
``ceil(F_j) + ρ`` where ``F_j`` is its last finish — and (c) the slot's arrivals are assigned by the rule
(Alg. 5), a new server being turned on (cost ``l·Δ``) when no ON pair takes the task. Idle energy is counted
while a server is on (continuously, or in whole slots).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from wattsched.dvfs.baselines import ALGORITHMS, PairRule
from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig, RunResult, Schedule, account, ceil_slots
from wattsched.dvfs.model import TaskSet, check_tasks
from wattsched.dvfs.offline import PackState, group_sorted, initial_settings, pack_batch, place_alone, t_min_s
from wattsched.dvfs.pool import PairPool
from wattsched.dvfs.solver import Settings

__all__ = ["arrival_slots", "run_online"]

IntArray = npt.NDArray[np.int64]


def arrival_slots(tasks: TaskSet, slot_s: float) -> IntArray:
    """The slot at which each task is first seen: the least ``k`` with ``k·slot_s >= arrival`` (in float64,
    so that a task never starts before its arrival and an arrival on a boundary keeps its slot)."""
    k = np.ceil(tasks.arrival_s / slot_s)
    k = np.where((k - 1.0) * slot_s >= tasks.arrival_s, k - 1.0, k)  # the division rounded up
    k = np.where(k * slot_s < tasks.arrival_s, k + 1.0, k)  # ... or down
    return k.astype(np.int64)


def _initial_pool(state: PackState, pool0: PairPool, cluster: ClusterConfig, capacity: int) -> PairPool:
    """Turn the T = 0 packing into ON servers: Alg. 3 grouping (``sorted``) relabels the pairs."""
    if cluster.grouping == "on_demand":
        return pool0
    l = cluster.pairs_per_server
    opened = pool0.opened
    new_index = group_sorted(pool0.mu[:opened], l)
    pool = PairPool(max(capacity, opened + l), cluster, server_mode=True)
    for _ in range(-(-opened // l)):
        pool.open(0.0)
    for field in ("mu", "last_end", "load", "busy_ceil"):
        getattr(pool, field)[new_index] = getattr(pool0, field)[:opened]
    pool.mu_on[: pool.opened] = pool.mu[: pool.opened]
    finish = np.zeros(pool.opened // l)
    np.maximum.at(finish, new_index // l, pool0.last_end[:opened])
    pool.server_finish[: finish.size] = finish
    placed = state.pair >= 0
    state.pair[placed] = new_index[state.pair[placed]]
    return pool


def run_online(
    tasks: TaskSet,
    algorithm: str | PairRule = "edl",
    cluster: ClusterConfig | None = None,
    dvfs: DvfsConfig | None = None,
    *,
    keep_schedule: bool = False,
    settings: Settings | None = None,
) -> RunResult:
    """One online run (a day of arrivals) of ``algorithm`` with DRS; see the module docstring.

    ``cluster`` sets the constants and rules (:class:`ClusterConfig`), ``dvfs`` Alg. 1 and θ; ``settings``
    (per task, in task order, for windows from each task's arrival slot) skips phase 1 when given.
    """
    cluster = cluster or ClusterConfig()
    dvfs = dvfs or DvfsConfig()
    rule = ALGORITHMS.make(algorithm) if isinstance(algorithm, str) else algorithm
    slot_s = cluster.slot_s
    check_tasks(tasks)  # finite values within the model bounds: nothing below can overflow
    slots = arrival_slots(tasks, slot_s)
    window = tasks.deadline_s - slots * slot_s
    settings = settings if settings is not None else initial_settings(tasks, window, dvfs)
    state = PackState(tasks, settings, t_min_s(tasks.model, dvfs))
    capacity = max(cluster.pairs, 1)

    order = np.argsort(slots, kind="stable")
    bounds = np.flatnonzero(np.diff(slots[order])) + 1
    batches = np.split(order, bounds) if order.size else []
    first = batches[0] if batches and slots[batches[0][0]] == 0 else np.zeros(0, dtype=np.int64)
    first = first.astype(np.int64)
    pool0 = PairPool(max(first.size, 1), cluster, server_mode=cluster.grouping == "on_demand")
    if cluster.initial_placement == "one-per-pair" and dvfs.enabled:
        # the authors' T = 0 rule: a task whose setting meets its deadline gets a pair of its own
        meets = state.time_s[first] <= tasks.deadline_s[first]
        place_alone(pool0, state, first[meets], 0.0)
        first = first[~meets]
    pack_batch(pool0, rule, state, first, 0.0, dvfs, initial=True)
    pool = _initial_pool(state, pool0, cluster, capacity)

    for batch in batches:
        now_slot = int(slots[batch[0]])
        if now_slot == 0:
            continue
        pool.turn_off_idle(now_slot)
        pool.begin_slot()
        pack_batch(pool, rule, state, batch.astype(np.int64), now_slot * slot_s, dvfs, initial=False)
    # the authors' day ends at the slot where its last task ends; P2's servers idle ρ more slots
    last = float(np.max(ceil_slots(state.end_s, slot_s), initial=0.0)) if cluster.reproduce_hkbu else np.inf
    pool.close_all(drs=True, end_s=last)
    server_of_pair = np.arange(pool.mu.size, dtype=np.int64) // pool.l
    schedule = Schedule(
        state.pair, state.start_s, state.end_s, state.power_w, server_of_pair, tuple(pool.intervals)
    )
    return account(schedule, tasks.deadline_s, cluster, state.readjustments, keep_schedule)
