"""Offline P2 scheduling: Alg. 2 (EDL with θ-readjustment, or a baseline rule) and Alg. 3 (grouping pairs into
servers), with all tasks at T = 0 (P2 Algs. 2–3)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from wattsched.dvfs.baselines import ALGORITHMS, FIT_ATOL_S, PairRule
from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig, RunResult, Schedule, account
from wattsched.dvfs.hkbu import hkbu_initial_settings, hkbu_resolve, hkbu_t_min_s
from wattsched.dvfs.model import TaskModel, TaskSet, check_tasks
from wattsched.dvfs.pool import PairPool
from wattsched.dvfs.solver import Settings, default_settings, fastest_time_s, solve, solve_one
from wattsched.errors import InputError

__all__ = ["PackState", "group_sorted", "initial_settings", "pack_batch", "run_offline", "t_min_s"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class PackState:
    """Per-task decisions being built: time and power of the chosen setting, pair, start and end."""

    def __init__(self, tasks: TaskSet, settings: Settings, t_min_s: FloatArray) -> None:
        n = len(tasks)
        self.tasks = tasks
        self.time_s = settings.time_s.copy()
        self.power_w = settings.power_w.copy()
        self.t_min_s = t_min_s
        self.pair = np.full(n, -1, dtype=np.int64)
        self.start_s = np.zeros(n)
        self.end_s = np.zeros(n)
        self.readjustments = 0


def initial_settings(tasks: TaskSet, window_s: FloatArray, dvfs: DvfsConfig) -> Settings:
    """Phase 1 of Alg. 2/5: Alg. 1 per task (or the default setting when DVFS is off)."""
    if not dvfs.enabled:
        return default_settings(tasks.model, window_s)
    if dvfs.reproduce_hkbu:  # the authors' initial solve ignores the deadline
        return hkbu_initial_settings(tasks.model, window_s, dvfs.interval, dvfs.hkbu_grid)
    return solve(tasks.model, window_s, dvfs.interval, method=dvfs.method)


def t_min_s(model: TaskModel, dvfs: DvfsConfig) -> FloatArray:
    """Each task's fastest time, the floor of θ-readjustment (``t_theta = max(θ·t, t_min)``)."""
    if dvfs.reproduce_hkbu:
        return hkbu_t_min_s(model, dvfs.interval)
    return fastest_time_s(model, dvfs.interval)


def pack_batch(
    pool: PairPool,
    rule: PairRule,
    state: PackState,
    batch: IntArray,
    now_s: float,
    dvfs: DvfsConfig,
    initial: bool,
) -> None:
    """Assign the tasks ``batch`` (indices into the task set) at time ``now_s`` (Alg. 2 phase 2 / Alg. 5)."""
    deadlines = state.tasks.deadline_s
    order = batch[rule.order(deadlines[batch], state.time_s[batch])]
    may_readjust = rule.readjust and dvfs.enabled
    slack = 0.0 if pool.authors_order else FIT_ATOL_S
    for i in order.tolist():
        t, d = float(state.time_s[i]), float(deadlines[i])
        pair = rule.choose(pool, now_s, t, d, initial)
        start = now_s
        if pair >= 0:
            start = max(float(pool.mu[pair]), now_s)
            # EDL offers its one candidate even when the task does not fit; the baselines offer only pairs
            # that pass their own fit test (the authors' online best/worst fit ignores the current time)
            if rule.readjust and start + t > d + slack:
                if may_readjust and (d - start) > max(dvfs.theta * t, float(state.t_min_s[i])):
                    # θ-readjustment: the time left before the deadline is the new window (Alg. 2 l. 16–19).
                    t, p = _resolve(state, i, d - start, dvfs)
                    state.power_w[i] = p
                    state.time_s[i] = t
                    state.readjustments += 1
                else:
                    pair = -1
        if pair < 0:
            if pool.can_open():
                pair = pool.open(now_s)
                start = now_s
            else:  # fixed cluster full: the lightest ON pair takes it late
                pair = pool.pick_min(pool.mu_on)
                start = max(float(pool.mu[pair]), now_s)
        pool.assign(pair, start, t, d)
        state.pair[i] = pair
        state.start_s[i] = start
        state.end_s[i] = start + t


