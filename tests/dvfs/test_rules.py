"""The rules on which P2's text and the authors' code differ, on hand-made task sets with hand-computed
schedules and energies: whole-slot idle accounting, one pair per task at T = 0, next-slot start, the authors'
tie order and online fit test, their θ re-solve, and re-accounting a schedule under other constants."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_online import TASK, check_invariants, random_tasks

from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig, account
from wattsched.dvfs.hkbu import (
    HKBU_RESOLVE_GRID,
    hkbu_configs,
    hkbu_initial_settings,
    hkbu_resolve,
    hkbu_t_min_s,
)
from wattsched.dvfs.model import TaskModel, TaskSet
from wattsched.dvfs.offline import initial_settings, run_offline
from wattsched.dvfs.online import arrival_slots, run_online
from wattsched.dvfs.solver import default_settings, solve
from wattsched.errors import ConfigError
from wattsched.hardware.dvfs import default_dvfs_gpu

OFF = DvfsConfig(enabled=False)
WIDE = default_dvfs_gpu().wide


def tasks(times_s: list[float], deadlines_s: list[float], arrivals_s: list[float] | None = None) -> TaskSet:
    """Tasks with t* = ``times_s`` at P* = 100 W (t0 = 0.2 t*, D = 0.8 t*, delta = 0.5)."""
    t = np.asarray(times_s, dtype=float)
    n = t.size
    model = TaskModel(np.full(n, 40.0), np.full(n, 20.0), np.full(n, 40.0), 0.2 * t, 0.8 * t, np.full(n, 0.5))
    arrival = np.zeros(n) if arrivals_s is None else np.asarray(arrivals_s, dtype=float)
    return TaskSet(tuple(f"t{i}" for i in range(n)), arrival, np.asarray(deadlines_s, dtype=float), model)


def test_options_are_validated() -> None:
    for name in ("idle_accounting", "initial_placement", "next_start", "grouping"):
        with pytest.raises(ConfigError, match=name):
            ClusterConfig(**{name: "bogus"})


def test_whole_slot_offline_rounds_every_task_up() -> None:
    # l = 2, opening order, EDF: X (90 s) pair 0 [0, 90]; W (200 s) pair 1 [0, 200]; Y (90 s) goes to the
    # lightest pair, pair 0 [90, 180]. Continuous: server on 200 s, busy 380 s: idle 37·(400 − 380) = 740 J.
    # Whole slot (the authors' fast_offline): pair 0 = 2 + 2 slots, pair 1 = ceil(200/60) = 4 slots, server on
    # 4 slots = 240 s: idle 37·(2·240 − 480) = 0 (rounding the stretch [0, 180] instead would give 2,220 J).
    work = tasks([90.0, 200.0, 90.0], [1000.0, 1001.0, 1002.0])
    cluster = ClusterConfig(pairs_per_server=2, grouping="on_demand")
    continuous = run_offline(work, "edl", cluster, OFF, keep_schedule=True)
    assert continuous.schedule is not None
    assert continuous.schedule.pair.tolist() == [0, 1, 0]
    assert continuous.schedule.start_s.tolist() == [0.0, 0.0, 90.0]
    assert continuous.energy_run_j == pytest.approx(100 * 380)
    assert continuous.energy_idle_j == pytest.approx(740.0)
    assert continuous.energy_overhead_j == pytest.approx(2 * 5400.0)
    whole = run_offline(work, "edl", replace(cluster, idle_accounting="whole-slot"), OFF)
    assert whole.energy_idle_j == pytest.approx(0.0, abs=1e-9)
    assert whole.energy_run_j == continuous.energy_run_j


def test_whole_slot_online_rounds_each_back_to_back_stretch() -> None:
    # l = 1: X (70 s) at 0 on pair 0 [0, 70]; Y (70 s) arrives at slot 1 and queues: [70, 140]; Z (30 s) at
    # slot 4 (240 s) finds the server still on (off at slot ceil(140/60) + 2 = 5): [240, 270]; the server goes
    # off at slot ceil(270/60) + 2 = 7 (420 s). Busy 170 s: continuous idle 37·(420 − 170) = 9,250 J. Whole
    # slots: the stretch [0, 140] counts 3 slots, [240, 270] 1 slot: 240 s, idle 37·(420 − 240) = 6,660 J
    # (rounding each task instead would count 2 + 2 + 1 slots).
    work = tasks([70.0, 70.0, 30.0], [1000.0, 1000.0, 1000.0], [0.0, 60.0, 240.0])
    continuous = run_online(work, "edl", ClusterConfig(), OFF, keep_schedule=True)
    assert continuous.schedule is not None
    assert continuous.schedule.start_s.tolist() == [0.0, 70.0, 240.0]
    assert continuous.schedule.intervals == ((0, 0.0, 420.0),)
    assert continuous.energy_idle_j == pytest.approx(37 * 250)
    whole = run_online(work, "edl", ClusterConfig(idle_accounting="whole-slot"), OFF)
    assert whole.energy_idle_j == pytest.approx(37 * 180)
    assert whole.energy_total_j == pytest.approx(100 * 170 + 37 * 180 + 5400)


def test_next_slot_start() -> None:
    # Y queues behind X (70 s): at the previous finish it starts at 70 s, with P2's rule at the next slot
    # boundary, 120 s, and ends at 190 s; the server then goes off at slot ceil(190/60) + 2 = 6.
    online = tasks([70.0, 70.0], [1000.0, 1000.0], [0.0, 60.0])
    nxt = ClusterConfig(next_start="next-slot")
    before = run_online(online, "edl", ClusterConfig(), OFF, keep_schedule=True)
    after = run_online(online, "edl", nxt, OFF, keep_schedule=True)
    assert before.schedule is not None and after.schedule is not None
    assert before.schedule.start_s.tolist() == [0.0, 70.0]
    assert after.schedule.start_s.tolist() == [0.0, 120.0]
    assert after.schedule.intervals == ((0, 0.0, 360.0),)
    assert after.energy_idle_j == pytest.approx(37 * (360 - 140))
    # offline the same: the second task on the pair waits for the slot boundary, and the pair is on to 190 s
    offline = run_offline(tasks([70.0, 70.0], [1000.0, 1000.0]), "edl", nxt, OFF, keep_schedule=True)
    assert offline.schedule is not None
    assert offline.schedule.start_s.tolist() == [0.0, 120.0]
    assert offline.energy_idle_j == pytest.approx(37 * (190 - 140))
    # a task that fits only from the previous finish (70 + 70 <= 150 < 120 + 70) opens a pair instead
    tight = tasks([70.0, 70.0], [100.0, 150.0])
    assert run_offline(tight, "edl", ClusterConfig(), OFF).pairs_used == 1
    assert run_offline(tight, "edl", nxt, OFF).pairs_used == 2


def test_one_pair_per_deadline_meeting_task_at_t0() -> None:
    # Three loose tasks at T = 0, servers of l = 2. Packing (EDL) fills server 0: pairs 0, 1, then pair 0
    # again (1 turn-on); the authors' rule gives each task its own pair, pairs 0, 1 | 2 (2 turn-ons).
    work = tasks([60.0, 60.0, 60.0], [5000.0] * 3)
    dvfs = DvfsConfig()
    cluster = ClusterConfig(pairs_per_server=2, grouping="on_demand")
    rule = replace(cluster, initial_placement="one-per-pair")
    packed = run_online(work, "edl", cluster, dvfs, keep_schedule=True)
    alone = run_online(work, "edl", rule, dvfs, keep_schedule=True)
    assert packed.schedule is not None and alone.schedule is not None
    assert packed.schedule.pair.tolist() == [0, 1, 0] and packed.turn_ons == 1
    assert alone.schedule.pair.tolist() == [0, 1, 2] and alone.turn_ons == 2
    assert alone.schedule.start_s.tolist() == [0.0, 0.0, 0.0]
    # DVFS off: the rule does not apply (the authors' code keys it on DVFS)
    off = run_online(work, "edl", rule, OFF, keep_schedule=True)
    assert off.schedule is not None and off.schedule.pair.tolist() == [0, 1, 0]
    # a task whose setting misses its deadline (6000 s > 100 s) is packed: no fit on pair 1, a new server
    late = run_online(tasks([60.0, 6000.0], [5000.0, 100.0]), "edl", rule, dvfs, keep_schedule=True)
    assert late.schedule is not None and late.schedule.pair.tolist() == [0, 2]


def test_authors_tie_order_lists_servers_turned_on_this_slot_last() -> None:
    # l = 2, DVFS off. T = 0: C (60 s, deadline 10: late anywhere) turns on server 0, pair 0 [0, 60];
    # D (600 s, deadline 20) does not fit on pair 1 and turns on server 1, pair 2 [0, 600]. Server 0 goes off
    # at slot 3. Slot 4: E (deadline 250) cannot fit on idle pair 3, so server 0 is turned on again (pair 0);
    # F then finds pairs 1 and 3 both never used (finish 0). Index order picks pair 1; the authors' list
    # holds server 1 (on before this slot) ahead of server 0 (turned on in it) and picks pair 3.
    work = tasks([60.0, 600.0, 60.0, 60.0], [10.0, 20.0, 250.0, 1000.0], [0.0, 0.0, 240.0, 240.0])
    cluster = ClusterConfig(pairs_per_server=2, grouping="on_demand")
    plain = run_online(work, "edl", cluster, OFF, keep_schedule=True)
    authors = run_online(work, "edl", replace(cluster, reproduce_hkbu=True), OFF, keep_schedule=True)
    assert plain.schedule is not None and authors.schedule is not None
    assert plain.schedule.pair.tolist() == [0, 2, 0, 1]
    assert authors.schedule.pair.tolist() == [0, 2, 0, 3]
    assert plain.turn_ons == authors.turn_ons == 3


def test_authors_online_fit_test_ignores_the_current_time() -> None:
    # l = 1, best fit, DVFS off: A [0, 60]; B (100 s, deadline 200) arrives at slot 2 (120 s) while server 0
    # is still on. The authors' test 60 + 100 <= 200 passes, so B runs on pair 0 [120, 220] and is late;
    # ours tests max(60, 120) + 100 > 200 and turns on a server (B is late there too).
    work = tasks([60.0, 100.0], [1000.0, 200.0], [0.0, 120.0])
    plain = run_online(work, "edf-bf", ClusterConfig(), OFF, keep_schedule=True)
    authors = run_online(work, "edf-bf", ClusterConfig(reproduce_hkbu=True), OFF, keep_schedule=True)
    assert plain.schedule is not None and authors.schedule is not None
    assert plain.schedule.pair.tolist() == [0, 1] and plain.turn_ons == 2
    assert authors.schedule.pair.tolist() == [0, 0] and authors.turn_ons == 1
    assert authors.deadline_misses == plain.deadline_misses == 1


def test_authors_day_ends_with_its_last_task() -> None:
    # One task [0, 90]: P2's server stays on ρ = 2 idle slots (off at slot 4); the authors' loop ends at
    # slot 2, when the task is seen finished, and counts no idle slot after it.
    work = tasks([90.0], [1000.0])
    assert run_online(work, "edl", ClusterConfig(), OFF).energy_idle_j == pytest.approx(37 * (240 - 90))
    authors = run_online(work, "edl", ClusterConfig(reproduce_hkbu=True), OFF)
    assert authors.energy_idle_j == pytest.approx(37 * (120 - 90))


def test_hkbu_resolve_keeps_the_task_when_no_grid_point_saves_energy() -> None:
    work = tasks([600.0], [10_000.0])
    model = work.model
    t_min = float(hkbu_t_min_s(model, WIDE)[0])
    # the time at V = 1.25 with f_mem = 1.2, which the 16-point grid does not reach with its own f_mem
    assert t_min == pytest.approx(float(model.time_s(WIDE.coupling.f_core_max(1.25), 1.2)[0]))
    assert hkbu_resolve(model, 0, t_min * 1.0001, WIDE, 555.0, 123.0) == (555.0, 123.0)
    # a generous window: the grid optimum, as the grid solve with the window enforced finds it
    grid = solve(model, np.array([10_000.0]), WIDE, method="hkbu", hkbu_grid=HKBU_RESOLVE_GRID)
    t, p = hkbu_resolve(model, 0, 10_000.0, WIDE, 555.0, 123.0)
    assert t == pytest.approx(float(grid.time_s[0]), rel=1e-12)
    assert p == pytest.approx(float(grid.power_w[0]), rel=1e-12)
    # the initial solve ignores the window and never uses more energy than the default setting
    first = hkbu_initial_settings(model, np.array([1.0]), WIDE, HKBU_RESOLVE_GRID)
    assert first.energy_j[0] <= default_settings(model).energy_j[0] and not first.feasible[0]


def test_hkbu_configs_constants() -> None:
    cluster, dvfs = hkbu_configs(64, 16, enabled=False, theta=0.5)
    assert (cluster.idle_power_w, cluster.turn_on_j_per_pair * 16) == (85.0, 200.0 * 60.0)
    assert (cluster.grouping, cluster.idle_accounting, cluster.initial_placement) == (
        "on_demand",
        "whole-slot",
        "one-per-pair",
    )
    assert cluster.reproduce_hkbu and dvfs.reproduce_hkbu and not dvfs.enabled and dvfs.theta == 0.5


@pytest.mark.parametrize("online", [False, True])
def test_a_schedule_can_be_accounted_under_other_constants(online: bool) -> None:
    from wattsched.dvfs.tasks import generate_offline, generate_online

    work = generate_online(0.3, 64, 5) if online else generate_offline(0.5, 64, 5)
    runner = run_online if online else run_offline
    paper = ClusterConfig(pairs=64, pairs_per_server=4, grouping="on_demand")
    code = replace(paper, idle_power_w=85.0, turn_on_j_per_pair=200 * 60 / 4, idle_accounting="whole-slot")
    first = runner(work, "edl", paper, DvfsConfig(), keep_schedule=True)
    assert first.schedule is not None
    again = account(first.schedule, work.deadline_s, code, first.readjustments, False)
    direct = runner(work, "edl", code, DvfsConfig())
    assert again == direct
    assert direct.energy_idle_j > first.energy_idle_j  # 85 W and whole slots both add idle energy


EXAMPLES = settings().max_examples


@settings(max_examples=EXAMPLES)
@given(
    rows=st.lists(TASK, min_size=1, max_size=14),
    online=st.booleans(),
    l=st.sampled_from([1, 2, 3]),
    algo=st.sampled_from(["edl", "edf-bf", "edf-wf", "lpt-ff", "bin"]),
    dvfs=st.booleans(),
    theta=st.sampled_from([0.3, 1.0]),
    grouping=st.sampled_from(["sorted", "on_demand"]),
    accounting=st.sampled_from(["continuous", "whole-slot"]),
    placement=st.sampled_from(["pack", "one-per-pair"]),
    next_start=st.sampled_from(["previous-finish", "next-slot"]),
    authors=st.booleans(),
)
def test_every_rule_combination_keeps_the_schedule_invariants(
    rows: list[tuple],
    online: bool,
    l: int,
    algo: str,
    dvfs: bool,
    theta: float,
    grouping: str,
    accounting: str,
    placement: str,
    next_start: str,
    authors: bool,
) -> None:
    # Arbitrary tasks under any mix of the rules: every task once, no pair runs two at once, runs inside
    # their server's on-intervals, parts sum to the total (check_invariants, on the continuous accounting of
    # the same schedule); whole-slot accounting counts at least the continuous busy time and never negative
    # idle; with next-slot starts every task starts on a slot boundary; with one pair per task at T = 0
    # (DVFS on) the deadline-meeting tasks of that batch all start at 0 on distinct pairs.
    tasks = random_tasks(rows, online)
    cluster = ClusterConfig(
        pairs=6,
        pairs_per_server=l,
        grouping=grouping,
        idle_accounting=accounting,
        initial_placement=placement,
        next_start=next_start,
        reproduce_hkbu=authors,
    )
    config = DvfsConfig(enabled=dvfs, theta=theta, reproduce_hkbu=authors)
    run = run_online if online else run_offline
    result = run(tasks, algo, cluster, config, keep_schedule=True)
    schedule = result.schedule
    assert schedule is not None
    plain = replace(cluster, idle_accounting="continuous")
    check_invariants(tasks, account(schedule, tasks.deadline_s, plain, result.readjustments, True), l)
    assert result.energy_idle_j >= 0
    assert result.energy_total_j == pytest.approx(
        result.energy_run_j + result.energy_idle_j + result.energy_overhead_j, rel=1e-12
    )
    if next_start == "next-slot":
        assert np.allclose(schedule.start_s / 60.0, np.round(schedule.start_s / 60.0), atol=1e-9)
    if online and dvfs and placement == "one-per-pair":
        slots = arrival_slots(tasks, 60.0)
        initial = initial_settings(tasks, tasks.deadline_s - slots * 60.0, config)
        first = np.flatnonzero(slots == 0)
        meets = first[initial.time_s[first] <= tasks.deadline_s[first]]
        assert np.all(schedule.start_s[meets] == 0.0)
        assert np.unique(schedule.pair[meets]).size == meets.size
