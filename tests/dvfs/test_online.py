"""Online Alg. 4 + 5: DRS by hand, and schedule invariants by property tests (hypothesis)."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig, RunResult
from wattsched.dvfs.model import TaskModel, TaskSet
from wattsched.dvfs.offline import run_offline
from wattsched.dvfs.online import arrival_slots, run_online
from wattsched.dvfs.solver import fastest_time_s
from wattsched.dvfs.tasks import GeneratorSpec, generate_offline, generate_online

# The active hypothesis profile (tests/conftest.py): 100 examples, 1000 with HYPOTHESIS_PROFILE=slow.
EXAMPLES = settings().max_examples

OFF = DvfsConfig(enabled=False)


def two_tasks(second_arrival_s: float) -> TaskSet:
    """X: arrives 0, t* = 90 s; Y: t* = 60 s; P* = 100 W; loose deadlines."""
    t = np.array([90.0, 60.0])
    model = TaskModel(np.full(2, 40.0), np.full(2, 20.0), np.full(2, 40.0), 0.2 * t, 0.8 * t, np.full(2, 0.5))
    arrival = np.array([0.0, second_arrival_s])
    return TaskSet(("x", "y"), arrival, arrival + 1000.0, model)


def test_drs_keeps_a_server_on_for_rho_idle_slots() -> None:
    # X ends at 90 s; server 0 would go off at slot ceil(1.5) + 2 = 4. Y arrives at slot 3 (180 s): server 0
    # is still on, Y runs 180-240 on pair 0, then the server goes off at slot ceil(4) + 2 = 6 (360 s).
    result = run_online(two_tasks(180.0), "edl", ClusterConfig(), OFF, keep_schedule=True)
    assert result.schedule is not None
    assert result.schedule.intervals == ((0, 0.0, 360.0),)
    assert result.schedule.start_s.tolist() == [0.0, 180.0]
    assert result.turn_ons == 1
    assert result.energy_idle_j == pytest.approx(37 * (360 - 150))
    assert result.energy_overhead_j == pytest.approx(5400.0)


def test_drs_turns_off_before_the_slot_arrivals() -> None:
    # Y at slot 4 (240 s): DRS first turns server 0 off at 240 s, then Y turns it on again (second turn-on)
    # and runs 240-300; off at slot 5 + 2 = 7 (420 s). On time 240 + 180 = 420 s, busy 150 s.
    result = run_online(two_tasks(240.0), "edl", ClusterConfig(), OFF, keep_schedule=True)
    assert result.schedule is not None
    assert result.schedule.intervals == ((0, 0.0, 240.0), (0, 240.0, 420.0))
    assert result.turn_ons == 2
    assert result.energy_idle_j == pytest.approx(37 * (420 - 150))
    assert result.energy_overhead_j == pytest.approx(2 * 5400.0)
    assert result.energy_total_j == pytest.approx(100 * 150 + 37 * 270 + 10800)


def test_arrival_inside_a_slot_waits_for_the_next_boundary() -> None:
    result = run_online(two_tasks(150.0), "edl", ClusterConfig(), OFF, keep_schedule=True)
    assert result.schedule is not None and result.schedule.start_s[1] == 180.0


def check_invariants(tasks: TaskSet, result: RunResult, l: int) -> None:
    schedule = result.schedule
    assert schedule is not None
    # every task runs exactly once, on one pair, after its arrival
    assert schedule.pair.shape == (len(tasks),) and np.all(schedule.pair >= 0)
    assert np.all(schedule.start_s >= tasks.arrival_s - 1e-9)
    assert np.all(schedule.end_s > schedule.start_s)
    # no pair runs two tasks at once
    by_pair = defaultdict(list)
    for i, pair in enumerate(schedule.pair.tolist()):
        by_pair[pair].append((schedule.start_s[i], schedule.end_s[i]))
    for spans in by_pair.values():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end - 1e-6
    # a server is off only when all its pairs are idle: every run lies inside an on-interval of its server,
    # and a server's on-intervals do not overlap
    on = defaultdict(list)
    for server, start, stop in schedule.intervals:
        on[server].append((start, stop))
    for spans in on.values():
        spans.sort()
        for (_, stop), (start, _) in itertools.pairwise(spans):
            assert start >= stop - 1e-9
    for i, pair in enumerate(schedule.pair.tolist()):
        server = int(schedule.server_of_pair[pair])
        assert pair // l == server
        assert any(a - 1e-9 <= schedule.start_s[i] and schedule.end_s[i] <= b + 1e-6 for a, b in on[server])
    # energy parts sum to the total; run energy is sum P_i t_i
    parts = result.energy_run_j + result.energy_idle_j + result.energy_overhead_j
    assert result.energy_total_j == pytest.approx(parts, rel=1e-12)
    assert result.energy_idle_j >= 0
    busy = schedule.end_s - schedule.start_s
    assert result.energy_run_j == pytest.approx(float(np.sum(schedule.power_w * busy)), rel=1e-12)
    assert result.energy_overhead_j == pytest.approx(result.turn_ons * l * 5400.0)
    # idle: every pair of an ON server that is not busy draws 37 W (CONTRACT §6), pairs with no task included
    on_time = sum(stop - start for _, start, stop in schedule.intervals)
    assert result.energy_idle_j == pytest.approx(37.0 * (l * on_time - float(busy.sum())), rel=1e-9, abs=1e-6)
    assert result.turn_ons == len(schedule.intervals)
    # misses are exactly the tasks that end after their deadline
    late = schedule.end_s > tasks.deadline_s + 1e-9 * np.maximum(tasks.deadline_s, 1.0)
    assert result.deadline_misses == int(late.sum())


SMALL_DAY = GeneratorSpec(horizon_slots=120)


@settings(max_examples=EXAMPLES)
@given(
    seed=st.integers(0, 10_000),
    util=st.floats(0.2, 1.6),
    l=st.sampled_from([1, 2, 3, 4]),
    algo=st.sampled_from(["edl", "edf-bf", "edf-wf", "lpt-ff", "bin"]),
    dvfs=st.booleans(),
    theta=st.sampled_from([0.3, 0.7, 1.0]),
    grouping=st.sampled_from(["sorted", "on_demand"]),
)
def test_online_schedule_invariants(
    seed: int, util: float, l: int, algo: str, dvfs: bool, theta: float, grouping: str
) -> None:
    tasks = generate_online(util, 24, seed, SMALL_DAY)
    cluster = ClusterConfig(pairs=24, pairs_per_server=l, grouping=grouping)
    result = run_online(tasks, algo, cluster, DvfsConfig(enabled=dvfs, theta=theta), keep_schedule=True)
    check_invariants(tasks, result, l)
    assert result.deadline_misses == 0  # every generated task is feasible and servers are unlimited


@settings(max_examples=EXAMPLES)
@given(
    seed=st.integers(0, 10_000),
    util=st.floats(0.1, 1.6),
    l=st.sampled_from([1, 2, 5]),
    algo=st.sampled_from(["edl", "edf-bf", "edf-wf", "lpt-ff", "bin"]),
    dvfs=st.booleans(),
    theta=st.sampled_from([0.3, 1.0]),
    grouping=st.sampled_from(["sorted", "on_demand"]),
)
def test_offline_schedule_invariants(
    seed: int, util: float, l: int, algo: str, dvfs: bool, theta: float, grouping: str
) -> None:
    tasks = generate_offline(util, 32, seed)
    cluster = ClusterConfig(pairs=32, pairs_per_server=l, grouping=grouping)
    result = run_offline(tasks, algo, cluster, DvfsConfig(enabled=dvfs, theta=theta), keep_schedule=True)
    check_invariants(tasks, result, l)
    assert result.deadline_misses == 0


TASK = st.tuples(
    st.floats(0.0, 3000.0),  # arrival_s (online; offline uses 0)
    st.floats(1.0, 600.0),  # t* = t0 + d
    st.floats(0.0, 1.0),  # t0 share of t*
    st.floats(0.0, 1.0),  # delta
    st.tuples(st.floats(1.0, 100.0), st.floats(0.0, 100.0), st.floats(1.0, 100.0)),  # p0, gamma, c
    st.floats(0.5, 3.0),  # window / t*: below ~0.8 no setting meets it
)


def random_tasks(rows: list[tuple], online: bool) -> TaskSet:
    arrival = np.array([r[0] if online else 0.0 for r in rows])
    t_star = np.array([r[1] for r in rows])
    t0 = t_star * np.array([r[2] for r in rows])
    power = np.array([r[4] for r in rows])
    delta = np.array([r[3] for r in rows])
    model = TaskModel(power[:, 0], power[:, 1], power[:, 2], t0, t_star - t0, delta)
    deadline = arrival + t_star * np.array([r[5] for r in rows])
    return TaskSet(tuple(f"r{i}" for i in range(len(rows))), arrival, deadline, model)


@settings(max_examples=EXAMPLES)
@given(
    rows=st.lists(TASK, min_size=1, max_size=14),
    online=st.booleans(),
    l=st.sampled_from([1, 2, 3]),
    algo=st.sampled_from(["edl", "edf-bf", "edf-wf", "lpt-ff", "bin"]),
    dvfs=st.booleans(),
    theta=st.sampled_from([0.3, 0.7, 1.0]),
    grouping=st.sampled_from(["sorted", "on_demand"]),
)
def test_deadline_missed_only_when_no_setting_meets_it(
    rows: list[tuple], online: bool, l: int, algo: str, dvfs: bool, theta: float, grouping: str
) -> None:
    # Arbitrary tasks (arrivals off the slot grid, windows both feasible and not) on an unbounded cluster:
    # every schedule invariant holds, and a task misses its deadline only when even the fastest setting
    # (DVFS on: v_max, g1(v_max), f_mem_max; off: the default setting) started when the task is first seen
    # (its arrival slot online, T = 0 offline) cannot meet it.
    tasks = random_tasks(rows, online)
    config = DvfsConfig(enabled=dvfs, theta=theta)
    cluster = ClusterConfig(pairs=6, pairs_per_server=l, grouping=grouping)
    run = run_online if online else run_offline
    result = run(tasks, algo, cluster, config, keep_schedule=True)
    check_invariants(tasks, result, l)
    assert result.schedule is not None
    seen_s = arrival_slots(tasks, 60.0) * 60.0 if online else np.zeros(len(tasks))
    assert np.all(result.schedule.start_s >= seen_s - 1e-9)
    fastest = fastest_time_s(tasks.model, config.interval) if dvfs else tasks.model.default_time_s
    missed = result.schedule.end_s > tasks.deadline_s + 1e-9 * np.maximum(tasks.deadline_s, 1.0)
    impossible = fastest > (tasks.deadline_s - seen_s) * (1 - 1e-9)
    assert not np.any(missed & ~impossible), (missed, impossible)


def test_strict_capacity_makes_tasks_late_instead_of_opening_pairs() -> None:
    tasks = generate_online(1.6, 32, 3, SMALL_DAY)
    result = run_online(
        tasks, "edl", ClusterConfig(pairs=2, allow_overflow=False), DvfsConfig(), keep_schedule=True
    )
    assert result.pairs_used <= 2 and result.deadline_misses > 0
    check_invariants(tasks, result, 1)


def test_online_is_deterministic_and_dvfs_saves_energy() -> None:
    tasks = generate_online(1.0, 128, 5, GeneratorSpec(horizon_slots=240))
    a = run_online(tasks, "edl", ClusterConfig(pairs=128, pairs_per_server=4), DvfsConfig())
    b = run_online(
        generate_online(1.0, 128, 5, GeneratorSpec(horizon_slots=240)),
        "edl",
        ClusterConfig(pairs=128, pairs_per_server=4),
        DvfsConfig(),
    )
    assert a == b
    off = run_online(tasks, "edl", ClusterConfig(pairs=128, pairs_per_server=4), OFF)
    assert 0.25 < 1 - a.energy_total_j / off.energy_total_j < 0.40