def place_alone(pool: PairPool, state: PackState, alone: IntArray, now_s: float) -> None:
    """Give each task of ``alone`` (in order) a pair of its own, turning on servers as they fill (the
    authors' T = 0 rule: task k on pair k mod l of the k div l-th server turned on)."""
    first = 0
    for k, i in enumerate(alone.tolist()):
        if k % pool.l == 0:
            first = pool.open(now_s)
        pair = first + k % pool.l
        t = float(state.time_s[i])
        pool.assign(pair, now_s, t, float(state.tasks.deadline_s[i]))
        state.pair[i] = pair
        state.start_s[i] = now_s
        state.end_s[i] = now_s + t


def _resolve(state: PackState, i: int, window_s: float, dvfs: DvfsConfig) -> tuple[float, float]:
    """Alg. 1 again for task ``i`` with the time left as its window: ``(time_s, power_w)``."""
    model = state.tasks.model
    if dvfs.reproduce_hkbu:
        t, p = float(state.time_s[i]), float(state.power_w[i])
        return hkbu_resolve(model, i, window_s, dvfs.interval, t, p)
    _, _, _, t, p, _ = solve_one(model, i, window_s, dvfs.interval, method=dvfs.solve_method)
    return t, p


def group_sorted(busy_s: FloatArray, pairs_per_server: int) -> IntArray:
    """Alg. 3: sort pairs by busy time, descending, and cut into blocks of ``l``.

    Returns each pair's new index (server = new index // l): long pairs share servers, which makes the idle
    time ``Σ (F_j − B_kj)`` small.
    """
    order = np.argsort(-np.asarray(busy_s), kind="stable")
    new_index = np.empty(order.size, dtype=np.int64)
    new_index[order] = np.arange(order.size)
    return new_index


def _check_offline(tasks: TaskSet) -> None:
    late = np.flatnonzero(tasks.arrival_s != 0.0)
    if late.size:
        raise InputError(
            "offline mode needs every arrival_s = 0 (use --mode online)",
            row=int(late[0]) + 1,
            column="arrival_s",
        )


def pack_offline(
    tasks: TaskSet, rule: PairRule, cluster: ClusterConfig, dvfs: DvfsConfig, settings: Settings | None = None
) -> tuple[PackState, PairPool]:
    """Alg. 2 on tasks released at T = 0 (their windows ``deadline − arrival``)."""
    window = tasks.window_s
    settings = settings if settings is not None else initial_settings(tasks, window, dvfs)
    state = PackState(tasks, settings, t_min_s(tasks.model, dvfs))
    pool = PairPool(max(len(tasks), 1), cluster, server_mode=cluster.grouping == "on_demand")
    pack_batch(pool, rule, state, np.arange(len(tasks), dtype=np.int64), 0.0, dvfs, initial=True)
    return state, pool


def run_offline(
    tasks: TaskSet,
    algorithm: str | PairRule = "edl",
    cluster: ClusterConfig | None = None,
    dvfs: DvfsConfig | None = None,
    *,
    keep_schedule: bool = False,
    settings: Settings | None = None,
) -> RunResult:
    """Offline run: Alg. 2 packing, then Alg. 3 grouping (``sorted``) or servers opened during packing
    (``on_demand``); every server is on from 0 to its last pair's finish and costs ``l·Δ`` to turn on.

    ``cluster`` sets the constants and rules (:class:`ClusterConfig`; ``initial_placement`` concerns online
    runs only), ``dvfs`` Alg. 1 and θ; ``settings`` (per task, in task order) skips phase 1 when given.
    """
    cluster = cluster or ClusterConfig()
    dvfs = dvfs or DvfsConfig()
    rule = ALGORITHMS.make(algorithm) if isinstance(algorithm, str) else algorithm
    check_tasks(tasks)  # finite values within the model bounds: nothing below can overflow
    _check_offline(tasks)
    state, pool = pack_offline(tasks, rule, cluster, dvfs, settings)
    l = cluster.pairs_per_server
    pair = state.pair
    if cluster.grouping == "sorted":
        busy = pool.last_end[: pool.opened]
        new_index = group_sorted(busy, l)
        pair = new_index[pair] if pair.size else pair
        servers = -(-pool.opened // l)
        finish = np.zeros(servers)
        np.maximum.at(finish, new_index // l, busy)
        intervals = tuple((j, 0.0, float(finish[j])) for j in range(servers))
        server_of_pair = np.arange(servers * l, dtype=np.int64) // l
    else:
        pool.close_all(drs=False)
        intervals = tuple(sorted(pool.intervals))
        server_of_pair = np.arange(pool.mu.size, dtype=np.int64) // l
    schedule = Schedule(
        pair, state.start_s, state.end_s, state.power_w, server_of_pair, intervals, offline=True
    )
    return account(schedule, tasks.deadline_s, cluster, state.readjustments, keep_schedule)
