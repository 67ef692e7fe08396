"""Checkers for DVFS pair rules, shipped like gymnasium's ``check_env`` (the MIG side has
:mod:`wattsched.mig.checks`).

* :func:`check_schedule` — the invariants of one run with its schedule kept (``keep_schedule=True``),
recomputed
  from the schedule alone: every task runs exactly once, on one pair, after its arrival; no pair runs two
  tasks at once; every run lies inside an on-interval of its server and a server's on-intervals do not overlap
  (a server is off only when all its pairs are idle); energy parts sum to the total; run energy is
  ``Σ power · time``; overhead is one turn-on per interval; idle energy is every unbusy pair of an ON server
  at
  the idle power (continuous accounting); deadline misses are exactly the late tasks.
* :func:`check_pair_rule` — a pair rule (a name in :data:`~wattsched.dvfs.baselines.ALGORITHMS` or an object
of
  the :class:`~wattsched.dvfs.baselines.PairRule` protocol) offline and online, DVFS on and off, one and
  several
  pairs per server, on generated task sets: :func:`check_schedule`, determinism, and no deadline miss (every
  generated task is feasible and servers are unlimited, so a rule can always open one).

Each raises :class:`~wattsched.mig.checks.CheckError` naming the rule, the case and the broken rule.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np

from wattsched.dvfs.baselines import ALGORITHMS, PairRule
from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig, RunResult
from wattsched.dvfs.offline import run_offline
from wattsched.dvfs.online import run_online
from wattsched.dvfs.tasks import GeneratorSpec, TaskSet, generate_offline, generate_online
from wattsched.mig.checks import CheckError

__all__ = ["check_pair_rule", "check_schedule"]


def _fail(condition: bool, message: str) -> None:
    if not condition:
        raise CheckError(message)


def check_schedule(tasks: TaskSet, result: RunResult, cluster: ClusterConfig) -> None:
    """The invariants of a run with continuous idle accounting (see the module docstring)."""
    schedule = result.schedule
    _fail(schedule is not None, "the run kept no schedule (keep_schedule=True)")
    assert schedule is not None
    l = cluster.pairs_per_server
    _fail(schedule.pair.shape == (len(tasks),) and bool(np.all(schedule.pair >= 0)), "a task has no pair")
    _fail(bool(np.all(schedule.start_s >= tasks.arrival_s - 1e-9)), "a task starts before it arrives")
    _fail(bool(np.all(schedule.end_s > schedule.start_s)), "a task ends before it starts")
    by_pair: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for i, pair in enumerate(schedule.pair.tolist()):
        by_pair[pair].append((float(schedule.start_s[i]), float(schedule.end_s[i])))
    for pair, spans in by_pair.items():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            _fail(start >= end - 1e-6, f"pair {pair} runs two tasks at once at {start}")
    on: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for server, start, stop in schedule.intervals:
        on[server].append((start, stop))
    for server, spans in on.items():
        spans.sort()
        for (_, stop), (start, _) in itertools.pairwise(spans):
            _fail(start >= stop - 1e-9, f"server {server} is turned on twice at {start}")
    for i, pair in enumerate(schedule.pair.tolist()):
        server = int(schedule.server_of_pair[pair])
        _fail(pair // l == server, f"pair {pair} is not on server {server}")
        inside = any(a - 1e-9 <= schedule.start_s[i] and schedule.end_s[i] <= b + 1e-6 for a, b in on[server])
        _fail(inside, f"task {i} runs while its server {server} is off")
    parts = result.energy_run_j + result.energy_idle_j + result.energy_overhead_j
    _fail(math.isclose(result.energy_total_j, parts, rel_tol=1e-12), "energy parts do not sum to the total")
    busy = schedule.end_s - schedule.start_s
    run_j = float(np.sum(schedule.power_w * busy))
    _fail(
        math.isclose(result.energy_run_j, run_j, rel_tol=1e-12),
        f"run energy {result.energy_run_j} != {run_j}",
    )
    overhead = result.turn_ons * l * cluster.turn_on_j_per_pair
    _fail(
        math.isclose(result.energy_overhead_j, overhead, rel_tol=1e-12, abs_tol=1e-9),
        "overhead is not one turn-on per server interval",
    )
    on_time = sum(stop - start for _, start, stop in schedule.intervals)
    idle = cluster.idle_power_w * (l * on_time - float(busy.sum()))
    _fail(
        math.isclose(result.energy_idle_j, idle, rel_tol=1e-9, abs_tol=1e-6),
        f"idle energy {result.energy_idle_j} J, recomputed {idle} J",
    )
    _fail(result.turn_ons == len(schedule.intervals), "turn-ons do not match the server intervals")
    late = schedule.end_s > tasks.deadline_s + 1e-9 * np.maximum(tasks.deadline_s, 1.0)
    _fail(result.deadline_misses == int(late.sum()), "deadline misses do not match the late tasks")


def check_pair_rule(rule: str | PairRule, *, seeds: int = 3) -> None:
    """Check a pair rule (see the module docstring)."""
    resolved = ALGORITHMS.make(rule) if isinstance(rule, str) else rule
    label = getattr(resolved, "name", type(resolved).__name__)
    day = GeneratorSpec(horizon_slots=120)
    for seed, l, dvfs, online in itertools.product(range(seeds), (1, 2, 4), (False, True), (False, True)):
        mode = "online" if online else "offline"
        case = f"{label}: {mode}, l = {l}, DVFS {'on' if dvfs else 'off'}, seed {seed}"
        cluster = ClusterConfig(pairs=24, pairs_per_server=l)
        config = DvfsConfig(enabled=dvfs)
        if online:
            tasks = generate_online(1.0, 24, seed, day)
            runs = [run_online(tasks, resolved, cluster, config, keep_schedule=True) for _ in range(2)]
        else:
            tasks = generate_offline(0.8, 24, seed)
            runs = [run_offline(tasks, resolved, cluster, config, keep_schedule=True) for _ in range(2)]
        try:
            check_schedule(tasks, runs[0], cluster)
        except CheckError as exc:
            raise CheckError(f"{case}: {exc}") from None
        first, second = runs
        _fail(
            first.energy_total_j == second.energy_total_j and first.pairs_used == second.pairs_used,
            f"{case}: two runs of the same tasks differ",
        )
        _fail(
            first.deadline_misses == 0, f"{case}: {first.deadline_misses} feasible task(s) missed a deadline"
        )
